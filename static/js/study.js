/* A study's page while it runs: poll its progress, redraw its charts and its trials' rows as trials arrive, and
   reload once it has finished (the result, the verdict and the preset form are the server's). Without JavaScript
   the page refreshes itself (a noscript meta refresh). */
(function () {
  "use strict";
  var box = document.getElementById("study");
  if (!box || box.dataset.finished === "true" || !window.fetch) { return; }
  var status = box.querySelector("[data-study-status]");
  var bar = box.querySelector("[data-study-bar]");
  var count = box.querySelector("[data-study-count]");
  var error = box.querySelector("[data-study-error]");
  var cancel = box.querySelector("[data-study-cancel]");
  var rows = document.querySelector("table.study-trials tbody");
  var note = document.querySelector("[data-importance-note]");
  var interval = parseInt(box.dataset.pollMs || "1000", 10);
  var seen = parseInt(box.dataset.trials || "0", 10);
  var failures = 0;
  var config = {displaylogo: false, responsive: true};

  // The poll's figures come without their template (the page's first charts carry it): it is put back here.
  var template = function () {
    var drawn = document.querySelector(".plotly-graph-div");
    return drawn && drawn.layout ? drawn.layout.template : undefined;
  };
  var draw = function (name, figure) {
    var holder = document.querySelector('[data-figure="' + name + '"]');
    if (!holder || !figure || !window.Plotly) { return; }
    var div = document.getElementById("study-" + name);
    if (!div) {
      div = document.createElement("div");
      div.id = "study-" + name;
      div.className = "plotly-graph-div";
      holder.appendChild(div);
    }
    figure.layout.template = template();
    window.Plotly.react(div, figure.data, figure.layout, config);
    var caption = document.getElementById("study-" + name + "-title");  // the title is the page's (chart_html)
    if (caption && figure.title) { caption.textContent = figure.title; }
  };

  var poll = function () {
    fetch(box.dataset.progressUrl, {credentials: "same-origin", headers: {"Accept": "application/json"}, cache: "no-store"})
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (state) {
        failures = 0;
        status.textContent = state.status;
        bar.value = state.progress;
        count.textContent = state.count_text;
        if (state.trials !== seen || state.finished) {
          seen = state.trials;
          Object.keys(state.figures).forEach(function (name) { draw(name, state.figures[name]); });
          if (note) {
            note.textContent = state.importance_note;
            note.hidden = !state.importance_note;  // what it rests on, or why it is withheld
          }
          if (rows && state.rows_html) { rows.innerHTML = state.rows_html; }
        }
        if (state.finished) {
          if (cancel) { cancel.hidden = true; }
          if (state.error) { error.textContent = state.error; error.hidden = false; }
          window.location.reload();  // the result, its verdict and the preset form
          return;
        }
        window.setTimeout(poll, interval);
      })
      .catch(function () {
        failures += 1;
        if (failures > 20) {
          error.textContent = "Lost contact with the server; reload the page to try again.";
          error.hidden = false;
          return;
        }
        window.setTimeout(poll, Math.min(interval * failures, 5000));
      });
  };
  window.setTimeout(poll, interval);
})();
