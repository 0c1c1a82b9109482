"""A judge that reads its own logits (the local judge's way) is answered from the judge-call cache too.

Its verdicts are probabilities read after a prefix (``choice_probabilities``) and its
reasons continuations of a string (``complete_string``); both are kept in the cache file
beside generated answers. A re-run asks the judge nothing and gives what the first run
gave, every call marked cached; each repeat keeps its own; a probability that is not a
distribution over the choices is never kept, and the score built on it is not kept either.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from assay import Faithfulness, Sample, Usage, evaluate
from assay.metrics import BinaryJudgeGrader, RangeJudgeGrader
from assay.models import FunctionJudge
from assay.models._protocol import ChatMessage, ChoiceProbabilities, GenerateConfig, JudgeResponse
from assay.run import EvalResult, JudgeCache, Limits, build_judge_stack


class ReadsItsLogits(FunctionJudge):
    """P(first choice) from ``p(prompt, repeat)``, the rest shared; a fixed reason; every question kept in ``asked``."""

    def __init__(self, p: Callable[[str, int], float], fn: Any = None) -> None:
        super().__init__(fn or (lambda messages, request: json.dumps({"reasoning": "ok", "label": "PASS"})))
        self.p = p
        self.asked: list[tuple[str, str, int]] = []

    async def choice_probabilities(
        self,
        messages: Sequence[ChatMessage],
        *,
        prefix: str,
        choices: Sequence[str],
        config: GenerateConfig | None = None,
    ) -> ChoiceProbabilities:
        repeat = (config or GenerateConfig()).repeat
        prompt = messages[-1]["content"]
        self.asked.append(("p", prompt, repeat))
        first = self.p(prompt, repeat)
        rest = (1.0 - first) / (len(choices) - 1)
        probabilities = {c: (first if i == 0 else rest) for i, c in enumerate(choices)}
        return ChoiceProbabilities(probabilities, Usage(prompt_tokens=len(prompt) // 4, completion_tokens=1))

    async def complete_string(
        self,
        messages: Sequence[ChatMessage],
        *,
        prefix: str,
        max_chars: int = 200,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        self.asked.append(("reason", messages[-1]["content"], (config or GenerateConfig()).repeat))
        return JudgeResponse(text="the context says nothing of it", model=self.name, finish_reason="stop")


def rows(n: int = 4) -> list[Sample]:
    return [
        Sample(
            id=f"r{i}",
            question=f"What about item {i}?",
            answer=f"The sky over item {i} is blue. Item {i} weighs {i + 2} kilograms.",
            contexts=[f"Item {i} sits under a blue sky."],
        )
        for i in range(n)
    ]


def by_prompt(prompt: str, repeat: int) -> float:
    """A P that depends on the question only, far from the threshold: some supported, some not."""
    return 0.9 if "blue" in prompt.split("<statement>")[-1] else 0.1


def records(result: EvalResult) -> list[dict[str, Any]]:
    """Every result as JSON without what a replay changes (latency, cached)."""

    def strip(record: Any) -> Any:
        if isinstance(record, dict):
            return {k: strip(v) for k, v in record.items() if k not in ("latency_s", "cached")}
        if isinstance(record, list):
            return [strip(v) for v in record]
        return record

    return [strip(json.loads(json.dumps(r.to_record()))) for r in result.results]


def calls_of(result: EvalResult) -> list[Any]:
    return [c for r in result.results for s in r.scores.values() for c in s.all_calls]


def drop_kept_scores(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM scores")


METRICS = [
    Faithfulness(decomposer="sentences"),
    RangeJudgeGrader("Is it right?", {1: "no", 3: "some", 5: "yes"}, expected_value=True),
]


def test_a_rerun_reads_every_probability_and_reason_from_the_cache_and_asks_the_judge_nothing(tmp_path: Path) -> None:
    judge = ReadsItsLogits(by_prompt)
    path = tmp_path / "cache.sqlite"
    with JudgeCache(path) as cache:
        first = evaluate(rows(), METRICS, judge, cache=cache, progress="none")
        asked = len(judge.asked)
        kinds = {kind for kind, _, _ in judge.asked}
        assert kinds == {"p", "reason"}, "the run read probabilities and wrote reasons for the unsupported"
        assert not any(c.cached for c in calls_of(first))
        assert cache.info().scores == len(rows()) * len(METRICS), "every score was built from kept answers"

        drop_kept_scores(path)  # the answers alone, not the whole scores, answer the re-run
        again = evaluate(rows(), METRICS, judge, cache=cache, progress="none")
        assert len(judge.asked) == asked, "no probability read and no reason written again"
        assert records(again) == records(first)
        assert calls_of(again) and all(c.cached for c in calls_of(again)), "each call says it was read from the cache"
        assert again.usage().total_tokens == first.usage().total_tokens

        kept = evaluate(rows(), METRICS, judge, cache=cache, progress="none")
        assert cache.score_hits == len(rows()) * len(METRICS) and len(judge.asked) == asked
        assert records(kept) == records(first)


def test_each_repeat_reads_and_keeps_its_own_probabilities(tmp_path: Path) -> None:
    # a judge whose P moves with the repeat (as one sampling would): a repeat answered by another's P would hide it
    judge = ReadsItsLogits(lambda prompt, repeat: 0.8 if repeat == 0 else 0.3)
    path = tmp_path / "cache.sqlite"
    with JudgeCache(path) as cache:
        first = evaluate(
            rows(2), [Faithfulness(decomposer="sentences")], judge, cache=cache, progress="none", repeats=2
        )
        asked = [(kind, repeat) for kind, _, repeat in judge.asked if kind == "p"]
        assert sorted({r for _, r in asked}) == [0, 1] and len(asked) == 2 * 2 * 2, "2 rows x 2 statements x 2 repeats"
        values = {r.repeat: r.scores["faithfulness"].value for r in first.results}
        assert values[0] > values[1], values

        drop_kept_scores(path)
        count = len(judge.asked)
        again = evaluate(
            rows(2), [Faithfulness(decomposer="sentences")], judge, cache=cache, progress="none", repeats=2
        )
        assert len(judge.asked) == count
        assert {r.repeat: r.scores["faithfulness"].value for r in again.results} == values
        assert records(again) == records(first)


@pytest.mark.parametrize("bad", [1.5, float("nan"), -0.2])
def test_a_probability_that_is_not_a_distribution_is_never_kept(tmp_path: Path, bad: float) -> None:
    judge = ReadsItsLogits(lambda prompt, repeat: bad)
    with JudgeCache(tmp_path / "cache.sqlite") as cache:
        evaluate(rows(1), [Faithfulness(decomposer="sentences")], judge, cache=cache, progress="none")
        asked = len([k for k, _, _ in judge.asked if k == "p"])
        assert asked == 2 and cache.rejected >= asked
        assert cache.info().scores == 0, "a score read from a P that was not kept is not kept either"
        evaluate(rows(1), [Faithfulness(decomposer="sentences")], judge, cache=cache, progress="none")
        assert len([k for k, _, _ in judge.asked if k == "p"]) == 2 * asked, "asked again"


def test_a_graders_pass_probability_is_read_from_the_cache_and_says_so(tmp_path: Path) -> None:
    judge = ReadsItsLogits(lambda prompt, repeat: 0.75)
    grader = BinaryJudgeGrader("Does it answer the question?")
    sample = rows(1)[0]

    async def graded() -> Any:
        with JudgeCache(tmp_path / "cache.sqlite") as cache:
            return await grader.score_with_confidence(sample, build_judge_stack(judge, limits=Limits(), cache=cache))

    first = asyncio.run(graded())
    second = asyncio.run(graded())
    assert len([k for k, _, _ in judge.asked if k == "p"]) == 1
    assert [c.purpose for c in second.calls] == [c.purpose for c in first.calls]
    assert [c.cached for c in first.calls] == [False, False] and [c.cached for c in second.calls] == [True, True]
    # P(PASS) renormalised over PASS and FAIL, as the call recorded them (0.25 is spread over the other choices)
    read = json.loads(first.calls[-1].raw_output or "{}")
    assert read["PASS"] == pytest.approx(0.75)
    expected = round(read["PASS"] / (read["PASS"] + read["FAIL"]), 4)
    assert second.verdicts[0].details["p_pass"] == first.verdicts[0].details["p_pass"] == expected


def test_another_prefix_or_other_choices_are_another_question(tmp_path: Path) -> None:
    judge = ReadsItsLogits(lambda prompt, repeat: 0.6)
    messages: list[ChatMessage] = [{"role": "user", "content": "Is it so?"}]

    async def ask(prefix: str, choices: list[str], max_chars: int = 200) -> tuple[Any, Any]:
        with JudgeCache(tmp_path / "cache.sqlite") as cache:
            stacked = build_judge_stack(judge, limits=Limits(), cache=cache)
            p = await stacked.choice_probabilities(messages, prefix=prefix, choices=choices)
            text = await stacked.complete_string(messages, prefix=prefix, max_chars=max_chars)
            return p, text

    for prefix, choices, max_chars in [("A:", ["1", "0"], 200), ("B:", ["1", "0"], 200), ("A:", ["0", "1"], 100)]:
        before = len(judge.asked)
        p, _ = asyncio.run(ask(prefix, choices, max_chars))
        assert len(judge.asked) == before + 2, f"{prefix} {choices} {max_chars} was asked, not read"
        assert p[choices[0]] == pytest.approx(0.6) and not p.cached
    before = len(judge.asked)
    p, text = asyncio.run(ask("A:", ["1", "0"]))
    assert (
        len(judge.asked) == before
        and p.cached
        and text.cached
        and p == {"1": pytest.approx(0.6), "0": pytest.approx(0.4)}
    )


def test_a_kept_probability_that_no_longer_reads_is_asked_again_and_counted_as_a_miss(tmp_path: Path) -> None:
    judge = ReadsItsLogits(by_prompt)
    path = tmp_path / "cache.sqlite"
    with JudgeCache(path) as cache:
        first = evaluate(rows(1), [Faithfulness(decomposer="sentences")], judge, cache=cache, progress="none")
    asked = [kind for kind, _, _ in judge.asked]
    drop_kept_scores(path)
    with sqlite3.connect(path) as db:
        kept = db.execute("SELECT key, response FROM calls").fetchall()
        # a probabilities record whose text is no distribution (a damaged file, an edit by hand)
        key, response = next((k, r) for k, r in kept if json.loads(r)["text"].startswith("{"))
        db.execute(
            "UPDATE calls SET response = ? WHERE key = ?",
            (json.dumps({**json.loads(response), "text": "{not json"}), key),
        )
    with JudgeCache(path) as cache:
        again = evaluate(rows(1), [Faithfulness(decomposer="sentences")], judge, cache=cache, progress="none")
        assert (cache.hits, cache.misses) == (len(kept) - 1, 1)
    assert [kind for kind, _, _ in judge.asked] == [*asked, "p"], "that probability, and only it, read again"
    assert records(again) == records(first)
