"""What every trace reader shares: located errors, the message builder, placeholders."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from assay._messages import INVALID_ARGUMENTS, Message, ToolCall

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
    """Tool-call arguments as a JSON object: from a dict, or a string holding one.

    A string that is not a JSON object is what the agent wrote, not a broken trace: the
    call is kept with the raw text under ``INVALID_ARGUMENTS`` (it matches no expected
    call, and says why). Anything else that is not an object is a format error.
    """
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return {INVALID_ARGUMENTS: value}
        return dict(parsed) if isinstance(parsed, Mapping) else {INVALID_ARGUMENTS: value}
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


def _seq(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()
