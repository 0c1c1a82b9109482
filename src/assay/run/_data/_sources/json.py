"""DOC."""

from __future__ import annotations

import codecs
from collections.abc import Iterator, Mapping
from pathlib import Path

from assay._traces._rag import is_span_export
from assay.errors import (
    DatasetError,
    SampleError,
)
from assay.run._data._mapping import MappedColumns, fit_mapping
from assay.run._data._rows import Row, SizeLimits, require_rows
from assay.run._data._sources.files import check_data_file
from assay.run._data._sources.jsonl import _checked_jsonl_rows
from assay.run._data._sources.spans import span_rows
from assay.run._data._text import parse_json
from assay.run._data._validate import row_from_record


def _read_json_lines(
    path: Path, *, required: tuple[str, ...], mapping: Mapping[str, str] | None, limits: SizeLimits | None
) -> Iterator[Row | SampleError]:
    """A ``.json`` file: one JSON array of objects, JSON lines, or an OTLP export of spans (one row per trace)."""
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
    if is_span_export(items):  # a list of OTLP exports: a file of spans, read by trace
        yield from span_rows(path, items, required=required, mapping=mapping, limits=limits)
        return
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
