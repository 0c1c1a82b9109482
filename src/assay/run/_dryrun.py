"""``--dry-run``: how many calls and tokens a run would take, before spending anything.

The real metrics run against :class:`EstimatingJudge`, which answers every prompt with a
plausible, schema-valid answer without calling a model: statements are the answer's
sentences, verdict lists have one item per statement, reasons are of typical length. What
it counts is therefore what the metrics would really ask, prompt by prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from assay._schema import schema_of
from assay._scores import Usage
from assay.grounding._sentences import _segmenter
from assay.models._protocol import ChatMessage, GenerateConfig, JudgeModel, JudgeResponse
from assay.testing._openai_server import minimal_instance

__all__ = ["EstimatingJudge"]

_TYPICAL_REASON = "The context states this explicitly in its second sentence, so it is supported."
_BLOCK = re.compile(r"<(\w+)>\n(.*?)\n</\1>", re.DOTALL)


def _fill(value: Any, blocks: dict[str, str]) -> Any:
    if isinstance(value, dict):
        filled = {k: _fill(v, blocks) for k, v in value.items()}
        for key in ("reason", "reasoning"):
            if key in filled:
                filled[key] = _TYPICAL_REASON
        return filled
    if isinstance(value, list):
        return [_fill(v, blocks) for v in value]
    return value


class EstimatingJudge(JudgeModel):
    """Answers plausibly without a model, counting calls and estimated tokens (4 chars a token)."""

    def __init__(self, model_id: str, *, per_statement: bool, concurrency: int = 64) -> None:
        self._model_id = model_id
        self._per_statement = per_statement
        self._concurrency = concurrency
        self.calls = 0
        self.usage = Usage()

    @property
    def model_id(self) -> str:
        """The judge being estimated."""
        return self._model_id

    @property
    def max_concurrency(self) -> int:
        """High: nothing is called."""
        return self._concurrency

    @property
    def prefers_per_statement(self) -> bool:
        """As the estimated judge would."""
        return self._per_statement

    def _answer(self, messages: Sequence[ChatMessage], schema: type[BaseModel] | None) -> str:
        if schema is None:
            return "yes"
        blocks = dict(_BLOCK.findall(messages[-1]["content"]))
        instance = minimal_instance(schema_of(schema))
        instance = _fill(instance, blocks)
        if isinstance(instance, dict) and "statements" in instance and "answer" in blocks:
            sentences = [s.strip() for s in _segmenter("en").segment(blocks["answer"]) if s.strip()]
            instance["statements"] = sentences or ["x"]
        if isinstance(instance, dict) and "verdicts" in instance and "statements" in blocks:
            n = len([line for line in blocks["statements"].splitlines() if line.startswith("[")])
            item = instance["verdicts"][0] if instance["verdicts"] else {}
            instance["verdicts"] = [item] * max(n, 1)
        return json.dumps(instance)

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: type[BaseModel] | None = None,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        """A plausible answer; counts the call and its estimated tokens."""
        text = self._answer(messages, schema)
        usage = Usage(
            prompt_tokens=sum(len(m["content"]) for m in messages) // 4 + 4 * len(messages),
            completion_tokens=len(text) // 4 + 1,
        )
        self.calls += 1
        self.usage = self.usage + usage
        return JudgeResponse(text=text, model=self._model_id, usage=usage, finish_reason="stop")
