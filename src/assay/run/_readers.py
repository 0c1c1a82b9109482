"""Reading samples from CSV, Parquet, JSON arrays, pandas and Hugging Face datasets, row by row.

Every reader yields what :func:`~assay.run.read_jsonl` yields: a :class:`Row` per good
row and a :class:`~assay.errors.SampleError` per bad one (reading goes on), each carrying
where the row came from. For CSV that is the physical line on which the record starts (a
quoted cell may span lines; the header is line 1); for a JSON array file the 1-based item;
for Parquet, DataFrames and datasets the 1-based row. A row without an ``id`` gets
``line-N`` from that number. Every row goes through
:func:`~assay.run.sample_from_record`, so the column names, the row checks and the
refusal of a reused id are the same everywhere. A source with no rows and no row errors
at all raises :class:`~assay.errors.DatasetError` (``"...: no rows ..."``) when iteration
ends.

Memory stays bounded: CSV is read one record at a time, Parquet one record batch at a
time, a DataFrame one row at a time, a dataset through its own iterator. A JSON array
file is parsed whole.

Cells are normalised the same way everywhere:

- an empty cell (``""``, null, NaN, ``pd.NA``) is absent, as if the column were missing,
  except in the answer column: an empty answer is what the system said (CSV cannot tell
  null from empty, so there an empty answer cell is an empty answer);
- ``contexts`` given as a string holding a JSON list (``'["a", "b"]'``, raw newlines
  allowed) or a Python list literal (``"['a', 'b']"``, as pandas writes lists) is that
  list; text that starts like a list of strings but is neither is a row error; any other
  string is one context (:func:`~assay.run._dataset.contexts_from_text`, which
  :func:`~assay.run.sample_from_record` applies to JSON rows too, with a note);
- ``trace``, ``reference_tool_calls`` and ``metadata`` given as strings are parsed as JSON;
- numpy scalars and arrays become plain Python values.

``mapping`` renames columns (``{"my_answer": "answer"}``) and wins over the standard
:data:`~assay.run.ALIASES`; columns that are no sample field go to ``metadata``.
``limits`` (:class:`~assay.run.SizeLimits`) caps the text of a field and of a row: a
row above either is a row error naming the field, its size, the limit and the option
that raises it.

Parquet needs the ``parquet`` extra (pyarrow), DataFrames the ``pandas`` extra and
Hugging Face datasets the ``datasets`` extra; each is imported only when used.
"""

from __future__ import annotations

import codecs
import csv
import importlib
import math
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from assay.errors import DatasetError, MissingExtraError, SampleError
from assay.run._dataset import (
    ALIASES,
    DATASET_SUFFIXES,
    MappedColumns,
    Row,
    SizeLimits,
    _jsonl_rows,
    check_data_file,
    check_mapped_columns,
    contexts_from_text,
    parse_json,
    read_jsonl,
    require_rows,
    sample_from_record,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DATASET_SUFFIXES",
    "from_dataframe",
    "from_hf_dataset",
    "read_csv",
    "read_dataset",
    "read_parquet",
]

PARQUET_BATCH_ROWS = 1024
"""Rows per Parquet record batch: the most a Parquet reader holds in memory at once."""

_JSON_FIELDS = frozenset({"trace", "reference_tool_calls", "metadata"})
_MISSING_TYPES = frozenset({"NAType", "NaTType"})  # pandas.NA, pandas.NaT


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
            unreadable, or a JSON array file is not valid JSON (raised when iteration
            starts); it holds no rows and no row errors (raised when iteration ends).
    """
    path = Path(path)
    check_data_file(path)
    kind = DATASET_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        known = ", ".join(DATASET_SUFFIXES)
        shown = f"suffix {path.suffix!r}" if path.suffix else "no suffix"
        raise DatasetError(
            f"{path}: cannot tell the format from {shown}; use one of {known} "
            "(or call read_jsonl / read_csv / read_parquet directly)"
        )
    if kind == "csv":
        return read_csv(path, required=required, mapping=mapping, limits=limits)
    if kind == "parquet":
        return read_parquet(path, required=required, mapping=mapping, limits=limits)
    if path.suffix.lower() == ".json":
        return _read_json_lines(path, required=tuple(required), mapping=mapping, limits=limits)
    return read_jsonl(path, required=required, mapping=mapping, limits=limits)


def _read_json_lines(
    path: Path, *, required: tuple[str, ...], mapping: Mapping[str, str] | None, limits: SizeLimits | None
) -> Iterator[Row | SampleError]:
    """A ``.json`` file: one JSON array of objects, or JSON lines."""
    return require_rows(
        _json_rows(path, required, mapping, limits),
        f"{path}: no rows (the file is empty, holds only blank lines, or an empty array)",
    )


def _json_rows(
    path: Path, required: tuple[str, ...], mapping: Mapping[str, str] | None, limits: SizeLimits | None
) -> Iterator[Row | SampleError]:
    check_data_file(path)
    with path.open("rb") as handle:
        head = handle.read(4096).removeprefix(codecs.BOM_UTF8).lstrip()
    if not head.startswith(b"["):
        yield from _jsonl_rows(path, required, mapping, limits)
        return
    data = path.read_bytes().removeprefix(codecs.BOM_UTF8)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DatasetError(
            f"{path}: not UTF-8 (byte {exc.start + 1}, on line {line}); save the file as UTF-8"
        ) from None
    try:
        items = parse_json(text)
    except ValueError as exc:
        raise DatasetError(f"{path}: not valid JSON: {str(exc).removeprefix('invalid JSON: ')}") from None
    if not isinstance(items, list):  # e.g. "[1] 2": parse_json would have refused it
        raise DatasetError(f"{path}: expected a JSON array of objects")
    source = str(path)
    seen: dict[str, int] = {}
    columns = MappedColumns(mapping, source)
    for number, item in enumerate(items, start=1):
        columns.see(item)
        notes: list[str] = []
        try:
            sample = sample_from_record(
                item,
                line=number,
                source=source,
                required=required,
                mapping=mapping,
                unit="item",
                seen_ids=seen,
                limits=limits,
                notes=notes,
            )
        except SampleError as exc:
            yield exc
            continue
        yield Row(sample, number, tuple(notes))
    columns.check(len(items))


# -- CSV ------------------------------------------------------------------------------------


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
    return require_rows(
        _csv_rows(path, tuple(required), mapping, limits),
        f"{path}: no rows (the file is empty or holds only a header)",
    )


def _csv_rows(
    path: Path, required: tuple[str, ...], mapping: Mapping[str, str] | None, limits: SizeLimits | None
) -> Iterator[Row | SampleError]:
    renames = _renames(mapping)
    source = str(path)
    check_data_file(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror})") from exc
    with handle:
        lines = _Lines(handle)
        reader = csv.reader(lines, strict=True)
        header = _csv_header(reader, lines, source)
        if header is None:
            return
        check_mapped_columns(mapping, [name for name in header if name], source)
        seen: dict[str, int] = {}
        reread_until = 0  # lines up to this one are read a second time, after an unclosed quote
        while True:
            lines.begin_record()
            start = lines.number + 1
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                end = lines.number
                if end > start:
                    # The record ran on past its line: a quote opened a cell that never
                    # closed. Report what it swallowed, then read those lines again.
                    taken = f"line {end} was" if end == start + 1 else f"lines {start + 1}-{end} were"
                    yield SampleError(
                        f"unclosed quote in a cell opened on line {start}; {taken} read into it, and are read again "
                        f"as rows (csv: {exc}{_limit_note(exc)})",
                        source=source,
                        line=start,
                        end_line=end,
                    )
                    lines.first_bad_byte(start, start)
                    lines.read_again(start + 1)
                    reread_until = max(reread_until, end)
                else:
                    lines.first_bad_byte(start, end)  # forget them: the record is reported anyway
                    yield SampleError(_csv_problem(exc), source=source, line=start)
                continue
            end = lines.number
            if not any(cell.strip() for cell in cells):
                continue
            bad_byte = lines.first_bad_byte(start, end)
            if bad_byte is not None:
                yield SampleError(f"not UTF-8 (byte {bad_byte + 1} of its line)", source=source, line=start)
                continue
            if len(cells) > len(header):
                yield SampleError(
                    f"the row has {len(cells)} cells but the header has {len(header)} columns",
                    source=source,
                    line=start,
                )
                continue
            if start <= reread_until and len(cells) != len(header):
                yield SampleError(
                    f"the row has {len(cells)} cells, not {len(header)}; it was read into an unclosed quote above "
                    "and read again, which needs a cell for every column",
                    source=source,
                    line=start,
                )
                continue
            record = {name: cell for name, cell in zip(header, cells, strict=False) if name}
            yield _row(
                record,
                line=start,
                source=source,
                required=required,
                mapping=mapping,
                renames=renames,
                seen=seen,
                limits=limits,
            )


def _csv_problem(exc: csv.Error) -> str:
    """A one-line record the csv module refused, said in words a person can act on."""
    text = str(exc)
    if "field larger than field limit" in text:
        return (
            f"a cell is longer than the CSV field limit ({csv.field_size_limit():,} characters); put long texts in "
            "JSONL or Parquet, or raise csv.field_size_limit()"
        )
    if "unexpected end of data" in text:
        return "unclosed quote in a cell (the file ends inside it)"
    if "expected after" in text:
        return f'a quote inside a quoted cell is not doubled: write "" for a literal quote (csv: {text})'
    return f"invalid CSV: {text}"


def _limit_note(exc: csv.Error) -> str:
    if "field larger than field limit" in str(exc):
        return "; or a cell longer than the limit, csv.field_size_limit()"
    return ""


class _Lines:
    """The physical lines of a binary file as text, remembering which were not UTF-8.

    Keeps the lines of the record being read, so that they can be read again (after an
    unclosed quote swallowed them); :attr:`number` is the last line handed out.
    """

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self.number = 0
        self._bad: dict[int, int] = {}  # line number -> offset of the first bad byte
        self._record: list[str] = []  # lines handed out since begin_record(), in order
        self._again: list[str] = []  # lines to hand out again, last first

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        if self._again:
            text = self._again.pop()
        else:
            raw = next(self._handle)
            if self.number == 0:
                raw = raw.removeprefix(codecs.BOM_UTF8)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                self._bad[self.number + 1] = exc.start
                text = raw.decode("utf-8", errors="replace")
        self.number += 1
        self._record.append(text)
        return text

    def begin_record(self) -> None:
        """Start remembering lines afresh: a new record begins."""
        self._record.clear()

    def read_again(self, first: int) -> None:
        """Hand out this record's lines from line ``first`` on again."""
        start = self.number - len(self._record) + 1
        again = self._record[first - start :]
        self._again.extend(reversed(again))
        self.number = first - 1
        self._record.clear()

    def first_bad_byte(self, first: int, last: int) -> int | None:
        """The first bad byte's offset on lines ``first..last``, forgetting those lines."""
        offsets = [self._bad.pop(n) for n in sorted(self._bad) if first <= n <= last]
        return offsets[0] if offsets else None


def _csv_header(reader: Iterator[list[str]], lines: _Lines, source: str) -> list[str] | None:
    """The header's column names (stripped), or ``None`` for an empty file."""
    try:
        header = next((row for row in reader if any(cell.strip() for cell in row)), None)
    except csv.Error as exc:
        raise DatasetError(f"{source}: the header is not valid CSV ({exc})") from None
    if header is None:
        return None
    if lines.first_bad_byte(1, lines.number) is not None:
        raise DatasetError(f"{source}: the header is not UTF-8; save the file as UTF-8")
    names = [name.strip() for name in header]
    _check_unique([n for n in names if n], source)
    return names


# -- Parquet ----------------------------------------------------------------------------------


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
    return require_rows(_parquet_rows(path, tuple(required), mapping, batch_rows, limits), f"{path}: no rows (0 rows)")


def _parquet_rows(
    path: Path,
    required: tuple[str, ...],
    mapping: Mapping[str, str] | None,
    batch_rows: int,
    limits: SizeLimits | None,
) -> Iterator[Row | SampleError]:
    renames = _renames(mapping)
    source = str(path)
    seen: dict[str, int] = {}
    if batch_rows < 1:
        raise DatasetError(f"batch_rows must be at least 1, got {batch_rows}")
    check_data_file(path)
    parquet = _import_optional("pyarrow.parquet", "pyarrow", "parquet", "Reading Parquet files")
    try:
        parquet_file = parquet.ParquetFile(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError and friends
        raise DatasetError(f"{path}: not a readable Parquet file ({_brief(exc)})") from None
    try:
        _check_unique([str(name) for name in parquet_file.schema_arrow.names], source)
        check_mapped_columns(mapping, [str(name) for name in parquet_file.schema_arrow.names], source)
        number = 0
        batches = iter(parquet_file.iter_batches(batch_size=batch_rows))
        while True:
            try:
                batch = next(batches, None)
            except Exception as exc:  # a corrupt row group
                raise DatasetError(f"{path}: cannot read rows after row {number} ({_brief(exc)})") from None
            if batch is None:
                return
            for record in batch.to_pylist():
                number += 1
                yield _row(
                    record,
                    line=number,
                    source=source,
                    required=required,
                    mapping=mapping,
                    renames=renames,
                    seen=seen,
                    unit="row",
                    limits=limits,
                )
    finally:
        parquet_file.close()


# -- in-memory tables ---------------------------------------------------------------------------


def from_dataframe(
    df: pd.DataFrame,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    source: str | None = "<dataframe>",
    limits: SizeLimits | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a pandas DataFrame, one row at a time.

    The DataFrame's index is ignored (give an ``id`` column to keep ids); row numbers are
    the 1-based position. NaN, ``None``, ``pd.NA`` and ``pd.NaT`` cells are absent.

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
    return require_rows(
        _dataframe_rows(df, tuple(required), mapping, source, limits), f"{source or 'the DataFrame'}: no rows"
    )


def _dataframe_rows(
    df: pd.DataFrame,
    required: tuple[str, ...],
    mapping: Mapping[str, str] | None,
    source: str | None,
    limits: SizeLimits | None,
) -> Iterator[Row | SampleError]:
    pandas = _import_optional("pandas", "pandas", "pandas", "Reading a pandas DataFrame")
    if not isinstance(df, pandas.DataFrame):
        raise DatasetError(f"from_dataframe() needs a pandas DataFrame, got {type(df).__name__}")
    renames = _renames(mapping)
    seen: dict[str, int] = {}
    columns = [str(name) for name in df.columns]
    _check_unique(columns, source or "the DataFrame")
    check_mapped_columns(mapping, columns, source)
    for number, values in enumerate(df.itertuples(index=False, name=None), start=1):
        record = {name: _plain(value) for name, value in zip(columns, values, strict=True)}
        yield _row(
            record,
            line=number,
            source=source,
            required=required,
            mapping=mapping,
            renames=renames,
            seen=seen,
            unit="row",
            limits=limits,
        )


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
    return require_rows(_hf_rows(ds, tuple(required), mapping, source, limits), f"{source or 'the dataset'}: no rows")


def _hf_rows(
    ds: Any, required: tuple[str, ...], mapping: Mapping[str, str] | None, source: str | None, limits: SizeLimits | None
) -> Iterator[Row | SampleError]:
    datasets = _import_optional("datasets", "datasets", "datasets", "Reading a Hugging Face dataset")
    if isinstance(ds, datasets.DatasetDict | datasets.IterableDatasetDict):
        splits = ", ".join(repr(split) for split in ds)
        raise DatasetError(f"from_hf_dataset() needs one split, got a dataset dict with splits {splits}; pick one")
    if not isinstance(ds, datasets.Dataset | datasets.IterableDataset):
        raise DatasetError(f"from_hf_dataset() needs a datasets.Dataset, got {type(ds).__name__}")
    renames = _renames(mapping)
    seen: dict[str, int] = {}
    # Read unformatted (plain Python rows): a Dataset formatted for numpy or torch, and any
    # IterableDataset (whose format is not public; with_format is lazy there).
    formatting = getattr(ds, "format", None)
    formatted = not isinstance(formatting, Mapping) or formatting.get("type") is not None
    rows = ds.with_format(None) if formatted else ds
    names = getattr(ds, "column_names", None)
    if isinstance(names, list):
        check_mapped_columns(mapping, [str(name) for name in names], source)
    columns = MappedColumns(mapping if not isinstance(names, list) else None, source)
    number = 0
    for number, raw in enumerate(rows, start=1):
        columns.see(raw)
        record = {name: _plain(value) for name, value in raw.items()}
        yield _row(
            record,
            line=number,
            source=source,
            required=required,
            mapping=mapping,
            renames=renames,
            seen=seen,
            unit="row",
            limits=limits,
        )
    columns.check(number)


# -- shared ------------------------------------------------------------------------------------


def _row(
    record: dict[str, Any],
    *,
    line: int,
    source: str | None,
    required: tuple[str, ...],
    mapping: Mapping[str, str] | None,
    renames: Mapping[str, str],
    seen: MutableMapping[str, int],
    unit: str = "line",
    limits: SizeLimits | None = None,
) -> Row | SampleError:
    notes: list[str] = []
    try:
        cleaned = _clean_record(record, renames)
        sample = sample_from_record(
            cleaned,
            line=line,
            source=source,
            required=required,
            mapping=mapping,
            unit=unit,
            seen_ids=seen,
            limits=limits,
            notes=notes,
        )
    except _CellError as exc:
        return SampleError(str(exc), source=source, line=line, unit=unit)
    except SampleError as exc:
        return exc
    return Row(sample, line, tuple(notes))


class _CellError(ValueError):
    """A cell that cannot be decoded (reported as a SampleError for its row)."""


def _renames(mapping: Mapping[str, str] | None) -> dict[str, str]:
    """Column -> field, as :func:`sample_from_record` applies them."""
    return {**ALIASES, **(mapping or {})}


def _clean_record(record: Mapping[str, Any], renames: Mapping[str, str]) -> dict[str, Any]:
    """Drop empty cells (an empty answer is kept) and decode JSON-in-a-string cells."""
    cleaned: dict[str, Any] = {}
    for key, value in record.items():
        name = str(key)
        target = renames.get(name, name)
        if _is_empty(value) and not (target == "answer" and value == ""):
            continue
        if isinstance(value, str):
            if target == "contexts":
                value = _contexts(name, value)
            elif target in _JSON_FIELDS:
                value = _json_cell(name, value, want_object=target == "metadata")
        cleaned[name] = value
    return cleaned


def _plain(value: Any) -> Any:
    """Plain Python values for numpy scalars and arrays (recursively inside lists and dicts)."""
    import numpy as np  # a core dependency, imported here only to keep CSV reading light

    if isinstance(value, np.ndarray):
        return [_plain(item) for item in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _is_empty(value: Any) -> bool:
    if value is None or (isinstance(value, str) and not value):
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return type(value).__name__ in _MISSING_TYPES


def _contexts(column: str, cell: str) -> Any:
    """The contexts in one text cell (:func:`~assay.run._dataset.contexts_from_text`)."""
    try:
        return contexts_from_text(cell)
    except ValueError as exc:
        raise _CellError(f"column '{column}': {exc}") from None


def _json_cell(column: str, cell: str, *, want_object: bool) -> Any:
    try:
        value = parse_json(cell, strict=False)
    except ValueError as exc:
        raise _CellError(f"column '{column}': {exc}") from None
    if want_object and not isinstance(value, dict):
        raise _CellError(f"column '{column}': expected a JSON object, got {type(value).__name__}")
    return value


def _check_unique(columns: list[str], source: str) -> None:
    seen: set[str] = set()
    twice: set[str] = set()
    for name in columns:
        (twice if name in seen else seen).add(name)
    if twice:
        names = ", ".join(f"'{name}'" for name in sorted(twice))
        raise DatasetError(f"{source}: column {names} appears more than once; rename the duplicates")


def _import_optional(module: str, package: str, extra: str, purpose: str) -> Any:
    """Import ``module`` (typed as Any: pyarrow and datasets ship no type information)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(package, extra, purpose) from None


def _brief(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__
