"""Agent traces in the shapes other tools write them, converted to assay's one shape.

A trace reaches assay as a sequence of :class:`~assay.Message`. :func:`load_trace` builds
that sequence from any of these formats (:data:`TRACE_FORMATS`), detecting which one it
is; :class:`~assay.Sample` calls it on its ``trace`` field, so a dataset row's ``trace``
(or ``messages``) column may hold any of them:

- ``openai_chat``: OpenAI Chat Completions messages (``role``, ``content``,
  ``tool_calls`` with JSON-string ``function.arguments``, ``tool`` messages with
  ``tool_call_id``); also assay's own shape (``tool_calls`` as ``{"name", "arguments"}``).
  A ``{"messages": [...]}`` request is accepted too.
- ``openai_responses``: OpenAI Responses API items (``message`` with ``input_text`` /
  ``output_text`` parts, ``function_call`` with ``call_id``/``name``/``arguments``,
  ``function_call_output``, ``reasoning``); a list of items, a response object
  (``output``) or a request-and-response object (``instructions``, ``input``, ``output``).
- ``anthropic``: Anthropic Messages content blocks (``text``, ``tool_use``,
  ``tool_result`` with string or block content and ``is_error``, ``thinking``); a list of
  messages or a request ``{"system": ..., "messages": [...]}``.
- ``langchain``: LangChain message dicts, ``messages_to_dict``'s
  ``{"type": "human" | "ai" | "tool" | "system", "data": {...}}`` (and ``dumpd``'s
  ``{"lc": 1, "type": "constructor", ...}``).
- ``openinference``: OpenInference spans in an OpenTelemetry OTLP JSON export
  (``resourceSpans[].scopeSpans[].spans[]``), read in start-time order: LLM spans give
  the messages (``llm.input_messages.N.message.*`` / ``llm.output_messages.N...``), TOOL
  spans the tool calls and results (``tool.name``, ``input.value``, ``output.value``); an
  AGENT span's input and output stand in for the conversation when there is no LLM span.

What every format becomes (decisions written down in ``docs/design/traces.md``):

- An assistant turn is one message: its text (text parts joined by a newline) and its
  tool calls, in order. Responses items of one turn (a ``message`` and the
  ``function_call`` items after it) are merged; so are Anthropic blocks of one message.
- Tool-call arguments become a JSON object; a string that is not a JSON object is an
  error naming where it is.
- A tool result is a ``tool`` message with the call's id; its ``name`` is the called
  tool's, taken from the matching call when the format does not repeat it. A failed tool
  (Anthropic ``is_error``, LangChain ``status="error"``, an OpenInference TOOL span with
  status ERROR) sets ``is_error``.
- Reasoning (Responses ``reasoning`` items, Anthropic ``thinking`` blocks, reasoning
  content parts) is left out unless ``keep_reasoning=True``, which keeps it as assistant
  text starting ``[reasoning]``. Images, audio and files become ``[image]``-style
  placeholders so the judge sees that something was there.
- Empty text is no text (``None``).

Detection looks for each format's distinctive marks (``tool_use`` blocks, Responses item
types, LangChain ``data`` wrappers, ``resourceSpans``...) and converts with the best
match; plain role/content messages read as ``openai_chat``. When no format fits, the
:class:`~assay.errors.TraceFormatError` names the accepted formats, the closest one and
the field that failed in it, e.g. ``trace[2].content[0]: Anthropic block of type
'tool_use' needs 'name'``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from assay._samples import Message, ToolCall
from assay.errors import TraceFormatError

__all__ = ["TRACE_FORMATS", "detect_trace_format", "load_trace"]

TRACE_FORMATS: Mapping[str, str] = {
    "openai_chat": "OpenAI Chat Completions messages",
    "openai_responses": "OpenAI Responses API items",
    "anthropic": "Anthropic Messages",
    "langchain": "LangChain message dicts (messages_to_dict)",
    "openinference": "OpenInference spans (OTLP JSON export)",
}
"""Trace format name -> what it is, in the order detection tries them on a tie."""

_PLACEHOLDERS = {
    "image": "[image]",
    "image_url": "[image]",
    "input_image": "[image]",
    "audio": "[audio]",
    "input_audio": "[audio]",
    "file": "[file]",
    "input_file": "[file]",
    "document": "[document]",
}
_REASONING = "[reasoning] "


# --------------------------------------------------------------------------- errors


class _Invalid(Exception):
    """A part of the input does not fit the format being tried."""

    def __init__(self, path: tuple[str | int, ...], problem: str) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem

    @property
    def where(self) -> str:
        return "trace" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path)

    @property
    def progress(self) -> tuple[int, ...]:
        # How far into the input the format got before failing: later is closer.
        return tuple(p for p in self.path if isinstance(p, int))


Path = tuple[str | int, ...]


def _obj(value: Any, path: Path, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _Invalid(path, f"{what} must be a JSON object, got {_kind(value)}")
    return value


def _list(value: Any, path: Path, what: str) -> Sequence[Any]:
    if not isinstance(value, list | tuple):
        raise _Invalid(path, f"{what} must be a list, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def _need_str(item: Mapping[str, Any], key: str, path: Path, what: str) -> str:
    value = item.get(key)
    if value is None:
        raise _Invalid(path, f"{what} needs '{key}'")
    if not isinstance(value, str):
        raise _Invalid((*path, key), f"{what}: '{key}' must be a string, got {_kind(value)}")
    return value


def _opt_str(item: Mapping[str, Any], key: str, path: Path, what: str) -> str | None:
    value = item.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Invalid((*path, key), f"{what}: '{key}' must be a string, got {_kind(value)}")
    return value


def _arguments(value: Any, path: Path, what: str) -> dict[str, Any]:
    """Tool-call arguments as a JSON object: from a dict, or a string holding one."""
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise _Invalid(path, f"{what}: arguments are not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, Mapping):
        raise _Invalid(path, f"{what}: arguments must be a JSON object, got {_kind(value)}")
    return dict(value)


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


# --------------------------------------------------------------------------- building


_Role = Literal["system", "user", "assistant", "tool"]


@dataclass
class _Turn:
    role: _Role
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False


@dataclass
class _Builder:
    """Collects turns; an assistant turn's text and tool calls may arrive in pieces."""

    keep_reasoning: bool
    turns: list[_Turn] = field(default_factory=list)

    def say(self, role: _Role, texts: Sequence[str]) -> _Turn:
        turn = _Turn(role, [t for t in texts if t])
        self.turns.append(turn)
        return turn

    def assistant(self, texts: Sequence[str] = (), calls: Sequence[ToolCall] = (), *, merge: bool = False) -> None:
        """An assistant turn; with ``merge``, added to the previous one if that is the assistant's."""
        last = self.turns[-1] if self.turns else None
        if merge and last is not None and last.role == "assistant":
            last.texts.extend(t for t in texts if t)
            last.calls.extend(calls)
            return
        turn = self.say("assistant", texts)
        turn.calls.extend(calls)

    def reasoning(self, texts: Sequence[str]) -> list[str]:
        """Reasoning text to keep as assistant text (empty unless ``keep_reasoning``)."""
        joined = "\n".join(t for t in texts if t)
        return [_REASONING + joined] if self.keep_reasoning and joined else []

    def tool_result(self, content: str | None, call_id: str | None, name: str | None, is_error: bool = False) -> None:
        turn = self.say("tool", [content] if content else [])
        turn.tool_call_id = call_id
        turn.name = name
        turn.is_error = is_error

    def messages(self) -> tuple[Message, ...]:
        return _named(
            tuple(
                Message(
                    role=turn.role,
                    content="\n".join(turn.texts) or None,
                    tool_calls=tuple(turn.calls),
                    tool_call_id=turn.tool_call_id,
                    name=turn.name if turn.role == "tool" else None,
                    is_error=turn.is_error,
                )
                for turn in self.turns
            )
        )


def _named(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """Tool results without a name take the name of the call they answer (matched by id)."""
    names = {call.id: call.name for m in messages for call in m.tool_calls if call.id}
    if not any(m.role == "tool" and m.name is None and m.tool_call_id in names for m in messages):
        return messages
    return tuple(
        m.model_copy(update={"name": names[m.tool_call_id]})
        if m.role == "tool" and m.name is None and m.tool_call_id in names
        else m
        for m in messages
    )


def _call(name: str, arguments: dict[str, Any], call_id: str | None) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, id=call_id)


# --------------------------------------------------------------------------- OpenAI chat

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


# --------------------------------------------------------------------------- OpenAI Responses

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


# --------------------------------------------------------------------------- Anthropic

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


# --------------------------------------------------------------------------- LangChain

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
        calls.append(_call(name, {"__invalid_arguments__": call.get("args")}, call.get("id")))
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


# --------------------------------------------------------------------------- OpenInference (OTLP JSON)

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


# --------------------------------------------------------------------------- detection

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


def _seq(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


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
                f"trace: a string that is not JSON ({exc.msg} at column {exc.colno}); give the messages as a list",
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
