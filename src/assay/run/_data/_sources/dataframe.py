"""DOC."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from assay.errors import (
    DatasetError,
    SampleError,
)
from assay.run._data._rows import Row, SizeLimits, require_rows
from assay.run._data._sources._table import _import_optional, _table_rows

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["from_dataframe"]


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
