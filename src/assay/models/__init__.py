"""Judge backends behind one protocol.

- :class:`LocalJudge`: the default, an in-process llama.cpp model (grammar-constrained).
- ``OpenAIJudge``: any OpenAI-compatible server (extra ``openai``).
- ``AnthropicJudge``: Anthropic's Messages API (extra ``anthropic``).
- ``ResilientJudge``: retries, timeouts, rate and token budgets around any judge.
- :func:`build_judge_stack`: the one place a judge is wrapped in repeats, the call cache
  (:class:`JudgeCache`) and retries under :class:`Limits`; every caller uses it.
- :class:`ConfidentJudge`: P(choice) for a judge that generates its verdicts (an API judge),
  by the answer token's log-probabilities or by agreement over samples (:class:`Confidence`);
  the judge string ``openai:MODEL+logprobs`` or ``MODEL+samples:K`` builds one.
- :class:`MiniLMEncoder`: sentence embeddings offline (extra ``embeddings``), behind :class:`Encoder`.
- :class:`ScriptedJudge`, :class:`FunctionJudge`: public test doubles.
- :func:`get_judge`: build a judge from a string such as ``"local"`` or ``"openai:gpt-4o-mini"``,
  or ``"NAME:MODEL"`` for a backend another package registers under the ``assay.judges``
  entry point group (:func:`judge_plugins`).
"""

from __future__ import annotations

from typing import Any

from assay.models._cache import CachedJudge, CacheInfo, JudgeCache
from assay.models._confidence import Confidence, ConfidentJudge
from assay.models._encoders import Encoder, MiniLMEncoder
from assay.models._local import LocalJudge, local_model_path
from assay.models._protocol import (
    ChatMessage,
    ChoiceProbabilities,
    ChoiceScorer,
    GenerateConfig,
    JudgeModel,
    JudgeResponse,
    TokenLogprobs,
    close_judge,
)
from assay.models._registry import JUDGE_FORMS, JUDGE_GROUP, get_judge, judge_forms, judge_plugins
from assay.models._resilient import RateLimiter, ResilientJudge, RetryPolicy
from assay.models._stack import Limits, build_judge_stack
from assay.models._testing import FunctionJudge, JudgeRequest, ProbabilityJudge, ScriptedJudge, ScriptExhaustedError
from assay.models._weights import cache_dir, default_model_path

__all__ = [
    "JUDGE_FORMS",
    "JUDGE_GROUP",
    "AnthropicJudge",
    "CacheInfo",
    "CachedJudge",
    "ChatMessage",
    "ChoiceProbabilities",
    "ChoiceScorer",
    "Confidence",
    "ConfidentJudge",
    "Encoder",
    "FunctionJudge",
    "GenerateConfig",
    "JudgeCache",
    "JudgeHTTPError",
    "JudgeModel",
    "JudgeRequest",
    "JudgeResponse",
    "Limits",
    "LocalJudge",
    "MiniLMEncoder",
    "OpenAIJudge",
    "ProbabilityJudge",
    "RateLimiter",
    "ResilientJudge",
    "RetryPolicy",
    "ScriptExhaustedError",
    "ScriptedJudge",
    "TokenLogprobs",
    "build_judge_stack",
    "cache_dir",
    "close_judge",
    "default_model_path",
    "get_judge",
    "judge_forms",
    "judge_plugins",
    "local_model_path",
]


def __getattr__(name: str) -> Any:
    # The OpenAI backend is imported on first use so `import assay` never needs the SDK.
    if name in ("OpenAIJudge", "JudgeHTTPError"):
        from assay.models import _openai

        return getattr(_openai, name)
    if name == "AnthropicJudge":
        from assay.models import _anthropic

        return _anthropic.AnthropicJudge
    raise AttributeError(f"module 'assay.models' has no attribute {name!r}")
