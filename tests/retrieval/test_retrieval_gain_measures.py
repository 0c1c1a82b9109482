"""trec_eval's experimental gain measures (G, binG, ndcg_rel, Rndcg, rbp, rbp_resid), by hand.

Shared example (one query): ranks 1..5 hold levels 2, 0, non-pool, 1, 0; the qrels judge one
document at level 2, two at level 1 (one of them not retrieved) and three at level 0. With
default gains (gain = level) the ideal ranking is 2, 1, 1, 0, ...
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from assay.retrieval import (
    NONPOOL,
    UNJUDGED,
    Ranking,
    binary_g,
    g_measure,
    ndcg_at_r_levels,
    ndcg_rel,
    rank_biased_precision,
    rank_biased_precision_residual,
)

JUDGED = {2: 1, 1: 2, 0: 3}
EX = Ranking.from_lists([[2, 0, NONPOOL, 1, 0]], [JUDGED])

# DCG of the example over all 5 ranks and the ideal DCG over the 3 positive judged documents.
DCG = 2 / math.log2(2) + 1 / math.log2(5)
IDCG = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)


def _v(values: np.ndarray) -> float:
    assert values.shape == (1,)
    return float(values[0])


def test_g_by_hand() -> None:
    # cost C_i = cumsum(max(ideal_i, 1)) = 2, 3, 4, 5, 6; gained S_i = 2, 2, 2, 3, 3
    # rank 1: 2 / log2(2 + 2 - 2) = 2; rank 4: 1 / log2(2 + 5 - 3) = 0.5
    # normalised by the sum of all judged gains 2 + 1 + 1 = 4
    assert _v(g_measure(EX)) == pytest.approx((2 / math.log2(2) + 1 / math.log2(4)) / 4)  # 0.625


def test_g_is_zero_without_positive_judgements() -> None:
    assert _v(g_measure(Ranking.from_lists([[0, NONPOOL]], [{0: 2}]))) == 0.0


def test_binary_g_by_hand() -> None:
    # relevant (level >= 1) at rank 1 (0 non-relevant above) and rank 4 (2 above); num_rel = 3
    assert _v(binary_g(EX)) == pytest.approx((1 / math.log2(2 + 0) + 1 / math.log2(2 + 2)) / 3)  # 0.5
    # level 2: only rank 1 is relevant and num_rel = 1
    assert _v(binary_g(EX, level=2)) == pytest.approx(1 / math.log2(2))


def test_binary_g_equals_g_on_binary_judgements() -> None:
    r = Ranking.from_lists([[0, 1, NONPOOL, 1]], [{1: 3, 0: 1}])
    # G: ideal 1, 1, 1, 0 -> cost 1, 2, 3, 4; gained 0, 1, 1, 2
    # rank 2: 1 / log2(2 + 2 - 1); rank 4: 1 / log2(2 + 4 - 2); / 3
    expected = (1 / math.log2(3) + 1 / math.log2(4)) / 3
    assert _v(g_measure(r)) == pytest.approx(expected)
    assert _v(binary_g(r)) == pytest.approx(expected)


def test_ndcg_rel_by_hand() -> None:
    # positive-gain documents at rank 1 (nDCG@1 = 2 / 2) and rank 4 (DCG@4 / IDCG@4 = DCG / IDCG);
    # the unretrieved level-1 document scores the final DCG / IDCG; averaged over R+ = 3
    assert _v(ndcg_rel(EX)) == pytest.approx((2 / 2 + DCG / IDCG + (3 - 2) * DCG / IDCG) / 3)  # 0.8509


def test_ndcg_rel_is_zero_without_relevant_retrieved() -> None:
    r = Ranking.from_lists([[0, NONPOOL]], [{1: 1, 0: 1}])
    assert _v(ndcg_rel(r)) == 0.0


def test_rndcg_by_hand_with_tail() -> None:
    # ideal gains 2, 1, 1, 0: boundaries at k = 1 (2 -> 1) and k = 3 (1 -> 0);
    # 5 retrieved > R+ + 1 = 4, so nDCG at num_ret = 5 (over IDCG@3) is averaged in too
    ndcg_1 = 2 / 2
    ndcg_3 = 2 / IDCG
    ndcg_5 = DCG / IDCG
    assert _v(ndcg_at_r_levels(EX)) == pytest.approx((ndcg_1 + ndcg_3 + ndcg_5) / 3)


def test_rndcg_by_hand_without_tail() -> None:
    # 4 retrieved = R+ + 1: no extra point at num_ret
    r = Ranking.from_lists([[2, 0, NONPOOL, 1]], [JUDGED])
    assert _v(ndcg_at_r_levels(r)) == pytest.approx((2 / 2 + 2 / IDCG) / 2)


def test_rndcg_by_hand_short_ranking() -> None:
    # one level-1 document retrieved: DCG = 1 at every depth; boundaries k = 1 and k = 3
    r = Ranking.from_lists([[1]], [JUDGED])
    assert _v(ndcg_at_r_levels(r)) == pytest.approx((1 / 2 + 1 / IDCG) / 2)


def test_rndcg_uses_the_threshold_only_to_zero_queries() -> None:
    r = Ranking.from_lists([[1, 0]], [{1: 1, 0: 1}])
    assert _v(ndcg_at_r_levels(r, level=1)) == pytest.approx(1.0)  # boundary k = 1: 1 / 1
    assert _v(ndcg_at_r_levels(r, level=2)) == 0.0  # no document at level >= 2


def test_rbp_by_hand() -> None:
    # highest judged level 2 > 1, so gains are level / 2: 1, 0, 0, 0.5, 0
    assert _v(rank_biased_precision(EX)) == pytest.approx((1 - 0.9) * (1 * 0.9**0 + 0.5 * 0.9**3))  # 0.13645
    assert _v(rank_biased_precision(EX, p=0.5)) == pytest.approx(0.5 * (1 + 0.5 * 0.5**3))  # 0.53125


def test_rbp_binary_gains_are_not_rescaled() -> None:
    r = Ranking.from_lists([[1, 0, 1]], [{1: 2, 0: 1}])
    assert _v(rank_biased_precision(r)) == pytest.approx(0.1 * (0.9**0 + 0.9**2))  # 0.181


def test_rbp_rejects_bad_persistence() -> None:
    with pytest.raises(ValueError, match="persistence"):
        rank_biased_precision(EX, p=1.5)
    with pytest.raises(ValueError, match="persistence"):
        rank_biased_precision_residual(EX, p=-0.1)


def test_rbp_resid_by_hand() -> None:
    # the non-pool document at rank 3 weighs 0.1 * 0.9**2; the tail past 5 ranks 0.9**5
    assert _v(rank_biased_precision_residual(EX)) == pytest.approx(0.9**5 + 0.1 * 0.9**2)  # 0.67149
    pooled = Ranking.from_lists([[UNJUDGED, 1]], [{1: 1}])
    assert _v(rank_biased_precision_residual(pooled)) == pytest.approx(0.9**2 + 0.1 * 0.9**0)  # 0.91


def test_rbp_resid_is_zero_when_everything_is_judged() -> None:
    # trec_eval leaves the value unset: not even the tail 0.9**2 is counted
    r = Ranking.from_lists([[1, 0]], [{1: 1, 0: 1}])
    assert _v(rank_biased_precision_residual(r)) == 0.0


def test_measures_on_an_empty_ranking() -> None:
    r = Ranking.from_lists([[]], [JUDGED])
    assert _v(g_measure(r)) == 0.0
    assert _v(binary_g(r)) == 0.0
    assert _v(ndcg_rel(r)) == 0.0
    assert _v(ndcg_at_r_levels(r)) == 0.0
    assert _v(rank_biased_precision(r)) == 0.0
    assert _v(rank_biased_precision_residual(r)) == 0.0
