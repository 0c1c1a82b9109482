"""A ``.json`` file: one JSON array of objects (read whole; errors name the item), JSON lines, or an OTLP export."""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator
from pathlib import Path

from assay._traces._rag import is_span_export
from assay.errors import DatasetError, SampleError
from assay.run._data._rows import Columns, Record
from assay.run._data._sources.files import check_data_file
from assay.run._data._sources.jsonl import checked_jsonl_records
from assay.run._data._sources.spans import span_records
from assay.run._data._text import parse_json

__all__ = ["NO_ROWS", "json_records"]


NO_ROWS = "{path}: no rows (the file is empty, holds only blank lines, or an empty array)"
"""What a ``.json`` file that holds no rows and no row errors is told."""


def json_records(
    path: Path, is_column: Callable[[str], bool], named_field: Callable[[str], str | None]
) -> Iterator[Columns | Record | SampleError]:
    """A ``.json`` file's records: an array's items (after the columns of all of them), else its JSON lines.

    ``is_column`` and ``named_field`` are for JSON lines (see
    :func:`~assay.run._data._sources.jsonl.checked_jsonl_records`).

    Raises:
        DatasetError: the array is not UTF-8 or not valid JSON (raised when iteration starts).
    """
    check_data_file(path)
    with path.open("rb") as handle:
        head = handle.read(4096).removeprefix(codecs.BOM_UTF8).lstrip()
    if not head.startswith(b"["):
        yield from checked_jsonl_records(path, is_column, named_field)
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
    if is_span_export(items):  # a list of OTLP exports: a file of spans, read by trace
        yield from span_records(path, items)
        return
    keys = (str(key) for item in items if isinstance(item, dict) for key in item)
    yield Columns(tuple(dict.fromkeys(keys)), complete=False)
    for number, item in enumerate(items, start=1):
        yield Record(item, number, unit="item")
