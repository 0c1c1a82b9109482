"""benchmarks/evidence_use.py (issue 64): supported claims against their evidence with the support removed.

A pair's claim is word for word the same on both sides, its labels follow from how it was
made (the untouched side 1, the side without the supporting sentences 0, and the claim's
lost words really are gone from it), both sides keep their item's source-document group,
and no item is in two groups. The figures are checked against their formula written out.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def eu() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import evidence_use

        yield evidence_use
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.fixture(scope="module")
def ep() -> Iterator[ModuleType]:
    """The pairs and their figures, below the script (``benchmarks/_lib/evidence_pairs.py``)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import _lib.evidence_pairs

        yield _lib.evidence_pairs
    finally:
        sys.path.remove(str(BENCHMARKS))


MATCH = (
    "Scotland beat Wales 3-1 at Hampden Park on Saturday. The goalkeeper, Morgan, was injured after 20 minutes "
    "and was replaced by Hughes. Wales had won the previous meeting in March 2019. Some fans left early because "
    "the rain was heavy. The coach said the team will play Norway in Oslo next week."
)
COMPANY = (
    "Acme Corporation reported revenue of 2.5 billion dollars in 2021. The chairman, Robert Lane, told "
    "shareholders that the company may open a factory in Ohio. Its chief executive, Maria Chen, was appointed "
    "in 2018 after leaving Globex. Profits fell in the first quarter because costs were higher."
)
REPEATED = (
    "The festival opened in Lisbon on Friday with a concert by the city orchestra. Tickets sold out within "
    "an hour. The festival opened in Lisbon on Friday, the organisers confirmed, with the orchestra's concert. "
    "Food stalls lined the river."
)


def _rows() -> dict[str, list[dict[str, Any]]]:
    summedits = [
        {
            "id": "s1",
            "label": 1,
            "context": MATCH,
            "claim": "Morgan, the goalkeeper, was injured and replaced by Hughes.",
        },
        {
            "id": "s2",
            "label": 1,
            "context": MATCH,
            "claim": "The team will play Norway in Oslo next week, the coach said.",
        },
        {"id": "s3", "label": 0, "context": MATCH, "claim": "Wales beat Scotland."},
        {
            "id": "s4",
            "label": 1,
            "context": COMPANY,
            "claim": "Maria Chen became chief executive in 2018, after Globex.",
        },
        {"id": "s5", "label": 1, "context": COMPANY, "claim": "A fine outcome for everyone involved overall."},
        {"id": "s6", "label": 1, "context": REPEATED, "claim": "The festival opened in Lisbon on Friday."},
    ]
    begin = [
        {
            "id": "b1",
            "label": 1,
            "context": "Crayola started as a pigment company.",
            "claim": "Crayola started as a pigment company.",
        },
        {
            "id": "b2",
            "label": 1,
            "context": "Jazz began in New Orleans in the late 19th century. It mixed blues, ragtime and brass band "
            "marches. Louis Armstrong was one of its first stars, and he played the trumpet.",
            "claim": "Louis Armstrong played the trumpet.",
        },
    ]
    article = "\n".join(
        [
            "(meta data) TITLE: About me",
            "# About me",
            "I live in Leicestershire with my wife and two children.",
            "I am a keen tennis player.",
            "I teach at a university and write about learning design for online courses.",
            "Contact me by email.",
        ]
    )
    wice = [
        {
            "id": "w1",
            "label": 1,
            "context": article,
            "claim": "A keen tennis player, he lives in Leicestershire with his wife and two children.",
            "supporting_sentences": [[2, 3], [1, 2, 3]],
            "oracle_chunks": [article, "\n".join(article.split("\n")[1:5])],
            "claim_title": "Someone",
        }
    ]
    return {"summedits": summedits, "begin": begin, "wice": wice}


def _groups(rows: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from _lib.grouped_cv import full_groups

        return dict(full_groups(rows))
    finally:
        sys.path.remove(str(BENCHMARKS))


def _made(ep: ModuleType) -> tuple[list[Any], Any]:
    rows = _rows()
    pairs, skipped = ep.make_pairs(rows, _groups(rows))
    return pairs, skipped


def test_a_pair_keeps_the_claim_and_flips_the_label_by_removing_its_support(ep: ModuleType) -> None:
    pairs, _ = _made(ep)
    assert {p.id for p in pairs} == {"s1", "s2", "s4", "b2", "w1"}
    for p in pairs:
        positive, negative = p.rows()
        assert positive["claim"] == negative["claim"] == p.claim  # the claim, word for word
        assert (positive["label"], negative["label"]) == (1, 0)
        assert negative["id"] == p.id + ep.NEGATIVE_SUFFIX
        before, after = " ".join(p.contexts), " ".join(p.removed_contexts)
        assert p.removed and all(sentence in before for sentence in p.removed)
        assert not any(sentence in after for sentence in p.removed), p
        assert p.lost  # words of the claim the negative's contexts never use
        assert not set(p.lost) & ep.stems(after)
        assert set(p.lost) <= ep.stems(p.claim)
        assert len(after) >= ep.MIN_LEFT_CHARS


def test_only_the_supporting_sentences_are_removed(ep: ModuleType) -> None:
    pairs = {p.id: p for p in _made(ep)[0]}
    s1 = pairs["s1"]
    assert s1.removed == ("The goalkeeper, Morgan, was injured after 20 minutes and was replaced by Hughes.",)
    assert s1.removed_contexts[0] == MATCH.replace(s1.removed[0] + " ", "")
    # WiCE: the annotators' lines, out of every oracle chunk, the other lines kept as they were
    w1 = pairs["w1"]
    assert w1.how == "annotated"
    # every alternative set's lines: [2, 3] and [1, 2, 3]
    assert set(w1.removed) == {
        "# About me",
        "I live in Leicestershire with my wife and two children.",
        "I am a keen tennis player.",
    }
    assert w1.removed_contexts == (
        "(meta data) TITLE: About me\nI teach at a university and write about learning design for "
        "online courses.\nContact me by email.",
        "I teach at a university and write about learning design for online courses.",
    )


def test_a_pair_that_cannot_be_built_is_skipped_and_counted(ep: ModuleType) -> None:
    pairs, skipped = _made(ep)
    # s3 is unsupported (never a pair); s5 shares no sentence with its context; s6 is said twice;
    # b1's snippet is its only sentence (nothing would be left to read) and has no number or auxiliary to change
    assert dict(skipped) == {
        "summedits: no aligned sentence": 1,
        "summedits: stated elsewhere": 1,
        "begin: nothing left, no detail to change": 1,
    }
    assert len(pairs) + sum(skipped.values()) == sum(r["label"] for rs in _rows().values() for r in rs)


def test_a_context_too_short_to_lose_a_sentence_gets_one_detail_changed(ep: ModuleType) -> None:
    rows = {
        "begin": [
            {"id": "b1", "label": 1, "context": "Elvis Presley was born in Tupelo in 1935 and moved to Memphis at 13.",
             "claim": "Presley moved to Memphis when he was 13."},
            {"id": "b2", "label": 1, "context": "The Nile is generally regarded as the longest river in the world.",
             "claim": "The Nile is generally regarded as the longest river."},
            {"id": "b3", "label": 1, "context": "The Nile is not navigable above Aswan for large ships.",
             "claim": "Large ships cannot navigate the Nile above Aswan, it isn't navigable."},
        ]
    }  # fmt: skip
    pairs, skipped = ep.make_pairs(rows, _groups(rows))
    made = {p.id: p for p in pairs}
    number = made["b1"]
    assert number.how.startswith("changed: 13 -> ") and number.claim == rows["begin"][0]["claim"]
    (edited,) = number.removed_contexts
    assert "13" not in edited and edited.replace(number.how.split(" -> ")[1], "13") == rows["begin"][0]["context"]
    negated = made["b2"]
    assert negated.removed_contexts == ("The Nile is not generally regarded as the longest river in the world.",)
    assert dict(skipped) == {"begin: nothing left, no detail to change": 1}  # b3 negates already: left alone


def test_both_sides_keep_the_items_group_and_no_item_is_in_two_groups(ep: ModuleType) -> None:
    rows = _rows()
    groups = _groups(rows)
    pairs, _ = ep.make_pairs(rows, groups)
    group_of: dict[str, str] = {}
    for p in pairs:
        for side in p.rows():
            assert side["group"] == groups[p.id] == p.group
            assert group_of.setdefault(side["id"].removesuffix(ep.NEGATIVE_SUFFIX), side["group"]) == side["group"]
    assert pairs[0].group == pairs[1].group  # s1 and s2: one SummEdits document, one group
    assert len({p.id for p in pairs}) == len(pairs)


def test_stems_cut_endings_and_drop_stopwords(ep: ModuleType) -> None:
    assert ep.stems("The players were playing and played it") == {"player", "play"}
    assert ep.stems("Hughes replaced him in 2019") == {"hugh", "replac", "2019"}


def test_pair_figures_are_the_formula_written_out(ep: ModuleType) -> None:
    positive = np.array([1, 1, 1, 0, 1, 1, 0, 1])
    negative = np.array([1, 0, 0, 0, 1, 0, 0, 1])
    ba, (lo, hi), tpr, still, flipped = ep.pair_figures(positive, negative, seed=1)
    assert tpr == 6 / 8
    assert still == 3 / 8  # negatives called supported
    assert ba == (6 / 8 + 5 / 8) / 2
    assert flipped == 3 / 6  # of the 6 passed positives, 3 negatives failed
    assert lo <= ba <= hi
    # a verifier that ignores the evidence: every side supported -> BA 0.5, nothing flips
    same = np.ones(10, dtype=np.int64)
    ba, (lo, hi), _, still, flipped = ep.pair_figures(same, same, seed=1)
    assert (ba, lo, hi, still, flipped) == (0.5, 0.5, 0.5, 1.0, 0.0)
    with pytest.raises(ValueError):
        ep.pair_figures(positive, negative[:3], seed=1)


def test_rows_of_pairs_the_two_sides_and_reads_p_alone_without_the_veto(ep: ModuleType, eu: ModuleType) -> None:
    pairs, _ = _made(ep)
    entries: dict[str, dict[str, Any]] = {}
    for p in pairs:
        entries[p.id] = {"v": 1, "p": 0.9}
        # vetoed negative: the verifier says 0, the judge's P alone says 1
        entries[p.id + ep.NEGATIVE_SUFFIX] = {"v": 0, "p": 0.8, "vetoed": ["missing_entities"]}
    del entries["w1" + ep.NEGATIVE_SUFFIX]  # not judged yet: the pair is left out
    rows, missing = eu.rows_of(pairs, entries, seed=1)
    overall = {r.decided_by: r for r in rows if r.set == "all"}
    assert overall["verifier"].pairs == overall["p"].pairs == len(pairs) - 1
    assert overall["verifier"].balanced_accuracy == 1.0
    assert overall["p"].balanced_accuracy == 0.5 and overall["p"].still_supported == 1.0
    assert missing == 0
    entries["s1" + ep.NEGATIVE_SUFFIX] = {"v": None, "p": None}  # a judge failure on one side
    rows, missing = eu.rows_of(pairs, entries, seed=1)
    assert missing == 1


class _ReadingJudge:
    """A judge exposing logits that reads the evidence: P(supported) high iff every content stem is in the context."""

    model_id = "reading"
    identity = "reading"

    def __init__(self, stems: Any, reads: bool = True) -> None:
        self.stems, self.reads, self.calls = stems, reads, 0

    async def choice_probabilities(
        self, messages: Any, *, prefix: str, choices: Any, config: Any = None
    ) -> dict[str, float]:
        import re

        self.calls += 1
        text = messages[-1]["content"]
        context = re.search(r"<context>(.*)</context>", text, re.S).group(1)  # type: ignore[union-attr]
        statement = re.search(r"<statement>(.*)</statement>", text, re.S).group(1)  # type: ignore[union-attr]
        supported = self.stems(statement) <= self.stems(context) if self.reads else True
        return {"1": 0.9 if supported else 0.1, "0": 0.1 if supported else 0.9}


async def test_run_judges_both_sides_once_and_a_judge_that_reads_flips_them(
    ep: ModuleType, eu: ModuleType, tmp_path: Path
) -> None:
    pairs, _ = _made(ep)
    path = tmp_path / "verdicts.jsonl"
    judge = _ReadingJudge(ep.stems)
    await eu.run(judge, pairs, path)
    entries = eu.read_entries([path])
    assert set(entries) == {i for p in pairs for i in (p.id, p.id + ep.NEGATIVE_SUFFIX)}
    rows, missing = eu.rows_of(pairs, entries, seed=1)
    alone = {r.set: r for r in rows if r.decided_by == "p"}
    assert missing == 0 and alone["all"].still_supported == 0.0  # every removal took a stem the claim needs
    calls = judge.calls
    await eu.run(judge, pairs, path)  # resumes: nothing left to judge
    assert judge.calls == calls and len(path.read_text().splitlines()) == 2 * len(pairs)
    # a judge that never reads the context: P alone calls every edited side supported
    blind = tmp_path / "blind.jsonl"
    await eu.run(_ReadingJudge(ep.stems, reads=False), pairs, blind)
    rows, _ = eu.rows_of(pairs, eu.read_entries([blind]), seed=1)
    alone = {r.set: r for r in rows if r.decided_by == "p"}
    assert alone["all"].still_supported == 1.0 and alone["all"].balanced_accuracy == pytest.approx(0.5, abs=0.1)
