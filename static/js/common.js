// Helpers shared by the page scripts in static/js/ (no bundler: base.html loads this file,
// deferred, before every page's own scripts). Everything is on window.hai:
//
// - hai.el(tag, attrs, ...children): a new element. In attrs, "text" sets textContent, "class"
//   sets className and any other key is an attribute (null, undefined and false leave it out).
//   Children are nodes or text; null and undefined are skipped. Never parses HTML.
// - hai.jsonScript(id, fallback = null): the value of a {{ x|json_script:"id" }} element, or
//   fallback when there is no such element or it does not hold JSON.
// - hai.csrfToken(): the token of <meta name="csrf-token"> ("" on a page without one).
// - hai.sendJSON(url, {method, body, keepalive, signal}): fetch with the session cookie and
//   JSON both ways; method defaults to GET without a body and POST with one, and every method
//   but GET sends the CSRF token (X-CSRFToken). Resolves with {status, ok, json, data}: data is
//   the parsed answer or, when the answer is not JSON (a proxy's error page), json is false and
//   data is {error: "Unexpected answer from the server (<status>)."}. Rejects only when no
//   answer came (connection lost, aborted).
// - hai.fetchJSON(url, options): the same, but resolves with the data of a 2xx answer and
//   otherwise rejects with an Error whose message is the platform's {"error": "..."} (or
//   options.fallback(status), by default "HTTP <status>") and whose .status is the HTTP status.
// - hai.formatDuration(seconds, style): whole seconds (fractions dropped, negatives are 0) as
//   "clock" (default)  m:ss, or h:mm:ss from one hour on      59:07   1:02:03
//   "minutes"          m:ss with the minutes unbounded         62:03
//   "words"            h h mm min ss s                         0 h 05 min 09 s
//   "short"            h h mm min from one hour on, else m min ss s   1 h 02 min   5 min 09 s
//   Callers round first where it matters (a countdown rounds up, a clock of the past down).
//   "short" matches the `duration` template filter (study/templatetags/durations.py).
// - hai.wsUrl(path): ws:// or wss:// (as the page) on this host.
// - hai.emit(name, detail): dispatch CustomEvent name with detail on document.
// - hai.loadFragment(target, url): GET a server-rendered fragment into target (innerHTML)
//   with htmx. Resolves with true once it is swapped in, false when it was not: only a 2xx
//   answer is (htmx's rule), and never one that was redirected (a signed-out user sent to a
//   sign-in page). Rejects when no answer came. target must not sit inside a form (htmx would
//   send the form's fields).
// - hai.guardFragment(element): the same redirect rule for htmx requests aimed at element
//   declared in a template (hx-get); loadFragment applies it itself.
(function () {
  "use strict";

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = value;
      else if (key === "class") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function jsonScript(id, fallback = null) {
    const node = document.getElementById(id);
    if (!node) return fallback;
    try {
      return JSON.parse(node.textContent);
    } catch {
      return fallback;
    }
  }

  function csrfToken() {
    const meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.content : "";
  }

  async function sendJSON(url, { method, body, keepalive = false, signal } = {}) {
    const verb = method || (body === undefined ? "GET" : "POST");
    const headers = { Accept: "application/json" };
    if (verb !== "GET") {
      headers["Content-Type"] = "application/json";
      headers["X-CSRFToken"] = csrfToken();
    }
    const response = await fetch(url, {
      method: verb,
      headers,
      keepalive,
      signal,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data;
    let json = true;
    try {
      data = await response.json();
    } catch {
      json = false;
      data = { error: `Unexpected answer from the server (${response.status}).` };
    }
    return { status: response.status, ok: response.ok, json, data };
  }

  async function fetchJSON(url, options = {}) {
    const { status, ok, json, data } = await sendJSON(url, options);
    if (ok) return json ? data : {};
    const fallback = options.fallback || ((code) => `HTTP ${code}`);
    const error = new Error((json && data?.error) || fallback(status));
    error.status = status;
    error.data = json ? data : {};
    throw error;
  }

  const pad2 = (n) => String(n).padStart(2, "0");

  function formatDuration(seconds, style = "clock") {
    const total = Math.max(0, Math.floor(Number(seconds) || 0));
    const h = Math.floor(total / 3600);
    const m = Math.floor((total % 3600) / 60);
    const s = total % 60;
    switch (style) {
      case "minutes":
        return `${Math.floor(total / 60)}:${pad2(s)}`;
      case "words":
        return `${h} h ${pad2(m)} min ${pad2(s)} s`;
      case "short":
        return h ? `${h} h ${pad2(m)} min` : `${m} min ${pad2(s)} s`;
      default:
        return h ? `${h}:${pad2(m)}:${pad2(s)}` : `${m}:${pad2(s)}`;
    }
  }

  function wsUrl(path) {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    return `${scheme}://${window.location.host}${path}`;
  }

  function emit(name, detail) {
    document.dispatchEvent(new CustomEvent(name, { detail }));
  }

  const guarded = new WeakSet();

  function guardFragment(element) {
    if (guarded.has(element)) return;
    guarded.add(element);
    element.addEventListener("htmx:beforeSwap", (event) => {
      const { xhr, pathInfo } = event.detail;
      if (!xhr?.responseURL || !pathInfo) return;
      const asked = new URL(pathInfo.requestPath, window.location.href).pathname;
      if (new URL(xhr.responseURL).pathname !== asked) {
        event.detail.shouldSwap = false;
        event.detail.isError = true;
      }
    });
  }

  function loadFragment(target, url) {
    guardFragment(target);
    let swapped = false;
    const seen = (event) => {
      swapped = Boolean(event.detail.successful);
    };
    target.addEventListener("htmx:afterRequest", seen);
    return window.htmx
      .ajax("GET", url, { source: target, target, swap: "innerHTML" })
      .then(() => swapped)
      .finally(() => target.removeEventListener("htmx:afterRequest", seen));
  }

  window.hai = {
    el,
    jsonScript,
    csrfToken,
    sendJSON,
    fetchJSON,
    formatDuration,
    wsUrl,
    emit,
    guardFragment,
    loadFragment,
  };
})();
