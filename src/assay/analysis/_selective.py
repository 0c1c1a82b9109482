"""Selective judging with a guarantee: keep a judge's verdict only where it is sure enough.

A judge gives each verdict a confidence (the probability of the value it gave). On labelled
items, :func:`fixed_sequence_threshold` chooses the lowest confidence threshold at which the
verdicts kept (confidence >= threshold) agree with people at least ``1 - alpha`` of the time,
with probability at least ``1 - delta`` over the draw of the labels (fixed-sequence testing,
as in Jung, Brahman and Choi, "Trust or Escalate: LLM Judges with Provable Guarantees for
Human Agreement", ICLR 2025):

- the candidate thresholds form a grid fixed before the labels are seen, tested from the
  strictest down, starting at the first that keeps enough verdicts for a test to pass at all
  (:func:`min_labels`; the reference implementation likewise skips thresholds keeping fewer
  than 30);
- at each, the null hypothesis "agreement on the kept verdicts is below ``1 - alpha``" is
  rejected when ``P(Binomial(n, alpha) <= errors) <= delta`` (an exact binomial p-value);
- testing stops at the first threshold not rejected; the last one rejected is chosen. Testing
  in a fixed order needs no correction for the number of thresholds tried.

Thresholds are chosen per verdict value (:func:`choose_thresholds`): a judge's mistakes are
one-sided (its "supported" verdicts at P 0.5-0.8 may be mostly wrong while its "unsupported"
ones are mostly right), so one margin around 0.5 would waste the good side. ``delta`` is split
evenly over the values tested (a union bound), so the guarantee holds on the union of kept
verdicts. In a cascade (:func:`plan_cascade`) each level is calibrated on the labelled items
the levels before it did not keep, and ``delta`` is split over the levels too.

The guarantee is about items drawn like the labelled ones: labels from another kind of data
say nothing certain about this one. A target the labels cannot support gets no threshold and
a reason (:attr:`SideThreshold.reason`), never a made-up one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "GRID",
    "CascadePlan",
    "LevelThresholds",
    "Routed",
    "SideThreshold",
    "binomial_cdf",
    "choose_thresholds",
    "fixed_sequence_threshold",
    "min_labels",
    "plan_cascade",
    "route",
]

GRID: tuple[float, ...] = tuple(round(1.0 - i / 1000, 3) for i in range(1001))
"""The candidate thresholds, strictest first: 1.000, 0.999, ..., 0.000 (fixed before any label is seen)."""


def binomial_cdf(k: int, n: int, p: float) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, p)``, exactly (summed in log space)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
        for i in range(k + 1)
    ]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


def min_labels(alpha: float, delta: float) -> int:
    """The fewest kept verdicts that can carry the guarantee: all of them agreeing, ``(1 - alpha)^n <= delta``."""
    _check_levels(alpha, delta)
    return math.ceil(math.log(delta) / math.log1p(-alpha))


def _check_levels(alpha: float, delta: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha (1 - the target agreement) must be between 0 and 1, got {alpha}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta (the chance the guarantee fails) must be between 0 and 1, got {delta}")


@dataclass(frozen=True)
class SideThreshold:
    """The threshold chosen for one verdict value, and what it rests on.

    Attributes:
        value: The verdict value kept (1 or 0; ``PASS``/``FAIL`` map to 1/0).
        threshold: Keep a verdict of this value when its confidence is at least this; ``None``
            when no threshold reaches the target on these labels (every such verdict escalates).
        labels: Labelled items on which the judge gave this value (what the test rests on).
        kept: Of those, how many the threshold keeps.
        errors: Of the kept, how many disagree with people.
        delta: The share of the overall ``delta`` this test was run at.
        reason: Why there is no threshold (``None`` when there is one).
    """

    value: int
    threshold: float | None
    labels: int
    kept: int
    errors: int
    delta: float
    reason: str | None = None

    @property
    def agreement(self) -> float | None:
        """Agreement with people on the kept labelled verdicts."""
        return None if self.kept == 0 else 1.0 - self.errors / self.kept

    def keeps(self, confidence: float | None) -> bool:
        """Whether a verdict of this value with ``confidence`` is kept (decided) at this level."""
        return self.threshold is not None and confidence is not None and confidence >= self.threshold


def fixed_sequence_threshold(
    confidence: Sequence[float], correct: Sequence[bool], *, alpha: float, delta: float, value: int = 1
) -> SideThreshold:
    """The lowest threshold whose kept verdicts agree with people at ``>= 1 - alpha``, w.p. ``>= 1 - delta``.

    ``correct[i]`` says whether verdict ``i`` agrees with its label. See the module docstring
    for the test; the worked example is in ``tests/test_selective.py``.
    """
    _check_levels(alpha, delta)
    if len(confidence) != len(correct):
        raise ValueError(f"{len(confidence)} confidences but {len(correct)} labels")
    pairs = sorted(zip(confidence, correct, strict=True), key=lambda pair: -pair[0])
    n_labels = len(pairs)
    need = min_labels(alpha, delta)
    if n_labels == 0:
        return SideThreshold(value, None, 0, 0, 0, delta, f"no labelled item got verdict {value}")
    chosen: tuple[float, int, int] | None = None
    kept = errors = tested = 0
    for candidate in GRID:
        while kept < n_labels and pairs[kept][0] >= candidate:
            errors += 0 if pairs[kept][1] else 1
            kept += 1
        if kept < need:
            continue  # too few kept for any outcome to reject: the sequence starts where a test can pass
        if kept != tested:  # the same verdicts kept as the last candidate: the same p-value
            if binomial_cdf(errors, kept, alpha) > delta:
                break
            tested = kept
        chosen = (candidate, kept, errors)
    if chosen is None:
        wrong = sum(1 for _, ok in pairs if not ok)
        if n_labels < need:
            why = (
                f"{n_labels} labelled verdicts of value {value}: at least {need} (all agreeing with people) "
                f"are needed for {1 - alpha:.0%} agreement with probability {1 - delta:.0%}"
            )
        else:
            top = pairs[0][0]
            why = (
                f"no threshold reaches {1 - alpha:.0%} agreement with probability {1 - delta:.0%}: "
                f"of {n_labels} labelled verdicts of value {value} ({wrong} disagreeing with people), "
                f"even the most confident (confidence {top:.3f}) do not agree often enough"
            )
        return SideThreshold(value, None, n_labels, 0, 0, delta, why)
    threshold, kept_at, errors_at = chosen
    return SideThreshold(value, threshold, n_labels, kept_at, errors_at, delta)


@dataclass(frozen=True)
class LevelThresholds:
    """One judge's thresholds, one per verdict value, chosen on the labelled items it was given."""

    sides: dict[int, SideThreshold]
    alpha: float
    delta: float
    labels: int

    def keeps(self, value: int, confidence: float | None) -> bool:
        """Whether this judge's verdict ``value`` with ``confidence`` is decided here (else it escalates)."""
        side = self.sides.get(value)
        return side is not None and side.keeps(confidence)

    def threshold(self, value: int) -> float | None:
        """The threshold a verdict of ``value`` needs here (``None``: it always escalates)."""
        side = self.sides.get(value)
        return None if side is None else side.threshold


def _confidence(verdict: int, p_yes: float) -> float:
    return p_yes if verdict == 1 else 1.0 - p_yes


def choose_thresholds(
    verdicts: Sequence[int],
    p_yes: Sequence[float],
    labels: Sequence[int],
    *,
    alpha: float,
    delta: float,
) -> LevelThresholds:
    """Per verdict value, the fixed-sequence threshold on the judge's confidence in that value.

    ``p_yes[i]`` is the judge's P(1) for item ``i`` and ``verdicts[i]`` the value it gave (not
    always ``p_yes >= 0.5``: a detail check can veto a supported verdict); the confidence of a
    verdict is the probability of the value given. ``delta`` is split over the two values.
    """
    _check_levels(alpha, delta)
    if not len(verdicts) == len(p_yes) == len(labels):
        raise ValueError(f"{len(verdicts)} verdicts, {len(p_yes)} probabilities and {len(labels)} labels")
    sides: dict[int, SideThreshold] = {}
    for value in (1, 0):
        mine = [i for i, v in enumerate(verdicts) if v == value]
        sides[value] = fixed_sequence_threshold(
            [_confidence(value, p_yes[i]) for i in mine],
            [labels[i] == value for i in mine],
            alpha=alpha,
            delta=delta / 2,
            value=value,
        )
    return LevelThresholds(sides, alpha, delta, len(labels))


@dataclass(frozen=True)
class CascadePlan:
    """Thresholds for each judge of a cascade, each chosen on what the judges before it left."""

    levels: tuple[LevelThresholds, ...]
    alpha: float
    delta: float
    labels: int
    left: int = 0
    """Labelled items that no level kept (what review, or the last judge unguaranteed, gets)."""
    kept_by_level: tuple[int, ...] = field(default_factory=tuple)


def plan_cascade(
    levels: Sequence[tuple[Sequence[int], Sequence[float]]],
    labels: Sequence[int],
    *,
    alpha: float,
    delta: float,
) -> CascadePlan:
    """Thresholds for a cascade: ``levels[k] = (verdicts, p_yes)`` of judge ``k`` on the same labelled items.

    Judge ``k`` is calibrated only on the items judges ``0..k-1`` did not keep, at ``delta / K``,
    so the verdicts the whole cascade keeps agree with people at ``>= 1 - alpha`` w.p. ``>= 1 - delta``.
    """
    _check_levels(alpha, delta)
    n = len(labels)
    open_items = list(range(n))
    plans: list[LevelThresholds] = []
    kept_by_level: list[int] = []
    for verdicts, p_yes in levels:
        if len(verdicts) != n or len(p_yes) != n:
            raise ValueError(f"every level needs a verdict and a probability for each of the {n} labelled items")
        level = choose_thresholds(
            [verdicts[i] for i in open_items],
            [p_yes[i] for i in open_items],
            [labels[i] for i in open_items],
            alpha=alpha,
            delta=delta / len(levels),
        )
        plans.append(level)
        still = [i for i in open_items if not level.keeps(verdicts[i], _confidence(verdicts[i], p_yes[i]))]
        kept_by_level.append(len(open_items) - len(still))
        open_items = still
    return CascadePlan(tuple(plans), alpha, delta, n, len(open_items), tuple(kept_by_level))


@dataclass(frozen=True)
class Routed:
    """Where each item of a set ends up under a plan: the level that kept it (``None``: left over)."""

    level: tuple[int | None, ...]
    verdict: tuple[int | None, ...]

    def coverage(self) -> float:
        """Share of items some level kept."""
        return sum(1 for lv in self.level if lv is not None) / len(self.level) if self.level else 0.0

    def agreement(self, labels: Sequence[int]) -> float | None:
        """Agreement with ``labels`` on the kept items (``None`` if none kept)."""
        kept = [(v, y) for v, y in zip(self.verdict, labels, strict=True) if v is not None]
        return None if not kept else sum(1 for v, y in kept if v == y) / len(kept)


def route(plan: CascadePlan, levels: Sequence[tuple[Sequence[int], Sequence[float]]]) -> Routed:
    """Apply ``plan`` to judged items: each goes to the first level that keeps its verdict."""
    if len(levels) != len(plan.levels):
        raise ValueError(f"the plan has {len(plan.levels)} levels, {len(levels)} were given")
    n = len(levels[0][0]) if levels else 0
    where: list[int | None] = []
    said: list[int | None] = []
    for i in range(n):
        for k, ((verdicts, p_yes), thresholds) in enumerate(zip(levels, plan.levels, strict=True)):
            v = verdicts[i]
            if thresholds.keeps(v, _confidence(v, p_yes[i])):
                where.append(k)
                said.append(v)
                break
        else:
            where.append(None)
            said.append(None)
    return Routed(tuple(where), tuple(said))
