"""A new user's first hour (assay issue 26): every path that looks like success is success.

Each test pins one item of the issue and failed before its fix. Runs are stored through
the real run store (``first_hour.make_run``) and the CLI is the real one: typer's
``CliRunner`` on ``assay.cli.app``, or ``python -m assay`` in a subprocess where a pipe or
an exit code of the process itself is the point.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app
from first_hour import cli_env, make_run


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250", "NO_COLOR": "1"})
    return result.exit_code, result.output


# --- 1. assay gate --metric A --metric B gates every metric ------------------------------------


def test_gate_with_two_metrics_gates_both_and_exits_with_the_worse(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    make_run(
        store, "r", [{"faithfulness": 1.0, "answer_relevancy": 0.0}, {"faithfulness": 1.0, "answer_relevancy": 0.0}]
    )
    # The failing metric first: the old gate kept only the last --metric and passed.
    code, out = invoke("gate", "r", "--store", str(store), "--metric", "answer_relevancy", "--metric", "faithfulness")
    assert code == 1, out
    assert "answer_relevancy" in out and "faithfulness" in out
    assert "GATE FAIL (2 metrics): answer_relevancy >= 0.8 FAIL · faithfulness >= 0.8 PASS" in out


def test_each_gated_metric_has_its_own_threshold(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    rows = [{"faithfulness": 0.75, "answer_relevancy": 1.0}] * 3 + [{"faithfulness": 0.75, "answer_relevancy": 0.0}]
    make_run(store, "r", rows)
    code, out = invoke("gate", "r", "--store", str(store), "-m", "faithfulness=0.7", "-m", "answer_relevancy>=0.7")
    assert code == 0, out
    assert "GATE PASS (2 metrics): faithfulness >= 0.7 PASS · answer_relevancy >= 0.7 PASS" in out
    code, out = invoke("gate", "r", "--store", str(store), "-m", "faithfulness=0.8", "-m", "answer_relevancy=0.7")
    assert code == 1 and "faithfulness >= 0.8 FAIL · answer_relevancy >= 0.7 PASS" in out, out
    # --min is the threshold of a metric named without its own.
    code, out = invoke(
        "gate", "r", "--store", str(store), "-m", "faithfulness", "-m", "answer_relevancy", "--min", "0.7"
    )
    assert code == 0, out
    # A threshold outside [0, 1], a metric given twice, a misspelt one: usage errors (3), with a suggestion.
    assert invoke("gate", "r", "--store", str(store), "-m", "faithfulness=8")[0] == 3
    assert invoke("gate", "r", "--store", str(store), "-m", "faithfulness", "-m", "faithfulness=0.5")[0] == 3
    code, out = invoke("gate", "r", "--store", str(store), "-m", "answer_relevance")
    assert code == 3 and "did you mean 'answer_relevancy'?" in out, out


# --- 5. a closed pipe is not a verdict ---------------------------------------------------------


def _gate_into_a_closed_pipe(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    read, write = os.pipe()
    os.close(read)  # like `| head -1` once head has exited: every write gets EPIPE
    try:
        return subprocess.run(
            [sys.executable, "-m", "assay", "gate", *args],
            cwd=cwd, env=cli_env(), stdout=write, stderr=subprocess.PIPE, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        os.close(write)


def test_a_gate_piped_into_a_closed_pipe_still_exits_with_its_verdict(tmp_path: Path) -> None:
    make_run(tmp_path / "runs.sqlite", "good", [{"faithfulness": 1.0}, {"faithfulness": 1.0}])
    make_run(tmp_path / "runs.sqlite", "bad", [{"faithfulness": 0.0}, {"faithfulness": 0.5}])
    done = _gate_into_a_closed_pipe(tmp_path, "good", "--store", "runs.sqlite")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
    assert _gate_into_a_closed_pipe(tmp_path, "bad", "--store", "runs.sqlite").returncode == 1


# --- 8. every row invalid; one unscored budget -------------------------------------------------


def test_gate_on_a_run_whose_every_row_was_invalid_says_nothing_was_judged(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    make_run(store, "empty", [], bad_rows=3, metrics=["faithfulness"])
    code, out = invoke("gate", "empty", "--store", str(store))
    assert code == 2, out  # unscored: nothing to decide on, not a usage error
    assert "GATE UNSCORED" in out and "nothing was judged: all 3 input rows of run empty were invalid" in out
    assert "has no metric" not in out


def test_run_and_gate_share_one_unscored_budget(tmp_path: Path) -> None:
    from assay.analysis import GatePolicy
    from assay.cli._run import DEFAULT_MAX_UNSCORED, exit_code
    from assay.run import RunStore

    assert GatePolicy().max_unscored == DEFAULT_MAX_UNSCORED
    # 1 result in 12 unscored (8%): assay run calls it evaluated (exit 0); so must the gate.
    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [{"faithfulness": 1.0}] * 11 + [{"faithfulness": None}])
    with RunStore(store) as runs:
        assert exit_code(runs.summary("r"), DEFAULT_MAX_UNSCORED)[0] == 0
    code, out = invoke("gate", "r", "--store", str(store))
    assert code == 0, out


# --- 7. one run, one set of settings, one verdict ----------------------------------------------


def test_a_schema_1_run_with_a_verifier_is_not_resumed_under_todays_verifier(tmp_path: Path) -> None:
    """Its finished samples were judged without the detail veto, guard, evidence window and copy rule."""
    import json

    from assay import evaluate
    from assay.metrics import metric_from_spec
    from assay.models import ScriptedJudge
    from assay.run import ResumeError, RunOptions, RunSpec, RunStore, open_dataset

    v1 = json.loads((Path(__file__).parent / "fixtures" / "metric_specs_v1.json").read_text())
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": i, "question": "Capital?", "answer": f"{i}.", "contexts": [f"{i}."]}) + "\n"
            for i in ("Paris", "Rome")
        )
    )
    judge = ScriptedJudge([])
    for name in ("faithfulness", "answer_relevancy"):
        store = tmp_path / f"{name}.sqlite"
        with RunStore(store) as runs:
            runs.create(
                RunSpec(
                    run_id="old", dataset=str(data), dataset_fingerprint=open_dataset(data).fingerprint,
                    judge=judge.model_id, judge_model=judge.model_id, metrics=(v1[name],),
                    options=RunOptions().model_dump(mode="json"),
                )
            )  # fmt: skip
            runs.set_status("old", "interrupted")
        metric = metric_from_spec(v1[name])
        if name == "faithfulness":
            with pytest.raises(ResumeError, match=r"cannot resume run old.*schema 1.*details.*guard"):
                evaluate(data, [metric], judge, store=store, resume="old", progress=False, reasks=1)
        else:  # everything its judging depends on was recorded: it resumes
            result = evaluate(data, [metric], judge, store=store, resume="old", progress=False, reasks=1)
            assert result.run_id == "old" and result.n_samples == 2


def test_the_report_gate_column_is_the_gates_own_verdict(tmp_path: Path) -> None:
    """Every repeat passes, but one simulated rerun in nine fails: the gate says flaky, so must the column."""
    import re

    from assay.analysis import GatePolicy, analyze_repeats, evaluate_gate
    from assay.run import RunStore

    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [{"faithfulness": [1.0, 1.0, 0.5]}, {"faithfulness": [0.5, 1.0, 1.0]}])
    with RunStore(store) as runs:
        expected = evaluate_gate(analyze_repeats(list(runs.records("r")), "faithfulness"), GatePolicy(threshold=0.7))
    assert expected.outcome == "flaky" and all(expected.repeat_passes)
    out = tmp_path / "report.html"
    code, output = invoke("report", "r", "--store", str(store), "--threshold", "0.7", "--gate", "-o", str(out))
    assert code == 0, output
    html = out.read_text()
    summary = re.sub(r"<[^>]+>", " ", html.split('<section id="summary">')[1].split("</section>")[0])
    assert "GATE FLAKY" in html, html
    assert f"P(pass) {expected.p_pass:.2f}" in summary


def test_a_base_url_carrying_the_key_in_its_query_is_refused_before_any_call(tmp_path: Path) -> None:
    """The client appends /chat/completions after the query: such a URL can never work."""
    from assay.errors import ConfigError
    from assay.models import get_judge

    with pytest.raises(ConfigError, match=r"api_key=\[redacted\] has a query string.*OPENAI_API_KEY") as caught:
        get_judge("openai:m", base_url="http://127.0.0.1:9/v1?api_key=sk-SECRETSECRET")
    assert "SECRETSECRET" not in str(caught.value)
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "a", "answer": "Paris.", "contexts": ["Paris."]}\n')
    code, out = invoke("run", str(data), "--judge", "openai:m", "--base-url", "http://127.0.0.1:9/v1?key=sk-SECRETSECRET",
                       "--store", str(tmp_path / "runs.sqlite"))  # fmt: skip
    assert code == 1 and "SECRETSECRET" not in out and "query string" in out, out
