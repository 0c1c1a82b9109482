"""The end state of an agent's conversation, read from its trace without a model.

Every agent metric reads the trace through :func:`read_end_state`: each tool call with its
arguments, its result, whether it succeeded and whether it changes state. This is what an
agent *did*; what it *said* it did is only the final reply.

- **Succeeded.** A call whose result is marked as failed (``Message.is_error``: Anthropic
  ``is_error``, LangChain ``status="error"``, an OpenInference ERROR span, an Inspect tool
  error) or whose result text starts with ``Error`` (``Error: flight not available``, as
  tau-bench's tools answer), or is a JSON object with an ``error`` entry or ``"status":
  "error"``, did not succeed: an error result is not an action performed. A call with no
  result in the trace is ``succeeded=None`` (not known) and counts as performed.
- **Changes state.** The user declares which tools change state (:class:`StateChanges`:
  names or ``fnmatch`` patterns, per run, or per dataset in each sample's
  ``metadata["state_changing_tools"]``). Without a declaration it is inferred from the
  tool's name: a name whose first word is a read-only verb (``get``, ``search``, ``list``,
  ``find``, ``calculate``, ``lookup``, ``check``, ``think``... see :data:`READ_ONLY_VERBS`),
  or a hand-off to a person (``transfer_to_*``, ``escalate*``, ``handoff*``), changes
  nothing; any other tool does. The record says which of the three decided.
- **Results answer calls** by ``tool_call_id``; a result without one (Ragas'
  ``ToolMessage``) answers the oldest call still unanswered.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from assay._messages import INVALID_ARGUMENTS, Message, ToolCall
from assay.errors import ConfigError

__all__ = [
    "HANDOFF_PATTERNS",
    "READ_ONLY_VERBS",
    "STATE_CHANGING_KEY",
    "Action",
    "EndState",
    "StateChanges",
    "read_end_state",
]

READ_ONLY_VERBS: tuple[str, ...] = (
    "get",
    "search",
    "list",
    "find",
    "lookup",
    "look",
    "check",
    "calculate",
    "calc",
    "compute",
    "query",
    "fetch",
    "read",
    "retrieve",
    "view",
    "show",
    "describe",
    "count",
    "estimate",
    "validate",
    "verify",
    "browse",
    "preview",
    "inspect",
    "think",
    "reason",
    "plan",
)
"""First words of tool names inferred to be read-only (when no tools are declared)."""

HANDOFF_PATTERNS: tuple[str, ...] = ("transfer_to_*", "transfertohuman*", "escalate*", "handoff*", "hand_off*")
"""Tool names inferred to hand the conversation to a person: they change no record."""

STATE_CHANGING_KEY = "state_changing_tools"
"""The sample metadata key that declares a dataset's state-changing tools (names or patterns)."""

_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_ERROR_STATUSES = frozenset({"error", "failed", "failure"})

KindsSource = Literal["declared", "sample metadata", "inferred from tool names"]


def _first_word(name: str) -> str:
    """``get`` for ``get_user``, ``getUser``, ``GetUser``, ``functions.get_user`` or ``get-user``."""
    words = _WORD.findall(name.rsplit(".", 1)[-1])
    return words[0].lower() if words else ""


@dataclass(frozen=True)
class StateChanges:
    """Which tools change state, and which tool results are failures.

    Args:
        tools: The tools that change state, as names or ``fnmatch`` patterns
            (``"book_*"``); every other tool is read-only. Empty: use the sample's
            ``metadata["state_changing_tools"]`` if it has one, else infer from the names.
        read_only: Tools that never change state, whatever the rule above says (names or
            patterns), e.g. a ``lookup_and_cache`` the inference would misread.
        error_prefixes: A tool result whose text starts with one of these (case-insensitive,
            then a non-letter) is a failure.
    """

    tools: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    error_prefixes: tuple[str, ...] = ("error",)
    version: str = field(default="1", init=False)

    def __post_init__(self) -> None:
        for name in ("tools", "read_only", "error_prefixes"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise ConfigError(f"state changes: {name} must be a list of names, not the string {value!r}")
            object.__setattr__(self, name, tuple(value))

    def kinds(self, metadata: Mapping[str, Any] | None = None) -> tuple[tuple[str, ...], KindsSource]:
        """The state-changing patterns in force for a sample, and where they come from."""
        if self.tools:
            return self.tools, "declared"
        declared = (metadata or {}).get(STATE_CHANGING_KEY)
        if declared:
            if isinstance(declared, str):
                declared = [declared]
            if not isinstance(declared, list | tuple) or not all(isinstance(d, str) for d in declared):
                raise ConfigError(f"metadata[{STATE_CHANGING_KEY!r}] must be a list of tool names or patterns")
            return tuple(declared), "sample metadata"
        return (), "inferred from tool names"

    def changes_state(self, name: str, patterns: Sequence[str] = (), source: KindsSource = "declared") -> bool:
        """Whether the tool ``name`` changes state, given the patterns in force (see :meth:`kinds`)."""
        if any(fnmatch.fnmatchcase(name, p) for p in self.read_only):
            return False
        if source != "inferred from tool names":
            return any(fnmatch.fnmatchcase(name, p) for p in patterns)
        lowered = name.rsplit(".", 1)[-1].lower()
        if any(fnmatch.fnmatchcase(lowered, p) for p in HANDOFF_PATTERNS):
            return False
        return _first_word(name) not in READ_ONLY_VERBS

    def changing(self, calls: Iterable[ToolCall], metadata: Mapping[str, Any] | None = None) -> list[ToolCall]:
        """The state-changing ones of ``calls`` (e.g. a sample's expected calls), under the kinds in force."""
        patterns, source = self.kinds(metadata)
        return [c for c in calls if self.changes_state(c.name, patterns, source)]

    def failed(self, message: Message) -> bool:
        """Whether a tool result says the call failed (see the module docstring)."""
        if message.is_error:
            return True
        text = (message.content or "").strip()
        lowered = text.lower()
        for prefix in self.error_prefixes:
            p = prefix.lower()
            if lowered.startswith(p) and (len(lowered) == len(p) or not lowered[len(p)].isalpha()):
                return True
        if text.startswith("{"):
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                return False
            if isinstance(data, dict):
                status = data.get("status")
                return bool(data.get("error")) or (isinstance(status, str) and status.lower() in _ERROR_STATUSES)
        return False


class Action(BaseModel):
    """One tool call of the trace, with what came of it.

    Attributes:
        number: The call's position among the trace's tool calls (1-based): "call 3".
        message: The position of the assistant message that made it (1-based, counting
            every message, as the trace formatter numbers them).
        name: The tool.
        arguments: Its arguments (an agent's unreadable arguments are kept under
            ``__invalid_arguments__``).
        state_changing: Whether the tool changes state (see :class:`StateChanges`).
        succeeded: ``False`` when its result says it failed, ``None`` when the trace has no result.
        result: The result's text, if any.
    """

    model_config = ConfigDict(frozen=True)

    number: int
    message: int
    name: str
    arguments: dict[str, Any]
    state_changing: bool
    succeeded: bool | None
    result: str | None = None

    @property
    def call(self) -> ToolCall:
        """The call as a :class:`~assay.ToolCall`."""
        return ToolCall(name=self.name, arguments=self.arguments)

    @property
    def performed(self) -> bool:
        """A state-changing call that did not fail."""
        return self.state_changing and self.succeeded is not False

    @property
    def outcome(self) -> str:
        """``succeeded``, ``failed`` or ``no result``."""
        return {True: "succeeded", False: "failed", None: "no result"}[self.succeeded]

    def signature(self) -> str:
        """``name({"arg": value, ...})``, compact JSON in the given order."""
        if INVALID_ARGUMENTS in self.arguments:
            return f"{self.name}(<invalid JSON: {str(self.arguments[INVALID_ARGUMENTS])[:200]}>)"
        arguments = json.dumps(self.arguments, ensure_ascii=False, separators=(", ", ": "), default=str)
        return f"{self.name}({arguments})"


def _excerpt(text: str | None, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class EndState(BaseModel):
    """What the trace shows was done: every tool call with its outcome, and the last reply.

    Attributes:
        actions: Every tool call, in order.
        final_reply: The text of the last assistant message that has text.
        policy: The system messages' text (an agent's policy), if any.
        kinds: What decided which tools change state: ``declared`` (the metric's
            :class:`StateChanges`), ``sample metadata`` or ``inferred from tool names``.
    """

    model_config = ConfigDict(frozen=True)

    actions: tuple[Action, ...] = ()
    final_reply: str | None = None
    policy: str | None = None
    kinds: KindsSource = "inferred from tool names"

    @property
    def state_changes(self) -> tuple[Action, ...]:
        """The state-changing calls, performed or failed."""
        return tuple(a for a in self.actions if a.state_changing)

    @property
    def performed(self) -> tuple[Action, ...]:
        """The state-changing calls that did not fail: the changes the agent made."""
        return tuple(a for a in self.actions if a.performed)

    def record(self, *, result_chars: int = 300) -> dict[str, Any]:
        """The end state for a score's ``details``: the state-changing calls and the read calls' count."""
        return {
            "kinds": self.kinds,
            "state_changes": [
                {
                    "call": a.number,
                    "tool": a.name,
                    "arguments": a.arguments,
                    "outcome": a.outcome,
                    "result": _excerpt(a.result, result_chars) if a.result else None,
                }
                for a in self.state_changes
            ],
            "read_calls": sum(1 for a in self.actions if not a.state_changing),
            "final_reply": _excerpt(self.final_reply, 1000) if self.final_reply else None,
        }

    def summary(self) -> str:
        """One line: the changes made, the attempts that failed, how many reads."""
        done = [f"call {a.number} {a.signature()}" for a in self.performed]
        failed = [f"call {a.number} {a.name}" for a in self.state_changes if a.succeeded is False]
        reads = sum(1 for a in self.actions if not a.state_changing)
        text = "state changes: " + (" | ".join(done) if done else "none")
        if failed:
            text += "; failed: " + ", ".join(failed)
        return f"{text}; {reads} read calls (state-changing tools {self.kinds})"


def read_end_state(
    trace: Sequence[Message], state: StateChanges | None = None, metadata: Mapping[str, Any] | None = None
) -> EndState:
    """The :class:`EndState` of ``trace`` (no model; see the module docstring).

    Args:
        trace: The conversation.
        state: Which tools change state and which results are failures (default: inferred).
        metadata: The sample's metadata, for a dataset's ``state_changing_tools``.
    """
    state = state or StateChanges()
    patterns, source = state.kinds(metadata)
    calls: list[tuple[int, ToolCall]] = []
    results: dict[int, Message] = {}
    pending: list[int] = []  # indexes into calls, unanswered, oldest first
    by_id: dict[str, int] = {}
    replies: list[str] = []
    policy: list[str] = []
    for position, message in enumerate(trace, start=1):
        if message.role == "system" and message.content:
            policy.append(message.content)
        elif message.role == "assistant":
            if message.content and message.content.strip():
                replies.append(message.content.strip())
            for call in message.tool_calls:
                index = len(calls)
                calls.append((position, call))
                pending.append(index)
                if call.id:
                    by_id[call.id] = index
        elif message.role == "tool":
            index = by_id.get(message.tool_call_id or "", -1)
            if index < 0 or index not in pending:
                named = [i for i in pending if message.name is None or calls[i][1].name == message.name]
                index = named[0] if named else (pending[0] if pending else -1)
            if index >= 0:
                results[index] = message
                pending.remove(index)
    actions = []
    for index, (position, call) in enumerate(calls):
        result = results.get(index)
        actions.append(
            Action(
                number=index + 1,
                message=position,
                name=call.name,
                arguments=dict(call.arguments),
                state_changing=state.changes_state(call.name, patterns, source),
                succeeded=None if result is None else not state.failed(result),
                result=None if result is None else (result.content or ""),
            )
        )
    return EndState(
        actions=tuple(actions),
        final_reply=replies[-1] if replies else None,
        policy="\n\n".join(policy) or None,
        kinds=source,
    )
