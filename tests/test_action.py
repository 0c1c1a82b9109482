"""The composite GitHub Action (action.yml): its ``run:`` steps, run in order as a runner would.

Each ``run:`` step is executed with ``bash --noprofile --norc -eo pipefail`` (GitHub's
``shell: bash``) in a temporary directory, with ``GITHUB_ACTION_PATH`` at this repository,
a fake ``GITHUB_STEP_SUMMARY`` and ``GITHUB_OUTPUT``, and a loopback FakeOpenAIServer as the
judge. ``uses:`` steps (setup-python, upload-artifact) are checked, not run. ``python -m
pip`` is intercepted (nothing is installed; the arguments are recorded): the project's
venv already holds assay, and tests never reach the network.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from assay.testing import FakeOpenAIServer

yaml = pytest.importorskip("yaml")
pytest.importorskip("openai")

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load_action() -> dict[str, Any]:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert isinstance(action, dict)
    return action


def responder(body: dict[str, Any]) -> str:
    """Supports every statement but those about grass."""
    user = body["messages"][-1]["content"]
    items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    statements = [i.split("] ", 1)[1] for i in items]
    return json.dumps(
        {
            "verdicts": [
                {
                    "statement": s,
                    "reason": "the context never mentions grass" if "grass" in s else "stated in the context",
                    "verdict": int("grass" not in s),
                }
                for s in statements
            ]
        }
    )


@dataclass
class Job:
    """What running the action's steps produced."""

    exit_code: int
    summary: str
    outputs: dict[str, dict[str, str]]
    logs: list[str] = field(default_factory=list)
    skipped_uses: list[str] = field(default_factory=list)
    pip_args: list[str] = field(default_factory=list)


def run_action(tmp_path: Path, inputs: dict[str, str], env: dict[str, str] | None = None) -> Job:
    """Run action.yml's steps in order: a failed step skips the rest but ``if: !cancelled()`` ones."""
    action = load_action()
    declared = action["inputs"]
    assert set(inputs) <= set(declared), set(inputs) - set(declared)
    values = {name: str(spec.get("default", "")) for name, spec in declared.items()} | inputs
    assert all(values[name] for name, spec in declared.items() if spec.get("required"))
    outputs: dict[str, dict[str, str]] = {}

    def expand(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            expr = match.group(1)
            if found := re.fullmatch(r"inputs\.([\w-]+)", expr):
                return values[found.group(1)]
            if found := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr):
                return outputs.get(found.group(1), {}).get(found.group(2), "")
            raise AssertionError(f"the test does not evaluate ${{{{ {expr} }}}}")

        return EXPRESSION.sub(one, text)

    fakebin = tmp_path / "fakebin"
    fakebin.mkdir()
    pip_log = tmp_path / "pip-args"
    shim = fakebin / "python"
    shim.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then shift 2; printf "%s\\n" "$@" > "$PIP_LOG"; exit 0; fi\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    shim.chmod(0o755)
    summary = tmp_path / "step_summary.md"
    summary.write_text("")
    base_env = {
        "PATH": f"{fakebin}:{VENV_BIN}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_STEP_SUMMARY": str(summary),
        "OPENAI_API_KEY": "sk-test",
        "PIP_LOG": str(pip_log),
        "COLUMNS": "200",
    }
    base_env |= env or {}  # the workflow's own env: (a job's ``env:``)
    if os.environ.get("PYTHONPATH"):  # a checkout run with PYTHONPATH=src: its assay, not the venv's install
        base_env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    job = Job(exit_code=0, summary="", outputs=outputs)
    failed = False
    for i, step in enumerate(action["runs"]["steps"]):
        condition = step.get("if")
        if failed and condition != "${{ !cancelled() }}":
            continue
        if "uses" in step:
            job.skipped_uses.append(step["uses"])
            continue
        script = step["run"]
        assert step.get("shell") == "bash", step.get("name")
        assert "${{" not in script, f"step {step.get('name')!r}: inputs reach a script only through env"
        output_file = tmp_path / f"github_output_{i}"
        output_file.write_text("")
        env = base_env | {k: expand(str(v)) for k, v in (step.get("env") or {}).items()}
        env["GITHUB_OUTPUT"] = str(output_file)
        (tmp_path / "step.sh").write_text(script)
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(tmp_path / "step.sh")],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        job.logs.append(f"--- {step.get('name')} (exit {done.returncode})\n{done.stdout}{done.stderr}")
        if "id" in step:
            lines = output_file.read_text().splitlines()
            outputs[step["id"]] = dict(line.split("=", 1) for line in lines if "=" in line)
        if done.returncode != 0 and not failed:
            failed, job.exit_code = True, done.returncode
    job.summary = summary.read_text(encoding="utf-8")
    job.pip_args = pip_log.read_text().splitlines() if pip_log.exists() else []
    return job


def dataset(tmp_path: Path, *answers: str) -> str:
    rows = [
        {"id": f"r{i}", "question": "Sky?", "answer": a, "contexts": ["The sky is blue. The sky is vast."]}
        for i, a in enumerate(answers)
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return "data.jsonl"


def judge_inputs(server: FakeOpenAIServer, data: str) -> dict[str, str]:
    return {
        "data": data,
        "judge": "openai:fake",
        "base-url": server.base_url,
        "repeats": "3",
        "per-sample": "true",
        "run-args": "--decomposer sentences --no-cache --reasks 0",
    }


def test_action_yml_declares_the_inputs_steps_and_an_upload_that_always_runs() -> None:
    action = load_action()
    assert action["runs"]["using"] == "composite"
    assert {"data", "metrics", "judge", "metric", "min", "max-flake", "repeats", "python-version", "pip-args"} <= set(
        action["inputs"]
    )
    steps = action["runs"]["steps"]
    assert steps[0]["uses"].startswith("actions/setup-python@")
    assert steps[0]["with"]["python-version"] == "${{ inputs.python-version }}"
    (upload,) = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert upload["if"] == "${{ !cancelled() }}"  # also after a failed gate
    assert upload["with"]["path"].splitlines() == ["${{ inputs.report }}", "${{ inputs.runs-dir }}"]
    names = [s.get("name") for s in steps]
    assert names.index("Gate") < names.index("Report") < names.index("Upload the report") < names.index("Result")
    assert "python -c" not in json.dumps(action)  # no inline Python


def test_a_passing_gate_passes_the_job_with_a_summary_and_a_report(tmp_path: Path) -> None:
    with FakeOpenAIServer(responder) as server:
        job = run_action(tmp_path, judge_inputs(server, dataset(tmp_path, "The sky is blue.", "The sky is vast.")))
    logs = "\n".join(job.logs)
    assert job.exit_code == 0, logs
    assert job.pip_args == ["install", f"{ROOT}[openai]"]  # the action's own checkout, judge's extra
    assert job.outputs["run"]["exit"] == "0" and job.outputs["gate"]["exit"] == "0"
    assert job.summary.startswith("### ✅ assay gate: PASS")
    assert "Decided from 3 repeats" in job.summary and "| faithfulness (gated) | 1.000 |" in job.summary
    assert "gating the latest run" in logs and "reporting the latest run" in logs
    assert (tmp_path / "assay-report.html").read_text().startswith("<!DOCTYPE html>")
    assert (tmp_path / "assay-runs" / "index.html").exists()  # the run browser, uploaded with the report
    assert job.skipped_uses == ["actions/setup-python@v5", "actions/upload-artifact@v4"]


def test_a_failing_gate_fails_the_job_and_still_writes_the_report_and_summary(tmp_path: Path) -> None:
    with FakeOpenAIServer(responder) as server:
        inputs = judge_inputs(server, dataset(tmp_path, "The sky is blue. The grass is red.", "The sky is blue."))
        job = run_action(tmp_path, inputs | {"pip-args": "--no-cache-dir --quiet", "extras": "openai,parquet"})
    logs = "\n".join(job.logs)
    assert job.exit_code == 1, logs  # the job's result is the gate's
    assert job.outputs["gate"]["exit"] == "1"
    assert job.pip_args == ["install", "--no-cache-dir", "--quiet", f"{ROOT}[openai,parquet]"]
    flat = job.summary.replace("\\", "")
    assert job.summary.startswith("### ❌ assay gate: FAIL")
    assert "✗ The grass is red. — *the context never mentions grass* (3/3 repeats)" in flat
    assert (tmp_path / "assay-report.html").exists()  # the report step ran before the result
    assert "actions/upload-artifact@v4" in job.skipped_uses  # reached: it runs whatever the gate said


def test_a_run_that_cannot_start_stops_the_job_before_the_gate(tmp_path: Path) -> None:
    job = run_action(tmp_path, {"data": "missing.jsonl", "judge": "openai:fake", "base-url": "http://127.0.0.1:9/v1"})
    assert job.exit_code == 1, "\n".join(job.logs)
    assert "gate" not in job.outputs and job.summary == ""
    assert "actions/upload-artifact@v4" in job.skipped_uses  # !cancelled(): still attempted (nothing to upload)
    assert os.path.exists(tmp_path / "assay-report.html") is False


def test_invalid_input_rows_fail_the_gate_and_the_job_with_a_summary_that_says_why(tmp_path: Path) -> None:
    data = dataset(tmp_path, "The sky is blue.", "The sky is vast.")
    with (tmp_path / data).open("a") as out:
        out.write('{"id": "broken", "question": \n')  # not JSON: an invalid row, not judged
    with FakeOpenAIServer(responder) as server:
        job = run_action(tmp_path, judge_inputs(server, data))
    logs = "\n".join(job.logs)
    # The rows judged pass; the row never judged is not a pass: the gate itself says so (it used to pass).
    assert job.outputs["run"]["exit"] == "2" and job.outputs["gate"]["exit"] == "2", logs
    assert job.exit_code == 2 and "a partial run whose rows were not all judged" in logs
    summary = job.summary.replace("\\", "")
    assert summary.startswith("### ⚠️ assay gate: INCOMPLETE")
    assert "1 input row was invalid (line 3) and not judged; fix it and run again, or pass --max-invalid-rows 1" in (
        summary.replace("\u2060", "")
    )


def test_max_invalid_rows_tolerates_invalid_rows_and_the_job_says_so(tmp_path: Path) -> None:
    data = dataset(tmp_path, "The sky is blue.", "The sky is vast.")
    with (tmp_path / data).open("a") as out:
        out.write('{"id": "broken", "question": \n')
    with FakeOpenAIServer(responder) as server:
        job = run_action(tmp_path, judge_inputs(server, data) | {"max-invalid-rows": "1"})
    logs = "\n".join(job.logs)
    assert job.outputs["run"]["exit"] == "2" and job.outputs["gate"]["exit"] == "0", logs
    assert job.exit_code == 0 and "::warning::some input rows were invalid and were not judged" in logs
    assert "tolerated by --max-invalid-rows 1" in job.summary.replace("\\", "").replace("\u2060", "")


@pytest.mark.parametrize("variable", ["ASSAY_RUN_JUDGE", "ASSAY_JUDGE"])
def test_a_judge_named_in_the_workflows_env_is_the_one_installed_and_run(tmp_path: Path, variable: str) -> None:
    # ASSAY_RUN_JUDGE outranks ASSAY_JUDGE in assay run: the install step chose the local judge's packages for it
    with FakeOpenAIServer() as server:
        inputs = {k: v for k, v in judge_inputs(server, dataset(tmp_path, "The sky is blue.")).items() if k != "judge"}
        job = run_action(tmp_path, inputs, env={variable: "openai:fake"})
        judged = server.calls
    assert job.pip_args == ["install", f"{ROOT}[openai]"], job.pip_args
    assert job.exit_code == 0 and judged > 0, "\n".join(job.logs)
