// Live monitor: re-read the monitor JSON on a WebSocket push ({"type": "changed"}) and, as a
// fallback that always runs, every few seconds. Time left ticks down locally between reads.
// Needs common.js.
(function () {
  "use strict";
  const root = document.getElementById("monitor");
  if (!root) return;
  const { el, fetchJSON, formatDuration, wsUrl } = window.hai;
  const jsonUrl = root.dataset.jsonUrl + window.location.search;
  const pollMs = Number(root.dataset.pollMs || 5000);
  const tbody = document.getElementById("monitor-rows");
  const status = document.getElementById("monitor-status");
  const pageCaption = document.getElementById("monitor-page");
  const BADGES = { active: "text-bg-primary", submitted: "text-bg-success", expired: "text-bg-dark" };
  let offsetMs = 0; // server clock minus browser clock
  let loading = false;
  let again = false;

  const duration = (seconds) => formatDuration(Math.round(seconds), "short");

  function row(p) {
    const stage = el("td", {}, p.stage_label, p.session ? ` · session ${p.session}` : "");
    if (p.ended_reason) stage.append(el("br"), el("span", { class: "small text-body-secondary" }, p.ended_reason));
    let current = "—";
    if (p.current_trial) {
      const t = p.current_trial;
      current = `Task ${t.period} · ${t.condition} · ${t.template}`;
    } else if (p.next_trial) {
      current = el("span", { class: "text-body-secondary" }, `next: task ${p.next_trial.period}`);
    }
    let left = "—";
    if (p.current_trial && p.current_trial.deadline) {
      left = el("span", { "data-deadline": p.current_trial.deadline }, duration(p.current_trial.time_left_s || 0));
    } else if (p.next_session_in_s !== null) {
      left = el("span", { class: "text-body-secondary" }, `next session in ${duration(p.next_session_in_s)}`);
    }
    const trials = el("td", {});
    for (const t of p.trials) {
      const title = `Task ${t.period}: ${t.status}` + (t.grading ? `, grading ${t.grading}` : "");
      trials.append(el("a", { class: `badge me-1 ${BADGES[t.status] || "text-bg-light border"}`, href: t.report_url, title }, `${t.period}${t.condition}`));
    }
    let grading = "—";
    if (p.grading_pending) grading = el("span", { class: "badge text-bg-warning" }, `${p.grading_pending} pending`);
    else if (p.trials_ended) grading = `${p.trials_ended}/${p.trials_total} done`;
    const flags = p.flags ? el("span", { class: "badge text-bg-danger" }, p.flags) : "0";
    const when = (p.ended_at || p.last_activity_at || "—").slice(0, 16);
    return el(
      "tr", {},
      el("td", {}, el("strong", {}, p.pseudonym), el("br"), el("span", { class: "small text-body-secondary font-monospace" }, p.internal_id)),
      el("td", {}, p.track || "—"),
      stage,
      el("td", {}, current),
      el("td", {}, left),
      trials,
      el("td", {}, grading),
      el("td", {}, flags),
      el("td", { class: "small" }, when),
    );
  }

  function render(data) {
    offsetMs = Date.parse(data.server_time) - Date.now();
    const rows = data.participants.map(row);
    if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: "9", class: "text-body-secondary" }, "No participants match.")));
    tbody.replaceChildren(...rows);
    for (const [key, value] of Object.entries(data.summary)) {
      const cell = root.querySelector(`[data-summary="${key}"]`);
      if (cell) cell.textContent = value;
    }
    const pg = data.page;
    pageCaption.textContent = `Page ${pg.number} of ${pg.pages} · ${pg.count} participant${pg.count === 1 ? "" : "s"}`;
    status.textContent = `Updated ${new Date().toLocaleTimeString()}`;
  }

  async function refresh() {
    if (loading) { again = true; return; }
    loading = true;
    try {
      render(await fetchJSON(jsonUrl));
    } catch (error) {
      status.textContent = `Could not update (${error.message}); retrying.`;
    } finally {
      loading = false;
      if (again) { again = false; window.setTimeout(refresh, 250); }
    }
  }

  function tick() {
    const now = Date.now() + offsetMs;
    for (const span of tbody.querySelectorAll("[data-deadline]")) {
      span.textContent = duration((Date.parse(span.dataset.deadline) - now) / 1000);
    }
  }

  let retryMs = 1000;
  function connect() {
    if (!("WebSocket" in window)) return;
    const socket = new WebSocket(wsUrl(root.dataset.wsPath));
    socket.addEventListener("open", () => { retryMs = 1000; });
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(event.data);
      if (message.type === "changed") refresh();
    });
    socket.addEventListener("close", (event) => {
      if (event.code === 4403) return; // not allowed: polling still works with the session
      window.setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 30000);
    });
  }

  tick();
  window.setInterval(tick, 1000);
  window.setInterval(() => { if (!document.hidden) refresh(); }, pollMs);
  connect();
})();
