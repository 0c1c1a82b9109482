"""Training pairs whose labels word overlap cannot tell apart: the kinds, the edits, the overlap baseline.

What each kind is and why its label follows: ``verifier_contrast.py``'s docstring (the
script that writes the pairs). The document-side removal is ``evidence_pairs``' (one
piece of code); the claim edits are ``verifier_pairs.edit``'s; the evaluation documents
are kept out by ``verifier_pairs.held_out``.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from assay.grounding._sentences import located_sentences

from .evidence_pairs import aligned_removal, annotated_removal, changed_detail, stems
from .verifier_pairs import _MONTHS, _TOKEN, edit, names
from .verifier_pairs import held_out as held_out_by_evidence

SCHEMA = 1
GENERATOR_VERSION = 1  # bumped when a rule changes: pairs of two versions are not one training set
SETS = ("summedits", "begin", "wice")
DOCUMENT_SIDE = ("removed", "changed")
"""Label 0, the claim word for word the human-checked one, the evidence edited."""
CLAIM_SIDE = ("entity", "number", "negation")
"""Label 0, the evidence as the dev set gives it, the claim edited (SummEdits' protocol)."""
LABEL = {"original": 1, **dict.fromkeys(DOCUMENT_SIDE, 0), **dict.fromkeys(CLAIM_SIDE, 0)}
MAX_EDITED_WORDS = 4
_CALENDAR = {*_MONTHS, "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}


@dataclass(frozen=True)
class ContrastPair:
    """One (evidence, claim, label) example, made from one human-checked supported dev item."""

    id: str  # ``item:kind``
    item: str  # the dev item whose claim and evidence it starts from
    set: str
    group: str  # the item's source-document group (``grouped_cv.full_groups``: ``set/group``)
    document: str  # sha1 of the item's ``context``: its source document
    kind: str
    label: int
    evidence: str  # the contexts as the dev benchmarks read them (WiCE's oracle chunks one a line), maybe edited
    claim: str
    pair_of: str  # the id of the untouched pair (kind "original") this one is contrasted with; "" on it
    change: str  # what the edit did, e.g. "removed 2 sentence(s)", "2019 -> 2021"
    removed: tuple[str, ...] = ()  # kind "removed": the sentences (WiCE: lines) taken out of the evidence

    def to_json(self) -> str:
        return json.dumps({"schema": SCHEMA, "generator": GENERATOR_VERSION, **asdict(self)}, ensure_ascii=False)


# ---- edits ---------------------------------------------------------------------------------------


def edited_words(before: str, after: str) -> int:
    """The words an edit touched: per differing run of tokens, the longer side (an insertion of "not" is 1)."""
    a, b = _TOKEN.findall(before.lower()), _TOKEN.findall(after.lower())
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    return sum(max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal")


def _mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w.,]){re.escape(word)}(?![\w])", text) is not None


def changed_support(
    claim: str, evidence: str, support: Sequence[str], seed: str, document_names: Sequence[str]
) -> tuple[str, str] | None:
    """(evidence with one detail of its support changed, what changed), or None where none applies.

    ``support``: the sentences (or lines) of ``evidence`` that state the claim. The
    options, one drawn: a number or a negation as ``evidence_pairs.changed_detail`` makes
    it in one support sentence (a number the claim gives, changed; "not" after an
    auxiliary followed by a word of the claim), kept only if the old number occurs
    nowhere else in the evidence; or a name the claim and a support sentence share,
    replaced everywhere in the evidence by another name of the same document, so the
    claim's name occurs nowhere.
    """
    rng = random.Random(f"{seed}:{hashlib.sha1(evidence.encode()).hexdigest()}")
    options: list[tuple[str, str]] = []
    for sentence in dict.fromkeys(support):
        start = evidence.find(sentence)
        if start < 0:
            continue
        made = changed_detail(claim, sentence, seed)
        if made is None:
            continue
        new_sentence, change = made
        rest = evidence[:start] + evidence[start + len(sentence) :]
        old = change.split(" -> ")[0] if " -> " in change else ""
        if old and _mentions(rest, old):
            continue  # the claim's number is stated elsewhere too
        options.append((evidence[:start] + new_sentence + evidence[start + len(sentence) :], change))
    proper = set(document_names)
    shared = [n for n in dict.fromkeys(n for s in support for n in names(s)) if n in proper and _mentions(claim, n)]
    for old in shared:
        taken = set(old.split()) | {w for n in names(claim) for w in n.split()}
        pool = [n for n in document_names if not set(n.split()) & taken]
        if pool:
            new = rng.choice(pool)
            renamed = re.sub(rf"(?<![\w.,]){re.escape(old)}(?![\w])", new, evidence)
            if not _mentions(renamed, old):
                options.append((renamed, f"{old} -> {new}"))
    return rng.choice(options) if options else None


@lru_cache(maxsize=1024)
def _sentence_names(text: str) -> tuple[str, ...]:
    """The names of ``text``, in order (cached: a document's summaries share it).

    A name is a capitalised run of one to three words that the text writes capitalised
    mid-sentence somewhere and never in lower case: a word capitalised only where a
    sentence or a speaker's line starts ("Ok", "Client:"), a heading's word ("Share",
    "Proud Of All You Have") and a month or weekday are no names to swap in.
    """
    out: dict[str, None] = {}
    for a, b in located_sentences(text):
        sentence = text[a:b]
        for found in names(sentence):
            n = found.strip("'\"")
            if (
                len(n) > 2
                and len(n.split()) <= 3
                and n not in _CALENDAR
                and re.search(rf"[\w,;]\s+{re.escape(n)}(?![\w])", sentence)
                and not re.search(rf"(?<![\w-]){re.escape(n.lower())}(?![\w-])", text)
            ):
                out.setdefault(n)
    return tuple(out)


def item_pairs(name: str, row: dict[str, Any], group: str, seed: int) -> list[ContrastPair]:
    """The pairs of one supported dev item: the original, its document-side and claim-side negatives.

    Deterministic for ``seed`` and the item (``random.Random(f"{seed}:{id}")``), so adding
    items does not change the others' pairs.
    """
    from .devsets import contexts_of

    if int(row["label"]) != 1:
        return []
    item, claim = str(row["id"]), str(row["claim"])
    rng = random.Random(f"{seed}:{item}")
    evidence = "\n".join(contexts_of(name, row))
    document_names = _sentence_names(str(row["context"]))
    document = _sha1(str(row["context"]))
    out: list[ContrastPair] = []

    def add(kind: str, text: str, change: str, statement: str = claim, removed: tuple[str, ...] = ()) -> None:
        pair_of = "" if kind == "original" else f"{item}:original"
        out.append(
            ContrastPair(
                f"{item}:{kind}",
                item,
                name,
                group,
                document,
                kind,
                LABEL[kind],
                text,
                statement,
                pair_of,
                change,
                removed,
            )
        )

    add("original", evidence, "")

    # document side: the claim fixed, its support removed, or one detail of it changed
    support: tuple[str, ...] = ()
    if name == "wice":
        made = annotated_removal(row)
        if not isinstance(made, str):
            kept, support, _ = made
            add("removed", "\n".join(kept), f"removed {len(support)} annotated line(s)", removed=support)
    else:
        aligned = aligned_removal(claim, evidence)
        if not isinstance(aligned, str):
            rest, support, _, _ = aligned
            add("removed", rest, f"removed {len(support)} sentence(s)", removed=support)
        elif aligned == "nothing left":  # too short to lose a sentence: the whole text is the support
            support = (evidence,)
    if support:
        changed = changed_support(claim, evidence, support, f"{seed}:{item}", document_names)
        if changed is not None:
            add("changed", *changed)

    # claim side: SummEdits' protocol, evidence unchanged
    for kind in CLAIM_SIDE:
        result = edit(kind, claim, [claim], [], document_names, rng)
        if result is None:
            continue
        statement, change = result
        if not 1 <= edited_words(claim, statement) <= MAX_EDITED_WORDS:
            continue
        if kind == "number" and _mentions(evidence, change.split(" -> ")[-1]):
            continue  # the new number is in the evidence: it may be true there
        if kind == "entity" and change.split(" -> ")[0] not in {*document_names, *_sentence_names(claim)}:
            continue  # a word capitalised only at a sentence start ("Instead") is no name
        add(kind, evidence, change, statement)
    return out


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def generate(rows_by_set: dict[str, Sequence[dict[str, Any]]], seed: int) -> Iterator[ContrastPair]:
    """Every supported item's pairs, groups over all the rows given (``grouped_cv.full_groups``)."""
    from .grouped_cv import full_groups

    groups = full_groups(rows_by_set)
    for name, rows in rows_by_set.items():
        for row in rows:
            yield from item_pairs(name, row, groups[row["id"]], seed)


def read_pairs(path: Path) -> list[ContrastPair]:
    """Pairs written by ``verifier_contrast.py``; a line of another schema or generator version is refused."""
    fields = set(ContrastPair.__dataclass_fields__)
    out = []
    with path.open() as lines:
        for number, line in enumerate(lines, start=1):
            record = json.loads(line)
            if record.get("schema") != SCHEMA or record.get("generator") != GENERATOR_VERSION:
                raise SystemExit(
                    f"{path}:{number}: schema {record.get('schema')} / generator {record.get('generator')}, "
                    f"expected {SCHEMA} / {GENERATOR_VERSION}: regenerate with benchmarks/verifier_contrast.py"
                )
            record["removed"] = tuple(record.get("removed", ()))
            out.append(ContrastPair(**{k: v for k, v in record.items() if k in fields}))
    return out


# ---- keeping evaluation documents out ------------------------------------------------------------


def held_out(
    pairs: Sequence[ContrastPair], held_rows: dict[str, Sequence[dict[str, Any]]], group_of: dict[str, str]
) -> list[ContrastPair]:
    """``pairs`` without any made from a held-out item's document: ``verifier_pairs.held_out``, per item.

    An item's pairs stand or fall with its original (its evidence untouched): a pair whose
    support was removed or changed no longer shows the sentence it shares with a held-out
    document, but it was made from it.
    """
    originals = [p for p in pairs if p.kind == "original"]
    kept = {p.item for p in held_out_by_evidence(originals, held_rows, group_of)}
    return held_out_by_evidence([p for p in pairs if p.item in kept], held_rows, group_of)


# ---- the word-overlap baseline ------------------------------------------------------------------


def overlap(claim: str, evidence: str) -> float:
    """Max over the evidence's sentences of the share of the claim's content stems the sentence contains.

    Stems are ``evidence_pairs.stems`` (stopwords out, one ending cut); sentences are
    ``located_sentences`` of each line. 0 for a claim without content stems.
    """
    wanted = stems(claim)
    if not wanted:
        return 0.0
    return max((len(wanted & s) / len(wanted) for s in _sentence_stems(evidence)), default=0.0)


def copied(claim: str, evidence: str) -> float:
    """The share of the claim's word bigrams (every word, lower-cased) that occur in the evidence.

    1.0 for a claim copied from the evidence or made of copied pieces; an abstractive
    claim scores low however true it is. 0 for a claim of one word.
    """
    words = _TOKEN.findall(claim.lower())
    wanted = set(itertools.pairwise(words))
    if not wanted:
        return 0.0
    return len(wanted & _bigrams(evidence)) / len(wanted)


@lru_cache(maxsize=4096)
def _sentence_stems(evidence: str) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(stems(line[a:b])) for line in evidence.split("\n") for a, b in located_sentences(line))


@lru_cache(maxsize=4096)
def _bigrams(evidence: str) -> frozenset[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for line in evidence.split("\n"):
        for a, b in located_sentences(line):
            words = _TOKEN.findall(line[a:b].lower())
            out.update(itertools.pairwise(words))
    return frozenset(out)


def separability(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """Balanced accuracy of "overlap >= t means supported" at the best t for these very scores.

    The threshold is chosen on the scored pairs, so the figure is an upper bound on what
    the baseline could reach: 0.5 means no threshold separates the labels at all.
    """
    if not len(positives) or not len(negatives):
        return float("nan")
    pos, neg = np.sort(np.asarray(positives, dtype=float)), np.sort(np.asarray(negatives, dtype=float))
    cuts = np.unique(np.concatenate([pos, neg]))
    tpr = 1 - np.searchsorted(pos, cuts, side="left") / len(pos)  # share of positives >= t
    tnr = np.searchsorted(neg, cuts, side="left") / len(neg)  # share of negatives < t
    return float(max(0.5, np.max((tpr + tnr) / 2)))  # 0.5: t above every score, nothing supported
