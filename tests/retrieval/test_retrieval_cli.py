"""``assay retrieval`` and ``assay trec`` through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from assay.cli._retrieval import retrieval, trec

FIXTURES = Path(__file__).parent.parent / "fixtures" / "trec_eval"


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command("retrieval")(retrieval)
    app.command("trec")(trec)
    return app


def test_trec_prints_trec_eval_lines() -> None:
    result = CliRunner().invoke(
        _app(),
        ["trec", str(FIXTURES / "qrels.test"), str(FIXTURES / "results.test"), "-m", "ndcg_cut.10", "-m", "map", "-q"],
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "ndcg_cut_10           \tall\t0.3016" in lines
    assert "map                   \tall\t0.1785" in lines
    assert "map                   \t301\t0.0324" in lines


def test_trec_graded_level_and_table() -> None:
    result = CliRunner().invoke(
        _app(),
        ["trec", str(FIXTURES / "qrels.rel_level"), str(FIXTURES / "results.test"), "-m", "map", "-l", "2", "--table"],
    )
    assert result.exit_code == 0, result.output
    assert "0.1667" in result.stdout


def test_trec_reports_bad_line(tmp_path: Path) -> None:
    bad = tmp_path / "run.txt"
    bad.write_text("301 Q0 d1 1 1.0 r\n301 Q0 d2 1\n")
    result = CliRunner().invoke(_app(), ["trec", str(FIXTURES / "qrels.test"), str(bad)])
    assert result.exit_code == 1
    assert "run.txt:2" in result.output


def test_retrieval_token_judge(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    rows = [
        {
            "id": "1",
            "query": "capital of France",
            "expected": ["Paris is the capital of France."],
            "retrieved": ["Berlin is in Germany.", "Paris is the capital of France."],
        },
        {
            "id": "2",
            "query": "largest planet",
            "expected": ["Jupiter is the largest planet."],
            "retrieved": ["Jupiter is the largest planet.", "Mars is red."],
        },
    ]
    data.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        _app(), ["retrieval", str(data), "--judge", "token", "--k", "1,2", "-o", str(out), "--matches"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["mean"]["precision@1"] == 0.5
    assert report["mean"]["hit_rate@2"] == 1.0
    assert "precision@1" in result.stdout


def test_retrieval_bad_k() -> None:
    result = CliRunner().invoke(_app(), ["retrieval", "x.jsonl", "--k", "a,b"])
    assert result.exit_code != 0


def test_a_shared_openai_base_url_is_left_alone_and_one_given_to_no_reader_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OPENAI_BASE_URL, set in a shell for other tools, stopped every token-judge run with
    "--base-url is the server of --judge llm's model", an option the user never gave."""
    from assay.cli import app

    data = tmp_path / "r.jsonl"
    row = {
        "id": "q",
        "query": "capital?",
        "expected": ["Paris is the capital."],
        "retrieved": ["Paris is the capital."],
    }
    data.write_text(json.dumps(row) + "\n")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    # the command's own variable is named after the command (ASSAY_RETRIEVAL_...): an app
    # that gives its commands none (this file's own) reads OPENAI_BASE_URL as shared too
    for judge, program in (("token", app), ("semantic", app), ("token", _app())):
        result = CliRunner().invoke(program, ["retrieval", str(data), "--judge", judge, "--k", "1"])
        assert result.exit_code == 0, result.output
        assert "1.0000" in result.output
    refused = {
        ("--judge", "token", "--base-url", "http://x:1/v1"): ("--base-url", "--judge token calls no server"),
        ("--judge", "llm"): ("ASSAY_RETRIEVAL_BASE_URL", "the local judge runs in this process"),
    }
    for options, (given, why) in refused.items():
        if given.startswith("ASSAY_"):
            monkeypatch.setenv(given, "http://x:1/v1")
        result = CliRunner().invoke(app, ["retrieval", str(data), *options])
        flat = " ".join(result.output.split())
        assert result.exit_code == 1 and f"{given} is for openai and anthropic judges; {why}" in flat, flat
