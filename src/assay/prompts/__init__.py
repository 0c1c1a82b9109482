"""Typed prompts: render delimited untrusted data, ask a judge, validate the answer."""

from assay._schema import schema_json, schema_of
from assay.prompts._prompt import (
    DATA_RULES,
    REASKABLE,
    REASKS,
    Answer,
    Example,
    JudgePrompt,
    ask,
    call_and_parse,
    call_judge,
    neutralise,
)

__all__ = [
    "DATA_RULES",
    "REASKABLE",
    "REASKS",
    "Answer",
    "Example",
    "JudgePrompt",
    "ask",
    "call_and_parse",
    "call_judge",
    "neutralise",
    "schema_json",
    "schema_of",
]
