// Sweep page: polls the sweep's progress JSON (study:sweep_progress) every few seconds while
// the tab is visible and units are left, updates the counts and the bar, and reloads the page
// once all units are done so the results table is the server's.
(function () {
  "use strict";
  const root = document.getElementById("sweep-progress");
  if (!root) return;
  const url = root.dataset.progressUrl;
  let done = Number(root.dataset.done);
  const total = Number(root.dataset.total);
  if (done >= total) return;

  function show(progress) {
    for (const name of ["done", "total", "passed", "running", "failed", "tokens"]) {
      const span = root.querySelector(`[data-field="${name}"]`);
      if (span) span.textContent = String(progress[name]);
    }
    const bar = root.querySelector('[data-field="bar"]');
    if (bar) bar.style.width = `${progress.total ? (100 * progress.done) / progress.total : 0}%`;
  }

  async function poll() {
    if (!document.hidden) {
      try {
        const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
        if (response.ok) {
          const progress = await response.json();
          show(progress);
          if (progress.done >= progress.total && progress.done !== done) {
            window.location.reload();
            return;
          }
          done = progress.done;
        }
      } catch {
        // Offline for a moment: the next poll tries again.
      }
    }
    window.setTimeout(poll, 4000);
  }
  window.setTimeout(poll, 4000);
})();
