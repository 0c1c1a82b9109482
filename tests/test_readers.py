"""CSV, Parquet, DataFrame and Hugging Face readers: rows stream, bad rows are reported where they are."""

from __future__ import annotations

import asyncio
import csv
import itertools
import json
import sys
import tracemalloc
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from assay.errors import ConfigError, DatasetError, MissingExtraError, SampleError
from assay.run._data import (
    DATASET_SUFFIXES,
    Row,
    SizeLimits,
    check_format,
    from_dataframe,
    from_hf_dataset,
    read_csv,
    read_dataset,
    read_jsonl,
    read_parquet,
)

Item = Row | SampleError


def split(items: Iterator[Item]) -> tuple[list[Row], list[SampleError]]:
    collected = list(items)
    rows = [item for item in collected if isinstance(item, Row)]
    errors = [item for item in collected if isinstance(item, SampleError)]
    assert len(rows) + len(errors) == len(collected)
    return rows, errors


def write_csv(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return path


# -- CSV ------------------------------------------------------------------------------------


def test_csv_rows_with_contexts_as_json_list_or_plain_text(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "data.csv",
        [
            ["id", "question", "answer", "contexts", "reference", "source"],
            ["a", "Where?", "Paris.", json.dumps(["Paris is in France.", "It is big."]), "", "wiki"],
            ["b", "When?", "1900.", "[1] A citation-style passage, not JSON.", "1900", ""],
            ["", "Who?", "Ada.", "Ada wrote it.", "", ""],
        ],
    )
    rows, errors = split(read_csv(path))
    assert errors == []
    a, b, c = (row.sample for row in rows)
    assert a.contexts == ("Paris is in France.", "It is big.")
    assert a.reference is None  # an empty cell is absent
    assert a.metadata == {"source": "wiki"}
    assert b.contexts == ("[1] A citation-style passage, not JSON.",)
    assert b.reference == "1900"
    assert b.metadata == {}
    assert c.id == "line-4"  # no id: the record's line (the header is line 1)
    assert [row.line for row in rows] == [2, 3, 4]


def test_csv_line_numbers_are_where_each_record_starts(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "data.csv",
        [
            ["id", "answer", "contexts", "trace"],
            ["a", "first line\nsecond line\nthird line", "c", ""],  # lines 2-4
            ["b", "short", "c", "not json"],  # line 5: bad
            ["c", "spans\ntwo lines", "c", "[oops"],  # lines 6-7: bad, reported at 6
            ["d", "fine", "c", ""],  # line 8
        ],
    )
    rows, errors = split(read_csv(path, required=["answer"]))
    assert [(row.sample.id, row.line) for row in rows] == [("a", 2), ("d", 8)]
    assert rows[0].sample.answer == "first line\nsecond line\nthird line"
    assert [(error.source, error.line) for error in errors] == [(str(path), 5), (str(path), 6)]
    assert "column 'trace': invalid JSON" in str(errors[0])
    assert str(errors[0]).startswith(f"{path}:5: ")


def test_csv_bad_rows_do_not_stop_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_bytes(
        b"id,answer,contexts,metadata\n"
        b"a,ok,c,\n"
        b"b,too,many,cells,here\n"  # line 3
        b"c,\xff\xfe not utf-8,c,\n"  # line 4
        b"\n"
        b"d\n"  # line 6: the required answer is missing (a short row; an empty cell lacks it too)
        b'e,ok,c,"[1, 2]"\n'  # line 7: metadata must be an object
        b'f,ok,c,"{""team"": ""x""}"\n'
        b",,,\n"  # an empty record: skipped like a blank line
        b"g,fewer cells\n"
    )
    rows, errors = split(read_csv(path, required=["answer"]))
    assert [(row.sample.id, row.line) for row in rows] == [("a", 2), ("f", 8), ("g", 10)]
    assert rows[1].sample.metadata == {"team": "x"}
    assert rows[2].sample.contexts == ()
    assert [error.line for error in errors] == [3, 4, 6, 7]
    assert "5 cells but the header has 4 columns" in errors[0].detail
    assert "not UTF-8" in errors[1].detail
    assert "missing or empty field 'answer'" in errors[2].detail
    assert "expected a JSON object" in errors[3].detail


def test_csv_record_the_csv_module_rejects_is_reported_and_skipped(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "data.csv", [["id", "answer"], ["a", "x"], ["b", "y" * 100], ["c", "z"]])
    previous = csv.field_size_limit(50)
    try:
        rows, errors = split(read_csv(path))
    finally:
        csv.field_size_limit(previous)
    assert [(row.sample.id, row.line) for row in rows] == [("a", 2), ("c", 4)]
    (error,) = errors
    assert error.line == 3
    assert "a cell is longer than the CSV field limit (50 characters)" in error.detail


def test_csv_column_mapping_applies_before_aliases(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "data.csv",
        [["my_id", "prompt", "my_answer", "docs", "output"], ["x", "q", "the answer", "d", "kept as metadata"]],
    )
    mapping = {"my_id": "id", "prompt": "question", "my_answer": "answer", "docs": "contexts"}
    (row,), errors = split(read_csv(path, mapping=mapping))
    assert errors == []
    assert (row.sample.id, row.sample.question, row.sample.answer) == ("x", "q", "the answer")
    assert row.sample.contexts == ("d",)
    # "output" is an alias of answer, but the mapped column claimed the field first.
    assert row.sample.metadata == {"output": "kept as metadata"}


def test_csv_with_byte_order_mark_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbfid,answer\r\na,x\r\nb,y\r\n")
    rows, errors = split(read_csv(path))
    assert errors == []
    assert [(row.sample.id, row.sample.answer, row.line) for row in rows] == [("a", "x", 2), ("b", "y", 3)]


def test_csv_empty_and_header_only_files_say_no_rows(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"empty\.csv: no rows"):
        list(read_csv(write_csv(tmp_path / "empty.csv", [])))
    with pytest.raises(DatasetError, match=r"header\.csv: no rows"):
        list(read_csv(write_csv(tmp_path / "header.csv", [["id", "answer"]])))


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"id,answer,id\na,b,c\n", "column 'id' appears more than once"),
        (b"id,\xffanswer\na,b\n", "header is not UTF-8"),
    ],
)
def test_csv_unusable_header_is_a_dataset_error(tmp_path: Path, content: bytes, match: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(DatasetError, match=match):
        list(read_csv(path))


def test_missing_file_and_directory_are_dataset_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file"):
        list(read_csv(tmp_path / "nope.csv"))
    with pytest.raises(DatasetError, match="is a directory"):
        list(read_csv(tmp_path))


def test_csv_streams_a_file_that_grows_while_it_is_read(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "grow.csv", [["id", "answer"], ["a", "x"]])
    reader = read_csv(path)
    assert isinstance(reader, types.GeneratorType)
    first = next(reader)
    assert isinstance(first, Row)
    assert first.sample.id == "a"
    with path.open("a", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([["b", "y"], ["c", "z"]])
    rest = list(reader)
    assert [item.sample.id for item in rest if isinstance(item, Row)] == ["b", "c"]


def test_csv_reading_the_first_rows_of_a_big_file_stays_small(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "answer", "contexts"])
        writer.writerows([f"row{i}", "an answer " * 4, "a context " * 4] for i in range(200_000))
    assert path.stat().st_size > 15_000_000
    tracemalloc.start()
    try:
        reader = read_csv(path)
        assert isinstance(reader, types.GeneratorType)
        first = list(itertools.islice(reader, 3))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    reader.close()
    assert [item.sample.id for item in first if isinstance(item, Row)] == ["row0", "row1", "row2"]
    assert peak < 2_000_000


# -- Parquet ----------------------------------------------------------------------------------


def write_parquet(path: Path, columns: dict[str, list[Any]], **kwargs: Any) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table(columns), path, **kwargs)
    return path


def test_parquet_rows_nulls_and_a_bad_row(tmp_path: Path) -> None:
    path = write_parquet(
        tmp_path / "data.parquet",
        {
            "id": ["a", "b", "c", None],
            "answer": ["x", None, "z", "w"],
            "contexts": [["c1", "c2"], ["c3"], None, ["c4"]],
            "trace": [None, None, "not json", None],
            "score": [1.5, 2.0, None, 3.0],
        },
    )
    rows, errors = split(read_parquet(path, required=["answer"]))
    assert [(row.sample.id, row.line) for row in rows] == [("a", 1), ("line-4", 4)]
    assert rows[0].sample.contexts == ("c1", "c2")
    assert rows[0].sample.metadata == {"score": 1.5}
    assert [(error.line, error.source) for error in errors] == [(2, str(path)), (3, str(path))]
    assert "missing or empty field 'answer'" in errors[0].detail
    assert "column 'trace': invalid JSON" in errors[1].detail


def test_parquet_contexts_as_json_text_and_mapping(tmp_path: Path) -> None:
    path = write_parquet(
        tmp_path / "data.parquet",
        {"key": ["k"], "my_answer": ["yes"], "passages": [json.dumps(["p1", "p2"])]},
    )
    (row,) = list(read_parquet(path, mapping={"key": "id", "my_answer": "answer", "passages": "contexts"}))
    assert isinstance(row, Row)
    assert (row.sample.id, row.sample.answer, row.sample.contexts) == ("k", "yes", ("p1", "p2"))


def test_parquet_reads_one_batch_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    count = 200_000
    path = write_parquet(
        tmp_path / "big.parquet",
        {"id": [f"r{i}" for i in range(count)], "answer": ["a"] * count},
        row_group_size=50_000,
    )
    batches: list[int] = []
    original = pq.ParquetFile.iter_batches

    def counting(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        for batch in original(self, *args, **kwargs):
            batches.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", counting)
    reader = read_parquet(path)
    assert isinstance(reader, types.GeneratorType)
    first = next(reader)
    assert isinstance(first, Row)
    assert first.sample.id == "r0"
    assert batches == [1024]  # one batch read, not 200k rows
    second = list(itertools.islice(reader, 1500))
    assert isinstance(second[-1], Row)
    assert second[-1].line == 1501
    assert batches == [1024, 1024]
    reader.close()


def test_not_a_parquet_file_is_a_dataset_error(tmp_path: Path) -> None:
    path = tmp_path / "fake.parquet"
    path.write_text("id,answer\n")
    with pytest.raises(DatasetError, match="not a readable Parquet file"):
        list(read_parquet(path))


def test_parquet_without_pyarrow_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(MissingExtraError) as info:
        list(read_parquet(path))
    assert info.value.extra == "parquet"
    assert "pip install 'assay[parquet]'" in str(info.value)


# -- pandas -------------------------------------------------------------------------------------


def test_dataframe_rows_with_numpy_values_and_missing_cells() -> None:
    pd = pytest.importorskip("pandas")
    np = pytest.importorskip("numpy")
    df = pd.DataFrame(
        {
            "id": np.array([10, 11, 12], dtype=np.int64),
            "response": ["x", None, "z"],
            "retrieved_contexts": [["c1"], ["c2"], np.array(["c3", "c4"], dtype=object)],
            "latency": [0.5, float("nan"), 2.0],
            "flag": pd.array([True, None, False], dtype="boolean"),
        },
        index=["p", "q", "r"],
    )
    rows, errors = split(from_dataframe(df, required=["answer"]))
    assert [(row.sample.id, row.line) for row in rows] == [("10", 1), ("12", 3)]
    assert rows[0].sample.answer == "x"
    assert rows[0].sample.metadata == {"latency": 0.5, "flag": True}
    assert rows[1].sample.contexts == ("c3", "c4")
    (error,) = errors
    assert (error.source, error.line) == ("<dataframe>", 2)
    assert str(error) == "<dataframe>: index 'q': missing or empty field 'answer'"  # the frame's own label


def test_dataframe_mapping_and_type_errors() -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"my_answer": ["yes"], "ctx": ['["a", "b"]']})
    (row,) = list(from_dataframe(df, mapping={"my_answer": "answer", "ctx": "contexts"}, source="frame"))
    assert isinstance(row, Row)
    assert (row.sample.id, row.sample.answer, row.sample.contexts) == ("line-1", "yes", ("a", "b"))
    with pytest.raises(DatasetError, match="needs a pandas DataFrame"):
        list(from_dataframe([{"answer": "x"}]))  # type: ignore[arg-type]
    duplicated = pd.DataFrame([["a", "b"]], columns=["answer", "answer"])
    with pytest.raises(DatasetError, match="appears more than once"):
        list(from_dataframe(duplicated))


def test_dataframe_without_pandas_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingExtraError) as info:
        list(from_dataframe(object()))  # type: ignore[arg-type]
    assert info.value.extra == "pandas"


# -- Hugging Face datasets --------------------------------------------------------------------


def test_hf_dataset_rows_and_a_bad_row() -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict(
        {
            "question": ["q1", "q2", "q3"],
            "answer": ["a1", None, "a3"],
            "contexts": [["c1"], ["c2"], ["c3", "c4"]],
            "label": [1, 0, 1],
        }
    )
    rows, errors = split(from_hf_dataset(ds, required=["answer", "contexts"]))
    assert [(row.sample.id, row.line) for row in rows] == [("line-1", 1), ("line-3", 3)]
    assert rows[1].sample.contexts == ("c3", "c4")
    assert rows[1].sample.metadata == {"label": 1}
    assert [(error.source, error.line) for error in errors] == [("<dataset>", 2)]


def test_hf_formatted_and_iterable_datasets_and_mapping() -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"uid": [7, 8], "out": ["x", "y"]}).with_format("numpy")
    mapping = {"uid": "id", "out": "answer"}
    rows, errors = split(from_hf_dataset(ds, mapping=mapping))
    assert errors == []
    assert [(row.sample.id, row.sample.answer) for row in rows] == [("7", "x"), ("8", "y")]
    streamed, errors = split(from_hf_dataset(ds.to_iterable_dataset(), mapping=mapping))
    assert errors == []
    assert [row.sample.id for row in streamed] == ["7", "8"]


def test_hf_dataset_dict_asks_for_a_split() -> None:
    datasets = pytest.importorskip("datasets")
    splits = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"answer": ["x"]})})
    with pytest.raises(DatasetError, match="pick one"):
        list(from_hf_dataset(splits))
    with pytest.raises(DatasetError, match=r"needs a datasets\.Dataset"):
        list(from_hf_dataset([{"answer": "x"}]))


def test_hf_without_datasets_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(MissingExtraError) as info:
        list(from_hf_dataset([]))
    assert info.value.extra == "datasets"


# -- dispatch on the suffix ---------------------------------------------------------------------


def test_read_dataset_dispatches_on_the_suffix(tmp_path: Path) -> None:
    record = {"id": "a", "answer": "x"}
    (tmp_path / "d.jsonl").write_text(json.dumps(record) + "\n")
    (tmp_path / "d.json").write_text(json.dumps(record) + "\n")
    write_csv(tmp_path / "d.CSV", [["id", "answer"], ["a", "x"]])
    write_parquet(tmp_path / "d.parquet", {"id": ["a"], "answer": ["x"]})
    for name, line in [("d.jsonl", 1), ("d.json", 1), ("d.CSV", 2), ("d.parquet", 1)]:
        (row,) = list(read_dataset(tmp_path / name, required=["answer"]))
        assert isinstance(row, Row), name
        assert (row.sample.id, row.sample.answer, row.line) == ("a", "x", line)
    assert {".jsonl", ".json", ".csv", ".parquet"} <= set(DATASET_SUFFIXES)


def test_read_dataset_passes_mapping_through(tmp_path: Path) -> None:
    write_csv(tmp_path / "d.csv", [["my_answer"], ["x"]])
    (row,) = list(read_dataset(tmp_path / "d.csv", mapping={"my_answer": "answer"}))
    assert isinstance(row, Row)
    assert row.sample.answer == "x"


@pytest.mark.parametrize("name", ["data.txt", "data.xlsx", "data", "data.csv.gz"])
def test_read_dataset_rejects_unknown_suffixes_at_once(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("{}\n")  # a missing file is "no such file", whatever its suffix
    with pytest.raises(DatasetError, match=r"cannot tell the format .* give a file ending in \.jsonl"):
        read_dataset(tmp_path / name)


# -- every input row read right or reported where it is (issue 13 part 5, issue 14) -------------


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


DEEPEVAL = {
    "input": "Where is Paris?",
    "actual_output": "Paris is in France.",
    "expected_output": "In France.",
    "retrieval_context": ["Paris is the capital of France."],
    "context": ["Ideal: Paris, France."],
}
RAGAS = {
    "user_input": "Where is Paris?",
    "response": "Paris is in France.",
    "retrieved_contexts": ["Paris is the capital of France."],
    "reference": "In France.",
    "reference_contexts": ["Ideal: Paris, France."],
}


@pytest.mark.parametrize("record", [DEEPEVAL, RAGAS], ids=["deepeval", "ragas"])
def test_deepeval_and_ragas_columns_are_judged_against_the_retrieved_context(
    tmp_path: Path, record: dict[str, Any]
) -> None:
    (row,) = list(read_dataset(write_jsonl(tmp_path / "d.jsonl", [record]), required=["answer", "contexts"]))
    assert isinstance(row, Row), row
    sample = row.sample
    assert (sample.question, sample.answer, sample.reference) == (
        "Where is Paris?",
        "Paris is in France.",
        "In France.",
    )
    assert sample.contexts == ("Paris is the capital of France.",)  # never the ideal context
    ideal = "context" if "context" in record else "reference_contexts"
    assert sample.metadata == {ideal: ["Ideal: Paris, France."]}


def test_deepeval_context_alone_is_not_read_as_the_retrieved_contexts(tmp_path: Path) -> None:
    record = {"input": "q", "actual_output": "a", "context": ["ideal"]}
    (error,) = list(read_dataset(write_jsonl(tmp_path / "d.jsonl", [record]), required=["answer", "contexts"]))
    assert isinstance(error, SampleError)
    assert "missing or empty field 'contexts'" in error.detail
    # Says where the retrieved passages go; never the mapping, which would judge other rows
    # (that have retrieval_context) against their ideal context. See test_first_hour.
    assert "retrieval_context" in error.detail and "--map context=contexts" not in error.detail


def test_an_explicit_mapping_always_wins_over_an_alias(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"context": "ideal", "retrieval_context": ["retrieved"], "out": "a"}])
    (row,) = list(read_dataset(path, mapping={"retrieval_context": "contexts", "out": "answer"}))
    assert isinstance(row, Row), row
    assert row.sample.contexts == ("retrieved",)
    (row,) = list(read_dataset(path, mapping={"context": "contexts"}))  # the user says the ideal one is wanted
    assert isinstance(row, Row), row
    assert row.sample.contexts == ("ideal",)
    assert row.sample.metadata == {"retrieval_context": ["retrieved"], "out": "a"}


@pytest.mark.parametrize(
    ("first", "second", "field"),
    [("answer", "response", "answer"), ("contexts", "retrieved_contexts", "contexts"), ("input", "query", "question")],
)
def test_two_columns_for_one_field_are_a_row_error_naming_both(
    tmp_path: Path, first: str, second: str, field: str
) -> None:
    good = {"id": "ok", "answer": "x", "contexts": ["c"]}
    both = {
        "id": "both",
        first: ["one"] if field == "contexts" else "one",
        second: ["two"] if field == "contexts" else "two",
    }
    rows, errors = split(read_dataset(write_jsonl(tmp_path / "d.jsonl", [good, both])))
    assert [row.sample.id for row in rows] == ["ok"]
    (error,) = errors
    assert error.line == 2
    assert f"'{first}'" in error.detail and f"'{second}'" in error.detail and field in error.detail
    # the same in CSV (one shared path)
    csv_path = write_csv(tmp_path / "d.csv", [["id", first, second], ["both", "one", "two"]])
    (item,) = list(read_csv(csv_path))
    assert isinstance(item, SampleError) and item.line == 2 and f"'{second}'" in item.detail


def lone_surrogate_line(record_id: str) -> str:
    return '{"id": "' + record_id + '", "answer": "Fact 1 \\ud800 and more.", "contexts": ["c"]}'


def test_a_lone_surrogate_is_a_row_error_in_every_reader(tmp_path: Path) -> None:
    good = {"id": "g", "answer": "fine", "contexts": ["c"]}
    rows, errors = split(read_dataset(write_jsonl(tmp_path / "d.jsonl", [good, lone_surrogate_line("s")])))
    assert [row.sample.id for row in rows] == ["g"]
    (error,) = errors
    assert str(error).startswith(f"{tmp_path / 'd.jsonl'}:2: ")
    assert "field 'answer'" in error.detail and "surrogate" in error.detail and "character 8" in error.detail
    # JSON array
    array = tmp_path / "d.json"
    array.write_text("[" + json.dumps(good) + ", " + lone_surrogate_line("s") + "]", encoding="utf-8")
    rows, errors = split(read_dataset(array))
    assert [row.sample.id for row in rows] == ["g"] and "surrogate" in errors[0].detail
    # CSV: a JSON list cell with a \ud800 escape
    path = write_csv(tmp_path / "d.csv", [["id", "answer", "contexts"], ["s", "a", '["ok", "bad \\udfff"]']])
    (item,) = list(read_csv(path))
    assert isinstance(item, SampleError) and "field 'contexts[1]'" in item.detail and "surrogate" in item.detail
    # DataFrame
    pd = pytest.importorskip("pandas")
    (item,) = list(from_dataframe(pd.DataFrame({"answer": pd.Series(["x\udc80"], dtype=object)})))
    assert isinstance(item, SampleError) and item.line == 1 and "surrogate" in item.detail


def test_a_line_nested_100000_deep_is_a_row_error_and_the_rows_around_it_are_read(tmp_path: Path) -> None:
    good = {"answer": "a", "contexts": ["c"]}
    deep = "[" * 100_000 + "]" * 100_000
    rows, errors = split(read_jsonl(write_jsonl(tmp_path / "d.jsonl", [good, deep, good])))
    assert [row.line for row in rows] == [1, 3]
    (error,) = errors
    assert error.line == 2 and "nested too deep" in error.detail
    # deep enough for json but too deep to store later: refused when read
    nested: Any = "x"
    for _ in range(300):
        nested = [nested]
    rows, errors = split(read_jsonl(write_jsonl(tmp_path / "m.jsonl", [{**good, "metadata": {"k": nested}}, good])))
    assert [row.line for row in rows] == [2]
    assert "nested deeper than" in errors[0].detail
    # a CSV cell (within the CSV field limit, still too deep for json)
    deep = "[" * 5_000 + "]" * 5_000
    path = write_csv(tmp_path / "d.csv", [["answer", "trace"], ["a", deep], ["b", ""]])
    rows, errors = split(read_csv(path))
    assert [row.line for row in rows] == [3] and "nested too deep" in errors[0].detail


def test_a_blank_answer_is_a_missing_one_a_row_error_on_any_row(tmp_path: Path) -> None:
    records = [
        {"id": "missing", "contexts": ["c"]},
        {"id": "empty", "answer": "", "contexts": ["c"]},
        {"id": "blank", "answer": "  \n ", "contexts": ["c"]},
        {"id": "null", "answer": None, "contexts": ["c"]},
        {"id": "good", "answer": "a", "contexts": ["c"]},
    ]
    rows, errors = split(read_jsonl(write_jsonl(tmp_path / "d.jsonl", records), required=["answer", "contexts"]))
    assert [(row.sample.id, row.sample.answer) for row in rows] == [("good", "a")]
    assert [(error.line, error.detail) for error in errors] == [
        (n, "missing or empty field 'answer'") for n in (1, 2, 3, 4)
    ]
    # CSV: an empty cell, a blank one and a short row all lack the answer, in the same words
    path = tmp_path / "d.csv"
    path.write_bytes(b"id,contexts,answer\nempty,c,\nblank,c,   \nshort,c\ngood,c,a\n")
    rows, errors = split(read_csv(path, required=["answer", "contexts"]))
    assert [(row.sample.id, row.sample.answer) for row in rows] == [("good", "a")]
    assert [(error.line, error.detail) for error in errors] == [
        (n, "missing or empty field 'answer'") for n in (2, 3, 4)
    ]


@pytest.mark.parametrize("decomposer", ["llm", "sentences"])
@pytest.mark.parametrize("answer", ["", "   \n"])
def test_a_blank_answer_is_no_answer_and_no_judge_call(decomposer: Literal["llm", "sentences"], answer: str) -> None:
    from assay import Faithfulness, Sample, UnscoredReason, evaluate
    from assay.errors import ConfigError
    from assay.metrics._base import score_safely
    from assay.models import ScriptedJudge

    judge = ScriptedJudge([])  # any judge call would fail the test (ScriptExhaustedError -> metric_error)
    sample = Sample(id="e", answer=answer, contexts=("c",))
    metric = Faithfulness(decomposer=decomposer)
    # The only row has no answer: refused before any call, as a null answer is.
    with pytest.raises(ConfigError, match=r"needs 'answer'.* which no valid row of <1 sample> has"):
        evaluate([sample], [metric], judge, progress=False)
    # Scored directly, the metric says the same: no answer, no call.
    for score in (asyncio.run(metric.score(sample, judge)), asyncio.run(score_safely(metric, sample, judge))):
        assert score.unscored_reason is UnscoredReason.MISSING_FIELD, score


@pytest.mark.parametrize("blank_first", [False, True])
def test_a_utf8_bom_does_not_drop_row_1(tmp_path: Path, blank_first: bool) -> None:
    body = ("\n" if blank_first else "") + json.dumps({"id": "a", "answer": "x"}) + "\n"
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    (row,) = list(read_jsonl(path))
    assert isinstance(row, Row), row
    assert (row.sample.id, row.line) == ("a", 2 if blank_first else 1)
    array = tmp_path / "d.json"
    array.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"id": "a", "answer": "x"}]).encode())
    (row,) = list(read_dataset(array))
    assert isinstance(row, Row), row


def test_csv_unclosed_quote_names_the_lines_it_swallowed_and_the_rows_after_it_are_read(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    lines = ["id,answer,contexts", "a,ok,c", 'b,"unclosed answer,c'] + [f"r{i},ok {i},c" for i in range(4, 8)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows, errors = split(read_csv(path))
    assert [row.sample.id for row in rows] == ["a", "r4", "r5", "r6", "r7"]
    assert [row.line for row in rows] == [2, 4, 5, 6, 7]
    (error,) = errors
    assert (error.line, error.end_line) == (3, 7)
    assert str(error).startswith(f"{path}:3-7: unclosed quote in a cell opened on line 3; lines 4-7 were read into it")


def test_csv_unclosed_quote_closed_by_a_later_quote_is_not_swallowed(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('id,answer,contexts\nb,"stray,c\nc,fine,c\nd,"quoted, cell",c\ne,ok,c\n', encoding="utf-8")
    rows, errors = split(read_csv(path))
    assert [(row.sample.id, row.sample.answer) for row in rows] == [("c", "fine"), ("d", "quoted, cell"), ("e", "ok")]
    (error,) = errors
    assert (error.line, error.end_line) == (2, 4) and "lines 3-4 were read into it" in error.detail


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet", "json", "dataframe"])
def test_a_duplicate_id_is_a_row_error_naming_the_first_line(tmp_path: Path, kind: str) -> None:
    ids = ["a", "b", "a", "c", "b"]
    records = [{"id": i, "answer": f"x{n}"} for n, i in enumerate(ids)]
    if kind == "jsonl":
        items = read_dataset(write_jsonl(tmp_path / "d.jsonl", records))
        first, dup = 1, 3
    elif kind == "csv":
        items = read_dataset(
            write_csv(tmp_path / "d.csv", [["id", "answer"]] + [[r["id"], r["answer"]] for r in records])
        )
        first, dup = 2, 4
    elif kind == "parquet":
        items = read_dataset(
            write_parquet(tmp_path / "d.parquet", {"id": ids, "answer": [r["answer"] for r in records]})
        )
        first, dup = 1, 3
    elif kind == "json":
        (tmp_path / "d.json").write_text(json.dumps(records))
        items = read_dataset(tmp_path / "d.json")
        first, dup = 1, 3
    else:
        pd = pytest.importorskip("pandas")
        items = from_dataframe(pd.DataFrame(records))
        first, dup = 1, 3
    rows, errors = split(items)
    assert [row.sample.answer for row in rows] == ["x0", "x1", "x3"]  # the first use of an id wins
    assert [error.line for error in errors] == [dup, dup + 2]
    assert "id 'a' already used on" in errors[0].detail and f" {first}" in errors[0].detail


def test_csv_json_list_cell_with_a_raw_newline_is_the_list(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "d.csv",
        [["id", "answer", "contexts"], ["a", "x", '["first\nline", "second"]'], ["b", "y", "['py', 'repr']"]],
    )
    rows, errors = split(read_csv(path))
    assert errors == []
    assert [row.sample.contexts for row in rows] == [("first\nline", "second"), ("py", "repr")]


@pytest.mark.parametrize("metadata", ["text", [1, 2], 3])
def test_a_non_object_metadata_is_a_row_error(tmp_path: Path, metadata: Any) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "answer": "x", "metadata": metadata}])
    (error,) = list(read_jsonl(path))
    assert isinstance(error, SampleError) and error.line == 1
    assert "field 'metadata'" in error.detail and "object" in error.detail


def test_a_column_clashing_with_a_metadata_key_is_a_row_error(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"answer": "x", "topic": "a", "metadata": {"topic": "b"}}])
    (error,) = list(read_jsonl(path))
    assert isinstance(error, SampleError) and "'topic'" in error.detail


def test_ids_text_and_whole_numbers_are_accepted_fractions_and_booleans_are_located_errors(tmp_path: Path) -> None:
    records = [{"id": v, "answer": "x"} for v in ["s", 17, 18.0, 3.5, True, ""]]
    rows, errors = split(read_jsonl(write_jsonl(tmp_path / "d.jsonl", records)))
    assert [row.sample.id for row in rows] == ["s", "17", "18", "line-6"]
    assert [error.line for error in errors] == [4, 5]
    assert "field 'id'" in errors[0].detail and '"3.5"' in errors[0].detail  # says what to write instead
    assert "field 'id'" in errors[1].detail and "boolean" in errors[1].detail


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("empty.jsonl", b""),
        ("blank.jsonl", b"\n  \n\r\n"),
        ("bom.jsonl", b"\xef\xbb\xbf\n"),
        ("empty.csv", b""),
        ("header.csv", b"id,answer\n"),
        ("empty.json", b"[]"),
    ],
)
def test_empty_input_is_a_dataset_error_saying_no_rows(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DatasetError, match=r"no rows"):
        list(read_dataset(path))


def test_empty_parquet_and_dataframe_say_no_rows(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    path = write_parquet(tmp_path / "d.parquet", {"answer": pa.array([], type=pa.string())})
    with pytest.raises(DatasetError, match=r"no rows"):
        list(read_parquet(path))
    pd = pytest.importorskip("pandas")
    with pytest.raises(DatasetError, match=r"no rows"):
        list(from_dataframe(pd.DataFrame({"answer": []})))


def test_a_file_of_only_bad_rows_is_not_empty(tmp_path: Path) -> None:
    (error,) = list(read_jsonl(write_jsonl(tmp_path / "d.jsonl", ["{oops"])))
    assert isinstance(error, SampleError)


def test_a_json_array_file_is_read_with_item_numbers(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    items = [{"id": "a", "answer": "x"}, "not an object", {"answer": "y"}, {"id": "a", "answer": "z"}]
    path.write_text(json.dumps(items, indent=2))
    rows, errors = split(read_dataset(path))
    assert [(row.sample.id, row.line) for row in rows] == [("a", 1), ("line-3", 3)]
    assert [error.line for error in errors] == [2, 4]
    assert str(errors[0]).startswith(f"{path}: item 2: expected a JSON object")
    assert "already used on item 1" in str(errors[1])


def test_a_broken_json_array_file_is_a_dataset_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text('[\n  {"id": "a"},\n  {"id": \n]\n')
    with pytest.raises(DatasetError, match=r"data\.json: not valid JSON: .* line 4"):
        list(read_dataset(path))


def test_a_mapping_to_no_sample_field_is_a_config_error(tmp_path: Path) -> None:
    from assay.errors import ConfigError

    path = write_jsonl(tmp_path / "d.jsonl", [{"retrieval_context": ["r"], "answer": "a"}])
    with pytest.raises(ConfigError, match="'context' is not a sample field"):
        list(read_dataset(path, mapping={"retrieval_context": "context"}))  # a typo must not pass silently


def test_a_null_column_does_not_conflict_with_its_alias(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"answer": None, "response": "r", "contexts": ["c"]}])
    (row,) = list(read_jsonl(path, required=["answer"]))
    assert isinstance(row, Row), row
    assert row.sample.answer == "r"


def test_csv_rows_read_again_after_an_unclosed_quote_need_every_cell(tmp_path: Path) -> None:
    # the swallowed lines were prose inside a cell, not rows: the short one is not taken as a sample
    path = tmp_path / "d.csv"
    path.write_text('id,answer,contexts\na,"a long\ncell with a "stray" quote,c\nz,ok,c\n', encoding="utf-8")
    rows, errors = split(read_csv(path))
    assert [row.sample.id for row in rows] == ["z"]
    assert [(error.line, error.end_line) for error in errors] == [(2, 3), (3, None)]
    assert "read into an unclosed quote above" in errors[1].detail


# -- size limits, contexts given as text, paths (issue 33) --------------------------------------


def _jsonl(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_field_above_the_default_limit_is_a_row_error_naming_it_and_how_to_raise_it(tmp_path: Path) -> None:
    base = {"answer": "Paris is in France.", "contexts": ["Paris is in France."]}
    path = _jsonl(
        tmp_path / "d.jsonl",
        {"id": "a", **base},
        {"id": "b", **base, "contexts": ["short", "y" * (200_001)]},  # one item of the list
        {"id": "c", **base, "question": "q" * 200_000},  # exactly at the limit: read
        {"id": "d", **base, "user_input": "q" * 250_000},  # named as the file names it
    )
    rows, errors = split(read_jsonl(path))
    assert [row.sample.id for row in rows] == ["a", "c"]
    assert [error.line for error in errors] == [2, 4]
    assert str(errors[0]) == (
        f"{path}:2: field 'contexts[1]' is 200,001 characters, above the limit of 200,000 per field "
        "(raise it with --max-field-chars, or max_field_chars= in Python)"
    )
    assert "field 'user_input' is 250,000 characters" in errors[1].detail


def test_a_row_above_the_row_limit_names_its_largest_columns_and_a_raised_limit_lets_it_through(
    tmp_path: Path,
) -> None:
    from assay.run import SizeLimits

    record = {"id": "a", "answer": "Short.", "contexts": ["c" * 190_000] * 5, "metadata": {"doc": "m" * 150_000}}
    path = _jsonl(tmp_path / "d.jsonl", record)
    _, (error,) = split(read_jsonl(path))
    assert "the row holds 1,100,0" in error.detail and "above the limit of 1,000,000 per row" in error.detail
    assert "largest: contexts 950,000, metadata 150,00" in error.detail and "--max-row-chars" in error.detail
    (row,), errors = split(read_jsonl(path, limits=SizeLimits(max_row_chars=2_000_000)))
    assert errors == [] and len(row.sample.contexts) == 5


@pytest.mark.parametrize("kind", ["csv", "parquet", "dataframe", "json-array"])
def test_every_reader_applies_the_limits(tmp_path: Path, kind: str) -> None:
    from assay.run import SizeLimits

    limits = SizeLimits(max_field_chars=40, max_row_chars=100)
    table = {"id": ["a", "b", "c"], "answer": ["ok.", "x" * 41, "ok."], "contexts": ["fine", "fine", "y" * 39]}
    table["question"] = ["q", "q", "z" * 39]  # row c: every field under 40, the row (keys too) above 100
    records = [dict(zip(table, values, strict=True)) for values in zip(*table.values(), strict=True)]
    if kind == "csv":
        items = read_csv(
            write_csv(tmp_path / "d.csv", [list(table), *[list(r.values()) for r in records]]), limits=limits
        )
    elif kind == "json-array":
        (tmp_path / "d.json").write_text(json.dumps(records))
        items = read_dataset(tmp_path / "d.json", limits=limits)
    elif kind == "parquet":
        pq = pytest.importorskip("pyarrow.parquet")
        pa = pytest.importorskip("pyarrow")
        pq.write_table(pa.table(table), tmp_path / "d.parquet")
        items = read_parquet(tmp_path / "d.parquet", limits=limits)
    else:
        pd = pytest.importorskip("pandas")
        items = from_dataframe(pd.DataFrame(table), limits=limits)
    rows, errors = split(items)
    assert [row.sample.id for row in rows] == ["a"]
    assert "field 'answer' is 41 characters, above the limit of 40 per field" in errors[0].detail
    assert "above the limit of 100 per row" in errors[1].detail and "--max-row-chars" in errors[1].detail


def test_a_limit_below_one_is_refused() -> None:
    from assay.errors import ConfigError
    from assay.run import SizeLimits

    with pytest.raises(ConfigError, match="max_field_chars must be a whole number of characters, at least 1"):
        SizeLimits(max_field_chars=0)


def test_contexts_as_text_holding_a_list_is_the_list_in_jsonl_as_in_a_csv_cell(tmp_path: Path) -> None:
    listed = json.dumps(["Paris is in France.", "It is big."])
    python_literal = str(["Lyon is in France.", "It is smaller."])
    jsonl_path = _jsonl(
        tmp_path / "d.jsonl",
        {"id": "a", "answer": "x y.", "contexts": listed},
        {"id": "b", "answer": "x y.", "contexts": python_literal},
        {"id": "c", "answer": "x y.", "contexts": "One plain passage."},
        {"id": "d", "answer": "x y.", "contexts": ["already", "a list"]},
    )
    csv_path = write_csv(
        tmp_path / "d.csv",
        [
            ["id", "answer", "contexts"],
            ["a", "x y.", listed],
            ["b", "x y.", python_literal],
            ["c", "x y.", "One plain passage."],
        ],
    )
    from_jsonl, _ = split(read_jsonl(jsonl_path))
    from_csv, _ = split(read_csv(csv_path))
    assert [r.sample.contexts for r in from_jsonl[:3]] == [r.sample.contexts for r in from_csv]
    assert from_jsonl[0].sample.contexts == ("Paris is in France.", "It is big.")
    # what was taken on trust travels with the row: a list written as text in JSON is a guess,
    # one string is one context; a CSV cell can only hold text, so a list in it is no guess
    assert [r.notes for r in from_jsonl] == [("contexts_list_text",), ("contexts_list_text",), ("contexts_string",), ()]
    assert [r.notes for r in from_csv] == [(), (), ("contexts_string",)]


def test_contexts_text_that_looks_like_a_list_but_is_not_is_a_row_error_in_jsonl_too(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "d.jsonl", {"id": "a", "answer": "x y.", "retrieved_contexts": "['a', 'b'" + "]]"})
    _, (error,) = split(read_jsonl(path))
    assert "field 'retrieved_contexts': looks like a list but is neither JSON nor a Python list" in error.detail


def test_a_directory_names_the_data_files_in_it_and_a_missing_path_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    (folder / "split").mkdir(parents=True)
    for name in ("b.csv", "a.jsonl", "notes.txt", "split/test.parquet"):
        (folder / name).write_text("")
    with pytest.raises(DatasetError) as caught:
        read_dataset(folder)  # raised at once, before any suffix is looked at
    assert str(caught.value) == (
        f"{folder}: is a directory; give a data file (.jsonl, .ndjson, .json, .csv, .parquet, .pq); it holds "
        f"{folder / 'a.jsonl'}, {folder / 'b.csv'}, {folder / 'split' / 'test.parquet'}"
    )
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match=r"empty: is a directory; give a data file \(.*\)$"):
        read_dataset(tmp_path / "empty")
    with pytest.raises(DatasetError, match=r"nowhere: no such file$"):
        read_dataset(tmp_path / "nowhere")  # no suffix: it is missing, not of an unknown format


# -- the shape of a file, column names, a mapping the wrong way round (issue 35 items 7 and 11) ----

RAG_ROWS = [
    {"id": "a", "question": "Where?", "answer": "Paris.", "contexts": ["Paris is in France."]},
    {"id": "b", "question": "When?", "answer": "1900.", "contexts": ["In 1900."]},
]


@pytest.mark.parametrize("suffix", [".jsonl", ".ndjson"])
def test_a_json_array_in_a_json_lines_file_says_so_and_to_rename_it(tmp_path: Path, suffix: str) -> None:
    one_line = tmp_path / f"data{suffix}"
    one_line.write_text(json.dumps(RAG_ROWS) + "\n")
    with pytest.raises(DatasetError) as caught:
        list(read_dataset(one_line))
    assert str(caught.value) == (
        f"{one_line} holds one JSON array, not one object per line: rename it data.json, or write one object per line"
    )
    pretty = tmp_path / f"pretty{suffix}"
    pretty.write_text(json.dumps(RAG_ROWS, indent=2) + "\n")
    with pytest.raises(DatasetError) as caught:
        list(read_dataset(pretty))
    assert str(caught.value) == (
        f"{pretty} holds one JSON array written over many lines, not one object per line: rename it pretty.json "
        "(a .json file may hold one array), or write one object per line"
    )
    # renamed as the message says, it is read
    renamed = pretty.rename(tmp_path / "pretty.json")
    rows, errors = split(read_dataset(renamed, required=["answer"]))
    assert errors == [] and [r.sample.id for r in rows] == ["a", "b"]


def test_an_array_on_each_line_is_still_a_row_error_per_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [RAG_ROWS, RAG_ROWS])
    rows, errors = split(read_dataset(path))
    assert rows == [] and [str(e) for e in errors] == [
        f"{path}:1: expected a JSON object, got list",
        f"{path}:2: expected a JSON object, got list",
    ]


@pytest.mark.parametrize("key", ["data", "rows", "examples", "my rows"])
@pytest.mark.parametrize("layout", ["one line", "pretty"])
@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_rows_in_a_list_under_a_key_say_what_the_file_is_and_how_to_get_the_list(
    tmp_path: Path, key: str, layout: str, suffix: str
) -> None:
    path = tmp_path / f"data{suffix}"
    document = {key: RAG_ROWS, "version": 2}
    path.write_text(json.dumps(document, indent=2 if layout == "pretty" else None) + "\n")
    with pytest.raises(DatasetError) as caught:
        list(read_dataset(path, required=["answer"]))
    select = f".{key}" if key != "my rows" else '.["my rows"]'
    assert str(caught.value) == (
        f"{path} is one JSON object with its 2 rows in a list under '{key}', not a row per line or a JSON array of "
        f"rows: write the list alone, e.g. jq '{select}' data{suffix} > data-rows.json"
    )


def test_a_row_holding_a_list_of_objects_is_a_row_not_a_wrapper(tmp_path: Path) -> None:
    trace = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    path = write_jsonl(tmp_path / "d.json", [{"id": "t", "messages": trace}])
    (row,) = list(read_dataset(path))
    assert isinstance(row, Row) and len(row.sample.trace or ()) == 2
    other = write_jsonl(tmp_path / "o.jsonl", [{"conversation": trace}])  # not rows: kept as metadata
    (row,) = list(read_dataset(other))
    assert isinstance(row, Row) and row.sample.metadata == {"conversation": trace}
    calls = write_jsonl(tmp_path / "c.jsonl", [{"calls": [{"id": "c1", "name": "search"}]}])  # ids alone: no rows
    (row,) = list(read_dataset(calls))
    assert isinstance(row, Row) and "calls" in row.sample.metadata
    turns = write_jsonl(tmp_path / "t.jsonl", [{"turns": [{"question": "Q?", "answer": "A."}], "answer": "A."}])
    (row,) = list(read_dataset(turns))  # a column of its own: a row
    assert isinstance(row, Row) and row.sample.answer == "A."
    mapped = write_jsonl(tmp_path / "m.jsonl", [{"turns": [{"answer": "A."}]}])
    (item,) = list(read_dataset(mapped, mapping={"turns": "trace"}))  # a column the mapping names: a row
    assert isinstance(item, SampleError) and "field 'turns'" in str(item)  # read as a row, and checked as one
    with pytest.raises(DatasetError, match="under 'turns'"):
        list(read_dataset(mapped))


def test_one_object_over_many_lines_says_to_write_it_on_one_line(tmp_path: Path) -> None:
    for suffix in (".json", ".jsonl"):
        path = tmp_path / f"one{suffix}"
        path.write_text(json.dumps(RAG_ROWS[0], indent=2) + "\n")
        with pytest.raises(DatasetError) as caught:
            list(read_dataset(path))
        assert str(caught.value) == (
            f"{path} holds one JSON object written over many lines, not one object per line: write each row on one "
            "line, or the rows as a JSON array in one.json"
        )
    broken = tmp_path / "broken.jsonl"  # not one document either: each line says what is wrong with it
    broken.write_text('{"id": "a",\n"answer": \n')
    rows, errors = split(read_dataset(broken))
    assert rows == [] and len(errors) == 2 and all("invalid JSON" in str(e) for e in errors)


def capitalised(kind: str, tmp_path: Path, columns: dict[str, list[Any]]) -> Any:
    """The same table as a file of ``kind`` (or a DataFrame); ``None`` is an empty cell, a null, a key not given."""
    names = list(columns)
    records = [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]
    if kind == "csv":
        cells = [
            ["" if v is None else json.dumps(v) if isinstance(v, list) else str(v) for v in r.values()] for r in records
        ]
        return write_csv(tmp_path / "d.csv", [names, *cells])
    if kind == "parquet":
        return write_parquet(tmp_path / "d.parquet", columns)
    if kind == "dataframe":
        pd = pytest.importorskip("pandas")
        return pd.DataFrame(columns)
    records = [{k: v for k, v in r.items() if v is not None} for r in records]  # None: no such key in JSON
    if kind == "json":
        path = tmp_path / "d.json"
        path.write_text(json.dumps(records))
        return path
    return write_jsonl(tmp_path / "d.jsonl", records)


def _read(data: Any, **kwargs: Any) -> Iterator[Item]:
    return from_dataframe(data, **kwargs) if not isinstance(data, Path) else read_dataset(data, **kwargs)


@pytest.mark.parametrize("kind", ["jsonl", "json", "csv", "parquet", "dataframe"])
def test_capitalised_columns_are_read_as_their_fields(tmp_path: Path, kind: str) -> None:
    data = capitalised(kind, tmp_path, {
        "ID": ["a", "b"],
        "Question": ["Where?", "When?"],
        "Response": ["Paris.", "1900."],  # an alias, capitalised
        "Contexts": [["Paris is in France."], ["In 1900."]],
        "Source": ["wiki", "book"],  # no field: metadata, under its own name
    })  # fmt: skip
    rows, errors = split(_read(data, required=["question", "answer", "contexts"]))
    assert errors == []
    a = rows[0].sample
    assert (a.id, a.question, a.answer, a.contexts) == ("a", "Where?", "Paris.", ("Paris is in France.",))
    assert a.metadata == {"Source": "wiki"}


@pytest.mark.parametrize("kind", ["jsonl", "csv", "dataframe"])
def test_a_column_of_the_exact_name_and_one_differing_in_case_are_two_for_one_field(tmp_path: Path, kind: str) -> None:
    data = capitalised(kind, tmp_path, {"answer": ["exact"], "Answer": ["capital"], "contexts": [["c"]]})
    (item,) = list(_read(data))  # neither wins in silence: the row names both, and how to choose
    assert isinstance(item, SampleError)
    assert "columns 'answer' and 'Answer' both give the answer; keep one, or choose it with --map answer=answer" in (
        item.detail
    )
    (row,) = list(_read(data, mapping={"Answer": "reference"}))  # the mapping decides
    assert isinstance(row, Row) and (row.sample.answer, row.sample.reference) == ("exact", "capital")
    (row,) = list(_read(data, mapping={"Answer": "answer"}))
    assert isinstance(row, Row) and row.sample.answer == "capital" and row.sample.metadata == {"answer": "exact"}


SAME_FIELD = [
    ("ANSWER", "output", "answer"),
    ("Answer", "actual_output", "answer"),
    ("Question", "query", "question"),
    ("QUESTION", "user_input", "question"),
    ("Contexts", "retrieval_context", "contexts"),
    ("CONTEXTS", "retrieved_contexts", "contexts"),
    ("Reference", "ground_truth", "reference"),
    ("Response", "answer", "answer"),  # an alias but for its case, and the exact name
    ("Expected_Output", "ground_truth", "reference"),  # an alias but for its case, and another alias
    ("Answer", "ANSWER", "answer"),  # two case variants
]
"""Two columns that could both give one field: a case variant beside an alias, the exact name, another variant."""


def _given(field: str, text: str) -> Any:
    return [text] if field == "contexts" else text


def _read_as(field: str, text: str) -> Any:
    return (text,) if field == "contexts" else text


@pytest.mark.parametrize("kind", ["jsonl", "json", "csv", "parquet", "dataframe"])
@pytest.mark.parametrize(("first", "second", "field"), SAME_FIELD)
def test_two_columns_that_could_give_one_field_are_read_row_by_row_and_never_chosen_in_silence(
    tmp_path: Path, kind: str, first: str, second: str, field: str
) -> None:
    """A row reads the one of them it fills, whatever other rows fill; a row filling both is invalid."""
    others = {"question": "Q?", "answer": "A.", "contexts": ["c"]}
    data = capitalised(kind, tmp_path, {
        "id": ["both", "first", "second", "neither"],
        first: [_given(field, "one"), _given(field, "one"), None, None],
        second: [_given(field, "two"), None, _given(field, "two"), None],
        **{name: [value] * 4 for name, value in others.items() if name != field},
    })  # fmt: skip
    rows, errors = split(_read(data))
    (error,) = errors
    assert error.line == (2 if kind == "csv" else 1)
    assert (
        f"columns '{first}' and '{second}' both give the {field}; keep one, or choose it with --map {first}={field} "
        "(the other is then kept in metadata)"
    ) in error.detail
    read = {row.sample.id: row.sample for row in rows}
    assert list(read) == ["first", "second", "neither"]
    assert getattr(read["first"], field) == _read_as(field, "one")
    assert getattr(read["second"], field) == _read_as(field, "two")
    assert not read["neither"].field_present(field)
    assert read["first"].metadata == read["second"].metadata == read["neither"].metadata == {}
    # An explicit mapping decides: the other column is kept in metadata.
    (row,) = [r for r in _read(data, mapping={second: field}) if isinstance(r, Row) and r.sample.id == "both"]
    assert getattr(row.sample, field) == _read_as(field, "two") and set(row.sample.metadata) == {first}


def test_a_json_line_reads_a_column_differing_in_case_whatever_the_other_lines_hold(tmp_path: Path) -> None:
    """Not decided by the file: a line with an alias does not hide another line's capitalised column."""
    lines = [{"id": f"r{i}", "response": f"R{i}.", "contexts": ["c"]} for i in range(60)]
    lines.insert(0, {"id": "first", "Answer": "A1.", "contexts": ["c"]})  # before any alias
    lines.append({"id": "late", "ANSWER": "A2.", "contexts": ["c"]})  # after the lines peeked for columns
    lines.append({"id": "both", "Answer": "A3.", "response": "R3.", "contexts": ["c"]})
    rows, errors = split(read_dataset(write_jsonl(tmp_path / "d.jsonl", lines), required=["answer", "contexts"]))
    answers = {row.sample.id: row.sample.answer for row in rows}
    assert (answers["first"], answers["late"], answers["r0"]) == ("A1.", "A2.", "R0.")
    assert len(answers) == 62
    (error,) = errors
    assert error.line == 63 and "columns 'Answer' and 'response' both give the answer" in error.detail


def test_assay_run_does_not_judge_an_alias_in_silence_beside_a_capitalised_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report: ``Answer`` and ``response`` in one CSV row judged ``response`` (1.0, exit 0, not a word)."""
    pytest.importorskip("openai")
    from typer.testing import CliRunner

    from assay.cli import app
    from assay.testing import FakeOpenAIServer, word_overlap_answer

    monkeypatch.chdir(tmp_path)
    data = write_csv(tmp_path / "both.csv", [
        ["id", "Question", "Answer", "response", "contexts"],
        ["both", "Sky?", "The sky is green.", "The sky is blue.", "The sky is blue."],
        ["capital", "Sky?", "The sky is green.", "", "The sky is blue."],
        ["alias", "Sky?", "", "The sky is blue.", "The sky is blue."],
    ])  # fmt: skip
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(word_overlap_answer) as server:
        result = CliRunner().invoke(
            app,
            ["run", str(data), "-m", "faithfulness", "--judge", "openai:fake", "--base-url", server.base_url,
             "--progress", "none", "--out", str(out)],
            env={"COLUMNS": "200", "NO_COLOR": "1"},
        )  # fmt: skip
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert f"{data}:2: columns 'Answer' and 'response' both give the answer" in flat, flat
    scores = {r["id"]: r["scores"]["faithfulness"]["value"] for r in map(json.loads, out.read_text().splitlines())}
    assert scores == {"capital": 0.0, "alias": 1.0}


@pytest.mark.parametrize("kind", ["jsonl", "json", "csv", "parquet", "dataframe"])
def test_a_mapping_written_field_equals_column_gives_the_one_meant(tmp_path: Path, kind: str) -> None:
    data = capitalised(kind, tmp_path, {"question": ["Q?"], "response_text": ["A."], "contexts": [["c"]]})
    with pytest.raises(ConfigError) as caught:
        list(_read(data, mapping={"answer": "response_text"}))
    assert (
        "--map answer=response_text is the wrong way round: 'response_text' is a column and 'answer' a field, and "
        "--map takes COLUMN=FIELD; did you mean --map response_text=answer?"
    ) in str(caught.value)
    (row,) = list(_read(data, mapping={"response_text": "answer"}))
    assert isinstance(row, Row) and row.sample.answer == "A."


def test_a_mapping_to_no_field_of_a_column_there_is_not_is_not_called_reversed(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"question": "Q?", "response": "A.", "contexts": ["c"]}])
    with pytest.raises(ConfigError) as caught:
        list(read_dataset(path, mapping={"answer": "reply"}))  # 'reply' is no column either
    assert "wrong way round" not in str(caught.value)


def test_an_unknown_suffix_says_which_suffix_the_content_suggests_without_python_for_the_cli(tmp_path: Path) -> None:
    for name, content, guess in [
        ("notes.txt", json.dumps(RAG_ROWS[0]) + "\n", "It starts like a JSON object (JSON lines): if that is what it "
         "holds, rename it notes.jsonl"),
        ("export.tsv2", "id,question,answer\na,Q?,A.\n", "It starts like a CSV header: if that is what it holds, "
         "rename it export.csv"),
        ("dump", json.dumps(RAG_ROWS), "rename it dump.json"),
        ("page.html", "<html><body>hi</body></html>\n", None),
    ]:  # fmt: skip
        path = tmp_path / name
        path.write_text(content)
        with pytest.raises(DatasetError) as caught:
            check_format(path)
        said = str(caught.value)
        assert said.startswith(f"{path}: cannot tell the format from "), said
        assert "give a file ending in .jsonl, .ndjson, .json, .csv, .parquet, .pq" in said
        assert (guess in said) if guess else "rename" not in said, said
        assert "read_jsonl" not in said  # a command-line user is not pointed at Python functions
        with pytest.raises(DatasetError, match="in Python, read_jsonl / read_csv / read_parquet take any name"):
            read_dataset(path)
    check_format(write_jsonl(tmp_path / "fine.jsonl", RAG_ROWS))  # a known suffix passes


# -- The road: laziness and the order of a row's problems --------------------------------------


def test_reading_the_first_rows_of_a_big_jsonl_file_as_assay_run_does_stays_small(tmp_path: Path) -> None:
    """``read_dataset`` on JSON lines (the peek at the first lines' columns included) holds no more than it reads."""
    path = tmp_path / "big.jsonl"
    row = {"question": "q " * 10, "answer": "an answer " * 8, "contexts": ["a context " * 8]}
    with path.open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps({"id": f"row{i}", **row}) + "\n" for i in range(100_000))
    assert path.stat().st_size > 20_000_000
    tracemalloc.start()
    try:
        reader = read_dataset(path, required=("answer", "contexts"))
        first = list(itertools.islice(reader, 3))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    reader.close()
    assert [item.sample.id for item in first if isinstance(item, Row)] == ["row0", "row1", "row2"]
    assert peak < 2_000_000


@pytest.mark.parametrize(
    ("row", "said"),
    [
        ({"answer": "x" * 30, "response": "y", "metadata": 3}, "above the limit of 20 per field"),
        ({"answer": "a", "response": "b", "metadata": 3}, "columns 'answer' and 'response' both give the answer"),
        ({"answer": "a", "contexts": "['a', b']", "metadata": 3}, "field 'contexts': looks like a list"),
        ({"answer": "a", "tools_called": 3, "metadata": 3}, "field 'tools_called': expected a list of tool calls"),
        ({"answer": "a", "metadata": 3, "id": 3.5}, "field 'metadata': expected a JSON object"),
        ({"answer": "a", "metadata": {"k": 1}, "k": 2, "id": 3.5}, "column 'k' and the metadata key 'k' both given"),
        ({"answer": "a", "id": 3.5}, "field 'id'"),
    ],
)
def test_a_row_with_several_problems_reports_the_first_in_the_validation_order(
    tmp_path: Path, row: dict[str, Any], said: str
) -> None:
    """The mapping finds a record's column problems; the validation says them in their place among the others."""
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    (error,) = list(read_dataset(path, required=("answer",), limits=SizeLimits(max_field_chars=20)))
    assert isinstance(error, SampleError)
    assert said in str(error), str(error)
    assert str(error).startswith(f"{path}:1: ")


def test_two_columns_mapped_to_one_field_read_whichever_a_row_fills_and_say_so_when_it_fills_both(
    tmp_path: Path,
) -> None:
    # --map a1=answer --map a2=answer: for a file whose rows fill one or the other
    path = tmp_path / "m.jsonl"
    rows = [
        {"id": "one", "a1": "From a1.", "contexts": ["c"]},
        {"id": "two", "a2": "From a2.", "contexts": ["c"]},
        {"id": "both", "a1": "x", "a2": "y", "contexts": ["c"]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    read, errors = split(read_jsonl(path, mapping={"a1": "answer", "a2": "answer"}))
    assert [(r.sample.id, r.sample.answer) for r in read] == [("one", "From a1."), ("two", "From a2.")]
    (error,) = errors
    assert error.line == 3 and "columns 'a1' and 'a2' both give the answer, and the mapping names both" in str(error)
    assert "keep one of the --map" in str(error) and "choose it with --map a1=answer" not in str(error)


def test_a_row_without_id_whose_given_id_is_taken_is_told_it_has_none(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    rows = [
        {"id": "line-2", "answer": "The sky is red.", "contexts": ["c"]},
        {"answer": "The sky is blue.", "contexts": ["c"]},
        {"id": "a", "answer": "x", "contexts": ["c"]},
        {"id": "a", "answer": "y", "contexts": ["c"]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    read, errors = split(read_jsonl(path))
    assert [r.sample.id for r in read] == ["line-2", "a"]
    first, second = (str(e) for e in errors)
    assert ":2:" in first and "the row has no id, and the one it would be given, 'line-2', is used on line 1" in first
    assert ":4:" in second and "id 'a' already used on line 3; ids must be unique" in second
