// assay run browser: compares two runs side by side from the embedded JSON.
// Every piece of evaluated data reaches the DOM through textContent or createTextNode;
// links are built from file names the page was written with, never from data.
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("assay-browser-data").textContent);
  var RUNS = DATA.runs, TEXTS = DATA.texts, THRESHOLD = DATA.threshold;
  var PAGE_SIZE = 50;

  var el = assayEl;
  function text(i) { return i === null || i === undefined ? null : TEXTS[i]; }
  function fmt(v) { return v === null || v === undefined ? "—" : v.toFixed(3); }
  function signed(v) { return v === null || v === undefined ? "—" : (v > 0 ? "+" : "") + v.toFixed(3); }
  function passes(v) { return v !== null && v !== undefined && v >= THRESHOLD - 1e-9; }

  var state = { a: null, b: null, filter: "", changed: false, page: 0, rows: [] };
  var head = document.getElementById("compare-head"), body = document.getElementById("compare-body");

  function chosen(name) {
    var input = document.querySelector("input[name=" + name + "]:checked");
    return input ? RUNS[Number(input.value)] : null;
  }

  function sampleLink(run, sample, label) {
    var a = el("a", { cls: "sample-link", text: "open in " + label + "'s report" });
    a.href = "runs/" + run.file + "#sample=" + encodeURIComponent(sample.id);
    a.title = "open this sample in run " + run.id + "'s report";
    return a;
  }

  function side(run, sample, metrics) {
    var box = el("div", { cls: "side" });
    if (!sample) { box.appendChild(el("div", { cls: "dim", text: "not in run " + run.id })); return box; }
    box.appendChild(el("div", { cls: "answer-text", text: text(sample.a) === null ? "—" : text(sample.a) }));
    metrics.forEach(function (name) {
      var sc = sample.s[name];
      if (!sc) return;
      var line = el("div", { cls: "metric-line " + (sc.value === null ? "na" : passes(sc.value) ? "ok" : "bad") },
        el("span", { cls: "mono", text: name + " " }),
        el("b", { text: sc.value === null ? "unscored" + (sc.unscored ? " (" + sc.unscored + ")" : "") : fmt(sc.value) }));
      box.appendChild(line);
      var ul = el("ul", { cls: "verdicts compact" });
      sc.verdicts.forEach(function (v) {
        var tone = v[1] === 1 || v[1] === "PASS" ? "ok" : v[1] === 0 || v[1] === "FAIL" ? "bad" : "na";
        ul.appendChild(el("li", { cls: tone },
          el("span", { cls: "mark", text: tone === "ok" ? "✓" : tone === "bad" ? "✗" : String(v[1]) }),
          el("span", { cls: "subject", text: text(v[0]) }),
          text(v[2]) ? el("span", { cls: "reason", text: text(v[2]) }) : null));
      });
      if (sc.verdicts.length) box.appendChild(ul);
    });
    return box;
  }

  function build() {
    var a = chosen("run-a"), b = chosen("run-b");
    if (a && b && a.id === b.id) b = null;
    state.a = a; state.b = b;
    var title = document.getElementById("compare-title");
    title.textContent = a ? (b ? a.id + " (A) and " + b.id + " (B)" : a.id) : "no run";
    var note = [];
    [a, b].forEach(function (run) {
      if (run && run.n_shown < run.n_samples) note.push("run " + run.id + ": the first " + run.n_shown + " of its " + run.n_samples + " samples are shown here; its report has every one");
    });
    if (a && b && a.dataset !== b.dataset) note.push("the runs judged different data (" + (a.dataset || "?") + ", " + (b.dataset || "?") + "): samples are paired by id");
    if (a && b) {
      // Scores move with the judge and the metric's settings too: say so before anyone reads a difference.
      var differ = [];
      if (a.judge === b.judge) {
        // One model name, two judges (another weights layout, llama.cpp build or prompt): said first.
        var parts = [], keys = [], pa = a.judge_parts, pb = b.judge_parts;
        if ((pa === null) !== (pb === null)) parts.push("one run did not record its judge's weights, layout and build");
        else if (pa && pb) {
          Object.keys(pa).concat(Object.keys(pb)).forEach(function (k) {
            if (pa[k] !== pb[k] && keys.indexOf(k) < 0) keys.push(k);
          });
          parts = keys.map(function (k) { return k + ": " + (pa[k] || "none") + " (A), " + (pb[k] || "none") + " (B)"; });
        }
        if (parts.length) note.unshift("warning: the runs were judged by two different " + a.judge + " judges: " + parts.join("; "));
      }
      if (a.judge !== b.judge) differ.push("judged by different judges (" + a.judge + ", " + b.judge + ")");
      else if ((a.endpoint || null) !== (b.endpoint || null)) differ.push(a.judge + " was served from two endpoints");
      Object.keys(a.settings || {}).forEach(function (m) {
        if (b.settings && m in b.settings && a.settings[m] !== b.settings[m]) differ.push(m + " is set differently");
      });
      if (a.temperature !== b.temperature) differ.push("sampled at different temperatures");
      if (differ.length) note.push("warning: the runs differ in more than the system judged: " + differ.join("; "));
    }
    document.getElementById("compare-note").textContent = note.join(" · ");
    var metrics = [];
    [a, b].forEach(function (run) { if (run) run.metrics.forEach(function (m) { if (metrics.indexOf(m) < 0) metrics.push(m); }); });
    state.metrics = metrics;
    var byId = {};
    var rows = [];
    [a, b].forEach(function (run, k) {
      if (!run) return;
      run.samples.forEach(function (s) {
        var row = byId[s.id];
        if (!row) { row = byId[s.id] = { id: s.id, a: null, b: null }; rows.push(row); }
        row[k === 0 ? "a" : "b"] = s;
      });
    });
    rows.forEach(function (row) {
      var first = row.a || row.b;
      row.search = [row.id, text(first.q) || "", row.a ? text(row.a.a) || "" : "", row.b ? text(row.b.a) || "" : ""].join("\n").toLowerCase();
      row.changed = !row.a || !row.b;
      row.deltas = {};
      metrics.forEach(function (m) {
        var va = row.a && row.a.s[m] ? row.a.s[m].value : null, vb = row.b && row.b.s[m] ? row.b.s[m].value : null;
        var d = va !== null && vb !== null ? vb - va : null;
        row.deltas[m] = d;
        if ((d !== null && Math.abs(d) > 1e-9) || passes(va) !== passes(vb)) row.changed = true;
      });
    });
    state.rows = rows;
    state.page = 0;
    head.replaceChildren(el("th", { text: "sample" }), el("th", { text: "question" }),
      el("th", { text: a ? "A: " + a.id : "A" }), b ? el("th", { text: "B: " + b.id }) : null,
      b ? el("th", { cls: "num", text: "Δ (B − A)" }) : null);
    render();
  }

  function visible() {
    var needle = state.filter.trim().toLowerCase();
    return state.rows.filter(function (row) {
      if (needle && row.search.indexOf(needle) < 0) return false;
      if (state.changed && state.b && !row.changed) return false;
      return true;
    });
  }

  function render() {
    var rows = visible();
    var pages = Math.max(1, Math.ceil(rows.length / PAGE_SIZE));
    if (state.page >= pages) state.page = pages - 1;
    var from = state.page * PAGE_SIZE;
    var frag = document.createDocumentFragment();
    rows.slice(from, from + PAGE_SIZE).forEach(function (row) {
      var first = row.a || row.b;
      var links = el("div", { cls: "links" });
      if (row.a) links.appendChild(sampleLink(state.a, row.a, state.b ? "A" : state.a.id));
      if (row.b) links.appendChild(sampleLink(state.b, row.b, "B"));
      var tr = el("tr", {}, el("td", { cls: "id" }, el("div", { cls: "mono", text: row.id }), links),
        el("td", { cls: "question", text: text(first.q) === null ? "—" : text(first.q) }),
        el("td", {}, side(state.a, row.a, state.metrics)));
      tr.dataset.sampleId = row.id;
      if (state.b) {
        tr.appendChild(el("td", {}, side(state.b, row.b, state.metrics)));
        var deltas = el("td", { cls: "num" });
        state.metrics.forEach(function (m) {
          var d = row.deltas[m];
          if (d === null || d === undefined) return;
          var va = row.a.s[m].value, vb = row.b.s[m].value;
          var flip = passes(va) !== passes(vb) ? (passes(vb) ? " fail→pass" : " pass→fail") : "";
          deltas.appendChild(el("div", { cls: "delta " + (flip ? (passes(vb) ? "up" : "down") : "") },
            el("span", { cls: "mono", text: m + " " }), el("b", { text: signed(d) }),
            flip ? el("span", { cls: "sub", text: flip.trim() }) : null));
        });
        tr.appendChild(deltas);
      }
      frag.appendChild(tr);
    });
    body.replaceChildren(frag);
    document.getElementById("count").textContent = rows.length + " of " + state.rows.length + " samples";
    document.getElementById("page").textContent = rows.length ? "rows " + (from + 1) + "–" + Math.min(from + PAGE_SIZE, rows.length) + " · page " + (state.page + 1) + " of " + pages : "no rows";
  }

  document.querySelectorAll("input[name=run-a], input[name=run-b]").forEach(function (input) {
    input.addEventListener("change", build);
  });
  var timer = null;
  document.getElementById("filter").addEventListener("input", function (event) {
    var value = event.target.value;
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(function () { timer = null; state.filter = value; state.page = 0; render(); }, 150);
  });
  document.getElementById("changed").addEventListener("change", function (event) {
    state.changed = event.target.checked; state.page = 0; render();
  });
  document.getElementById("prev").addEventListener("click", function () { if (state.page > 0) { state.page -= 1; render(); } });
  document.getElementById("next").addEventListener("click", function () {
    if ((state.page + 1) * PAGE_SIZE < visible().length) { state.page += 1; render(); }
  });
  if (RUNS.length) build();
  window.assayBrowserReady = true;
})();
