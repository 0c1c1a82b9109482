"""Runs that cannot lie: resume checks its data and options, summaries cover every stored
record, exit codes say when too little was judged, and the library owns the run.

Each test names the defect it pins (issue 13); each failed on the code before the fix.
"""

from __future__ import annotations

import json
import math
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay import Faithfulness, Sample, evaluate
from assay.cli import app
from assay.metrics import BinaryJudgeGrader
from assay.models import FunctionJudge
from assay.report import report_result
from assay.run import ResumeError, RunStore, summarize_results
from assay.testing import FakeOpenAIServer
from interrupting import cancel_after

pytest.importorskip("openai")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def rows(n: int, *, start: int = 0) -> str:
    return "".join(
        json.dumps(
            {
                "id": f"r{i}",
                "question": "Colour?",
                # Row i has i % 3 unsupported sentences: scores differ from row to row.
                "answer": " ".join(["The sky is blue."] + [f"Row {i} fact {k}." for k in range(i % 3)]),
                "contexts": ["The sky is blue."],
            }
        )
        + "\n"
        for i in range(start, start + n)
    )


def sentence_judge(body: dict[str, object], *, supported: str = "sky") -> str:
    """Statements are the answer's sentences; a statement is supported when it names ``supported``."""
    user = body["messages"][1]["content"]  # type: ignore[index]
    if "<sentence>" in user:  # the anchored decomposer's rewrite of one sentence: the sentence itself
        sentence = user.split("<sentence>\n")[1].split("\n</sentence>")[0]
        return json.dumps({"statements": [sentence]})
    if "<answer>" in user:
        answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
        return json.dumps({"statements": [s.strip() + "." for s in answer.split(".") if s.strip()]})
    items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    return json.dumps(
        {
            "verdicts": [
                {"statement": t, "reason": "r", "verdict": int(supported in t)}
                for t in (i.split("] ", 1)[1] for i in items)
            ]
        }
    )


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.output


def only_run_id() -> str:
    (info,) = RunStore(".assay/runs.sqlite").runs()
    return info.run_id


def cut_short(run_id: str, keep: int) -> None:
    """Make a stored run look interrupted after ``keep`` samples (what Ctrl-C leaves behind)."""
    with sqlite3.connect(".assay/runs.sqlite") as db:
        db.execute("DELETE FROM results WHERE run_id = ? AND line > ?", (run_id, keep))
        db.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = ?", (run_id,))


def test_resume_refuses_data_that_changed_instead_of_mixing_rows(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(rows(4))
    with FakeOpenAIServer(sentence_judge) as server:
        base = ("--judge", "openai:m", "--base-url", server.base_url)
        code, out = invoke("run", "data.jsonl", *base, "--concurrency", "1")
        assert code == 0, out
        run_id = only_run_id()
        cut_short(run_id, keep=2)
        data.write_text(rows(1, start=99) + rows(4))  # a new first line: every line number shifts
        code, out = invoke("run", "--resume", run_id, "--base-url", server.base_url)
    assert code == 1, out
    assert "data changed" in out and run_id in out
    store = RunStore(".assay/runs.sqlite")
    ids = [r["id"] for r in store.records(run_id)]
    assert ids == ["r0", "r1"]  # nothing judged against the shifted file, nothing stored twice


def test_resume_of_a_no_cache_run_never_reads_the_cache_another_server_filled(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(rows(4))
    with (
        FakeOpenAIServer(sentence_judge) as right,
        FakeOpenAIServer(lambda body: sentence_judge(body, supported="nothing-matches")) as other,
    ):
        code, out = invoke("run", "data.jsonl", "--judge", "openai:m", "--base-url", right.base_url, "--no-cache")
        assert code == 0, out
        run_id = only_run_id()
        full = RunStore(".assay/runs.sqlite").summary(run_id).metrics["faithfulness"].mean
        cut_short(run_id, keep=1)
        # Another server, same model name, fills the cache with different answers.
        code, out = invoke("run", "data.jsonl", "--judge", "openai:m", "--base-url", other.base_url)
        assert code == 0, out
        calls_before = len(right.requests)
        code, out = invoke("run", "--resume", run_id)
        assert code == 0, out
        assert len(right.requests) > calls_before  # the resumed part was judged by its own server
    store = RunStore(".assay/runs.sqlite")
    records = list(store.records(run_id))
    assert len(records) == 4
    assert not any(c["cached"] for r in records for s in r["scores"].values() for c in s["calls"])
    assert store.summary(run_id).metrics["faithfulness"].mean == pytest.approx(full)


def test_resume_refuses_options_that_would_change_results(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(rows(2))
    with FakeOpenAIServer(sentence_judge) as server:
        code, out = invoke("run", "data.jsonl", "--judge", "openai:m", "--base-url", server.base_url, "--no-cache")
        run_id = only_run_id()
        cut_short(run_id, keep=1)
        code, out = invoke("run", "--resume", run_id, "--cache", "--repeats", "2")
    assert code == 1, out
    assert "--repeats" in out and "--cache" in out


def test_summary_after_a_resume_covers_every_stored_record(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(rows(9))
    with FakeOpenAIServer(sentence_judge) as server:
        base = ("--judge", "openai:m", "--base-url", server.base_url, "--no-cache")
        code, out = invoke("run", "data.jsonl", *base)
        assert code == 0, out
        (uninterrupted,) = RunStore(".assay/runs.sqlite").runs()
        code, out = invoke("run", "data.jsonl", *base)
        resumed = next(r.run_id for r in RunStore(".assay/runs.sqlite").runs() if r.run_id != uninterrupted.run_id)
        cut_short(resumed, keep=4)
        code, out = invoke("run", "--resume", resumed)
        assert code == 0, out
        assert "9 results" in out  # the terminal summary covers the whole run, not the 5 judged now
        code, out = invoke("run", "--resume", resumed)  # resuming a finished run judges nothing...
        assert code == 0, out
    store = RunStore(".assay/runs.sqlite")
    summary = store.summary(resumed)
    whole = uninterrupted.summary
    assert whole is not None
    s = summary.metrics["faithfulness"]
    assert (s.n_scored, s.mean) == (whole["faithfulness"]["n_scored"], pytest.approx(whole["faithfulness"]["mean"]))
    # ...and its summary is still a function of every stored record.
    recomputed = summarize_results(store.results(resumed), ["faithfulness"]).metrics["faithfulness"]
    assert recomputed == s
    assert store.info(resumed).summary == summary.to_json()
    assert "9 results" in out


def unauthorized(tmp_path: Path, server: FakeOpenAIServer) -> tuple[int, str]:
    return invoke("run", "data.jsonl", "--judge", "openai:m", "--base-url", server.base_url, "--retries", "0")


def test_exit_3_when_every_call_is_refused_with_401(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data.jsonl").write_text(rows(3))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-0000000000")
    with FakeOpenAIServer(sentence_judge, require_api_key="sk-right-key-1111111111") as server:
        code, out = unauthorized(tmp_path, server)
    assert code == 3, out
    assert "nothing was scored" in out


def test_exit_3_when_most_samples_are_unscored_and_0_within_the_allowance(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(rows(10))
    broken = {"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"}

    def judge(body: dict[str, object]) -> str:
        user = body["messages"][1]["content"]  # type: ignore[index]
        if any(f"Row {i[1:]} " in user for i in broken):  # every call about the row: decomposition or verdicts
            return "I cannot help with that."
        return sentence_judge(body)

    with FakeOpenAIServer(judge) as server:
        code, out = invoke("run", "data.jsonl", "--judge", "openai:m", "--base-url", server.base_url, "--reasks", "0")
        assert code == 3, out
        assert "above --max-unscored" in out
        code, out = invoke(
            "run", "data.jsonl", "--judge", "openai:m", "--base-url", server.base_url, "--max-unscored", "0.9"
        )
        assert code == 0, out


def test_empty_input_is_an_error_not_a_success(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n\n")
    code, out = invoke("run", "empty.jsonl", "--judge", "openai:m", "--base-url", "http://127.0.0.1:9/v1")
    assert code == 1, out
    assert "no rows" in out


@pytest.mark.parametrize("args", [["--concurrency", "0"], ["--no-such-option"], ["--repeats", "x"]])
def test_usage_errors_exit_1(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "data.jsonl").write_text(rows(1))
    done = subprocess.run(
        [sys.executable, "-m", "assay", "run", "data.jsonl", *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert "Usage" in done.stderr or "Error" in done.stderr


def test_gate_usage_errors_keep_the_gates_own_code(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "assay", "gate"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr


# -- the library owns the run ---------------------------------------------------------------


def supported_when_sky(messages: list[dict[str, str]], schema: type | None) -> str:
    user = messages[-1]["content"]
    items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    return json.dumps(
        {
            "verdicts": [
                {"statement": t, "reason": "r", "verdict": int("sky" in t)}
                for t in (i.split("] ", 1)[1] for i in items)
            ]
        }
    )


def records(n: int) -> list[dict[str, object]]:
    return [json.loads(line) for line in rows(n).splitlines()]


def metric() -> Faithfulness:
    return Faithfulness(strategy="batch", decomposer="sentences")


def test_a_dataframe_evaluated_into_a_store_reports_and_gates_from_the_cli(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(records(6))
    result = evaluate(df, metric(), FunctionJudge(supported_when_sky), store=tmp_path / "runs.sqlite", progress=False)
    assert result.run_id is not None
    frame = result.to_pandas()
    assert {"question", "answer", "value"} <= set(frame.columns)
    assert list(frame["answer"]) == list(df["answer"])
    code, out = invoke("report", result.run_id, "--store", str(tmp_path / "runs.sqlite"), "-o", "r.html")
    assert code == 0, out
    assert (tmp_path / "r.html").read_text().count("r5") >= 1
    code, out = invoke(
        "gate", "--latest", "--store", str(tmp_path / "runs.sqlite"), "--metric", "faithfulness", "--min", "0.3"
    )
    assert code == 0, out
    assert result.run_id in out
    assert report_result(result, tmp_path / "again.html").exists()


def test_library_resume_continues_a_stored_run_and_refuses_other_data(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    data = records(5)
    first = evaluate(data, metric(), FunctionJudge(supported_when_sky), store=store, progress=False)
    assert first.run_id is not None
    cut_short_at(store, first.run_id, keep=2)
    calls: list[int] = []

    def counting(messages: list[dict[str, str]], schema: type | None) -> str:
        calls.append(1)
        return supported_when_sky(messages, schema)

    resumed = evaluate(data, metric(), FunctionJudge(counting), store=store, resume=first.run_id, progress=False)
    assert resumed.run_id == first.run_id
    assert len(calls) == 3  # only the three samples not yet stored
    assert resumed.summary()["faithfulness"].n_scored == 5
    assert resumed.summary() == first.summary()
    with pytest.raises(ResumeError, match="data changed"):
        evaluate(data[::-1], metric(), FunctionJudge(supported_when_sky), store=store, resume=first.run_id)
    with pytest.raises(ResumeError, match="metrics"):
        evaluate(
            data, Faithfulness(strategy="batch"), FunctionJudge(supported_when_sky), store=store, resume=first.run_id
        )


def cut_short_at(store: Path, run_id: str, keep: int) -> None:
    with sqlite3.connect(store) as db:
        db.execute("DELETE FROM results WHERE run_id = ? AND line > ?", (run_id, keep))


def test_a_result_that_cannot_be_stored_is_a_row_error_and_the_run_goes_on(tmp_path: Path) -> None:
    data = records(3)
    data[1]["answer"] = "Fact \ud800 sky."  # a lone surrogate: SQLite cannot store it
    result = evaluate(
        [Sample.model_validate(d) for d in data],
        metric(),
        FunctionJudge(supported_when_sky),
        store=tmp_path / "runs.sqlite",
        progress=False,
    )
    assert result.run_id is not None
    store = RunStore(tmp_path / "runs.sqlite")
    assert [r["id"] for r in store.records(result.run_id)] == ["r0", "r2"]
    ((line, message),) = store.row_errors(result.run_id)
    assert line == 2 and "not valid Unicode" in message
    assert store.info(result.run_id).status == "finished"


def test_grader_na_is_a_verdict_not_an_unscored_failure_for_the_exit_code(tmp_path: Path) -> None:
    from assay.cli._run import exit_code

    grader = BinaryJudgeGrader("Polite.")
    judge = FunctionJudge(lambda messages, schema: json.dumps({"reasoning": "n/a", "label": "NA"}))
    result = evaluate(records(3), grader, judge, store=tmp_path / "runs.sqlite", progress=False)
    summary = result.run_summary()
    assert summary.metrics[grader.name].n_unscored == 3
    assert math.isnan(summary.unscored_share)
    assert exit_code(summary, 0.1)[0] == 3  # nothing was scored at all: still not a success


def test_duplicate_ids_in_a_list_of_samples_are_row_errors_naming_the_first_use(tmp_path: Path) -> None:
    data = records(3)
    data[2]["id"] = "r0"
    as_samples = [Sample.model_validate(d) for d in data]
    for given in (data, as_samples):
        result = evaluate(given, metric(), FunctionJudge(supported_when_sky), progress=False)
        assert [r.sample.id for r in result.results] == ["r0", "r1"]
        (error,) = result.errors
        assert error.line == 3 and "'r0' already used" in str(error) and "1" in str(error)


def test_a_run_cancelled_mid_way_is_interrupted_even_if_closing_the_judge_fails(tmp_path: Path) -> None:
    """Ctrl-C once left a run 'failed' (CI flake in test_ctrl_c_keeps_finished_samples...).

    asyncio.run answers a KeyboardInterrupt by cancelling the run's task; the clean-up
    that follows (closing the judge's HTTP client mid-request) may raise an error of its
    own, which replaced the cancellation, so the store said "failed" while the CLI said
    "interrupted, resume with ...". A run being cancelled is interrupted, whatever its
    clean-up raises.
    """
    from assay import aevaluate

    class ClosingBadly(FunctionJudge):
        async def aclose(self) -> None:
            raise RuntimeError("client closed while a request was in flight")

    store = tmp_path / "runs.sqlite"
    # cancel_after expects the cancellation itself, not the clean-up's error
    cancel_after(
        3,
        supported_when_sky,
        lambda slow: aevaluate(records(20), metric(), ClosingBadly(slow, concurrency=1), store=store, progress=False),
    )
    (info,) = RunStore(store).runs()
    assert info.status == "interrupted" and 1 <= info.n_results < 20


# --- progress moves with every judge call -------------------------------------------------------


class _Recorder:
    """A progress reporter that keeps what the runner told it."""

    def __init__(self) -> None:
        self.events: list[tuple[int, str]] = []

    def start(self, description: str, total: int | None, done: int) -> None:
        pass

    def advance(self, n: int, stats: str) -> None:
        self.events.append((n, stats))

    def note(self, message: str) -> None:
        pass

    def bytes(self, description: str, done: int, total: int) -> None:
        pass

    def close(self) -> None:
        pass


def test_the_progress_line_moves_with_each_judge_call_not_only_each_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    # An agent trace takes ~7 judge calls and minutes on two cores: the progress said nothing
    # until the whole sample was done.
    import assay.run._evaluate as runner

    recorder = _Recorder()
    monkeypatch.setattr(runner, "make_reporter", lambda progress: recorder)
    data = [
        {"id": f"a{i}", "question": "Colour?", "answer": "Grass is green. Snow is white.", "contexts": ["Sky."]}
        for i in range(2)
    ]
    metric = Faithfulness(strategy="per_statement", decomposer="sentences")
    result = evaluate(data, metric, FunctionJudge(supported_when_sky_one), progress="plain")
    calls = sum(len(s.all_calls) for r in result.results for s in r.scores.values())
    assert calls == 4
    first_sample = next(i for i, (n, _) in enumerate(recorder.events) if n == 1)
    assert first_sample >= 2 and all(n == 0 for n, _ in recorder.events[:first_sample])
    assert "1 judge call ·" in recorder.events[0][1] and "2 judge calls" in recorder.events[1][1]
    assert f"{calls} judge calls" in recorder.events[-1][1]


@pytest.mark.parametrize("kept", [True, False], ids=["scores kept whole", "answers alone"])
def test_the_progress_line_counts_answers_from_the_cache_apart_from_calls_to_the_judge(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kept: bool
) -> None:
    # A re-run answered by the cache said "4 judge calls" as it went, then "judge calls 0 (cached 4)"
    import assay.run._evaluate as runner

    data = [
        {"id": f"a{i}", "question": "Colour?", "answer": "Grass is green. Snow is white.", "contexts": [f"Sky {i}."]}
        for i in range(2)
    ]
    metric = Faithfulness(strategy="per_statement", decomposer="sentences")
    judge = FunctionJudge(supported_when_sky_one)
    path = tmp_path / "cache.sqlite"
    lines = []
    for rows in (data[:1], data):  # the second run: one row answered by the cache, one by the judge
        recorder = _Recorder()
        monkeypatch.setattr(runner, "make_reporter", lambda progress, recorder=recorder: recorder)
        evaluate(rows, metric, judge, cache=path, progress="plain")
        lines.append(recorder.events[-1][1])
        if not kept:
            with sqlite3.connect(path) as db:
                db.execute("DELETE FROM scores")
    assert "2 judge calls ·" in lines[0] and "cached" not in lines[0]
    assert "2 judge calls (2 cached) ·" in lines[1], lines[1]
    recorder = _Recorder()
    monkeypatch.setattr(runner, "make_reporter", lambda progress: recorder)
    again = evaluate(data, metric, judge, cache=path, progress="plain")
    calls = [c for r in again.results for score in r.scores.values() for c in score.all_calls]
    assert len(calls) == 4 and all(c.cached for c in calls)
    assert "0 judge calls (4 cached) ·" in recorder.events[-1][1], recorder.events[-1][1]


def supported_when_sky_one(messages: list[dict[str, str]], schema: type | None) -> str:
    statement = messages[-1]["content"].split("<statement>\n")[1].split("\n</statement>")[0]
    return json.dumps({"reason": "r", "verdict": int("sky" in statement)})


def test_the_progress_cost_is_unknown_before_the_first_reply_of_an_unpriced_judge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An invalid first row moves the line before any judge call answered: it said $0.0000
    # for a judge whose price nobody knows (issue 35 item 12).
    import assay.run._evaluate as runner

    data = [
        {"id": "bad", "question": "Colour?", "answer": ["not", "text"], "contexts": ["Sky."]},
        {"id": "a", "question": "Colour?", "answer": "The sky is blue.", "contexts": ["Sky."]},
    ]
    metric = Faithfulness(strategy="per_statement", decomposer="sentences")
    for name, before in (("my-own-model", "unknown"), ("function", "$0.0000")):
        recorder = _Recorder()
        monkeypatch.setattr(runner, "make_reporter", lambda progress, recorder=recorder: recorder)
        evaluate(data, metric, FunctionJudge(supported_when_sky_one, name=name), progress="plain")
        first = recorder.events[0][1]
        assert "scored 0 " in first and "judge call" not in first and "· 0 tok ·" in first, recorder.events
        assert first.endswith(f"· {before}"), first
        if before == "unknown":
            assert all("$" not in stats for _, stats in recorder.events), recorder.events


def test_plain_progress_prints_a_line_every_interval_while_nothing_finishes() -> None:
    # With the local judge a log showed nothing between 0s and 1m03s (issue 35 item 13).
    import io
    import time

    from rich.console import Console

    from assay.run._progress import make_reporter

    stream = io.StringIO()
    reporter = make_reporter("plain", Console(file=stream), interval_s=0.05)
    reporter.start("judging", 3, 0)
    time.sleep(0.4)
    reporter.advance(1, "scored 1")
    time.sleep(0.2)
    reporter.close()
    lines = stream.getvalue().splitlines()
    waiting = [line for line in lines if line.startswith("judging: 0/3")]
    assert len(waiting) >= 5, lines  # the first line and a heartbeat every 0.05 s, with no sample finished
    assert sum(line.startswith("judging: 1/3") for line in lines) >= 3, lines
    time.sleep(0.15)
    assert stream.getvalue().splitlines() == lines  # closed: the heartbeat stopped


def test_a_slow_judge_still_gets_a_plain_line_every_interval(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import time

    import assay.run._progress as progress

    monkeypatch.setattr(progress, "PLAIN_INTERVAL_S", 0.1)

    def slow(messages: list[dict[str, str]], schema: type | None) -> str:
        time.sleep(0.8)  # blocks the event loop, as an in-process model does
        return supported_when_sky_one(messages, schema)

    data = [{"id": "a", "question": "Colour?", "answer": "The sky is blue.", "contexts": ["Sky."]}]
    metric = Faithfulness(strategy="per_statement", decomposer="sentences")
    evaluate(data, metric, FunctionJudge(slow), progress="plain")
    lines = capsys.readouterr().err.splitlines()
    waiting = [line for line in lines if line.startswith("judging: 0/1")]
    assert len(waiting) >= 4, lines  # the call takes 0.8 s: a line every 0.1 s while it runs
    assert lines[-1].startswith("judging: 1/1 (100%)"), lines


def test_a_counted_judge_counts_scored_choices_and_keeps_exactly_the_inner_capabilities() -> None:
    import asyncio

    from assay.models import ChoiceScorer
    from assay.models._stack import CountedJudge

    class Scorer(FunctionJudge):
        async def choice_probabilities(self, messages: Any, *, prefix: str, choices: Any, config: Any = None) -> Any:
            return {c: 1 / len(choices) for c in choices}

    seen: list[int] = []
    plain = CountedJudge(FunctionJudge(lambda m, s: "{}"), lambda cached: seen.append(1))
    assert not isinstance(plain, ChoiceScorer)
    scorer = CountedJudge(Scorer(lambda m, s: "{}"), lambda cached: seen.append(1))
    assert isinstance(scorer, ChoiceScorer)
    asyncio.run(scorer.choice_probabilities([], prefix="", choices=["1", "0"]))
    asyncio.run(plain.generate([{"role": "user", "content": "x"}]))
    assert len(seen) == 2


def test_a_resumed_runs_progress_line_counts_the_whole_runs_calls_as_it_does_its_tokens(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # It said "2 judge calls · 4,391 tok": this session's calls beside the whole run's tokens.

    import assay.run._evaluate as runner
    from assay import aevaluate

    data = [
        {"id": f"a{i}", "question": "Colour?", "answer": "Grass is green. Snow is white.", "contexts": [f"Sky {i}."]}
        for i in range(3)
    ]
    metric = Faithfulness(strategy="per_statement", decomposer="sentences")
    store = tmp_path / "runs.sqlite"
    cancel_after(
        2,
        supported_when_sky_one,
        lambda slow: aevaluate(data, metric, FunctionJudge(slow, concurrency=1), store=store, progress=False),
    )
    with RunStore(store) as opened:
        run_id = opened.latest()
        assert opened.info(run_id).n_samples == 1
    recorder = _Recorder()
    monkeypatch.setattr(runner, "make_reporter", lambda progress: recorder)
    resumed = evaluate(
        data, metric, FunctionJudge(supported_when_sky_one), store=store, resume=run_id, progress="plain"
    )
    with RunStore(store) as opened:
        every = [c for r in opened.results(run_id) for s in r.scores.values() for c in s.all_calls]
    assert len(resumed.results) == 2 and len(every) == 6  # this session judged two of the three
    tokens = sum(c.usage.prompt_tokens + c.usage.completion_tokens for c in every)
    last = recorder.events[-1][1]
    assert "scored 3 unscored 0 · 6 judge calls ·" in last and f"{tokens:,} tok" in last, last
