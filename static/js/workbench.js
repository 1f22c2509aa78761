// The query workbench: knobs that re-rank without a page reload, grades by keyboard (↓/↑ move, 0-3 grade,
// e explain, u undo), columns added and removed. The server renders the columns; this script only sends the
// page's state and puts back what it answers.
(function () {
  "use strict";
  var form = document.getElementById("wb-state");
  if (!form) return;
  var columnsBox = document.getElementById("wb-columns");
  var errorBox = document.getElementById("wb-error");
  var knobs = document.getElementById("wb-knobs");
  var initial = JSON.parse(document.getElementById("wb-initial").textContent);
  var mayJudge = form.dataset.mayJudge === "1";
  var draft = {};
  var focused = null; // [column, document] of the result last focused, kept across re-renders
  var NUMBERS = { fulltext_weight: 1, bm25_k1: 1, bm25_b: 1, rrf_k: 1, top_k: 1 };
  var TARGET_KEYS = { label: 1, target: 1, top_k: 1, params: 1 };
  // The knobs a search type reads (the others are hidden and not sent): FullText reads BM25's, Vector none of
  // them, Hybrid both and its fusion's own (the FullText weight for Weighted, rrf_k for Rrf).
  var READS = {
    FullText: { bm25_variant: 1, bm25_k1: 1, bm25_b: 1 },
    Vector: {},
    Hybrid: { bm25_variant: 1, bm25_k1: 1, bm25_b: 1, fusion: 1 },
  };
  var reads = function (fieldset, name) {
    var type = fieldset.querySelector('[data-knob="search_type"]').value;
    var fusion = fieldset.querySelector('[data-knob="fusion"]').value;
    if (name === "fulltext_weight") return type === "Hybrid" && fusion === "Weighted";
    if (name === "rrf_k") return type === "Hybrid" && fusion === "Rrf";
    if (name in { bm25_variant: 1, bm25_k1: 1, bm25_b: 1, fusion: 1 }) return !!(READS[type] || {})[name];
    return true;
  };

  var csrf = function () { return form.querySelector("input[name=csrfmiddlewaretoken]").value; };
  var entry = function () { var input = form.querySelector("input[name=entry]"); return input ? input.value : ""; };
  var question = function () { var input = document.getElementById("wb-q"); return input ? input.value : ""; };

  var configOf = function (fieldset) {
    var config = {};
    var target = fieldset.querySelector('[data-knob="target"]').value;
    var preset = fieldset.querySelector('[data-knob="preset"]').value;
    fieldset.querySelectorAll("[data-knob]").forEach(function (input) {
      var name = input.dataset.knob;
      var value = input.value.trim();
      if (value === "" || name === "preset") return;
      if (target && !TARGET_KEYS[name]) return;
      if (!target && !reads(fieldset, name)) return;
      if (!target && name === "params") return;
      if (name === "params") { try { value = JSON.parse(value); } catch (e) { value = "(not JSON)"; } }
      else if (NUMBERS[name]) value = Number(value);
      config[name] = value;
    });
    if (preset) return config.label ? { preset: preset, label: config.label } : { preset: preset };
    return config;
  };
  var configs = function () {
    return Array.prototype.map.call(knobs.querySelectorAll(".wb-knob"), configOf);
  };
  var showKnobs = function () {
    knobs.querySelectorAll(".wb-knob").forEach(function (fieldset, position) {
      var target = fieldset.querySelector('[data-knob="target"]').value;
      fieldset.querySelectorAll("[data-builtin]").forEach(function (el) {
        var knob = el.querySelector("[data-knob]");
        el.hidden = !!target || !reads(fieldset, knob.dataset.knob);
      });
      fieldset.querySelectorAll("[data-target-only]").forEach(function (el) { el.hidden = !target; });
      fieldset.querySelector("legend").textContent = "Column " + (position + 1);
      fieldset.querySelector("[data-remove-column]").hidden = knobs.children.length < 2;
    });
    document.getElementById("wb-add-column").hidden = knobs.children.length >= 3;
  };
  var setKnobs = function (raw) {
    knobs.querySelectorAll(".wb-knob").forEach(function (fieldset, position) {
      var config = raw[position] || {};
      fieldset.querySelectorAll("[data-knob]").forEach(function (input) {
        var name = input.dataset.knob;
        if (name === "preset") { input.value = ""; return; }
        var value = config[name];
        if (value === undefined || value === null || value === false) value = "";
        if (name === "params" && value !== "") value = JSON.stringify(value);
        input.value = String(value);
      });
    });
    showKnobs();
  };
  var state = function () {
    return {
      entry: entry(), question: question(), configs: configs(),
      top: Number(document.getElementById("wb-top").value),
      explain: document.getElementById("wb-explain").checked, draft: draft,
    };
  };
  var post = function (url, body) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
      body: JSON.stringify(body),
    }).then(function (response) {
      return response.json().then(function (data) {
        if (!response.ok) throw new Error((data.error && data.error.message) || ("HTTP " + response.status));
        return data;
      });
    });
  };
  var fillForms = function () {
    var all = JSON.stringify(configs());
    document.querySelectorAll("[data-configs]").forEach(function (input) {
      input.value = input.hasAttribute("data-last") ? JSON.stringify(configs().slice(-1)) : all;
    });
    var draftInput = document.getElementById("wb-draft");
    if (draftInput) draftInput.value = JSON.stringify(draft);
    var under = document.getElementById("wb-list-under");
    if (under) under.href = under.dataset.base + "?c=" + encodeURIComponent(JSON.stringify(configs().slice(-1)[0]));
    var asked = document.querySelector("#wb-add input[name=question]");
    if (asked) asked.value = question();
  };
  var pending = 0;
  var refresh = function () {
    var mine = ++pending;
    if (!entry() && !question().trim()) return Promise.resolve();
    columnsBox.setAttribute("aria-busy", "true");
    return post(form.dataset.columnsUrl, state()).then(function (data) {
      if (mine !== pending) return; // a later change answered already
      columnsBox.innerHTML = data.html;
      setKnobs(data.configs);
      errorBox.hidden = true;
      var list = new URLSearchParams(window.location.search).get("list");
      window.history.replaceState(null, "", data.url + (list !== null ? "&list=" + encodeURIComponent(list) : ""));
      fillForms();
      if (focused) {
        var again = columnsBox.querySelector('.wb-result[data-column="' + focused[0] + '"][data-document="' + CSS.escape(focused[1]) + '"]');
        if (again) again.focus();
      }
    }).catch(function (error) {
      errorBox.textContent = error.message;
      errorBox.hidden = false;
    }).then(function () { columnsBox.removeAttribute("aria-busy"); });
  };
  var timer = null;
  var soon = function () { window.clearTimeout(timer); timer = window.setTimeout(refresh, 250); };

  form.addEventListener("input", function (event) {
    if (event.target.matches("#wb-q")) draft = {}; // grades were of the query as it was
    if (event.target.matches("[data-knob], #wb-q")) soon();
  });
  // The list's previous and next question, with the columns as they are now (the address holds them).
  document.querySelectorAll("#wb-around a[data-entry]").forEach(function (link) {
    link.addEventListener("click", function (event) {
      event.preventDefault();
      var params = new URLSearchParams(window.location.search);
      params.set("entry", link.dataset.entry);
      window.location.search = params.toString();
    });
  });
  form.addEventListener("change", function () { showKnobs(); soon(); });
  form.addEventListener("submit", function (event) { event.preventDefault(); refresh(); });
  document.getElementById("wb-add-column").addEventListener("click", function () {
    var last = knobs.lastElementChild;
    var copy = last.cloneNode(true);
    var position = knobs.children.length;
    copy.dataset.column = String(position);
    copy.querySelectorAll("[id]").forEach(function (el) { el.id = el.id.replace(/^k\d+-/, "k" + position + "-"); });
    copy.querySelectorAll("label[for]").forEach(function (el) { el.htmlFor = el.htmlFor.replace(/^k\d+-/, "k" + position + "-"); });
    copy.querySelector('[data-knob="label"]').value = "column " + (position + 1);
    knobs.appendChild(copy);
    showKnobs();
    refresh();
  });
  knobs.addEventListener("click", function (event) {
    if (!event.target.matches("[data-remove-column]")) return;
    event.target.closest(".wb-knob").remove();
    showKnobs();
    refresh();
  });

  var grade = function (result, value) {
    if (!mayJudge || !result) return;
    focused = [result.dataset.column, result.dataset.document];
    if (!entry()) { draft[result.dataset.document] = value; refresh(); return; }
    post(form.dataset.gradeUrl, { entry: entry(), document_id: result.dataset.document, grade: value })
      .then(refresh).catch(function (error) { errorBox.textContent = error.message; errorBox.hidden = false; });
  };
  var undo = function () {
    if (!mayJudge) return;
    if (!entry()) { var keys = Object.keys(draft); if (keys.length) { delete draft[keys[keys.length - 1]]; refresh(); } return; }
    post(form.dataset.undoUrl, {}).then(refresh).catch(function (error) { errorBox.textContent = error.message; errorBox.hidden = false; });
  };
  columnsBox.addEventListener("click", function (event) {
    var button = event.target.closest("[data-grade-value]");
    if (button) grade(button.closest(".wb-result"), Number(button.dataset.gradeValue));
  });
  columnsBox.addEventListener("focusin", function (event) {
    var result = event.target.closest(".wb-result");
    if (result) focused = [result.dataset.column, result.dataset.document];
  });
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && (target.tagName === "INPUT" || target.tagName === "SELECT" || target.tagName === "TEXTAREA")) return;
    var result = target && target.closest ? target.closest(".wb-result") : null;
    var key = event.key;
    if (key === "ArrowDown" || key === "ArrowUp") {
      var all = Array.prototype.slice.call(columnsBox.querySelectorAll(".wb-result"));
      if (!all.length) return;
      var at = result ? all.indexOf(result) : -1;
      var next = all[Math.max(0, Math.min(all.length - 1, at + (key === "ArrowDown" ? 1 : -1)))];
      event.preventDefault();
      next.focus();
      return;
    }
    if (key === "u") { event.preventDefault(); undo(); return; }
    if (!result) return;
    if (/^[0-9]$/.test(key) && result.querySelector('[data-grade-value="' + key + '"]')) {
      event.preventDefault();
      grade(result, Number(key));
    } else if (key === "e") {
      var details = result.querySelector("details");
      if (details) { event.preventDefault(); details.open = !details.open; }
      else { document.getElementById("wb-explain").checked = true; refresh(); }
    }
  });
  showKnobs();
  fillForms();
  if (initial && initial.configs) fillForms();
})();
