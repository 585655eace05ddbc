// Draw every plotly figure of the page: <div data-figure="ID"> next to a json_script with that
// ID holding the figure's JSON (from fig.to_json() on the server). plotly.js is vendored.
// Needs common.js.
(function () {
  "use strict";
  if (typeof window.Plotly === "undefined") return;
  for (const target of document.querySelectorAll("[data-figure]")) {
    const figure = window.hai.jsonScript(target.dataset.figure);
    if (!figure) continue;
    window.Plotly.newPlot(target, figure.data || [], figure.layout || {}, {
      responsive: true,
      displaylogo: false,
      modeBarButtonsToRemove: ["select2d", "lasso2d"],
    });
  }
})();
