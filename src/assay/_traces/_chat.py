"""OpenAI Chat Completions messages (and assay's own shape)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from assay._messages import ToolCall
from assay._traces._common import (
    _PLACEHOLDERS,
    Path,
    _arguments,
    _Builder,
    _call,
    _Invalid,
    _list,
    _need_str,
    _obj,
    _opt_str,
    _Role,
)

_CHAT_ROLES: dict[str, _Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}


def _chat_parts(content: Any, path: Path) -> list[str]:
    """Text of a chat message's ``content``: a string, or a list of content parts."""
    if content is None or isinstance(content, str):
        return [content] if content else []
    texts: list[str] = []
    for j, part in enumerate(_list(content, path, "content")):
        here = (*path, j)
        if isinstance(part, str):
            texts.append(part)
            continue
        part = _obj(part, here, "content part")
        kind = part.get("type")
        if kind == "text":
            texts.append(_need_str(part, "text", here, "text part"))
        elif kind == "refusal":
            texts.append(_need_str(part, "refusal", here, "refusal part"))
        elif kind in ("image_url", "input_audio", "file"):
            texts.append(_PLACEHOLDERS[kind])
        else:
            raise _Invalid(here, f"OpenAI chat content part of type {kind!r} is not one of text, refusal, image_url, "
                           "input_audio, file")  # fmt: skip
    return texts


def _chat_call(raw: Any, path: Path) -> ToolCall:
    call = _obj(raw, path, "tool call")
    function = call.get("function")
    if function is not None:  # OpenAI: {"id", "type": "function", "function": {"name", "arguments": "<JSON>"}}
        function = _obj(function, (*path, "function"), "tool call function")
        name = _need_str(function, "name", (*path, "function"), "OpenAI tool call function")
        args = _arguments(function.get("arguments"), (*path, "function", "arguments"), f"tool call {name!r}")
        return _call(name, args, _opt_str(call, "id", path, "tool call"))
    if "name" in call:  # assay's own shape: {"name", "arguments": {...}, "id"}
        name = _need_str(call, "name", path, "tool call")
        return _call(
            name, _arguments(call.get("arguments"), (*path, "arguments"), f"tool call {name!r}"), call.get("id")
        )
    raise _Invalid(path, "OpenAI tool call needs 'function' with 'name' and 'arguments'")


def _chat(data: Any, b: _Builder) -> None:
    items, root = _messages_of(data)
    for i, raw in enumerate(items):
        path: Path = (*root, i)
        item = _obj(raw, path, "message")
        role = item.get("role")
        if role is None:
            raise _Invalid(path, "OpenAI chat message needs 'role'")
        if role == "function":  # the legacy function-calling result
            name = _need_str(item, "name", path, "function message")
            b.tool_result(_text_of(_chat_parts(item.get("content"), (*path, "content"))), None, name)
            continue
        if role not in _CHAT_ROLES:
            raise _Invalid((*path, "role"), f"OpenAI chat role {role!r} is not one of {', '.join(_CHAT_ROLES)}")
        for foreign in ("type", "data"):
            if foreign in item and not (foreign == "type" and item[foreign] == "message"):
                raise _Invalid((*path, foreign), f"an OpenAI chat message has no '{foreign}' field")
        texts = _chat_parts(item.get("content"), (*path, "content"))
        if role == "assistant":
            refusal = _opt_str(item, "refusal", path, "assistant message")
            calls = [_chat_call(c, (*path, "tool_calls", j)) for j, c in enumerate(item.get("tool_calls") or ())]
            legacy = item.get("function_call")
            if legacy is not None:
                calls.append(_chat_call({"function": legacy}, (*path, "function_call")))
            b.assistant([*texts, refusal or ""], calls)
        elif role == "tool":
            call_id = _opt_str(item, "tool_call_id", path, "tool message")
            b.tool_result(_text_of(texts), call_id, _opt_str(item, "name", path, "tool message"),
                          bool(item.get("is_error")))  # fmt: skip
        else:
            b.say(_CHAT_ROLES[role], texts)


def _text_of(texts: Sequence[str]) -> str | None:
    return "\n".join(t for t in texts if t) or None


def _messages_of(data: Any) -> tuple[Sequence[Any], Path]:
    """The message list of a list, or of a request-like ``{"messages": [...]}`` object."""
    if isinstance(data, Mapping):
        if "messages" not in data:
            raise _Invalid((), "expected a list of messages or an object with 'messages'")
        return _list(data["messages"], ("messages",), "'messages'"), ("messages",)
    return _list(data, (), "a trace"), ()
