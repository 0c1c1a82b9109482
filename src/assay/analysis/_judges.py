"""Which models answered a run's judge calls, and what a reader must be told about them.

A run asks one judge. A proxy that falls back to another model, or a router, can answer
some calls with a different one: the scores then mix judges, and nothing else in the
record says so. Every call keeps the model its response named (``JudgeCall.model``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from assay._scores import JudgeCall

__all__ = ["answered_by", "judge_models_note"]


def answered_by(calls: Iterable[JudgeCall]) -> dict[str, int]:
    """Calls (cached ones too) per model that answered them, as each response named it."""
    models: dict[str, int] = {}
    for call in calls:
        models[call.model] = models.get(call.model, 0) + 1
    return models


def judge_models_note(models: Mapping[str, int], asked: str | None = None) -> str | None:
    """What to tell a reader about the models that answered, if anything.

    Several models mix judges in the scores: always said. One model that is neither the
    one asked for nor a dated snapshot of it (``openai:gpt-4o-mini`` answered as
    ``openai:gpt-4o-mini-2024-07-18``) is said too.
    """
    answered = sorted(((m, n) for m, n in models.items() if n), key=lambda item: (-item[1], item[0]))
    if len(answered) > 1:
        listed = ", ".join(f"{m} ({n} call{'s' if n != 1 else ''})" for m, n in answered)
        wanted = f"; the run asked for {asked}" if asked else ""
        return f"judge calls were answered by {len(answered)} models: {listed}{wanted}: the scores mix judges"
    if len(answered) == 1 and asked and answered[0][0] != asked and not answered[0][0].startswith(asked + "-"):
        return f"every judge call was answered by {answered[0][0]}, not {asked} as asked"
    return None
