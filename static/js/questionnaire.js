// Questionnaire pages: conditional items, error focus, no double submission. No framework.
//
// An item wrapper with data-show-if='{"item": "<key>", "in": ["value", ...]}' is shown only
// while the controlling item (itself shown) has one of those values; for checkboxes, any one
// ticked. The server applies the same rule to the submitted data (study/questionnaires/forms.py), so
// this script only keeps the page tidy: answers in hidden items are ignored by the server.
(function () {
  "use strict";

  function currentValues(form, key) {
    var values = [];
    var fields = form.querySelectorAll(`[name="${CSS.escape(key)}"]`);
    fields.forEach(function (field) {
      if (field.type === "radio" || field.type === "checkbox") {
        if (field.checked) values.push(field.value);
      } else if (field.value !== "") {
        values.push(field.value);
      }
    });
    return values;
  }

  function update(form) {
    var wrappers = {};
    form.querySelectorAll("[data-item-key]").forEach(function (el) {
      wrappers[el.dataset.itemKey] = el;
    });
    // Items come in page order and may only depend on earlier ones, so one pass suffices.
    form.querySelectorAll("[data-item-key]").forEach(function (el) {
      if (!el.dataset.showIf) return;
      var rule;
      try {
        rule = JSON.parse(el.dataset.showIf);
      } catch {
        return;
      }
      var controller = wrappers[rule.item];
      var allowed = (rule.in || []).map(String);
      var visible = !!controller && !controller.hidden &&
        currentValues(form, rule.item).some(function (v) { return allowed.indexOf(v) !== -1; });
      el.hidden = !visible;
    });
  }

  function init(form) {
    update(form);
    form.addEventListener("change", function () { update(form); });
    form.addEventListener("input", function () { update(form); });
    form.addEventListener("submit", function () {
      var button = form.querySelector('button[type="submit"]');
      if (button) {
        // Let this submission through, then block repeats while the page loads.
        window.setTimeout(function () { button.disabled = true; }, 0);
      }
    });
  }

  // Coming back through the browser history must not leave the button disabled.
  window.addEventListener("pageshow", function () {
    document.querySelectorAll('form[data-questionnaire] button[type="submit"]').forEach(
      function (button) { button.disabled = false; }
    );
  });

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form[data-questionnaire]").forEach(init);
    var summary = document.getElementById("error-summary");
    if (summary) summary.focus();
  });
})();
