"""benchmarks/verifier_data.py (issue 58): synthetic (evidence, statement, label) pairs from real documents.

A pair's label must follow from its edit (a supported kind keeps every fact of the
anchor, an unsupported kind changes one), the edit must really change the statement, the
output must be the same for a seed, and no document of a held-out dev item may reach a
head's training set.
"""

from __future__ import annotations

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
def vd() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import _lib.verifier_pairs

        yield _lib.verifier_pairs  # the edits and groups, below the script that writes the pairs
    finally:
        sys.path.remove(str(BENCHMARKS))


# Three invented documents, rich in what the edits need: names, roles, numbers, dates,
# auxiliaries, antonyms, quantifiers, trailing clauses and parentheses.
MATCH = (
    "Scotland beat Wales 3-1 at Hampden Park on Saturday. Scotland's forward, Evans, scored twice in the "
    "first half, and the captain added a third. The goalkeeper, Morgan, was injured after 20 minutes "
    "(a knee injury) and was replaced by Hughes. Wales had won the previous meeting in March 2019. "
    "Some fans left early because the rain was heavy. The coach said the team will play Norway in "
    "Oslo next week. Attendance rose to 48,000, the highest this season. Evans has not scored for "
    "Wales before. The referee, Clattenburg, showed four yellow cards to Wales players. Many supporters "
    "travelled from Cardiff, which is 400 miles away. Norway lost to Denmark in their last match."
)
COMPANY = (
    "Acme Corporation reported revenue of 2.5 billion dollars in 2021, an increase of 12 percent. "
    "The chairman, Robert Lane, told shareholders that the company may open a factory in Ohio. "
    "Its chief executive, Maria Chen, was appointed in 2018 after leaving Globex. Acme bought Initech "
    "for 300 million dollars, including its offices in Texas. Profits fell in the first quarter, "
    "mostly because costs were higher. Chen said the firm could not meet demand from Japan. The "
    "founder, Walter Acme, started the business in Boston in 1952 with four employees. Several "
    "analysts expect the shares to rise, while others remain cautious about Europe."
)
SCIENCE = (
    "The Amazon River is about 6,400 km long and empties into the Atlantic Ocean. Its basin covers parts of "
    "nine countries, mostly Brazil. The river was named by the Spanish explorer Francisco de Orellana in 1542. "
    "Researchers at Harvard found that deforestation increased in August. Often the dry season is short, "
    "but it can last for months. Peru and Colombia share a border along the river. Scientists did not "
    "expect the drought to end early. The largest city on the river is Manaus, which has two million people."
)


def _docs(vd: ModuleType) -> list[Any]:
    return [vd.Document("summedits", f"summedits/doc:{i}", text) for i, text in enumerate((MATCH, COMPANY, SCIENCE))]


def _pairs(vd: ModuleType, seeds: range = range(6)) -> list[Any]:
    options = {
        "window_chars": 300,
        "anchors_per_chars": 60,
        "max_anchors": 20,
        "supported_per_window": 4,
        "unsupported_per_window": 9,
    }
    return [p for seed in seeds for p in vd.generate(_docs(vd), seed, **options)]


def test_every_kind_is_made_and_labelled_by_its_edit(vd: ModuleType) -> None:
    pairs = _pairs(vd)
    kinds = {p.kind for p in pairs}
    assert kinds == set(vd.LABEL), f"kinds never made: {set(vd.LABEL) - kinds}"
    for p in pairs:
        assert p.label == (1 if p.kind in vd.SUPPORTED else 0), p
        assert p.source in p.evidence, p  # the anchor is always in its evidence window
    share = sum(p.label for p in pairs) / len(pairs)
    assert 0.2 < share < 0.6, share


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9][A-Za-z0-9'-]*", text.lower())


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d[\d,.]*", text)


def test_each_edit_really_changes_what_it_says_it_changes(vd: ModuleType) -> None:
    from assay.grounding._details import detail_features

    for p in _pairs(vd):
        statement, source = p.statement, p.source
        if p.label == 0:
            assert vd.normalise(statement) != vd.normalise(source), p
            assert vd.normalise(statement) not in {vd.normalise(s) for s in vd._sentences(p.evidence)}, p
        if p.kind == "copy":
            assert statement == source
        elif p.kind == "compress":
            kept, original = _words(statement), iter(_words(source))
            assert all(w in original for w in kept), p  # a subsequence of the anchor's words
            assert len(kept) < len(_words(source))
        elif p.kind == "paraphrase":
            assert statement != source
            features = detail_features(statement, source)
            assert features.missing_numbers == 0 and features.missing_entities == 0, p
        elif p.kind == "fuse":
            assert vd._body(source) in statement and len(statement) > len(source)
        elif p.kind == "number":
            assert sorted(_numbers(statement)) != sorted(_numbers(source)) or _words(statement) != _words(source)
        elif p.kind == "negation":
            negations = lambda t: len(re.findall(r"\bnot\b|n't\b", t))  # noqa: E731
            assert negations(statement) != negations(source), p
        elif p.kind == "entity":
            added = set(vd.names(statement)) - set(vd.names(source))
            assert added and not any(n in p.evidence for n in added), p  # a name the evidence never gives
        elif p.kind == "attribute":
            added = set(vd.names(statement)) - set(vd.names(source))
            assert added and all(n in p.evidence for n in added), p  # a name the evidence does give, elsewhere
        elif p.kind == "swap":
            assert sorted(_words(statement)) == sorted(_words(source)) and _words(statement) != _words(source), p
        elif p.kind in ("antonym", "role", "scope"):
            changed = [(a, b) for a, b in zip(_words(source), _words(statement), strict=False) if a != b]
            assert changed, p
        elif p.kind == "clause":
            assert statement.startswith(vd._body(source)) and len(_words(statement)) > len(_words(source)) + 3, p


def test_scope_and_role_edits_pick_the_widened_or_other_word(vd: ModuleType) -> None:
    window = ["Some fans left early because the rain was heavy.", "The goalkeeper, Morgan, was injured."]
    rng = __import__("random").Random(1)
    scoped = vd.edit("scope", window[0], window, [], [], rng)
    assert scoped is not None and scoped[0].startswith("All fans"), scoped
    role = vd.edit("role", window[1], window, ["Evans, the forward, scored."], [], rng)
    assert role is not None and "forward" in role[0].lower(), role  # the role the document uses, preferred
    assert vd.edit("scope", "The fans left early.", window, [], [], rng) is None  # nothing to widen


def test_the_same_seed_gives_the_same_pairs_and_documents_do_not_disturb_each_other(vd: ModuleType) -> None:
    docs = _docs(vd)
    first = [p.to_json() for p in vd.generate(docs, 7)]
    assert first == [p.to_json() for p in vd.generate(docs, 7)]
    assert first != [p.to_json() for p in vd.generate(docs, 8)]
    alone = [p.to_json() for p in vd.generate(docs[1:2], 7)]
    assert alone == [j for j in first if '"summedits/doc:1"' in j]


def test_pairs_round_trip_and_another_generator_version_is_refused(vd: ModuleType, tmp_path: Path) -> None:
    pairs = list(vd.generate(_docs(vd), 3))
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(p.to_json() + "\n" for p in pairs))
    assert vd.read_pairs(path) == pairs
    path.write_text(path.read_text().replace(f'"generator": {vd.GENERATOR_VERSION}', '"generator": 0', 1))
    with pytest.raises(SystemExit, match=r"pairs.jsonl:1: .*regenerate"):
        vd.read_pairs(path)


def _row(i: str, context: str, **more: Any) -> dict[str, Any]:
    return {"id": i, "context": context, "claim": "A claim.", "label": "1", **more}


def test_no_document_of_a_held_out_item_reaches_the_training_pairs(vd: ModuleType) -> None:
    # BEGIN: two snippets share a dialogue turn, so the dev grouping puts them in one group;
    # a third snippet repeats one sentence of the held-out snippet under another group.
    shared = "Evans scored twice for Scotland in the first half of the match."
    snippet_a = f"{shared} The goalkeeper, Morgan, was injured after 20 minutes and replaced."
    snippet_b = "Wales had won the previous meeting in March 2019, at the Millennium Stadium in Cardiff."
    snippet_c = f"Attendance rose to 48,000 at Hampden Park on Saturday, the highest this season. {shared}"
    rows = {
        "begin": [
            _row("b1", snippet_a, dialogue_message="who scored?"),
            _row("b2", snippet_b, dialogue_message="who scored?"),
            _row("b3", snippet_c, dialogue_message="how many came?"),
        ],
        "summedits": [_row("s1", COMPANY), _row("s2", COMPANY), _row("s3", SCIENCE)],
    }
    docs = vd.documents(rows)
    assert len(docs) == 5  # one per distinct context: s1 and s2 share theirs
    pairs = list(vd.generate(docs, 1, anchors_per_chars=40, max_anchors=20))
    from _lib.grouped_cv import full_groups  # the fixture put benchmarks/ on the path

    groups = full_groups(rows)
    assert groups["b1"] == groups["b2"] != groups["b3"]
    assert {p.group for p in pairs} >= {groups["b2"], groups["b3"], groups["s1"]}
    held = {"begin": [rows["begin"][0]], "summedits": [rows["summedits"][0]]}
    kept = vd.held_out(pairs, held, groups)
    assert kept, "everything was dropped: the check would pass vacuously"
    assert {p.group for p in kept} == {groups["s3"]}  # b2 by its group, b3 by its shared sentence, s1/s2 by theirs
    assert not any(shared in p.evidence for p in kept)
    assert not any(COMPANY[:60] in p.evidence for p in kept)


@pytest.mark.e2e  # reads every dev item (~9 s, no model): the full suite, in its parallel part
@pytest.mark.skipif(not (DATA / "summedits_dev.jsonl").exists(), reason="../shared/data not present")
def test_on_the_dev_sets_no_fold_trains_on_its_own_documents(vd: ModuleType) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from _lib.devsets import load, read_rows
        from _lib.grouped_cv import document_groups, full_groups, make_folds
    finally:
        sys.path.remove(str(BENCHMARKS))
    import numpy as np

    names = ("summedits", "begin")
    rows = read_rows(names)
    sample = {name: load(name, 150, 7) for name in names}
    docs = vd.documents(rows)
    pairs = list(vd.generate(docs, 58))
    groups = full_groups(rows)
    sets = [n for n in names for _ in sample[n]]
    items = [r for n in names for r in sample[n]]
    item_groups = [f"{n}/{g}" for n in names for g in document_groups(n, sample[n]).values()]
    folds = make_folds(sets, np.array([float(r["label"]) for r in items]), item_groups, 5, 7)
    for f in range(5):
        held = {n: [r for s, r, k in zip(sets, items, folds, strict=True) if s == n and k == f] for n in names}
        kept = vd.held_out(pairs, held, groups)
        held_groups = {groups[r["id"]] for rs in held.values() for r in rs}
        held_texts = {r["context"] for rs in held.values() for r in rs}
        assert len(kept) > len(pairs) // 2
        assert not {p.group for p in kept} & held_groups
        assert not any(p.evidence in text for p in kept for text in held_texts if len(p.evidence) > 40)
