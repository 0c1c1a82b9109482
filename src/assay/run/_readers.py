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

- an empty cell (``""``, null, NaN, ``pd.NA``) is absent, as if the column were missing, in
  every column, the answer's too (CSV cannot tell null from empty, so no format does); a
  cell of only whitespace in a field's column is absent as well
  (:func:`~assay.run.sample_from_record`);
- ``contexts`` given as a string holding a JSON list (``'["a", "b"]'``, raw newlines
  allowed) or a Python list literal (``"['a', 'b']"``, as pandas writes lists) is that
  list; text that starts like a list of strings but is neither is a row error; any other
  string is one context (:func:`~assay.run._dataset.contexts_from_text`, which
  :func:`~assay.run.sample_from_record` applies to JSON rows too, with a note);
- ``trace``, ``reference_tool_calls`` and ``metadata`` given as strings are parsed as JSON;
- numpy scalars and arrays become plain Python values.

``mapping`` renames columns (``{"my_answer": "answer"}``) and wins over the standard
:data:`~assay.run.ALIASES`; columns that are no sample field go to ``metadata``. A column
named like a field or an alias but for its case (``Question``, ``Answer``, ``Contexts``,
as spreadsheets write them) is read as that field, unless a column of the exact name (or
an alias, or the mapping) gives the field already. A mapping written the wrong way round
(``{"answer": "response"}`` where ``response`` is the column) is refused with the mapping
it meant.

A file whose content is not in the shape its reader expects is said as such, with what to
do, before any row: one JSON array in a ``.jsonl`` file (on one line or pretty-printed),
one JSON object holding the rows in a list (``{"data": [...]}``) or one object written
over many lines in a ``.json`` or ``.jsonl`` file.
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
import re
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from assay._samples import Sample
from assay.errors import ConfigError, DatasetError, MissingExtraError, SampleError
from assay.run._dataset import (
    ALIASES,
    DATASET_SUFFIXES,
    LIST_ALIASES,
    MappedColumns,
    Row,
    SizeLimits,
    _jsonl_rows,
    check_data_file,
    check_mapped_columns,
    contexts_from_text,
    json_lines,
    parse_json,
    python_literal,
    require_rows,
    row_from_record,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DATASET_SUFFIXES",
    "check_format",
    "from_arrow",
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
        return read_csv(path, required=required, mapping=mapping, limits=limits)
    if kind == "parquet":
        return read_parquet(path, required=required, mapping=mapping, limits=limits)
    if path.suffix.lower() == ".json":
        return _read_json_lines(path, required=tuple(required), mapping=mapping, limits=limits)
    return require_rows(
        _checked_jsonl_rows(path, tuple(required), mapping, limits),
        f"{path}: no rows (the file is empty or holds only blank lines)",
    )


def check_format(path: str | Path) -> None:
    """Raise unless ``path`` is a data file whose format its suffix tells (``assay run``'s check).

    Raises:
        DatasetError: the path is missing or a directory (naming the data files in it), or
            its suffix is none of :data:`DATASET_SUFFIXES`; the message says which suffix
            to give it, from what its first line looks like.
    """
    path = Path(path)
    check_data_file(path)
    if path.suffix.lower() not in DATASET_SUFFIXES:
        raise DatasetError(_format_problem(path))


def _format_problem(path: Path) -> str:
    """A file whose suffix names no format: which suffixes there are, and the one its content suggests."""
    shown = f"suffix {path.suffix!r}" if path.suffix else "no suffix"
    problem = f"{path}: cannot tell the format from {shown}; give a file ending in {', '.join(DATASET_SUFFIXES)}"
    first = _first_line(path, 4096).lstrip()
    guess = None
    if first.startswith("{"):
        guess, what = ".jsonl", "a JSON object (JSON lines)"
    elif first.startswith("["):
        guess, what = ".json", "a JSON array"
    elif first.startswith("PAR1"):
        guess, what = ".parquet", "Parquet"
    elif "," in first and not first.startswith("<"):
        guess, what = ".csv", "a CSV header"
    if guess is None:
        return problem
    return f"{problem}. It starts like {what}: if that is what it holds, rename it {path.with_suffix(guess).name}"


def _first_line(path: Path, limit: int) -> str:
    """The first non-blank line of a file (at most ``limit`` bytes of it), as text; ``""`` if unreadable."""
    try:
        with path.open("rb") as handle:
            for raw in handle:
                if raw.strip():
                    return raw[:limit].removeprefix(codecs.BOM_UTF8).decode("utf-8", errors="replace")
                if handle.tell() > limit:
                    break
    except OSError:
        return ""
    return ""


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
        yield from _checked_jsonl_rows(path, required, mapping, limits)
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
    mapping = fit_mapping(mapping, (key for item in items if isinstance(item, dict) for key in item), source)
    columns = MappedColumns(mapping, source)
    for number, item in enumerate(items, start=1):
        columns.see(item)
        yield row_from_record(
            item,
            line=number,
            source=source,
            required=required,
            mapping=mapping,
            unit="item",
            seen_ids=seen,
            limits=limits,
        )
    columns.check(len(items))


# -- JSON lines: the shape of the file, before its rows ------------------------------------------

_PEEKED_ROWS = 50
"""JSON lines read ahead for their column names (to fit the mapping to them)."""
_WHOLE_DOCUMENT_BYTES = 256 * 1024 * 1024
"""Largest file parsed whole to tell what one JSON document over many lines holds."""


def _checked_jsonl_rows(
    path: Path, required: tuple[str, ...], mapping: Mapping[str, str] | None, limits: SizeLimits | None
) -> Iterator[Row | SampleError]:
    """JSON lines, once the file is known to hold one JSON value a line and the mapping fits its columns."""
    check_data_file(path)
    problem = _json_lines_shape_problem(path, mapping or {})
    if problem is not None:
        raise DatasetError(problem)
    columns: list[str] = []
    for n, item in enumerate(json_lines(path)):
        if n >= _PEEKED_ROWS:
            break
        if not isinstance(item, SampleError) and isinstance(item[1], dict):
            columns.extend(str(key) for key in item[1])
    yield from _jsonl_rows(path, required, fit_mapping(mapping, columns, str(path)), limits)


def _json_lines_shape_problem(path: Path, mapping: Mapping[str, str]) -> str | None:
    """What makes a file meant to hold one JSON object a line hold something else, with what to do; or ``None``.

    Found: one JSON array (on one line, or pretty-printed over many: a ``.json`` file's
    content in a ``.jsonl`` file), one object holding the rows in a list
    (``{"data": [...]}``), one object written over many lines. (A ``.json`` file that
    starts with ``[`` is read as an array before this is asked.) A key ``mapping`` names
    is a column, so an object with one is a row.
    """
    json_name = path.with_suffix(".json").name
    lines = _non_blank_lines(path, 2)
    if not lines:
        return None
    first = lines[0]
    try:
        value: Any = parse_json(first, strict=False)
    except ValueError:
        value = _UNPARSED
    if first.startswith("["):
        if value is _UNPARSED:
            return (
                f"{path} holds one JSON array written over many lines, not one object per line: rename it "
                f"{json_name} (a .json file may hold one array), or write one object per line"
            )
        if isinstance(value, list) and len(lines) == 1:
            return (
                f"{path} holds one JSON array, not one object per line: rename it {json_name}, or write one "
                "object per line"
            )
        return None  # an array on each line: each row says so
    if not first.startswith("{"):
        return None
    if value is _UNPARSED:  # the first line is not a whole object: one JSON document over many lines?
        try:
            if path.stat().st_size > _WHOLE_DOCUMENT_BYTES:
                return None
            value = parse_json(path.read_bytes().removeprefix(codecs.BOM_UTF8).decode("utf-8"), strict=False)
        except (OSError, ValueError):
            return None  # not one document either: each line says what is wrong with it
        if not isinstance(value, dict):
            return None
        wrapped = _rows_under(value, mapping)
        if wrapped is not None:
            return _wrapper_problem(path, *wrapped)
        return (
            f"{path} holds one JSON object written over many lines, not one object per line: write each row on "
            f"one line, or the rows as a JSON array in {json_name}"
        )
    wrapped = _rows_under(value, mapping) if isinstance(value, dict) else None
    return _wrapper_problem(path, *wrapped) if wrapped is not None else None


_UNPARSED = object()
_JQ_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _rows_under(value: Mapping[str, Any], mapping: Mapping[str, str]) -> tuple[str, int] | None:
    """(key, how many) when ``value`` is no row but holds the rows: a list of objects with what rows hold.

    Not when ``value`` has a column itself (a field, an alias, a mapped column): then it is a
    row, read as one. An item counts as a row by a field it gives besides ``id`` and
    ``metadata`` (a list of tool calls with ids is not rows).
    """
    if any(str(key) in mapping or _column_field(str(key)) is not None for key in value):
        return None
    for key, held in value.items():
        if (
            isinstance(held, list)
            and held
            and all(isinstance(item, dict) for item in held)
            and any(_column_field(str(column)) not in _NOT_CONTENT for item in held[:20] for column in item)
        ):
            return str(key), len(held)
    return None


_NOT_CONTENT = frozenset({None, "id", "metadata"})


def _wrapper_problem(path: Path, key: str, n: int) -> str:
    select = f".{key}" if _JQ_NAME.fullmatch(key) else f'.["{key}"]'
    rows_file = path.with_name(f"{path.stem}-rows.json")
    return (
        f"{path} is one JSON object with its {n} row{'s' if n != 1 else ''} in a list under '{key}', not a row per "
        f"line or a JSON array of rows: write the list alone, e.g. jq '{select}' {path.name} > {rows_file.name}"
    )


def _non_blank_lines(path: Path, n: int) -> list[str]:
    """The first ``n`` non-blank lines, stripped (a byte-order mark dropped; bytes that are not UTF-8 replaced)."""
    found: list[str] = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle):
            text = (raw.removeprefix(codecs.BOM_UTF8) if number == 0 else raw).decode("utf-8", errors="replace")
            if text.strip():
                found.append(text.strip())
                if len(found) >= n:
                    break
    return found


# -- column names: case, and a mapping written the wrong way round ------------------------------

_FIELDS = frozenset(Sample.model_fields)
_BY_FOLDED = {name.casefold(): name for name in (*_FIELDS, *ALIASES) if name not in LIST_ALIASES}


def _column_field(column: str) -> str | None:
    """The field a column gives by its name (exactly, as an alias, or but for its case), or ``None``."""
    name = column if column in _FIELDS or column in ALIASES else _BY_FOLDED.get(column.casefold())
    return None if name is None else ALIASES.get(name, name)


def fit_mapping(mapping: Mapping[str, str] | None, columns: Iterable[str], source: str | None) -> dict[str, str]:
    """``mapping`` checked against the ``columns`` a source has, with columns named but for their case added.

    A column that differs from a field or an alias only in case (``Question``, ``Answer``,
    ``Retrieved_Contexts``) is read as that field, unless the mapping names it or another
    column (an exact name, an alias, a mapped one) gives the field already.

    Raises:
        ConfigError: the mapping is written FIELD=COLUMN (``--map answer=response``, where
            ``answer`` is no column and ``response`` is one); the message gives the
            mapping meant (``--map response=answer``).
    """
    given = dict(mapping or {})
    present = list(dict.fromkeys(str(column) for column in columns))
    where = f"{source}: " if source else ""
    for column, target in given.items():
        if target not in _FIELDS and column in _FIELDS and column not in present and target in present:
            raise ConfigError(
                f"{where}--map {column}={target} is the wrong way round: '{target}' is a column and '{column}' a "
                f"field, and --map takes COLUMN=FIELD; did you mean --map {target}={column}?"
            )
    exact = _FIELDS | set(ALIASES)
    claimed = {given.get(c) or ALIASES.get(c, c) for c in present if c in given or c in exact}
    claimed.update(given.values())
    found: dict[str, str] = {}
    for column in present:
        if column in given or column in exact:
            continue
        field = _column_field(column)
        if field is None or field in claimed:
            continue
        found[column] = field
        claimed.add(field)
    return {**found, **given}


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
    source = str(path)
    check_data_file(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror})") from exc
    with handle:
        lines = _Lines(handle)
        reader = csv.reader(lines, strict=True, delimiter=_csv_delimiter(path))
        header = _csv_header(reader, lines, source)
        if header is None:
            return
        mapping = fit_mapping(mapping, [name for name in header if name], source)
        renames = _renames(mapping)
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


_CSV_HEADER_BYTES = 65_536


def _csv_delimiter(path: Path) -> str:
    """The header's delimiter: a comma, or a ``;`` or a tab when the header holds it and no comma.

    A spreadsheet set to a European locale writes ``;``-separated CSV, and a TSV saved as
    ``.csv`` is tab-separated: read with a comma, the header was one column named
    ``Question;Answer;Contexts``. A header that holds both and no comma is refused.

    Raises:
        DatasetError: the header holds both ``;`` and a tab and no comma.
    """
    header = _first_line(path, _CSV_HEADER_BYTES)
    if "," in header:
        return ","
    found = [sep for sep in (";", "\t") if sep in header]
    if len(found) == 2:
        raise DatasetError(
            f"{path}: the header holds both ';' and tabs and no comma, so which one separates the columns is not "
            "clear; save the file as comma-separated CSV (or as JSONL)"
        )
    return found[0] if found else ","


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
    source = str(path)
    if batch_rows < 1:
        raise DatasetError(f"batch_rows must be at least 1, got {batch_rows}")
    check_data_file(path)
    parquet = _import_optional("pyarrow.parquet", "pyarrow", "parquet", "Reading Parquet files")
    try:
        parquet_file = parquet.ParquetFile(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError and friends
        raise DatasetError(f"{path}: not a readable Parquet file ({_brief(exc)})") from None
    try:

        def records() -> Iterator[dict[str, Any]]:
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
                    yield record

        names = [str(name) for name in parquet_file.schema_arrow.names]
        yield from _table_rows(names, records(), required=required, mapping=mapping, source=source, limits=limits)
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
    columns = [str(name) for name in df.columns]
    records = (dict(zip(columns, values, strict=True)) for values in df.itertuples(index=False, name=None))
    yield from _table_rows(
        columns,
        records,
        required=required,
        mapping=mapping,
        source=source,
        limits=limits,
        what="the DataFrame",
        labels=iter(df.index),
    )


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
    return require_rows(
        _arrow_rows(table, tuple(required), mapping, source, limits), f"{source or 'the Arrow table'}: no rows"
    )


def _arrow_rows(
    table: Any,
    required: tuple[str, ...],
    mapping: Mapping[str, str] | None,
    source: str | None,
    limits: SizeLimits | None,
) -> Iterator[Row | SampleError]:
    arrow = _import_optional("pyarrow", "pyarrow", "parquet", "Reading an Arrow table")
    if isinstance(table, arrow.RecordBatch):
        table = arrow.Table.from_batches([table])
    if not isinstance(table, arrow.Table):
        raise DatasetError(f"from_arrow() needs a pyarrow Table or RecordBatch, got {type(table).__name__}")
    records = (record for batch in table.to_batches() for record in batch.to_pylist())
    names = [str(name) for name in table.schema.names]
    yield from _table_rows(
        names, records, required=required, mapping=mapping, source=source, limits=limits, what="the Arrow table"
    )


def _table_rows(
    columns: list[str],
    records: Iterable[Mapping[str, Any]],
    *,
    required: tuple[str, ...],
    mapping: Mapping[str, str] | None,
    source: str | None,
    limits: SizeLimits | None,
    what: str | None = None,
    labels: Iterator[Any] | None = None,
) -> Iterator[Row | SampleError]:
    """Rows of a columnar table: its columns checked once, each record normalised (:func:`_from_columns`).

    ``labels`` (a DataFrame's index, in row order) name the rows in errors, as ``df.loc`` finds them.
    """
    _check_unique(columns, source or what or "the table")
    mapping = fit_mapping(mapping, columns, source)
    renames = _renames(mapping)
    check_mapped_columns(mapping, columns, source)
    seen: dict[str, int] = {}
    for number, record in enumerate(records, start=1):
        label = _plain(next(labels)) if labels is not None else None
        yield _row(
            _from_columns(record),
            line=number,
            source=source,
            required=required,
            mapping=mapping,
            renames=renames,
            seen=seen,
            unit="row" if labels is None else "index",
            limits=limits,
            label=None if labels is None else repr(label) if isinstance(label, str) else str(label),
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
    seen: dict[str, int] = {}
    # Read unformatted (plain Python rows): a Dataset formatted for numpy or torch, and any
    # IterableDataset (whose format is not public; with_format is lazy there).
    formatting = getattr(ds, "format", None)
    formatted = not isinstance(formatting, Mapping) or formatting.get("type") is not None
    rows = ds.with_format(None) if formatted else ds
    names = getattr(ds, "column_names", None)
    if isinstance(names, list):
        mapping = fit_mapping(mapping, [str(name) for name in names], source)
        check_mapped_columns(mapping, [str(name) for name in names], source)
    renames = _renames(mapping)
    columns = MappedColumns(mapping if not isinstance(names, list) else None, source)
    number = 0
    for number, raw in enumerate(rows, start=1):
        columns.see(raw)
        record = _from_columns(raw)
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
    label: str | None = None,
) -> Row | SampleError:
    try:
        cleaned = _clean_record(record, renames)
    except _CellError as exc:
        return SampleError(str(exc), source=source, line=line, unit=unit, label=label)
    return row_from_record(
        cleaned,
        line=line,
        source=source,
        required=required,
        mapping=mapping,
        unit=unit,
        seen_ids=seen,
        limits=limits,
        label=label,
    )


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
        target = renames.get(name, name)
        if _is_empty(value):
            continue
        if isinstance(value, str):
            if target == "contexts":
                value = _contexts(name, value)
            elif target in _JSON_FIELDS:
                value = _json_cell(name, value, want_object=target == "metadata")
        cleaned[name] = value
    return cleaned


def _from_columns(record: Mapping[str, Any]) -> dict[str, Any]:
    """A row of a columnar table as the row wrote it: plain values, and no key a schema invented.

    A columnar format (Parquet, Arrow, a Hugging Face dataset, a DataFrame read from
    either) stores one schema per column, so every object nested in a cell gains the keys
    of every other row's objects, as nulls: ``{"order_id": 7}`` comes back as
    ``{"order_id": 7, "flight": None}`` when another row's arguments had a ``flight``.
    Such a null is dropped at every depth (tool-call arguments, trace messages, metadata,
    documents), so the row is judged as written; a top-level null cell is left for the
    caller, which treats it as absent. The cost: a key really set to null inside a nested
    object of a columnar table is dropped too (JSON Lines keeps it), since a columnar file
    cannot tell the two apart.
    """
    return {str(name): _without_nulls(_plain(value)) for name, value in record.items()}


def _without_nulls(value: Any) -> Any:
    """``value`` with every null-valued key of every nested object dropped."""
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if not _is_null(item)}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def _is_null(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or type(value).__name__ in _MISSING_TYPES


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
    """A JSON cell, or a Python literal as pandas writes a list or dict to CSV (``[{'role': 'user', ...}]``).

    The literal is read as contexts are (:func:`~assay.run._dataset.contexts_from_text`):
    with :func:`ast.literal_eval`, which builds only literals (strings, numbers, lists,
    dicts, ``None``, ``True``), never runs code.
    """
    try:
        value = parse_json(cell, strict=False)
    except ValueError as exc:
        literal = python_literal(cell)
        if literal is None:
            raise _CellError(f"column '{column}': {exc}") from None
        value = literal
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
