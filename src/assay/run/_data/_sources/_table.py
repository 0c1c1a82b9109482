"""DOC."""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from typing import Any

from assay.errors import (
    DatasetError,
    MissingExtraError,
    SampleError,
)
from assay.run._data._mapping import _renames, check_mapped_columns, fit_mapping
from assay.run._data._rows import Row, SizeLimits
from assay.run._data._text import contexts_from_text, parse_json, python_literal
from assay.run._data._validate import row_from_record

_JSON_FIELDS = frozenset({"trace", "reference_tool_calls", "metadata"})


_MISSING_TYPES = frozenset({"NAType", "NaTType"})  # pandas.NA, pandas.NaT


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
    """The contexts in one text cell (:func:`~assay.run._data._text.contexts_from_text`)."""
    try:
        return contexts_from_text(cell)
    except ValueError as exc:
        raise _CellError(f"column '{column}': {exc}") from None


def _json_cell(column: str, cell: str, *, want_object: bool) -> Any:
    """A JSON cell, or a Python literal as pandas writes a list or dict to CSV (``[{'role': 'user', ...}]``).

    The literal is read as contexts are (:func:`~assay.run._data._text.contexts_from_text`):
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
