"""LangChain message dicts (``messages_to_dict`` and ``dumpd``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from assay._messages import INVALID_ARGUMENTS, ToolCall
from assay._traces._chat import _CHAT_ROLES, _chat_call, _messages_of, _text_of
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
    _seq,
)

_LC_ROLES: dict[str, _Role | Literal["chat"]] = {
    "human": "user",
    "HumanMessage": "user",
    "user": "user",
    "ai": "assistant",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "assistant": "assistant",
    "system": "system",
    "SystemMessage": "system",
    "developer": "system",
    "tool": "tool",
    "ToolMessage": "tool",
    "function": "tool",
    "FunctionMessage": "tool",
    "chat": "chat",
    "ChatMessage": "chat",
}
_LC_SKIPPED_BLOCKS = ("tool_use", "tool_call", "function_call", "server_tool_call", "tool_call_chunk")


def _lc_content(content: Any, path: Path, b: _Builder) -> list[str]:
    if content is None or isinstance(content, str):
        return [content] if content else []
    texts: list[str] = []
    for j, block in enumerate(_list(content, path, "content")):
        here = (*path, j)
        if isinstance(block, str):
            texts.append(block)
            continue
        block = _obj(block, here, "content block")
        kind = block.get("type")
        if kind == "text":
            texts.append(_need_str(block, "text", here, "LangChain text block"))
        elif kind in ("reasoning", "thinking"):
            texts.extend(b.reasoning([str(block.get(kind) or block.get("text") or "")]))
        elif kind in _LC_SKIPPED_BLOCKS:
            continue  # the message's tool_calls carry these
        elif kind in ("image", "image_url", "audio", "file"):
            texts.append(_PLACEHOLDERS[kind])
        else:
            raise _Invalid(here, f"LangChain content block of type {kind!r} is not supported")
    return texts


def _lc_calls(data: Mapping[str, Any], path: Path) -> list[ToolCall]:
    calls: list[ToolCall] = []
    raw_calls = data.get("tool_calls") or ()
    for j, raw in enumerate(_list(raw_calls, (*path, "tool_calls"), "tool_calls")):
        here = (*path, "tool_calls", j)
        call = _obj(raw, here, "tool call")
        if "function" in call:  # OpenAI-shaped, as some older dumps hold
            calls.append(_chat_call(call, here))
            continue
        name = _need_str(call, "name", here, "LangChain tool call")
        calls.append(_call(name, _arguments(call.get("args"), (*here, "args"), f"tool call {name!r}"), call.get("id")))
    for j, raw in enumerate(data.get("invalid_tool_calls") or ()):
        here = (*path, "invalid_tool_calls", j)
        call = _obj(raw, here, "invalid tool call")
        # The model called a tool with arguments that did not parse: keep the call and its raw text.
        name = _opt_str(call, "name", here, "LangChain invalid tool call") or "(unnamed)"
        calls.append(_call(name, {INVALID_ARGUMENTS: call.get("args")}, call.get("id")))
    if not calls:  # older dumps keep OpenAI's tool calls in additional_kwargs only
        extra = data.get("additional_kwargs") or {}
        if isinstance(extra, Mapping):
            for j, raw in enumerate(extra.get("tool_calls") or ()):
                calls.append(_chat_call(raw, (*path, "additional_kwargs", "tool_calls", j)))
    if not calls:  # ... or Anthropic's tool_use blocks in the content only
        for j, block in enumerate(_seq(data.get("content"))):
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                here = (*path, "content", j)
                name = _need_str(block, "name", here, "tool_use block")
                args = _arguments(block.get("input"), (*here, "input"), f"tool call {name!r}")
                calls.append(_call(name, args, _opt_str(block, "id", here, "tool_use block")))
    return calls


_FLAT_TYPES = frozenset({"human", "ai", "tool", "system", "function", "chat"})


def _ragas_content(item: Mapping[str, Any], path: Path) -> Mapping[str, Any]:
    """A flat message; Ragas' ``AIMessage.to_dict()`` puts ``{"text", "tool_calls"}`` in the content."""
    content = item.get("content")
    if isinstance(content, Mapping) and "text" in content:
        if item.get("tool_calls"):
            raise _Invalid((*path, "content"), "a message gives tool calls both in its content and beside it")
        return {**item, "content": content.get("text"), "tool_calls": content.get("tool_calls") or []}
    return item


def _langchain(data: Any, b: _Builder) -> None:
    items, root = _messages_of(data)
    for i, raw in enumerate(items):
        path: Path = (*root, i)
        item = _obj(raw, path, "message")
        if item.get("lc") == 1 and "kwargs" in item:  # dumpd: {"lc": 1, "id": [..., "AIMessage"], "kwargs": ...}
            ids = item.get("id")
            kind = ids[-1] if isinstance(ids, list) and ids else None
            data_path: Path = (*path, "kwargs")
            fields = _obj(item["kwargs"], data_path, "LangChain kwargs")
        elif "data" not in item and item.get("type") in _FLAT_TYPES:
            # A flat message: LangChain's message.model_dump() or Ragas' messages (human, ai, tool).
            kind = item.get("type")
            data_path = path
            fields = _ragas_content(item, path)
        else:
            kind = item.get("type")
            if "data" not in item:
                raise _Invalid(path, "LangChain message needs 'type' and 'data' (the messages_to_dict shape)")
            data_path = (*path, "data")
            fields = _obj(item["data"], data_path, "LangChain message data")
        lc_role = _LC_ROLES.get(kind) if isinstance(kind, str) else None
        if lc_role is None:
            raise _Invalid((*path, "type"), f"LangChain message type {kind!r} is not one of human, ai, tool, system, "
                           "chat, function")  # fmt: skip
        role: _Role = _CHAT_ROLES.get(str(fields.get("role")), "user") if lc_role == "chat" else lc_role
        texts = _lc_content(fields.get("content"), (*data_path, "content"), b)
        if role == "assistant":
            b.assistant(texts, _lc_calls(fields, data_path))
        elif role == "tool":
            status = fields.get("status", "success")
            b.tool_result(_text_of(texts), _opt_str(fields, "tool_call_id", data_path, "LangChain tool message"),
                          _opt_str(fields, "name", data_path, "LangChain tool message"), status == "error")  # fmt: skip
        else:
            b.say(role, texts)
