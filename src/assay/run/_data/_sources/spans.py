"""A file of spans: an OTLP JSON export (one document, or one export per line) read as one row per trace.

:func:`~assay.run._data._sources.jsonl.spans_in` tells such a file from rows (its top
level is the export, not a column holding one); :func:`span_records` hands each trace's record
(:func:`~assay._traces._rag.span_records`: a RAG row, or an agent trace) on to the one
mapping and validation, and a trace lacking a part is the row error of that trace,
named by its trace id (``spans.json: trace 5b8a...: no contexts (no RETRIEVER span)``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay._traces._rag import span_records as trace_records
from assay.errors import DatasetError, SampleError
from assay.run._data._rows import Columns, Record


def span_records(path: Path, export: Any) -> Iterator[Columns | Record | SampleError]:
    """Each trace of ``export`` (read from ``path``) as a :class:`Record`, or the :class:`SampleError` naming it.

    The records are built by assay, so the mapping is neither fitted to nor checked against
    their keys (:class:`~assay.run._data._rows.Columns` says so).
    """
    source = str(path)
    try:
        records = list(trace_records(export))
    except ValueError as exc:
        raise DatasetError(f"{path}: an OTLP export with a malformed span: {exc}") from None
    yield Columns((), complete=False, fit=False, checked=False)
    for number, traced in enumerate(records, start=1):
        if traced.record is None:
            yield SampleError(str(traced.problem), source=source, line=number, unit="trace", label=traced.trace_id)
            continue
        yield Record(traced.record, number, unit="trace", label=traced.trace_id)
