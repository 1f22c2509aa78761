// The judging workspace by keyboard: 0 to the scale's top grade, x cannot judge, s skip (records nothing), j / k
// next and previous among the rater's own items, u undo, n the note. Each key clicks the control that names it.
// Keys typed into the note stay in the note (Escape leaves it).
// The one-key shortcuts can be turned off (WCAG 2.1.4: speech input or a stray key must not grade); the choice is
// kept in this browser (localStorage) for every pool.
(function () {
  "use strict";
  var STORED = "evalsite.judge.shortcuts";
  var read = function () {
    try { return window.localStorage.getItem(STORED) !== "off"; } catch (error) { return true; }
  };
  var on = read();
  var box = document.getElementById("judge-keys");
  var toggle = document.getElementById("judge-shortcuts");
  var show = function () {
    if (!box) return;
    box.querySelector("[data-shortcuts-on]").hidden = !on;
    box.querySelector("[data-shortcuts-off]").hidden = on;
  };
  if (toggle) {
    toggle.checked = on;
    box.querySelector("[data-shortcuts-switch]").hidden = false;
    toggle.addEventListener("change", function () {
      on = toggle.checked;
      try { window.localStorage.setItem(STORED, on ? "on" : "off"); } catch (error) { /* private mode: this page only */ }
      show();
    });
    show();
  }

  document.addEventListener("keydown", function (event) {
    if (!on) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT")) {
      if (event.key === "Escape") target.blur();
      return;
    }
    var key = event.key.toLowerCase();
    if (key === "n") {
      var note = document.getElementById("judge-note");
      if (note) { event.preventDefault(); note.focus(); }
      return;
    }
    var control = document.querySelector('[data-key="' + key + '"]');
    if (!control) return;
    event.preventDefault();
    control.click();
  });
})();
