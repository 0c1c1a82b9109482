"""A pandas DataFrame, one row at a time, its index naming the rows in errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from assay.errors import DatasetError
from assay.run._data._rows import Columns, Record
from assay.run._data._sources._table import _import_optional, _table_records

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["dataframe_records"]


def dataframe_records(df: pd.DataFrame, source: str | None) -> Iterator[Columns | Record]:
    """The columns of ``df``, then its rows, each named by its index label (``source``: how errors name the table).

    Raises:
        DatasetError: ``df`` is not a DataFrame or names a column twice (raised when iteration starts).
    """
    pandas = _import_optional("pandas", "pandas", "pandas", "Reading a pandas DataFrame")
    if not isinstance(df, pandas.DataFrame):
        raise DatasetError(f"from_dataframe() needs a pandas DataFrame, got {type(df).__name__}")
    columns = [str(name) for name in df.columns]
    records = (dict(zip(columns, values, strict=True)) for values in df.itertuples(index=False, name=None))
    yield from _table_records(columns, records, source=source, what="the DataFrame", labels=iter(df.index))
