"""Whole scores kept in the judge-call cache: a re-run reads them back, and never one a fresh run would not compute.

A kept score replays what the judge-call cache would have produced, so every test here
compares against that path: the same results, the same calls marked cached. Each input
that makes a score (a sample's field, the metric's parameters, the judge, the repeat,
the code) is changed in turn and must reach the judge's answers again; a score whose
answers are not all in the cache, or are gone from it, is computed again.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from assay import Faithfulness, Sample, evaluate
from assay.metrics import BinaryJudgeGrader
from assay.models import FunctionJudge
from assay.run import EvalResult, JudgeCache, Limits, _memo
from assay.testing import FakeOpenAIServer
from faithfulness_fakes import faithfulness_answer

pytest.importorskip("openai")

FAST = Limits(timeout_s=10, max_attempts=2, backoff_s=0.01)


def rows(n: int = 6) -> list[Sample]:
    return [
        Sample(
            id=f"r{i}",
            question=f"What about item {i}?",
            answer=f"The sky over item {i} is blue. Item {i} weighs {i + 2} kilograms.",
            contexts=[f"Item {i} sits under a blue sky.", f"Item {i} weighs {i + 2} kilograms."],
        )
        for i in range(n)
    ]


def answer(body: dict[str, Any]) -> str:
    return faithfulness_answer(body["messages"][-1]["content"])


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(answer) as running:
        yield running


def judge_of(server: FakeOpenAIServer, model: str = "fake") -> Any:
    from assay.models import OpenAIJudge

    return OpenAIJudge(model, base_url=server.base_url)


def run(data: list[Sample], server: FakeOpenAIServer, cache: JudgeCache, metric: Any = None, **kw: Any) -> EvalResult:
    metric = metric or Faithfulness(strategy="batch")
    return evaluate(data, [metric], judge_of(server), cache=cache, limits=FAST, progress="none", **kw)


def records(result: EvalResult, *, latency: bool = False) -> list[dict[str, Any]]:
    """Every result as JSON (latency dropped: a replayed call waited for nothing)."""

    def strip(record: Any) -> Any:
        if isinstance(record, dict):
            return {k: strip(v) for k, v in record.items() if latency or k != "latency_s"}
        if isinstance(record, list):
            return [strip(v) for v in record]
        return record

    return [strip(json.loads(json.dumps(r.to_record()))) for r in result.results]


def drop_kept_scores(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM scores")


def test_a_rerun_reads_every_score_back_and_gives_what_the_answer_cache_gives(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = rows()
    with JudgeCache(tmp_path / "cache.sqlite") as cache:
        first = run(data, server, cache)
        calls = server.calls
        assert calls > 0 and cache.score_hits == 0
        assert cache.info().scores == len(data)

    # the kept path must not decompose an answer or render a prompt: make both impossible
    import assay.metrics._faithfulness as faithfulness

    def no(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a kept score was computed again")

    with monkeypatch.context() as patched, JudgeCache(tmp_path / "cache.sqlite") as cache:
        patched.setattr(faithfulness.Faithfulness, "score", no)
        kept = run(data, server, cache)
        assert server.calls == calls and cache.score_hits == len(data)

    # the same re-run from the answers alone (no kept scores): the path a kept score replays
    shutil.copy(tmp_path / "cache.sqlite", tmp_path / "answers.sqlite")
    drop_kept_scores(tmp_path / "answers.sqlite")
    with JudgeCache(tmp_path / "answers.sqlite") as answers:
        replayed = run(data, server, answers)
        assert server.calls == calls and answers.score_hits == 0 and answers.hits > 0

    assert records(kept) == records(replayed)
    assert all(c.cached and c.latency_s == 0.0 for r in kept.results for c in r.scores["faithfulness"].all_calls)
    # and the values are the first run's, calls aside
    assert [r.scores["faithfulness"].value for r in kept.results] == [
        r.scores["faithfulness"].value for r in first.results
    ]
    assert kept.summary()["faithfulness"].mean == first.summary()["faithfulness"].mean


def _changed_field(data: list[Sample]) -> list[Sample]:
    # the same answer judged against a context that no longer says what it weighs
    changed = data[2].model_copy(update={"contexts": ("Item 2 sits under a blue sky.", "Nothing about its weight.")})
    return [*data[:2], changed, *data[3:]]


@pytest.mark.parametrize(
    ("what", "change"),
    [
        ("a context of one row", lambda d: {"data": _changed_field(d)}),
        ("the metric's parameters", lambda d: {"metric": Faithfulness(strategy="batch", max_statements=1)}),
        ("the repeat", lambda d: {"repeats": 2}),
        ("the temperature", lambda d: {"temperature": 0.7}),
        ("the re-asks", lambda d: {"reasks": 2}),  # the suite runs with 0 (conftest)
    ],
)
def test_a_change_to_what_makes_a_score_is_never_answered_by_the_kept_one(
    what: str, change: Callable[[list[Sample]], dict[str, Any]], server: FakeOpenAIServer, tmp_path: Path
) -> None:
    data = rows(4)
    with JudgeCache(tmp_path / "cache.sqlite") as cache:
        run(data, server, cache)
        kw = change(data)
        second = run(kw.pop("data", data), server, cache, **kw)
    hits = cache.score_hits
    if what == "a context of one row":
        assert hits == 3, "the three unchanged rows are read back, the changed one is not"
        moved = second.results[2].scores["faithfulness"]
        assert any(not c.cached for c in moved.all_calls), "its verdicts were asked again, against the new context"
        assert "Nothing about its weight." in json.dumps([c.messages for c in moved.all_calls])
    elif what == "the repeat":
        assert hits == len(data), "repeat 0 is the kept one; repeat 1 is computed"
        assert {r.repeat for r in second.results} == {0, 1}
    else:
        assert hits == 0, f"{what} changed: nothing may be read back"


def test_a_judge_at_another_address_never_gets_the_scores_of_the_first(tmp_path: Path) -> None:
    data = rows(3)
    with (
        FakeOpenAIServer(answer) as a,
        FakeOpenAIServer(lambda b: faithfulness_answer(b["messages"][-1]["content"], supported=lambda s: False)) as b,
        JudgeCache(tmp_path / "cache.sqlite") as cache,
    ):
        run(data, a, cache)
        second = run(data, b, cache)
        assert cache.score_hits == 0 and b.calls > 0
    assert {r.scores["faithfulness"].value for r in second.results} == {0.0}


def test_the_code_is_part_of_the_key(server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = rows(3)
    with JudgeCache(tmp_path / "cache.sqlite") as cache:
        run(data, server, cache)
        monkeypatch.setattr(_memo, "code_fingerprint", lambda: "another build of assay")
        run(data, server, cache)
        assert cache.score_hits == 0
        assert cache.hits > 0, "the answers themselves are still the judge's"


def test_the_fingerprint_reads_every_file_of_the_package(tmp_path: Path) -> None:
    package = Path(_memo.__file__).resolve().parents[1]
    copy = tmp_path / "assay"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = _memo.fingerprint_of(copy)
    assert before == _memo.fingerprint_of(copy)
    for name in ("grounding/_sentences.py", "prompts/__init__.py", "run/agreement.json"):
        target = copy / name
        text = target.read_bytes()
        target.write_bytes(text + b" ")
        assert _memo.fingerprint_of(copy) != before, f"an edit to {name} went unseen"
        target.write_bytes(text)
    assert _memo.fingerprint_of(copy) == before
    (copy / "grounding" / "_new.py").write_text("X = 1\n")
    assert _memo.fingerprint_of(copy) != before, "a new module went unseen"


def test_the_fingerprint_reads_the_requirements_as_imports_find_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = Path(_memo.__file__).resolve().parents[1]
    before = _memo.fingerprint_of(package)
    assert any(r.startswith("pysbd-0") for r in _memo._requirements()), "the sentence splitter's version is read"
    # a distribution assay does not require, first on the path (a plugin, a test's fake): no change
    (tmp_path / "some_plugin-1.0.dist-info").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _memo.fingerprint_of(package) == before
    # another version of a requirement first on the path, as an upgrade: another fingerprint
    (tmp_path / "pysbd-9.9.9.dist-info").mkdir()
    assert "pysbd-9.9.9" in _memo._requirements()
    assert _memo.fingerprint_of(package) != before


def test_cleared_or_missing_answers_take_their_scores_with_them(server: FakeOpenAIServer, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from assay.cli import app

    data = rows(4)
    path = tmp_path / "cache.sqlite"
    with JudgeCache(path) as cache:
        run(data, server, cache)
    # one answer pruned by hand (as --older-than prunes some): the score built on it is computed again
    with sqlite3.connect(path) as db:
        (calls,) = db.execute("SELECT calls FROM scores LIMIT 1").fetchone()
        db.execute("DELETE FROM calls WHERE key = ?", (json.loads(calls)[0],))
    before = server.calls
    with JudgeCache(path) as cache:
        run(data, server, cache)
        assert cache.score_hits == len(data) - 1 and server.calls == before + 1
    info = CliRunner().invoke(app, ["cache", "info", "--path", str(path)])
    assert f"scores  {len(data)}" in info.output, info.output
    cleared = CliRunner().invoke(app, ["cache", "clear", "--path", str(path), "--model", "openai:fake"])
    assert cleared.exit_code == 0 and "deleted 4 entries" in cleared.output, cleared.output
    with JudgeCache(path) as cache:
        assert cache.info().scores == 0
        run(data, server, cache)
        assert cache.score_hits == 0 and server.calls > before + 1


def _refusing(body: dict[str, Any]) -> str:
    user = body["messages"][-1]["content"]
    if "item 1 " in user.lower() and "<statements>" in user:
        return "I'm sorry, but I can't help with that."
    return faithfulness_answer(user)


def test_a_score_with_an_answer_the_cache_did_not_keep_is_computed_again(tmp_path: Path) -> None:
    data = rows(3)
    with FakeOpenAIServer(_refusing) as server, JudgeCache(tmp_path / "cache.sqlite") as cache:
        first = run(data, server, cache, reasks=0)
        assert not first.results[1].scores["faithfulness"].is_scored
        assert cache.info().scores == 2, "the refused row's score is not kept"
        calls = server.calls
        run(data, server, cache, reasks=0)
        assert cache.score_hits == 2 and server.calls > calls, "the refused row asks again"


def test_a_failed_call_keeps_nothing(tmp_path: Path) -> None:
    def falls_over(body: dict[str, Any]) -> str:
        if "item 0" in body["messages"][-1]["content"].lower():
            raise RuntimeError("the server fell over")  # a 500
        return answer(body)

    with FakeOpenAIServer(falls_over) as server, JudgeCache(tmp_path / "cache.sqlite") as cache:
        first = run(rows(2), server, cache)
        assert first.results[0].scores["faithfulness"].unscored_reason == "judge_error"
        assert cache.info().scores == 1


def test_a_metric_from_outside_assay_is_never_kept(tmp_path: Path) -> None:
    class Mine(BinaryJudgeGrader):
        pass

    def grade(messages: Any, request: Any) -> str:
        return json.dumps({"reasoning": "fine", "label": "PASS"})

    data = [Sample(id=f"s{i}", question=f"Q{i}?", answer=f"A{i}.") for i in range(2)]
    with JudgeCache(tmp_path / "cache.sqlite") as cache:
        evaluate(data, [Mine("Addresses it.")], FunctionJudge(grade), cache=cache, progress="none")
        assert cache.info().scores == 0, "its code is not what the fingerprint reads"
        evaluate(data, [BinaryJudgeGrader("Addresses it.")], FunctionJudge(grade), cache=cache, progress="none")
        assert cache.info().scores == 2, "assay's own grader, on the same judge, is kept"


def test_a_cache_file_of_the_last_layout_gains_the_scores(server: FakeOpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE calls (key TEXT PRIMARY KEY, model TEXT, response TEXT, created REAL, identity TEXT)")
        db.execute("PRAGMA user_version=1")
    with JudgeCache(path) as cache:
        run(rows(2), server, cache)
        run(rows(2), server, cache)
        assert cache.score_hits == 2


def test_a_damaged_kept_score_is_computed_again_and_kept_anew(server: FakeOpenAIServer, tmp_path: Path) -> None:
    data = rows(2)
    path = tmp_path / "cache.sqlite"
    with JudgeCache(path) as cache:
        first = run(data, server, cache)
    with sqlite3.connect(path) as db:
        db.execute('UPDATE scores SET score = \'{"metric": "faithfulness", "value": "not a num\'')
    with JudgeCache(path) as cache:
        again = run(data, server, cache)
        assert cache.score_hits == 0 and all(r.scores["faithfulness"].is_scored for r in again.results)
        assert [r.scores["faithfulness"].value for r in again.results] == [
            r.scores["faithfulness"].value for r in first.results
        ]
    with JudgeCache(path) as cache:
        run(data, server, cache)
        assert cache.score_hits == 2, "kept anew over the damaged record"


def test_a_damaged_answer_is_asked_again_and_never_counted_as_found(server: FakeOpenAIServer, tmp_path: Path) -> None:
    data = rows(3)
    path = tmp_path / "cache.sqlite"
    with JudgeCache(path) as cache:
        first = run(data, server, cache)
        calls = server.calls
    drop_kept_scores(path)
    with sqlite3.connect(path) as db:
        (damaged,) = db.execute("SELECT key FROM calls ORDER BY key LIMIT 1").fetchone()
        db.execute("UPDATE calls SET response = '{\"text\": 7' WHERE key = ?", (damaged,))
        total = db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    with JudgeCache(path) as cache:
        again = run(data, server, cache)
        assert server.calls == calls + 1, "the damaged answer, and only it, is asked again"
        assert (cache.hits, cache.misses) == (total - 1, 1)
        assert records(again) != [] and [r.scores["faithfulness"].value for r in again.results] == [
            r.scores["faithfulness"].value for r in first.results
        ]
    drop_kept_scores(path)
    with JudgeCache(path) as cache:
        run(data, server, cache)
        assert server.calls == calls + 1 and (cache.hits, cache.misses) == (total, 0), "kept anew"
