"""Rule-based (evidence, statement, label) pairs from real documents: the edits, the groups, ``held_out``.

What each edit is and why the label follows from it: ``verifier_data.py``'s docstring
(the script that writes the pairs); ``verifier_head.py`` and ``evidence_use.py`` build on them.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, TypeVar

from assay.grounding._details import detail_features
from assay.grounding._details._lexicon import STOPWORDS
from assay.grounding._sentences import located_sentences

SCHEMA = 1
GENERATOR_VERSION = 1  # bumped when an edit rule changes: pairs of two versions are not one training set
SUPPORTED = ("copy", "compress", "paraphrase", "fuse")
UNSUPPORTED = ("entity", "role", "number", "negation", "antonym", "swap", "attribute", "clause", "scope")
LABEL = {**dict.fromkeys(SUPPORTED, 1), **dict.fromkeys(UNSUPPORTED, 0)}
SETS = ("summedits", "begin", "wice")


@dataclass(frozen=True)
class Document:
    """One source text, with the group the dev benchmarks put it in (``set/group``)."""

    set: str
    group: str
    text: str

    @property
    def sha1(self) -> str:
        return hashlib.sha1(self.text.encode()).hexdigest()


@dataclass(frozen=True)
class Pair:
    """One (evidence, statement, label) example and how it was made."""

    id: str
    set: str
    group: str
    document: str  # the document's sha1
    window: str  # id of the evidence window: pairs sharing it share the evidence
    kind: str
    label: int
    evidence: str
    statement: str
    source: str  # the anchor sentence the statement was made from
    change: str  # what the edit did, e.g. "forward -> goalkeeper"

    def to_json(self) -> str:
        return json.dumps({"schema": SCHEMA, "generator": GENERATOR_VERSION, **asdict(self)}, ensure_ascii=False)


# ---- documents ----------------------------------------------------------------------------------


def documents(rows_by_set: dict[str, Sequence[dict[str, Any]]]) -> list[Document]:
    """The distinct contexts of the dev rows, each with its full-file group; sorted, so the order is fixed."""
    from _lib.grouped_cv import document_groups

    found: dict[tuple[str, str], Document] = {}
    for name, rows in rows_by_set.items():
        group_of = document_groups(name, rows)
        for row in rows:
            text = str(row["context"])
            doc = Document(name, f"{name}/{group_of[row['id']]}", text)
            found.setdefault((name, doc.sha1), doc)
    return sorted(found.values(), key=lambda d: (d.set, d.sha1))


# ---- words and edits ----------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_NAME = re.compile(r"\b[A-Z][a-zA-Z'-]+(?:\s+(?:of\s+|de\s+|van\s+|von\s+)?[A-Z][a-zA-Z'-]+)*")
_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\d,]*\d)|(?<![\w.,])\d+(?:\.\d+)?(?![\w])")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip

_SYNONYMS: dict[str, str] = {
    "said": "stated", "says": "states", "bought": "purchased", "purchased": "bought", "buy": "purchase",
    "big": "large", "large": "big", "begin": "start", "began": "started", "started": "began",
    "start": "begin", "helped": "assisted", "help": "assist", "showed": "demonstrated",
    "shows": "demonstrates", "nearly": "almost", "almost": "nearly", "quickly": "rapidly",
    "children": "kids", "kids": "children", "movie": "film", "film": "movie", "movies": "films",
    "films": "movies", "famous": "well-known", "important": "significant", "tried": "attempted",
    "died": "passed away", "company": "firm", "car": "automobile", "shop": "store", "store": "shop",
    "main": "primary", "used": "utilized", "uses": "utilizes", "needed": "required", "needs": "requires",
    "allowed": "permitted", "allow": "permit", "chose": "selected", "choose": "select", "created": "produced",
    "built": "constructed", "build": "construct", "huge": "enormous", "enormous": "huge",
    "difficult": "hard", "easy": "simple", "ended": "finished", "finished": "completed",
    "completed": "finished", "happy": "glad", "because": "since", "received": "got", "wanted": "wished",
    "also": "as well", "maybe": "perhaps", "perhaps": "maybe", "currently": "now", "often": "frequently",
}  # fmt: skip
_ANTONYMS: dict[str, str] = {}
for _a, _b in (
    ("increased", "decreased"), ("increase", "decrease"), ("rose", "fell"), ("rise", "fall"),
    ("higher", "lower"), ("high", "low"), ("before", "after"), ("earlier", "later"), ("won", "lost"),
    ("win", "lose"), ("more", "less"), ("first", "last"), ("best", "worst"), ("opened", "closed"),
    ("accepted", "rejected"), ("agreed", "refused"), ("success", "failure"), ("successful", "unsuccessful"),
    ("positive", "negative"), ("strong", "weak"), ("large", "small"), ("long", "short"), ("old", "young"),
    ("north", "south"), ("east", "west"), ("cheap", "expensive"), ("easy", "difficult"), ("full", "empty"),
    ("male", "female"), ("began", "ended"), ("bought", "sold"), ("buy", "sell"), ("true", "false"),
    ("same", "different"), ("included", "excluded"), ("supported", "opposed"), ("loved", "hated"),
    ("love", "hate"), ("good", "bad"), ("better", "worse"), ("increasing", "decreasing"), ("gained", "lost"),
    ("private", "public"), ("internal", "external"), ("minimum", "maximum"), ("most", "least"),
):  # fmt: skip
    _ANTONYMS[_a], _ANTONYMS[_b] = _b, _a
_ROLES = (
    "goalkeeper defender midfielder forward striker captain coach manager",
    "chairman president director chief executive founder treasurer secretary spokesman",
    "father mother son daughter brother sister husband wife uncle aunt grandfather grandmother",
    "actor singer writer producer director composer painter",
    "teacher student professor",
    "doctor nurse patient",
    "buyer seller",
    "king queen prince princess",
    "mayor governor senator",
    "winner runner-up",
)
_ROLE_GROUP = {w: tuple(g.split()) for g in _ROLES for w in g.split()}
_SCOPE = (
    (r"\bsome\b", "all"), (r"\bmany\b", "all"), (r"\bmost\b", "all"), (r"\bseveral\b", "all"),
    (r"\ba few\b", "all"), (r"\bsometimes\b", "always"), (r"\boften\b", "always"), (r"\busually\b", "always"),
    (r"\bmay\b", "will"), (r"\bmight\b", "will"), (r"\bcould\b", "will"), (r"\bone of the\b", "the only"),
    (r"\bpartly\b", "entirely"), (r"\bmostly\b", "entirely"), (r"\bpart of\b", "all of"),
    (r"\babout\b(?= \d)", "exactly"),
)  # fmt: skip
_AUX = re.compile(
    r"\b(is|was|are|were|will|can|could|would|should|has|have|had|must|does|did|do)\b(\s+)(?!not\b|n't)(?=[a-z])"
)
_NEGATED = re.compile(r"\b(is|was|are|were|will|can|could|would|should|has|have|had|must|does|did|do)\s+not\b|n't\b")
_UNITS = (
    ("km", "miles"), ("kilometres", "miles"), ("kilometers", "miles"), ("kg", "pounds"), ("metres", "feet"),
    ("meters", "feet"), ("minutes", "hours"), ("hours", "days"), ("days", "weeks"), ("weeks", "months"),
    ("months", "years"), ("million", "billion"), ("thousand", "million"), ("dollars", "euros"), ("percent", "points"),
)  # fmt: skip
_UNIT = {a: b for a, b in _UNITS} | {b: a for a, b in _UNITS}
_TRAILING = re.compile(
    r",\s+(?:and|but|while|which|who|although|as well as|including|[a-z]+ing)\b[^,;]*[.!?]?$"
)  # a clause whose removal keeps the rest true


def _case_like(word: str, model: str) -> str:
    if model.isupper() and len(model) > 1:
        return word.upper()
    if model[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def names(sentence: str) -> list[str]:
    """Capitalised runs, without a sentence-initial function word ("The", "He") and without "I"."""
    out = []
    for m in _NAME.finditer(sentence):
        words = m.group().split()
        while words and words[0].lower() in STOPWORDS:
            words = words[1:]
        if not words or (len(words) == 1 and words[0] in ("I", "I'm", "I'd", "I'll")):
            continue
        if len(words) == 1 and m.start() == 0 and words[0].lower() in _SYNONYMS | _ANTONYMS:
            continue
        out.append(" ".join(words))
    return list(dict.fromkeys(out))


def _replace_word(text: str, pattern: str, new: str, rng: random.Random) -> tuple[str, str] | None:
    hits = list(re.finditer(pattern, text))
    if not hits:
        return None
    m = rng.choice(hits)
    replacement = _case_like(new, m.group())
    return text[: m.start()] + replacement + text[m.end() :], f"{m.group()} -> {replacement}"


def _changed_number(digits: str, rng: random.Random) -> str:
    value = float(digits.replace(",", ""))
    if "." in digits:
        places = len(digits.split(".")[1])
        new = value + rng.choice((-1, 1)) * max(10**-places, round(value * rng.uniform(0.1, 0.5), places))
        return f"{max(new, 0):.{places}f}"
    n = int(value)
    if 1900 <= n <= 2099:
        n2 = n + rng.choice((-3, -2, -1, 1, 2, 3))
    elif n < 10:
        n2 = rng.choice([x for x in range(2, 13) if x != n])
    else:
        n2 = max(1, n + rng.choice((-1, 1)) * max(1, round(n * rng.uniform(0.1, 0.5))))
        if n2 == n:
            n2 = n + 1
    return f"{n2:,}" if "," in digits else str(n2)


def _lower_first(sentence: str) -> str:
    first = sentence.split(maxsplit=1)[0] if sentence.split() else ""
    return sentence[:1].lower() + sentence[1:] if first.lower() in STOPWORDS and first != "I" else sentence


def _body(sentence: str) -> str:
    return sentence.rstrip().rstrip(".!?").rstrip()


def edit(
    kind: str,
    anchor: str,
    window: Sequence[str],
    others: Sequence[str],
    document_names: Sequence[str],
    rng: random.Random,
) -> tuple[str, str] | None:
    """(statement, change) made from ``anchor`` by one edit of ``kind``, or None where it does not apply.

    ``window``: the evidence sentences (the anchor among them); ``others``: the document's
    sentences outside the window; ``document_names``: every name of the document.
    """
    if kind == "copy":
        return anchor, "copy"
    if kind == "compress":
        m = re.search(r"\s*\([^()]{3,}\)", anchor)
        if m:
            out = anchor[: m.start()] + anchor[m.end() :]
        else:
            t = _TRAILING.search(anchor)
            if t is None:
                return None
            out = anchor[: t.start()] + "."
        if len(_WORD.findall(out)) < 5:
            return None
        return out, f"dropped {anchor[len(out) - 1 :].strip()[:60]!r}" if not m else f"dropped {m.group().strip()!r}"
    if kind == "paraphrase":
        words = [m for m in _WORD.finditer(anchor) if m.group().lower() in _SYNONYMS]
        if not words:
            return None
        out, changes = anchor, []
        for m in reversed(words):
            new = _case_like(_SYNONYMS[m.group().lower()], m.group())
            out = out[: m.start()] + new + out[m.end() :]
            changes.append(f"{m.group()} -> {new}")
        features = detail_features(out, anchor)
        if features.missing_numbers or features.missing_entities:
            return None
        return out, ", ".join(reversed(changes))
    if kind == "fuse":
        i = window.index(anchor)
        if i + 1 >= len(window):
            return None
        return f"{_body(anchor)}, and {_lower_first(window[i + 1])}", "fused with the next sentence"
    if kind == "entity":
        here = names(anchor)
        in_window = {w for s in window for n in names(s) for w in n.split()}
        pool = [n for n in document_names if not set(n.split()) & in_window]
        if not here or not pool:
            return None
        old = rng.choice(here)
        return _replace_word(anchor, r"\b" + re.escape(old) + r"\b", rng.choice(pool), rng)
    if kind == "attribute":
        here = names(anchor)
        near = [
            n
            for s in window
            if s != anchor
            for n in names(s)
            if not set(n.split()) & {w for h in here for w in h.split()}
        ]
        if not here or not near:
            return None
        old = rng.choice(here)
        return _replace_word(anchor, r"\b" + re.escape(old) + r"\b", rng.choice(near), rng)
    if kind == "role":
        hits = [m for m in _WORD.finditer(anchor) if m.group().lower() in _ROLE_GROUP]
        if not hits:
            return None
        m = rng.choice(hits)
        old = m.group().lower()
        text = " ".join(window + list(others)).lower()
        choices = [r for r in _ROLE_GROUP[old] if r != old and r not in anchor.lower()]
        in_doc = [r for r in choices if re.search(r"\b" + re.escape(r) + r"\b", text)]
        new = _case_like(rng.choice(in_doc or choices), m.group())
        return anchor[: m.start()] + new + anchor[m.end() :], f"{m.group()} -> {new}"
    if kind == "number":
        options: list[tuple[int, int, str]] = []
        for m in _NUMBER.finditer(anchor):
            options.append((m.start(), m.end(), _changed_number(m.group(), rng)))
        for m in re.finditer(r"\b(" + "|".join(_MONTHS) + r")\b", anchor):
            options.append((m.start(), m.end(), rng.choice([x for x in _MONTHS if x != m.group()])))
        for m in re.finditer(r"(?<=\d )(" + "|".join(map(re.escape, _UNIT)) + r")\b", anchor):
            options.append((m.start(), m.end(), _UNIT[m.group()]))
        if not options:
            return None
        start, end, new = rng.choice(options)
        return anchor[:start] + new + anchor[end:], f"{anchor[start:end]} -> {new}"
    if kind == "negation":
        negated = list(_NEGATED.finditer(anchor))
        if negated:
            m = rng.choice(negated)
            if m.group().startswith("n't"):
                stem = anchor[: m.start()]
                fixed = {"wo": "will", "ca": "can", "sha": "shall"}.get(
                    stem.split()[-1].lower() if stem.split() else ""
                )
                if fixed is not None:
                    stem = stem[: stem.rfind(" ") + 1] + _case_like(fixed, stem.split()[-1])
                return stem + anchor[m.end() :], "removed n't"
            return anchor[: m.start()] + m.group(1) + anchor[m.end() :], f"removed 'not' after {m.group(1)!r}"
        aux = list(_AUX.finditer(anchor))
        if not aux:
            return None
        m = rng.choice(aux)
        return anchor[: m.start()] + m.group(1) + " not" + m.group(2) + anchor[m.end() :], f"'not' after {m.group(1)!r}"
    if kind == "antonym":
        hits = [m for m in _WORD.finditer(anchor) if m.group().lower() in _ANTONYMS]
        if not hits:
            return None
        m = rng.choice(hits)
        new = _case_like(_ANTONYMS[m.group().lower()], m.group())
        return anchor[: m.start()] + new + anchor[m.end() :], f"{m.group()} -> {new}"
    if kind == "swap":
        here = [n for n in names(anchor) if len(re.findall(r"\b" + re.escape(n) + r"\b", anchor)) == 1]
        pairs = [(a, b) for a in here for b in here if a < b and not set(a.split()) & set(b.split())]
        if not pairs:
            return None
        a, b = rng.choice(pairs)
        out = re.sub(r"\b(" + re.escape(a) + "|" + re.escape(b) + r")\b", lambda m: b if m.group() == a else a, anchor)
        return out, f"{a} <-> {b}"
    if kind == "clause":
        outside = [s for s in others if 4 <= len(_WORD.findall(s)) <= 25]
        if outside and rng.random() < 0.5:
            added = rng.choice(outside)
            return f"{_body(anchor)}, and {_lower_first(_body(added))}.", "added 'and' + outside sentence"
        inside = [s for s in [*window, *others] if s != anchor and 4 <= len(_WORD.findall(s)) <= 25]
        if not inside:
            return None
        added = rng.choice(inside)
        return f"{_body(anchor)} because {_lower_first(_body(added))}.", "added a cause ('because')"
    if kind == "scope":
        hits = [(p, new) for p, new in _SCOPE if re.search(p, anchor, flags=re.I)]
        if not hits:
            return None
        pattern, new = rng.choice(hits)
        m = re.search(pattern, anchor, flags=re.I)
        assert m is not None
        replacement = _case_like(new, m.group())
        return anchor[: m.start()] + replacement + anchor[m.end() :], f"{m.group()} -> {replacement}"
    raise ValueError(f"unknown edit kind {kind!r}; expected one of {', '.join(LABEL)}")


# ---- pairs ---------------------------------------------------------------------------------------


@lru_cache(maxsize=65536)
def _sentences(text: str) -> tuple[str, ...]:
    return tuple(" ".join(text[a:b].split()) for a, b in located_sentences(text))


def _usable(sentence: str) -> bool:
    words = _WORD.findall(sentence)
    return 6 <= len(words) <= 60 and sentence[-1:] in ".!?\"'" and not sentence.startswith(("(", "#", "*", "-"))


_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")


def normalise(text: str) -> str:
    """Lowercase words and numbers only: two statements equal here say the same thing word for word."""
    return " ".join(w.lower() for w in _TOKEN.findall(text))


def pairs_of(
    doc: Document,
    seed: int,
    *,
    window_chars: int = 700,
    anchors_per_chars: int = 500,
    max_anchors: int = 12,
    supported_per_window: int = 2,
    unsupported_per_window: int = 3,
) -> list[Pair]:
    """The pairs of one document (deterministic for ``seed`` and the document's text)."""
    rng = random.Random(f"{seed}:{doc.sha1}")
    sentences = list(_sentences(doc.text))
    candidates = [i for i, s in enumerate(sentences) if _usable(s)]
    if not candidates:
        return []
    k = max(1, min(max_anchors, len(doc.text) // anchors_per_chars, len(candidates)))
    anchors = sorted(rng.sample(candidates, k))
    document_names = list(dict.fromkeys(n for s in sentences for n in names(s)))
    out: list[Pair] = []
    for a in anchors:
        lo, hi = a, a + 1
        size = len(sentences[a])
        while True:  # grow the window alternately right and left up to window_chars
            grew = False
            for side in (1, -1):
                j = hi if side == 1 else lo - 1
                if 0 <= j < len(sentences) and size + len(sentences[j]) + 1 <= window_chars:
                    size += len(sentences[j]) + 1
                    lo, hi = (lo, hi + 1) if side == 1 else (lo - 1, hi)
                    grew = True
            if not grew:
                break
        window = sentences[lo:hi]
        others = sentences[:lo] + sentences[hi:]
        evidence = " ".join(window)
        made: dict[str, tuple[str, str]] = {}
        seen = {normalise(s) for s in window}
        for kind in LABEL:
            result = edit(kind, sentences[a], window, others, document_names, rng)
            if result is None:
                continue
            statement, change = result
            if LABEL[kind] == 0 and normalise(statement) in seen:
                continue  # an edit that gives back a sentence of the evidence changed nothing
            made[kind] = (statement, change)
        chosen = []
        for labels, n in ((SUPPORTED, supported_per_window), (UNSUPPORTED, unsupported_per_window)):
            present = [kd for kd in labels if kd in made]
            # a copy applies everywhere (and ships without a judge call): only where too little else does
            rare = [kd for kd in present if kd != "copy"]
            picked = rng.sample(rare, min(n, len(rare)))
            chosen += picked + rng.sample(
                sorted(set(present) - set(picked)), min(n - len(picked), len(present) - len(picked))
            )
        window_id = f"{doc.set}:{doc.sha1[:12]}:{a}"
        for kind in sorted(chosen, key=list(LABEL).index):
            statement, change = made[kind]
            out.append(
                Pair(
                    id=f"{window_id}:{kind}",
                    set=doc.set,
                    group=doc.group,
                    document=doc.sha1,
                    window=window_id,
                    kind=kind,
                    label=LABEL[kind],
                    evidence=evidence,
                    statement=statement,
                    source=sentences[a],
                    change=change,
                )
            )
    return out


def generate(docs: Iterable[Document], seed: int, **options: Any) -> Iterator[Pair]:
    for doc in docs:
        yield from pairs_of(doc, seed, **options)


class _Written(Protocol):
    def to_json(self) -> str: ...


def write_pairs(path: Path, pairs: Sequence[_Written]) -> None:
    """``pairs`` as JSON lines at ``path``, whole or not at all (a temporary file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(p.to_json() + "\n" for p in pairs))
    tmp.replace(path)


def read_pairs(path: Path) -> list[Pair]:
    """Pairs written by this script; a line of another schema or generator version is an error naming it."""
    fields = set(Pair.__dataclass_fields__)
    out = []
    with path.open() as lines:
        records = [json.loads(line) for line in lines]
    for number, record in enumerate(records, start=1):
        if record.get("schema") != SCHEMA or record.get("generator") != GENERATOR_VERSION:
            raise SystemExit(
                f"{path}:{number}: schema {record.get('schema')} / generator {record.get('generator')}, "
                f"expected {SCHEMA} / {GENERATOR_VERSION}: regenerate with benchmarks/verifier_data.py"
            )
        out.append(Pair(**{k: v for k, v in record.items() if k in fields}))
    return out


# ---- keeping evaluation documents out ------------------------------------------------------------


class FromDocument(Protocol):
    """What ``held_out`` reads of a pair: this generator's ``Pair`` and ``contrast_pairs.ContrastPair`` alike."""

    @property
    def group(self) -> str: ...
    @property
    def document(self) -> str: ...
    @property
    def evidence(self) -> str: ...


P = TypeVar("P", bound=FromDocument)


def held_out(pairs: Sequence[P], held_rows: dict[str, Sequence[dict[str, Any]]], group_of: dict[str, str]) -> list[P]:
    """``pairs`` without any that come from a held-out item's document.

    ``held_rows``: set -> the held-out dev rows; ``group_of``: item id -> its full-file
    group (``set/group``, as :func:`documents` writes it). A pair is dropped when its group
    is a held-out item's group, or when its document or any of its evidence sentences is
    text of a held-out item's contexts (the same sentence in two documents of different
    groups).
    """
    from _lib.devsets import contexts_of

    groups = {group_of[r["id"]] for rows in held_rows.values() for r in rows}
    texts: set[str] = set()
    documents_held: set[str] = set()
    for name, rows in held_rows.items():
        for r in rows:
            for text in {str(r["context"]), *contexts_of(name, r)}:
                documents_held.add(hashlib.sha1(text.encode()).hexdigest())
                texts.update(normalise(s) for s in _sentences(text))
    texts.discard("")
    return [
        p
        for p in pairs
        if p.group not in groups
        and p.document not in documents_held
        and not any(normalise(s) in texts for s in _sentences(p.evidence))
    ]
