"""DOC."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from assay.errors import (
    DatasetError,
    SampleError,
)
from assay.run._data._rows import Row, SizeLimits, require_rows
from assay.run._data._sources._table import _import_optional, _table_rows

__all__ = ["from_arrow"]


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
