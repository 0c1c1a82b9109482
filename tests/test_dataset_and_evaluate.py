"""Reading datasets (line-numbered errors) and the evaluate() API."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

from assay import Faithfulness, Sample, UnscoredReason, evaluate, read_jsonl
from assay.errors import DatasetError, SampleError
from assay.models import FunctionJudge, ScriptedJudge
from assay.run import Row

ROW = {"id": "a", "question": "q", "answer": "It is blue.", "contexts": ["The sky is blue."]}


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_every_bad_row_is_reported_with_its_line_and_the_rest_are_read(tmp_path: Path) -> None:
    lines = [
        json.dumps(ROW),
        "",
        '{"id": "b", "answer": ',
        json.dumps([1, 2]),
        json.dumps({**ROW, "id": "c", "contexts": 42}),
        json.dumps({"id": "d", "answer": "x"}),
        json.dumps({**ROW, "id": "e"}),
    ]
    path = write(tmp_path, "\n".join(lines) + "\n")
    items = list(read_jsonl(path, required=["answer", "contexts"]))
    rows = [i for i in items if isinstance(i, Row)]
    errors = [i for i in items if isinstance(i, SampleError)]
    assert [(r.sample.id, r.line) for r in rows] == [("a", 1), ("e", 7)]
    assert [e.line for e in errors] == [3, 4, 5, 6]
    assert "invalid JSON" in str(errors[0]) and f"{path}:3:" in str(errors[0])
    assert "expected a JSON object, got list" in str(errors[1])
    assert "field 'contexts'" in str(errors[2])
    assert "missing or empty field 'contexts'" in str(errors[3])


def test_non_utf8_line_is_a_row_error(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps(ROW).encode() + b"\n\xff\xfe{}\n")
    items = list(read_jsonl(path))
    assert isinstance(items[1], SampleError) and items[1].line == 2 and "UTF-8" in str(items[1])


def test_unreadable_file_is_a_dataset_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file"):
        list(read_jsonl(tmp_path / "missing.jsonl"))
    with pytest.raises(DatasetError, match="directory"):
        list(read_jsonl(tmp_path))


def test_aliases_metadata_and_default_ids(tmp_path: Path) -> None:
    row = {"input": "q?", "output": "a.", "retrieved_contexts": "one context", "ground_truth": "r", "topic": "x"}
    (item,) = read_jsonl(write(tmp_path, json.dumps(row) + "\n"))
    assert isinstance(item, Row)
    sample = item.sample
    assert (sample.id, sample.question, sample.answer, sample.contexts, sample.reference) == (
        "line-1",
        "q?",
        "a.",
        ("one context",),
        "r",
    )
    assert sample.metadata == {"topic": "x"}


def verdict_judge() -> FunctionJudge:
    def answer(messages: object, request: object) -> str:
        user = messages[-1]["content"]  # type: ignore[index]
        if "<answer>" in user:
            return json.dumps({"statements": ["The sky is blue."]})
        return json.dumps({"verdict": 1, "reason": "stated"})

    return FunctionJudge(answer, concurrency=4)


def test_evaluate_accepts_dicts_and_reports_bad_ones() -> None:
    result = evaluate([ROW, {"id": "bad", "contexts": 3}, {**ROW, "id": "b"}], Faithfulness(), verdict_judge())
    assert sorted(r.sample.id for r in result.results) == ["a", "b"]
    assert len(result.errors) == 1 and result.errors[0].line == 2
    assert result.summary()["faithfulness"].mean == 1.0


def test_to_pandas_has_one_row_per_sample_and_metric() -> None:
    pytest.importorskip("pandas")
    result = evaluate([ROW, {**ROW, "id": "b", "answer": ""}], [Faithfulness()], verdict_judge())
    frame = result.to_pandas().set_index("id")
    assert frame.loc["a", "value"] == 1.0
    # an empty answer is an answer with nothing to check, not a missing field
    assert math.isnan(frame.loc["b", "value"]) and frame.loc["b", "unscored_reason"] == "no_statements"


def test_metric_bug_becomes_metric_error_and_the_run_completes() -> None:
    judge = ScriptedJudge([])  # exhausted at once: the metric raises ScriptExhaustedError
    result = evaluate([Sample(**ROW)], [Faithfulness()], judge)
    score = result.results[0].scores["faithfulness"]
    assert score.unscored_reason is UnscoredReason.METRIC_ERROR
    assert "ScriptExhaustedError" in (score.detail or "")


def test_evaluate_works_inside_a_running_event_loop() -> None:
    async def notebook_cell() -> float:
        return evaluate([ROW], [Faithfulness()], verdict_judge()).summary()["faithfulness"].mean

    assert asyncio.run(notebook_cell()) == 1.0


def test_concurrency_is_bounded_by_the_judge() -> None:
    in_flight = 0
    peak = 0

    async def slow(messages: object, request: object) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        user = messages[-1]["content"]  # type: ignore[index]
        if "<answer>" in user:
            return json.dumps({"statements": ["The sky is green."]})
        return json.dumps({"verdict": 0, "reason": "no"})

    rows = [{**ROW, "id": str(i)} for i in range(20)]
    result = evaluate(rows, [Faithfulness()], FunctionJudge(slow, concurrency=3))
    assert len(result.results) == 20 and peak == 3
    assert result.summary()["faithfulness"].mean == 0.0


def test_unscored_json_value_is_null_and_round_trips() -> None:
    from assay import Score

    score = Score.unscored("faithfulness", UnscoredReason.REFUSAL, "no")
    data = json.loads(score.model_dump_json())
    assert data["value"] is None and data["unscored_reason"] == "refusal"
    back = Score.model_validate(data)
    assert math.isnan(back.value) and back.unscored_reason is UnscoredReason.REFUSAL
    with pytest.raises(ValueError, match="finite"):
        Score.scored("x", math.nan)
