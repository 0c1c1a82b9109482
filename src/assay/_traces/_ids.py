"""The OpenTelemetry ids of a trace given as an OTLP JSON export: which trace, which span was judged.

A row whose trace is an OTLP export (OpenInference spans, Phoenix's and most collectors'
JSON) keeps the ids of what it judged, so ``assay export`` can put the verdicts back on
that trace. The read is tolerant: a malformed export has no ids here and gets its located
error from :func:`~assay.load_trace`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["TraceIds", "otel_id", "trace_ids"]

_HEX = re.compile(r"[0-9a-fA-F]+")


def otel_id(value: object, size: int) -> str | None:
    """An id of ``size`` bytes as lowercase hex, from hex (OTLP JSON) or base64 (protobuf's JSON); else None.

    All-zero ids are OpenTelemetry's "invalid" id and read as no id.
    """
    if not isinstance(value, str) or not value:
        return None
    if len(value) == 2 * size and _HEX.fullmatch(value):
        text = value.lower()
    else:
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(raw) != size:
            return None
        text = raw.hex()
    return None if text.strip("0") == "" else text


@dataclass(frozen=True)
class TraceIds:
    """The ids a row keeps from its OTLP trace.

    Attributes:
        trace_id: The one trace all spans belong to (32 lowercase hex), or ``None`` when
            the spans name no trace id or several.
        span_id: The judged span: the root (no parent among the export's spans; the
            earliest when there are several), 16 lowercase hex.
        response_id: ``gen_ai.response.id`` of the latest span that carries one.
        n_traces: How many distinct trace ids the spans carry (more than one: no id is kept).
    """

    trace_id: str | None
    span_id: str | None
    response_id: str | None
    n_traces: int


def _values(attributes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entry in attributes if isinstance(attributes, list) else ():
        if isinstance(entry, Mapping) and isinstance(entry.get("key"), str) and isinstance(entry.get("value"), Mapping):
            value = entry["value"]
            out[entry["key"]] = value.get("stringValue", value.get("intValue"))
    return out


def _raw_spans(data: Any) -> list[Mapping[str, Any]] | None:
    batches = [data] if isinstance(data, Mapping) else data if isinstance(data, list) else None
    if batches is None or not all(isinstance(b, Mapping) and "resourceSpans" in b for b in batches) or not batches:
        return None
    spans: list[Mapping[str, Any]] = []
    for batch in batches:
        for rs in batch.get("resourceSpans") or ():
            for ss in (rs.get("scopeSpans") or ()) if isinstance(rs, Mapping) else ():
                for span in (ss.get("spans") or ()) if isinstance(ss, Mapping) else ():
                    if isinstance(span, Mapping):
                        spans.append(span)
    return spans


def _start(span: Mapping[str, Any]) -> int:
    try:
        return int(str(span.get("startTimeUnixNano")))
    except ValueError:
        return 0


def trace_ids(data: Any) -> TraceIds | None:
    """The ids of ``data`` when it is an OTLP JSON export, else None.

    ``data``: an object with ``resourceSpans``, a list of them, or either as JSON text.
    """
    if isinstance(data, str):
        if "resourceSpans" not in data:
            return None
        try:
            data = json.loads(data)
        except json.JSONDecodeError:
            return None
    spans = _raw_spans(data)
    if not spans:
        return None
    traces = {tid for span in spans if (tid := otel_id(span.get("traceId"), 16)) is not None}
    ordered = sorted(spans, key=_start)
    own = {sid for span in spans if (sid := otel_id(span.get("spanId"), 8)) is not None}
    roots = [
        sid
        for span in ordered
        if (sid := otel_id(span.get("spanId"), 8)) is not None and otel_id(span.get("parentSpanId"), 8) not in own
    ]
    responses = [str(value) for span in ordered if (value := _values(span.get("attributes")).get("gen_ai.response.id"))]
    if len(traces) != 1:
        return TraceIds(None, None, None, len(traces))
    return TraceIds(next(iter(traces)), roots[0] if roots else None, responses[-1] if responses else None, 1)
