// The judging workspace by keyboard: 0-3 grade, x cannot judge, j / k next and previous, u undo, n the note.
// Keys typed into the note stay in the note (Escape leaves it).
(function () {
  "use strict";
  document.addEventListener("keydown", function (event) {
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
