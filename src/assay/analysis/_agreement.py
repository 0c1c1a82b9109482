"""Agreement between a binary judge and human labels: pure functions, seeded bootstrap.

Labels and predictions are 1 (supported / PASS, the positive class) or 0. Items the judge
left unscored are not passed in: the caller drops them and counts them.

Definitions (``docs/design/calibration.md``), with the 2x2 confusion counts TP (label 1,
judged 1), FN (label 1, judged 0), FP (label 0, judged 1), TN (label 0, judged 0):

- balanced accuracy = (TPR + TNR) / 2, TPR = TP / (TP + FN), TNR = TN / (TN + FP). When
  the labels hold one class only, it is that class's recall (the mean over the classes
  present in the labels, as scikit-learn's ``balanced_accuracy_score``).
- Cohen's kappa = (p_o - p_e) / (1 - p_e), p_o = (TP + TN) / n, p_e = P(label 1)P(judged 1)
  + P(label 0)P(judged 0). Undefined when p_e = 1 (people and judge both used one and the
  same class): NaN, as scikit-learn's default; shown as a dash.
- precision and recall per class; a ratio with a zero denominator is NaN (undefined),
  never a silent 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "Agreement",
    "ClassStats",
    "Confusion",
    "agreement",
    "balanced_accuracy",
    "bootstrap_ci",
    "cohen_kappa",
    "confusion",
    "precision_recall",
]

Labels = Sequence[int] | npt.NDArray[np.int64]


def _ratio(num: int, den: int) -> float:
    return num / den if den else math.nan


@dataclass(frozen=True)
class Confusion:
    """2x2 confusion counts; rows are the human label, columns the judge's verdict."""

    tp: int
    fn: int
    fp: int
    tn: int

    @property
    def n(self) -> int:
        """Number of items."""
        return self.tp + self.fn + self.fp + self.tn

    def to_dict(self) -> dict[str, int]:
        """``{"tp": .., "fn": .., "fp": .., "tn": ..}``."""
        return {"tp": self.tp, "fn": self.fn, "fp": self.fp, "tn": self.tn}


def _arrays(labels: Labels, preds: Labels) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    y = np.asarray(labels, dtype=np.int64)
    p = np.asarray(preds, dtype=np.int64)
    if y.shape != p.shape or y.ndim != 1:
        raise ValueError(f"labels and preds must be two lists of one length, got {y.shape} and {p.shape}")
    if not (np.isin(y, (0, 1)).all() and np.isin(p, (0, 1)).all()):
        raise ValueError("labels and preds must be 0 or 1")
    return y, p


def confusion(labels: Labels, preds: Labels) -> Confusion:
    """Count TP, FN, FP, TN (positive class 1).

    Raises:
        ValueError: the lists differ in length or hold something other than 0 and 1.
    """
    y, p = _arrays(labels, preds)
    return Confusion(
        tp=int(((y == 1) & (p == 1)).sum()),
        fn=int(((y == 1) & (p == 0)).sum()),
        fp=int(((y == 0) & (p == 1)).sum()),
        tn=int(((y == 0) & (p == 0)).sum()),
    )


def _balanced(c: Confusion) -> float:
    recalls = [r for r in (_ratio(c.tp, c.tp + c.fn), _ratio(c.tn, c.tn + c.fp)) if not math.isnan(r)]
    return sum(recalls) / len(recalls) if recalls else math.nan


def _kappa(c: Confusion) -> float:
    n = c.n
    if n == 0:
        return math.nan
    p_o = (c.tp + c.tn) / n
    p_e = ((c.tp + c.fn) * (c.tp + c.fp) + (c.fp + c.tn) * (c.fn + c.tn)) / (n * n)
    if p_e >= 1.0:
        return math.nan
    return (p_o - p_e) / (1.0 - p_e)


def balanced_accuracy(labels: Labels, preds: Labels) -> float:
    """(TPR + TNR) / 2; the present class's recall if the labels hold one class; NaN if empty."""
    return _balanced(confusion(labels, preds))


def cohen_kappa(labels: Labels, preds: Labels) -> float:
    """Cohen's kappa (p_o - p_e) / (1 - p_e); NaN when undefined (p_e = 1, or no items)."""
    return _kappa(confusion(labels, preds))


@dataclass(frozen=True)
class ClassStats:
    """Precision, recall and F1 of one class, and its support (items with that label)."""

    precision: float
    recall: float
    f1: float
    support: int

    def to_dict(self) -> dict[str, float | int | None]:
        """JSON-ready (NaN becomes ``None``)."""
        return {
            "precision": _json(self.precision),
            "recall": _json(self.recall),
            "f1": _json(self.f1),
            "support": self.support,
        }


def _class_stats(tp: int, fp: int, fn: int) -> ClassStats:
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    if math.isnan(precision) or math.isnan(recall) or precision + recall == 0:
        f1 = math.nan if math.isnan(precision) or math.isnan(recall) else 0.0
    else:
        f1 = 2 * precision * recall / (precision + recall)
    return ClassStats(precision, recall, f1, tp + fn)


def precision_recall(labels: Labels, preds: Labels) -> dict[int, ClassStats]:
    """Per class (1 and 0): precision = agreed / judged that class, recall = agreed / labelled that class."""
    c = confusion(labels, preds)
    return {1: _class_stats(c.tp, c.fp, c.fn), 0: _class_stats(c.tn, c.fn, c.fp)}


def bootstrap_ci(
    stat_fn: Callable[[Labels, Labels], float],
    labels: Labels,
    preds: Labels,
    seed: int,
    n: int = 2000,
    *,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``stat_fn(labels, preds)``, seeded and reproducible.

    Draws ``n`` resamples of the items (pairs, with replacement) from
    ``numpy.random.default_rng(seed).integers(0, len, size=(n, len))``, evaluates the
    statistic on each, drops NaN values (e.g. kappa on a resample holding one class), and
    returns the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles (numpy's
    linear interpolation). No items, or only NaN values, gives ``(nan, nan)``.

    Raises:
        ValueError: ``n`` < 1 or ``confidence`` outside (0, 1).
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    y, p = _arrays(labels, preds)
    if y.size == 0:
        return (math.nan, math.nan)
    index = np.random.default_rng(seed).integers(0, y.size, size=(n, y.size))
    fast = _VECTORISED.get(stat_fn)
    if fast is not None:
        ys, ps = y[index], p[index]
        values = fast(
            ((ys == 1) & (ps == 1)).sum(axis=1),
            ((ys == 1) & (ps == 0)).sum(axis=1),
            ((ys == 0) & (ps == 1)).sum(axis=1),
            ((ys == 0) & (ps == 0)).sum(axis=1),
        )
    else:
        values = np.array([stat_fn(y[i], p[i]) for i in index], dtype=np.float64)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return (math.nan, math.nan)
    lo, hi = np.quantile(values, [(1 - confidence) / 2, (1 + confidence) / 2])
    return (float(lo), float(hi))


Counts = npt.NDArray[np.int64]


def _balanced_many(tp: Counts, fn: Counts, fp: Counts, tn: Counts) -> npt.NDArray[np.float64]:
    """:func:`balanced_accuracy` over many confusion tables at once (same definition)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr = np.where(tp + fn > 0, tp / (tp + fn), np.nan)
        tnr = np.where(tn + fp > 0, tn / (tn + fp), np.nan)
    both = np.stack([tpr, tnr])
    present = (~np.isnan(both)).sum(axis=0)
    total = np.nansum(both, axis=0)
    return np.where(present > 0, total / np.maximum(present, 1), np.nan)


def _kappa_many(tp: Counts, fn: Counts, fp: Counts, tn: Counts) -> npt.NDArray[np.float64]:
    """:func:`cohen_kappa` over many confusion tables at once (same definition)."""
    n = (tp + fn + fp + tn).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_o = (tp + tn) / n
        p_e = ((tp + fn) * (tp + fp) + (fp + tn) * (fn + tn)) / (n * n)
        kappa = (p_o - p_e) / (1.0 - p_e)
    return np.where((n > 0) & (p_e < 1.0), kappa, np.nan)


_VECTORISED: dict[object, Callable[[Counts, Counts, Counts, Counts], npt.NDArray[np.float64]]] = {}


def _json(value: float) -> float | None:
    return None if math.isnan(value) else value


@dataclass(frozen=True)
class Agreement:
    """Every agreement figure for one set of (label, verdict) pairs.

    Attributes:
        confusion: The 2x2 counts.
        balanced_accuracy: (TPR + TNR) / 2.
        balanced_accuracy_ci: Seeded percentile bootstrap interval.
        kappa: Cohen's kappa (NaN when undefined).
        kappa_ci: Seeded percentile bootstrap interval.
        per_class: Precision, recall, F1 and support of class 1 and class 0.
    """

    confusion: Confusion
    balanced_accuracy: float
    balanced_accuracy_ci: tuple[float, float]
    kappa: float
    kappa_ci: tuple[float, float]
    per_class: Mapping[int, ClassStats]

    @property
    def n(self) -> int:
        """Number of (scored) items."""
        return self.confusion.n

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN becomes ``None``)."""
        return {
            "n": self.n,
            "confusion": self.confusion.to_dict(),
            "balanced_accuracy": _json(self.balanced_accuracy),
            "balanced_accuracy_ci": [_json(v) for v in self.balanced_accuracy_ci],
            "kappa": _json(self.kappa),
            "kappa_ci": [_json(v) for v in self.kappa_ci],
            "per_class": {str(k): v.to_dict() for k, v in self.per_class.items()},
        }


_VECTORISED.update({balanced_accuracy: _balanced_many, cohen_kappa: _kappa_many})


def agreement(labels: Labels, preds: Labels, *, seed: int = 0, n_boot: int = 2000) -> Agreement:
    """Confusion, balanced accuracy and kappa (each with a seeded bootstrap CI), per-class precision/recall."""
    return Agreement(
        confusion=confusion(labels, preds),
        balanced_accuracy=balanced_accuracy(labels, preds),
        balanced_accuracy_ci=bootstrap_ci(balanced_accuracy, labels, preds, seed, n_boot),
        kappa=cohen_kappa(labels, preds),
        kappa_ci=bootstrap_ci(cohen_kappa, labels, preds, seed, n_boot),
        per_class=precision_recall(labels, preds),
    )
