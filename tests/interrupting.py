"""A run cancelled once its judge has answered ``keep`` calls: what Ctrl-C does to ``assay run``, in-process."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

Answer = Callable[[Any, Any], str]


def cancel_after(keep: int, answer: Answer, start: Callable[[Callable[..., Awaitable[str]]], Awaitable[Any]]) -> None:
    """Run ``start(slow)`` and cancel it once ``slow`` has answered ``keep`` calls; the calls after stall.

    ``slow`` answers as ``answer`` does (``(messages, request) -> text``); ``start`` builds the
    run from it (``lambda slow: aevaluate(..., FunctionJudge(slow, concurrency=1), store=...)``).
    The run's task must end cancelled, as an interrupted run's does.
    """
    answered = 0

    async def slow(messages: Any, request: Any) -> str:
        nonlocal answered
        answered += 1
        if answered > keep:
            await asyncio.sleep(60)
        return answer(messages, request)

    async def main() -> None:
        task = asyncio.create_task(start(slow))
        while answered <= keep:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
