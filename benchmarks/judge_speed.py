"""Seconds per item for the offline judge, the shipped configuration beside the old one, on the same items.

Issue 32's four workloads, each timed on the default local judge (model loaded and warm):

- ``rag``: a realistic RAG answer (five ~3,000-character passages, 6-8 answer sentences;
  ``rag_answer_speed.py``'s samples), ``Faithfulness()``; target 15 s;
- ``summary``: a SummEdits dev summary of about 550 characters against its source of
  about 1,700 (the items closest to those sizes), ``Faithfulness()``; target 10 s;
- ``agent``: a tau-bench airline trajectory, ``AgentGoalAccuracy(reference=True)`` (goal
  atoms); target 30 s;
- ``demo``: ``assay run examples/rag.jsonl`` as ``make demo`` runs it (no cache, a new
  store), timed whole, process start and model load included; target 30 s.

Configurations, each in its own child process (the llama.cpp build is chosen once per
process):

- ``old``: llama-cpp-python's decoding loop, the default (non-AMX) build and the weights
  as shipped (Q4_K_M): the judge as it shipped before issue 32;
- ``loop``: our greedy loop with drafts and the AMX build where this machine grants it,
  the weights as shipped (the judge after issue 32's first round);
- ``q8``: the same, and on the AMX build the weights' Q8_0 copy (``ASSAY_LOCAL_LAYOUT``)
  multiplied block by block (``GGML_AMX_Q8_0_GROUPED=0``), one call at a time (the second
  round);
- ``batched``: the same, with the greedy calls a metric makes together decoded as one
  batch (``ASSAY_LOCAL_SEQUENCES``; the third round);
- ``grouped``: the same, with the AMX kernel that scales each group of 256 weights once
  (the fourth round), attention's products left to llama.cpp's F16 kernel
  (``GGML_AMX_ATTN=0``);
- ``tiles``: the same, with attention's two products as AMX BF16 tile products (the
  fifth round), verdict calls read one at a time (``ASSAY_LOCAL_BATCH_CHOICES=0``);
- ``sixth``: the same, with the verdict calls on one evidence window read in one batch,
  one sequence each (the sixth round);
- ``seventh``: the same, with whole contexts read in chunks of up to 3,000 characters, the
  evidence window's size, instead of 2,000, and the instructions' cells loaded from disk
  where an earlier process saved them (the seventh round). Every earlier configuration
  builds faithfulness with 2,000-character chunks (``JUDGE_SPEED_CHUNK_CHARS``, this
  benchmark's own; the demo gets ``--set faithfulness.chunk_chars=2000``) and keeps no
  instruction cells on disk (``ASSAY_LOCAL_INSTRUCTION_CACHE=off``: it still reads them
  alone, which costs what reading them with the rest of the first prompt did).
- ``eighth``: the same, with the evidence index's MiniLM batching sentences by tokens (up
  to 256 padded tokens a pass) instead of 64 sentences padded to the longest (the eighth
  round; the vectors are bitwise the same). Every earlier configuration encodes 64 a pass
  (``JUDGE_SPEED_ENCODER_BATCH``, this benchmark's own, with ``_lib/timing.py``'s
  ``FixedCount``; not in the demo, whose contexts are a few sentences).
- ``ninth``: the same, with the weights' blocks laid out in pairs and multiplied 64 deep
  on the AMX tiles instead of 32, the columns split between the threads and the rows
  taken in chunks that stay in L2 (the ninth round; the logits are bitwise the same).
  Every earlier configuration sets ``GGML_AMX_Q8_0_PAIRED=0``. The pairs are laid out as
  the thirteenth round left them (no compensation, a group's scales once), which has no
  switch: that round was measured against the previous build itself.
- ``tenth``: the same, with the paired kernel asking for the next pair of
  weights while it multiplies one, where they come from memory (the logits are bitwise
  the same), and the greedy loop putting the 256 best tokens to the grammar when it
  refuses the best one, before the whole vocabulary (the same token; the tenth round).
  ``GGML_AMX_Q8_0_PREFETCH=0`` also turns off the one-row kernel's prefetch (the
  thirteenth round). Every earlier configuration sets ``GGML_AMX_Q8_0_PREFETCH=0`` and
  ``JUDGE_SPEED_GRAMMAR_CANDIDATES=0`` (this benchmark's own: the whole vocabulary at
  once, as before; not in the demo, which runs the ``assay`` command).
- ``new``: the shipped judge: the same, with each draft cut before its first token the
  grammar refuses, and a call ending as soon as its grammar allows the end, without a
  pass to choose the end token (the twelfth round). Every earlier configuration sets
  ``JUDGE_SPEED_GRAMMAR_DRAFTS=0`` (this benchmark's own; not in the demo).
- ``fitted``: ``new`` with each pass checking only the draft tokens that pay on this
  build (``ASSAY_LOCAL_PASS_COSTS=build``: the build's pass costs and each call's accepted
  drafts); measured, not yet the default.
- ``avx2-old``, ``avx2-tenth``, ``avx2`` and ``avx2-fitted``: ``old``, ``tenth``, ``new`` and ``fitted`` on llama.cpp
  built with the flags ``make install`` uses on a CPU without AVX-512 (AVX2, FMA, F16C;
  no AVX-512, no AMX), through ``LLAMA_CPP_LIB_PATH``, so the judge runs the weights as
  shipped (Q4_K_M) on the kernels an AVX2 machine runs. Built once into ``<cache dir>/llama-avx2`` by
  ``scripts/build-llama.sh``. On an AVX-512 machine this times those kernels on its
  cores and memory, not an AVX2 machine: a first-generation EPYC splits each 256-bit
  operation in two and reads memory more slowly. The flags come from the Makefile
  (``make llama-cmake-args CPUINFO=/dev/null``).

The instruction files are the user's (``<cache dir>/instructions``): ``new``'s first run
saves them if no earlier run did, and is the slower for it; the workloads other than the
demo warm the judge first, so only the demo's figure depends on them.

Every configuration but ``tiles``, ``sixth`` to ``tenth`` and ``new`` sets ``GGML_AMX_ATTN=0``,
and every one but ``sixth`` to ``tenth`` and ``new`` reads the verdict calls one at a time
(``loop`` and ``q8`` decode one call at a time anyway). The fifth round's vectorized softmax is in every
configuration on the AMX build (it computes the same values, bitwise).

``q8`` and ``batched`` load today's copy (one scale per 256 weights) with the kernel of
their round, which scales every block of 32: their speed is their round's, their verdicts
are not exactly (their round's copy had a scale per block).

Per workload it prints seconds per item for each, the ratio of the last to each other,
the target, and, for each other configuration, whether every item got the same score and
statements as in the last (a speed change must not move a verdict; where one moved, the
items are named). The CPU model, its vector extensions
and the load average are printed with the figures; run it alone.

    python benchmarks/judge_speed.py                        # 3 RAG answers, 3 summaries, 2 trajectories, the demo
    python benchmarks/judge_speed.py --rag 5 --summaries 5 --agents 0 --no-demo --configs batched,new
    python benchmarks/judge_speed.py --rag 2 --summaries 2 --agents 1 --configs ninth,new --repeat 3
    python benchmarks/judge_speed.py --rag 3 --summaries 3 --agents 1 --configs avx2-old,avx2
    python benchmarks/judge_speed.py --rag 3 --summaries 3 --agents 1 --configs new,fitted,avx2,avx2-fitted
    python benchmarks/judge_speed.py --rag 3 --summaries 3 --agents 1 --configs tenth,new,avx2-tenth,avx2 --repeat 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _lib.timing import machine_line

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "shared" / "data"
TARGETS = {"rag": 15.0, "summary": 10.0, "agent": 30.0, "demo": 30.0}
CHUNK = "JUDGE_SPEED_CHUNK_CHARS"  # not the judge's: this benchmark's children build faithfulness with it
ENCODER_BATCH = "JUDGE_SPEED_ENCODER_BATCH"  # texts a MiniLM pass in evidence selection (not the demo's)
GRAMMAR_CANDIDATES = "JUDGE_SPEED_GRAMMAR_CANDIDATES"  # tokens the grammar checks before the vocabulary (not the demo)
GRAMMAR_DRAFTS = "JUDGE_SPEED_GRAMMAR_DRAFTS"  # 0: drafts past the grammar, and a pass for the end token (not the demo)
BEFORE_TWELFTH = {GRAMMAR_DRAFTS: "0"}  # what every round before the twelfth ran with
BEFORE_TENTH = {"GGML_AMX_Q8_0_PREFETCH": "0", GRAMMAR_CANDIDATES: "0", **BEFORE_TWELFTH}  # and before the tenth
BEFORE_NINTH = {"GGML_AMX_Q8_0_PAIRED": "0", **BEFORE_TENTH}  # and every round before the ninth
BEFORE_EIGHTH = {ENCODER_BATCH: "64", **BEFORE_NINTH}  # and every round before the eighth
CONFIGS = {  # the environment each configuration's processes run in
    "old": {
        **BEFORE_EIGHTH,
        "ASSAY_AMX": "off",
        "ASSAY_LOCAL_DECODE_LOOP": "llama_cpp",
        "ASSAY_LOCAL_LAYOUT": "shipped",
        "ASSAY_LOCAL_BATCH_CHOICES": "0",
        CHUNK: "2000",
        "ASSAY_LOCAL_INSTRUCTION_CACHE": "off",
    },
    "loop": {
        **BEFORE_EIGHTH,
        CHUNK: "2000",
        "ASSAY_LOCAL_INSTRUCTION_CACHE": "off",
        "ASSAY_LOCAL_DECODE_LOOP": "assay",
        "ASSAY_LOCAL_LAYOUT": "shipped",
        "ASSAY_LOCAL_SEQUENCES": "1",
        "GGML_AMX_ATTN": "0",
    },
    "q8": {
        **BEFORE_EIGHTH,
        CHUNK: "2000",
        "ASSAY_LOCAL_INSTRUCTION_CACHE": "off",
        "ASSAY_LOCAL_DECODE_LOOP": "assay",
        "ASSAY_LOCAL_LAYOUT": "auto",
        "ASSAY_LOCAL_SEQUENCES": "1",
        "GGML_AMX_Q8_0_GROUPED": "0",
        "GGML_AMX_ATTN": "0",
    },
    "batched": {
        **BEFORE_EIGHTH,
        CHUNK: "2000",
        "ASSAY_LOCAL_INSTRUCTION_CACHE": "off",
        "ASSAY_LOCAL_DECODE_LOOP": "assay",
        "ASSAY_LOCAL_LAYOUT": "auto",
        "ASSAY_LOCAL_SEQUENCES": "8",
        "ASSAY_LOCAL_BATCH_CHOICES": "0",
        "GGML_AMX_Q8_0_GROUPED": "0",
        "GGML_AMX_ATTN": "0",
    },
    "grouped": {
        **BEFORE_EIGHTH,
        CHUNK: "2000",
        "ASSAY_LOCAL_INSTRUCTION_CACHE": "off",
        "ASSAY_LOCAL_DECODE_LOOP": "assay",
        "ASSAY_LOCAL_LAYOUT": "auto",
        "ASSAY_LOCAL_SEQUENCES": "8",
        "ASSAY_LOCAL_BATCH_CHOICES": "0",
        "GGML_AMX_ATTN": "0",
    },
    "tiles": {
        **BEFORE_EIGHTH,
        CHUNK: "2000",
        "ASSAY_LOCAL_INSTRUCTION_CACHE": "off",
        "ASSAY_LOCAL_DECODE_LOOP": "assay",
        "ASSAY_LOCAL_LAYOUT": "auto",
        "ASSAY_LOCAL_SEQUENCES": "8",
        "ASSAY_LOCAL_BATCH_CHOICES": "0",
    },
    "sixth": {
        **BEFORE_EIGHTH,
        "ASSAY_LOCAL_DECODE_LOOP": "assay",
        "ASSAY_LOCAL_LAYOUT": "auto",
        "ASSAY_LOCAL_SEQUENCES": "8",
        CHUNK: "2000",
        "ASSAY_LOCAL_INSTRUCTION_CACHE": "off",
    },
    "seventh": {
        **BEFORE_EIGHTH,
        "ASSAY_LOCAL_DECODE_LOOP": "assay",
        "ASSAY_LOCAL_LAYOUT": "auto",
        "ASSAY_LOCAL_SEQUENCES": "8",
    },
    "eighth": {
        **BEFORE_NINTH,
        "ASSAY_LOCAL_DECODE_LOOP": "assay",
        "ASSAY_LOCAL_LAYOUT": "auto",
        "ASSAY_LOCAL_SEQUENCES": "8",
    },
    "ninth": {
        **BEFORE_TENTH,
        "ASSAY_LOCAL_DECODE_LOOP": "assay",
        "ASSAY_LOCAL_LAYOUT": "auto",
        "ASSAY_LOCAL_SEQUENCES": "8",
    },
    "new": {"ASSAY_LOCAL_DECODE_LOOP": "assay", "ASSAY_LOCAL_LAYOUT": "auto", "ASSAY_LOCAL_SEQUENCES": "8"},
}
CONFIGS["tenth"] = {**CONFIGS["new"], **BEFORE_TWELFTH}
CONFIGS["fitted"] = {**CONFIGS["new"], "ASSAY_LOCAL_PASS_COSTS": "build"}  # measured, not yet the default
AVX2_CONFIGS = {  # on llama.cpp built for AVX2 only (LLAMA_CPP_LIB_PATH): no AMX, the weights as shipped
    "avx2-old": CONFIGS["old"],
    "avx2-tenth": CONFIGS["tenth"],
    "avx2": CONFIGS["new"],
    "avx2-fitted": CONFIGS["fitted"],
}
CONFIGS.update(AVX2_CONFIGS)


def avx2_library() -> str:
    """llama.cpp's libraries with AVX2 kernels only, built as an AVX2 machine's ``make install`` builds them.

    Built once (about 5 minutes on two cores) into the user's cache, beside the AMX build.
    """
    import hashlib
    from importlib.metadata import version

    llama = version("llama-cpp-python")
    env = {k: v for k, v in os.environ.items() if k != "CMAKE_ARGS"}  # the Makefile's, as on a CPU without AVX-512
    asked = ["make", "-s", "-C", str(HERE.parent), "llama-cmake-args", "CPUINFO=/dev/null"]
    flags = subprocess.run(asked, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert "-DGGML_AVX512=OFF" in flags, flags
    key = hashlib.sha256(f"{llama} {flags}".encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "assay" / "llama-avx2" / key
    if not (cache / "libllama.so").exists():
        print(f"building llama.cpp {llama} for AVX2 only into {cache} (about 5 minutes, once)", flush=True)
        script = HERE.parent / "scripts" / "build-llama.sh"
        subprocess.run([str(script), sys.executable, llama, str(cache), flags], check=True)
    return str(cache)


def environment(config: str) -> dict[str, str]:
    """The environment ``config``'s processes run in."""
    env = {**os.environ, **CONFIGS[config]}
    if config in AVX2_CONFIGS:
        env["LLAMA_CPP_LIB_PATH"] = avx2_library()
    return env


def summaries(n: int) -> list[dict[str, Any]]:
    """SummEdits dev items closest to a 550-character summary of a 1,700-character source (none read for 0)."""
    if n <= 0:
        return []
    rows = [json.loads(line) for line in (DATA / "grounding" / "summedits_dev.jsonl").open()]
    rows = [r for r in rows if 350 <= len(r["claim"]) <= 750 and 1200 <= len(r["context"]) <= 2200]
    rows.sort(key=lambda r: (abs(len(r["claim"]) - 550) + abs(len(r["context"]) - 1700), r["id"]))
    return rows[:n]


def fingerprint(score: Any) -> dict[str, Any]:
    value = score.value
    return {
        "value": None if value != value else round(float(value), 6),
        "statements": [v.subject for v in score.verdicts],
        "verdicts": [v.value for v in score.verdicts],
    }


async def child(config: str, args: argparse.Namespace) -> dict[str, Any]:
    from assay import Sample
    from assay.metrics import AgentGoalAccuracy
    from assay.models import LocalJudge

    judge = LocalJudge()  # the build and the decoding loop come from CONFIGS' environment
    judge.load()
    assert judge.library is not None
    out: dict[str, Any] = {
        "library": judge.library.library,
        "library_reason": judge.library.reason,
        "weights": judge.weights,
        "runs": {},
    }
    from assay.grounding import _evidence
    from assay.metrics._registry import build_metric

    chunk = os.environ.get(CHUNK)
    metric = build_metric("faithfulness", {} if chunk is None else {"chunk_chars": chunk})
    if os.environ.get(GRAMMAR_CANDIDATES):  # 0: the whole vocabulary right after a refused best token
        import assay.models._decode

        assay.models._decode.GRAMMAR_CANDIDATES = int(os.environ[GRAMMAR_CANDIDATES])
    if os.environ.get(GRAMMAR_DRAFTS) == "0":  # drafts as proposed, and a pass to choose the end token
        import assay.models._decode

        assay.models._decode.GRAMMAR_DRAFTS = False
    if os.environ.get(ENCODER_BATCH):  # the encoder as it was: that many texts a pass, whatever their length
        from _lib.timing import FixedCount

        old_encoder = FixedCount(int(os.environ[ENCODER_BATCH]))
        _evidence._shared_minilm = lambda: old_encoder  # not the shared MiniLM: no vectors kept, as then
    warm = Sample(
        id="warm", answer="The tower is tall. It was built in 1889.", contexts=("The tower was built in 1889.",)
    )
    await metric.score(warm, judge)
    work: dict[str, list[tuple[str, Any, Any]]] = {"rag": [], "summary": [], "agent": []}
    if args.rag:
        from _lib.rag_samples import samples

        for item in samples(args.rag, 11):
            sample = Sample(
                id=item["id"], question=item["question"], answer=item["answer"], contexts=tuple(item["contexts"])
            )
            work["rag"].append((item["id"], metric, sample))
    for row in summaries(args.summaries):
        sample = Sample(
            id=row["id"], question="Summarize the document.", answer=row["claim"], contexts=(row["context"],)
        )
        work["summary"].append((row["id"], metric, sample))
    if args.agents:
        from _lib.goals import load

        goal = AgentGoalAccuracy(reference=True)
        for row in load(args.agents, 7):
            work["agent"].append((row.id, goal, row.sample))
    for name, items in work.items():
        runs = []
        for item_id, m, sample in items:
            started = time.perf_counter()
            score = await m.score(sample, judge)
            seconds = time.perf_counter() - started
            runs.append({"id": item_id, "seconds": seconds, "load": os.getloadavg()[0], **fingerprint(score)})
            print(f"  {config} {name} {item_id}: {seconds:.1f} s", file=sys.stderr, flush=True)
        out["runs"][name] = runs
    out["decode_stats"] = judge.decode_stats
    return out


def demo(config: str) -> dict[str, Any]:
    assay = Path(sys.executable).parent / "assay"
    with tempfile.TemporaryDirectory() as tmp:
        env = environment(config)
        command = [
            str(assay), "run", str(HERE.parent / "examples" / "rag.jsonl"), "--out", f"{tmp}/out.jsonl",
            "--no-cache", "--store", f"{tmp}/runs.sqlite", "--progress", "none",
        ]  # fmt: skip
        if CHUNK in CONFIGS[config]:
            command += ["--set", f"faithfulness.chunk_chars={CONFIGS[config][CHUNK]}"]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        seconds = time.perf_counter() - started
        records = (
            [json.loads(line) for line in Path(f"{tmp}/out.jsonl").read_text().splitlines()]
            if done.returncode in (0, 2, 3)
            else []
        )
    values = {r["id"]: r["scores"]["faithfulness"]["value"] for r in records if "scores" in r}
    return {"seconds": seconds, "exit": done.returncode, "values": values, "stderr": done.stderr[-300:]}


def _spread(mean: float, values: list[float]) -> str:
    """``mean`` and, over several runs, the range of the runs' own figures."""
    return f"{mean:.1f}" if len(values) < 2 else f"{mean:.1f} ({min(values):.1f}-{max(values):.1f})"


def table(names: list[str], runs: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    """One markdown table: seconds per item for ``names``, the last compared with each other."""
    last, others = names[-1], names[:-1]
    keys = ("value", "statements", "verdicts")
    print()
    print(
        "| workload | items | "
        + " | ".join(f"{c} s/item" for c in names)
        + "".join(f" | {last}/{c}" for c in others)
        + " | target | "
        + " | ".join(f"same verdicts as {c}" for c in others)
        + " |"
    )
    print("|---|---|" + "---|" * (len(names) + 2 * len(others) + 1))
    for work in ("rag", "summary", "agent"):
        per = {c: [r["runs"].get(work, []) for r in runs[c]] for c in names}
        if not all(all(items) for items in per.values()):
            continue
        run_means = {c: [statistics.mean(x["seconds"] for x in items) for items in per[c]] for c in names}
        means = {c: statistics.mean(run_means[c]) for c in names}
        ratios = "".join(f" | {means[last] / means[c]:.2f}" for c in others)
        same = []
        for c in others:
            moved = sorted(
                {
                    a["id"]
                    for items in per[c]
                    for a, b in zip(items, per[last][0], strict=True)
                    if any(a[k] != b[k] for k in keys)
                }
            )
            same.append("all" if not moved else f"moved: {', '.join(moved)}")
        loads = max(x["load"] for c in names for items in per[c] for x in items)
        met = "met" if means[last] <= TARGETS[work] else "missed"
        cells = " | ".join(_spread(means[c], run_means[c]) for c in names)
        print(
            f"| {work} | {len(per[last][0])} | {cells}{ratios} | {TARGETS[work]:.0f} s ({met}) | "
            + " | ".join(same)
            + f" (max load {loads:.1f}) |"
        )
    if not args.no_demo and all(all("demo" in r for r in runs[c]) for c in names):
        d = {c: [r["demo"] for r in runs[c]] for c in names}
        secs = {c: [x["seconds"] for x in d[c]] for c in names}
        means = {c: statistics.mean(secs[c]) for c in names}
        ratios = "".join(f" | {means[last] / means[c]:.2f}" for c in others)
        same = " | ".join("all" if all(x["values"] == d[last][0]["values"] for x in d[c]) else "moved" for c in others)
        exits = {c: sorted({x["exit"] for x in d[c]}) for c in names}
        cells = " | ".join(f"{_spread(means[c], secs[c])} (exit {','.join(map(str, exits[c]))})" for c in names)
        met = "met" if means[last] <= TARGETS["demo"] else "missed"
        print(f"| demo (whole command) | 12 | {cells}{ratios} | 30 s ({met}) | {same} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rag", type=int, default=3)
    parser.add_argument("--summaries", type=int, default=3)
    parser.add_argument("--agents", type=int, default=2)
    parser.add_argument("--no-demo", action="store_true")
    parser.add_argument(
        "--configs",
        default="old,loop,q8,batched,grouped,tiles,sixth,seventh,eighth,ninth,new",
        help="the last is compared with each other",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of the configurations, alternated (this VM's speed drifts)"
    )
    parser.add_argument("--child", choices=list(CONFIGS), help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(child(args.child, args))))
        return
    print(f"machine: {machine_line()} (at start)")
    configs = list(dict.fromkeys(args.configs.split(",")))
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in configs}
    failed: list[str] = []
    for _ in range(args.repeat):  # alternated, so a slow spell of the machine falls on every configuration
        for config in configs:
            env = environment(config)
            passed = ["--rag", str(args.rag), "--summaries", str(args.summaries), "--agents", str(args.agents)]
            done = subprocess.run(
                [sys.executable, __file__, "--child", config, *passed],
                stdout=subprocess.PIPE,
                env=env,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                print(f"{config}: the child failed ({done.returncode})")
                failed.append(config)
                continue
            result = json.loads(done.stdout.strip().splitlines()[-1])
            if not args.no_demo:
                result["demo"] = demo(config)
            runs[config].append(result)
    print()
    for config, rs in runs.items():
        for r in rs:
            print(
                f"{config}: llama.cpp build {r['library']} ({r['library_reason']}); weights {r.get('weights')}; "
                f"decoding {r.get('decode_stats')}"
            )
    names = [c for c in configs if runs[c]]
    print(
        f"\n{args.repeat} run(s) of each, alternated; seconds per item: the mean over every run, "
        "and the range of the runs' own means"
    )
    for group in ([c for c in names if c not in AVX2_CONFIGS], [c for c in names if c in AVX2_CONFIGS]):
        if group:  # the AVX2-only build's configurations are compared with each other, in a table of their own
            table(group, runs, args)
    print(f"\nload average at end {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    if failed:  # a table without a configuration must not pass for a comparison
        sys.exit(f"failed runs: {', '.join(failed)} (their errors are above); the tables leave them out")


if __name__ == "__main__":
    main()
