"""Detail checks (numbers, names, negation, antonyms, quantifiers, coverage) and the combiner.

Every check is tested on hand-made pairs against the rule written out, plus hypothesis
properties: a verbatim sentence of the evidence has no problems, and adding an absent
number adds exactly one missing number. The fit script is run end to end on synthetic
items whose labels come from known coefficients.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.errors import ConfigError
from assay.grounding._details import LOGIT_P
from assay.metrics import (
    DETAIL_FEATURES,
    DetailCombiner,
    DetailFeatures,
    detail_features,
    load_detail_combiner,
)

ROOT = Path(__file__).resolve().parents[1]


def features(statement: str, evidence: str) -> dict[str, float]:
    return detail_features(statement, evidence).values()


# ---------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("statement", "evidence"),
    [
        ("The library holds 1,000 books.", "The library holds 1000 books."),
        ("Three people came.", "3 people came."),
        ("Sales rose 5 percent.", "Sales rose 5%."),
        ("Sales rose 5 per cent.", "Sales rose 5 %."),
        ("It cost $5.2 million.", "It cost 5,200,000 dollars."),
        ("Twenty-five people came.", "25 people came."),
        ("Three hundred and five people came.", "305 people came."),
        ("Two hundred thousand people came.", "200,000 people came."),
        ("It happened on 2020-03-05.", "It happened on March 5, 2020."),
        ("It happened on 5 March 2020.", "It happened on 2020-03-05."),
        ("The tower opened in 1889.", "Built in 1889, the tower opened later."),
        ("The 1990s were loud.", "The 1990s were loud."),
        ("Her fifth album sold well.", "Her 5th album sold well."),
        ("It was 5 million strong.", "It was 5 strong."),  # one side without a scale word: the numbers match
        ("It cost 5k.", "It cost 5,000."),
        ("One of the best.", "The best."),  # a lone "one" is not a number
        ("You may go now.", "Go now."),  # "may" next to no number is no month
        ("The A380 and COVID-19 flew.", "The A380 and COVID-19 flew."),
        ("It changed in the 2018–19 academic year.", "It changed in the academic year 2018 to 2019."),
        ("Store it at -20 °C.", "Store it at −20 °C."),  # ASCII and Unicode minus
        ("It fell to -5 degrees.", "It fell to minus 5 degrees."),
        ("Read pages 10-20.", "Read pages 10-20."),  # a range, not a negative 20
    ],
)
def test_numbers_that_match(statement: str, evidence: str) -> None:
    assert features(statement, evidence)["missing_numbers"] == 0


@pytest.mark.parametrize(
    ("statement", "evidence", "missing", "problem"),
    [
        (
            "The road is 7,000 km long.",
            "The road is 6,400 km long.",
            1,
            "number 7,000 km is not in the evidence (it says 6,400 km)",
        ),
        ("It opened in 1890.", "It opened in 1889.", 1, "number 1890 is not in the evidence (it says 1889)"),
        (
            "It cost $5.2 billion.",
            "It cost $5.2 million.",
            1,
            "number $5.2 billion is not in the evidence (it says $5.2 million)",
        ),
        (
            "It opened in April 2020.",
            "It opened in March 2020.",
            1,
            "date April is not in the evidence (it says March)",
        ),
        ("He was born in May 1990.", "He was born in June 1990. You may go.", 1, "date May is not in the evidence"),
        ("It rose 7% to 12 km.", "It rose 5% to 10 km.", 2, "number 7% is not in the evidence (it says 5%)"),
        ("It rose 7% and then 7% again.", "It rose 5%.", 1, "number 7% is not in the evidence (it says 5%)"),
        ("Three people came.", "Four people came.", 1, "number Three people is not in the evidence"),
        # an ordinal word is read on the statement side too (a reader that skips it passes the match case vacuously)
        (
            "Her fifth album sold well.",
            "Her fourth album sold well.",
            1,
            "number fifth album is not in the evidence (it says fourth album)",
        ),
        ("The 2017 film won.", "The 2019 film won.", 1, "number 2017 is not in the evidence (it says 2019)"),
        ("It ran in 2018–20.", "It ran in 2018-19.", 1, "number 2018–20 is not in the evidence"),
        # a sign flip is a detail edit (it read "-20" as "20" and called it present)
        ("Store it frozen at -20 degrees.", "Store it at 20 degrees.", 1, "number -20 degrees is not in the evidence"),
        ("It was 20 degrees.", "It was -20 degrees.", 1, "number 20 degrees is not in the evidence (it says -20"),
    ],
)
def test_numbers_that_are_missing(statement: str, evidence: str, missing: int, problem: str) -> None:
    found = detail_features(statement, evidence)
    assert found.missing_numbers == missing
    assert any(p.startswith(problem) for p in found.problems()), found.problems()


def test_numbers_do_not_join_across_lines_or_sentences() -> None:
    # "ninety\ntwenty" is two numbers, not 110; "5.\nMillion" is 5, not five million
    assert features("Twenty came.", "Ninety\ntwenty came.")["missing_numbers"] == 0
    assert features("It was 5.", "It was 5.\nMillion people saw it.")["missing_numbers"] == 0


# ---------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("statement", "evidence", "missing"),
    [
        ("The tower was designed by Eiffel.", "The tower was designed by Gustave Eiffel.", 0),
        ("The tower was designed by Gustave Eiffel.", "The tower was designed by Eiffel's firm.", 0),
        ("The tower was designed by John Smith.", "The tower was designed by Gustave Eiffel.", 1),
        ("The report came from NASA.", "It came from the National Aeronautics and Space Administration.", 0),
        ("The report came from NASA.", "It came from the space agency.", 1),
        ("The US and the UN agreed.", "The United States and the United Nations agreed.", 0),
        ("Researchers found a cure.", "Scientists found a cure.", 0),  # sentence-initial common word
        ("Yesterday Paris won.", "Yesterday Paris won.", 0),
        ("She met Larisa in Paris.", "she met larisa in paris.", 0),  # lower-case evidence (BEGIN)
        ('He starred in "The Long Night".', "He starred in The Long Night, a film.", 0),
        ('He starred in "The Long Night".', "He starred in a film.", 1),
        ("THE MAYOR OF LONDON RESIGNS TODAY", "The mayor resigned.", 0),  # a headline: case says nothing
        ("The University of Texas won.", "The University of Ohio won.", 1),  # generic words are not evidence
        ("He lives in New York.", "He lives in New Jersey.", 1),
        ("He died in the Libyan war.", "He died in a war in Libya.", 0),  # same word but its ending
        ("Yesterday Johnson won.", "Yesterday Johnston won.", 1),  # not a different ending
        ("It is a Sims-based show.", "A show about The Sims.", 0),
        ('He called it "a yearning dream".', "He praised it.", 0),  # a quotation, not a title
        ('Her album "1989" sold well.', "Her album 1989 sold well.", 0),
        # units named after people are units, not names (the demo's vaccine sample was vetoed on "Celsius")
        ("Store it between 2 and 8 degrees Celsius.", "Keep the vials refrigerated at 2°C to 8°C.", 0),
        ("It melts at 32 degrees Fahrenheit.", "It melts at 32 °F.", 0),
        ("It was 5 degrees Celsius in Berlin.", "It was 5°C in the city.", 1),  # the city is still a name
    ],
)
def test_names(statement: str, evidence: str, missing: int) -> None:
    found = detail_features(statement, evidence)
    assert found.missing_entities == missing, found.problems()


def test_name_problem_text() -> None:
    found = detail_features("The tower was designed by John Smith.", "The tower was designed by Gustave Eiffel.")
    assert 'name "John Smith" is not in the evidence' in found.problems()


# ---------------------------------------------------------------------------- negation, antonyms, quantifiers


@pytest.mark.parametrize(
    ("statement", "evidence", "mismatches"),
    [
        ("The company did not report a loss.", "The company reported a loss.", 1),
        ("The company reported a loss.", "The company didn't report a loss.", 1),
        ("The team never won the cup.", "The team won the cup.", 1),
        ("The team failed to win the cup.", "The team won the cup.", 1),
        ("No evidence was found.", "Evidence was found.", 1),
        ("The company did not report a loss.", "The company did not report a loss this year.", 0),
        ("The company reported a loss.", "The company reported a loss, although analysts did not expect it.", 0),
        ("Prices did not increase.", "Prices decreased.", 0),  # the negated word is not in the evidence
        ("Cats sleep.", "Dogs never bark.", 0),  # nothing nearby to compare with
        # a summary merges evidence sentences: the negated word is compared where its context agrees
        (
            "The lesson explains prepositions of movement, but it does not provide examples of prices.",
            "This lesson explains prepositions of movement. It also provides examples of prices going up.",
            1,
        ),
        # the evidence negates "using" with one shared context word only: not enough
        ("The group used cheaper parts.", "We saved money by not using the expensive parts.", 0),
        ("The group used the expensive parts.", "The group did not use the expensive parts.", 1),
    ],
)
def test_negation(statement: str, evidence: str, mismatches: int) -> None:
    found = detail_features(statement, evidence)
    assert found.negation_mismatches == mismatches, found.problems()


def test_failed_at_a_sentence_end_before_to_is_no_cue_and_no_crash() -> None:
    # regression: "failed" closing a sentence and "To" opening the next raised IndexError
    found = detail_features("He failed. To be clear, he won.", "He failed. To be clear, he won the cup.")
    assert found.negation_mismatches == 0
    assert detail_features("They failed 5 to 3.", "They won.").negation_mismatches == 0


def test_negation_problem_names_the_word() -> None:
    found = detail_features("The company did not report a loss.", "The company reported a loss.")
    assert [p for p in found.problems() if p.startswith("negation")] == [
        'negation: the statement negates "report" ("company did not report a"), '
        'the evidence does not ("The company reported a")'
    ]


@pytest.mark.parametrize(
    ("statement", "evidence", "mismatches"),
    [
        ("Prices increased last year.", "Prices decreased last year.", 1),
        ("Prices rose last year.", "Prices fell last year.", 1),
        ("He lives in the north of the country.", "He lives in the south of the country.", 1),
        ("The team won the final.", "The team lost the final.", 1),
        ("She arrived before the show.", "She arrived after the show.", 1),
        ("Prices went up and down all year.", "Prices went down all year.", 0),  # both sides of the pair
        ("Prices increased last year.", "Prices increased last year, then decreased.", 0),
        ("Prices did not increase last year.", "Prices decreased last year.", 0),  # opposite polarity agrees
        ("Prices increased in Rome.", "Rents decreased in Oslo.", 0),  # no evidence sentence to compare with
    ],
)
def test_antonyms(statement: str, evidence: str, mismatches: int) -> None:
    found = detail_features(statement, evidence)
    assert found.antonym_mismatches == mismatches, found.problems()


@pytest.mark.parametrize(
    ("statement", "evidence", "mismatches"),
    [
        ("All students passed the exam.", "Some students passed the exam.", 1),
        ("Students always pass the exam.", "Students sometimes pass the exam.", 1),
        ("None of the students passed the exam.", "All students passed the exam.", 1),
        ("Some students passed the exam.", "None of the students passed the exam.", 1),
        ("Most students passed the exam.", "All students passed the exam.", 0),  # "most" of "all" holds
        ("All students passed the exam.", "All students passed the exam easily.", 0),
        ("The most popular students passed the exam.", "Some popular students passed the exam.", 0),
        ("All students passed the exam.", "Students passed the exam.", 0),  # one side only
    ],
)
def test_quantifiers(statement: str, evidence: str, mismatches: int) -> None:
    found = detail_features(statement, evidence)
    assert found.quantifier_mismatches == mismatches, found.problems()


# ---------------------------------------------------------------------------- coverage


@pytest.mark.parametrize(
    ("statement", "evidence", "content", "uncovered"),
    [
        # content lemmas in statement order; uncovered marks the ones absent from the evidence
        ("Red apples grow quickly.", "Apples grow.", ["red", "apple", "grow", "quickly"], [1, 0, 0, 1]),
        ("Cats chase small red birds.", "Cats chase.", ["cat", "chase", "small", "red", "bird"], [0, 0, 1, 1, 1]),
        ("The cats were chasing birds.", "A cat chased the bird.", ["cat", "chas", "bird"], [0, 0, 0]),
        ("It is what it is.", "Nothing.", [], []),
        # a conversational "yes" or "oh" is not a claim the evidence should contain (the demo's reason said
        # "2 of 4 content words are not in the evidence: yes, available")
        ("Yes, refunds are available.", "Refunds are available.", ["refund", "available"], [0, 0]),
        ("Oh yeah, okay, cats chase.", "Cats chase.", ["cat", "chase"], [0, 0]),
    ],
)
def test_coverage_against_its_formula(statement: str, evidence: str, content: list[str], uncovered: list[int]) -> None:
    found = detail_features(statement, evidence)
    distinct = {c for c in content}
    absent = {c for c, u in zip(content, uncovered, strict=True) if u}
    share = len(absent) / len(distinct) if distinct else 0.0
    longest = run = 0
    for u in uncovered:
        run = run + 1 if u else 0
        longest = max(longest, run)
    assert found.uncovered_share == pytest.approx(share)
    assert found.longest_uncovered_run == longest


# ---------------------------------------------------------------------------- the features value


def test_vector_values_and_dict_follow_the_feature_order() -> None:
    found = detail_features("All 7 red cats did not win in Rome.", "Some 5 cats won in Paris.")
    assert list(found.values()) == list(DETAIL_FEATURES)
    assert found.vector().tolist() == [float(getattr(found, n)) for n in DETAIL_FEATURES]
    assert found.as_dict() == {**{n: getattr(found, n) for n in DETAIL_FEATURES}, "problems": found.problems()}
    assert found.missing_numbers == 1 and found.missing_entities == 1
    assert found.negation_mismatches == 1 and found.quantifier_mismatches == 1


def test_bad_input_names_the_argument() -> None:
    with pytest.raises(TypeError, match="statement must be a string"):
        detail_features(None, "text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="evidence must be a string"):
        detail_features("text", 3)  # type: ignore[arg-type]


def test_evaluated_text_in_problems_is_bounded() -> None:
    word, name, digits = "x" * 500, "Z" + "e" * 300 + " Quux", "9" * 400
    found = detail_features(f"The {word} did not work with {name} for {digits} {word}y days.", f"The {word} worked.")
    assert found.negation_mismatches == 1 and found.missing_entities == 1 and found.missing_numbers == 1
    assert found.uncovered_share > 0
    assert len(found.problems()) == 4 and all(len(p) < 200 for p in found.problems()), found.problems()


# ---------------------------------------------------------------------------- properties

_VOCABULARY = """the a cat dog Paris Rome NASA Gustave Eiffel tower not never no all some most increased decreased
north south won lost three twenty 1,000 5% $3 million 1889 May March 5 km before after did report reported
people first last it was in of and U.S. didn't failed to To 2018-19 "Night" Libyan"""
_WORDS = _VOCABULARY.split()

_sentence = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=12).map(lambda ws: " ".join(ws) + ".")


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(_sentence, min_size=1, max_size=6), st.data())
def test_a_verbatim_sentence_of_the_evidence_has_no_problems(sentences: list[str], data: st.DataObject) -> None:
    evidence = " ".join(sentences)
    statement = data.draw(st.sampled_from(sentences))
    found = detail_features(statement, evidence)
    assert found.problems() == []
    assert found.vector().tolist() == [0.0] * len(DETAIL_FEATURES)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(_sentence, st.lists(_sentence, min_size=1, max_size=6), st.integers(10_000, 999_999))
def test_adding_an_absent_number_adds_exactly_one_missing_number(statement: str, sentences: list[str], n: int) -> None:
    evidence = " ".join(sentences)  # its numbers are all below 10,000
    before = detail_features(statement, evidence)
    after = detail_features(f"{statement} It measured {n:,} km.", evidence)
    assert after.missing_numbers == before.missing_numbers + 1
    assert f"number {n:,} km is not in the evidence" in "\n".join(after.problems())


# ---------------------------------------------------------------------------- combiner


def _logit(p: float, clip: float = 1e-6) -> float:
    q = min(max(p, clip), 1 - clip)
    return math.log(q / (1 - q))


IDENTITY = DetailCombiner(
    coefficients=(1.0,) + (0.0,) * len(DETAIL_FEATURES),
    intercept=0.0,
    feature_names=(LOGIT_P, *DETAIL_FEATURES),
    version="identity",
)


@settings(max_examples=200, deadline=None)
@given(st.floats(0.0, 1.0))
def test_identity_combiner_returns_p(p: float) -> None:
    found = detail_features("All 7 cats did not win.", "Some 5 cats won.")  # features that would matter
    clipped = min(max(p, 1e-6), 1 - 1e-6)
    assert IDENTITY.probability(p, found) == pytest.approx(clipped, rel=1e-9, abs=1e-12)


def test_combiner_against_its_formula() -> None:
    combiner = DetailCombiner(
        coefficients=(0.8, -1.5, -0.25),
        intercept=0.3,
        feature_names=(LOGIT_P, "missing_numbers", "uncovered_share"),
        version="test",
    )
    found = DetailFeatures(missing_numbers=2, uncovered_share=0.5)
    z = 0.3 + 0.8 * _logit(0.9) - 1.5 * 2 - 0.25 * 0.5
    assert combiner.probability(0.9, found) == pytest.approx(1 / (1 + math.exp(-z)), rel=1e-12)
    # extreme inputs neither overflow nor leave [0, 1]
    assert 0.0 <= combiner.probability(1.0, DetailFeatures(missing_numbers=10_000)) < 1e-100
    assert combiner.probability(1.0, DetailFeatures(missing_numbers=-10_000)) == 1.0


@pytest.mark.parametrize("p", [-0.1, 1.5, math.nan, True, "0.5", None])
def test_combiner_rejects_a_bad_p(p: object) -> None:
    with pytest.raises(ValueError, match="p_supported must be a number in"):
        IDENTITY.probability(p, DetailFeatures())  # type: ignore[arg-type]


def _identity_dict() -> dict[str, object]:
    return IDENTITY.to_dict()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema": 2}, "schema 2 is not supported"),
        ({"feature_names": [LOGIT_P, "colour"], "coefficients": [1.0, 0.0]}, "unknown feature names"),
        ({"coefficients": [1.0]}, "1 coefficients for 8 feature names"),
        ({"features_version": "0"}, "refit it with benchmarks/fit_detail_combiner.py"),
        ({"intercept": math.inf}, "finite numbers"),
        ({"coefficients": ["x"] * 8}, "finite numbers"),
        ({"clip": 0.7}, "clip must be in"),
        ({"threshold": 1.0}, "threshold must be in"),
        ({"feature_names": [LOGIT_P, LOGIT_P], "coefficients": [1.0, 1.0]}, "repeated feature names"),
    ],
)
def test_a_bad_combiner_file_is_refused_with_its_name(tmp_path: Path, change: dict[str, object], message: str) -> None:
    path = tmp_path / "combiner.json"
    path.write_text(json.dumps({**_identity_dict(), **change}))
    with pytest.raises(ConfigError, match=message) as err:
        load_detail_combiner(path)
    assert str(path) in str(err.value)


def test_a_combiner_file_without_a_key_or_not_json_is_refused(tmp_path: Path) -> None:
    data = _identity_dict()
    del data["intercept"]
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"lacks \['intercept'\]"):
        load_detail_combiner(path)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot read the detail combiner"):
        load_detail_combiner(path)


def test_combiner_round_trips_through_its_dict() -> None:
    combiner = DetailCombiner((1.2, -0.7), -0.1, (LOGIT_P, "missing_entities"), "v", threshold=0.4, fit={"n": 3})
    again = DetailCombiner.from_dict(json.loads(json.dumps(combiner.to_dict())))
    assert again == combiner and again.fit == {"n": 3}


# ---------------------------------------------------------------------------- the fit script


def _script() -> ModuleType:
    name = "fit_detail_combiner"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "fit_detail_combiner.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(ROOT / "benchmarks"))  # as when run: the script stands on benchmarks/_lib
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return module


def test_fit_logistic_recovers_known_coefficients() -> None:
    script = _script()
    rng = np.random.default_rng(3)
    n = 20_000
    x = np.column_stack([rng.normal(0, 2, n), rng.integers(0, 3, n), rng.normal(1, 1, n), np.zeros(n)])
    true_w, true_b = np.array([1.0, -2.0, 0.7, 0.0]), -0.4
    y = (rng.random(n) < 1 / (1 + np.exp(-(x @ true_w + true_b)))).astype(float)
    weights, intercept = script.fit_logistic(x, y, lam=0.01)
    assert weights == pytest.approx(true_w, abs=0.08)
    assert intercept == pytest.approx(true_b, abs=0.08)
    assert weights[3] == 0.0  # a constant column gets no weight


def test_folds_are_stratified_within_sets_and_keep_groups_together() -> None:
    script = _script()
    rng = np.random.default_rng(5)
    sets = ["a"] * 120 + ["b"] * 60
    groups = [f"{s}{i // 3}" for i, s in enumerate(sets)]  # three items share each evidence text
    labels = np.array([float(rng.random() < 0.3) for _ in sets])
    folds = script.make_folds(sets, labels, groups, 4, 7)
    for g in set(groups):
        assert len({int(folds[i]) for i, h in enumerate(groups) if h == g}) == 1
    for s in ("a", "b"):
        mask = np.array([x == s for x in sets])
        assert set(folds[mask].tolist()) == {0, 1, 2, 3}
        ones = [int(labels[mask & (folds == f)].sum()) for f in range(4)]
        assert max(ones) - min(ones) <= 3  # at most one group of three apart


def _synthetic_items(path: Path, n: int, seed: int) -> tuple[float, float, float]:
    """Items whose label follows a known logistic model of logit(p) and missing_numbers."""
    rng = np.random.default_rng(seed)
    b0, b_p, b_num = 0.5, 1.0, -2.0
    with path.open("w") as out:
        for i in range(n):
            evidence = f"Report {i}: the bridge is 6,400 km long and 120 m high, and it opened in 1889."
            changed = int(rng.integers(0, 3))
            length, height = ("7,100" if changed >= 1 else "6,400"), ("135" if changed >= 2 else "120")
            statement = f"The bridge is {length} km long and {height} m high, and it opened in 1889."
            p = float(1 / (1 + np.exp(-rng.normal(0, 1.5))))
            z = b0 + b_p * math.log(p / (1 - p)) + b_num * changed
            label = int(rng.random() < 1 / (1 + math.exp(-z)))
            row = {"set": ("s1", "s2")[i % 2], "id": str(i), "label": label, "p": p}
            out.write(json.dumps({**row, "statement": statement, "evidence": evidence}) + "\n")
    return b0, b_p, b_num


def test_fit_script_recovers_known_coefficients_and_writes_a_loadable_combiner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script()
    items, out = tmp_path / "items.jsonl", tmp_path / "combiner.json"
    b0, b_p, b_num = _synthetic_items(items, 1500, seed=11)
    assert script.main([str(items), "--out", str(out), "--folds", "3", "--boot", "200", "--lambdas", "0.01"]) == 0
    printed = capsys.readouterr().out
    for needle in ("s1", "s2", "P >= 0.5", "P >= tuned", "combiner >= tuned", "TNR"):
        assert needle in printed

    combiner = load_detail_combiner(out)
    weights = dict(zip(combiner.feature_names, combiner.coefficients, strict=True))
    assert weights[LOGIT_P] == pytest.approx(b_p, abs=0.25)
    assert weights["missing_numbers"] == pytest.approx(b_num, abs=0.35)
    assert combiner.intercept == pytest.approx(b0, abs=0.35)
    assert all(weights[n] == 0.0 for n in DETAIL_FEATURES if n != "missing_numbers")  # constant here

    fit = combiner.fit
    assert fit["input"]["n"] == 1500 and set(fit["sets"]) == {"s1", "s2"}
    figures = fit["cv"]["out_of_fold"]["s1"]
    assert set(figures) == {"P >= 0.5", "P >= tuned", "combiner >= tuned"}
    # the detail feature decides many labels here, so the combiner beats P alone out of fold
    assert figures["combiner >= tuned"]["balanced_accuracy"] > figures["P >= 0.5"]["balanced_accuracy"] + 0.05
    # and what was written is what the features and the formula give
    found = detail_features("The bridge is 7,100 km long and 135 m high, and it opened in 1889.", "x 6,400 120 1889")
    z = combiner.intercept + weights[LOGIT_P] * _logit(0.7) + weights["missing_numbers"] * found.missing_numbers
    assert combiner.probability(0.7, found) == pytest.approx(1 / (1 + math.exp(-z)))


def test_fit_script_names_the_bad_line(tmp_path: Path) -> None:
    script = _script()
    items = tmp_path / "items.jsonl"
    good = {"set": "s", "id": "1", "label": 1, "p": 0.5, "statement": "a", "evidence": "b"}
    items.write_text(json.dumps(good) + "\n" + json.dumps({**good, "id": "2", "label": 2}) + "\n")
    with pytest.raises(SystemExit, match=r"items.jsonl:2: label must be 0 or 1"):
        script.read_items(items)
    items.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(SystemExit, match=r"items.jsonl:2: item '1' of set 's' appears twice"):
        script.read_items(items)


# --- numbers the evidence implies (issue 34, item 2) --------------------------------------------


@pytest.mark.parametrize(
    ("statement", "evidence"),
    [
        # counts of things the evidence names one by one (adjectives between count and noun)
        (
            "Lee released three studio albums.",
            "Lee's debut was the Blue Room album (2001). The Dust album followed in 2004, and the Quiet Hours "
            "album closed the trilogy.",
        ),
        ("She has two younger sisters.", "Her sister Ana is a nurse; her sister Mia teaches in Porto."),
        ("The complex has two towers.", "The North Tower and the South Tower opened in 1973; a plaza joins them."),
        ("Two French ministers resigned.", "Minister Dupont resigned on Monday. Minister Moreau resigned a day later."),
        # a running score one goal on from the evidence's, with a goal that moved it
        ("Alves headed in to make it 3-2.", "It was 2-2 until Alves rose at the far post."),
        ("Kim's penalty made it 3-1 to Seoul.", "Seoul were 2-1 up when Kim stepped up to take the penalty."),
        (
            "Okafor struck for 1-0 after ten minutes.",
            "The game was goalless, 0-0, until Okafor's shot after ten minutes.",
        ),
        # a total or a margin the statement says it is
        ("The club won by 4 goals.", "The club beat Rovers 6-2 on Saturday."),
        ("They planted 120 trees in total.", "Volunteers planted 70 trees in the park and 50 trees along the river."),
        ("Turnout rose by 6 percent.", "Turnout was 58 percent in 2016 and 64 percent in 2020."),
    ],
)
def test_a_number_the_evidence_implies_is_not_missing(statement: str, evidence: str) -> None:
    features = detail_features(statement, evidence)
    assert features.missing_numbers == 0, features.problems()
    assert len(features.implied) == 1 and features.as_dict()["implied"] == list(features.implied)


@pytest.mark.parametrize(
    ("statement", "evidence"),
    [
        # a count the evidence does not name exactly
        (
            "Lee released four studio albums.",
            "Lee's debut was the Blue Room album (2001). The Dust album followed in 2004.",
        ),
        ("She has two sisters.", "Her sister Ana is a nurse."),
        ("Two stops are near the city.", "There is a frequent stop near the city and a single stop downtown."),
        ("Three bridges cross the river.", "The North Bridge and the South Bridge cross it; no other bridge does."),
        # a score that contradicts, or moved without a goal being said to move it
        ("The score was 2-1 at half time.", "It was 1-1 at half time."),
        ("Alves headed in to make it 5-3.", "Porto led 3-2 until Alves rose at the far post."),
        # a total or margin that does not add up, or a sum nobody said was one
        ("The club won by 3 goals.", "The club beat Rovers 6-2 on Saturday."),
        ("They planted 130 trees in total.", "Volunteers planted 70 trees in the park and 50 trees along the river."),
        ("They planted 120 trees.", "Volunteers planted 70 trees in the park and 50 trees along the river."),
        ("The tower was finished in 1990 in total.", "Work began in 1985 and took 5 years."),
    ],
)
def test_a_number_the_evidence_does_not_imply_is_still_missing(statement: str, evidence: str) -> None:
    features = detail_features(statement, evidence)
    assert features.missing_numbers >= 1 and not features.implied
