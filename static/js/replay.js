// Researcher replay of one trial: scrub a timeline, see every editable file at any moment.
//
// The files are rebuilt here from the server's data.json: start from the starter files, apply
// each `edit` event's Monaco changes in seq order to the file it names (`data.file`; events
// without one are about `default_file`, the first editable file). Each change's
// rangeOffset/rangeLength refer to the text before the event, so the changes are applied from
// the highest offset down; every `checkpoint` / `code_reset` (full text of one file) re-bases
// its file. A checkpoint that disagrees with the rebuilt text is counted as drift (an event was
// lost or rejected) and marked in red. The shown file follows the event (pick another with the
// file buttons). Needs common.js.
(function () {
  "use strict";
  const root = document.getElementById("replay");
  if (!root) return;
  const { el, fetchJSON, formatDuration } = window.hai;
  const $ = (id) => document.getElementById(id);
  const COLOURS = { ai: "#6f42c1", run: "#198754", paste: "#fd7e14", submit: "#0d6efd", away: "#adb5bd", idle: "#adb5bd", rejected: "#dc3545", drift: "#dc3545" };
  const SNAPSHOT_EVERY = 100;

  function applyEdit(code, changes) {
    const sorted = changes.slice().sort((a, b) => b.rangeOffset - a.rangeOffset);
    for (const c of sorted) {
      code = code.slice(0, c.rangeOffset) + c.text + code.slice(c.rangeOffset + c.rangeLength);
    }
    return code;
  }

  let defaultFile = "";
  const fileOf = (event) => (typeof event.data?.file === "string" && event.data.file) || defaultFile;

  // The files after ``event`` (a new object when something changed).
  function step(files, event) {
    const path = fileOf(event);
    if (event.kind === "edit") return { ...files, [path]: applyEdit(files[path] ?? "", event.data.changes || []) };
    if (event.kind === "checkpoint" || event.kind === "code_reset") return { ...files, [path]: event.data.code };
    return files;
  }

  const clock = (ms) => formatDuration(ms / 1000, "minutes");

  function build(data) {
    const events = data.events;
    const snapshots = [data.starter_files]; // snapshots[k] = files after event index k*SNAPSHOT_EVERY - 1
    const drift = new Set();
    let gaps = 0, prevSeq = 0;
    let files = data.starter_files;
    events.forEach((e, i) => {
      if (e.seq !== prevSeq + 1) gaps += e.seq - prevSeq - 1;
      prevSeq = e.seq;
      if (e.kind === "checkpoint" && e.data.code !== files[fileOf(e)]) drift.add(i);
      files = step(files, e);
      if ((i + 1) % SNAPSHOT_EVERY === 0) snapshots.push(files);
    });
    return { events, snapshots, drift, gaps, finalFiles: files };
  }

  function filesAt(model, starter, index) {
    // Files after events[0..index] (index -1: the starter files).
    if (index < 0) return starter;
    const k = Math.floor((index + 1) / SNAPSHOT_EVERY);
    let files = model.snapshots[k];
    for (let i = k * SNAPSHOT_EVERY; i <= index; i++) files = step(files, model.events[i]);
    return files;
  }

  function lastIndexAt(events, tMs) {
    let lo = 0, hi = events.length - 1, found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (events[mid].t_ms <= tMs) { found = mid; lo = mid + 1; } else { hi = mid - 1; }
    }
    return found;
  }

  function start(data) {
    defaultFile = data.default_file;
    const model = build(data);
    const paths = Object.keys(data.starter_files);
    let shownFile = defaultFile;
    const picker = $("replay-files");
    for (const path of paths) {
      const b = el("button", { type: "button", class: "btn btn-outline-secondary btn-sm", "data-file": path, text: path });
      b.addEventListener("click", () => { shownFile = path; const again = current; current = -2; show(again, true); });
      picker.appendChild(b);
    }
    picker.hidden = paths.length < 2;
    const events = model.events;
    const slider = $("replay-time");
    const t0 = events.length ? Math.min(0, events[0].t_ms) : 0;
    const t1 = events.length ? events[events.length - 1].t_ms : 0;
    slider.min = String(t0);
    slider.max = String(t1);
    let current = -2;

    // The shown file follows the event's file, unless the researcher just picked one.
    function show(index, keepFile = false) {
      if (index === current) return;
      current = index;
      const e = events[index];
      if (!keepFile && e && paths.includes(fileOf(e)) && e.data && ("file" in e.data || e.kind === "edit")) shownFile = fileOf(e);
      $("replay-code").textContent = filesAt(model, data.starter_files, index)[shownFile] ?? "";
      $("replay-file-name").textContent = shownFile;
      for (const b of picker.children) b.classList.toggle("active", b.dataset.file === shownFile);
      $("replay-event").textContent = e ? `#${e.seq} ${e.kind} at ${clock(e.t_ms)}` : "Starter files (before the first event)";
      $("replay-event-data").textContent = e && e.kind !== "checkpoint" ? JSON.stringify(e.data, null, 1) : "";
      $("replay-clock").textContent = clock(e ? e.t_ms : 0);
      if (e) history.replaceState(null, "", `#seq=${e.seq}`);
    }
    function goTo(index) {
      index = Math.max(-1, Math.min(events.length - 1, index));
      slider.value = String(index >= 0 ? events[index].t_ms : t0);
      show(index);
    }

    const markers = $("replay-markers");
    const span = Math.max(1, t1 - t0);
    events.forEach((e, i) => {
      const cat = model.drift.has(i) ? "drift" : data.categories[e.kind];
      if (!cat || !COLOURS[cat] || (cat === "away" && !(e.data.state === "hidden" || e.data.focused === false))) return;
      const title = `#${e.seq} ${e.kind} at ${clock(e.t_ms)}`;
      const mark = el("button", { type: "button", class: "position-absolute border-0 p-0", title, "aria-label": title });
      mark.style.cssText = `left:${(100 * (e.t_ms - t0)) / span}%;width:3px;height:100%;background:${COLOURS[cat]}`;
      mark.addEventListener("click", () => goTo(i));
      markers.appendChild(mark);
    });

    const counts = {};
    events.forEach((e) => { counts[e.kind] = (counts[e.kind] || 0) + 1; });
    const summary = $("replay-summary");
    const lines = [
      `${events.length} events, ${clock(t1)} of activity.`,
      model.gaps ? `${model.gaps} sequence numbers missing (not received).` : "No missing sequence numbers.",
      model.drift.size ? `${model.drift.size} checkpoint(s) differ from the rebuilt code (re-based there).` : "Every checkpoint matches the rebuilt code.",
      ...paths.filter((p) => data.final_files[p] !== model.finalFiles[p]).map((p) => `The last autosaved ${p} differs from the replayed end state.`),
      Object.entries(counts).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}: ${n}`).join(", "),
    ];
    summary.replaceChildren(...lines.filter(Boolean).map((text) => el("p", { class: "mb-1", text })));

    slider.addEventListener("input", () => show(lastIndexAt(events, Number(slider.value))));
    $("replay-prev").addEventListener("click", () => goTo(current - 1));
    $("replay-next").addEventListener("click", () => goTo(current + 1));
    let timer = null;
    $("replay-play").addEventListener("click", () => {
      if (timer) { clearInterval(timer); timer = null; return; }
      timer = setInterval(() => { if (current >= events.length - 1) { clearInterval(timer); timer = null; } else goTo(current + 1); }, 120);
    });
    function fromHash() {
      const m = /seq=(\d+)/.exec(location.hash);
      if (!m) return false;
      const seq = Number(m[1]);
      const index = events.findIndex((e) => e.seq >= seq);
      goTo(index === -1 ? events.length - 1 : index);
      return true;
    }
    for (const a of document.querySelectorAll(".replay-jump")) {
      a.addEventListener("click", (ev) => { ev.preventDefault(); location.hash = `seq=${a.dataset.seq}`; fromHash(); });
    }
    if (!fromHash()) goTo(events.length - 1);
    $("replay-status").hidden = true;
    $("replay-ui").hidden = false;
  }

  fetchJSON(root.dataset.url)
    .then(start)
    .catch((err) => { $("replay-status").textContent = `Could not load the events (${err.message}).`; });
})();
