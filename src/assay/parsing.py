"""Turn judge text into typed values, or into an explicit reason why not.

One module owns extraction (promptfoo issue 2468: judges wrap JSON in prose and code
fences, answer in a legacy text form, refuse, or stop mid-object). Every function returns
either a validated value or an :class:`Unparsed` carrying an
:class:`~assay.UnscoredReason`; nothing here ever guesses a verdict.

What is understood:

- plain JSON; JSON inside ```` ``` ```` / ```` ```json ```` fences; JSON surrounded by prose
  (the first balanced object or array that validates);
- for verdict lists, additionally: ``{"verdicts": [...]}``, Ragas' ``{"statements": [...]}``,
  a single ``{"verdict": ...}`` object, a bare JSON list of verdicts, the legacy form
  ``Final verdict for each statement in order: Yes. No. Yes.``, and free lines such as
  ``Verdict: yes``, ``**Statement 2:** No`` or ``3. Yes - reason``.

Order of precedence for verdicts: verdict-shaped JSON, then the legacy line, then free
lines. A text that both apologises and gives verdicts is parsed; the refusal only counts
when no verdicts were found.

What becomes unscored: empty output (``empty_output``), a refusal (``refusal``), an
object cut off before its end (``truncated_output``), anything that does not validate
(``parse_failure``: a verdict of ``2``, ``-1``, ``"1.0"``, ``1.0``, ``true``, ``null`` or
``"maybe"`` among them, with the path of the bad value in the detail), and a verdict count
different from the statement count (``verdict_count_mismatch``).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from assay._scores import Binary, UnscoredReason
from assay.errors import json_message

__all__ = [
    "ParsedVerdict",
    "StatementVerdicts",
    "Unparsed",
    "align_verdicts",
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
    statement: str = field(default="", compare=False)
    """The statement the judge said this verdict is for, where it said one (a JSON item's ``statement``)."""


class _VerdictItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    statement: str = ""
    reason: str = ""
    verdict: Binary


class StatementVerdicts(BaseModel):
    """The JSON shape asked of a judge that rates several statements in one call."""

    model_config = ConfigDict(extra="ignore")

    verdicts: list[_VerdictItem] = Field(default_factory=list)


_BINARY: TypeAdapter[int] = TypeAdapter(Binary)

# A refusal phrase at the start of a line or sentence (straight or curly apostrophes).
_REFUSAL = re.compile(
    r"(?:^|[.!?:,]\s+)\s*(?:"
    r"i(?:['’]m| am) (?:sorry|unable|not able)"
    r"|i (?:cannot|can['’]t|can not|won['’]t|will not|do not have enough|don['’]t have enough)"
    r"|as an ai\b|i apologi[sz]e|unfortunately,? i\b|sorry,? (?:but )?i\b"
    r"|it(?:['’]s| is) (?:not possible|impossible) to (?:determine|evaluate|assess)"
    r")",
    re.IGNORECASE | re.MULTILINE,
)
_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)


def looks_like_refusal(text: str) -> bool:
    """Whether ``text`` reads as the judge declining to answer."""
    return bool(_REFUSAL.search(text))


def _balanced_spans(text: str) -> Iterator[tuple[int, int, bool]]:
    """Yield (start, end, closed) of each top-level {...} or [...] span, string-aware.

    A span that never closes runs to the end of the text (``closed`` is False) and ends
    the scan: what follows its opening bracket is inside it.
    """
    i = 0
    n = len(text)
    while i < n:
        if text[i] not in "{[":
            i += 1
            continue
        depth = 0
        in_string = False
        escaped = False
        for j in range(i, n):
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
                    yield i, j + 1, True
                    i = j + 1
                    break
        else:
            yield i, n, False
            return


@dataclass(frozen=True)
class _Scan:
    values: list[Any]
    truncated: bool
    json_error: str | None


def _scan(text: str) -> _Scan:
    stripped = text.strip()
    candidates = [stripped, *(m.group(1).strip() for m in _FENCE.finditer(text))]
    # An odd number of fence markers means a fence was opened and never closed.
    truncated = text.count("```") % 2 == 1
    for start, end, closed in _balanced_spans(text):
        candidates.append(text[start:end])
        truncated = truncated or not closed
    values: list[Any] = []
    json_error: str | None = None
    seen: set[str] = set()
    for candidate in candidates:
        if not candidate or candidate in seen:
            continue
        seen.add(candidate)
        try:
            values.append(json.loads(candidate))
        except json.JSONDecodeError as exc:
            if json_error is None and candidate[0] in "{[":
                json_error = f"invalid JSON {candidate[:60]!r}: {json_message(exc)} at char {exc.pos}"
    return _Scan(values, truncated, json_error)


def find_json_values(text: str) -> tuple[list[Any], bool]:
    """All JSON values embedded in ``text``, best candidates first.

    Candidates are the whole text, then each fenced block, then each top-level balanced
    object or array. Returns the decoded values and whether an object, array or fence
    was opened and never closed (a sign that the output was truncated).
    """
    scan = _scan(text)
    return scan.values, scan.truncated


def _describe(exc: ValidationError, where: str = "") -> str:
    """Say which value was wrong and why, e.g. ``verdicts.0.verdict: ... got 2``."""
    problems = []
    for error in exc.errors()[:3]:
        loc = ".".join(str(p) for p in (where, *error["loc"]) if p != "") or "value"
        if error["type"] == "value_error":
            message = str(error.get("ctx", {}).get("error", error["msg"]))
        elif error["type"] == "missing":
            message = error["msg"].lower()
        else:
            message = f"{error['msg']}, got {error['input']!r:.80}"
        problems.append(f"{loc}: {message}")
    return "; ".join(problems)


def _empty(text: str, finish_reason: str | None) -> Unparsed | None:
    """Output with nothing to parse: no text, or a backend that stopped it."""
    if not text.strip():
        if finish_reason == "length":
            return Unparsed(UnscoredReason.TRUNCATED_OUTPUT, "output cut off before any text")
        return Unparsed(UnscoredReason.EMPTY_OUTPUT, "the judge returned no text")
    if finish_reason in ("refusal", "content_filter"):
        return Unparsed(UnscoredReason.REFUSAL, f"the backend reported {finish_reason}: {text[:200]}")
    return None


def _unreadable(text: str, scan: _Scan, finish_reason: str | None, detail: str) -> Unparsed:
    """Why nothing usable was found: truncation, then refusal, then a parse failure."""
    if scan.truncated:
        return Unparsed(UnscoredReason.TRUNCATED_OUTPUT, f"output ends mid-object: …{text[-120:]!r}")
    if finish_reason == "length":
        return Unparsed(UnscoredReason.TRUNCATED_OUTPUT, f"the judge hit its length limit: …{text[-120:]!r}")
    if looks_like_refusal(text):
        return Unparsed(UnscoredReason.REFUSAL, text.strip()[:300])
    if scan.json_error is not None:
        detail = f"{detail}; {scan.json_error}"
    return Unparsed(UnscoredReason.PARSE_FAILURE, detail)


def parse_output(text: str | None, model: type[T], *, finish_reason: str | None = None) -> T | Unparsed:
    """Validate judge output against ``model``, tolerating fences and surrounding prose.

    Args:
        text: The judge's raw output.
        model: The pydantic model the output must satisfy.
        finish_reason: The backend's finish reason, if known (``"length"`` means truncated).

    Returns:
        The validated object, or an :class:`Unparsed` with the reason. When a JSON object
        was found but did not validate, the detail names the offending field.
    """
    text = text or ""
    empty = _empty(text, finish_reason)
    if empty is not None:
        return empty
    scan = _scan(text)
    object_error: ValidationError | None = None
    other_error: ValidationError | None = None
    for value in scan.values:
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            # A JSON object is what the judge was asked for; its error is the one to report.
            if isinstance(value, dict):
                object_error = object_error or exc
            else:
                other_error = other_error or exc
    if object_error is not None:
        return Unparsed(UnscoredReason.PARSE_FAILURE, _describe(object_error))
    detail = _describe(other_error) if other_error is not None else f"no JSON found in output: {text.strip()[:200]!r}"
    return _unreadable(text, scan, finish_reason, detail)


def _read_item(item: Any, where: str) -> ParsedVerdict | str:
    """One verdict from a JSON object or a bare value, or what is wrong with it."""
    try:
        if isinstance(item, dict):
            parsed = _VerdictItem.model_validate(item)
            return ParsedVerdict(parsed.verdict, parsed.reason, parsed.statement)
        return ParsedVerdict(_BINARY.validate_python(item))
    except ValidationError as exc:
        return _describe(exc, where)


def _verdicts_in(value: Any) -> list[ParsedVerdict] | Unparsed | None:
    """The verdicts a decoded JSON value holds; None if it is not verdict-shaped."""
    if isinstance(value, list):
        located = [(f"[{i}]", item) for i, item in enumerate(value)]
    elif isinstance(value, dict):
        key = next((k for k in ("verdicts", "statements") if k in value), None)
        if key is None:
            if "verdict" not in value:
                return None
            located = [("", value)]
        elif not isinstance(value[key], list):
            return Unparsed(UnscoredReason.PARSE_FAILURE, f"{key}: expected a list, got {value[key]!r:.80}")
        else:
            located = [(f"{key}.{i}", item) for i, item in enumerate(value[key])]
    else:
        return None
    read = [_read_item(item, where) for where, item in located]
    problems = [r for r in read if isinstance(r, str)]
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        return Unparsed(UnscoredReason.PARSE_FAILURE, "; ".join(problems[:3]) + more)
    return [r for r in read if isinstance(r, ParsedVerdict)]


def _from_json(values: list[Any]) -> list[ParsedVerdict] | Unparsed | None:
    """The first verdict-shaped value that validates, else the first one's failure."""
    first_failure: Unparsed | None = None
    for value in values:
        found = _verdicts_in(value)
        if isinstance(found, list):
            return found
        first_failure = first_failure or found
    return first_failure


_LEGACY = re.compile(r"final\s+verdicts?\s+for\s+each\s+statement\s+in\s+order\W*?:[\s*_]*", re.IGNORECASE)
# A run of yes/no words, optionally numbered; it stops at the first other word, so a
# "Maybe" in the middle shortens the run (count mismatch) instead of being skipped.
_LEGACY_RUN = re.compile(r"(?:(?:\(?\d+[.):]\s*)?(?:yes|no)\b[\s.,;/|*_]*)+", re.IGNORECASE)
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_LINE = re.compile(
    r"""^[\s>*_#-]*                                  # bullets, quotes, bold, headings
    (?: (?:verdict\s+for\s+)?(?:statement|claim)\s*\#?\s*(?P<num>\d+)(?:\s+verdict)?
      | (?P<item>\d+)[.)]                            # "2." or "2)"
      | verdict )
    [\s*_]*(?:\([^)]*\))?[\s*_]*                     # "**", "(the sky is blue)"
    [:=\-–—]?[\s*_]*
    (?P<value>yes|no|not\ supported|unsupported|supported|[01])
    (?=[\s,;:!)*_]|\.(?!\d)|$)                       # a whole word: "1.0" and "10" are not "1"
    [\s.,;:!*_\-–—]*(?P<reason>.*)$""",
    re.IGNORECASE | re.VERBOSE,
)
_VERDICT_LABEL = re.compile(r"^[\s>*_#-]*verdict[\s*_]*[:=][\s*_]*\S", re.IGNORECASE)
_WORD_VALUE = {
    "yes": 1,
    "no": 0,
    "1": 1,
    "0": 0,
    "supported": 1,
    "unsupported": 0,
    "not supported": 0,
}


def _from_legacy(text: str) -> list[ParsedVerdict] | Unparsed | None:
    header = _LEGACY.search(text)
    if header is None:
        return None
    run = _LEGACY_RUN.match(text, header.end())
    if run is None:
        after = text[header.end() :].strip()[:80]
        return Unparsed(UnscoredReason.PARSE_FAILURE, f"legacy verdict line has no yes/no: {after!r}")
    return [ParsedVerdict(1 if w.lower() == "yes" else 0) for w in _YES_NO.findall(run.group(0))]


def _from_lines(text: str) -> list[ParsedVerdict] | Unparsed | None:
    verdicts: list[ParsedVerdict] = []
    numbers: list[int] = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None:
            if _VERDICT_LABEL.match(line):
                return Unparsed(
                    UnscoredReason.PARSE_FAILURE,
                    f"verdict line {line.strip()[:80]!r} is not yes/no or 1/0",
                )
            continue
        verdicts.append(ParsedVerdict(_WORD_VALUE[m["value"].lower()], m["reason"].strip()))
        if (number := m["num"] or m["item"]) is not None:
            numbers.append(int(number))
    # Numbered lines must run 1, 2, 3...: a gap means a verdict was not yes/no.
    if numbers and numbers != list(range(1, len(numbers) + 1)):
        return Unparsed(
            UnscoredReason.PARSE_FAILURE,
            f"verdict lines are numbered {numbers}, expected 1 to {len(numbers)} in order",
        )
    return verdicts or None


def parse_verdicts(
    text: str | None,
    n_statements: int,
    *,
    finish_reason: str | None = None,
    statements: Sequence[str] | None = None,
) -> list[ParsedVerdict] | Unparsed:
    """Read one binary verdict per statement from judge output.

    Args:
        text: The judge's raw output.
        n_statements: How many statements were asked about; any other count is
            ``verdict_count_mismatch`` (``truncated_output`` if the judge hit its length
            limit), never a padded or truncated list.
        finish_reason: The backend's finish reason, if known.
        statements: The statements asked about, in order. Where the judge names the
            statement of each verdict (a JSON item's ``statement``), the verdicts are
            matched to them by what they name, not by position (:func:`align_verdicts`).

    Returns:
        ``n_statements`` verdicts in the order of the statements asked, or an
        :class:`Unparsed` with the reason.
    """
    text = text or ""
    empty = _empty(text, finish_reason)
    if empty is not None:
        return empty
    scan = _scan(text)
    found = _from_json(scan.values)
    if found is None:
        found = _from_legacy(text)
    if found is None:
        found = _from_lines(text)
    if found is None:
        return _unreadable(text, scan, finish_reason, f"no verdicts found in output: {text.strip()[:200]!r}")
    if isinstance(found, Unparsed):
        return found
    if len(found) != n_statements:
        detail = f"{len(found)} verdicts for {n_statements} statements"
        if finish_reason == "length":
            return Unparsed(UnscoredReason.TRUNCATED_OUTPUT, f"{detail}; the judge hit its length limit")
        return Unparsed(UnscoredReason.VERDICT_COUNT_MISMATCH, detail)
    return found if statements is None else align_verdicts(found, statements)


_MATCH = 0.5
"""Least likeness (Dice over the words) for a named statement to be taken as one of those asked."""
_ENUMERATOR = re.compile(r"^\W*(?:(?:statement|claim)\s*#?\s*)?\(?\d+[.):]?\s+", re.IGNORECASE)


def _statement_words(text: str) -> frozenset[str]:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return frozenset(re.findall(r"\w+", _ENUMERATOR.sub("", folded.strip())))


def _likeness(named: frozenset[str], asked: frozenset[str]) -> float:
    if not named or not asked:
        return 0.0
    return 2 * len(named & asked) / (len(named) + len(asked))


def align_verdicts(verdicts: Sequence[ParsedVerdict], statements: Sequence[str]) -> list[ParsedVerdict] | Unparsed:
    """The verdicts in the order of ``statements``, matched by the statement each names.

    A judge asked about several statements at once may answer them out of order, skip one
    and repeat another, or fill the list with placeholders; taken by position, a verdict
    would then be kept as another statement's, its reason with it. So where the verdicts
    name their statements, each is matched to the statement asked that it is most like
    (the same words, up to case, punctuation, a "1." or "Statement 1:" before it, and a
    judge's light rewording: at least half the words in common). Verdicts in order stay as
    they are; verdicts out of order are put in order; a verdict that names no statement
    asked, or two verdicts that name one, are a ``parse_failure`` that says which, never a
    guess. Verdicts that name nothing (numbered lines, bare values) are taken in order.
    """
    named = [_statement_words(v.statement) for v in verdicts]
    if not any(named) or len(verdicts) != len(statements):
        return list(verdicts)
    asked = [_statement_words(s) for s in statements]
    like = [[_likeness(n, a) for a in asked] if n else [] for n in named]
    if all(not row or (row[i] >= _MATCH and row[i] >= max(row)) for i, row in enumerate(like)):
        return list(verdicts)
    # Out of order: each verdict to the statement it is most like, one to one, the likest pairs first.
    pairs = sorted(
        ((score, i, j) for i, row in enumerate(like) for j, score in enumerate(row) if score >= _MATCH),
        key=lambda pair: -pair[0],
    )
    placed: dict[int, int] = {}
    for _, i, j in pairs:
        if i not in placed and j not in placed.values():
            placed[i] = j
    for i, verdict in enumerate(verdicts):
        if i not in placed:
            said = verdict.statement.strip()[:80]
            why = (
                f"verdict {i + 1} names no statement (the others do), so its place is unknown"
                if not named[i]
                else f"verdict {i + 1} is for {said!r}, which is not one of the {len(statements)} statements asked"
                if not any(score >= _MATCH for score in like[i])
                else f"verdict {i + 1} ({said!r}) names a statement another verdict already answers"
            )
            return Unparsed(UnscoredReason.PARSE_FAILURE, why)
    ordered: list[ParsedVerdict | None] = [None] * len(statements)
    for i, j in placed.items():
        ordered[j] = verdicts[i]
    return [v for v in ordered if v is not None]
