/* evalsite dashboard: small progressive enhancements; every page works without them. */
(function () {
  "use strict";

  // The tenant switcher submits on change (a button stands in without JavaScript).
  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });

  // A form that asks first: data-confirm="the question" (no inline handler: the pages' Content-Security-Policy
  // allows none).
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.dataset.confirm)) { event.preventDefault(); }
    });
  });

  // "Select all" checkboxes: data-select-all="<name of the row checkboxes>".
  document.querySelectorAll("input[data-select-all]").forEach(function (all) {
    var form = all.form || document;
    all.addEventListener("change", function () {
      form.querySelectorAll('input[type=checkbox][name="' + all.dataset.selectAll + '"]').forEach(function (box) {
        box.checked = all.checked;
      });
    });
  });

  // Inline edit of a golden entry: the "Edit" link opens the row's form instead of the entry page.
  document.querySelectorAll("a[data-inline-edit]").forEach(function (link) {
    link.addEventListener("click", function (event) {
      var row = document.getElementById(link.dataset.inlineEdit);
      if (!row) { return; }
      event.preventDefault();
      row.hidden = !row.hidden;
      if (!row.hidden) {
        var first = row.querySelector("textarea, input");
        if (first) { first.focus(); }
      }
    });
  });
  document.querySelectorAll("button[data-inline-cancel]").forEach(function (button) {
    button.addEventListener("click", function () {
      var row = document.getElementById(button.dataset.inlineCancel);
      if (row) { row.hidden = true; }
    });
  });

  // A target's form: the example of the kind chosen is marked (every example stays readable).
  var examples = document.getElementById("kind-examples");
  var kindSelect = document.querySelector("form select[name=kind]");
  if (examples && kindSelect) {
    var mark = function () {
      examples.querySelectorAll("[data-kind-example]").forEach(function (item) {
        item.classList.toggle("chosen", item.dataset.kindExample === kindSelect.value);
      });
    };
    kindSelect.addEventListener("change", mark);
    mark();
  }

  // A study's form: the rows of an answer configuration's fields (groundedness, model) show only while the metric
  // typed is an answer metric (data-answer-metrics lists them); the server sends none of them otherwise.
  document.querySelectorAll("input[data-answer-metrics]").forEach(function (metric) {
    var names = metric.dataset.answerMetrics.split(",");
    var rows = metric.form ? metric.form.querySelectorAll("[data-answer-only]") : [];
    var follow = function () {
      var answers = names.indexOf(metric.value.trim().toLowerCase()) >= 0;
      rows.forEach(function (row) { row.hidden = !answers; });
    };
    metric.addEventListener("input", follow);
    metric.addEventListener("change", follow);
  });

  // A box that scrolls sideways (a wide table, a long line of code) takes the keyboard's focus while it scrolls,
  // so that the arrow keys can scroll it; a box that fits is no stop on the way.
  var reachable = function (box) {
    var scrolls = box.scrollWidth - box.clientWidth > 1;
    if (scrolls && !box.hasAttribute("tabindex")) {
      box.tabIndex = 0;
      box.dataset.scrollFocus = "";
    } else if (!scrolls && box.dataset.scrollFocus !== undefined) {
      box.removeAttribute("tabindex");
      delete box.dataset.scrollFocus;
    }
  };
  var recheck = function () { document.querySelectorAll("main pre, .table-wrap").forEach(reachable); };
  window.addEventListener("resize", recheck);
  document.addEventListener("toggle", recheck, true);  // a box inside a <details> measures 0 until it opens
  recheck();

  // A table wider than its box scrolls inside it: the side with more to see fades (more-right, more-left).
  document.querySelectorAll(".table-wrap").forEach(function (wrap) {
    var cue = function () {
      var hidden = wrap.scrollWidth - wrap.clientWidth;
      wrap.classList.toggle("more-right", hidden > 1 && wrap.scrollLeft < hidden - 1);
      wrap.classList.toggle("more-left", hidden > 1 && wrap.scrollLeft > 1);
      reachable(wrap);
    };
    wrap.addEventListener("scroll", cue, {passive: true});
    window.addEventListener("resize", cue);
    cue();
  });

  // Runs: count the ticked runs; the compare button needs two or more.
  var compareForm = document.getElementById("compare-form");
  if (compareForm) {
    var button = compareForm.querySelector("[data-compare-button]");
    var counter = compareForm.querySelector("[data-selected-count]");
    var update = function () {
      var ticked = compareForm.querySelectorAll('input[name="run"]:checked').length;
      var max = parseInt((compareForm.querySelector('input[name="run"]') || {dataset: {}}).dataset.max || "20", 10);
      button.disabled = ticked < 2 || ticked > max;
      counter.textContent = ticked ? ticked + " selected" + (ticked > max ? " (at most " + max + ")" : "") : "select two or more";
    };
    compareForm.addEventListener("change", update);
    update();
  }

  // Sortable tables: a click on a header with data-sort ("num" or "text") sorts the body by that column.
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var headers = table.querySelectorAll("thead th");
    headers.forEach(function (th, index) {
      var kind = th.dataset.sort;
      if (!kind) { return; }
      th.tabIndex = 0;
      th.classList.add("sort-header");
      th.setAttribute("aria-sort", "none");
      var sort = function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        headers.forEach(function (other) { if (other.dataset.sort) { other.setAttribute("aria-sort", "none"); } });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var key = function (row) {
          var cell = row.cells[index];
          var raw = cell ? (cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent.trim()) : "";
          if (kind === "num") {
            var number = parseFloat(raw);
            return isNaN(number) ? Infinity : number;
          }
          return raw.toLowerCase();
        };
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          var order = x < y ? -1 : x > y ? 1 : 0;
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
      });
    });
  });

  // Charts: each plot's figure waits in a JSON script beside it (evaluation.dashboard.chart_html); plotly.js, deferred
  // like this script and loaded before it, draws them.
  if (window.Plotly) {
    document.querySelectorAll("[data-plotly]").forEach(function (plot) {
      var source = document.getElementById(plot.dataset.plotly);
      if (!source) { return; }
      var figure = JSON.parse(source.textContent);
      window.Plotly.newPlot(plot, figure.data, figure.layout, figure.config);
    });
  }

  // Trends: a click on a marker opens its run (the marker's customdata is the run's URL).
  document.querySelectorAll("[data-open-runs] .plotly-graph-div").forEach(function (chart) {
    if (!chart.on) { return; }
    chart.on("plotly_click", function (data) {
      var point = data && data.points && data.points[0];
      if (point && typeof point.customdata === "string") { window.location.href = point.customdata; }
    });
  });

  // A job's progress page: poll its progress every poll-ms, open the results when it completes (a page marked
  // data-reload-when-finished is itself the results: it reloads once the job is over, however it ended).
  var job = document.getElementById("job");
  if (job && job.dataset.finished !== "true") {
    var bar = job.querySelector("[data-job-bar]");
    var status = job.querySelector("[data-job-status]");
    var count = job.querySelector("[data-job-count]");
    var hint = job.querySelector("[data-job-hint]");
    var error = job.querySelector("[data-job-error]");
    var result = job.querySelector("[data-job-result]");
    var cancel = job.querySelector("[data-job-cancel]");
    var started = Date.now();
    var interval = parseInt(job.dataset.pollMs || "500", 10);
    var failures = 0;
    var poll = function () {
      fetch(job.dataset.progressUrl, {credentials: "same-origin", headers: {"Accept": "application/json"}, cache: "no-store"})
        .then(function (response) {
          if (!response.ok) { throw new Error("HTTP " + response.status); }
          return response.json();
        })
        .then(function (state) {
          failures = 0;
          status.textContent = state.status;
          bar.value = state.progress;
          count.textContent = state.count_text;  // the server's words for the status, as the page first said them
          hint.hidden = !(state.status === "Queued" && Date.now() - started > 5000);
          if (state.finished && job.dataset.reloadWhenFinished === "true") {
            if (state.status === "Completed") { bar.value = 1; }
            window.location.reload();
            return;
          }
          if (state.status === "Completed" && state.result_url) {
            bar.value = 1;
            result.hidden = false;
            result.querySelector("a").href = state.result_url;
            window.location.assign(state.result_url);
            return;
          }
          if (state.finished) {
            if (cancel) { cancel.hidden = true; }
            if (state.error) { error.textContent = state.error; error.hidden = false; }
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
  }
})();
