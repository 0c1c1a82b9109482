"""The road's front: every door's data enters by :func:`read_rows` (or :func:`open_dataset`); :func:`_road` walks it.

A source (``_sources/``) yields records (and the columns it knows before them); the
mapping (:class:`~assay.run._data._mapping.ColumnMapping`) turns each record into fields;
the validation (:func:`~assay.run._data._validate.row_from_fields`) makes the fields a
:class:`Row` or its located :class:`~assay.errors.SampleError`. This module opens, hashes
and chains them, one record at a time: none of them calls another back.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json as json_text
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay._samples import Sample
from assay.errors import ConfigError, DatasetError, SampleError, counted
from assay.metrics._base import Metric
from assay.run._data._mapping import (
    ALIASES,
    IDEAL_CONTEXT_COLUMNS,
    ColumnMapping,
    column_field,
    likely_column,
    map_advice,
)
from assay.run._data._rows import NOTES, Columns, Record, Row, SizeLimits
from assay.run._data._sources import csv, json, jsonl, parquet
from assay.run._data._sources.arrow import arrow_records
from assay.run._data._sources.csv import csv_records
from assay.run._data._sources.dataframe import dataframe_records
from assay.run._data._sources.files import DATASET_SUFFIXES, _format_problem, check_data_file
from assay.run._data._sources.hf import hf_records
from assay.run._data._sources.json import json_records
from assay.run._data._sources.jsonl import checked_jsonl_records, jsonl_records
from assay.run._data._sources.parquet import PARQUET_BATCH_ROWS, parquet_records
from assay.run._data._sources.python import item_records
from assay.run._data._validate import checked_row, required_fields, row_from_fields, sample_from_fields

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DatasetSource",
    "from_arrow",
    "from_dataframe",
    "from_hf_dataset",
    "open_dataset",
    "open_rows",
    "read_csv",
    "read_dataset",
    "read_jsonl",
    "read_parquet",
    "read_rows",
    "sample_from_record",
]


def _read(
    records: Iterable[Columns | Record | Row | SampleError],
    required: Iterable[str],
    mapping: ColumnMapping | Mapping[str, str] | None,
    limits: SizeLimits | None,
    source: str | None,
    empty: str | None,
) -> Iterator[Row | SampleError]:
    """A source's records down the road as rows; ``DatasetError(empty)`` when it held none at all.

    A source with no rows and no row errors (an empty file, blank lines, a header only) is
    not an evaluation of nothing: the caller is told, and ``assay run`` exits 1. In-memory
    items (``empty`` ``None``) may be none: :func:`open_dataset` says so for a run.
    """
    columns = mapping if isinstance(mapping, ColumnMapping) else ColumnMapping(mapping)
    rows = _road(records, tuple(required), columns, limits, source)
    return rows if empty is None else _require_rows(rows, empty)


def _require_rows(items: Iterator[Row | SampleError], empty: str) -> Iterator[Row | SampleError]:
    produced = False
    for item in items:
        produced = True
        yield item
    if not produced:
        raise DatasetError(empty)


def _road(
    records: Iterable[Columns | Record | Row | SampleError],
    required: tuple[str, ...],
    columns: ColumnMapping,
    limits: SizeLimits | None,
    source: str | None,
) -> Iterator[Row | SampleError]:
    """Each record once through the mapping and the validation; a source's error passes through.

    The source's :class:`~assay.run._data._rows.Columns` fit the mapping before its first
    record; ids are unique over the read; a mapped column no record had is a
    :class:`~assay.errors.ConfigError` when the read ends (unless a header was checked).
    """
    seen: dict[str, int] = {}  # ids must be unique: resume, gates and comparisons key on them
    n_records = 0
    for item in records:
        if isinstance(item, Record):
            n_records += 1
            fields = columns.fields(item)
            yield row_from_fields(fields, source=source, required=required, seen_ids=seen, limits=limits)
        elif isinstance(item, Columns):
            columns.fit(item, source)
        elif isinstance(item, Row):
            n_records += 1
            yield checked_row(item, required, source)
        else:
            yield item
    unseen = columns.unseen(n_records)
    if unseen is not None:
        raise ConfigError(f"{source}: {unseen}" if source else unseen)


def sample_from_record(
    record: Any,
    *,
    line: int | None = None,
    source: str | None = None,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    unit: str = "line",
    seen_ids: MutableMapping[str, int] | None = None,
    limits: SizeLimits | None = None,
    notes: list[str] | None = None,
    label: str | None = None,
) -> Sample:
    """Build a :class:`Sample` from one dict, naming the row in any error: the road for one record.

    The record is mapped (:class:`~assay.run._data._mapping.ColumnMapping`: the aliases,
    ``mapping``) and validated (:func:`~assay.run._data._validate.sample_from_fields`) as a
    row of a file is; nothing is fitted to columns, since one record has no header.

    Args:
        record: The row (a JSON object).
        line: The row's 1-based line (or item, or row) number, for errors and the default
            id ``line-N``.
        source: The file the row came from, for errors.
        required: Fields that must be present and not blank (empty or only whitespace text, an
            empty list or a list of blank contexts is absent).
        mapping: Explicit column renames (``{"my_col": "answer"}``); they win over
            :data:`ALIASES`.
        unit: What ``line`` counts (``line``, ``item`` or ``row``), for errors.
        seen_ids: Id -> number of the row that used it, shared by all rows of one read; a
            row reusing an id is an error, and a good row's id is added.
        limits: How much text the row may hold (default: :class:`SizeLimits`'s defaults).
        notes: Where to add what was taken on trust (keys of :data:`NOTES`).
        label: How errors name the row in place of its number (a DataFrame's index label).

    Raises:
        SampleError: the row is not an object, holds a text longer than
            ``limits.max_field_chars`` or more text than ``limits.max_row_chars``, holds
            text that is not valid Unicode or is nested too deep, gives one field in two
            columns, has a field of the wrong type, lacks a required field, or reuses an id.
        ConfigError: ``mapping`` names a target that is not a sample field.
    """
    fields = ColumnMapping(mapping).fields(Record(record, line, unit, label))
    return sample_from_fields(
        fields, source=source, required=tuple(required), seen_ids=seen_ids, limits=limits, notes=notes
    )


def read_dataset(
    path: str | Path,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    limits: SizeLimits | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a file, choosing the reader by its suffix.

    ``.jsonl`` and ``.ndjson`` (JSON lines, one object per line) go to
    :func:`~assay.run.read_jsonl`; ``.json`` holds either one JSON array of objects (read
    whole; errors name the item, ``data.json: item 3: ...``) or JSON lines; ``.csv`` goes
    to :func:`read_csv`, ``.parquet`` and ``.pq`` to :func:`read_parquet`.

    Args:
        path: The dataset file.
        required: Fields that must be present and non-empty in every row.
        mapping: Column renames (``{"my_answer": "answer"}``), applied before the aliases.
        limits: The text a field and a row may hold (default :class:`~assay.run.SizeLimits`).

    Returns:
        An iterator of rows and per-row errors.

    Raises:
        DatasetError: The path does not exist or is a directory (naming the data files in
            it), or the suffix is not one of the above (raised at once); the file is
            unreadable, a JSON array file is not valid JSON, or the content is not in the
            shape the suffix promises (one JSON array in a ``.jsonl`` file, one object
            holding the rows in a list; raised when iteration starts); it holds no rows and
            no row errors (raised when iteration ends).
        ConfigError: ``mapping`` is written the wrong way round (``{"answer": "response"}``
            where ``response`` is a column; raised when iteration starts).
    """
    path = Path(path)
    check_data_file(path)
    kind = DATASET_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise DatasetError(f"{_format_problem(path)} (in Python, read_jsonl / read_csv / read_parquet take any name)")
    if kind == "csv":
        return _read(csv_records(path), required, mapping, limits, str(path), csv.NO_ROWS.format(path=path))
    if kind == "parquet":
        return _read(parquet_records(path), required, mapping, limits, str(path), parquet.NO_ROWS.format(path=path))
    columns = ColumnMapping(mapping)
    if path.suffix.lower() == ".json":
        records = json_records(path, columns.is_column, column_field)
        return _read(records, required, columns, limits, str(path), json.NO_ROWS.format(path=path))
    lines = checked_jsonl_records(path, columns.is_column, column_field)
    return _read(lines, required, columns, limits, str(path), jsonl.NO_ROWS.format(path=path))


def read_jsonl(
    path: str | Path,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    limits: SizeLimits | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a JSONL file; a bad row yields a :class:`SampleError`, not a stop.

    Blank lines are skipped and a UTF-8 byte-order mark is allowed. Memory stays bounded:
    one line at a time (plus the set of ids seen, to refuse a reused one). A row with more
    text than ``limits`` allows (default :class:`SizeLimits`) is a row error.

    Raises:
        DatasetError: the file does not exist or cannot be opened, or it holds no rows
            and no row errors (``"...: no rows ..."``, raised when iteration ends).
    """
    path = Path(path)
    return _read(jsonl_records(path), required, mapping, limits, str(path), jsonl.NO_ROWS.format(path=path))


def read_csv(
    path: str | Path,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    limits: SizeLimits | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a CSV file with a header row (standard library ``csv``).

    The file must be UTF-8 (a byte-order mark is allowed). Blank lines are skipped; a
    row with more cells than the header is an error, one with fewer has the rest absent;
    columns with an empty header are ignored. Errors and :attr:`Row.line` give the
    physical line on which the record starts.

    Quoting is read strictly. An unclosed quote would otherwise swallow the lines after
    it into one cell: it is reported with the lines it took (``data.csv:12-40: unclosed
    quote in a cell opened on line 12; lines 13-40 were read into it ...``) and those
    lines are read again as rows; a re-read row must have a cell for every column.

    Args:
        path: The CSV file.
        required: Fields that must be present and non-empty in every row.
        mapping: Column renames (``{"my_answer": "answer"}``); they win over the aliases.
        limits: The text a field and a row may hold (default :class:`~assay.run.SizeLimits`).
            A cell is also bounded by ``csv.field_size_limit()`` (131,072 characters by
            default), which assay leaves as it is.

    Yields:
        A :class:`Row` per good record, a :class:`SampleError` per bad one.

    Raises:
        DatasetError: The file does not exist or cannot be opened, its header is not UTF-8
            or not valid CSV, or it names a column twice; the file holds no rows and no
            row errors (empty, or a header only; raised when iteration ends).
    """
    path = Path(path)
    return _read(csv_records(path), required, mapping, limits, str(path), csv.NO_ROWS.format(path=path))


def read_parquet(
    path: str | Path,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    batch_rows: int = PARQUET_BATCH_ROWS,
    limits: SizeLimits | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a Parquet file, one record batch at a time (pyarrow).

    List columns (``list<string>`` contexts, say) and struct columns arrive as Python
    lists and dicts; nulls are absent. Row numbers are 1-based.

    Args:
        path: The Parquet file.
        required: Fields that must be present and non-empty in every row.
        mapping: Column renames (``{"my_answer": "answer"}``), applied before the aliases.
        batch_rows: Rows per record batch held in memory.
        limits: The text a field and a row may hold (default :class:`~assay.run.SizeLimits`).

    Yields:
        A :class:`Row` per good row, a :class:`SampleError` per bad one.

    Raises:
        MissingExtraError: pyarrow is not installed (extra ``parquet``).
        DatasetError: The file does not exist, is not Parquet, names a column twice, or
            cannot be read past some row; it has no rows (raised when iteration ends).
    """
    path = Path(path)
    records = parquet_records(path, batch_rows)
    return _read(records, required, mapping, limits, str(path), parquet.NO_ROWS.format(path=path))


def from_arrow(
    table: Any,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    source: str | None = "<arrow table>",
    limits: SizeLimits | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a ``pyarrow.Table`` or ``RecordBatch``, one record batch at a time.

    Struct and list columns arrive as dicts and lists, with the nulls the schema added to
    nested objects dropped (see :func:`read_parquet`). Row numbers are 1-based.

    Args:
        table: The table.
        required: Fields that must be present and non-empty in every row.
        mapping: Column renames (``{"my_answer": "answer"}``), applied before the aliases.
        source: How errors name the table.
        limits: The text a field and a row may hold (default :class:`~assay.run.SizeLimits`).

    Yields:
        A :class:`Row` per good row, a :class:`SampleError` per bad one.

    Raises:
        MissingExtraError: pyarrow is not installed (extra ``parquet``).
        DatasetError: ``table`` is not an Arrow table or names a column twice; it has no
            rows (raised when iteration ends).
    """
    records = arrow_records(table, source)
    return _read(records, required, mapping, limits, source, f"{source or 'the Arrow table'}: no rows")


def from_dataframe(
    df: pd.DataFrame,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    source: str | None = "<dataframe>",
    limits: SizeLimits | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a pandas DataFrame, one row at a time.

    The DataFrame's index names the rows in errors (``<dataframe>: index 0: ...``, the
    label ``df.loc`` finds it by), but is no id (give an ``id`` column to keep ids); row
    numbers (``line``, the default id ``line-N``) are the 1-based position. NaN, ``None``,
    ``pd.NA`` and ``pd.NaT`` cells are absent.

    Args:
        df: The table; column names become field names (``str(name)``).
        required: Fields that must be present and non-empty in every row.
        mapping: Column renames (``{"my_answer": "answer"}``), applied before the aliases.
        source: How errors name the table.
        limits: The text a field and a row may hold (default :class:`~assay.run.SizeLimits`).

    Yields:
        A :class:`Row` per good row, a :class:`SampleError` per bad one.

    Raises:
        MissingExtraError: pandas is not installed (extra ``pandas``).
        DatasetError: ``df`` is not a DataFrame or names a column twice; it has no rows
            (raised when iteration ends).
    """
    records = dataframe_records(df, source)
    return _read(records, required, mapping, limits, source, f"{source or 'the DataFrame'}: no rows")


def from_hf_dataset(
    ds: Any,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    source: str | None = "<dataset>",
    limits: SizeLimits | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a Hugging Face ``datasets.Dataset`` (or ``IterableDataset``).

    Rows are read through the dataset's own iterator (Arrow-backed, a few rows at a time),
    never materialised as a whole; a dataset formatted for numpy, torch or pandas is read
    unformatted. Row numbers are the 1-based position.

    Args:
        ds: One split, e.g. ``load_dataset(...)["test"]``.
        required: Fields that must be present and non-empty in every row.
        mapping: Column renames (``{"my_answer": "answer"}``), applied before the aliases.
        source: How errors name the dataset.
        limits: The text a field and a row may hold (default :class:`~assay.run.SizeLimits`).

    Yields:
        A :class:`Row` per good row, a :class:`SampleError` per bad one.

    Raises:
        MissingExtraError: ``datasets`` is not installed (extra ``datasets``).
        DatasetError: ``ds`` is a ``DatasetDict`` (pick a split) or not a dataset; it has
            no rows (raised when iteration ends).
    """
    return _read(hf_records(ds), required, mapping, limits, source, f"{source or 'the dataset'}: no rows")


@dataclass(frozen=True)
class DatasetSource:
    """A dataset that can be read more than once, with its fingerprint and size.

    Attributes:
        description: The path, or what kind of in-memory data it is.
        fingerprint: ``sha256:<hex>`` of the file's bytes, or of the rows read from
            in-memory data; equal fingerprints mean the same rows.
        n_rows: Rows read (valid and invalid).
        n_valid: Valid rows.
        present: For each sample field, how many valid rows have it.
        path: The file, when the data is one.
    """

    description: str
    fingerprint: str
    n_rows: int
    n_valid: int
    present: Mapping[str, int]
    path: Path | None
    _read: Callable[[Sequence[str]], Iterator[Row | SampleError]]
    ideal: Mapping[str, int] = field(default_factory=dict)
    """Ideal-context column (DeepEval's ``context``...) -> valid rows that have it (kept in metadata)."""
    errors: tuple[SampleError, ...] = ()
    """The first few invalid rows, for errors that must say why rows are missing."""
    notes: Mapping[str, int] = field(default_factory=dict)
    """Row note (a key of :data:`~assay.run._data._rows.NOTES`) -> valid rows that have it."""
    columns: Mapping[str, int] = field(default_factory=dict)
    """Column kept as metadata (no sample field) -> valid rows that have it, in the order first seen."""

    def note_messages(self) -> list[str]:
        """What was taken on trust in the data, each said once (``contexts was one string ... in 12 rows``)."""
        return [
            NOTES[key].format(rows=f"{n} row{'s' if n != 1 else ''} of {self.description}")
            for key, n in self.notes.items()
            if key in NOTES
        ]

    def rows(self, required: Sequence[str] = ()) -> Iterator[Row | SampleError]:
        """Read the rows again (a bad row is a :class:`~assay.errors.SampleError`, not a stop)."""
        return self._read(required)

    def check_fields(self, metrics: Sequence[Metric]) -> None:
        """Fail before any judge call when *no* row has a field some metric needs.

        A field missing from only some rows is reported per row (``file:line: what``) and
        the other rows are judged; a field no row has is one clear error, not one per row.
        Every door says it alike (:func:`~assay.evaluate` on a file, a table or a list, and
        ``assay run``), naming the field, the columns read for it, the columns that were
        kept as metadata instead, and how to map one: ``--map COLUMN=FIELD`` on the
        command line, ``mapping={"COLUMN": "FIELD"}`` in Python.

        Raises:
            ConfigError: a metric needs a field that no valid row has.
        """
        if self.n_valid == 0:
            return
        for metric in metrics:
            missing = [f for f in metric.required_fields if self.present.get(f, 0) == 0]
            if not missing:
                continue
            field_name = missing[0]
            aliases = {v: [k for k, t in ALIASES.items() if t == v] for v in missing}
            names = "; ".join(
                f"'{m}'" + (f" (also read from {', '.join(aliases[m])})" if aliases[m] else "") for m in missing
            )
            ideal = [name for name in IDEAL_CONTEXT_COLUMNS if self.ideal.get(name)]
            if "contexts" in missing and ideal:
                # No row has retrieved contexts, so this mapping takes no row's away from it.
                advice = (
                    f"the column '{ideal[0]}' is {IDEAL_CONTEXT_COLUMNS[ideal[0]]} (what should have been "
                    f"retrieved), kept in metadata and never judged against; add what was retrieved as "
                    f"'retrieval_context' or 'retrieved_contexts', or, if '{ideal[0]}' does hold the retrieved "
                    f"passages, {map_advice(ideal[0], 'contexts')}"
                )
            else:
                others = [name for name in self.columns if name not in IDEAL_CONTEXT_COLUMNS]
                # A column named like the field or one of its aliases ('retrieved_context') is the likely one.
                column = likely_column(field_name, others) or "COLUMN"
                advice = f"add it to the data, or name the column that holds it: {map_advice(column, field_name)}"
                if others:
                    shown = ", ".join(f"'{name}'" for name in others[:_COLUMNS_SHOWN])
                    more = f" and {len(others) - _COLUMNS_SHOWN} more" if len(others) > _COLUMNS_SHOWN else ""
                    advice += f" (columns kept as metadata: {shown}{more})"
            rejected = [e for e in self.errors if any(f"'{f}" in e.detail for f in missing)]
            if rejected:
                shown = "; ".join(str(e) for e in rejected[:3])
                advice += f". Rows that have it were invalid: {shown}"
            raise ConfigError(
                f"metric '{metric.name}' needs {names}, which no valid row of {self.description} has; {advice}"
            )


_COLUMNS_SHOWN = 5


_FINGERPRINT_CHUNK = 1 << 20


_ERRORS_KEPT = 20


_COLUMNS_KEPT = 100  # metadata columns remembered for the advice of check_fields (a wide table stays cheap)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_FINGERPRINT_CHUNK):
                digest.update(chunk)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror})") from exc
    return f"sha256:{digest.hexdigest()}"


_TABLES = {"dataframe": "<dataframe>", "arrow": "<arrow table>", "hf": "<dataset>"}


def _table_kind(data: Any) -> str | None:
    """Which in-memory table ``data`` is (``dataframe``, ``arrow``, ``hf``), by its type's module; ``None`` for none."""
    kind = f"{type(data).__module__}.{type(data).__qualname__}"
    if kind.split(".")[0] == "pandas" and kind.endswith("DataFrame"):
        return "dataframe"
    if kind.split(".")[0] == "pyarrow" and kind.endswith(("Table", "RecordBatch")):
        return "arrow"
    if kind.startswith("datasets."):
        return "hf"
    return None


def read_rows(
    data: Any,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    limits: SizeLimits | None = None,
    source: str | None = "<samples>",
) -> Iterator[Row | SampleError]:
    """The one road into a run: whatever ``data`` is, its rows, each a :class:`Row` or its :class:`SampleError`.

    A file path goes to the reader its suffix names (:func:`read_dataset`); a pandas
    DataFrame, an Arrow table and a Hugging Face dataset to theirs; anything else is a
    sequence of :class:`~assay.Sample` objects, dicts or rows already read
    (:func:`~assay.run._data._sources.python.item_records`, errors naming ``source``; a
    row already read is checked for ``required`` only). Every source's records go down one
    road (:func:`_road`: one mapping, columns to fields; one validation, limits, required
    fields, ids), so every door (``assay run``, :func:`~assay.evaluate`, Ray, the pytest
    plugin) reads alike.

    Raises:
        DatasetError: as the reader of ``data`` raises (see :func:`read_dataset`).
    """
    if isinstance(data, str | Path):
        return read_dataset(data, required=required, mapping=mapping, limits=limits)
    kind = _table_kind(data)
    if kind == "dataframe":
        return from_dataframe(data, required=required, mapping=mapping, limits=limits)
    if kind == "arrow":
        return from_arrow(data, required=required, mapping=mapping, limits=limits)
    if kind == "hf":
        return from_hf_dataset(data, required=required, mapping=mapping, limits=limits)
    return _read(item_records(data), required, mapping, limits, source, None)


def _reader(
    data: Any, mapping: Mapping[str, str], limits: SizeLimits | None = None
) -> tuple[str, Path | None, Callable[..., Iterator[Any]]]:
    """What the data is, its path if any, and a function that reads it (again) as rows (:func:`read_rows`)."""
    path: Path | None = None
    kind = None if isinstance(data, str | Path) else _table_kind(data)
    if isinstance(data, str | Path):
        path = Path(data)
        description = str(path)
    elif kind is not None:
        description = _TABLES[kind]
    else:
        if isinstance(data, Mapping):
            raise DatasetError("evaluate() takes a list of samples or dicts, a file path, or a table; got one dict")
        if not isinstance(data, Sequence):
            data = list(data)  # a generator is read twice: once to check, once to judge
        description = f"<{counted(len(data), 'sample')}>"
    given = data if path is None else path
    return description, path, lambda required: read_rows(given, required=required, mapping=mapping, limits=limits)


_OTEL_FIELDS = ("trace_id", "span_id", "response_id")


def open_dataset(
    data: Any, *, mapping: Mapping[str, str] | None = None, limits: SizeLimits | None = None
) -> DatasetSource:
    """Check ``data`` in one pass and return a re-readable source with its fingerprint.

    Args:
        data: A file path (JSONL, CSV, Parquet, a JSON array), a pandas DataFrame, a
            Hugging Face ``Dataset``, or a sequence of :class:`~assay.Sample` objects or
            dicts (a generator is read into a list).
        mapping: Column renames (``{"my_answer": "answer"}``).
        limits: The text a field and a row may hold (default :class:`~assay.run.SizeLimits`);
            a row above either is a row error, found here, before any judge call.

    Raises:
        DatasetError: the data cannot be read (a missing path, a directory), or holds no
            row at all.
    """
    mapping = dict(mapping or {})
    description, path, read = _reader(data, mapping, limits)
    unread = DatasetSource(description, "", 0, 0, {}, path, read)
    rows = unread.rows(())  # the checking pass reads as the judging pass will; a bad suffix is said here
    fingerprint = _file_sha256(path) if path is not None else None
    digest = hashlib.sha256()
    n_rows = n_valid = 0
    present: dict[str, int] = {}
    ideal: dict[str, int] = {}
    errors: list[SampleError] = []
    notes: dict[str, int] = {}
    columns: dict[str, int] = {}
    for item in rows:
        n_rows += 1
        if isinstance(item, SampleError) and len(errors) < _ERRORS_KEPT:
            errors.append(item)
        if isinstance(item, Row):
            n_valid += 1
            for note in item.notes:
                notes[note] = notes.get(note, 0) + 1
            for name in Sample.model_fields:
                if item.sample.field_present(name):
                    present[name] = present.get(name, 0) + 1
            for name in IDEAL_CONTEXT_COLUMNS:
                if item.sample.metadata.get(name):
                    ideal[name] = ideal.get(name, 0) + 1
            for name in item.sample.metadata:
                if len(columns) < _COLUMNS_KEPT or name in columns:
                    columns[name] = columns.get(name, 0) + 1
            if path is None:
                # ASCII JSON: text that is not valid Unicode (a lone surrogate) still hashes.
                # The OpenTelemetry ids only where given: data without them hashes as before they existed.
                dumped = item.sample.model_dump(mode="json")
                for name in _OTEL_FIELDS:
                    if dumped.get(name) is None:
                        dumped.pop(name, None)
                digest.update(json_text.dumps(dumped, sort_keys=True).encode() + b"\n")
        elif path is None:
            digest.update(str(item).encode("utf-8", "surrogatepass") + b"\n")
    if n_rows == 0:
        raise DatasetError(f"{description}: holds no rows; nothing to evaluate")
    return dataclasses.replace(
        unread,
        fingerprint=fingerprint or f"sha256:{digest.hexdigest()}",
        n_rows=n_rows,
        n_valid=n_valid,
        present=present,
        ideal=ideal,
        errors=tuple(errors),
        notes=notes,
        columns=columns,
    )


def open_rows(
    data: Any,
    metrics: Sequence[Metric],
    *,
    mapping: Mapping[str, str] | None = None,
    limits: SizeLimits | None = None,
    stream: bool = False,
) -> tuple[DatasetSource | None, Iterator[Row | SampleError]]:
    """The rows a run judges, each checked for the fields ``metrics`` need, and the source they come from.

    The data is read once to check it (and fingerprint it), then again to judge; when no
    row has a field some metric needs, the run stops here, before any judge call
    (:meth:`DatasetSource.check_fields`). With ``stream`` (nothing, such as a run store,
    needs to verify the data), a one-shot iterable (neither a path, a sequence nor a
    table) is read once, unchecked, and has no source: it cannot know that no row has a
    field before it ends, so each of its rows lacking one is an invalid row.

    Raises:
        DatasetError: as :func:`open_dataset` raises.
        ConfigError: a metric needs a field no valid row has.
    """
    required = required_fields(metrics)
    if stream and not isinstance(data, str | Path | Sequence) and not _is_table(data):
        return None, read_rows(data, required=required, mapping=mapping, limits=limits)
    source = open_dataset(data, mapping=mapping, limits=limits)
    source.check_fields(metrics)
    return source, source.rows(required)


def _is_table(data: Any) -> bool:
    """A pandas DataFrame, a Hugging Face dataset or an Arrow table (by its type's top package).

    ``pandas.DataFrame.__module__`` is ``"pandas"`` in pandas 3.
    """
    return type(data).__module__.split(".")[0] in ("pandas", "datasets", "pyarrow")
