"""Does the verifier read the evidence? Supported dev claims against their evidence without the support (issue 64).

Each pair is one human-labelled SUPPORTED dev item, judged twice with the claim word for
word the same:

positive (label 1)
    the item as the dev benchmarks read it (``judge_agreement.contexts_of``: SummEdits'
    document, BEGIN's knowledge snippet, WiCE's oracle chunks);
negative (label 0)
    the same contexts without the sentences that support the claim, so the label flips by
    construction while every word of the claim stays.

Which sentences support the claim is found without a judge:

- **WiCE**: the annotators' own ``supporting_sentences`` (line numbers of the cited
  article; every alternative set). Every line of the oracle chunks whose text is one of
  those lines is removed; a pair whose annotated lines are not in its chunks is skipped.
- **SummEdits, BEGIN**: lexical alignment. The claim's content stems (lower-cased words
  without ``_lexicon.STOPWORDS``, plural and tense endings cut: :func:`stems`) are
  covered greedily by context sentences (:func:`located_sentences`), the sentence that
  adds the most uncovered stems first, up to ``MAX_REMOVED`` sentences, and removed one
  after another until the rest of the context has lost at least ``MIN_LOST_SHARE`` of the
  claim's stems (and at least one): stems the claim uses and the remaining text never
  does, so what the claim says with them is no longer stated. A pair is skipped when the
  removed sentences cover under ``MIN_ALIGNED`` of the claim's stems (no sentence
  supports it word for word: an abstractive summary), when the loss is not reached
  within ``MAX_REMOVED`` sentences (the claim is restated elsewhere), or when under
  ``MIN_LEFT_CHARS`` characters remain (an empty context is no test of reading).

Every skip is counted by its reason. Known noise: a claim can still be supported by a
paraphrase left in the context (a stem check does not see synonyms), so a verdict of
"supported" on a negative is an upper bound on the verifier's failure, not an exact count.

A pair keeps its item's source-document group (``grouped_cv.document_groups`` over the
whole dev file): both sides of a pair are in one group, and an item is in one group only.

The figures (:func:`figures`): on the pairs, balanced accuracy of the verdicts (the
positive's TPR and the negative's TNR), with a pair bootstrap 95% CI (both sides of a
pair resampled together), the share of negatives still called supported, and the same
for the judge's P >= 0.5 without the detail checks' veto (what the model itself reads).

    python benchmarks/evidence_use.py --show 3                  # pairs, skips and examples
    python benchmarks/evidence_use.py run --judge local         # the shipped verifier on both sides (cached)
    python benchmarks/evidence_use.py report                    # the "evidence use" row from the cache
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.grounding._details._lexicon import STOPWORDS
from assay.grounding._sentences import located_sentences

SETS = ("summedits", "begin", "wice")
SIZES = {"summedits": 500, "begin": 300, "wice": 150}
"""``judge_agreement.load``'s seeded samples (seed 7): the items the verifier's standing rows use."""
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
        """The two sides as dev rows (``judge_agreement.contexts_of`` reads the right field for the set)."""
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


def _sentences(text: str) -> list[tuple[int, int]]:
    return [(a, b) for a, b in located_sentences(text) if text[a:b].strip()]


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
    from verifier_data import _AUX, _NEGATED, _NUMBER, _changed_number

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

    ``groups``: item id -> ``set/source document`` (``verifier_data.full_groups`` over the
    whole dev files, so a group never depends on the sample).
    """
    from judge_agreement import contexts_of

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
    from judge_agreement import load
    from verifier_data import full_groups, read_rows

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


def verdicts(entry: dict[str, Any], decided_by: str) -> int | None:
    """An entry's verdict: ``verifier`` as shipped (veto included), ``p`` the judge's P >= 0.5 alone (a copy is 1)."""
    if entry.get("v") is None:
        return None
    if decided_by == "verifier":
        return int(entry["v"])
    if entry.get("p") is None:  # decided without a judge call: a copy (1) or text addressed to the judge (0)
        return int(entry["v"])
    return int(float(entry["p"]) >= 0.5)


def rows_of(pairs: Sequence[EvidencePair], entries: dict[str, dict[str, Any]], seed: int) -> tuple[list[Row], int]:
    """Per set and over all sets, per way of deciding; and how many pairs lack a verdict on a side."""
    out: list[Row] = []
    complete = [p for p in pairs if p.id in entries and p.id + NEGATIVE_SUFFIX in entries]
    missing = 0
    for decided_by in ("verifier", "p"):
        judged: list[tuple[str, int, int]] = []
        for p in complete:
            a = verdicts(entries[p.id], decided_by)
            b = verdicts(entries[p.id + NEGATIVE_SUFFIX], decided_by)
            if a is None or b is None:
                missing += decided_by == "verifier"
                continue
            judged.append((p.set, a, b))
        for name in (*SETS, "all"):
            mine = [(a, b) for s, a, b in judged if name in (s, "all")]
            if not mine:
                continue
            pos = np.array([a for a, _ in mine], dtype=np.int64)
            neg = np.array([b for _, b in mine], dtype=np.int64)
            ba, ci, tpr, still, flipped = pair_figures(pos, neg, seed)
            out.append(Row(name, decided_by, len(mine), ba, ci, tpr, still, flipped))
    return out, missing


def print_rows(rows: Sequence[Row], out: Any = print) -> None:
    out(
        f"  {'set':10s} {'decided by':22s} {'pairs':>5s}  BA [95% CI, pairs resampled]   TPR    still supported"
        "  flipped"
    )
    for r in rows:
        label = "verifier as shipped" if r.decided_by == "verifier" else "judge's P >= 0.5 alone"
        out(
            f"  {r.set:10s} {label:22s} {r.pairs:5d}  {r.balanced_accuracy:.3f} [{r.ci95[0]:.3f}-{r.ci95[1]:.3f}]"
            f"            {r.tpr:.3f}  {r.still_supported:.3f}            {r.flipped_of_passed:.3f}"
        )


# ---- running the shipped verifier ---------------------------------------------------------------


def read_entries(paths: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """Verdict entries by item id from JSONL files (this script's cache or ``hidden_states.extract``'s meta)."""
    entries: dict[str, dict[str, Any]] = {}
    for path in paths:
        if path.exists():
            with path.open() as lines:
                for line in lines:
                    entry = json.loads(line)
                    entries.setdefault(entry["id"], entry)
    return entries


async def run(judge: Any, pairs: Sequence[EvidencePair], path: Path) -> None:
    """Judge both sides of every pair with the shipped verifier (reasons left out), appending to ``path``.

    Resumes: sides already in ``path`` are not judged again. The two sides of a pair are
    judged one after the other, so the negative reuses the positive's prompt prefix up to
    the first removed sentence.
    """
    from judge_agreement import contexts_of

    from assay.grounding._verify import StatementVerifier

    verifier = StatementVerifier(method="threshold", reasons="none")
    done = set(read_entries([path]))
    todo = [(p.set, row) for p in pairs for row in p.rows() if row["id"] not in done]
    started = time.perf_counter()
    with path.open("a") as out:
        for k, (name, row) in enumerate(todo, start=1):
            t0 = time.perf_counter()
            (outcome,) = await verifier.verify(contexts_of(name, row), [row["claim"]], judge)
            verdict = outcome.verdict
            details = (verdict.details or {}) if verdict is not None else {}
            entry = {
                "id": row["id"],
                "label": row["label"],
                "v": None if verdict is None else int(verdict.value),
                "p": outcome.probability,
                "vetoed": details.get("vetoed_by", []),
                "verbatim": bool(details.get("verbatim")),
                "s": time.perf_counter() - t0,
                "failure": outcome.failure.detail if outcome.failure is not None else None,
            }
            out.write(json.dumps(entry) + "\n")
            out.flush()
            elapsed = time.perf_counter() - started
            print(f"\r{k}/{len(todo)} ({elapsed / k:.1f} s a side)", end="", file=sys.stderr, flush=True)
    if todo:
        print(file=sys.stderr)


def cache_path(judge: Any, seed: int) -> Path:
    from judge_agreement import CACHE, model_slug

    return CACHE / f"evidence-{model_slug(judge)}-s{seed}.jsonl"


def show(pairs: Sequence[EvidencePair], skipped: Counter[str], samples: dict[str, Any], k: int) -> None:
    for name in SETS:
        supported = sum(int(r["label"]) == 1 for r in samples[name])
        made = [p for p in pairs if p.set == name]
        skips = {reason.split(": ", 1)[1]: n for reason, n in skipped.items() if reason.startswith(name + ":")}
        removed = np.mean([len(p.removed) for p in made]) if made else 0.0
        print(
            f"{name}: {len(made)} pairs from {supported} supported items of {len(samples[name])} "
            f"(skipped: {', '.join(f'{r} {n}' for r, n in sorted(skips.items())) or 'none'}); "
            f"{removed:.1f} sentences removed on average, {len({p.group for p in made})} source documents"
        )
        for p in made[:k]:
            print(f"  [{p.id}] claim: {p.claim[:200]!r}")
            if p.part != p.claim:
                print(f"      the part whose support is removed: {p.part[:200]!r}")
            if p.how.startswith("changed"):
                print(f"      {p.how} in {p.removed[0][:200]!r}")
            else:
                for sentence in p.removed:
                    print(f"      removed: {sentence[:200]!r}")
            print(f"      stems no longer in the context: {', '.join(p.lost)}")
    print(f"all: {len(pairs)} pairs")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", default="show", choices=("show", "run", "report", "write"))
    parser.add_argument("--show", type=int, default=2, help="examples per set")
    parser.add_argument("--judge", default="local")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--entries", type=Path, nargs="*", default=[], help="report: verdict JSONL files to read")
    parser.add_argument("--out", type=Path, help="write: the pairs as JSONL")
    parser.add_argument("--json", type=Path, help="report: also write the figures here")
    args = parser.parse_args()
    pairs, skipped, samples = dev_pairs(args.seed)
    if args.command == "show":
        show(pairs, skipped, samples, args.show)
        return
    if args.command == "write":
        if args.out is None:
            raise SystemExit("write needs --out")
        args.out.write_text("".join(p.to_json() + "\n" for p in pairs))
        return
    paths = list(args.entries)
    if args.command == "run" or not paths:
        from assay.models import get_judge

        judge = get_judge(args.judge)
        paths = [cache_path(judge, args.seed)]
        if args.command == "run":
            paths[0].parent.mkdir(exist_ok=True)
            await run(judge, pairs, paths[0])
    rows, missing = rows_of(pairs, read_entries(paths), args.seed)
    print(f"evidence use: {len(pairs)} pairs (seed {args.seed}); verdicts from {', '.join(map(str, paths))}")
    if missing:
        print(f"  {missing} pairs left out: a side has no verdict (a judge failure)")
    if not rows:
        raise SystemExit("no pair has verdicts on both sides yet")
    print_rows(rows)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))


def digest(pairs: Sequence[EvidencePair]) -> str:
    """sha1 of the pairs as written: two runs on different pairs must not be compared."""
    return hashlib.sha1("".join(p.to_json() for p in pairs).encode()).hexdigest()[:12]


if __name__ == "__main__":
    asyncio.run(main())
