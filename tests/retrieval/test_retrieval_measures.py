"""IR measures against their formulas written out (STYLE item 8), and edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from assay.retrieval import (
    NONPOOL,
    UNJUDGED,
    Ranking,
    average_precision,
    bpref,
    geometric_mean,
    hit_rate,
    interpolated_precision,
    mean,
    ndcg,
    precision,
    r_precision,
    rank_flat,
    rank_matrix,
    recall,
    reciprocal_rank,
)
from assay.retrieval._measures import inferred_average_precision, r_precision_mult

# One query: relevant at ranks 1 and 3; a third relevant document was not retrieved.
ONE = Ranking.from_lists([[1, 0, 1, 0, 0]], [{1: 3, 0: 3}])


def _v(values: np.ndarray) -> float:
    assert values.shape == (1,)
    return float(values[0])


@pytest.mark.parametrize(("k", "hits"), [(1, 1), (2, 1), (3, 2), (5, 2), (10, 2)])
def test_precision_divides_by_k_even_past_the_last_document(k: int, hits: int) -> None:
    assert _v(precision(ONE, k)) == pytest.approx(hits / k)


@pytest.mark.parametrize(("k", "hits"), [(1, 1), (3, 2), (10, 2)])
def test_recall_divides_by_all_relevant(k: int, hits: int) -> None:
    assert _v(recall(ONE, k)) == pytest.approx(hits / 3)


def test_reciprocal_rank_and_mrr_cutoff() -> None:
    late = Ranking.from_lists([[0, 0, 1]], [{1: 1, 0: 2}])
    assert _v(reciprocal_rank(late)) == pytest.approx(1 / 3)
    assert _v(reciprocal_rank(late, 2)) == 0.0
    assert _v(reciprocal_rank(ONE)) == 1.0


def test_hit_rate() -> None:
    late = Ranking.from_lists([[0, 0, 1]], [{1: 1, 0: 2}])
    assert [_v(hit_rate(late, k)) for k in (1, 2, 3)] == [0.0, 0.0, 1.0]


def test_average_precision_formula() -> None:
    # AP = (P@1 + P@3) / num_rel = (1 + 2/3) / 3
    assert _v(average_precision(ONE)) == pytest.approx((1 + 2 / 3) / 3)
    # AP@1 keeps the full num_rel denominator (trec_eval map_cut)
    assert _v(average_precision(ONE, 1)) == pytest.approx(1 / 3)


def test_ndcg_binary_formula() -> None:
    dcg = 1 / math.log2(2) + 1 / math.log2(4)
    idcg = 1 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert _v(ndcg(ONE)) == pytest.approx(dcg / idcg)
    # ndcg@2: the ideal is cut at 2 too, but built from all judged relevant docs
    assert _v(ndcg(ONE, 2)) == pytest.approx(1.0 / (1 + 1 / math.log2(3)))


def test_ndcg_graded_linear_and_exponential() -> None:
    graded = Ranking.from_lists([[2, 0, 1]], [[3, 2, 1, 0]])
    d = [1 / math.log2(i + 1) for i in (1, 2, 3)]
    assert _v(ndcg(graded)) == pytest.approx((2 * d[0] + 1 * d[2]) / (3 * d[0] + 2 * d[1] + 1 * d[2]))
    exp = (3 * d[0] + 1 * d[2]) / (7 * d[0] + 3 * d[1] + 1 * d[2])
    assert _v(ndcg(graded, gain="exponential")) == pytest.approx(exp)
    with pytest.raises(ValueError, match="gain"):
        ndcg(graded, gain="cubic")  # type: ignore[arg-type]


def test_r_precision_and_multiples() -> None:
    assert _v(r_precision(ONE)) == pytest.approx(2 / 3)  # R = 3
    # cut-off floor(0.2 * 3 + 0.9) = 1
    assert _v(r_precision_mult(ONE, 0.2)) == pytest.approx(1.0)
    # cut-off floor(2 * 3 + 0.9) = 6 > 5 retrieved: still divides by 6
    assert _v(r_precision_mult(ONE, 2.0)) == pytest.approx(2 / 6)


def test_interpolated_precision() -> None:
    # precisions at the relevant ranks: 1/1, 2/3; third relevant never retrieved
    assert _v(interpolated_precision(ONE, 0.0)) == pytest.approx(1.0)
    assert _v(interpolated_precision(ONE, 0.6)) == pytest.approx(2 / 3)  # round(1.8) = 2
    assert _v(interpolated_precision(ONE, 1.0)) == 0.0


def test_bpref_and_infap_skip_unjudged() -> None:
    r = Ranking.from_lists([[0, 1, NONPOOL, 1, UNJUDGED]], [{0: 2, 1: 2}])
    # R = 2, N = 2; one judged non-relevant above each relevant: (1 - 1/2) each
    assert _v(bpref(r)) == pytest.approx(0.5)
    eps = 0.00001
    second = 1 / 4 + (3 / 4) * ((1 + 1 + 0) / 3) * ((1 + eps) / (1 + 1 + 2 * eps))
    first = 1 / 2 + (1 / 2) * (1 / 1) * (eps / (1 + 2 * eps))
    assert _v(inferred_average_precision(r)) == pytest.approx((first + second) / 2)


def test_relevance_threshold() -> None:
    r = Ranking.from_lists([[2, 1, 0]], [[2, 1, 0]])
    assert _v(precision(r, 2, level=1)) == 1.0
    assert _v(precision(r, 2, level=2)) == 0.5
    assert _v(recall(r, 3, level=2)) == 1.0
    with pytest.raises(ValueError, match="relevance level"):
        precision(r, 2, level=0)


def test_no_relevant_documents_score_zero_not_nan() -> None:
    r = Ranking.from_lists([[0, 0]], [[0, 0]])
    for values in (recall(r, 2), average_precision(r), ndcg(r), r_precision(r), bpref(r)):
        assert _v(values) == 0.0


def test_bad_cutoff_is_rejected() -> None:
    with pytest.raises(ValueError, match="cut-off"):
        precision(ONE, 0)


def test_ties_break_on_document_id_descending() -> None:
    # same score: trec_eval ranks "b" before "a" (strcmp descending), "B" < "a" in bytes
    ids = np.array(["a", "b", "B"])
    _, order = np.unique(ids, return_inverse=True)
    levels = np.array([1, 0, 0])
    r = rank_flat(np.zeros(3, dtype=np.int64), np.array([1.0, 1.0, 1.0]), order, levels, np.array([[2, 1]]))
    assert r.levels[0].tolist() == [0, 1, 0]  # b, a, B
    m = rank_matrix(np.array([[1.0, 1.0, 2.0]]), np.array([[1, 0, 0]]), np.array([[2, 1]]))
    assert m.levels[0].tolist() == [0, 0, 1]  # col 2 (score 2), then col 1 before col 0


def test_aggregation() -> None:
    assert mean(np.array([0.0, 1.0])) == 0.5
    assert math.isnan(mean(np.array([])))
    # trec_eval floors each value at 1e-5 before the geometric mean
    assert geometric_mean(np.array([0.0, 1.0])) == pytest.approx(math.sqrt(1e-5))
