"""Fit the detail combiner: P(supported) from the judge plus the detail checks, on human labels.

Input: a JSONL file, one item a line::

    {"set": "summedits", "id": "...", "label": 0, "p": 0.71, "statement": "...", "evidence": "..."}

``label`` is the human label (1 supported), ``p`` the judge's P(supported) for the item
(the lead collects it with the product's ``StatementVerifier``), ``statement`` and
``evidence`` the texts the detail checks read (``assay.grounding._details.detail_features``).

Model: L2-regularised logistic regression of the label on ``[logit(clip(p)), features...]``,
fitted by Newton's method (IRLS) on standardised inputs (the L2 penalty, not the
intercept, is ``lambda / 2 * |w|^2`` on the standardised weights), converted back to raw
inputs for the file.

Cross-validation (``--cv``):

- ``within-set`` (default): k folds made inside every set, stratified by label, with
  the items that share an evidence text kept in one fold (SummEdits has several summaries
  per document), so every fold holds every set in proportion;
- ``leave-set-out``: each set is held out once and everything is chosen on the others
  (how well the combiner transfers to a kind of data it has not seen).

For every outer fold, the regularisation (lowest mean log-loss) and the decision
threshold (highest mean per-set balanced accuracy, grid 0.05..0.95) are chosen by an inner
k-fold CV on the outer training part only; P alone's tuned threshold is chosen on the
same training part. Per set it prints, all out-of-fold on the same items: balanced
accuracy with a seeded bootstrap 95% CI and the true-negative rate for (a) P >= 0.5,
(b) P >= the CV-tuned threshold, (c) the combiner >= its CV-tuned threshold. The
coefficients written are fitted on all items at the regularisation chosen by CV on all
items, and the file's threshold is the one the all-items out-of-fold predictions choose.

    python benchmarks/fit_detail_combiner.py items.jsonl                 # fit, report, write benchmarks/data/
    python benchmarks/fit_detail_combiner.py items.jsonl --dry-run       # report only
    python benchmarks/fit_detail_combiner.py items.jsonl --cv leave-set-out --dry-run
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from _lib.grouped_cv import make_folds

from assay.analysis import balanced_accuracy, bootstrap_ci, confusion
from assay.grounding._details import (
    COMBINER_SCHEMA,
    DETAIL_FEATURES,
    FEATURES_VERSION,
    LOGIT_P,
    DetailCombiner,
    detail_features,
)

OUT = Path(__file__).resolve().parent / "data" / "detail_combiner.json"  # a record of the fit; nothing loads it
INPUTS: tuple[str, ...] = (LOGIT_P, *DETAIL_FEATURES)
CLIP = 1e-6
LAMBDAS = (0.01, 0.1, 1.0, 10.0, 100.0)
THRESHOLDS = np.round(np.arange(0.05, 0.951, 0.01), 2)

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Item:
    set: str
    id: str
    label: int
    p: float
    statement: str
    evidence: str


def read_items(path: Path) -> list[Item]:
    """Read and check the items; a bad line stops with its file and line number."""
    items: list[Item] = []
    seen: set[tuple[str, str]] = set()
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}:{line_no}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{where}: not JSON ({exc})") from None
            if not isinstance(row, dict):
                raise SystemExit(f"{where}: expected an object with set, id, label, p, statement, evidence")
            missing = [k for k in ("set", "id", "label", "p", "statement", "evidence") if k not in row]
            if missing:
                raise SystemExit(f"{where}: missing {missing}")
            label, p = row["label"], row["p"]
            if label not in (0, 1) or isinstance(label, bool):
                raise SystemExit(f"{where}: label must be 0 or 1, got {label!r}")
            if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
                raise SystemExit(f"{where}: p must be a number in [0, 1], got {p!r}")
            if not isinstance(row["statement"], str) or not isinstance(row["evidence"], str):
                raise SystemExit(f"{where}: statement and evidence must be strings")
            key = (str(row["set"]), str(row["id"]))
            if key in seen:
                raise SystemExit(f"{where}: item {key[1]!r} of set {key[0]!r} appears twice")
            seen.add(key)
            items.append(Item(key[0], key[1], int(label), float(p), row["statement"], row["evidence"]))
    if not items:
        raise SystemExit(f"{path}: no items")
    return items


def logit(p: Array | float) -> Array:
    q = np.clip(np.asarray(p, dtype=np.float64), CLIP, 1.0 - CLIP)
    return np.asarray(np.log(q / (1.0 - q)), dtype=np.float64)


def sigmoid(z: Array) -> Array:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * z)), dtype=np.float64)


def design(items: Sequence[Item]) -> Array:
    """Rows ``[logit(clip(p)), features...]`` in the order of :data:`INPUTS`."""
    rows = [np.concatenate(([logit(it.p).item()], detail_features(it.statement, it.evidence).vector())) for it in items]
    return np.vstack(rows)


def fit_logistic(x: Array, y: Array, lam: float, *, iterations: int = 100) -> tuple[Array, float]:
    """L2 logistic regression by Newton's method on standardised columns; raw-scale (weights, intercept).

    Minimises ``sum log-loss + lam / 2 * |w_std|^2`` (intercept unpenalised). A column
    without variance in ``x`` gets weight 0.
    """
    mean = x.mean(axis=0)
    sd = x.std(axis=0)
    live = sd > 1e-12
    z = np.zeros_like(x)
    z[:, live] = (x[:, live] - mean[live]) / sd[live]
    a = np.hstack([np.ones((len(x), 1)), z])
    penalty = np.diag([0.0] + [lam if ok else 1e6 for ok in live])
    w = np.zeros(a.shape[1])
    for _ in range(iterations):
        mu = sigmoid(a @ w)
        gradient = a.T @ (mu - y) + penalty @ w
        hessian = (a * (mu * (1.0 - mu))[:, None]).T @ a + penalty + 1e-9 * np.eye(a.shape[1])
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    weights = np.zeros(x.shape[1])
    weights[live] = w[1:][live] / sd[live]
    intercept = float(w[0] - np.sum(weights[live] * mean[live]))
    return weights, intercept


def predict(x: Array, weights: Array, intercept: float) -> Array:
    return sigmoid(x @ weights + intercept)


def mean_set_ba(scores: Array, y: Array, sets: npt.NDArray[np.str_], threshold: float) -> float:
    values = [
        balanced_accuracy(y[sets == s].astype(np.int64), (scores[sets == s] >= threshold).astype(np.int64))
        for s in np.unique(sets)
    ]
    values = [v for v in values if not math.isnan(v)]
    return float(np.mean(values)) if values else math.nan


def choose_threshold(scores: Array, y: Array, sets: npt.NDArray[np.str_]) -> float:
    """The grid threshold with the highest mean per-set balanced accuracy (ties: closest to 0.5)."""
    best = max(THRESHOLDS, key=lambda t: (round(mean_set_ba(scores, y, sets, float(t)), 12), -abs(t - 0.5)))
    return float(best)


def log_loss(p: Array, y: Array) -> float:
    q = np.clip(p, 1e-12, 1 - 1e-12)
    return float(-np.mean(y * np.log(q) + (1 - y) * np.log(1 - q)))


def inner_choice(
    x: Array, y: Array, sets: npt.NDArray[np.str_], groups: Sequence[str], k: int, seed: int, lambdas: Sequence[float]
) -> tuple[float, float]:
    """(lambda, threshold) by k-fold CV within sets on these items only."""
    folds = make_folds(list(sets), y, groups, k, seed)
    best: tuple[float, float, Array] | None = None
    for lam in lambdas:
        oof = np.full(len(y), np.nan)
        for f in range(k):
            train, test = folds != f, folds == f
            if not test.any():
                continue
            weights, intercept = fit_logistic(x[train], y[train], lam)
            oof[test] = predict(x[test], weights, intercept)
        loss = log_loss(oof, y)
        if best is None or loss < best[1] - 1e-12:
            best = (lam, loss, oof)
    assert best is not None
    return best[0], choose_threshold(best[2], y, sets)


@dataclass(frozen=True)
class Figures:
    balanced_accuracy: float
    ci: tuple[float, float]
    tnr: float
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "balanced_accuracy": round(self.balanced_accuracy, 4),
            "ci95": [round(self.ci[0], 4), round(self.ci[1], 4)],
            "tnr": round(self.tnr, 4) if not math.isnan(self.tnr) else None,
            "n": self.n,
        }


def figures(y: Array, preds: Array, seed: int, boot: int) -> Figures:
    labels, verdicts = y.astype(np.int64), preds.astype(np.int64)
    c = confusion(labels, verdicts)
    tnr = c.tn / (c.tn + c.fp) if c.tn + c.fp else math.nan
    ci = bootstrap_ci(balanced_accuracy, labels, verdicts, seed, boot)
    return Figures(balanced_accuracy(labels, verdicts), ci, tnr, c.n)


METHODS = ("P >= 0.5", "P >= tuned", "combiner >= tuned")


def cross_validate(
    items: Sequence[Item], x: Array, *, scheme: str, k: int, seed: int, lambdas: Sequence[float], boot: int
) -> dict[str, Any]:
    """Out-of-fold decisions of the three methods and their per-set figures."""
    y = np.array([it.label for it in items], dtype=np.float64)
    sets = np.array([it.set for it in items])
    groups = [hashlib.sha256(f"{it.set}\0{it.evidence}".encode()).hexdigest() for it in items]
    p = np.array([it.p for it in items])
    if scheme == "leave-set-out":
        names = sorted(set(sets))
        if len(names) < 2:
            raise SystemExit("--cv leave-set-out needs at least two sets")
        outer = np.array([names.index(s) for s in sets], dtype=np.int64)
    else:
        outer = make_folds(list(sets), y, groups, k, seed)
    decided = {m: np.zeros(len(y), dtype=np.int64) for m in METHODS}
    chosen: list[dict[str, float]] = []
    for f in sorted(set(outer.tolist())):
        train, test = outer != f, outer == f
        train_groups = [g for g, t in zip(groups, train, strict=True) if t]
        lam, t_comb = inner_choice(x[train], y[train], sets[train], train_groups, k, seed, lambdas)
        t_p = choose_threshold(p[train], y[train], sets[train])
        weights, intercept = fit_logistic(x[train], y[train], lam)
        decided["P >= 0.5"][test] = p[test] >= 0.5
        decided["P >= tuned"][test] = p[test] >= t_p
        decided["combiner >= tuned"][test] = predict(x[test], weights, intercept) >= t_comb
        chosen.append({"fold": f, "lambda": lam, "threshold_p": t_p, "threshold_combiner": t_comb})
    per_set: dict[str, dict[str, Figures]] = {}
    for s in sorted(set(sets)):
        mask = sets == s
        per_set[s] = {m: figures(y[mask], decided[m][mask], seed, boot) for m in METHODS}
    return {"per_set": per_set, "folds": chosen}


def print_report(items: Sequence[Item], result: dict[str, Any], scheme: str) -> None:
    print(f"out-of-fold, cv={scheme}; balanced accuracy [bootstrap 95% CI], TNR = true-negative rate")
    print(f"{'set':<12}{'n':>6}{'pos':>6}  {'method':<20}{'BA':>7}  {'95% CI':<16}{'TNR':>6}")
    for s, by_method in result["per_set"].items():
        n = sum(1 for it in items if it.set == s)
        pos = sum(it.label for it in items if it.set == s)
        for i, (m, fig) in enumerate(by_method.items()):
            head = f"{s:<12}{n:>6}{pos:>6}" if i == 0 else " " * 24
            ci = f"[{fig.ci[0]:.3f}-{fig.ci[1]:.3f}]"
            print(f"{head}  {m:<20}{fig.balanced_accuracy:>7.3f}  {ci:<16}{fig.tnr:>6.3f}")
    for fold in result["folds"]:
        print(
            f"  fold {fold['fold']}: lambda {fold['lambda']:g}, threshold P {fold['threshold_p']:.2f}, "
            f"combiner {fold['threshold_combiner']:.2f}"
        )


def write(combiner: DetailCombiner, out: Path) -> None:
    data = combiner.to_dict()
    assert data["schema"] == COMBINER_SCHEMA and data["features_version"] == FEATURES_VERSION
    DetailCombiner.from_dict(data, source=str(out))  # what is written must load
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out} (version {combiner.version})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("items", type=Path, help="JSONL of {set, id, label, p, statement, evidence}")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--cv", choices=("within-set", "leave-set-out"), default="within-set")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--boot", type=int, default=2000, help="bootstrap resamples per CI")
    parser.add_argument("--lambdas", default=",".join(f"{v:g}" for v in LAMBDAS))
    parser.add_argument("--version", help="version string of the written combiner (default: fit-DATE-SHA8)")
    parser.add_argument("--dry-run", action="store_true", help="report only; write nothing")
    args = parser.parse_args(argv)
    if args.folds < 2:
        parser.error("--folds must be at least 2")
    lambdas = [float(v) for v in args.lambdas.split(",") if v.strip()]
    if not lambdas or any(v <= 0 for v in lambdas):
        parser.error("--lambdas must be positive numbers")

    items = read_items(args.items)
    x = design(items)
    result = cross_validate(items, x, scheme=args.cv, k=args.folds, seed=args.seed, lambdas=lambdas, boot=args.boot)
    print_report(items, result, args.cv)

    y = np.array([it.label for it in items], dtype=np.float64)
    sets = np.array([it.set for it in items])
    groups = [hashlib.sha256(f"{it.set}\0{it.evidence}".encode()).hexdigest() for it in items]
    lam, threshold = inner_choice(x, y, sets, groups, args.folds, args.seed, lambdas)
    weights, intercept = fit_logistic(x, y, lam)
    print(f"final fit on all {len(items)} items: lambda {lam:g}, threshold {threshold:.2f}")
    for name, w in zip(INPUTS, weights, strict=True):
        print(f"  {name:<24}{w:+.4f}")
    print(f"  {'intercept':<24}{intercept:+.4f}")
    if args.dry_run:
        return 0

    digest = hashlib.sha256(args.items.read_bytes()).hexdigest()
    today = datetime.date.today().isoformat()
    combiner = DetailCombiner(
        coefficients=tuple(float(w) for w in weights),
        intercept=intercept,
        feature_names=INPUTS,
        version=args.version or f"fit-{today}-{digest[:8]}",
        clip=CLIP,
        threshold=threshold,
        fit={
            "method": "L2 logistic regression (Newton/IRLS) on standardised inputs, intercept unpenalised",
            "script": "benchmarks/fit_detail_combiner.py",
            "fitted_on": today,
            "input": {"file": args.items.name, "sha256": digest, "n": len(items)},
            "sets": {s: {"n": int((sets == s).sum()), "positives": int(y[sets == s].sum())} for s in sorted(set(sets))},
            "lambda": lam,
            "cv": {
                "scheme": args.cv,
                "folds": args.folds,
                "seed": args.seed,
                "bootstrap": args.boot,
                "lambdas": lambdas,
                "chosen_per_fold": result["folds"],
                "out_of_fold": {
                    s: {m: fig.to_dict() for m, fig in by_method.items()} for s, by_method in result["per_set"].items()
                },
            },
        },
    )
    write(combiner, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
