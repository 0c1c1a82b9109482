"""Matching tool calls: argument comparison and the pairing of expected calls with actual ones.

Shared by :class:`~assay.metrics.ToolCallAccuracy` and :class:`~assay.metrics.AgentStateMatch`.
No judge: everything here is deterministic.

Values are compared as JSON values. Numbers compare by value (``1 == 1.0``); a boolean is
never a number (``True != 1``) and a string is never a number (``"1" != 1``): JSON keeps
those apart, and so does this. With ``normalize`` (the default of :class:`ArgumentMatch`),
strings compare after Unicode NFC normalisation and with outer whitespace stripped
(``"Café "`` matches ``"Café"`` written with a combining accent); case is kept (ids are
case-sensitive).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from assay._messages import INVALID_ARGUMENTS, ToolCall
from assay.errors import ConfigError

__all__ = [
    "ArgumentMatch",
    "Comparator",
    "bipartite_pairs",
    "lcs_pairs",
    "same_json",
]

Comparator = Callable[[Any, Any], bool]
"""A custom comparison of one argument: ``compare(expected_value, actual_value) -> bool``."""


def _text(value: str, normalize: bool) -> str:
    return unicodedata.normalize("NFC", value).strip() if normalize else value


def same_json(a: Any, b: Any, *, normalize: bool = False, subset: bool = False) -> bool:
    """Whether ``a`` (expected) and ``b`` (actual) are the same JSON value.

    Args:
        a: The expected value.
        b: The actual value.
        normalize: Compare strings after NFC normalisation and stripping outer whitespace.
        subset: Objects match when every key of ``a`` is in ``b`` with a matching value (at
            every depth); ``b`` may hold more keys. Lists still need the same length and order.
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if subset:
            return all(k in b and same_json(v, b[k], normalize=normalize, subset=True) for k, v in a.items())
        return a.keys() == b.keys() and all(same_json(a[k], b[k], normalize=normalize) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(
            same_json(x, y, normalize=normalize, subset=subset) for x, y in zip(a, b, strict=True)
        )
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return _text(a, normalize) == _text(b, normalize)
    return type(a) is type(b) and bool(a == b)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class ArgumentMatch:
    """How an actual call's arguments are compared with an expected call's.

    The names of the modes, and what peers call them:

    ========================  ==========================================================
    ``mode="exact"``          the same keys, every value equal (agentevals ``exact``,
                              Ragas' exact string comparison, Vertex AI's trajectory
                              metrics)
    ``mode="expected_keys"``  every key the expected call gives is in the actual call
                              with an equal value, at every depth of nested objects; the
                              agent may pass more (agentevals ``superset``: the actual
                              arguments are a superset of the expected ones)
    ``mode="names"``          arguments are not compared (agentevals ``ignore``,
                              DeepEval's default ``ToolCorrectnessMetric``)
    ========================  ==========================================================

    Args:
        mode: ``exact``, ``expected_keys`` or ``names`` (see above).
        ignore: Arguments left out of the comparison on both sides: ``"key"`` for every tool
            or ``"tool.key"`` for one tool (agentevals' ``tool_args_match_overrides`` with a
            list of keys).
        compare: Custom comparisons of single arguments, ``{"key" or "tool.key":
            comparator}``; ``comparator(expected_value, actual_value) -> bool``. A key
            with a comparator must be present on both sides (or absent on both). Define
            comparators at module level so the metric's spec can rebuild them.
        normalize: Strings compare after Unicode NFC normalisation with outer whitespace
            stripped (numbers always compare by value; see the module docstring).
    """

    mode: Literal["exact", "expected_keys", "names"] = "exact"
    ignore: tuple[str, ...] = ()
    compare: Mapping[str, Comparator] = field(default_factory=dict)
    normalize: bool = True

    def __post_init__(self) -> None:
        if self.mode not in ("exact", "expected_keys", "names"):
            raise ConfigError(f"argument match mode must be exact, expected_keys or names, not {self.mode!r}")
        for key in self.compare:
            if not callable(self.compare[key]):
                raise ConfigError(f"argument comparator for {key!r} is not callable")
        object.__setattr__(self, "ignore", tuple(self.ignore))

    def __hash__(self) -> int:
        return hash((self.mode, self.ignore, tuple(self.compare), self.normalize))

    def _ignored(self, tool: str, key: str) -> bool:
        return key in self.ignore or f"{tool}.{key}" in self.ignore

    def _comparator(self, tool: str, key: str) -> Comparator | None:
        return self.compare.get(f"{tool}.{key}") or self.compare.get(key)

    def difference(self, expected: ToolCall, actual: ToolCall) -> str | None:
        """``None`` when ``actual`` matches ``expected``; otherwise what differs, in words."""
        if expected.name != actual.name:
            return f"{actual.name} is not {expected.name}"
        if INVALID_ARGUMENTS in actual.arguments:
            raw = actual.arguments[INVALID_ARGUMENTS]
            return f"the call's arguments are not valid JSON: {_json(raw)[:120]}"
        if self.mode == "names":
            return None
        tool = expected.name
        want = {k: v for k, v in expected.arguments.items() if not self._ignored(tool, k)}
        got = {k: v for k, v in actual.arguments.items() if not self._ignored(tool, k)}
        parts = []
        missing = [k for k in want if k not in got]
        if missing:
            parts.append("missing arguments " + ", ".join(missing))
        if self.mode == "exact":
            extra = [k for k in got if k not in want]
            if extra:
                parts.append("unexpected arguments " + ", ".join(extra))
        for key, value in want.items():
            if key not in got:
                continue
            custom = self._comparator(tool, key)
            if custom is not None:
                same = bool(custom(value, got[key]))
            else:
                same = same_json(value, got[key], normalize=self.normalize, subset=self.mode == "expected_keys")
            if not same:
                parts.append(f"{key}: expected {_json(value)}, got {_json(got[key])}")
        return "; ".join(parts) or None

    def matches(self, expected: ToolCall, actual: ToolCall) -> bool:
        """Whether ``actual`` satisfies ``expected``."""
        return self.difference(expected, actual) is None


def lcs_pairs(n: int, m: int, match: Callable[[int, int], bool]) -> list[tuple[int, int]]:
    """An order-preserving maximum matching (longest common subsequence); ties favour earlier expected calls."""
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            if match(i, j):
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < m:
        if match(i, j) and table[i][j] == table[i + 1][j + 1] + 1:
            pairs.append((i, j))
            i += 1
            j += 1
        elif table[i][j + 1] >= table[i + 1][j]:  # on a tie, keep the earlier expected call in play
            j += 1
        else:
            i += 1
    return pairs


def bipartite_pairs(n: int, m: int, match: Callable[[int, int], bool]) -> list[tuple[int, int]]:
    """A maximum matching ignoring order (Kuhn's augmenting paths; expected calls tried in order)."""
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for j in range(m):
            if j in seen or not match(i, j):
                continue
            seen.add(j)
            if j not in owner or place(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(n):
        place(i, set())
    return sorted((i, j) for j, i in owner.items())


def closest_difference(
    expected: ToolCall, candidates: Sequence[tuple[int, ToolCall]], match: ArgumentMatch
) -> tuple[int, str] | None:
    """The first candidate call to the same tool and what differs from ``expected``; ``None`` if none."""
    for number, call in candidates:
        if call.name == expected.name:
            return number, match.difference(expected, call) or "matches"
    return None
