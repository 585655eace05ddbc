// Waiting page: count down to the next session's opening, then reload. Needs common.js.
(function () {
  "use strict";
  const out = document.getElementById("countdown");
  if (!out) return;
  const opens = Date.parse(out.dataset.opens);
  const tick = () => {
    const left = Math.max(0, Math.round((opens - Date.now()) / 1000));
    out.textContent = window.hai.formatDuration(left, "words");
    if (left === 0) { window.location.reload(); return; }
    window.setTimeout(tick, 1000);
  };
  tick();
})();
