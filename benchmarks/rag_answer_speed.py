"""Seconds for faithfulness of a realistic RAG answer on the local judge: decomposition and verdicts.

The shape the issue names: five retrieved passages of about 3,000 characters (cited
articles of WiCE dev, cut at sentence ends around the cited lines) and an answer of 6 to 8
sentences that paraphrase rather than copy them (WiCE claims: Wikipedia sentences written
from the sources; later sentences about the same subject refer to it by a pronoun, one
is hedged). The answer's claims come from the five passages' rows; one or two more come
from other rows, so some of the answer is unsupported, as in real answers.

For each sample it times ``Faithfulness().score`` (the product's default: anchored
decomposition, then the verifier) with the model loaded and warm, and prints seconds per
sample, judge calls by purpose, statements, sentences judged whole, and the ratio to the
20 s target. Run it on a quiet machine: llama.cpp slows several-fold when another process
shares the cores.

    python benchmarks/rag_answer_speed.py --samples 3
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _lib.rag_samples import samples

TARGET_S = 20.0


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--judge", default="local")
    args = parser.parse_args()

    from assay import Sample
    from assay.metrics import Faithfulness
    from assay.models import get_judge

    judge = get_judge(args.judge)
    metric = Faithfulness()
    warm = Sample(
        id="warm", answer="The tower is tall. It was built in 1889.", contexts=("The tower was built in 1889.",)
    )
    await metric.score(warm, judge)  # load the model and read both prompts' instructions once
    times = []
    for item in samples(args.samples, args.seed):
        sample = Sample(
            id=item["id"], question=item["question"], answer=item["answer"], contexts=tuple(item["contexts"])
        )
        started = time.perf_counter()
        score = await metric.score(sample, judge)
        seconds = time.perf_counter() - started
        times.append(seconds)
        purposes = Counter(c.purpose for c in score.calls)
        seconds_by = Counter()
        tokens_out = Counter()
        for c in score.calls:
            seconds_by[c.purpose] += c.latency_s
            tokens_out[c.purpose] += c.usage.completion_tokens
        whole = sum(
            1 for s in (score.decomposition.sentences if score.decomposition else ()) if s.status == "judged_whole"
        )
        print(
            f"{item['id']}: {seconds:.1f} s · {item['sentences']} answer sentences ({item['copied']} copied) · "
            f"{len(score.verdicts)} statements, {whole} sentences judged whole · score {score.value:.3f} · "
            f"calls {dict(purposes)} · passages {[len(c) for c in item['contexts']]}"
        )
        print("   seconds by purpose:", {k: round(v, 1) for k, v in seconds_by.items()},
              "· tokens generated:", dict(tokens_out))  # fmt: skip
        print("   answer:", re.sub(r"\s+", " ", item["answer"])[:300])
    mean = statistics.mean(times)
    print(f"\nmean {mean:.1f} s/sample over {len(times)} (max {max(times):.1f}); target {TARGET_S:.0f} s: ratio "
          f"{mean / TARGET_S:.2f} ({'PASS' if mean <= TARGET_S else 'MISS'})")  # fmt: skip
    return 0 if mean <= TARGET_S else 1  # a MISS is not a pass


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
