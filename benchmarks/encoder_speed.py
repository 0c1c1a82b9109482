"""Seconds to embed texts with the offline MiniLM, by how texts are batched, and whether the vectors agree.

Evidence selection embeds every sentence of a sample's contexts before the judge reads a
window (``ContextIndex.build``); the retrieval judges embed whole passages. Both go through
``MiniLMEncoder.encode``. Timed here on ``rag_answer_speed.py``'s realistic RAG samples
(five ~3,000-character passages each): their sentences, the same contexts cut into
900-character passages, and 1,000 short queries (3-12 words, seeded). Batchings:
``64``, ``8``, ``1``: that many texts a pass, sorted by length, each batch padded to its
longest (``64`` was the default before issue 32's eighth round); ``t256``, ``t512``:
texts sorted by length go together while the batch's rows times its longest text fit in
that many tokens (``MiniLMEncoder.batch_tokens``; 256 is the default). Each is timed as the
best of ``--repeat`` runs, and its vectors are compared with one text a pass: a text's
vector must not depend on the texts encoded beside it.

    python benchmarks/encoder_speed.py                      # the old default (64) against the new (t256)
    python benchmarks/encoder_speed.py --batchings 64,8,1,t512,t256 --samples 3
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _lib.rag_samples import samples
from _lib.timing import FixedCount, machine_line

from assay.grounding._evidence import sentence_spans
from assay.models._encoders import MiniLMEncoder


def _encoder(batching: str) -> MiniLMEncoder:
    """``N``: N texts a pass, sorted by length (the old batching); ``tN``: up to N padded tokens a pass."""
    if batching.startswith("t"):
        return MiniLMEncoder(batch_tokens=int(batching[1:]))
    size = int(batching)
    return FixedCount(size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batchings", default="64,1,t256", help="N texts or tN tokens a pass; the last is compared")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = args.batchings.split(",")
    items = samples(args.samples, 11)
    rng = random.Random(7)
    words = [w.strip(".,") for it in items for w in it["question"].split()] or ["river"]
    workloads = {
        "sentences": [[c[s:e] for c in it["contexts"] for s, e in sentence_spans(c)] for it in items],
        "passages": [[c[i : i + 900] for c in it["contexts"] for i in range(0, len(c), 900)] for it in items],
        "queries": [[" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) for _ in range(1000)]],
    }
    print(machine_line())
    alone = MiniLMEncoder(batch_tokens=1)
    reference = {name: [alone.encode(texts) for texts in lists] for name, lists in workloads.items()}
    seconds: dict[tuple[str, str], float] = {}
    for size in sizes:
        encoder = _encoder(size)
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
                        print(f"  {size}, {name} of sample {k}: vectors differ from one text a pass by {diff:.2e}")
            seconds[(name, size)] = sum(best) / len(best)
    last = sizes[-1]
    for name, lists in workloads.items():
        count = sum(map(len, lists)) / len(lists)
        print(f"\n{name} ({count:.0f} texts a sample, {len(lists)} samples): seconds a sample, best of {args.repeat}")
        for size in sizes:
            ratio = seconds[(name, last)] / seconds[(name, size)]
            print(f"  {size:>4}: {seconds[(name, size)]:.2f} s   {last} takes {ratio:.2f} of it")


if __name__ == "__main__":
    main()
