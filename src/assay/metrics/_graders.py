"""Graders (after Adaptive's grader family): criteria, scales, templates and combinations.

- :class:`BinaryJudgeGrader`: PASS / FAIL / NA against a criterion, with optional shots.
- :class:`RangeJudgeGrader`: a level on a declared scale, normalised to [0, 1]; optionally
  the expected level under the judge's probabilities.
- :class:`TemplatedPromptJudgeGrader`: a user-written prompt with named placeholders.
- :class:`CombinedGrader`: a weighted mean of other metrics.

NA is "the criterion does not apply": an unscored result with reason ``not_applicable``,
excluded from means and counted. See ``docs/design/graders.md`` for the decisions.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import string
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, create_model, model_validator

from assay._samples import Message, Sample
from assay._scores import Binary, JudgeCall, MetricSpec, PendingVerdict, Score, UnscoredReason, Usage, Verdict
from assay.errors import ConfigError, JudgeError
from assay.metrics._base import Metric, missing_fields, score_safely
from assay.metrics._common import failed, lacking, missing_field, prompt_versions
from assay.metrics._composite import SubMetric
from assay.metrics._escalate import Escalation, pending_score, settle
from assay.metrics._spec import spec_from_fields
from assay.models._protocol import ChatMessage, ChoiceScorer, GenerateConfig, JudgeModel, calls_made
from assay.parsing import Unparsed, parse_output
from assay.prompts import DATA_RULES, Example, JudgePrompt, call_judge, neutralise

__all__ = [
    "PLACEHOLDERS",
    "BinaryGrade",
    "BinaryJudgeGrader",
    "CombinedGrader",
    "GradedConversation",
    "Label",
    "RangeJudgeGrader",
    "Shot",
    "TemplatedPromptJudgeGrader",
]

_LABELS = ("PASS", "FAIL", "NA")


def _label_validator(allowed: tuple[str, ...]) -> BeforeValidator:
    """Accept the labels in any case, with surrounding spaces and one trailing period.

    ``"N/A"`` is read as ``"NA"``. Anything else (``"PASSED"``, ``"yes"``, ``true``, ``1``,
    ``"PASS/FAIL"``) is a parse failure, never a guess.
    """

    def check(value: object) -> object:
        if isinstance(value, str):
            text = value.strip()
            text = text[:-1].rstrip() if text.endswith(".") else text
            text = text.upper()
            text = "NA" if text == "N/A" else text
            if text in allowed:
                return text
        raise ValueError(f"label must be one of {', '.join(allowed)}, got {value!r}")

    return BeforeValidator(check)


Label = Annotated[Literal["PASS", "FAIL", "NA"], _label_validator(_LABELS)]
"""A grader label: PASS, FAIL or NA (case-insensitive, one trailing period allowed)."""

_PassFail = Annotated[Literal["PASS", "FAIL"], _label_validator(("PASS", "FAIL"))]


class BinaryGrade(BaseModel):
    """The binary grader's answer: reasoning first, then the label."""

    reasoning: str
    label: Label


class _PassFailGrade(BaseModel):
    reasoning: str
    label: _PassFail


class _VerdictGrade(BaseModel):
    reasoning: str
    verdict: Binary


class GradedConversation(BaseModel):
    """Input of the binary and range graders: the conversation as a JSON list of turns.

    JSON quoting keeps every turn's text inside its string, so a turn cannot fake another
    turn; the block tag itself is neutralised by :class:`~assay.prompts.JudgePrompt`.
    """

    conversation: str


def _turns(messages: Sequence[Message]) -> str:
    """A JSON list with one turn per line (compact, and every turn's text stays inside its string)."""
    turns = (json.dumps(m.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False) for m in messages)
    return "[\n" + ",\n".join(turns) + "\n]"


def _qa_messages(question: str | None, answer: str) -> tuple[Message, ...]:
    turns = [Message(role="user", content=question)] if question else []
    return (*turns, Message(role="assistant", content=answer))


def conversation_of(sample: Sample) -> str | None:
    """The conversation a grader judges: the trace if present, else question + answer.

    ``None`` when the sample has neither a trace nor an answer.
    """
    if sample.trace:
        return _turns(sample.trace)
    if sample.answer:
        return _turns(_qa_messages(sample.question, sample.answer))
    return None


def _conversation_input(sample: Sample) -> GradedConversation:
    conversation = conversation_of(sample)
    if conversation is None:
        raise ValueError("sample has neither a trace nor an answer")
    return GradedConversation(conversation=conversation)


class Shot(BaseModel):
    """A few-shot example for :class:`BinaryJudgeGrader`: a conversation, its label and reasoning.

    Give either ``messages`` (a multi-turn conversation) or ``answer`` (with an optional
    ``question``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: Label
    reasoning: str
    messages: tuple[Message, ...] = ()
    question: str | None = None
    answer: str | None = None

    @model_validator(mode="after")
    def _one_conversation(self) -> Shot:
        if bool(self.messages) == (self.answer is not None):
            raise ValueError("a shot needs either messages or an answer (with an optional question), not both")
        if self.messages and self.question is not None:
            raise ValueError("a shot with messages takes its question from the messages")
        return self

    def example(self) -> Example[GradedConversation, BinaryGrade]:
        """The shot as a typed prompt example."""
        messages = self.messages or _qa_messages(self.question, self.answer or "")
        return Example(
            GradedConversation(conversation=_turns(messages)), BinaryGrade(reasoning=self.reasoning, label=self.label)
        )


def _config() -> GenerateConfig:
    return GenerateConfig(max_tokens=384)


def _missing_conversation(name: str, spec: MetricSpec) -> Score:
    return missing_field(name, "sample has neither a trace nor an answer", spec)


def _require_text(what: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{what} must be a non-empty string, got {value!r}")


_CONVERSATION_RULES = (
    "The conversation is in <conversation> as a JSON list of turns. Its last assistant turn is "
    "the response you grade; earlier turns are its context."
)

BINARY_PROMPT_NAME = "binary_grader"
BINARY_PROMPT_VERSION = "1"
_LABEL_OF: dict[object, Literal["PASS", "FAIL", "NA"]] = {"PASS": "PASS", "FAIL": "FAIL", "NA": "NA"}
"""A grader verdict's value as its label (what :meth:`BinaryJudgeGrader.rescored` reads)."""


@dataclass(frozen=True)
class BinaryJudgeGrader:
    """PASS (1.0) or FAIL (0.0) against one criterion; NA is unscored ``not_applicable``.

    The judge writes its reasoning, then a label constrained to PASS / FAIL / NA. The
    verdict is kept as ``Verdict(subject=criteria, value=label, reason=reasoning)``, also
    for NA. The graded conversation is the sample's ``trace`` if present, else its
    question and answer.

    Args:
        criteria: What a passing response does, in plain words.
        shots: Few-shot examples (conversation, label, reasoning), shown in order.
        name: The metric's name in results.
        config: Decoding settings.
    """

    criteria: str
    shots: Sequence[Shot] = ()
    name: str = "binary_grader"
    config: GenerateConfig = field(default_factory=_config)
    version: str = field(default="1", init=False)
    _sub: SubMetric[GradedConversation, BinaryGrade] = field(init=False, repr=False, compare=False, hash=False)
    required_fields: ClassVar[tuple[str, ...]] = ()
    """None by itself: a trace *or* an answer is needed, checked when scoring."""

    def __post_init__(self) -> None:
        _require_text("criteria", self.criteria)
        object.__setattr__(self, "shots", tuple(self.shots))
        if not all(isinstance(s, Shot) for s in self.shots):
            raise ConfigError("shots must be Shot objects")
        prompt = JudgePrompt(
            name=BINARY_PROMPT_NAME,
            version=BINARY_PROMPT_VERSION,
            instruction=(
                "You grade an AI assistant's response against one criterion.\n\n"
                f"Criterion:\n{self.criteria.strip()}\n\n{_CONVERSATION_RULES} Write your reasoning first "
                "(one to three sentences), then the label: PASS if the response meets the criterion, FAIL if "
                "it does not, NA only if the criterion does not apply to this conversation at all."
            ),
            input_model=GradedConversation,
            output_model=BinaryGrade,
            question="Does the last assistant turn in <conversation> meet the criterion? Reason, then the label.",
            examples=tuple(s.example() for s in self.shots),
        )
        object.__setattr__(self, "_sub", SubMetric(prompt, from_sample=_conversation_input, config=self.config))

    def spec(self) -> MetricSpec:
        """Name, version, criteria, shots, config and prompt version."""
        return spec_from_fields(self, prompts=prompt_versions(self._sub.prompt))

    def render(self, sample: Sample) -> list[ChatMessage]:
        """The messages the judge sees for ``sample`` (for inspection and tests)."""
        return self._sub.prompt.render(_conversation_input(sample))

    def review_value(self, supported: bool) -> str:
        """PASS for a response a person found to meet the criterion, else FAIL."""
        return "PASS" if supported else "FAIL"

    def rescored(self, score: Score) -> Score:
        """PASS 1.0, FAIL 0.0 (as :meth:`score` computes it) from the score's one verdict, once it is decided."""
        label = _LABEL_OF.get(score.verdicts[0].value) if len(score.verdicts) == 1 else None
        if label is None:
            raise ValueError(f"{self.name}: a grader's score has one PASS/FAIL/NA verdict, got {score.verdicts!r}")
        verdict = score.verdicts[0]
        rebuilt = _labelled(self.name, verdict.subject, label, verdict.reason, score.calls, score.spec or self.spec())
        return rebuilt.model_copy(update={"verdicts": score.verdicts, "details": score.details})

    def label_item(self, sample: Sample, verdict: Verdict) -> dict[str, Any] | None:
        """A grader item: the criteria, the question and the answer as the completion, PASS/FAIL as the label.

        A sample graded from its trace alone gives none (``assay calibrate``'s grader items are
        a question and a completion).
        """
        if sample.answer is None or not sample.answer.strip() or verdict.value not in ("PASS", "FAIL"):
            return None
        item: dict[str, Any] = {"criteria": verdict.subject, "completion": sample.answer, "label": verdict.value}
        if sample.question:
            item["question"] = sample.question
        return item

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Ask for reasoning and a label; PASS 1.0, FAIL 0.0, NA unscored ``not_applicable``."""
        spec = self.spec()
        if conversation_of(sample) is None:
            return _missing_conversation(self.name, spec)
        result = await self._sub.run(sample, judge)
        if result.output is None:
            return failed(self.name, result.failure, spec, calls=result.calls)
        return _labelled(self.name, self.criteria, result.output.label, result.output.reasoning, result.calls, spec)

    async def pass_probability(
        self, sample: Sample, judge: JudgeModel, raw: str | None
    ) -> tuple[float | None, tuple[JudgeCall, ...]] | None:
        """P(PASS) renormalised over PASS/FAIL, read after the judge's own reasoning (``raw``, its answer).

        The judge is asked for the label's next token with its answer up to the label as the
        assistant's start, so P is conditioned on the reasoning it wrote. ``None`` for a judge
        without probabilities (:class:`~assay.models.ChoiceScorer`) or an answer whose label
        cannot be found: no call is made. Otherwise P (``None`` when no P could be read: a
        failed call, an answer that is none of the labels) and the calls made for it (one for
        a judge that reads its logits; an API judge's own: one with log-probabilities, or K
        samples), each with its error if it failed: they cost tokens whether or not a P came
        of them, so the run's record counts them.
        """
        if not isinstance(judge, ChoiceScorer) or raw is None:
            return None
        at = raw.rfind('"label"')
        quote = raw.find('"', raw.find(":", at) + 1) if at >= 0 else -1
        if at < 0 or quote < 0:
            return None
        prefix = raw[: quote + 1]
        messages = self.render(sample)
        recorded = (*(dict(m) for m in messages), {"role": "assistant", "content": prefix})
        purpose = f"{BINARY_PROMPT_NAME}.p_pass"
        started = time.perf_counter()

        def one_pass(**answer: Any) -> tuple[JudgeCall, ...]:  # a judge that reads its logits: the one call
            model = str(getattr(judge, "model_id", type(judge).__name__))
            latency = time.perf_counter() - started
            return (JudgeCall(model=model, purpose=purpose, messages=recorded, latency_s=latency, **answer),)

        try:
            probs = await judge.choice_probabilities(messages, prefix=prefix, choices=list(_LABELS), config=self.config)
        except JudgeError as exc:  # an API judge's calls that answered but gave no P, else the call that failed
            return None, calls_made(exc, purpose) or one_pass(raw_output=None, error=str(exc))
        usage = getattr(probs, "usage", None) or Usage()
        cached = getattr(probs, "cached", False)
        calls = calls_made(probs, purpose) or one_pass(
            raw_output=json.dumps(probs, sort_keys=True), usage=usage, cached=cached
        )
        both = probs.get("PASS", 0.0) + probs.get("FAIL", 0.0)
        if not both > 0 or not math.isfinite(both):
            return None, calls
        return probs.get("PASS", 0.0) / both, calls

    async def score_with_confidence(self, sample: Sample, judge: JudgeModel) -> Score:
        """:meth:`score`, with P(PASS) on the verdict (``details.p_pass``) where the judge gives probabilities."""
        score = await self.score(sample, judge)
        if not score.verdicts or score.verdicts[0].value not in ("PASS", "FAIL"):
            return score
        raw = next((c.raw_output for c in reversed(score.calls) if c.error is None), None)
        read = await self.pass_probability(sample, judge, raw)
        if read is None:
            return score
        p, calls = read
        if p is None:  # no confidence, but the calls made for it were made
            return score.model_copy(update={"calls": (*score.calls, *calls)})
        verdict = score.verdicts[0].model_copy(update={"details": {"p_pass": round(p, 4)}})
        return score.model_copy(update={"verdicts": (verdict,), "calls": (*score.calls, *calls)})

    def escalation_problem(self) -> str | None:
        """None: one criterion is one question, which a next judge can take alone."""
        return None

    async def score_escalating(self, sample: Sample, escalation: Escalation) -> Score:
        """The criterion decided by the first judge of ``escalation`` sure enough of its PASS or FAIL.

        Each level grades and reads P(PASS) (:meth:`score_with_confidence`); a level's NA or
        failure ends the question there (unscored as without a cascade). With ``review``
        last, a criterion no level kept makes the sample unscored ``needs_review``.
        """
        calls: list[JudgeCall] = []
        tried: list[Verdict] = []
        for k, level in enumerate(escalation.levels):
            score = await self.score_with_confidence(sample, level.judge)
            calls.extend(score.calls)
            if not score.verdicts or score.verdicts[0].value == "NA":
                return score.model_copy(update={"calls": tuple(calls)})
            settled = settle(score.verdicts[0], k, escalation)
            if settled.kept is not None:
                return score.model_copy(update={"verdicts": (settled.kept,), "calls": tuple(calls)})
            assert settled.tried is not None
            tried.append(settled.tried)
        base = Score.unscored(self.name, UnscoredReason.NEEDS_REVIEW, calls=calls, spec=self.spec())
        return pending_score(base, [PendingVerdict(subject=self.criteria, tried=tuple(tried))])


def _labelled(
    name: str,
    subject: str,
    label: Literal["PASS", "FAIL", "NA"],
    reasoning: str,
    calls: Sequence[JudgeCall],
    spec: MetricSpec,
) -> Score:
    verdict = Verdict(subject=subject, value=label, reason=reasoning)
    if label == "NA":
        return Score.unscored(
            name,
            UnscoredReason.NOT_APPLICABLE,
            f"the judge found the criterion not applicable: {reasoning}",
            verdicts=[verdict],
            calls=calls,
            spec=spec,
        )
    return Score.scored(
        name,
        1.0 if label == "PASS" else 0.0,
        verdicts=[verdict],
        explanation=f"{label}: {reasoning}",
        calls=calls,
        spec=spec,
    )


# --- range grader ---------------------------------------------------------------------------

_INTEGER = re.compile(r"[+-]?\d+")


def _strict_level(value: object) -> object:
    """An int, or a string holding one; ``True``, ``4.0`` and ``"4.0"`` are parse failures."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"score must be an integer level, got {value!r}")
    if isinstance(value, str):
        if not _INTEGER.fullmatch(value.strip()):
            raise ValueError(f"score must be an integer level, got {value!r}")
        return int(value.strip())
    return value


def _range_model(levels: Sequence[int], *, score_first: bool) -> type[BaseModel]:
    """An output model whose ``score`` schema is ``{"type": "integer", "enum": levels}``."""
    level_type: Any = Literal.__getitem__(tuple(levels))
    score: Any = (Annotated[level_type, BeforeValidator(_strict_level)], ...)
    reasoning: Any = (str, ...)
    if score_first:
        return create_model("RangeGradeScoreFirst", score=score, reasoning=reasoning)
    return create_model("RangeGrade", reasoning=reasoning, score=score)


RANGE_PROMPT_NAME = "range_grader"
RANGE_EV_PROMPT_NAME = "range_grader.score_first"
RANGE_PROMPT_VERSION = "1"
SCORE_PREFIX = '{"score": '
"""The start of the assistant's answer in expected-value mode; the level comes next."""


@dataclass(frozen=True)
class RangeJudgeGrader:
    """A level on a declared scale, normalised to [0, 1] as (level - min) / (max - min).

    The output model is built from the scale, so its JSON schema has an ``enum`` of the
    levels and constrained decoding cannot leave the scale. A level outside the scale,
    a float or a boolean is a parse failure.

    With ``expected_value=True`` the answer starts with the score (prefix
    ``{"score": ``); a judge that implements :class:`~assay.models.ChoiceScorer` is asked
    for P(level) and the score is the normalised expected level, with the distribution
    in the explanation. A judge without ``choice_probabilities`` answers normally and the
    generated (argmax) level is used; the explanation says so. Expected-value mode needs
    single-digit levels (0-9), so each level is one distinct token.

    Args:
        criteria: What is being rated.
        scale: Level -> description, e.g. ``{1: "wrong", 3: "partly right", 5: "right"}``.
        expected_value: Score the expected level instead of the generated one.
        name: The metric's name in results.
        config: Decoding settings.
    """

    criteria: str
    scale: Mapping[int, str] = field(hash=False)
    expected_value: bool = False
    name: str = "range_grader"
    config: GenerateConfig = field(default_factory=_config)
    version: str = field(default="1", init=False)
    _sub: SubMetric[GradedConversation, BaseModel] = field(init=False, repr=False, compare=False, hash=False)
    required_fields: ClassVar[tuple[str, ...]] = ()
    """None by itself: a trace *or* an answer is needed, checked when scoring."""

    def __post_init__(self) -> None:
        _require_text("criteria", self.criteria)
        if not isinstance(self.scale, Mapping) or len(self.scale) < 2:
            raise ConfigError(f"scale must map at least two integer levels to descriptions, got {self.scale!r}")
        for level, description in self.scale.items():
            if isinstance(level, bool) or not isinstance(level, int):
                raise ConfigError(f"scale levels must be integers, got {level!r}")
            _require_text(f"the description of level {level}", description)
        scale = dict(sorted(self.scale.items()))
        object.__setattr__(self, "scale", scale)
        if self.expected_value and not all(0 <= level <= 9 for level in scale):
            raise ConfigError(
                f"expected_value needs single-digit levels 0-9 (each level one distinct token), got {list(scale)}"
            )
        order = (
            "Give the score first, then your reasoning (one to three sentences)."
            if self.expected_value
            else "Write your reasoning first (one to three sentences), then the score."
        )
        levels = "\n".join(f"{level}: {text.strip()}" for level, text in scale.items())
        prompt: JudgePrompt[GradedConversation, BaseModel] = JudgePrompt(
            name=RANGE_EV_PROMPT_NAME if self.expected_value else RANGE_PROMPT_NAME,
            version=RANGE_PROMPT_VERSION,
            instruction=(
                "You rate an AI assistant's response against one criterion on a scale.\n\n"
                f"Criterion:\n{self.criteria.strip()}\n\nScale (score: meaning):\n{levels}\n\n"
                f"{_CONVERSATION_RULES} Pick the one level whose meaning fits best. {order}"
            ),
            input_model=GradedConversation,
            output_model=_range_model(list(scale), score_first=self.expected_value),
            question=f"Rate the last assistant turn in <conversation> on the scale {min(scale)} to {max(scale)}.",
        )
        object.__setattr__(self, "_sub", SubMetric(prompt, from_sample=_conversation_input, config=self.config))

    @property
    def levels(self) -> tuple[int, ...]:
        """The scale's levels, ascending."""
        return tuple(self.scale)

    def spec(self) -> MetricSpec:
        """Name, version, criteria, scale, mode, config and prompt version."""
        return spec_from_fields(self, prompts=prompt_versions(self._sub.prompt))

    def render(self, sample: Sample) -> list[ChatMessage]:
        """The messages the judge sees for ``sample``."""
        return self._sub.prompt.render(_conversation_input(sample))

    def normalise(self, level: float) -> float:
        """(level - min) / (max - min)."""
        low, high = self.levels[0], self.levels[-1]
        return (level - low) / (high - low)

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Ask for a level (or its distribution) and normalise it to [0, 1]."""
        spec = self.spec()
        if conversation_of(sample) is None:
            return _missing_conversation(self.name, spec)
        if self.expected_value and isinstance(judge, ChoiceScorer):
            return await self._expected(sample, judge, spec)
        result = await self._sub.run(sample, judge)
        if result.output is None:
            return failed(self.name, result.failure, spec, calls=result.calls)
        answer = result.output.model_dump()
        level: int = answer["score"]
        explanation = (
            f"score {level} on {self.levels[0]}..{self.levels[-1]} ({self.scale[level]}): {answer['reasoning']}"
        )
        if self.expected_value:
            explanation += (
                f" [expected value unavailable: judge {judge.model_id!r} does not implement choice_probabilities;"
                " used the generated (argmax) score]"
            )
        verdict = Verdict(subject=self.criteria, value=level, reason=str(answer["reasoning"]))
        return Score.scored(
            self.name,
            self.normalise(level),
            verdicts=[verdict],
            explanation=explanation,
            calls=result.calls,
            spec=spec,
        )

    async def _expected(self, sample: Sample, judge: ChoiceScorer, spec: MetricSpec) -> Score:
        messages = self.render(sample)
        choices = [str(level) for level in self.levels]
        recorded = (*(dict(m) for m in messages), {"role": "assistant", "content": SCORE_PREFIX})
        purpose = f"{self._sub.name}.choices"
        model_id = str(getattr(judge, "model_id", type(judge).__name__))
        started = time.perf_counter()
        try:
            raw = await judge.choice_probabilities(messages, prefix=SCORE_PREFIX, choices=choices, config=self.config)
        except JudgeError as exc:
            error = f"{type(exc).__name__}: {exc}"
            call = JudgeCall(
                model=model_id,
                purpose=purpose,
                messages=recorded,
                raw_output=None,
                latency_s=time.perf_counter() - started,
                error=error,
            )
            return Score.unscored(self.name, UnscoredReason.JUDGE_ERROR, error, calls=[call], spec=spec)
        call = JudgeCall(
            model=model_id,
            purpose=purpose,
            messages=recorded,
            raw_output=json.dumps(raw, sort_keys=True),
            usage=getattr(raw, "usage", None) or Usage(),
            latency_s=time.perf_counter() - started,
            cached=getattr(raw, "cached", False),
        )
        distribution = _distribution(raw, choices)
        if isinstance(distribution, Unparsed):
            return failed(self.name, distribution, spec, calls=[call])
        expected = sum(p * level for p, level in zip(distribution, self.levels, strict=True))
        shown = ", ".join(f"{level}={p:.3f}" for level, p in zip(self.levels, distribution, strict=True))
        return Score.scored(
            self.name,
            self.normalise(expected),
            explanation=f"expected score {expected:.3f} on {self.levels[0]}..{self.levels[-1]}; P(score): {shown}",
            calls=[call],
            spec=spec,
        )


def _distribution(raw: Mapping[str, float], choices: Sequence[str]) -> list[float] | Unparsed:
    """P(choice) in ``choices`` order, renormalised; bad numbers are a parse failure."""
    missing = [c for c in choices if c not in raw]
    if missing:
        return Unparsed(UnscoredReason.PARSE_FAILURE, f"choice_probabilities gave no probability for {missing}")
    values = [raw[c] for c in choices]
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0]
    if bad or sum(values) <= 0:
        return Unparsed(UnscoredReason.PARSE_FAILURE, f"choice_probabilities gave unusable probabilities {raw!r}")
    total = float(sum(values))
    return [v / total for v in values]


# --- templated grader -----------------------------------------------------------------------

PLACEHOLDERS = ("question", "answer", "contexts", "reference", "trace", "metadata[KEY]")
"""The placeholders a grader template may use (``KEY`` is an identifier)."""

_FIELDS = ("question", "answer", "contexts", "reference", "trace")
_METADATA = re.compile(r"metadata\[([A-Za-z_][A-Za-z0-9_]*)\]")
_TAGS = (*_FIELDS, "metadata")
_ALLOWED = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
TEMPLATED_PROMPT_NAME = "templated_grader"
TEMPLATED_PROMPT_VERSION = "1"

TemplateOutput = Literal["binary", "pass_fail", "pass_fail_na"]
_OUTPUT_MODELS: dict[str, type[BaseModel]] = {
    "binary": _VerdictGrade,
    "pass_fail": _PassFailGrade,
    "pass_fail_na": BinaryGrade,
}
_OUTPUT_RULES = {
    "binary": "Write your reasoning first, then the verdict: 1 if the answer to the instructions is yes, else 0.",
    "pass_fail": "Write your reasoning first, then the label: PASS or FAIL.",
    "pass_fail_na": (
        "Write your reasoning first, then the label: PASS, FAIL, or NA only if the instructions do not apply."
    ),
}


def template_placeholders(template: str) -> tuple[str, ...]:
    """The placeholders of ``template`` in order of appearance, validated.

    Raises:
        ConfigError: Unbalanced braces, a positional ``{}`` / ``{0}``, a conversion
            (``!r``), a format spec (``:>10``), attribute or index access other than
            ``metadata[KEY]``, or an unknown name. The message lists the allowed ones.
    """
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ConfigError(
            f"grader template is not a valid format string ({exc}); write a literal brace as {{{{ or }}}}"
        ) from exc
    found: list[str] = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        where = "{" + name + ("!" + conversion if conversion else "") + (":" + spec if spec else "") + "}"
        if name == "" or name.isdigit():
            raise ConfigError(f"grader template has a positional placeholder {where}; use a named one: {_ALLOWED}")
        if conversion:
            raise ConfigError(f"grader template placeholder {where} has a conversion (!{conversion}); write {{{name}}}")
        if spec:
            raise ConfigError(f"grader template placeholder {where} has a format spec (:{spec}); write {{{name}}}")
        if name not in _FIELDS and not _METADATA.fullmatch(name):
            kind = "uses attribute or index access" if re.search(r"[.\[]", name) else "is unknown"
            raise ConfigError(
                f"grader template placeholder {where} {kind}; allowed placeholders: {_ALLOWED} "
                "(write a literal brace as {{ or }})"
            )
        found.append(name)
    if not found:
        raise ConfigError(f"grader template uses no placeholder, so it judges nothing; allowed: {_ALLOWED}")
    return tuple(found)


def _placeholder_value(sample: Sample, name: str) -> tuple[str, str] | None:
    """(opening tag, text) for one placeholder, or None when the sample lacks it."""
    key = _METADATA.fullmatch(name)
    if key is not None:
        value = sample.metadata.get(key.group(1))
        if value is None or value == "":
            return None
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return f'metadata key="{key.group(1)}"', text
    if not sample.field_present(name):
        return None
    if name == "contexts":
        return name, "\n".join(f"[{i}] {c}" for i, c in enumerate(sample.contexts, start=1))
    if name == "trace":
        return name, _turns(sample.trace)
    value = getattr(sample, name)
    assert isinstance(value, str)
    return name, value


@dataclass(frozen=True)
class TemplatedPromptJudgeGrader:
    """A grader whose prompt is a user-written template with named placeholders.

    Placeholders: ``{question}``, ``{answer}``, ``{contexts}``, ``{reference}``,
    ``{trace}`` and ``{metadata[KEY]}``; write literal braces as ``{{`` and ``}}``. The
    template is validated when the grader is built.

    The template is trusted; the values are not. Each value is inserted as a tagged block
    (``<answer>...</answer>``, ``<metadata key="lang">...</metadata>``) in which any of the
    placeholder tags is neutralised, and the text is concatenated, never formatted
    again, so braces in a value stay literal. The system message says that tagged blocks
    are data and gives the output schema.

    Args:
        template: The grading instructions with placeholders.
        output: ``"pass_fail"`` (PASS 1.0 / FAIL 0.0), ``"pass_fail_na"`` (NA is unscored
            ``not_applicable``) or ``"binary"`` (verdict 1 / 0).
        name: The metric's name in results.
        config: Decoding settings.
    """

    template: str
    output: TemplateOutput = "pass_fail"
    name: str = "templated_grader"
    config: GenerateConfig = field(default_factory=_config)
    version: str = field(default="1", init=False)

    def __post_init__(self) -> None:
        _require_text("template", self.template)
        if self.output not in _OUTPUT_MODELS:
            raise ConfigError(f"output must be one of {', '.join(_OUTPUT_MODELS)}, not {self.output!r}")
        template_placeholders(self.template)

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The placeholders the template uses, in order of first appearance."""
        return tuple(dict.fromkeys(template_placeholders(self.template)))

    @property
    def required_fields(self) -> tuple[str, ...]:
        """The sample fields behind the template's placeholders (metadata keys are checked when scoring)."""
        return tuple(p for p in self.placeholders if p in _FIELDS)

    def spec(self) -> MetricSpec:
        """Name, version, template, output, config and prompt version."""
        return spec_from_fields(self, prompts={TEMPLATED_PROMPT_NAME: TEMPLATED_PROMPT_VERSION})

    def _system(self) -> str:
        schema = json.dumps(_OUTPUT_MODELS[self.output].model_json_schema(), ensure_ascii=False)
        return (
            "You are a grader. Follow the grading instructions in the user's message.\n\n"
            f"{DATA_RULES}\n\n{_OUTPUT_RULES[self.output]}\n"
            f"Answer with one JSON object matching this JSON schema, and nothing else:\n{schema}"
        )

    def missing(self, sample: Sample) -> list[str]:
        """The placeholders ``sample`` has no value for."""
        return list(
            dict.fromkeys(p for p in template_placeholders(self.template) if _placeholder_value(sample, p) is None)
        )

    def render(self, sample: Sample) -> list[ChatMessage]:
        """The messages the judge sees for ``sample``.

        Raises:
            ValueError: The sample lacks a placeholder's value (see :meth:`missing`).
        """
        parts: list[str] = []
        for literal, name, _, _ in string.Formatter().parse(self.template):
            parts.append(literal)
            if name is None:
                continue
            found = _placeholder_value(sample, name)
            if found is None:
                raise ValueError(f"sample {sample.id!r} has no value for {{{name}}}")
            tag, text = found
            close = tag.split(" ", 1)[0]
            parts.append(f"<{tag}>\n{neutralise(text, _TAGS)}\n</{close}>")
        return [{"role": "system", "content": self._system()}, {"role": "user", "content": "".join(parts)}]

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Render the template, ask for reasoning and a label or verdict, and score it."""
        spec = self.spec()
        missing = self.missing(sample)
        if missing:
            return lacking(self.name, missing, spec)
        chat = self.render(sample)
        model = _OUTPUT_MODELS[self.output]
        response, call = await call_judge(judge, chat, schema=model, purpose=TEMPLATED_PROMPT_NAME, config=self.config)
        if response is None:
            return Score.unscored(self.name, UnscoredReason.JUDGE_ERROR, call.error, calls=[call], spec=spec)
        parsed = parse_output(response.text, model, finish_reason=response.finish_reason)
        if isinstance(parsed, Unparsed):
            return failed(self.name, parsed, spec, calls=[call])
        if isinstance(parsed, _VerdictGrade):
            verdict = Verdict(subject=self.template, value=parsed.verdict, reason=parsed.reasoning)
            return Score.scored(
                self.name,
                float(parsed.verdict),
                verdicts=[verdict],
                explanation=f"verdict {parsed.verdict}: {parsed.reasoning}",
                calls=[call],
                spec=spec,
            )
        assert isinstance(parsed, BinaryGrade | _PassFailGrade)
        return _labelled(self.name, self.template, parsed.label, parsed.reasoning, [call], spec)


# --- combined grader ------------------------------------------------------------------------


@dataclass(frozen=True)
class CombinedGrader:
    """A weighted mean of other metrics' values, over the parts that are scored.

    value = sum(w_i * v_i) / sum(w_i) over scored parts; an unscored part (NA included)
    is left out and the remaining weights renormalised. If no part is scored, the result
    is unscored with the most common reason among the parts (the first part's on a tie).
    With ``require_all_pass``, the value is 0.0 if any scored part is below
    ``pass_threshold``.

    Each part's outcome is kept as one verdict (subject: the part's name; PASS at or above
    ``pass_threshold``, FAIL below, NA when unscored; the reason gives value and weight),
    and every part's judge calls are kept, in part order. The fields required are the
    union of the parts' required fields.

    Args:
        graders: ``(metric, weight)`` pairs or a ``{metric: weight}`` mapping. Weights
            must be positive and finite; part names must be unique.
        require_all_pass: Score 0.0 when any scored part is below ``pass_threshold``.
        pass_threshold: The value a part needs to pass.
        name: The metric's name in results.
    """

    graders: Sequence[tuple[Metric, float]] | Mapping[Metric, float]
    require_all_pass: bool = False
    pass_threshold: float = 0.5
    name: str = "combined_grader"
    version: str = field(default="1", init=False)

    def __post_init__(self) -> None:
        items = list(self.graders.items()) if isinstance(self.graders, Mapping) else list(self.graders)
        parts: list[tuple[Metric, float]] = []
        for item in items:
            if not isinstance(item, tuple) or len(item) != 2:
                raise ConfigError(f"combined grader parts must be (metric, weight) pairs, got {item!r}")
            metric, weight = item
            if not isinstance(metric, Metric):
                raise ConfigError(f"combined grader part {metric!r} is not a metric")
            if (
                isinstance(weight, bool)
                or not isinstance(weight, int | float)
                or not math.isfinite(weight)
                or weight <= 0
            ):
                raise ConfigError(f"weight of {metric.name!r} must be a positive finite number, got {weight!r}")
            parts.append((metric, float(weight)))
        if not parts:
            raise ConfigError("a combined grader needs at least one part")
        names = [m.name for m, _ in parts]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ConfigError(f"combined grader part names must be unique; give the parts distinct names: {repeated}")
        threshold = self.pass_threshold
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not math.isfinite(threshold):
            raise ConfigError(f"pass_threshold must be a finite number, got {threshold!r}")
        object.__setattr__(self, "graders", tuple(parts))

    @property
    def parts(self) -> tuple[tuple[Metric, float], ...]:
        """The ``(metric, weight)`` pairs, in order."""
        return tuple(self.graders) if not isinstance(self.graders, Mapping) else tuple(self.graders.items())

    @property
    def required_fields(self) -> tuple[str, ...]:
        """Every field any part requires."""
        return tuple(dict.fromkeys(f for m, _ in self.parts for f in m.required_fields))

    def spec(self) -> MetricSpec:
        """Name, version, the pass rule, and ``graders``: ``[part's spec, weight]`` pairs in order."""
        return spec_from_fields(self)

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Score every part (concurrently if the judge allows), then take the weighted mean."""
        spec = self.spec()
        missing = missing_fields(self, sample)
        if missing:
            return lacking(self.name, missing, spec)
        parts = self.parts
        if judge.max_concurrency > 1:
            scores = list(await asyncio.gather(*(score_safely(m, sample, judge) for m, _ in parts)))
        else:
            scores = [await score_safely(m, sample, judge) for m, _ in parts]
        verdicts = [self._verdict(m.name, w, s) for (m, w), s in zip(parts, scores, strict=True)]
        scored = [(m.name, w, s.value) for (m, w), s in zip(parts, scores, strict=True) if s.is_scored]
        if not scored:
            reasons = Counter(s.unscored_reason for s in scores if s.unscored_reason is not None)
            reason = reasons.most_common(1)[0][0]
            detail = "no part was scored: " + "; ".join(
                f"{m.name}: {s.unscored_reason.value if s.unscored_reason else '?'}"
                for (m, _), s in zip(parts, scores, strict=True)
            )
            return Score.unscored(self.name, reason, detail, verdicts=verdicts, parts=scores, spec=spec)
        total = sum(w for _, w, _ in scored)
        value = sum(w * v for _, w, v in scored) / total
        shown = "; ".join(
            f"{m.name}={s.value:.3f}×{w:g}"
            if s.is_scored
            else f"{m.name}=unscored ({s.unscored_reason})×{w:g}, excluded"
            for (m, w), s in zip(parts, scores, strict=True)
        )
        explanation = f"weighted mean {value:.3f} over {len(scored)} of {len(parts)} parts (weight {total:g}): {shown}"
        failing = [n for n, _, v in scored if v < self.pass_threshold]
        if self.require_all_pass and failing:
            value = 0.0
            explanation = f"0.0: require_all_pass and {', '.join(failing)} below {self.pass_threshold:g}; {explanation}"
        return Score.scored(self.name, value, verdicts=verdicts, explanation=explanation, parts=scores, spec=spec)

    def _verdict(self, name: str, weight: float, score: Score) -> Verdict:
        if not score.is_scored:
            reason = score.unscored_reason.value if score.unscored_reason else "unscored"
            return Verdict(
                subject=name, value="NA", reason=f"unscored ({reason}), weight {weight:g}: {score.detail or ''}"
            )
        label: Literal["PASS", "FAIL"] = "PASS" if score.value >= self.pass_threshold else "FAIL"
        return Verdict(
            subject=name, value=label, reason=f"{score.value:.3f}, weight {weight:g}: {score.explanation or ''}"
        )
