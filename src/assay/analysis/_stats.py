"""The one home of assay's intervals: a seeded percentile bootstrap of a mean, and Wilson.

Analysis, ``assay gate``, its Markdown job summary and the HTML report all call these, so
the same run gets the same interval everywhere (``docs/design/variance.md``).

The bootstrap's unit is the *sample*: pass one value per sample (the mean of its scored
repeats), so a sample's repeats stay together. Resampling repeats would measure the judge
instead of the data and make the interval look narrower than it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

__all__ = ["DEFAULT_BOOTSTRAP", "bootstrap_mean_ci", "paired_bootstrap_ci", "wilson_interval"]

DEFAULT_BOOTSTRAP = 10_000
"""Resamples of every bootstrap unless told otherwise."""

_MAX_INDICES = 4_000_000  # resample indices drawn at once: bounds memory for large runs


def bootstrap_mean_ci(
    values: Sequence[float] | npt.NDArray[np.float64],
    *,
    confidence: float = 0.95,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean, seeded and reproducible.

    NaN values are dropped first. Then ``n_boot`` resamples of the ``n`` values are drawn
    with replacement from ``numpy.random.default_rng(seed).integers(0, n, size=(n_boot, n))``
    (in row chunks of at most 4M indices, which is the same stream), each resample's mean
    is taken, and the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of
    those means are returned (numpy's default linear interpolation).

    Fewer than two values give ``(nan, nan)``: one sample says nothing about how much the
    mean would move with other samples, and a zero-width interval would claim it cannot.

    Args:
        values: One value per independent unit (per sample: average its repeats first).
        confidence: Coverage of the interval, in (0, 1).
        n_boot: Number of resamples.
        seed: Seed of the generator.

    Raises:
        ValueError: ``confidence`` outside (0, 1) or ``n_boot`` < 1.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    data = np.asarray(values, dtype=np.float64)
    data = data[~np.isnan(data)]
    n = int(data.size)
    if n < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot, dtype=np.float64)
    chunk = max(1, _MAX_INDICES // n)
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        means[start:stop] = data[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return (float(low), float(high))


def paired_bootstrap_ci(
    base: Sequence[float],
    other: Sequence[float],
    *,
    confidence: float = 0.95,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> tuple[float, float]:
    """Bootstrap CI of the mean paired difference ``base[i] - other[i]``: pairs are resampled together.

    It is :func:`bootstrap_mean_ci` of the differences (so the same seed gives the same
    resamples).

    Raises:
        ValueError: the sequences differ in length.
    """
    if len(base) != len(other):
        raise ValueError(f"paired values differ in length: {len(base)} vs {len(other)}")
    diffs = np.asarray(base, dtype=np.float64) - np.asarray(other, dtype=np.float64)
    return bootstrap_mean_ci(diffs, confidence=confidence, n_boot=n_boot, seed=seed)


def wilson_interval(successes: int, trials: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion.

    With z the normal quantile at ``(1 + confidence) / 2`` and p = successes / trials::

        center = (p + z²/2n) / (1 + z²/n)
        half   = z · sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n)

    ``(nan, nan)`` for no trials.
    """
    if trials <= 0:
        return (math.nan, math.nan)
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be in [0, {trials}], got {successes}")
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    p = successes / trials
    denom = 1 + z * z / trials
    center = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return (max(0.0, center - half), min(1.0, center + half))
