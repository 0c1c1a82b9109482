"""In-memory items: :class:`~assay.Sample` objects, dicts, or rows a reader already made."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from assay._samples import Sample
from assay.errors import SampleError
from assay.run._data._rows import Record, Row

__all__ = ["item_records"]


def item_records(items: Iterable[Any]) -> Iterator[Record | Row | SampleError]:
    """Each item as a :class:`Record` (a ``Sample`` as its fields), numbered from 1; a row or error as itself.

    Items keep their exact column names: no columns are known before the first (a list
    of dicts may differ from item to item), so a mapping is checked when the items end.
    """
    for index, item in enumerate(items, start=1):
        if isinstance(item, SampleError | Row):
            yield item
            continue
        record = item.model_dump(mode="python", exclude_defaults=True) if isinstance(item, Sample) else item
        yield Record(dict(record) if isinstance(record, Mapping) else record, index)
