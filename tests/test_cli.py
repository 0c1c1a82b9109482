"""`assay run` end to end against a real OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.testing import FakeOpenAIServer, word_overlap_answer

pytest.importorskip("openai")

ROWS = [
    {
        "id": "good",
        "question": "Capital?",
        "answer": "Paris is the capital of France.",
        "contexts": ["Paris is the capital of France."],
    },
    {
        "id": "bad",
        "question": "Capital?",
        "answer": "Lyon is the capital of France.",
        "contexts": ["Paris is the capital of France."],
    },
]


word_overlap_judge = word_overlap_answer  # statements are sentences; supported when each content word is in the context


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """assay run writes .assay/ (store, cache) into the working directory."""
    monkeypatch.chdir(tmp_path)


def test_run_with_openai_compatible_judge(tmp_path: Path) -> None:
    data = tmp_path / "rag.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(word_overlap_judge) as server:
        result = CliRunner().invoke(
            app, ["run", str(data), "--judge", "openai:fake-judge", "--base-url", server.base_url, "--out", str(out)]
        )
        # batch strategy for API judges: one verdicts call per sample; each answer is one sentence
        # that stands alone, so it is its own statement and needs no decomposition call
        assert server.calls == 2
        schemas = [r["response_format"]["json_schema"]["name"] for r in server.requests]
        assert schemas == ["VerdictList", "VerdictList"]
    assert result.exit_code == 0, result.output
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows["good"]["scores"]["faithfulness"]["value"] == 1.0
    bad = rows["bad"]["scores"]["faithfulness"]
    assert bad["value"] == 0.0
    assert bad["verdicts"] == [
        {
            "subject": "Lyon is the capital of France.",
            "value": 0,
            "reason": "not in the context: lyon",
            "spans": [[0, 30]],
        }
    ]
    # the summary names the failing statement with the judge's reason
    assert "Lyon is the capital of France." in result.output and "not in the context: lyon" in result.output
    assert "faithfulness" in result.output and "0.500" in result.output


def test_unknown_metric_and_judge_are_usage_errors(tmp_path: Path) -> None:
    data = tmp_path / "rag.jsonl"
    data.write_text(json.dumps(ROWS[0]) + "\n")
    result = CliRunner().invoke(app, ["run", str(data), "--metric", "vibes"])
    assert result.exit_code == 1 and "unknown metric 'vibes'" in result.output
    result = CliRunner().invoke(app, ["run", str(data), "--judge", "gpt5"])
    assert result.exit_code == 1 and "unknown judge 'gpt5'" in result.output


def test_missing_input_file_exits_1(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", str(tmp_path / "nope.jsonl")])
    assert result.exit_code == 1 and "no such file" in result.output


def test_one_api_judge_serves_two_evaluate_calls() -> None:
    """evaluate() runs each call in a fresh event loop; the judge must not keep a dead client."""
    from assay import Faithfulness, evaluate
    from assay.models import OpenAIJudge

    with FakeOpenAIServer(word_overlap_judge) as server:
        judge = OpenAIJudge("fake-judge", base_url=server.base_url)
        first = evaluate(ROWS, [Faithfulness()], judge)
        second = evaluate(ROWS, [Faithfulness()], judge)
    assert first.summary()["faithfulness"].mean == second.summary()["faithfulness"].mean == 0.5


def test_a_field_the_dataset_lacks_is_one_error_before_any_judge_call(tmp_path: Path) -> None:
    data = tmp_path / "rag.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    with FakeOpenAIServer(word_overlap_judge) as server:
        result = CliRunner().invoke(
            app,
            [
                "run",
                str(data),
                "-m",
                "faithfulness",
                "-m",
                "context_recall",
                "--judge",
                "openai:fake",
                "--base-url",
                server.base_url,
            ],
            env={"COLUMNS": "200"},
        )
        assert server.calls == 0
    assert result.exit_code == 1
    assert "metric 'context_recall' needs 'reference' (also read from ground_truth, expected_output)" in result.output
    assert "--map COLUMN=reference" in result.output


def test_several_metrics_in_one_run_and_tool_calls_in_openai_format(tmp_path: Path) -> None:
    trace = [
        {"role": "user", "content": "Cancel order 7."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "cancel", "arguments": '{"order": 7}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "cancelled"},
        {"role": "assistant", "content": "Order 7 is cancelled."},
    ]
    row = {
        "id": "t1",
        "question": "Cancel order 7.",
        "answer": "Order 7 is cancelled.",
        "contexts": ["Order 7 is cancelled."],
        "messages": trace,
        "reference_tool_calls": [{"name": "cancel", "arguments": {"order": 7}}],
    }
    data = tmp_path / "agent.jsonl"
    data.write_text(json.dumps(row) + "\n")
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(word_overlap_judge) as server:
        result = CliRunner().invoke(
            app,
            [
                "run",
                str(data),
                "-m",
                "tool_call_accuracy",
                "-m",
                "faithfulness",
                "--judge",
                "openai:fake",
                "--base-url",
                server.base_url,
                "--out",
                str(out),
            ],
        )
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["scores"]["tool_call_accuracy"]["value"] == 1.0
    assert record["scores"]["faithfulness"]["value"] == 1.0


def test_repeats_with_temperature_reach_the_judge_as_real_repeats(tmp_path: Path) -> None:
    data = tmp_path / "rag.jsonl"
    data.write_text(json.dumps(ROWS[0]) + "\n")
    with FakeOpenAIServer(word_overlap_judge) as server:
        result = CliRunner().invoke(
            app,
            [
                "run",
                str(data),
                "--judge",
                "openai:fake",
                "--base-url",
                server.base_url,
                "--repeats",
                "2",
                "--temperature",
                "0.7",
            ],
        )
        assert result.exit_code == 0, result.output
        assert {r["temperature"] for r in server.requests} == {0.7}
        assert sorted({r["seed"] for r in server.requests}) == [0, 1]  # seed + repeat index
        # two real repeats of the verdict, none answered from the cache; the answer's one sentence
        # stands alone, so it is its own statement and no decomposition call is made
        assert server.calls == 2


# -- what a new user writes first (issue 35 items 7 and 11) --------------------------------------


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})
    return result.exit_code, result.output


def test_capitalised_columns_from_a_spreadsheet_are_judged(tmp_path: Path) -> None:
    data = tmp_path / "sheet.csv"
    lines = ["Question,Answer,Contexts"] + [
        f'{r["question"]},{r["answer"]},"{json.dumps(r["contexts"]).replace(chr(34), chr(34) * 2)}"' for r in ROWS
    ]
    data.write_text("\n".join(lines) + "\n")
    with FakeOpenAIServer(word_overlap_judge) as server:
        code, out = _invoke(
            "run", str(data), "--judge", "openai:fake", "--base-url", server.base_url, "--progress", "none"
        )
        assert server.calls == 2
    assert code == 0, out
    assert "│ faithfulness │ 0.500 │      2 │" in out


def test_a_map_written_field_equals_column_stops_before_any_call_with_the_one_meant(tmp_path: Path) -> None:
    data = tmp_path / "rag.jsonl"
    renamed = [{("response" if k == "answer" else k): v for k, v in r.items()} for r in ROWS]
    data.write_text("".join(json.dumps(r) + "\n" for r in renamed))
    for shape in ("jsonl", "csv"):
        if shape == "csv":
            data = tmp_path / "rag.csv"
            data.write_text("question,response,contexts\nCapital?,Paris.,Paris is the capital.\n")
        with FakeOpenAIServer(word_overlap_judge) as server:
            code, out = _invoke("run", str(data), "--map", "answer=response", "--judge", "openai:fake",
                                "--base-url", server.base_url)  # fmt: skip
            assert server.calls == 0
        assert code == 1, out
        flat = " ".join(out.split())
        assert "--map answer=response is the wrong way round" in flat and "did you mean --map response=answer?" in flat


def test_metrics_may_be_given_as_one_comma_separated_list(tmp_path: Path) -> None:
    data = tmp_path / "rag.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    with FakeOpenAIServer() as server:
        code, out = _invoke("run", str(data), "-m", "faithfulness, answer_relevancy,", "--judge", "openai:fake",
                            "--base-url", server.base_url, "--progress", "none")  # fmt: skip
    assert code == 0, out
    assert "│ faithfulness " in out and "│ answer_relevancy " in out
    code, out = _invoke("run", str(data), "-m", ",", "--dry-run")
    assert code == 1 and "-m names no metric" in out


def test_run_on_a_folder_or_a_file_of_another_suffix_answers_a_command_line_user(tmp_path: Path) -> None:
    (tmp_path / "rag.jsonl").write_text(json.dumps(ROWS[0]) + "\n")
    code, out = _invoke("run", ".")
    assert code == 1 and "error: .: is a directory; give a data file" in out and "it holds rag.jsonl" in out
    (tmp_path / "rows.txt").write_text(json.dumps(ROWS[0]) + "\n")
    code, out = _invoke("run", "rows.txt")
    flat = " ".join(out.split())
    assert code == 1 and "rows.txt: cannot tell the format from suffix '.txt'" in flat
    assert "rename it rows.jsonl" in flat
    assert "read_jsonl" not in flat and "Python" not in flat
    assert not (tmp_path / ".assay").exists()


def test_a_json_array_saved_as_jsonl_is_said_before_any_judge_call(tmp_path: Path) -> None:
    (tmp_path / "rag.jsonl").write_text(json.dumps(ROWS) + "\n")
    with FakeOpenAIServer(word_overlap_judge) as server:
        code, out = _invoke("run", "rag.jsonl", "--judge", "openai:fake", "--base-url", server.base_url)
        assert server.calls == 0
    assert code == 1
    assert (
        "rag.jsonl holds one JSON array, not one object per line: rename it rag.json, or write one object per line"
        in (" ".join(out.split()))
    )


def test_retrieval_given_a_directory_or_a_missing_file_says_so_without_a_traceback(tmp_path: Path) -> None:
    # Before: `assay retrieval .` raised IsADirectoryError with a traceback.
    (tmp_path / "ret.jsonl").write_text('{"query": "q", "expected": ["a"], "retrieved": ["a"]}\n')
    for target, said in ((tmp_path, "is a directory"), (tmp_path / "nope.jsonl", "no such file")):
        result = CliRunner().invoke(app, ["retrieval", str(target)])
        assert result.exit_code == 1, result.output
        assert said in " ".join(result.output.split())
        assert result.exception is None or isinstance(result.exception, SystemExit)
    listed = CliRunner().invoke(app, ["retrieval", str(tmp_path)])
    assert "ret.jsonl" in listed.output


def test_a_dry_run_exits_as_the_run_would_for_its_rows(tmp_path: Path) -> None:
    good = {"id": "ok", "answer": "The sky is blue.", "contexts": ["The sky is blue today."]}
    files = {
        # each row has the fields, and none is valid: blank answer, no contexts, not JSON
        "all_bad.jsonl": [
            '{"id": "a", "answer": "", "contexts": ["a"]}',
            '{"id": "b", "answer": "hi", "contexts": []}',
            "{",
        ],
        "some_bad.jsonl": [json.dumps(good), "not json"],
        "good.jsonl": [json.dumps(good)],
    }
    codes = {}
    for name, lines in files.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n")
        codes[name], out = _invoke("run", str(tmp_path / name), "--judge", "openai:gpt-4o-mini", "--dry-run")
        assert "nothing was called" in " ".join(out.split()), out
    assert codes == {"all_bad.jsonl": 3, "some_bad.jsonl": 2, "good.jsonl": 0}
