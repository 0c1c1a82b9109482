"""Which format a trace is in, and :func:`load_trace`, which converts any of them."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assay._messages import Message
from assay._traces._anthropic import _anthropic
from assay._traces._chat import _chat
from assay._traces._common import TRACE_FORMATS, _Builder, _Invalid, _named, _seq
from assay._traces._langchain import _langchain
from assay._traces._openinference import _openinference
from assay._traces._responses import _responses
from assay.errors import TraceFormatError, json_message

_Converter = Callable[[Any, _Builder], None]
_CONVERTERS: dict[str, _Converter] = {
    "openai_chat": _chat,
    "openai_responses": _responses,
    "anthropic": _anthropic,
    "langchain": _langchain,
    "openinference": _openinference,
}
_RESPONSES_TYPES = {
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "reasoning",
    "mcp_call",
}
_RESPONSES_PARTS = {"input_text", "output_text", "input_image", "input_file"}
_ANTHROPIC_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use", "mcp_tool_use"}


def _signals(data: Any) -> Counter[str]:
    """How many distinctive marks of each format ``data`` carries (not a validation)."""
    marks: Counter[str] = Counter()
    items: Sequence[Any] = ()
    if isinstance(data, Mapping):
        if "resourceSpans" in data:
            marks["openinference"] += 10
        if {"output", "instructions"} & data.keys() or data.get("object") == "response":
            marks["openai_responses"] += 1
            items = [*_seq(data.get("input")), *_seq(data.get("output"))]
        if "system" in data and "messages" in data:
            marks["anthropic"] += 1
        if not items:
            items = _seq(data.get("messages"))
    else:
        items = _seq(data)
    for item in items:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if "resourceSpans" in item:
            marks["openinference"] += 10
        if isinstance(item.get("data"), Mapping) or (item.get("lc") == 1 and "kwargs" in item):
            marks["langchain"] += 2
        elif kind in ("human", "ai", "tool") and "content" in item and "role" not in item:
            marks["langchain"] += 2  # a flat LangChain dump, or Ragas' messages
        if kind in _RESPONSES_TYPES - {"message"} or (isinstance(kind, str) and kind.endswith("_call")):
            marks["openai_responses"] += 2
        if "tool_calls" in item or "tool_call_id" in item or "function_call" in item or item.get("role") == "tool":
            marks["openai_chat"] += 2
        content = item.get("content")
        for part in _seq(content):
            if not isinstance(part, Mapping):
                continue
            ptype = part.get("type")
            if ptype in _RESPONSES_PARTS:
                marks["openai_responses"] += 1
            elif ptype in _ANTHROPIC_BLOCKS or (isinstance(ptype, str) and ptype.endswith("_tool_result")):
                marks["anthropic"] += 2
            elif ptype in ("image", "document") and "source" in part:
                marks["anthropic"] += 1
            elif ptype in ("image_url", "input_audio"):
                marks["openai_chat"] += 1
    return marks


def _convert(data: Any, fmt: str, keep_reasoning: bool) -> tuple[Message, ...]:
    builder = _Builder(keep_reasoning)
    _CONVERTERS[fmt](data, builder)
    return builder.messages()


def _error(failure: _Invalid, fmt: str, *, detected: bool) -> TraceFormatError:
    if detected:
        context = f"no trace format fits; closest: {fmt} ({TRACE_FORMATS[fmt]}); accepted: {', '.join(TRACE_FORMATS)}"
    else:
        context = f"read as {fmt} ({TRACE_FORMATS[fmt]})"
    message = f"{failure.where}: {failure.problem} ({context})"
    return TraceFormatError(message, path=failure.where, problem=failure.problem, format=fmt)


def _prepare(data: Any) -> Any:
    if isinstance(data, str):
        try:
            return json.loads(data)
        except json.JSONDecodeError as exc:
            raise TraceFormatError(
                f"trace: a string that is not JSON ({json_message(exc)} at column {exc.colno}); "
                "give the messages as a list",
                problem="not JSON",
            ) from None
    if isinstance(data, list | tuple) and any(isinstance(m, Message) for m in data):
        return [m.model_dump(exclude_defaults=True) if isinstance(m, Message) else m for m in data]
    return data


def _attempt(data: Any, keep_reasoning: bool) -> tuple[str, tuple[Message, ...]]:
    marks = _signals(data)
    best = max(marks.values(), default=0)
    order = list(TRACE_FORMATS)
    candidates = [f for f in order if marks[f] == best] if best else order
    failures: list[tuple[str, _Invalid]] = []
    for fmt in candidates:
        try:
            return fmt, _convert(data, fmt, keep_reasoning)
        except _Invalid as failed:
            failures.append((fmt, failed))
    closest, failure = max(failures, key=lambda pair: (pair[1].progress, -order.index(pair[0])))
    raise _error(failure, closest, detected=True)


def detect_trace_format(data: Any) -> str:
    """The name of the format ``data`` is in (a key of :data:`TRACE_FORMATS`).

    The format is the one :func:`load_trace` reads it as: the best match of the formats'
    distinctive marks that converts without error.

    Raises:
        TraceFormatError: No format fits; the message names the closest and what failed.
    """
    return _attempt(_prepare(data), keep_reasoning=False)[0]


def load_trace(data: Any, *, format: str | None = None, keep_reasoning: bool = False) -> tuple[Message, ...]:
    """Convert an agent trace in any accepted format to assay's messages.

    Args:
        data: The trace: a list of messages or items, a request or response object, an
            OTLP JSON export, a JSON string of any of these, or assay messages.
        format: One of :data:`TRACE_FORMATS` to skip detection (and get that format's
            error when it does not fit); ``None`` detects it.
        keep_reasoning: Keep reasoning (Responses ``reasoning`` items, Anthropic
            ``thinking`` blocks) as assistant text starting ``[reasoning]``; by default it
            is left out.

    Returns:
        The messages in order (see the module docstring for what each format becomes).

    Raises:
        TraceFormatError: ``data`` does not fit (the requested format, or any); the
            message locates the failing field, e.g. ``trace[2].content[0]: Anthropic
            block of type 'tool_use' needs 'name'``.
    """
    if format is not None and format not in TRACE_FORMATS:
        raise TraceFormatError(
            f"unknown trace format {format!r}; use one of {', '.join(TRACE_FORMATS)}", problem="unknown format"
        )
    if isinstance(data, list | tuple) and all(isinstance(m, Message) for m in data):
        return _named(tuple(data))
    data = _prepare(data)
    if data is None:
        return ()
    if isinstance(data, list | tuple) and not data:
        return ()
    if format is None:
        return _attempt(data, keep_reasoning)[1]
    try:
        return _convert(data, format, keep_reasoning)
    except _Invalid as failure:
        raise _error(failure, format, detected=False) from None
