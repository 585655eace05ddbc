// Waiting page: count down to the next session's opening, then reload.
(function () {
  "use strict";
  const el = document.getElementById("countdown");
  if (!el) return;
  const opens = Date.parse(el.dataset.opens);
  const tick = () => {
    const left = Math.max(0, Math.round((opens - Date.now()) / 1000));
    const h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
    el.textContent = `${h} h ${String(m).padStart(2, "0")} min ${String(s).padStart(2, "0")} s`;
    if (left === 0) { window.location.reload(); return; }
    window.setTimeout(tick, 1000);
  };
  tick();
})();
