"""The local judge's hidden states at the verdict position, read in the verdict's own forward pass (issue 24).

The verifier reads P(supported) from the logits after ``{"verdict": ``. The same forward
pass computes the residual stream of every layer at that position; this script keeps
them, once per item, so that probes can be fitted and cross-validated offline
(``fit_probe.py``, ``judge_agreement.py --cv``) without running the model again.

How the hidden states are read. llama-cpp-python 0.3.36 exposes two ways:

- ``llama_set_embeddings(ctx, True)`` with pooling NONE, then
  ``llama_get_embeddings_ith(ctx, -1)``: the last layer after the output norm
  (``result_norm``). But llama.cpp then marks *every* token of the batch as an output
  ("embeddings required but some input tokens were not marked as outputs -> overriding"),
  so it computes the vocabulary logits (151,936 of them) for every prompt token: slower,
  and a 300 MB output buffer for a 512-token batch. Only the last token, decoded alone
  with embeddings on, avoids that.
- The graph callback ``cb_eval`` of the context parameters (``ggml_backend_sched_eval_callback``):
  llama.cpp asks it, node by node, whether the caller wants a tensor, computes the graph
  up to that node and hands it over. Every layer's output (``l_out-<i>``) and the final
  norm (``result_norm``) are read there, in the same forward pass, with the same kernels
  (the graph is computed in pieces, not changed). This is what this script uses. The
  callback is fixed when the context is created, so ``HiddenStateJudge.load`` creates the
  model with it; disarmed, it answers "no" to every node (a Python call per node, about
  900 per decode).

``--check K`` compares, on K items, P with the capture armed and disarmed (it must not
change), the callback's ``result_norm`` with the embeddings path, and the seconds of each.

Cache: ``benchmarks/.cache/hidden-<model>-s<seed>/<set>.jsonl`` (one line per item: label,
document group, the verifier's P, veto, flags, detail features, and per judge call its P
and the row of its vectors) and ``<set>-<k>.npy`` (float16, rows x layers x n_embd), one
file per group of items judged together. A cut-off run keeps what it measured.

    python benchmarks/hidden_states.py --sets summedits,begin,wice --n 500,300,150
    python benchmarks/hidden_states.py --check 6
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import numpy as np
from _lib.devsets import contexts_of, load
from _lib.hidden import _CAP, FEATURE_VERSION, NAMES, HiddenStateJudge, cold, extract
from _lib.judging import CACHE

from assay.grounding._verify import StatementVerifier
from assay.models._local import _LOADED, LocalJudge
from assay.models._weights import DEFAULT_MODEL_SHA256


async def check(judge: HiddenStateJudge, k: int, seed: int) -> None:
    """P with and without the capture, the callback's last layer against llama.cpp's embeddings, and seconds."""
    rows = load("summedits", 40, seed)[: k // 2] + load("begin", 40, seed)[: k - k // 2]
    verifier = StatementVerifier(method="threshold", reasons="none")
    await verifier.verify(["Warm-up context."], ["Warm-up statement."], judge)
    results: dict[str, list[tuple[float, np.ndarray | None]]] = {}
    seconds: dict[str, float] = {}
    for mode in ("off", "cb", "embd", "split", "off", "cb"):
        judge.mode = mode
        got: list[tuple[float, np.ndarray | None]] = []
        t = 0.0
        for row in rows:
            name = "summedits" if row["id"].startswith("summedits") else "begin"
            cold(judge)
            judge.records.clear()
            t0 = time.perf_counter()
            await verifier.verify(contexts_of(name, row), [str(row["claim"])], judge)
            t += time.perf_counter() - t0
            got += list(judge.records.values())
        seconds[mode] = seconds.get(mode, 0.0) + t
        results.setdefault(mode, got)
        print(f"  {mode:5s}: {t:6.1f} s for {len(rows)} items ({len(got)} verdict calls), asked {_CAP.asked}")
    base = np.array([p for p, _ in results["off"]])
    for mode in ("cb", "embd", "split"):
        ps = np.array([p for p, _ in results[mode]])
        print(f"  max |P({mode}) - P(off)| = {np.abs(ps - base).max():.6f} over {len(ps)} calls")
    norm_cb = np.stack([v[-1] for _, v in results["cb"] if v is not None])
    for mode in ("embd", "split"):
        other = np.stack([v[-1] for _, v in results[mode] if v is not None])
        cos = (norm_cb * other).sum(1) / np.linalg.norm(norm_cb, axis=1) / np.linalg.norm(other, axis=1)
        print(
            f"  result_norm (callback) vs {mode}: min cosine {cos.min():.6f}, "
            f"max |diff| {np.abs(norm_cb - other).max():.5f}"
        )
    print(
        f"  seconds: off {seconds['off'] / 2:.1f}, cb {seconds['cb'] / 2:.1f} "
        f"({seconds['cb'] / seconds['off'] - 1:+.1%}), embd {seconds['embd']:.1f}, split {seconds['split']:.1f} "
        "(each from a cold cache)"
    )
    if _CAP.errors:
        print(f"  callback errors: {_CAP.errors[:5]}")


async def timing(samples: int, seed: int, rounds: int) -> None:
    """The realistic RAG sample (``rag_speed.py``): today's judge and the capturing one, alternated.

    Two model instances (the capturing one with a larger ``n_ctx`` so it is loaded apart,
    with the graph callback); each keeps its own KV cache and saved prefixes, so both see
    the same sequence of prompts. The order alternates every round, so a change in load
    falls on both.
    """
    from _lib.rag_samples import build

    plain = LocalJudge()
    plain.load()  # before the patched load: no callback on this one
    capture = HiddenStateJudge(mode="cb", n_ctx=plain.n_ctx + 256)
    ways = {
        "shared": StatementVerifier(evidence_chars=3000, whole_chars=2000, shared_evidence=True, reasons="none"),
        "judged": StatementVerifier(evidence_chars=3000, whole_chars=2000, verbatim=False, reasons="none"),
    }
    for judge in (plain, capture):
        await ways["shared"].verify(["Warm-up context."], ["Warm-up statement."], judge)
    totals: dict[tuple[str, str], float] = {}
    built = build(samples, seed)
    for r in range(rounds):
        for i, sample in enumerate(built):
            statements = sample["supported"] + sample["unsupported"]
            order = [("today", plain), ("hidden", capture)]
            if (r + i) % 2:
                order.reverse()
            for way, verifier in ways.items():
                for label, judge in order:
                    started = time.perf_counter()
                    await verifier.verify(sample["passages"], statements, judge)
                    seconds = time.perf_counter() - started
                    totals[(way, label)] = totals.get((way, label), 0.0) + seconds
                    print(f"  round {r} sample {i} {way:6s} {label:6s} {seconds:6.1f} s", flush=True)
    for way in ways:
        a, b = totals[(way, "today")], totals[(way, "hidden")]
        n = rounds * len(built)
        print(f"{way}: today {a / n:.1f} s a sample, with hidden states {b / n:.1f} s ({b / a - 1:+.1%})")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="summedits,begin,wice")
    parser.add_argument("--n", default="500,300,150", help="items per set, in the order of --sets")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--first", default="", help="only the first K items of each set's sample (a prefix: a later run extends it)"
    )
    parser.add_argument("--check", type=int, default=0, help="compare modes on K items instead of extracting")
    parser.add_argument("--timing", type=int, default=0, help="alternate today/capture on N rag_speed samples")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.timing:
        await timing(args.timing, 11, args.rounds)
        return
    judge = HiddenStateJudge(mode="cb")
    if _LOADED:
        raise SystemExit("a model is already loaded without the graph callback")
    if args.check:
        await check(judge, args.check, args.seed)
        return
    folder = CACHE / f"hidden-{judge.model_id.replace(':', '_')}-s{args.seed}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "about.json").write_text(
        json.dumps(
            {"names": list(NAMES), "feature_version": FEATURE_VERSION, "model_sha256": DEFAULT_MODEL_SHA256}, indent=1
        )
    )
    sizes = [int(x) for x in args.n.split(",")]
    firsts = [int(x) for x in args.first.split(",")] if args.first else sizes
    for name, n, first in zip(args.sets.split(","), sizes, firsts, strict=True):
        rows = load(name, n, args.seed)[:first]
        await extract(judge, name, rows, folder)


if __name__ == "__main__":
    asyncio.run(main())
