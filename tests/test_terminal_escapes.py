"""Untrusted text never reaches the terminal raw (assay issue 14, part 7).

A sample id, answer, judge reason, dataset name or file name holding ESC sequences can
retitle the terminal window (``ESC ] 0 ; TITLE BEL``), clear the screen (``ESC [ 2 J``)
or hide what follows (``ESC [ 8 m``); bidi overrides reorder what a reader sees. Every
command that prints such text goes through ``assay._safety.printable``: these tests feed
the three payloads (and a bidi override, and rich markup) through each printing path and
assert that the output holds no raw control character, and that the payload is still
shown, as visible escapes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from assay import Faithfulness, Sample, Score, Verdict
from assay._safety import printable
from assay.cli import app
from assay.models import FunctionJudge
from assay.run import RunSpec, RunStore, SampleResult

TITLE, CLEAR, HIDE = "\u001b]0;TITLE\u0007", "\u001b[2J", "\u001b[8m"
PAYLOADS = (TITLE, CLEAR, HIDE)
BIDI = "\u202e"
MARKUP = "[red]markup[/red]"

# What must never reach a terminal raw: C0 controls but tab and newline, DEL, C1 controls,
# and the bidi marks and overrides. (Written out here, not imported from the code under test.)
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def hostile(tag: str) -> str:
    """``tag`` wrapped in every payload: ESC title, clear screen, hidden text, bidi override, markup."""
    return f"{tag}{TITLE}a{CLEAR}b{HIDE}c{BIDI}d{MARKUP}"


def visible(text: str) -> str:
    """How ``text`` should look on the terminal: each payload as its visible escapes."""
    for raw, shown in ((TITLE, "\\x1b]0;TITLE\\x07"), (CLEAR, "\\x1b[2J"), (HIDE, "\\x1b[8m"), (BIDI, "\\u202e")):
        text = text.replace(raw, shown)
    return text


def assert_clean(output: str, *tags: str) -> None:
    """No raw control character in ``output``; each ``hostile(tag)`` shown as visible escapes."""
    found = RAW_CONTROL.search(output)
    assert found is None, f"raw {found.group()!r} at {found.start()} in {output[max(0, found.start() - 40) :]!r}"
    for tag in tags:
        assert visible(hostile(tag)) in output, (tag, output)


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "400"})
    return result.exit_code, result.output


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


# --------------------------------------------------------------------------- printable itself


@pytest.mark.parametrize("payload", [*PAYLOADS, BIDI, "\x9b2J", "\x7f", "\r", "\x00"])
def test_printable_shows_each_control_character_as_a_visible_escape(payload: str) -> None:
    shown = printable(f"x{payload}y", markup=False)
    assert RAW_CONTROL.search(shown) is None
    assert shown.startswith("x") and shown.endswith("y") and len(shown) > len(payload) + 2


def test_printable_keeps_newlines_and_tabs_unless_asked_and_escapes_markup() -> None:
    assert printable("a\nb\tc", markup=False) == "a\nb\tc"
    assert printable("a\nb\tc\r", markup=False, breaks=False) == "a\\nb\\tc\\r"
    assert printable("[red]x[/red]") == "\\[red]x\\[/red]"
    assert printable("[red]x[/red]", markup=False) == "[red]x[/red]"
    assert printable("plain text · é 中文 🙂") == "plain text · é 中文 🙂"


@given(st.text())
def test_printable_never_lets_a_control_character_through(text: str) -> None:
    assert RAW_CONTROL.search(printable(text)) is None
    assert RAW_CONTROL.search(printable(text, breaks=False)) is None
    assert "\n" not in printable(text, breaks=False)


# --------------------------------------------------------------------------- stored runs


def hostile_store(path: Path) -> str:
    """A finished run whose id, dataset, answers, statements, reasons and details are hostile."""
    store = RunStore(path)
    store.create(
        RunSpec(
            run_id="r1",
            dataset=hostile("dataset"),
            judge="openai:fake",
            judge_model=hostile("model"),
            base_url="http://user:pw-SECRET@127.0.0.1:1/v1",
        )
    )
    failing = Verdict(subject=hostile("subject"), value=0, reason=hostile("reason"))
    supported = Verdict(subject="The sky is blue.", value=1, reason="stated")
    for line in (1, 2):
        sample = Sample(id=hostile(f"id{line}"), answer=hostile("answer"), contexts=("The sky is blue.",))
        score = Score.scored("faithfulness", 0.5, verdicts=[supported, failing])
        store.record("r1", SampleResult(sample=sample, scores={"faithfulness": score}, line=line))
    sample = Sample(id=hostile("id3"), answer="x", contexts=("y",))
    unscored = Score.unscored("faithfulness", "judge_error", hostile("detail"))
    store.record("r1", SampleResult(sample=sample, scores={"faithfulness": unscored}, line=3))
    store.set_status("r1", "finished")
    store.close()
    return "r1"


def test_gate_prints_hostile_ids_statements_and_reasons_as_visible_text(tmp_path: Path) -> None:
    run_id = hostile_store(tmp_path / "runs.sqlite")
    code, out = invoke("gate", run_id, "--store", "runs.sqlite", "--per-sample", "--max-unscored", "1")
    assert code in (1, 2), out
    assert_clean(out, "id1", "subject", "reason", "id3")


def test_runs_list_and_show_print_hostile_fields_as_visible_text(tmp_path: Path) -> None:
    run_id = hostile_store(tmp_path / "runs.sqlite")
    code, out = invoke("runs", "list", "--store", "runs.sqlite")
    assert code == 0, out
    assert_clean(out)  # (the table may fold long cells: the escapes are checked by 'show')
    assert "dataset\\x1b]0;TITLE" in out
    code, out = invoke("runs", "show", run_id, "--store", "runs.sqlite")
    assert code == 0, out
    assert_clean(out, "dataset", "model", "id3", "detail")
    assert "pw-SECRET" not in out and "127.0.0.1:1" in out  # its base URL, redacted at render time


def test_report_names_a_hostile_output_file_as_visible_text(tmp_path: Path) -> None:
    run_id = hostile_store(tmp_path / "runs.sqlite")
    name = hostile("out").replace("/", "") + ".html"  # a file name: no slash
    code, out = invoke("report", run_id, "--store", "runs.sqlite", "--out", name)
    assert code == 0, out
    assert (tmp_path / name).exists()
    assert_clean(out)
    assert visible(name) in out


def test_simulate_names_a_hostile_svg_file_as_visible_text(tmp_path: Path) -> None:
    name = hostile("svg").replace("/", "") + ".svg"
    code, out = invoke("simulate", "--statements", "5", "--runs", "100", "--svg", name)
    assert code == 0, out
    assert_clean(out)
    assert visible(name) in out


# --------------------------------------------------------------------------- other commands


def test_retrieval_matches_print_hostile_ids_queries_and_texts_as_visible_text(tmp_path: Path) -> None:
    row = {
        "id": hostile("qid"),
        "query": hostile("query"),
        "expected": ["the sky is blue"],
        "retrieved": [hostile("retrieved")[:50], "the sky is blue"],
    }
    (tmp_path / "ret.jsonl").write_text(json.dumps(row) + "\n")
    code, out = invoke("retrieval", "ret.jsonl", "--matches", "--k", "1,2")
    assert code == 0, out
    assert_clean(out, "qid", "query")


def test_trec_per_query_lines_print_a_hostile_query_id_as_visible_text(tmp_path: Path) -> None:
    qid = hostile("q")
    (tmp_path / "qrels").write_text(f"{qid} 0 d1 1\n")
    (tmp_path / "run").write_text(f"{qid} Q0 d1 1 1.0 {hostile('run')}\n")
    for extra in ((), ("--table",)):
        code, out = invoke("trec", "qrels", "run", "-q", "-m", "map", *extra)
        assert code == 0, out
        assert RAW_CONTROL.search(out) is None, repr(out)
        assert visible(qid) in out


def test_calibrate_prints_hostile_ids_and_reasons_as_visible_text(tmp_path: Path) -> None:
    from assay.testing import FakeOpenAIServer

    pytest.importorskip("openai")

    def judge(body: dict[str, object]) -> str:
        return json.dumps({"verdict": 0, "reason": hostile("reason")})

    row = {"id": hostile("item"), "context": "The sky is blue.", "claim": "The sky is green.", "label": 1,
           "source": hostile("source")}  # fmt: skip
    (tmp_path / "items.jsonl").write_text(json.dumps(row) + "\n")
    with FakeOpenAIServer(judge) as server:
        result = CliRunner().invoke(
            app,
            ["calibrate", "items.jsonl", "--judge", "openai:fake", "--base-url", server.base_url],
            env={"COLUMNS": "400", "OPENAI_API_KEY": "sk-test"},
        )
    assert result.exit_code == 0, result.output
    assert_clean(result.output, "item", "reason", "source")


def test_pytest_plugin_failure_message_shows_hostile_statements_and_reasons_as_visible_text() -> None:
    from assay.pytest_plugin import assert_faithful

    judge = FunctionJudge(lambda messages, request: json.dumps({"verdict": 0, "reason": hostile("reason")}))
    sample = Sample(id=hostile("id"), answer=f"The grass is {hostile('answer')} today.", contexts=("The sky is blue.",))
    with pytest.raises(AssertionError) as failure:
        assert_faithful(sample, judge=judge, metric=Faithfulness(decomposer="sentences", strategy="per_statement"))
    message = str(failure.value)
    assert RAW_CONTROL.search(message) is None, repr(message)
    assert visible(hostile("reason")) in message and visible(hostile("answer")) in message
