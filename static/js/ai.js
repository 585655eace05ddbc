// The AI assistant of the workspace: chat panel, inline completions and the feedback-only
// protocol. Loaded only in AI arms; every request goes to the platform's gateway, which checks
// the arm again on the server (the browser never talks to a provider and holds no key).
//
// Needs: common.js, <aside id="ai-panel" data-ai-mode="chat|inline|inline_chat|feedback"
//        data-provider="demo|endpoint" data-trial-id="N">, <meta name="csrf-token">, the page's
//        workspace-urls JSON (ai_chat, ai_complete, ai_feedback, ai_outcome) and the
//        document event hai:editor-ready {editor, monaco, trialId, readOnly} (workspace.js).
// Emits hai:telemetry {kind, data} with the telemetry vocabulary (ide_bridge/telemetry/protocol.py):
//   suggestion_request, suggestion_shown, suggestion_accept, suggestion_reject,
//   suggestion_ignored, suggestion_cancel, chat_user_message, chat_assistant_response,
//   copy_from_chat, edit_preview, edit_accept.
(function () {
  "use strict";
  const panel = document.getElementById("ai-panel");
  const mode = panel ? panel.dataset.aiMode : "none";
  if (!panel || !mode || mode === "none") return;

  const STAGES = [["", "Stage (optional)"], ["comprehension", "Problem comprehension"],
    ["planning", "Solution planning"], ["coding", "Code generation"], ["debugging", "Debugging"]];
  const DEBOUNCE_MS = 1500; // RealHumanEval's inline debounce
  const PREFIX_CHARS = 4000, SUFFIX_CHARS = 2000; // the server keeps 6,000 (2/3 before)
  const { el, emit, fetchJSON, jsonScript } = window.hai;
  const trialId = panel.dataset.trialId;
  const pageUrls = jsonScript("workspace-urls", {});
  const url = (kind) => pageUrls[`ai_${kind}`];
  const telemetry = (kind, data) => emit("hai:telemetry", { kind, data });

  let closed = false;
  let editorDetail = null;

  // Rejects with the gateway's {"error": "..."} sentence and .status (ide_bridge/http.py).
  const call = (kind, body, signal) => fetchJSON(url(kind), {
    method: "POST", body, signal,
    fallback: (status) => `The assistant is unavailable (HTTP ${status}).`,
  });

  // --- Panel chrome -------------------------------------------------------------------------
  const title = mode === "feedback" ? "Assistant (feedback only)" : "Assistant";
  const badge = el("span", { class: "badge text-bg-warning", text: "Demo assistant — not a real AI", hidden: "" });
  const meter = el("span", { class: "small text-body-secondary ms-auto", "aria-live": "polite" });
  const log = el("div", { class: "ai-log d-flex flex-column gap-2 overflow-auto flex-grow-1 py-2", role: "log", "aria-live": "polite", "aria-label": "Conversation with the assistant" });
  const status = el("div", { class: "small text-danger", role: "alert" });
  const input = el("textarea", { class: "form-control", rows: "3", id: "ai-input" });
  const send = el("button", { class: "btn btn-primary btn-sm", type: "submit", text: mode === "feedback" ? "Send feedback" : "Send" });
  const form = el("form", { class: "d-flex flex-column gap-2" });
  panel.classList.add("d-flex", "flex-column", "h-100", "p-2");
  panel.append(el("div", { class: "d-flex align-items-center gap-2 flex-wrap" }, el("h2", { class: "h6 mb-0", text: title }), badge, meter), log, status, form);
  const showDemo = (isDemo) => { if (isDemo) badge.hidden = false; };
  showDemo(panel.dataset.provider === "demo");
  const showUsage = (data) => {
    if (typeof data.tokens_used === "number") {
      meter.textContent = `Tokens used: ${data.tokens_used.toLocaleString()} of ${data.token_cap.toLocaleString()}`;
    }
    showDemo(data.demo);
  };
  const fail = (error) => {
    status.textContent = error.message;
    if (error.status === 409 || error.status === 429 || error.status === 403) disable();
  };
  function disable() {
    input.disabled = true; send.disabled = true;
    form.querySelectorAll("select").forEach((s) => { s.disabled = true; });
  }

  // Text with ```fenced``` code blocks, rendered without innerHTML (replies are untrusted).
  function render(text, requestId) {
    const box = el("div");
    const fence = /```[\w+-]*[ \t]*\n([\s\S]*?)```/g;
    let last = 0;
    const prose = (s) => { if (s.trim()) { const p = el("p", { class: "mb-1", text: s.trim() }); p.style.whiteSpace = "pre-wrap"; box.append(p); } };
    for (const match of text.matchAll(fence)) {
      prose(text.slice(last, match.index));
      const code = match[1];
      const copy = el("button", { class: "btn btn-link btn-sm p-0", type: "button", text: "Copy" });
      copy.addEventListener("click", () => {
        navigator.clipboard?.writeText(code);
        telemetry("copy_from_chat", { request_id: requestId, length: code.length });
      });
      box.append(el("div", { class: "position-relative" }, el("pre", { class: "bg-body-tertiary border rounded p-2 mb-1 small" }, el("code", { text: code })), copy));
      last = match.index + match[0].length;
    }
    prose(text.slice(last));
    return box;
  }
  function bubble(role, content) {
    const who = role === "user" ? "You" : "Assistant";
    const node = el("div", { class: `ai-msg ai-${role} border rounded p-2 ${role === "user" ? "bg-body-secondary align-self-end" : "bg-body"}` },
      el("div", { class: "small fw-semibold mb-1", text: who }), content);
    log.append(node);
    log.scrollTop = log.scrollHeight;
    return node;
  }
  form.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); form.requestSubmit(); }
  });

  // --- Chat ---------------------------------------------------------------------------------
  function setUpChat() {
    const key = `hai:chat:${trialId}`;
    let history = [];
    try { history = JSON.parse(localStorage.getItem(key) || "[]"); } catch { history = []; }
    const save = () => { try { localStorage.setItem(key, JSON.stringify(history.slice(-40))); } catch { /* full */ } };
    for (const m of history) bubble(m.role, m.role === "user" ? el("div", { text: m.content }) : render(m.content, m.id));
    input.placeholder = "Ask the assistant… (Ctrl+Enter to send)";
    input.setAttribute("aria-label", "Message to the assistant");
    form.append(input, el("div", { class: "d-flex gap-2" }, send));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const text = input.value.trim();
      if (!text || closed) return;
      status.textContent = "";
      send.disabled = true;
      bubble("user", el("div", { text }));
      telemetry("chat_user_message", { length: text.length });
      const pending = bubble("assistant", el("div", { class: "text-body-secondary small", text: "Thinking…" }));
      const started = performance.now();
      try {
        // Only the new turn: the server keeps the conversation (the stored history is for display).
        const data = await call("chat", { message: text });
        pending.remove();
        input.value = "";
        history.push({ role: "user", content: text }, { role: "assistant", content: data.reply, id: data.id });
        save();
        bubble("assistant", render(data.reply, data.id));
        showUsage(data);
        telemetry("chat_assistant_response", { request_id: data.id, length: data.reply.length, has_code: data.reply.includes("```"), latency_ms: Math.round(performance.now() - started) });
      } catch (error) {
        pending.remove();
        fail(error);
      } finally {
        if (!input.disabled) send.disabled = false;
      }
    });
  }

  // --- Feedback-only protocol (ELABORATION) -------------------------------------------------
  function setUpFeedback() {
    const stage = el("select", { class: "form-select form-select-sm", "aria-label": "Stage of your feedback" });
    for (const [value, label] of STAGES) stage.append(el("option", { value, text: label }));
    input.placeholder = "Tell the assistant what to change… (Ctrl+Enter to send)";
    input.setAttribute("aria-label", "Feedback to the assistant");
    form.append(stage, input, el("div", { class: "d-flex gap-2" }, send));
    log.append(el("p", { class: "small text-body-secondary mb-0", text: "You cannot edit the code in this task. Describe what the assistant should change; it rewrites one of your files at a time and the change is shown below and applied to the editor." }));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const text = input.value.trim();
      if (!text || closed) return;
      status.textContent = "";
      send.disabled = true;
      const ws = window.haiWorkspace;
      bubble("user", el("div", { text: stage.value ? `[${stage.selectedOptions[0].text}] ${text}` : text }));
      telemetry("chat_user_message", { length: text.length, stage: stage.value });
      const pending = bubble("assistant", el("div", { class: "text-body-secondary small", text: "Revising your code…" }));
      const started = performance.now();
      try {
        const body = { feedback: text, stage: stage.value || null };
        if (ws) body.code = ws.fileText(ws.editable[0]); // compared with the server's, never used
        const data = await call("feedback", body);
        pending.remove();
        input.value = "";
        showUsage(data);
        // The diff shows the change; the full file is in the editor, not repeated here.
        const prose = data.applied ? data.reply.replace(/```[\w+-]*[ \t]*\n[\s\S]*?```/g, "").trim() : data.reply;
        const file = data.file || ws?.editable[0] || "";
        const content = render(prose || `Revised ${file}.`, data.id);
        if (data.notice) content.append(el("p", { class: "small text-warning-emphasis mb-1", text: data.notice }));
        if (data.diff) content.append(el("div", { class: "small fw-semibold mt-1", text: `Changes to ${file}` }), diffView(data.diff));
        bubble("assistant", content);
        telemetry("chat_assistant_response", { request_id: data.id, length: data.reply.length, has_code: true, latency_ms: Math.round(performance.now() - started) });
        if (data.diff) telemetry("edit_preview", { request_id: data.id, length: data.code.length });
        if (data.applied && ws && ws.fileText(file) !== data.code) {
          ws.showFile(file);
          ws.setFileText(file, data.code); // already saved on the server; the autosave repeats it
          telemetry("edit_accept", { request_id: data.id, length: data.code.length });
        }
      } catch (error) {
        pending.remove();
        fail(error);
      } finally {
        if (!input.disabled) send.disabled = false;
      }
    });
  }
  function diffView(diff) {
    const pre = el("pre", { class: "ai-diff bg-body-tertiary border rounded p-2 small mb-0" });
    diff.split("\n").forEach((line) => {
      let cls = "";
      if (line.startsWith("+") && !line.startsWith("+++")) cls = "text-success";
      else if (line.startsWith("-") && !line.startsWith("---")) cls = "text-danger";
      else if (line.startsWith("@@")) cls = "text-info-emphasis";
      pre.append(el("span", { class: cls, text: `${line}\n` }));
    });
    return pre;
  }

  // --- Inline completions (Monaco) ----------------------------------------------------------
  let inlineProvider = null;
  function setUpInline(detail) {
    const { monaco, editor } = detail;
    if (!monaco.languages.registerInlineCompletionsProvider) return;
    const reported = new Map(); // suggestion id -> last outcome sent
    const outcome = (id, value) => {
      const previous = reported.get(id);
      if (previous && previous !== "shown") return; // the first final outcome wins
      if (previous === value) return;
      reported.set(id, value);
      call("outcome", { suggestion_id: id, outcome: value }).catch(() => { /* best effort */ });
    };
    const endOfLife = (_completions, item, reason) => {
      if (!item?.haiId) return;
      const kind = reason && typeof reason.kind === "number" ? reason.kind : 2;
      const value = ["accepted", "rejected", "ignored"][kind] || "ignored";
      outcome(item.haiId, value);
      const event = { accepted: "suggestion_accept", rejected: "suggestion_reject", ignored: "suggestion_ignored" }[value];
      telemetry(event, value === "accepted" ? { request_id: item.haiId, partial: false, length: item.insertText.length } : { request_id: item.haiId });
    };
    const dispose = (completions) => {
      for (const item of completions?.items || []) {
        if (!item.haiId) continue;
        if (!reported.has(item.haiId)) telemetry("suggestion_cancel", { request_id: item.haiId });
        else if (reported.get(item.haiId) === "shown") endOfLife(completions, item, { kind: 2 });
      }
    };
    inlineProvider = monaco.languages.registerInlineCompletionsProvider("python", {
      debounceDelayMs: DEBOUNCE_MS,
      displayName: "HAI-Eval assistant",
      async provideInlineCompletions(model, position, context, token) {
        if (closed || model !== editor.getModel() || editor.getOption(monaco.editor.EditorOption.readOnly)) return { items: [] };
        const full = model.getFullModelRange();
        const prefix = model.getValueInRange({ startLineNumber: 1, startColumn: 1, endLineNumber: position.lineNumber, endColumn: position.column });
        const suffix = model.getValueInRange({ startLineNumber: position.lineNumber, startColumn: position.column, endLineNumber: full.endLineNumber, endColumn: full.endColumn });
        const abort = new AbortController();
        const listener = token.onCancellationRequested(() => abort.abort());
        telemetry("suggestion_request", { trigger: context.triggerKind === 1 ? "explicit" : "automatic", offset: prefix.length });
        const started = performance.now();
        try {
          const file = detail.pathOf ? detail.pathOf(model) : null; // the active file, for the prompt
          const data = await call("complete", { prefix: prefix.slice(-PREFIX_CHARS), suffix: suffix.slice(0, SUFFIX_CHARS), file }, abort.signal);
          showUsage(data);
          if (token.isCancellationRequested || !data.text) {
            if (data.suggestion_id) telemetry("suggestion_cancel", { request_id: data.suggestion_id });
            return { items: [] };
          }
          const range = new monaco.Range(position.lineNumber, position.column, position.lineNumber, position.column);
          return { items: [{ insertText: data.text, range, haiId: data.suggestion_id, haiLatency: Math.round(performance.now() - started) }] };
        } catch (error) {
          if (error.name !== "AbortError") fail(error);
          return { items: [] };
        } finally {
          listener.dispose();
        }
      },
      handleItemDidShow(_completions, item) {
        if (!item.haiId || reported.has(item.haiId)) return;
        outcome(item.haiId, "shown");
        telemetry("suggestion_shown", { request_id: item.haiId, length: item.insertText.length, lines: item.insertText.split("\n").length, latency_ms: item.haiLatency });
      },
      handlePartialAccept(_completions, item, acceptedCharacters, info) {
        const length = info && typeof info.acceptedLength === "number" ? info.acceptedLength : acceptedCharacters;
        if (item.haiId) telemetry("suggestion_accept", { request_id: item.haiId, partial: true, length });
      },
      handleEndOfLifetime: endOfLife,
      disposeInlineCompletions: dispose,
      freeInlineCompletions: dispose, // the name before Monaco 0.4x
    });
  }

  // --- Start --------------------------------------------------------------------------------
  if (mode === "feedback") setUpFeedback(); else if (mode === "chat" || mode === "inline_chat") setUpChat();
  else { log.append(el("p", { class: "small text-body-secondary mb-0", text: "Suggestions appear in the editor as grey text while you type: Tab accepts, Esc dismisses." })); form.hidden = true; }

  const onEditorReady = (detail) => {
    if (editorDetail) return;
    editorDetail = detail;
    if ((mode === "inline" || mode === "inline_chat") && !detail.readOnly) setUpInline(detail);
  };
  document.addEventListener("hai:editor-ready", (e) => onEditorReady(e.detail));
  if (window.haiEditorReady) onEditorReady(window.haiEditorReady);
  document.addEventListener("hai:trial-closed", () => {
    closed = true;
    disable();
    if (inlineProvider) { inlineProvider.dispose(); inlineProvider = null; }
    status.textContent = "This task is closed; the assistant is no longer available.";
  });
})();
