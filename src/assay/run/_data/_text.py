"""DOC."""

from __future__ import annotations

import ast
import json
from typing import Any

from assay.errors import (
    json_message,
)
from assay.run._data._rows import MAX_NESTING

__all__ = ["contexts_from_text", "parse_json", "python_literal"]


def contexts_from_text(text: str) -> str | list[Any]:
    """The contexts one text holds: a list written as JSON or as a Python literal, else the text itself.

    A JSON list (raw newlines allowed) or a Python list literal (``['a', 'b']``, as pandas
    writes lists to CSV) is the list; any other text is one context, except text that
    starts and ends like a list of strings but is neither.

    Raises:
        ValueError: the text looks like a list of strings but parses as neither, or is
            nested too deep.
    """
    stripped = text.strip()
    if not stripped.startswith("["):
        return text
    try:
        value = parse_json(stripped, strict=False)
    except ValueError as exc:
        if "nested too deep" in str(exc):
            raise
        if not (stripped[1:].lstrip().startswith(("'", '"')) and stripped.endswith("]")):
            return text  # "[1] A citation-style passage": text, not a list
        value = python_literal(stripped)
        if value is None:
            raise ValueError(f"looks like a list but is neither JSON nor a Python list ({exc})") from None
    return value if isinstance(value, list) else text


def python_literal(text: str) -> list[Any] | dict[str, Any] | None:
    """The list or dict a Python literal writes (``[{'name': 'x', 'ok': True, 'n': None}]``), or ``None``.

    pandas writes a cell holding a list or dict to CSV as its ``repr``: single quotes,
    ``None``, ``True``. Read with :func:`ast.literal_eval`, which builds literals only and
    runs no code; any other text, or a literal that is no list or dict, is ``None``.
    """
    stripped = text.strip()
    if not stripped.startswith(("[", "{")):
        return None
    try:
        value = ast.literal_eval(stripped)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, list | dict) else None


class _DuplicateKeyError(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(key)
        result[key] = value
    return result


def parse_json(text: str, *, strict: bool = True, line: bool = False) -> Any:
    """Parse JSON row data; a problem raises ``ValueError`` with a message for a row error.

    Unlike :func:`json.loads`, a key given twice in one object is an error (not the last
    one silently), and nesting too deep to parse is an error (not a ``RecursionError``).
    ``strict=False`` allows raw control characters (a newline) inside strings. ``line``:
    ``text`` is one line of a file, which the error names: the problem is placed by its
    column ("at the end of the line" for an object left open), never by a line of its own.
    """
    if line:
        text = text.rstrip("\r\n")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, strict=strict)
    except json.JSONDecodeError as exc:
        if line:
            at = "at the end of the line" if exc.pos >= len(text.rstrip()) else f"at column {exc.colno}"
            raise ValueError(f"invalid JSON: {json_message(exc)} {at}") from None
        raise ValueError(f"invalid JSON: {json_message(exc)} at line {exc.lineno} column {exc.colno}") from None
    except _DuplicateKeyError as exc:
        raise ValueError(f"invalid JSON: the key {exc.args[0]!r} appears twice in one object") from None
    except RecursionError:
        raise ValueError(f"invalid JSON: nested too deep (at most {MAX_NESTING} levels)") from None
