"""A base for judges that wrap another judge (cache, retries, repeat index, global limits)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import BaseModel

from assay.models._protocol import ChatMessage, GenerateConfig, JudgeModel, JudgeResponse, close_judge

__all__ = ["CAPABILITIES", "JudgeWrapper"]

CAPABILITIES = frozenset({"choice_probabilities", "complete_string"})
"""The optional judge calls besides ``generate``: a choice's probabilities, a string's continuation."""


class JudgeWrapper(JudgeModel):
    """Forwards identity and optional capabilities to ``inner``; subclasses override ``generate``.

    The protocol's capabilities (``identity``, ``components``, ``interruptible``) are forwarded explicitly.

    Optional capabilities of the inner judge (``choice_probabilities``, ``complete_string``)
    pass through attribute lookup, so ``isinstance(wrapper, ChoiceScorer)`` holds exactly
    when it holds for the inner judge.
    """

    def __init__(self, inner: JudgeModel) -> None:
        self.inner = inner

    @property
    def model_id(self) -> str:
        """The inner judge's id."""
        return self.inner.model_id

    @property
    def max_concurrency(self) -> int:
        """The inner judge's."""
        return self.inner.max_concurrency

    @property
    def prefers_per_statement(self) -> bool:
        """The inner judge's."""
        return self.inner.prefers_per_statement

    @property
    def identity(self) -> str:
        """The inner judge's (what the cache keys on)."""
        return self.inner.identity

    @property
    def components(self) -> dict[str, str]:
        """The inner judge's (what the run record keeps)."""
        return self.inner.components

    @property
    def batched_calls(self) -> int:
        """The inner judge's."""
        return self.inner.batched_calls

    @property
    def interruptible(self) -> bool:
        """The inner judge's."""
        return self.inner.interruptible

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "inner":
            raise AttributeError(name)
        found = getattr(self.inner, name)
        if name in CAPABILITIES and callable(found):
            return self._capability(name, found)
        return found

    def _capability(self, name: str, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        """The inner judge's ``name`` (one of :data:`CAPABILITIES`) as this layer offers it: unchanged here.

        A layer with a concern for those calls (the cache, the repeat index, the progress
        count) wraps ``method`` instead; it is found only when the inner judge has it.
        """
        return method

    async def aclose(self) -> None:
        """Close the inner judge's resources."""
        await close_judge(self.inner)

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: type[BaseModel] | None = None,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        """Ask the inner judge (subclasses add their concern around this)."""
        return await self.inner.generate(messages, schema=schema, config=config)
