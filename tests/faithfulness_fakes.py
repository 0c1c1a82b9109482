"""A judge's answers to assay's faithfulness prompts, for loopback servers and function judges in tests.

Statements are the answer's sentences (a rewrite keeps its sentence as it is); a statement
is supported when ``supported(statement)`` says so (default: it speaks of the sky).
"""

from __future__ import annotations

import json
from collections.abc import Callable


def _sky(statement: str) -> bool:
    return "sky" in statement


def faithfulness_answer(user: str, supported: Callable[[str], bool] = _sky) -> str:
    """The reply to one faithfulness prompt (``user`` is its last message's text)."""
    if "<sentence>" in user:
        return json.dumps({"statements": [user.split("<sentence>\n")[1].split("\n</sentence>")[0]]})
    if "<answer>" in user:
        answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
        return json.dumps({"statements": [s.strip() + "." for s in answer.split(".") if s.strip()]})
    items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    statements = [item.split("] ", 1)[1] if "] " in item else item for item in items]
    verdicts = [{"statement": t, "reason": "r", "verdict": int(supported(t))} for t in statements]
    return json.dumps({"verdicts": verdicts})
