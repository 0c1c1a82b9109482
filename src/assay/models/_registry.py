"""Choosing a judge by a string: ``local``, ``local:/path.gguf``, ``openai:MODEL``."""

from __future__ import annotations

import os

from assay.errors import ConfigError
from assay.models._protocol import JudgeModel

__all__ = ["JUDGE_FORMS", "get_judge"]

JUDGE_FORMS = "local, local:/path/to/model.gguf, openai:MODEL, anthropic:MODEL"


def get_judge(spec: str | None = None, *, base_url: str | None = None, api_key: str | None = None) -> JudgeModel:
    """Build a judge from its string form.

    Args:
        spec: ``local`` (the embedded default), ``local:/path/model.gguf`` (any GGUF file),
            ``openai:MODEL`` (any OpenAI-compatible server) or ``anthropic:MODEL``.
            Default: ``$ASSAY_JUDGE``, else ``local``.
        base_url: For ``openai:``; default ``$OPENAI_BASE_URL``, else OpenAI's.
        api_key: For ``openai:``; default ``$OPENAI_API_KEY``.

    Raises:
        ConfigError: the string names no known judge.
    """
    spec = (spec or os.environ.get("ASSAY_JUDGE") or "local").strip()
    kind, _, rest = spec.partition(":")
    if kind == "local":
        from assay.models._local import LocalJudge

        return LocalJudge(rest or None)
    if kind == "openai":
        if not rest:
            raise ConfigError("openai judge needs a model name, e.g. openai:gpt-4o-mini")
        from assay.models._openai import OpenAIJudge

        return OpenAIJudge(rest, base_url=base_url or os.environ.get("OPENAI_BASE_URL"), api_key=api_key)
    if kind == "anthropic":
        if not rest:
            raise ConfigError("anthropic judge needs a model name, e.g. anthropic:claude-sonnet-4-5")
        from assay.models._anthropic import AnthropicJudge

        return AnthropicJudge(rest, base_url=base_url, api_key=api_key)
    raise ConfigError(f"unknown judge {spec!r}; use one of: {JUDGE_FORMS}")
