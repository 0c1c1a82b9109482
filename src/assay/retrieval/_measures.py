"""Information-retrieval measures as pure, vectorised functions over numpy arrays.

Nothing here knows about judges, LLMs or files. The input is a :class:`Ranking`: one row
per query, the relevance code of the document at each rank (ranks start at 1), plus how
many judged documents each query has at each relevance level. Every measure returns one
value per query (a ``(n_queries,)`` float array); aggregation (:func:`mean`,
:func:`geometric_mean`) is a separate, second step.

Semantics follow trec_eval 9.x (``usnistgov/trec_eval``):

- **Ranking and ties.** A query's documents are sorted by score descending, then by
  document id descending, comparing ids as byte strings the way ``strcmp`` does
  (:func:`rank_flat`, :func:`rank_matrix`). Input order never matters.
- **Relevance codes.** ``level >= 0`` is a judged document at that relevance level;
  :data:`NONPOOL` (-1) a retrieved document absent from the qrels; :data:`UNJUDGED` (-2) a
  document in the qrels with a negative level (in the pool but not judged); :data:`PAD`
  (-3) fills rows of queries with fewer retrieved documents.
- **Relevance threshold.** Binary measures take ``level`` (trec_eval ``-l``, default 1):
  a document is relevant when its level is ``>= level``. ``num_rel`` counts the judged
  documents at or above ``level``, retrieved or not.
- **Cut-offs divide by k.** ``P@k`` is (relevant in the top k) / k even when fewer than k
  documents were retrieved.
- **nDCG uses graded gains, not the threshold.** The ideal ranking is built from every
  judged document with a positive gain, retrieved or not.
- A query with no relevant documents scores 0 on recall-like measures (never NaN), as in
  trec_eval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "NONPOOL",
    "PAD",
    "UNJUDGED",
    "Gain",
    "Ranking",
    "average_precision",
    "binary_g",
    "bpref",
    "eleven_point_average",
    "g_measure",
    "geometric_mean",
    "hit_rate",
    "inferred_average_precision",
    "interpolated_precision",
    "mean",
    "ndcg",
    "ndcg_at_r_levels",
    "ndcg_rel",
    "num_nonrel_judged_retrieved",
    "num_relevant",
    "num_relevant_retrieved",
    "num_retrieved",
    "precision",
    "r_precision",
    "r_precision_mult",
    "rank_biased_precision",
    "rank_biased_precision_residual",
    "rank_flat",
    "rank_matrix",
    "recall",
    "reciprocal_rank",
    "relative_precision",
    "set_f",
    "set_precision",
    "set_recall",
    "set_relative_precision",
    "unjudged_fraction",
    "utility",
]

NONPOOL = -1
"""Relevance code of a retrieved document that is not in the qrels."""
UNJUDGED = -2
"""Relevance code of a document in the qrels with a negative level (pooled, not judged)."""
PAD = -3
"""Relevance code filling rank positions past a query's last retrieved document."""

Gain = Literal["linear", "exponential"]
"""nDCG gain: ``linear`` is trec_eval's (gain = level); ``exponential`` is 2**level - 1."""

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

_INFAP_EPSILON = 0.00001
_MIN_GEO_MEAN = 0.00001


@dataclass(frozen=True, eq=False)
class Ranking:
    """Relevance of each query's documents in rank order.

    Attributes:
        levels: ``(n_queries, depth)`` int array; row ``q`` column ``i`` is the relevance
            code of the document at rank ``i + 1`` (see the module docstring for codes).
        num_ret: ``(n_queries,)`` number of documents retrieved per query.
        level_counts: ``(n_queries, n_levels)`` number of judged documents (retrieved or
            not) at each relevance level ``0 .. n_levels - 1``.
    """

    levels: IntArray
    num_ret: IntArray
    level_counts: IntArray

    def __post_init__(self) -> None:
        if self.levels.ndim != 2:
            raise ValueError(f"levels must be 2-D (queries x ranks), got shape {self.levels.shape}")
        n = self.levels.shape[0]
        if self.num_ret.shape != (n,):
            raise ValueError(f"num_ret must have shape ({n},), got {self.num_ret.shape}")
        if self.level_counts.ndim != 2 or self.level_counts.shape[0] != n:
            raise ValueError(f"level_counts must have shape ({n}, n_levels), got {self.level_counts.shape}")

    @property
    def n_queries(self) -> int:
        """Number of queries (rows)."""
        return int(self.levels.shape[0])

    @property
    def depth(self) -> int:
        """Number of rank columns (the longest ranking)."""
        return int(self.levels.shape[1])

    @classmethod
    def from_lists(cls, rankings: list[list[int]], judged: list[dict[int, int]] | list[list[int]]) -> Ranking:
        """Build from small Python lists (handy in tests and examples).

        Args:
            rankings: Per query, the relevance code of each retrieved document in rank order.
            judged: Per query, either ``{level: count}`` of judged documents or the list of
                the levels of all judged documents.
        """
        n = len(rankings)
        depth = max((len(r) for r in rankings), default=0)
        levels = np.full((n, max(depth, 1)), PAD, dtype=np.int64)
        for q, row in enumerate(rankings):
            levels[q, : len(row)] = row
        counts_list: list[dict[int, int]] = []
        for item in judged:
            if isinstance(item, dict):
                counts_list.append(dict(item))
            else:
                c: dict[int, int] = {}
                for lv in item:
                    if lv >= 0:
                        c[lv] = c.get(lv, 0) + 1
                counts_list.append(c)
        n_levels = max((max(c, default=0) for c in counts_list), default=0) + 1
        counts = np.zeros((n, n_levels), dtype=np.int64)
        for q, c in enumerate(counts_list):
            for lv, k in c.items():
                counts[q, lv] = k
        num_ret = np.array([len(r) for r in rankings], dtype=np.int64)
        return cls(levels=levels, num_ret=num_ret, level_counts=counts)


# --------------------------------------------------------------------------- ranking


def rank_flat(
    query_index: IntArray,
    scores: FloatArray,
    doc_order: IntArray,
    levels: IntArray,
    level_counts: IntArray,
) -> Ranking:
    """Sort flat (query, document) rows into a :class:`Ranking`, trec_eval's way.

    Within a query, rows are ordered by ``scores`` descending, then ``doc_order``
    descending. ``doc_order`` must rank document ids as ``strcmp`` does (e.g. the inverse
    indices of ``np.unique`` over the ids: numpy compares strings by code point, which is
    the UTF-8 byte order).

    Args:
        query_index: ``(n_rows,)`` query row of each document, in ``0 .. n_queries - 1``.
        scores: ``(n_rows,)`` retrieval scores.
        doc_order: ``(n_rows,)`` integer rank of each document id in string order.
        levels: ``(n_rows,)`` relevance code of each document.
        level_counts: ``(n_queries, n_levels)`` judged documents per level.
    """
    n_queries = level_counts.shape[0]
    order = np.lexsort((-doc_order, -scores, query_index))
    q_sorted = query_index[order]
    num_ret = np.bincount(query_index, minlength=n_queries).astype(np.int64)
    starts = np.zeros(n_queries, dtype=np.int64)
    np.cumsum(num_ret[:-1], out=starts[1:])
    pos = np.arange(order.size, dtype=np.int64) - starts[q_sorted]
    depth = max(int(num_ret.max(initial=0)), 1)
    mat = np.full((n_queries, depth), PAD, dtype=np.int64)
    mat[q_sorted, pos] = levels[order]
    return Ranking(levels=mat, num_ret=num_ret, level_counts=level_counts)


def rank_matrix(
    scores: FloatArray,
    levels: IntArray,
    level_counts: IntArray,
    doc_order: IntArray | None = None,
    num_ret: IntArray | None = None,
) -> Ranking:
    """Sort a dense ``(n_queries, n_docs)`` score matrix into a :class:`Ranking`.

    Column ``j`` of row ``q`` is one retrieved document: its score, its relevance code and
    (optionally) its position in document-id string order. Without ``doc_order``, columns
    are taken to be in ascending id order already, so ties go to the higher column. With
    ``num_ret``, only the first ``num_ret[q]`` columns of row ``q`` are retrieved.
    """
    n_q, n_d = scores.shape
    if num_ret is not None:
        valid = np.arange(n_d)[None, :] < num_ret[:, None]
        scores = np.where(valid, scores, -np.inf)
        tie = np.where(valid, doc_order if doc_order is not None else np.arange(n_d)[None, :], -1)
        order = np.lexsort((-tie, -scores), axis=-1)
    elif doc_order is None:
        # Reverse the columns so a stable sort on -score puts the higher id first on ties.
        rev = np.argsort(-scores[:, ::-1], axis=1, kind="stable")
        order = (n_d - 1) - rev
    else:
        order = np.lexsort((-doc_order, -scores), axis=-1)
    ranked = np.take_along_axis(levels, order, axis=1).astype(np.int64, copy=False)
    if num_ret is None:
        num_ret = np.full(n_q, n_d, dtype=np.int64)
    else:
        ranked = np.where(np.arange(n_d)[None, :] < num_ret[:, None], ranked, PAD)
    return Ranking(levels=ranked, num_ret=num_ret.astype(np.int64), level_counts=level_counts)


# --------------------------------------------------------------------------- helpers


def _check_k(k: int) -> None:
    if not isinstance(k, int | np.integer) or isinstance(k, bool) or k < 1:
        raise ValueError(f"cut-off k must be a positive integer, got {k!r}")


def _check_level(level: int) -> None:
    if level < 1:
        raise ValueError(f"relevance level must be >= 1 (trec_eval -l), got {level!r}")


def _relevant(r: Ranking, level: int, depth: int | None = None) -> NDArray[np.bool_]:
    _check_level(level)
    lv = r.levels if depth is None else r.levels[:, :depth]
    return lv >= level


def _f(a: object) -> FloatArray:
    return np.asarray(a, dtype=np.float64)


def _rel_at(r: Ranking, k: int, level: int) -> FloatArray:
    """Number of relevant documents in the top ``k`` per query."""
    return _f(_relevant(r, level, k).sum(axis=1))


def _safe_div(num: FloatArray, den: FloatArray) -> FloatArray:
    out = np.zeros(np.broadcast(num, den).shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def num_relevant(r: Ranking, level: int = 1) -> FloatArray:
    """``num_rel``: judged documents with level >= ``level``, retrieved or not."""
    _check_level(level)
    return _f(r.level_counts[:, level:].sum(axis=1))


def _num_nonrel_judged(r: Ranking, level: int) -> FloatArray:
    return _f(r.level_counts[:, : min(level, r.level_counts.shape[1])].sum(axis=1))


def num_retrieved(r: Ranking) -> FloatArray:
    """``num_ret``: documents retrieved per query."""
    return _f(r.num_ret)


def num_relevant_retrieved(r: Ranking, level: int = 1) -> FloatArray:
    """``num_rel_ret``: retrieved documents with level >= ``level``."""
    return _f(_relevant(r, level).sum(axis=1))


def num_nonrel_judged_retrieved(r: Ranking, level: int = 1) -> FloatArray:
    """``num_nonrel_judged_ret``: retrieved documents judged with 0 <= level < ``level``."""
    _check_level(level)
    return _f(((r.levels >= 0) & (r.levels < level)).sum(axis=1))


# --------------------------------------------------------------------------- cut-off measures


def precision(r: Ranking, k: int, level: int = 1) -> FloatArray:
    """Precision at k (trec_eval ``P_k``).

    ``P@k = |relevant in top k| / k``. The denominator is ``k`` even when fewer than ``k``
    documents were retrieved (trec_eval's convention; missing ranks count as non-relevant).
    """
    _check_k(k)
    return _rel_at(r, k, level) / float(k)


def recall(r: Ranking, k: int, level: int = 1) -> FloatArray:
    """Recall at k (trec_eval ``recall_k``).

    ``R@k = |relevant in top k| / num_rel``; 0 when the query has no relevant documents.
    """
    _check_k(k)
    return _safe_div(_rel_at(r, k, level), num_relevant(r, level))


def hit_rate(r: Ranking, k: int, level: int = 1) -> FloatArray:
    """Hit rate at k (trec_eval ``success_k``): 1 if any relevant document is in the top k."""
    _check_k(k)
    return (_rel_at(r, k, level) > 0).astype(np.float64)


def relative_precision(r: Ranking, k: int, level: int = 1) -> FloatArray:
    """Relative precision at k (trec_eval ``relative_P_k``).

    ``|relevant in top k| / min(k, num_rel)``: precision relative to the best possible at k;
    0 when the query has no relevant documents.
    """
    _check_k(k)
    den = np.minimum(float(k), num_relevant(r, level))
    return _safe_div(_rel_at(r, k, level), den)


def reciprocal_rank(r: Ranking, k: int | None = None, level: int = 1) -> FloatArray:
    """Reciprocal rank (trec_eval ``recip_rank``); MRR@k when ``k`` is given.

    ``RR = 1 / rank of the first relevant document`` (within the top k), else 0. The mean
    over queries is MRR.
    """
    if k is not None:
        _check_k(k)
    rel = _relevant(r, level, k)
    if rel.shape[1] == 0:
        return np.zeros(r.n_queries)
    first = rel.argmax(axis=1)
    found = rel[np.arange(r.n_queries), first]
    return np.where(found, 1.0 / (first + 1.0), 0.0)


def average_precision(r: Ranking, k: int | None = None, level: int = 1) -> FloatArray:
    """Average precision (trec_eval ``map``); AP@k (trec_eval ``map_cut_k``) with ``k``.

    ``AP@k = (1 / num_rel) * sum_{i <= k, doc i relevant} P@i``. The denominator is the
    number of relevant documents overall (not those in the top k); 0 if there are none.
    The mean over queries is MAP.
    """
    if k is not None:
        _check_k(k)
    rel = _relevant(r, level, k)
    cum = np.cumsum(rel, axis=1, dtype=np.float64)
    ranks = np.arange(1, rel.shape[1] + 1, dtype=np.float64)
    summed = np.where(rel, cum / ranks, 0.0).sum(axis=1)
    return _safe_div(summed, num_relevant(r, level))


def r_precision(r: Ranking, level: int = 1) -> FloatArray:
    """R-precision (trec_eval ``Rprec``): precision at rank R, where R = num_rel.

    ``|relevant in top R| / R``; 0 when R = 0. If fewer than R documents were retrieved, the
    denominator is still R.
    """
    return r_precision_mult(r, 1.0, level)


def r_precision_mult(r: Ranking, mult: float, level: int = 1) -> FloatArray:
    """Precision at a multiple of R (trec_eval ``Rprec_mult_x``).

    The cut-off is ``c = floor(mult * R + 0.9)`` documents (trec_eval's rounding), and the
    value is ``|relevant in top c| / c``; 0 when R = 0.
    """
    num_rel = num_relevant(r, level)
    cut = np.floor(mult * num_rel + 0.9).astype(np.int64)
    rel = _relevant(r, level)
    cum = np.concatenate([np.zeros((r.n_queries, 1)), np.cumsum(rel, axis=1, dtype=np.float64)], axis=1)
    idx = np.minimum(cut, rel.shape[1])
    hits = cum[np.arange(r.n_queries), idx]
    return np.where(num_rel > 0, _safe_div(hits, cut.astype(np.float64)), 0.0)


# --------------------------------------------------------------------------- nDCG


def _gain_of(levels: IntArray, gain: Gain) -> FloatArray:
    pos = np.maximum(levels, 0).astype(np.float64)
    if gain == "linear":
        return pos
    if gain == "exponential":
        return np.exp2(pos) - 1.0
    raise ValueError(f"gain must be 'linear' or 'exponential', got {gain!r}")


def _ideal_levels(level_counts: IntArray, depth: int) -> IntArray:
    """``(n_queries, depth)``: levels of the ideal ranking (judged docs, best first)."""
    n_q, n_levels = level_counts.shape
    out = np.zeros((n_q, depth), dtype=np.int64)
    if depth == 0:
        return out
    pos = np.arange(depth)[None, :]
    start = np.zeros((n_q, 1), dtype=np.int64)
    for lv in range(n_levels - 1, 0, -1):
        end = start + level_counts[:, lv : lv + 1]
        out[(pos >= start) & (pos < end)] = lv
        start = end
    return out


def ndcg(r: Ranking, k: int | None = None, gain: Gain = "linear") -> FloatArray:
    """Normalised discounted cumulative gain (trec_eval ``ndcg``, ``ndcg_cut_k``).

    ``DCG@k = sum_{i=1..k} g(rel_i) / log2(i + 1)`` and ``nDCG@k = DCG@k / IDCG@k``, where
    IDCG@k is the DCG of the ideal ranking of *all judged* documents (retrieved or not),
    best first. Gain variant: ``linear`` (default, trec_eval's) ``g(l) = l``;
    ``exponential`` ``g(l) = 2**l - 1`` (Burges et al.). Unjudged, non-pool and level-0
    documents gain 0. Without ``k``, DCG runs over every retrieved document and IDCG over
    every judged document with a positive gain. 0 when IDCG = 0. The relevance threshold
    does not apply: graded levels are used as they are.
    """
    if k is not None:
        _check_k(k)
    levels = r.levels if k is None else r.levels[:, :k]
    n_pos = r.level_counts[:, 1:].sum(axis=1)
    ideal_depth = int(n_pos.max(initial=0)) if k is None else min(k, int(n_pos.max(initial=0)))
    depth = max(levels.shape[1], ideal_depth)
    disc = 1.0 / np.log2(np.arange(2, depth + 2, dtype=np.float64))
    dcg = _gain_of(levels, gain) @ disc[: levels.shape[1]]
    ideal = _gain_of(_ideal_levels(r.level_counts, ideal_depth), gain) @ disc[:ideal_depth]
    return _safe_div(np.asarray(dcg, dtype=np.float64), np.asarray(ideal, dtype=np.float64))


# ----------------------------------------------------------------- other trec_eval measures


def interpolated_precision(r: Ranking, recall_level: float, level: int = 1) -> FloatArray:
    """Interpolated precision at a recall level (trec_eval ``iprec_at_recall_x``).

    ``iP(x) = max_{i >= i_c} P@i`` where ``i_c`` is the rank of the ``c``-th relevant
    document and ``c = round(x * num_rel)`` (half away from zero). Ranks run to the last
    retrieved document. ``c = 0`` gives the maximum precision at any rank; 0 if fewer than
    ``c`` relevant documents were retrieved.
    """
    rel = _relevant(r, level)
    cum = np.cumsum(rel, axis=1, dtype=np.float64)
    ranks = np.arange(1, rel.shape[1] + 1, dtype=np.float64)
    valid = np.arange(rel.shape[1])[None, :] < r.num_ret[:, None]
    prec = np.where(valid, cum / ranks, 0.0)
    int_prec = np.maximum.accumulate(prec[:, ::-1], axis=1)[:, ::-1]
    num_rel = num_relevant(r, level)
    cut = np.floor(recall_level * num_rel + 0.5).astype(np.int64)
    rel_ret = cum[:, -1] if cum.shape[1] else np.zeros(r.n_queries)
    target = np.maximum(cut, 1)
    pos = (cum < target[:, None]).sum(axis=1)  # first index where cum >= target
    pos = np.minimum(pos, max(rel.shape[1] - 1, 0))
    value = int_prec[np.arange(r.n_queries), pos]
    return np.where(cut > rel_ret, 0.0, value)


def eleven_point_average(r: Ranking, level: int = 1) -> FloatArray:
    """11-point interpolated average precision (trec_eval ``11pt_avg``).

    The mean of :func:`interpolated_precision` at recall 0.0, 0.1, ..., 1.0.
    """
    points = [interpolated_precision(r, i / 10, level) for i in range(11)]
    return _f(np.mean(np.stack(points), axis=0))


def bpref(r: Ranking, level: int = 1) -> FloatArray:
    """Binary preference (trec_eval ``bpref``; Buckley and Voorhees, SIGIR 2004).

    ``bpref = (1/R) * sum_{relevant retrieved d} (1 - min(n_d, R) / min(N, R))`` where R is
    num_rel, N the number of judged non-relevant documents and n_d the number of judged
    non-relevant documents ranked above d (a term is 1 when n_d = 0). Unjudged and non-pool
    documents are ignored. 0 when R = 0.
    """
    rel = _relevant(r, level)
    nonrel = (r.levels >= 0) & (r.levels < level)
    before = np.cumsum(nonrel, axis=1, dtype=np.float64) - nonrel
    num_rel = num_relevant(r, level)
    den = np.minimum(_num_nonrel_judged(r, level), num_rel)[:, None]
    frac = _safe_div(np.minimum(before, num_rel[:, None]), den)
    terms = np.where(rel, np.where(before > 0, 1.0 - frac, 1.0), 0.0)
    return _safe_div(terms.sum(axis=1), num_rel)


def inferred_average_precision(r: Ranking, level: int = 1) -> FloatArray:
    """Inferred AP (trec_eval ``infAP``; Yilmaz and Aslam, CIKM 2006).

    For a relevant document at 0-based position j > 0 with ``a`` relevant, ``b`` judged
    non-relevant and ``u`` pooled-but-unjudged documents above it, the term is
    ``1/(j+1) + (j/(j+1)) * ((a+b+u)/j) * ((a+eps)/(a+b+2 eps))`` (eps = 1e-5); position 0
    contributes 1. Non-pool documents are skipped. The sum is divided by num_rel.
    """
    rel = _relevant(r, level)
    nonrel = (r.levels >= 0) & (r.levels < level)
    unj = r.levels == UNJUDGED
    a = np.cumsum(rel, axis=1, dtype=np.float64) - rel
    b = np.cumsum(nonrel, axis=1, dtype=np.float64) - nonrel
    u = np.cumsum(unj, axis=1, dtype=np.float64) - unj
    j = np.arange(rel.shape[1], dtype=np.float64)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        term = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((a + b + u) / j) * (
            (a + _INFAP_EPSILON) / (a + b + 2 * _INFAP_EPSILON)
        )
    term = np.where(j == 0, 1.0, term)
    return _safe_div(np.where(rel, term, 0.0).sum(axis=1), num_relevant(r, level))


def set_precision(r: Ranking, level: int = 1) -> FloatArray:
    """Precision of the whole retrieved set (trec_eval ``set_P``): num_rel_ret / num_ret."""
    return _safe_div(num_relevant_retrieved(r, level), num_retrieved(r))


def set_recall(r: Ranking, level: int = 1) -> FloatArray:
    """Recall of the whole retrieved set (trec_eval ``set_recall``): num_rel_ret / num_rel."""
    return _safe_div(num_relevant_retrieved(r, level), num_relevant(r, level))


def set_relative_precision(r: Ranking, level: int = 1) -> FloatArray:
    """trec_eval ``set_relative_P``: num_rel_ret / min(num_ret, num_rel)."""
    den = np.minimum(num_retrieved(r), num_relevant(r, level))
    return _safe_div(num_relevant_retrieved(r, level), den)


def set_f(r: Ranking, beta: float = 1.0, level: int = 1) -> FloatArray:
    """trec_eval ``set_F``: ``(1 + b^2) P R / (b^2 P + R)`` over the retrieved set."""
    p = set_precision(r, level)
    rc = set_recall(r, level)
    b2 = beta * beta
    return _safe_div((1.0 + b2) * p * rc, b2 * p + rc)


def utility(r: Ranking, a: float = 1.0, b: float = -1.0, c: float = 0.0, d: float = 0.0, level: int = 1) -> FloatArray:
    """trec_eval ``utility`` (default 1, -1, 0, 0).

    ``a * rel_ret + b * nonrel_ret + c * rel_not_ret + d * nonrel_not_ret`` where
    ``nonrel_ret = num_ret - num_rel_ret`` (unjudged retrieved documents count as
    non-relevant) and non-relevant-not-retrieved counts judged documents only.
    """
    rel_ret = num_relevant_retrieved(r, level)
    ret = num_retrieved(r)
    num_rel = num_relevant(r, level)
    judged = r.level_counts.sum(axis=1).astype(np.float64)
    judged_nonrel_ret = num_nonrel_judged_retrieved(r, level)
    nonrel_not_ret = judged - num_rel - judged_nonrel_ret
    return _f(a * rel_ret + b * (ret - rel_ret) + c * (num_rel - rel_ret) + d * nonrel_not_ret)


def unjudged_fraction(r: Ranking, k: int) -> FloatArray:
    """trec_eval ``unj_k``: the fraction of the top k that has no judgement (divides by k)."""
    _check_k(k)
    lv = r.levels[:, :k]
    return _f(((lv == NONPOOL) | (lv == UNJUDGED)).sum(axis=1) / float(k))


# ------------------------------------------------- experimental gain measures (trec_eval 9.x)


def _padded_gains(r: Ranking, width: int) -> FloatArray:
    """``(n_queries, width)`` default trec_eval gains (gain = level) of the ranking, 0 past the end."""
    g = np.zeros((r.n_queries, width), dtype=np.float64)
    d = min(width, r.depth)
    g[:, :d] = _gain_of(r.levels[:, :d], "linear")
    return g


def _num_positive(r: Ranking) -> IntArray:
    """Judged documents with a positive gain (level >= 1), retrieved or not."""
    return np.asarray(r.level_counts[:, 1:].sum(axis=1), dtype=np.int64)


def _discount(width: int) -> FloatArray:
    return 1.0 / np.log2(np.arange(2, width + 2, dtype=np.float64))


def g_measure(r: Ranking) -> FloatArray:
    """trec_eval ``G`` (normalised gain, experimental; default gains, gain = level).

    With ``g_i`` the gain of the document at 0-based rank ``i``, ``S_i = sum_{j<=i} g_j``,
    ``ideal_j`` the gain at position ``j`` of the ideal ranking of all judged documents
    (0 once exhausted) and ``C_i = sum_{j<=i} max(ideal_j, 1)`` (trec_eval's cost, with a
    minimum cost of 1 a rank)::

        G = (1 / sum of all judged gains) * sum_{i < num_ret, g_i != 0} g_i / log2(2 + C_i - S_i)

    Unjudged, non-pool and level-0 documents gain 0. The relevance threshold does not apply.
    0 when no judged document has a positive gain. The ``all`` line is the mean over queries.
    """
    g = _padded_gains(r, r.depth)
    ideal = _ideal_levels(r.level_counts, r.depth).astype(np.float64)
    cost = np.cumsum(np.maximum(ideal, 1.0), axis=1)
    got = np.cumsum(g, axis=1)
    terms = np.where(g != 0, g / np.log2(2.0 + cost - got), 0.0)
    n_levels = r.level_counts.shape[1]
    sum_ideal = _f(r.level_counts @ np.arange(n_levels, dtype=np.int64))
    return _safe_div(terms.sum(axis=1), sum_ideal)


def binary_g(r: Ranking, level: int = 1) -> FloatArray:
    """trec_eval ``binG`` (binary G, experimental).

    ``binG = (1 / num_rel) * sum_{relevant retrieved d} 1 / log2(2 + n_d)`` where ``n_d`` is
    the number of retrieved documents ranked above ``d`` that are not relevant (level below
    ``level``, unjudged or non-pool). 0 when no relevant document was retrieved. The ``all``
    line is the mean over queries.
    """
    rel = _relevant(r, level)
    before = np.arange(rel.shape[1], dtype=np.float64)[None, :] - (np.cumsum(rel, axis=1, dtype=np.float64) - rel)
    terms = np.where(rel, 1.0 / np.log2(2.0 + before), 0.0)
    return _safe_div(terms.sum(axis=1), num_relevant(r, level))


def ndcg_rel(r: Ranking) -> FloatArray:
    """trec_eval ``ndcg_rel``: nDCG averaged over the relevant documents (experimental).

    Default gains (gain = level; Jarvelin and Kekalainen's log2 discount, as :func:`ndcg`).
    With ``DCG_i`` and ``IDCG_i`` the DCG of the ranking and of the ideal ranking through
    0-based rank ``i``, ``R+`` the number of judged documents with a positive gain and
    ``n`` those of them retrieved::

        ndcg_rel = (sum_{retrieved d with gain > 0} DCG_d / IDCG_d + (R+ - n) * DCG / IDCG) / R+

    where ``DCG`` is over all retrieved documents and ``IDCG`` over all judged documents:
    a relevant document that was not retrieved scores the final nDCG. The relevance
    threshold does not apply. 0 when the sum is not positive. The ``all`` line is the mean.
    """
    g = _padded_gains(r, r.depth)
    n_pos = _num_positive(r)
    width = max(r.depth, int(n_pos.max(initial=0)))
    disc = _discount(width)
    dcg = np.cumsum(g * disc[: r.depth], axis=1)
    ideal = _ideal_levels(r.level_counts, width).astype(np.float64) * disc
    idcg = np.cumsum(ideal, axis=1)
    rel = g > 0
    at_rel = np.where(rel, _safe_div(dcg, idcg[:, : r.depth]), 0.0).sum(axis=1)
    final = _safe_div(dcg[:, -1], idcg[:, -1]) if width else np.zeros(r.n_queries)
    total = at_rel + (n_pos - rel.sum(axis=1)) * final
    return np.where(total > 0, _safe_div(total, _f(n_pos)), 0.0)


def ndcg_at_r_levels(r: Ranking, level: int = 1) -> FloatArray:
    """trec_eval ``Rndcg``: nDCG averaged at the R-level boundaries (experimental).

    Default gains (gain = level). The ideal ranking of the judged documents is sorted by
    gain; its boundaries are the depths ``k`` (1 <= k <= R+, R+ = judged documents with a
    positive gain) where the ideal gain changes (rank ``k + 1`` has a lower gain than rank
    ``k``; ``k = R+`` is always one). ``Rndcg`` is the mean of ``nDCG@k`` over these depths,
    plus, when more than ``R+ + 1`` documents were retrieved, ``nDCG@num_ret`` (with
    ``IDCG@num_ret = IDCG@R+``). E.g. 5 judged documents of gain 3 and 3 of gain 2, 20
    retrieved: ``(nDCG@5 + nDCG@8 + nDCG@20) / 3``. 0 when the query has no relevant
    document at the threshold ``level`` (the only place the threshold is used). The ``all``
    line is the mean over queries.
    """
    n_pos = _num_positive(r)
    width = max(r.depth, int(n_pos.max(initial=0)) + 1)
    disc = _discount(width)
    dcg = np.cumsum(_padded_gains(r, width) * disc, axis=1)
    ideal_levels = _ideal_levels(r.level_counts, width)
    idcg = np.cumsum(ideal_levels * disc, axis=1)
    k = np.arange(1, width, dtype=np.int64)[None, :]
    change = (ideal_levels[:, 1:] != ideal_levels[:, :-1]) & (k <= n_pos[:, None])
    at_k = np.where(change, _safe_div(dcg[:, :-1], idcg[:, :-1]), 0.0).sum(axis=1)
    count = change.sum(axis=1)
    tail = r.num_ret > n_pos + 1
    last = np.maximum(n_pos - 1, 0)
    rows = np.arange(r.n_queries)
    final = _safe_div(dcg[:, -1], idcg[rows, last])
    total = at_k + np.where(tail, final, 0.0)
    count = count + tail
    return np.where(num_relevant(r, level) > 0, _safe_div(total, _f(count)), 0.0)


def _powers(p: float, n: int) -> FloatArray:
    """``p**0 .. p**(n-1)`` by repeated multiplication, as trec_eval accumulates them."""
    out = np.empty(n, dtype=np.float64)
    if n:
        out[0] = 1.0
        np.cumprod(np.full(n - 1, p), out=out[1:])
    return out


def rank_biased_precision(r: Ranking, p: float = 0.9) -> FloatArray:
    """trec_eval ``rbp``: rank-biased precision (Moffat and Zobel, TOIS 2008).

    ``RBP = (1 - p) * sum_{i >= 1} g(rel_i) * p**(i - 1)`` over the retrieved documents,
    persistence ``p`` (trec_eval's default 0.9). Gains are the relevance levels scaled to
    [0, 1] per query: ``g(l) = l / L`` where ``L`` is the query's highest judged level when
    ``L > 1``, else ``g(l) = l``. (trec_eval's ``min``/``max`` are uninitialised; this is
    the value when they start at 0, i.e. ``min = 0`` from level 0, which always exists.)
    Unjudged and non-pool documents gain 0; the relevance threshold does not apply.
    No residual. The ``all`` line is the mean over queries.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"persistence p must be in [0, 1], got {p!r}")
    n_levels = r.level_counts.shape[1]
    present = r.level_counts > 0
    top = np.where(present.any(axis=1), n_levels - 1 - np.argmax(present[:, ::-1], axis=1), 0)
    scale = np.where(top > 1, top, 1).astype(np.float64)
    g = _padded_gains(r, r.depth) / scale[:, None]
    return _f((1.0 - p) * (g @ _powers(p, r.depth)))


def rank_biased_precision_residual(r: Ranking, p: float = 0.9) -> FloatArray:
    """trec_eval ``rbp_resid`` (p fixed at 0.9 in trec_eval).

    The RBP weight left to unjudged documents: ``p**num_ret + (1 - p) * sum_{i unjudged}
    p**(i - 1)`` where unjudged means non-pool or pooled-but-unjudged, if at least one
    retrieved document is unjudged; otherwise 0 (trec_eval leaves the value unset, so the
    tail ``p**num_ret`` is not counted either). The ``all`` line is the mean over queries.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"persistence p must be in [0, 1], got {p!r}")
    unj = ((r.levels == NONPOOL) | (r.levels == UNJUDGED)).astype(np.float64)
    powers = _powers(p, r.depth + 1)
    resid = powers[r.num_ret] + (1.0 - p) * (unj @ powers[: r.depth])
    return np.where(unj.sum(axis=1) > 0, resid, 0.0)


# --------------------------------------------------------------------------- aggregation


def mean(values: FloatArray) -> float:
    """Arithmetic mean over queries (trec_eval's ``all`` line); NaN for no queries."""
    return float(np.mean(values)) if values.size else math.nan


def geometric_mean(values: FloatArray, floor: float = _MIN_GEO_MEAN) -> float:
    """Geometric mean over queries (trec_eval ``gm_map``, ``gm_bpref``).

    ``exp(mean(log(max(v, floor))))`` with trec_eval's floor of 1e-5, so a zero does not
    collapse the mean to 0.
    """
    if not values.size:
        return math.nan
    return float(np.exp(np.mean(np.log(np.maximum(values, floor)))))
