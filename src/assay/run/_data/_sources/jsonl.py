"""JSON lines: one JSON value a line, read one line at a time, each object a record.

The source knows what a JSON-lines file may hold (an OTLP export instead of rows, one array
or one wrapper object by mistake) and nothing of the mapping: whether a key is a column it
asks (``is_column``, ``named_field``).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

from assay._traces._rag import is_span_export
from assay.errors import DatasetError, SampleError
from assay.run._data._rows import Columns, Record
from assay.run._data._sources.files import check_data_file
from assay.run._data._sources.spans import span_records
from assay.run._data._text import parse_json

__all__ = ["NO_ROWS", "checked_jsonl_records", "count_rows", "json_lines", "jsonl_records"]


NO_ROWS = "{path}: no rows (the file is empty or holds only blank lines)"
"""What a JSON-lines file that holds no rows and no row errors is told."""


def _open(path: Path) -> Any:
    check_data_file(path)
    try:
        return path.open("rb")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror})") from exc


def json_lines(path: Path) -> Iterator[tuple[int, Any] | SampleError]:
    """(line number, parsed value) for each non-blank line of a JSONL file, or a located error.

    The one JSON-lines reader (``assay run``, ``assay calibrate``): a UTF-8 byte-order mark
    is allowed, bytes that are not UTF-8, invalid JSON, a key given twice and nesting too
    deep are row errors naming the line, and the lines after them are still read.

    Raises:
        DatasetError: the file does not exist or cannot be opened.
    """
    source = str(path)
    with _open(path) as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1:
                raw = raw.removeprefix(codecs.BOM_UTF8)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield SampleError(f"not UTF-8 (byte {exc.start + 1} of the line)", source=source, line=number)
                continue
            if not text.strip():
                continue
            try:
                yield number, parse_json(text, line=True)
            except ValueError as exc:
                yield SampleError(str(exc), source=source, line=number)


def jsonl_records(path: Path) -> Iterator[Record | SampleError]:
    """Each line's value as a :class:`Record`, or the line's error (blank lines skipped; see :func:`json_lines`)."""
    for item in json_lines(path):
        yield item if isinstance(item, SampleError) else Record(item[1], item[0])


def count_rows(path: str | Path) -> int:
    """Non-blank lines in a file: the rows of a JSONL file (a fast pre-scan for progress bars).

    For other formats it is only an estimate (a CSV header and multi-line cells count);
    :func:`~assay.run.open_dataset` counts the rows of every format.
    """
    with _open(Path(path)) as handle:
        return sum(1 for raw in handle if raw.strip())


_PEEKED_ROWS = 50
"""JSON lines read ahead for their column names (to fit the mapping to them)."""


_WHOLE_DOCUMENT_BYTES = 256 * 1024 * 1024
"""Largest file parsed whole to tell what one JSON document over many lines holds."""


def checked_jsonl_records(
    path: Path, is_column: Callable[[str], bool], named_field: Callable[[str], str | None]
) -> Iterator[Columns | Record | SampleError]:
    """JSON lines, once the file is known to hold one JSON value a line, after the columns of its first lines.

    A file that is an OTLP export (one document, or one export a line as the OpenTelemetry
    Collector's file exporter writes) is read by trace instead
    (:mod:`~assay.run._data._sources.spans`). ``is_column``: whether a key is a column the
    mapping reads (a field, an alias, a mapped column); ``named_field``: the field a column
    gives by its name. A file whose first line is a row (an object with a column) is JSON
    lines; only one whose first line is not is asked what else it holds
    (:func:`_json_lines_shape_problem`).

    Raises:
        DatasetError: the file holds one JSON array or one object holding the rows (raised
            when iteration starts).
    """
    check_data_file(path)
    export = spans_in(path)
    if export is not None:
        yield from span_records(path, export)
        return
    peeked = list(islice(jsonl_records(path), _PEEKED_ROWS))
    first = peeked[0] if peeked else None
    if not (isinstance(first, Record) and isinstance(first.value, dict) and any(map(is_column, first.value))):
        # The first line is no row: is the file something else than JSON lines?
        problem = _json_lines_shape_problem(path, is_column, named_field)
        if problem is not None:
            raise DatasetError(problem)
    keys = (
        str(key) for item in peeked if isinstance(item, Record) and isinstance(item.value, dict) for key in item.value
    )
    yield Columns(tuple(dict.fromkeys(keys)), complete=False)
    yield from jsonl_records(path)


def _json_lines_shape_problem(
    path: Path, is_column: Callable[[str], bool], named_field: Callable[[str], str | None]
) -> str | None:
    """What makes a file meant to hold one JSON object a line hold something else, with what to do; or ``None``.

    Found: one JSON array (on one line, or pretty-printed over many: a ``.json`` file's
    content in a ``.jsonl`` file), one object holding the rows in a list
    (``{"data": [...]}``), one object written over many lines. (A ``.json`` file that
    starts with ``[`` is read as an array before this is asked.) A key ``mapping`` names
    is a column (``is_column``), so an object with one is a row.
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
        wrapped = _rows_under(value, is_column, named_field)
        if wrapped is not None:
            return _wrapper_problem(path, *wrapped)
        return (
            f"{path} holds one JSON object written over many lines, not one object per line: write each row on "
            f"one line, or the rows as a JSON array in {json_name}"
        )
    wrapped = _rows_under(value, is_column, named_field) if isinstance(value, dict) else None
    return _wrapper_problem(path, *wrapped) if wrapped is not None else None


_UNPARSED = object()


_JQ_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _rows_under(
    value: Mapping[str, Any], is_column: Callable[[str], bool], named_field: Callable[[str], str | None]
) -> tuple[str, int] | None:
    """(key, how many) when ``value`` is no row but holds the rows: a list of objects with what rows hold.

    Not when ``value`` has a column itself (a field, an alias, a mapped column): then it is a
    row, read as one. An item counts as a row by a field it gives besides ``id`` and
    ``metadata`` (a list of tool calls with ids is not rows).
    """
    if any(is_column(str(key)) for key in value):
        return None
    for key, held in value.items():
        if (
            isinstance(held, list)
            and held
            and all(isinstance(item, dict) for item in held)
            and any(named_field(str(column)) not in _NOT_CONTENT for item in held[:20] for column in item)
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


_MARKS = ('"resourceSpans"', '"span_kind"')  # an OTLP export's, a Phoenix span export's


def spans_in(path: Path) -> Any | None:
    """The span export (OTLP, Phoenix) a JSON or JSON-lines file holds at its top level, or ``None`` for rows.

    One JSON document that is an export (or a list of them), or JSON lines each an export
    (the OpenTelemetry Collector's file exporter), is read as a list of exports by trace
    (:mod:`~assay.run._data._sources.spans`). A file of rows is told by its first line
    (its first 4 KiB when no export's mark is in them), so it is not read whole here.
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
            if not any(mark.encode() in head for mark in _MARKS):  # an export names its spans at once
                return None
            handle.seek(0)
            first = handle.readline().removeprefix(codecs.BOM_UTF8).decode("utf-8", "replace")
            try:
                item = parse_json(first)
            except ValueError:  # one document over many lines
                try:
                    whole = parse_json(path.read_bytes().removeprefix(codecs.BOM_UTF8).decode("utf-8", "replace"))
                except ValueError:
                    return None
                return whole if is_span_export(whole) else None
            if not is_span_export(item):
                return None
            exports = [item]
            for raw in handle:
                line = raw.decode("utf-8", "replace")
                if not line.strip():
                    continue
                try:
                    item = parse_json(line)
                except ValueError:
                    return None
                if not is_span_export(item):
                    return None
                exports.append(item)
    except OSError:
        return None  # the reader of rows says why the file cannot be read
    return exports if len(exports) > 1 else exports[0]
