"""RAG metrics from binary verdicts: answer relevancy, context precision and recall, factual correctness.

Claims are extracted with the faithfulness statement prompt (:class:`LLMDecomposer`) and
checked one at a time with the faithfulness verdict prompt (``faithfulness.verdict``), so
every statement-level verdict in assay is the same question, asked the same way: is this
statement supported by this text? Only the text it is checked against changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from pydantic import BaseModel

from assay._samples import Sample
from assay._scores import Binary, JudgeCall, MetricSpec, Score, Verdict
from assay.errors import ConfigError
from assay.grounding._decompose import STATEMENTS_PROMPT
from assay.grounding._verify import StatementVerifier
from assay.metrics._common import (
    check_reference_mode,
    failed,
    make_decomposer,
    missing_field,
    prompt_versions,
    reference_mode_name,
    supported_share,
    unusable_split,
)
from assay.metrics._faithfulness import DecomposerName, StatementJudgement
from assay.metrics._spec import spec_from_fields
from assay.models._protocol import GenerateConfig, JudgeModel
from assay.parsing import Unparsed
from assay.prompts import JudgePrompt, ask

__all__ = [
    "CHUNK_PROMPT",
    "RELEVANCY_PROMPT",
    "AnswerRelevancy",
    "ChunkUsefulness",
    "ContextPrecision",
    "ContextRecall",
    "FactualCorrectness",
    "QuestionAnswer",
    "RelevanceJudgement",
    "average_precision",
]


def _config() -> GenerateConfig:
    return GenerateConfig(max_tokens=256)


def _verifier() -> StatementVerifier:
    return StatementVerifier(config=_config())


async def _check_statements(
    statements: Sequence[str],
    against: Sequence[str],
    judge: JudgeModel,
    verifier: StatementVerifier,
    calls: list[JudgeCall],
    *,
    label: str = "statement",
) -> tuple[list[Verdict], Unparsed | None]:
    """Each statement's verdict against the texts ``against``, through the faithfulness verifier.

    The same path as faithfulness (logit threshold on judges that expose logits, chunking
    of long texts); stops at the first failure and returns the verdicts gathered so far.
    """
    return await verifier.check(against, statements, judge, calls, label=label)


def _missing(name: str, fields: Sequence[str], sample: Sample, spec: MetricSpec) -> Score | None:
    absent = [f for f in fields if not sample.field_present(f)]
    if not absent:
        return None
    return missing_field(name, f"sample has no {' or '.join(absent)}", spec)


# --- answer relevancy -------------------------------------------------------------------


class QuestionAnswer(BaseModel):
    """Input of the answer relevancy prompt."""

    question: str
    answer: str


class RelevanceJudgement(BaseModel):
    """Whether the answer addresses the question, whether it evades, and why."""

    relevant: Binary
    noncommittal: Binary
    reason: str


RELEVANCY_PROMPT: JudgePrompt[QuestionAnswer, RelevanceJudgement] = JudgePrompt(
    name="answer_relevancy.verdict",
    version="1",
    instruction=(
        "You check whether an answer addresses the question it was given. relevant is 1 when "
        "the answer responds to what the question actually asks (whether or not it is "
        "correct), and 0 when it answers a different question, talks around the question, "
        "or is mostly about something else. noncommittal is 1 when the answer evades or "
        "declines: it says it does not know, cannot tell, or gives only vague hedging with no "
        "actual answer; otherwise 0. Judge relevance only, not truth."
    ),
    input_model=QuestionAnswer,
    output_model=RelevanceJudgement,
    question=(
        "Does the answer in <answer> address the question in <question>, and is it noncommittal? "
        "Give relevant 1 or 0, noncommittal 1 or 0, then a one-sentence reason."
    ),
)


@dataclass(frozen=True)
class AnswerRelevancy:
    """Whether the answer addresses the question: 1 or 0, from one direct binary verdict.

    score = relevant x (1 - noncommittal). Ragas instead generates questions from the
    answer and averages their embedding similarity to the real question; that needs an
    embedding model, yields a cosine in the middle of the scale that is hard to threshold,
    and loses the reason. A direct verdict needs no embeddings, stays binary and keeps the
    judge's reason. Ragas' noncommittal flag is kept: an evasive answer ("I don't know")
    scores 0 even when it is on topic.

    Two verdicts are recorded, both in the positive sense (1 is good): the question with
    ``relevant``, and "the answer commits to a response" with ``1 - noncommittal``.
    """

    config: GenerateConfig = field(default_factory=_config)
    name: str = field(default="answer_relevancy", init=False)
    version: str = field(default="1", init=False)
    required_fields: ClassVar[tuple[str, ...]] = ("question", "answer")
    """A question and an answer."""

    def spec(self) -> MetricSpec:
        """Name, version, decoding settings and the prompt version."""
        return spec_from_fields(self, prompts=prompt_versions(RELEVANCY_PROMPT))

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """One call: does the answer address the question, and is it noncommittal?"""
        spec = self.spec()
        if (missing := _missing(self.name, self.required_fields, sample, spec)) is not None:
            return missing
        assert sample.question is not None and sample.answer is not None
        result = await ask(
            judge, RELEVANCY_PROMPT, QuestionAnswer(question=sample.question, answer=sample.answer), config=self.config
        )
        if result.output is None:
            return failed(self.name, result.failure, spec, calls=result.calls)
        out = result.output
        committal: Literal[0, 1] = 1 if out.noncommittal == 0 else 0
        verdicts = [
            Verdict(subject=sample.question, value=out.relevant, reason=out.reason),
            Verdict(subject="the answer commits to a response (not evasive)", value=committal, reason=out.reason),
        ]
        value = float(out.relevant == 1 and committal == 1)
        explanation = (
            f"relevant {out.relevant}, noncommittal {out.noncommittal}: {out.reason}"
            if value == 0
            else f"the answer addresses the question: {out.reason}"
        )
        return Score.scored(self.name, value, verdicts=verdicts, explanation=explanation, calls=result.calls, spec=spec)


# --- context precision ------------------------------------------------------------------


def average_precision(relevance: Sequence[int]) -> float:
    """Average precision of a ranked list of binary relevance judgements (Ragas' context precision).

    AP = (1 / R) * sum over ranks k = 1..K with rel_k = 1 of precision@k, where
    precision@k = (rel_1 + ... + rel_k) / k and R = rel_1 + ... + rel_K is the number of
    relevant items *in the list* (not in the collection, unlike trec_eval's AP). A list
    with no relevant item scores 0.
    """
    hits = 0
    total = 0.0
    for k, rel in enumerate(relevance, start=1):
        if rel:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


class ChunkUsefulness(BaseModel):
    """Input of the context precision prompt (the chunk last: question and answer are a shared prefix)."""

    question: str
    answer: str
    context: str


CHUNK_PROMPT: JudgePrompt[ChunkUsefulness, StatementJudgement] = JudgePrompt(
    name="context_precision.verdict",
    version="1",
    instruction=(
        "You check whether one retrieved passage was useful for arriving at a given answer "
        "to a question. Verdict 1 means the passage gives information that the answer uses "
        "or that supports part of it. Verdict 0 means the passage is off topic, or on topic "
        "but contributes nothing the answer needs: when in doubt, 0."
    ),
    input_model=ChunkUsefulness,
    output_model=StatementJudgement,
    question=(
        "Was the passage in <context> useful for arriving at the answer in <answer> to the question in "
        "<question>? Give verdict 1 or 0, then a one-sentence reason."
    ),
)


@dataclass(frozen=True)
class ContextPrecision:
    """Were the useful chunks ranked first? Average precision over binary per-chunk verdicts.

    One verdict per context chunk, in rank order: was this chunk useful for arriving at
    the reference answer (or the produced answer)? With rel_k the verdict of the chunk at
    rank k (1-based) and R = sum of rel_k::

        score = (1 / R) * sum_{k : rel_k = 1} (rel_1 + ... + rel_k) / k      (0 if R = 0)

    This is Ragas' context precision: average precision with the denominator counting
    the useful chunks that were retrieved. Chunks judged useless all round score 0 (a
    real outcome, not unscored).

    Args:
        reference: ``True``: judge usefulness for ``sample.reference``; ``False``: for
            ``sample.answer``; ``None``: the reference when the sample has one, else the answer.
        config: Decoding settings for the verdict calls.
    """

    reference: bool | None = None
    config: GenerateConfig = field(default_factory=_config)
    version: str = field(default="1", init=False)

    def __post_init__(self) -> None:
        check_reference_mode("context precision", self.reference)

    @property
    def name(self) -> str:
        """``context_precision`` plus ``_with_reference`` / ``_without_reference`` when fixed."""
        return reference_mode_name("context_precision", self.reference)

    @property
    def required_fields(self) -> tuple[str, ...]:
        """Question and contexts, plus the reference (``True``) or the answer (``False``).

        With ``reference=None`` either will do; a sample with neither is unscored.
        """
        if self.reference is None:
            return ("question", "contexts")
        return ("question", "contexts", "reference" if self.reference else "answer")

    def spec(self) -> MetricSpec:
        """Name, version, the reference mode, decoding settings and the prompt version."""
        return spec_from_fields(self, prompts=prompt_versions(CHUNK_PROMPT))

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Judge each chunk in rank order, then take the average precision."""
        spec = self.spec()
        if (missing := _missing(self.name, self.required_fields, sample, spec)) is not None:
            return missing
        target = sample.reference if self.reference is not False and sample.reference else None
        if target is None and self.reference is not True:
            target = sample.answer
        if not target:
            return missing_field(self.name, "sample has no reference or answer", spec)
        assert sample.question is not None
        calls: list[JudgeCall] = []
        verdicts: list[Verdict] = []
        for k, chunk in enumerate(sample.contexts, start=1):
            result = await ask(
                judge,
                CHUNK_PROMPT,
                ChunkUsefulness(question=sample.question, answer=target, context=chunk),
                config=self.config,
            )
            calls.extend(result.calls)
            if result.output is None:
                return failed(self.name, result.failure, spec, during=f"context {k}", verdicts=verdicts, calls=calls)
            verdicts.append(Verdict(subject=chunk, value=result.output.verdict, reason=result.output.reason))
        relevance = [1 if v.value == 1 else 0 for v in verdicts]
        useful = [k for k, rel in enumerate(relevance, start=1) if rel]
        explanation = f"useful chunks at ranks {useful} of {len(relevance)}" if useful else "no chunk was useful"
        return Score.scored(
            self.name, average_precision(relevance), verdicts=verdicts, explanation=explanation, calls=calls, spec=spec
        )


# --- context recall ---------------------------------------------------------------------


@dataclass(frozen=True)
class ContextRecall:
    """Share of the reference's statements that the retrieved contexts support.

    The reference is split into atomic statements (``faithfulness.statements``), each
    statement gets one binary verdict "attributable to the contexts" (``faithfulness.verdict``
    with the contexts as context); score = attributed statements / statements. A reference
    with no statements is unscored (``no_statements``).

    Args:
        decomposer: ``llm`` (atomic statements, pronouns resolved) or ``sentences`` (pysbd).
        verifier: How each verdict is read (logit threshold or generated JSON, with its
            decoding settings) and the chunking of long texts; the same as faithfulness.
    """

    decomposer: DecomposerName = "llm"
    verifier: StatementVerifier = field(default_factory=_verifier)
    name: str = field(default="context_recall", init=False)
    version: str = field(default="1", init=False)
    required_fields: ClassVar[tuple[str, ...]] = ("reference", "contexts")
    """A reference and at least one context."""

    def __post_init__(self) -> None:
        make_decomposer(self.decomposer)

    def spec(self) -> MetricSpec:
        """Name, version, the decomposer, the verifier and the prompt versions."""
        return spec_from_fields(self, prompts=prompt_versions(STATEMENTS_PROMPT))

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Split the reference, judge every statement against the contexts, aggregate."""
        spec = self.spec()
        if (missing := _missing(self.name, self.required_fields, sample, spec)) is not None:
            return missing
        assert sample.reference is not None
        split = await make_decomposer(self.decomposer).decompose(sample.question or "", sample.reference, judge)
        calls = list(split.calls)
        if (unusable := unusable_split(self.name, split, spec, text="reference", calls=calls)) is not None:
            return unusable
        verdicts, failure = await _check_statements(split.statements, sample.contexts, judge, self.verifier, calls)
        if failure is not None:
            return failed(self.name, failure, spec, verdicts=verdicts, calls=calls)
        return supported_share(
            self.name,
            verdicts,
            calls,
            spec,
            counted="reference statements attributable to the contexts",
            rejected="not found",
        )


# --- factual correctness ----------------------------------------------------------------

FactualMode = Literal["f1", "precision", "recall"]


@dataclass(frozen=True)
class FactualCorrectness:
    """Claim-level precision, recall or F1 of the answer against a reference answer.

    - precision = answer claims supported by the reference / answer claims
      (verdict subjects prefixed ``answer claim:``);
    - recall = reference claims supported by the answer / reference claims
      (verdict subjects prefixed ``reference claim:``);
    - F1 = 2PR / (P + R), 0 when P = R = 0.

    Claims come from ``faithfulness.statements``; every claim gets one binary verdict
    from ``faithfulness.verdict`` with the other text as the context. Every verdict is
    kept. A side with no claims makes the score unscored (``no_statements``) when that
    side is needed (precision needs answer claims, recall reference claims, F1 both).

    Args:
        mode: ``f1`` (default), ``precision`` or ``recall``; only the calls the mode
            needs are made.
        decomposer: ``llm`` (atomic claims, pronouns resolved) or ``sentences`` (pysbd).
        verifier: How each verdict is read (logit threshold or generated JSON, with its
            decoding settings) and the chunking of long texts; the same as faithfulness.
    """

    mode: FactualMode = "f1"
    decomposer: DecomposerName = "llm"
    verifier: StatementVerifier = field(default_factory=_verifier)
    name: str = field(default="factual_correctness", init=False)
    version: str = field(default="1", init=False)
    required_fields: ClassVar[tuple[str, ...]] = ("answer", "reference")
    """An answer and a reference."""

    def __post_init__(self) -> None:
        if self.mode not in ("f1", "precision", "recall"):
            raise ConfigError(f"factual correctness mode must be f1, precision or recall, not {self.mode!r}")
        make_decomposer(self.decomposer)

    def spec(self) -> MetricSpec:
        """Name, version, mode, the decomposer, the verifier and the prompt versions."""
        return spec_from_fields(self, prompts=prompt_versions(STATEMENTS_PROMPT))

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Split each side into claims, check each claim against the other side, aggregate."""
        spec = self.spec()
        if (missing := _missing(self.name, self.required_fields, sample, spec)) is not None:
            return missing
        assert sample.answer is not None and sample.reference is not None
        question = sample.question or ""
        calls: list[JudgeCall] = []
        verdicts: list[Verdict] = []
        ratios: dict[str, float] = {}
        sides = {
            "precision": ("answer", sample.answer, sample.reference),
            "recall": ("reference", sample.reference, sample.answer),
        }
        wanted = ("precision", "recall") if self.mode == "f1" else (self.mode,)
        for part in wanted:
            side, text, other = sides[part]
            split = await make_decomposer(self.decomposer).decompose(question, text, judge)
            calls.extend(split.calls)
            unusable = unusable_split(
                self.name, split, spec, text=side, during=f"{side} claim extraction", verdicts=verdicts, calls=calls
            )
            if unusable is not None:
                return unusable
            checked, failure = await _check_statements(
                split.statements, [other], judge, self.verifier, calls, label=f"{side} claim"
            )
            verdicts.extend(v.model_copy(update={"subject": f"{side} claim: {v.subject}"}) for v in checked)
            if failure is not None:
                return failed(self.name, failure, spec, verdicts=verdicts, calls=calls)
            ratios[part] = sum(1 for v in checked if v.value == 1) / len(checked)
        if self.mode == "f1":
            p, r = ratios["precision"], ratios["recall"]
            value = 2 * p * r / (p + r) if p + r else 0.0
        else:
            value = ratios[self.mode]
        explanation = ", ".join(f"{k} {v:.3f}" for k, v in ratios.items())
        if self.mode == "f1":
            explanation += f", F1 {value:.3f}"
        return Score.scored(self.name, value, verdicts=verdicts, explanation=explanation, calls=calls, spec=spec)
