"""benchmarks/verifier_contrast.py (issue 64, item 2): pairs whose labels word overlap cannot tell apart.

A document-side pair keeps its claim byte for byte and changes only the evidence; every
label follows from its construction (support removed: 0 and the sentence is gone;
untouched: 1; a claim edit: 1-4 words of the promised kind, 0); no pair of a held-out
item's document reaches training; and a word-overlap score separates issue 58's kinds
but not these.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
DATA = Path(os.environ.get("ASSAY_DEV_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data" / "grounding")


@pytest.fixture(scope="module")
def cp() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import _lib.contrast_pairs

        yield _lib.contrast_pairs
    finally:
        sys.path.remove(str(BENCHMARKS))


# Invented dev items. SummEdits-like: a document and abstractive summaries of it, as a
# person would write them; BEGIN-like: a short snippet and a response; WiCE-like: an
# article, its oracle chunks, the annotated supporting lines.
MATCH = (
    "Scotland beat Wales 3-1 at Hampden Park on Saturday. Scotland's forward, Evans, scored twice in the "
    "first half, and the captain added a third. The goalkeeper, Morgan, was injured after 20 minutes "
    "and was replaced by Hughes. Wales had won the previous meeting in March 2019. "
    "Some fans left early because the rain was heavy. The coach said the team will play Norway in "
    "Oslo next week. Attendance rose to 48,000, the highest this season. The referee, Clattenburg, "
    "showed four yellow cards to Wales players. Many supporters travelled from Cardiff, which is 400 miles away."
)
COMPANY = (
    "Acme Corporation reported revenue of 2.5 billion dollars in 2021, an increase of 12 percent. "
    "The chairman, Robert Lane, told shareholders that the company may open a factory in Ohio. "
    "Its chief executive, Maria Chen, was appointed in 2018 after leaving Globex. Acme bought Initech "
    "for 300 million dollars, including its offices in Texas. Profits fell in the first quarter, "
    "mostly because costs were higher. The founder, Walter Acme, started the business in Boston in 1952 "
    "with four employees. Several analysts expect the shares to rise, while others remain cautious about Europe."
)
ARTICLE = [
    "(meta data) TITLE: Amazon River facts",
    "The Amazon River is about 6,400 km long and empties into the Atlantic Ocean.",
    "Its basin covers parts of nine countries, mostly Brazil.",
    "The river was named by the Spanish explorer Francisco de Orellana in 1542.",
    "Researchers at Harvard found that deforestation increased in August.",
    "The largest city on the river is Manaus, which has two million people.",
    "Peru and Colombia share a border along the river, near the town of Leticia.",
]
SUPPORTED = {
    "summedits": [
        (MATCH, "Scotland defeated Wales by three goals to one at Hampden Park, with Evans netting twice."),
        (MATCH, "Morgan, the Scottish goalkeeper, was hurt after 20 minutes and Hughes came on for him."),
        (MATCH, "A crowd of 48,000 watched, the largest this season, although some fans went home early in the rain."),
        (COMPANY, "Acme's revenue grew by 12 percent to 2.5 billion dollars in 2021."),
        (COMPANY, "Maria Chen became chief executive of Acme in 2018, having left Globex."),
        (COMPANY, "Walter Acme founded the firm in Boston in 1952 and it had four employees then."),
        (COMPANY, "Robert Lane, the chairman, said a new factory could be opened in Ohio."),
    ],
    "begin": [
        (
            "The Eiffel Tower was completed in 1889 and is 330 metres tall.",
            "it was finished in 1889 and is 330 metres tall",
        ),
        (
            "Crayola was founded in New York as a pigment company. It is now sold in more than 80 countries and "
            "makes crayons, markers and paints for schools.",
            "crayola is sold in more than 80 countries and makes crayons for schools",
        ),
        ("Leonardo da Vinci painted the Mona Lisa, which hangs in the Louvre in Paris.", "the mona lisa is in paris"),
    ],
}


def _rows() -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {}
    for name, items in SUPPORTED.items():
        rows[name] = [
            {"id": f"{name}-{i}", "context": context, "claim": claim, "label": 1, "dialogue_message": f"turn {i}"}
            for i, (context, claim) in enumerate(items)
        ]
        # an unsupported item of the same documents makes no pair
        rows[name].append({"id": f"{name}-x", "context": items[0][0], "claim": "Nothing.", "label": 0})
    article = "\n".join(ARTICLE)
    chunks = ["\n".join(ARTICLE[:4]), "\n".join(ARTICLE[4:])]
    rows["wice"] = [
        {"id": "wice-0", "context": article, "oracle_chunks": chunks, "claim_title": "Amazon", "label": 1,
         "claim": "Francisco de Orellana, a Spaniard, gave the river its name in 1542.", "supporting_sentences": [[3]]},
        {"id": "wice-1", "context": article, "oracle_chunks": chunks, "claim_title": "Amazon", "label": 1,
         "claim": "Manaus, home to two million people, is the biggest city on the Amazon.",
         "supporting_sentences": [[5]]},
    ]  # fmt: skip
    return rows


def _pairs(cp: ModuleType, seeds: range = range(4)) -> list[Any]:
    return [p for seed in seeds for p in cp.generate(_rows(), seed)]


def _originals(pairs: list[Any]) -> dict[str, Any]:
    return {p.id: p for p in pairs if p.kind == "original"}


def test_every_kind_is_made_from_every_set_it_applies_to(cp: ModuleType) -> None:
    pairs = _pairs(cp)
    made = {(p.set, p.kind) for p in pairs}
    for name in ("summedits", "begin", "wice"):
        assert {(name, "original"), (name, "removed") if name != "begin" else (name, "changed")} <= made, name
    assert {p.kind for p in pairs} == set(cp.LABEL), set(cp.LABEL) - {p.kind for p in pairs}
    assert not any(p.item.endswith("-x") for p in pairs)  # unsupported items make no pair


def test_a_document_side_pair_keeps_its_claim_byte_for_byte_and_changes_only_the_evidence(cp: ModuleType) -> None:
    from _lib.grouped_cv import full_groups

    groups = full_groups(_rows())
    pairs = _pairs(cp, range(1))
    assert all(p.group == groups[p.item] for p in pairs)  # every pair in its item's source-document group
    originals = {p.item: p for p in pairs if p.kind == "original"}
    side = [p for p in pairs if p.kind in cp.DOCUMENT_SIDE]
    assert len(side) >= 8, len(side)
    for p in side:
        original = originals[p.item]
        assert p.pair_of == original.id
        assert p.claim.encode() == original.claim.encode(), p
        assert p.evidence != original.evidence, p
        assert (p.item, p.set, p.group, p.document) == (original.item, original.set, original.group, original.document)


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9][A-Za-z0-9'-]*", text)


def _edited(before: str, after: str) -> tuple[list[str], list[str]]:
    """The words taken out of ``before`` and put into ``after`` (a word diff, written out here)."""
    a, b = _words(before), _words(after)
    out: tuple[list[str], list[str]] = ([], [])
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            out[0].extend(a[i1:i2])
            out[1].extend(b[j1:j2])
    return out


NUMBERISH = re.compile(
    r"^\d[\d,.]*$|^(January|February|March|April|May|June|July|August|September|October|November|December)$"
    r"|^(km|miles|kilometres|kilometers|kg|pounds|metres|meters|feet|minutes|hours|days|weeks|months|years"
    r"|million|billion|thousand|dollars|euros|percent|points)$"
)


def test_labels_follow_from_how_each_pair_was_made(cp: ModuleType) -> None:
    rows = _rows()
    claims = {r["id"]: r for rs in rows.values() for r in rs}
    pairs = _pairs(cp)
    originals = _originals(pairs)
    seen = set()
    for p in pairs:
        assert p.label == cp.LABEL[p.kind] == (1 if p.kind == "original" else 0), p
        seen.add(p.kind)
        if p.kind == "original":
            row = claims[p.item]
            assert p.claim == row["claim"] and row["label"] == 1
            assert p.evidence == "\n".join(row.get("oracle_chunks") or [row["context"]])
            continue
        original = originals[p.pair_of]
        if p.kind == "removed":
            assert p.removed, p
            for sentence in p.removed:
                assert sentence in original.evidence, p
                assert sentence not in p.evidence, p  # the support is gone from the evidence
            assert len(p.evidence) < len(original.evidence)
        elif p.kind == "changed":
            taken, put = _edited(original.evidence, p.evidence)
            if "not" in put:  # "not" after an auxiliary of the support
                assert taken == [] and put == ["not"], p
            else:  # a number or a name the claim gives, now nowhere in the evidence
                old, new = p.change.split(" -> ")
                assert re.search(rf"(?<![\w.,]){re.escape(old)}(?![\w])", p.claim), p
                assert not re.search(rf"(?<![\w.,]){re.escape(old)}(?![\w])", p.evidence), p
                assert new in p.evidence, p
        else:  # claim side: the evidence as it was, the claim edited in 1-4 words of the promised kind
            assert p.evidence == original.evidence, p
            taken, put = _edited(original.claim, p.claim)
            assert 1 <= max(len(taken), len(put)) <= cp.MAX_EDITED_WORDS, p
            if p.kind == "negation":
                negations = lambda t: len(re.findall(r"\bnot\b|n't\b", t))  # noqa: E731
                assert abs(negations(p.claim) - negations(original.claim)) == 1, p
                assert set(taken) | set(put) <= {"not", "n't"} or put == ["not"] or taken == ["not"], p
            elif p.kind == "number":
                assert taken and put and all(NUMBERISH.match(w) for w in taken + put), p
            elif p.kind == "entity":
                assert taken and put and taken[0][:1].isupper() and put[0][:1].isupper(), p  # a name for a name
                assert " ".join(put) in p.evidence, p  # a name taken from the same document
    assert seen == set(cp.LABEL)


def test_the_same_seed_gives_the_same_pairs_and_items_do_not_disturb_each_other(cp: ModuleType) -> None:
    rows = _rows()
    first = [p.to_json() for p in cp.generate(rows, 7)]
    assert first == [p.to_json() for p in cp.generate(rows, 7)]
    assert first != [p.to_json() for p in cp.generate(rows, 8)]
    fewer = {name: rs[1:] for name, rs in rows.items()}
    mine = [j for j in first if '"item": "summedits-0"' not in j and '"item": "begin-0"' not in j]
    mine = [j for j in mine if '"item": "wice-0"' not in j]
    assert [p.to_json() for p in cp.generate(fewer, 7)] == mine


def test_pairs_round_trip_and_another_generator_version_is_refused(cp: ModuleType, tmp_path: Path) -> None:
    pairs = list(cp.generate(_rows(), 3))
    path = tmp_path / "contrast.jsonl"
    path.write_text("".join(p.to_json() + "\n" for p in pairs))
    assert cp.read_pairs(path) == pairs
    path.write_text(path.read_text().replace(f'"generator": {cp.GENERATOR_VERSION}', '"generator": 0', 1))
    with pytest.raises(SystemExit, match=r"contrast.jsonl:1: .*regenerate"):
        cp.read_pairs(path)


def test_no_pair_of_a_held_out_items_document_reaches_training(cp: ModuleType) -> None:
    from _lib.grouped_cv import full_groups

    rows = _rows()
    # a BEGIN item of another group whose snippet repeats a sentence of a held-out SummEdits document
    shared = "Attendance rose to 48,000, the highest this season."
    rows["begin"].append(
        {
            "id": "begin-s",
            "context": f"{shared} It rained.",
            "claim": "48,000 came",
            "label": 1,
            "dialogue_message": "?",
        }
    )
    # a BEGIN item of another snippet that answers the same dialogue turn as begin-0: one group, no shared text
    rows["begin"].append(
        {"id": "begin-t", "label": 1, "dialogue_message": "turn 0", "claim": "the nile is the longest river",
         "context": "The Nile is the longest river in Africa. It flows north into the Mediterranean Sea."}
    )  # fmt: skip
    pairs = list(cp.generate(rows, 1))
    groups = full_groups(rows)
    assert groups["summedits-0"] == groups["summedits-1"] != groups["begin-s"]
    assert groups["begin-t"] == groups["begin-0"]
    assert {p.item for p in pairs} >= {"begin-t", "begin-s"}
    held = {"summedits": [rows["summedits"][-1]], "begin": [rows["begin"][0]]}  # MATCH's unsupported item, begin-0
    kept = cp.held_out(pairs, held, groups)
    assert kept and len(kept) < len(pairs)
    assert not any(p.item in ("begin-0", "begin-t") for p in kept)  # begin-t by its group alone
    assert not any(p.group == groups["summedits-x"] for p in kept)  # MATCH's summaries, by their group
    assert not any(p.item == "begin-s" for p in kept)  # another group, by the shared sentence
    assert not any(shared in p.evidence or MATCH[:60] in p.evidence for p in kept)
    assert {p.item for p in kept} >= {"summedits-3", "begin-1", "wice-0"}  # other documents stay


def test_separability_is_the_best_thresholds_balanced_accuracy(cp: ModuleType) -> None:
    # positives 0.9, 0.8, 0.3; negatives 0.7, 0.2: t = 0.8 gives TPR 2/3, TNR 1 -> 5/6;
    # t = 0.3 gives TPR 1, TNR 1/2 -> 3/4; no threshold separates fully
    assert cp.separability([0.9, 0.8, 0.3], [0.7, 0.2]) == pytest.approx(5 / 6)
    assert cp.separability([0.5, 0.5], [0.5, 0.5]) == 0.5  # identical scores: chance
    assert cp.separability([0.1], [0.9]) == 0.5  # reversed: "overlap >= t is supported" never beats chance
    assert cp.copied("the cat sat on the mat", "The cat sat on the mat.") == 1.0
    assert cp.copied("the cat sat on a mat", "The cat sat on the mat.") == pytest.approx(3 / 5)


def test_word_overlap_separates_issue_58s_kinds_but_not_the_edits_of_a_fixed_claim_or_evidence(
    cp: ModuleType,
) -> None:
    from _lib.verifier_pairs import Document, generate

    pairs = _pairs(cp, range(8))
    originals = _originals(pairs)
    for kind in ("changed", *cp.CLAIM_SIDE):
        negatives = [p for p in pairs if p.kind == kind]
        assert len(negatives) >= 10, kind
        ba = cp.separability(
            [cp.copied(originals[p.pair_of].claim, originals[p.pair_of].evidence) for p in negatives],
            [cp.copied(p.claim, p.evidence) for p in negatives],
        )
        assert ba <= 0.7, (kind, ba)  # 7-11 invented items: the dev-data test below holds it nearer 0.5
    old = list(generate([Document("summedits", "d", t) for t in (MATCH, COMPANY)], 1, window_chars=300))
    ba_58 = cp.separability(
        [cp.copied(p.statement, p.evidence) for p in old if p.label == 1],
        [cp.copied(p.statement, p.evidence) for p in old if p.label == 0],
    )
    assert ba_58 >= 0.75, ba_58  # the baseline can separate: issue 58's pairs are close to their evidence


@pytest.mark.e2e  # reads every dev item (~15 s, no model): the full suite, in its parallel part
@pytest.mark.skipif(not (DATA / "summedits_dev.jsonl").exists(), reason="../shared/data not present")
def test_on_the_dev_sets_word_overlap_cannot_separate_the_document_side_changes_or_the_claim_edits(
    cp: ModuleType,
) -> None:
    from _lib.devsets import read_rows
    from _lib.verifier_pairs import documents, generate

    rows = read_rows(("summedits", "begin"))
    pairs = list(cp.generate(rows, 64))
    originals = _originals(pairs)
    for p in pairs:  # the removal's promise on real documents too
        assert all(sentence not in p.evidence for sentence in p.removed), p
    for kind in ("changed", *cp.CLAIM_SIDE):
        negatives = [p for p in pairs if p.kind == kind]
        assert len(negatives) >= 50, kind
        for score in (cp.copied, cp.overlap):
            ba = cp.separability(
                [score(originals[p.pair_of].claim, originals[p.pair_of].evidence) for p in negatives],
                [score(p.claim, p.evidence) for p in negatives],
            )
            assert ba <= 0.66, (kind, score.__name__, ba)
    old = list(generate(documents({"summedits": rows["summedits"]}), 58))
    ba_58 = cp.separability(
        [cp.copied(p.statement, p.evidence) for p in old if p.label == 1],
        [cp.copied(p.statement, p.evidence) for p in old if p.label == 0],
    )
    assert ba_58 >= 0.75, ba_58
