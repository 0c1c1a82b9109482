"""TREC qrels and run files, and trec_eval-compatible evaluation over them.

Formats (whitespace-separated, one judgement or result a line; blank lines are skipped):

- qrels: ``QUERY_ID ITERATION DOC_ID RELEVANCE`` (relevance an integer; a negative value
  means "in the pool but not judged", as in trec_eval);
- run: ``QUERY_ID Q0 DOC_ID RANK SCORE RUN_NAME``, anything after the run name ignored
  and lines starting with ``#`` skipped, as trec_eval does. The rank column is ignored:
  like trec_eval, documents are ordered by score descending, then document id descending.
  The run name is the last line's (trec_eval's ``runid``).

A malformed line raises :class:`assay.errors.SampleError` naming the file and line.

Measure names are trec_eval's: a family with optional parameters (``P.5,10``,
``ndcg_cut.10``, ``map``) or an output name (``P_5``, ``iprec_at_recall_0.10``).
Nicknames expand as in trec_eval 9.x: ``official`` (the default set, what ``trec_eval``
prints without ``-m``), ``set`` and ``all_trec`` (every family here). Measures come out
in trec_eval's own order (its measure table), whatever order they were asked in; a
family's cut-offs are sorted ascending. :meth:`TrecEvaluation.lines` prints trec_eval's
exact bytes, so ``diff`` against ``trec_eval`` output is empty (pinned by
``tests/retrieval/test_retrieval_trec_output.py``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from assay.errors import ConfigError, DatasetError, SampleError
from assay.retrieval import _measures as m
from assay.retrieval._measures import NONPOOL, UNJUDGED, FloatArray, Ranking

__all__ = [
    "DEFAULT_MEASURES",
    "NICKNAMES",
    "Qrels",
    "Run",
    "TrecEvaluation",
    "TrecMeasure",
    "build_ranking",
    "evaluate_trec",
    "parse_measures",
    "parse_qrels",
    "parse_run",
    "read_qrels",
    "read_run",
    "supported_measures",
]


# --------------------------------------------------------------------------- files


@dataclass(frozen=True)
class Qrels:
    """Relevance judgements: ``{query_id: {doc_id: level}}``."""

    judgments: Mapping[str, Mapping[str, int]]

    @property
    def query_ids(self) -> list[str]:
        """Query ids, sorted as trec_eval sorts them (byte order)."""
        return sorted(self.judgments)


@dataclass(frozen=True)
class Run:
    """Retrieval results: ``{query_id: {doc_id: score}}`` and a run name."""

    scores: Mapping[str, Mapping[str, float]]
    name: str = "run"


def _lines(path: str | os.PathLike[str]) -> tuple[str, list[str]]:
    p = Path(path)
    try:
        return str(p), p.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise DatasetError(f"{p}: file not found") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise DatasetError(f"{p}: cannot read ({exc.strerror})") from exc


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """Read a TREC qrels file (``QUERY_ID ITERATION DOC_ID RELEVANCE`` per line).

    Raises:
        DatasetError: The file cannot be read.
        SampleError: A line does not have 4 fields, its relevance is not an integer, or a
            (query, document) pair is judged twice.
    """
    source, lines = _lines(path)
    return parse_qrels(lines, source=source)


def parse_qrels(lines: Iterable[str], *, source: str = "<qrels>") -> Qrels:
    """Parse qrels lines (see :func:`read_qrels`)."""
    out: dict[str, dict[str, int]] = {}
    for n, line in enumerate(lines, start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise SampleError(
                f"expected 4 fields 'QUERY_ID ITERATION DOC_ID RELEVANCE', got {len(parts)}: {line.strip()[:120]!r}",
                source=source,
                line=n,
            )
        qid, _, doc, rel = parts
        try:
            level = int(rel)
        except ValueError:
            raise SampleError(f"relevance must be an integer, got {rel!r}", source=source, line=n) from None
        judged = out.setdefault(qid, {})
        if doc in judged:
            raise SampleError(f"document {doc!r} judged twice for query {qid!r}", source=source, line=n)
        judged[doc] = level
    return Qrels(out)


def read_run(path: str | os.PathLike[str]) -> Run:
    """Read a TREC run file (``QUERY_ID Q0 DOC_ID RANK SCORE RUN_NAME`` per line).

    Raises:
        DatasetError: The file cannot be read.
        SampleError: A line has fewer than 6 fields, its score is not a finite number, or
            a document is retrieved twice for one query.
    """
    source, lines = _lines(path)
    return parse_run(lines, source=source)


def parse_run(lines: Iterable[str], *, source: str = "<run>") -> Run:
    """Parse run lines (see :func:`read_run`)."""
    out: dict[str, dict[str, float]] = {}
    name = "run"
    for n, line in enumerate(lines, start=1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if len(parts) < 6:
            raise SampleError(
                f"expected 6 fields 'QUERY_ID Q0 DOC_ID RANK SCORE RUN_NAME', got {len(parts)}: {line.strip()[:120]!r}",
                source=source,
                line=n,
            )
        qid, _, doc, _, score_text, name = parts[:6]
        try:
            score = float(score_text)
        except ValueError:
            raise SampleError(f"score must be a number, got {score_text!r}", source=source, line=n) from None
        if not math.isfinite(score):
            raise SampleError(f"score must be finite, got {score_text!r}", source=source, line=n)
        docs = out.setdefault(qid, {})
        if doc in docs:
            raise SampleError(f"document {doc!r} retrieved twice for query {qid!r}", source=source, line=n)
        docs[doc] = score
    return Run(out, name=name)


# --------------------------------------------------------------------------- ranking


def build_ranking(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    query_ids: Sequence[str],
) -> Ranking:
    """Join run and qrels for ``query_ids`` (in that row order) into a :class:`Ranking`."""
    q_index: list[int] = []
    docs: list[str] = []
    scores: list[float] = []
    levels: list[int] = []
    n_levels = 1
    for q, qid in enumerate(query_ids):
        judged = qrels.get(qid, {})
        if judged:
            n_levels = max(n_levels, max(judged.values()) + 1)
        ranked = run.get(qid, {})
        q_index.extend([q] * len(ranked))
        docs.extend(ranked)
        scores.extend(ranked.values())
        for doc in ranked:
            lv = judged.get(doc)
            levels.append(NONPOOL if lv is None else (UNJUDGED if lv < 0 else lv))
    counts = np.zeros((len(query_ids), n_levels), dtype=np.int64)
    for q, qid in enumerate(query_ids):
        for lv in qrels.get(qid, {}).values():
            if lv >= 0:
                counts[q, lv] += 1
    if docs:
        _, doc_order = np.unique(np.asarray(docs), return_inverse=True)
    else:
        doc_order = np.zeros(0, dtype=np.int64)
    return m.rank_flat(
        np.asarray(q_index, dtype=np.int64),
        np.asarray(scores, dtype=np.float64),
        doc_order.astype(np.int64).ravel(),
        np.asarray(levels, dtype=np.int64),
        counts,
    )


# --------------------------------------------------------------------------- measures

_Fn = Callable[[Ranking, float, int], FloatArray]
_Kind = Literal["float", "count", "text"]


@dataclass(frozen=True)
class _Family:
    fn: _Fn
    defaults: tuple[float, ...] = ()
    float_param: bool = False
    aggregate: str = "mean"  # "mean", "sum" (counts) or "gm" (geometric mean, no per-query)
    graded: bool = False  # ignores the relevance threshold
    kind: _Kind = "float"
    per_query: bool = True  # printed on each query's lines (trec_eval -q)
    summary: bool = True  # printed on the "all" lines
    single: bool = False  # one value whose parameter only changes how it is computed (relstring)


def _single(fn: Callable[[Ranking, int], FloatArray]) -> _Fn:
    return lambda r, _p, level: fn(r, level)


def _cut(fn: Callable[[Ranking, int, int], FloatArray]) -> _Fn:
    return lambda r, p, level: fn(r, int(p), level)


def _frac(fn: Callable[[Ranking, float, int], FloatArray]) -> _Fn:
    return lambda r, p, level: fn(r, p, level)


def _no_values(r: Ranking, _p: float, _level: int) -> FloatArray:
    # Text measures (runid, relstring) are rendered by TrecEvaluation, not computed as numbers.
    return np.zeros(r.n_queries)


_CUTS = (5.0, 10.0, 15.0, 20.0, 30.0, 100.0, 200.0, 500.0, 1000.0)
_RECALLS = tuple(i / 10 for i in range(11))
_RMULTS = tuple(i / 10 for i in range(2, 21, 2))

# In trec_eval 9.x's measure-table order (measures.c, te_trec_measures): output follows it.
_FAMILIES: dict[str, _Family] = {
    "runid": _Family(_no_values, kind="text", per_query=False),
    "num_q": _Family(lambda r, _p, _l: np.ones(r.n_queries), aggregate="sum", kind="count", per_query=False),
    "num_ret": _Family(lambda r, _p, _l: m.num_retrieved(r), aggregate="sum", kind="count"),
    "num_rel": _Family(_single(m.num_relevant), aggregate="sum", kind="count"),
    "num_rel_ret": _Family(_single(m.num_relevant_retrieved), aggregate="sum", kind="count"),
    "map": _Family(lambda r, _p, level: m.average_precision(r, None, level)),
    "gm_map": _Family(lambda r, _p, level: m.average_precision(r, None, level), aggregate="gm", per_query=False),
    "Rprec": _Family(_single(m.r_precision)),
    "bpref": _Family(_single(m.bpref)),
    "recip_rank": _Family(lambda r, _p, level: m.reciprocal_rank(r, None, level)),
    "iprec_at_recall": _Family(_frac(m.interpolated_precision), _RECALLS, float_param=True),
    "P": _Family(_cut(m.precision), _CUTS),
    "relstring": _Family(_no_values, (10.0,), kind="text", summary=False, single=True),
    "recall": _Family(_cut(m.recall), _CUTS),
    "infAP": _Family(_single(m.inferred_average_precision)),
    "gm_bpref": _Family(_single(m.bpref), aggregate="gm", per_query=False),
    "Rprec_mult": _Family(_frac(m.r_precision_mult), _RMULTS, float_param=True),
    "utility": _Family(lambda r, _p, level: m.utility(r, level=level)),
    "11pt_avg": _Family(_single(m.eleven_point_average)),
    "binG": _Family(_single(m.binary_g)),
    "G": _Family(lambda r, _p, _l: m.g_measure(r), graded=True),
    "ndcg": _Family(lambda r, _p, _l: m.ndcg(r), graded=True),
    "ndcg_rel": _Family(lambda r, _p, _l: m.ndcg_rel(r), graded=True),
    "Rndcg": _Family(_single(m.ndcg_at_r_levels)),
    "ndcg_cut": _Family(lambda r, p, _l: m.ndcg(r, int(p)), _CUTS, graded=True),
    "map_cut": _Family(_cut(lambda r, k, level: m.average_precision(r, k, level)), _CUTS),
    "relative_P": _Family(_cut(m.relative_precision), _CUTS),
    "success": _Family(_cut(m.hit_rate), (1.0, 5.0, 10.0)),
    "set_P": _Family(_single(m.set_precision)),
    "set_relative_P": _Family(_single(m.set_relative_precision)),
    "set_recall": _Family(_single(m.set_recall)),
    "set_map": _Family(lambda r, _p, level: m.set_precision(r, level) * m.set_recall(r, level)),
    "set_F": _Family(lambda r, _p, level: m.set_f(r, 1.0, level)),
    "num_nonrel_judged_ret": _Family(_single(m.num_nonrel_judged_retrieved), aggregate="sum", kind="count"),
    "rbp": _Family(lambda r, _p, _l: m.rank_biased_precision(r), graded=True),
    "rbp_resid": _Family(lambda r, _p, _l: m.rank_biased_precision_residual(r), graded=True),
    "unj": _Family(lambda r, p, _l: m.unjudged_fraction(r, int(p)), (5.0, 10.0, 20.0)),
}
_ORDER = {name: i for i, name in enumerate(_FAMILIES)}

# trec_eval's nicknames (measures.c). "official" is what trec_eval prints without -m.
NICKNAMES: Mapping[str, tuple[str, ...]] = {
    "official": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map",
        "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P",
    ),
    "set": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility",
        "set_P", "set_recall", "set_relative_P", "set_map", "set_F",
    ),
    "all_trec": tuple(_FAMILIES),
}  # fmt: skip
"""trec_eval's measure nicknames and the families each one names."""

DEFAULT_MEASURES = ("official",)
"""What ``trec_eval`` computes when no ``-m`` is given."""


def supported_measures() -> list[str]:
    """The trec_eval measure families implemented here, in trec_eval's output order."""
    return list(_FAMILIES)


@dataclass(frozen=True)
class TrecMeasure:
    """One concrete measure: a family and its parameter (``P`` at 10 is ``P_10``).

    ``param`` is ``None`` for a family without parameters, and for ``relstring`` left at
    its default length (trec_eval then prints the bare family name).
    """

    family: str
    param: float | None = None

    @property
    def name(self) -> str:
        """trec_eval's output name, e.g. ``P_10``, ``iprec_at_recall_0.10``, ``map``."""
        if self.param is None:
            return self.family
        fam = _FAMILIES[self.family]
        text = f"{self.param:.2f}" if fam.float_param else str(int(self.param))
        return f"{self.family}_{text}"

    @property
    def is_count(self) -> bool:
        """Whether the value is a count (printed as an integer, summed over queries)."""
        return _FAMILIES[self.family].kind == "count"

    @property
    def is_text(self) -> bool:
        """Whether the value is text (``runid``, ``relstring``), not a number."""
        return _FAMILIES[self.family].kind == "text"


def _parse_param(text: str, float_param: bool, spec: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"measure {spec!r}: parameter {text!r} is not a number") from None
    if not float_param and (value != int(value) or value < 1):
        raise ConfigError(f"measure {spec!r}: cut-off {text!r} must be a positive integer")
    if value < 0:
        raise ConfigError(f"measure {spec!r}: parameter {text!r} must not be negative")
    return value


def parse_measures(specs: Iterable[str]) -> list[TrecMeasure]:
    """Expand trec_eval measure names into concrete measures, in trec_eval's output order.

    Accepts a nickname (``official``, ``set``, ``all_trec``), a family (``P``: its default
    cut-offs), a family with parameters (``P.5,10``) and an output name (``P_5``); several
    may be joined with ``;``. As in trec_eval, the result follows trec_eval's measure table
    (not the order asked), a family's cut-offs are sorted ascending, and parameters given
    for a family replace its defaults (``all_trec`` then ``relstring.20`` gives
    ``relstring_20`` only). Unlike trec_eval, parameters given twice for one family are
    merged rather than the first winning. Raises :class:`ConfigError` otherwise.
    """
    marked: set[str] = set()
    explicit: dict[str, set[float]] = {}

    def add_params(name: str, params: Sequence[float], spec: str) -> None:
        fam = _FAMILIES[name]
        if not fam.defaults:
            raise ConfigError(f"measure {spec!r}: {name!r} takes no parameters")
        if fam.single and len(params) != 1:
            raise ConfigError(f"measure {spec!r}: {name!r} takes one parameter")
        marked.add(name)
        explicit.setdefault(name, set()).update(params)

    by_length = sorted(_FAMILIES, key=len, reverse=True)
    for raw in specs:
        for spec in (s.strip() for s in raw.split(";")):
            if not spec:
                continue
            if spec in NICKNAMES:
                marked.update(NICKNAMES[spec])
                continue
            if spec in _FAMILIES:
                marked.add(spec)
                continue
            head, dot, tail = spec.partition(".")
            if dot and head in _FAMILIES:
                fam = _FAMILIES[head]
                params = [_parse_param(t, fam.float_param, spec) for t in tail.split(",") if t]
                if params:
                    add_params(head, params, spec)
                else:
                    marked.add(head)
                continue
            for name in by_length:
                fam = _FAMILIES[name]
                if fam.defaults and spec.startswith(name + "_"):
                    rest = spec[len(name) + 1 :]
                    try:
                        float(rest)
                    except ValueError:
                        continue
                    add_params(name, [_parse_param(rest, fam.float_param, spec)], spec)
                    break
            else:
                raise ConfigError(
                    f"unknown trec_eval measure {spec!r}; known families: {', '.join(_FAMILIES)} "
                    f"(or {', '.join(NICKNAMES)})"
                )
    out: list[TrecMeasure] = []
    for name in sorted(marked, key=_ORDER.__getitem__):
        fam = _FAMILIES[name]
        if name in explicit:
            out.extend(TrecMeasure(name, p) for p in sorted(explicit[name]))
        elif fam.defaults and not fam.single:
            out.extend(TrecMeasure(name, p) for p in fam.defaults)
        else:
            out.append(TrecMeasure(name))
    return out


# --------------------------------------------------------------------------- evaluation


def _relstring(levels: Sequence[int]) -> str:
    """trec_eval's ``relstring``: one character per retrieved document (m_relstring.c)."""
    chars = []
    for lv in levels:
        if lv > 9:
            chars.append(">")
        elif lv >= 0:
            chars.append(str(lv))
        elif lv == NONPOOL:
            chars.append("-")
        elif lv == UNJUDGED:
            chars.append(".")
        else:
            chars.append("<")
    return "".join(chars)


@dataclass(frozen=True)
class TrecEvaluation:
    """Per-query values and aggregates of trec_eval measures.

    ``per_query`` maps query id to ``{measure name: value}`` for the evaluated queries (the
    run's queries that have qrels, plus with ``complete`` the qrels' queries missing from the
    run, scored as empty rankings); measures trec_eval prints only on the ``all`` line
    (``num_q``, ``gm_*``, ``runid``) are absent. ``per_query_text`` holds the text measures
    (``relstring``) the same way. ``aggregate`` is the ``all`` line: the mean over
    evaluated queries, a sum for counts, a geometric mean for ``gm_*``; the ``runid`` line
    prints ``run_name``.
    """

    measures: tuple[TrecMeasure, ...]
    per_query: dict[str, dict[str, float]]
    aggregate: dict[str, float]
    run_name: str = "run"
    run_only_queries: tuple[str, ...] = field(default=())
    missing_from_run: tuple[str, ...] = field(default=())
    per_query_text: dict[str, dict[str, str]] = field(default_factory=dict)

    def lines(self, *, per_query: bool = False) -> list[str]:
        """trec_eval's output lines, byte for byte (without the newlines).

        Each line is ``measure<TAB>query<TAB>value`` with the name left-justified to 22
        characters (``%-22s``), numbers to 4 decimals (``%6.4f``), counts as integers and
        ``relstring`` quoted. With ``per_query`` (trec_eval ``-q``), each query's lines
        come first, queries in id order; the ``all`` lines follow.
        """
        out: list[str] = []

        def fmt(meas: TrecMeasure, qid: str, value: float) -> str:
            text = f"{int(value)}" if meas.is_count and math.isfinite(value) else f"{value:6.4f}"
            return f"{meas.name:<22}\t{qid}\t{text}"

        if per_query:
            for qid, values in self.per_query.items():
                texts = self.per_query_text.get(qid, {})
                for meas in self.measures:
                    if meas.name in texts:
                        out.append(f"{meas.name:<22}\t{qid}\t'{texts[meas.name]}'")
                    elif meas.name in values:
                        out.append(fmt(meas, qid, values[meas.name]))
        for meas in self.measures:
            if meas.family == "runid":
                out.append(f"{meas.name:<22}\tall\t{self.run_name}")
            elif meas.name in self.aggregate:
                out.append(fmt(meas, "all", self.aggregate[meas.name]))
        return out

    def text(self, *, per_query: bool = False) -> str:
        """:meth:`lines` joined as trec_eval prints them, each ending in a newline."""
        return "".join(line + "\n" for line in self.lines(per_query=per_query))


def evaluate_trec(
    qrels: Qrels | Mapping[str, Mapping[str, int]],
    run: Run | Mapping[str, Mapping[str, float]],
    measures: Iterable[str] = DEFAULT_MEASURES,
    *,
    level: int = 1,
    complete: bool = False,
) -> TrecEvaluation:
    """Evaluate a run against qrels with trec_eval's semantics.

    Args:
        qrels: Judgements (:class:`Qrels` or ``{qid: {doc: level}}``).
        run: Results (:class:`Run` or ``{qid: {doc: score}}``).
        measures: trec_eval measure names (see :func:`parse_measures`); default
            ``official``, the set trec_eval prints without ``-m``.
        level: Relevance threshold for binary measures (trec_eval ``-l``).
        complete: Also score qrels queries absent from the run, as empty rankings
            (trec_eval ``-c``); otherwise they are left out of every aggregate.

    Returns:
        Per-query values and the aggregate line.
    """
    if level < 1:
        raise ConfigError(f"relevance level must be >= 1, got {level}")
    judgments = qrels.judgments if isinstance(qrels, Qrels) else qrels
    scores = run.scores if isinstance(run, Run) else run
    run_name = run.name if isinstance(run, Run) else "run"
    parsed = parse_measures(measures)
    in_run = [q for q in sorted(scores) if q in judgments]
    missing = tuple(q for q in sorted(judgments) if q not in scores)
    run_only = tuple(q for q in sorted(scores) if q not in judgments)
    query_ids = sorted([*in_run, *missing]) if complete else in_run
    ranking = build_ranking(judgments, scores, query_ids)
    per_query: dict[str, dict[str, float]] = {q: {} for q in query_ids}
    per_query_text: dict[str, dict[str, str]] = {}
    aggregate: dict[str, float] = {}
    for meas in parsed:
        fam = _FAMILIES[meas.family]
        if meas.family == "relstring":
            depth = int(meas.param if meas.param is not None else fam.defaults[0])
            for q, qid in enumerate(query_ids):
                shown = min(depth, int(ranking.num_ret[q]))
                per_query_text.setdefault(qid, {})[meas.name] = _relstring(ranking.levels[q, :shown].tolist())
            continue
        if fam.kind == "text":  # runid: printed from run_name
            continue
        values = fam.fn(ranking, meas.param if meas.param is not None else 0.0, level)
        if fam.aggregate == "gm":
            aggregate[meas.name] = m.geometric_mean(values)
        else:
            aggregate[meas.name] = float(values.sum()) if fam.aggregate == "sum" else m.mean(values)
        if not fam.per_query:
            continue
        for qid, value in zip(query_ids, values.tolist(), strict=True):
            per_query[qid][meas.name] = value
    return TrecEvaluation(
        measures=tuple(parsed),
        per_query=per_query,
        aggregate=aggregate,
        run_name=run_name,
        run_only_queries=run_only,
        missing_from_run=missing if not complete else (),
        per_query_text=per_query_text,
    )
