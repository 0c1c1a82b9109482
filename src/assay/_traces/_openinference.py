"""OpenInference spans in an OpenTelemetry OTLP JSON export."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay._messages import ToolCall
from assay._traces._common import (
    _PLACEHOLDERS,
    Path,
    _arguments,
    _Builder,
    _call,
    _Invalid,
    _json_text,
    _list,
    _need_str,
    _obj,
    _Role,
    _Turn,
)

_OI_ROLES: dict[str, _Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}


def _any_value(value: Any, path: Path) -> Any:
    """An OTLP ``AnyValue`` (``{"stringValue": ...}``, ``{"intValue": "3"}``, ...) as Python."""
    value = _obj(value, path, "attribute value")
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        values = _obj(value["arrayValue"], path, "arrayValue").get("values") or ()
        return [_any_value(v, (*path, k)) for k, v in enumerate(values)]
    if "kvlistValue" in value:
        return _attributes(_obj(value["kvlistValue"], path, "kvlistValue").get("values") or (), path)
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def _attributes(raw: Any, path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, entry in enumerate(_list(raw, path, "attributes")):
        entry = _obj(entry, (*path, k), "attribute")
        key = _need_str(entry, "key", (*path, k), "OTLP attribute")
        out[key] = _any_value(entry.get("value") or {}, (*path, k, "value"))
    return out


@dataclass(frozen=True)
class _Span:
    path: Path
    name: str
    start: int
    attributes: dict[str, Any]
    error: bool

    @property
    def kind(self) -> str:
        return str(self.attributes.get("openinference.span.kind", "")).upper()


def _spans(data: Any) -> list[_Span]:
    batches: list[tuple[Path, Any]]
    if isinstance(data, Mapping):
        batches = [((), data)]
    else:
        batches = [((i,), x) for i, x in enumerate(_list(data, (), "a trace"))]
    spans: list[_Span] = []
    order = 0
    for base, batch in batches:
        batch = _obj(batch, base, "OTLP export")
        if "resourceSpans" not in batch:
            raise _Invalid(base, "an OTLP JSON export needs 'resourceSpans'")
        for r, rs in enumerate(_list(batch["resourceSpans"], (*base, "resourceSpans"), "resourceSpans")):
            rpath: Path = (*base, "resourceSpans", r)
            rs = _obj(rs, rpath, "resourceSpans entry")
            for s, ss in enumerate(_list(rs.get("scopeSpans") or (), (*rpath, "scopeSpans"), "scopeSpans")):
                spath: Path = (*rpath, "scopeSpans", s)
                ss = _obj(ss, spath, "scopeSpans entry")
                for k, raw in enumerate(_list(ss.get("spans") or (), (*spath, "spans"), "spans")):
                    path: Path = (*spath, "spans", k)
                    span = _obj(raw, path, "span")
                    try:
                        when = int(str(span.get("startTimeUnixNano")))  # a string in OTLP JSON (64-bit)
                    except ValueError:
                        raise _Invalid(path, "span needs 'startTimeUnixNano' (nanoseconds)") from None
                    status = span.get("status") or {}
                    code = status.get("code") if isinstance(status, Mapping) else None
                    spans.append(
                        _Span(
                            path=path,
                            name=str(span.get("name", "")),
                            start=when * 1_000_000 + order,  # stable for equal start times
                            attributes=_attributes(span.get("attributes") or (), (*path, "attributes")),
                            error=code in (2, "STATUS_CODE_ERROR"),
                        )
                    )
                    order += 1
    return sorted(spans, key=lambda sp: sp.start)


def _indexed(attributes: Mapping[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """``{"p.0.a": 1, "p.1.b": 2}`` -> ``{0: {"a": 1}, 1: {"b": 2}}`` for ``prefix="p"``."""
    out: dict[int, dict[str, Any]] = {}
    head = prefix + "."
    for key, value in attributes.items():
        if key.startswith(head):
            index, _, rest = key[len(head) :].partition(".")
            if index.isdigit() and rest:
                out.setdefault(int(index), {})[rest] = value
    return dict(sorted(out.items()))


def _oi_message(attrs: Mapping[str, Any], key: str, span: _Span, b: _Builder) -> _Turn:
    path: Path = (*span.path, "attributes")
    role_raw = attrs.get("message.role")
    if not isinstance(role_raw, str) or role_raw.lower() not in _OI_ROLES:
        shown = "missing" if role_raw is None else repr(role_raw)
        raise _Invalid(path, f"span {span.name!r}: {key}.message.role is {shown} (expected user, assistant, system "
                       "or tool)")  # fmt: skip
    role = _OI_ROLES[role_raw.lower()]
    texts: list[str] = []
    content = attrs.get("message.content")
    if content is not None:
        texts.append(_json_text(content))
    for j, part in _indexed(attrs, "message.contents").items():
        kind = part.get("message_content.type")
        if kind == "text":
            texts.append(str(part.get("message_content.text") or ""))
        elif kind == "reasoning":
            texts.extend(b.reasoning([str(part.get("message_content.text") or "")]))
        elif kind in _PLACEHOLDERS:
            texts.append(_PLACEHOLDERS[str(kind)])
        elif kind != "tool_use":
            raise _Invalid(path, f"span {span.name!r}: {key}.message.contents.{j}.message_content.type {kind!r} "
                           "is not supported")  # fmt: skip
    turn = _Turn(role, [t for t in texts if t])
    for j, call in _indexed(attrs, "message.tool_calls").items():
        where = f"{key}.message.tool_calls.{j}.tool_call"
        name = call.get("tool_call.function.name")
        if not isinstance(name, str) or not name:
            raise _Invalid(path, f"span {span.name!r}: {where}.function.name is missing")
        args = _arguments(call.get("tool_call.function.arguments"), path, f"span {span.name!r}: {where}")
        call_id = call.get("tool_call.id")
        turn.calls.append(_call(name, args, str(call_id) if call_id is not None else None))
    if role == "tool":
        call_id = attrs.get("message.tool_call_id")
        turn.tool_call_id = str(call_id) if call_id is not None else None
        name = attrs.get("message.name")
        turn.name = str(name) if name else None
    return turn


def _key(turn: _Turn) -> tuple[Any, ...]:
    """What identifies a message across spans (a tool result by its text: TOOL spans carry no call id)."""
    text = "\n".join(turn.texts)
    if turn.role == "tool":
        return ("tool", text)
    calls = tuple((c.name, json.dumps(c.arguments, sort_keys=True)) for c in turn.calls)
    return (turn.role, text, calls)


def _openinference(data: Any, b: _Builder) -> None:
    spans = _spans(data)
    llm = [sp for sp in spans if sp.kind == "LLM"]
    agents = [sp for sp in spans if sp.kind == "AGENT"]
    tools = [sp for sp in spans if sp.kind == "TOOL"]
    if not (llm or agents or tools):
        raise _Invalid((), "no OpenInference LLM, TOOL or AGENT spans (attribute openinference.span.kind)")
    root = agents[0].attributes if agents and not llm else {}  # the outermost agent, when no LLM span speaks
    if root.get("input.value") not in (None, ""):
        b.say("user", [_json_text(root["input.value"])])
    seen: Counter[tuple[Any, ...]] = Counter()
    for span in sorted([*llm, *tools], key=lambda sp: sp.start):
        attrs = span.attributes
        if span.kind == "LLM":
            consumed: Counter[tuple[Any, ...]] = Counter()
            for prefix in ("llm.input_messages", "llm.output_messages"):
                for index, message in _indexed(attrs, prefix).items():
                    turn = _oi_message(message, f"{prefix}.{index}", span, b)
                    key = _key(turn)
                    if prefix == "llm.input_messages" and consumed[key] < seen[key]:
                        consumed[key] += 1  # already in the conversation (an earlier span's output, or a TOOL span)
                        _fill_call_id(b.turns, turn)
                        continue
                    b.turns.append(turn)
                    seen[key] += 1
                    consumed[key] += 1
            continue
        name = str(attrs.get("tool.name") or span.name)
        raw_input = attrs.get("input.value")
        try:
            args = _arguments(raw_input, (*span.path, "attributes"), f"span {span.name!r}: input.value")
        except _Invalid:
            args = {"input": raw_input}  # a tool given plain text
        raw_id = attrs.get("tool.id") or attrs.get("tool_call.id")
        call_id = str(raw_id) if raw_id else None
        call = _find_call(b.turns, name, args, call_id)
        if call is None:  # no LLM span announced it: the TOOL span is the only record of the call
            call = _call(name, args, call_id)
            b.assistant(calls=[call], merge=True)
        output = attrs.get("output.value")
        turn = _Turn("tool", [_json_text(output)] if output not in (None, "") else [], tool_call_id=call.id,
                     name=name, is_error=span.error)  # fmt: skip
        b.turns.append(turn)
        seen[_key(turn)] += 1
    if root.get("output.value") not in (None, ""):
        b.assistant([_json_text(root["output.value"])])


def _find_call(turns: Sequence[_Turn], name: str, args: Mapping[str, Any], call_id: str | None) -> ToolCall | None:
    """The unanswered assistant call a TOOL span ran: by id, else the latest with its name and arguments."""
    answered = {t.tool_call_id for t in turns if t.role == "tool" and t.tool_call_id}
    for turn in reversed(turns):
        for call in reversed(turn.calls):
            if call_id is not None and call.id == call_id:
                return call
            if call_id is None and call.name == name and call.arguments == args and call.id not in answered:
                return call
    return None


def _fill_call_id(turns: list[_Turn], given: _Turn) -> None:
    # An LLM span's copy of a tool result knows its call id; the TOOL span's copy may not.
    if given.role != "tool" or given.tool_call_id is None:
        return
    for turn in turns:
        if turn.role == "tool" and turn.tool_call_id is None and _key(turn) == _key(given):
            turn.tool_call_id = given.tool_call_id
            return
