"""The runner against a real loopback server that injects faults: nothing made up, nothing lost."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from assay import Faithfulness, Sample, UnscoredReason, evaluate
from assay.models import OpenAIJudge
from assay.run import JudgeCache, Limits, RunStore
from assay.testing import FakeOpenAIServer

pytest.importorskip("openai")

CONTEXT = "The sky is blue. Grass is green. Snow is white. Coal is black."
# Two calls a sample (the answer's statements, then their verdicts), so calls can be counted.
WHOLE_ANSWER = Faithfulness(decomposer="llm")
CLAIMS = ["The sky is blue.", "Grass is green.", "Snow is red.", "Coal is black.", "The sea is purple."]


def make_samples(n: int) -> list[Sample]:
    samples = []
    for i in range(n):
        claims = [CLAIMS[(i + k) % len(CLAIMS)] for k in range(1 + i % 3)]
        samples.append(
            Sample(
                id=f"s{i}",
                question=f"Sample {i}?",
                answer=" ".join(claims),
                contexts=(f"[Sample {i}] {CONTEXT}",),
            )  # unique prompts: exact call counts
        )
    return samples


def expected_value(sample: Sample) -> float:
    claims = [c for c in CLAIMS if c in (sample.answer or "")]
    return sum(c in CONTEXT for c in claims) / len(claims)


def responder(body: dict[str, Any]) -> str:
    """A deterministic judge: statements are the known claims; supported iff in the context."""
    user = body["messages"][1]["content"]  # the original prompt, also on re-asks
    if "<sentence>\n" in user:
        sentence = user.split("<sentence>\n")[1].split("\n</sentence>")[0]
        return json.dumps({"statements": [c for c in CLAIMS if c in sentence]})
    if "<answer>" in user:
        answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
        return json.dumps({"statements": [c for c in CLAIMS if c in answer]})
    statements = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    items = [s.split("] ", 1)[1] for s in statements]
    return json.dumps(
        {"verdicts": [{"statement": t, "reason": "checked", "verdict": int(t in CONTEXT)} for t in items]}
    )


def run_with(server: FakeOpenAIServer, samples: list[Sample], timeout_s: float = 0.5, **kw: Any) -> dict[str, Any]:
    judge = OpenAIJudge("fake-judge", base_url=server.base_url, timeout=5.0)
    # 12 attempts: at 30% faults, exhausting them is ~5e-7 per call (8 flaked about 1 run in 40)
    limits = Limits(concurrency=16, timeout_s=timeout_s, max_attempts=12, backoff_s=0.02)
    result = evaluate(samples, [WHOLE_ANSWER], judge, limits=limits, **kw)
    return {r.sample.id: r.scores["faithfulness"] for r in result.results}


def test_transient_faults_are_all_recovered_by_retries() -> None:
    samples = make_samples(200)
    faults = {"429": 0.06, "500": 0.06, "503": 0.06, "timeout": 0.06, "reset": 0.06}
    with FakeOpenAIServer(responder, faults=faults, seed=1, timeout_sleep_s=1.0) as server:
        scores = run_with(server, samples)
        injected = sum(server.fault_counts.values())
    assert injected > 60, "the server should have injected faults at ~30%"
    assert len(scores) == 200
    for sample in samples:
        score = scores[sample.id]
        assert score.is_scored, (sample.id, score.unscored_reason, score.detail)
        assert score.value == pytest.approx(expected_value(sample))
    assert sum(c.attempts - 1 for s in scores.values() for c in s.calls) >= injected * 0.9


@pytest.mark.reasks
def test_thirty_percent_of_every_fault_no_made_up_values_and_every_unscored_names_its_cause() -> None:
    samples = make_samples(200)
    kinds = ["429", "500", "503", "timeout", "reset", "malformed", "refusal", "truncated", "wrong_count"]
    faults = {k: 0.30 / len(kinds) for k in kinds}
    with FakeOpenAIServer(responder, faults=faults, seed=2, timeout_sleep_s=1.0) as server:
        scores = run_with(server, samples)
        counts = dict(server.fault_counts)
    assert all(counts.get(k, 0) > 0 for k in kinds), counts
    assert len(scores) == 200
    allowed = {
        UnscoredReason.REFUSAL,
        UnscoredReason.PARSE_FAILURE,
        UnscoredReason.TRUNCATED_OUTPUT,
        UnscoredReason.VERDICT_COUNT_MISMATCH,
        UnscoredReason.JUDGE_ERROR,
    }
    unscored = 0
    for sample in samples:
        score = scores[sample.id]
        if score.is_scored:
            assert score.value == pytest.approx(expected_value(sample)), sample.id
        else:
            unscored += 1
            assert score.unscored_reason in allowed and score.detail, (score.unscored_reason, score.detail)
            assert score.calls, "an unscored sample keeps the calls that led to it"
    # Re-asks rescue most bad answers; transport faults are retried: most samples are scored.
    assert 0 < unscored < 60
    reasked = [c for s in scores.values() for c in s.calls if c.purpose.endswith(".reask")]
    assert reasked, "invalid answers should have been re-asked"


def test_cached_rerun_makes_zero_calls_and_repeats_make_real_ones(tmp_path: Path) -> None:
    samples = make_samples(20)
    cache = JudgeCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(responder) as server:
        # A generous timeout: a retried call would count twice at the server.
        first = run_with(server, samples, timeout_s=30, cache=cache)
        calls_first = server.calls
        second = run_with(server, samples, timeout_s=30, cache=cache)
        assert server.calls == calls_first, "a re-run must be answered from the cache"
        assert {k: s.value for k, s in first.items()} == {k: s.value for k, s in second.items()}
        assert all(c.cached for s in second.values() for c in s.calls)
        judge = OpenAIJudge("fake-judge", base_url=server.base_url)
        evaluate(samples, [WHOLE_ANSWER], judge, cache=cache, repeats=2)
        # repeat 0 is cached; repeat 1 re-judges with its own cache key, on the same statements
        # (decomposed once: its decomposition is repeat 0's, answered from the cache)
        assert server.calls == calls_first + len(samples)
    cache.close()


def test_rpm_budget_is_respected() -> None:
    samples = make_samples(6)
    with FakeOpenAIServer(responder) as server:
        judge = OpenAIJudge("fake-judge", base_url=server.base_url)
        started = time.monotonic()
        evaluate(samples, [WHOLE_ANSWER], judge, limits=Limits(concurrency=8, rpm=240))
        elapsed = time.monotonic() - started
    # 12 calls at 4 per second, starting with a bucket of 4: at least ~2 s.
    assert server.calls == 12 and elapsed >= 1.9


def _wait_for_rows(store: Path, n: int, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if store.exists():
            try:
                with sqlite3.connect(store) as db:
                    if db.execute("SELECT COUNT(*) FROM results").fetchone()[0] >= n:
                        return
            except sqlite3.OperationalError:
                pass
        time.sleep(0.05)
    raise AssertionError(f"the run never stored {n} results")


def _assay(*args: str, cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ASSAY"))}
    return subprocess.Popen(
        [sys.executable, "-m", "assay", *args],
        cwd=cwd,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def test_sigkill_then_resume_equals_an_uninterrupted_run_and_judges_nothing_twice(tmp_path: Path) -> None:
    samples = make_samples(60)
    data = tmp_path / "data.jsonl"
    data.write_text("".join(s.model_dump_json() + "\n" for s in samples))
    sample_of = re.compile(r"Sample (\d+)")
    with FakeOpenAIServer(responder, latency_s=0.05) as server:
        common = ["--judge", "openai:fake-judge", "--base-url", server.base_url, "--no-cache", "--concurrency", "4"]
        proc = _assay("run", str(data), "--store", "killed.sqlite", *common, cwd=tmp_path)
        _wait_for_rows(tmp_path / "killed.sqlite", 15)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
        store = RunStore(tmp_path / "killed.sqlite")
        (info,) = store.runs()
        finished_before = {r["id"] for r in store.records(info.run_id)}
        assert 15 <= len(finished_before) < 60 and info.status == "running"
        requests_before = len(server.requests)

        resumed = _assay("run", "--resume", info.run_id, "--store", "killed.sqlite", cwd=tmp_path)
        out, _ = resumed.communicate(timeout=120)
        assert resumed.returncode == 0, out
        after = server.requests[requests_before:]
        judged_again = {
            f"s{m.group(1)}" for body in after for m in [sample_of.search(body["messages"][1]["content"])] if m
        }
        assert not (judged_again & finished_before), "a finished sample was judged again"

        clean = _assay("run", str(data), "--store", "clean.sqlite", *common, cwd=tmp_path)
        out, _ = clean.communicate(timeout=120)
        assert clean.returncode == 0, out

    def values(path: Path) -> dict[str, Any]:
        with RunStore(path) as s:
            (run,) = s.runs()
            assert run.status == "finished"
            return {
                r["id"]: (
                    r["scores"]["faithfulness"]["value"],
                    [v["value"] for v in r["scores"]["faithfulness"]["verdicts"]],
                )
                for r in s.records(run.run_id)
            }

    resumed_values = values(tmp_path / "killed.sqlite")
    assert len(resumed_values) == 60
    assert resumed_values == values(tmp_path / "clean.sqlite")
