"""The retrieval evaluator: matching table, id mapping, metrics, unjudged handling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import ConfigError, JudgeError, SampleError
from assay.models import ScriptedJudge
from assay.retrieval import (
    LLMJudge,
    RetrievalExample,
    TokenOverlapJudge,
    evaluate_retrieval,
    load_retrieval_dataset,
)

A = "Marie Curie won the Nobel Prize in Physics in 1903 with Pierre Curie."
B = "Marie Curie won a second Nobel Prize, in Chemistry, in 1911."
NOISE = "The Great Wall of China is visible across northern China."


def test_matches_map_to_expected_ids_and_metrics_follow() -> None:
    ex = RetrievalExample(id="q1", query="Curie Nobel prizes", expected=[A, B], retrieved=[NOISE, B, "Intro: " + A, A])
    report = evaluate_retrieval([ex], TokenOverlapJudge(), k=[1, 2, 4])
    table = report.queries[0].matches
    assert [r.status for r in table] == ["not_relevant", "relevant", "relevant", "duplicate"]
    assert [r.expected_index for r in table] == [None, 1, 0, None]
    m = report.queries[0].metrics
    assert m["precision@1"] == 0.0
    assert m["precision@4"] == pytest.approx(2 / 4)  # the duplicate does not count twice
    assert m["recall@2"] == pytest.approx(1 / 2)
    assert m["mrr@4"] == pytest.approx(1 / 2)
    assert m["ap@4"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert report.mean == m
    assert table[1].reason  # evidence travels with the table


def test_graded_relevance_feeds_ndcg_and_retriever_callable() -> None:
    ex = RetrievalExample(id="q", query="Curie", expected=[A, B], relevance=[1, 2])
    calls: list[str] = []

    def retriever(query: str) -> list[str]:
        calls.append(query)
        return [A, B]

    report = evaluate_retrieval([ex], TokenOverlapJudge(), retriever=retriever, k=[2], metrics=["ndcg", "r_precision"])
    assert calls == ["Curie"]
    import math

    dcg = 1 + 2 / math.log2(3)
    idcg = 2 + 1 / math.log2(3)
    assert report.mean["ndcg@2"] == pytest.approx(dcg / idcg)
    assert report.mean["r_precision"] == 1.0


def test_judge_failures_are_unjudged_and_reported() -> None:
    ex = RetrievalExample(id="q", query="Curie", expected=[A], retrieved=["x", "y", "z"])
    model = ScriptedJudge(['{"reason": "no", "verdict": 0}', "garbage", JudgeError("timeout")])
    report = evaluate_retrieval([ex], LLMJudge(model), k=[3])
    q = report.queries[0]
    assert [r.status for r in q.matches] == ["not_relevant", "unjudged", "unjudged"]
    assert q.n_unjudged == 2 and report.n_unjudged == 2
    assert report.unjudged_by_reason == {"judge_error": 1, "parse_failure": 1}
    assert q.metrics["precision@3"] == 0.0  # unjudged is never relevant


def test_missing_retrieved_and_unknown_metric_are_config_errors() -> None:
    ex = RetrievalExample(id="q", query="x", expected=[A])
    with pytest.raises(ConfigError, match="no 'retrieved'"):
        evaluate_retrieval([ex], TokenOverlapJudge())
    with pytest.raises(ConfigError, match="unknown retrieval metric"):
        evaluate_retrieval([ex], TokenOverlapJudge(), retriever=lambda q: [A], metrics=["f1"])


def test_dataset_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(
        json.dumps({"id": "a", "query": "q", "expected": [A]})
        + "\n"
        + json.dumps({"id": "b", "query": "q", "expected": []})
        + "\n"
    )
    with pytest.raises(SampleError, match=r"d\.jsonl:2: expected") as info:
        load_retrieval_dataset(path)
    assert info.value.line == 2
    path.write_text("{not json\n")
    with pytest.raises(SampleError, match=":1: not valid JSON"):
        load_retrieval_dataset(path)
