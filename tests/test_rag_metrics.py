"""Answer relevancy, context precision, context recall and factual correctness on scripted judges."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay import Sample, Score, UnscoredReason
from assay.errors import ConfigError, JudgeError
from assay.metrics._rag import (
    AnswerRelevancy,
    ContextPrecision,
    ContextRecall,
    FactualCorrectness,
    average_precision,
)
from assay.models import ChatMessage, FunctionJudge, JudgeRequest, ScriptedJudge

SAMPLE = Sample(
    id="r1",
    question="Where is the Eiffel Tower and when was it built?",
    answer="The Eiffel Tower is in Paris. It was built in 1889. It is made of gold.",
    contexts=(
        "The Eiffel Tower is a wrought-iron tower in Paris.",
        "Bananas are rich in potassium.",
        "It was completed in 1889 for the World's Fair.",
    ),
    reference="The Eiffel Tower is in Paris and was completed in 1889.",
)


def verdict(value: object, reason: str = "r") -> str:
    return json.dumps({"verdict": value, "reason": reason})


def statements(*items: str) -> str:
    return json.dumps({"statements": list(items)})


def relevance(relevant: object, noncommittal: object, reason: str = "r") -> str:
    return json.dumps({"relevant": relevant, "noncommittal": noncommittal, "reason": reason})


def run(metric: object, script: Sequence[object], sample: Sample = SAMPLE) -> tuple[Score, ScriptedJudge]:
    judge = ScriptedJudge(script)  # type: ignore[arg-type]
    score: Score = asyncio.run(metric.score(sample, judge))  # type: ignore[attr-defined]
    assert judge.remaining == 0, "the metric made fewer calls than scripted"
    return score, judge


FAILURES = [
    ("I'm sorry, I can't judge this.", UnscoredReason.REFUSAL),
    ("not json at all", UnscoredReason.PARSE_FAILURE),
    (verdict(2), UnscoredReason.PARSE_FAILURE),
    ('{"verdict": 1, "reason": "cut', UnscoredReason.TRUNCATED_OUTPUT),
    (JudgeError("connection reset"), UnscoredReason.JUDGE_ERROR),
]


# --- answer relevancy -------------------------------------------------------------------


def test_relevant_committal_answer_scores_one_with_both_verdicts() -> None:
    score, judge = run(AnswerRelevancy(), [relevance(1, 0, "it says where and when")])
    assert score.metric == "answer_relevancy"
    assert score.value == 1.0
    assert [(v.subject, v.value) for v in score.verdicts] == [
        (SAMPLE.question, 1),
        ("the answer commits to a response (not evasive)", 1),
    ]
    assert score.verdicts[0].reason == "it says where and when"
    assert [c.purpose for c in score.calls] == ["answer_relevancy.verdict"]
    user = judge.requests[0].messages[1]["content"]
    assert user.index("<question>") < user.index("<answer>")


@pytest.mark.parametrize(
    ("relevant", "noncommittal", "value"), [(0, 0, 0.0), (1, 1, 0.0), (0, 1, 0.0), ("yes", "no", 1.0)]
)
def test_relevancy_is_relevant_and_not_noncommittal(relevant: object, noncommittal: object, value: float) -> None:
    score, _ = run(AnswerRelevancy(), [relevance(relevant, noncommittal)])
    assert score.value == value


@pytest.mark.parametrize("answer", [None, "", "  \n"])
def test_relevancy_missing_answer_is_unscored(answer: str | None) -> None:
    # A blank answer is a missing one, as when a row is read (issue 63): no judge call.
    score, _ = run(AnswerRelevancy(), [], SAMPLE.model_copy(update={"answer": answer}))
    assert score.unscored_reason is UnscoredReason.MISSING_FIELD
    assert AnswerRelevancy().required_fields == ("question", "answer")


@pytest.mark.parametrize(("bad", "reason"), [*FAILURES, (relevance(1, 2), UnscoredReason.PARSE_FAILURE)])
def test_relevancy_judge_failures_are_unscored(bad: object, reason: UnscoredReason) -> None:
    score, _ = run(AnswerRelevancy(), [bad])
    assert score.unscored_reason is reason
    assert math.isnan(score.value)
    assert len(score.calls) == 1


# --- context precision ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rels", "expected"),
    [
        ([1, 0, 1], (1 / 1 + 2 / 3) / 2),  # 0.8333
        ([0, 1, 1], (1 / 2 + 2 / 3) / 2),  # 0.5833
        ([1, 1, 0], 1.0),
        ([0, 0, 1], 1 / 3),
        ([0, 0, 0], 0.0),
        ([1, 0, 0, 1, 0, 1], (1 / 1 + 2 / 4 + 3 / 6) / 3),  # 0.6667
    ],
)
def test_average_precision_matches_the_formula_written_out(rels: list[int], expected: float) -> None:
    assert average_precision(rels) == pytest.approx(expected)


@given(st.lists(st.integers(0, 1), max_size=12))
def test_average_precision_is_between_zero_and_one_and_useful_first_is_best(rels: list[int]) -> None:
    ap = average_precision(rels)
    assert 0.0 <= ap <= 1.0
    assert average_precision(sorted(rels, reverse=True)) == (1.0 if any(rels) else 0.0)


def test_context_precision_judges_each_chunk_in_rank_order() -> None:
    script = [verdict(1, "says Paris"), verdict(0, "bananas"), verdict(1, "says 1889")]
    score, judge = run(ContextPrecision(), script)
    assert score.metric == "context_precision"
    assert score.value == pytest.approx((1 + 2 / 3) / 2)
    assert [v.subject for v in score.verdicts] == list(SAMPLE.contexts)
    assert [v.value for v in score.verdicts] == [1, 0, 1]
    assert "ranks [1, 3]" in (score.explanation or "")
    # The reference is the target when present; the chunk comes last after a shared prefix.
    first, second = (r.messages[1]["content"] for r in judge.requests[:2])
    assert "<answer>\n" + (SAMPLE.reference or "") + "\n</answer>" in first
    prefix = first[: first.index("<context>")]
    assert second.startswith(prefix)


def test_context_precision_without_reference_judges_against_the_answer() -> None:
    _, judge = run(ContextPrecision(reference=False), [verdict(0)] * 3)
    assert "<answer>\n" + (SAMPLE.answer or "") + "\n</answer>" in judge.requests[0].messages[1]["content"]


def test_context_precision_auto_falls_back_to_the_answer() -> None:
    score, judge = run(ContextPrecision(), [verdict(0)] * 3, SAMPLE.model_copy(update={"reference": None}))
    assert score.value == 0.0 and score.is_scored
    assert (SAMPLE.answer or "") in judge.requests[0].messages[1]["content"]


def test_context_precision_names_and_required_fields() -> None:
    assert ContextPrecision(reference=True).name == "context_precision_with_reference"
    assert ContextPrecision(reference=True).required_fields == ("question", "contexts", "reference")
    assert ContextPrecision(reference=False).required_fields == ("question", "contexts", "answer")
    assert ContextPrecision().spec().params["prompts"] == {"context_precision.verdict": "1"}


@pytest.mark.parametrize(
    ("metric", "update"),
    [
        (ContextPrecision(), {"contexts": ()}),
        (ContextPrecision(), {"reference": None, "answer": None}),
        (ContextPrecision(reference=True), {"reference": None}),
        (ContextPrecision(), {"question": None}),
    ],
)
def test_context_precision_missing_fields_are_unscored(metric: ContextPrecision, update: dict[str, object]) -> None:
    score, _ = run(metric, [], SAMPLE.model_copy(update=update))
    assert score.unscored_reason is UnscoredReason.MISSING_FIELD


@pytest.mark.parametrize(("bad", "reason"), FAILURES)
def test_context_precision_failure_keeps_earlier_verdicts(bad: object, reason: UnscoredReason) -> None:
    score, _ = run(ContextPrecision(), [verdict(1), bad])
    assert score.unscored_reason is reason
    assert [v.value for v in score.verdicts] == [1]
    assert len(score.calls) == 2
    assert (score.detail or "").startswith("context 2:")


# --- context recall ---------------------------------------------------------------------


def test_context_recall_is_attributed_over_reference_statements() -> None:
    script = [
        statements("The Eiffel Tower is in Paris.", "The Eiffel Tower was completed in 1889.", "It is 330 m tall."),
        verdict(1),
        verdict(1),
        verdict(0, "height not in contexts"),
    ]
    score, judge = run(ContextRecall(), script)
    assert score.metric == "context_recall"
    assert score.value == pytest.approx(2 / 3)
    assert [v.value for v in score.verdicts] == [1, 1, 0]
    assert "It is 330 m tall." in (score.explanation or "")
    assert [c.purpose for c in score.calls] == ["faithfulness.statements"] + ["faithfulness.verdict"] * 3
    # The reference is what gets split; every statement is checked against all contexts.
    assert "<answer>\n" + (SAMPLE.reference or "") + "\n</answer>" in judge.requests[0].messages[1]["content"]
    assert all(c in judge.requests[1].messages[1]["content"] for c in SAMPLE.contexts)
    assert ContextRecall().required_fields == ("reference", "contexts")


def test_context_recall_no_statements_is_unscored() -> None:
    score, _ = run(ContextRecall(), [statements()])
    assert score.unscored_reason is UnscoredReason.NO_STATEMENTS
    assert len(score.calls) == 1


@pytest.mark.parametrize("update", [{"reference": None}, {"contexts": ()}])
def test_context_recall_missing_fields_are_unscored(update: dict[str, object]) -> None:
    score, _ = run(ContextRecall(), [], SAMPLE.model_copy(update=update))
    assert score.unscored_reason is UnscoredReason.MISSING_FIELD


@pytest.mark.parametrize(("bad", "reason"), FAILURES)
def test_context_recall_extraction_failure_is_unscored(bad: object, reason: UnscoredReason) -> None:
    score, _ = run(ContextRecall(), [bad])
    assert score.unscored_reason is reason


@pytest.mark.parametrize(("bad", "reason"), FAILURES)
def test_context_recall_verdict_failure_keeps_earlier_verdicts(bad: object, reason: UnscoredReason) -> None:
    score, _ = run(ContextRecall(), [statements("Fact a holds.", "Fact b holds."), verdict(0), bad])
    assert score.unscored_reason is reason
    assert [v.value for v in score.verdicts] == [0]
    assert len(score.calls) == 3


# --- factual correctness ----------------------------------------------------------------

ANSWER_CLAIMS = statements("The Eiffel Tower is in Paris.", "It was built in 1889.", "It is made of gold.")
REFERENCE_CLAIMS = statements("The Eiffel Tower stands in Paris.", "It was completed in 1889.")


def test_factual_f1_from_precision_and_recall_verdicts() -> None:
    script = [ANSWER_CLAIMS, verdict(1), verdict(1), verdict(0), REFERENCE_CLAIMS, verdict(1), verdict(0)]
    score, judge = run(FactualCorrectness(), script)
    p, r = 2 / 3, 1 / 2
    assert score.value == pytest.approx(2 * p * r / (p + r))  # 0.5714
    assert [v.subject for v in score.verdicts] == [
        "answer claim: The Eiffel Tower is in Paris.",
        "answer claim: It was built in 1889.",
        "answer claim: It is made of gold.",
        "reference claim: The Eiffel Tower stands in Paris.",
        "reference claim: It was completed in 1889.",
    ]
    assert [v.value for v in score.verdicts] == [1, 1, 0, 1, 0]
    assert "precision 0.667, recall 0.500" in (score.explanation or "")
    # Answer claims are checked against the reference, reference claims against the answer.
    assert "<context>\n[1] " + (SAMPLE.reference or "") in judge.requests[1].messages[1]["content"]
    assert "<context>\n[1] " + (SAMPLE.answer or "") in judge.requests[5].messages[1]["content"]


@pytest.mark.parametrize(
    ("mode", "script", "expected"),
    [
        ("precision", [ANSWER_CLAIMS, verdict(1), verdict(0), verdict(0)], 1 / 3),
        ("recall", [REFERENCE_CLAIMS, verdict(1), verdict(1)], 1.0),
        ("f1", [ANSWER_CLAIMS, verdict(0), verdict(0), verdict(0), REFERENCE_CLAIMS, verdict(0), verdict(0)], 0.0),
    ],
)
def test_factual_modes_make_only_the_calls_they_need(mode: str, script: list[object], expected: float) -> None:
    score, _ = run(FactualCorrectness(mode=mode), script)  # type: ignore[arg-type]
    assert score.value == pytest.approx(expected)
    assert score.spec is not None and score.spec.params["mode"] == mode


def test_factual_no_claims_is_unscored() -> None:
    score, _ = run(FactualCorrectness(), [ANSWER_CLAIMS, verdict(1), verdict(1), verdict(1), statements()])
    assert score.unscored_reason is UnscoredReason.NO_STATEMENTS
    assert len(score.verdicts) == 3, "verdicts gathered before the failure are kept"
    score, _ = run(FactualCorrectness(mode="precision"), [statements()])
    assert score.unscored_reason is UnscoredReason.NO_STATEMENTS


@pytest.mark.parametrize(("bad", "reason"), FAILURES)
def test_factual_judge_failures_are_unscored_with_evidence(bad: object, reason: UnscoredReason) -> None:
    score, _ = run(FactualCorrectness(), [ANSWER_CLAIMS, verdict(1), bad])
    assert score.unscored_reason is reason
    assert [v.subject for v in score.verdicts] == ["answer claim: The Eiffel Tower is in Paris."]
    assert (score.detail or "").startswith("answer claim 2")


@pytest.mark.parametrize("update", [{"reference": None}, {"answer": None}])
def test_factual_missing_fields_are_unscored(update: dict[str, object]) -> None:
    score, _ = run(FactualCorrectness(), [], SAMPLE.model_copy(update=update))
    assert score.unscored_reason is UnscoredReason.MISSING_FIELD
    assert FactualCorrectness().required_fields == ("answer", "reference")


def test_factual_rejects_unknown_mode() -> None:
    with pytest.raises(ConfigError):
        FactualCorrectness(mode="accuracy")  # type: ignore[arg-type]


def test_context_recall_with_a_function_judge_end_to_end() -> None:
    """A fake judge that marks a statement supported when it appears verbatim in the context."""

    def fn(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
        user = messages[1]["content"]
        if "<statement>" not in user:
            return statements("The Eiffel Tower is in Paris.", "It is 330 m tall.")
        statement = user.split("<statement>\n")[1].split("\n</statement>")[0]
        context = user.split("<context>\n")[1].split("\n</context>")[0]
        return verdict(1 if statement.rstrip(".") in context else 0)

    sample = SAMPLE.model_copy(update={"contexts": ("The Eiffel Tower is in Paris, France.",)})
    score = asyncio.run(ContextRecall().score(sample, FunctionJudge(fn)))
    assert score.value == 0.5


def test_sentence_decomposer_needs_no_extraction_call() -> None:
    sample = SAMPLE.model_copy(update={"reference": "The tower is in Paris. It was completed in 1889."})
    score, _ = run(ContextRecall(decomposer="sentences"), [verdict(1), verdict(0)], sample)
    assert score.value == 0.5
    assert [v.subject for v in score.verdicts] == ["The tower is in Paris.", "It was completed in 1889."]
    assert score.spec is not None and score.spec.params["decomposer"] == "sentences"
    with pytest.raises(ConfigError):
        ContextRecall(decomposer="words")  # type: ignore[arg-type]


@pytest.mark.reasks
def test_reasked_calls_are_kept_as_evidence() -> None:
    """Regression: metrics kept only an answer's last call, dropping the invalid first try."""
    score, _ = run(ContextRecall(), [statements("Fact a holds."), "no JSON here", verdict(1)])
    assert score.value == 1.0
    assert [c.purpose for c in score.calls] == [
        "faithfulness.statements",
        "faithfulness.verdict",
        "faithfulness.verdict.reask",
    ]
    assert score.calls[1].raw_output == "no JSON here"
