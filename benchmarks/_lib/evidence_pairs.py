"""Supported claims against their evidence with the support removed: the pairs and their figures.

How a pair is made and what is skipped: ``evidence_use.py``'s docstring (the script that
judges them); ``anchored_readout.py`` reads the same pairs.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.grounding._details._lexicon import STOPWORDS
from assay.grounding._sentences import located_sentences

SETS = ("summedits", "begin", "wice")
SIZES = {"summedits": 500, "begin": 300, "wice": 150}
"""``devsets.load``'s seeded samples (seed 7): the items the verifier's standing rows use."""
MAX_REMOVED = 3
MIN_ALIGNED = 0.5
MIN_LOST_SHARE = 0.2
MIN_LEFT_CHARS = 80
MIN_PART_STEMS = 3
GENERATOR_VERSION = 1
NEGATIVE_SUFFIX = "#removed"

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SUFFIXES = ("ing", "ed", "es", "s")


def stems(text: str) -> set[str]:
    """Content stems: lower-cased words and numbers, stopwords out, one ending (-ing, -ed, -es, -s) cut."""
    out = set()
    for word in _WORD.findall(text.lower()):
        word = word.split("'")[0]
        if word in STOPWORDS or len(word) < 2:
            continue
        for suffix in _SUFFIXES:
            if len(word) > len(suffix) + 3 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        out.add(word)
    return out


@dataclass(frozen=True)
class EvidencePair:
    """One supported claim, its contexts as judged, and the contexts with its support removed."""

    id: str  # the dev item's id; the negative side is judged as ``id + NEGATIVE_SUFFIX``
    set: str
    group: str  # ``set/source document`` over the whole dev file
    claim: str
    contexts: tuple[str, ...]  # the positive side (label 1)
    removed_contexts: tuple[str, ...]  # the negative side (label 0)
    removed: tuple[str, ...]  # the sentences (WiCE: lines) taken out
    lost: tuple[str, ...]  # claim stems the negative's contexts no longer contain
    how: str  # "annotated" (WiCE's supporting sentences), "aligned" (lexical) or "changed: <the edit>"
    part: str  # the part of the claim whose support was removed (the whole claim, or one sentence of it)

    def rows(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The two sides as dev rows (``devsets.contexts_of`` reads the right field for the set)."""
        positive = {"id": self.id, "claim": self.claim, "label": 1, "group": self.group}
        negative = {"id": self.id + NEGATIVE_SUFFIX, "claim": self.claim, "label": 0, "group": self.group}
        if self.set == "wice":
            positive["oracle_chunks"], negative["oracle_chunks"] = list(self.contexts), list(self.removed_contexts)
            positive["context"] = negative["context"] = ""
        else:
            (positive["context"],), (negative["context"],) = self.contexts, self.removed_contexts
        return positive, negative

    def to_json(self) -> str:
        return json.dumps({"generator": GENERATOR_VERSION, **asdict(self)}, ensure_ascii=False)


@lru_cache(maxsize=1024)
def _sentences(text: str) -> tuple[tuple[int, int], ...]:
    """Spans of ``text``'s non-blank sentences (cached: a document's summaries all split it)."""
    return tuple((a, b) for a, b in located_sentences(text) if text[a:b].strip())


def _without(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` with ``spans`` cut out (and the whitespace after each), nothing else touched."""
    out, cursor = [], 0
    for start, end in sorted(spans):
        out.append(text[cursor:start])
        cursor = end
        while cursor < len(text) and text[cursor] in " \t":
            cursor += 1
    out.append(text[cursor:])
    return "".join(out).strip()


def _removal(wanted: set[str], text: str) -> tuple[str, tuple[str, ...], tuple[str, ...]] | str:
    """Remove the sentences that cover ``wanted`` greedily until enough of it is gone from the rest."""
    spans = _sentences(text)
    sentence_stems = [stems(text[a:b]) for a, b in spans]
    picked: list[int] = []
    covered: set[str] = set()
    need = max(1, math.ceil(MIN_LOST_SHARE * len(wanted)))
    while len(picked) < MAX_REMOVED:
        gains = [(len((s & wanted) - covered), -i) for i, s in enumerate(sentence_stems) if i not in picked]
        if not gains or max(gains)[0] == 0:
            break
        best = -max(gains)[1]
        picked.append(best)
        covered |= sentence_stems[best] & wanted
        rest = _without(text, [spans[i] for i in picked])
        lost = covered - stems(rest)
        if len(covered) >= MIN_ALIGNED * len(wanted) and len(lost) >= need:
            if len(rest) < MIN_LEFT_CHARS:
                return "nothing left"
            removed = tuple(text[spans[i][0] : spans[i][1]] for i in sorted(picked))
            return rest, removed, tuple(sorted(lost))
    if len(covered) < MIN_ALIGNED * len(wanted):
        return "no aligned sentence"
    return "stated elsewhere"


def aligned_removal(claim: str, text: str) -> tuple[str, tuple[str, ...], tuple[str, ...], str] | str:
    """(text without the supporting sentences, those sentences, stems lost, the part of the claim), or why not.

    The whole claim is tried first, then each of its sentences with at least
    ``MIN_PART_STEMS`` content stems, in order: a claim is supported only if every part
    is, so removing what supports one sentence of it makes the whole claim unsupported.
    The reason given for a skip is the whole claim's.
    """
    wanted = stems(claim)
    if not wanted:
        return "no content words"
    whole = _removal(wanted, text)
    if not isinstance(whole, str):
        return (*whole, claim)
    parts = [claim[a:b] for a, b in _sentences(claim)]
    if len(parts) > 1:
        for part in parts:
            if len(stems(part)) < MIN_PART_STEMS:
                continue
            made = _removal(stems(part), text)
            if not isinstance(made, str):
                return (*made, part)
    return whole


def changed_detail(claim: str, text: str, seed: str) -> tuple[str, str] | None:
    """(text with one detail the claim states changed, what changed), or None where none applies.

    For contexts too short to lose a sentence. A number the claim also gives is changed
    everywhere in the text (``verifier_data._changed_number``); else "not" is added after
    the first auxiliary of the text that is followed by a word of the claim (a claim that
    negates nothing). Either way the claim now disagrees with its only evidence.
    """
    from .verifier_pairs import _AUX, _NEGATED, _NUMBER, _changed_number

    rng = random.Random(f"{seed}:{hashlib.sha1(text.encode()).hexdigest()}")
    shared = [
        m.group() for m in _NUMBER.finditer(text) if re.search(rf"(?<![\w.,]){re.escape(m.group())}(?![\w])", claim)
    ]
    if shared:
        old = shared[0]
        new = _changed_number(old, rng)
        pattern = rf"(?<![\w.,]){re.escape(old)}(?![\w])"
        return re.sub(pattern, new, text), f"{old} -> {new}"
    if _NEGATED.search(claim):
        return None
    words = stems(claim)
    for m in _AUX.finditer(text):
        following = text[m.end() :].split(maxsplit=1)
        if following and stems(following[0]) & words:
            return text[: m.end(1)] + " not" + text[m.end(1) :], f"'not' after {m.group(1)!r}"
    return None


def annotated_removal(row: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] | str:
    """WiCE: (oracle chunks without every annotated supporting line, the lines, stems lost), or why not."""
    lines = str(row["context"]).split("\n")
    numbers = {i for group in row.get("supporting_sentences") or [] for i in group}
    support = {lines[i].strip() for i in numbers if i < len(lines) and lines[i].strip()}
    if not support:
        return "no annotated sentence"
    chunks = [str(c) for c in row.get("oracle_chunks") or [row["context"]]]
    kept_chunks, removed = [], []
    for chunk in chunks:
        kept = []
        for line in chunk.split("\n"):
            if line.strip() in support:
                removed.append(line.strip())
            else:
                kept.append(line)
        kept_chunks.append("\n".join(kept).strip())
    if not removed:
        return "annotation not in the chunks"
    kept_chunks = [c for c in kept_chunks if c]
    if sum(map(len, kept_chunks)) < MIN_LEFT_CHARS:
        return "nothing left"
    lost = (stems(row["claim"]) & stems(" ".join(removed))) - stems(" ".join(kept_chunks))
    return tuple(kept_chunks), tuple(dict.fromkeys(removed)), tuple(sorted(lost))


def make_pairs(
    rows_by_set: dict[str, Sequence[dict[str, Any]]], groups: dict[str, str]
) -> tuple[list[EvidencePair], Counter[str]]:
    """Pairs from the SUPPORTED rows given, and the skipped ones counted by ``set: reason``.

    ``groups``: item id -> ``set/source document`` (``grouped_cv.full_groups`` over the
    whole dev files, so a group never depends on the sample).
    """
    from _lib.devsets import contexts_of

    pairs: list[EvidencePair] = []
    skipped: Counter[str] = Counter()
    for name, rows in rows_by_set.items():
        for row in rows:
            if int(row["label"]) != 1:
                continue
            claim = str(row["claim"])
            contexts = tuple(contexts_of(name, row))
            if name == "wice":
                made = annotated_removal(row)
                if isinstance(made, str):
                    skipped[f"{name}: {made}"] += 1
                    continue
                removed_contexts, removed, lost = made
                how, part = "annotated", claim
            else:
                aligned = aligned_removal(claim, contexts[0])
                if aligned == "nothing left":
                    changed = changed_detail(claim, contexts[0], str(row["id"]))
                    if changed is None:
                        skipped[f"{name}: nothing left, no detail to change"] += 1
                        continue
                    text, change = changed
                    lost = tuple(sorted(stems(claim) - stems(text)))
                    removed_contexts, removed, how, part = (text,), (contexts[0],), f"changed: {change}", claim
                elif isinstance(aligned, str):
                    skipped[f"{name}: {aligned}"] += 1
                    continue
                else:
                    rest, removed, lost, part = aligned
                    removed_contexts, how = (rest,), "aligned"
            pairs.append(
                EvidencePair(
                    str(row["id"]), name, groups[row["id"]], claim, contexts, removed_contexts, removed, lost, how, part
                )
            )
    return pairs, skipped


def dev_pairs(seed: int = 7) -> tuple[list[EvidencePair], Counter[str], dict[str, list[dict[str, Any]]]]:
    """Pairs from the supported items of the seeded dev samples (``SIZES``), the skips, and the samples."""
    from _lib.devsets import load, read_rows
    from _lib.grouped_cv import full_groups

    every = read_rows(SETS)
    groups = full_groups(every)
    samples = {name: load(name, SIZES[name], seed) for name in SETS}
    pairs, skipped = make_pairs(samples, groups)
    return pairs, skipped, samples


# ---- figures ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """The evidence-use figures of one set (or all) for one way of deciding."""

    set: str
    decided_by: str
    pairs: int
    balanced_accuracy: float
    ci95: tuple[float, float]
    tpr: float  # positives called supported
    still_supported: float  # negatives still called supported (1 - TNR)
    flipped_of_passed: float  # of pairs whose positive passed, the share whose negative failed


def pair_figures(
    positive: npt.NDArray[np.int64], negative: npt.NDArray[np.int64], seed: int, n: int = 2000
) -> tuple[float, tuple[float, float], float, float, float]:
    """(BA, pair-bootstrap 95% CI, TPR, share of negatives called supported, flips among passed positives).

    ``positive``/``negative``: verdicts (1 supported) of the two sides, one entry per pair.
    BA = (TPR + TNR) / 2 with TPR the positives' share of 1 and TNR the negatives' share
    of 0; the bootstrap resamples pairs, so the two sides stay together.
    """
    positive, negative = np.asarray(positive), np.asarray(negative)
    if len(positive) != len(negative) or not len(positive):
        raise ValueError("pair_figures needs one verdict per side for at least one pair")
    tpr = float(positive.mean())
    tnr = float(1 - negative.mean())
    rng = np.random.default_rng(seed)
    index = rng.integers(0, len(positive), size=(n, len(positive)))
    values = (positive[index].mean(1) + 1 - negative[index].mean(1)) / 2
    lo, hi = np.quantile(values, [0.025, 0.975])
    passed = positive == 1
    flipped = float((negative[passed] == 0).mean()) if passed.any() else math.nan
    return (tpr + tnr) / 2, (float(lo), float(hi)), tpr, 1 - tnr, flipped
