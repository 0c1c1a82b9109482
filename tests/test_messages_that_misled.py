"""Issue 56, messages that misled: each a behaviour a new user met, pinned here.

- agent traces and tool calls in a CSV written by pandas (Python literals: single quotes,
  ``None``, ``True``) are read as contexts are, not rejected row by row as invalid JSON;
- a DataFrame's errors name the frame's own index label, not a 1-based count;
- a passing gate prints no "failing samples" table, and the statements-needed table only
  the rows it can compute;
- a score below 1 with no verdict against it (``tool_call_accuracy``'s extra call) shows
  its reason in the run summary, not ``—``;
- ``assay runs export ... | head`` ends 0 on a closed pipe, like ``assay run ... | head``;
- a benchmark that prints MISS exits 1, and ``throughput.py`` computes its ideal from the
  calls it made.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay import evaluate
from assay.cli import app
from assay.models import FunctionJudge
from assay.run import RunStore
from assay.testing import FakeOpenAIServer

pd = pytest.importorskip("pandas")

ROOT = Path(__file__).resolve().parents[1]


def agent_row(n: int, *, extra_read: bool = False, **metadata: Any) -> dict[str, Any]:
    """An OpenAI-format trace that cancels order n (after an extra read, if asked)."""
    calls = []
    if extra_read:
        calls.append({"id": f"r{n}", "type": "function", "function": {"name": "get_order", "arguments": "{}"}})
    args = json.dumps({"order_id": n, "notify": True, "note": None})
    calls.append({"id": f"c{n}", "type": "function", "function": {"name": "cancel_order", "arguments": args}})
    return {
        "id": f"a{n}",
        "question": f"Cancel order {n}.",
        "trace": [
            {"role": "user", "content": f"Cancel order {n}, it's wrong."},
            {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "cancelled"},
            {"role": "assistant", "content": "Done, it's cancelled."},
        ],
        "reference_tool_calls": [{"name": "cancel_order", "arguments": {"order_id": n, "notify": True, "note": None}}],
        **metadata,
    }


def _scores(data: Any) -> dict[str, float]:
    result = evaluate(data, "tool_call_accuracy", FunctionJudge(lambda m, r: "{}"), progress=False)
    assert result.errors == [], [str(e) for e in result.errors]
    return {r.sample.id: r.scores["tool_call_accuracy"].value for r in result.results}


def test_pandas_written_traces_and_tool_calls_in_a_csv_are_read_as_in_jsonl(tmp_path: Path) -> None:
    rows = [agent_row(1), agent_row(2, extra_read=True), agent_row(3)]
    jsonl = tmp_path / "agents.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    written = tmp_path / "agents.csv"
    pd.DataFrame(rows).to_csv(written, index=False)  # lists and dicts as their repr: 'role', None, True
    assert "[{'role': 'user'" in written.read_text() and "'note': None" in written.read_text()
    expected = _scores(jsonl)
    assert expected == {"a1": 1.0, "a2": 0.5, "a3": 1.0}
    assert _scores(written) == expected


def test_a_python_literal_cell_runs_no_code(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    pd.DataFrame(
        [{"id": "x", "trace": "[__import__('os').system('touch pwned')]", "reference_tool_calls": "[]"}]
    ).to_csv(path, index=False)
    result = evaluate(path, "tool_call_accuracy", FunctionJudge(lambda m, r: "{}"), progress=False)
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()
    (error,) = result.errors
    assert "column 'trace': invalid JSON" in str(error)


@pytest.mark.parametrize(
    ("index", "shown"), [([10, 11, 12], "index 11"), (["q1", "q2", "q3"], "index 'q2'")], ids=["ints", "labels"]
)
def test_dataframe_errors_name_the_frames_own_index_label(index: list[Any], shown: str) -> None:
    rows = [
        {"id": "1", "answer": "The sky is blue.", "contexts": ["The sky is blue."]},
        {"id": "2", "contexts": ["The sky is blue."]},
        {"id": "3", "answer": "Grass is green.", "contexts": ["Grass is green."]},
    ]
    frame = pd.DataFrame(rows, index=index)
    judge = FunctionJudge(lambda m, r: json.dumps({"verdicts": [{"statement": "s", "reason": "r", "verdict": 1}]}))
    result = evaluate(frame, "faithfulness", judge, progress=False)
    (error,) = result.errors
    assert str(error) == f"<dataframe>: {shown}: missing or empty field 'answer'"
    assert error.line == 2  # the position still orders and keys the row
    assert frame.loc[index[1], "id"] == "2"  # the label finds the row the error names


# -- the gate and the run summary ---------------------------------------------------------------


def _stored(tmp_path: Path, rows: list[dict[str, Any]], metric: str, judge: FunctionJudge) -> Path:
    store = tmp_path / "runs.sqlite"
    evaluate(rows, metric, judge, progress=False, store=store)
    return store


def _gate(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["gate", *args], env={"COLUMNS": "300"})
    return result.exit_code, result.output


def _one_verdict_judge(unsupported: set[str]) -> FunctionJudge:
    """Batch faithfulness verdicts: 0 for a statement holding a word of ``unsupported``, else 1."""

    def reply(messages: list[dict[str, str]], request: Any) -> str:
        user = messages[-1]["content"]
        items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
        statements = [item.split("] ", 1)[1] for item in items]
        verdicts = [
            {"statement": s, "reason": "checked", "verdict": int(not any(w in s for w in unsupported))}
            for s in statements
        ]
        return json.dumps({"verdicts": verdicts})

    return FunctionJudge(reply, per_statement=False)


def _rag(n: int, answer: str) -> dict[str, Any]:
    return {"id": f"r{n}", "question": "Q?", "answer": answer, "contexts": ["The sky is blue. Grass is green."]}


def test_a_passing_gate_prints_no_failing_samples_table(tmp_path: Path) -> None:
    rows = [_rag(n, "The sky is blue. Grass is green.") for n in range(1, 9)]
    rows.append(_rag(9, "The sky is blue. The moon is cheese."))  # 0.5: below 0.8, but the mean passes
    store = _stored(tmp_path, rows, "faithfulness", _one_verdict_judge({"moon"}))
    code, out = _gate("--latest", "--store", str(store), "-m", "faithfulness=0.8")
    assert code == 0, out
    assert "GATE PASS" in out
    assert "failing samples" not in out and "The moon is cheese" not in out
    code, out = _gate("--latest", "--store", str(store), "-m", "faithfulness=0.95")
    assert code == 1, out
    assert "failing samples" in out and "The moon is cheese" in out


def test_the_statements_needed_table_shows_only_rows_it_can_compute(tmp_path: Path) -> None:
    rows = [_rag(n, "The sky is blue.") for n in range(1, 7)]  # one statement each: n=1
    store = _stored(tmp_path, rows, "faithfulness", _one_verdict_judge(set()))
    code, out = _gate("--latest", "--store", str(store), "-m", "faithfulness=0.8")
    assert code == 0, out
    assert "statements needed for a stable 0.8 gate" in out
    # At n=1 no threshold above 0 is stable: the column said "0.00" in every row; and a rate
    # needing more than 200 statements with no threshold either is no row.
    assert "highest stable threshold" not in out
    assert "> 200" not in out


def test_a_failing_score_without_a_failing_verdict_shows_its_reason_in_the_run_summary(tmp_path: Path) -> None:
    data = tmp_path / "agents.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in [agent_row(1), agent_row(2, extra_read=True)]))
    with FakeOpenAIServer(lambda body: "{}") as server:  # tool_call_accuracy asks no judge
        args = ["run", str(data), "-m", "tool_call_accuracy", "--judge", "openai:fake", "--base-url", server.base_url]
        args += ["--store", str(tmp_path / "s.sqlite"), "--progress", "none", "--no-cache"]
        result = CliRunner().invoke(app, args, env={"COLUMNS": "300", "OPENAI_API_KEY": "sk-fake"})
    out = " ".join(result.output.split())
    assert "lowest tool_call_accuracy" in out, result.output
    lowest = out.split("lowest tool_call_accuracy", 1)[1]
    assert "0.500" in lowest
    assert "unmatched calls made: 1: get_order({})" in lowest, result.output


def test_a_failing_sample_without_a_failing_verdict_shows_its_reason_in_the_gate(tmp_path: Path) -> None:
    rows = [agent_row(1), agent_row(2, extra_read=True)]
    store = _stored(tmp_path, rows, "tool_call_accuracy", FunctionJudge(lambda m, r: "{}"))
    code, out = _gate("--latest", "--store", str(store), "-m", "tool_call_accuracy=0.8", "--per-sample")
    assert code == 1, out
    said = " ".join(out.split())
    assert "score below 0.8: 1 of 1 expected call matched; 2 calls made; unmatched calls made: 1: get_order({})" in (
        said.replace(" │ ", " ").replace("│", "")
    ), out


# -- a closed pipe -------------------------------------------------------------------------------


def test_runs_export_into_a_closed_pipe_ends_0(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    long = "The sky is blue. " * 200
    rows = [_rag(n, long) for n in range(1, 121)]  # far more than a pipe's buffer
    evaluate(rows, "faithfulness", _one_verdict_judge(set()), progress=False, store=store)
    with RunStore(store) as runs:
        run_id = runs.latest()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for fmt in ("csv", "jsonl"):
        command = [sys.executable, "-m", "assay", "runs", "export", run_id, "--format", fmt, "--store", str(store)]
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            proc.stdout.readline()
            proc.stdout.close()  # what head does after its lines
            err = proc.stderr.read().decode()
            code = proc.wait(timeout=120)
        assert code == 0, (fmt, err)
        assert "Traceback" not in err and "BrokenPipe" not in err, err


# -- benchmarks ----------------------------------------------------------------------------------


def _throughput(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(ROOT / "benchmarks" / "throughput.py"), "--skip-ragas", "--stream-samples", "0"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=300, check=False)


def test_throughput_takes_its_ideal_from_the_calls_made_and_exits_1_on_a_miss() -> None:
    done = _throughput("--samples", "6", "--latency", "0.02", "--concurrency", "2")
    rows = {line[:38].strip(): line[38:] for line in done.stdout.splitlines()}
    calls = int(rows["assay calls (scores / server)"].split("/")[1])
    ideal = float(rows["assay ideal"].split("s")[0])
    assert ideal == pytest.approx(calls * 0.02 / 2, abs=0.006)
    missed = any(line.rstrip().endswith(" MISS") for line in done.stdout.splitlines())
    assert done.returncode == (1 if missed else 0), done.stdout + done.stderr
    # the filling run and the re-run each run in a process of their own, through one cache file
    assert int(rows["cached re-run calls (server)"].split()[0]) == 0
    assert int(rows["cache-filling run wall (a new process)"].split("(")[1].split()[0]) == calls
    # No latency: the ideal is 0 s, which no run meets: a MISS, and the script says so in its exit code.
    miss = _throughput("--samples", "4", "--latency", "0", "--concurrency", "2")
    assert "MISS" in miss.stdout
    assert miss.returncode == 1, miss.stdout + miss.stderr
