"""Typed prompts: render delimited untrusted data, ask a judge, validate the answer."""

from assay.prompts._prompt import DATA_RULES, Answer, Example, JudgePrompt, ask, call_judge, neutralise

__all__ = ["DATA_RULES", "Answer", "Example", "JudgePrompt", "ask", "call_judge", "neutralise"]
