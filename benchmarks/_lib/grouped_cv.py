"""Grouped cross-validation: choose among verdict variants without scoring the items that chose (issue 24).

A variant with a choice in it (a threshold, the veto on or off, a probe's layer,
regularisation and threshold) is scored two ways, on the same items:

- **plain**: the choice made on all items, scored on the same items (what a figure picked
  on the dev set says: optimistic when anything was chosen);
- **grouped CV**: the items are dealt into k folds, every item of one source document in
  one fold; for each fold the choice is made on the other folds only and scored on it.
  The out-of-fold verdicts of all folds give the figure. A variant without a choice gets
  the same figure both ways.

Source documents (``document_groups``): SummEdits, the document (32 in the dev set, about
30 summaries each); BEGIN, the knowledge snippet, joined with any other item sharing its
dialogue turn; WiCE, the Wikipedia article the claim is from (``claim_title``). Folds are
dealt within each set, stratified by label (``make_folds``), and fold
``f`` of every set is held out together: one setting is chosen for all sets at once, as
the product ships one.

Choices inside a training part maximise the mean over sets of balanced accuracy
(thresholds; ties to the nearest default) or minimise a weighted log-loss (a probe's
layer and regularisation, by an inner grouped CV on the training part alone). Every
item's weight makes each set count once and, within a set, each label class once.

Figures: balanced accuracy with a seeded item bootstrap 95% CI (``assay.analysis``), TNR,
TPR, n; a paired bootstrap of the difference from a baseline variant on the same items.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.analysis import balanced_accuracy, bootstrap_ci, confusion

from .devsets import DATA, SETS

Array = npt.NDArray[np.float64]
THRESHOLDS = np.round(np.arange(0.05, 0.951, 0.01), 2)
CS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)


def document_groups(name: str, rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Item id -> source document of ``rows`` of set ``name`` (see the module docstring)."""
    if name == "summedits":
        return {r["id"]: "doc:" + str(r["context"])[:200] for r in rows}
    if name in ("wice", "wicefull"):
        return {r["id"]: "article:" + str(r.get("claim_title") or r["context"][:200]) for r in rows}
    if name == "begin":
        # Union-find over the knowledge snippet and the dialogue turn.
        parent: dict[str, str] = {}

        def find(x: str) -> str:
            parent.setdefault(x, x)
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for r in rows:
            a, b = find("k:" + str(r["context"])), find("d:" + str(r.get("dialogue_message", r["id"])))
            if a != b:
                parent[b] = a
        return {r["id"]: find("k:" + str(r["context"]))[:200] for r in rows}
    return {r["id"]: str(r["id"]) for r in rows}


@dataclass
class Data:
    """Items of several sets, with what every variant may use."""

    sets: npt.NDArray[np.str_]
    ids: list[str]
    y: npt.NDArray[np.int64]
    groups: list[str]
    p: Array  # the judge's P(supported), max over the chunks it was read against; nan where fixed
    vetoed: npt.NDArray[np.bool_]  # a detail check (number, name, negation) vetoes "supported"
    fixed: npt.NDArray[np.int64]  # -1, or the verdict decided with no judge call (a copy 1, text to the judge 0)
    hidden: np.ndarray | None = None  # n x layers x n_embd at the verdict position (float16); zeros where fixed
    layers: tuple[str, ...] = ()
    unscored: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, mask: npt.NDArray[np.bool_]) -> Data:
        index = np.flatnonzero(mask)
        return Data(
            self.sets[index],
            [self.ids[i] for i in index],
            self.y[index],
            [self.groups[i] for i in index],
            self.p[index],
            self.vetoed[index],
            self.fixed[index],
            None if self.hidden is None else self.hidden[index],
            self.layers,
        )

    def weights(self) -> Array:
        """Each set counts once, and within a set each label class once (mean weight 1)."""
        w = np.zeros(len(self))
        cells = {(s, c) for s, c in zip(self.sets, self.y, strict=True)}
        for s, c in cells:
            mask = (self.sets == s) & (self.y == c)
            w[mask] = 1.0 / mask.sum()
        return w * len(self) / w.sum()


def load_hidden(folder: Path, sets: Sequence[str], rows: dict[str, list[dict[str, Any]]] | None = None) -> Data:
    """Items from ``hidden_states.py``'s cache; ``rows`` (set -> data rows) restricts and gives the groups."""
    about = json.loads((folder / "about.json").read_text())
    names = tuple(about["names"])
    data_rows: dict[str, dict[str, dict[str, Any]]] = {}
    for name in sets:
        every = [json.loads(line) for line in (DATA / SETS[name]).open()] if rows is None else rows[name]
        data_rows[name] = {r["id"]: r for r in every}
    out_sets, ids, ys, groups, ps, vetoed, fixed, vectors = [], [], [], [], [], [], [], []
    unscored: dict[str, int] = {}
    n_embd = 0
    for name in sets:
        meta_path = folder / f"{name}.jsonl"
        if not meta_path.exists():
            continue
        lines = [json.loads(line) for line in meta_path.read_text().splitlines()]
        wanted = data_rows[name]
        lines = [m for m in lines if m["id"] in wanted]
        group_of = document_groups(name, [wanted[m["id"]] for m in lines])
        parts: dict[int, np.ndarray] = {}
        for m in lines:
            if m["failure"] is not None or m["v"] is None:
                unscored[name] = unscored.get(name, 0) + 1
                continue
            out_sets.append(name)
            ids.append(m["id"])
            ys.append(int(m["label"]))
            groups.append(f"{name}/{group_of[m['id']]}")
            vetoed.append(bool(m["vetoed"]))
            if m["verbatim"] or "addresses_judge" in m["flags"] or not m["calls"]:
                fixed.append(int(m["v"]))
                ps.append(math.nan)
                vectors.append(None)
                continue
            fixed.append(-1)
            ps.append(float(m["p"]))
            best = max(m["calls"], key=lambda c: c["p"])  # the chunk the verdict rests on
            if m["part"] not in parts:
                parts[m["part"]] = np.load(folder / f"{name}-{m['part']}.npy", mmap_mode="r")
            vector = np.asarray(parts[m["part"]][best["row"]])
            n_embd = vector.shape[-1]
            vectors.append(vector)
    hidden = np.zeros((len(ids), len(names), n_embd), dtype=np.float16)
    for i, v in enumerate(vectors):
        if v is not None:
            hidden[i] = v
    return Data(
        np.array(out_sets),
        ids,
        np.array(ys, dtype=np.int64),
        groups,
        np.array(ps, dtype=np.float64),
        np.array(vetoed, dtype=bool),
        np.array(fixed, dtype=np.int64),
        hidden,
        names,
        unscored,
    )


def folds_of(data: Data, k: int, seed: int) -> npt.NDArray[np.int64]:
    """Grouped, label-stratified folds within each set."""
    return make_folds(list(data.sets), data.y.astype(np.float64), data.groups, k, seed)


# ---- decisions --------------------------------------------------------------------------------


def mean_set_ba(data: Data, preds: npt.NDArray[np.int64]) -> float:
    values = []
    for s in np.unique(data.sets):
        mask = data.sets == s
        values.append(balanced_accuracy(data.y[mask], preds[mask]))
    values = [v for v in values if not math.isnan(v)]
    return float(np.mean(values)) if values else math.nan


def decide(data: Data, score: Array, threshold: float, veto: bool) -> npt.NDArray[np.int64]:
    """Verdicts: score >= threshold, vetoed where asked, the fixed verdicts as they are."""
    preds = (np.nan_to_num(score, nan=0.0) >= threshold).astype(np.int64)
    if veto:
        preds[data.vetoed] = 0
    fixed = data.fixed >= 0
    preds[fixed] = data.fixed[fixed]
    return preds


def best_threshold(data: Data, score: Array, veto: bool, default: float = 0.5) -> float:
    """The grid threshold with the highest mean per-set balanced accuracy (ties: nearest ``default``)."""
    return float(
        max(
            THRESHOLDS,
            key=lambda t: (round(mean_set_ba(data, decide(data, score, float(t), veto)), 12), -abs(t - default)),
        )
    )


# ---- logistic regression (numpy, L2) ----------------------------------------------------------


def sigmoid(z: Array) -> Array:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * z)), dtype=np.float64)


def logit(p: Array) -> Array:
    q = np.clip(np.asarray(p, dtype=np.float64), 1e-6, 1 - 1e-6)
    return np.asarray(np.log(q / (1 - q)), dtype=np.float64)


class Basis:
    """Standardised inputs in their SVD basis, so L2 logistic fits cost min(n, d) dimensions.

    With ``x_std = U S V^T``, the L2 solution lies in the row space: ``w = V beta`` and
    ``x_std w = (U S) beta``, ``|w| = |beta|``: the same problem in ``rank`` dimensions.
    """

    def __init__(self, x: np.ndarray, max_rank: int = 0) -> None:
        """``max_rank``: keep only the leading that many components (a fit on the principal ones)."""
        x = np.asarray(x, dtype=np.float64)
        self.mean = x.mean(axis=0)
        self.scale = x.std(axis=0)
        self.scale[self.scale < 1e-6] = 1.0
        z = (x - self.mean) / self.scale
        u, s, vt = np.linalg.svd(z, full_matrices=False)
        keep = s > s[0] * 1e-9
        if max_rank:
            keep[max_rank:] = False
        self.z = u[:, keep] * s[keep]
        self.vt = vt[keep]

    def fit(self, y: Array, w: Array, c: float, start: Array | None = None) -> Array:
        """theta = [intercept, beta] minimising ``c * sum w_i logloss_i + |beta|^2 / 2`` (Newton)."""
        a = np.hstack([np.ones((len(y), 1)), self.z])
        theta = np.zeros(a.shape[1]) if start is None else start.copy()
        ridge = np.ones(a.shape[1])
        ridge[0] = 1e-8
        for _ in range(50):
            mu = sigmoid(a @ theta)
            gradient = c * (a.T @ (w * (mu - y))) + ridge * theta
            hessian = c * (a.T * (w * mu * (1 - mu))) @ a
            hessian[np.diag_indices_from(hessian)] += ridge
            step = np.linalg.solve(hessian, gradient)
            theta -= step
            if np.max(np.abs(step)) < 1e-7:
                break
        return theta

    def raw(self, theta: Array) -> tuple[Array, float]:
        """(coefficients on the raw inputs, intercept)."""
        coef = (self.vt.T @ theta[1:]) / self.scale
        return coef, float(theta[0] - coef @ self.mean)


def fit_small(x: Array, y: Array, w: Array, c: float = 10.0) -> tuple[Array, float]:
    """A low-dimensional L2 logistic fit (the stacker over probe and P)."""
    basis = Basis(x)
    return basis.raw(basis.fit(y, w, c))


def weighted_log_loss(prob: Array, y: Array, w: Array) -> float:
    q = np.clip(prob, 1e-9, 1 - 1e-9)
    return float(-np.sum(w * (y * np.log(q) + (1 - y) * np.log(1 - q))) / np.sum(w))


# ---- variants ---------------------------------------------------------------------------------


class Variant:
    """A way to turn an item into a verdict, with whatever it chooses made in ``fit``."""

    name = ""

    def fit(self, train: Data, seed: int) -> Any:
        raise NotImplementedError

    def predict(self, params: Any, data: Data) -> npt.NDArray[np.int64]:
        raise NotImplementedError


class Threshold(Variant):
    """P >= t, the veto on or off; ``thresholds``/``vetoes`` with more than one value are chosen."""

    def __init__(self, name: str, thresholds: Sequence[float] = (0.5,), vetoes: Sequence[bool] = (False,)) -> None:
        self.name = name
        self.thresholds = tuple(thresholds)
        self.vetoes = tuple(vetoes)

    def fit(self, train: Data, seed: int) -> tuple[float, bool]:
        if len(self.thresholds) == 1 and len(self.vetoes) == 1:
            return self.thresholds[0], self.vetoes[0]
        best: tuple[float, float, bool] | None = None
        for veto in self.vetoes:
            t = best_threshold(train, train.p, veto) if len(self.thresholds) > 1 else self.thresholds[0]
            ba = mean_set_ba(train, decide(train, train.p, t, veto))
            # ties: the veto on (today's default), then the first threshold found
            if best is None or ba > best[0] + 1e-12:
                best = (ba, t, veto)
        assert best is not None
        return best[1], best[2]

    def predict(self, params: tuple[float, bool], data: Data) -> npt.NDArray[np.int64]:
        t, veto = params
        return decide(data, data.p, t, veto)


@dataclass
class ProbeFit:
    layer: int
    c: float
    coef: Array
    intercept: float
    threshold: float
    stack: tuple[Array, float] | None = None  # weights over (probe logit, logit P), intercept
    mean: Array | None = None  # the standardisation the fit used (coef is already on raw inputs)
    scale: Array | None = None


class Probe(Variant):
    """A linear probe on the verdict-position hidden state (optionally stacked with P, vetoed).

    ``fit``: for every candidate layer and C, an inner grouped CV on the training part gives
    out-of-fold probe scores; the (layer, C) with the lowest weighted log-loss wins; with
    ``with_p`` a two-input logistic model over (probe logit, logit P) is fitted on those
    out-of-fold scores; the threshold is the one with the highest mean per-set balanced
    accuracy on them (veto applied if ``veto``). The probe is then refitted on the whole
    training part.
    """

    def __init__(
        self,
        name: str,
        layers: Sequence[str],
        *,
        with_p: bool = False,
        veto: bool = False,
        cs: Sequence[float] = CS,
        inner: int = 4,
        shared: dict[Any, Any] | None = None,
    ) -> None:
        self.name = name
        self.layer_names = tuple(layers)
        self.with_p = with_p
        self.veto = veto
        self.cs = tuple(cs)
        self.inner = inner
        self.shared = shared if shared is not None else {}  # inner-CV results shared by probe variants

    def _inner(self, train: Data, seed: int) -> tuple[int, float, Array]:
        """(layer index, C, out-of-fold probe logits) chosen by inner grouped CV (cached per training part)."""
        assert train.hidden is not None
        key = (tuple(train.ids), self.layer_names, self.cs, self.inner, seed)
        if key in self.shared:
            return self.shared[key]  # type: ignore[no-any-return]
        judged = train.fixed < 0
        part = train.take(judged)
        w = part.weights()
        y = part.y.astype(np.float64)
        folds = folds_of(part, self.inner, seed + 1)
        best: tuple[float, int, float, Array] | None = None
        for name in self.layer_names:
            li = train.layers.index(name)
            oof = {c: np.zeros(len(part)) for c in self.cs}
            for f in range(self.inner):
                tr, te = folds != f, folds == f
                basis = Basis(part.hidden[tr, li])  # type: ignore[index]
                theta = None
                for c in self.cs:
                    theta = basis.fit(y[tr], w[tr], c, theta)
                    coef, b = basis.raw(theta)
                    oof[c][te] = np.asarray(part.hidden[te, li], dtype=np.float64) @ coef + b  # type: ignore[index]
            for c in self.cs:
                loss = weighted_log_loss(sigmoid(oof[c]), y, w)
                if best is None or loss < best[0] - 1e-12:
                    best = (loss, li, c, oof[c])
        assert best is not None
        scores = np.full(len(train), np.nan)
        scores[judged] = best[3]
        result = (best[1], best[2], scores)
        self.shared[key] = result
        return result

    def fit(self, train: Data, seed: int) -> ProbeFit:
        assert train.hidden is not None
        li, c, oof = self._inner(train, seed)
        judged = train.fixed < 0
        stack = None
        score = sigmoid(oof)
        if self.with_p:
            x = np.column_stack([oof[judged], logit(train.p[judged])])
            stack = fit_small(x, train.y[judged].astype(np.float64), train.take(judged).weights())
            score = np.full(len(train), np.nan)
            score[judged] = sigmoid(x @ stack[0] + stack[1])
        threshold = best_threshold(train, score, self.veto)
        part = train.take(judged)
        basis = Basis(part.hidden[:, li])  # type: ignore[index]
        theta = None
        for cc in self.cs:  # the same warm-start path as the inner fits
            theta = basis.fit(part.y.astype(np.float64), part.weights(), cc, theta)
            if cc == c:
                break
        assert theta is not None
        coef, b = basis.raw(theta)
        return ProbeFit(li, c, coef, b, threshold, stack, basis.mean, basis.scale)

    def scores(self, params: ProbeFit, data: Data) -> Array:
        assert data.hidden is not None
        z = np.asarray(data.hidden[:, params.layer], dtype=np.float64) @ params.coef + params.intercept
        if params.stack is not None:
            z = np.column_stack([z, logit(data.p)]) @ params.stack[0] + params.stack[1]
        score = sigmoid(z)
        score[data.fixed >= 0] = np.nan
        return score

    def predict(self, params: ProbeFit, data: Data) -> npt.NDArray[np.int64]:
        return decide(data, self.scores(params, data), params.threshold, self.veto)


# ---- evaluation -------------------------------------------------------------------------------


@dataclass
class Evaluated:
    variant: str
    plain: npt.NDArray[np.int64]  # chosen on all items, scored on them
    cv: npt.NDArray[np.int64]  # out of fold
    chosen: list[str]  # what each training part chose (and "all" for plain)


def evaluate(variant: Variant, data: Data, folds: npt.NDArray[np.int64], seed: int) -> Evaluated:
    params = variant.fit(data, seed)
    plain = variant.predict(params, data)
    chosen = [f"all: {describe(params)}"]
    cv = np.zeros(len(data), dtype=np.int64)
    for f in sorted(set(folds.tolist())):
        train, test = folds != f, folds == f
        fitted = variant.fit(data.take(train), seed)
        cv[test] = variant.predict(fitted, data.take(test))
        chosen.append(f"fold {f}: {describe(fitted)}")
    return Evaluated(variant.name, plain, cv, chosen)


def describe(params: Any) -> str:
    if isinstance(params, ProbeFit):
        stack = "" if params.stack is None else f", stack {np.round(params.stack[0], 2).tolist()}"
        return f"layer #{params.layer}, C {params.c:g}, t {params.threshold:.2f}{stack}"
    if isinstance(params, tuple):
        return f"t {params[0]:.2f}, veto {'on' if params[1] else 'off'}"
    return str(params)


@dataclass(frozen=True)
class Figures:
    n: int
    ba: float
    ci: tuple[float, float]
    tnr: float
    tpr: float

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "ba": self.ba, "ci95": list(self.ci), "tnr": self.tnr, "tpr": self.tpr}


def figures(y: npt.NDArray[np.int64], preds: npt.NDArray[np.int64], seed: int) -> Figures:
    c = confusion(y, preds)
    tnr = c.tn / (c.tn + c.fp) if c.tn + c.fp else math.nan
    tpr = c.tp / (c.tp + c.fn) if c.tp + c.fn else math.nan
    return Figures(c.n, balanced_accuracy(y, preds), bootstrap_ci(balanced_accuracy, y, preds, seed), tnr, tpr)


def paired_difference(
    y: npt.NDArray[np.int64], a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], seed: int, n: int = 2000
) -> tuple[float, float, float]:
    """BA(a) - BA(b) on the same items, with a paired item-bootstrap 95% CI."""
    rng = np.random.default_rng(seed)
    index = rng.integers(0, len(y), size=(n, len(y)))
    ys, pa, pb = y[index], a[index], b[index]

    def ba(p: np.ndarray) -> Array:
        pos, neg = ys == 1, ys == 0
        tpr = ((p == 1) & pos).sum(1) / np.maximum(pos.sum(1), 1)
        tnr = ((p == 0) & neg).sum(1) / np.maximum(neg.sum(1), 1)
        return np.asarray((tpr + tnr) / 2, dtype=np.float64)

    diff = ba(pa) - ba(pb)
    lo, hi = np.quantile(diff, [0.025, 0.975])
    return balanced_accuracy(y, a) - balanced_accuracy(y, b), float(lo), float(hi)


def table(
    results: Sequence[Evaluated],
    data: Data,
    seed: int,
    baseline: str | None = None,
    out: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Per set and variant: plain BA, grouped-CV BA [CI], TNR, TPR (CV), n; and the CV gap to ``baseline``."""
    rows: list[dict[str, Any]] = []
    base = next((r for r in results if r.variant == baseline), None)
    width = max(len(r.variant) for r in results)
    for s in dict.fromkeys(data.sets.tolist()):
        mask = data.sets == s
        y = data.y[mask]
        unscored = data.unscored.get(s, 0)
        out(f"\n{s} (n={mask.sum()}, {int(y.sum())} supported{f', {unscored} unscored' if unscored else ''})")
        out(f"  {'variant':{width}s}  plain BA   grouped-CV BA [95% CI]      TNR    TPR   vs {baseline or '-'} (CV)")
        for r in results:
            plain = balanced_accuracy(y, r.plain[mask])
            fig = figures(y, r.cv[mask], seed)
            diff = ""
            row: dict[str, Any] = {"set": s, "variant": r.variant, "plain_ba": plain, **fig.to_dict()}
            if base is not None and r is not base:
                d, lo, hi = paired_difference(y, r.cv[mask], base.cv[mask], seed)
                diff = f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
                row["vs_baseline"] = [d, lo, hi]
            out(
                f"  {r.variant:{width}s}  {plain:.3f}     {fig.ba:.3f} [{fig.ci[0]:.3f}-{fig.ci[1]:.3f}]"
                f"   {fig.tnr:.3f}  {fig.tpr:.3f}   {diff}"
            )
            rows.append(row)
    return rows


def make_folds(sets: Sequence[str], labels: Array, groups: Sequence[str], k: int, seed: int) -> npt.NDArray[np.int64]:
    """Fold of each item: within every set, stratified by label, items of one group in one fold.

    Groups (items sharing an evidence text) are dealt largest first, each to the fold
    where its majority label is scarcest so far (ties: the fold with fewest items of the
    set, then the lowest index), after a seeded shuffle.
    """
    if len(set(groups)) < k:
        raise SystemExit(f"{len(set(groups))} distinct evidence texts cannot make {k} folds: lower --folds")
    rng = random.Random(seed)
    folds = np.full(len(labels), -1, dtype=np.int64)
    for name in sorted(set(sets)):
        members: dict[str, list[int]] = {}
        for i, (s, g) in enumerate(zip(sets, groups, strict=True)):
            if s == name:
                members.setdefault(g, []).append(i)
        order = list(members.values())
        rng.shuffle(order)
        order.sort(key=len, reverse=True)
        counts = np.zeros((k, 2), dtype=np.int64)
        for group in order:
            ones = int(labels[group].sum())
            label = 1 if 2 * ones >= len(group) else 0
            fold = min(range(k), key=lambda f: (counts[f, label], counts[f].sum(), f))
            folds[group] = fold
            counts[fold, 1] += ones
            counts[fold, 0] += len(group) - ones
    return folds


def full_groups(rows_by_set: dict[str, Sequence[dict[str, Any]]]) -> dict[str, str]:
    """Item id -> ``set/group`` over every row given (the grouping of ``verifier_data``'s documents)."""
    return {i: f"{name}/{g}" for name, rows in rows_by_set.items() for i, g in document_groups(name, rows).items()}
