"""Seconds to embed a sample's contexts with the offline MiniLM, by batch size, and whether the vectors agree.

Evidence selection embeds every sentence of a sample's contexts before the judge reads a
window (``ContextIndex.build``); the retrieval judges embed whole passages. Both go through
``MiniLMEncoder.encode``. Timed here on ``rag_answer_speed.py``'s realistic RAG samples
(five ~3,000-character passages each): their sentences, and the same contexts cut into
900-character passages. Each batch size is timed as the best of ``--repeat`` runs, and its
vectors are compared with batch size 1's: a text's vector must not depend on the texts
encoded beside it.

    python benchmarks/encoder_speed.py                      # the old default (64) against the new (1)
    python benchmarks/encoder_speed.py --sizes 64,32,16,8,4,1 --samples 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_limit import machine_line
from rag_answer_speed import samples

from assay.grounding._evidence import sentence_spans
from assay.models._encoders import MiniLMEncoder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="64,1", help="batch sizes; the last is compared with each other")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    items = samples(args.samples, 11)
    workloads = {
        "sentences": [[c[s:e] for c in it["contexts"] for s, e in sentence_spans(c)] for it in items],
        "passages": [[c[i : i + 900] for c in it["contexts"] for i in range(0, len(c), 900)] for it in items],
    }
    print(machine_line())
    alone = MiniLMEncoder(batch_size=1)
    reference = {name: [alone.encode(texts) for texts in lists] for name, lists in workloads.items()}
    seconds: dict[tuple[str, int], float] = {}
    for size in sizes:
        encoder = MiniLMEncoder(batch_size=size)
        encoder.encode(["warm up"])
        for name, lists in workloads.items():
            best = [float("inf")] * len(lists)
            for _ in range(args.repeat):
                for k, texts in enumerate(lists):
                    started = time.perf_counter()
                    vectors = encoder.encode(texts)
                    best[k] = min(best[k], time.perf_counter() - started)
                    if not np.array_equal(vectors, reference[name][k]):
                        diff = float(np.abs(vectors - reference[name][k]).max())
                        print(f"  batch {size}, {name} of sample {k}: vectors differ from batch 1's by {diff:.2e}")
            seconds[(name, size)] = sum(best) / len(best)
    last = sizes[-1]
    for name, lists in workloads.items():
        count = sum(map(len, lists)) / len(lists)
        print(f"\n{name} ({count:.0f} texts a sample, {len(lists)} samples): seconds a sample, best of {args.repeat}")
        for size in sizes:
            ratio = seconds[(name, last)] / seconds[(name, size)]
            print(f"  batch {size:>3}: {seconds[(name, size)]:.2f} s   batch {last} takes {ratio:.2f} of it")


if __name__ == "__main__":
    main()
