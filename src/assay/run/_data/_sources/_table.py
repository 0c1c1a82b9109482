"""What the columnar sources share: a table's rows as records, with the values a schema invented dropped."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from assay.errors import DatasetError, MissingExtraError
from assay.run._data._rows import Columns, Record, is_missing


def _table_records(
    columns: list[str],
    records: Iterable[Mapping[str, Any]],
    *,
    source: str | None,
    what: str | None = None,
    labels: Iterator[Any] | None = None,
) -> Iterator[Columns | Record]:
    """A columnar table's records: its columns once (checked unique), then each row's cells (:func:`_from_columns`).

    ``labels`` (a DataFrame's index, in row order) name the rows in errors, as ``df.loc`` finds them.
    """
    _check_unique(columns, source or what or "the table")
    yield Columns(tuple(columns), complete=True)
    for number, record in enumerate(records, start=1):
        label = _plain(next(labels)) if labels is not None else None
        yield Record(
            _from_columns(record),
            number,
            unit="row" if labels is None else "index",
            label=None if labels is None else repr(label) if isinstance(label, str) else str(label),
            cells=True,
        )


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
        return {key: _without_nulls(item) for key, item in value.items() if not is_missing(item)}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


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
