"""An agent score's evidence where people read it: the run summary, `assay runs show --sample`, the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.report import load_report, render_report
from assay.run import RunStore
from assay.testing import FakeOpenAIServer

pytest.importorskip("openai")

ROW = {
    "id": "trip-1",
    "messages": [
        {"role": "system", "content": "Agent policy: confirm before booking."},
        {"role": "user", "content": "Cancel ABC and book HAT1."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "cancel_reservation", "arguments": '{"id": "ABC"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": '{"status": "cancelled"}'},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "b",
                    "type": "function",
                    "function": {"name": "book_reservation", "arguments": '{"flight": "HAT1"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "b", "content": "Error: no seats"},
        {"role": "assistant", "content": "ABC is cancelled; HAT1 is full."},
    ],
    "reference": "Cancel reservation ABC and book flight HAT1.",
    "reference_tool_calls": [
        {"name": "cancel_reservation", "arguments": {"id": "ABC"}},
        {"name": "book_reservation", "arguments": {"flight": "HAT1"}},
    ],
}


def judge(body: dict[str, Any]) -> str:
    user = body["messages"][1]["content"]
    if "<goal>" in user:
        return json.dumps({"requirements": ["Cancel reservation ABC", "Book flight HAT1"]})
    requirement = user.split("<requirement>\n")[1].split("\n</requirement>")[0]
    if "Cancel" in requirement:
        return json.dumps({"verdict": "met", "calls": [1], "reason": "call 1 cancelled ABC"})
    return json.dumps({"verdict": "not met", "calls": [2], "reason": "the booking failed"})


@pytest.fixture
def stored_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.jsonl").write_text(json.dumps(ROW) + "\n")
    args = ["run", "agent.jsonl", "-m", "agent_goal_accuracy_with_reference", "-m", "agent_state_match"]
    with FakeOpenAIServer(judge) as server:
        result = CliRunner().invoke(
            app,
            [*args, "--judge", "openai:fake", "--base-url", server.base_url, "--no-cache"],
            env={"COLUMNS": "200", "OPENAI_API_KEY": "sk-test"},
        )
    assert result.exit_code == 0, result.output
    with RunStore(".assay/runs.sqlite") as store:
        (info,) = store.runs()
    return info.run_id, result.output


def test_the_run_summary_shows_the_end_state_and_the_unmet_requirement_with_its_cited_call(
    stored_run: tuple[str, str],
) -> None:
    _, output = stored_run
    assert "lowest agent_goal_accuracy_with_reference" in output
    assert "end state: 2 state-changing call(s), 0 read call(s)" in output
    assert 'call 2 book_reservation({"flight": "HAT1"}) failed' in output
    assert "Book flight HAT1 (the booking failed)" in output
    assert 'cites call 2: book_reservation({"flight": "HAT1"})' in output
    assert "unexpected" not in output  # the state match: a failed attempt is no change


def test_runs_show_sample_prints_every_requirement_and_the_end_state(stored_run: tuple[str, str]) -> None:
    run_id, _ = stored_run
    result = CliRunner().invoke(app, ["runs", "show", run_id, "--sample", "trip-1"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "agent_goal_accuracy_with_reference: 0.000" in out
    assert "1 of 2 requirements met (reference goal)" in out
    assert "✓ Cancel reservation ABC (call 1 cancelled ABC)" in out
    assert 'cites call 1: cancel_reservation({"id": "ABC"})' in out
    assert "✗ Book flight HAT1 (the booking failed)" in out
    assert 'call 1 cancel_reservation({"id": "ABC"}) succeeded' in out
    assert "agent_state_match: 0.000" in out
    assert "every call to book_reservation failed (call 2: Error: no seats)" in out
    missing = CliRunner().invoke(app, ["runs", "show", run_id, "--sample", "nope"])
    assert missing.exit_code == 1 and "has no sample nope" in missing.output


def test_the_report_carries_the_end_state_and_the_cited_calls(stored_run: tuple[str, str]) -> None:
    run_id, _ = stored_run
    report = load_report(".assay/runs.sqlite", run_id)
    entries = {e["name"]: e for e in report.samples[0]["repeats"][0]["scores"]}
    goal = entries["agent_goal_accuracy_with_reference"]
    assert goal["end_state"]["changes"] == [
        {"text": 'call 1: cancel_reservation({"id": "ABC"})', "outcome": "succeeded", "tone": "ok",
         "result": '{"status": "cancelled"}'},
        {"text": 'call 2: book_reservation({"flight": "HAT1"})', "outcome": "failed", "tone": "bad",
         "result": "Error: no seats"},
    ]  # fmt: skip
    assert [v["cited"] for v in goal["verdicts"]] == [
        ['call 1: cancel_reservation({"id": "ABC"})'],
        ['call 2: book_reservation({"flight": "HAT1"})'],
    ]
    assert entries["agent_state_match"]["end_state"]["kinds"] == "inferred from tool names"
    html = render_report(".assay/runs.sqlite", run_id)
    assert "endStateView" in html and "citedCalls" in html
