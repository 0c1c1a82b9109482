"""Test helpers for code built on assay.

- :class:`FakeOpenAIServer`: an OpenAI-compatible chat-completions server on loopback
  with fault injection (standard library only), for HTTP-level tests of
  :class:`assay.models.OpenAIJudge` and of the runner's retry and concurrency logic. By
  default it answers every prompt assay sends by a word rule
  (:func:`word_overlap_answer`); ``assay judges fake`` serves it from the command line.
- :class:`FakeAnthropicServer`: the same for Anthropic's Messages API.
- :func:`word_overlap_answer`: the fake judge's rules (a statement is supported when its
  content words are in the context; a grader passes when the response says the
  criterion's words; ...), deterministic and meaningful, never a measured judge.
- :func:`minimal_instance`: a small JSON value valid against a pydantic JSON schema;
  :func:`minimal_responder` answers every request with one.

The judge-level test doubles (:class:`~assay.models.ScriptedJudge`,
:class:`~assay.models.FunctionJudge`, and :class:`~assay.models.ProbabilityJudge`, a judge
with probabilities whose confidences a test sets: a cascade's routing) live in
:mod:`assay.models`; ``ProbabilityJudge`` is re-exported here.
"""

from assay.models._testing import ProbabilityJudge
from assay.testing._answers import (
    FAKE_JUDGE_MODEL,
    content_words,
    minimal_instance,
    minimal_responder,
    word_overlap_answer,
)
from assay.testing._anthropic_server import ANTHROPIC_FAULTS, FakeAnthropicServer
from assay.testing._openai_server import FAULTS, FakeOpenAIServer, Responder, TopLogprobs

__all__ = [
    "ANTHROPIC_FAULTS",
    "FAKE_JUDGE_MODEL",
    "FAULTS",
    "FakeAnthropicServer",
    "FakeOpenAIServer",
    "ProbabilityJudge",
    "Responder",
    "TopLogprobs",
    "content_words",
    "minimal_instance",
    "minimal_responder",
    "word_overlap_answer",
]
