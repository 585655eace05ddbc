// Trial workspace: Monaco editor, autosave, visible-test runs, countdown, submit and grading.
//
// For other scripts (telemetry.js, ai.js):
// - window.haiEditor: the Monaco editor holding solution.py (read-only in the feedback-only arm
//   and once the trial is closed; editor.setValue() still works and is autosaved while open).
// - document events (CustomEvent name, then its detail):
//   hai:editor-ready {editor, monaco, trialId, readOnly}  (also kept in window.haiEditorReady)
//   hai:file-opened {name}          hai:autosaved {savedAt, length}
//   hai:tests-started {}            hai:tests-run {status, ok, tests_run, failures, errors, duration_ms}
//   hai:time-warning {minutesLeft}  hai:submitted {trialId, auto}
//   hai:trial-closed {status}  (the trial closed while this page was open: submit or deadline)
// - window.haiWorkspace: {trialId, aiMode, save(), runTests(), isClosed()}.
//
// Needs common.js (window.hai) and htmx: once grading is done and the study releases the report,
// the report body is the server's fragment (urls.report, study/results/_report_fragment.html)
// loaded into #report, not rebuilt here.
(function () {
  "use strict";
  const root = document.getElementById("workspace");
  if (!root) return;

  const { emit, formatDuration, jsonScript, loadFragment, sendJSON } = window.hai;
  const files = jsonScript("workspace-files");
  const urls = jsonScript("workspace-urls");
  let state = jsonScript("workspace-state");
  const trialId = Number(root.dataset.trialId);
  const aiMode = root.dataset.aiMode;
  const backupKey = `hai:draft:${trialId}`;
  const $ = (id) => document.getElementById(id);

  // telemetry.js reads its beacon token from <body> (the base template owns that tag).
  if (root.dataset.telemetryToken) document.body.dataset.telemetryToken = root.dataset.telemetryToken;

  // --- Clock: the server's deadline, corrected for the offset between the two clocks --------
  let offsetMs = Date.parse(state.server_time) - Date.now();
  const serverNow = () => Date.now() + offsetMs;
  const remainingMs = () => (state.deadline ? Date.parse(state.deadline) - serverNow() : Infinity);

  // --- Editor -------------------------------------------------------------------------------
  let editor = null;
  let viewer = null;
  const models = {};
  let closed = root.dataset.closed === "true" || state.closed;
  let readOnly = root.dataset.readOnly === "true" || state.read_only;

  const getCode = () => (editor ? editor.getValue() : state.code);

  function languageOf(name) {
    const file = files.find((f) => f.name === name);
    return file ? file.language : "plaintext";
  }

  function showFile(name) {
    const file = files.find((f) => f.name === name);
    if (!file) return;
    document.querySelectorAll(".ws-file").forEach((b) => {
      const active = b.dataset.file === name;
      b.classList.toggle("active", active);
      if (active) b.setAttribute("aria-current", "true"); else b.removeAttribute("aria-current");
    });
    if (file.document) {
      document.querySelectorAll("#doc-panel [data-doc]").forEach((a) => { a.hidden = a.dataset.doc !== name; });
      const tab = $("tab-task");
      if (tab && window.bootstrap) window.bootstrap.Tab.getOrCreateInstance(tab).show();
      $("doc-panel").scrollTop = 0;
      emit("hai:file-opened", { name });
      return;
    }
    $("editor-file").textContent = name;
    const isSolution = name === "solution.py";
    $("editor-mode").hidden = isSolution && !readOnly;
    $("editor").hidden = !isSolution;
    $("viewer").hidden = isSolution;
    if (!isSolution && viewer) viewer.setModel(models[name]);
    emit("hai:file-opened", { name });
  }

  function boot() {
    window.require.config({ paths: { vs: root.dataset.monacoVs } });
    window.require(["vs/editor/editor.main"], function () {
      const monaco = window.monaco;
      for (const file of files) {
        if (file.document) continue;
        const uri = monaco.Uri.parse(`file:///workspace/${file.name}`);
        models[file.name] = monaco.editor.createModel(file.name === "solution.py" ? state.code : file.text, languageOf(file.name), uri);
      }
      const common = {
        automaticLayout: true, fontSize: 14, minimap: { enabled: false }, scrollBeyondLastLine: false,
        tabSize: 4, insertSpaces: true, detectIndentation: false, renderWhitespace: "selection",
      };
      $("editor").replaceChildren();
      editor = monaco.editor.create($("editor"), { ...common, model: models["solution.py"], readOnly });
      viewer = monaco.editor.create($("viewer"), { ...common, readOnly: true, domReadOnly: true });
      editor.addCommand(monaco.KeyMod.CtrlCmd | monaco.KeyCode.Enter, runTests);
      editor.onDidChangeModelContent(() => { if (!closed) scheduleSave(); });
      editor.onDidBlurEditorText(() => { save(); });
      window.haiEditor = editor;
      applyBackup();
      const detail = { editor, monaco, trialId, readOnly };
      window.haiEditorReady = detail;
      emit("hai:editor-ready", detail);
      showFile("solution.py");
    });
  }

  function setReadOnly(value) {
    readOnly = value;
    if (editor) editor.updateOptions({ readOnly: value });
    $("editor-mode").hidden = !value;
  }

  // --- Autosave: debounced, on blur, on leaving; a local backup covers a lost connection ------
  let lastSaved = state.code;
  let saveTimer = null;
  let saving = null;

  function showSaveStatus(text, cls = "text-body-secondary") {
    const el = $("save-status");
    el.className = `small ${cls}`;
    el.textContent = text;
  }

  function scheduleSave() {
    window.clearTimeout(saveTimer);
    if (getCode() === lastSaved) return;
    showSaveStatus("Unsaved changes…");
    writeBackup();
    saveTimer = window.setTimeout(save, 1500);
  }

  function writeBackup() {
    try { localStorage.setItem(backupKey, JSON.stringify({ code: getCode(), base: state.saved_at })); } catch { /* storage full or disabled */ }
  }

  function applyBackup() {
    let backup = null;
    try { backup = JSON.parse(localStorage.getItem(backupKey) || "null"); } catch { backup = null; }
    if (!backup || closed) return;
    // Only if nothing was saved on the server since (another device wins otherwise).
    if (backup.base === state.saved_at && backup.code !== state.code) {
      editor.setValue(backup.code);
      showSaveStatus("Restored unsaved changes from this browser");
      save();
    } else {
      localStorage.removeItem(backupKey);
    }
  }

  async function save({ keepalive = false } = {}) {
    window.clearTimeout(saveTimer);
    if (closed) return;
    if (saving) { await saving; }
    const code = getCode();
    if (code === lastSaved) return;
    saving = (async () => {
      try {
        const { status, data } = await sendJSON(urls.autosave, { body: { code }, keepalive: keepalive && code.length < 60000 });
        if (status === 200) {
          lastSaved = code;
          state.saved_at = data.saved_at;
          if (getCode() === code) localStorage.removeItem(backupKey);
          showSaveStatus(`Saved ${new Date(data.saved_at).toLocaleTimeString()}`);
          emit("hai:autosaved", { savedAt: data.saved_at, length: code.length });
        } else if (status === 409) {
          await refreshState();
        } else {
          showSaveStatus(data.error || "Not saved.", "text-danger");
        }
      } catch {
        showSaveStatus("Not saved: connection lost. Your changes are kept in this browser; retrying…", "text-danger");
        saveTimer = window.setTimeout(save, 5000);
      } finally {
        saving = null;
      }
    })();
    return saving;
  }

  window.addEventListener("pagehide", () => { if (getCode() !== lastSaved) save({ keepalive: true }); });
  window.addEventListener("beforeunload", () => { if (getCode() !== lastSaved) save({ keepalive: true }); });
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") save({ keepalive: true });
    else refreshState();
  });

  // --- State from the server: reload, another device, the deadline ---------------------------
  async function refreshState(closeUrl) {
    const sent = Date.now();
    let response;
    try {
      response = closeUrl ? await sendJSON(closeUrl, { body: {} }) : await sendJSON(urls.state, { method: "GET" });
    } catch { return null; }
    if (response.status !== 200) return null;
    const fresh = response.data;
    offsetMs = Date.parse(fresh.server_time) - (sent + Date.now()) / 2;
    const otherDevice = fresh.saved_at !== state.saved_at && getCode() === lastSaved;
    state = fresh;
    if (otherDevice) {
      lastSaved = fresh.code;
      if (editor && fresh.code !== editor.getValue()) {
        editor.setValue(fresh.code);
        showSaveStatus("Updated with the code saved from another window");
      }
    }
    if (fresh.closed && !closed) enterClosed(fresh.status, { transition: true });
    return fresh;
  }

  // --- Countdown ---------------------------------------------------------------------------
  const WARNINGS = [
    { minutes: 10, text: "10 minutes left. Your code is saved automatically; submit when you are ready." },
    { minutes: 2, text: "2 minutes left. At the deadline your last saved code is submitted automatically." },
  ];
  const warned = new Set();
  let flushedBeforeDeadline = false;
  let deadlineHandled = false;

  const formatLeft = (ms) => formatDuration(Math.ceil(ms / 1000), "clock");

  function tick() {
    if (closed || !state.deadline) return;
    const left = remainingMs();
    $("time-left").textContent = formatLeft(left);
    const timer = $("timer");
    timer.classList.toggle("ws-timer-warning", left <= 10 * 60000 && left > 2 * 60000);
    timer.classList.toggle("ws-timer-danger", left <= 2 * 60000);
    for (const w of WARNINGS) {
      if (left <= w.minutes * 60000 && !warned.has(w.minutes)) {
        warned.add(w.minutes);
        if (left > (w.minutes - 1) * 60000) {  // reached now, not already long past at load
          const box = $("time-warning");
          box.textContent = w.text;
          box.hidden = false;
          box.classList.toggle("alert-danger", w.minutes === 2);
          emit("hai:time-warning", { minutesLeft: w.minutes });
        }
      }
    }
    if (left <= 5000 && !flushedBeforeDeadline) { flushedBeforeDeadline = true; save(); }
    if (left <= 0 && !deadlineHandled) { deadlineHandled = true; onDeadline(); }
  }

  async function onDeadline() {
    setReadOnly(true);
    $("run-tests").disabled = true;
    $("submit-open").disabled = true;
    showGrading("Time is up: submitting your last saved code…");
    for (let attempt = 0; attempt < 30 && !closed; attempt += 1) {
      // Ask the server to close the trial now (it does so only past the deadline; the minute
      // task would close it anyway), then read the state it answers with.
      const fresh = await refreshState(urls.close);
      if (fresh?.closed) break;
      await new Promise((resolve) => window.setTimeout(resolve, 2000));
    }
    if (closed) emit("hai:submitted", { trialId, auto: true });
  }

  // --- Visible tests -----------------------------------------------------------------------
  let running = false;

  function writeConsole(text, cls = "") {
    const out = $("console");
    out.className = `ws-console-out ${cls}`;
    out.textContent = text;
    out.scrollTop = out.scrollHeight;
  }

  async function runTests() {
    if (running || closed) return;
    running = true;
    const button = $("run-tests");
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    const summary = $("run-summary");
    summary.className = "small text-body-secondary";
    summary.textContent = "Running…";
    writeConsole("$ python -m unittest test_visible -v\nRunning the visible tests in the sandbox…\n");
    emit("hai:tests-started", {});
    const code = getCode();
    try {
      const { status, data } = await sendJSON(urls.run, { body: { code } });
      if (status === 200 || status === 503) {
        if (data.saved_at) { lastSaved = code; state.saved_at = data.saved_at; localStorage.removeItem(backupKey); }
        writeConsole(`$ python -m unittest test_visible -v\n${data.output || ""}`, data.ok ? "ws-ok" : "ws-fail");
        summary.className = `small ${data.ok ? "text-success" : "text-danger"}`;
        summary.textContent = data.status === "passed" ? `${data.tests_run} tests passed`
          : data.status === "failed" ? `${data.failures} failed, ${data.errors} errors of ${data.tests_run} tests`
            : data.message || "The tests could not run.";
        emit("hai:tests-run", {
          status: data.status, ok: data.ok, tests_run: data.tests_run, failures: data.failures,
          errors: data.errors, duration_ms: data.duration_ms,
        });
      } else if (status === 409) {
        summary.textContent = data.error;
        await refreshState();
      } else {
        summary.className = "small text-danger";
        summary.textContent = data.error || `The tests could not run (${status}).`;
        writeConsole(data.error || "");
      }
    } catch {
      summary.className = "small text-danger";
      summary.textContent = "Connection lost while running the tests; try again.";
    } finally {
      running = false;
      button.removeAttribute("aria-busy");
      button.disabled = closed;
    }
  }

  // --- Submit and grading ------------------------------------------------------------------
  let polling = false;

  function showGrading(text) {
    $("grading").hidden = false;
    $("grading-text").textContent = text;
  }

  // transition: the trial closed while this page was open (not: the page opened a closed trial).
  function enterClosed(status, { transition = false, submitted = false } = {}) {
    if (closed && polling) return;
    closed = true;
    window.clearTimeout(saveTimer);
    localStorage.removeItem(backupKey);
    setReadOnly(true);
    $("run-tests").disabled = true;
    $("submit-open").disabled = true;
    $("timer").hidden = true;
    $("grading-title").textContent = status === "expired" ? "Time is up: your last saved code was submitted" : "Submitted";
    showGrading(submitted ? "Submitted. Waiting for the grader…" : "Waiting for the grader…");
    if (transition) emit("hai:trial-closed", { status });
    pollGrading();
  }

  async function submit() {
    const confirmButton = $("submit-confirm");
    confirmButton.disabled = true;
    const modal = window.bootstrap?.Modal.getInstance($("submit-modal"));
    if (modal) modal.hide();
    window.clearTimeout(saveTimer);
    setReadOnly(true);
    $("run-tests").disabled = true;
    $("submit-open").disabled = true;
    showGrading("Submitting your solution…");
    try {
      const { status, data } = await sendJSON(urls.submit, { body: { code: getCode() } });
      if (status === 200) {
        lastSaved = getCode();
        emit("hai:submitted", { trialId, auto: false });
        enterClosed("submitted", { transition: true, submitted: true });
        return;
      }
      if (status === 409) {
        showGrading(data.error);
        await refreshState();
        if (closed) return;
      }
      showGrading(data.error || `The submission failed (${status}).`);
    } catch {
      showGrading("Connection lost: your solution was not submitted. Try again.");
    }
    // Not submitted: the participant may keep working.
    confirmButton.disabled = false;
    setReadOnly(root.dataset.readOnly === "true");
    $("run-tests").disabled = false;
    $("submit-open").disabled = false;
  }

  const NOT_RELEASED = "Graded. Your report will be shown when the study releases it.";

  // The server renders the report (and checks the release policy again); an answer that is
  // not the fragment (403, signed out, connection lost) leaves the "not released" sentence.
  async function showReport() {
    const box = $("report");
    $("grading-text").textContent = "Graded. Loading your report…";
    let shown = false;
    try { shown = await loadFragment(box, urls.report); } catch { shown = false; }
    box.hidden = !shown;
    $("grading-text").textContent = shown ? "Graded. Your report:" : NOT_RELEASED;
  }

  async function pollGrading() {
    if (polling) return;
    polling = true;
    const bar = $("grading-bar");
    const progress = $("grading-progress");
    const started = Date.now();
    for (;;) {
      let body = null;
      try {
        const response = await sendJSON(urls.status);
        if (response.ok && response.json) body = response.data;
      } catch { body = null; }
      const g = body?.grading;
      if (body && !g) {
        bar.style.width = "100%";
        bar.classList.remove("progress-bar-animated");
        $("grading-text").textContent = "No code was saved before the time ran out, so nothing was graded.";
        break;
      }
      if (g) {
        const pct = g.status === "done" ? 100 : g.total ? Math.max(5, Math.round((100 * g.done) / g.total)) : 5;
        bar.style.width = `${pct}%`;
        progress.setAttribute("aria-valuenow", String(pct));
        if (g.status === "done") {
          bar.classList.remove("progress-bar-animated", "progress-bar-striped");
          if (body.report) await showReport();
          else $("grading-text").textContent = NOT_RELEASED;
          break;
        }
        $("grading-text").textContent = g.status === "failed"
          ? "Grading is being retried by the research team; you can continue."
          : g.status === "running" ? `Grading: ${g.done} of ${g.total || "?"} tests run` : "Waiting for the grader…";
      }
      const waited = Date.now() - started;
      await new Promise((resolve) => window.setTimeout(resolve, waited > 120000 ? 5000 : 1500));
    }
    polling = false;
  }

  // --- Wiring ------------------------------------------------------------------------------
  for (const b of document.querySelectorAll(".ws-file")) b.addEventListener("click", () => showFile(b.dataset.file));
  $("run-tests").addEventListener("click", runTests);
  $("submit-confirm").addEventListener("click", submit);
  $("console-clear").addEventListener("click", () => { writeConsole(""); $("run-summary").textContent = ""; });

  window.haiWorkspace = { trialId, aiMode, save, runTests, isClosed: () => closed };
  boot();
  if (closed) {
    enterClosed(state.status);
  } else {
    tick();
    window.setInterval(tick, 500);
    refreshState();
  }
})();
