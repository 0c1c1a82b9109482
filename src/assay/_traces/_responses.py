"""OpenAI Responses API items."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay._traces._chat import _text_of
from assay._traces._common import (
    _PLACEHOLDERS,
    Path,
    _arguments,
    _Builder,
    _call,
    _Invalid,
    _json_text,
    _kind,
    _list,
    _need_str,
    _obj,
    _opt_str,
    _Role,
)

_RESPONSES_ROLES: dict[str, _Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
}


def _responses_parts(content: Any, path: Path) -> list[str]:
    if content is None or isinstance(content, str):
        return [content] if content else []
    texts: list[str] = []
    for j, part in enumerate(_list(content, path, "content")):
        here = (*path, j)
        part = _obj(part, here, "content part")
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text", "summary_text", "reasoning_text"):
            texts.append(_need_str(part, "text", here, f"{kind} part"))
        elif kind == "refusal":
            texts.append(_need_str(part, "refusal", here, "refusal part"))
        elif kind in ("input_image", "input_file", "input_audio"):
            texts.append(_PLACEHOLDERS[kind])
        else:
            raise _Invalid(here, f"Responses content part of type {kind!r} is not one of input_text, output_text, "
                           "refusal, input_image, input_file")  # fmt: skip
    return texts


def _responses(data: Any, b: _Builder) -> None:
    items: list[tuple[Path, Any]] = []
    if isinstance(data, Mapping):
        if not ({"output", "input", "instructions"} & data.keys()):
            raise _Invalid((), "expected a list of Responses items or a response object with 'output'")
        instructions = data.get("instructions")
        if isinstance(instructions, str) and instructions:
            b.say("system", [instructions])
        given = data.get("input")
        if isinstance(given, str):
            b.say("user", [given])
        elif given is not None:
            items += [(("input", i), x) for i, x in enumerate(_list(given, ("input",), "'input'"))]
        if data.get("output") is not None:
            items += [(("output", i), x) for i, x in enumerate(_list(data["output"], ("output",), "'output'"))]
    else:
        items = [((i,), x) for i, x in enumerate(_list(data, (), "a trace"))]
    for path, raw in items:
        item = _obj(raw, path, "Responses item")
        kind = item.get("type", "message" if "role" in item else None)
        if kind is None:
            raise _Invalid(path, "Responses item needs 'type' (or 'role' for a message)")
        if not isinstance(kind, str):
            raise _Invalid((*path, "type"), f"Responses item 'type' must be a string, got {_kind(kind)}")
        if kind == "message":
            role = item.get("role")
            if role not in _RESPONSES_ROLES:
                raise _Invalid((*path, "role"), f"Responses message role {role!r} is not one of "
                               f"{', '.join(_RESPONSES_ROLES)}")  # fmt: skip
            for foreign in ("tool_calls", "tool_call_id"):
                if foreign in item:
                    raise _Invalid((*path, foreign), f"a Responses message has no '{foreign}' field")
            texts = _responses_parts(item.get("content"), (*path, "content"))
            if role == "assistant":
                b.assistant(texts, merge=True)
            else:
                b.say(_RESPONSES_ROLES[role], texts)
        elif kind in ("function_call", "custom_tool_call"):
            what = f"Responses {kind}"
            name = _need_str(item, "name", path, what)
            call_id = _need_str(item, "call_id", path, what)
            if kind == "function_call":
                args = _arguments(item.get("arguments"), (*path, "arguments"), f"{what} {name!r}")
            else:
                args = {"input": item.get("input")}
            b.assistant(calls=[_call(name, args, call_id)], merge=True)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_id = _need_str(item, "call_id", path, f"Responses {kind}")
            if "output" not in item:
                raise _Invalid(path, f"Responses {kind} needs 'output'")
            output = item["output"]
            text: str | None = (
                output if isinstance(output, str) else _text_of(_responses_parts(output, (*path, "output")))
            )
            b.tool_result(text, call_id, None)
        elif kind == "mcp_call":
            name = _need_str(item, "name", path, "Responses mcp_call")
            mcp_id = _opt_str(item, "id", path, "Responses mcp_call")
            args = _arguments(item.get("arguments"), (*path, "arguments"), f"Responses mcp_call {name!r}")
            b.assistant(calls=[_call(name, args, mcp_id)], merge=True)
            error = item.get("error")
            b.tool_result(_json_text(error if error else item.get("output") or ""), mcp_id, name, bool(error))
        elif kind == "reasoning":
            parts = [*(item.get("summary") or ()), *(item.get("content") or ())]
            kept = b.reasoning(_responses_parts(parts, (*path, "summary")))
            if kept:
                b.assistant(kept, merge=True)
        elif kind.endswith("_call"):  # built-in tools run by OpenAI: web_search_call, file_search_call, ...
            action = item.get("action")
            args = dict(action) if isinstance(action, Mapping) else {}
            b.assistant(calls=[_call(kind.removesuffix("_call"), args, _opt_str(item, "id", path, kind))], merge=True)
        else:
            raise _Invalid((*path, "type"), f"Responses item of type {kind!r} is not supported (expected message, "
                           "function_call, function_call_output, reasoning or a built-in *_call)")  # fmt: skip
