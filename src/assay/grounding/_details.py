"""Deterministic detail checks between a statement and its evidence, and the calibrated combiner.

The offline judge's typical mistake is to call a statement supported when one detail is
wrong: a changed number, date, name or place, a dropped or added negation, an antonym
("increased" for "decreased"), a quantifier ("all" for "some"). :func:`detail_features`
looks for exactly those with plain string rules (no model, a fraction of a millisecond for
a sentence against a paragraph). Three of them veto a "supported" P in the verifier
(:data:`assay.grounding._verify.VETO_CHECKS`). :class:`DetailCombiner` is the logistic
regression over P and every feature that ``benchmarks/fit_detail_combiner.py`` fits and
writes; it was measured and not made the decision (``docs/design/judging.md``), so no
combiner ships with the package.

The features (:data:`DETAIL_FEATURES`, the order of :meth:`DetailFeatures.vector`):

==========================  ==========  ==================================================
name                        range       meaning
==========================  ==========  ==================================================
``missing_numbers``         0, 1, 2...  distinct numbers and dates of the statement that the
                                        evidence does not contain (see below)
``missing_entities``        0, 1, 2...  distinct names (capitalised runs, acronyms, quoted
                                        titles) of the statement of which no part is in the
                                        evidence
``negation_mismatches``     0 to the    statement sentences with a word negated on one side
                            sentences   and not on the other, where its contexts agree
``antonym_mismatches``      0, 1, 2...  antonym pairs with one side in the statement and the
                                        other nearby in the evidence
``quantifier_mismatches``   0 to the    statement sentences with a quantifier (all / some /
                            sentences   none) whose class no nearby evidence quantifier has
``uncovered_share``         [0, 1]      share of the statement's distinct content words that
                                        are not in the evidence (0 without content words)
``longest_uncovered_run``   0, 1, 2...  longest run of consecutive statement content words
                                        (stopwords skipped) that are not in the evidence
==========================  ==========  ==================================================

How each check reads text (case-insensitive unless said otherwise):

- **Numbers and dates.** Digits (``1,000`` = ``1000``, ``3.5``, ``1990s`` = 1990,
  ``3rd`` = 3, ``5k`` = 5,000, ``2bn`` = 2e9, ``2018-19`` = 2018 and 2019), number words
  (``three`` = 3, ``twenty-five`` = 25, ``two hundred thousand`` = 200,000, ``third`` = 3;
  a lone "one" is skipped, it is mostly a pronoun), scale words (``5 million``), ``%`` /
  ``percent`` / ``per cent``, currency signs, month names (capitalised, or any case next
  to a number; "May" only next to a number), ISO dates (``2020-03-05``: year, month, day)
  and slash dates (either of the first two parts may be the month). Digits glued to a
  word (``A380``, ``COVID-19``) are names, not numbers. A statement number is in the
  evidence when the evidence has the same value, or the same number before its scale
  word when one side has no scale word ("5" matches "5 million"; "5 million" does not
  match "5 billion"). Units and currencies are shown in :meth:`DetailFeatures.problems`
  but do not decide a match. Repeated values count once.
- **Names.** Runs of capitalised words (joined by "of", "the", "de", "van", "von"...;
  leading stopwords dropped), all-caps acronyms (``NASA``, ``U.S.``) and quoted titles
  (quoted text starting with a capital or a digit; a quoted lower-case phrase is a
  quotation, not a name). A run that starts a sentence and is one word long counts only
  if the word is also written capitalised mid-sentence somewhere in the statement or
  evidence, so "Researchers found" is not a name (a missing sentence-initial name still
  shows in the coverage). A name is in the evidence when any of its distinctive words is
  (generic words such as "University", "New", "Mr" are not distinctive), so "Eiffel"
  matches "Gustave Eiffel"; a hyphenated word when one of its parts is ("Sims-based");
  a word of five letters or more also matches an evidence word differing only in its last
  letters (at most three more or fewer, all but one letter of the shorter shared:
  "Libyan" and "Libya"). An acronym also matches the initials of a capitalised run ("UN"
  and "United Nations"); a quoted title matches when its text or all its content words
  are in the evidence. Month names are left to the number check. A statement that is
  mostly capitalised (a headline) has no names: case says nothing there.
- **Negation, antonyms, quantifiers** compare *local contexts*: a word's context is the
  set of content words within six tokens of it in its sentence. An evidence occurrence
  of a word is *nearby* when its context shares a content word with the statement
  word's context. A statement sentence found word for word in the evidence has no
  mismatch. Local contexts rather than whole sentences, because summaries merge several
  evidence sentences into one.

  - A content word is *negated* when it is the first content word after a negation cue
    (not, no, never, n't, cannot, none, neither, nor, without, nobody, nothing, nowhere,
    unable, fail(s/ed/ing) to) within three tokens, in the same clause (clauses end at
    , ; : and "but", "although", "however", "while", "whereas"). A statement sentence
    mismatches when one of its negated words occurs in the evidence, nearby, and only
    un-negated; or when one of its un-negated words occurs in the evidence with two
    shared context words (stricter: evidence negates many things), and only negated.
  - An antonym pair (:data:`ANTONYM_PAIRS`, exact word forms) mismatches when the
    statement uses a form of one side and none of the other in that sentence, the
    evidence has a form of the other side nearby and no form of the same side nearby,
    with the same polarity ("did not increase" vs "decreased" is not flagged).
  - Quantifier classes: universal (all, every, always, everyone...), partial (some, many,
    few, most, several, often...), none (never, none, nobody, nothing). A statement
    quantifier mismatches when there are quantifiers nearby in the evidence and none of
    its class; a partial one is satisfied by a universal one ("some" of "all" holds).
    "the most" and "at all" are not quantifiers.
- **Content words** are word tokens that are not stopwords (:data:`STOPWORDS`), number
  words, month names or single letters, crudely lemmatised on both sides the same way
  (lower case, possessive and plural -s removed, -ing/-ed and a final -e removed, about 60
  common irregular forms mapped to their base: "won" to "win"). An acronym counts as
  covered when it is the initials of a capitalised run of the evidence.

Check a statement against the whole evidence it was judged on (every chunk), not against
one chunk: what one chunk lacks another may hold.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from assay.errors import ConfigError

__all__ = [
    "ANTONYM_PAIRS",
    "COMBINER_SCHEMA",
    "DETAIL_FEATURES",
    "FEATURES_VERSION",
    "LOGIT_P",
    "STOPWORDS",
    "DetailCombiner",
    "DetailFeatures",
    "detail_features",
    "load_detail_combiner",
]


def _split(words: str) -> list[str]:
    """The words of a literal list written as one string (long word lists stay readable)."""
    return words.split()


DETAIL_FEATURES: tuple[str, ...] = (
    "missing_numbers",
    "missing_entities",
    "negation_mismatches",
    "antonym_mismatches",
    "quantifier_mismatches",
    "uncovered_share",
    "longest_uncovered_run",
)
"""Names of the features, in the order of :meth:`DetailFeatures.vector`."""

STOPWORDS: frozenset[str] = frozenset(
    _split("""a about above after again against all almost also although always am among an and another any
    anyone anything are around as at be became because become been before being below between both but
    by can cannot could did do does doing done down during each either else ever every everyone
    everything few for from further had has have having he her here hers herself him himself his how
    however i if in into is it its itself just least less many may me might more most much must my
    myself neither never no nobody none nor not nothing now of off often on once one only or other
    our ours ourselves out over own per quite rather same several shall she should since so some
    someone something still such than that the their theirs them themselves then there these they
    this those though through thus to too under until up upon us usually very was we were what when
    where whereas whether which while who whom whose why will with within without would yet you your
    yours yourself yourselves s t don didn doesn isn wasn weren aren hasn haven hadn wouldn couldn
    shouldn can't won't i'm it's he's she's that's there's they're we're you're i've we've they've
    i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll let's like also mostly
    sometimes occasionally usually whole entire""")
)
"""Function words left out of the content-word coverage (with every negation cue and quantifier)."""

ANTONYM_PAIRS: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(a.split()), frozenset(b.split()))
    for a, b in (
        (
            "increase increased increases increasing rise rises rose risen rising grow grows grew grown growing",
            "decrease decreased decreases decreasing fall falls fell fallen falling decline declined declines "
            "declining drop drops dropped dropping shrink shrinks shrank shrunk shrinking",
        ),
        ("higher highest", "lower lowest"),
        ("high", "low"),
        ("before", "after"),
        ("earlier earliest early", "later latest late"),
        ("win wins won winning winner victory", "lose loses lost losing loser"),
        ("first", "last"),
        ("north northern northward", "south southern southward"),
        ("east eastern eastward", "west western westward"),
        ("larger largest bigger biggest greater greatest", "smaller smallest lesser least"),
        ("large big", "small little"),
        ("more", "less fewer"),
        ("above", "below"),
        ("maximum max", "minimum min"),
        ("open opens opened opening", "close closes closed closing"),
        ("begin begins began begun beginning start starts started", "end ends ended ending finish finished"),
        ("accept accepts accepted", "reject rejects rejected"),
        ("approve approves approved approval", "deny denies denied disapprove disapproved"),
        ("allow allows allowed permitted", "ban bans banned prohibit prohibited forbid forbidden"),
        ("include includes included including", "exclude excludes excluded excluding"),
        ("support supports supported", "oppose opposes opposed"),
        ("agree agrees agreed", "disagree disagrees disagreed"),
        ("positive", "negative"),
        ("true", "false"),
        ("success successful succeeded", "failure unsuccessful"),
        ("profit profits", "loss losses"),
        ("buy buys bought buying", "sell sells sold selling"),
        ("import imports imported", "export exports exported"),
        ("arrive arrives arrived arrival", "depart departs departed departure"),
        ("inside internal", "outside external"),
        ("male men man boy boys", "female women woman girl girls"),
        ("husband", "wife"),
        ("son sons", "daughter daughters"),
        ("father", "mother"),
        ("brother brothers", "sister sisters"),
        ("king", "queen"),
        ("older oldest", "younger youngest"),
        ("longer longest long", "shorter shortest short"),
        ("better best good", "worse worst bad"),
        ("rich wealthy", "poor"),
        ("hot warm", "cold cool"),
        ("easy easier easiest", "difficult hard harder hardest"),
        ("cheap cheaper cheapest", "expensive"),
        ("fast faster fastest quick", "slow slower slowest"),
        ("strong stronger strongest", "weak weaker weakest"),
        ("majority", "minority"),
        ("public", "private"),
        ("legal", "illegal"),
        ("present", "absent"),
        ("full", "empty"),
        ("top", "bottom"),
        ("upper", "lower"),
        ("love loves loved", "hate hates hated"),
        ("alive", "dead"),
        ("entered enter", "left leave"),
        ("morning", "evening"),
        ("day", "night"),
    )
)
"""Curated antonym pairs: the exact (lower-case) word forms of each side."""

_ANTONYM_FORMS = frozenset(w for a, b in ANTONYM_PAIRS for w in a | b)
_ANTONYM_INDEX: Mapping[str, tuple[int, ...]] = {
    w: tuple(i for i, (a, b) in enumerate(ANTONYM_PAIRS) if w in a | b) for w in _ANTONYM_FORMS
}

_QUANTIFIERS: Mapping[str, str] = {
    **dict.fromkeys(
        _split("all every always everyone everybody everything each entire entirely whole completely"), "universal"
    ),
    **dict.fromkeys(
        _split("some many few most several sometimes often usually mostly partly partially occasionally majority"),
        "partial",
    ),
    **dict.fromkeys(_split("never none nobody nothing"), "none"),
}

_NEGATIONS = frozenset(_split("not no never none neither nor without nobody nothing nowhere cannot unable"))
_FAIL = frozenset(_split("fail fails failed failing"))
_CLAUSE_WORDS = frozenset(_split("but although however while whereas"))
_NEGATION_WINDOW = 3

_CONNECTORS = frozenset(_split("of the de da del der di du van von la le y"))
_INITIALISM_CONNECTORS = _CONNECTORS | {"and", "for"}
# Conversational words that answer or react, not claim: "Yes, refunds are available" claims
# only that refunds are available.
_INTERJECTIONS = frozenset(_split("yes yeah yep yup ok okay oh ah wow hmm indeed"))
# Units named after people: "8 degrees Celsius" is "8°C", a quantity (the number check
# compares it), not a name that the evidence must spell out.
_UNIT_NAMES = frozenset(_split("celsius fahrenheit kelvin"))

_GENERIC_NAME_WORDS = frozenset(
    _split("""mr mrs ms dr prof sir st saint lord lady president king queen prince princess general captain
    new old north south east west northern southern eastern western central upper lower great greater
    university college school institute academy museum library hospital church cathedral company
    corporation corp inc ltd co group bank association society council committee department ministry
    party club team league federation union national international royal united state states city
    county river lake mount mountain island islands park street road avenue square bridge station
    airport hotel centre center house hall award awards prize cup championship festival film series
    show day""")
)
_ABBREVIATIONS = frozenset(_split("mr mrs ms dr prof sr jr st vs etc inc ltd co corp no fig al gen col lt sgt mt"))

_MONTHS: Mapping[str, int] = {
    **{m: i for i, m in enumerate(_split("january february march april may june july"), 1)},
    **{m: i for i, m in enumerate(_split("august september october november december"), 8)},
    **{m: i for i, m in enumerate(_split("jan feb mar apr"), 1)},
    **{m: i for i, m in enumerate(_split("jun jul aug sep oct nov dec"), 6)},
    "sept": 9,
}
_MONTH_NAMES = tuple(_split("January February March April May June July August September October November December"))

_UNITS_WORDS: Mapping[str, int] = {
    w: i
    for i, w in enumerate(
        _split(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
            "sixteen seventeen eighteen nineteen"
        )
    )
}
_TENS_WORDS: Mapping[str, int] = {
    w: 10 * i for i, w in enumerate(_split("twenty thirty forty fifty sixty seventy eighty ninety"), 2)
}
_ORDINAL_WORDS: Mapping[str, int] = {
    w: i for i, w in enumerate(_split("third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth"), 3)
}
_SCALES: Mapping[str, float] = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_NUMBER_VOCABULARY = frozenset([*_UNITS_WORDS, *_TENS_WORDS, *_ORDINAL_WORDS, *_SCALES, "hundred", "dozen"])

_ISO_DATE_RE = re.compile(r"(?<![\w.])(\d{4})-(\d{1,2})-(\d{1,2})(?![\w])")
_SLASH_DATE_RE = re.compile(r"(?<![\w./])(\d{1,2})/(\d{1,2})/(\d{2}|\d{4})(?![\w/])")
_NUMBER_RE = re.compile(
    r"""
    (?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)
    (?!\d)
    (?P<suf>[^\W\d_]+)?
    (?:[ \t\xa0]*(?P<pct>%|percent\b|per[ \t]+cent\b))?
    (?:[ \t\xa0]*(?P<scale>thousand|million|billion|trillion)\b)?
    """,
    re.X | re.I,
)
_NEXT_WORD_RE = re.compile(r"[ \t\xa0]*([^\W\d_]{1,12})\b")
_CURRENCY_RE = re.compile(r"(?:US\$|[$€£¥])\s?$")
_PERCENT_AFTER = re.compile(r"[ \t\xa0]*(?:%|percent\b|per[ \t]+cent\b)", re.I)
_NEAR_NUMBER_AFTER = re.compile(r"\.?,?[ \t\xa0]+\d")
_NEAR_NUMBER_BEFORE = re.compile(r"\d(?:st|nd|rd|th)?,?[ \t\xa0]+(?:of[ \t\xa0]+)?$", re.I)

_TOKEN_RE = re.compile(
    r"(?P<acr>(?:[A-Za-z]\.){2,})"
    r"|(?P<word>[^\W\d_][\w]*(?:[-'’]\w+)*)"
    r"|(?P<num>\d[\d.,]*[^\W\d_]*)"
    r"|(?P<end>[.!?]+|\n)"
    r"|(?P<clause>[,;:()\[\]—–]|\s-\s)"
)
_QUOTE_RE = re.compile(r"[\"“”]([A-Z0-9][^\"“”\n]{1,79})[\"“”]")
# A minus sign glued to a number, not after a digit or letter (ranges, codes), or the word "minus".
_SIGN_RE = re.compile(r"(?:(?<![\w.,])[-−]|\bminus[ \t\xa0]+)$", re.I)
_YEAR_SPAN_RE = re.compile(r"\b(\d{2})\d{2}[-–/]$")


# ---------------------------------------------------------------------------- numbers


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


# ---------------------------------------------------------------------------- tokens


class _Token(NamedTuple):
    text: str  # as written
    low: str  # lower case, possessive removed
    lemma: str  # crude lemma ("" for stopwords and non-words)
    negated: bool
    capitalised: bool
    sentence_start: bool


_new_token = tuple.__new__  # builds a _Token without NamedTuple's Python-level __new__ (the hot loop)


class _Sentence(NamedTuple):
    tokens: tuple[_Token, ...]
    lows: frozenset[str]  # every lower-case word


@dataclass(frozen=True)
class _Text:
    """A text read once: sentences of word tokens, word sets, numbers, capitalised words."""

    text: str
    sentences: tuple[_Sentence, ...]
    word_set: frozenset[str]
    lemma_set: frozenset[str]
    capitalised_mid: frozenset[str]  # lower-case words written capitalised mid-sentence
    numbers: tuple[_Number, ...]
    joined: str  # " w1 w2 ... " for verbatim search
    by_lemma: Mapping[str, list[tuple[int, int]]]  # content lemma -> (sentence, token) positions
    by_low: Mapping[str, list[tuple[int, int]]]  # antonym or quantifier word -> positions
    contexts: dict[tuple[int, int], frozenset[str]] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def quantifiers(self) -> list[tuple[int, int]]:
        """Positions of every quantifier word."""
        return sorted(p for w, ps in self.by_low.items() if w in _QUANTIFIERS for p in ps)

    @cached_property
    def lowered(self) -> str:
        """The text in lower case, runs of white space as one space."""
        return " ".join(self.text.lower().split())

    @cached_property
    def prefixes(self) -> dict[str, list[str]]:
        """First five letters -> the words of five letters or more."""
        found: dict[str, list[str]] = {}
        for w in self.word_set:
            if len(w) >= 5:
                found.setdefault(w[:5], []).append(w)
        return found

    @cached_property
    def initialisms(self) -> frozenset[str]:
        """Initials of every span of a capitalised run, with and without its connectors."""
        found: set[str] = set()
        for sentence in self.sentences:
            for run in _capitalised_runs(sentence.tokens, _INITIALISM_CONNECTORS):
                run = run[:12]
                for i, first in enumerate(run):
                    for j in range(i + 1, len(run)):
                        if not (first.capitalised and run[j].capitalised):
                            continue
                        span = run[i : j + 1]
                        found.add("".join(t.low[0] for t in span if t.low not in _INITIALISM_CONNECTORS))
                        found.add("".join(t.low[0] for t in span))
        return frozenset(found)

    def context(self, position: tuple[int, int]) -> frozenset[str]:
        """The local context (:func:`_around`) of the token at ``(sentence, token)``, computed once."""
        found = self.contexts.get(position)
        if found is None:
            found = self.contexts[position] = _around(self.sentences[position[0]].tokens, position[1])
        return found


_IRREGULAR: Mapping[str, str] = {
    form: base
    for entry in _split(
        """win:won lose:lost go:went,gone make:made take:took,taken give:gave,given find:found say:said
    tell:told come:came begin:began,begun know:knew,known see:saw,seen think:thought bring:brought
    buy:bought sell:sold hold:held leave:left lead:led build:built pay:paid meet:met run:ran
    write:wrote,written speak:spoke,spoken become:became get:got,gotten grow:grew,grown rise:rose,risen
    fall:fell,fallen keep:kept feel:felt send:sent spend:spent choose:chose,chosen drive:drove,driven
    eat:ate,eaten fight:fought teach:taught catch:caught stand:stood understand:understood hear:heard
    mean:meant sing:sang,sung draw:drew,drawn fly:flew,flown break:broke,broken steal:stole,stolen
    wear:wore,worn bear:bore,born shoot:shot sit:sat lay:laid lie:lain forget:forgot,forgotten
    child:children man:men woman:women person:people foot:feet tooth:teeth mouse:mice"""
    )
    for base, forms in [entry.split(":")]
    for form in forms.split(",")
}
"""Common irregular forms and their base ("won" -> "win", "people" -> "person")."""


@lru_cache(maxsize=65536)
def _lemma(word: str) -> str:
    """Crude lemma: lower case, possessive, plural -s, -ing/-ed and a final -e removed; common irregular forms."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.strip("'")
    if w in _IRREGULAR:
        w = _IRREGULAR[w]
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix, shortest in (("ing", 3), ("ed", 2)):
        if len(w) - len(suffix) >= shortest and w.endswith(suffix):
            w = w[: -len(suffix)]
            if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]  # "stopped" -> "stop"
            break
    if len(w) > 2 and w.endswith("e"):
        w = w[:-1]  # "use" and "used" -> "us", "increase" and "increased" -> "increas"
    return w


def _low(word: str) -> str:
    w = word.lower().replace("’", "'")
    return w[:-2] if w.endswith("'s") else w


_NOT_CONTENT = frozenset(
    [*STOPWORDS, *_NEGATIONS, *_QUANTIFIERS, *_UNITS_WORDS, *_TENS_WORDS, *_ORDINAL_WORDS, *_SCALES, *_MONTHS]
) | {"hundred", "dozen", "percent", "cent"} | _INTERJECTIONS


def _content(low: str) -> bool:
    return len(low) > 1 and low not in _NOT_CONTENT and not any(part in _NOT_CONTENT for part in low.split("-"))


@lru_cache(maxsize=65536)
def _word(piece: str, acronym: bool) -> tuple[str, str, bool, bool]:
    """What a word token is: (lower case without possessive, content lemma or "", negation cue, may spell a number)."""
    low = piece.lower().replace(".", "") if acronym else _low(piece)
    cue = low in _NEGATIONS or low.endswith("n't")
    lemma = _lemma(low) if _content(low) and not cue else ""
    spelled = low in _MONTHS or low == "and" or low.partition("-")[0] in _NUMBER_VOCABULARY
    return low, lemma, cue, spelled


@lru_cache(maxsize=256)
def _read(text: str) -> _Text:
    spans: list[tuple[str, int, int]] = []  # number words, month names and "and", for _spelled_numbers
    by_lemma: dict[str, list[tuple[int, int]]] = {}
    by_low: dict[str, list[tuple[int, int]]] = {}
    sentences: list[_Sentence] = []
    current: list[_Token] = []
    words: list[str] = []
    capitalised_mid: set[str] = set()
    since_cue = _NEGATION_WINDOW
    previous_word = ""

    def close() -> None:
        nonlocal current, since_cue
        if current:
            sentences.append(_Sentence(tuple(current), frozenset(t.low for t in current)))
        current = []
        since_cue = _NEGATION_WINDOW

    after_fail = False
    for match in _TOKEN_RE.finditer(text):
        kind, piece = match.lastgroup, match.group()
        follows_fail, after_fail = after_fail, False
        if kind == "end":
            if piece == "." and previous_word in _ABBREVIATIONS:
                continue
            if piece == "." and len(previous_word) == 1 and previous_word.isalpha():
                continue  # an initial: "J. Smith"
            close()
            previous_word = ""
            continue
        if kind == "clause":
            since_cue = _NEGATION_WINDOW
            continue
        if kind == "num":
            since_cue += 1
            previous_word = ""
            continue
        low, lemma, cue, spelled = _word(piece, kind == "acr")
        if spelled:
            spans.append((low, match.start(), match.end()))
        if low in _CLAUSE_WORDS:
            since_cue = _NEGATION_WINDOW
        if follows_fail and low == "to" and current:
            cue = True  # "failed to": the cue ends at "to", and "failed" is no content word
            failed = current[-1]
            if failed.lemma:
                by_lemma[failed.lemma].pop()
            current[-1] = failed._replace(lemma="")
        after_fail = low in _FAIL
        start = not current
        capitalised = piece[0].isupper()
        negated = bool(lemma) and since_cue < _NEGATION_WINDOW
        position = (len(sentences), len(current))
        if lemma:
            by_lemma.setdefault(lemma, []).append(position)
        if low in _ANTONYM_FORMS or low in _QUANTIFIERS:
            by_low.setdefault(low, []).append(position)
        current.append(_new_token(_Token, (piece, low, lemma, negated, capitalised, start)))
        words.append(low)
        if capitalised and not start:
            capitalised_mid.add(low)
        if cue:
            since_cue = 0
        elif negated:
            since_cue = _NEGATION_WINDOW  # the cue's scope is its first content word
        else:
            since_cue += 1
        previous_word = low
    close()

    word_set = set(words)
    for w in word_set.copy():
        if "-" in w or "'" in w:
            word_set.update(part for part in re.split(r"[-']", w) if part)
    lemma_set = frozenset(_word(w, False)[1] for w in word_set) - {""}
    return _Text(
        text=text,
        sentences=tuple(sentences),
        word_set=frozenset(word_set),
        lemma_set=lemma_set,
        capitalised_mid=frozenset(capitalised_mid),
        numbers=_numbers(text, spans),
        joined=" " + " ".join(words) + " ",
        by_lemma=by_lemma,
        by_low=by_low,
    )


# ---------------------------------------------------------------------------- names


def _is_acronym(token: _Token) -> bool:
    letters = [c for c in token.text if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def _capitalised_runs(tokens: Sequence[_Token], connectors: frozenset[str] = _CONNECTORS) -> list[list[_Token]]:
    """Runs of capitalised tokens (connectors allowed inside), leading stopwords and connectors dropped."""
    runs: list[list[_Token]] = []
    run: list[_Token] = []
    for token in [*tokens, None]:
        if token is not None and token.capitalised and token.low != "i" and not token.low.startswith("i'"):
            run.append(token)
            continue
        if token is not None and run and token.low in connectors:
            run.append(token)
            continue
        while run and not run[-1].capitalised:
            run.pop()
        while run and (run[0].low in STOPWORDS or run[0].low in connectors or run[0].low in _NEGATIONS):
            run.pop(0)
        if run:
            runs.append(run)
        run = []
    return runs


def _entities(statement: str, text: _Text, evidence: _Text) -> list[tuple[str, list[str], bool]]:
    """(shown name, distinctive lower-case words, is acronym) of each name in the statement."""
    word_tokens = [t for s in text.sentences for t in s.tokens if t.text[0].isalpha()]
    if word_tokens:
        capitalised = sum(1 for t in word_tokens if t.capitalised and len(t.text) > 1)
        if capitalised / len(word_tokens) >= 0.8 and len(word_tokens) >= 3:
            return []
    quoted = [m.group(1).strip() for m in _QUOTE_RE.finditer(statement)]
    quoted_words = {_low(w) for q in quoted for w in re.findall(r"[^\W\d_][\w'’-]*", q)}
    names: list[tuple[str, list[str], bool]] = [(f'"{q}"', [], False) for q in quoted if q]
    known_mid = text.capitalised_mid | evidence.capitalised_mid
    for sentence in text.sentences:
        for run in _capitalised_runs(sentence.tokens):
            if all(t.low in quoted_words for t in run):
                continue
            if len(run) > 1 and run[0].sentence_start and run[0].low not in known_mid:
                run = run[1:]  # "Yesterday Johnson won": the first word is capitalised for the sentence
                while run and run[0].low in _CONNECTORS:
                    run = run[1:]
                if not run:
                    continue
            if len(run) == 1:
                token = run[0]
                if token.low in _MONTHS or len(token.low) < 2:
                    continue
                acronym = _is_acronym(token)
                if token.sentence_start and not acronym and token.low not in known_mid:
                    continue
                if acronym:
                    names.append((token.text, [token.low.replace(".", "")], True))
                    continue
            content = [t for t in run if t.low not in _CONNECTORS and t.low not in _MONTHS and t.low not in _UNIT_NAMES]
            if not content:
                continue
            distinctive = [t.low for t in content if t.low not in _GENERIC_NAME_WORDS] or [t.low for t in content]
            names.append((" ".join(t.text for t in run), distinctive, False))
    return names


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _name_present(name: str, distinctive: list[str], acronym: bool, evidence: _Text) -> bool:
    if name.startswith('"'):
        title = name.strip('"')
        if " ".join(title.lower().split()) in evidence.lowered:
            return True
        title_words = [_low(w) for w in re.findall(r"[^\W\d_][\w'’-]*", title)]
        lemmas = {_lemma(w) for w in title_words if _content(w)}
        return bool(lemmas) and lemmas <= evidence.lemma_set
    if acronym:
        letters = distinctive[0]
        return letters in evidence.word_set or letters in evidence.initialisms
    for word in distinctive:
        if word in evidence.word_set:
            return True
        parts = [p for p in re.split(r"[-']", word) if len(p) >= 3 and p not in _GENERIC_NAME_WORDS]
        if len(parts) > 1 and any(p in evidence.word_set for p in parts):
            return True  # "Sims-based" and "Sims"
        if _lemma(word) in evidence.lemma_set:
            return True
        if len(word) >= 5:  # "Libyan" and "Libya", "Canadian" and "Canada"
            for other in evidence.prefixes.get(word[:5], ()):
                if abs(len(other) - len(word)) <= 3 and _common_prefix(word, other) >= min(len(word), len(other)) - 1:
                    return True
    return False


# ---------------------------------------------------------------------------- sentence cues


def _short(text: str, limit: int = 60) -> str:
    """Evaluated text quoted in a problem, cut to ``limit`` characters."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _snippet(tokens: Sequence[_Token], index: int, before: int = 3, after: int = 1) -> str:
    lo, hi = max(0, index - before), min(len(tokens), index + after + 1)
    return _short(" ".join(t.text for t in tokens[lo:hi]))


_RADIUS = 6
"""Tokens each side of a word whose content words make its local context."""
_MAX_OCCURRENCES = 64
"""Evidence occurrences of one word compared with the statement's (the first ones)."""


def _around(tokens: Sequence[_Token], index: int) -> frozenset[str]:
    """Content lemmas within :data:`_RADIUS` tokens of ``tokens[index]`` (itself excluded)."""
    lo, hi = max(0, index - _RADIUS), min(len(tokens), index + _RADIUS + 1)
    return frozenset(t.lemma for k, t in enumerate(tokens[lo:hi], lo) if t.lemma and k != index)


def _matching(
    evidence: _Text, positions: Iterable[tuple[int, int]], context: frozenset[str], need: int
) -> list[tuple[_Sentence, int]]:
    """Evidence occurrences whose local context shares at least ``need`` content words with ``context``."""
    found: list[tuple[_Sentence, int]] = []
    for n, position in enumerate(positions):
        if n >= _MAX_OCCURRENCES:
            break
        if len(context & evidence.context(position)) >= need:
            found.append((evidence.sentences[position[0]], position[1]))
    return found


def _local_negation(sentence: _Sentence, evidence: _Text) -> str | None:
    """A word negated on one side only, where its local contexts agree (see the module docstring)."""
    for i, token in enumerate(sentence.tokens):
        positions = evidence.by_lemma.get(token.lemma, ()) if token.lemma else ()
        if not positions:
            continue
        need = 1 if token.negated else 2
        matching = _matching(evidence, positions, _around(sentence.tokens, i), need)
        if not matching:
            continue
        polarities = {s.tokens[j].negated for s, j in matching}
        if token.negated in polarities:
            continue
        other, j = matching[0]
        said, what = ("negates", "does not") if token.negated else ("does not negate", "does")
        return (
            f'negation: the statement {said} "{_short(token.text, 30)}" ("{_snippet(sentence.tokens, i)}"), '
            f'the evidence {what} ("{_snippet(other.tokens, j)}")'
        )
    return None


def _local_antonyms(sentence: _Sentence, evidence: _Text) -> list[str]:
    found: list[str] = []
    for i, token in enumerate(sentence.tokens):
        if token.low not in _ANTONYM_FORMS:
            continue
        context = _around(sentence.tokens, i)
        for pair in _ANTONYM_INDEX[token.low]:
            side_a, side_b = ANTONYM_PAIRS[pair]
            mine, theirs = (side_a, side_b) if token.low in side_a else (side_b, side_a)
            if sentence.lows & theirs:
                continue
            same = _matching(evidence, (p for w in mine for p in evidence.by_low.get(w, ())), context, 1)
            if same:
                continue
            opposite = _matching(evidence, (p for w in theirs for p in evidence.by_low.get(w, ())), context, 1)
            agreeing = [(s, j) for s, j in opposite if s.tokens[j].negated == token.negated]
            if agreeing:
                other, j = agreeing[0]
                found.append(f'antonym: the statement says "{token.text}", the evidence "{other.tokens[j].text}"')
    return found


def _quantifier(tokens: Sequence[_Token], index: int) -> str | None:
    """The quantifier class of ``tokens[index]`` ("the most" and "at all" are none)."""
    low = tokens[index].low
    kind = _QUANTIFIERS.get(low)
    previous = tokens[index - 1].low if index > 0 else ""
    if (low == "most" and previous == "the") or (low == "all" and previous in ("at", "after")):
        return None
    return kind


def _local_quantifier(sentence: _Sentence, evidence: _Text) -> str | None:
    """A quantifier whose class no nearby evidence quantifier shares (see the module docstring)."""
    positions = evidence.quantifiers
    for i, token in enumerate(sentence.tokens):
        kind = _quantifier(sentence.tokens, i)
        if kind is None:
            continue
        nearby = _matching(evidence, positions, _around(sentence.tokens, i), 1)
        matching = [(s, j) for s, j in nearby if _quantifier(s.tokens, j)]
        kinds = {_quantifier(s.tokens, j) for s, j in matching}
        if not matching or kind in kinds or (kind == "partial" and "universal" in kinds):
            continue  # "some" where the evidence says "all" is no contradiction
        other, j = matching[0]
        return f'quantifier: the statement says "{token.text}", the evidence "{other.tokens[j].text}"'
    return None


# ---------------------------------------------------------------------------- features


@dataclass(frozen=True)
class DetailFeatures:
    """The detail checks of one statement against its evidence.

    Attributes:
        missing_numbers: Distinct numbers and dates of the statement not in the evidence (>= 0).
        missing_entities: Distinct names of the statement with no part in the evidence (>= 0).
        negation_mismatches: Statement sentences negating a shared word the evidence does
            not negate, or the reverse (0 to the number of statement sentences).
        antonym_mismatches: Antonym pairs split between a statement sentence and its
            evidence sentence (>= 0).
        quantifier_mismatches: Statement sentences whose quantifiers share no class with
            their evidence sentence's (0 to the number of statement sentences).
        uncovered_share: Share of the statement's distinct content words absent from the
            evidence, in [0, 1]; 0 when the statement has no content words.
        longest_uncovered_run: Longest run of consecutive statement content words absent
            from the evidence (>= 0).
        messages: One human-readable line per problem found (see :meth:`problems`).
    """

    missing_numbers: int = 0
    missing_entities: int = 0
    negation_mismatches: int = 0
    antonym_mismatches: int = 0
    quantifier_mismatches: int = 0
    uncovered_share: float = 0.0
    longest_uncovered_run: int = 0
    messages: tuple[str, ...] = field(default=(), compare=False)

    def values(self) -> dict[str, float]:
        """``{feature name: value}`` in the order of :data:`DETAIL_FEATURES`."""
        return {name: float(getattr(self, name)) for name in DETAIL_FEATURES}

    def vector(self) -> npt.NDArray[np.float64]:
        """The features as floats, in the order of :data:`DETAIL_FEATURES`."""
        return np.array([float(getattr(self, name)) for name in DETAIL_FEATURES], dtype=np.float64)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: every feature by name, and ``"problems"``: the list of :meth:`problems`."""
        out: dict[str, Any] = {name: getattr(self, name) for name in DETAIL_FEATURES}
        out["problems"] = list(self.messages)
        return out

    def problems(self) -> list[str]:
        """One line per problem, e.g. ``number 7,000 km is not in the evidence (it says 6,400 km)``."""
        return list(self.messages)


def detail_features(statement: str, evidence: str) -> DetailFeatures:
    """Check a statement's details (numbers, names, negation, antonyms, quantifiers) against its evidence.

    Deterministic and model-free; the rules are in the module docstring of
    ``assay.grounding._details``. The evidence's reading is cached, so checking several
    statements against one context reads the context once.

    Args:
        statement: The statement to check (one or more sentences).
        evidence: The text it should be supported by (a context or chunk).

    Raises:
        TypeError: ``statement`` or ``evidence`` is not a string.
    """
    for what, value in (("statement", statement), ("evidence", evidence)):
        if not isinstance(value, str):
            raise TypeError(f"detail_features: {what} must be a string, got {type(value).__name__}")
    stated, given = _read(statement), _read(evidence)
    messages: list[str] = []

    missing_numbers = 0
    checked: list[_Number] = []
    for number in stated.numbers:
        if any(n.kind == number.kind and _same(n.value, number.value) for n in checked):
            continue
        checked.append(number)
        if _number_present(number, given.numbers):
            continue
        missing_numbers += 1
        what = "date" if number.kind == "month" else "number"
        others = _alternatives(number, given.numbers)
        says = f" (it says {', '.join(others)})" if others else ""
        messages.append(f"{what} {_short(number.display(), 30)} is not in the evidence{says}")

    missing_entities = 0
    seen_names: set[str] = set()
    for name, distinctive, acronym in _entities(statement, stated, given):
        key = name.lower()
        if key in seen_names:
            continue
        seen_names.add(key)
        if not _name_present(name, distinctive, acronym, given):
            missing_entities += 1
            shown = name if name.startswith('"') else f'"{name}"'
            messages.append(f"name {_short(shown, 80)} is not in the evidence")

    negations = antonyms = quantifiers = 0
    for sentence in stated.sentences:
        plain = " " + " ".join(t.low for t in sentence.tokens) + " "
        if plain in given.joined:
            continue
        negation = _local_negation(sentence, given)
        found = _local_antonyms(sentence, given)
        quantifier = _local_quantifier(sentence, given)
        if negation is not None:
            negations += 1
            messages.append(negation)
        antonyms += len(found)
        messages.extend(found)
        if quantifier is not None:
            quantifiers += 1
            messages.append(quantifier)

    content = [t for s in stated.sentences for t in s.tokens if t.lemma]
    distinct = {t.lemma for t in content}
    initialisms = {t.lemma for t in content if _is_acronym(t) and t.low in given.initialisms}
    uncovered = {lemma for lemma in distinct if lemma not in given.lemma_set and lemma not in initialisms}
    longest = run = 0
    for token in content:
        run = run + 1 if token.lemma in uncovered else 0
        longest = max(longest, run)
    share = len(uncovered) / len(distinct) if distinct else 0.0
    if uncovered:
        absent: list[str] = []
        for token in content:
            if token.lemma in uncovered and token.low not in absent:
                absent.append(_short(token.low, 30))
        listed = ", ".join(absent[:8]) + (", ..." if len(absent) > 8 else "")
        messages.append(f"{len(uncovered)} of {len(distinct)} content words are not in the evidence: {listed}")

    return DetailFeatures(
        missing_numbers=missing_numbers,
        missing_entities=missing_entities,
        negation_mismatches=negations,
        antonym_mismatches=antonyms,
        quantifier_mismatches=quantifiers,
        uncovered_share=share,
        longest_uncovered_run=longest,
        messages=tuple(messages),
    )


# ---------------------------------------------------------------------------- combiner

COMBINER_SCHEMA = 1
"""Version of the combiner file's layout; :meth:`DetailCombiner.from_dict` reads only this one."""

FEATURES_VERSION = "1"
"""Version of the detail checks' rules. Bump it when a rule changes what a feature counts:
coefficients fitted on other rules are then refused instead of silently misapplied."""

LOGIT_P = "logit_p"
"""Name of the combiner input ``log(q / (1 - q))``, q the clipped P(supported)."""


def _logit(p: float, clip: float) -> float:
    q = min(max(p, clip), 1.0 - clip)
    return math.log(q / (1.0 - q))


@dataclass(frozen=True)
class DetailCombiner:
    """P(supported) corrected by the detail checks: a logistic regression.

    ``probability(p, f) = sigmoid(intercept + sum_i coefficients[i] * x_i)``, where
    ``x_i`` is the input named ``feature_names[i]``: ``"logit_p"`` is
    ``log(q / (1 - q))`` with ``q = min(max(p, clip), 1 - clip)``, any other name is that
    field of :class:`DetailFeatures`. With coefficient 1 on ``logit_p`` and 0 elsewhere it
    returns ``q``: the identity on P inside ``[clip, 1 - clip]``.

    Attributes:
        coefficients: One weight per input, in the order of ``feature_names``.
        intercept: The constant term.
        feature_names: ``"logit_p"`` and names from :data:`DETAIL_FEATURES`, each at most once.
        version: Names this set of coefficients (stored beside results that used it).
        clip: P is clipped to ``[clip, 1 - clip]`` before the logit (0 < clip < 0.5).
        threshold: Decision threshold on the combined probability chosen with the fit.
        features_version: The :data:`FEATURES_VERSION` the coefficients were fitted on; a
            combiner for other rules is refused.
        fit: How the coefficients were fitted (sets, sizes, cross-validated figures).
    """

    coefficients: tuple[float, ...]
    intercept: float
    feature_names: tuple[str, ...]
    version: str
    clip: float = 1e-6
    threshold: float = 0.5
    features_version: str = FEATURES_VERSION
    fit: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.features_version != FEATURES_VERSION:
            raise ConfigError(
                f"DetailCombiner {self.version!r} was fitted on detail features version "
                f"{self.features_version!r}, but this assay computes version {FEATURES_VERSION!r}: "
                "refit it with benchmarks/fit_detail_combiner.py"
            )
        if len(self.coefficients) != len(self.feature_names):
            raise ConfigError(
                f"DetailCombiner: {len(self.coefficients)} coefficients for {len(self.feature_names)} "
                f"feature names {list(self.feature_names)}"
            )
        known = {LOGIT_P, *DETAIL_FEATURES}
        unknown = [n for n in self.feature_names if n not in known]
        if unknown:
            raise ConfigError(f"DetailCombiner: unknown feature names {unknown}; known: {sorted(known)}")
        if len(set(self.feature_names)) != len(self.feature_names):
            raise ConfigError(f"DetailCombiner: repeated feature names in {list(self.feature_names)}")
        numbers = [*self.coefficients, self.intercept, self.threshold]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in numbers):
            raise ConfigError("DetailCombiner: coefficients, intercept and threshold must be finite numbers")
        if not 0.0 < self.clip < 0.5:
            raise ConfigError(f"DetailCombiner: clip must be in (0, 0.5), got {self.clip}")
        if not 0.0 < self.threshold < 1.0:
            raise ConfigError(f"DetailCombiner: threshold must be in (0, 1), got {self.threshold}")

    def probability(self, p_supported: float, features: DetailFeatures) -> float:
        """The combined P(supported) (see the class docstring for the formula).

        Raises:
            ValueError: ``p_supported`` is not a number in [0, 1].
        """
        if isinstance(p_supported, bool) or not isinstance(p_supported, int | float) or not 0.0 <= p_supported <= 1.0:
            raise ValueError(f"DetailCombiner.probability: p_supported must be a number in [0, 1], got {p_supported!r}")
        values = features.values()
        z = self.intercept
        for name, weight in zip(self.feature_names, self.coefficients, strict=True):
            z += weight * (_logit(float(p_supported), self.clip) if name == LOGIT_P else values[name])
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)

    def to_dict(self) -> dict[str, Any]:
        """The combiner file's content (:data:`COMBINER_SCHEMA`)."""
        return {
            "schema": COMBINER_SCHEMA,
            "version": self.version,
            "feature_names": list(self.feature_names),
            "coefficients": list(self.coefficients),
            "intercept": self.intercept,
            "clip": self.clip,
            "threshold": self.threshold,
            "features_version": self.features_version,
            "fit": dict(self.fit),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "combiner") -> DetailCombiner:
        """Rebuild a combiner from :meth:`to_dict`'s output.

        Raises:
            ConfigError: the schema is not :data:`COMBINER_SCHEMA`, or a key is missing or invalid
                (the message names ``source`` and the key).
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: a detail combiner must be a JSON object, got {type(data).__name__}")
        if data.get("schema") != COMBINER_SCHEMA:
            raise ConfigError(
                f"{source}: detail combiner schema {data.get('schema')!r} is not supported "
                f"(this assay reads schema {COMBINER_SCHEMA})"
            )
        required = ("version", "feature_names", "coefficients", "intercept", "features_version")
        missing = [k for k in required if k not in data]
        if missing:
            raise ConfigError(f"{source}: detail combiner lacks {missing}")
        names, weights = data["feature_names"], data["coefficients"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"{source}: 'feature_names' must be a list of strings")
        if not isinstance(weights, list):
            raise ConfigError(f"{source}: 'coefficients' must be a list of numbers")
        fit = data.get("fit", {})
        try:
            return cls(
                coefficients=tuple(weights),
                intercept=data["intercept"],
                feature_names=tuple(names),
                version=str(data["version"]),
                clip=data.get("clip", 1e-6),
                threshold=data.get("threshold", 0.5),
                features_version=str(data.get("features_version")),
                fit=dict(fit) if isinstance(fit, Mapping) else {},
            )
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
        except TypeError as exc:
            raise ConfigError(f"{source}: invalid detail combiner ({exc})") from None


def load_detail_combiner(path: str | Path) -> DetailCombiner:
    """Read a combiner file written by ``benchmarks/fit_detail_combiner.py``.

    Raises:
        ConfigError: the file cannot be read, is not JSON, or is not a valid combiner.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the detail combiner ({exc})") from None
    return DetailCombiner.from_dict(data, source=str(path))
