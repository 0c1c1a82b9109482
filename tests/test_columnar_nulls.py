"""Nulls a columnar schema invented are absent: the same rows score the same through every format (issue 56).

A columnar format keeps one schema per column, so an object nested in a cell gains the keys
of every other row's objects as nulls. ``cancel_order({"order_id": 7})`` came back from
Parquet as ``cancel_order({"order_id": 7, "flight": None})``, and every agent scored 0 with
exit 0. Each case here writes the same rows through a format and checks the samples and
the scores against JSON Lines, where a null is what the user wrote.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assay import evaluate
from assay.models import ScriptedJudge
from assay.run import read_jsonl
from assay.run._data import Row, open_dataset

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pd = pytest.importorskip("pandas")


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    # arguments as an object, as several exporters write them (a struct column in Arrow)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _trace(request: str, name: str, arguments: dict[str, Any], result: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": request},
        {"role": "assistant", "content": "", "tool_calls": [_call("c1", name, arguments)]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
        {"role": "assistant", "content": "Done."},
    ]


# Four agents whose tool calls have different argument keys; two did what the reference asks.
ROWS: list[dict[str, Any]] = [
    {
        "id": "a",
        "messages": _trace("Cancel order 7.", "cancel_order", {"order_id": 7}, "cancelled"),
        "reference_tool_calls": [{"name": "cancel_order", "arguments": {"order_id": 7}}],
        "metadata": {"team": "orders", "priority": 1},
    },
    {
        "id": "b",
        "messages": _trace("Book UA1.", "book_flight", {"flight": "UA1", "seat": "12A"}, "booked"),
        "reference_tool_calls": [{"name": "book_flight", "arguments": {"flight": "UA1", "seat": "12A"}}],
        "metadata": {"team": "travel", "region": {"code": "EU"}},
    },
    {
        "id": "c",
        "messages": _trace("Refund order 9.", "refund", {"order_id": 8}, "refunded"),
        "reference_tool_calls": [{"name": "refund", "arguments": {"order_id": 9}}],
        "metadata": {"region": {"code": "US", "zone": 3}},
    },
    {
        "id": "d",
        "messages": _trace("Book BA2 for Ann.", "book_flight", {"flight": "BA2"}, "booked"),
        "reference_tool_calls": [{"name": "book_flight", "arguments": {"flight": "BA2", "passenger": "Ann"}}],
        "metadata": {"team": "travel"},
    },
]
METRICS = ["agent_state_match", "tool_call_accuracy"]


def _jsonl(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _parquet(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "rows.parquet"
    pd.DataFrame(rows).to_parquet(path)  # what the report did
    return path


def _pyarrow_parquet(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "rows_pa.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _arrow_table(tmp_path: Path, rows: list[dict[str, Any]]) -> Any:
    return pa.Table.from_pylist(rows)


def _record_batch(tmp_path: Path, rows: list[dict[str, Any]]) -> Any:
    return pa.RecordBatch.from_pylist(rows)


def _hf_dataset(tmp_path: Path, rows: list[dict[str, Any]]) -> Any:
    datasets = pytest.importorskip("datasets")
    return datasets.Dataset.from_list(rows)


def _frame_from_parquet(tmp_path: Path, rows: list[dict[str, Any]]) -> Any:
    return pd.read_parquet(_pyarrow_parquet(tmp_path, rows))


def _frame_from_dataset(tmp_path: Path, rows: list[dict[str, Any]]) -> Any:
    return _hf_dataset(tmp_path, rows).to_pandas()


def _arrow_backed_frame(tmp_path: Path, rows: list[dict[str, Any]]) -> Any:
    return pa.Table.from_pylist(rows).to_pandas(types_mapper=pd.ArrowDtype)


def _object_frame(tmp_path: Path, rows: list[dict[str, Any]]) -> Any:
    return pd.DataFrame(rows)


FORMATS: dict[str, Callable[[Path, list[dict[str, Any]]], Any]] = {
    "parquet written by pandas": _parquet,
    "parquet written by pyarrow": _pyarrow_parquet,
    "pyarrow.Table": _arrow_table,
    "pyarrow.RecordBatch": _record_batch,
    "datasets.Dataset": _hf_dataset,
    "DataFrame read from Parquet": _frame_from_parquet,
    "DataFrame from a Dataset": _frame_from_dataset,
    "DataFrame of Arrow dtypes": _arrow_backed_frame,
    "DataFrame of objects": _object_frame,
}


def _scores(data: Any) -> dict[str, dict[str, float]]:
    result = evaluate(data, METRICS, ScriptedJudge([]), progress="none")
    assert not result.errors, result.errors
    return {r.sample.id: {m: r.scores[m].value for m in METRICS} for r in result.results}


@pytest.fixture(scope="module")
def from_jsonl(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, float]]:
    scores = _scores(_jsonl(tmp_path_factory.mktemp("jsonl"), ROWS))
    # The rows as the report had them: half the agents reach the reference state.
    assert [scores[k]["agent_state_match"] for k in "abcd"] == [1.0, 1.0, 0.0, 0.0]
    assert [scores[k]["tool_call_accuracy"] for k in "abcd"] == [1.0, 1.0, 0.0, 0.0]
    return scores


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_columnar_format_scores_the_rows_as_json_lines_does(
    fmt: str, tmp_path: Path, from_jsonl: dict[str, dict[str, float]]
) -> None:
    assert _scores(FORMATS[fmt](tmp_path, ROWS)) == from_jsonl


@pytest.mark.parametrize("fmt", FORMATS)
def test_nested_objects_keep_only_the_keys_the_row_had(fmt: str, tmp_path: Path) -> None:
    result = evaluate(FORMATS[fmt](tmp_path, ROWS), METRICS, ScriptedJudge([]), progress="none")
    by_id = {r.sample.id: r.sample for r in result.results}
    for row in ROWS:
        sample = by_id[row["id"]]
        # reference tool calls, the agent's own calls in the trace, and metadata, at every depth
        assert [c.arguments for c in sample.reference_tool_calls] == [
            c["arguments"] for c in row["reference_tool_calls"]
        ]
        assert sample.metadata == row["metadata"], fmt
        trace = json.dumps([m.model_dump(mode="json", exclude_none=True) for m in sample.trace])
        assert "null" not in trace, trace
    assert "flight" not in json.dumps([c.arguments for c in by_id["a"].reference_tool_calls])


def test_langchain_documents_with_different_metadata_keep_their_own_keys(tmp_path: Path) -> None:
    rows = [
        {
            "id": "x",
            "question": "Where?",
            "answer": "In Paris.",
            "contexts": [{"page_content": "It is in Paris.", "metadata": {"source": "a.pdf", "page": 2}}],
        },
        {
            "id": "y",
            "question": "When?",
            "answer": "In 1889.",
            "contexts": [{"page_content": "Built in 1889.", "metadata": {"url": "https://example.org"}}],
        },
    ]
    expected = {r.sample.id: r.sample for r in read_jsonl(_jsonl(tmp_path, rows)) if isinstance(r, Row)}
    assert expected["x"].contexts == ("It is in Paris.",)
    for fmt in ("parquet written by pyarrow", "pyarrow.Table", "datasets.Dataset", "DataFrame read from Parquet"):
        read = open_dataset(FORMATS[fmt](tmp_path, rows)).rows(())
        got = {r.sample.id: r.sample for r in read if isinstance(r, Row)}
        assert got.keys() == expected.keys(), fmt
        for key, sample in expected.items():
            assert got[key].contexts == sample.contexts, fmt
            assert got[key].metadata == sample.metadata, fmt


def test_a_null_the_user_wrote_in_json_lines_stays(tmp_path: Path) -> None:
    """JSON Lines can say null: it is kept there (only a columnar file cannot tell the two apart)."""
    row = {
        "id": "n",
        "messages": _trace("Cancel order 7.", "cancel_order", {"order_id": 7, "reason": None}, "cancelled"),
        "reference_tool_calls": [{"name": "cancel_order", "arguments": {"order_id": 7, "reason": None}}],
        "metadata": {"reviewer": None, "team": "orders"},
    }
    (read,) = read_jsonl(_jsonl(tmp_path, [row]))
    sample = read.sample  # type: ignore[union-attr]
    assert sample.reference_tool_calls[0].arguments == {"order_id": 7, "reason": None}
    assert sample.metadata == {"reviewer": None, "team": "orders"}
    result = evaluate(_jsonl(tmp_path, [row]), METRICS, ScriptedJudge([]), progress="none")
    assert [result.results[0].scores[m].value for m in METRICS] == [1.0, 1.0]
