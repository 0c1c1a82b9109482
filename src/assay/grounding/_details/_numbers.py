"""Numbers and dates in text, and whether the evidence holds each.

Digits, number words, scales, percentages, ISO and slash dates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from assay.grounding._details._lexicon import (
    _CURRENCY_RE,
    _ISO_DATE_RE,
    _MONTH_NAMES,
    _MONTHS,
    _NEAR_NUMBER_AFTER,
    _NEAR_NUMBER_BEFORE,
    _NEXT_WORD_RE,
    _NUMBER_RE,
    _NUMBER_VOCABULARY,
    _ORDINAL_WORDS,
    _PERCENT_AFTER,
    _SCALES,
    _SIGN_RE,
    _SLASH_DATE_RE,
    _TENS_WORDS,
    _UNITS_WORDS,
    _YEAR_SPAN_RE,
)
from assay.grounding._details._tokens import _NOT_CONTENT, _short


@dataclass(frozen=True)
class _Number:
    """One number or date part found in a text."""

    surface: str
    value: float
    raw: float
    scaled: bool
    unit: str = ""
    kind: str = "number"  # "number" or "month"
    may_be_month: bool = False

    @property
    def yearish(self) -> bool:
        return self.kind == "number" and not self.scaled and not self.unit and 1000 <= self.value <= 2100

    def display(self) -> str:
        if self.unit.isalpha() and not self.surface.lower().endswith(self.unit):
            return f"{self.surface} {self.unit}"
        return self.surface


def _to_float(digits: str) -> float:
    return float(digits.replace(",", ""))


def _next_unit(text: str, end: int) -> str:
    match = _NEXT_WORD_RE.match(text, end)
    if match is None:
        return ""
    word = match.group(1).lower()
    if word in _NOT_CONTENT or word == "per":
        return ""
    return word


def _blank(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _word_number(words: list[str]) -> tuple[float, float, bool] | None:
    """(value, raw, scaled) of a run of number words, or None for a run that is no number."""
    if all(w in _SCALES or w == "hundred" for w in words) or words == ["one"]:
        return None
    total, current = 0.0, 0.0
    last_scale = 1.0
    for word in words:
        if word in _UNITS_WORDS:
            current += _UNITS_WORDS[word]
        elif word in _TENS_WORDS:
            current += _TENS_WORDS[word]
        elif word in _ORDINAL_WORDS:
            current += _ORDINAL_WORDS[word]
        elif word == "hundred":
            current = max(current, 1.0) * 100
        elif word == "dozen":
            current = max(current, 1.0) * 12
        else:
            last_scale = _SCALES[word]
            total += max(current, 1.0) * last_scale
            current = 0.0
    value = total + current
    scaled = words[-1] in _SCALES
    return value, (value / last_scale if scaled else value), scaled


def _numbers(text: str, words: Sequence[tuple[str, int, int]]) -> tuple[_Number, ...]:
    """Every number and date part of ``text`` (rules in the module docstring).

    ``words`` are the text's word tokens as (lower case, start, end): number words and
    month names are read from them rather than searched for again.
    """
    found: list[_Number] = []
    masked: list[tuple[int, int]] = []
    for match in _ISO_DATE_RE.finditer(text):
        year, month, day = (int(g) for g in match.groups())
        if 1 <= month <= 12 and 1 <= day <= 31:
            surface = match.group(0)
            found.append(_Number(surface, year, year, False))
            found.append(_Number(surface, month, month, False, kind="month"))
            found.append(_Number(surface, day, day, False))
            masked.append(match.span())
    for match in _SLASH_DATE_RE.finditer(text):
        a, b, year = (int(g) for g in match.groups())
        surface = match.group(0)
        found.append(_Number(surface, a, a, False, may_be_month=a <= 12))
        found.append(_Number(surface, b, b, False, may_be_month=b <= 12))
        found.append(_Number(surface, year, year, False))
        masked.append(match.span())
    rest = _blank(text, masked) if masked else text
    for match in _NUMBER_RE.finditer(rest):
        start = match.start()
        before = rest[max(0, start - 3) : start]
        if before[-1:].isalnum() or before[-1:] in (".", "_") or (before[-1:] == "-" and before[-2:-1].isalpha()):
            continue  # glued to a word: A380, COVID-19, v2.5
        raw = _to_float(match.group("num"))
        value = raw
        suffix = (match.group("suf") or "").lower()
        span_start = _YEAR_SPAN_RE.search(rest, max(0, start - 5), start)
        if span_start is not None and len(match.group("num")) == 2 and not suffix:
            raw = value = float(span_start.group(1)) * 100 + raw  # "2018-19": the second year is 2019
            found.append(_Number(rest[span_start.start() : match.end()], value, raw, False))
            continue
        unit = ""
        if suffix == "k":
            value *= 1e3
        elif suffix in ("bn", "b"):
            value *= 1e9
        elif suffix and suffix not in ("st", "nd", "rd", "th", "s"):
            unit = suffix
        scale = (match.group("scale") or "").lower()
        if scale:
            value *= _SCALES[scale]
        scaled = value != raw
        currency = _CURRENCY_RE.search(before)
        surface = match.group(0).strip()
        sign = _SIGN_RE.search(rest, max(0, start - 7), start)
        if sign is not None:  # "-20 °C" is not "20 °C"; "10-20" is a range, not a sign
            value, raw, surface = -value, -raw, "-" + surface
        if match.group("pct"):
            unit = "%"
        elif currency is not None:
            unit = currency.group(0)
            surface = unit + surface
        elif not unit and not (1000 <= value <= 2100 and value == int(value) and not scaled):
            unit = _next_unit(rest, match.end())  # years have no unit: "the 2017 film"
        found.append(_Number(surface, value, raw, scaled, unit=unit))
    found.extend(_spelled_numbers(rest, words))
    return tuple(found)


def _gap(between: str) -> bool:
    """Words separated by spaces only (no line break, no punctuation) may form one number."""
    return between.isspace() and "\n" not in between


def _number_parts(low: str) -> list[str]:
    """The leading number words of a token ("twenty-five" -> both, "twenty-year-old" -> "twenty")."""
    parts: list[str] = []
    for part in low.split("-"):
        if part not in _NUMBER_VOCABULARY:
            break
        parts.append(part)
    return parts


def _spelled_numbers(text: str, words: Sequence[tuple[str, int, int]]) -> list[_Number]:
    """Numbers written in words and month names, from the word tokens."""
    found: list[_Number] = []
    i = 0
    while i < len(words):
        low, start, end = words[i]
        if low not in _MONTHS and low.partition("-")[0] not in _NUMBER_VOCABULARY:
            i += 1
            continue
        if low in _MONTHS:
            month = _MONTHS[low]
            near = _NEAR_NUMBER_AFTER.match(text, end) is not None or (
                _NEAR_NUMBER_BEFORE.search(text[max(0, start - 16) : start]) is not None
            )
            piece = text[start:end]
            if near or (piece[0].isupper() and len(piece) > 3 and low not in ("may", "sept")):
                found.append(_Number(_MONTH_NAMES[month - 1], month, month, False, kind="month"))
            i += 1
            continue
        parts = _number_parts(low)
        if not parts:
            i += 1
            continue
        j, last = i + 1, end
        whole = len(parts) == low.count("-") + 1  # "twenty-year-old" ends the run
        while whole and j < len(words):
            following, s2, e2 = words[j]
            after_scale = parts[-1] == "hundred" or parts[-1] in _SCALES
            if following == "and" and after_scale and j + 1 < len(words) and _gap(text[last:s2]):
                after = words[j + 1]
                if _number_parts(after[0]) and _gap(text[e2 : after[1]]):
                    j, last = j + 1, e2
                    continue
            more = _number_parts(following)
            if not more or not _gap(text[last:s2]):
                break
            parts.extend(more)
            whole = len(more) == following.count("-") + 1
            last = e2
            j += 1
        i = j
        parsed = _word_number(parts)
        if parsed is None:
            continue
        value, raw, scaled = parsed
        pct = _PERCENT_AFTER.match(text, last)
        unit = "%" if pct else _next_unit(text, last)
        found.append(_Number(text[start:last], value, raw, scaled, unit=unit))
    return found


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _number_present(number: _Number, evidence: Sequence[_Number]) -> bool:
    if number.kind == "month":
        return any(e.value == number.value and (e.kind == "month" or e.may_be_month) for e in evidence)
    for other in evidence:
        if other.kind == "month":
            if number.may_be_month and other.value == number.value:
                return True
            continue
        if _same(number.value, other.value):
            return True
        if _same(number.raw, other.raw) and not (number.scaled and other.scaled):
            return True
    return False


def _alternatives(number: _Number, evidence: Sequence[_Number]) -> list[str]:
    """What the evidence says instead: numbers with the same unit, years for a year, months for a month."""
    if number.kind == "month":
        pool = [e for e in evidence if e.kind == "month"]
    elif number.unit:
        pool = [e for e in evidence if e.kind == "number" and e.unit == number.unit]
    elif number.yearish:
        pool = [e for e in evidence if e.yearish]
    else:
        pool = []
    seen: list[str] = []
    for e in pool:
        shown = _short(e.display(), 30)
        if shown not in seen:
            seen.append(shown)
    return seen[:3]
