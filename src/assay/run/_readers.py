"""Reading samples from CSV, Parquet, pandas and Hugging Face datasets, row by row.

Every reader yields what :func:`~assay.run.read_jsonl` yields: a :class:`Row` per good
row and a :class:`~assay.errors.SampleError` per bad one (reading goes on), each carrying
where the row came from. For CSV that is the physical line on which the record starts (a
quoted cell may span lines; the header is line 1); for Parquet, DataFrames and datasets it
is the 1-based row index. A row without an ``id`` gets ``line-N`` from that number.

Memory stays bounded: CSV is read one record at a time, Parquet one record batch at a
time, a DataFrame one row at a time, a dataset through its own iterator.

Cells are normalised the same way everywhere:

- an empty cell (``""``, null, NaN, ``pd.NA``) is absent, as if the column were missing;
- ``contexts`` given as a string holding a JSON list (``'["a", "b"]'``) is that list; any
  other string is one context;
- ``trace``, ``reference_tool_calls`` and ``metadata`` given as strings are parsed as JSON;
- numpy scalars and arrays become plain Python values.

``mapping`` renames columns (``{"my_answer": "answer"}``) before the standard
:data:`~assay.run.ALIASES` apply; columns that are no sample field go to ``metadata``.

Parquet needs the ``parquet`` extra (pyarrow), DataFrames the ``pandas`` extra and
Hugging Face datasets the ``datasets`` extra; each is imported only when used.
"""

from __future__ import annotations

import codecs
import csv
import importlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from assay.errors import DatasetError, MissingExtraError, SampleError
from assay.run._dataset import ALIASES, Row, read_jsonl, sample_from_record

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

DATASET_SUFFIXES: Mapping[str, str] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
"""File suffix (lower case) -> the reader :func:`read_dataset` uses for it."""

PARQUET_BATCH_ROWS = 1024
"""Rows per Parquet record batch: the most a Parquet reader holds in memory at once."""

_JSON_FIELDS = frozenset({"trace", "reference_tool_calls", "metadata"})
_MISSING_TYPES = frozenset({"NAType", "NaTType"})  # pandas.NA, pandas.NaT


def read_dataset(
    path: str | Path,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a file, choosing the reader by its suffix.

    ``.jsonl``, ``.ndjson`` and ``.json`` (JSON lines, one object per line) go to
    :func:`~assay.run.read_jsonl`, ``.csv`` to :func:`read_csv`, ``.parquet`` and ``.pq``
    to :func:`read_parquet`.

    Args:
        path: The dataset file.
        required: Fields that must be present and non-empty in every row.
        mapping: Column renames (``{"my_answer": "answer"}``), applied before the aliases.

    Returns:
        An iterator of rows and per-row errors.

    Raises:
        DatasetError: The suffix is not one of the above (raised at once); the file is
            missing or unreadable, or a ``.json`` file holds one JSON array rather than
            JSON lines (raised when iteration starts).
    """
    path = Path(path)
    kind = DATASET_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        known = ", ".join(DATASET_SUFFIXES)
        shown = f"suffix {path.suffix!r}" if path.suffix else "no suffix"
        raise DatasetError(
            f"{path}: cannot tell the format from {shown}; use one of {known} "
            "(or call read_jsonl / read_csv / read_parquet directly)"
        )
    if kind == "csv":
        return read_csv(path, required=required, mapping=mapping)
    if kind == "parquet":
        return read_parquet(path, required=required, mapping=mapping)
    if path.suffix.lower() == ".json":
        return _read_json_lines(path, required=tuple(required), mapping=mapping)
    return read_jsonl(path, required=required, mapping=mapping)


def _read_json_lines(
    path: Path, *, required: tuple[str, ...], mapping: Mapping[str, str] | None
) -> Iterator[Row | SampleError]:
    """JSON lines from a ``.json`` file, refusing a file that is one JSON array."""
    _check_file(path, "a JSON lines file")
    with path.open("rb") as handle:
        head = handle.read(4096).lstrip(codecs.BOM_UTF8).lstrip()
    if head.startswith(b"["):
        raise DatasetError(
            f"{path}: holds a JSON array; assay reads JSON lines (one object per line). "
            "Convert it, e.g. with: jq -c '.[]' data.json > data.jsonl"
        )
    yield from read_jsonl(path, required=required, mapping=mapping)


# -- CSV ------------------------------------------------------------------------------------


def read_csv(
    path: str | Path,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a CSV file with a header row (standard library ``csv``).

    The file must be UTF-8 (a byte-order mark is allowed). Blank lines are skipped; a
    row with more cells than the header is an error, one with fewer has the rest absent;
    columns with an empty header are ignored. Errors and :attr:`Row.line` give the
    physical line on which the record starts.

    Args:
        path: The CSV file.
        required: Fields that must be present and non-empty in every row.
        mapping: Column renames (``{"my_answer": "answer"}``), applied before the aliases.

    Yields:
        A :class:`Row` per good record, a :class:`SampleError` per bad one.

    Raises:
        DatasetError: The file does not exist or cannot be opened, its header is not UTF-8
            or not valid CSV, or it names a column twice.
    """
    path = Path(path)
    required = tuple(required)
    renames = _renames(mapping)
    source = str(path)
    _check_file(path, "a CSV file")
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror})") from exc
    with handle:
        lines = _Lines(handle)
        reader = csv.reader(lines)
        header = _csv_header(reader, lines, source)
        if header is None:
            return
        consumed = reader.line_num
        while True:
            start = consumed + 1
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                consumed = reader.line_num
                lines.first_bad_byte(start, consumed)  # forget them: the record is reported anyway
                yield SampleError(f"invalid CSV: {exc}", source=source, line=start)
                continue
            consumed = reader.line_num
            if not any(cell.strip() for cell in cells):
                continue
            bad_byte = lines.first_bad_byte(start, consumed)
            if bad_byte is not None:
                yield SampleError(f"not UTF-8 (byte {bad_byte} of its line)", source=source, line=start)
                continue
            if len(cells) > len(header):
                yield SampleError(
                    f"the row has {len(cells)} cells but the header has {len(header)} columns",
                    source=source,
                    line=start,
                )
                continue
            record = {name: cell for name, cell in zip(header, cells, strict=False) if name}
            yield _row(record, line=start, source=source, required=required, mapping=mapping, renames=renames)


class _Lines:
    """The physical lines of a binary file as text, remembering which were not UTF-8."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self.number = 0
        self._bad: dict[int, int] = {}  # line number -> offset of the first bad byte

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        raw = next(self._handle)
        self.number += 1
        if self.number == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._bad[self.number] = exc.start
            return raw.decode("utf-8", errors="replace")

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
) -> Iterator[Row | SampleError]:
    """Stream samples from a Parquet file, one record batch at a time (pyarrow).

    List columns (``list<string>`` contexts, say) and struct columns arrive as Python
    lists and dicts; nulls are absent. Row numbers are 1-based.

    Args:
        path: The Parquet file.
        required: Fields that must be present and non-empty in every row.
        mapping: Column renames (``{"my_answer": "answer"}``), applied before the aliases.
        batch_rows: Rows per record batch held in memory.

    Yields:
        A :class:`Row` per good row, a :class:`SampleError` per bad one.

    Raises:
        MissingExtraError: pyarrow is not installed (extra ``parquet``).
        DatasetError: The file does not exist, is not Parquet, names a column twice, or
            cannot be read past some row.
    """
    path = Path(path)
    required = tuple(required)
    renames = _renames(mapping)
    source = str(path)
    if batch_rows < 1:
        raise DatasetError(f"batch_rows must be at least 1, got {batch_rows}")
    _check_file(path, "a Parquet file")
    parquet = _import_optional("pyarrow.parquet", "pyarrow", "parquet", "Reading Parquet files")
    try:
        parquet_file = parquet.ParquetFile(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError and friends
        raise DatasetError(f"{path}: not a readable Parquet file ({_brief(exc)})") from None
    try:
        _check_unique([str(name) for name in parquet_file.schema_arrow.names], source)
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
                yield _row(record, line=number, source=source, required=required, mapping=mapping, renames=renames)
    finally:
        parquet_file.close()


# -- in-memory tables ---------------------------------------------------------------------------


def from_dataframe(
    df: pd.DataFrame,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    source: str | None = "<dataframe>",
) -> Iterator[Row | SampleError]:
    """Stream samples from a pandas DataFrame, one row at a time.

    The DataFrame's index is ignored (give an ``id`` column to keep ids); row numbers are
    the 1-based position. NaN, ``None``, ``pd.NA`` and ``pd.NaT`` cells are absent.

    Args:
        df: The table; column names become field names (``str(name)``).
        required: Fields that must be present and non-empty in every row.
        mapping: Column renames (``{"my_answer": "answer"}``), applied before the aliases.
        source: How errors name the table.

    Yields:
        A :class:`Row` per good row, a :class:`SampleError` per bad one.

    Raises:
        MissingExtraError: pandas is not installed (extra ``pandas``).
        DatasetError: ``df`` is not a DataFrame or names a column twice.
    """
    pandas = _import_optional("pandas", "pandas", "pandas", "Reading a pandas DataFrame")
    if not isinstance(df, pandas.DataFrame):
        raise DatasetError(f"from_dataframe() needs a pandas DataFrame, got {type(df).__name__}")
    required = tuple(required)
    renames = _renames(mapping)
    columns = [str(name) for name in df.columns]
    _check_unique(columns, source or "the DataFrame")
    for number, values in enumerate(df.itertuples(index=False, name=None), start=1):
        record = {name: _plain(value) for name, value in zip(columns, values, strict=True)}
        yield _row(record, line=number, source=source, required=required, mapping=mapping, renames=renames)


def from_hf_dataset(
    ds: Any,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    source: str | None = "<dataset>",
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

    Yields:
        A :class:`Row` per good row, a :class:`SampleError` per bad one.

    Raises:
        MissingExtraError: ``datasets`` is not installed (extra ``datasets``).
        DatasetError: ``ds`` is a ``DatasetDict`` (pick a split) or not a dataset.
    """
    datasets = _import_optional("datasets", "datasets", "datasets", "Reading a Hugging Face dataset")
    if isinstance(ds, datasets.DatasetDict | datasets.IterableDatasetDict):
        splits = ", ".join(repr(split) for split in ds)
        raise DatasetError(f"from_hf_dataset() needs one split, got a dataset dict with splits {splits}; pick one")
    if not isinstance(ds, datasets.Dataset | datasets.IterableDataset):
        raise DatasetError(f"from_hf_dataset() needs a datasets.Dataset, got {type(ds).__name__}")
    required = tuple(required)
    renames = _renames(mapping)
    # Read unformatted (plain Python rows): a Dataset formatted for numpy or torch, and any
    # IterableDataset (whose format is not public; with_format is lazy there).
    formatting = getattr(ds, "format", None)
    formatted = not isinstance(formatting, Mapping) or formatting.get("type") is not None
    rows = ds.with_format(None) if formatted else ds
    for number, raw in enumerate(rows, start=1):
        record = {name: _plain(value) for name, value in raw.items()}
        yield _row(record, line=number, source=source, required=required, mapping=mapping, renames=renames)


# -- shared ------------------------------------------------------------------------------------


def _row(
    record: dict[str, Any],
    *,
    line: int,
    source: str | None,
    required: tuple[str, ...],
    mapping: Mapping[str, str] | None,
    renames: Mapping[str, str],
) -> Row | SampleError:
    try:
        cleaned = _clean_record(record, renames)
        sample = sample_from_record(cleaned, line=line, source=source, required=required, mapping=mapping)
    except _CellError as exc:
        return SampleError(str(exc), source=source, line=line)
    except SampleError as exc:
        return exc
    return Row(sample, line)


class _CellError(ValueError):
    """A cell that cannot be decoded (reported as a SampleError for its row)."""


def _renames(mapping: Mapping[str, str] | None) -> dict[str, str]:
    """Column -> field, as :func:`sample_from_record` applies them."""
    return {**ALIASES, **(mapping or {})}


def _clean_record(record: Mapping[str, Any], renames: Mapping[str, str]) -> dict[str, Any]:
    """Drop empty cells and decode JSON-in-a-string cells."""
    cleaned: dict[str, Any] = {}
    for key, value in record.items():
        name = str(key)
        if _is_empty(value):
            continue
        target = renames.get(name, name)
        if isinstance(value, str):
            if target == "contexts":
                value = _contexts(value)
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


def _contexts(cell: str) -> Any:
    """A JSON list of strings in a cell is the contexts; any other text is one context."""
    if cell.lstrip().startswith("["):
        try:
            value = json.loads(cell)
        except json.JSONDecodeError:
            return cell
        if isinstance(value, list):
            return value
    return cell


def _json_cell(column: str, cell: str, *, want_object: bool) -> Any:
    try:
        value = json.loads(cell)
    except json.JSONDecodeError as exc:
        raise _CellError(f"column '{column}': invalid JSON ({exc.msg} at column {exc.colno})") from None
    if want_object and not isinstance(value, dict):
        raise _CellError(f"column '{column}': expected a JSON object, got {type(value).__name__}")
    return value


def _check_file(path: Path, what: str) -> None:
    if not path.exists():
        raise DatasetError(f"{path}: no such file")
    if path.is_dir():
        raise DatasetError(f"{path}: is a directory, expected {what}")


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
