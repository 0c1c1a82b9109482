"""Judge backends behind one protocol.

- :class:`LocalJudge`: the default, an in-process llama.cpp model (grammar-constrained).
- :class:`OpenAIJudge`: any OpenAI-compatible server (extra ``openai``).
- :class:`ScriptedJudge`, :class:`FunctionJudge`: public test doubles.
- :func:`get_judge`: build a judge from a string such as ``"local"`` or ``"openai:gpt-4o-mini"``.
"""

from assay.models._protocol import ChatMessage, GenerateConfig, JudgeModel, JudgeResponse
from assay.models._testing import FunctionJudge, JudgeRequest, ScriptedJudge, ScriptExhaustedError

__all__ = [
    "ChatMessage",
    "FunctionJudge",
    "GenerateConfig",
    "JudgeModel",
    "JudgeRequest",
    "JudgeResponse",
    "ScriptExhaustedError",
    "ScriptedJudge",
]
