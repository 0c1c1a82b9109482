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

- ``old``: llama-cpp-python's decoding loop and the default (non-AMX) build: the judge
  as it shipped before issue 32;
- ``new``: the shipped judge: our greedy loop with drafts, the AMX build where this
  machine grants it.

Per workload it prints seconds per item for both, their ratio, the target, and whether
every item got the same score and statements in both (a speed change must not move a
verdict; where one moved, the items are named). The CPU model, its vector extensions
and the load average are printed with the figures; run it alone.

    python benchmarks/judge_speed.py                        # 3 RAG answers, 3 summaries, 2 trajectories, the demo
    python benchmarks/judge_speed.py --rag 5 --summaries 5 --agents 0 --no-demo
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
from judge_limit import machine_line

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "shared" / "data"
TARGETS = {"rag": 15.0, "summary": 10.0, "agent": 30.0, "demo": 30.0}
CONFIGS = {  # the environment each configuration's processes run in
    "old": {"ASSAY_AMX": "off", "ASSAY_LOCAL_DECODE_LOOP": "llama_cpp"},
    "new": {"ASSAY_LOCAL_DECODE_LOOP": "assay"},
}


def summaries(n: int) -> list[dict[str, Any]]:
    """SummEdits dev items closest to a 550-character summary of a 1,700-character source."""
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
    from assay.metrics import AgentGoalAccuracy, Faithfulness
    from assay.models import LocalJudge

    judge = LocalJudge()  # the build and the decoding loop come from CONFIGS' environment
    judge.load()
    assert judge.library is not None
    out: dict[str, Any] = {"library": judge.library.library, "library_reason": judge.library.reason, "runs": {}}
    metric = Faithfulness()
    warm = Sample(
        id="warm", answer="The tower is tall. It was built in 1889.", contexts=("The tower was built in 1889.",)
    )
    await metric.score(warm, judge)
    work: dict[str, list[tuple[str, Any, Any]]] = {"rag": [], "summary": [], "agent": []}
    if args.rag:
        from rag_answer_speed import samples

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
        from goal_accuracy import load

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
        env = {**os.environ, **CONFIGS[config]}
        command = [
            str(assay), "run", str(HERE.parent / "examples" / "rag.jsonl"), "--out", f"{tmp}/out.jsonl",
            "--no-cache", "--store", f"{tmp}/runs.sqlite", "--progress", "none",
        ]  # fmt: skip
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rag", type=int, default=3)
    parser.add_argument("--summaries", type=int, default=3)
    parser.add_argument("--agents", type=int, default=2)
    parser.add_argument("--no-demo", action="store_true")
    parser.add_argument("--configs", default="old,new")
    parser.add_argument("--child", choices=list(CONFIGS), help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(child(args.child, args))))
        return
    print(f"machine: {machine_line()} (at start)")
    results: dict[str, Any] = {}
    for config in args.configs.split(","):
        env = {**os.environ, **CONFIGS[config]}
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
            continue
        results[config] = json.loads(done.stdout.strip().splitlines()[-1])
        if not args.no_demo:
            results[config]["demo"] = demo(config)
    print()
    for config, r in results.items():
        print(f"{config}: llama.cpp build {r['library']} ({r['library_reason']}); decoding {r.get('decode_stats')}")
    names = [c for c in ("old", "new") if c in results]
    print(
        "\n| workload | items | " + " | ".join(f"{c} s/item" for c in names) + " | new/old | target | same verdicts |"
    )
    print("|---|---|" + "---|" * len(names) + "---|---|---|")
    for work in ("rag", "summary", "agent"):
        per = {c: results[c]["runs"].get(work, []) for c in names}
        if not any(per.values()):
            continue
        means = {c: statistics.mean(x["seconds"] for x in per[c]) for c in names if per[c]}
        same = "-"
        if len(names) == 2:
            moved = [
                a["id"]
                for a, b in zip(per["old"], per["new"], strict=True)
                if {k: a[k] for k in ("value", "statements", "verdicts")}
                != {k: b[k] for k in ("value", "statements", "verdicts")}
            ]
            same = "all" if not moved else f"moved: {', '.join(moved)}"
        ratio = f"{means['new'] / means['old']:.2f}" if len(means) == 2 else "-"
        loads = max(x["load"] for c in names for x in per[c])
        met = "met" if means.get("new", 1e9) <= TARGETS[work] else "missed"
        cells = " | ".join(f"{means[c]:.1f}" for c in names)
        print(
            f"| {work} | {len(per[names[0]])} | {cells} | {ratio} | {TARGETS[work]:.0f} s ({met}) "
            f"| {same} (max load {loads:.1f}) |"
        )
    if not args.no_demo and all("demo" in results[c] for c in names):
        d = {c: results[c]["demo"] for c in names}
        ratio = f"{d['new']['seconds'] / d['old']['seconds']:.2f}" if len(d) == 2 else "-"
        same = "-" if len(d) < 2 else ("all" if d["old"]["values"] == d["new"]["values"] else "moved")
        cells = " | ".join(f"{d[c]['seconds']:.1f} (exit {d[c]['exit']})" for c in names)
        met = "met" if d.get("new", {}).get("seconds", 1e9) <= TARGETS["demo"] else "missed"
        print(f"| demo (whole command) | 12 | {cells} | {ratio} | 30 s ({met}) | {same} |")
    print(f"\nload average at end {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
