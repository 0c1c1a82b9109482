"""Reproduce trec_eval's own regression outputs (usnistgov/trec_eval test/), to 4 decimals.

Every value in ``trec_eval_expected.json`` is a test case: binary and graded (-l2), the
``all`` line and each query. Every measure in the file is implemented; none is skipped.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from assay.retrieval import TrecEvaluation, evaluate_trec, read_qrels, read_run, supported_measures
from assay.retrieval._trec import parse_measures

FIXTURES = Path(__file__).parent.parent / "fixtures" / "trec_eval"
EXPECTED = json.loads((FIXTURES / "trec_eval_expected.json").read_text())
LEVELS = {"binary": 1, "graded": 2}


@cache
def _evaluation(variant: str) -> TrecEvaluation:
    spec = EXPECTED[variant]
    qrels = read_qrels(FIXTURES / Path(spec["qrels"]).name)
    run = read_run(FIXTURES / Path(spec["run"]).name)
    return evaluate_trec(qrels, run, ["all_trec"], level=LEVELS[variant])


def _cases() -> list[object]:
    cases: list[object] = []
    for variant in ("binary", "graded"):
        for name, value in EXPECTED[variant]["all"].items():
            cases.append(pytest.param(variant, "all", name, value, id=f"{variant}-all-{name}"))
        for qid, values in EXPECTED[variant]["per_query"].items():
            for name, value in values.items():
                cases.append(pytest.param(variant, qid, name, value, id=f"{variant}-{qid}-{name}"))
    return cases


@pytest.mark.parametrize(("variant", "scope", "measure", "expected"), _cases())
def test_matches_trec_eval(variant: str, scope: str, measure: str, expected: float) -> None:
    assert parse_measures([measure])[0].family in supported_measures(), f"{measure!r} is not implemented"
    result = _evaluation(variant)
    got = result.aggregate[measure] if scope == "all" else result.per_query[scope][measure]
    assert round(got, 4) == pytest.approx(expected, abs=1e-9), f"{variant} {scope} {measure}"


def test_fixture_headline_means() -> None:
    # The means that data/README.md quotes, through the ordinary measure names.
    binary = evaluate_trec(
        read_qrels(FIXTURES / "qrels.test"),
        read_run(FIXTURES / "results.test"),
        ["map", "recip_rank", "P.5,10", "recall.10,100", "ndcg", "ndcg_cut.10"],
    )
    assert {k: round(v, 4) for k, v in binary.aggregate.items()} == {
        "map": 0.1785,
        "recip_rank": 0.4064,
        "P_5": 0.2667,
        "P_10": 0.3,
        "recall_10": 0.0317,
        "recall_100": 0.498,
        "ndcg": 0.4021,
        "ndcg_cut_10": 0.3016,
    }


def test_trec_eval_output_format() -> None:
    result = _evaluation("binary")
    lines = result.lines(per_query=True)
    assert "num_ret               \tall\t1500" in lines
    assert "map                   \tall\t0.1785" in lines
    assert "P_5                   \t301\t0.0000" in lines
    # per-query lines come first, then the all lines
    assert lines.index("P_5                   \t301\t0.0000") < lines.index("num_ret               \tall\t1500")
