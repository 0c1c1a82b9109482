"""How much of the human-chosen evidence does evidence selection recover? No LLM involved.

WiCE dev rows (``../shared/data/grounding/wice_dev.jsonl``) hold a Wikipedia claim, the
full cited web page (``context``, one sentence or fragment a line), the annotators'
``supporting_sentences`` (sets of line numbers; any one set supports the claim as far as
it is supported) and WiCE's ``oracle_chunks``: three chunks built from the supporting
lines plus other lines of the page, about 4,400 characters together.

For each row the page is indexed once (:class:`assay.grounding._evidence.ContextIndex`,
with MiniLM embeddings) and the claim selects evidence within budgets of 800 / 1200 /
2000 characters, ranked by BM25 alone, cosine alone, three fusions (reciprocal-rank
fusion with k=60, the plain sum of min-max normalised scores, and the product's
``0.7 * bm25' + 0.3 * cosine'``, :func:`assay.grounding._evidence.fuse`) and random scores
(the baseline; same top_k, neighbours and budget). A line counts as recovered when
at least half of its characters are inside the selected spans. Per row, then averaged:

- ``oracle``: share of the distinct oracle-chunk lines recovered (the issue's measure; the
  chunks hold filler lines too, so a budget far below their size caps it: ``ceiling`` is
  the mean of min(1, budget / oracle characters)).
- ``gold``: share of the annotated supporting lines recovered.
- ``complete``: share of rows where at least one full supporting set is recovered
  (what a verifier needs to say "supported").

    python benchmarks/evidence_recall.py [--limit N] [--top-k 6] [--neighbours 1] [--sweep]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from assay.grounding._evidence import ContextIndex, Evidence, fuse

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "grounding" / "wice_dev.jsonl"
BUDGETS = (800, 1200, 2000)
Scores = NDArray[np.float64]


@dataclass
class Row:
    claim: str
    context: str
    lines: list[tuple[int, int]]  # (start, end) of each line of the context
    oracle: list[list[int]]  # per distinct oracle line text: the context lines holding it
    oracle_chars: int
    gold: list[list[int]]  # supporting sets of line numbers


def load(limit: int | None) -> list[Row]:
    rows = []
    for raw in DATA.read_text(encoding="utf-8").splitlines()[:limit]:
        r = json.loads(raw)
        context: str = r["context"]
        lines, at = [], 0
        for line in context.split("\n"):
            lines.append((at, at + len(line)))
            at += len(line) + 1
        by_text: dict[str, list[int]] = {}
        for i, (s, e) in enumerate(lines):
            if context[s:e].strip():
                by_text.setdefault(context[s:e].strip(), []).append(i)
        texts = {t.strip() for chunk in r["oracle_chunks"] for t in chunk.split("\n") if t.strip()}
        oracle = [by_text[t] for t in sorted(texts) if t in by_text]
        rows.append(Row(r["claim"], context, lines, oracle, sum(len(t) for t in texts), r["supporting_sentences"]))
    return rows


def covered_lines(row: Row, evidence: Evidence) -> set[int]:
    """The oracle and gold lines with at least half their non-space characters selected."""
    mask = np.zeros(len(row.context) + 1, dtype=bool)
    for span in evidence.spans:
        mask[span.start : span.end] = True
    wanted = {i for where in row.oracle for i in where} | {i for s in row.gold for i in s}
    out = set()
    for i in wanted:
        s, e = row.lines[i]
        solid = [j for j, ch in enumerate(row.context[s:e], start=s) if not ch.isspace()]
        if solid and mask[solid].sum() * 2 >= len(solid):
            out.add(i)
    return out


def measures(row: Row, evidence: Evidence) -> tuple[float, float, float]:
    got = covered_lines(row, evidence)
    oracle = sum(any(i in got for i in where) for where in row.oracle) / len(row.oracle) if row.oracle else 1.0
    gold_lines = {i for s in row.gold for i in s}
    gold = len(gold_lines & got) / len(gold_lines) if gold_lines else 1.0
    complete = float(any(set(s) <= got for s in row.gold))
    return oracle, gold, complete


def minmax(x: Scores) -> Scores:
    span = float(x.max() - x.min()) if len(x) else 0.0
    return (x - x.min()) / span if span > 0 else np.zeros_like(x)


def rrf(bm25: Scores, cos: Scores, k: int = 60) -> Scores:
    """Reciprocal-rank fusion: 1/(k + rank) summed over the BM25 ranking (BM25 > 0) and the cosine one."""
    out = np.zeros(len(bm25))
    for scores, mask in ((bm25, bm25 > 0), (cos, np.ones(len(cos), dtype=bool))):
        candidates = np.flatnonzero(mask)
        order = candidates[np.argsort(-scores[candidates], kind="stable")]
        out[order] += 1.0 / (k + np.arange(1, len(order) + 1))
    return out


RANKERS: dict[str, Callable[[Scores, Scores, Scores], Scores]] = {
    "random": lambda bm25, cos, rnd: rnd,
    "bm25": lambda bm25, cos, rnd: bm25,
    "embeddings": lambda bm25, cos, rnd: cos + 2.0,  # all positive: every sentence is a candidate
    "fusion (rrf)": lambda bm25, cos, rnd: rrf(bm25, cos),
    "fusion (sum)": lambda bm25, cos, rnd: minmax(bm25) + minmax(cos) + 1e-9,
    "fusion (0.7/0.3)": lambda bm25, cos, rnd: fuse(bm25, cos),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None, help="only the first N rows")
    ap.add_argument("--top-k", type=int, default=6)
    ap.add_argument("--neighbours", type=int, default=1)
    ap.add_argument("--sweep", action="store_true", help="also sweep top_k x neighbours for the fusion")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rows = load(args.limit)
    rng = np.random.default_rng(args.seed)
    methods = list(RANKERS)
    table: dict[tuple[str, int], list[tuple[float, float, float]]] = {(m, b): [] for m in methods for b in BUDGETS}
    sweep: dict[tuple[int, int, int], list[tuple[float, float, float, float]]] = {}
    build_bm25, build_embed, select_bm25, select_fused, sentences = [], [], [], [], []
    for n, row in enumerate(rows, 1):
        t0 = time.perf_counter()
        plain = ContextIndex.build([row.context], embed=False)
        t1 = time.perf_counter()
        index = ContextIndex.build([row.context], embed=True)
        t2 = time.perf_counter()
        plain.select(row.claim)
        t3 = time.perf_counter()
        index.select(row.claim)
        t4 = time.perf_counter()
        build_bm25.append(t1 - t0)
        build_embed.append(t2 - t1)
        select_bm25.append(t3 - t2)
        select_fused.append(t4 - t3)
        sentences.append(len(index))
        bm25 = index.bm25(row.claim)
        cos = index.cosine(row.claim)
        assert cos is not None
        rnd = rng.random(len(index)) + 1e-9
        for m in methods:
            scores = RANKERS[m](bm25, cos, rnd)
            for b in BUDGETS:
                ev = index._assemble(scores, b, args.top_k, args.neighbours, None)
                table[(m, b)].append(measures(row, ev))
        if args.sweep:
            fused = fuse(bm25, cos)
            for b in BUDGETS:
                for k in (2, 4, 6, 8, 12):
                    for nb in (0, 1, 2):
                        ev = index._assemble(fused, b, k, nb, None)
                        sweep.setdefault((b, k, nb), []).append((*measures(row, ev), ev.chars))
        if n % 25 == 0:
            print(f"  {n}/{len(rows)} rows", flush=True)

    def mean(xs: list[tuple[float, ...]], i: int) -> float:
        return statistics.fmean(x[i] for x in xs)

    print(f"\nWiCE dev, {len(rows)} rows, top_k={args.top_k}, neighbours={args.neighbours}, random seed {args.seed}")
    print(f"sentences per page: mean {statistics.fmean(sentences):.0f}, max {max(sentences)}")
    for b in BUDGETS:
        ceiling = statistics.fmean(min(1.0, b / r.oracle_chars) if r.oracle_chars else 1.0 for r in rows)
        print(f"\nbudget {b} chars (oracle ceiling {ceiling:.3f})")
        print(f"  {'ranker':<16} {'oracle':>7} {'x rand':>7} {'gold':>7} {'x rand':>7} {'complete':>9} {'x rand':>7}")
        base = table[("random", b)]
        for m in methods:
            xs = table[(m, b)]
            cells = []
            for i in range(3):
                v, r = mean(xs, i), mean(base, i)
                cells.append(f"{v:>{9 if i == 2 else 7}.3f} {v / r if r else float('nan'):>7.2f}")
            print(f"  {m:<16} " + " ".join(cells))
    if sweep:
        print("\nfusion (0.7/0.3): gold / complete / mean characters used, by budget x top_k x neighbours")
        for (b, k, nb), xs in sorted(sweep.items()):
            print(
                f"  budget {b:>4} top_k={k:<2} neighbours={nb}: gold {mean(xs, 1):.3f} complete {mean(xs, 2):.3f}"
                f" chars {mean(xs, 3):.0f}"
            )

    def ms(xs: list[float]) -> str:
        return f"mean {1000 * statistics.fmean(xs):.1f} ms, median {1000 * statistics.median(xs):.1f} ms"

    print("\ntimes (one claim per page; a page is indexed once per sample)")
    print(f"  build, BM25 only:       {ms(build_bm25)}")
    print(f"  build, with embeddings: {ms(build_embed)}")
    print(f"  select, BM25 only:      {ms(select_bm25)}")
    print(f"  select, fusion:         {ms(select_fused)} (one query embedding included)")


if __name__ == "__main__":
    main()
