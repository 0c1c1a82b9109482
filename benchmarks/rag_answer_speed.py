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
import json
import random
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from faithfulness_answers import DATA, _cut, _pronoun, _sentences

TARGET_S = 20.0


def samples(n: int, seed: int) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (DATA / "grounding" / "wice_dev.jsonl").read_text().splitlines()]
    rng = random.Random(seed)
    rng.shuffle(rows)
    out = []
    for k in range(n):
        chosen = rows[k * 8 : k * 8 + 8]
        passages = []
        for r in chosen[:5]:
            oracle = r["oracle_chunks"] if isinstance(r["oracle_chunks"], list) else json.loads(r["oracle_chunks"])
            passages.append(_cut(r["context"], oracle))
        claims = [r for r in chosen[: 6 + k % 3]]
        sentences = []
        for i, r in enumerate(claims):
            text = r["claim"].strip()
            words = text.split()
            title_words = [w for w in r["claim_title"].split() if w[:1].isupper()]
            if i % 3 == 1 and words and words[0] in title_words and len(words) > 1:
                text = f"{_pronoun(r['claim_title'], r.get('claim_context') or '')} {' '.join(words[1:])}"
            if i == 4:
                text = "Reportedly, " + text[0].lower() + text[1:]
            sentences.append(text)
        copied = sum(1 for s in sentences for p in passages if s in _sentences(p))
        out.append(
            {
                "id": f"rag-speed-{k}",
                "question": "What do the sources say?",
                "answer": " ".join(sentences),
                "contexts": passages,
                "copied": copied,
                "sentences": len(sentences),
            }
        )
    return out


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
