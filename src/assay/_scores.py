"""Results: verdicts, judge calls and scores.

A :class:`Score` carries its own evidence: the verdicts (subject, value, reason), the
judge calls that produced them, and the metric spec that can rebuild the metric.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

__all__ = [
    "ERROR_REASONS",
    "METRIC_SPEC_VERSION",
    "AnswerMap",
    "AnswerSentence",
    "Binary",
    "Decision",
    "DroppedStatement",
    "JudgeCall",
    "MetricSpec",
    "PendingVerdict",
    "Score",
    "Summary",
    "SummaryBuilder",
    "UnscoredReason",
    "Usage",
    "Verdict",
    "summarize",
]


def _strict_binary(value: object) -> object:
    """Accept exactly 0/1 (int) or the strings "0"/"1"/"yes"/"no"; reject the rest.

    ``True``, ``1.0``, ``"1.0"``, ``2`` and ``-1`` are parse failures, never "supported".
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"verdict must be 0 or 1, got {value!r}")
    if isinstance(value, int):
        if value in (0, 1):
            return value
        raise ValueError(f"verdict must be 0 or 1, got {value!r}")
    text = value.strip().lower()
    mapping = {"1": 1, "0": 0, "yes": 1, "no": 0}
    if text in mapping:
        return mapping[text]
    raise ValueError(f"verdict must be 0 or 1, got {value!r}")


Binary = Annotated[Literal[0, 1], BeforeValidator(_strict_binary)]
"""A binary verdict: 1 (yes, supported, relevant) or 0. Validated strictly."""


class UnscoredReason(StrEnum):
    """Why a score has no value. Machine-readable; aggregates count each."""

    NO_STATEMENTS = "no_statements"
    PARSE_FAILURE = "parse_failure"
    REFUSAL = "refusal"
    EMPTY_OUTPUT = "empty_output"
    TRUNCATED_OUTPUT = "truncated_output"
    VERDICT_COUNT_MISMATCH = "verdict_count_mismatch"
    JUDGE_ERROR = "judge_error"
    MISSING_FIELD = "missing_field"
    NOT_APPLICABLE = "not_applicable"
    METRIC_ERROR = "metric_error"
    UNDECIDED = "undecided"
    """The judge said a part of the question cannot be decided from the evidence (and no part failed)."""
    TOO_MANY_STATEMENTS = "too_many_statements"
    """More statements than the metric's ``max_statements``: not judged, so no row surprises the bill."""
    NEEDS_REVIEW = "needs_review"
    """A verdict no judge of the cascade was sure enough of waits for a person (``assay review``):
    the sample has no value until it is answered, never a guessed one."""


ERROR_REASONS: frozenset[UnscoredReason] = frozenset({UnscoredReason.JUDGE_ERROR, UnscoredReason.METRIC_ERROR})
"""Unscored reasons that are failures, not outcomes: the judge could not be asked (a transport
error, a server error, a timeout after the retries) or assay itself raised. Such a result is
never tolerated as unscored: the gate refuses a run holding one (it is not counted in the
unscored budget), and a resumed run judges its sample again."""


class Usage(BaseModel):
    """Token counts of one judge call (or a sum of calls)."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class JudgeCall(BaseModel):
    """One exchange with a judge: what it was shown and what it said."""

    model_config = ConfigDict(frozen=True)

    model: str
    purpose: str
    messages: tuple[dict[str, str], ...]
    raw_output: str | None
    usage: Usage = Usage()
    latency_s: float = 0.0
    error: str | None = None
    attempts: int = 1
    cached: bool = False


class EvidenceRef(BaseModel):
    """A piece of a sample's context a verdict rests on: ``contexts[context][start:end] == text``."""

    model_config = ConfigDict(frozen=True)

    context: int
    start: int
    end: int
    text: str


class Decision(BaseModel):
    """Who decided a verdict, and how sure it was (a cascade of judges records one per verdict).

    Attributes:
        by: The judge's model id that decided, or ``person`` for an answer given in review.
        kind: ``judge`` or ``person``.
        level: The verdict's place in the cascade, from 0 (the first, cheapest judge).
        confidence: The decider's probability of the value it gave (P(supported) for a 1,
            1 - P for a 0); ``None`` where it gave none (a generated verdict, a person).
        threshold: The confidence this value needed to be kept at this level; ``None`` where
            the level decides whatever it is given (the last judge, a person).
        guaranteed: Whether the verdict is covered by the cascade's stated agreement
            guarantee (kept at or above a threshold chosen on labels).
    """

    model_config = ConfigDict(frozen=True)

    by: str
    kind: Literal["judge", "person"] = "judge"
    level: int = 0
    confidence: float | None = None
    threshold: float | None = None
    guaranteed: bool = False


class PendingVerdict(BaseModel):
    """A question no judge was sure enough of, waiting for a person (reason ``needs_review``).

    Attributes:
        subject: What is to be judged (the statement, the criterion).
        evidence: The context sentences the judges read for it.
        tried: What each judge leaned to and how sure it was (each below its threshold).
    """

    model_config = ConfigDict(frozen=True)

    subject: str
    evidence: tuple[EvidenceRef, ...] = ()
    tried: tuple[Verdict, ...] = ()


class Verdict(BaseModel):
    """One atomic judgement: a subject, a value, the judge's reason, and what it rests on.

    ``value`` is 1/0 for binary questions, ``"PASS"``/``"FAIL"``/``"NA"`` for graders, and
    the chosen level for a rating scale. (Judge output is validated strictly when parsed;
    this is the record of what was decided.)

    Attributes:
        subject: What was judged (a statement, a criterion, a passage).
        value: The decision.
        reason: Why, in words: for a supported statement the sentence that supports it.
        evidence: The context sentences the verdict rests on (for a supported statement,
            the supporting sentences; for an unsupported one, the closest ones).
        flags: Machine-readable marks, e.g. ``addresses_judge`` for a statement that talks
            to the evaluator instead of stating a fact.
        details: The checks behind the decision: P(supported) as the judge gave it and as
            combined with the detail checks, and each check's value and problems.
        spans: Where the subject comes from in the judged answer: ``(start, end)``
            character offsets of the answer's words the statement states (faithfulness).
        decision: Which judge (or person) decided it, how sure it was and against which
            threshold (runs with a cascade; ``None`` for a single judge).
    """

    model_config = ConfigDict(frozen=True)

    subject: str
    value: int | Literal["PASS", "FAIL", "NA"]
    reason: str = ""
    evidence: tuple[EvidenceRef, ...] = ()
    flags: tuple[str, ...] = ()
    details: dict[str, Any] | None = None
    spans: tuple[tuple[int, int], ...] = ()
    decision: Decision | None = None

    @model_serializer(mode="wrap")
    def _omit_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Records keep ``evidence``, ``flags``, ``details``, ``spans``, ``decision`` only where set."""
        data: dict[str, Any] = handler(self)
        for key in ("evidence", "flags", "details", "spans", "decision"):
            if not data.get(key):
                data.pop(key, None)
        return data


SentenceStatus = Literal["judged", "judged_whole", "not_checkable"]
"""What became of an answer sentence: its statements were judged; the sentence itself was
judged (its rewrite lost part of it, or it stood alone); it states nothing to check."""


class AnswerSentence(BaseModel):
    """One sentence of a judged answer and what became of it.

    Attributes:
        start: Offset of the sentence in the answer.
        end: End offset of the sentence in the answer.
        status: ``judged`` (one or more anchored statements), ``judged_whole`` (the
            sentence itself was judged, see ``note``), or ``not_checkable`` (a question,
            a greeting, filler: nothing to check).
        note: Why, when the status needs a reason (``"a question"``, ``"the rewrite left
            out: 1889"``).
    """

    model_config = ConfigDict(frozen=True)

    start: int
    end: int
    status: SentenceStatus
    note: str = ""


class DroppedStatement(BaseModel):
    """A statement the decomposition produced that was not judged, and why.

    Attributes:
        text: The statement as the decomposition wrote it.
        reason: ``not_in_answer`` (it states what the answer does not: taken from the
            question, the prompt's example or elsewhere), ``fragment`` (not a statement:
            no verb, a dangling word, a bare title) or ``repeated`` (another statement
            already says it).
        detail: One human-readable line.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    reason: Literal["not_in_answer", "fragment", "repeated"]
    detail: str = ""


class AnswerMap(BaseModel):
    """How an answer became the statements that were judged: every sentence, every dropped statement.

    Attributes:
        sentences: The answer's sentences in order, with what became of each.
        dropped: Statements the decomposition wrote that were not judged.
        fixed: The statements are the same in every repeat (decomposed once, at
            temperature 0); repeats measure the verdicts' noise only.
    """

    model_config = ConfigDict(frozen=True)

    sentences: tuple[AnswerSentence, ...] = ()
    dropped: tuple[DroppedStatement, ...] = ()
    fixed: bool = True

    @property
    def checkable(self) -> int:
        """Sentences that state something to check."""
        return sum(1 for s in self.sentences if s.status != "not_checkable")

    @property
    def coverage(self) -> float:
        """Share of checkable sentences that were judged (1.0 by construction; NaN with none)."""
        judged = sum(1 for s in self.sentences if s.status in ("judged", "judged_whole"))
        return judged / self.checkable if self.checkable else math.nan


METRIC_SPEC_VERSION = 2
"""The shape of :class:`MetricSpec` records this assay writes."""


class MetricSpec(BaseModel):
    """A metric's configuration: enough to rebuild it (``assay.metrics.metric_from_spec``).

    Attributes:
        name: The metric's name in results.
        version: The metric's own version (bumped when its scoring changes).
        type: ``module:qualname`` of the metric's class; ``None`` in schema 1 records and
            in hand-written specs (a plugin's is rebuilt through its entry point).
        params: The metric's fields (schema 2; see ``assay.metrics.spec_from_fields``), and
            ``prompts``, the name and version of each judge prompt it uses.
        schema_version: The shape of this record. 1: before ``type``, ``params`` written
            per metric; 2: ``type`` and ``params`` derived from the metric's fields. A record
            without it is read as 1 unless it has a ``type``.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    version: str = "1"
    type: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    schema_version: int = METRIC_SPEC_VERSION

    @model_validator(mode="before")
    @classmethod
    def _schema_of_older_records(cls, data: Any) -> Any:
        if isinstance(data, dict) and "schema_version" not in data:
            return {**data, "schema_version": METRIC_SPEC_VERSION if data.get("type") else 1}
        return data


class Score(BaseModel):
    """A metric's result for one sample.

    ``value`` is NaN exactly when ``unscored_reason`` is set. In JSON, NaN is ``null``.
    ``details`` holds what a metric found beyond its verdicts, as JSON-ready data (an agent
    metric's end state: the state-changing calls and whether each succeeded); records keep
    it only when a metric gives it.
    """

    model_config = ConfigDict(frozen=True, ser_json_inf_nan="null")

    metric: str
    value: float
    unscored_reason: UnscoredReason | None = None
    detail: str | None = None
    verdicts: tuple[Verdict, ...] = ()
    explanation: str | None = None
    calls: tuple[JudgeCall, ...] = ()
    spec: MetricSpec | None = None
    parts: tuple[Score, ...] = ()
    details: dict[str, Any] | None = Field(default=None, exclude_if=lambda value: value is None)
    decomposition: AnswerMap | None = Field(default=None, exclude_if=lambda value: value is None)
    """How the answer became the judged statements (faithfulness); records keep it only where set."""
    pending: tuple[PendingVerdict, ...] = Field(default=(), exclude_if=lambda value: not value)
    """Questions waiting for a person (reason ``needs_review``); records keep it only where set."""

    @field_validator("value", mode="before")
    @classmethod
    def _none_is_nan(cls, value: object) -> object:
        return math.nan if value is None else value

    @classmethod
    def scored(
        cls,
        metric: str,
        value: float,
        *,
        verdicts: Iterable[Verdict] = (),
        explanation: str | None = None,
        calls: Iterable[JudgeCall] = (),
        spec: MetricSpec | None = None,
        parts: Iterable[Score] = (),
        details: Mapping[str, Any] | None = None,
    ) -> Score:
        """A scored result. ``value`` must be a finite number.

        ``parts`` are the scores of sub-metrics this one combines (each keeps its own calls).
        """
        if not math.isfinite(value):
            raise ValueError(f"a scored result needs a finite value, got {value!r}")
        return cls(
            metric=metric,
            value=value,
            verdicts=tuple(verdicts),
            explanation=explanation,
            calls=tuple(calls),
            spec=spec,
            parts=tuple(parts),
            details=dict(details) if details is not None else None,
        )

    @classmethod
    def unscored(
        cls,
        metric: str,
        reason: UnscoredReason,
        detail: str | None = None,
        *,
        verdicts: Iterable[Verdict] = (),
        calls: Iterable[JudgeCall] = (),
        spec: MetricSpec | None = None,
        parts: Iterable[Score] = (),
        details: Mapping[str, Any] | None = None,
    ) -> Score:
        """A result with no value (NaN) and a machine-readable reason.

        Whatever evidence was gathered before the failure (verdicts, calls, parts) is kept.
        """
        return cls(
            metric=metric,
            value=math.nan,
            unscored_reason=reason,
            detail=detail,
            verdicts=tuple(verdicts),
            calls=tuple(calls),
            spec=spec,
            parts=tuple(parts),
            details=dict(details) if details is not None else None,
        )

    @property
    def is_scored(self) -> bool:
        """Whether the score has a value."""
        return self.unscored_reason is None

    @property
    def is_error(self) -> bool:
        """Whether it is unscored because something failed (:data:`ERROR_REASONS`), not for what the judge said."""
        return self.unscored_reason in ERROR_REASONS

    @property
    def usage(self) -> Usage:
        """Tokens summed over this score's judge calls and its parts' calls."""
        total = Usage()
        for call in self.calls:
            total = total + call.usage
        for part in self.parts:
            total = total + part.usage
        return total

    @property
    def all_calls(self) -> tuple[JudgeCall, ...]:
        """This score's judge calls followed by its parts' (recursively)."""
        return self.calls + tuple(c for part in self.parts for c in part.all_calls)

    @property
    def failing(self) -> tuple[Verdict, ...]:
        """The verdicts that count against the sample (0 or FAIL)."""
        return tuple(v for v in self.verdicts if v.value in (0, "FAIL"))


class Summary(BaseModel):
    """Aggregate of one metric over many samples. Unscored results are skipped and counted.

    ``n_invalid`` counts the input rows of the run that were invalid and so never reached
    the metric (a missing answer, a wrong type): once per row, the same for every metric of
    a run, and in none of the other counts. Their messages are the run's errors
    (``EvalResult.errors``, ``RunSummary.row_errors``).
    """

    model_config = ConfigDict(frozen=True, ser_json_inf_nan="null")

    metric: str
    mean: float
    n_scored: int
    n_unscored: int
    unscored_by_reason: Mapping[str, int]
    usage: Usage
    n_invalid: int = 0


class SummaryBuilder:
    """A metric's :class:`Summary`, built one score at a time (no list of scores kept).

    The one place a mean over scored samples and the unscored counts are computed:
    :func:`summarize`, a streaming run and a stored run's summary all use it.
    """

    def __init__(self, metric: str) -> None:
        self.metric = metric
        self._total = 0.0
        self._n_scored = 0
        self._reasons: dict[str, int] = {}
        self._usage = Usage()

    def add(self, score: Score) -> None:
        """Count one score: its value when scored, its reason when not, its tokens always."""
        self._usage = self._usage + score.usage
        if score.unscored_reason is None:
            self._total += score.value
            self._n_scored += 1
        else:
            key = score.unscored_reason.value
            self._reasons[key] = self._reasons.get(key, 0) + 1

    def summary(self, n_invalid: int = 0) -> Summary:
        """The summary of every score added so far (``n_invalid``: the run's invalid input rows)."""
        return Summary(
            metric=self.metric,
            mean=self._total / self._n_scored if self._n_scored else math.nan,
            n_scored=self._n_scored,
            n_unscored=sum(self._reasons.values()),
            unscored_by_reason=dict(sorted(self._reasons.items())),
            usage=self._usage,
            n_invalid=n_invalid,
        )


def summarize(metric: str, scores: Iterable[Score]) -> Summary:
    """Mean over scored samples; count of unscored samples by reason; tokens used."""
    builder = SummaryBuilder(metric)
    for score in scores:
        builder.add(score)
    return builder.summary()
