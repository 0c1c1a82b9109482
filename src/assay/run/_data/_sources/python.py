"""DOC."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from assay._samples import Sample
from assay.errors import (
    SampleError,
)
from assay.run._data._mapping import MappedColumns
from assay.run._data._rows import Row, SizeLimits
from assay.run._data._validate import missing_problem, row_from_record

__all__ = ["rows_from_items"]


def rows_from_items(
    items: Iterable[Any],
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    limits: SizeLimits | None = None,
    source: str | None = "<samples>",
) -> Iterator[Row | SampleError]:
    """Rows from in-memory items: :class:`Sample` objects, dicts, or rows a reader already made.

    Every item goes through :func:`sample_from_record` (a ``Sample`` as its fields), so a
    list given to :func:`~assay.evaluate`, a sample given to the pytest plugin and a row of
    a file are checked alike; a :class:`Row` is checked for ``required`` and a
    :class:`~assay.errors.SampleError` passes through. Items are numbered from 1 (the
    ``line`` of errors and of the default id ``line-N``); ids must be unique. A column
    ``mapping`` names and no item has is a :class:`~assay.errors.ConfigError` once the
    items are read.
    """
    required = tuple(required)
    seen: dict[str, int] = {}  # ids must be unique here too: resume, gates and comparisons key on them
    columns = MappedColumns(mapping, source)
    index = 0
    for index, item in enumerate(items, start=1):
        if isinstance(item, SampleError):
            yield item
            continue
        if isinstance(item, Row):
            problem = missing_problem(item.sample, required)
            yield item if problem is None else SampleError(problem, source=source, line=item.line)
            continue
        record = item.model_dump(mode="python", exclude_defaults=True) if isinstance(item, Sample) else item
        columns.see(record)
        yield row_from_record(
            dict(record) if isinstance(record, Mapping) else record,
            line=index,
            source=source,
            required=required,
            mapping=mapping,
            seen_ids=seen,
            limits=limits,
        )
    columns.check(index)
