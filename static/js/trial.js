// Trial page: countdown synced to the server deadline, and grading progress by polling.
// Needs common.js.
(function () {
  "use strict";
  const { fetchJSON, formatDuration } = window.hai;
  const timer = document.getElementById("timer");
  if (timer) {
    const deadline = Date.parse(timer.dataset.deadline);
    const out = document.getElementById("time-left");
    const tick = () => {
      const left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
      out.textContent = formatDuration(left, "minutes");
      if (left <= 600) timer.classList.add("text-warning");
      if (left <= 120) timer.classList.replace("text-warning", "text-danger");
      if (left === 0) { window.location.reload(); return; }
      window.setTimeout(tick, 1000);
    };
    tick();
  }
  const grading = document.getElementById("grading");
  const bar = document.getElementById("grading-bar");
  if (grading && bar) {
    const text = document.getElementById("grading-text");
    const poll = async () => {
      let body;
      try { body = await fetchJSON(grading.dataset.statusUrl); } catch (err) { return; }
      const g = body.grading;
      if (!g) return;
      const pct = g.total ? Math.round((100 * g.done) / g.total) : 0;
      bar.style.width = `${g.status === "done" ? 100 : pct}%`;
      if (g.status === "done") {
        text.textContent = body.report
          ? `Passed ${body.report.checks.passed} of ${body.report.checks.total} checks.`
          : "Graded. Your report will be shown when the study releases it.";
        return;
      }
      text.textContent = g.status === "failed" ? "Grading is being retried by the research team." : `${g.done} of ${g.total || "?"} tests run`;
      window.setTimeout(poll, 1500);
    };
    poll();
  }
})();
