"""Evaluate a retriever that returns texts: judge matches, map to ids, compute IR metrics.

For each query, every retrieved text (in rank order, up to the largest ``k``) is judged
against every expected relevant text. A retrieved text that matches takes the id and the
relevance grade of the expected text it matches best (highest judge score, then highest
grade, then first listed) among those no higher-ranked result has already claimed. A
result that only matches already-claimed texts is a duplicate and counts as non-relevant
(as if trec_eval had judged a second copy non-relevant). A result with no match but at
least one *unjudged* pair (the judge failed) is unjudged: it is not relevant for any
measure, and the report counts it by reason. The metrics are then computed on those ids
with :mod:`assay.retrieval._measures` (trec_eval semantics).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from assay.errors import ConfigError, DatasetError, SampleError, did_you_mean, json_message
from assay.retrieval import _measures as m
from assay.retrieval._judges import JudgePair, MatchDecision, RelevanceJudge

__all__ = [
    "METRICS",
    "RETRIEVAL_ALIASES",
    "MatchRecord",
    "QueryResult",
    "RetrievalExample",
    "RetrievalReport",
    "Retriever",
    "aevaluate_retrieval",
    "evaluate_retrieval",
    "load_retrieval_dataset",
]

Retriever = Callable[[str], "Sequence[str] | Awaitable[Sequence[str]]"]
"""A retriever: query text -> retrieved texts in rank order (sync or async)."""


class RetrievalExample(BaseModel):
    """One query with its expected relevant texts and, optionally, precomputed results.

    ``relevance`` grades the expected texts (default 1 each; use >= 1, higher is better);
    graded values feed nDCG, and binary measures count grades >= ``level``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    query: str
    expected: list[str] = Field(min_length=1)
    relevance: list[int] | None = None
    retrieved: list[str] | None = None

    @model_validator(mode="after")
    def _check_relevance(self) -> RetrievalExample:
        if self.relevance is not None:
            if len(self.relevance) != len(self.expected):
                raise ValueError(f"relevance has {len(self.relevance)} grades for {len(self.expected)} expected texts")
            if any(g < 0 for g in self.relevance):
                raise ValueError("relevance grades must be >= 0")
        return self

    @property
    def grades(self) -> list[int]:
        """Relevance grade of each expected text."""
        return list(self.relevance) if self.relevance is not None else [1] * len(self.expected)


class MatchRecord(BaseModel):
    """One retrieved result: which expected text it matched, and why.

    ``expected_index`` is ``None`` for a non-match. ``status`` is ``relevant``,
    ``not_relevant``, ``duplicate`` or ``unjudged``. ``decisions`` holds the judge's
    decision for each expected text, in order.
    """

    model_config = ConfigDict(frozen=True)

    rank: int
    retrieved: str
    status: str
    expected_index: int | None = None
    level: int = 0
    decisions: tuple[MatchDecision, ...] = ()

    @property
    def reason(self) -> str:
        """The deciding decision's reason (the matching one, else the first)."""
        if self.expected_index is not None:
            return self.decisions[self.expected_index].reason
        return self.decisions[0].reason if self.decisions else ""


class QueryResult(BaseModel):
    """Metrics and the matching table of one query."""

    model_config = ConfigDict(frozen=True, ser_json_inf_nan="null")

    id: str
    query: str
    metrics: dict[str, float]
    matches: tuple[MatchRecord, ...]
    n_unjudged: int = 0


class RetrievalReport(BaseModel):
    """Per-query metrics, their means over queries, and the judge used."""

    model_config = ConfigDict(frozen=True, ser_json_inf_nan="null")

    judge: str
    metrics: tuple[str, ...]
    mean: dict[str, float]
    queries: tuple[QueryResult, ...]
    n_unjudged: int = 0
    unjudged_by_reason: dict[str, int] = Field(default_factory=dict)


def _mrr(r: m.Ranking, k: int, level: int) -> m.FloatArray:
    return m.reciprocal_rank(r, k, level)


def _ap(r: m.Ranking, k: int, level: int) -> m.FloatArray:
    return m.average_precision(r, k, level)


def _ndcg(r: m.Ranking, k: int, _level: int) -> m.FloatArray:
    return m.ndcg(r, k)


def _ndcg_exp(r: m.Ranking, k: int, _level: int) -> m.FloatArray:
    return m.ndcg(r, k, gain="exponential")


METRICS: dict[str, Callable[[m.Ranking, int, int], m.FloatArray]] = {
    "precision": m.precision,
    "recall": m.recall,
    "hit_rate": m.hit_rate,
    "mrr": _mrr,
    "ndcg": _ndcg,
    "ndcg_exp": _ndcg_exp,
    "ap": _ap,
}
"""Cut-off metrics by name (reported as ``name@k``); ``r_precision`` has no cut-off."""


RETRIEVAL_ALIASES: dict[str, str] = {
    # Ragas: user_input, retrieved_contexts, reference_contexts (what should be retrieved).
    # DeepEval: input, retrieval_context, context (its "ideal context": what should be retrieved).
    "question": "query",
    "user_input": "query",
    "input": "query",
    "retrieved_contexts": "retrieved",
    "retrieval_context": "retrieved",
    "contexts": "retrieved",
    "reference_contexts": "expected",
    "context": "expected",
    "expected_contexts": "expected",
}
"""Column name -> :class:`RetrievalExample` field, for columns named as Ragas and DeepEval name them.

Here the ideal context (DeepEval's ``context``, Ragas' ``reference_contexts``) is exactly
what a retrieval evaluation compares against: the expected texts. An explicit mapping wins;
two columns for one field are a row error; other columns (an answer, a reference) are ignored.
"""

_RETRIEVAL_FIELDS = frozenset(RetrievalExample.model_fields)


def load_retrieval_dataset(
    path: str | os.PathLike[str],
    *,
    mapping: Mapping[str, str] | None = None,
    errors: list[SampleError] | None = None,
) -> list[RetrievalExample]:
    """Read a JSONL file of :class:`RetrievalExample` rows.

    Each line: ``{"id": ..., "query": ..., "expected": [...], "relevance": [...]?,
    "retrieved": [...]?}``; ``id`` defaults to the line number. Ragas' and DeepEval's
    column names are read too (:data:`RETRIEVAL_ALIASES`), and ``mapping`` renames
    columns (``{"gold": "expected"}``; every column it names must be in some row).

    Args:
        path: The JSONL file.
        mapping: Column renames, winning over the aliases.
        errors: Where to put invalid rows: each is appended as a located
            :class:`SampleError` and reading goes on (as ``assay run`` does). Without it,
            the first invalid row raises.

    Raises:
        DatasetError: The file cannot be read.
        SampleError: A line is not JSON or not a valid example (names file and line), when
            ``errors`` is not given.
        ConfigError: ``mapping`` names a column no row has, or a target that is no field.
    """
    explicit = dict(mapping or {})
    unknown = sorted(target for target in explicit.values() if target not in _RETRIEVAL_FIELDS)
    if unknown:
        fields = ", ".join(sorted(_RETRIEVAL_FIELDS))
        hint = did_you_mean(unknown[0], _RETRIEVAL_FIELDS)
        raise ConfigError(f"--map target {unknown[0]!r} is no retrieval field;{hint} use one of {fields}")
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise DatasetError(f"{p}: file not found") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{p}: not UTF-8 text") from exc
    out: list[RetrievalExample] = []
    seen: set[str] = set()
    columns: dict[str, None] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            example = _example(line, n, explicit, seen, columns, str(p))
        except SampleError as exc:
            if errors is None:
                raise
            errors.append(exc)
            continue
        seen.add(example.id)
        out.append(example)
    for column, target in explicit.items():
        if column not in columns:
            shown = ", ".join(columns) or "none"
            hint = did_you_mean(column, columns)
            raise ConfigError(
                f"{p}: no column {column!r} (named in --map {column}={target}); columns are {shown}"
                + (f";{hint}" if hint else "")
            )
    return out


def _example(
    line: str, n: int, explicit: Mapping[str, str], seen: set[str], columns: dict[str, None], source: str
) -> RetrievalExample:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SampleError(f"not valid JSON: {json_message(exc)} (column {exc.colno})", source=source, line=n) from None
    if not isinstance(row, dict):
        raise SampleError("each line must be a JSON object", source=source, line=n)
    fields: dict[str, Any] = {}
    given: dict[str, str] = {}
    for key, value in row.items():
        columns.setdefault(str(key), None)
        target = explicit.get(key) or (key if key in _RETRIEVAL_FIELDS else RETRIEVAL_ALIASES.get(key))
        if target is None or value is None:
            continue  # an answer, a reference, metadata: not part of a retrieval evaluation
        if target in given and (key in explicit) == (given[target] in explicit):
            raise SampleError(
                f"columns {given[target]!r} and {key!r} both give the {target}; keep one, or choose it with "
                f"--map {key}={target}",
                source=source,
                line=n,
            )
        if target in given and given[target] in explicit:
            continue  # the explicit mapping wins
        given[target] = key
        fields[target] = value
    for target in ("expected", "retrieved"):
        if isinstance(fields.get(target), str):
            fields[target] = [fields[target]]
    fields.setdefault("id", str(n))
    if not isinstance(fields["id"], str):
        fields["id"] = str(fields["id"])
    try:
        example = RetrievalExample.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = list(first["loc"])
        head = given.get(str(loc[0]), str(loc[0])) if loc else "row"
        where = head + "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in loc[1:])
        raise SampleError(f"{where}: {first['msg']}", source=source, line=n) from None
    if example.id in seen:
        raise SampleError(f"duplicate id {example.id!r}", source=source, line=n)
    return example


def _metric_names(metrics: Iterable[str], ks: Sequence[int]) -> list[str]:
    names: list[str] = []
    for metric in metrics:
        if metric == "r_precision":
            names.append(metric)
        elif metric in METRICS:
            names.extend(f"{metric}@{k}" for k in ks)
        else:
            raise ConfigError(f"unknown retrieval metric {metric!r}; known: {', '.join([*METRICS, 'r_precision'])}")
    return names


def _assign(
    example: RetrievalExample, retrieved: Sequence[str], decisions: list[list[MatchDecision]]
) -> list[MatchRecord]:
    grades = example.grades
    claimed: set[int] = set()
    records: list[MatchRecord] = []
    for rank, (text, row) in enumerate(zip(retrieved, decisions, strict=True), start=1):
        matched = [j for j, d in enumerate(row) if d.matched]
        free = [j for j in matched if j not in claimed]
        if free:
            best = max(free, key=lambda j: (row[j].score or 0.0, grades[j], -j))
            claimed.add(best)
            status = "relevant" if grades[best] > 0 else "not_relevant"
            records.append(
                MatchRecord(
                    rank=rank,
                    retrieved=text,
                    status=status,
                    expected_index=best,
                    level=grades[best],
                    decisions=tuple(row),
                )
            )
        elif matched:
            records.append(MatchRecord(rank=rank, retrieved=text, status="duplicate", decisions=tuple(row)))
        elif any(d.matched is None for d in row):
            records.append(
                MatchRecord(
                    rank=rank,
                    retrieved=text,
                    status="unjudged",
                    level=m.UNJUDGED,
                    decisions=tuple(row),
                )
            )
        else:
            records.append(MatchRecord(rank=rank, retrieved=text, status="not_relevant", decisions=tuple(row)))
    return records


async def _retrieve(retriever: Retriever, query: str) -> list[str]:
    result = retriever(query)
    if inspect.isawaitable(result):
        result = await result
    return [str(t) for t in result]


async def aevaluate_retrieval(
    examples: Sequence[RetrievalExample],
    judge: RelevanceJudge,
    *,
    retriever: Retriever | None = None,
    k: Sequence[int] = (1, 3, 5, 10),
    metrics: Sequence[str] = ("precision", "recall", "hit_rate", "mrr", "ndcg", "ap"),
    level: int = 1,
) -> RetrievalReport:
    """Judge retrieved texts against expected ones and compute IR metrics (async).

    Args:
        examples: Queries with expected texts; ``retrieved`` is used when no retriever is
            given.
        judge: Decides each (query, expected, retrieved) pair.
        retriever: Called with each query text; returns texts in rank order.
        k: Cut-offs; results past ``max(k)`` are not judged.
        metrics: Names from :data:`METRICS` (each reported at every k) and ``r_precision``.
        level: Relevance threshold for binary metrics (grades >= level are relevant).

    Returns:
        Per-query metrics with their matching tables, and means over queries.
    """
    ks = sorted({int(x) for x in k})
    if not ks or ks[0] < 1:
        raise ConfigError(f"k must be positive integers, got {list(k)!r}")
    if level < 1:
        raise ConfigError(f"relevance level must be >= 1, got {level}")
    names = _metric_names(metrics, ks)
    depth = ks[-1]
    lists: list[list[str]] = []
    for ex in examples:
        if retriever is not None:
            got = await _retrieve(retriever, ex.query)
        elif ex.retrieved is not None:
            got = list(ex.retrieved)
        else:
            raise ConfigError(f"query {ex.id!r} has no 'retrieved' texts and no retriever was given")
        lists.append(got[:depth])
    pairs = [
        JudgePair(ex.query, expected, text)
        for ex, got in zip(examples, lists, strict=True)
        for text in got
        for expected in ex.expected
    ]
    flat = await judge.judge(pairs)
    if len(flat) != len(pairs):
        raise ConfigError(f"judge {judge.name!r} returned {len(flat)} decisions for {len(pairs)} pairs")
    tables: list[list[MatchRecord]] = []
    pos = 0
    for ex, got in zip(examples, lists, strict=True):
        n_exp = len(ex.expected)
        rows = [flat[pos + i * n_exp : pos + (i + 1) * n_exp] for i in range(len(got))]
        pos += n_exp * len(got)
        tables.append(_assign(ex, got, rows))
    ranking = m.Ranking.from_lists([[rec.level for rec in table] for table in tables], [ex.grades for ex in examples])
    values: dict[str, m.FloatArray] = {}
    for name in names:
        if name == "r_precision":
            values[name] = m.r_precision(ranking, level)
        else:
            metric, _, cut = name.partition("@")
            values[name] = METRICS[metric](ranking, int(cut), level)
    reasons: dict[str, int] = {}
    results: list[QueryResult] = []
    for qi, (ex, table) in enumerate(zip(examples, tables, strict=True)):
        n_unj = 0
        for rec in table:
            if rec.status == "unjudged":
                n_unj += 1
                reason = next(d.unjudged_reason for d in rec.decisions if d.unjudged_reason)
                reasons[reason.value] = reasons.get(reason.value, 0) + 1
        results.append(
            QueryResult(
                id=ex.id,
                query=ex.query,
                metrics={name: float(values[name][qi]) for name in names},
                matches=tuple(table),
                n_unjudged=n_unj,
            )
        )
    means = {name: (m.mean(values[name]) if examples else math.nan) for name in names}
    return RetrievalReport(
        judge=judge.name,
        metrics=tuple(names),
        mean=means,
        queries=tuple(results),
        n_unjudged=sum(r.n_unjudged for r in results),
        unjudged_by_reason=dict(sorted(reasons.items())),
    )


def evaluate_retrieval(
    examples: Sequence[RetrievalExample],
    judge: RelevanceJudge,
    **kwargs: Any,
) -> RetrievalReport:
    """Synchronous :func:`aevaluate_retrieval` (do not call from a running event loop)."""
    return asyncio.run(aevaluate_retrieval(examples, judge, **kwargs))
