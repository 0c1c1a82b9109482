"""The detail features of a statement against its evidence (:func:`detail_features`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.grounding._details._cues import _local_antonyms, _local_negation, _local_quantifier
from assay.grounding._details._implied import implied
from assay.grounding._details._lexicon import _split
from assay.grounding._details._names import _entities, _name_present
from assay.grounding._details._numbers import _alternatives, _Number, _number_present, _same
from assay.grounding._details._reading import _read
from assay.grounding._details._tokens import _is_acronym, _short

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
        missing_counts: Of ``missing_numbers``, the counts (2 to 20 of a plural noun: "two
            films") that no other number of the evidence contradicts: a count may follow
            from what the evidence describes, so it is the judge's to decide, not a veto's.
            Not a feature of :meth:`vector`.
        messages: One human-readable line per problem found (see :meth:`problems`).
        implied: Numbers of the statement the evidence implies without writing them, each
            with how (a count of the things it describes, a running score, a sum or
            difference: ``assay.grounding._details._implied``); not missing.
        by_check: The lines of ``messages`` that each veto check found (``missing_numbers``,
            ``missing_entities``, ``negation_mismatches``), so a veto's reason names its own cause.
    """

    missing_numbers: int = 0
    missing_entities: int = 0
    negation_mismatches: int = 0
    antonym_mismatches: int = 0
    quantifier_mismatches: int = 0
    uncovered_share: float = 0.0
    longest_uncovered_run: int = 0
    missing_counts: int = 0
    messages: tuple[str, ...] = field(default=(), compare=False)
    implied: tuple[str, ...] = field(default=(), compare=False)
    by_check: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False)

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
        if self.implied:
            out["implied"] = list(self.implied)
        return out

    def problems_of(self, checks: Sequence[str]) -> list[str]:
        """The lines found by ``checks`` (e.g. the vetoes that fired), check by check."""
        return [line for check in checks for line in self.by_check.get(check, ())]

    def problems(self) -> list[str]:
        """One line per problem, e.g. ``number 7,000 km is not in the evidence (it says 6,400 km)``."""
        return list(self.messages)


_MEASURES = frozenset(
    _split(
        "km kilometres kilometers metres meters miles feet inches kg kilograms pounds lbs tons tonnes "
        "percent dollars euros yen cents degrees hours minutes seconds mph acres hectares litres liters "
        "gallons"
    )
)
_PLURALS = frozenset(_split("people children men women feet teeth mice geese"))


def _is_count(number: _Number) -> bool:
    """A small whole count of a plural noun ("two films", "3 sons"), not a measure, a year or a scaled value."""
    return (
        number.kind == "number"
        and not number.scaled
        and not number.yearish
        and float(number.value).is_integer()
        and 2 <= number.value <= 20
        and number.unit.isalpha()
        and number.unit not in _MEASURES
        and (number.unit.endswith("s") or number.unit in _PLURALS)
    )


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

    missing_numbers = missing_counts = 0
    implications: list[str] = []
    by_check: dict[str, list[str]] = {}
    checked: list[_Number] = []
    for number in stated.numbers:
        if any(n.kind == number.kind and _same(n.value, number.value) for n in checked):
            continue
        checked.append(number)
        if _number_present(number, given.numbers):
            continue
        implication = implied(number, statement, given)
        if implication is not None:  # a count of what it describes, a score, a sum: not missing
            implications.append(implication)
            continue
        missing_numbers += 1
        what = "date" if number.kind == "month" else "number"
        others = _alternatives(number, given.numbers)
        says = f" (it says {', '.join(others)})" if others else ""
        if not others and _is_count(number):
            missing_counts += 1
            says = " (a count: the judge decides whether the evidence describes that many)"
        messages.append(f"{what} {_short(number.display(), 30)} is not in the evidence{says}")
        by_check.setdefault("missing_numbers", []).append(messages[-1])

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
            by_check.setdefault("missing_entities", []).append(messages[-1])

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
            by_check.setdefault("negation_mismatches", []).append(negation)
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
        missing_counts=missing_counts,
        messages=tuple(messages),
        implied=tuple(implications),
        by_check={name: tuple(found) for name, found in by_check.items()},
    )
