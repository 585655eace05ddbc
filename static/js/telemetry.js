// Telemetry client of the trial workspace (notes/ide.md sections 4-5; the wire protocol and the
// event vocabulary are documented in ide_bridge/telemetry/protocol.py).
//
// WHAT THE PAGE MUST PROVIDE (workspace template):
// * common.js (window.hai), loaded before this script.
// * This script, after or before workspace.js: it starts on the `hai:editor-ready` event
//   {editor, monaco, trialId, readOnly, models, editable} or on window.haiEditorReady if that
//   already fired. models maps each editable path to its Monaco model; editing events carry
//   the path as data.file (replay rebuilds every file; an event without one is about the
//   first editable file).
// * <div id="workspace" data-telemetry-token="{{ telemetry_token }}">: the trial's page token
//   (ide_bridge.telemetry.services.page_token) and, in the page's workspace-urls JSON, the
//   "events" URL. Only the pagehide beacon uses them (POST <events>?token=...). Without them,
//   events still unsent at pagehide stay in localStorage and go out over the WebSocket on the
//   next visit (nothing is lost).
// * data-ai-panel on the AI panel's root element: copies from inside it are "ai_panel" copies.
// * Other scripts report events with
//     document.dispatchEvent(new CustomEvent("hai:telemetry", {detail: {kind, data, clipboardText}}))
//   kind/data as in ide_bridge/telemetry/protocol.py (AI events carry data.request_id). clipboardText is
//   optional and never sent: text an AI "copy" button put on the clipboard, so that pasting it
//   counts as source "ai_panel" rather than "outside".
// * workspace.js's own events are mapped here: hai:tests-run -> run_tests,
//   hai:submitted -> checkpoint + submit, hai:trial-closed -> trial_end. Do not also send those
//   three kinds through hai:telemetry, or they are recorded twice.
//
// GUARANTEES: every event gets a strictly increasing seq kept with the buffer in localStorage
// (key hai:telemetry:<trialId>), under a Web Lock so that two tabs never hand out one seq twice.
// The buffer is flushed over ws(s)://host/ws/trials/<id>/events/ every second or 50 events,
// events <= the server's ack are dropped, unacked ones are re-sent after a reconnect
// (exponential backoff) and after a reload; the server stores each (trial, seq) once.
(function () {
  "use strict";
  const COMMIT_MS = 250; // pending events -> numbered buffer in localStorage
  // A batch's UTF-8 size stays under the server's limit (2 MiB) and daphne's default message
  // limit (1 MiB); after a close with 1009 (message too big) it is halved for this page.
  const FLUSH_MS = 1000, FLUSH_EVENTS = 50, MAX_BATCH = 500, MAX_BATCH_BYTES = 1000000;
  const TOO_BIG = 1009, utf8 = new TextEncoder();
  let batchBytes = MAX_BATCH_BYTES;
  const CHECKPOINT_EVENTS = 50, CHECKPOINT_MS = 30000, SELECTION_MS = 1000, IDLE_MS = 60000;
  const BEACON_CHARS = 60000; // browsers allow ~64 KiB of beacons in flight
  const ACK_TIMEOUT_MS = 15000, BACKOFF_MIN_MS = 1000, BACKOFF_MAX_MS = 30000;
  const FINAL_CLOSE_CODES = new Set([4401, 4404, 4409]); // see ide_bridge/telemetry/consumers.py
  let started = false;

  function start(detail) {
    if (started || !detail || !detail.editor) return;
    started = true;
    const trialId = Number(detail.trialId);
    const editor = detail.editor;
    const models = detail.models || { [(detail.editable || ["solution.py"])[0]]: editor.getModel() };
    const paths = Object.keys(models);
    const fileOf = (m) => paths.find((p) => models[p] === m) || paths[0];
    const key = `hai:telemetry:${trialId}`;
    let pending = []; // {ts, kind, data} waiting for a seq
    let memory = null; // the buffer, while localStorage refuses writes (quota)

    // --- The numbered buffer ------------------------------------------------------------------
    function load() {
      if (memory) return memory;
      try {
        const raw = window.localStorage.getItem(key);
        if (raw) return JSON.parse(raw);
      } catch { /* unreadable: start a new buffer */ }
      return { next: 1, acked: 0, sentMax: 0, events: [] };
    }
    function save(state) {
      try { window.localStorage.setItem(key, JSON.stringify(state)); memory = null; }
      catch { memory = state; } // keep it in memory; retried on the next save
    }
    function withLock(fn) {
      if (navigator.locks?.request) return navigator.locks.request(key, () => fn());
      return Promise.resolve().then(fn);
    }
    function commitNow() { // synchronous: also used on pagehide, where no lock can be awaited
      const state = load();
      for (const p of pending) state.events.push({ seq: state.next++, ts: p.ts, kind: p.kind, data: p.data });
      pending = [];
      save(state);
      return state;
    }
    const commit = () => withLock(commitNow);

    // --- Recording ----------------------------------------------------------------------------
    let sinceCheckpoint = 0, lastCheckpointAt = Date.now(), dirty = false;
    const dirtyFiles = new Set();
    function record(kind, data) {
      pending.push({ ts: Date.now(), kind, data: data || {} });
      if (kind !== "checkpoint") {
        sinceCheckpoint += 1;
        if (sinceCheckpoint >= CHECKPOINT_EVENTS && dirty) checkpoint("events");
      }
      if (pending.length >= FLUSH_EVENTS) commit().then(flush);
    }
    // One checkpoint per file changed since the last one (every file on load and submit).
    function checkpoint(reason, { all = false } = {}) {
      sinceCheckpoint = 0;
      lastCheckpointAt = Date.now();
      dirty = false;
      for (const file of paths) {
        if (!all && !dirtyFiles.has(file)) continue;
        const m = models[file];
        record("checkpoint", { code: m.getValue(), versionId: m.getVersionId(), reason, file });
      }
      dirtyFiles.clear();
    }
    function emitted(name, handler) {
      document.addEventListener(name, (ev) => handler(ev.detail || {}));
    }

    // Edits: Monaco's changes refer to the text before the event (replay applies them from the
    // highest offset down). A flush (setValue) is followed by a checkpoint, to re-base replay.
    for (const file of paths) {
      models[file].onDidChangeContent((e) => {
        record("edit", {
          changes: e.changes.map((c) => ({ rangeOffset: c.rangeOffset, rangeLength: c.rangeLength, text: c.text })),
          versionId: e.versionId, isUndoing: e.isUndoing, isRedoing: e.isRedoing, isFlush: e.isFlush, file,
        });
        dirty = true;
        dirtyFiles.add(file);
        activity();
        if (e.isFlush || e.isEolChange) checkpoint("flush");
      });
    }

    // Selection and cursor, at most once a second (the last one is kept).
    let lastSelectionAt = 0, selectionTimer = null, latestSelection = null;
    function sendSelection() {
      selectionTimer = null;
      lastSelectionAt = Date.now();
      const e = latestSelection;
      const s = e.selection;
      const model = editor.getModel();
      if (!model) return;
      const offset = model.getOffsetAt(s.getStartPosition());
      record("selection", {
        offset, length: model.getOffsetAt(s.getEndPosition()) - offset,
        line: s.positionLineNumber, column: s.positionColumn, selections: 1 + e.secondarySelections.length,
        file: fileOf(model),
      });
    }
    editor.onDidChangeCursorSelection((e) => {
      latestSelection = e;
      if (selectionTimer) return;
      selectionTimer = window.setTimeout(sendSelection, Math.max(0, lastSelectionAt + SELECTION_MS - Date.now()));
    });
    editor.onDidFocusEditorText(() => record("editor_focus", { file: fileOf(editor.getModel()) }));
    editor.onDidBlurEditorText(() => record("editor_blur", { file: fileOf(editor.getModel()) }));

    // Copy and paste. Copied text stays in memory only (never sent), to tell a paste from the
    // editor or the AI panel from one from outside; whitespace is ignored (auto-indent).
    const copied = new Map();
    const norm = (text) => text.replace(/\s+/g, "");
    function remember(text, source) {
      const k = norm(text || "");
      if (!k) return;
      copied.delete(k);
      copied.set(k, source);
      if (copied.size > 50) copied.delete(copied.keys().next().value);
    }
    function onCopy(ev) {
      let text = "", source = "page";
      const model = editor.getModel();
      if (editor.hasTextFocus() && model) {
        source = "editor";
        const sel = editor.getSelection();
        text = sel && !sel.isEmpty() ? model.getValueInRange(sel) : `${model.getLineContent(sel ? sel.positionLineNumber : 1)}\n`;
      } else {
        text = String(window.getSelection() || "");
        if (ev.target instanceof Element && ev.target.closest("[data-ai-panel]")) source = "ai_panel";
      }
      remember(text, source);
      const data = { length: text.length, source, cut: ev.type === "cut" };
      if (source === "editor") data.file = fileOf(model);
      record("copy", data);
    }
    document.addEventListener("copy", onCopy, true);
    document.addEventListener("cut", onCopy, true);
    editor.onDidPaste((e) => {
      const model = editor.getModel();
      const data = e.clipboardEvent?.clipboardData;
      const text = data?.getData("text/plain") || model.getValueInRange(e.range);
      const from = copied.get(norm(text));
      record("paste", {
        length: text.length, lines: e.range.endLineNumber - e.range.startLineNumber + 1,
        source: from === "editor" || from === "ai_panel" ? from : "outside",
        offset: model.getOffsetAt(e.range.getStartPosition()), file: fileOf(model),
      });
    });

    // Focus, visibility and idle time.
    let blurredAt = null, hiddenAt = null, lastInput = Date.now(), idle = false;
    window.addEventListener("blur", () => { blurredAt = Date.now(); record("window_focus", { focused: false }); });
    window.addEventListener("focus", () => {
      const data = { focused: true };
      if (blurredAt !== null) data.away_ms = Date.now() - blurredAt;
      blurredAt = null;
      record("window_focus", data);
    });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "hidden") {
        hiddenAt = Date.now();
        record("page_visibility", { state: "hidden" });
        commit().then(flush); // a hidden tab may never come back
      } else {
        const data = { state: "visible" };
        if (hiddenAt !== null) data.hidden_ms = Date.now() - hiddenAt;
        hiddenAt = null;
        record("page_visibility", data);
      }
    });
    function activity() {
      const now = Date.now();
      if (idle) { idle = false; record("idle", { state: "end", idle_ms: now - lastInput }); }
      lastInput = now;
    }
    for (const name of ["keydown", "mousedown", "pointermove", "wheel", "touchstart"]) {
      window.addEventListener(name, activity, { capture: true, passive: true });
    }

    // Events of other scripts.
    emitted("hai:telemetry", (d) => {
      if (d.clipboardText) remember(d.clipboardText, "ai_panel");
      if (typeof d.kind === "string") record(d.kind, d.data);
    });
    emitted("hai:tests-run", (d) => {
      const total = Number(d.tests_run) || 0, failed = Number(d.failures) || 0, errors = Number(d.errors) || 0;
      record("run_tests", { passed: Math.max(0, total - failed - errors), failed, errors, total, duration_ms: d.duration_ms });
    });
    emitted("hai:submitted", () => {
      checkpoint("submit", { all: true });
      const length = paths.reduce((n, p) => n + models[p].getValueLength(), 0);
      record("submit", { versionId: models[paths[0]].getVersionId(), length });
      commit().then(flush);
    });
    emitted("hai:trial-closed", (d) => record("trial_end", { reason: String(d.status || "") }));

    // --- Sending --------------------------------------------------------------------------------
    let ws = null, ready = false, sentUpTo = 0, backoff = BACKOFF_MIN_MS, stopped = false;
    let lastFlush = 0, waitingSince = null;

    function batches(events) {
      const out = [];
      let parts = [], bytes = 0;
      for (const e of events) {
        const text = JSON.stringify(e);
        const size = text.length > batchBytes / 3 ? utf8.encode(text).length : text.length * 3;
        if (parts.length && (parts.length >= MAX_BATCH || bytes + size > batchBytes)) {
          out.push(parts);
          parts = [];
          bytes = 0;
        }
        parts.push(text);
        bytes += size + 1;
      }
      if (parts.length) out.push(parts);
      return out.map((p) => `{"type":"batch","events":[${p.join(",")}]}`);
    }

    function flush() {
      lastFlush = Date.now();
      const socket = ws;
      if (!socket || !ready || socket.readyState !== WebSocket.OPEN) return;
      withLock(() => {
        const state = load();
        const from = Math.max(state.acked, sentUpTo);
        const out = state.events.filter((e) => e.seq > from);
        if (!out.length) return null;
        state.sentMax = Math.max(state.sentMax, out[out.length - 1].seq);
        save(state); // before sending: these seqs are now on the server's side of the line
        return { messages: batches(out), last: out[out.length - 1].seq };
      }).then((plan) => {
        if (!plan || socket !== ws || socket.readyState !== WebSocket.OPEN) return;
        for (const message of plan.messages) socket.send(message);
        sentUpTo = Math.max(sentUpTo, plan.last);
        if (waitingSince === null) waitingSince = Date.now();
      });
    }

    function onAck(seq, isHello) {
      return withLock(() => {
        const state = load();
        if (isHello && seq >= state.next) {
          // The server holds seqs this buffer never handed out (another device, or cleared
          // storage): number our never-sent events after them instead of colliding.
          const unsent = state.events.filter((e) => e.seq > state.sentMax);
          unsent.forEach((e, i) => { e.seq = seq + 1 + i; });
          state.events = unsent;
          state.next = seq + 1 + unsent.length;
        }
        state.acked = Math.max(state.acked, seq);
        state.events = state.events.filter((e) => e.seq > state.acked);
        save(state);
      });
    }

    function connect() {
      if (stopped || ws) return;
      const socket = new WebSocket(window.hai.wsUrl(`/ws/trials/${trialId}/events/`));
      ws = socket;
      ready = false;
      socket.onopen = () => socket.send(JSON.stringify({ type: "hello" }));
      socket.onmessage = (m) => {
        let msg;
        try { msg = JSON.parse(m.data); } catch { return; }
        if (msg.type === "ack") {
          const current = socket === ws; // a late ack of a replaced socket still counts
          const isHello = current && !ready;
          onAck(Number(msg.seq) || 0, isHello).then(() => {
            if (!current || socket !== ws) return;
            if (isHello) { ready = true; sentUpTo = 0; backoff = BACKOFF_MIN_MS; }
            waitingSince = msg.seq >= sentUpTo ? null : Date.now();
            if (isHello) flush();
          });
        } else if (msg.type === "error") {
          console.warn("telemetry:", msg.code, msg.error);
        }
      };
      socket.onclose = (e) => {
        if (ws === socket) { ws = null; ready = false; waitingSince = null; }
        if (FINAL_CLOSE_CODES.has(e.code)) { stopped = true; return; }
        if (e.code === TOO_BIG) batchBytes = Math.max(1, Math.floor(batchBytes / 2)); // one event at least
        window.setTimeout(connect, backoff * (0.5 + Math.random()));
        backoff = Math.min(BACKOFF_MAX_MS, backoff * 2);
      };
    }

    function tick() {
      const now = Date.now();
      if (!idle && now - lastInput >= IDLE_MS) { idle = true; record("idle", { state: "start", idle_ms: now - lastInput }); }
      if (dirty && now - lastCheckpointAt >= CHECKPOINT_MS) checkpoint("time");
      const due = now - lastFlush >= FLUSH_MS;
      if (pending.length) commit().then(() => { if (due) flush(); });
      else if (due) flush();
      if (ws && waitingSince !== null && now - waitingSince > ACK_TIMEOUT_MS) ws.close(); // reconnect, re-send
    }

    // --- Leaving the page: number everything, beacon what fits, keep the rest for next time ---
    window.addEventListener("pagehide", () => {
      if (dirty) checkpoint("pagehide");
      const state = commitNow();
      const root = document.getElementById("workspace");
      const token = root ? root.dataset.telemetryToken : "";
      const eventsUrl = window.hai.jsonScript("workspace-urls", {}).events || "";
      if (!token || !eventsUrl || !navigator.sendBeacon) return;
      const out = [];
      let chars = 0;
      for (const e of state.events) {
        if (e.seq <= state.acked) continue;
        chars += JSON.stringify(e).length + 1;
        if (out.length && (chars > BEACON_CHARS || out.length >= MAX_BATCH)) break;
        out.push(e);
      }
      if (!out.length) return;
      state.sentMax = Math.max(state.sentMax, out[out.length - 1].seq);
      save(state);
      const url = `${eventsUrl}?token=${encodeURIComponent(token)}`;
      navigator.sendBeacon(url, new Blob([JSON.stringify({ type: "batch", events: out })], { type: "text/plain;charset=UTF-8" }));
    });
    window.addEventListener("pageshow", (e) => { if (e.persisted) { stopped = false; connect(); } });

    const first = models[paths[0]];
    record("task_load", { versionId: first.getVersionId(), length: first.getValueLength(), file: paths[0], files: paths.length });
    checkpoint("load", { all: true });
    commit().then(connect);
    window.setInterval(tick, COMMIT_MS);
  }

  document.addEventListener("hai:editor-ready", (e) => start(e.detail));
  if (window.haiEditorReady) start(window.haiEditorReady);
})();
