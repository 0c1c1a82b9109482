"""Build the labelled sets that ship with assay for ``assay judges bench``, from ../shared/data.

Deterministic (fixed seed) and offline. Each set is balanced (as many label 1 as label 0
items) and ordered so that any prefix is as balanced as it can be and mixes its sources
(``--limit N`` judges the first N). Long contexts are never cut: items with short
contexts are picked instead. Only sources whose licence allows shipping them are used,
read from each row's ``provenance``:

- ``grounding.jsonl``: BEGIN dev, the CC-BY-4.0 subsets (Wizard of Wikipedia, CMU-DoG;
  TopicalChat's CDLA-Sharing subset is left out), and SummEdits (Apache-2.0) documents of
  at most 1,600 characters, SAMSum documents left out (SAMSum is CC BY-NC-ND). WiCE is left
  out: its evidence articles are web text under Common Crawl's terms, not an open licence.
  Human labels.
- ``retrieval.jsonl``: HaluEval QA (MIT; passages are Wikipedia text via HotpotQA,
  CC-BY-SA-4.0): a question with its own passage is relevant (1), with another question's
  passage not relevant (0). Labelled by construction, not by people.
- ``agents.jsonl``: tau-bench airline gpt-4o trajectories (MIT), the shortest ones of each
  label; the label is the environment's own reward (its database check), not a person.

All of them are dev items: the project's own benchmarks measure and tune on the same files.

    python benchmarks/bench_sets.py                  # rewrites src/assay/run/bench_sets/
    python benchmarks/bench_sets.py --data /work/shared/data   # from a worktree elsewhere
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
OUT = Path(__file__).resolve().parents[1] / "src" / "assay" / "run" / "bench_sets"
SEED = 57
BEGIN_PER_LABEL = 30
SUMMEDITS_PER_LABEL = 30
SUMMEDITS_MAX_CONTEXT = 1600
RETRIEVAL_PER_LABEL = 50
AGENTS_PER_LABEL = 12
SHIPPABLE_BEGIN = ("CC-BY-4.0",)
EXCLUDED_SUMMEDITS_DOMAINS = ("samsum",)

Row = dict[str, Any]


def read(path: Path) -> list[Row]:
    """Every row of a JSONL file."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def interleave(buckets: Sequence[Sequence[Row]]) -> list[Row]:
    """Round-robin over the buckets, so every prefix mixes them."""
    out: list[Row] = []
    for i in range(max(len(b) for b in buckets)):
        out.extend(b[i] for b in buckets if i < len(b))
    return out


def pick(
    rows: Iterable[Row], label: int, n: int, rng: random.Random, key: Callable[[Row], Any] | None = None
) -> list[Row]:
    """``n`` rows of ``label``: the first ``n`` by ``key`` if given, else a seeded sample."""
    pool = [r for r in rows if r["label"] == label]
    if len(pool) < n:
        raise SystemExit(f"only {len(pool)} rows with label {label}, {n} wanted")
    chosen = sorted(pool, key=key)[:n] if key is not None else rng.sample(pool, n)
    rng.shuffle(chosen)
    return chosen


def licence(provenance: Row) -> str:
    """The licence named in a row's provenance."""
    return str(provenance["license"])


def grounding(data: Path, rng: random.Random) -> list[Row]:
    """BEGIN (CC-BY-4.0 subsets) and short SummEdits items, balanced, interleaved."""
    begin = [
        r for r in read(data / "grounding" / "begin_dev.jsonl") if licence(r["provenance"]).startswith(SHIPPABLE_BEGIN)
    ]
    summedits = [
        r
        for r in read(data / "grounding" / "summedits_dev.jsonl")
        if len(r["context"]) <= SUMMEDITS_MAX_CONTEXT and r["domain"] not in EXCLUDED_SUMMEDITS_DOMAINS
    ]
    buckets = [
        pick(begin, 1, BEGIN_PER_LABEL, rng),
        pick(begin, 0, BEGIN_PER_LABEL, rng),
        pick(summedits, 1, SUMMEDITS_PER_LABEL, rng),
        pick(summedits, 0, SUMMEDITS_PER_LABEL, rng),
    ]
    return [
        {
            "id": r["id"],
            "context": r["context"],
            "claim": r["claim"],
            "label": r["label"],
            "source": r["source_dataset"],
            "label_origin": "human",
            "provenance": r["provenance"],
        }
        for r in interleave(buckets)
    ]


def retrieval(data: Path, rng: random.Random) -> list[Row]:
    """HaluEval questions with their own passage (relevant) or another question's (not relevant)."""
    questions = [r for r in read(data / "rag" / "halueval_qa.jsonl") if r["label"] == 1]
    chosen = rng.sample(questions, 2 * RETRIEVAL_PER_LABEL)
    others = [r for r in questions if r["id"] not in {c["id"] for c in chosen}]
    donors = rng.sample(others, RETRIEVAL_PER_LABEL)
    own, foreign = chosen[:RETRIEVAL_PER_LABEL], chosen[RETRIEVAL_PER_LABEL:]
    origin = "by construction: the question's own passage is relevant, another question's passage is not"

    def item(row: Row, passage_of: Row, label: int) -> Row:
        return {
            "id": f"{row['id'].removesuffix('-right')}-{'own' if label else 'other'}-passage",
            "question": row["question"],
            "reference": row["ground_truth"],
            "passage": "\n".join(passage_of["contexts"]),
            "label": label,
            "source": "HaluEval QA",
            "label_origin": origin,
            "provenance": {**row["provenance"], "passages": "Wikipedia text via HotpotQA, CC-BY-SA-4.0"},
        }

    return interleave([[item(r, r, 1) for r in own], [item(r, d, 0) for r, d in zip(foreign, donors, strict=True)]])


def agents(data: Path, rng: random.Random) -> list[Row]:
    """The shortest tau-bench airline trajectories of each label, balanced, interleaved."""
    rows = read(data / "agents" / "taubench_airline_dev.jsonl")

    def size(r: Row) -> tuple[int, str]:
        return (len(json.dumps(r["messages"])), r["id"])

    buckets = [pick(rows, 1, AGENTS_PER_LABEL, rng, key=size), pick(rows, 0, AGENTS_PER_LABEL, rng, key=size)]
    return [
        {
            "id": r["id"],
            "trace": r["messages"],
            "goal": r["goal"],
            "label": r["label"],
            "source": "tau-bench airline",
            "label_origin": r["label_origin"],
            "provenance": r["provenance"],
        }
        for r in interleave(buckets)
    ]


SETS: dict[str, tuple[Callable[[Path, random.Random], list[Row]], str, str]] = {
    "grounding": (
        grounding,
        "statement_verifier: is the claim supported by the context?",
        "human",
    ),
    "retrieval": (
        retrieval,
        "context_precision_with_reference on one passage: is the passage useful for the question's answer?",
        "by construction (own passage = relevant, another question's = not relevant)",
    ),
    "agents": (
        agents,
        "agent_goal_accuracy: did the agent reach the user's goal?",
        "tau-bench environment reward (automatic database check)",
    ),
}

LICENCES = {
    "grounding": {
        "BEGIN": "CC-BY-4.0 (Wizard of Wikipedia and CMU-DoG subsets of BEGIN dev)",
        "SummEdits": "Apache-2.0 (salesforce/factualNLG)",
    },
    "retrieval": {"HaluEval QA": "MIT (RUCAIBox/HaluEval); passages Wikipedia text via HotpotQA, CC-BY-SA-4.0"},
    "agents": {"tau-bench airline": "MIT (sierra-research/tau-bench)"},
}


def main(argv: Sequence[str] | None = None) -> None:
    """Write the three sets and their manifest."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder (default ../shared/data)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "seed": SEED,
        "built_by": "python benchmarks/bench_sets.py (from the project's ../shared/data)",
        "note": "dev items: the project's own benchmarks measure and tune on the same source files",
        "sets": {},
    }
    for name, (build, task, labels) in SETS.items():
        rows = build(args.data, random.Random(f"{SEED}-{name}"))
        path = args.out / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        sources: dict[str, dict[str, Any]] = {}
        for r in rows:
            entry = sources.setdefault(
                r["source"], {"items": 0, "licence": LICENCES[name][r["source"]], "provenance": []}
            )
            entry["items"] += 1
            prov = {k: v for k, v in r["provenance"].items()}
            if prov not in entry["provenance"]:
                entry["provenance"].append(prov)
        manifest["sets"][name] = {
            "file": path.name,
            "items": len(rows),
            "label_1": sum(r["label"] for r in rows),
            "label_0": sum(1 - r["label"] for r in rows),
            "task": task,
            "labels": labels,
            "sources": sources,
        }
        print(f"{name}: {len(rows)} items, {path.stat().st_size / 1e3:.0f} kB")
    (args.out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
