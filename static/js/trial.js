// Trial page: countdown synced to the server deadline, and grading progress by polling. Once
// grading is done and the study releases the report, the server's report fragment
// (data-report-url, study/results/_report_fragment.html) is loaded into #report with htmx.
// Needs common.js.
(function () {
  "use strict";
  const { fetchJSON, formatDuration, loadFragment } = window.hai;
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
    const report = document.getElementById("report");
    const NOT_RELEASED = "Graded. Your report will be shown when the study releases it.";
    const showReport = async () => {
      let shown = false;
      try { shown = await loadFragment(report, grading.dataset.reportUrl); } catch { shown = false; }
      report.hidden = !shown;
      text.textContent = shown ? "Graded. Your report is below." : NOT_RELEASED;
    };
    const poll = async () => {
      let body;
      try { body = await fetchJSON(grading.dataset.statusUrl); } catch { return; }
      const g = body.grading;
      if (!g) return;
      const pct = g.total ? Math.round((100 * g.done) / g.total) : 0;
      bar.style.width = `${g.status === "done" ? 100 : pct}%`;
      if (g.status === "done") {
        if (body.report && report) showReport();
        else text.textContent = NOT_RELEASED;
        return;
      }
      text.textContent = g.status === "failed" ? "Grading is being retried by the research team." : `${g.done} of ${g.total || "?"} tests run`;
      window.setTimeout(poll, 1500);
    };
    poll();
  }
})();
