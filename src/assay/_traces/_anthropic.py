"""Anthropic Messages content blocks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay._messages import ToolCall
from assay._traces._chat import _messages_of, _text_of
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
)

_SKIPPED_ANTHROPIC = ("thinking", "redacted_thinking")


def _anthropic_result_text(content: Any, path: Path) -> str | None:
    if content is None or isinstance(content, str):
        return content or None
    texts: list[str] = []
    for j, block in enumerate(_list(content, path, "tool_result content")):
        here = (*path, j)
        block = _obj(block, here, "tool_result content block")
        kind = block.get("type")
        if kind == "text":
            texts.append(_need_str(block, "text", here, "Anthropic text block"))
        elif kind in ("image", "document"):
            texts.append(_PLACEHOLDERS[kind])
        elif kind == "search_result":
            texts.append(_json_text(block.get("content")))
        else:
            raise _Invalid(here, f"Anthropic tool_result content block of type {kind!r} is not one of text, image, "
                           "document, search_result")  # fmt: skip
    return _text_of(texts)


def _anthropic(data: Any, b: _Builder) -> None:
    if isinstance(data, Mapping) and "system" in data:
        system = data["system"]
        if isinstance(system, str):
            b.say("system", [system])
        else:
            blocks = _list(system, ("system",), "'system'")
            b.say(
                "system",
                [_need_str(_obj(x, ("system", j), "system block"), "text", ("system", j), "Anthropic system block")
                 for j, x in enumerate(blocks)],
            )  # fmt: skip
    items, root = _messages_of(data)
    for i, raw in enumerate(items):
        path: Path = (*root, i)
        item = _obj(raw, path, "message")
        raw_role = item.get("role")
        if raw_role not in ("user", "assistant"):
            problem = "needs 'role'" if raw_role is None else f"role {raw_role!r} is not user or assistant"
            raise _Invalid(path if raw_role is None else (*path, "role"), f"Anthropic message {problem}")
        role: _Role = "assistant" if raw_role == "assistant" else "user"
        for foreign in ("tool_calls", "tool_call_id", "data"):
            if foreign in item:
                raise _Invalid((*path, foreign), f"an Anthropic message has no '{foreign}' field")
        content = item.get("content")
        if isinstance(content, str) or content is None:
            if role == "assistant":
                b.assistant([content or ""])
            else:
                b.say("user", [content or ""])
            continue
        _anthropic_blocks(role, content, path, b)


def _anthropic_blocks(role: _Role, content: Any, path: Path, b: _Builder) -> None:
    """One Anthropic message's content blocks; tool results become ``tool`` messages in place."""
    texts: list[str] = []
    calls: list[ToolCall] = []

    def flush() -> None:
        # Results interleave with the message's own text and calls: keep the order.
        if role == "assistant" and (texts or calls):
            b.assistant(list(texts), list(calls))
        elif role == "user" and texts:
            b.say("user", list(texts))
        texts.clear()
        calls.clear()

    for j, block in enumerate(_list(content, (*path, "content"), "content")):
        here = (*path, "content", j)
        block = _obj(block, here, "content block")
        kind = block.get("type")
        what = f"Anthropic block of type {kind!r}"
        if kind == "text":
            texts.append(_need_str(block, "text", here, what))
        elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
            name = _need_str(block, "name", here, what)
            call_id = _need_str(block, "id", here, what)
            calls.append(_call(name, _arguments(block.get("input"), (*here, "input"), f"{what} {name!r}"), call_id))
        elif kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result")):
            flush()
            call_id = _need_str(block, "tool_use_id", here, what)
            if kind in ("tool_result", "mcp_tool_result"):
                text = _anthropic_result_text(block.get("content"), (*here, "content"))
            else:  # web_search_tool_result, code_execution_tool_result, ...: structured content
                text = _json_text(block.get("content")) if block.get("content") is not None else None
            is_error = block.get("is_error", False)
            if not isinstance(is_error, bool):
                raise _Invalid((*here, "is_error"), f"{what}: 'is_error' must be true or false")
            b.tool_result(text, call_id, None, is_error)
        elif kind in _SKIPPED_ANTHROPIC:
            texts.extend(b.reasoning([block.get("thinking") or ""]))
        elif kind in ("image", "document"):
            texts.append(_PLACEHOLDERS[kind])
        elif kind is None:
            raise _Invalid(here, "Anthropic content block needs 'type'")
        else:
            raise _Invalid((*here, "type"), f"{what} is not supported (expected text, tool_use, tool_result, "
                           "thinking, image or document)")  # fmt: skip
    flush()
