"""``assay gate`` on stored runs judged by a FunctionJudge: decomposition noise, --latest, --summary-md.

The judge never flips a verdict: a statement is supported unless it mentions 1600. What
changes from one repeat to the next is the *decomposition* (the statements the answer is
split into), as measured with the local judge at temperature 0.7: identical P(supported)
for every verdict, yet different statement sets for 4 of 6 samples and 2 moved scores,
one across a 0.8 pass mark (0.5 / 1.0 / 1.0).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path

import pytest
import typer
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from assay import Faithfulness, JudgeCall, Sample, Verdict, aevaluate, evaluate
from assay.analysis import GatePolicy, analyze_repeats, evaluate_gate
from assay.cli._gate import gate
from assay.metrics._common import supported_share
from assay.models import FunctionJudge
from assay.models._protocol import ChatMessage
from assay.report import build_report, gate_summary_markdown, md_text
from assay.run import EvalResult, RunSpec, RunStore, SampleResult, new_run_id
from interrupting import cancel_after

app = typer.Typer(pretty_exceptions_enable=False)
app.command("gate", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})(gate)
app.command("other")(lambda: None)  # two commands, so "gate" is a subcommand as in assay's app

CALLS = (JudgeCall(model="function", purpose="verdicts", messages=(), raw_output="{}"),)
"""The judge call each stored score carries, as a judged one does."""
CONTEXT = "Paris is the capital of France. The Louvre is in Paris. The Seine flows through Paris."

# answer -> statements per repeat (a repeat not listed uses the last entry).
SPLITS: dict[str, list[list[str]]] = {
    "s1": [["Paris is the capital of France.", "The Louvre is in Paris."]],  # stable
    "s2": [  # the set changes, every statement supported: the score stays 1
        ["The Seine flows through Paris.", "Paris is the capital of France."],
        ["The Seine flows through Paris, the capital of France."],
    ],
    "s3": [  # the set changes and the score crosses 0.8: 0.5 / 1.0 / 1.0
        ["Paris is the capital of France.", "The Louvre opened in 1600."],
        ["Paris is the capital of France.", "The Louvre is in Paris."],
    ],
    "s4": [  # the set changes and the score moves below the mark: 2/3 / 0.5 / 0.5
        ["The Louvre is in Paris.", "The Seine flows through Paris.", "The Seine froze in 1600."],
        ["The Louvre is in Paris.", "The Seine froze in 1600."],
    ],
    "s5": [  # the set changes, score stays 1
        ["The Louvre is in Paris."],
        ["The Louvre is in Paris.", "The Louvre is in France's capital."],
    ],
    "s6": [["The Seine flows through Paris."]],  # stable
}


def _user(messages: Sequence[ChatMessage]) -> str:
    return messages[-1]["content"]


def stored_run(
    store: Path, splits: dict[str, list[list[str]]], repeats: int = 3, ids: dict[str, str] | None = None
) -> str:
    """One sample per key of ``splits`` (its answer is the key; its id too, unless ``ids`` says), stored as
    a faithfulness run whose decomposition is sampled with each repeat (``fixed_statements=False``) leaves it.

    The records are written directly, the statements of each repeat as ``splits`` gives them: the gate's
    subject is what repeats did, and a real decomposition anchors its statements to the answer, which these
    one-word answers cannot carry.
    """
    ids = ids or {}
    metric = Faithfulness(strategy="batch", fixed_statements=False)
    run_id = new_run_id()
    with RunStore(store) as opened:
        opened.create(RunSpec(run_id=run_id, judge="function", judge_model="function", metrics=(metric.spec(),),
                              options={"repeats": repeats}))  # fmt: skip
        for line, key in enumerate(splits, start=1):
            sample = Sample(id=ids.get(key, key), question="What about Paris?", answer=key, contexts=(CONTEXT,))
            for repeat in range(repeats):
                options = splits[key]
                statements = options[min(repeat, len(options) - 1)]
                verdicts = [
                    Verdict(
                        subject=s,
                        value=int("1600" not in s),
                        reason="the context gives no year" if "1600" in s else "stated in the context",
                    )
                    for s in statements
                ]
                score = supported_share(
                    "faithfulness",
                    verdicts,
                    CALLS,
                    metric.spec(),
                    counted="statements supported",
                    rejected="unsupported",
                )
                opened.record(run_id, SampleResult(sample, {"faithfulness": score}, line, repeat), repeat=repeat)
        opened.set_status(run_id, "finished")
    return run_id


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["gate", *args], env={"COLUMNS": "250"})
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def decomposition_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    store = tmp_path_factory.mktemp("decomposition") / "runs.sqlite"
    return store, stored_run(store, SPLITS)


# --- 2. the noise model counts the variation of the statements themselves -----------------


def test_decomposition_noise_is_measured_although_no_verdict_flips(decomposition_run: tuple[Path, str]) -> None:
    store, run_id = decomposition_run
    with RunStore(store) as opened:
        report = analyze_repeats(list(opened.records(run_id)), "faithfulness")
    by_id = {s.id: s for s in report.samples}
    assert [round(float(v), 3) for v in by_id["s3"].values] == [0.5, 1.0, 1.0]
    assert [round(float(v), 3) for v in by_id["s4"].values] == [0.667, 0.5, 0.5]
    assert report.flip_rate == 0.0  # matched statements never flip...
    assert not any(s.unstable for s in report.samples)
    # ...but the decomposition changed 4 of 6 statement sets and moved 2 scores.
    assert (report.n_sets_changed, report.n_compared) == (4, 6)
    assert report.n_scores_moved == 2 and report.n_moved_without_flip == 2


def test_gate_from_repeats_is_flaky_when_outcomes_differ_though_no_verdict_flips(
    decomposition_run: tuple[Path, str],
) -> None:
    store, run_id = decomposition_run
    # Scores: s3 .5/1/1, s4 .667/.5/.5, every other sample 1 in every repeat.
    # 0.5 per sample: every sample passes every repeat -> a stable pass.
    code, out = invoke(run_id, "--store", str(store), "--per-sample", "--min", "0.5")
    assert code == 0, out
    # 0.8 per sample: s4 fails every repeat -> a stable fail, whatever s3 does.
    code, out = invoke(run_id, "--store", str(store), "--per-sample", "--min", "0.6", "--min", "0.8")
    assert code == 1, out
    # 0.6 per sample: s3 passes in repeats 1-2, s4 only in repeat 0. Outcomes differ across repeats -> flaky.
    code, out = invoke(run_id, "--store", str(store), "--per-sample", "--min", "0.6")
    assert code == 2, out
    assert out.startswith("GATE FLAKY")
    assert "the gate passes on 0/3 of them" in out
    assert "statement sets differed across repeats in 4/6 samples · scores moved in 2 (2 with no verdict flip)" in out
    assert "binomial model; decomposition variation not modelled" in " ".join(out.split())
    # Run mean, 0.9: repeat means are .861, .917, .917 -> the gate passes on 2 of 3 repeats.
    code, out = invoke(run_id, "--store", str(store), "--min", "0.9")
    assert code == 2, out
    assert "the gate passes on 2/3 of them" in out


def test_a_repeat_that_fails_as_a_whole_makes_the_gate_flaky() -> None:
    # 100 samples score 1, 1, 0 over 3 repeats (repeat 2 failed everywhere: correlated noise). A simulated run
    # that draws repeats independently per sample passes a 0.5 run-mean gate with P > 0.999, yet repeat 2
    # itself failed: the gate must not call that a stable pass.
    from assay import Score, Verdict

    def faith(value: int) -> dict[str, object]:
        verdict = Verdict(subject="Paris is in France.", value=value, reason="r")
        return Score.scored("faithfulness", float(value), verdicts=[verdict]).model_dump(mode="json")

    records = [
        {"id": f"s{i}", "line": i, "repeat": r, "sample": {}, "scores": {"faithfulness": faith(int(r < 2))}}
        for i in range(1, 101)
        for r in range(3)
    ]
    result = evaluate_gate(analyze_repeats(records, "faithfulness"), GatePolicy(threshold=0.5))
    assert result.observed_pass and result.p_pass > 0.999
    assert result.repeat_passes == (True, True, False)
    assert result.outcome == "flaky"


# --- 3. --latest --------------------------------------------------------------------------


def test_latest_gates_the_newest_run_and_says_which(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    older = stored_run(store, {"s3": SPLITS["s3"]}, repeats=1)  # 0.5: fails 0.8
    time.sleep(1.05 - time.time() % 1)  # runs are ordered by their creation second
    newer = stored_run(store, {"s1": SPLITS["s1"]}, repeats=1)  # 1.0: passes
    code, out = invoke("--latest", "--store", str(store))
    assert code == 0, out
    assert f"gating the latest run in {store}: {newer}" in " ".join(out.split())
    assert f"run {newer}" in out and older not in out
    code, out = invoke(older, "--store", str(store))
    assert code == 1, out
    code, out = invoke(older, "--latest", "--store", str(store))
    assert code == 3 and "not both" in out
    code, out = invoke("--latest", "--store", str(tmp_path / "none.sqlite"))
    assert code == 3 and "no run store" in out


# --- 4. --summary-md ----------------------------------------------------------------------


class _Html(HTMLParser):
    """Collects the tags of rendered Markdown and the cell count of every table row."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.rows: list[int] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "tr":
            self.rows.append(0)
        elif tag in ("td", "th"):
            self.rows[-1] += 1


def render(markdown: str) -> _Html:
    html = MarkdownIt("commonmark").enable("table").render(markdown)  # raw HTML allowed, as on GitHub
    parser = _Html()
    parser.feed(html)
    return parser


def test_summary_md_is_appended_with_verdict_rule_ci_noise_and_worst_samples(
    decomposition_run: tuple[Path, str], tmp_path: Path
) -> None:
    store, run_id = decomposition_run
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    code, out = invoke(run_id, "--store", str(store), "--per-sample", "--min", "0.6", "--summary-md", str(summary))
    assert code == 2, out
    text = summary.read_text()
    assert text.startswith("earlier step\n### ⚠️ assay gate: FLAKY")  # appended, not overwritten
    with RunStore(store) as opened:
        records = list(opened.records(run_id))
    report = analyze_repeats(records, "faithfulness")
    flat = text.replace("\\", "")
    assert "faithfulness ≥ 0.6 on every sample" in flat
    assert (
        f"| faithfulness (gated) | {report.mean:.3f} | [{report.ci[0]:.3f}, {report.ci[1]:.3f}] | 6 | 18 | 0 |" in flat
    )
    assert "Decided from 3 repeats** (the gate passes on 0/3 of them)" in flat
    assert "statement sets differed in 4/6 samples · scores moved in 2 (2 with no verdict flip)" in flat
    # The worst sample first, with its failing statement and the judge's reason.
    worst = [line for line in flat.splitlines() if line.startswith("| 4 | s4 |")]
    assert worst and "✗ The Seine froze in 1600. — *the context gives no year* (3/3 repeats)" in worst[0]
    rows = render(text).rows
    assert rows and all(n == rows[0] or n == 7 for n in rows)  # every row of each table has its columns


def test_single_run_summary_says_it_decided_on_what_it_observed(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    run_id = stored_run(store, {"s3": SPLITS["s3"], "s1": SPLITS["s1"]}, repeats=1)
    summary = tmp_path / "summary.md"
    code, out = invoke(run_id, "--store", str(store), "--per-sample", "--summary-md", str(summary))
    assert code == 1, out  # s3 scored 0.5 on its only run: an observed fail, not "flaky"
    flat = summary.read_text().replace("\\", "")
    assert "### ❌ assay gate: FAIL" in flat
    assert "Single run: decided on what it observed" in flat and "assay run --repeats 3" in flat


HOSTILE = [
    "[click](https://evil.example/x) ![img](https://evil.example/i.png)",
    "<img src=x onerror=alert(1)> <script>alert(2)</script> &lt;b&gt;",
    "cell | break | table\nnew line\r\n| --- |",
    "`code` **bold** _it_ # heading <https://auto.example> www.evil.example me@evil.example @octocat #1",
    "\x1b[31mred\x1b[0m \u202eevil\u202c \x00nul \x07bell",
]


def summary_of(tmp_path: Path, texts: Sequence[str]) -> str:
    """The summary of a single run whose sample id, statements, reasons and notes are ``texts``."""
    store = tmp_path / f"runs-{len(list(tmp_path.iterdir()))}.sqlite"
    run_id = stored_run(
        store, {"answer": [[f"{t} in 1600." for t in texts]]}, repeats=1, ids={"answer": " ".join(texts)}
    )
    with RunStore(store) as opened:
        records = list(opened.records(run_id))
    report = analyze_repeats(records, "faithfulness")
    result = evaluate_gate(report, GatePolicy(per_sample=True))
    assert result.outcome == "fail" and len(result.failing[0].sinkers) == len(texts)
    return gate_summary_markdown(result, {"faithfulness": report}, run_id=run_id, notes=texts)


def test_hostile_text_cannot_inject_links_images_html_or_break_the_table(tmp_path: Path) -> None:
    text = summary_of(tmp_path, HOSTILE)
    benign = summary_of(tmp_path, [f"plain words number {i}" for i in range(len(HOSTILE))])
    hostile_html, benign_html = render(text), render(benign)
    # The same document structure as with harmless text: no link, image, HTML, heading, emphasis, or cell.
    assert hostile_html.tags == benign_html.tags
    assert not {"a", "img", "script", "h1", "h2"} & set(hostile_html.tags)
    assert hostile_html.rows == [6, 6, 7, 7]  # metrics table, worst-samples table: rows unbroken
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text)
    # GitHub also links bare URLs, www. hosts, e-mails, @mentions and #refs found in rendered text.
    assert "://" not in text and "www." not in text
    assert all(text[i + 1] == "\u2060" for i, c in enumerate(text) if c in ":@#" and text[i - 1] == "\\")


def test_md_text_escapes_each_ascii_punctuation_and_keeps_the_words() -> None:
    assert md_text("a|b") == "a\\|b"
    assert md_text("[x](y)") == "\\[x\\]\\(y\\)"
    assert md_text("line\nbreak\ttab") == "line break tab"
    assert md_text("sk-abcdefghijklmnop key") == "sk\\-abcd\\.\\.\\.\\[redacted\\] key"
    assert md_text("x" * 400, limit=10) == "x" * 9 + "…"
    assert md_text("\u202eabc\x1b") == "abc"


# --- 5. one statistics module ---------------------------------------------------------------


def test_the_report_interval_is_the_analysis_interval(decomposition_run: tuple[Path, str]) -> None:
    store, run_id = decomposition_run
    with RunStore(store) as opened:
        info = opened.info(run_id)
        records = list(opened.records(run_id))
    for seed in (0, 5):
        analysis = analyze_repeats(records, "faithfulness", seed=seed)
        (view,) = build_report(info, records, seed=seed).metrics
        assert (view.mean.estimate, view.mean.low, view.mean.high) == (analysis.mean, *analysis.ci)
        assert view.mean.low < view.mean.high  # a real interval, not a degenerate one
    gate_ci = evaluate_gate(analyze_repeats(records, "faithfulness"), GatePolicy()).ci
    assert gate_ci == analyze_repeats(records, "faithfulness").ci


def test_gating_a_state_match_run_assumes_no_judge_noise_and_gives_no_judge_advice(tmp_path: Path) -> None:
    import asyncio

    from assay import Message, ToolCall
    from assay.metrics import AgentStateMatch
    from assay.models import ScriptedJudge

    metric = AgentStateMatch()
    trace = (
        Message(role="user", content="Cancel ABC."),
        Message(role="assistant", tool_calls=(ToolCall(name="cancel_reservation", arguments={"id": "ABC"}, id="1"),)),
        Message(role="tool", tool_call_id="1", content="cancelled"),
    )
    store, run_id = tmp_path / "runs.sqlite", new_run_id()
    with RunStore(store) as opened:
        opened.create(RunSpec(run_id=run_id, judge="local", judge_model="local", metrics=(metric.spec(),)))
        for line, expected in enumerate(["ABC", "ABC", "ABC", "ABC", "XYZ"], start=1):
            expected_calls = [{"name": "cancel_reservation", "arguments": {"id": expected}}]
            sample = Sample(id=f"t{line}", trace=trace, reference_tool_calls=expected_calls)
            score = asyncio.run(metric.score(sample, ScriptedJudge([])))
            assert not score.all_calls
            opened.record(run_id, SampleResult(sample, {metric.name: score}, line, 0), repeat=0)
        opened.set_status(run_id, "finished")
    summary = tmp_path / "summary.md"
    code, out = invoke(run_id, "--store", str(store), "-m", "agent_state_match=0.8", "--summary-md", str(summary))
    assert code == 0, out  # 4 of 5 pass: the observed 0.8, and a rerun computes it again
    flat = " ".join(out.split())
    assert "no judge call: computed verdicts, a rerun gives the same outcome" in flat
    assert "flip rate" not in flat and "--repeats" not in flat and "statements needed" not in flat
    assert "No judge call" in summary.read_text()


# --- 6. a gate never passes a partial run (issue 33) ----------------------------------------
#
# A 30-row run stopped after 2 rows used to print "GATE PASS ... samples 2" and exit 0, a green
# check for an evaluation that did not happen; so did a run whose invalid rows were never judged.
# The runs below are made by the runner itself (evaluate, a FunctionJudge, the real store).

SKY = "The sky is blue."
SENTENCES = Faithfulness(strategy="batch", decomposer="sentences")


def sky_rows(n: int) -> list[dict[str, object]]:
    return [{"id": f"r{i}", "question": "Colour?", "answer": SKY, "contexts": [SKY]} for i in range(n)]


def every_statement_supported(messages: Sequence[ChatMessage], request: object) -> str:
    items = _user(messages).split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    verdicts = [{"statement": i.split("] ", 1)[1], "reason": "stated", "verdict": 1} for i in items]
    return json.dumps({"verdicts": verdicts})


def interrupted_run(store: Path, n: int = 30, keep: int = 2) -> str:
    """A run of ``n`` rows cancelled after ``keep`` were judged: what Ctrl-C does to ``assay run``."""
    cancel_after(
        keep,
        every_statement_supported,
        lambda slow: aevaluate(sky_rows(n), SENTENCES, FunctionJudge(slow, concurrency=1), store=store, progress=False),
    )
    with RunStore(store) as opened:
        run_id = opened.latest()
        info = opened.info(run_id)
    assert (info.status, info.n_samples, info.spec.n_rows) == ("interrupted", keep, n)
    return run_id


def test_a_run_whose_event_loop_went_away_is_stored_interrupted_not_failed(tmp_path: Path) -> None:
    """Ctrl-C can land in the event loop's own code: the loop ends and the run's task is never cancelled.

    The coroutine is then closed later, outside any loop (at garbage collection), and its
    clean-up wrote "failed" over the "interrupted" the CLI had just recorded (1 run in
    about 20 of tests/test_store_and_cli.py's Ctrl-C test). A run abandoned that way did
    not fail: what it judged is stored and it can be resumed.
    """
    judged = 0

    async def slow(messages: Sequence[ChatMessage], request: object) -> str:
        nonlocal judged
        judged += 1
        if judged > 2:
            await asyncio.sleep(60)
        return every_statement_supported(messages, request)

    async def two_judged() -> None:
        while judged <= 2:
            await asyncio.sleep(0.01)

    store = tmp_path / "runs.sqlite"
    loop = asyncio.new_event_loop()
    run = aevaluate(sky_rows(30), SENTENCES, FunctionJudge(slow, concurrency=1), store=store, progress=False)
    task = loop.create_task(run)
    loop.run_until_complete(two_judged())
    loop.close()  # its tasks still pending, as when the interrupt leaves the loop without cancelling them
    with contextlib.suppress(RuntimeError):  # "Event loop is closed", from a lock's clean-up: GC prints and ignores it
        run.close()  # what garbage collection does to the abandoned coroutine
    task._log_destroy_pending = False  # the test abandons it on purpose
    with RunStore(store) as opened:
        info = opened.info(opened.latest())
    assert (info.status, info.n_samples) == ("interrupted", 2)


def invalid_rows_run(tmp_path: Path) -> str:
    """A finished run of 10 input rows, 2 of them invalid (line 4 is not JSON, line 9 has no answer)."""
    lines = [json.dumps(row) for row in sky_rows(10)]
    lines[3] = '{"id": "r3", "question": '
    lines[8] = json.dumps({"id": "r8", "question": "Colour?", "contexts": [SKY]})
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(lines) + "\n")
    result = evaluate(data, SENTENCES, FunctionJudge(every_statement_supported), store=tmp_path / "runs.sqlite",
                      progress=False)  # fmt: skip
    assert result.run_id is not None and [e.line for e in result.errors] == [4, 9]
    return result.run_id


def flat(text: str) -> str:
    return " ".join(text.split())


def test_an_interrupted_run_does_not_pass_and_says_how_many_rows_were_never_judged(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    run_id = interrupted_run(store)
    summary = tmp_path / "summary.md"
    code, out = invoke("--latest", "-m", "faithfulness=0.8", "--store", str(store), "--summary-md", str(summary))
    assert code == 2, out  # the rows judged all pass; 28 were never judged
    out = flat(out)
    assert "GATE INCOMPLETE: faithfulness >= 0.8 on the run mean" in out and "GATE PASS" not in out
    assert "observed pass on the 2 samples judged" in out
    assert (
        f"not gated: run {run_id} is interrupted: 2 of 30 rows judged, 28 never judged; resume it with "
        f"'assay run --resume {run_id}', or pass --allow-partial" in out
    )
    text = summary.read_text().replace("\\", "")
    assert text.startswith("### ⚠️ assay gate: INCOMPLETE")
    assert "Not gated: the run is not the whole evaluation." in text and "2 of 30 rows judged, 28 never judged" in text


def test_allow_partial_gates_the_rows_judged_and_says_it_gated_a_partial_run(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    run_id = interrupted_run(store)
    summary = tmp_path / "summary.md"
    code, out = invoke(run_id, "--store", str(store), "--allow-partial", "--summary-md", str(summary))
    assert code == 0, out
    out = flat(out)
    assert "GATE PASS (partial run): faithfulness >= 0.8" in out
    assert (
        f"gated a partial run (--allow-partial): run {run_id} is interrupted: 2 of 30 rows judged, 28 never "
        f"judged; resume it with 'assay run --resume {run_id}'" in out
    )
    assert "or pass --allow-partial" not in out  # it was passed
    text = summary.read_text().replace("\\", "")
    assert text.startswith("### ✅ assay gate: PASS (partial run)") and "Gated a partial run" in text


def test_a_failed_run_does_not_pass(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    seen: list[int] = []

    def full_disk(result: SampleResult) -> None:
        seen.append(result.line)
        if len(seen) == 2:
            raise RuntimeError("the disk is full")

    judge = FunctionJudge(every_statement_supported, concurrency=1)
    with pytest.raises(RuntimeError, match="disk is full"):
        evaluate(sky_rows(30), SENTENCES, judge, store=store, progress=False, on_result=full_disk)
    code, out = invoke("--latest", "--store", str(store))
    assert code == 2, out
    run_id = RunStore(store).latest()
    assert (
        f"not gated: run {run_id} failed (an error stopped it): 2 of 30 rows judged, 28 never judged; resume it "
        f"with 'assay run --resume {run_id}', or pass --allow-partial" in flat(out)
    )


def test_a_run_still_running_is_not_gated_until_it_finishes(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    during: list[tuple[int, str]] = []

    def gate_now(result: SampleResult) -> None:  # CI gating a run another job has not finished
        if result.line == 2:
            during.append(invoke("--latest", "--store", str(store)))

    judge = FunctionJudge(every_statement_supported, concurrency=1)
    result = evaluate(sky_rows(30), SENTENCES, judge, store=store, progress=False, on_result=gate_now)
    ((code, out),) = during
    assert code == 2, out
    assert (
        f"run {result.run_id} is still running (or its process died before it could say so): 2 of 30 rows judged, "
        f"28 never judged; let it finish (if its process is gone, resume it with 'assay run --resume "
        f"{result.run_id}'), or pass --allow-partial" in flat(out)
    )
    code, out = invoke("--latest", "--store", str(store))  # finished now: every row judged
    assert code == 0 and "GATE PASS: faithfulness >= 0.8" in out and "not gated" not in out, out


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (
            (),
            2,
            "not gated: 2 input rows were invalid (lines 4, 9) and not judged; fix them and run again, or pass "
            "--max-invalid-rows 2",
        ),
        (
            ("--max-invalid-rows", "1"),
            2,
            "not gated: 2 input rows were invalid (lines 4, 9) and not judged (the limit is 1); fix them and run "
            "again, or pass --max-invalid-rows 2",
        ),
        (
            ("--allow-partial",),  # for runs that did not finish; invalid rows have their own option
            2,
            "not gated: 2 input rows were invalid (lines 4, 9) and not judged",
        ),
        (
            ("--max-invalid-rows", "2"),
            0,
            "note: 2 input rows were invalid (lines 4, 9) and not judged: tolerated by --max-invalid-rows 2; the "
            "gate covers the 8 rows judged",
        ),
    ],
)
def test_invalid_rows_beyond_the_tolerance_do_not_pass(
    tmp_path: Path, args: tuple[str, ...], code: int, said: str
) -> None:
    run_id = invalid_rows_run(tmp_path)
    exit_code, out = invoke(run_id, "--store", str(tmp_path / "runs.sqlite"), *args)
    assert exit_code == code, out
    assert said in flat(out)
    assert ("GATE PASS: faithfulness >= 0.8" in out) == (code == 0)
    assert "on 8 scored samples" in out


def test_a_whole_run_passes_with_nothing_said_of_partial_runs(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    result = evaluate(sky_rows(5), SENTENCES, FunctionJudge(every_statement_supported), store=store, progress=False)
    code, out = invoke("--latest", "--store", str(store), "--max-invalid-rows", "0")
    assert code == 0 and "GATE PASS: faithfulness >= 0.8" in out, out
    assert "not gated" not in out and "partial" not in out and "invalid" not in out
    assert result.gate("faithfulness").outcome == "pass"


def test_a_run_that_did_not_record_its_size_says_so(tmp_path: Path) -> None:
    """Runs stored before the input's size was recorded: the rows judged, and that the rest is unknown."""
    judged = evaluate(sky_rows(2), SENTENCES, FunctionJudge(every_statement_supported), progress=False)
    store, run_id = tmp_path / "runs.sqlite", new_run_id()
    with RunStore(store) as opened:
        opened.create(RunSpec(run_id=run_id, judge="function", judge_model="function", metrics=(SENTENCES.spec(),)))
        for result in judged.results:
            opened.record(run_id, result)
        opened.set_status(run_id, "interrupted")
    code, out = invoke(run_id, "--store", str(store))
    assert code == 2, out
    assert f"run {run_id} is interrupted: 2 rows judged; the input's size was not recorded; resume it" in flat(out)


def test_the_python_gate_refuses_a_partial_run_as_the_cli_does(tmp_path: Path) -> None:
    run_id = invalid_rows_run(tmp_path)
    result = EvalResult(metrics=("faithfulness",), judge="function", run_id=run_id, store_path=tmp_path / "runs.sqlite")
    gated = result.gate("faithfulness", threshold=0.8)
    assert (gated.outcome, gated.observed_pass) == ("incomplete", True)
    assert gated.partial == (
        "2 input rows were invalid (lines 4, 9) and not judged; fix them and run again, or pass --max-invalid-rows 2",
    )
    tolerated = result.gate("faithfulness", threshold=0.8, max_invalid_rows=2)
    assert (tolerated.outcome, tolerated.partial) == ("pass", ())
    assert any("tolerated by --max-invalid-rows 2" in note for note in tolerated.notes)

    store = tmp_path / "interrupted.sqlite"
    interrupted = interrupted_run(store)
    with RunStore(store) as opened:
        report = analyze_repeats(list(opened.records(interrupted)), "faithfulness")
        coverage = opened.coverage(interrupted)
    assert (coverage.n_judged, coverage.n_rows, coverage.n_never_judged) == (2, 30, 28)
    refused = evaluate_gate(report, GatePolicy(), coverage)
    assert refused.outcome == "incomplete" and not refused.gated_partial
    assert "2 of 30 rows judged, 28 never judged" in refused.partial[0]
    allowed = evaluate_gate(report, GatePolicy(allow_partial=True), coverage)
    assert allowed.outcome == "pass" and allowed.gated_partial
    assert evaluate_gate(report, GatePolicy()).outcome == "pass"  # without the run's coverage nothing is known


def test_several_metrics_of_a_partial_run_are_incomplete_together(tmp_path: Path) -> None:
    from first_hour import make_run

    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [{"faithfulness": 1.0, "answer_relevancy": 0.0}] * 2)
    with RunStore(store) as opened:
        opened.set_status("r", "interrupted")
    code, out = invoke("r", "--store", str(store), "-m", "faithfulness", "-m", "answer_relevancy")
    assert code == 2, out  # incomplete, even though answer_relevancy fails on the rows judged
    out = flat(out)
    # The overall verdict first (issue 35 item 9: '| head -1' is the verdict), why it is not gated under it.
    assert out.startswith(
        "GATE INCOMPLETE (2 metrics): faithfulness >= 0.8 INCOMPLETE · answer_relevancy >= 0.8 INCOMPLETE "
        "not gated: run r is interrupted: 2 rows judged; the input's size was not recorded; resume it with "
        "'assay run --resume r', or pass --allow-partial"
    ), out
    code, out = invoke("r", "--store", str(store), "-m", "faithfulness", "-m", "answer_relevancy", "--allow-partial")
    assert code == 1, out  # on the rows judged, answer_relevancy fails
    assert "GATE FAIL (2 metrics on a partial run)" in out


# --- 7. output a person can read (issue 63) ------------------------------------------------
#
# A passing gate printed its verdict, a samples line, a table of "statements needed" and four
# notes on how P(pass) was modelled; a metric unscored in every sample said "observed fail".


def lines_of(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip()]


def test_a_stable_pass_says_its_verdict_and_how_sure_it_is_and_nothing_else(tmp_path: Path) -> None:
    from first_hour import make_run

    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [{"faithfulness": [0.75, 0.75, 0.75]}, {"faithfulness": [1.0, 1.0, 1.0]}] * 3)
    code, out = invoke("r", "--store", str(store), "--min", "0.8")
    assert code == 0, out
    shown = lines_of(out)
    assert shown[0].startswith("GATE PASS: faithfulness >= 0.8 on the run mean · mean 0.875"), out
    assert "on 6 scored samples · run r" in shown[0] and "observed" not in shown[0]
    assert shown[1].startswith("P(pass) 1.0000 (from 3 repeats; the gate passes on 3/3 of them)"), out
    assert shown[2].startswith("not measured for this judge") and len(shown) == 3, out  # the trust figure
    assert "statements needed" not in out and "note:" not in out and "judge noise" not in out
    # --explain says how it was decided: the advice, the repeats' noise, every note.
    code, explained = invoke("r", "--store", str(store), "--min", "0.8", "--explain")
    assert code == 0, explained
    assert lines_of(explained)[:2] == shown[:2]
    text = flat(explained)
    assert "statements needed for a stable 0.8 gate" in text and "judge noise from repeats: flip rate" in text
    assert "note: P(pass) of the run mean: 10,000 simulated runs" in text
    assert "samples 6 (scored 6) · unscored results 0/18" in text


def test_the_statement_advice_is_shown_when_the_judges_noise_could_change_the_outcome(tmp_path: Path) -> None:
    from first_hour import make_run

    store = tmp_path / "runs.sqlite"
    # One run of 2 samples of 4 statements at 0.75 and 1.0: the mean 0.875 passes 0.8, but one flipped
    # verdict of 8 sinks it: the estimated flip probability is far above --max-flake.
    make_run(store, "single", [{"faithfulness": 0.75}, {"faithfulness": 1.0}])
    code, out = invoke("single", "--store", str(store), "--min", "0.8")
    assert code == 0, out
    text = flat(out)
    flip = float(text.split("estimated flip probability ")[1].split(":")[0])
    assert flip > 0.01
    assert "statements needed for a stable 0.8 gate" in text  # it bears on this verdict
    assert "note: a single run decides" not in text  # how it was computed: --explain
    # Far from the mark, no flip is likely to change it: the advice waits for --explain.
    make_run(store, "far", [{"faithfulness": (1.0, 20)}] * 10)
    code, out = invoke("far", "--store", str(store), "--min", "0.5")
    assert code == 0, out
    assert "statements needed" not in out and len(lines_of(out)) == 3, out


def test_a_metric_unscored_in_every_sample_says_unscored_and_why_never_observed_fail(tmp_path: Path) -> None:
    from assay.report._header import gate_line
    from first_hour import make_run

    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [{"faithfulness": None, "answer_relevancy": 1.0}] * 3)
    code, out = invoke("r", "--store", str(store), "-m", "faithfulness")
    assert code == 2, out
    text = flat(out)
    assert text.startswith(
        "GATE UNSCORED: faithfulness >= 0.8 on the run mean · run r · nothing scored: 3 of 3 results unscored "
        "(parse_failure 3)"
    ), out
    assert "observed" not in text and "mean —" not in text and "flip" not in text
    assert "unscored: line 1 s1: parse_failure: the judge rambled" in text
    # Beside a metric that passes: the overall verdict is UNSCORED (exit 2), and no metric "observed fail".
    summary = tmp_path / "summary.md"
    code, out = invoke("r", "--store", str(store), "-m", "faithfulness", "-m", "answer_relevancy=0.5",
                       "--summary-md", str(summary))  # fmt: skip
    assert code == 2, out
    text = flat(out)
    assert text.startswith("GATE UNSCORED (2 metrics): faithfulness >= 0.8 UNSCORED · answer_relevancy >= 0.5 PASS")
    assert "observed fail" not in text and "nothing scored: 3 of 3 results unscored (parse_failure 3)" in text
    # The job summary and the report's verdict line say the same.
    markdown = summary.read_text()
    assert "| ⚠️ unscored | nothing scored |" in markdown and "**nothing scored:** 3 of 3 results unscored" in markdown
    assert "observed** fail" not in markdown and "| fail |" not in markdown
    with RunStore(store) as opened:
        report = analyze_repeats(list(opened.records("r")), "faithfulness")
        coverage = opened.coverage("r")
    result = evaluate_gate(report, GatePolicy(), coverage)
    assert (result.outcome, result.observed, result.nothing_scored) == ("unscored", None, True)
    assert "observed nothing: no sample scored" in gate_line(result) and "observed fail" not in gate_line(result)
    # An untrusted judge spoils no verdict where nothing was scored: still unscored, its reason kept.
    untrusted = evaluate_gate(report, GatePolicy(), coverage, untrusted="its CI reaches chance")
    assert (untrusted.outcome, untrusted.untrusted) == ("unscored", "its CI reaches chance")


def test_the_job_summary_folds_how_the_verdict_was_decided_and_keeps_what_bears_on_it(tmp_path: Path) -> None:
    from first_hour import make_run

    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [{"faithfulness": 0.75}, {"faithfulness": 1.0}], bad_rows=1)
    summary = tmp_path / "summary.md"
    code, out = invoke("r", "--store", str(store), "--max-invalid-rows", "1", "--summary-md", str(summary))
    assert code == 0, out
    text = flat(out)
    assert "note: 1 input row was invalid (line 100) and not judged: tolerated by --max-invalid-rows 1" in text, out
    markdown = summary.read_text()
    before, folded = markdown.split("<details><summary>How the verdict was decided</summary>")
    assert "tolerated by \\-\\-max\\-invalid\\-rows 1" in before
    assert "simulated runs" in folded and "simulated runs" not in before
    assert "</details>" in folded


@pytest.mark.parametrize("answered", [("judge-a", "judge-b"), ("judge-a", "judge-a", "proxy-fallback")])
def test_scores_that_mix_judges_are_not_gated_unless_a_cascade_planned_them(answered: tuple[str, ...]) -> None:
    def every_statement_holds(messages: Sequence[ChatMessage], request: object) -> str:
        return json.dumps({"verdict": 1, "reason": "stated"})

    data = [Sample(id=f"s{i}", answer=f"Box {i} is red.", contexts=(f"We painted box {i} red.",)) for i in range(6)]
    result = evaluate(
        data, [Faithfulness(decomposer="sentences")], FunctionJudge(every_statement_holds), progress="none"
    )
    records = [r.to_record() for r in result.results]
    calls = [c for r in records for c in r["scores"]["faithfulness"]["calls"]]
    assert calls, "each sample made a judge call"
    for i, call in enumerate(calls):  # a proxy answering some calls with another model
        call["model"] = answered[i % len(answered)]
    report = analyze_repeats(records, "faithfulness")
    mixed = evaluate_gate(report, GatePolicy(threshold=0.5))
    assert mixed.outcome == "untrusted" and mixed.untrusted is not None
    assert f"answered by {len(set(answered))} models" in mixed.untrusted
    allowed = evaluate_gate(report, GatePolicy(threshold=0.5, allow_untrusted_judge=True))
    assert allowed.outcome == "pass"
    assert evaluate_gate(report, GatePolicy(threshold=0.5), cascade=True).outcome == "pass"
    for call in calls:
        call["model"] = answered[0]
    assert evaluate_gate(analyze_repeats(records, "faithfulness"), GatePolicy(threshold=0.5)).outcome == "pass"
