"""Write the shipped measured-agreement table (``src/assay/run/agreement.json``) in one command.

    python benchmarks/trust_table.py                  # measure: judge_agreement.py + goal_accuracy.py
    python benchmarks/trust_table.py --limit 4        # the same on 4 items a set (a smoke run)
    python benchmarks/trust_table.py --documented     # the figures already measured and written down

Measuring runs ``judge_agreement.py`` (faithfulness's verdicts, the product as it ships,
threshold 0.5, on BEGIN, SummEdits and WiCE dev) and ``goal_accuracy.py --model`` (the agent
metrics against tau-bench's own environment check) in child processes on the dev data
(``../shared/data``, or ``$ASSAY_SHARED_DATA``), with the default local judge, and writes each
figure with its CI, n, data set, the machine (CPU model), the llama.cpp build and weights
layout that answered, the date, and which run produced it. ``--documented`` writes the
figures of the last full runs from where they are written down (README "How far to trust the
offline default" and ``docs/design/agents.md``), with that provenance: it measures nothing.

Either way every metric's *settings fingerprint* (its spec: version, prompts, fields; see
``assay.run._trust.settings_fingerprint``) and the default judge's settings are stored with
it: ``tests/test_trust.py`` fails when a metric's or the judge's cache-relevant settings
change and this table was not regenerated.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assay.metrics import build_metric
from assay.run._trust import TRUST_TABLE, default_judge_settings, settings_fingerprint

HERE = Path(__file__).resolve().parent

# Which figure stands beside a metric's score, and where the benchmarks put it.
FAITHFULNESS_SETS = {"summedits": "SummEdits dev", "begin": "BEGIN dev", "wice": "WiCE dev"}
HEADLINE_SET = "summedits"  # faithfulness's figure in summaries: subtle factual edits, the hardest common case
GOAL_VARIANTS = {
    "agent_goal_accuracy": "atoms_with_reference",  # the reference is used whenever a row has one
    "agent_goal_accuracy_with_reference": "atoms_with_reference",
    "agent_goal_accuracy_without_reference": "atoms_without_reference",
}
MODEL_FREE = {
    "agent_state_match": (
        "no model: 1 when the state-changing calls the agent performed (failed ones excluded) equal "
        "reference_tool_calls, else 0 (agrees with tau-bench's environment check at 0.98 [0.93-1.00], n=100)"
    ),
    "tool_call_accuracy": (
        "no model: the expected tool calls compared with the calls made, exactly (names, arguments, order)"
    ),
}

# The last full runs, as written down (README "How far to trust the offline default", the
# column "as it ships (2026-11-28)"; docs/design/agents.md "Figures", 2026-11-25).
DOCUMENTED: dict[str, dict[str, Any]] = {
    "faithfulness": {
        "level": "verdict",
        "figures": {
            # Five times the items of the AMX run (0.778 [0.717-0.836], n=100), on the weights
            # every machine without AMX runs: the figure a user's scores stand on. The rule
            # for every set: the largest measurement on those weights.
            "summedits": {
                "balanced_accuracy": 0.714,
                "ci": [0.680, 0.749],
                "n": 500,
                "date": "2026-11-29",
                "measured_with": "Q4_K_M as shipped, default build, AVX2 (2-core AMD EPYC, family 25 model 1)",
                "source": "benchmarks/judge_agreement.py --n 500 --sets summedits --variants product, seed 7 "
                "(docs/design/grounding/trained_verifier.md, the shipped verifier's row)",
            },
            "begin": {  # 0.819 [0.738-0.883] on 100 items with AMX and Q8_0: the same within noise
                "balanced_accuracy": 0.826,
                "ci": [0.783, 0.869],
                "n": 300,
                "date": "2026-11-29",
                "measured_with": "Q4_K_M as shipped, default build, AVX2 (2-core AMD EPYC, family 25 model 1)",
                "source": "benchmarks/judge_agreement.py --n 300 --sets begin --variants product, seed 7",
            },
            "wice": {"balanced_accuracy": 0.691, "ci": [0.591, 0.782], "n": 100},
        },
        "against": "people",
        "date": "2026-11-28",
        "measured_with": "AMX build, Q8_0 copy of the weights (2-core Xeon, model 207)",
        "source": "benchmarks/judge_agreement.py --n 100 --variants product, seed 7 (README, 'How far to trust the "
        "offline default', column 'as it ships')",
    },
    "agent_goal_accuracy_with_reference": {
        "level": "trajectory",
        "figures": {"taubench": {"balanced_accuracy": 0.351, "ci": [0.196, 0.545], "n": 40}},
        "against": "the environment",
        "date": "2026-11-25",
        "measured_with": "Q4_K_M as shipped, 4,096-token window (2-core Xeon, model 207)",
        "source": "benchmarks/goal_accuracy.py --n 40 --model, seed 7, CIs resample tasks (docs/design/agents.md)",
    },
    "agent_goal_accuracy_without_reference": {
        "level": "trajectory",
        "figures": {"taubench": {"balanced_accuracy": 0.232, "ci": [0.105, 0.343], "n": 40}},
        "against": "the environment",
        "date": "2026-11-25",
        "measured_with": "Q4_K_M as shipped, 4,096-token window (2-core Xeon, model 207)",
        "source": "benchmarks/goal_accuracy.py --n 40 --model, seed 7, CIs resample tasks (docs/design/agents.md)",
    },
}
DOCUMENTED["agent_goal_accuracy"] = DOCUMENTED["agent_goal_accuracy_with_reference"]
SET_NAMES = {**FAITHFULNESS_SETS, "taubench": "tau-bench airline dev trajectories"}


def cpu_model() -> str:
    """The CPU's model name and family/model numbers (speed and build figures name their machine)."""
    info: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.processor() or "unknown CPU"
    return (
        f"{info.get('model name', 'unknown CPU')} (family {info.get('cpu family', '?')} model "
        f"{info.get('model', '?')}), {os.cpu_count()} cores"
    )


def _entry(name: str, measured: dict[str, Any], headline: str) -> dict[str, Any]:
    # A figure measured apart from its metric's others names its own date, machine and source.
    figures = {
        key: {"dataset": SET_NAMES[key], "against": measured["against"], "date": measured["date"],
              "measured_with": measured["measured_with"], "source": measured["source"], **value}
        for key, value in measured["figures"].items()
    }  # fmt: skip
    return {"level": measured["level"], "figure": figures[headline], "figures": figures}


def _settings(name: str) -> dict[str, Any]:
    """The metric's settings as measured (its default spec: version, prompt versions, fields) and their fingerprint."""
    spec = build_metric(name).spec()
    return {"settings_fingerprint": settings_fingerprint(spec), "settings": spec.model_dump(mode="json")}


def build_table(measured: dict[str, dict[str, Any]], how: str) -> dict[str, Any]:
    """The table: the judge's settings, and per metric its fingerprint and figures (or its definition)."""
    metrics: dict[str, Any] = {}
    for name, data in measured.items():
        headline = HEADLINE_SET if name == "faithfulness" else next(iter(data["figures"]))
        if headline not in data["figures"]:
            continue
        metrics[name] = {**_settings(name), **_entry(name, data, headline)}
    for name, definition in MODEL_FREE.items():
        metrics[name] = {**_settings(name), "model_free": definition}
    return {
        "schema": 1,
        "written": datetime.now(UTC).isoformat(timespec="seconds"),
        "how": how,
        "judge": {"model_id": "local:qwen2.5-coder-1.5b-instruct-q4_k_m", "settings": default_judge_settings()},
        "metrics": dict(sorted(metrics.items())),
    }


def _run(command: list[str]) -> None:
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=True, cwd=HERE.parent)


def measure(limit: int | None, seed: int) -> dict[str, dict[str, Any]]:
    """Run both benchmarks and read their figures back."""
    from assay.models import LocalJudge
    from assay.models._amx import loaded_build

    judge = LocalJudge()
    machine = f"{judge.components['weights']}; {loaded_build().describe()}; {cpu_model()}"
    today = datetime.now(UTC).date().isoformat()
    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        grounding, agents = Path(tmp) / "grounding.json", Path(tmp) / "agents.json"
        n = limit or 100
        _run([sys.executable, str(HERE / "judge_agreement.py"), "--n", str(n), "--seed", str(seed),
              "--variants", "product", "--sets", ",".join(FAITHFULNESS_SETS), "--json", str(grounding)])  # fmt: skip
        command = [
            sys.executable,
            str(HERE / "goal_accuracy.py"),
            "--model",
            "--seed",
            str(seed),
            "--json",
            str(agents),
        ]
        _run([*command, "--n", str(limit or 40)])
        results = json.loads(grounding.read_text())["results"]
        figures = {
            r["set"]: {"balanced_accuracy": r["balanced_accuracy"], "ci": r["ci95"], "n": r["n"]}
            for r in results
            if r.get("threshold") == 0.5 and r["set"] in FAITHFULNESS_SETS
        }
        source = f"benchmarks/trust_table.py (judge_agreement.py --n {n} --variants product, seed {seed})"
        out["faithfulness"] = {"level": "verdict", "figures": figures, "against": "people", "date": today,
                               "measured_with": machine, "source": source}  # fmt: skip
        variants = {v["variant"]: v for v in json.loads(agents.read_text())["variants"]}
        for metric, variant in GOAL_VARIANTS.items():
            if variant in variants:
                v = variants[variant]
                out[metric] = {
                    "level": "trajectory",
                    "figures": {
                        "taubench": {"balanced_accuracy": v["balanced_accuracy"], "ci": v["ci95"], "n": v["n"]}
                    },
                    "against": "the environment",
                    "date": today,
                    "measured_with": machine,
                    "source": f"benchmarks/trust_table.py (goal_accuracy.py --n {limit or 40} --model, seed {seed})",
                }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documented", action="store_true", help="write the figures already measured (no judging)")
    parser.add_argument(
        "--limit", type=int, default=None, help="items per set (default: 100 a grounding set, 40 trajectories)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=TRUST_TABLE, help="where to write the table")
    args = parser.parse_args()
    if args.documented:
        table = build_table(DOCUMENTED, "documented: the last full runs' figures as written down, each with its source")
    else:
        small = f" (--limit {args.limit}: a smoke run, not figures to ship)" if args.limit else ""
        table = build_table(measure(args.limit, args.seed), f"measured by benchmarks/trust_table.py{small}")
    args.out.write_text(json.dumps(table, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for name, entry in table["metrics"].items():
        figure = entry.get("figure")
        said = entry.get("model_free") or (
            f"{figure['balanced_accuracy']:.3f} [{figure['ci'][0]:.3f}-{figure['ci'][1]:.3f}] "
            f"{figure['dataset']}, n={figure['n']}"
        )
        print(f"{name:40s} {said}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
