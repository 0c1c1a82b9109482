"""Test helpers for code built on assay.

- :class:`FakeOpenAIServer`: an OpenAI-compatible chat-completions server on loopback
  with fault injection (standard library only), for HTTP-level tests of
  :class:`assay.models.OpenAIJudge` and of the runner's retry and concurrency logic.
- :class:`FakeAnthropicServer`: the same for Anthropic's Messages API.
- :func:`minimal_instance`: a small JSON value valid against a pydantic JSON schema.

The judge-level test doubles (:class:`~assay.models.ScriptedJudge`,
:class:`~assay.models.FunctionJudge`) live in :mod:`assay.models`.
"""

from assay.testing._anthropic_server import ANTHROPIC_FAULTS, FakeAnthropicServer
from assay.testing._openai_server import FAULTS, FakeOpenAIServer, Responder, minimal_instance

__all__ = ["ANTHROPIC_FAULTS", "FAULTS", "FakeAnthropicServer", "FakeOpenAIServer", "Responder", "minimal_instance"]
