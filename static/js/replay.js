// Researcher replay of one trial: scrub a timeline, see solution.py at any moment.
//
// The code is rebuilt here from the server's data.json: start from the starter code, apply each
// `edit` event's Monaco changes in seq order (each change's rangeOffset/rangeLength refer to the
// text before the event, so the changes are applied from the highest offset down), and re-base
// on every `checkpoint` / `code_reset` (full code). A checkpoint that disagrees with the rebuilt
// text is counted as drift (an event was lost or rejected) and marked in red. Needs common.js.
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

  function step(code, event) {
    if (event.kind === "edit") return applyEdit(code, event.data.changes || []);
    if (event.kind === "checkpoint" || event.kind === "code_reset") return event.data.code;
    return code;
  }

  const clock = (ms) => formatDuration(ms / 1000, "minutes");

  function build(data) {
    const events = data.events;
    const snapshots = [data.starter_code]; // snapshots[k] = code after event index k*SNAPSHOT_EVERY - 1
    const drift = new Set();
    let gaps = 0, prevSeq = 0;
    let code = data.starter_code;
    events.forEach((e, i) => {
      if (e.seq !== prevSeq + 1) gaps += e.seq - prevSeq - 1;
      prevSeq = e.seq;
      if (e.kind === "checkpoint" && e.data.code !== code) drift.add(i);
      code = step(code, e);
      if ((i + 1) % SNAPSHOT_EVERY === 0) snapshots.push(code);
    });
    return { events, snapshots, drift, gaps, finalCode: code };
  }

  function codeAt(model, starter, index) {
    // Code after events[0..index] (index -1: the starter code).
    if (index < 0) return starter;
    const k = Math.floor((index + 1) / SNAPSHOT_EVERY);
    let code = model.snapshots[k];
    for (let i = k * SNAPSHOT_EVERY; i <= index; i++) code = step(code, model.events[i]);
    return code;
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
    const model = build(data);
    const events = model.events;
    const slider = $("replay-time");
    const t0 = events.length ? Math.min(0, events[0].t_ms) : 0;
    const t1 = events.length ? events[events.length - 1].t_ms : 0;
    slider.min = String(t0);
    slider.max = String(t1);
    let current = -2;

    function show(index) {
      if (index === current) return;
      current = index;
      $("replay-code").textContent = codeAt(model, data.starter_code, index);
      const e = events[index];
      $("replay-event").textContent = e ? `#${e.seq} ${e.kind} at ${clock(e.t_ms)}` : "Starter code (before the first event)";
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
      data.final_code && data.final_code !== model.finalCode ? "The last autosaved code differs from the replayed end state." : "",
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
