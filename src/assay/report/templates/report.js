// assay report: draws the sample table and the sample view from the embedded JSON.
// Every piece of evaluated data reaches the DOM through textContent, attributes set as
// properties, or createTextNode: never through innerHTML.
(function () {
  "use strict";
  var t0 = performance.now();
  performance.mark("assay:start");
  var timings = { parse_ms: 0, script_ms: 0, first_render_ms: 0, filters: [], filter_count: 0 };
  window.assayTimings = timings;

  var DATA = JSON.parse(document.getElementById("assay-data").textContent);
  timings.parse_ms = performance.now() - t0;
  var META = DATA.meta;
  var SAMPLES = DATA.samples;
  var TEXTS = DATA.texts;
  var METRICS = META.metrics;
  var THRESHOLD = META.threshold;
  var THRESHOLDS = META.thresholds || {};
  // Each metric's pass mark (a gate may give metrics their own: -m faithfulness=0.8 -m answer_relevancy=0.7).
  function mark(name) { return THRESHOLDS[name] === undefined ? THRESHOLD : THRESHOLDS[name]; }
  var REPEATS = META.repeats;
  var COMPARE = META.other_run_id !== null;
  var PAGE_SIZE = 50;

  var el = assayEl;

  function fmt(v, digits) {
    if (v === null || v === undefined || typeof v !== "number" || !isFinite(v)) return "—";
    return v.toFixed(digits === undefined ? 3 : digits);
  }
  function signed(v) {
    if (v === null || v === undefined) return "—";
    return (v > 0 ? "+" : "") + v.toFixed(3);
  }

  // ---------------------------------------------------------------- search index
  for (var i = 0; i < SAMPLES.length; i++) {
    var s = SAMPLES[i];
    s._i = i;
    s._asked = s.question || s.first_user_turn || "";  // an agent sample: what the user first said
    s._search = [s.id, s._asked, s.answer || ""].join("\n").toLowerCase();
    var failing = false, unscored = false, flaky = false, flipped = false;
    for (var m = 0; m < METRICS.length; m++) {
      var st = s.stats[METRICS[m]];
      if (!st) continue;
      if (st.mean !== null && st.mean < mark(METRICS[m])) failing = true;
      if (st.unscored > 0) unscored = true;
      if (st.pass !== null && st.pass > 0 && st.pass < 1) flaky = true;
      if (COMPARE && s.delta && s.delta[METRICS[m]] && s.delta[METRICS[m]].flip) flipped = true;
    }
    s._flags = { failing: failing, unscored: unscored, flaky: flaky, flipped: flipped };
  }

  // ---------------------------------------------------------------- columns
  // One column per metric (its value; with repeats, the spread and P(pass) on a second line)
  // and, when comparing, one Δ column right after it: a wide run still fits the page.
  var COLUMNS = [
    { label: "line", num: true, key: function (s) { return s.line; }, cell: function (s) { return String(s.line); } },
    { label: "id", key: function (s) { return s.id; }, cell: function (s) { return s.id; }, cls: "id" },
    { label: "question", key: function (s) { return s._asked; }, cell: function (s) { return s._asked || "—"; }, cls: "q" },
  ];
  METRICS.forEach(function (name) {
    COLUMNS.push({
      label: name, num: true, metric: name,
      sub: REPEATS > 1 ? "mean of " + REPEATS + " repeats" : "passes at ≥ " + mark(name),
      title: name + ": the sample's value" + (REPEATS > 1 ? " (mean of its scored repeats; below: min–max and the share of repeats that pass)" : "") + "; it passes at ≥ " + mark(name) + ". Click to sort.",
      key: function (s) { return s.stats[name] ? s.stats[name].mean : null; },
      cell: function (s) {
        var st = s.stats[name];
        if (!st) return "—";
        var text = fmt(st.mean);
        if (st.unscored) text += " (" + st.unscored + " unscored)";
        return text;
      },
      detail: REPEATS > 1 ? function (s) {
        var st = s.stats[name];
        if (!st || st.mean === null) return "";
        return fmt(st.min, 2) + "–" + fmt(st.max, 2) + " · P(pass) " + fmt(st.pass, 2);
      } : null,
      tone: function (s) {
        var st = s.stats[name];
        if (!st || st.mean === null) return "v-none";
        return st.mean >= mark(name) ? "v-ok" : "v-bad";
      },
    });
    if (COMPARE) {
      COLUMNS.push({
        label: "Δ", num: true, delta: true,
        sub: "vs other run",
        title: name + ": this run minus run " + META.other_run_id + " (the same sample, paired by id), and a pass/fail flip at ≥ " + mark(name) + ". Click to sort.",
        key: function (s) { var d = s.delta && s.delta[name]; return d ? d.delta : null; },
        cell: function (s) {
          var d = s.delta && s.delta[name];
          if (!d) return s.in_other === false ? "not in other run" : "—";
          return signed(d.delta);
        },
        detail: function (s) { var d = s.delta && s.delta[name]; return d && d.flip ? d.flip : ""; },
        tone: function (s) {
          var d = s.delta && s.delta[name];
          if (!d || !d.flip) return "";
          return d.flip === "pass→fail" ? "v-bad" : "v-ok";
        },
      });
    }
  });

  // ---------------------------------------------------------------- state
  var state = { filter: "", quick: "all", sort: null, dir: 1, page: 0, selected: null, view: [] };
  var head = document.getElementById("sample-head");
  var body = document.getElementById("sample-body");
  var countEl = document.getElementById("count");
  var pageEl = document.getElementById("page");
  var panel = document.getElementById("detail");
  var detail = document.getElementById("detail-body");
  function closeDetail() {
    document.body.classList.remove("viewing");
    state.selected = null;
    body.querySelectorAll("tr.selected").forEach(function (tr) { tr.classList.remove("selected"); });
    if (location.hash.indexOf("#sample=") === 0) history.replaceState(null, "", location.pathname + location.search);
  }
  document.getElementById("close-detail").addEventListener("click", closeDetail);
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && document.body.classList.contains("viewing")) closeDetail();
  });

  COLUMNS.forEach(function (col, index) {
    var th = el("th", { title: col.title || "sort by " + col.label }, el("span", { text: col.label }),
      col.sub ? el("span", { cls: "sub", text: col.sub }) : null);
    th.className = (col.num ? "num" : "") + (col.metric ? " metric" : "") + (col.delta ? " delta" : "");
    th.addEventListener("click", function () {
      if (state.sort === index) state.dir = -state.dir;
      else { state.sort = index; state.dir = col.num ? -1 : 1; }
      state.page = 0;
      apply("sort");
    });
    head.appendChild(th);
  });

  function compare(a, b) {
    // nulls (unscored, missing) sort last in either direction
    if (a === null || a === undefined) return b === null || b === undefined ? 0 : 1;
    if (b === null || b === undefined) return -1;
    if (typeof a === "number" && typeof b === "number") return (a - b) * state.dir;
    return String(a).localeCompare(String(b)) * state.dir;
  }

  function apply(reason) {
    var start = performance.now();
    var needle = state.filter.trim().toLowerCase();
    var quick = state.quick;
    var view = [];
    for (var i = 0; i < SAMPLES.length; i++) {
      var s = SAMPLES[i];
      if (needle && s._search.indexOf(needle) < 0) continue;
      if (quick !== "all" && !s._flags[quick]) continue;
      view.push(s);
    }
    if (state.sort !== null) {
      var key = COLUMNS[state.sort].key;
      view = view.map(function (s) { return [key(s), s._i, s]; });
      view.sort(function (a, b) { return compare(a[0], b[0]) || a[1] - b[1]; });
      view = view.map(function (t) { return t[2]; });
    }
    state.view = view;
    var pages = Math.max(1, Math.ceil(view.length / PAGE_SIZE));
    if (state.page >= pages) state.page = pages - 1;
    renderPage();
    var ms = performance.now() - start;
    if (reason === "filter") { timings.filters.push(ms); timings.filter_count += 1; }
    return ms;
  }

  function renderPage() {
    var view = state.view;
    var from = state.page * PAGE_SIZE;
    var rows = view.slice(from, from + PAGE_SIZE);
    var frag = document.createDocumentFragment();
    rows.forEach(function (s) {
      var tr = el("tr");
      tr.dataset.index = String(s._i);
      if (state.selected === s._i) tr.className = "selected";
      COLUMNS.forEach(function (col) {
        var td = el("td", { text: col.cell(s) });
        var extra = col.detail ? col.detail(s) : "";
        if (extra) td.appendChild(el("span", { cls: "sub", text: extra }));
        var cls = (col.num ? "num " : "") + (col.delta ? "delta " : "") + (col.cls || "") + " " + (col.tone ? col.tone(s) : "");
        td.className = cls.trim();
        if (col.cls === "q") td.title = s._asked;
        if (col.cls === "id") td.title = s.id;
        tr.appendChild(td);
      });
      frag.appendChild(tr);
    });
    body.replaceChildren(frag);
    head.querySelectorAll("th").forEach(function (th, index) {
      th.classList.toggle("sorted-asc", state.sort === index && state.dir === 1);
      th.classList.toggle("sorted-desc", state.sort === index && state.dir === -1);
    });
    countEl.textContent = view.length + " of " + SAMPLES.length + " samples";
    var pages = Math.max(1, Math.ceil(view.length / PAGE_SIZE));
    pageEl.textContent = view.length ? "rows " + (from + 1) + "–" + Math.min(from + PAGE_SIZE, view.length) + " · page " + (state.page + 1) + " of " + pages : "no rows";
  }

  body.addEventListener("click", function (event) {
    var tr = event.target.closest("tr");
    if (!tr || tr.dataset.index === undefined) return;
    select(Number(tr.dataset.index));
  });
  document.getElementById("prev").addEventListener("click", function () {
    if (state.page > 0) { state.page -= 1; renderPage(); }
  });
  document.getElementById("next").addEventListener("click", function () {
    if ((state.page + 1) * PAGE_SIZE < state.view.length) { state.page += 1; renderPage(); }
  });
  var timer = null;
  document.getElementById("filter").addEventListener("input", function (event) {
    var value = event.target.value;
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(function () { timer = null; state.filter = value; state.page = 0; apply("filter"); }, 150);
  });
  document.getElementById("quick").addEventListener("change", function (event) {
    state.quick = event.target.value; state.page = 0; apply("filter");
  });

  // ---------------------------------------------------------------- sample view
  var MARK = { ok: "✓", bad: "✗", na: "NA", info: "•" };

  function verdictTitle(v) {
    return String(v.value) + (v.reason ? " — " + v.reason : "");
  }

  var TONE_ORDER = { bad: 3, na: 2, info: 1, ok: 0 };

  // The answer with each statement's words coloured by its verdict (a piece two statements
  // share takes the worse tone; hover lists both), sentences with nothing to check greyed,
  // and sentences no verdict covers marked unscored. Every piece is text, never markup.
  function highlightedAnswer(answer, entry, onPick) {
    var box = el("div", { cls: "answer" });
    if (answer === null || answer === undefined || answer === "") { box.textContent = "—"; return box; }
    var marks = entry ? entry.marks : [], sentences = entry && entry.sentences ? entry.sentences : [];
    var cuts = [0, answer.length];
    marks.forEach(function (m) { cuts.push(m[0], m[1]); });
    sentences.forEach(function (s) { cuts.push(s[0], s[1]); });
    cuts = cuts.filter(function (c, i, all) { return all.indexOf(c) === i; }).sort(function (a, b) { return a - b; });
    function covering(a, b) {
      for (var i = 0; i < marks.length; i++) if (marks[i][0] <= a && b <= marks[i][1]) return marks[i][2];
      return null;
    }
    function sentenceOf(a, b) {
      for (var i = 0; i < sentences.length; i++) if (sentences[i][0] <= a && b <= sentences[i][1]) return sentences[i];
      return null;
    }
    function judgedAny(s) {
      for (var i = 0; i < marks.length; i++) if (marks[i][0] < s[1] && marks[i][1] > s[0]) return true;
      return false;
    }
    for (var k = 0; k + 1 < cuts.length; k++) {
      var a = cuts[k], b = cuts[k + 1], piece = answer.slice(a, b), idx = covering(a, b), sent = sentenceOf(a, b);
      if (idx) {
        var tone = "ok", lines = [];
        idx.forEach(function (i) {
          var v = entry.verdicts[i];
          if (TONE_ORDER[v.tone] > TONE_ORDER[tone]) tone = v.tone;
          lines.push((MARK[v.tone] || String(v.value)) + " " + v.subject + (v.reason ? " — " + v.reason : ""));
        });
        if (sent && sent[2] === "judged_whole" && sent[3]) lines.push("judged as a whole sentence: " + sent[3]);
        var span = el("span", { cls: "stmt " + tone, title: lines.join("\n"), text: piece });
        span.dataset.verdict = idx.join(" ");
        span.dataset.tone = tone;
        span.tabIndex = 0;
        (function (indexes) {
          span.addEventListener("click", function () { onPick(indexes); });
          span.addEventListener("keydown", function (event) { if (event.key === "Enter") onPick(indexes); });
        })(idx);
        box.appendChild(span);
      } else if (sent && sent[2] === "not_checkable") {
        box.appendChild(el("span", { cls: "skip", title: "not checked: " + (sent[3] || "nothing to check"), text: piece }));
      } else if (sent && !judgedAny(sent)) {
        box.appendChild(el("span", { cls: "stmt unjudged", title: "not judged: no verdict covers this sentence", text: piece }));
      } else {
        box.appendChild(document.createTextNode(piece));
      }
    }
    return box;
  }

  // What became of the answer: checkable sentences judged, statements dropped and why.
  function decompositionNote(entry) {
    if (!entry || (!entry.sentences.length && !entry.dropped.length)) return null;
    var checkable = entry.sentences.filter(function (s) { return s[2] !== "not_checkable"; }).length;
    var whole = entry.sentences.filter(function (s) { return s[2] === "judged_whole"; }).length;
    var skipped = entry.sentences.length - checkable;
    var parts = [checkable + " of " + entry.sentences.length + " sentences checked"];
    if (whole) parts.push(whole + " judged as a whole");
    if (skipped) parts.push(skipped + " with nothing to check");
    var box = el("div", { cls: "decomposition" }, el("div", { cls: "dim", text: parts.join(" · ") }));
    if (entry.dropped.length) {
      box.appendChild(el("div", { cls: "dim", text: "Dropped, not judged (" + entry.dropped.length + "):" }));
      var ul = el("ul", { cls: "dropped" });
      entry.dropped.forEach(function (d) {
        ul.appendChild(el("li", {}, el("span", { cls: "subject", text: d.text }),
          el("span", { cls: "reason", text: d.reason.replace(/_/g, " ") + (d.detail ? ": " + d.detail : "") })));
      });
      box.appendChild(ul);
    }
    return box;
  }

  // The context sentences a verdict rests on, as text (never markup), with their context's number.
  function evidenceList(evidence) {
    var box = el("span", { cls: "evidence" });
    evidence.forEach(function (e) {
      box.appendChild(el("q", { title: "context " + (e.context + 1), text: "context " + (e.context + 1) + ": " + e.text }));
    });
    return box;
  }

  // The tool calls an agent requirement's verdict cites, as text.
  function citedCalls(cited) {
    var box = el("span", { cls: "evidence" });
    cited.forEach(function (c) { box.appendChild(el("q", { title: "cited call", text: c })); });
    return box;
  }

  // An agent score's end state: every state-changing call and whether it succeeded.
  function endStateView(end, depth) {
    var box = el("div", { cls: "end-state" });
    box.style.marginLeft = (depth * 16) + "px";
    box.appendChild(el("div", { cls: "dim", text: "end state: " + end.changes.length + " state-changing call(s), " +
      (end.read_calls || 0) + " read call(s); state-changing tools " + end.kinds }));
    var ul = el("ul", { cls: "verdicts criteria" });
    end.changes.forEach(function (c) {
      var li = el("li", { cls: c.tone, title: c.result },
        el("span", { cls: "mark", text: c.outcome }),
        el("span", { cls: "subject", text: c.text }));
      li.dataset.tone = c.tone;
      ul.appendChild(li);
    });
    if (end.changes.length) box.appendChild(ul);
    return box;
  }

  function verdictList(entry, indexes) {
    var ul = el("ul", { cls: "verdicts" });
    indexes.forEach(function (i) {
      var v = entry.verdicts[i];
      var li = el("li", { cls: v.tone, title: verdictTitle(v) },
        el("span", { cls: "mark", text: MARK[v.tone] || String(v.value) }),
        el("span", { cls: "subject", text: v.subject }),
        (v.flags || []).length ? el("span", { cls: "flag", text: v.flags.join(", ") }) : null,
        v.by_person ? el("span", { cls: "flag person", text: "decided by a person" }) : null,
        v.reason ? el("span", { cls: "reason", text: v.reason }) : null,
        (v.evidence || []).length ? evidenceList(v.evidence) : null,
        (v.cited || []).length ? citedCalls(v.cited) : null);
      li.dataset.tone = v.tone;
      ul.appendChild(li);
    });
    return ul;
  }

  // A grader's explanation and unscored detail end with the judge's reason ("PASS: <reason>"),
  // which its verdict line already shows: keep only what they add (nothing, for a bare label).
  function withoutReason(e, text) {
    if (!text || e.verdicts.length !== 1 || !e.verdicts[0].reason) return text;
    var v = e.verdicts[0];
    var at = text.lastIndexOf(v.reason);
    if (at < 0 || at + v.reason.length !== text.length) return text;
    var rest = text.slice(0, at).replace(/[\s:—–-]+$/, "");
    return rest === String(v.value) || rest === "verdict " + v.value ? "" : rest;
  }

  function textBlock(text) { return el("div", { cls: "block", text: text === null || text === undefined ? "—" : String(text) }); }

  function callView(entry, call) {
    var usage = call.usage || {};
    var summary = el("summary", {
      text: entry.name + " · " + (call.purpose || "call") + " · " + (call.model || "?") + " · " +
        (usage.prompt_tokens || 0) + "+" + (usage.completion_tokens || 0) + " tokens · " +
        fmt(call.latency_s, 2) + " s" + (call.cached ? " · cached" : "") + (call.attempts > 1 ? " · " + call.attempts + " attempts" : ""),
    });
    var box = el("details", { cls: "call" }, summary);
    (call.messages || []).forEach(function (msg) {
      box.appendChild(el("div", { cls: "role", text: msg.role || "?" }));
      box.appendChild(el("pre", { cls: "block", text: msg.text === null ? "" : TEXTS[msg.text] }));
    });
    box.appendChild(el("div", { cls: "role", text: "judge output" }));
    box.appendChild(el("pre", { cls: "block raw-output", text: call.raw_output === null ? "(none)" : String(call.raw_output) }));
    if (call.error) box.appendChild(el("div", { cls: "v-bad", text: "error: " + call.error }));
    return box;
  }

  function select(index) {
    state.selected = index;
    body.querySelectorAll("tr").forEach(function (tr) {
      tr.classList.toggle("selected", Number(tr.dataset.index) === index);
    });
    document.body.classList.add("viewing");
    renderDetail(SAMPLES[index], 0, null);
    panel.scrollTop = 0;
    // A link to this sample (the run browser links here): report.html#sample=<id>
    history.replaceState(null, "", "#sample=" + encodeURIComponent(SAMPLES[index].id));
  }

  function renderDetail(s, repeatIndex, entryName) {
    var rep = s.repeats[repeatIndex] || { repeat: 0, scores: [] };
    var root = el("div", { id: "sample-view" });
    root.dataset.sampleId = s.id;
    root.appendChild(el("h3", { text: s.id + " · line " + s.line }));

    if (s.repeats.length > 1) {
      var reps = el("div", { cls: "repeats" }, el("span", { cls: "dim", text: "repeat " }));
      s.repeats.forEach(function (r, i) {
        var b = el("button", { type: "button", text: String(r.repeat), cls: i === repeatIndex ? "active" : "" });
        b.addEventListener("click", function () { renderDetail(s, i, entryName); });
        reps.appendChild(b);
      });
      root.appendChild(reps);
    }

    var stats = el("ul", { cls: "verdicts" });
    METRICS.forEach(function (name) {
      var st = s.stats[name];
      if (!st) return;
      var text = name + ": " + fmt(st.mean);
      if (REPEATS > 1) text += " (min " + fmt(st.min, 2) + ", max " + fmt(st.max, 2) + ", P(pass) " + fmt(st.pass, 2) + ")";
      if (st.unscored) text += " · " + st.unscored + " unscored";
      if (COMPARE && s.delta && s.delta[name]) {
        var d = s.delta[name];
        text += " · other run " + fmt(d.other) + ", Δ " + signed(d.delta) + (d.flip ? " (" + d.flip + ")" : "");
      }
      var tone = st.mean === null ? "na" : st.mean >= mark(name) ? "ok" : "bad";
      stats.appendChild(el("li", { cls: tone, text: text }));
    });
    root.appendChild(stats);

    var firstTurn = !s.question && s.first_user_turn;
    root.appendChild(el("h3", { text: firstTurn ? "Question (the user's first turn)" : "Question" }));
    root.appendChild(textBlock(firstTurn ? s.first_user_turn : s.question));

    // Only entries whose verdicts are statements of the answer (some found in it) go with
    // the answer; a grader's criterion is not in the answer and is shown once, below.
    var withVerdicts = rep.scores.filter(function (e) { return e.verdicts.length > 0 && e.marks.length > 0; });
    var current = null;
    withVerdicts.forEach(function (e) { if (e.name === entryName) current = e; });
    if (!current) withVerdicts.forEach(function (e) { if (!current && e.marks.length > 0) current = e; });
    if (!current && withVerdicts.length) current = withVerdicts[0];

    root.appendChild(el("h3", { text: "Answer" }));
    if (withVerdicts.length > 1) {
      var tabs = el("div", { cls: "tabs" }, el("span", { cls: "dim", text: "statements of " }));
      withVerdicts.forEach(function (e) {
        var b = el("button", { type: "button", text: e.name, cls: e === current ? "active" : "" });
        b.addEventListener("click", function () { renderDetail(s, repeatIndex, e.name); });
        tabs.appendChild(b);
      });
      root.appendChild(tabs);
    }
    var picked = el("div", { cls: "picked" });
    root.appendChild(highlightedAnswer(s.answer, current, function (indexes) {
      picked.textContent = "";
      picked.appendChild(verdictList(current, indexes));
    }));
    root.appendChild(picked);
    var note = decompositionNote(current);
    if (note) root.appendChild(note);
    if (current && current.unplaced.length) {
      root.appendChild(el("div", { cls: "dim", text: "Statements not found verbatim in the answer (" + current.name + "):" }));
      var un = verdictList(current, current.unplaced);
      un.className += " unplaced";
      root.appendChild(un);
    }

    if (s.trace && s.trace.length) {
      root.appendChild(el("h3", { text: "Trace" }));
      s.trace.forEach(function (msg) {
        root.appendChild(el("div", { cls: "role", text: msg.role + (msg.name ? " (" + msg.name + ")" : "") }));
        var text = msg.content || "";
        if (msg.tool_calls && msg.tool_calls.length) text += (text ? "\n" : "") + JSON.stringify(msg.tool_calls, null, 1);
        root.appendChild(textBlock(text));
      });
    }

    root.appendChild(el("h3", { text: "Verdicts" }));
    rep.scores.forEach(function (e) {
      var head = e.name + ": " + (e.value === null ? "unscored" + (e.unscored_reason ? " (" + e.unscored_reason + ")" : "") : fmt(e.value));
      var h = el("div", { cls: "role", text: head });
      h.style.marginLeft = (e.depth * 16) + "px";
      root.appendChild(h);
      var detailText = withoutReason(e, e.detail), explanation = withoutReason(e, e.explanation);
      if (detailText) root.appendChild(el("div", { cls: "dim", text: detailText }));
      if (explanation && explanation !== detailText) root.appendChild(el("div", { cls: "dim", text: explanation }));
      if (e.end_state) root.appendChild(endStateView(e.end_state, e.depth));
      if (e.verdicts.length) {
        var list = verdictList(e, e.verdicts.map(function (_, i) { return i; }));
        if (!e.marks.length) list.className += " criteria";
        list.style.marginLeft = (e.depth * 16) + "px";
        root.appendChild(list);
      }
    });

    root.appendChild(el("h3", { text: "Contexts (" + (s.contexts || []).length + ")" }));
    var ol = el("ol");
    (s.contexts || []).forEach(function (c) { ol.appendChild(el("li", {}, textBlock(c))); });
    root.appendChild(ol);
    if (s.reference) { root.appendChild(el("h3", { text: "Reference" })); root.appendChild(textBlock(s.reference)); }
    if (s.metadata && Object.keys(s.metadata).length) {
      root.appendChild(el("h3", { text: "Metadata" }));
      root.appendChild(el("pre", { cls: "block", text: JSON.stringify(s.metadata, null, 2) }));
    }

    var calls = [];
    rep.scores.forEach(function (e) { e.calls.forEach(function (c) { calls.push([e, c]); }); });
    root.appendChild(el("h3", { text: "Judge exchange (" + calls.length + " calls, repeat " + rep.repeat + ")" }));
    calls.forEach(function (pair) { root.appendChild(callView(pair[0], pair[1])); });

    detail.replaceChildren(root);
  }

  // ---------------------------------------------------------------- review
  // The questions no judge was sure of: an answer button per side, and a download of the
  // answers as the file 'assay review RUN --import FILE' applies (nothing is sent anywhere).
  var PENDING = DATA.pending || [];
  var reviewList = document.getElementById("review-list");
  if (reviewList && PENDING.length) {
    var given = {};
    var download = document.getElementById("review-download");
    var reviewCount = document.getElementById("review-count");
    var LEANED = { "1": "supported", "0": "not supported", PASS: "pass", FAIL: "fail", NA: "n/a" };
    var showCount = function () {
      var n = Object.keys(given).length;
      reviewCount.textContent = n + " of " + PENDING.length + " answered";
      download.disabled = n === 0;
    };
    PENDING.forEach(function (q, i) {
      var buttons = el("span", { cls: "review-answers" });
      [["supported", "supported"], ["not_supported", "not supported"]].forEach(function (pair) {
        var b = el("button", { type: "button", cls: "review-answer", text: pair[1] });
        b.dataset.answer = pair[0];
        b.dataset.question = String(i);
        b.addEventListener("click", function () {
          given[i] = pair[0];
          buttons.querySelectorAll("button").forEach(function (o) { o.classList.toggle("chosen", o === b); });
          showCount();
        });
        buttons.appendChild(b);
      });
      var tried = el("ul", { cls: "review-tried" });
      // Both to 2 decimals, or as many (up to 6) as show them apart: 0.550 needed 0.551, never 0.55 and 0.55.
      var apart = function (c, t) {
        var d = 2;
        while (d < 6 && c !== t && c.toFixed(d) === t.toFixed(d)) d++;
        return [c.toFixed(d), t.toFixed(d)];
      };
      q.tried.forEach(function (t) {
        var sure = "";
        if (typeof t.confidence === "number") {
          var shown = typeof t.threshold === "number" ? apart(t.confidence, t.threshold) : [t.confidence.toFixed(2), null];
          sure = " (confidence " + shown[0] + (shown[1] === null ? "" : ", needed " + shown[1]) + ")";
        }
        tried.appendChild(el("li", { text: t.by + " leaned " + (LEANED[String(t.value)] || String(t.value)) + sure }));
      });
      var li = el("li", { cls: "review-question" },
        el("div", { cls: "dim", text: "line " + q.line + " · " + q.id + " · " + q.metric +
          (q.repeats.length > 1 ? " · waits in repeats " + q.repeats.join(", ") + " (one answer for all)" : q.repeat ? " · repeat " + q.repeat : "") }),
        el("div", { cls: "subject", text: q.subject }),
        q.evidence.length ? evidenceList(q.evidence) : null,
        tried,
        buttons);
      reviewList.appendChild(li);
    });
    download.addEventListener("click", function () {
      var answers = [];
      PENDING.forEach(function (q, i) {
        if (given[i] === undefined) return;
        answers.push({ line: q.line, repeat: q.repeat, metric: q.metric, subject: q.subject, answer: given[i] });
      });
      var file = { format: DATA.answers_format.format, version: DATA.answers_format.version, run_id: META.run_id, answers: answers };
      var blob = new Blob([JSON.stringify(file, null, 1)], { type: "application/json" });
      var a = el("a", { href: URL.createObjectURL(blob), download: "assay-answers-" + META.run_id + ".json" });
      document.body.appendChild(a);
      a.click();
      a.remove();
    });
    showCount();
  }

  // ---------------------------------------------------------------- first render
  apply("initial");
  performance.mark("assay:rendered");
  timings.script_ms = performance.now() - t0;
  timings.first_render_ms = performance.now();  // since navigation start: parse of the page included
  window.assayReady = true;
  window.assaySelect = function (id) {
    for (var i = 0; i < SAMPLES.length; i++) if (SAMPLES[i].id === id) { select(i); return true; }
    return false;
  };
  // Opened as report.html#sample=<id> (a link from the run browser): show that sample.
  if (location.hash.indexOf("#sample=") === 0) {
    var wanted = decodeURIComponent(location.hash.slice("#sample=".length));
    if (!window.assaySelect(wanted)) countEl.textContent += " · no sample " + JSON.stringify(wanted) + " in this run";
  }
})();
