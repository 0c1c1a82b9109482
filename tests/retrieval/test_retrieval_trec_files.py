"""TREC qrels/run parsing errors and trec_eval's query-set semantics."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import ConfigError, DatasetError, SampleError
from assay.retrieval import evaluate_trec, parse_measures, parse_qrels, parse_run, read_qrels


def test_bad_lines_name_source_and_line() -> None:
    with pytest.raises(SampleError, match=r"q\.txt:2: expected 4 fields") as info:
        parse_qrels(["1 0 d1 1", "1 0 d2"], source="q.txt")
    assert info.value.line == 2
    with pytest.raises(SampleError, match=r"r:1: score must be a number"):
        parse_run(["1 Q0 d1 1 high run"], source="r")
    with pytest.raises(SampleError, match="retrieved twice"):
        parse_run(["1 Q0 d1 1 1.0 r", "1 Q0 d1 2 0.5 r"])
    with pytest.raises(SampleError, match="judged twice"):
        parse_qrels(["1 0 d1 1", "1 0 d1 0"])


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not found"):
        read_qrels(tmp_path / "nope")


def test_measure_names() -> None:
    # trec_eval prints in its measure-table order and sorts each family's cut-offs.
    assert [m.name for m in parse_measures(["P.10,5", "ndcg_cut_10", "map"])] == [
        "map",
        "P_5",
        "P_10",
        "ndcg_cut_10",
    ]
    assert [m.name for m in parse_measures(["iprec_at_recall.0.5"])] == ["iprec_at_recall_0.50"]
    with pytest.raises(ConfigError, match="unknown trec_eval measure"):
        parse_measures(["nope"])


def test_query_sets_follow_trec_eval() -> None:
    qrels = parse_qrels(["a 0 d1 1", "b 0 d2 1"])
    run = parse_run(["a Q0 d1 1 1.0 r", "z Q0 d9 1 1.0 r"])
    plain = evaluate_trec(qrels, run, ["P.1", "num_q"])
    assert list(plain.per_query) == ["a"] and plain.aggregate["P_1"] == 1.0
    assert plain.run_only_queries == ("z",) and plain.missing_from_run == ("b",)
    complete = evaluate_trec(qrels, run, ["P.1", "num_q"], complete=True)
    assert list(complete.per_query) == ["a", "b"] and complete.aggregate["P_1"] == 0.5
    assert complete.aggregate["num_q"] == 2
