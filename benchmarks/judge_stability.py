"""How much does the judge wobble? Repeat the local judge and measure flip rates and gate flakiness.

Samples (fixed, seeded) from ../shared/data/:

- BEGIN dev (grounding/begin_dev.jsonl): a dialogue response (one claim) vs its knowledge
  snippet; balanced over labels.
- HaluEval QA (rag/halueval_qa.jsonl): answers of two or more sentences, judged with
  ``Faithfulness(decomposer="sentences")`` (one statement per sentence).

Two conditions, both through ``assay.evaluate(..., repeats=R)`` (the repeat index is mixed
into the local model's seed), with generated verdicts (``StatementVerifier(method="generate")``,
a grammar-constrained ``{verdict, reason}``):

1. temperature > 0 (default 0.7), R repeats (default 4): real sampling noise;
2. temperature 0 with different seeds (default 2 repeats on the first 6 samples): greedy
   decoding should not flip at all; any flip here would be nondeterminism in the backend.

The local judge's default verdict path (``method="threshold"``: P(1) from the logits,
thresholded) involves no sampling, so it cannot flip between repeats; it is not run here.

Prints per-statement flip rates, the per-sample score spread, the run mean with a seeded
bootstrap CI, the share of unstable samples, the flake probability of a 0.8 gate
measured from the repeats, and the binomial recommendation (statements needed for a 0.8
gate to be stable at 1%) with the measured flip rate.

    python benchmarks/judge_stability.py                    # ~10-15 min on 2 cores
    python benchmarks/judge_stability.py --begin 8 --halueval 2 --repeats 3   # quick look
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import pysbd

import assay
from assay import Faithfulness, Sample
from assay.analysis import (
    GatePolicy,
    RepeatReport,
    analyze_repeats,
    binomial_pass_probability,
    evaluate_gate,
    recommend_statements,
)
from assay.grounding._verify import StatementVerifier
from assay.models import get_judge
from assay.models._protocol import GenerateConfig

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def load_samples(n_begin: int, n_halueval: int, seed: int) -> list[Sample]:
    rng = random.Random(seed)
    begin = [json.loads(line) for line in (DATA / "grounding" / "begin_dev.jsonl").open()]
    by_label = {0: [r for r in begin if r["label"] == 0], 1: [r for r in begin if r["label"] == 1]}
    picked = rng.sample(by_label[1], (n_begin + 1) // 2) + rng.sample(by_label[0], n_begin // 2)
    samples = [
        Sample(id=r["id"], answer=r["claim"], contexts=(r["context"],), metadata={"label": r["label"]}) for r in picked
    ]
    seg = pysbd.Segmenter(language="en", clean=False)
    halu = [json.loads(line) for line in (DATA / "rag" / "halueval_qa.jsonl").open()]
    multi = [r for r in halu if len([s for s in seg.segment(r["answer"]) if s.strip()]) >= 2 and len(r["answer"]) < 400]
    for r in rng.sample(multi, min(n_halueval, len(multi))):
        samples.append(
            Sample(
                id=r["id"],
                question=r["question"],
                answer=r["answer"],
                contexts=tuple(r["contexts"]),
                metadata={"label": r["label"]},
            )
        )
    return samples


def run(
    samples: list[Sample], temperature: float, repeats: int, judge: assay.JudgeModel
) -> tuple[RepeatReport, int, float]:
    # The generated-verdict path: the default local path reads P(1) from the logits and thresholds it, which is
    # deterministic whatever the temperature, so it cannot flip between repeats.
    verifier = StatementVerifier(method="generate", config=GenerateConfig(temperature=temperature, max_tokens=160))
    metric = Faithfulness(strategy="per_statement", decomposer="sentences", verifier=verifier)
    started = time.perf_counter()
    done = [0]

    def tick(_: object) -> None:
        done[0] += 1
        if done[0] % 5 == 0 or done[0] == 1:
            print(f"  {done[0]}/{len(samples) * repeats} judged ({time.perf_counter() - started:.0f}s)", flush=True)

    result = assay.evaluate(samples, [metric], judge, repeats=repeats, on_result=tick)
    elapsed = time.perf_counter() - started
    calls = sum(len(s.all_calls) for s in result.scores("faithfulness"))
    report = analyze_repeats([r.to_record() for r in result.results], "faithfulness", seed=0)
    return report, calls, elapsed


def show(title: str, report: RepeatReport, calls: int, elapsed: float, threshold: float) -> None:
    print(f"\n=== {title} ===")
    scored = [s for s in report.samples if s.n_scored]
    print(
        f"samples {len(report.samples)} x repeats {report.n_repeats} = {report.n_records} judgements "
        f"({report.n_unscored} unscored); {calls} judge calls in {elapsed:.0f}s ({elapsed / max(calls, 1):.1f} s/call)"
    )
    print(f"statements matched across repeats: {report.n_statements_compared}")
    print(f"pooled flip rate (minority verdicts / verdicts): {report.flip_rate:.4f}")
    flipped = [(s.id, st) for s in report.samples for st in s.statements if st.flipped]
    print(f"statements that flipped: {len(flipped)} of {report.n_statements_compared}")
    for sid, st in flipped:
        print(f"  {sid}: flip rate {st.flip_rate:.2f} verdicts {list(st.verdicts)}  {st.subject[:90]!r}")
    print(f"unstable samples (any statement flipped): {report.unstable_share:.3f}")
    print(f"repeats whose statement set differs from the modal set: {report.set_change_share:.3f}")
    spreads = [s.max - s.min for s in scored]
    stds = [s.std for s in scored if s.n_scored >= 2]
    print(
        f"score spread per sample: mean std {sum(stds) / max(len(stds), 1):.4f}, "
        f"max std {max(stds, default=0.0):.4f}, max range {max(spreads, default=0.0):.3f}, "
        f"samples with range > 0: {sum(r > 0 for r in spreads)}"
    )
    print(f"run mean {report.mean:.4f}, 95% bootstrap CI [{report.ci[0]:.4f}, {report.ci[1]:.4f}] (seed 0)")
    for per_sample in (False, True):
        gate = evaluate_gate(report, GatePolicy(threshold=threshold, per_sample=per_sample))
        unit = "every sample" if per_sample else "run mean"
        print(
            f"gate {unit} >= {threshold}: observed {'pass' if gate.observed_pass else 'fail'}, "
            f"P(pass) {gate.p_pass:.4f} from {gate.method}, flake {gate.flake_probability:.4f} -> {gate.outcome}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", default="local")
    parser.add_argument("--begin", type=int, default=27, help="BEGIN claims (one statement each)")
    parser.add_argument("--halueval", type=int, default=3, help="multi-sentence HaluEval answers (3 exist)")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--greedy-samples", type=int, default=6, help="samples for the temperature-0 check")
    parser.add_argument("--greedy-repeats", type=int, default=2)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    samples = load_samples(args.begin, args.halueval, args.seed)
    judge = get_judge(args.judge)
    print(f"judge {judge.model_id}; {len(samples)} samples ({args.begin} BEGIN, {len(samples) - args.begin} HaluEval)")
    report, calls, elapsed = run(samples, args.temperature, args.repeats, judge)
    show(
        f"temperature {args.temperature}, {args.repeats} repeats (seed + repeat)",
        report,
        calls,
        elapsed,
        args.threshold,
    )

    eps = report.flip_rate if report.flip_rate == report.flip_rate else 0.05
    print(f"\nrecommendation (binomial model, flip rate {eps:.4f} measured above, target flake 1%):")
    print("  true rate | threshold | statements needed | P(pass) there | outcome")
    for p in (0.95, 0.9, 0.7):
        for row in recommend_statements(p, eps, (args.threshold,)):
            n = row.n_statements
            print(
                f"  {p:9.2f} | {row.threshold:9.2f} | {n if n else '> 200':>17} | {row.p_pass:13.4f} | {row.stability}"
            )
    for n in (1, 3, 5, 10, 20):
        p_pass = binomial_pass_probability(n, 0.95, eps, args.threshold)
        print(f"  n={n:2d}, true rate 0.95: P(pass a {args.threshold} gate) = {p_pass:.4f}")

    if args.greedy_samples and args.greedy_repeats > 1:
        greedy, calls, elapsed = run(samples[: args.greedy_samples], 0.0, args.greedy_repeats, judge)
        show(f"temperature 0, {args.greedy_repeats} seeds", greedy, calls, elapsed, args.threshold)


if __name__ == "__main__":
    main()
