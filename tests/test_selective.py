"""Fixed-sequence thresholds (assay.analysis._selective): a worked example, refusals, cascades."""

from __future__ import annotations

import math
import random

import pytest

from assay.analysis._selective import (
    binomial_cdf,
    choose_thresholds,
    fixed_sequence_threshold,
    min_labels,
    plan_cascade,
    route,
)


def test_binomial_cdf_matches_the_sum_of_terms() -> None:
    for n, k, p in [(10, 0, 0.1), (26, 1, 0.1), (40, 7, 0.25), (200, 30, 0.2)]:
        direct = sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))
        assert binomial_cdf(k, n, p) == pytest.approx(direct, rel=1e-9)
    assert binomial_cdf(-1, 5, 0.1) == 0.0
    assert binomial_cdf(5, 5, 0.1) == 1.0


def test_min_labels_is_the_first_n_that_can_reject() -> None:
    # 0.9^21 = 0.109 > 0.1, 0.9^22 = 0.098 <= 0.1
    assert min_labels(0.1, 0.1) == 22
    assert min_labels(0.2, 0.05) == 14  # 0.8^13 = 0.055, 0.8^14 = 0.044


def test_worked_example() -> None:
    """30 verdicts, confidence 0.99 down to 0.70; the 26th and 29th disagree with people.

    alpha = delta = 0.1. The sequence starts where 22 verdicts are kept (0.9^22 = 0.098 <= 0.1);
    keeping 25 (all right) gives p = 0.9^25 = 0.072: rejected; the 26th (wrong) makes it
    P(Bin(26, 0.1) <= 1) = 0.251 > 0.1: stop. The lowest grid threshold keeping exactly the
    first 25 (confidence >= 0.75) is 0.741.
    """
    confidence = [round(0.99 - 0.01 * i, 2) for i in range(30)]
    correct = [i not in (25, 28) for i in range(30)]
    side = fixed_sequence_threshold(confidence, correct, alpha=0.1, delta=0.1)
    assert side.threshold == pytest.approx(0.741)
    assert (side.labels, side.kept, side.errors) == (30, 25, 0)
    assert side.keeps(0.75) and not side.keeps(0.74) and not side.keeps(None)
    # one more error among the first 22 and nothing can be kept: P(Bin(22, 0.1) <= 1) = 0.34
    worse = [ok and i != 3 for i, ok in enumerate(correct)]
    refused = fixed_sequence_threshold(confidence, worse, alpha=0.1, delta=0.1)
    assert refused.threshold is None and refused.reason is not None
    assert "do not agree often enough" in refused.reason


def test_too_few_labels_are_refused_with_the_number_needed() -> None:
    side = fixed_sequence_threshold([0.99] * 10, [True] * 10, alpha=0.1, delta=0.1)
    assert side.threshold is None
    assert side.reason is not None and "10 labelled verdicts" in side.reason and "at least 22" in side.reason
    assert fixed_sequence_threshold([], [], alpha=0.1, delta=0.1).reason == "no labelled item got verdict 1"
    with pytest.raises(ValueError, match="alpha"):
        fixed_sequence_threshold([0.9], [True], alpha=1.2, delta=0.1)


def test_sides_are_chosen_apart() -> None:
    """Confident 'unsupported' verdicts are right, 'supported' ones wrong half the time: only 0 is kept."""
    rng = random.Random(7)
    verdicts, p_yes, labels = [], [], []
    for _ in range(120):
        p = rng.uniform(0.0, 0.3)
        verdicts.append(0), p_yes.append(p), labels.append(0)
    for i in range(120):
        p = rng.uniform(0.5, 1.0)
        verdicts.append(1), p_yes.append(p), labels.append(i % 2)
    level = choose_thresholds(verdicts, p_yes, labels, alpha=0.1, delta=0.1)
    assert level.sides[1].threshold is None
    zero = level.sides[0]
    assert zero.threshold is not None and zero.kept == 120 and zero.delta == pytest.approx(0.05)
    assert level.keeps(0, 0.9) and not level.keeps(1, 0.99)


def test_held_out_agreement_reaches_the_target_in_most_draws() -> None:
    """The guarantee: over calibration/test draws, realised agreement >= 1 - alpha in >= 1 - delta of them."""
    rng = random.Random(11)

    def draw(n: int) -> tuple[list[int], list[float], list[int]]:
        v, p, y = [], [], []
        for _ in range(n):
            conf = rng.uniform(0.5, 1.0)
            side = rng.randint(0, 1)
            v.append(side)
            p.append(conf if side else 1 - conf)
            y.append(side if rng.random() < conf else 1 - side)  # calibrated: right with P = confidence
        return v, p, y

    alpha, delta, met, tried = 0.1, 0.1, 0, 0
    for _ in range(40):
        v, p, y = draw(1500)
        plan = plan_cascade([(v, p)], y, alpha=alpha, delta=delta)
        tv, tp, ty = draw(2000)
        routed = route(plan, [(tv, tp)])
        agreement = routed.agreement(ty)
        if agreement is None:
            continue
        tried += 1
        met += agreement >= 1 - alpha
    assert tried >= 35
    assert met / tried >= 1 - delta


def test_cascade_calibrates_each_level_on_what_the_earlier_left() -> None:
    n = 200
    labels = [i % 2 for i in range(n)]
    # level 0 is sure and right on the first half, unsure on the rest
    v0 = [labels[i] for i in range(n)]
    # (and on the rest says 1 at P 0.55: wrong on half of them)
    v0 = [labels[i] if i < 100 else 1 for i in range(n)]
    p0 = [(0.99 if labels[i] else 0.01) if i < 100 else 0.55 for i in range(n)]
    # level 1 is sure and right everywhere
    p1 = [0.995 if labels[i] else 0.005 for i in range(n)]
    plan = plan_cascade([(v0, p0), (labels, p1)], labels, alpha=0.1, delta=0.1)
    assert plan.kept_by_level == (100, 100) and plan.left == 0
    assert plan.levels[1].labels == 100  # calibrated on the 100 level 0 left
    routed = route(plan, [(v0, p0), (labels, p1)])
    assert routed.level[:100] == (0,) * 100 and routed.level[100:] == (1,) * 100
    assert routed.coverage() == 1.0 and routed.agreement(labels) == 1.0
