"""A readout of the verdict pass's hidden state, anchored at the judge's own answer, trained on people (issue 64).

The shipped verifier reads P(supported) = sigmoid(l("1") - l("0")) from the logits after
``{"verdict": ``; with Qwen2.5's tied, bias-free unembedding that is
``sigmoid(w0 . h)``, ``h`` the final-norm hidden state at the verdict position
(``result_norm``) and ``w0 = e("1") - e("0")`` the judge's own Yes-minus-No direction.
The readout is ``sigmoid((w0 + v) . h + b)``, fitted by weighted logistic loss with the
penalty ``lambda / 2 * (|v|^2 + b^2)``, i.e. on ``(w - w0)``: with no data (or a large
``lambda``) it is exactly today's P. It is computed as ``logit(P) + v . h + b``, the
judge's own logit as the offset, so the quantised matmul's P is kept exactly instead of
being recomputed from dequantised weights. ``v`` lies in the span of the training states,
so the fit is done in the SVD basis of the training matrix (``grouped_cv.Basis`` without
standardisation: the penalty is on raw ``v``).

Evaluated **leave one source out**: the sources are the eight SummEdits domains, BEGIN and
WiCE. For each source, the readout (its ``C = 1 / lambda`` chosen by an inner
leave-one-source-out over the training sources, on weighted log-loss; ``C = 0`` is
today's P and is on the grid; its threshold chosen on those inner out-of-source scores)
and a threshold on P (chosen on the training sources' P) are fitted on the other sources
and scored on the held-out one. Items weigh so that each training source counts once and,
within it, each label once. Both keep the shipped verifier's detail veto and the
verdicts it decides without a judge call (a copy, text addressed to the judge). The
learning curve refits both on 25% and 50% of each training part (stratified by source
and label, three seeded draws).

Features come from ``hidden.extract`` (the shipped verifier, ``reasons="none"``,
each verdict call's states read in its own forward pass by the graph callback), one
process, one model:

    nice -n 10 python benchmarks/anchored_readout.py extract --work /work/wt/verifier_cache --threads 1
    python benchmarks/anchored_readout.py fit --work /work/wt/verifier_cache

``extract`` first judges the evidence-use pairs (``evidence_use.py``: each pair's context
with its dev items, then the pair's negative with the support removed), sources
interleaved in a seeded order, then the rest of the seeded dev samples (500 SummEdits, 300
BEGIN, 150 WiCE), so any prefix of the run is usable. It resumes where it stopped (every
context's verdicts are appended as they finish). ``evidence_use.py report --entries
WORK/.../{set}.jsonl WORK/.../removed/{set}.jsonl`` reads the same verdicts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from _lib.evidence_pairs import NEGATIVE_SUFFIX, SETS, EvidencePair, dev_pairs
from _lib.grouped_cv import THRESHOLDS, Data, load_hidden, logit, paired_difference, sigmoid

from assay.analysis import balanced_accuracy

Array = npt.NDArray[np.float64]
NAMES = ("l_out-12", "l_out-16", "l_out-20", "l_out-24", "result_norm")
"""States kept per verdict call; the readout reads ``result_norm``, the others are kept for later rounds."""
READ = "result_norm"
CS = (0.0, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0)
"""``1 / lambda`` of the penalty on (w - w0); 0 is today's verifier."""
FRACTIONS = (0.25, 0.5, 1.0)


# ---- extraction ---------------------------------------------------------------------------------


def schedule(
    pairs: Sequence[EvidencePair], samples: dict[str, list[dict[str, Any]]], seed: int
) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(set, "dev" or "removed", rows) in the order to judge them; rows of one entry share their contexts.

    Per set, a queue: first every context that has a pair (the pairs' positives, then
    their negatives), then every dev context with its items not yet queued, each part in
    a seeded order. The queues are merged by taking next from the set that has used the
    fewest characters so far, so any prefix of the run spends about equal time on each
    set, and the evidence-use pairs come before the rest of the dev items. (A context's
    items judged in two entries are two ``verify`` calls; each statement's verdict is its
    own unless the context is longer than the verifier's ``whole_chars``, where a shared
    evidence window is chosen for the statements judged together.)
    """
    from _lib.devsets import contexts_of

    rng = random.Random(seed)
    queues: dict[str, list[tuple[str, str, list[dict[str, Any]]]]] = {}
    for name in SETS:
        by_context: dict[str, list[dict[str, Any]]] = {}
        for row in samples[name]:
            by_context.setdefault("\x00".join(contexts_of(name, row)), []).append(row)
        paired: dict[str, list[EvidencePair]] = {}
        for p in pairs:
            if p.set == name:
                paired.setdefault("\x00".join(p.contexts), []).append(p)
        first = [key for key in by_context if key in paired]
        rest = [key for key in by_context if key not in paired]
        rng.shuffle(first)
        rng.shuffle(rest)
        queue: list[tuple[str, str, list[dict[str, Any]]]] = []
        queued: set[str] = set()
        for key in first:
            ids = {p.id for p in paired[key]}
            queue.append((name, "dev", [r for r in by_context[key] if r["id"] in ids]))
            queue += [(name, "removed", [p.rows()[1]]) for p in paired[key]]
            queued |= ids
        for key in [*first, *rest]:
            left = [r for r in by_context[key] if r["id"] not in queued]
            if left:
                queue.append((name, "dev", left))
        queues[name] = queue
    used = dict.fromkeys(SETS, 0)
    out: list[tuple[str, str, list[dict[str, Any]]]] = []
    while any(queues.values()):
        name = min((n for n in SETS if queues[n]), key=lambda n: (used[n], SETS.index(n)))
        entry = queues[name].pop(0)
        used[name] += sum(len(c) for c in contexts_of(name, entry[2][0])) + 100 * len(entry[2])
        out.append(entry)
    return out


def store_folder(work: Path, judge: Any, seed: int) -> Path:
    from _lib.judging import model_slug

    return work / f"hidden-{model_slug(judge)}-s{seed}"


def threaded_judge(threads: int) -> Any:
    """The capturing judge, ``threads`` threads for every decode.

    ``LocalJudge(n_threads=...)`` sets llama.cpp's threads for single-token decodes only;
    a prompt is read with ``n_threads_batch``, which llama-cpp-python sets to every core
    unless told. Here both are ``threads``, set on the context after loading.
    """
    import llama_cpp
    from _lib.hidden import HiddenStateJudge

    class Judge(HiddenStateJudge):
        def load(self, progress: Any = None) -> Any:
            llama = super().load(progress)
            if llama.n_threads_batch != threads:
                llama_cpp.llama_set_n_threads(llama._ctx.ctx, threads, threads)
                llama.n_threads = llama.n_threads_batch = threads
                llama.context_params.n_threads = llama.context_params.n_threads_batch = threads
            return llama

    return Judge(mode="cb", names=NAMES, n_threads=threads)


async def extract(
    work: Path, threads: int, seed: int, limit_s: float, only: str = "", dev_first: bool = False, contrast: bool = False
) -> None:
    from _lib.contrast_pairs import GENERATOR_VERSION
    from _lib.hidden import extract as extract_rows

    from assay.models._weights import DEFAULT_MODEL_SHA256

    pairs, _, samples = dev_pairs(seed)
    judge = threaded_judge(threads)
    folder = store_folder(work, judge, seed)
    folder.mkdir(parents=True, exist_ok=True)
    about = {
        "names": list(NAMES),
        "feature_version": 1,
        "model_sha256": DEFAULT_MODEL_SHA256,
        "identity": judge.identity,
        "verifier": "StatementVerifier(method='threshold', reasons='none')",
    }
    made = {folder: about, folder / "removed": about}
    if contrast:  # a contrast negative's id is ``item:kind``: the rule that edited it must not change under it
        made[folder / "contrast"] = {**about, "contrast_seed": CONTRAST_SEED, "generator": GENERATOR_VERSION}
    claim_stores(made)
    plan = schedule(pairs, samples, seed)
    if contrast:  # the contrast pairs' negatives of the items judged so far, in a folder of their own
        plan = [(name, "contrast", rows) for name, rows in contrast_rows(folder, samples)]
    if only:  # "set:kind", e.g. summedits:dev: that part of the schedule alone, in its order
        plan = [e for e in plan if f"{e[0]}:{e[1]}" in only.split(",")]
    if dev_first:  # the contexts' other items (both labels) before the pairs' sides
        paired = {p.id for p in pairs}
        plan.sort(key=lambda e: e[1] == "removed" or any(r["id"] in paired for r in e[2]))
    started = time.perf_counter()
    print(f"{len(plan)} contexts to judge ({len(pairs)} pairs); store {folder}", file=sys.stderr, flush=True)
    for k, (name, kind, rows) in enumerate(plan, start=1):
        target = folder if kind == "dev" else folder / kind
        t0 = time.perf_counter()
        await extract_rows(judge, name, rows, target)
        load = os.getloadavg()[0]
        print(
            f"[{k}/{len(plan)}] {name} {kind}: {len(rows)} items in {time.perf_counter() - t0:.1f} s, "
            f"load {load:.1f}, {(time.perf_counter() - started) / 60:.1f} min in",
            file=sys.stderr,
            flush=True,
        )
        if limit_s and time.perf_counter() - started > limit_s:
            print(f"stopped after {limit_s:.0f} s; run again to resume", file=sys.stderr)
            return


def claim_stores(made: dict[Path, dict[str, Any]]) -> None:
    """Each folder's ``about.json`` says what its verdicts were made with; a folder of other features is refused.

    A resumed extraction appends to the store: verdicts of another model, verifier or pair
    generator would be mixed with these under the same ids.
    """
    for where, what in made.items():
        where.mkdir(parents=True, exist_ok=True)
        path = where / "about.json"
        if path.exists() and json.loads(path.read_text()) != what:
            raise SystemExit(f"{path} describes other features: {path.read_text()[:300]} (use another --work)")
        path.write_text(json.dumps(what, indent=1))


CONTRAST_SEED = 64
CONTRAST_KINDS = ("entity", "number", "negation", "changed")
"""The contrast pairs' kinds judged (``verifier_contrast.py``): the claim edits, then a detail changed in the
evidence; "removed" is the evidence-use pairs' own negative, judged already."""
CONTRAST_SETS = ("summedits", "begin")
"""WiCE's contexts cost about three SummEdits items each; its items are few and supported-only in the store."""


def contrast_rows(folder: Path, samples: dict[str, list[dict[str, Any]]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(set, rows) for the contrast pairs' negatives of the supported dev items already judged, one entry a context.

    A negative is its item's row with the pair's claim and, for "changed", its evidence;
    its id is the pair's (``item:kind``). Claim edits share their item's context, so a
    document's are judged together; entries in a seeded order, set by set.
    """
    from _lib.contrast_pairs import item_pairs
    from _lib.grouped_cv import full_groups

    groups = full_groups(samples)
    out: list[tuple[str, list[dict[str, Any]]]] = []
    for name in CONTRAST_SETS:
        path = folder / f"{name}.jsonl"
        judged = {json.loads(line)["id"] for line in path.read_text().splitlines()} if path.exists() else set()
        by_context: dict[str, list[dict[str, Any]]] = {}
        for row in samples[name]:
            if row["id"] not in judged:
                continue
            for pair in item_pairs(name, row, groups[row["id"]], CONTRAST_SEED):
                if pair.kind not in CONTRAST_KINDS:
                    continue
                negative = {**row, "id": pair.id, "claim": pair.claim, "label": pair.label}
                if pair.kind == "changed":
                    negative["context"] = pair.evidence
                by_context.setdefault(negative["context"], []).append(negative)  # a changed one has its own
        entries = list(by_context.values())
        random.Random(f"{CONTRAST_SEED}:{name}").shuffle(entries)
        entries.sort(key=lambda rows: rows[0]["id"].endswith(":changed"))  # the claim edits first
        out += [(name, rows) for rows in entries]
    return out


# ---- the readout ----------------------------------------------------------------------------------


def source_of(name: str, row: dict[str, Any]) -> str:
    """SummEdits' domain, else the set."""
    return f"summedits/{row['domain']}" if name == "summedits" else name


def weights(sources: npt.NDArray[np.str_], y: npt.NDArray[np.int64]) -> Array:
    """Each source counts once and, within it, each label once (mean weight 1)."""
    w = np.zeros(len(y))
    for s in np.unique(sources):
        for c in (0, 1):
            mask = (sources == s) & (y == c)
            if mask.any():
                w[mask] = 1.0 / mask.sum()
    return w * len(y) / w.sum()


@dataclass(frozen=True)
class Readout:
    """``logit(P) + coef . h + intercept``: ``coef`` is ``w - w0`` on the raw state."""

    coef: Array
    intercept: float
    c: float
    threshold: float

    def logits(self, h: np.ndarray, p: Array) -> Array:
        return np.asarray(logit(p) + np.asarray(h, dtype=np.float64) @ self.coef + self.intercept, dtype=np.float64)


def svd_basis(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(a, vt)``: the design ``[1, z]`` in the SVD basis of ``h`` (``|beta| = |v|``) and the map back to ``v``.

    From the eigenvectors of the Gram matrix ``h h^T`` (n x n, n items much fewer than the
    state's 1,536 dimensions): ``u s`` is ``U sqrt(lambda)`` and ``vt`` is ``U^T h / s``.
    A direction with ``s`` under a millionth of the largest is left out (the Gram matrix
    squares the condition number). LAPACK's SVD of the same matrix took 1.2 s on the Zen 1.
    """
    x = np.asarray(h, dtype=np.float64)
    lam, u = np.linalg.eigh(x @ x.T)
    order = np.argsort(lam)[::-1]
    lam, u = lam[order], u[:, order]
    keep = lam > max(lam[0], 0.0) * 1e-12
    s = np.sqrt(lam[keep])
    return np.hstack([np.ones((len(x), 1)), u[:, keep] * s]), (u[:, keep].T @ x) / s[:, None]


def fit_offset(h: np.ndarray, offset: Array, y: Array, w: Array, c: float) -> tuple[Array, float]:
    """(v, b) minimising ``c * sum w_i logloss(offset_i + v . h_i + b) + (|v|^2 + b^2) / 2`` (Newton, SVD basis).

    ``c = 0`` returns zeros: the offset alone.
    """
    if c == 0 or len(y) == 0:
        return np.zeros(h.shape[1]), 0.0
    a, vt = svd_basis(h)
    theta = _newton(a, offset, y, w, c, np.zeros(a.shape[1]))
    return vt.T @ theta[1:], float(theta[0])


def _newton(a: np.ndarray, offset: Array, y: Array, w: Array, c: float, theta: Array) -> Array:
    """The penalised optimum in the basis ``a``, by Newton's method from ``theta`` (the loss is strictly convex)."""
    theta = theta.copy()
    for _ in range(100):
        mu = sigmoid(offset + a @ theta)
        gradient = c * (a.T @ (w * (mu - y))) + theta
        hessian = c * (a.T * (w * mu * (1 - mu))) @ a
        hessian[np.diag_indices_from(hessian)] += 1.0
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return theta


def weighted_ba(sources: npt.NDArray[np.str_], y: npt.NDArray[np.int64], preds: npt.NDArray[np.int64]) -> float:
    """Mean over sources of balanced accuracy (a source with one label counts by that label's rate)."""
    values = []
    for s in np.unique(sources):
        m = sources == s
        values.append(balanced_accuracy(y[m], preds[m]))
    values = [v for v in values if not math.isnan(v)]
    return float(np.mean(values)) if values else math.nan


def decide(scores: Array, threshold: float, vetoed: npt.NDArray[np.bool_], fixed: npt.NDArray[np.int64]) -> Any:
    preds = (np.nan_to_num(scores, nan=0.0) >= threshold).astype(np.int64)
    preds[vetoed] = 0
    preds[fixed >= 0] = fixed[fixed >= 0]
    return preds


def best_threshold(sources: Any, y: Any, scores: Array, vetoed: Any, fixed: Any) -> float:
    """Grid threshold with the highest mean per-source BA (ties: nearest 0.5)."""
    return float(
        max(
            THRESHOLDS,
            key=lambda t: (round(weighted_ba(sources, y, decide(scores, float(t), vetoed, fixed)), 12), -abs(t - 0.5)),
        )
    )


@dataclass
class Items:
    """The judged dev items (and, apart, the pairs' negatives) with what the readout reads."""

    data: Data
    sources: npt.NDArray[np.str_]
    h: np.ndarray  # n x d, the state of the chunk the verdict rests on (zeros where fixed)

    def take(self, mask: npt.NDArray[np.bool_]) -> Items:
        return Items(self.data.take(mask), self.sources[mask], self.h[mask])


def items_from(folder: Path, rows: dict[str, list[dict[str, Any]]]) -> Items:
    data = load_hidden(folder, [s for s in SETS if (folder / f"{s}.jsonl").exists()], rows)
    by_id = {r["id"]: (name, r) for name, rs in rows.items() for r in rs}
    sources = np.array([source_of(*by_id[i]) for i in data.ids])
    assert data.hidden is not None
    h = np.asarray(data.hidden[:, data.layers.index(READ)], dtype=np.float64)
    return Items(data, sources, h)


PAIRS = "pairs"
"""The weighting source of the pairs' negatives added to training: together they count as one source's label."""


def stacked(*parts: Items) -> Items:
    """The items of ``parts``, one after another."""
    data = Data(
        np.concatenate([q.data.sets for q in parts]),
        [i for q in parts for i in q.data.ids],
        np.concatenate([q.data.y for q in parts]),
        [g for q in parts for g in q.data.groups],
        np.concatenate([q.data.p for q in parts]),
        np.concatenate([q.data.vetoed for q in parts]),
        np.concatenate([q.data.fixed for q in parts]),
    )
    return Items(data, np.concatenate([q.sources for q in parts]), np.vstack([q.h for q in parts]))


def _joined(human: Items, extra: Items | None) -> tuple[Items, npt.NDArray[np.str_]]:
    """``human`` and ``extra`` as one training set, and the sources the weights count (``extra`` is one)."""
    if extra is None or not len(extra.sources):
        return human, human.sources
    return stacked(human, extra), np.concatenate([human.sources, np.full(len(extra.sources), PAIRS)])


def _fit_on(human: Items, extra: Items | None, cs: Sequence[float]) -> list[tuple[Array, float]]:
    """``fit_offset``'s (v, b) for each of ``cs`` on ``human`` plus ``extra``: one basis for all, warm-started.

    Each C starts from the optimum of the one below: a few Newton steps, not a hundred.
    """
    train, weighting = _joined(human, extra)
    y = train.data.y.astype(np.float64)
    fits: dict[float, tuple[Array, float]] = {c: (np.zeros(train.h.shape[1]), 0.0) for c in cs if c == 0 or not len(y)}
    if len(fits) < len(set(cs)):
        w, offset = weights(weighting, train.data.y), logit(train.data.p)
        a, vt = svd_basis(train.h)
        theta = np.zeros(a.shape[1])
        for c in sorted(set(cs) - set(fits)):
            theta = _newton(a, offset, y, w, c, theta)
            fits[c] = (vt.T @ theta[1:], float(theta[0]))
    return [fits[c] for c in cs]


def fit_readout(train: Items, seed: int, extra: Items | None = None) -> Readout:
    """C by inner leave-one-source-out on weighted log-loss; threshold on those inner out-of-source scores.

    ``extra``: the pairs' negatives (judged, label 0, ``sources`` the source of the dev item
    each was made from), added to every fit whose held-out source they do not come from,
    and never scored: C and the threshold are chosen on the human-labelled items alone.
    """
    d = train.data
    judged = d.fixed < 0
    part = train.take(judged)
    if extra is not None:
        extra = extra.take((extra.data.fixed < 0) & (extra.data.y == 0))
    y = part.data.y.astype(np.float64)
    w = weights(part.sources, part.data.y)
    offset = logit(part.data.p)
    oof = {c: np.zeros(len(y)) for c in CS}
    for s in np.unique(part.sources):
        te = part.sources == s
        inner_extra = None if extra is None else extra.take(extra.sources != s)
        for c, (v, b) in zip(CS, _fit_on(part.take(~te), inner_extra, CS), strict=True):
            oof[c][te] = offset[te] + part.h[te] @ v + b

    def loss(z: Array) -> float:
        q = np.clip(sigmoid(z), 1e-9, 1 - 1e-9)
        return float(-np.sum(w * (y * np.log(q) + (1 - y) * np.log(1 - q))) / np.sum(w))

    c = min(CS, key=lambda cc: (round(loss(oof[cc]), 12), cc))
    scores = np.full(len(d.y), np.nan)
    scores[judged] = sigmoid(oof[c])
    threshold = best_threshold(train.sources, d.y, scores, d.vetoed, d.fixed)
    ((v, b),) = _fit_on(part, extra, [c])
    return Readout(v, b, c, threshold)


def readout_preds(model: Readout, test: Items) -> npt.NDArray[np.int64]:
    d = test.data
    scores = sigmoid(model.logits(test.h, np.nan_to_num(d.p, nan=0.5)))
    scores[d.fixed >= 0] = np.nan
    return decide(scores, model.threshold, d.vetoed, d.fixed)  # type: ignore[no-any-return]


def threshold_preds(train: Items, test: Items) -> tuple[float, npt.NDArray[np.int64]]:
    t = best_threshold(train.sources, train.data.y, train.data.p, train.data.vetoed, train.data.fixed)
    return t, decide(test.data.p, t, test.data.vetoed, test.data.fixed)


def subsample(items: Items, fraction: float, seed: int) -> Items:
    """``fraction`` of each (source, label) cell, seeded."""
    if fraction >= 1.0:
        return items
    rng = np.random.default_rng(seed)
    keep = np.zeros(len(items.sources), dtype=bool)
    for s in np.unique(items.sources):
        for c in (0, 1):
            idx = np.flatnonzero((items.sources == s) & (items.data.y == c))
            if len(idx):
                keep[rng.choice(idx, size=max(1, round(fraction * len(idx))), replace=False)] = True
    return items.take(keep)


def held_out_pairs(negatives: Items | None, test: Items) -> Items | None:
    """The pairs' negatives a fold may train on: none made from an item of a held-out source.

    The sources (SummEdits' domains, BEGIN, WiCE) share no document, so no negative made
    from a held-out document is trained on.
    """
    if negatives is None:
        return None
    return negatives.take(~np.isin(negatives.sources, np.unique(test.sources)))


def leave_one_source_out(items: Items, fraction: float, seed: int, negatives: Items | None = None) -> dict[str, Any]:
    """Out-of-source verdicts of the readout, the threshold and the shipped rule, with what each fold chose.

    With ``negatives`` (the pairs' edited sides: evidence-use and contrast), the readout also
    trains on those not made from the held-out source (:func:`held_out_pairs`); the
    threshold does not.
    """
    n = len(items.sources)
    out = {k: np.zeros(n, dtype=np.int64) for k in ("readout", "threshold", "shipped")}
    chosen: list[str] = []
    models: dict[str, Readout] = {}
    thresholds: dict[str, float] = {}
    d = items.data
    out["shipped"] = decide(d.p, 0.5, d.vetoed, d.fixed)
    for s in np.unique(items.sources):
        te = items.sources == s
        train = subsample(items.take(~te), fraction, seed)
        test = items.take(te)
        extra = held_out_pairs(negatives, test)
        model = fit_readout(train, seed, extra)
        models[s] = model
        out["readout"][te] = readout_preds(model, test)
        t, preds = threshold_preds(train, test)
        out["threshold"][te] = preds
        thresholds[s] = t
        added = "" if extra is None else f" (+{len(extra.sources)} pair negatives)"
        chosen.append(f"{s}: readout C {model.c:g} t {model.threshold:.2f}{added}; threshold t {t:.2f}")
    return {"preds": out, "chosen": chosen, "models": models, "thresholds": thresholds}


def report(items: Items, result: dict[str, Any], seed: int, out: Any = print) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    d = items.data
    for name in (*SETS, "all"):
        mask = np.ones(len(d.y), dtype=bool) if name == "all" else d.sets == name
        if not mask.any():
            continue
        y = d.y[mask]
        preds = {k: v[mask] for k, v in result["preds"].items()}
        line: dict[str, Any] = {"set": name, "n": int(mask.sum()), "supported": int(y.sum())}
        for k, p in preds.items():
            line[k] = balanced_accuracy(y, p)
        line["readout_vs_threshold"] = paired_difference(y, preds["readout"], preds["threshold"], seed)
        line["readout_vs_shipped"] = paired_difference(y, preds["readout"], preds["shipped"], seed)
        line["threshold_vs_shipped"] = paired_difference(y, preds["threshold"], preds["shipped"], seed)
        rows.append(line)
        r, lo, hi = line["readout_vs_threshold"]
        r2, lo2, hi2 = line["readout_vs_shipped"]
        out(
            f"  {name:10s} n={line['n']:4d} ({line['supported']} supported)  shipped {line['shipped']:.3f}  "
            f"threshold {line['threshold']:.3f}  readout {line['readout']:.3f}  "
            f"readout-threshold {r:+.3f} [{lo:+.3f}, {hi:+.3f}]  readout-shipped {r2:+.3f} [{lo2:+.3f}, {hi2:+.3f}]"
        )
    return rows


def negatives_from(folder: Path, pairs: Sequence[EvidencePair], samples: dict[str, list[dict[str, Any]]]) -> Items:
    """The pairs' negatives as items (sources of their dev item), for the readout's evidence-use figure."""
    rows = {name: [p.rows()[1] | {"domain": _domain(samples, p)} for p in pairs if p.set == name] for name in SETS}
    return items_from(folder / "removed", rows)


def contrast_from(folder: Path, samples: dict[str, list[dict[str, Any]]]) -> Items | None:
    """The contrast pairs' negatives judged so far (``extract --contrast``), source and group of their dev item.

    Read from the store's ids (``item:kind``) and the original item's row: the pairs are not
    made again (the about.json that ``extract`` checks names the generator that made them).
    """
    store = folder / "contrast"
    if not store.exists():
        return None
    originals = {r["id"]: r for name in SETS for r in samples[name]}
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in SETS}
    for name in SETS:
        path = store / f"{name}.jsonl"
        for line in path.read_text().splitlines() if path.exists() else ():
            negative = json.loads(line)["id"]
            rows[name].append({**originals[negative.rsplit(":", 1)[0]], "id": negative, "label": 0})
    return items_from(store, rows)


def contrast_use(items: Items, contrast: Items, result: dict[str, Any], out: Any = print) -> None:
    """Per kind, the share of contrast negatives still called supported: as shipped and held out.

    Only negatives whose original is among ``items`` (judged by the model, not fixed) count:
    "flipped" is of those whose original was called supported.
    """
    index = {i: k for k, i in enumerate(items.data.ids)}
    contrast = contrast.take(np.array([i.rsplit(":", 1)[0] in index for i in contrast.data.ids], dtype=bool))
    kinds = np.array([i.rsplit(":", 1)[-1] for i in contrast.data.ids])
    positives = np.array([index[i.rsplit(":", 1)[0]] for i in contrast.data.ids], dtype=np.int64)
    d = contrast.data
    verdicts = {"shipped": decide(d.p, 0.5, d.vetoed, d.fixed), "readout": np.zeros(len(d.y), dtype=np.int64)}
    for s in np.unique(contrast.sources):
        m = contrast.sources == s
        verdicts["readout"][m] = readout_preds(result["models"][s], contrast.take(m))
    for kind in (*CONTRAST_KINDS, "all"):
        for name in (*CONTRAST_SETS, "all"):
            m = np.ones(len(d.y), dtype=bool) if kind == "all" else kinds == kind
            if name != "all":
                m &= d.sets == name
            if not m.any():
                continue
            parts = []
            for way, v in verdicts.items():
                passed = result["preds"][way][positives[m]] == 1
                flipped = float(np.mean(v[m][passed] == 0)) if passed.any() else math.nan
                parts.append(f"{way} still supported {np.mean(v[m] == 1):.3f} (flipped {flipped:.3f})")
            out(f"  contrast {kind:8s} {name:9s} n={int(m.sum()):3d}: " + "; ".join(parts))


def _domain(samples: dict[str, list[dict[str, Any]]], p: EvidencePair) -> str:
    row = next(r for r in samples[p.set] if r["id"] == p.id)
    return str(row.get("domain", ""))


def evidence_use_of(items: Items, negatives: Items, result: dict[str, Any], seed: int, out: Any = print) -> None:
    """Evidence use of the held-out readout and threshold, on the pairs whose two sides were both judged.

    A pair's negative is decided by the model fitted without its source, as its positive was.
    """
    from _lib.evidence_pairs import pair_figures

    index = {i: k for k, i in enumerate(items.data.ids)}
    keep = np.array([i.removesuffix(NEGATIVE_SUFFIX) in index for i in negatives.data.ids], dtype=bool)
    neg = negatives.take(keep)
    if not len(neg.sources):
        return
    positives = np.array([index[i.removesuffix(NEGATIVE_SUFFIX)] for i in neg.data.ids])
    d = neg.data
    verdicts = {"shipped": decide(d.p, 0.5, d.vetoed, d.fixed)}
    verdicts["threshold"] = np.zeros(len(d.y), dtype=np.int64)
    verdicts["readout"] = np.zeros(len(d.y), dtype=np.int64)
    for s in np.unique(neg.sources):
        m = neg.sources == s
        one = neg.take(m)
        verdicts["threshold"][m] = decide(one.data.p, result["thresholds"][s], one.data.vetoed, one.data.fixed)
        verdicts["readout"][m] = readout_preds(result["models"][s], one)
    for way in ("shipped", "threshold", "readout"):
        pos = result["preds"][way][positives]
        for name in (*SETS, "all"):
            m = np.ones(len(d.y), dtype=bool) if name == "all" else d.sets == name
            if not m.any():
                continue
            ba, ci, tpr, still, _ = pair_figures(pos[m], verdicts[way][m], seed)
            out(
                f"  evidence use, {way:9s} {name:10s}: {int(m.sum())} pairs, BA {ba:.3f} [{ci[0]:.3f}-{ci[1]:.3f}], "
                f"TPR {tpr:.3f}, negatives still supported {still:.3f}"
            )


def anchor_direction(tokens: tuple[str, str] = ("1", "0")) -> Array:
    """``w0 = e("1") - e("0")``: the two unembedding rows of the shipped GGUF, dequantised (``gguf``)."""
    import gguf

    from assay.models._weights import default_model_path

    reader = gguf.GGUFReader(str(default_model_path()))
    tensors = {t.name: t for t in reader.tensors}
    out = tensors.get("output.weight") or tensors["token_embd.weight"]
    field = reader.fields["tokenizer.ggml.tokens"]
    vocab = [bytes(field.parts[i]).decode("utf-8", "replace") for i in field.data]
    ids = [vocab.index(t) for t in tokens]
    rows = gguf.quants.dequantize(np.asarray(out.data[ids]), out.tensor_type)
    return np.asarray(rows[0] - rows[1], dtype=np.float64)


def check_anchor(items: Items, out: Any = print) -> None:
    """How exactly ``w0 . h`` gives the judge's own logit(P) on the judged items (the offset form's premise)."""
    judged = items.data.fixed < 0
    target = logit(items.data.p[judged])
    for tokens in (("1", "0"), ("\u01201", "\u01200")):
        try:
            w0 = anchor_direction(tokens)
        except ValueError:
            continue
        z = items.h[judged] @ w0
        r = float(np.corrcoef(z, target)[0, 1])
        gap = np.abs(z - target)
        out(
            f"  w0 = e({tokens[0]!r}) - e({tokens[1]!r}): |w0 . h - logit P| median {np.median(gap):.3f}, "
            f"max {np.max(gap):.3f}, correlation {r:.4f} on {int(judged.sum())} items"
        )


def fit(
    work: Path, seed: int, json_out: Path | None, with_pairs: bool = False, fractions: Sequence[float] = FRACTIONS
) -> None:
    """The learning curve out of source; ``with_pairs``: the readout also trains on the pairs' negatives."""
    from _lib.hidden import HiddenStateJudge

    pairs, _, samples = dev_pairs(seed)
    folder = store_folder(work, HiddenStateJudge(mode="cb", names=NAMES), seed)
    items = items_from(folder, samples)
    d = items.data
    print(
        f"{len(d.y)} judged dev items from {folder}: "
        + ", ".join(f"{s} {int((d.sets == s).sum())}" for s in SETS)
        + f"; {len(np.unique(items.sources))} sources; unscored {d.unscored or 0}"
    )
    negatives = negatives_from(folder, pairs, samples) if (folder / "removed").exists() else None
    contrast = contrast_from(folder, samples)
    training = None
    if with_pairs:
        parts = [q for q in (negatives, contrast) if q is not None and len(q.sources)]
        if not parts:
            raise SystemExit(f"--pairs: no judged pair negatives in {folder / 'removed'} or {folder / 'contrast'}")
        training = stacked(*parts)
        kinds = ["removed" if i.endswith(NEGATIVE_SUFFIX) else i.rsplit(":", 1)[-1] for i in training.data.ids]
        print(
            f"the readout also trains on {len(training.sources)} pair negatives, never on those made from the "
            "held-out source: "
            + ", ".join(f"{k} {kinds.count(k)}" for k in ("removed", *CONTRAST_KINDS) if k in kinds)
            + "; "
            + ", ".join(f"{s} {int((training.data.sets == s).sum())}" for s in SETS)
        )
    check_anchor(items)
    figures: dict[str, Any] = {"n": len(d.y), "pairs": with_pairs, "curve": []}
    for fraction in fractions:
        repeats = (seed,) if fraction >= 1.0 else (seed, seed + 1, seed + 2)
        for r in repeats:
            started = time.perf_counter()
            result = leave_one_source_out(items, fraction, r, training)
            print(f"\n== {fraction:.0%} of each training part (draw {r}, {time.perf_counter() - started:.0f} s) ==")
            for line in result["chosen"]:
                print(f"  {line}")
            rows = report(items, result, seed)
            figures["curve"].append({"fraction": fraction, "draw": r, "rows": rows})
            if fraction >= 1.0 and negatives is not None:
                evidence_use_of(items, negatives, result, seed)
            if fraction >= 1.0 and contrast is not None and len(contrast.sources):
                contrast_use(items, contrast, result)
    if json_out:
        json_out.write_text(json.dumps(figures, indent=1, default=str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("extract", "fit"))
    parser.add_argument("--work", type=Path, default=Path("/work/wt/verifier_cache"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--limit-s", type=float, default=0.0, help="extract: stop after this many seconds")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--pairs", action="store_true", help="fit: the readout also trains on the pairs' negatives")
    parser.add_argument("--fractions", default="0.25,0.5,1", help="fit: the learning curve's fractions")
    parser.add_argument("--only", default="", help="extract: only these parts of the schedule (e.g. summedits:dev)")
    parser.add_argument("--dev-first", action="store_true", help="extract: dev items not in a pair first")
    parser.add_argument(
        "--contrast", action="store_true", help="extract: the contrast pairs' negatives of judged items"
    )
    args = parser.parse_args()
    if args.command == "extract":
        asyncio.run(extract(args.work, args.threads, args.seed, args.limit_s, args.only, args.dev_first, args.contrast))
    else:
        fit(args.work, args.seed, args.json, args.pairs, [float(f) for f in args.fractions.split(",")])


if __name__ == "__main__":
    main()
