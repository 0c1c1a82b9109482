"""RAG rows from a file of spans: one record per trace of an OTLP JSON export.

A file whose top level is an OTLP export (:func:`is_span_export`, the ``openinference``
marks of :mod:`assay._traces._detect`) or a Phoenix span export (its REST API's
``{"data": [...]}``, read as the OTLP export it stands for) is read trace by trace
(:func:`span_records`):

- a trace with an OpenInference RETRIEVER span is a RAG record: ``question`` from the
  root span's ``input.value`` (else the first LLM span's last user message), ``answer``
  from the root span's ``output.value`` (else the last LLM span's output), ``contexts``
  from the RETRIEVER spans' ``retrieval.documents.<i>.document.content`` in start order,
  with the trace id and the id of the span whose output is the answer (the judged span);
- a trace with TOOL or AGENT spans and no RETRIEVER span is an agent trace: its spans
  become the record's ``trace``, read as any agent trace;
- when the file has no RETRIEVER span at all, every trace is an agent trace; otherwise a
  trace that is neither lacks its retriever, and its record is a problem naming the
  trace id and each missing part.

The records go to the reading road's mapping and validation like any file's rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from assay._traces._common import _Invalid
from assay._traces._detect import _signals
from assay._traces._ids import _raw_spans, _start, otel_id
from assay._traces._openinference import _attributes, _indexed

__all__ = ["SpanRecord", "is_span_export", "span_records"]


def _phoenix_spans(data: Any) -> list[Mapping[str, Any]] | None:
    """The spans of a Phoenix span export (``GET /v1/projects/P/spans``: ``{"data": [...]}``, or its list), or None."""
    spans = data.get("data") if isinstance(data, Mapping) else data
    if (
        isinstance(spans, list)
        and spans
        and all(isinstance(p, Mapping) and isinstance(p.get("data"), list) for p in spans)
    ):
        spans = [s for page in spans for s in page["data"]]  # pages, one a line
    if not isinstance(spans, list) or not spans:
        return None
    if all(isinstance(s, Mapping) and isinstance(s.get("context"), Mapping) and "span_kind" in s for s in spans):
        return spans
    return None


def _flat(value: Any, key: str, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flat(v, f"{key}.{k}" if key else str(k), out)
    elif isinstance(value, list) and any(isinstance(v, Mapping) for v in value):
        for i, v in enumerate(value):
            _flat(v, f"{key}.{i}", out)
    else:
        out[key] = value


def _any(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}


def _nanos(when: Any) -> str:
    try:
        moment = datetime.fromisoformat(str(when))
    except ValueError:
        return "0"
    return str(int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000)


def _as_otlp(data: Any) -> Any:
    """A Phoenix span export as the OTLP JSON export it stands for (attributes flattened); other data as it is."""
    spans = _phoenix_spans(data)
    if spans is None:
        return data
    raw = []
    for span in spans:
        attributes: dict[str, Any] = {}
        _flat(span.get("attributes") or {}, "", attributes)
        attributes.setdefault("openinference.span.kind", span.get("span_kind"))
        context = span["context"]
        out = {
            "traceId": context.get("trace_id"),
            "spanId": context.get("span_id"),
            "name": span.get("name", ""),
            "startTimeUnixNano": _nanos(span.get("start_time")),
            "attributes": [{"key": k, "value": _any(v)} for k, v in attributes.items() if v is not None],
        }
        if span.get("parent_id"):
            out["parentSpanId"] = span["parent_id"]
        if span.get("status_code") == "ERROR":
            out["status"] = {"code": 2}
        raw.append(out)
    return {"resourceSpans": [{"scopeSpans": [{"spans": raw}]}]}


def is_span_export(data: Any) -> bool:
    """Whether ``data`` itself (not a column of it) is a span export.

    An OTLP export (a ``resourceSpans`` object, or a list of them), or a Phoenix span
    export (``{"data": [spans with "context" and "span_kind"]}``, or that list).
    """
    if _phoenix_spans(data) is not None:
        return True
    if isinstance(data, Mapping):
        return "resourceSpans" in data
    if isinstance(data, list) and data and all(isinstance(x, Mapping) for x in data):
        return _signals(data)["openinference"] >= 10 * len(data)  # every item an export
    return False


@dataclass(frozen=True)
class SpanRecord:
    """One trace of a span file: the record it gives, or what it lacks.

    Attributes:
        trace_id: The trace (32 lowercase hex), or ``None`` for spans without a valid one.
        record: The row's columns (``question``, ``answer``, ``contexts``, ``trace_id``,
            ``span_id``; or ``trace`` for an agent trace), or ``None`` when a part is missing.
        problem: What is missing, when ``record`` is ``None`` (the reader names the trace).
    """

    trace_id: str | None
    record: dict[str, Any] | None
    problem: str | None = None


@dataclass(frozen=True)
class _S:
    raw: Mapping[str, Any]
    span_id: str | None
    parent_id: str | None
    start: int
    attributes: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.attributes.get("openinference.span.kind", "")).upper()


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value if value.strip() else None
        value = parsed if isinstance(parsed, dict) else value
    if isinstance(value, dict):  # a chain's JSON input: {"question": ...}, {"query": ...}, {"input": ...}
        for key in ("question", "query", "input", "output", "answer", "content", "text"):
            if isinstance(value.get(key), str):
                return str(value[key]) if str(value[key]).strip() else None
        return json.dumps(value, ensure_ascii=False)
    text = str(value)
    return text if text.strip() else None


def _message_text(attrs: Mapping[str, Any], prefix: str, role: str | None) -> str | None:
    found = None
    for message in _indexed(attrs, prefix).values():
        if role is None or str(message.get("message.role", "")).lower() == role:
            found = _text(message.get("message.content")) or found
    return found


def _rag(trace_id: str | None, spans: Sequence[_S]) -> SpanRecord:
    own = {s.span_id for s in spans if s.span_id}
    roots = [s for s in spans if s.parent_id not in own]
    root = roots[0] if roots else spans[0]
    llms = [s for s in spans if s.kind == "LLM"]
    retrievers = [s for s in spans if s.kind == "RETRIEVER"]
    question = _text(root.attributes.get("input.value"))
    if question is None and llms:
        question = _message_text(llms[0].attributes, "llm.input_messages", "user")
    answer, judged = _text(root.attributes.get("output.value")), root
    if answer is None:
        for llm in reversed(llms):
            answer = _message_text(llm.attributes, "llm.output_messages", None) or _text(
                llm.attributes.get("output.value")
            )
            if answer is not None:
                judged = llm
                break
    contexts = [
        text
        for r in retrievers
        for doc in _indexed(r.attributes, "retrieval.documents").values()
        if (text := _text(doc.get("document.content"))) is not None
    ]
    missing = []
    if question is None:
        missing.append("a question (no input.value on the root span, no user message on an LLM span)")
    if answer is None:
        missing.append("an answer (no output.value on the root span, no output on an LLM span)")
    if not retrievers:
        missing.append("contexts (no RETRIEVER span)")
    elif not contexts:
        missing.append("contexts (the RETRIEVER spans hold no retrieval.documents.<i>.document.content)")
    if missing:
        return SpanRecord(trace_id, None, f"no {'; no '.join(missing)}")
    record: dict[str, Any] = {"question": question, "answer": answer, "contexts": contexts}
    if trace_id is not None:
        record |= {"id": trace_id, "trace_id": trace_id}
    if judged.span_id is not None:
        record["span_id"] = judged.span_id
    return SpanRecord(trace_id, record)


def span_records(data: Any) -> Iterator[SpanRecord]:
    """One :class:`SpanRecord` per trace of an OTLP export (see the module docstring), in order of first span.

    Raises:
        ValueError: An attribute is malformed (the message says where).
    """
    traces: dict[str | None, list[_S]] = {}
    for k, raw in enumerate(_raw_spans(_as_otlp(data)) or ()):
        try:
            attributes = _attributes(raw.get("attributes") or (), ("spans", k, "attributes"))
        except _Invalid as bad:
            raise ValueError(f"span {k + 1} ({raw.get('name', '')!r}): {bad.problem}") from None
        span = _S(raw, otel_id(raw.get("spanId"), 8), otel_id(raw.get("parentSpanId"), 8), _start(raw), attributes)
        traces.setdefault(otel_id(raw.get("traceId"), 16), []).append(span)
    rag = any(s.kind == "RETRIEVER" for spans in traces.values() for s in spans)
    for trace_id, spans in traces.items():
        spans.sort(key=lambda s: s.start)
        kinds = {s.kind for s in spans}
        if not rag or ("RETRIEVER" not in kinds and kinds & {"TOOL", "AGENT"}):
            export = {"resourceSpans": [{"scopeSpans": [{"spans": [s.raw for s in spans]}]}]}
            yield SpanRecord(trace_id, {"trace": export} | ({"id": trace_id} if trace_id else {}))
        else:
            yield _rag(trace_id, spans)
