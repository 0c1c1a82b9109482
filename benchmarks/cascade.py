"""Trust or escalate out of fold: coverage against realised agreement, local judges and their cascade (issue 66).

Reads the per-item caches ``judge_agreement.py`` fills (``benchmarks/.cache/agreement-*``,
the ``product`` variant: the faithfulness metric's verifier as it ships) for the shipped
1.5B and the 0.5B on the same seeded dev items; it makes no judge call of its own. Run the
judges first, one at a time, e.g.::

    nice -n 10 python benchmarks/judge_agreement.py --sets summedits,begin --n 100 --threads 1
    nice -n 10 python benchmarks/judge_agreement.py --sets summedits,begin --n 100 --threads 1 \\
        --judge local:/root/.cache/assay/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
    python benchmarks/cascade.py --sets summedits,begin --n 100

For each of ``--repeats`` random splits, grouped by source document (``grouped_cv.document_groups``:
every item of one document on one side; in the pooled scope each set is split on its own),
half of the documents choose the thresholds and the other half check them. The thresholds
are ``assay.analysis._selective.plan_cascade`` (fixed-sequence testing per verdict value, the
cascade's level k calibrated on the items the levels before it did not keep) and the check
is ``route``; nothing of the method is re-implemented here. For each target agreement
``1 - alpha`` at ``--delta``, per configuration (the 1.5B alone, the 0.5B alone, the 0.5B
then the 1.5B) it reports:

- coverage: the share of the checking half decided (kept by some level), mean over splits;
- realised agreement with people on the decided verdicts, mean over the splits that decided
  anything, and the share of those splits reaching the target (the guarantee says at least
  ``1 - delta``; a check half is finite, so a judge exactly at the target misses in about
  half of them);
- the share of all splits in which the guarantee's event held: the kept verdicts reached the
  target, or nothing was kept (the guarantee promises at least ``1 - delta``; splits grouped
  by source document also test whether it carries to documents the labels did not come from);
- splits with no threshold at all (every verdict escalates: the labels cannot support the
  target) and splits that decided nothing on the checking half;
- seconds per item from the cached timings (wall seconds as judged, the machine named in the
  JSON): a level is paid for every item that reaches it, so the cascade pays the 0.5B on
  every item and the 1.5B on what the 0.5B did not keep.

A verdict's confidence is the probability of the value it gave: P(supported) for
"supported", 1 - P for "unsupported", with the judge's own P (``p_raw``) even where a detail
check vetoed the statement (a vetoed verdict the judge thought supported is not confident).

Figures go to ``--json`` (default ``benchmarks/cascade.json``) and a picture of coverage
against realised agreement, one line per configuration, to ``--svg`` (default
``docs/images/cascade.svg``; hand-written SVG, no plotting library).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
from _lib.devsets import load
from _lib.evidence_pairs import SIZES
from _lib.grouped_cv import document_groups
from _lib.judging import CACHE, PRODUCT_KEY, model_slug

from assay.analysis._selective import plan_cascade, route

HERE = Path(__file__).resolve().parent
SMALL = "local:/root/.cache/assay/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
TARGETS = (0.70, 0.75, 0.80, 0.85, 0.90)
SPLITS = {
    "documents": "grouped by source document, half of each set's documents choose, the other half check",
    "items": "items at random whatever their document, half of each set's items choose, the other half check",
}


@dataclass(frozen=True)
class Item:
    """One labelled item as every judge saw it: ``verdict[j]``, ``p_yes[j]`` and ``seconds[j]`` for judge ``j``."""

    set: str
    id: str
    group: str
    label: int
    verdict: tuple[int, ...]
    p_yes: tuple[float, ...]
    seconds: tuple[float, ...]


@dataclass(frozen=True)
class Config:
    """A judge alone or a cascade: the judges' indices into ``Item.verdict``, cheapest first."""

    name: str
    levels: tuple[int, ...]


def entry_of(entry: dict[str, Any] | None) -> tuple[int, float, float] | None:
    """(verdict, the judge's own P(supported), seconds) of a cache entry; ``None`` if it was not judged or failed.

    A statement copied from the context has no judge P: it is supported with P = 1.
    """
    if entry is None or entry.get("v") is None:
        return None
    p = entry.get("p_raw")
    if p is None:
        p = entry.get("p")
    if p is None:
        return None
    return int(entry["v"]), float(p), float(entry["s"])


def split_groups(items: Sequence[Item], rng: np.random.Generator) -> tuple[list[int], list[int]]:
    """Indices of the calibrating and the checking half: the documents of each set shuffled and halved."""
    calibrate: list[int] = []
    check: list[int] = []
    for name in sorted({it.set for it in items}):
        groups = sorted({it.group for it in items if it.set == name})
        order = rng.permutation(len(groups))
        first = {groups[i] for i in order[: len(groups) // 2]}
        for i, it in enumerate(items):
            if it.set == name:
                (calibrate if it.group in first else check).append(i)
    return calibrate, check


def ungrouped(items: Sequence[Item]) -> list[Item]:
    """The items as their own groups (``--split items``): splits that ignore the source document, the case the
    guarantee assumes (labelled and checked items alike), against which the grouped splits are read."""
    return [Item(it.set, it.id, f"{it.set}/{it.id}", it.label, it.verdict, it.p_yes, it.seconds) for it in items]


def _levels(items: Sequence[Item], idx: Sequence[int], config: Config) -> list[tuple[list[int], list[float]]]:
    return [([items[i].verdict[j] for i in idx], [items[i].p_yes[j] for i in idx]) for j in config.levels]


def one_split(
    items: Sequence[Item], calibrate: Sequence[int], check: Sequence[int], config: Config, target: float, delta: float
) -> dict[str, Any]:
    """Thresholds chosen on ``calibrate``, checked on ``check``: what this split realised."""
    plan = plan_cascade(
        _levels(items, calibrate, config), [items[i].label for i in calibrate], alpha=1 - target, delta=delta
    )
    routed = route(plan, _levels(items, check, config))
    labels = [items[i].label for i in check]
    seconds = 0.0
    for i, level in zip(check, routed.level, strict=True):
        reached = len(config.levels) if level is None else level + 1
        seconds += sum(items[i].seconds[j] for j in config.levels[:reached])
    thresholds = [{v: side.threshold for v, side in lv.sides.items()} for lv in plan.levels]
    return {
        "coverage": routed.coverage(),
        "agreement": routed.agreement(labels),
        "none": all(t is None for lv in thresholds for t in lv.values()),
        "by_level": [sum(1 for lv in routed.level if lv == k) / len(check) for k in range(len(config.levels))],
        "seconds": seconds / len(check),
        "thresholds": thresholds,
    }


def evaluate(
    items: Sequence[Item],
    configs: Sequence[Config],
    targets: Sequence[float],
    delta: float,
    repeats: int,
    seed: int,
) -> list[dict[str, Any]]:
    """One row per configuration and target: the splits' figures summarised (the same splits for every row)."""
    rng = np.random.default_rng(seed)
    splits = [split_groups(items, rng) for _ in range(repeats)]
    rows = []
    for config in configs:
        for target in targets:
            runs = [one_split(items, cal, chk, config, target, delta) for cal, chk in splits]
            decided = [r for r in runs if r["agreement"] is not None]
            reached = [r for r in decided if r["agreement"] >= target - 1e-12]
            sides: dict[str, Any] = {}
            for k, judge in enumerate(config.levels):
                for value in (1, 0):
                    found = [r["thresholds"][k][value] for r in runs if r["thresholds"][k][value] is not None]
                    sides[f"level{k}_judge{judge}_value{value}"] = {
                        "splits_with_threshold": len(found),
                        "median_threshold": statistics.median(found) if found else None,
                    }
            rows.append(
                {
                    "config": config.name,
                    "target": target,
                    "delta": delta,
                    "splits": len(runs),
                    "coverage": statistics.fmean(r["coverage"] for r in runs),
                    "agreement": statistics.fmean(r["agreement"] for r in decided) if decided else None,
                    "reached": len(reached) / len(decided) if decided else None,
                    # the guarantee's own event: the kept verdicts reach the target, or nothing was kept
                    "held": (len(reached) + len(runs) - len(decided)) / len(runs),
                    "no_threshold": sum(r["none"] for r in runs),
                    "decided_nothing": len(runs) - len(decided),
                    "by_level": [statistics.fmean(r["by_level"][k] for r in runs) for k in range(len(config.levels))],
                    "seconds_per_item": statistics.fmean(r["seconds"] for r in runs),
                    "sides": sides,
                }
            )
    return rows


def load_items(
    sets: Sequence[str], n: int, seed: int, judges: Sequence[str], first: int = 0
) -> tuple[list[Item], dict[str, Any]]:
    """The items every judge judged (of ``devsets.load``'s seeded sample, its first ``first``), and the rest."""

    from assay.models import get_judge

    caches = []
    for spec in judges:
        path = CACHE / f"agreement-{model_slug(get_judge(spec))}-s{seed}.json"
        if not path.exists():
            raise SystemExit(f"no cache for {spec} at {path}: run judge_agreement.py --judge {spec} first")
        caches.append(json.loads(path.read_text()))
    items: list[Item] = []
    about: dict[str, Any] = {}
    for name in sets:
        rows = load(name, n, seed)
        if first:
            rows = rows[:first]
        groups = document_groups(name, rows)
        judged = [[entry_of(c.get(f"{name}/{PRODUCT_KEY}", {}).get(r["id"])) for c in caches] for r in rows]
        missing = [sum(1 for j in judged if j[k] is None) for k in range(len(judges))]
        for row, entries in zip(rows, judged, strict=True):
            if all(e is not None for e in entries):
                got = [e for e in entries if e is not None]
                items.append(
                    Item(
                        name,
                        row["id"],
                        f"{name}/{groups[row['id']]}",
                        int(row["label"]),
                        tuple(e[0] for e in got),
                        tuple(e[1] for e in got),
                        tuple(e[2] for e in got),
                    )
                )
        mine = [it for it in items if it.set == name]
        about[name] = {
            "sampled": len(rows),
            "judged_by_all": len(mine),
            "not_judged_or_failed": dict(zip(judges, missing, strict=True)),
            "documents": len({it.group for it in mine}),
            "positives": sum(it.label for it in mine),
        }
    return items, about


def load_extracted(store: Path, sets: Sequence[str], seed: int) -> tuple[list[Item], dict[str, Any]]:
    """The 1.5B's verdicts on the dev items ``anchored_readout.py extract`` has judged, as one-judge items.

    That extraction runs the shipped verifier (the same verdict pass, its hidden states
    kept) over the seeded dev samples of ``evidence_pairs.SIZES``; its ``STORE/{set}.jsonl``
    holds each item's verdict, the judge's P and the wall seconds of the context's group
    (divided here by the items judged with it, so a second is counted once).
    """
    items: list[Item] = []
    about: dict[str, Any] = {}
    for name in sets:
        path = store / f"{name}.jsonl"
        if not path.exists():
            about[name] = {"judged": 0}
            continue
        rows = {r["id"]: r for r in load(name, SIZES[name], seed)}
        groups = document_groups(name, list(rows.values()))
        entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        entries = [e for e in entries if e["id"] in rows and e.get("failure") is None and e.get("v") is not None]
        per_group: dict[float, int] = {}
        for e in entries:  # entries of one context share its wall seconds
            per_group[e["s"]] = per_group.get(e["s"], 0) + 1
        for e in {e["id"]: e for e in entries}.values():
            if e.get("p") is None:  # no judge call: a statement copied from the context, supported for sure
                e["p"] = 1.0 if e.get("verbatim") and int(e["v"]) == 1 else None
            if e["p"] is None:
                continue
            label = int(rows[e["id"]]["label"])
            assert label == int(e["label"]), f"{name}/{e['id']}: the store's label is not the data's"
            items.append(
                Item(name, e["id"], f"{name}/{groups[e['id']]}", label, (int(e["v"]),), (float(e["p"]),),
                     (float(e["s"]) / per_group[e["s"]],))
            )  # fmt: skip
        mine = [it for it in items if it.set == name]
        about[name] = {
            "sampled": len(rows),
            "judged": len(mine),
            "documents": len({it.group for it in mine}),
            "positives": sum(it.label for it in mine),
        }
    return items, about


def judge_facts(items: Sequence[Item], names: Sequence[str]) -> list[dict[str, Any]]:
    """Per judge: plain agreement at its own verdicts, how its P falls, its seconds per item."""
    out = []
    for j, name in enumerate(names):
        v = np.array([it.verdict[j] for it in items])
        p = np.array([it.p_yes[j] for it in items])
        y = np.array([it.label for it in items])
        tpr = float((v[y == 1] == 1).mean()) if (y == 1).any() else float("nan")
        tnr = float((v[y == 0] == 0).mean()) if (y == 0).any() else float("nan")
        out.append(
            {
                "judge": name,
                "n": len(items),
                "agreement": float((v == y).mean()),
                "balanced_accuracy": (tpr + tnr) / 2,
                "said_unsupported": int((v == 0).sum()),
                "p_at_least_0.5": int((p >= 0.5).sum()),
                "p_0.5_to_0.8": int(((p >= 0.5) & (p < 0.8)).sum()),
                "seconds_per_item": float(np.mean([it.seconds[j] for it in items])),
                # The first item of each judge_agreement.py process also paid the model's load.
                "median_seconds_per_item": float(np.median([it.seconds[j] for it in items])),
            }
        )
    return out


def fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def print_table(scope: str, rows: Sequence[dict[str, Any]]) -> None:
    print(f"\n{scope}")
    print(
        f"  {'judge':16s} {'target':>6s} {'coverage':>8s} {'agree':>6s} {'reached':>7s} {'held':>5s} "
        f"{'no thr':>6s} {'none':>5s} {'s/item':>6s}  by level"
    )
    for r in rows:
        print(
            f"  {r['config']:16s} {r['target']:6.2f} {r['coverage']:8.3f} {fmt(r['agreement']):>6s} "
            f"{fmt(r['reached'], '.2f'):>7s} {r['held']:5.2f} {r['no_threshold']:6d} {r['decided_nothing']:5d} "
            f"{r['seconds_per_item']:6.1f}  {' / '.join(f'{x:.2f}' for x in r['by_level'])}"
        )


def markdown(scope: str, rows: Sequence[dict[str, Any]]) -> str:
    """The table as Markdown, for the docs."""
    lines = [
        f"| {scope}: judge | target | coverage | agreement on decided | splits reaching target "
        "| guarantee held | no threshold | s/item | decided per level |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['target']:.2f} | {r['coverage']:.2f} | {fmt(r['agreement'], '.2f')} "
            f"| {fmt(r['reached'], '.2f')} | {r['held']:.2f} | {r['no_threshold']}/{r['splits']} "
            f"| {r['seconds_per_item']:.0f} "
            f"| {' / '.join(f'{x:.2f}' for x in r['by_level'])} |"
        )
    return "\n".join(lines)


COLOURS = ("#1f4e9c", "#c2571a", "#2a8a4a", "#7a3d9c", "#8a6d1a", "#444444")


def svg(panels: Sequence[tuple[str, Sequence[dict[str, Any]]]], note: str) -> str:
    """Coverage (x) against realised agreement (y), one panel per scope, one line per configuration.

    A point per target, labelled with the target (".80"); a target where nothing was decided
    has no point. Agreement below 0.5 is drawn at 0.5.
    """
    width, height, left, top, pw, ph, gap = 300, 260, 50, 40, 220, 180, 30
    total = max(len(panels) * (width + gap), 7 * len(note) + 16)  # the note on one line
    configs = list(dict.fromkeys(r["config"] for _, rows in panels for r in rows))
    lo_y = 0.5
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="{height + 50 + 16 * len(configs)}" '
        f'font-family="sans-serif" font-size="11">',
        f'<text x="8" y="16" font-size="12">{escape(note)}</text>',
    ]
    for n, (scope, rows) in enumerate(panels):
        x0 = n * (width + gap) + left
        out.append(f'<text x="{x0}" y="{top - 8}" font-weight="bold">{escape(scope)}</text>')
        out.append(f'<rect x="{x0}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')

        def px(c: float, a: float, x0: int = x0) -> tuple[float, float]:
            return x0 + c * pw, top + ph - (a - lo_y) / (1 - lo_y) * ph

        for t in (0.0, 0.25, 0.5, 0.75, 1.0):
            x, _ = px(t, lo_y)
            out.append(f'<text x="{x:.0f}" y="{top + ph + 14}" text-anchor="middle">{t:.2f}</text>')
        for a in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
            _, y = px(0, a)
            out.append(f'<text x="{x0 - 4}" y="{y + 4:.0f}" text-anchor="end">{a:.1f}</text>')
            out.append(f'<line x1="{x0}" x2="{x0 + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 + pw / 2}" y="{top + ph + 30}" text-anchor="middle">coverage (share decided)</text>')
        out.append(
            f'<text x="{x0 - 36}" y="{top + ph / 2}" text-anchor="middle" '
            f'transform="rotate(-90 {x0 - 36} {top + ph / 2})">agreement with people, decided</text>'
        )
        for c, config in enumerate(configs):
            colour = COLOURS[c % len(COLOURS)]
            mine = [r for r in rows if r["config"] == config and r["agreement"] is not None]
            pts = [px(r["coverage"], min(1.0, max(lo_y, r["agreement"]))) for r in mine]
            if len(pts) > 1:
                path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
                out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
            for (x, y), r in zip(pts, mine, strict=True):
                out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{colour}"/>')
                target = f"{r['target']:.2f}".removeprefix("0")
                out.append(f'<text x="{x + 4:.1f}" y="{y - 3:.1f}" font-size="8" fill="{colour}">{target}</text>')
    for c, config in enumerate(configs):
        y = height + 30 + 16 * c
        colour = COLOURS[c % len(COLOURS)]
        out.append(f'<line x1="{left}" x2="{left + 20}" y1="{y - 4}" y2="{y - 4}" stroke="{colour}" stroke-width="2"/>')
        decided = any(r["config"] == config and r["agreement"] is not None for _, rows in panels for r in rows)
        label = config if decided else f"{config}: no point, it decided nothing at any target"
        out.append(f'<text x="{left + 26}" y="{y}">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="summedits,begin")
    parser.add_argument("--n", type=int, default=100, help="items per set, as judge_agreement.py was run")
    parser.add_argument("--seed", type=int, default=7, help="judge_agreement.py's sample seed")
    parser.add_argument("--first", type=int, default=0, help="only the first K of each set's sample, as judged")
    parser.add_argument("--big", default="local", help="the strong judge (default: the shipped 1.5B)")
    parser.add_argument("--small", default=SMALL, help="the cheap first judge (default: the 0.5B)")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument(
        "--split",
        choices=("documents", "items"),
        default="documents",
        help="halve each set's source documents (default) or its items, ignoring their documents",
    )
    parser.add_argument("--targets", default=",".join(f"{t:.2f}" for t in TARGETS))
    parser.add_argument("--machine", default="", help="what the cached timings ran on and under what load")
    parser.add_argument("--markdown", action="store_true", help="also print each table as Markdown")
    parser.add_argument("--json", type=Path, default=HERE / "cascade.json")
    parser.add_argument("--svg", type=Path, default=HERE.parent / "docs" / "images" / "cascade.svg")
    parser.add_argument(
        "--alone-from",
        type=Path,
        help="the 1.5B alone, from anchored_readout.py extract's store (more items than the cascade's caches)",
    )
    args = parser.parse_args()
    if args.alone_from is not None:
        alone(args)
        return
    if args.big == args.small:
        raise SystemExit(f"--big and --small are both {args.big}: a cascade needs two judges")
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    targets = [float(t) for t in args.targets.split(",")]
    items, about = load_items(sets, args.n, args.seed, [args.big, args.small], args.first)
    if args.split == "items":
        items = ungrouped(items)
    # Short names for the judges as shipped; any other judge is named by its spec.
    names = [{"local": "1.5B", SMALL: "0.5B"}.get(spec, spec) for spec in (args.big, args.small)]
    big, small = names
    configs = [Config(f"{big} alone", (0,)), Config(f"{small} alone", (1,)), Config(f"{small} -> {big}", (1, 0))]
    scopes = [(name, [it for it in items if it.set == name]) for name in sets]
    if len(sets) > 1:
        scopes.append((" + ".join(sets) + " (pooled)", items))
    machine = args.machine or cpu()
    print(f"judges {args.big} and {args.small}; product verifier; seed {args.seed}; timings as judged on {machine}")
    for name, facts in about.items():
        print(f"  {name}: {facts}")
    figures: dict[str, Any] = {
        "judges": {big: args.big, small: args.small},
        "variant": "product",
        "sample_seed": args.seed,
        "n_per_set": args.n,
        "first": args.first,
        "repeats": args.repeats,
        "split_seed": args.split_seed,
        "delta": args.delta,
        "split": SPLITS[args.split],
        "machine": machine,
        "sets": about,
        "scopes": [],
    }
    panels = []
    for scope, mine in scopes:
        if not mine:
            print(f"\n{scope}: nothing judged by both judges yet")
            continue
        facts = judge_facts(mine, names)
        for f in facts:
            print(
                f"  {scope} {f['judge']}: agreement {f['agreement']:.3f}, BA {f['balanced_accuracy']:.3f}, "
                f"said unsupported {f['said_unsupported']}/{f['n']}, P >= 0.5 {f['p_at_least_0.5']}, "
                f"P 0.5-0.8 {f['p_0.5_to_0.8']}, {f['seconds_per_item']:.1f} s/item as judged "
                f"(median {f['median_seconds_per_item']:.1f})"
            )
        rows = evaluate(mine, configs, targets, args.delta, args.repeats, args.split_seed)
        print_table(f"{scope}: n={len(mine)}, {len({it.group for it in mine})} documents", rows)
        if args.markdown:
            print("\n" + markdown(f"{scope} (n={len(mine)})", rows))
        figures["scopes"].append({"scope": scope, "n": len(mine), "judges": facts, "rows": rows})
        panels.append((f"{scope} (n={len(mine)})", rows))
    args.json.write_text(json.dumps(figures, indent=1) + "\n")
    if panels:
        args.svg.parent.mkdir(parents=True, exist_ok=True)
        note = (
            f"Out of fold, {args.repeats} grouped splits, delta {args.delta}; targets "
            f"{targets[0]:.2f}-{targets[-1]:.2f} (a point each); product verifier"
        )
        args.svg.write_text(svg(panels, note))
    print(f"\nwrote {args.json} and {args.svg}")


def alone(args: argparse.Namespace) -> None:
    """The shipped judge alone, out of fold, on the dev items the extraction judged (``--alone-from``)."""
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    targets = [float(t) for t in args.targets.split(",")]
    items, about = load_extracted(args.alone_from, sets, args.seed)
    if args.split == "items":
        items = ungrouped(items)
    machine = args.machine or cpu()
    print(f"the 1.5B alone from {args.alone_from}; seed {args.seed}; timings as judged on {machine}")
    for name, facts in about.items():
        print(f"  {name}: {facts}")
    configs = [Config("1.5B alone", (0,))]
    scopes = [(name, [it for it in items if it.set == name]) for name in sets]
    if len(sets) > 1:
        scopes.append((" + ".join(sets) + " (pooled)", items))
    figures: dict[str, Any] = {"source": str(args.alone_from), "sample_sizes": SIZES, "seed": args.seed,
                               "repeats": args.repeats, "delta": args.delta, "split": SPLITS[args.split],
                               "machine": machine, "sets": about, "scopes": []}  # fmt: skip
    for scope, mine in scopes:
        if len({it.label for it in mine}) < 2:
            print(f"\n{scope}: {len(mine)} items of one label only: nothing to check agreement on")
            continue
        facts = judge_facts(mine, ["1.5B"])
        rows = evaluate(mine, configs, targets, args.delta, args.repeats, args.split_seed)
        print_table(f"{scope}: n={len(mine)}, {len({it.group for it in mine})} documents", rows)
        if args.markdown:
            print("\n" + markdown(f"{scope} (n={len(mine)})", rows))
        figures["scopes"].append({"scope": scope, "n": len(mine), "judges": facts, "rows": rows})
    args.json.write_text(json.dumps(figures, indent=1) + "\n")
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
