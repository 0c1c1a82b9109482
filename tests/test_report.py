"""The HTML report without a browser: statistics, statement location, JSON embedding, escaping, compare, CLI."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from assay import Faithfulness, JudgeCall, Sample, Score, Usage, Verdict, evaluate
from assay.analysis import GatePolicy, bootstrap_mean_ci, paired_bootstrap_ci
from assay.cli._report import report as report_command
from assay.errors import SampleError
from assay.models import FunctionJudge
from assay.report import (
    CSP,
    Interval,
    build_report,
    embed_json,
    load_report,
    locate_statements,
    pass_share,
    render_report,
    spread,
    write_report,
)
from assay.report._build import histogram, to_utf16_offsets, verdict_tone
from assay.run import RunSpec, RunStatus, RunStore, SampleResult

XSS_ANSWER = (
    'The sky is blue. <img src=x onerror="window.__xss=1"> is an image. '
    "</script><script>window.__xss=2;document.title='pwned'</script> closes the data."
)

# ------------------------------------------------------------------ builders


def sentence_judge(user: str) -> str:
    """Statements: the answer's sentences; a statement is supported when it mentions the sky."""
    if "<sentence>\n" in user:  # the one-sentence rewrite: the sentence is its own statement
        return json.dumps({"statements": [user.split("<sentence>\n")[1].split("\n</sentence>")[0]]})
    if "<answer>" in user:
        answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
        return json.dumps({"statements": [s for s in re.split(r"(?<=\.)\s+", answer) if s.strip()]})
    items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    return json.dumps(
        {
            "verdicts": [
                {"statement": t, "reason": f"context says so <b>{i}</b>", "verdict": int("sky" in t)}
                for i, t in enumerate(item.split("] ", 1)[1] for item in items)
            ]
        }
    )


def scored(value: float, statements: dict[str, int], *, metric: str = "faithfulness") -> Score:
    call = JudgeCall(
        model="openai:gpt-4o-mini",
        purpose="faithfulness.verdicts",
        messages=({"role": "system", "content": "judge"}, {"role": "user", "content": "<statements>"}),
        raw_output='{"verdicts": []}',
        usage=Usage(prompt_tokens=1000, completion_tokens=100),
    )
    return Score.scored(
        metric,
        value,
        verdicts=[Verdict(subject=s, value=v, reason=f"why {s}") for s, v in statements.items()],
        calls=[call],
    )


def store_run(
    store: RunStore,
    run_id: str,
    rows: dict[str, list[Score]],
    *,
    repeats: int = 1,
    answer: str = "A. B.",
    status: RunStatus = "finished",
    n_rows: int | None = None,
) -> None:
    """One run: ``rows`` maps a sample id to its scores, one per repeat (``n_rows``: the input's size, if recorded)."""
    store.create(
        RunSpec(
            run_id=run_id,
            judge="openai:gpt-4o-mini",
            judge_model="openai:gpt-4o-mini",
            options={"repeats": repeats},
            n_rows=n_rows,
        )
    )
    for line, (sample_id, scores) in enumerate(rows.items(), start=1):
        sample = Sample(id=sample_id, question=f"q {sample_id}", answer=answer, contexts=("ctx",))
        for repeat, score in enumerate(scores):
            result = SampleResult(sample=sample, scores={score.metric: score}, line=line, repeat=repeat)
            store.record(run_id, result, repeat=repeat)
    store.set_status(run_id, status)


def embedded(html: str) -> object:
    match = re.search(r'<script type="application/json" id="assay-data">(.*?)</script>', html, re.S)
    assert match is not None
    return json.loads(match.group(1))


# ------------------------------------------------------------------ statistics


# The bootstrap itself is assay.analysis's (tests/test_analysis.py); the report must use it
# (tests/test_gate_stored_runs.py::test_the_report_interval_is_the_analysis_interval).


def test_report_intervals_small_and_empty_inputs() -> None:
    one = Interval(0.4, math.nan, math.nan, 1)
    assert one.to_json() == {"estimate": 0.4, "low": None, "high": None, "n": 1, "level": 0.95}
    assert all(math.isnan(x) for x in bootstrap_mean_ci([0.4]))  # one sample: no interval
    assert bootstrap_mean_ci([1.0] * 50) == (1.0, 1.0)


@given(st.lists(st.floats(min_value=0, max_value=1), min_size=2, max_size=40), st.integers(0, 2**16))
def test_bootstrap_interval_lies_within_the_data_range(values: list[float], seed: int) -> None:
    low, high = bootstrap_mean_ci(values, n_boot=200, seed=seed)
    assert min(values) - 1e-9 <= low <= high <= max(values) + 1e-9


def test_spread_and_pass_share() -> None:
    s = spread([0.5, 1.0, 0.75])
    assert (s.mean, s.low, s.high, s.n) == (0.75, 0.5, 1.0, 3)
    assert spread([]).n == 0 and math.isnan(spread([]).mean)
    assert pass_share([0.5, 0.8, 1.0, 0.79], 0.8) == 0.5
    assert math.isnan(pass_share([], 0.8))


def test_histogram_bins_close_the_last_bin_and_widen_the_range() -> None:
    h = histogram([0.0, 0.05, 0.5, 1.0, 1.0])
    assert h.counts == (2, 0, 0, 0, 0, 1, 0, 0, 0, 2) and (h.low, h.high) == (0.0, 1.0)
    wide = histogram([2.0, -1.0])
    assert (wide.low, wide.high) == (-1.0, 2.0) and sum(wide.counts) == 2


def test_verdict_tones() -> None:
    assert [verdict_tone(v) for v in (1, 0, "PASS", "FAIL", "NA", 4, True)] == [
        "ok",
        "bad",
        "ok",
        "bad",
        "na",
        "info",
        "info",
    ]


# ------------------------------------------------------------------ statements


def test_statements_are_found_case_insensitively_in_order_without_overlap() -> None:
    answer = "Paris is the capital.  It is in FRANCE.\nParis is the capital."
    marks, unplaced = locate_statements(
        answer, ["paris is the capital.", "It is in France", "Paris is the capital.", "Berlin is big."]
    )
    assert unplaced == [3]
    assert [answer[a:b] for a, b, _ in marks] == ["Paris is the capital.", "It is in FRANCE", "Paris is the capital."]
    assert [i for _, _, i in marks] == [0, 1, 2]  # the repeated statement takes the second occurrence


def test_statements_match_across_whitespace_and_without_trailing_punctuation() -> None:
    answer = "The sky\nis   blue, mostly"
    marks, unplaced = locate_statements(answer, ["The sky is blue.", "   "])
    assert [answer[a:b] for a, b, _ in marks] == ["The sky\nis   blue"] and unplaced == [1]


def test_statement_offsets_are_converted_to_javascript_utf16_units() -> None:
    answer = "🙂 ok. 🙂🙂 fine."
    marks, _ = locate_statements(answer, ["ok.", "fine."])
    js = to_utf16_offsets(answer, marks)
    encoded = answer.encode("utf-16-le")
    assert [encoded[2 * a : 2 * b].decode("utf-16-le") for a, b, _ in js] == ["ok.", "fine."]


def test_lowercasing_that_changes_length_falls_back_to_the_regular_expression() -> None:
    answer = "İstanbul is big. Ankara is the capital."
    marks, unplaced = locate_statements(answer, ["ankara is the capital."])
    assert unplaced == [] and answer[marks[0][0] : marks[0][1]] == "Ankara is the capital."


# ------------------------------------------------------------------ JSON embedding


def test_embedded_json_cannot_close_its_script_element() -> None:
    data = {"a": "</script><script>alert(1)</script>", "b": "<!-- & \u2028\u2029 >", "c": [1.5, None]}
    text = embed_json(data)
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert json.loads(text) == data
    with pytest.raises(ValueError):
        embed_json({"x": math.nan})


# ------------------------------------------------------------------ the page


@pytest.fixture
def xss_store(tmp_path: Path) -> RunStore:
    """A run of the real Faithfulness metric whose evaluated data carries XSS payloads."""
    judge = FunctionJudge(lambda messages, request: sentence_judge(messages[-1]["content"]))
    samples = [
        Sample(
            id='<img src=x onerror="window.__xss=3">',
            question="<script>window.__xss=4</script>?",
            answer=XSS_ANSWER,
            contexts=("The sky is blue. <b>bold</b>",),
        ),
        Sample(id="plain", question="Colour?", answer="The sky is blue.", contexts=("The sky is blue.",)),
    ]
    result = evaluate(samples, [Faithfulness(strategy="batch")], judge)
    store = RunStore(tmp_path / "runs.sqlite")
    store.create(
        RunSpec(
            run_id="xss",
            dataset='data <script>alert("ds")</script>.jsonl',
            judge="function",
            judge_model="function",
            metrics=(Faithfulness(strategy="batch").spec(),),
        )
    )
    for r in result.results:
        store.record("xss", r)
    store.set_status("xss", "finished")
    return store


def test_page_is_self_contained_and_escapes_everything(xss_store: RunStore) -> None:
    html = render_report(xss_store, "xss")
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in html.replace("&#39;", "'")
    # No payload survives as markup: outside the JSON everything is HTML-escaped, and the
    # JSON holds no "<" at all (so nothing in it can close its script element).
    head, rest = html.split('<script type="application/json" id="assay-data">')
    data_text, tail = rest.split("</script>", 1)
    assert "<" not in data_text and ">" not in data_text and "&" not in data_text
    for payload in ("<img src=x", "onerror=", "<script>window.__xss", "<b>", '<script>alert("ds")'):
        assert payload not in head + tail
    assert "&lt;script&gt;alert(&#34;ds&#34;)&lt;/script&gt;" in html  # the dataset name, as text
    # Nothing is loaded from anywhere: two inline scripts (data, code), no external resources.
    assert re.findall(r"<script[^>]*>", html) == ['<script type="application/json" id="assay-data">', "<script>"]
    assert not re.search(r"<(link|img|iframe|object|embed)\b", html)
    assert not re.search(r"\b(src|href)\s*=", head)
    data = embedded(html)
    assert isinstance(data, dict)
    first = data["samples"][0]
    assert first["answer"] == XSS_ANSWER and first["id"] == '<img src=x onerror="window.__xss=3">'


def test_sample_payload_carries_statements_marks_reasons_and_the_judge_exchange(xss_store: RunStore) -> None:
    report = load_report(xss_store, "xss")
    (metric,) = report.metrics
    assert metric.name == "faithfulness" and metric.n_samples == 2 and metric.n_scored == 2
    sample = report.samples[0]
    (entry,) = sample["repeats"][0]["scores"]
    assert [v["tone"] for v in entry["verdicts"]] == ["ok", "bad", "bad"]
    assert [XSS_ANSWER[a:b] for a, b, _ in entry["marks"]] == [v["subject"] for v in entry["verdicts"]]
    assert entry["verdicts"][0]["reason"] == "context says so <b>0</b>"
    purposes = {c["purpose"] for c in entry["calls"]}
    assert "faithfulness.verdicts" in purposes
    assert purposes <= {"faithfulness.sentence_statements", "faithfulness.verdicts"}
    texts = report.texts
    user = [texts[m["text"]] for c in entry["calls"] for m in c["messages"] if m["role"] == "user"]
    assert all(any(v["subject"] in t for t in user) for v in entry["verdicts"])  # hostile text, as data
    # judge prompts are interned: the system prompt is stored once for both samples
    systems = {m["text"] for s in report.samples for c in s["repeats"][0]["scores"][0]["calls"] for m in c["messages"]}
    assert len(texts) == len(systems)


def test_rewritten_statements_are_listed_as_unplaced(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "s.sqlite")
    store_run(store, "r", {"a": [scored(0.5, {"A.": 1, "The answer mentions B": 0})]})
    entry = load_report(store, "r").samples[0]["repeats"][0]["scores"][0]
    assert [v["subject"] for v in entry["verdicts"]] == ["A.", "The answer mentions B"]
    assert entry["marks"] == [[0, 2, [0]]] and entry["unplaced"] == [1]


def test_summary_unscored_counts_and_cost(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "s.sqlite")
    from assay import UnscoredReason

    unscored = Score.unscored("faithfulness", UnscoredReason.PARSE_FAILURE, "bad json")
    store_run(store, "r", {"a": [scored(1.0, {"A.": 1})], "b": [scored(0.5, {"A.": 1, "B.": 0})], "c": [unscored]})
    report = load_report(store, "r")
    (m,) = report.metrics
    assert (m.n_samples, m.n_scored, m.n_unscored) == (3, 2, 1)
    assert dict(m.unscored_by_reason) == {"parse_failure": 1}
    assert m.mean.estimate == pytest.approx(0.75) and m.n_passing == 1
    assert report.cost.calls == 2 and report.cost.prompt_tokens == 2000
    assert report.cost.usd == pytest.approx(2 * (1000 * 0.15 + 100 * 0.60) / 1e6)
    assert report.samples[2]["stats"]["faithfulness"] == {
        "mean": None,
        "min": None,
        "max": None,
        "n": 0,
        "unscored": 1,
        "pass": None,
    }
    html = render_report(store, "r")
    assert "parse_failure: 1" in html and "$0.0004" in html


def test_repeats_give_per_sample_spread_flake_probability_and_gate(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "s.sqlite")
    rows = {
        "steady": [scored(1.0, {"A.": 1})] * 3,
        "flaky": [scored(1.0, {"A.": 1}), scored(0.5, {"A.": 0}), scored(1.0, {"A.": 1})],
        "low": [scored(0.5, {"A.": 0})] * 3,
    }
    store_run(store, "r", rows, repeats=3)
    report = load_report(store, "r", threshold=0.8)
    assert report.repeats == 3
    stats = {s["id"]: s["stats"]["faithfulness"] for s in report.samples}
    assert stats["flaky"]["min"] == 0.5 and stats["flaky"]["max"] == 1.0
    assert stats["flaky"]["mean"] == pytest.approx(2.5 / 3) and stats["flaky"]["pass"] == pytest.approx(2 / 3)
    assert stats["steady"]["pass"] == 1.0 and stats["low"]["pass"] == 0.0
    (m,) = report.metrics
    assert m.n_flaky == 1 and len(m.spreads) == 3
    # repeat means: (1 + 1 + .5)/3, (1 + .5 + .5)/3, (1 + 1 + .5)/3 -> gate at 0.8 passes 2 of 3
    assert m.gate.repeat_means == pytest.approx((2.5 / 3, 2 / 3, 2.5 / 3))
    assert m.gate.passes == 2 and m.gate.p_pass == pytest.approx(2 / 3) and m.gate.flaky
    assert m.verdict is not None and m.verdict.outcome == "flaky"  # the gate column is assay gate's verdict
    html = render_report(store, "r")
    assert "passes on 2 of 3 repeats" in html and 'class="spread"' in html


def test_compare_pairs_by_id_and_counts_flips_and_deltas(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "s.sqlite")
    store_run(
        store,
        "new",
        {
            "a": [scored(1.0, {"A.": 1})],
            "b": [scored(0.5, {"A.": 1, "B.": 0})],
            "c": [scored(1.0, {"A.": 1})],
            "only-new": [scored(1.0, {"A.": 1})],
        },
    )
    store_run(
        store,
        "old",
        {
            "a": [scored(0.5, {"A.": 1, "B.": 0})],
            "b": [scored(1.0, {"A.": 1})],
            "c": [scored(0.9, {"A.": 1})],
            "only-old": [scored(0.0, {"A.": 0})],
        },
    )
    report = load_report(store, "new", compare="old", threshold=0.8)
    assert (report.n_paired, report.only_here, report.only_other) == (3, 1, 1)
    (c,) = report.compare
    assert c.delta.n == 3 and c.delta.estimate == pytest.approx((0.5 - 0.5 + 0.1) / 3)
    assert (c.delta.low, c.delta.high) == paired_bootstrap_ci([1.0, 0.5, 1.0], [0.5, 1.0, 0.9], seed=0)
    assert (c.n_to_pass, c.n_to_fail) == (1, 1)
    deltas = {s["id"]: s["delta"]["faithfulness"] for s in report.samples}
    assert deltas["a"] == {"other": 0.5, "delta": 0.5, "flip": "fail→pass"}
    assert deltas["b"] == {"other": 1.0, "delta": -0.5, "flip": "pass→fail"}
    assert deltas["c"]["flip"] is None and deltas["only-new"] == {"other": None, "delta": None, "flip": None}
    html = render_report(store, "new", compare="old")
    assert "Compared with" in html and "+0.033" in html


def test_write_report_creates_the_file_and_build_report_is_pure(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "s.sqlite")
    store_run(store, "r", {"a": [scored(1.0, {"A.": 1})]})
    data = write_report(store, "r", tmp_path / "deep" / "report.html")
    assert (tmp_path / "deep" / "report.html").read_text().startswith("<!DOCTYPE html>")
    again = build_report(store.info("r"), list(store.records("r")))
    assert again.page_data() == data.page_data()


def test_the_raw_spec_says_what_it_masks_of_the_base_url_and_masks_it_everywhere(tmp_path: Path) -> None:
    """It said "base URL redacted" above the URL in full: it masks the credentials, and says so; host and path stay.

    The runs are stored as runs were before specs redacted their URL, with userinfo and an
    ``?api-key=`` query, so what is masked is masked by the renderers themselves.
    """
    import html

    from assay.report import write_browser
    from assay.report._header import RAW_SPEC_LABEL
    from assay.run import JudgeRecord

    urls = {
        "old": "https://alice:pw-SECRET-1@proxy.example.com/v1?api-key=key-SECRET-2&region=eu",
        "new": "http://bob@judge.internal:8080/openai?token=key-SECRET-3",
    }
    store = RunStore(tmp_path / "s.sqlite")
    for run_id, url in urls.items():
        store.create(RunSpec(run_id=run_id, judge="openai:gpt-4o-mini", judge_model="openai:gpt-4o-mini",
                             base_url=url, judge_record=JudgeRecord(model_id="openai:gpt-4o-mini",
                                                                    identity=f"openai:gpt-4o-mini@{url}")))  # fmt: skip
        sample = Sample(id="a", question="q", answer="A.", contexts=("ctx",))
        store.record(run_id, SampleResult(sample, {"faithfulness": scored(1.0, {"A.": 1})}, line=1))
        store.set_status(run_id, "finished")
    data = write_report(store, "new", tmp_path / "report.html", compare="old")
    page = (tmp_path / "report.html").read_text()
    secrets = ("alice", "pw-SECRET", "key-SECRET", "bob@")
    assert not [s for s in secrets if s in page]
    assert not [c for c in data.caveats if any(s in c for s in secrets)], data.caveats
    assert any("judge.internal:8080/openai" in c and "proxy.example.com/v1" in c for c in data.caveats), data.caveats
    summary = re.search(
        r'<details id="raw-spec"[^>]*><summary>(.*?)</summary><pre class="block">(.*?)</pre>', page, re.S
    )
    assert summary is not None
    label, raw = html.unescape(summary.group(1)), json.loads(html.unescape(summary.group(2)))
    assert label == RAW_SPEC_LABEL and "base URL redacted" not in page
    assert "user and password" in label and "key, token" in label and "host and path are not" in label
    assert raw["base_url"] == "http://[redacted]@judge.internal:8080/openai?token=[redacted]"  # as the label says
    assert (
        raw["judge_record"]["identity"]
        == "openai:gpt-4o-mini@http://[redacted]@judge.internal:8080/openai?token=[redacted]"
    )
    # The run browser's data (its endpoint) masks them too.
    browser = write_browser(store, tmp_path / "browse", reports=False)
    index = (tmp_path / "browse" / "index.html").read_text()
    assert len(browser.runs) == 2 and not [s for s in secrets if s in index]
    assert "proxy.example.com/v1?api-key=[redacted]" in index


# ------------------------------------------------------------------ CLI


def cli() -> typer.Typer:
    app = typer.Typer()
    app.command()(report_command)
    return app


def test_cli_writes_the_report_and_explains_mistakes(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "s.sqlite")
    store_run(store, "r1", {"a": [scored(1.0, {"A.": 1})]})
    store_run(store, "r2", {"a": [scored(0.5, {"A.": 1, "B.": 0})]})
    store.close()
    runner = CliRunner()
    out = tmp_path / "r.html"
    args = ["r1", "--compare", "r2", "-o", str(out), "--store", str(tmp_path / "s.sqlite"), "--threshold", "0.9"]
    result = runner.invoke(cli(), args)
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and out.exists() and "≥ 0.9" in out.read_text()
    result = runner.invoke(cli(), ["nope", "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 1 and "no run 'nope'" in result.output
    result = runner.invoke(cli(), ["r1", "--store", str(tmp_path / "missing.sqlite")])
    assert result.exit_code == 1 and "no run store" in result.output


def test_a_comparison_names_what_differs_besides_the_system_judged() -> None:
    from assay.report._build import comparison_caveats
    from assay.run import RunInfo

    def info(
        judge: str = "openai:m", url: str | None = None, threshold: str | None = None, **options: object
    ) -> RunInfo:
        from assay.metrics import build_metric

        metric = build_metric("faithfulness", {"threshold": threshold} if threshold else {})
        spec = RunSpec(run_id="r", judge=judge, judge_model=judge, base_url=url, metrics=(metric.spec(),),
                       options=options)  # fmt: skip
        return RunInfo(run_id="r", created_at="", updated_at="", status="finished", n_results=0, n_errors=0,
                       spec=spec, summary=None)  # fmt: skip

    assert comparison_caveats(info(), info(repeats=3)) == ()  # repeats are not a metric setting
    assert comparison_caveats(info("openai:a"), info("openai:b")) == (
        "judged by different judges (openai:a here, openai:b there)",
    )
    assert comparison_caveats(info(url="http://a/v1"), info(url="http://b/v1")) == (
        "openai:m was served from http://a/v1 here, http://b/v1 there",
    )
    assert comparison_caveats(info(threshold="0.7"), info()) == (
        "faithfulness is set differently (verifier.threshold)",
    )
    assert comparison_caveats(info(temperature=0.7), info()) == ("sampled at temperature 0.7 here, default there",)


# ------------------------------------------------------------------ partial runs


def text_of(page: str) -> str:
    import html

    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def banner(html: str) -> str:
    """The partial-run banner's text ('' without one); it must come before everything else the header says."""
    if 'id="partial-run"' not in html:
        return ""
    assert html.index('id="partial-run"') < min(html.index('id="settings"'), html.index('<section id="summary">'))
    return text_of(html.split('id="partial-run"')[1].split("</div>")[0])


def test_a_partial_run_is_headed_by_a_banner_and_its_gate_column_says_incomplete(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "s.sqlite")
    two = {"a": [scored(1.0, {"A.": 1})], "b": [scored(1.0, {"B.": 1})]}
    store_run(store, "whole", two, n_rows=2)
    store_run(store, "cut", two, status="interrupted", n_rows=5)
    store_run(store, "crashed", two, status="failed")  # the input's size not recorded
    store.create(RunSpec(run_id="bad", judge="x", judge_model="x"))
    store.record("bad", SampleResult(Sample(id="a", answer="A.", contexts=("ctx",)), {"faithfulness": two["a"][0]}, 1))
    store.record_error("bad", SampleError("missing or empty field 'answer'", source="data.jsonl", line=3))
    store.set_status("bad", "finished")

    whole = write_report(store, "whole", tmp_path / "whole.html")
    assert whole.partial == () and banner((tmp_path / "whole.html").read_text()) == ""
    assert whole.metrics[0].verdict is not None and whole.metrics[0].verdict.outcome == "pass"

    cut = write_report(store, "cut", tmp_path / "cut.html")
    html = (tmp_path / "cut.html").read_text()
    said = banner(html)
    assert "Partial run: assay gate does not pass it (exit 2)" in said
    assert (
        "run cut is interrupted: 2 of 5 rows judged, 3 never judged; resume it with 'assay run --resume cut', "
        "or pass --allow-partial" in said
    )
    assert cut.metrics[0].verdict is not None and cut.metrics[0].verdict.outcome == "incomplete"
    summary = text_of(html.split('<section id="summary">')[1].split("</section>")[0])
    assert "incomplete mean ≥ 0.8" in summary  # the gate column: assay gate's own verdict

    said = banner(render_report(store, "crashed"))
    assert "run crashed failed (an error stopped it): 2 rows judged; the input's size was not recorded" in said
    said = banner(render_report(store, "bad"))
    assert "1 input row was invalid (line 3) and not judged; fix it and run again, or pass --max-invalid-rows 1" in said

    allowed = load_report(store, "cut", gate=GatePolicy(allow_partial=True))
    assert allowed.partial_gated and allowed.gate_result is not None and allowed.gate_result.outcome == "pass"
    said = banner(render_report(store, "cut", gate=GatePolicy(allow_partial=True)))
    assert "Partial run : gated on the 2 rows it judged ( --allow-partial )" in said
    tolerant = load_report(store, "bad", gate=GatePolicy(max_invalid_rows=1))
    assert tolerant.partial == () and banner(render_report(store, "bad", gate=GatePolicy(max_invalid_rows=1))) == ""


def test_the_report_cli_takes_the_gates_partial_run_options(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "s.sqlite")
    store_run(store, "cut", {"a": [scored(1.0, {"A.": 1})]}, status="interrupted", n_rows=3)
    store.close()
    runner = CliRunner()
    base = ["cut", "--store", str(tmp_path / "s.sqlite"), "-o", str(tmp_path / "r.html")]
    result = runner.invoke(cli(), [*base, "--gate"])
    assert result.exit_code == 0 and "gate incomplete" in result.output, result.output
    result = runner.invoke(cli(), [*base, "--gate", "--allow-partial"])
    assert result.exit_code == 0 and "gate pass" in result.output, result.output
    result = runner.invoke(cli(), [*base, "--max-invalid-rows", "2"])
    assert result.exit_code == 1 and "--max-invalid-rows only apply with --gate" in result.output


def test_the_histogram_caption_counts_its_tallest_bar_or_says_nothing_was_scored(tmp_path: Path) -> None:
    from assay import UnscoredReason

    store = RunStore(tmp_path / "s.sqlite")
    unscored = Score.unscored("faithfulness", UnscoredReason.PARSE_FAILURE, "bad json")
    store_run(store, "none", {"a": [unscored], "b": [unscored]})
    store_run(
        store, "some", {"a": [scored(1.0, {"A.": 1})], "b": [scored(1.0, {"A.": 1})], "c": [scored(0.5, {"A.": 0})]}
    )
    store_run(store, "one", {"a": [scored(1.0, {"A.": 1})]})
    none, some, one = (render_report(store, run) for run in ("none", "some", "one"))
    assert "no scored value" in none and "tallest bar" not in none
    assert "tallest bar: 2 values" in some and "tallest bar: 1 value<" in one
