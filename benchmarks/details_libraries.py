"""The hand-written detail checks against PyPI libraries that do the same part of the job.

For each part of ``assay.grounding._details`` that a library could take over, this runs
today's code and an *adapter*: the same checks with that one part done by the library
(everything else, the matching rules included, stays today's code). Parts and adapters:

- **numbers** (digits and number words; ISO/slash dates and month names stay ours):
  ``quantulum3`` reads every quantity (``parser.parse``); ``text2num`` either rewrites the
  number words of the text as digits first (``alpha2digit``, threshold 2 so that a lone
  "one" stays a word, as today) and our digit reader reads the result, or gives the value
  of each run of number words that our tokenizer finds (``text2num`` instead of
  ``_word_number``).
- **dates** (ISO and slash dates, month names): ``dateparser`` (``search.search_dates``)
  or ``datefinder`` (``find_dates``) finds the dates; a found date gives its year, month
  and day where its text spells them (a year that is written, a month name or a numeric
  date, a day that is written), its span is blanked, and our reader reads the numbers of
  the rest without its own date rules.
- **lemmas**: ``simplemma`` (``lemmatize(word, lang="en")``) or ``lemminflect``
  (``getAllLemmas``, first of VERB, NOUN, ADJ, ADV, else ``getAllLemmasOOV`` as a noun)
  replaces ``_lemma`` after the same lower-casing and possessive removal, wherever a lemma
  is read (content words, coverage, local contexts, names).

What it prints per part:

(a) on every item of the three dev sets (``../shared/data/grounding``: BEGIN, SummEdits,
    WiCE with its oracle chunks joined), how many items' detail features and veto
    decisions (any of ``VETO_CHECKS`` > 0) differ from today's; the fire rate of each
    feature the part feeds, on supported (label 1) and unsupported (label 0) items; the
    balanced accuracy of the veto alone (a veto => unsupported) with a seeded bootstrap
    95% CI, and the paired bootstrap CI of the difference library - today;
(b) ``tests/test_details.py`` run with the adapter in place (a fresh process per
    variant): how many of the part's test cases pass, and of the whole file;
(c) time per item (a statement against its evidence): the part alone (the number reader
    on both texts; for lemmas, one uncached lemma per distinct word of the item), and
    ``detail_features`` with the evidence read cold. Both sides run in one process,
    interleaved item by item with the order alternating, on a seeded sample.

Before measuring, a harness check runs today's code through the adapter plumbing and
stops if that changes any feature, so a difference is the library's, not the harness's.

    python benchmarks/details_libraries.py                       # every part, timing on 100 items a set
    python benchmarks/details_libraries.py --parts lemmas --timing-items 50 --reps 3
    python benchmarks/details_libraries.py --json out.json       # also write every figure

The libraries are not dependencies of assay: ``pip install quantulum3 text2num dateparser
datefinder simplemma lemminflect`` into the environment first; a part whose library is
missing is skipped with the reason.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

import assay.grounding._details._names as names_mod
import assay.grounding._details._numbers as numbers_mod
import assay.grounding._details._reading as reading_mod
import assay.grounding._details._tokens as tokens_mod
from assay.analysis import balanced_accuracy, bootstrap_ci
from assay.grounding._details import DETAIL_FEATURES, detail_features
from assay.grounding._details._lexicon import (
    _ISO_DATE_RE,
    _MONTH_NAMES,
    _MONTHS,
    _NEGATIONS,
    _NUMBER_VOCABULARY,
    _SCALES,
    _SLASH_DATE_RE,
)
from assay.grounding._verify import VETO_CHECKS

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "grounding"
SETS = ("begin", "summedits", "wice")
NEVER = re.compile(r"(?!)")

_ORIGINAL_NUMBERS = numbers_mod._numbers
_ORIGINAL_WORD = tokens_mod._word
_ORIGINAL_LEMMA = tokens_mod._lemma


# ---------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Item:
    set: str
    id: str
    label: int
    statement: str
    evidence: str


def load_items() -> list[Item]:
    items: list[Item] = []
    for name in SETS:
        with (DATA / f"{name}_dev.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                evidence = "\n".join(row["oracle_chunks"]) if name == "wice" else row["context"]
                items.append(Item(name, row["id"], int(row["label"]), row["claim"], evidence))
    # items that share an evidence text follow each other, so it is read once per variant
    return sorted(items, key=lambda i: (i.set, i.evidence, i.id))


# ---------------------------------------------------------------------------- adapters


@dataclass
class Variant:
    """One way of computing the features: today's code, or today's with one part swapped."""

    name: str
    part: str
    module: str = ""  # the library's import name ("" for today's code)
    patches: Callable[[], list[tuple[Any, str, Any]]] = lambda: []
    _saved: list[tuple[Any, str, Any]] = field(default_factory=list)

    def available(self) -> str:
        """The reason the library cannot be used, or "" when it imports."""
        if not self.module:
            return ""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(self.module)
        except ImportError as exc:
            return f"not installed ({exc})"
        return ""


@contextmanager
def applied(patches: Sequence[tuple[Any, str, Any]]) -> Iterator[None]:
    """Set each (object, attribute, value) for the block, then put the old values back."""
    saved = [(obj, attr, getattr(obj, attr)) for obj, attr, _ in patches]
    for obj, attr, value in patches:
        setattr(obj, attr, value)
    try:
        yield
    finally:
        for obj, attr, value in reversed(saved):
            setattr(obj, attr, value)


@contextmanager
def installed(variant: Variant) -> Iterator[None]:
    """The variant's patches in place, with fresh caches (its own word caches, no text read before)."""
    reading_mod._read.cache_clear()
    try:
        with applied(variant.patches()):
            yield
    finally:
        reading_mod._read.cache_clear()


def _blank(text: str, spans: Sequence[tuple[int, int]]) -> str:
    return numbers_mod._blank(text, spans) if spans else text


def _outside(words: Sequence[tuple[str, int, int]], spans: Sequence[tuple[int, int]]) -> list[tuple[str, int, int]]:
    return [w for w in words if not any(s <= w[1] < e for s, e in spans)]


# numbers: quantulum3 ---------------------------------------------------------------

_SCALE_IN = re.compile(r"\b(thousand|million|billion|trillion)\b", re.I)


def _quantulum_patches() -> list[tuple[Any, str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "classifier dependencies not installed": it only ranks units
        from quantulum3 import parser

    def read(text: str, words: Sequence[tuple[str, int, int]]) -> tuple[numbers_mod._Number, ...]:
        # our ISO/slash dates and month names (the digit reader is off), then quantulum3 on the rest
        found = list(_ORIGINAL_NUMBERS(text, [w for w in words if w[0] in _MONTHS]))
        spans = [m.span() for rx in (_ISO_DATE_RE, _SLASH_DATE_RE) for m in rx.finditer(text)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quantities = parser.parse(_blank(text, spans))
        for q in quantities:
            value = float(q.value)
            scale = _SCALE_IN.search(q.surface)  # keep our rule: "5" matches "5 million"
            raw = value / _SCALES[scale.group(1).lower()] if scale else value
            unit = "" if q.unit.name == "dimensionless" else (q.unit.symbols[0] if q.unit.symbols else q.unit.name)
            found.append(numbers_mod._Number(q.surface, value, raw, scale is not None, unit=unit))
        return tuple(found)

    return [(reading_mod, "_numbers", read), (numbers_mod, "_NUMBER_RE", NEVER)]


# numbers: text2num ------------------------------------------------------------------

_DIGIT_SCALE = re.compile(r"(\d)([ \t\xa0]+)(thousand|million|billion|trillion)\b", re.I)
_WORD_RE = re.compile(r"[^\W\d_]+")


def _alpha2digit_patches() -> list[tuple[Any, str, Any]]:
    from text_to_num import alpha2digit

    def read(text: str, words: Sequence[tuple[str, int, int]]) -> tuple[numbers_mod._Number, ...]:
        # alpha2digit turns "5 million" into "5 1000000": hide a scale word after digits from it (as a
        # word it does not know; a control character does not hide it, its tokenizer splits there)
        hidden = _DIGIT_SCALE.sub(lambda m: f"{m.group(1)}{m.group(2)}ZqZ{m.group(3).lower()}ZqZ", text)
        converted = alpha2digit(hidden, "en", threshold=2).replace("ZqZ", "")
        months = [
            (w.lower(), m.start(), m.end()) for m in _WORD_RE.finditer(converted) if (w := m.group()).lower() in _MONTHS
        ]
        return _ORIGINAL_NUMBERS(converted, months)

    return [(reading_mod, "_numbers", read)]


def _text2num_runs_patches() -> list[tuple[Any, str, Any]]:
    from text_to_num import text2num

    def word_number(words: list[str]) -> tuple[float, float, bool] | None:
        if all(w in _SCALES or w == "hundred" for w in words) or words == ["one"]:
            return None  # today's rule, kept
        try:
            value = float(text2num(" ".join(words), "en"))
        except ValueError:
            return None  # ordinals ("third"), "dozen": text2num refuses them
        scaled = words[-1] in _SCALES
        return value, (value / _SCALES[words[-1]] if scaled else value), scaled

    return [(numbers_mod, "_word_number", word_number)]


# dates: dateparser, datefinder --------------------------------------------------------

_YEAR_IN = re.compile(r"(?<!\d)\d{4}(?!\d)")
_SMALL_IN = re.compile(r"(?<!\d)\d{1,2}(?!\d)")
_NUMERIC_DATE = re.compile(r"\d{1,4}[-/.]\d{1,2}")


def _date_parts(surface: str, year: int, month: int, day: int) -> list[numbers_mod._Number]:
    """The parts of a found date that its text spells (the library fills the others from today's date)."""
    parts = []
    if str(year) in _YEAR_IN.findall(surface):
        parts.append(numbers_mod._Number(surface, year, year, False))
    if _NUMERIC_DATE.search(surface) or any(w.lower() in _MONTHS for w in _WORD_RE.findall(surface)):
        parts.append(numbers_mod._Number(_MONTH_NAMES[month - 1], month, month, False, kind="month"))
    if day in (int(d) for d in _SMALL_IN.findall(surface)):
        parts.append(numbers_mod._Number(surface, day, day, False))
    return parts


def _date_reader(
    find: Callable[[str], list[tuple[int, int, str, Any]]],
) -> Callable[..., tuple[numbers_mod._Number, ...]]:
    def read(text: str, words: Sequence[tuple[str, int, int]]) -> tuple[numbers_mod._Number, ...]:
        found: list[numbers_mod._Number] = []
        spans: list[tuple[int, int]] = []
        for start, end, surface, when in find(text):
            found.extend(_date_parts(surface, when.year, when.month, when.day))
            spans.append((start, end))
        rest = [w for w in _outside(words, spans) if w[0] not in _MONTHS]
        return tuple(found) + _ORIGINAL_NUMBERS(_blank(text, spans), rest)  # our ISO/slash rules are off

    return read


def _dateparser_patches() -> list[tuple[Any, str, Any]]:
    from dateparser.search import search_dates

    settings = {"RETURN_AS_TIMEZONE_AWARE": False}

    def find(text: str) -> list[tuple[int, int, str, Any]]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hits = search_dates(text, languages=["en"], settings=settings) or []
        out, cursor = [], 0
        for surface, when in hits:
            start = text.find(surface, cursor)
            if start < 0:
                continue
            out.append((start, start + len(surface), surface, when))
            cursor = start + len(surface)
        return out

    return [
        (reading_mod, "_numbers", _date_reader(find)),
        (numbers_mod, "_ISO_DATE_RE", NEVER),
        (numbers_mod, "_SLASH_DATE_RE", NEVER),
    ]


def _datefinder_patches() -> list[tuple[Any, str, Any]]:
    import datefinder

    def find(text: str) -> list[tuple[int, int, str, Any]]:
        out = []
        found = datefinder.find_dates(text, source=True, index=True)
        while True:
            try:
                when, surface, (start, end) = next(found)
            except StopIteration:
                break
            except (ValueError, OverflowError):
                continue  # a candidate it cannot turn into a date
            out.append((start, end, surface, when))
        return out

    return [
        (reading_mod, "_numbers", _date_reader(find)),
        (numbers_mod, "_ISO_DATE_RE", NEVER),
        (numbers_mod, "_SLASH_DATE_RE", NEVER),
    ]


# lemmas: simplemma, lemminflect --------------------------------------------------------


def _normal(word: str) -> str:
    """Today's lemma input: lower case, curly apostrophe, possessive and quotes removed."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    return w.strip("'")


def _word_with(lemma: Callable[[str], str]) -> Callable[[str, bool], tuple[str, str, bool, bool]]:
    """``_tokens._word`` with another lemma function (the body is today's, line for line)."""
    low_of, content = tokens_mod._low, tokens_mod._content

    @lru_cache(maxsize=65536)
    def word(piece: str, acronym: bool) -> tuple[str, str, bool, bool]:
        low = piece.lower().replace(".", "") if acronym else low_of(piece)
        cue = low in _NEGATIONS or low.endswith("n't")
        lemma_ = lemma(low) if content(low) and not cue else ""
        spelled = low in _MONTHS or low == "and" or low.partition("-")[0] in _NUMBER_VOCABULARY
        return low, lemma_, cue, spelled

    return word


def _lemma_patches(lemma: Callable[[str], str]) -> Callable[[], list[tuple[Any, str, Any]]]:
    def patches() -> list[tuple[Any, str, Any]]:
        cached = lru_cache(maxsize=65536)(lemma)
        return [(reading_mod, "_word", _word_with(cached)), (names_mod, "_lemma", cached)]

    return patches


def simplemma_lemma(word: str) -> str:
    import simplemma

    w = _normal(word)
    return simplemma.lemmatize(w, lang="en").lower() if w else w


_LEMMINFLECT_ORDER = ("VERB", "NOUN", "ADJ", "ADV", "PROPN", "AUX")


def lemminflect_lemma(word: str) -> str:
    import lemminflect

    w = _normal(word)
    if not w:
        return w
    found = lemminflect.getAllLemmas(w)
    for upos in _LEMMINFLECT_ORDER:
        if upos in found:
            return str(found[upos][0]).lower()
    oov = lemminflect.getAllLemmasOOV(w, "NOUN").get("NOUN")
    return str(oov[0]).lower() if oov else w


today_lemma_uncached: Callable[[str], str] = _ORIGINAL_LEMMA.__wrapped__


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("today", "all"),
        Variant("today-through-harness", "harness", patches=_lemma_patches(today_lemma_uncached)),
        Variant("quantulum3", "numbers", "quantulum3", _quantulum_patches),
        Variant("text2num alpha2digit", "numbers", "text_to_num", _alpha2digit_patches),
        Variant("text2num runs", "numbers", "text_to_num", _text2num_runs_patches),
        Variant("dateparser", "dates", "dateparser", _dateparser_patches),
        Variant("datefinder", "dates", "datefinder", _datefinder_patches),
        Variant("simplemma", "lemmas", "simplemma", _lemma_patches(simplemma_lemma)),
        Variant("lemminflect", "lemmas", "lemminflect", _lemma_patches(lemminflect_lemma)),
    )
}
PARTS = ("numbers", "dates", "lemmas")
AFFECTED: dict[str, tuple[str, ...]] = {
    "numbers": ("missing_numbers",),
    "dates": ("missing_numbers",),
    "lemmas": (
        "missing_entities",
        "negation_mismatches",
        "antonym_mismatches",
        "quantifier_mismatches",
        "uncovered_share",
    ),
}
# tests/test_details.py functions that pin each part's behaviour
PART_TESTS: dict[str, tuple[str, ...]] = {
    "numbers": (
        "test_numbers_that_match",
        "test_numbers_that_are_missing",
        "test_numbers_do_not_join_across_lines_or_sentences",
        "test_adding_an_absent_number_adds_exactly_one_missing_number",
    ),
    "lemmas": (
        "test_names",
        "test_negation",
        "test_antonyms",
        "test_quantifiers",
        "test_coverage_against_its_formula",
        "test_a_verbatim_sentence_of_the_evidence_has_no_problems",
    ),
}
PART_TESTS["dates"] = PART_TESTS["numbers"]
_DATE_CASE = re.compile(r"\d{4}-\d\d-\d\d|\d{4}[–-]\d\d\b|" + "|".join(_MONTH_NAMES))


# ---------------------------------------------------------------------------- (a) dev sets


def features_of(items: Sequence[Item], variant: Variant) -> np.ndarray:
    rows = []
    with installed(variant):
        for item in items:
            rows.append(detail_features(item.statement, item.evidence).vector())
    return np.array(rows)


def veto_of(matrix: np.ndarray) -> np.ndarray:
    columns = [DETAIL_FEATURES.index(name) for name in VETO_CHECKS]
    return np.asarray((matrix[:, columns] > 0).any(axis=1))


def paired_difference_ci(
    labels: np.ndarray, a: np.ndarray, b: np.ndarray, seed: int, n: int = 2000
) -> tuple[float, float]:
    """Percentile bootstrap CI of BA(b) - BA(a) over the same resampled items."""
    rng = np.random.default_rng(seed)
    diffs = []
    for idx in rng.integers(0, len(labels), size=(n, len(labels))):
        y = labels[idx]
        diffs.append(balanced_accuracy(y, b[idx]) - balanced_accuracy(y, a[idx]))
    lo, hi = np.nanpercentile(diffs, [2.5, 97.5])
    return float(lo), float(hi)


def dev_report(
    items: Sequence[Item], part: str, variants: Sequence[Variant], today: np.ndarray, seed: int
) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    labels_all = np.array([i.label for i in items])
    sets_all = np.array([i.set for i in items])
    rows = []
    matrices = {"today": today}
    for variant in variants:
        started = time.perf_counter()
        matrices[variant.name] = features_of(items, variant)
        print(
            f"  [{variant.name}: features on {len(items)} items in {time.perf_counter() - started:.0f} s]", flush=True
        )
    for name, matrix in matrices.items():
        for set_name in SETS:
            mask = sets_all == set_name
            y, m, t = labels_all[mask], matrix[mask], today[mask]
            veto, veto_today = veto_of(m), veto_of(t)
            pred, pred_today = (~veto).astype(int), (~veto_today).astype(int)
            row: dict[str, Any] = {
                "part": part,
                "variant": name,
                "set": set_name,
                "items": int(mask.sum()),
                "features_differ": int((~np.isclose(m, t)).any(axis=1).sum()),
                "veto_differs": int((veto != veto_today).sum()),
                "veto_ba": balanced_accuracy(y, pred),
                "veto_ba_ci": bootstrap_ci(balanced_accuracy, y, pred, seed),
                "delta_ba": balanced_accuracy(y, pred) - balanced_accuracy(y, pred_today),
                "delta_ba_ci": paired_difference_ci(y, pred_today, pred, seed),
            }
            for feature in AFFECTED[part]:
                col = m[:, DETAIL_FEATURES.index(feature)]
                if feature == "uncovered_share":
                    row[f"{feature} mean sup/unsup"] = (float(col[y == 1].mean()), float(col[y == 0].mean()))
                else:
                    row[f"{feature} fires sup/unsup"] = (
                        float((col[y == 1] > 0).mean()),
                        float((col[y == 0] > 0).mean()),
                    )
            rows.append(row)
    return rows, matrices


def print_examples(items: Sequence[Item], matrices: dict[str, np.ndarray], variants: Sequence[Variant], k: int) -> None:
    """Up to ``k`` items per variant whose veto decision differs from today's, with the problems that differ."""
    today = matrices["today"]
    for variant in variants:
        changed = np.flatnonzero(veto_of(matrices[variant.name]) != veto_of(today))[:k]
        for index in changed:
            item = items[int(index)]
            before = detail_features(item.statement, item.evidence).problems()
            with installed(variant):
                after = detail_features(item.statement, item.evidence).problems()
            lost = [p for p in before if p not in after and "content words" not in p]
            new = [p for p in after if p not in before and "content words" not in p]
            print(
                f"  {variant.name} | {item.set} {item.id} label {item.label} | today only: {lost} | library only: {new}"
            )


def print_dev(rows: Sequence[dict[str, Any]]) -> None:
    extra = [k for k in rows[0] if " sup/unsup" in k]
    head = ["variant", "set", "features differ", "veto differs", *extra, "veto BA [95% CI]", "library - today [95% CI]"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        lo, hi = r["veto_ba_ci"]
        dlo, dhi = r["delta_ba_ci"]
        cells = [
            r["variant"],
            r["set"],
            f"{r['features_differ']}/{r['items']}",
            f"{r['veto_differs']}/{r['items']}",
            *(f"{a:.1%} / {b:.1%}" if "fires" in k else f"{a:.3f} / {b:.3f}" for k in extra for a, b in [r[k]]),
            f"{r['veto_ba']:.3f} [{lo:.3f}, {hi:.3f}]",
            "-" if r["variant"] == "today" else f"{r['delta_ba']:+.3f} [{dlo:+.3f}, {dhi:+.3f}]",
        ]
        print("| " + " | ".join(cells) + " |")


# ---------------------------------------------------------------------------- (b) unit tests


class _Outcomes:
    def __init__(self) -> None:
        self.results: dict[str, bool] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            self.results[report.nodeid] = report.outcome == "passed"


def run_tests_here(name: str, out: Path) -> int:
    """In a fresh process: install the variant, run tests/test_details.py, write {nodeid: passed}."""
    import pytest

    outcomes = _Outcomes()
    with installed(VARIANTS[name]):
        # a library's own warnings are not test failures (the suite turns warnings into errors)
        args = [str(ROOT / "tests" / "test_details.py"), "-q", "-p", "no:cacheprovider", "--no-header"]
        args += ["-W", "ignore::DeprecationWarning", "-W", "ignore::UserWarning", "-W", "ignore::FutureWarning"]
        code = pytest.main(args, plugins=[outcomes])
    out.write_text(json.dumps(outcomes.results))
    return 0 if code in (0, 1) else int(code)


def tests_report(part: str, variants: Sequence[Variant], workdir: Path) -> list[dict[str, Any]]:
    rows = []
    for variant in [VARIANTS["today"], *variants]:
        out = workdir / f"tests-{variant.name.replace(' ', '_')}.json"
        subprocess.run(
            [sys.executable, __file__, "--run-tests", variant.name, "--tests-out", str(out)],
            check=True,
            stdout=subprocess.DEVNULL,
            cwd=ROOT,
        )
        results: dict[str, bool] = json.loads(out.read_text())
        mine = {k: v for k, v in results.items() if k.split("::")[-1].split("[")[0] in PART_TESTS[part]}
        row: dict[str, Any] = {
            "part": part,
            "variant": variant.name,
            "part_passed": sum(mine.values()),
            "part_cases": len(mine),
            "file_passed": sum(results.values()),
            "file_cases": len(results),
            "failed_part_cases": sorted(k.split("::")[-1] for k, v in mine.items() if not v),
            "failed_other_cases": sorted(k.split("::")[-1] for k, v in results.items() if not v and k not in mine),
        }
        if part == "dates":
            dated = {k: v for k, v in mine.items() if _DATE_CASE.search(k)}
            row["date_cases"] = f"{sum(dated.values())}/{len(dated)}"
        rows.append(row)
    return rows


def print_tests(rows: Sequence[dict[str, Any]]) -> None:
    dates = "date_cases" in rows[0]
    print("| variant | part's cases passed | " + ("of them dates | " if dates else "") + "whole file passed |")
    print("|---|---|" + ("---|" if dates else "") + "---|")
    for r in rows:
        cells = [r["variant"], f"{r['part_passed']}/{r['part_cases']}"]
        if dates:
            cells.append(r["date_cases"])
        cells.append(f"{r['file_passed']}/{r['file_cases']}")
        print("| " + " | ".join(cells) + " |")
    for r in rows:
        for case in r["failed_part_cases"][:12]:
            print(f"  {r['variant']} fails {case[:150]}")
        if len(r["failed_part_cases"]) > 12:
            print(f"  {r['variant']} fails {len(r['failed_part_cases']) - 12} more")
        for case in r["failed_other_cases"]:
            print(f"  {r['variant']} also fails (outside the part) {case[:150]}")


# ---------------------------------------------------------------------------- (c) time


def _number_inputs(items: Sequence[Item]) -> list[list[tuple[str, list[tuple[str, int, int]]]]]:
    """Per item, the (text, word spans) the number reader gets for its statement and evidence."""
    seen: list[tuple[str, list[tuple[str, int, int]]]] = []

    def spy(text: str, words: Sequence[tuple[str, int, int]]) -> tuple[numbers_mod._Number, ...]:
        seen.append((text, list(words)))
        return _ORIGINAL_NUMBERS(text, words)

    out = []
    with installed(Variant("spy", "spy", patches=lambda: [(reading_mod, "_numbers", spy)])):
        for item in items:
            seen.clear()
            reading_mod._read.cache_clear()
            detail_features(item.statement, item.evidence)
            out.append(list(seen))
    return out


def _item_words(items: Sequence[Item]) -> list[list[str]]:
    """Per item, the distinct lower-case words the lemma function is asked about (both texts)."""
    out = []
    for item in items:
        words: set[str] = set()
        for text in (item.statement, item.evidence):
            for match in _WORD_RE.finditer(text):
                low = tokens_mod._low(match.group())
                if tokens_mod._content(low):
                    words.add(low)
        out.append(sorted(words))
    return out


def _fresh_word_caches(variant: Variant) -> list[tuple[Any, str, Any]]:
    """The variant's lemma and word functions with empty caches (today's: fresh cached copies of its own)."""
    if variant.name != "today":
        return variant.patches()
    lemma = lru_cache(maxsize=65536)(_ORIGINAL_LEMMA.__wrapped__)
    word = lru_cache(maxsize=65536)(_ORIGINAL_WORD.__wrapped__)
    return [(reading_mod, "_word", word), (tokens_mod, "_lemma", lemma), (names_mod, "_lemma", lemma)]


def time_report(part: str, items: Sequence[Item], variants: Sequence[Variant], reps: int) -> list[dict[str, Any]]:
    today = VARIANTS["today"]
    # for lemmas, today's lemma through the same plumbing as the libraries is a control: its ratio is the
    # plumbing's own cost (and the noise of the load)
    control = [VARIANTS["today-through-harness"]] if part == "lemmas" else []
    contenders = [today, *control, *variants]
    part_time = {v.name: 0.0 for v in contenders}
    full_time = {v.name: 0.0 for v in contenders}
    cold_time = {v.name: 0.0 for v in contenders}
    if part == "lemmas":
        lemma_fns = {
            "today": today_lemma_uncached,
            "today-through-harness": today_lemma_uncached,
            "simplemma": simplemma_lemma,
            "lemminflect": lemminflect_lemma,
        }
        inputs: list[Any] = _item_words(items)
    else:
        inputs = _number_inputs(items)
    # each variant keeps its own word-level caches warm across installs, as in production
    patch_sets = {v.name: v.patches() for v in contenders}
    for v in contenders:  # warm-up: imports, a library's first-call loading, the word caches
        with applied(patch_sets[v.name]):
            for item in items:
                reading_mod._read.cache_clear()
                detail_features(item.statement, item.evidence)
    for rep in range(reps):
        for k, item in enumerate(items):
            order = contenders if (k + rep) % 2 == 0 else contenders[::-1]
            for v in order:
                if part == "lemmas":
                    fn = lemma_fns[v.name]
                    started = time.perf_counter()
                    for word in inputs[k]:
                        fn(word)
                    part_time[v.name] += time.perf_counter() - started
                with applied(patch_sets[v.name]):
                    if part != "lemmas":
                        reader = reading_mod._numbers
                        started = time.perf_counter()
                        for text, words in inputs[k]:
                            reader(text, words)
                        part_time[v.name] += time.perf_counter() - started
                    reading_mod._read.cache_clear()
                    started = time.perf_counter()
                    detail_features(item.statement, item.evidence)
                    full_time[v.name] += time.perf_counter() - started
                if part == "lemmas":  # again with empty word caches: every word of the item is new
                    with applied(_fresh_word_caches(v)):
                        reading_mod._read.cache_clear()
                        started = time.perf_counter()
                        detail_features(item.statement, item.evidence)
                        cold_time[v.name] += time.perf_counter() - started
    n = len(items) * reps
    rows = []
    for v in contenders:
        rows.append(
            {
                "part": part,
                "variant": v.name,
                "items": len(items),
                "reps": reps,
                "part_ms": part_time[v.name] / n * 1e3,
                "part_ratio": part_time[v.name] / part_time["today"],
                "features_ms": full_time[v.name] / n * 1e3,
                "features_ratio": full_time[v.name] / full_time["today"],
                "cold_ms": cold_time[v.name] / n * 1e3,
                "cold_ratio": cold_time[v.name] / cold_time["today"] if cold_time["today"] else float("nan"),
                "cold_vs_control": (
                    cold_time[v.name] / cold_time[control[0].name] if control and cold_time[control[0].name] else None
                ),
            }
        )
    return rows


def runs_report(items: Sequence[Item], reps: int) -> dict[str, Any]:
    """Today's ``_word_number`` against ``text2num`` on the number-word runs of the items, interleaved."""
    runs: list[list[str]] = []

    def spy(words: list[str]) -> tuple[float, float, bool] | None:
        runs.append(list(words))
        return original(words)

    original = numbers_mod._word_number
    with installed(Variant("spy", "spy", patches=lambda: [(numbers_mod, "_word_number", spy)])):
        for item in items:
            detail_features(item.statement, item.evidence)
    library = dict((attr, value) for _, attr, value in _text2num_runs_patches())["_word_number"]
    spent = {"today": 0.0, "text2num": 0.0}
    for rep in range(reps * 20):
        for name, fn in (("today", original), ("text2num", library))[:: 1 if rep % 2 == 0 else -1]:
            started = time.perf_counter()
            for run in runs:
                fn(run)
            spent[name] += time.perf_counter() - started
    calls = len(runs) * reps * 20
    return {
        "runs": len(runs),
        "today_us": spent["today"] / calls * 1e6,
        "text2num_us": spent["text2num"] / calls * 1e6,
        "ratio": spent["text2num"] / spent["today"],
    }


def measure_load_here(name: str) -> int:
    """In a fresh process: seconds and resident MB that the variant's first use adds (import, data files)."""

    def rss_mb() -> float:
        with open("/proc/self/status") as status:
            return int(status.read().split("VmRSS:")[1].split()[0]) / 1024

    sentence = "In March 2020 three cats did not win 5% more; they were chasing birds."
    detail_features(sentence, sentence)  # today's code warm: only the library's cost is left
    before, started = rss_mb(), time.perf_counter()
    with installed(VARIANTS[name]):
        detail_features(sentence, sentence)
    print(json.dumps({"seconds": time.perf_counter() - started, "mb": rss_mb() - before}))
    return 0


def load_report(variants: Sequence[Variant]) -> dict[str, dict[str, float]]:
    out = {}
    for variant in variants:
        done = subprocess.run(
            [sys.executable, __file__, "--measure-load", variant.name],
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        out[variant.name] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def print_time(rows: Sequence[dict[str, Any]]) -> None:
    part = rows[0]["part"]
    what = "lemmas of the item's words, uncached" if part == "lemmas" else "number reader, statement + evidence"
    cold = " detail_features, word caches empty too: ms per item | ratio |" if part == "lemmas" else ""
    print(f"| variant | {what}: ms per item | ratio | detail_features, evidence read cold: ms per item | ratio |{cold}")
    print("|---|---|---|---|---|" + ("---|---|" if cold else ""))
    for r in rows:
        print(
            f"| {r['variant']} | {r['part_ms']:.3f} | {r['part_ratio']:.1f}x | {r['features_ms']:.3f} | "
            f"{r['features_ratio']:.2f}x |" + (f" {r['cold_ms']:.3f} | {r['cold_ratio']:.2f}x |" if cold else "")
        )
    controlled = [r for r in rows if r.get("cold_vs_control") is not None and r["variant"] != "today"]
    if controlled:
        print(
            "\nword caches empty, against today's lemma through the same adapter plumbing: "
            + ", ".join(f"{r['variant']} {r['cold_vs_control']:.2f}x" for r in controlled)
        )
    loads = [r for r in rows if "load" in r]
    if loads:
        print("\nfirst use in a fresh process (import, data files), beyond today's code already warm:")
        for r in loads:
            print(f"  {r['variant']}: {r['load']['seconds']:.2f} s, {r['load']['mb']:+.0f} MB resident")


# ---------------------------------------------------------------------------- main


def harness_check(items: Sequence[Item], today: np.ndarray) -> None:
    through = features_of(items, VARIANTS["today-through-harness"])
    differ = int((~np.isclose(through, today)).any(axis=1).sum())
    if differ:
        raise SystemExit(f"harness check failed: today's lemma through the adapter plumbing changes {differ} items")
    print(f"harness check: today's code through the adapter plumbing gives the same features on all {len(items)} items")


def timing_sample(items: Sequence[Item], per_set: int, seed: int) -> list[Item]:
    rng = random.Random(seed)
    picked: list[Item] = []
    for name in SETS:
        mine = [i for i in items if i.set == name]
        picked += rng.sample(mine, min(per_set, len(mine)))
    return picked


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated: numbers, dates, lemmas")
    parser.add_argument("--timing-items", type=int, default=100, help="items per set for the timing (seeded sample)")
    parser.add_argument("--reps", type=int, default=3, help="timed passes over the timing sample")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-tests", action="store_true", help="do not run tests/test_details.py per variant")
    parser.add_argument("--examples", type=int, default=4, help="items a library whose veto changes, shown")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument("--run-tests", help=argparse.SUPPRESS)
    parser.add_argument("--tests-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--measure-load", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_tests:
        return run_tests_here(args.run_tests, args.tests_out)
    if args.measure_load:
        return measure_load_here(args.measure_load)

    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise SystemExit(f"unknown part(s) {unknown}: expected some of {PARTS}")
    items = load_items()
    print(f"{len(items)} dev items: " + ", ".join(f"{s} {sum(i.set == s for i in items)}" for s in SETS))
    with suppress(OSError):
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (timings are under that load)")
    today = features_of(items, VARIANTS["today"])
    harness_check(items, today)
    sample = timing_sample(items, args.timing_items, args.seed)
    workdir = Path(tempfile.mkdtemp(prefix="details-libraries-"))
    report: dict[str, Any] = {"items": len(items), "timing_items": len(sample), "reps": args.reps, "parts": {}}
    for part in parts:
        variants = [v for v in VARIANTS.values() if v.part == part]
        usable = []
        for v in variants:
            why = v.available()
            if why:
                print(f"{part}: {v.name} skipped: {why}")
            else:
                usable.append(v)
        if not usable:
            continue
        print(f"\n## {part}: " + ", ".join(v.name for v in usable) + " against today's code\n")
        dev, matrices = dev_report(items, part, usable, today, args.seed)
        print(f"\n(a) dev sets, all {len(items)} items (fires sup/unsup: share of supported / unsupported items)\n")
        print_dev(dev)
        if args.examples:
            print(f"\nitems whose veto changes (up to {args.examples} a library):")
            print_examples(items, matrices, usable, args.examples)
        tests: list[dict[str, Any]] = []
        if not args.skip_tests:
            print("\n(b) tests/test_details.py with the library in place\n")
            tests = tests_report(part, usable, workdir)
            print_tests(tests)
        print(f"\n(c) time per item, {len(sample)} items ({args.timing_items} a set) x {args.reps}, interleaved\n")
        timing = time_report(part, sample, usable, args.reps)
        loads = load_report(usable)
        for row in timing:
            if row["variant"] in loads:
                row["load"] = loads[row["variant"]]
        print_time(timing)
        report["parts"][part] = {"dev": dev, "tests": tests, "time": timing}
        if any(v.name == "text2num runs" for v in usable):
            runs = runs_report(sample, args.reps)
            print(
                f"\nvalue of a number-word run alone ({runs['runs']} runs in the timing sample): "
                f"today {runs['today_us']:.2f} us, text2num {runs['text2num_us']:.2f} us, ratio {runs['ratio']:.2f}x"
            )
            report["parts"][part]["runs"] = runs
    shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
