"""Escalation: each verdict decided by the first judge of a cascade that is sure enough of it.

A cascade (:class:`Escalation`) is an ordered list of judges (:class:`JudgeLevel`), cheapest
first, optionally followed by people (``review``). Each judge level carries its thresholds,
one per verdict value, chosen on labels (``assay.analysis.plan_cascade``, planned by the
run): level ``k`` decides a question when its confidence in the value it gave (P(1) for a
1, 1 - P(1) for a 0) is at least that value's threshold; otherwise the question goes to
level ``k + 1``. After the last judge, a question no level kept either waits for a person
(``review``: the sample is unscored ``needs_review`` and lists it in ``Score.pending``) or,
without review, is decided by the last judge outside the guarantee
(``Decision.guaranteed=False``).

A judge with probabilities is a :class:`~assay.models.ChoiceScorer`: the local judge (its
logits), or an API judge asked for a confidence (:class:`~assay.models.ConfidentJudge`:
``openai:MODEL+logprobs`` reads the answer token's log-probabilities, ``MODEL+samples:K`` the
agreement over K answers); it can be any level. A judge without probabilities (an API judge
not asked for one: it generates its verdicts) can only be the last level: it has no
confidence to compare with a threshold, so it decides what it gets.

Which metrics escalate: those implementing :class:`EscalatingMetric` (faithfulness, one
question per statement). The others are refused at the start of a cascade run, by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from assay._samples import Sample
from assay._scores import Decision, PendingVerdict, Score, UnscoredReason, Verdict
from assay.errors import ConfigError
from assay.models._protocol import ChoiceScorer, JudgeModel

__all__ = [
    "EscalatingMetric",
    "Escalation",
    "JudgeLevel",
    "Settled",
    "confidence_of",
    "p_yes",
    "pending_score",
    "settle",
    "verdict_bit",
]


def verdict_bit(value: object) -> int | None:
    """A verdict's value as 1/0 (``PASS`` is 1, ``FAIL`` 0); ``None`` for anything else (``NA``)."""
    if value in (1, "PASS") and not isinstance(value, bool):
        return 1
    if value in (0, "FAIL") and not isinstance(value, bool):
        return 0
    return None


def p_yes(verdict: Verdict) -> float | None:
    """The probability of a 1 behind ``verdict``, read the same way in calibration and in a run.

    The verifier's threshold path records ``details.p_judge``; a statement the context repeats
    word for word is a 1 by rule (P = 1) and a statement that addresses the judge a 0 by rule
    (P = 0): both are fully confident, and the thresholds are chosen on labels where the same
    rules applied. A generated verdict (an API judge not asked for a confidence) has none: ``None``.
    """
    details = verdict.details or {}
    for key in ("p_judge", "p_pass"):
        value = details.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    if details.get("verbatim") is True:
        return 1.0
    if "addresses_judge" in verdict.flags:
        return 0.0
    return None


def confidence_of(verdict: Verdict) -> float | None:
    """The probability of the value given: P(1) for a 1, 1 - P(1) for a 0 (``None``: no probability)."""
    p, bit = p_yes(verdict), verdict_bit(verdict.value)
    if p is None or bit is None:
        return None
    return p if bit == 1 else 1.0 - p


@dataclass(frozen=True)
class JudgeLevel:
    """One judge of a cascade and the thresholds its verdicts must reach to be kept.

    Args:
        judge: The judge (its own stack: cache, limits, endpoint).
        thresholds: Value (1/0) -> the confidence a verdict of that value needs to be kept
            here; a value mapped to ``None`` always escalates. ``None`` (not a mapping): the
            level has no plan (a judge without probabilities, last): it decides what it gets,
            outside the guarantee.
        name: How the user named it (``local``, ``openai:gpt-4o-mini``), for messages.
    """

    judge: JudgeModel
    thresholds: Mapping[int, float | None] | None = None
    name: str = ""

    @property
    def label(self) -> str:
        """The name given, else the judge's model id."""
        return self.name or self.judge.model_id

    def threshold(self, value: int) -> float | None:
        """The confidence a verdict of ``value`` needs here (``None``: it escalates)."""
        return None if self.thresholds is None else self.thresholds.get(value)


@dataclass(frozen=True)
class Escalation:
    """A cascade of judges, cheapest first, and whether people answer what none was sure of.

    Raises:
        ConfigError: no judge level; a level before the last without probabilities or
            thresholds (it could not tell which verdicts to keep); with ``review``, a last
            level without them.
    """

    levels: tuple[JudgeLevel, ...]
    review: bool = False
    probabilities: tuple[bool, ...] = field(default=(), init=False)

    def __post_init__(self) -> None:
        if not self.levels:
            raise ConfigError("a cascade needs at least one judge level")
        object.__setattr__(self, "probabilities", tuple(isinstance(lv.judge, ChoiceScorer) for lv in self.levels))
        for k, level in enumerate(self.levels):
            last = k == len(self.levels) - 1
            if last and not self.review:
                continue
            if not self.probabilities[k]:
                where = "before review" if last else "as a middle level"
                raise ConfigError(
                    f"judge {level.label!r} gives no probability for its verdicts, so it cannot keep the verdicts "
                    f"it is sure of and pass on the rest {where}: give it a confidence (ConfidentJudge: logprobs or "
                    "samples:K), or put it last, with no `review` after it (it then decides what reaches it, "
                    "outside the guarantee)"
                )
            if level.thresholds is None:
                raise ConfigError(f"judge level {k} ({level.label}) has no thresholds: plan the cascade first")

    @property
    def last_decides(self) -> bool:
        """Whether the last judge decides what reaches it (no ``review`` after it)."""
        return not self.review


@dataclass(frozen=True)
class Settled:
    """What one level did with one question: decided it (``kept``) or passed it on (``tried``)."""

    kept: Verdict | None
    tried: Verdict | None


def settle(verdict: Verdict, k: int, escalation: Escalation) -> Settled:
    """Level ``k``'s verdict either decided there (with its :class:`Decision`) or passed on.

    Kept when its confidence reaches the threshold for its value (guaranteed); else, at the
    last judge with no review after it, decided outside the guarantee; else passed on, kept
    in ``tried`` with the confidence and threshold it missed.
    """
    level = escalation.levels[k]
    bit = verdict_bit(verdict.value)
    conf = confidence_of(verdict)
    threshold = None if bit is None else level.threshold(bit)
    by = level.judge.model_id
    if threshold is not None and conf is not None and conf >= threshold:
        decision = Decision(by=by, level=k, confidence=conf, threshold=threshold, guaranteed=True)
        return Settled(verdict.model_copy(update={"decision": decision}), None)
    if k == len(escalation.levels) - 1 and escalation.last_decides:
        decision = Decision(by=by, level=k, confidence=conf, threshold=None, guaranteed=False)
        return Settled(verdict.model_copy(update={"decision": decision}), None)
    decision = Decision(by=by, level=k, confidence=conf, threshold=threshold, guaranteed=False)
    return Settled(None, verdict.model_copy(update={"decision": decision}))


def pending_score(score: Score, pending: Sequence[PendingVerdict]) -> Score:
    """``score`` unscored ``needs_review`` with ``pending`` listed, its decided verdicts and calls kept."""
    n = len(pending)
    decided = len(score.verdicts)
    detail = (
        f"{n} question{'s' if n != 1 else ''} no judge was sure enough of wait for a person "
        f"(`assay review`); {decided} decided by judges"
    )
    return Score.unscored(
        score.metric,
        UnscoredReason.NEEDS_REVIEW,
        detail,
        verdicts=score.verdicts,
        calls=score.calls,
        spec=score.spec,
    ).model_copy(update={"pending": tuple(pending), "decomposition": score.decomposition})


@runtime_checkable
class EscalatingMetric(Protocol):
    """A metric whose questions can each be escalated along a cascade of judges."""

    @property
    def name(self) -> str:
        """The metric's name."""
        ...

    def escalation_problem(self) -> str | None:
        """Why this metric, as set, cannot escalate (``None``: it can)."""
        ...

    async def score_escalating(self, sample: Sample, escalation: Escalation) -> Score:
        """Score ``sample``, each question decided by the first level sure enough (see the module)."""
        ...
