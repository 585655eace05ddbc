// Trial workspace: file tree, Monaco editor, per-file autosave, visible-test runs, countdown,
// submit and grading.
//
// Files: the server renders the tree (templates/ide_bridge/_file_tree.html; folders are
// <details>) and the workspace-files JSON ({name, language, text, editable, document, image,
// url}); state.files holds every editable path's current text and state.editable their order.
// Editable files open in the editor (one Monaco model each), read-only text files in the
// read-only viewer, Markdown documents in the side panel, images (.svg diagrams and binary
// images) in the image viewer (an <img> from the server's image endpoint).
//
// For other scripts (telemetry.js, ai.js):
// - window.haiEditor: the Monaco editor of the editable files (its model is the open editable
//   file; read-only in the feedback-only arm and once the trial is closed; setValue() on a model
//   still works and is autosaved while open).
// - document events (CustomEvent name, then its detail):
//   hai:editor-ready {editor, monaco, trialId, readOnly, models, editable, pathOf}
//                                   (also kept in window.haiEditorReady; models: path -> model)
//   hai:file-opened {name}          hai:autosaved {savedAt, files: [path], length}
//   hai:tests-started {}            hai:tests-run {status, ok, tests_run, failures, errors, duration_ms}
//   hai:time-warning {minutesLeft}  hai:submitted {trialId, auto}
//   hai:trial-closed {status}  (the trial closed while this page was open: submit or deadline)
// - window.haiWorkspace: {trialId, aiMode, editable, save(), runTests(), isClosed(),
//   showFile(path), fileText(path), setFileText(path, text)}.
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
  const editable = state.editable.slice();
  const trialId = Number(root.dataset.trialId);
  const aiMode = root.dataset.aiMode;
  const backupKey = `hai:draft:${trialId}`;
  const $ = (id) => document.getElementById(id);
  const SAVE_DELAY_MS = 1500;

  // telemetry.js reads its beacon token from <body> (the base template owns that tag).
  if (root.dataset.telemetryToken) document.body.dataset.telemetryToken = root.dataset.telemetryToken;

  // --- Clock: the server's deadline, corrected for the offset between the two clocks --------
  let offsetMs = Date.parse(state.server_time) - Date.now();
  const serverNow = () => Date.now() + offsetMs;
  const remainingMs = () => (state.deadline ? Date.parse(state.deadline) - serverNow() : Infinity);

  // --- Editor -------------------------------------------------------------------------------
  let editor = null;
  let viewer = null;
  const models = {}; // path -> Monaco model (every text file that is not a document)
  let closed = root.dataset.closed === "true" || state.closed;
  let readOnly = root.dataset.readOnly === "true" || state.read_only;
  let current = editable[0]; // the editable file in the editor

  const fileOf = (name) => files.find((f) => f.name === name);
  const isEditable = (name) => editable.includes(name);
  const fileText = (path) => (models[path] ? models[path].getValue() : state.files[path]);
  const pathOf = (model) => Object.keys(models).find((p) => models[p] === model) || null;

  function markActive(name) {
    document.querySelectorAll(".ws-file").forEach((b) => {
      const active = b.dataset.file === name;
      b.classList.toggle("active", active);
      if (active) b.setAttribute("aria-current", "true"); else b.removeAttribute("aria-current");
    });
    // A file inside a collapsed folder: open its folders so the active file shows.
    const button = document.querySelector(`.ws-file[data-file="${CSS.escape(name)}"]`);
    for (let d = button?.closest("details"); d; d = d.parentElement?.closest("details")) d.open = true;
  }

  function showPane(which) {
    $("editor").hidden = which !== "editor";
    $("viewer").hidden = which !== "viewer";
    $("image-viewer").hidden = which !== "image";
  }

  function showFile(name) {
    const file = fileOf(name);
    if (!file) return;
    markActive(name);
    if (file.document) {
      document.querySelectorAll("#doc-panel [data-doc]").forEach((a) => { a.hidden = a.dataset.doc !== name; });
      const tab = $("tab-task");
      if (tab && window.bootstrap) window.bootstrap.Tab.getOrCreateInstance(tab).show();
      $("doc-panel").scrollTop = 0;
      emit("hai:file-opened", { name });
      return;
    }
    $("editor-file").textContent = name;
    if (file.image) {
      const img = $("image-view");
      img.src = file.url;
      img.alt = `${name} (image)`;
      $("editor-mode").textContent = "image";
      $("editor-mode").hidden = false;
      showPane("image");
    } else if (isEditable(name)) {
      current = name;
      if (editor && models[name] && editor.getModel() !== models[name]) editor.setModel(models[name]);
      $("editor-mode").textContent = "read-only";
      $("editor-mode").hidden = !readOnly;
      showPane("editor");
    } else {
      if (viewer) viewer.setModel(models[name]);
      $("editor-mode").textContent = "read-only";
      $("editor-mode").hidden = false;
      showPane("viewer");
    }
    emit("hai:file-opened", { name });
  }

  function boot() {
    window.require.config({ paths: { vs: root.dataset.monacoVs } });
    window.require(["vs/editor/editor.main"], function () {
      const monaco = window.monaco;
      for (const file of files) {
        if (file.document || file.image) continue;
        const uri = monaco.Uri.parse(`file:///workspace/${file.name}`);
        const text = isEditable(file.name) ? state.files[file.name] : file.text;
        models[file.name] = monaco.editor.createModel(text, file.language, uri);
      }
      const common = {
        automaticLayout: true, fontSize: 14, minimap: { enabled: false }, scrollBeyondLastLine: false,
        tabSize: 4, insertSpaces: true, detectIndentation: false, renderWhitespace: "selection",
      };
      $("editor").replaceChildren();
      editor = monaco.editor.create($("editor"), { ...common, model: models[current], readOnly });
      viewer = monaco.editor.create($("viewer"), { ...common, readOnly: true, domReadOnly: true });
      editor.addCommand(monaco.KeyMod.CtrlCmd | monaco.KeyCode.Enter, runTests);
      for (const path of editable) {
        models[path].onDidChangeContent(() => { if (!closed) scheduleSave(path); });
      }
      editor.onDidBlurEditorText(() => { save(); });
      window.haiEditor = editor;
      applyBackup();
      const editableModels = Object.fromEntries(editable.map((p) => [p, models[p]]));
      const detail = { editor, monaco, trialId, readOnly, models: editableModels, editable, pathOf };
      window.haiEditorReady = detail;
      emit("hai:editor-ready", detail);
      showFile(current);
    });
  }

  function setReadOnly(value) {
    readOnly = value;
    if (editor) editor.updateOptions({ readOnly: value });
    if (isEditable($("editor-file").textContent)) $("editor-mode").hidden = !value;
  }

  // --- Autosave: per file, debounced, on blur, on leaving; a local backup covers a lost
  // connection. Only changed files are sent; the server keeps the others as saved. ----------
  const lastSaved = { ...state.files }; // path -> the text the server has
  const timers = {};
  let saving = null;

  const dirtyPaths = () => editable.filter((p) => fileText(p) !== lastSaved[p]);
  const changedFiles = () => Object.fromEntries(dirtyPaths().map((p) => [p, fileText(p)]));
  const shortName = (path) => path.split("/").pop();

  function showSaveStatus(text, cls = "text-body-secondary") {
    const el = $("save-status");
    el.className = `small ${cls}`;
    el.textContent = text;
  }

  function markUnsaved() {
    const dirty = new Set(dirtyPaths());
    for (const path of editable) {
      const dot = document.querySelector(`.ws-file[data-file="${CSS.escape(path)}"] .ws-unsaved`);
      if (dot) dot.hidden = !dirty.has(path);
    }
    return dirty;
  }

  function scheduleSave(path) {
    window.clearTimeout(timers[path]);
    const dirty = markUnsaved();
    if (!dirty.has(path)) return;
    showSaveStatus(`Unsaved changes in ${shortName(path)}…`);
    writeBackup();
    timers[path] = window.setTimeout(() => save({ only: [path] }), SAVE_DELAY_MS);
  }

  function writeBackup() {
    try { localStorage.setItem(backupKey, JSON.stringify({ files: changedFiles(), base: state.saved_at })); } catch { /* storage full or disabled */ }
  }

  function applyBackup() {
    let backup = null;
    try { backup = JSON.parse(localStorage.getItem(backupKey) || "null"); } catch { backup = null; }
    if (!backup || closed) return;
    // Older pages kept {code} for the one editable file.
    const saved = backup.files || (typeof backup.code === "string" ? { [editable[0]]: backup.code } : {});
    // Only if nothing was saved on the server since (another device wins otherwise).
    const restore = Object.entries(saved).filter(([p, text]) => isEditable(p) && text !== state.files[p]);
    if (backup.base === state.saved_at && restore.length) {
      for (const [path, text] of restore) models[path].setValue(text);
      showSaveStatus("Restored unsaved changes from this browser");
      save();
    } else {
      localStorage.removeItem(backupKey);
    }
  }

  function markSaved(sent, savedAt) {
    for (const [path, text] of Object.entries(sent)) lastSaved[path] = text;
    state.saved_at = savedAt;
    if (!dirtyPaths().length) localStorage.removeItem(backupKey); else writeBackup();
    markUnsaved();
  }

  // Saves the changed files (``only``: just those paths, if changed).
  async function save({ keepalive = false, only = null } = {}) {
    for (const path of only || editable) window.clearTimeout(timers[path]);
    if (closed) return;
    if (saving) { await saving; }
    const sent = Object.fromEntries(
      Object.entries(changedFiles()).filter(([path]) => !only || only.includes(path)),
    );
    const paths = Object.keys(sent);
    if (!paths.length) return;
    const length = paths.reduce((n, p) => n + sent[p].length, 0);
    saving = (async () => {
      try {
        const { status, data } = await sendJSON(urls.autosave, { body: { files: sent }, keepalive: keepalive && length < 60000 });
        if (status === 200) {
          markSaved(sent, data.saved_at);
          const names = paths.map(shortName).join(", ");
          showSaveStatus(`Saved ${names} ${new Date(data.saved_at).toLocaleTimeString()}`);
          emit("hai:autosaved", { savedAt: data.saved_at, files: paths, length });
        } else if (status === 409) {
          await refreshState();
        } else {
          showSaveStatus(data.error || "Not saved.", "text-danger");
        }
      } catch {
        showSaveStatus("Not saved: connection lost. Your changes are kept in this browser; retrying…", "text-danger");
        for (const path of paths) timers[path] = window.setTimeout(() => save({ only: [path] }), 5000);
      } finally {
        saving = null;
      }
    })();
    return saving;
  }

  const anyUnsaved = () => dirtyPaths().length > 0;
  window.addEventListener("pagehide", () => { if (anyUnsaved()) save({ keepalive: true }); });
  window.addEventListener("beforeunload", () => { if (anyUnsaved()) save({ keepalive: true }); });
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
    const otherDevice = fresh.saved_at !== state.saved_at && !anyUnsaved();
    state = fresh;
    if (otherDevice) {
      let updated = false;
      for (const path of editable) {
        const text = fresh.files[path];
        if (typeof text !== "string") continue;
        lastSaved[path] = text;
        if (models[path] && models[path].getValue() !== text) { models[path].setValue(text); updated = true; }
      }
      markUnsaved();
      if (updated) showSaveStatus("Updated with the code saved from another window");
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
    const sent = changedFiles(); // the server saves them, then runs the whole editable set
    try {
      const { status, data } = await sendJSON(urls.run, { body: { files: sent } });
      if (status === 200 || status === 503) {
        if (data.saved_at) markSaved(sent, data.saved_at);
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
    for (const path of editable) window.clearTimeout(timers[path]);
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
    for (const path of editable) window.clearTimeout(timers[path]);
    setReadOnly(true);
    $("run-tests").disabled = true;
    $("submit-open").disabled = true;
    showGrading("Submitting your solution…");
    // The whole editable set (the server saves what changed, then submits every file).
    const sent = Object.fromEntries(editable.map((p) => [p, fileText(p)]));
    try {
      const { status, data } = await sendJSON(urls.submit, { body: { files: sent } });
      if (status === 200) {
        markSaved(sent, state.saved_at);
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

  function setFileText(path, text) {
    if (models[path] && models[path].getValue() !== text) models[path].setValue(text);
  }

  window.haiWorkspace = {
    trialId, aiMode, editable, save, runTests, showFile, fileText, setFileText, isClosed: () => closed,
  };
  boot();
  if (closed) {
    enterClosed(state.status);
  } else {
    tick();
    window.setInterval(tick, 500);
    refreshState();
  }
})();
