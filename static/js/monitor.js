// Live monitor. The rows are the server's: #monitor-live re-reads its htmx partial
// (study:monitor_rows, templates/study/results/_monitor_rows.html, with the summary cards as an
// out-of-band swap) every few seconds while the tab is visible (its hx-trigger), and on a
// WebSocket push ({"type": "changed"}) this script turns into the "monitor-changed" event.
// Between reads, time left ticks down locally from each row's data-deadline, corrected by the
// partial's data-server-time. Needs common.js and htmx.
(function () {
  "use strict";
  const root = document.getElementById("monitor");
  const live = document.getElementById("monitor-live");
  if (!root || !live) return;
  const { formatDuration, guardFragment, wsUrl } = window.hai;
  const status = document.getElementById("monitor-status");
  let offsetMs = 0; // server clock minus browser clock

  function tick() {
    const now = Date.now() + offsetMs;
    for (const span of live.querySelectorAll("[data-deadline]")) {
      span.textContent = formatDuration(Math.round((Date.parse(span.dataset.deadline) - now) / 1000), "short");
    }
  }

  function synced() {
    const table = live.querySelector("[data-server-time]");
    if (table) offsetMs = Date.parse(table.dataset.serverTime) - Date.now();
    tick();
  }

  guardFragment(live); // signed out: keep the rows, never swap in the sign-in page
  live.addEventListener("htmx:afterSwap", () => {
    synced();
    status.textContent = `Updated ${new Date().toLocaleTimeString()}`;
  });
  live.addEventListener("htmx:afterRequest", (event) => {
    if (event.detail.successful) return;
    const code = event.detail.xhr?.status;
    const reason = !code ? "connection lost" : code < 300 ? "signed out" : `HTTP ${code}`;
    status.textContent = `Could not update (${reason}); retrying.`;
  });

  let retryMs = 1000;
  function connect() {
    if (!("WebSocket" in window)) return;
    const socket = new WebSocket(wsUrl(root.dataset.wsPath));
    socket.addEventListener("open", () => { retryMs = 1000; });
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(event.data);
      if (message.type === "changed") window.htmx.trigger(live, "monitor-changed");
    });
    socket.addEventListener("close", (event) => {
      if (event.code === 4403) return; // not allowed: polling still works with the session
      window.setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 30000);
    });
  }

  synced();
  window.setInterval(tick, 1000);
  connect();
})();
