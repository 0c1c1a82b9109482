"""Invariants of the IR measures (hypothesis) and a differential test against trec_eval."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.retrieval import (
    Ranking,
    average_precision,
    evaluate_trec,
    hit_rate,
    ndcg,
    precision,
    r_precision,
    recall,
    reciprocal_rank,
)

LEVELS = st.sampled_from([-2, -1, 0, 0, 1, 2, 3])


@st.composite
def rankings(draw: st.DrawFn) -> tuple[list[int], dict[int, int]]:
    ranked = draw(st.lists(LEVELS, min_size=1, max_size=25))
    counts: dict[int, int] = {}
    for lv in ranked:
        if lv >= 0:
            counts[lv] = counts.get(lv, 0) + 1
    for lv in range(4):
        extra = draw(st.integers(0, 3))
        if extra:
            counts[lv] = counts.get(lv, 0) + extra
    return ranked, counts


KS = st.integers(1, 30)


def one(ranked: list[int], counts: dict[int, int]) -> Ranking:
    return Ranking.from_lists([ranked], [counts])


@settings(max_examples=150, deadline=None)
@given(rankings(), KS, st.sampled_from(["linear", "exponential"]))
def test_ndcg_between_zero_and_one(rk: tuple[list[int], dict[int, int]], k: int, gain: str) -> None:
    r = one(*rk)
    for v in (ndcg(r, k, gain=gain), ndcg(r, gain=gain)):  # type: ignore[arg-type]
        assert 0.0 <= v[0] <= 1.0 + 1e-12


@settings(max_examples=100, deadline=None)
@given(rankings(), KS)
def test_ideal_ranking_scores_one(rk: tuple[list[int], dict[int, int]], k: int) -> None:
    _, counts = rk
    ideal = sorted((lv for lv, n in counts.items() for _ in range(n)), reverse=True)
    if not any(lv >= 1 for lv in ideal):
        return
    r = one(ideal, counts)
    assert ndcg(r)[0] == pytest.approx(1.0)
    assert ndcg(r, k)[0] == pytest.approx(1.0)
    assert average_precision(r)[0] == pytest.approx(1.0)
    assert r_precision(r)[0] == pytest.approx(1.0)
    assert reciprocal_rank(r)[0] == 1.0


@settings(max_examples=150, deadline=None)
@given(rankings(), st.randoms(use_true_random=False), KS)
def test_permuting_irrelevant_docs_below_the_relevant_changes_nothing(
    rk: tuple[list[int], dict[int, int]], rnd: object, k: int
) -> None:
    ranked, counts = rk
    last = max((i for i, lv in enumerate(ranked) if lv >= 1), default=-1)
    tail = ranked[last + 1 :]
    rnd.shuffle(tail)  # type: ignore[attr-defined]
    a, b = one(ranked, counts), one(ranked[: last + 1] + tail, counts)
    for fn in (precision, recall, hit_rate):
        assert fn(a, k)[0] == fn(b, k)[0]
    assert average_precision(a)[0] == average_precision(b)[0]
    assert reciprocal_rank(a)[0] == reciprocal_rank(b)[0]
    assert r_precision(a)[0] == r_precision(b)[0]


@settings(max_examples=150, deadline=None)
@given(rankings(), KS, st.integers(1, 3))
def test_count_identities(rk: tuple[list[int], dict[int, int]], k: int, level: int) -> None:
    ranked, counts = rk
    r = one(ranked, counts)
    hits = sum(1 for lv in ranked[:k] if lv >= level)
    num_rel = sum(n for lv, n in counts.items() if lv >= level)
    assert precision(r, k, level)[0] * k == pytest.approx(hits)
    assert recall(r, k, level)[0] == pytest.approx(hits / num_rel if num_rel else 0.0)
    assert hit_rate(r, k, level)[0] == float(hits > 0)
    assert (reciprocal_rank(r, k, level)[0] > 0) == (hits > 0)
    assert 0.0 <= average_precision(r, k, level)[0] <= recall(r, k, level)[0] + 1e-12


def _random_case(rng: np.random.Generator) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(int(rng.integers(1, 6))):
        qid = f"q{q}"
        pool = [f"d{i}" for i in range(int(rng.integers(5, 60)))]
        judged = rng.choice(pool, size=int(rng.integers(1, len(pool))), replace=False)
        qrels[qid] = {str(d): int(rng.integers(0, 4)) for d in judged}
        retrieved = rng.choice(pool, size=int(rng.integers(1, len(pool))), replace=False)
        # few distinct scores: many ties, broken by document id
        run[qid] = {str(d): float(rng.integers(0, 5)) for d in retrieved}
    run["no_qrels"] = {"d1": 1.0}
    return qrels, run


MEASURES = {
    "map": "map",
    "P_5": "P.5",
    "P_10": "P.10",
    "recall_10": "recall.10",
    "ndcg": "ndcg",
    "ndcg_cut_10": "ndcg_cut.10",
    "recip_rank": "recip_rank",
    "Rprec": "Rprec",
    "bpref": "bpref",
    "num_rel_ret": "num_rel_ret",
    "success_5": "success.5",
}


def test_differential_against_pytrec_eval() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(7)
    for _ in range(40):
        qrels, run = _random_case(rng)
        for level in (1, 2):
            names = set(MEASURES) - ({"ndcg", "ndcg_cut_10"} if level == 2 else set())
            ref_qrels = (
                qrels if level == 1 else {q: {d: int(v >= level) for d, v in docs.items()} for q, docs in qrels.items()}
            )
            ref = pytrec_eval.RelevanceEvaluator(ref_qrels, set(MEASURES.values())).evaluate(run)
            ours = evaluate_trec(qrels, run, [MEASURES[n] for n in names], level=level)
            assert set(ours.per_query) == set(ref)  # the query without qrels is left out
            for qid, values in ref.items():
                for name in names:
                    assert ours.per_query[qid][name] == pytest.approx(values[name], abs=1e-9), (
                        qid,
                        name,
                        level,
                    )
