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
    result = evaluate([ROW, {**ROW, "id": "b", "answer": "Is it?"}], [Faithfulness()], verdict_judge())
    frame = result.to_pandas().set_index("id")
    assert frame.loc["a", "value"] == 1.0
    # a question has nothing to check: unscored, with its reason in the frame
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


# -- size limits, contexts as one string, paths: the Python door (issue 33) ----------------------


def test_evaluate_reports_an_oversized_row_judges_the_others_and_a_raised_limit_lets_it_through(
    tmp_path: Path,
) -> None:
    from assay.run import ResumeError

    rows = [ROW, {**ROW, "id": "long", "question": "Why? " * 50_000}, {**ROW, "id": "b"}]  # 250,000 characters
    result = evaluate(rows, Faithfulness(), verdict_judge())
    assert sorted(r.sample.id for r in result.results) == ["a", "b"]
    (error,) = result.errors
    assert str(error) == (
        "<samples>:2: field 'question' is 250,000 characters, above the limit of 200,000 per field "
        "(raise it with --max-field-chars, or max_field_chars= in Python)"
    )
    data, store = write(tmp_path, "".join(json.dumps(row) + "\n" for row in rows)), tmp_path / "runs.sqlite"
    raised = evaluate(data, Faithfulness(), verdict_judge(), store=store, max_field_chars=250_000)
    assert raised.errors == [] and len(raised.results) == 3
    # the limits are kept with the run: a resume with others would judge one run two ways
    with pytest.raises(ResumeError, match="max_field_chars: stored 250000, given 200000"):
        evaluate(data, Faithfulness(), verdict_judge(), store=store, resume=raised.run_id)


def test_evaluate_refuses_a_limit_below_one() -> None:
    from assay.errors import ConfigError

    with pytest.raises(ConfigError, match="max_row_chars must be a whole number of characters, at least 1, not 0"):
        evaluate([ROW], Faithfulness(), verdict_judge(), max_row_chars=0)


def test_contexts_given_as_one_string_is_said_once_for_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{**ROW, "contexts": "The sky is blue."}, {**ROW, "id": "b", "contexts": "The sky is blue."}]
    result = evaluate([*rows, {**ROW, "id": "c"}], Faithfulness(), verdict_judge(), progress="plain")
    said = (
        "contexts was one string, not a list, in 2 rows of <3 samples>; each was taken as one context "
        "(give a list to pass several)"
    )
    assert result.notes == [said]
    assert capsys.readouterr().err.count("note: contexts was one string") == 1
    assert [r.sample.contexts for r in result.results] == [("The sky is blue.",)] * 3
    listed = evaluate([{**ROW, "contexts": '["The sky is blue.", "It rains."]'}], Faithfulness(), verdict_judge())
    assert listed.results[0].sample.contexts == ("The sky is blue.", "It rains.")
    assert listed.notes == [
        "contexts was a list written as text in 1 row of <1 sample>; each was read as the list it holds "
        "(give the list itself to avoid the guess)"
    ]
    assert evaluate([ROW], Faithfulness(), verdict_judge()).notes == []


def test_evaluate_on_a_missing_path_or_a_directory_creates_no_store(tmp_path: Path) -> None:
    store = tmp_path / ".assay" / "runs.sqlite"
    with pytest.raises(DatasetError, match=r"nope\.jsonl: no such file$"):
        evaluate(tmp_path / "nope.jsonl", Faithfulness(), verdict_judge(), store=store)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rag.jsonl").write_text(json.dumps(ROW) + "\n")
    with pytest.raises(DatasetError, match=r"data: is a directory; give a data file \(.*\); it holds .*rag\.jsonl$"):
        evaluate(tmp_path / "data", Faithfulness(), verdict_judge(), store=store)
    assert not (tmp_path / ".assay").exists()


@pytest.mark.parametrize("word", ["nan", "None", "null", " NaN ", "NULL"])
def test_a_missing_value_written_as_text_is_judged_as_text_and_said_once(word: str, tmp_path: Path) -> None:
    # A CSV from pandas' astype(str) holds 'nan' where the answer was missing: it scored 0.0 and nothing said so
    data = tmp_path / "data.csv"
    data.write_text(
        "id,question,answer,reference,contexts\n"
        f"a,What colour?,{word},,The sky is blue.\n"
        f"b,What colour?,The sky is blue.,,{word}\n"
        "c,What colour?,The sky is blue.,,The sky is blue.\n"
    )
    result = evaluate(data, Faithfulness(), verdict_judge())
    assert result.results[0].sample.answer == word, "judged as the text it is, not dropped"
    said = [n for n in result.notes if "'nan', 'None' or 'null'" in n]
    assert said == [
        f"a field was the text 'nan', 'None' or 'null' in 2 rows of {data} (what pandas or Python write for a "
        "missing value); it was judged as that text: leave the cell empty for a row that lacks the field"
    ], result.notes
    for text in ("Nancy is here.", "None of them.", "nan-grams"):  # words that start so are answers
        assert not [
            n for n in evaluate([{**ROW, "answer": text}], Faithfulness(), verdict_judge()).notes if "null" in n
        ]
