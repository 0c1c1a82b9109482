"""Speed of assay's IR measures vs ranx and pytrec_eval-terrier on the same data.

10k queries x 1k retrieved documents (scores with ties), graded qrels with ~50 judged
documents per query. Measures: MAP, nDCG, nDCG@10, P@10, recall@100, MRR.

    python benchmarks/ir_speed.py [--queries 10000] [--docs 1000]

assay is timed from arrays (sorting with trec_eval's tie order + measures); ranx's first
evaluate() call (numba JIT compilation) is timed separately from a second, warm call;
building each library's input structures is timed separately from evaluating.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from assay.retrieval import (
    Ranking,
    average_precision,
    ndcg,
    precision,
    rank_matrix,
    recall,
    reciprocal_rank,
)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def make_data(n_q: int, n_d: int, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    doc_ids = np.array([f"d{j}" for j in range(n_d)])
    scores = np.round(rng.random((n_q, n_d)), 2)  # two decimals: plenty of ties
    levels = np.zeros((n_q, n_d), dtype=np.int64)
    judged = rng.random((n_q, n_d)) < 0.05
    levels[judged] = rng.integers(0, 4, size=int(judged.sum()))
    levels[~judged] = -1  # not in qrels
    extra = rng.integers(0, 5, size=(n_q, 4))  # judged documents that were not retrieved
    counts = np.stack([(levels == lv).sum(axis=1) for lv in range(4)], axis=1) + extra
    return {"doc_ids": doc_ids, "scores": scores, "levels": levels, "counts": counts, "extra": extra}


def assay_eval(data: dict[str, Any]) -> dict[str, float]:
    _, order = np.unique(data["doc_ids"], return_inverse=True)
    doc_order = np.broadcast_to(order, data["scores"].shape)
    r: Ranking = rank_matrix(data["scores"], data["levels"], data["counts"], doc_order=doc_order)
    return {
        "map": float(average_precision(r).mean()),
        "ndcg": float(ndcg(r).mean()),
        "ndcg@10": float(ndcg(r, 10).mean()),
        "p@10": float(precision(r, 10).mean()),
        "recall@100": float(recall(r, 100).mean()),
        "mrr": float(reciprocal_rank(r).mean()),
    }


def to_dicts(data: dict[str, Any]) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    ids = data["doc_ids"].tolist()
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(data["scores"].shape[0]):
        qid = f"q{q}"
        row = data["levels"][q]
        judged = np.nonzero(row >= 0)[0]
        qd = {ids[j]: int(row[j]) for j in judged}
        for lv in range(4):
            for i in range(int(data["extra"][q, lv])):
                qd[f"x{lv}_{i}"] = lv
        qrels[qid] = qd
        run[qid] = dict(zip(ids, data["scores"][q].tolist(), strict=True))
    return qrels, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=1_000)
    args = parser.parse_args()
    print(f"data: {args.queries} queries x {args.docs} documents")
    t_make, data = timed(lambda: make_data(args.queries, args.docs))
    print(f"  generate arrays             {t_make:8.2f} s")

    t_assay, ours = timed(lambda: assay_eval(data))
    t_assay2, _ = timed(lambda: assay_eval(data))
    t_assay = min(t_assay, t_assay2)
    print(f"assay (sort + 6 measures)     {t_assay:8.2f} s   {ours}")

    t_dicts, (qrels, run) = timed(lambda: to_dicts(data))
    print(f"  build dict qrels/run        {t_dicts:8.2f} s  (input for ranx and pytrec_eval)")

    results: dict[str, float] = {}
    try:
        import ranx

        t_build, (rq, rr) = timed(lambda: (ranx.Qrels(qrels), ranx.Run(run)))
        metrics = ["map", "ndcg", "ndcg@10", "precision@10", "recall@100", "mrr"]
        t_cold, _ = timed(lambda: ranx.evaluate(rq, rr, metrics))
        t_warm, rx = timed(lambda: ranx.evaluate(rq, rr, metrics))
        print(f"ranx build Qrels/Run          {t_build:8.2f} s")
        print(f"ranx first call (JIT warm-up) {t_cold:8.2f} s")
        print(f"ranx evaluate (warm)          {t_warm:8.2f} s   {dict(rx)}")
        results["ranx"] = t_warm
    except ImportError:
        print("ranx not installed: skipped")
    try:
        import pytrec_eval

        measures = {"map", "ndcg", "ndcg_cut.10", "P.10", "recall.100", "recip_rank"}
        t_build, ev = timed(lambda: pytrec_eval.RelevanceEvaluator(qrels, measures))
        t_eval, per_q = timed(lambda: ev.evaluate(run))
        mean_map = float(np.mean([v["map"] for v in per_q.values()]))
        mean_ndcg = float(np.mean([v["ndcg"] for v in per_q.values()]))
        print(f"pytrec_eval build evaluator   {t_build:8.2f} s")
        print(f"pytrec_eval evaluate          {t_eval:8.2f} s   map={mean_map:.6f} ndcg={mean_ndcg:.6f}")
        results["pytrec_eval"] = t_eval
    except ImportError:
        print("pytrec_eval not installed: skipped")
    for name, t in results.items():
        print(f"ratio {name + ' / assay':<24}{t / t_assay:8.2f}x")


if __name__ == "__main__":
    main()
