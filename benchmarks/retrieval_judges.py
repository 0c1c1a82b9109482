"""Agreement of the retrieval judges with labels built from HaluEval-QA passages.

For each of N questions, the expected text is the question's own context passage; the
retrieved candidates are variants of that passage (label 1: the passage verbatim, its
first half, its sentences in reverse order, its longest sentence alone) and passages of
other questions (label 0: two random ones and the lexically closest one, a hard negative).
The variants are mechanical edits, not human paraphrases: read the figures as
"recognises the same passage after chunking or reordering", not as paraphrase detection.

    python benchmarks/retrieval_judges.py [--n 100] [--judge-llm SPEC]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import time
from collections import defaultdict
from pathlib import Path

from assay.retrieval import JudgePair, LLMJudge, RelevanceJudge, SemanticJudge, TokenOverlapJudge

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "rag" / "halueval_qa.jsonl"
_SENT = re.compile(r"(?<=[.!?])(?=\S)|(?<=[.!?])\s+")
_WORD = re.compile(r"\w+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text) if s.strip()]


def build(n: int, seed: int) -> list[tuple[JudgePair, int, str]]:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    seen: dict[str, dict[str, str]] = {}
    for row in rows:
        if row["question"] not in seen and row["contexts"] and len(row["contexts"][0]) > 80:
            seen[row["question"]] = {"q": row["question"], "p": row["contexts"][0]}
    items = list(seen.values())
    rnd = random.Random(seed)
    rnd.shuffle(items)
    chosen = items[:n]
    tokens = [set(w.lower() for w in _WORD.findall(it["p"])) for it in items]
    cases: list[tuple[JudgePair, int, str]] = []
    for i, it in enumerate(chosen):
        q, p = it["q"], it["p"]
        words = p.split()
        sents = sentences(p)
        positives = {
            "verbatim": p,
            "first_half": " ".join(words[: max(len(words) // 2, 5)]),
            "reversed_sentences": " ".join(reversed(sents)) if len(sents) > 1 else None,
            "longest_sentence": max(sents, key=len) if len(sents) > 1 else None,
        }
        for kind, text in positives.items():
            if text:
                cases.append((JudgePair(q, p, text), 1, kind))
        others = [j for j in range(len(items)) if j != i]
        for j in rnd.sample(others, 2):
            cases.append((JudgePair(q, p, items[j]["p"]), 0, "random_other"))
        hard = max(others, key=lambda j: len(tokens[i] & tokens[j]) / (len(tokens[j]) + 1))
        cases.append((JudgePair(q, p, items[hard]["p"]), 0, "closest_other"))
    return cases


def report(name: str, judge: RelevanceJudge, cases: list[tuple[JudgePair, int, str]]) -> None:
    start = time.perf_counter()
    decisions = asyncio.run(judge.judge([c[0] for c in cases]))
    elapsed = time.perf_counter() - start
    tp = fp = fn = tn = unjudged = 0
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (_, label, kind), d in zip(cases, decisions, strict=True):
        if d.matched is None:
            unjudged += 1
            continue
        pred = int(d.matched)
        by_kind[kind][0] += int(pred == label)
        by_kind[kind][1] += 1
        tp += pred and label
        fp += pred and not label
        fn += (not pred) and label
        tn += (not pred) and not label
    n = tp + fp + fn + tn
    prec = tp / (tp + fp) if tp + fp else float("nan")
    rec = tp / (tp + fn) if tp + fn else float("nan")
    print(
        f"{name:<28} accuracy {(tp + tn) / n:.3f}  precision {prec:.3f}  recall {rec:.3f}  "
        f"(n={n}, unjudged={unjudged}, {elapsed:.1f}s)"
    )
    print("    " + "  ".join(f"{k} {c}/{t}" for k, (c, t) in sorted(by_kind.items())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100, help="number of questions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--judge-llm", default=None, help="judge spec for assay.models.get_judge")
    args = parser.parse_args()
    cases = build(args.n, args.seed)
    print(f"{len(cases)} labelled pairs from {args.n} HaluEval-QA questions ({sum(c[1] for c in cases)} positive)")
    report("token (default)", TokenOverlapJudge(), cases)
    report("token (threshold 0.3)", TokenOverlapJudge(threshold=0.3), cases)
    report("semantic (threshold 0.5, default)", SemanticJudge(), cases)
    report("semantic (threshold 0.7)", SemanticJudge(threshold=0.7), cases)
    if args.judge_llm:
        from assay.models import get_judge

        report(f"llm ({args.judge_llm})", LLMJudge(get_judge(args.judge_llm)), cases)


if __name__ == "__main__":
    main()
