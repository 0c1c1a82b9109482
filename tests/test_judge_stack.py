"""One judge stack for every caller, and a judge-call cache that never lies (issue 13).

Regression tests: a cache filled by one server must not answer for another server serving
a model of the same name; refused, truncated and invalid answers are never cached, so a
re-run against a healthy server repairs the samples they left unscored; the retrieval LLM
judge retries a 429 like every other caller.
"""

from __future__ import annotations

import ast
import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from assay import JudgeCall, Sample, evaluate
from assay.errors import ConfigError
from assay.metrics import BinaryJudgeGrader
from assay.models import (
    FunctionJudge,
    GenerateConfig,
    JudgeResponse,
    LocalJudge,
    ResilientJudge,
    ScriptedJudge,
)
from assay.models._stack import _REPEAT
from assay.models._weights import DEFAULT_MODEL_SHA256
from assay.retrieval import LLMJudge, RelevanceVerdict, RetrievalExample, evaluate_retrieval
from assay.run import EvalResult, JudgeCache, Limits, build_judge_stack, cache_key, is_cacheable
from assay.testing import FakeOpenAIServer
from evaluate_kept import evaluate_kept

SRC = Path(__file__).resolve().parent.parent / "src" / "assay"
CRITERIA = "The answer addresses the question."
FAST = Limits(timeout_s=10, max_attempts=6, backoff_s=0.01)


def samples(n: int) -> list[Sample]:
    return [Sample(id=f"s{i}", question=f"Question {i}?", answer=f"Answer {i}.") for i in range(n)]


def grade(label: str) -> Callable[[dict[str, Any]], str]:
    def respond(body: dict[str, Any]) -> str:
        return json.dumps({"reasoning": "looked at it", "label": label})

    return respond


def values(result: EvalResult) -> dict[str, float]:
    return {r.sample.id: r.scores["binary_grader"].value for r in result.results}


def openai_judge(server: FakeOpenAIServer, model: str = "same-name") -> Any:
    from assay.models import OpenAIJudge

    return OpenAIJudge(model, base_url=server.base_url)


# -- the endpoint is part of the cache key ---------------------------------------------------


def test_a_cache_filled_by_one_server_never_answers_for_another_serving_the_same_model_name(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    cache = JudgeCache(tmp_path / "cache.sqlite")
    data = samples(4)
    metric = BinaryJudgeGrader(CRITERIA)
    with (
        FakeOpenAIServer(grade("PASS"), model="same-name") as a,
        FakeOpenAIServer(grade("FAIL"), model="same-name") as b,
    ):
        first = evaluate(data, [metric], openai_judge(a), cache=cache, limits=FAST)
        assert a.calls == 4
        second = evaluate(data, [metric], openai_judge(b), cache=cache, limits=FAST)
        assert b.calls == 4, "server B must be asked: A's answers are not B's"
        again = evaluate(data, [metric], openai_judge(a), cache=cache, limits=FAST)
        assert a.calls == 4, "a re-run against A is still answered from the cache"
    assert set(values(first).values()) == {1.0}
    assert set(values(second).values()) == {0.0}, "B's own answers, not A's cached ones"
    assert values(again) == values(first)
    assert len(cache) == 8
    cache.close()


def test_http_identity_names_provider_endpoint_and_model_without_credentials() -> None:
    pytest.importorskip("openai")
    from assay.models import OpenAIJudge

    judge = OpenAIJudge("m", base_url="https://user:hunter2@llm.example.com/v1", api_key="k")
    assert judge.model_id == "openai:m"
    assert judge.identity.startswith("openai:m@https://")
    assert "llm.example.com/v1" in judge.identity
    assert "hunter2" not in judge.identity
    # A query string cannot work (the client appends its path after it): refused, redacted.
    with pytest.raises(ConfigError, match=r"api_key=\[redacted\]&region=eu has a query string") as refused:
        OpenAIJudge("m", base_url="https://llm.example.com/v1?api_key=sk-abcdefgh12345&region=eu", api_key="k")
    assert "sk-abcdefgh12345" not in str(refused.value)
    default = OpenAIJudge("m", api_key="k")
    assert default.identity == "openai:m@https://api.openai.com/v1"
    other = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1")
    assert other.identity != default.identity
    # Every layer of the stack passes the identity through: the cache keys on the backend's.
    stacked = build_judge_stack(other, limits=Limits())
    assert stacked.identity == other.identity == ResilientJudge(other).identity


def test_local_identity_is_the_model_file_not_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = tmp_path / "a" / "model.gguf", tmp_path / "b" / "model.gguf"
    first.write_bytes(b"x" * 10)
    second.write_bytes(b"y" * 20)
    one, two = LocalJudge(first), LocalJudge(second)
    assert one.model_id == two.model_id == "local:model"
    assert one.identity != two.identity
    assert str(first.resolve()) in one.identity and ":10:" in one.identity
    first.write_bytes(b"x" * 11)  # the same path, another file
    assert ":11:" in LocalJudge(first).identity
    assert LocalJudge(first, max_string_chars=50).identity != LocalJudge(first).identity
    monkeypatch.delenv("ASSAY_LOCAL_MODEL", raising=False)
    assert DEFAULT_MODEL_SHA256 in LocalJudge().identity
    assert LocalJudge().interruptible is False


def test_the_cache_key_changes_with_identity_and_nothing_else_equal() -> None:
    messages = [{"role": "user", "content": "hi"}]
    config = GenerateConfig()
    same = cache_key("openai:m@http://a/v1", messages, None, config)  # type: ignore[arg-type]
    assert same == cache_key("openai:m@http://a/v1", messages, None, config)  # type: ignore[arg-type]
    assert same != cache_key("openai:m@http://b/v1", messages, None, config)  # type: ignore[arg-type]


# -- only validated answers are cached --------------------------------------------------------

BROKEN = {
    "s0": '{"reasoning": "cut off", "lab',  # truncated mid-object
    "s1": "I'm sorry, but I can't help with grading this.",  # a refusal in the text
    "s2": '{"reasoning": "fine", "label": "MAYBE"}',  # valid JSON, invalid for the schema
    "s3": "PASS, I think",  # no JSON at all
}


def flaky_grader(body: dict[str, Any]) -> str:
    user = body["messages"][1]["content"]
    for sample_id, text in BROKEN.items():
        if f"Answer {sample_id[1:]}." in user:
            return text
    return json.dumps({"reasoning": "looked at it", "label": "PASS"})


def test_invalid_answers_are_not_cached_and_a_healthy_rerun_scores_those_samples(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    cache = JudgeCache(tmp_path / "cache.sqlite")
    data = samples(7)
    metric = BinaryJudgeGrader(CRITERIA)
    with FakeOpenAIServer(flaky_grader, model="same-name") as server:
        judge = openai_judge(server)
        first = evaluate(data, [metric], judge, cache=cache, limits=FAST)
        scored = {k for k, v in values(first).items() if v == v}
        assert scored == {"s4", "s5", "s6"}, "the four broken answers leave their samples unscored"
        assert len(cache) == 3 and cache.rejected == 4
        server.responder = grade("PASS")  # the same server (same cache identity), healthy now
        calls = server.calls
        second = evaluate(data, [metric], judge, cache=cache, limits=FAST)
        assert server.calls - calls == 4, "exactly the calls whose answers were not cached are made again"
        third = evaluate(data, [metric], judge, cache=cache, limits=FAST)
        assert server.calls - calls == 4, "a valid answer is cached: the third run makes no call"
    assert values(second) == {s.id: 1.0 for s in data}
    assert values(third) == values(second)
    assert all(c.cached for r in third.results for c in r.scores["binary_grader"].calls)
    cache.close()


@pytest.mark.parametrize(
    ("faults", "attempts"),
    # Output faults are not retried (one call each); a 500 is, up to max_attempts.
    [({"refusal": 1.0}, 1), ({"truncated": 1.0}, 1), ({"malformed": 1.0}, 1), ({"500": 1.0}, 2)],
)
def test_refusals_truncations_and_errors_from_the_server_are_never_cached(
    tmp_path: Path, faults: dict[str, float], attempts: int
) -> None:
    pytest.importorskip("openai")
    cache = JudgeCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(grade("PASS"), faults=faults) as server:
        result = evaluate_kept(
            samples(3),
            [BinaryJudgeGrader(CRITERIA)],
            openai_judge(server, "fake-judge"),
            cache=cache,
            limits=Limits(timeout_s=10, max_attempts=2, backoff_s=0.01),
        )
        assert server.calls == 3 * attempts
    assert all(v != v for v in values(result).values()), "nothing scored from a broken server"
    assert len(cache) == 0
    cache.close()


def test_is_cacheable_follows_the_callers_parser() -> None:
    def answer(text: str, finish: str | None = "stop") -> JudgeResponse:
        return JudgeResponse(text=text, model="m", finish_reason=finish)

    valid = '{"reason": "same passage", "verdict": 1}'
    assert is_cacheable(answer(valid), RelevanceVerdict)
    assert is_cacheable(answer(f"Here you go:\n```json\n{valid}\n```"), RelevanceVerdict)  # as parse_output reads it
    assert not is_cacheable(answer(valid, "length"), RelevanceVerdict), "truncated, even if it parses"
    assert not is_cacheable(answer(valid, "refusal"), RelevanceVerdict)
    assert not is_cacheable(answer(valid, "content_filter"), RelevanceVerdict)
    assert not is_cacheable(answer('{"reason": "x", "verdict": 2}'), RelevanceVerdict)
    assert not is_cacheable(answer('{"reason": "x", "verdict": 1'), RelevanceVerdict)
    assert not is_cacheable(answer(""), RelevanceVerdict)
    assert is_cacheable(answer("Paris."), None)
    assert not is_cacheable(answer("   "), None)
    assert not is_cacheable(answer("I'm sorry, I cannot answer that."), None)


# -- one stack for every caller -----------------------------------------------------------------


def test_the_stack_applies_repeat_and_temperature_and_keys_the_cache_on_both(tmp_path: Path) -> None:
    judge = FunctionJudge(lambda messages, request: '{"reason": "r", "verdict": 1}', name="fn")
    cache = JudgeCache(tmp_path / "cache.sqlite")
    stacked = build_judge_stack(judge, limits=Limits(), cache=cache, temperature=0.7)

    async def ask(repeat: int) -> JudgeResponse:
        _REPEAT.set(repeat)
        return await stacked.generate([{"role": "user", "content": "q"}], schema=RelevanceVerdict)

    asyncio.run(ask(0))
    asyncio.run(ask(1))
    asyncio.run(ask(0))
    assert [(r.config.temperature, r.config.repeat) for r in judge.requests] == [(0.7, 0), (0.7, 1)]
    assert len(cache) == 2
    cache.close()


def test_the_stack_sets_no_timeout_for_an_in_process_judge(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"x")
    stacked = build_judge_stack(LocalJudge(model), limits=Limits(timeout_s=5))
    resilient = stacked.inner
    assert isinstance(resilient, ResilientJudge) and resilient.policy.timeout_s is None
    remote = build_judge_stack(ScriptedJudge([]), limits=Limits(timeout_s=5)).inner
    assert isinstance(remote, ResilientJudge) and remote.policy.timeout_s == 5


def _constructions(name: str) -> Iterator[tuple[Path, int]]:
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
                yield path.relative_to(SRC), node.lineno


@pytest.mark.parametrize("layer", ["ResilientJudge", "CachedJudge", "_RepeatJudge"])
def test_only_build_judge_stack_assembles_the_layers(layer: str) -> None:
    """A second hand-built stack drifts (it once lost --temperature on the Ray engine)."""
    found = [f"{path}:{line}" for path, line in _constructions(layer)]
    assert {f.split(":")[0] for f in found} == {"models/_stack.py"}, found


# -- the retrieval LLM judge retries like every other caller -------------------------------------

QUERY = "When was the Eiffel Tower completed?"
EXPECTED = "The Eiffel Tower was completed in 1889."


def relevance(body: dict[str, Any]) -> str:
    user = body["messages"][1]["content"]
    retrieved = user.split("<retrieved>\n")[1].split("\n</retrieved>")[0]
    return json.dumps({"reason": "compared", "verdict": int("1889" in retrieved)})


RETRIEVED = [
    "Completed in 1889, the tower is in Paris.",
    "The Louvre is a museum.",
    "It opened to the public in 1889.",
    "Paris has many bridges.",
    "Gustave Eiffel's company built it by 1889.",
    "The Seine flows through Paris.",
]


def _end_rate_limit_after(server: FakeOpenAIServer, n: int) -> threading.Thread:
    """Answer 429 until ``n`` requests were refused, then serve normally."""

    def watch() -> None:
        for _ in range(2000):  # at most 10 s
            if server.fault_counts.get("429", 0) >= n:
                break
            threading.Event().wait(0.005)
        server.faults = {}

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_evaluate_retrieval_with_an_llm_judge_retries_a_429_and_judges_every_pair() -> None:
    pytest.importorskip("openai")
    example = RetrievalExample(id="q1", query=QUERY, expected=[EXPECTED], retrieved=RETRIEVED)
    with FakeOpenAIServer(relevance, faults={"429": 1.0}) as server:
        watcher = _end_rate_limit_after(server, len(RETRIEVED))
        report = evaluate_retrieval([example], LLMJudge(openai_judge(server, "fake-judge")), k=[6])
        watcher.join(timeout=5)
        assert server.fault_counts["429"] >= len(RETRIEVED)
    assert report.n_unjudged == 0, report.unjudged_by_reason
    statuses = [m.status for m in report.queries[0].matches]
    assert statuses == ["relevant", "not_relevant", "duplicate", "not_relevant", "duplicate", "not_relevant"]


def test_an_llm_judges_call_records_say_they_were_retried_then_read_from_the_cache(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    example = RetrievalExample(id="q1", query=QUERY, expected=[EXPECTED], retrieved=RETRIEVED)

    def calls(report: Any) -> list[JudgeCall]:
        return [d.call for m in report.queries[0].matches for d in m.decisions if d.call is not None]

    with FakeOpenAIServer(relevance, faults={"429": 1.0}) as server, JudgeCache(tmp_path / "c.sqlite") as cache:
        watcher = _end_rate_limit_after(server, len(RETRIEVED))
        first = evaluate_retrieval([example], LLMJudge(openai_judge(server, "fake-judge"), cache=cache), k=[6])
        watcher.join(timeout=5)
        asked = server.calls
        again = evaluate_retrieval([example], LLMJudge(openai_judge(server, "fake-judge"), cache=cache), k=[6])
        assert server.calls == asked, "the second run asked the server nothing"
    assert calls(first) and not any(c.cached for c in calls(first))
    assert max(c.attempts for c in calls(first)) > 1, "a call refused with 429 then answered says how many tries"
    assert len(calls(again)) == len(calls(first)) and all(c.cached and c.attempts == 1 for c in calls(again))
    assert [m.status for m in again.queries[0].matches] == [m.status for m in first.queries[0].matches]


def test_assay_retrieval_judge_llm_retries_a_429(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    from typer.testing import CliRunner

    from assay.cli import app

    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "q1", "query": QUERY, "expected": [EXPECTED], "retrieved": RETRIEVED}) + "\n")
    out = tmp_path / "report.json"
    with FakeOpenAIServer(relevance, faults={"429": 1.0}) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        watcher = _end_rate_limit_after(server, len(RETRIEVED))
        result = CliRunner().invoke(
            app, ["retrieval", str(data), "--judge", "llm", "--model", "openai:fake-judge", "--k", "6", "-o", str(out)]
        )
        watcher.join(timeout=5)
        refused = server.fault_counts["429"]
    assert result.exit_code == 0, result.output
    assert refused >= len(RETRIEVED)
    report = json.loads(out.read_text())
    assert report["n_unjudged"] == 0
    assert "unjudged" not in result.output


# -- assay cache info | clear ---------------------------------------------------------------------


def _filled_cache(path: Path) -> None:
    """Three answers of model a, one of model b; one of a's a year old."""
    import sqlite3
    import time

    cache = JudgeCache(path)
    answer = JudgeResponse(text='{"reason": "r", "verdict": 1}', model="served-name", finish_reason="stop")
    for i in range(3):
        cache.put(f"a{i}", answer, model="openai:a", identity="openai:a@http://h/v1")
    cache.put("b0", answer, model="openai:b", identity="openai:b@http://h/v1")
    cache.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE calls SET created = ? WHERE key = 'a0'", (time.time() - 365 * 86400,))


def _cli(*args: str) -> Any:
    from typer.testing import CliRunner

    from assay.cli import app

    return CliRunner().invoke(app, ["cache", *args])


def test_cache_info_prints_the_file_size_entries_per_model_and_age(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    _filled_cache(path)
    result = _cli("info", "--path", str(path))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert any(line.startswith("cache") and "cache.sqlite" in line for line in lines)
    assert "entries 4" in lines
    assert any(line.startswith("size") and "B" in line for line in lines)
    oldest = next(line for line in lines if line.startswith("oldest"))
    newest = next(line for line in lines if line.startswith("newest"))
    assert oldest != newest and "UTC" in oldest
    per_model = {line.split()[1]: line.split()[3] for line in lines if "openai:" in line}
    assert per_model == {"openai:a": "3", "openai:b": "1"}
    cache = JudgeCache(path, create=False)
    info = cache.info()
    cache.close()
    assert info.entries == 4 and info.per_model == {"openai:a": 3, "openai:b": 1} and info.size_bytes > 0


def test_cache_clear_by_model_by_age_and_all_says_how_many(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    _filled_cache(path)
    old = _cli("clear", "--path", str(path), "--older-than", "30")
    assert old.exit_code == 0, old.output
    assert "deleted 1 entry (older than 30 days)" in old.stdout and "3 left" in old.stdout
    by_model = _cli("clear", "--path", str(path), "--model", "openai:b")
    assert "deleted 1 entry (of openai:b)" in by_model.stdout and "2 left" in by_model.stdout
    cache = JudgeCache(path, create=False)
    assert cache.info().per_model == {"openai:a": 2}
    cache.close()
    everything = _cli("clear", "--path", str(path))
    assert "deleted 2 entries from" in everything.stdout and "0 left" in everything.stdout
    cache = JudgeCache(path, create=False)
    assert len(cache) == 0
    cache.close()


def test_cache_commands_refuse_a_missing_file_or_a_foreign_database(tmp_path: Path) -> None:
    import sqlite3

    missing = tmp_path / "nope.sqlite"
    result = _cli("info", "--path", str(missing))
    assert result.exit_code == 1 and "no judge-call cache" in result.output
    assert not missing.exists(), "inspecting must not create a cache"
    foreign = tmp_path / "runs.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE runs (id TEXT)")
    result = _cli("clear", "--path", str(foreign))
    assert result.exit_code == 1 and "not a judge-call cache" in result.output
    with sqlite3.connect(foreign) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"runs"}, "a foreign database is left untouched"
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database at all")
    assert "not a judge-call cache" in _cli("info", "--path", str(text)).output


class _Batching(ScriptedJudge):
    """A judge that, like the local one, takes one sample at a time and decodes its calls together."""

    @property
    def max_concurrency(self) -> int:
        return 1

    @property
    def batched_calls(self) -> int:
        return 8


@pytest.mark.parametrize(
    ("judge", "concurrency", "warned"),
    [(_Batching([]), 4, True), (_Batching([]), 1, False), (_Batching([]), None, False), (ScriptedJudge([]), 8, False)],
)
def test_more_samples_in_flight_than_a_batching_judge_takes_warns_that_verdicts_may_differ(
    judge: Any, concurrency: int | None, warned: bool
) -> None:
    """Several samples on a judge that batches calls in flight: which share a batch depends on timing, so say so."""
    import warnings

    from assay.models._stack import Limits, build_judge_stack

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        build_judge_stack(judge, limits=Limits(concurrency=concurrency))
    said = [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)]
    assert bool(said) is warned
    if warned:
        assert "4 samples in flight" in said[0] and "can differ between two runs" in said[0]


def test_the_command_line_prints_a_warning_as_one_line_of_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    from assay.cli import _show_warning

    _show_warning(RuntimeWarning("2 samples in flight [red]x[/red]"), RuntimeWarning, "file.py", 12)
    err = capsys.readouterr().err
    assert err.startswith("warning: 2 samples in flight") and "[red]x[/red]" in err  # markup shown, not applied
    assert "file.py" not in err and "RuntimeWarning" not in err
