"""Turn judge text into typed values, or into an explicit reason why not.

One module owns extraction (promptfoo issue 2468: judges wrap JSON in prose and code
fences, answer in a legacy text form, refuse, or stop mid-object). Every function returns
either a validated value or an :class:`Unparsed` carrying an
:class:`~assay.UnscoredReason`; nothing here ever guesses a verdict.

What is understood:

- plain JSON; JSON inside ```` ``` ```` / ```` ```json ```` fences; JSON surrounded by prose
  (the first balanced object or array that validates);
- for verdict lists, additionally: a bare JSON list of verdicts, the legacy form
  ``Final verdict for each statement in order: Yes. No. Yes.``, and free lines such as
  ``Verdict: yes`` or ``Statement 2: No``.

What becomes unscored: empty output (``empty_output``), a refusal (``refusal``), an
object cut off before its end (``truncated_output``), anything that does not validate
(``parse_failure``: a verdict of ``2``, ``-1``, ``"1.0"`` or ``true`` among them), and a
verdict count different from the statement count (``verdict_count_mismatch``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from assay._scores import Binary, UnscoredReason

__all__ = [
    "ParsedVerdict",
    "StatementVerdicts",
    "Unparsed",
    "find_json_values",
    "looks_like_refusal",
    "parse_output",
    "parse_verdicts",
]

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class Unparsed:
    """Judge output that could not be turned into a value, and why."""

    reason: UnscoredReason
    detail: str


@dataclass(frozen=True)
class ParsedVerdict:
    """One binary verdict read from judge output."""

    value: int
    reason: str = ""


class _VerdictItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    statement: str = ""
    reason: str = ""
    verdict: Binary


class StatementVerdicts(BaseModel):
    """The JSON shape asked of a judge that rates several statements in one call."""

    model_config = ConfigDict(extra="ignore")

    verdicts: list[_VerdictItem] = Field(default_factory=list)


_REFUSAL = re.compile(
    r"^\s*(?:i(?:'m| am)? (?:sorry|unable|not able)|i (?:cannot|can't|can not|won't|will not)"
    r"|as an ai\b|i apologi[sz]e|unfortunately,? i|i do not have enough|"
    r"i'm not able|sorry,? (?:but )?i)",
    re.IGNORECASE,
)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)


def looks_like_refusal(text: str) -> bool:
    """Whether ``text`` reads as the judge declining to answer."""
    return bool(_REFUSAL.search(text))


def _balanced_spans(text: str) -> Iterator[tuple[int, int]]:
    """Yield (start, end) of each top-level balanced {...} or [...] span, string-aware."""
    i = 0
    n = len(text)
    while i < n:
        if text[i] not in "{[":
            i += 1
            continue
        depth = 0
        in_string = False
        escaped = False
        j = i
        closed = False
        while j < n:
            ch = text[j]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch in "{[":
                depth += 1
            elif ch in "}]":
                depth -= 1
                if depth == 0:
                    closed = True
                    break
            j += 1
        if closed:
            yield i, j + 1
            i = j + 1
        else:
            # Unclosed from here to the end: report it as a span that runs to the end.
            yield i, n
            return


def find_json_values(text: str) -> tuple[list[Any], bool]:
    """All JSON values embedded in ``text``, best candidates first.

    Returns the decoded values and whether an unterminated object or array was seen (a
    sign that the output was truncated).
    """
    candidates: list[str] = []
    stripped = text.strip()
    candidates.append(stripped)
    candidates.extend(m.group(1).strip() for m in _FENCE.finditer(text))
    truncated = False
    for start, end in _balanced_spans(text):
        span = text[start:end]
        candidates.append(span)
    values: list[Any] = []
    seen: set[str] = set()
    for candidate in candidates:
        if not candidate or candidate in seen:
            continue
        seen.add(candidate)
        try:
            values.append(json.loads(candidate))
        except json.JSONDecodeError as exc:
            if candidate[:1] in "{[" and exc.pos >= len(candidate) - 1:
                truncated = True
            continue
    # An unclosed fence or an object that never closes also means truncation.
    if stripped.startswith("```") and stripped.count("```") == 1:
        truncated = True
    return values, truncated


def _short(err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "value"
    return f"{loc}: {first['msg']} (got {first.get('input')!r})"[:300]


def _classify_empty(text: str | None, finish_reason: str | None) -> Unparsed | None:
    if text is None or not text.strip():
        if finish_reason == "length":
            return Unparsed(UnscoredReason.TRUNCATED_OUTPUT, "output cut off before any text")
        return Unparsed(UnscoredReason.EMPTY_OUTPUT, "the judge returned no text")
    if finish_reason in ("refusal", "content_filter"):
        return Unparsed(UnscoredReason.REFUSAL, f"the backend reported {finish_reason}: {text[:200]}")
    return None


def parse_output(text: str | None, model: type[T], *, finish_reason: str | None = None) -> T | Unparsed:
    """Validate judge output against ``model``, tolerating fences and surrounding prose.

    Args:
        text: The judge's raw output.
        model: The pydantic model the output must satisfy.
        finish_reason: The backend's finish reason, if known (``"length"`` means truncated).

    Returns:
        The validated object, or an :class:`Unparsed` with the reason.
    """
    empty = _classify_empty(text, finish_reason)
    if empty is not None:
        return empty
    assert text is not None
    values, truncated = find_json_values(text)
    first_error: ValidationError | None = None
    for value in values:
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            first_error = first_error or exc
    if looks_like_refusal(text) and not values:
        return Unparsed(UnscoredReason.REFUSAL, text.strip()[:300])
    if truncated or finish_reason == "length":
        return Unparsed(UnscoredReason.TRUNCATED_OUTPUT, f"output ends mid-object: …{text[-120:]!r}")
    if first_error is not None:
        return Unparsed(UnscoredReason.PARSE_FAILURE, _short(first_error))
    return Unparsed(UnscoredReason.PARSE_FAILURE, f"no JSON found in output: {text.strip()[:200]!r}")


_LEGACY = re.compile(r"final verdicts? for each statement in order\s*:\s*(.*)", re.IGNORECASE | re.DOTALL)
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_LINE = re.compile(
    r"^\s*(?:[-*]\s*)?(?:\*\*)?(?:statement\s*\d+|verdict|\d+[.)])(?:\*\*)?\s*(?:\([^)]*\))?\s*[:\-–]?\s*(?:\*\*)?\s*"
    r"(yes|no|1|0|supported|unsupported|not supported)\b(?:\*\*)?[\s.,;:-]*(.*)$",
    re.IGNORECASE,
)
_WORD_VALUE = {"yes": 1, "no": 0, "1": 1, "0": 0, "supported": 1, "unsupported": 0, "not supported": 0}
_VERDICT_LIST: TypeAdapter[list[Binary]] = TypeAdapter(list[Binary])
_ITEM_LIST: TypeAdapter[list[_VerdictItem]] = TypeAdapter(list[_VerdictItem])


def _from_json(values: list[Any]) -> tuple[list[ParsedVerdict] | None, ValidationError | None]:
    first_error: ValidationError | None = None
    for value in values:
        for attempt in (
            lambda v: [ParsedVerdict(i.verdict, i.reason) for i in StatementVerdicts.model_validate(v).verdicts],
            lambda v: [ParsedVerdict(i.verdict, i.reason) for i in _ITEM_LIST.validate_python(v)],
            lambda v: [ParsedVerdict(b) for b in _VERDICT_LIST.validate_python(v)],
            lambda v: [ParsedVerdict(_VerdictItem.model_validate(v).verdict, _VerdictItem.model_validate(v).reason)],
        ):
            try:
                parsed = attempt(value)
            except ValidationError as exc:
                first_error = first_error or exc
                continue
            if isinstance(value, dict) and "verdicts" not in value and "verdict" not in value:
                continue
            if parsed or value == [] or (isinstance(value, dict) and value.get("verdicts") == []):
                return parsed, None
    return None, first_error


def _from_text(text: str) -> list[ParsedVerdict] | None:
    legacy = _LEGACY.search(text)
    if legacy:
        words = _YES_NO.findall(legacy.group(1))
        if words:
            return [ParsedVerdict(1 if w.lower() == "yes" else 0) for w in words]
    lines = [m for m in (_LINE.match(line) for line in text.splitlines()) if m]
    if lines:
        return [ParsedVerdict(_WORD_VALUE[m.group(1).lower()], m.group(2).strip()) for m in lines]
    return None


def parse_verdicts(
    text: str | None, n_statements: int, *, finish_reason: str | None = None
) -> list[ParsedVerdict] | Unparsed:
    """Read one binary verdict per statement from judge output.

    Args:
        text: The judge's raw output.
        n_statements: How many statements were asked about; any other count is
            ``verdict_count_mismatch``, never a padded or truncated list.
        finish_reason: The backend's finish reason, if known.

    Returns:
        ``n_statements`` verdicts in order, or an :class:`Unparsed` with the reason.
    """
    empty = _classify_empty(text, finish_reason)
    if empty is not None:
        return empty
    assert text is not None
    values, truncated = find_json_values(text)
    verdicts, error = _from_json(values)
    if verdicts is None and not values:
        if looks_like_refusal(text) and _LEGACY.search(text) is None:
            return Unparsed(UnscoredReason.REFUSAL, text.strip()[:300])
        verdicts = _from_text(text)
    if verdicts is None:
        if truncated or finish_reason == "length":
            return Unparsed(UnscoredReason.TRUNCATED_OUTPUT, f"output ends mid-object: …{text[-120:]!r}")
        if error is not None:
            return Unparsed(UnscoredReason.PARSE_FAILURE, _short(error))
        if looks_like_refusal(text):
            return Unparsed(UnscoredReason.REFUSAL, text.strip()[:300])
        return Unparsed(UnscoredReason.PARSE_FAILURE, f"no verdicts found in output: {text.strip()[:200]!r}")
    if len(verdicts) != n_statements:
        return Unparsed(
            UnscoredReason.VERDICT_COUNT_MISMATCH,
            f"{len(verdicts)} verdicts for {n_statements} statements",
        )
    return verdicts
