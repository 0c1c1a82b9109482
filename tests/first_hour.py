"""Helpers of the first-hour tests (assay issue 26): stored runs built by hand, a judge server, the CLI.

Not a test module: ``test_first_hour*.py`` import it. A run built here goes through the
real :class:`~assay.run.RunStore` (the same records ``assay run`` writes), so ``assay
gate``, ``assay report`` and ``assay runs`` read it as they read any run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import assay
from assay import JudgeCall, Sample, Score, UnscoredReason, Verdict
from assay.errors import SampleError
from assay.metrics import AnswerRelevancy, Faithfulness
from assay.run import RunSpec, RunStore, SampleResult
from assay.testing import word_overlap_answer

SRC = Path(assay.__file__).resolve().parents[1]
"""The tree this test process imports assay from: subprocesses import the same one."""
SPECS = {"faithfulness": Faithfulness().spec(), "answer_relevancy": AnswerRelevancy().spec()}
CALL = JudgeCall(model="openai:fake", purpose="verdicts", messages=(), raw_output="{}")
"""The judge call a judged score carries (the gate models verdict noise only where a judge spoke)."""

Value = float | None | tuple[float, int]
"""A score: a value (a binary metric's 0/1 is one verdict, else four verdicts), ``None``
for unscored, or ``(value, n_statements)``."""


def score(metric: str, value: Value) -> Score:
    """A scored (or, for ``None``, unscored) result with verdicts that add up to its value.

    Answer relevancy's are its own two: relevant, and committal (value = their product).
    """
    if value is None:
        return Score.unscored(metric, UnscoredReason.PARSE_FAILURE, "the judge rambled")
    if metric == "answer_relevancy" and not isinstance(value, tuple):
        verdicts = [
            Verdict(subject="the question", value=int(value), reason="addressed" if value else "off topic"),
            Verdict(subject="the answer commits to a response (not evasive)", value=1, reason="commits"),
        ]
        return Score.scored(metric, value, verdicts=verdicts, spec=SPECS[metric], calls=[CALL])
    value, n = value if isinstance(value, tuple) else (value, 1 if value in (0.0, 1.0) else 4)
    ones = round(value * n)
    verdicts = [
        Verdict(subject=f"statement {i} of {metric}", value=int(i < ones), reason="stated" if i < ones else "absent")
        for i in range(n)
    ]
    return Score.scored(metric, ones / n, verdicts=verdicts, spec=SPECS.get(metric), calls=[CALL])


def make_run(
    store: Path,
    run_id: str,
    rows: Sequence[Mapping[str, Value | Sequence[Value]]],
    *,
    bad_rows: int = 0,
    metrics: Sequence[str] | None = None,
) -> str:
    """Store a finished run: one sample per row, ``metric -> value`` (a list of values: one per repeat)."""
    names = list(metrics or dict.fromkeys(name for row in rows for name in row))
    with RunStore(store) as runs:
        repeats = max((len(v) for row in rows for v in row.values() if isinstance(v, list)), default=1)
        runs.create(
            RunSpec(
                run_id=run_id,
                dataset="data.jsonl",
                judge="openai:fake",
                judge_model="openai:fake",
                metrics=tuple(
                    SPECS[n] if n in SPECS else Faithfulness().spec().model_copy(update={"name": n}) for n in names
                ),
                options={"repeats": repeats},
            )
        )
        for line, row in enumerate(rows, start=1):
            sample = Sample(id=f"s{line}", question=f"Question {line}?", answer=f"Answer {line}.", contexts=("c",))
            for repeat in range(repeats):
                scores = {
                    name: score(name, values[repeat] if isinstance(values, list) else values)
                    for name, values in row.items()
                }
                runs.record(run_id, SampleResult(sample, scores, line=line, repeat=repeat), repeat=repeat)
        for k in range(bad_rows):
            runs.record_error(run_id, SampleError("missing or empty field 'answer'", source="data.jsonl", line=100 + k))
        runs.set_status(run_id, "finished")
    return run_id


word_judge = word_overlap_answer
"""The fake judge these tests judge with: :func:`assay.testing.word_overlap_answer`, the rules
``assay judges fake`` serves (a statement is supported when each of its content words is a word
of the context; relevant when the answer shares a content word with the question)."""


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: this tree first, no keys or judge from the host."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "ASSAY_"))}
    env.update({"PYTHONPATH": str(SRC), "COLUMNS": "200", "NO_COLOR": "1", "OPENAI_API_KEY": "sk-test", **extra})
    return env


def assay_cli(
    cwd: Path, *args: str, stdout: Any = subprocess.PIPE, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the real ``python -m assay`` in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "assay", *args],
        cwd=cwd,
        env=cli_env(),
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
        check=False,
    )
