"""An error is never a tolerated unscored result (issue 56, item 2).

A run interrupted under ``--rpm`` stored three rows as ``metric_error — RuntimeError: Lock
is not acquired``; ``--resume`` did not judge them again, the run became ``finished`` with
3 of 40 unscored, under the tolerated share, and ``assay gate`` printed GATE PASS. An error
raised inside assay (``metric_error``) or by the transport (``judge_error``) is not what the
judge said of a sample: the run exits 3 naming it, the gate refuses the run (exit 2, naming
the lines) whatever ``--max-unscored`` and ``--allow-partial`` say, and a resume judges
those rows again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay import Sample, evaluate
from assay.cli import _run as cli_run
from assay.cli import app
from assay.metrics import Faithfulness
from assay.models import FunctionJudge
from assay.run import RunStore

pytest.importorskip("openai")
from assay.testing import FakeOpenAIServer
from faithfulness_fakes import faithfulness_answer

N = 40


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _rows() -> str:
    return "".join(
        json.dumps({"id": f"r{i}", "question": "Colour?", "answer": f"Row {i}. The sky is blue.", "contexts": ["x"]})
        + "\n"
        for i in range(N)
    )


BROKEN = {"Row 3.", "Row 17.", "Row 30."}
_STATE = {"broken": True}


def _server_failing_three_rows(body: dict[str, Any]) -> str:
    user = body["messages"][-1]["content"]
    if _STATE["broken"] and any(row in user for row in BROKEN):
        raise RuntimeError("upstream fell over")  # the connection drops, every attempt
    return faithfulness_answer(user)


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "300"})
    return result.exit_code, " ".join(result.output.split())


def test_transport_errors_exit_3_refuse_the_gate_and_are_judged_again_on_resume(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(_rows())
    with FakeOpenAIServer(_server_failing_three_rows) as server:
        judge = ("--judge", "openai:fake", "--base-url", server.base_url, "--retries", "1", "--no-cache")
        code, out = _cli("run", "data.jsonl", *judge, "--progress", "none")
        # 3 of 40 unscored is under the tolerated tenth: before, this exited 0 and the gate passed
        assert code == 3, out
        assert "3 results are errors, not verdicts (first: faithfulness: judge_error — " in out
        assert "assay run --resume" in out
        with RunStore(".assay/runs.sqlite") as store:
            (info,) = store.runs()
            assert info.status == "finished" and info.n_results == N
            assert len(store.finished(info.run_id)) == N - 3  # the three are left for a resume
        for extra in ((), ("--max-unscored", "0.5"), ("--allow-partial",)):
            code, out = _cli("gate", info.run_id, "-m", "faithfulness=0.3", *extra)
            assert code == 2, (extra, out)
            assert "GATE INCOMPLETE" in out
            assert "3 results of faithfulness are errors, not verdicts" in out
            for line in (4, 18, 31):  # the rows' lines in the file
                assert f"line {line}: judge_error" in out
            assert f"assay run --resume {info.run_id}" in out
        _STATE["broken"] = False  # the server is mended; the run resumes at the URL it was judged at
        served = server.calls
        try:
            code, out = _cli("run", "--resume", info.run_id, "--progress", "none")
        finally:
            _STATE["broken"] = True
        assert code == 0, out
        assert 0 < server.calls - served <= 3 * 4, server.calls - served  # only the three rows, not the other 37
    code, out = _cli("gate", info.run_id, "-m", "faithfulness=0.3")
    assert code == 0 and "GATE PASS" in out, out
    with RunStore(".assay/runs.sqlite") as store:
        values = [r["scores"]["faithfulness"]["value"] for r in store.records(info.run_id)]
    assert values == [0.5] * N


def test_a_metric_that_raises_is_an_error_in_the_python_gate_too(tmp_path: Path) -> None:
    def judge(messages: list[dict[str, str]], _schema: Any) -> str:
        user = messages[-1]["content"]
        if "Row 2." in user:
            raise ValueError("a bug in a plugin")  # not a JudgeError: the metric raises, metric_error
        return faithfulness_answer(user)

    samples = [Sample(id=f"s{i}", answer=f"Row {i}. The sky is blue.", contexts=("x",)) for i in range(20)]
    store = tmp_path / "runs.sqlite"
    result = evaluate(samples, [Faithfulness(strategy="batch")], FunctionJudge(judge), progress="none", store=store)
    reasons = [r.scores["faithfulness"].unscored_reason for r in result.results]
    assert reasons.count("metric_error") == 1
    gate = result.gate("faithfulness", threshold=0.3)
    assert gate.outcome == "incomplete"
    assert any("1 result of faithfulness is an error, not verdicts" in p and "line 3" in p for p in gate.partial)
    assert "ValueError: a bug in a plugin" in " ".join(gate.partial)
    assert gate.unscored_share == 0.0  # not spent from the unscored budget: refused instead


def test_resume_refuses_another_base_url_and_keeps_the_runs_throughput(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a walkthrough: --base-url on --resume was silently replaced by the stored one; --rpm was dropped."""
    (tmp_path / "data.jsonl").write_text(_rows())
    with FakeOpenAIServer(_server_failing_three_rows) as server:
        judge = ("--judge", "openai:fake", "--base-url", server.base_url, "--retries", "0", "--no-cache")
        code, out = _cli("run", "data.jsonl", *judge, "--rpm", "6000", "--tpm", "900000", "--progress", "none")
        assert code == 3, out
        with RunStore(".assay/runs.sqlite") as store:
            (info,) = store.runs()
        with FakeOpenAIServer(lambda body: faithfulness_answer(body["messages"][-1]["content"])) as other:
            code, out = _cli("run", "--resume", info.run_id, "--base-url", other.base_url, "--progress", "none")
            assert code == 1, out
            assert f"was judged at {server.base_url}" in out and "--resume keeps the run's judge" in out
            assert other.calls == 0
        # the gate line counts errors apart from the unscored budget
        code, out = _cli("gate", info.run_id, "-m", "faithfulness=0.3")
        assert code == 2 and "unscored results 0/40 = 0.0000 (max 0.1) · 3 errors (not verdicts)" in out, out
        assert "not measured for this judge" in out  # the trust note, in the console as in the job summary
        # a resume without --rpm keeps the run's own budgets
        seen: list[Any] = []
        real = cli_run.plan_run

        def spy(*args: Any, **kwargs: Any) -> Any:  # the plan the command line builds, which the engine carries out
            seen.append(kwargs["limits"])
            return real(*args, **kwargs)

        monkeypatch.setattr(cli_run, "plan_run", spy)
        _STATE["broken"] = False
        try:
            code, out = _cli("run", "--resume", info.run_id, "--progress", "none")
        finally:
            _STATE["broken"] = True
        assert code == 0, out
        assert (seen[0].rpm, seen[0].tpm) == (6000, 900000)
        code, out = _cli("run", "--resume", info.run_id, "--rpm", "300", "--progress", "none")
        assert seen[-1].rpm == 300  # given again: it wins (throughput changes no result)


def test_a_cancelled_call_is_not_counted_but_answered_and_failed_ones_are() -> None:
    """Under --rpm most calls an interrupt cancels never reached the judge: they are not 'spent'."""
    import asyncio

    from assay.errors import JudgeError
    from assay.models import ScriptedJudge
    from assay.models._stack import CountedJudge

    counted: list[int] = []
    judge = CountedJudge(ScriptedJudge(["yes", JudgeError("HTTP 500")]), lambda cached: counted.append(1))

    async def main() -> None:
        await judge.generate([{"role": "user", "content": "a"}])
        with pytest.raises(JudgeError):
            await judge.generate([{"role": "user", "content": "b"}])
        waiting = asyncio.ensure_future(asyncio.sleep(10))
        stuck = CountedJudge(judge, lambda cached: counted.append(1))
        stuck.inner.generate = lambda *a, **k: waiting  # type: ignore[method-assign]
        task = asyncio.ensure_future(stuck.generate([{"role": "user", "content": "c"}]))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert len(counted) == 2


def test_calls_spent_on_stopped_samples_add_up_over_interrupts(tmp_path: Path) -> None:
    from assay.run import RunSpec

    with RunStore(tmp_path / "runs.sqlite") as store:
        store.create(RunSpec(run_id="r", judge="x", judge_model="x"))
        store.add_unstored_calls("r", 3)
        store.add_unstored_calls("r", 4)  # a second interrupt of the same run
        assert store.info("r").summary == {"_unstored_calls": 7}
