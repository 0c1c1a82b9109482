"""An Arrow table or record batch (pyarrow), one record batch at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from assay.errors import DatasetError
from assay.run._data._rows import Columns, Record
from assay.run._data._sources._table import _import_optional, _table_records

__all__ = ["arrow_records"]


def arrow_records(table: Any, source: str | None) -> Iterator[Columns | Record]:
    """The columns of ``table``'s schema, then its rows (``source``: how errors name the table).

    Raises:
        DatasetError: ``table`` is not an Arrow table or names a column twice (raised when iteration starts).
    """
    arrow = _import_optional("pyarrow", "pyarrow", "parquet", "Reading an Arrow table")
    if isinstance(table, arrow.RecordBatch):
        table = arrow.Table.from_batches([table])
    if not isinstance(table, arrow.Table):
        raise DatasetError(f"from_arrow() needs a pyarrow Table or RecordBatch, got {type(table).__name__}")
    records = (record for batch in table.to_batches() for record in batch.to_pylist())
    names = [str(name) for name in table.schema.names]
    yield from _table_records(names, records, source=source, what="the Arrow table")
