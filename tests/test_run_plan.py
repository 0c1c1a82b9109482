"""A run is described once (``RunPlan``): options a judge or an engine does not use are refused, not ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay import evaluate
from assay.cli import app
from assay.errors import ConfigError
from assay.models import ScriptedJudge

ROWS = [{"id": "a", "question": "Capital?", "answer": "Paris.", "contexts": ["Paris is the capital."]}]


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


@pytest.mark.parametrize("judge", ["local", "local:/models/judge.gguf"])
def test_a_base_url_given_to_a_judge_that_reads_none_is_refused_on_the_command_line(data: Path, judge: str) -> None:
    result = CliRunner().invoke(app, ["run", str(data), "--judge", judge, "--base-url", "http://x:1/v1", "--dry-run"])
    assert result.exit_code == 1, result.output
    flat = " ".join(result.output.split())
    assert "--base-url" in flat and "local" in flat, flat
    assert not Path(".assay/runs.sqlite").exists()


def test_openai_base_url_from_the_environment_is_not_an_error_for_a_local_judge(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://x:1/v1")
    result = CliRunner().invoke(app, ["run", str(data), "--judge", "local", "--dry-run"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("ASSAY_RUN_BASE_URL", "http://x:1/v1", "reads no URL"),
        ("ASSAY_RUN_ADDRESS", "auto", "is for --engine ray"),
        ("ASSAY_RUN_WORKERS", "3", "is for --engine ray"),
    ],
)
def test_the_run_commands_own_variable_is_refused_where_it_would_be_ignored(
    data: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, says: str
) -> None:
    """Set for assay run, it is meant for the run: a local run that dropped it ran another judge
    or engine than the one the job named, and said nothing. The variable is named."""
    monkeypatch.setenv(variable, value)
    for judge in ("local", "local:/models/judge.gguf"):
        result = CliRunner().invoke(app, ["run", str(data), "--judge", judge, "--dry-run"])
        flat = " ".join(result.output.split())
        assert result.exit_code == 1 and variable in flat and says in flat, flat
    assert not Path(".assay/runs.sqlite").exists()


@pytest.mark.parametrize(("option", "value"), [("--address", "auto"), ("--workers", "3")])
def test_a_ray_option_given_to_the_local_engine_is_refused(data: Path, option: str, value: str) -> None:
    result = CliRunner().invoke(app, ["run", str(data), "--judge", "local", option, value, "--dry-run"])
    assert result.exit_code == 1, result.output
    assert option in result.output and "--engine ray" in " ".join(result.output.split())


def test_ray_address_from_the_environment_is_not_an_error_for_the_local_engine(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAY_ADDRESS", "auto")
    result = CliRunner().invoke(app, ["run", str(data), "--judge", "local", "--dry-run"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("judge", ["local", "local:/models/judge.gguf", "scripted"])
def test_evaluate_refuses_a_base_url_its_judge_would_not_use(judge: str, tmp_path: Path) -> None:
    given = ScriptedJudge([]) if judge == "scripted" else judge  # a judge object: its URL is its own
    with pytest.raises(ConfigError, match="base_url"):
        evaluate(ROWS, "faithfulness", judge=given, base_url="http://x:1/v1", store=tmp_path / "r.db", progress="none")
    assert not (tmp_path / "r.db").exists()


LABELS = [
    {"id": "a", "question": "q", "answer": "Paris is in France.", "contexts": ["Paris is in France."], "label": 1}
]


@pytest.mark.parametrize(
    ("command", "given"),
    [
        (["calibrate", "labels.jsonl", "--judge", "local", "--base-url", "http://x:1/v1"], "--base-url"),
        (["calibrate", "labels.jsonl", "--judge", "local:/models/j.gguf"], "ASSAY_CALIBRATE_BASE_URL"),
        (["judges", "bench", "--judge", "local", "--base-url", "http://x:1/v1"], "--base-url"),
        (["judges", "bench", "--judge", "local"], "ASSAY_JUDGES_BENCH_BASE_URL"),
    ],
)
def test_calibrate_and_bench_refuse_a_url_no_judge_of_theirs_reads(
    data: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], given: str
) -> None:
    """Calibrating the local model with the URL of the judge meant stored that URL with the
    calibration and attached the figures to the local judge, with nothing said."""
    Path("labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in LABELS))
    if given.startswith("ASSAY_"):
        monkeypatch.setenv(given, "http://x:1/v1")
    result = CliRunner().invoke(app, command)
    flat = " ".join(result.output.split())
    assert result.exit_code == 1 and f"{given} is for openai and anthropic judges" in flat, flat
    assert not Path(".assay/runs.sqlite").exists()


def test_calibrate_and_bench_leave_a_shared_openai_base_url_alone_and_refuse_one_passed_in(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.run import bench_judges, calibrate

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # set for other tools: not an error
    for command in (["calibrate", "labels.jsonl", "--judge", "local"], ["judges", "bench", "--judge", "local"]):
        Path("labels.jsonl").write_text("")  # no item: the command stops after its options are checked
        result = CliRunner().invoke(app, [*command, "--set", "nope"] if "bench" in command else command)
        assert "is for openai and anthropic judges" not in result.output, result.output
    Path("labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in LABELS))
    with pytest.raises(ConfigError, match="base_url"):
        calibrate("labels.jsonl", "local", base_url="http://x:1/v1", progress="none")
    with pytest.raises(ConfigError, match="base_url"):
        bench_judges(["local"], base_url="http://x:1/v1", progress="none")
    assert not Path(".assay/runs.sqlite").exists()
