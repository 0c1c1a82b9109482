"""Statement verification: logit thresholds, reasons for failing statements, chunking."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from assay import Faithfulness, Sample, UnscoredReason, evaluate
from assay._scores import Usage
from assay.errors import ConfigError, JudgeError
from assay.grounding._verify import StatementVerifier, chunk_contexts
from assay.models import ChatMessage, ChoiceProbabilities, GenerateConfig, JudgeResponse, ScriptedJudge


class LogitJudge(ScriptedJudge):
    """A test double with logits: P(1) is looked up by statement; reasons are canned."""

    def __init__(self, p1: dict[str, float], fail_on: str | None = None) -> None:
        super().__init__([])
        self.p1 = p1
        self.fail_on = fail_on
        self.seen: list[tuple[str, str]] = []  # (statement, first context) per probability call
        self.reasons: list[str] = []

    async def choice_probabilities(
        self,
        messages: Sequence[ChatMessage],
        *,
        prefix: str,
        choices: Sequence[str],
        config: GenerateConfig | None = None,
    ) -> dict[str, float]:
        user = messages[-1]["content"]
        statement = user.split("<statement>\n")[1].split("\n</statement>")[0]
        context = user.split("<context>\n")[1].split("\n</context>")[0]
        self.seen.append((statement, context))
        if statement == self.fail_on:
            raise JudgeError("boom")
        p = self.p1[statement] if "KEY" in context or len(self.p1) == 1 else 0.01
        return ChoiceProbabilities({"1": p, "0": 1 - p}, Usage(prompt_tokens=len(user)))

    async def complete_string(
        self,
        messages: Sequence[ChatMessage],
        *,
        prefix: str,
        max_chars: int = 200,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        self.reasons.append(prefix)
        return JudgeResponse(text="the context says otherwise", model="logit")


def test_threshold_decides_and_only_failing_statements_get_reasons() -> None:
    judge = LogitJudge({"a": 0.9, "b": 0.6, "c": 0.2})
    verifier = StatementVerifier(threshold=0.7)
    outcomes = _run(verifier.verify(["KEY context"], ["a", "b", "c"], judge))
    assert [o.verdict.value for o in outcomes if o.verdict] == [1, 0, 0]
    assert [o.probability for o in outcomes] == pytest.approx([0.9, 0.6, 0.2])
    p1_calls = [c for o in outcomes for c in o.calls if c.purpose.endswith(".p1")]
    assert len(p1_calls) == 3 and all(c.usage.prompt_tokens > 0 for c in p1_calls), "logit calls record their tokens"
    assert judge.reasons == ['{"verdict": 0, "reason": "'] * 2
    assert outcomes[1].verdict is not None
    assert outcomes[1].verdict.reason == "the judge's P(supported) 0.60 < threshold 0.7: the context says otherwise"
    details = outcomes[1].verdict.details
    assert details is not None and details["p_judge"] == pytest.approx(0.6) and details["threshold"] == 0.7
    assert [c.purpose for c in outcomes[1].calls] == ["faithfulness.verdict.p1", "faithfulness.verdict.reason"]


def test_max_over_chunks_with_early_exit_and_chunk_major_order() -> None:
    filler = "Filler sentence number one. " * 40  # ~1100 chars per context
    contexts = [filler, filler + " KEY fact.", filler]
    judge = LogitJudge({"a": 0.95, "b": 0.3})
    chunked = StatementVerifier(chunk_chars=1500, evidence_chars=None)
    outcomes = _run(chunked.verify(contexts, ["a", "b"], judge))
    assert [o.verdict.value for o in outcomes if o.verdict] == [1, 0]
    # chunk by chunk; "a" is not asked again once a chunk supports it
    statements = [s for s, _ in judge.seen]
    assert statements == ["a", "b", "a", "b", "b"]
    assert outcomes[1].probability == pytest.approx(0.3)


def test_judge_error_stops_the_sample_and_faithfulness_names_the_statement() -> None:
    judge = LogitJudge({"Sky is blue.": 0.9, "Grass is red.": 0.9}, fail_on="Grass is red.")
    sample = Sample(id="x", answer="Sky is blue. Grass is red.", contexts=("KEY",))
    score = evaluate([sample], [Faithfulness(decomposer="sentences")], judge).results[0].scores["faithfulness"]
    assert score.unscored_reason is UnscoredReason.JUDGE_ERROR
    assert "statement 2 ('Grass is red.')" in (score.detail or "")
    assert [v.value for v in score.verdicts] == [1]


def test_generate_method_on_judges_without_logits() -> None:
    judge = ScriptedJudge([json.dumps({"verdict": 0, "reason": "no"}), json.dumps({"verdict": 1, "reason": "yes"})])
    outcomes = _run(StatementVerifier(chunk_chars=200).verify(["x" * 150, "y" * 150], ["s"], judge))
    assert outcomes[0].verdict is not None and outcomes[0].verdict.value == 1 and outcomes[0].verdict.reason == "yes"
    with pytest.raises(ConfigError, match="does not expose logits"):
        StatementVerifier(method="threshold").uses_threshold(ScriptedJudge([]))


@pytest.mark.parametrize("bad", [{"threshold": 0.0}, {"threshold": 1.0}, {"chunk_chars": 50}, {"method": "vibes"}])
def test_invalid_settings(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        StatementVerifier(**bad)  # type: ignore[arg-type]


def test_chunking_packs_whole_contexts_and_splits_long_ones_at_sentences() -> None:
    assert chunk_contexts(["a. b.", "c."], 200) == [["a. b.", "c."]]
    long = "".join(f"Sentence {i} is here. " for i in range(100))  # ~2200 chars
    chunks = chunk_contexts([long, "short one."], 1000)
    assert all(sum(len(p) for p in c) <= 1000 for c in chunks)
    assert "".join(p for c in chunks for p in c).replace(" ", "") == (long + "short one.").replace(" ", "")
    assert all(c[0].startswith("Sentence") or c[0] == "short one." for c in chunks)


def _run(coro: object) -> list:  # type: ignore[type-arg]
    import asyncio

    return asyncio.run(coro)  # type: ignore[arg-type]


@pytest.mark.parametrize("metric", ["faithfulness", "context_recall", "factual_correctness"])
def test_threshold_and_chunk_size_are_metric_options_recorded_in_the_spec(metric: str) -> None:
    from assay.metrics._registry import build_metric

    built = build_metric(metric, {"threshold": "0.8", "chunk_chars": "3000"})
    verifier = built.spec().params["verifier"]
    assert (verifier["threshold"], verifier["chunk_chars"]) == (0.8, 3000)
    assert verifier["config"] == built.verifier.config.model_dump()  # decoding settings of generated verdicts
    default = build_metric(metric).spec().params["verifier"]
    assert default["threshold"] == StatementVerifier().threshold
    with pytest.raises(ConfigError, match="threshold must be between 0 and 1"):
        build_metric(metric, {"threshold": "1.5"})
    with pytest.raises(ConfigError, match=metric):
        build_metric(metric, {"threshold": "high"})


@pytest.mark.parametrize("threshold, expected", [(0.6, 1.0), (0.8, 0.0)])
def test_context_recall_applies_its_threshold(threshold: float, expected: float) -> None:
    from assay.metrics._rag import ContextRecall

    judge = LogitJudge({"Paris is in France.": 0.7})
    sample = Sample(id="s", question="q", reference="Paris is in France.", contexts=("KEY Paris is in France.",))
    metric = ContextRecall(decomposer="sentences", verifier=StatementVerifier(threshold=threshold))
    score = evaluate([sample], [metric], judge).results[0].scores["context_recall"]
    assert score.value == expected
    details = score.verdicts[0].details
    assert details is not None and details["threshold"] == threshold and details["p_judge"] == pytest.approx(0.7)


# --- every reason starts with what decided the verdict (issue 34, item 3) -----------------------


@pytest.mark.parametrize(
    ("statement", "context", "p", "noted"),
    [
        # the judge decided (P below the threshold); a lexical note rides along and is said to decide nothing
        (
            "The museum had previously closed in 2019.",
            "KEY the museum closed in 2019 after a fire.",
            0.38,
            "previously",
        ),
        ("Lina formerly coached the team in Oslo.", "KEY Lina coached the team in Oslo.", 0.21, "formerly"),
        ("The bridge was quietly reopened in May.", "KEY The bridge was reopened in May.", 0.44, "quietly"),
    ],
)
def test_a_verdict_the_judge_decided_says_so_first_and_its_notes_after(
    statement: str, context: str, p: float, noted: str
) -> None:
    outcome = _run(StatementVerifier(reasons="none").verify([context], [statement], LogitJudge({statement: p})))[0]
    assert outcome.verdict is not None and outcome.verdict.value == 0
    reason = outcome.verdict.reason
    assert reason.startswith(f"the judge's P(supported) {p:.2f} < threshold 0.5")
    assert "notes, not what decided it:" in reason and noted in reason
    assert reason.index("threshold") < reason.index(noted)


@pytest.mark.parametrize(
    ("statement", "context", "cause"),
    [
        ("The river is 7,000 km long.", "KEY The river is 6,400 km long.", "number 7,000 km is not in the evidence"),
        (
            "The treaty was signed by Norway.",
            "KEY The treaty was signed by Sweden.",
            'name "Norway" is not in the evidence',
        ),
        ("The plant did not reopen in 2020.", "KEY The plant reopened in 2020.", 'the statement negates "reopen"'),
    ],
)
def test_a_vetoed_verdict_names_the_veto_and_its_cause_first(statement: str, context: str, cause: str) -> None:
    outcome = _run(StatementVerifier(reasons="none").verify([context], [statement], LogitJudge({statement: 0.9})))[0]
    assert outcome.verdict is not None and outcome.verdict.value == 0
    reason = outcome.verdict.reason
    assert reason.startswith("vetoed by the detail check: ")
    assert cause in reason.split("(the judge's P")[0]
    assert "the judge's P(supported) 0.90 >= threshold 0.5: would have passed it" in reason


def test_a_supported_verdict_says_the_judge_passed_it_and_what_the_evidence_implies() -> None:
    statement, context = "Two bridges cross the river.", "KEY The North Bridge and the South Bridge cross the river."
    outcome = _run(StatementVerifier().verify([context], [statement], LogitJudge({statement: 0.8})))[0]
    assert outcome.verdict is not None and outcome.verdict.value == 1
    reason = outcome.verdict.reason
    assert reason.startswith("the judge's P(supported) 0.80 >= threshold 0.5: context 1 says:")
    assert "implied by the evidence: Two bridges: the evidence describes 2 (north; south)" in reason


class BatchingJudge(LogitJudge):
    """A LogitJudge that says it decodes calls together, and records how many were in flight at once."""

    def __init__(self, p1: dict[str, float], batched: int, fail_on: str | None = None) -> None:
        super().__init__(p1, fail_on=fail_on)
        self.batched = batched
        self.in_flight = 0
        self.most = 0

    @property
    def batched_calls(self) -> int:
        return self.batched

    async def choice_probabilities(self, messages, *, prefix, choices, config=None):  # type: ignore[no-untyped-def]
        import asyncio

        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(0)  # a batch forms while the others queue
            return await super().choice_probabilities(messages, prefix=prefix, choices=choices, config=config)
        finally:
            self.in_flight -= 1


@pytest.mark.parametrize("read", ["whole", "shared window", "own windows"])
def test_statements_on_one_context_reach_a_batching_judge_together(read: str) -> None:
    """The verdict calls on one context are asked at once of a judge that decodes calls together.

    Each way of reading the contexts (whole, one window shared by every statement, or each
    statement's own window, grouped where they are the same) gives the same verdicts in the
    same order whichever way the calls are made.
    """
    statements = ["The KEY tower is tall.", "The KEY tower is old.", "The KEY tower is red.", "The KEY tower is far."]
    p1 = {"The KEY tower is tall.": 0.9, "The KEY tower is old.": 0.2, "The KEY tower is red.": 0.8}
    p1["The KEY tower is far."] = 0.1
    context = "The KEY tower is tall and old. " + ("It stands by the river. " * 80 if read != "whole" else "")
    verifier = StatementVerifier(
        threshold=0.5,
        reasons="none",
        verbatim=False,
        evidence_chars=600,
        whole_chars=400,
        shared_evidence=read != "own windows",
    )
    together, alone = BatchingJudge(p1, batched=8), BatchingJudge(p1, batched=1)
    got = {}
    for judge in (together, alone):
        outcomes = _run(verifier.verify([context], statements, judge))
        got[judge.batched] = [(o.verdict.value if o.verdict else None, o.probability) for o in outcomes]
    assert together.most == len(statements)  # all four at once: one batch for the local judge
    assert alone.most == 1
    assert got[8] == got[1] == [(1, 0.9), (0, 0.2), (1, 0.8), (0, 0.1)]
    assert sorted(s for s, _ in together.seen) == sorted(statements)
    if read != "whole":  # each judged on an evidence window, not on the whole context
        assert all(len(seen) < len(context) for _, seen in together.seen)


def test_a_failed_call_in_a_batch_names_the_first_failure_and_keeps_the_verdicts_judged() -> None:
    """Asked at once, every call runs: the first failure in order is the sample's, the others keep their verdicts.

    One at a time, the first failure still stops the calls after it (nothing is asked
    that the sample will not use).
    """
    statements = ["KEY a.", "KEY b.", "KEY c.", "KEY d."]
    p1 = dict.fromkeys(statements, 0.9)
    verifier = StatementVerifier(threshold=0.5, reasons="none", verbatim=False)
    together = BatchingJudge(p1, batched=8, fail_on="KEY b.")
    outcomes = _run(verifier.verify(["KEY context."], statements, together))
    assert [o.verdict.value if o.verdict else None for o in outcomes] == [1, None, 1, 1]
    assert outcomes[1].failure is not None and outcomes[1].failure.detail == "boom"
    alone = BatchingJudge(p1, batched=1, fail_on="KEY b.")
    outcomes = _run(verifier.verify(["KEY context."], statements, alone))
    assert [o.verdict.value if o.verdict else None for o in outcomes] == [1, None, None, None]
    assert [s for s, _ in alone.seen] == ["KEY a.", "KEY b."]
    assert [len(o.calls) for o in outcomes] == [1, 1, 0, 0]
