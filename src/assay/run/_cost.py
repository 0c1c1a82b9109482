"""Token prices, and what a run cost.

Prices are USD per million tokens (input, output), matched against a judge call's model id
with shell-style patterns (``openai:gpt-4o-mini*`` also matches dated snapshots); the
longest matching pattern wins. The built-in table is a convenience that goes stale:
override it with a JSON file (``--prices prices.json`` or ``$ASSAY_PRICES``) shaped
``{"openai:my-model*": {"input": 0.5, "output": 1.5}}``. Local models cost nothing;
cached answers cost nothing; an unknown model's cost is reported as unknown, not 0.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from assay._scores import JudgeCall, Usage
from assay.errors import ConfigError

__all__ = ["DEFAULT_PRICES", "CostReport", "PriceTable", "describe_cost", "error_kind", "error_text"]

DEFAULT_PRICES: Mapping[str, tuple[float, float]] = {
    "local:*": (0.0, 0.0),
    "scripted*": (0.0, 0.0),
    "function*": (0.0, 0.0),
    "openai:gpt-4o-mini*": (0.15, 0.60),
    "openai:gpt-4o*": (2.50, 10.00),
    "openai:gpt-4.1-nano*": (0.10, 0.40),
    "openai:gpt-4.1-mini*": (0.40, 1.60),
    "openai:gpt-4.1*": (2.00, 8.00),
    "anthropic:claude-3-5-haiku*": (0.80, 4.00),
    "anthropic:claude-haiku-4*": (1.00, 5.00),
    "anthropic:claude-sonnet-4*": (3.00, 15.00),
    "anthropic:claude-opus-4*": (15.00, 75.00),
}


@dataclass(frozen=True)
class PriceTable:
    """Model-id pattern -> (input, output) USD per million tokens."""

    prices: Mapping[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceTable:
        """The defaults, overridden by ``path`` (or ``$ASSAY_PRICES``) if given.

        Raises:
            ConfigError: the file is unreadable or not shaped ``{pattern: {input, output}}``.
        """
        path = path or os.environ.get("ASSAY_PRICES")
        prices = dict(DEFAULT_PRICES)
        if path:
            try:
                data = json.loads(Path(path).read_text())
                for pattern, entry in data.items():
                    prices[str(pattern)] = (float(entry["input"]), float(entry["output"]))
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ConfigError(
                    f'price file {path}: {exc}; expected {{"model-pattern": {{"input": USD, "output": USD}}}}'
                ) from exc
        return cls(prices)

    def rate(self, model: str) -> tuple[float, float] | None:
        """(input, output) USD per million tokens for ``model``, or ``None`` if unknown."""
        matches = [p for p in self.prices if fnmatch.fnmatchcase(model, p)]
        return self.prices[max(matches, key=len)] if matches else None

    def cost(self, model: str, usage: Usage) -> float | None:
        """USD for ``usage`` tokens of ``model``, or ``None`` if its price is unknown."""
        rate = self.rate(model)
        if rate is None:
            return None
        return (usage.prompt_tokens * rate[0] + usage.completion_tokens * rate[1]) / 1_000_000


_ERROR_NAME = re.compile(r"^(_?\w*(?:Error|Exception)): ")
_ERROR_CHARS = 400


def error_kind(error: str) -> str:
    """A failed call's error class name (``"JudgeHTTPError"``), or ``"error"`` when its text names none."""
    found = _ERROR_NAME.match(error)
    return found.group(1).lstrip("_") if found else "error"


def error_text(error: str) -> str:
    """A failed call's error on one line, without its class name, at most 400 characters."""
    text = " ".join(_ERROR_NAME.sub("", error, count=1).split())
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 1] + "…"


@dataclass
class CostReport:
    """Calls, tokens and cost accumulated over judge calls."""

    prices: PriceTable = field(default_factory=PriceTable)
    calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    usd: float = 0.0
    unpriced_models: set[str] = field(default_factory=set)
    priced_calls: int = 0
    uncounted_models: set[str] = field(default_factory=set)
    """Priced models that answered without token counts (a server that omits ``usage``): their cost is unknown."""
    models: dict[str, int] = field(default_factory=dict)
    """Calls (cached ones too) per model that answered them, as each response named it
    (:func:`~assay.analysis.judge_models_note` says what a reader must be told of them)."""
    first_errors: dict[str, str] = field(default_factory=dict)
    """Kind (the error's class name, ``"error"`` when it names none) -> its first failed call's error."""

    def add(self, calls: Iterable[JudgeCall]) -> None:
        """Count these calls (cached ones count as calls made, at no cost).

        A cached answer of a model without a price costs nothing now, but what it cost
        when it was asked is not known: the cost stays unknown, never ``$0.0000``.
        """
        for call in calls:
            self.models[call.model] = self.models.get(call.model, 0) + 1
            if call.cached:
                self.cached_calls += 1
                if self.prices.rate(call.model) is None:
                    self.unpriced_models.add(call.model)
                continue
            self.calls += 1
            if call.error is not None:
                self.failed_calls += 1
                self.first_errors.setdefault(error_kind(call.error), call.error)
            self.usage = self.usage + call.usage
            cost = self.prices.cost(call.model, call.usage)
            if cost is None:
                self.unpriced_models.add(call.model)
            elif call.error is None and call.usage.total_tokens == 0 and any(self.prices.rate(call.model) or ()):
                self.uncounted_models.add(call.model)  # an answer read from no tokens: not free, uncounted
            else:
                self.usd += cost
                self.priced_calls += 1

    def describe(self) -> str:
        """``"$0.0123"``; ``"unknown (m has no price; ...)"`` when no call had a price (never ``$0.0000``)."""
        return describe_cost(self.usd, self.unpriced_models, self.priced_calls, self.uncounted_models)

    @property
    def first_error(self) -> str | None:
        """The error of the first failed call counted (``"JudgeHTTPError: Could not talk to ..."``)."""
        return next(iter(self.first_errors.values()), None)

    @property
    def every_call_failed(self) -> bool:
        """Whether calls were made and every one of them failed (cached answers are not calls made)."""
        return self.calls > 0 and self.failed_calls == self.calls

    def failure(self) -> str | None:
        """What every door says of failed calls, or ``None`` when none failed.

        ``"every judge call failed (14 of 14): Could not talk to ... is it running?"``, or
        ``"3 of 40 judge calls failed: <the first error of each kind>"``: the error as the
        judge backend worded it (its cause and hint), without its class name.
        """
        if not self.failed_calls:
            return None
        if self.every_call_failed:
            return (
                f"every judge call failed ({self.failed_calls} of {self.calls}): {error_text(self.first_error or '')}"
            )
        kinds = "; ".join(error_text(text) for text in self.first_errors.values())
        return f"{self.failed_calls} of {self.calls} judge calls failed: {kinds}"

    def brief(self, judge: str | None = None) -> str:
        """``"$0.0123"``, ``"$0.0123 + unknown"`` or ``"unknown"``: for progress lines.

        ``judge`` is the model asked: before anything is counted, its price decides, so a
        judge without one is ``unknown`` from the first line on, never ``$0.0000``.
        """
        if judge is not None and not self.models and self.prices.rate(judge) is None:
            return "unknown"
        if not self.unpriced_models and not self.uncounted_models:
            return f"${self.usd:.4f}"
        return f"${self.usd:.4f} + unknown" if self.priced_calls else "unknown"


def describe_cost(usd: float, unpriced: Iterable[str], priced_calls: int, uncounted: Iterable[str] = ()) -> str:
    """A cost in words: what is known, and which models have no price (``assay runs show`` and the summary).

    A model without a price makes the cost unknown, never $0: ``$0.0123 + unknown (m has
    no price; see --prices)``, or ``unknown (m has no price; see --prices)`` when no call
    had a price at all. So does a priced model whose server sent no token counts
    (``uncounted``): ``unknown (m reported no token counts)``.
    """
    models, silent = sorted(unpriced), sorted(uncounted)
    if not models and not silent:
        return f"${usd:.4f}"
    why = []
    if models:
        why.append(f"{', '.join(models)} {'has' if len(models) == 1 else 'have'} no price; see --prices")
    if silent:
        why.append(f"{', '.join(silent)} reported no token counts")
    which = "; ".join(why)
    return f"${usd:.4f} + unknown ({which})" if priced_calls else f"unknown ({which})"
