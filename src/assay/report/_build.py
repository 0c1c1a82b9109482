"""The report's data: everything the HTML shows, computed from stored records (pure).

Nothing here touches a file or the store: :func:`build_report` takes a run's
:class:`~assay.run.RunInfo` and its records (and optionally another run's) and returns a
:class:`ReportData`. Its intervals come from :mod:`assay.analysis` (the one home of
assay's statistics), so the report, ``assay gate`` and its job summary print the same
CI for the same run and seed. :func:`spread` and :func:`pass_share` are display helpers.

Conventions (also in ``docs/design/report.md``):

- A *sample* is one input row (a line); its repeats are grouped. A sample's value for a
  metric is the mean of its scored repeats; unscored repeats are skipped and counted.
- A metric's mean is the mean of the per-sample values, with a seeded percentile
  bootstrap CI over samples (repeats stay together: the sample is the unit):
  :func:`assay.analysis.bootstrap_mean_ci`, the interval ``analyze_repeats`` gives.
- A sample *passes* a metric when its value is ``>= threshold``; the *flake probability*
  of a sample is the share of its scored repeats that pass (flaky when strictly between
  0 and 1). The *gate* of a metric passes a repeat when that repeat's mean over samples is
  ``>= threshold``; its flake probability is the share of repeats whose gate passes.
- With a comparison run, samples are paired by id; delta = this run − the other run, and
  the metric delta's CI is a paired bootstrap over samples scored in both.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from assay._safety import redact_url, scrub, url_secrets
from assay._scores import JudgeCall, Score
from assay.analysis import (
    GatePolicy,
    GateResult,
    analyze_repeats,
    bootstrap_mean_ci,
    evaluate_gate,
    is_pass_fail,
    judge_models_note,
    paired_bootstrap_ci,
    partial_run_reasons,
    refuses_partial_run,
)
from assay.report._answer import (
    answer_segments,
    locate_statements,
    sentence_marks,
    to_utf16_offsets,
    to_utf16_segments,
)
from assay.run import RunInfo, TrustFigure, trust_for
from assay.run._cascade import cascade_lines
from assay.run._cost import CostReport, PriceTable
from assay.run._frames import score_value
from assay.run._trust import cascade_figure

__all__ = [
    "CompareMetric",
    "CostView",
    "Gate",
    "Histogram",
    "Interval",
    "MetricView",
    "ReportData",
    "Spread",
    "build_report",
    "embed_json",
    "histogram",
    "locate_statements",
    "pass_share",
    "spread",
    "to_utf16_offsets",
    "verdict_tone",
]

# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval (NaN bounds when it cannot be computed).

    Attributes:
        estimate: The statistic on the data (NaN when ``n`` is 0).
        low: Lower bound of the interval.
        high: Upper bound of the interval.
        n: How many values it was computed from.
        level: The interval's confidence level.
    """

    estimate: float
    low: float
    high: float
    n: int
    level: float = 0.95

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN as ``None``)."""
        return {
            "estimate": _finite(self.estimate),
            "low": _finite(self.low),
            "high": _finite(self.high),
            "n": self.n,
            "level": self.level,
        }


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def _mean_interval(values: Sequence[float], *, seed: int = 0) -> Interval:
    """The mean of per-sample ``values`` with :func:`assay.analysis.bootstrap_mean_ci` (95%, its default resamples).

    NaN bounds with fewer than two values; NaN estimate with none.
    """
    low, high = bootstrap_mean_ci(values, seed=seed)
    estimate = float(np.mean(values)) if len(values) else math.nan
    return Interval(estimate, low, high, len(values))


def _paired_interval(base: Sequence[float], other: Sequence[float], *, seed: int = 0) -> Interval:
    """The mean paired difference ``base[i] - other[i]`` with :func:`assay.analysis.paired_bootstrap_ci`."""
    low, high = paired_bootstrap_ci(base, other, seed=seed)
    estimate = float(np.mean(np.subtract(base, other))) if len(base) else math.nan
    return Interval(estimate, low, high, len(base))


@dataclass(frozen=True)
class Spread:
    """One sample's scored repeats of one metric: mean, min, max, and how many.

    Attributes:
        mean: Mean of the scored repeats (NaN when none is scored).
        low: Smallest scored value.
        high: Largest scored value.
        n: Scored repeats.
    """

    mean: float
    low: float
    high: float
    n: int


def spread(values: Sequence[float]) -> Spread:
    """Mean, min and max of ``values`` (all NaN when empty)."""
    if not values:
        return Spread(math.nan, math.nan, math.nan, 0)
    return Spread(sum(values) / len(values), min(values), max(values), len(values))


def pass_share(values: Sequence[float], threshold: float) -> float:
    """Share of ``values`` that are ``>= threshold`` (NaN when empty): the flake probability."""
    if not values:
        return math.nan
    return sum(1 for v in values if v >= threshold) / len(values)


# --------------------------------------------------------------------------- statements


def verdict_tone(value: object) -> str:
    """How a verdict is coloured: ``ok`` (1, PASS), ``bad`` (0, FAIL), ``na`` (NA), else ``info``."""
    if (value == 1 and not isinstance(value, bool)) or value == "PASS":
        return "ok"
    if (value == 0 and not isinstance(value, bool)) or value == "FAIL":
        return "bad"
    if value == "NA":
        return "na"
    return "info"


# --------------------------------------------------------------------------- charts


@dataclass(frozen=True)
class Histogram:
    """Counts of values in equal-width bins over ``[low, high]`` (the last bin is closed).

    Attributes:
        low: Left edge of the first bin.
        high: Right edge of the last bin.
        counts: Values per bin.
    """

    low: float
    high: float
    counts: tuple[int, ...]

    @property
    def edges(self) -> list[tuple[float, float]]:
        """``(left, right)`` of each bin."""
        width = (self.high - self.low) / len(self.counts)
        return [(self.low + i * width, self.low + (i + 1) * width) for i in range(len(self.counts))]


def histogram(values: Sequence[float], bins: int = 10, low: float = 0.0, high: float = 1.0) -> Histogram:
    """Bin ``values``; the range widens to cover values outside ``[low, high]``."""
    if values:
        low, high = min(low, min(values)), max(high, max(values))
    if high <= low:
        high = low + 1.0
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - low) / (high - low) * bins))] += 1
    return Histogram(low, high, tuple(counts))


# --------------------------------------------------------------------------- report


@dataclass(frozen=True)
class Gate:
    """A metric's gate (run mean ``>= threshold``) over repeats.

    Attributes:
        repeat_means: The run's mean per repeat index (NaN when nothing was scored).
        passes: Repeats whose mean reached the threshold.
        p_pass: ``passes`` / scored repeats: the gate's flake probability.
    """

    repeat_means: tuple[float, ...]
    passes: int
    p_pass: float

    @property
    def flaky(self) -> bool:
        """The gate passed in some repeats and failed in others."""
        return 0.0 < self.p_pass < 1.0


@dataclass(frozen=True)
class MetricView:
    """Everything the report says about one metric of the run.

    ``verdict`` is ``assay gate``'s verdict on the metric at its pass mark
    (:func:`assay.analysis.evaluate_gate`, with the report's gate policy when one is
    given): the summary's gate column shows it, so the column and the gate never disagree.
    ``pass_fail``: every scored value is 0 or 1 (the mean is a pass rate).
    """

    name: str
    mean: Interval
    n_samples: int
    n_scored: int
    n_unscored: int
    unscored_by_reason: Mapping[str, int]
    histogram: Histogram
    gate: Gate
    n_passing: int
    n_flaky: int
    spreads: tuple[Spread, ...] = ()
    threshold: float = 0.8
    verdict: GateResult | None = None
    pass_fail: bool = False
    trust: TrustFigure | None = None
    """How far the metric's judge agrees with people (shown beside the score)."""


@dataclass(frozen=True)
class CompareMetric:
    """One metric compared between the run and the other run, over samples in both."""

    name: str
    delta: Interval
    base_mean: float
    other_mean: float
    n_to_fail: int
    n_to_pass: int


@dataclass(frozen=True)
class CostView:
    """Judge calls, tokens and cost over every score (and part) of the run."""

    calls: int
    cached_calls: int
    failed_calls: int
    prompt_tokens: int
    completion_tokens: int
    usd: float
    unpriced_models: tuple[str, ...]
    description: str
    models_note: str | None = None
    """Said when several models answered the judge calls, or one that was not asked for."""


@dataclass(frozen=True)
class ReportData:
    """The whole report: the run, per-metric summaries, cost, comparison, and samples.

    ``samples`` is the JSON-ready per-sample payload the page renders in the browser;
    ``texts`` holds the judge messages they refer to by index (each distinct text once).
    ``gate_results`` are ``assay gate``'s verdicts on the gated metrics, when a gate was
    asked for (``gate_result``: the first). ``partial`` says why the run is not the whole
    evaluation (not finished, invalid rows beyond the gate's tolerance), which the page
    puts first: ``assay gate`` does not pass such a run (``partial_gated``: it does, on
    the rows judged, because the gate's policy ``allow_partial``).
    """

    info: RunInfo
    threshold: float
    repeats: int
    metrics: tuple[MetricView, ...]
    cost: CostView
    row_errors: tuple[tuple[int, str], ...]
    samples: list[dict[str, Any]]
    texts: list[str] = field(default_factory=list)
    other: RunInfo | None = None
    compare: tuple[CompareMetric, ...] = ()
    n_paired: int = 0
    only_here: int = 0
    only_other: int = 0
    seed: int = 0
    gate_results: tuple[GateResult, ...] = ()
    caveats: tuple[str, ...] = ()
    """What differs between the compared runs besides the system judged (the judge, a metric's settings)."""
    partial: tuple[str, ...] = ()
    """Why the run is partial (:func:`assay.analysis.partial_run_reasons`); empty for a whole run."""
    partial_gated: bool = False
    """Whether the report's gate policy gates the partial run anyway (``assay gate --allow-partial``)."""
    pending: list[dict[str, Any]] = field(default_factory=list)
    """The questions waiting for a person (:func:`pending_entries`), which the page lists with answer buttons."""

    @property
    def gate_result(self) -> GateResult | None:
        """The first gated metric's verdict (``None`` when the report was asked for no gate)."""
        return self.gate_results[0] if self.gate_results else None

    def page_data(self) -> dict[str, Any]:
        """The JSON the page embeds: per-sample data and what the table needs to draw it."""
        from assay.run._review import ANSWERS_FORMAT, ANSWERS_VERSION  # the file the review section writes

        return {
            "meta": {
                "run_id": self.info.run_id,
                "other_run_id": self.other.run_id if self.other else None,
                "metrics": [m.name for m in self.metrics],
                "repeats": self.repeats,
                "threshold": self.threshold,
                "thresholds": {m.name: m.threshold for m in self.metrics},
            },
            "samples": self.samples,
            "texts": self.texts,
            "pending": self.pending,
            "answers_format": {"format": ANSWERS_FORMAT, "version": ANSWERS_VERSION},
        }


def comparison_caveats(here: RunInfo, other: RunInfo) -> tuple[str, ...]:
    """What differs between two runs besides the system judged, so a Δ would not measure it alone.

    A different judge, a metric of the same name with another version, prompts or options,
    or another sampling temperature: each moves scores by itself. The data may differ (a
    new version of the system answers differently); that is what a comparison is for.
    """
    a, b = here.spec, other.spec
    caveats = []
    # The judge first: one model name can be two judges (another layout, build or prompt).
    if a.judge_model == b.judge_model and a.judge_record is not None and b.judge_record is not None:
        differs = a.judge_record.differences(b.judge_record)
        if differs:
            caveats.append(f"judged by two different {a.judge_model} judges ({'; '.join(differs)})")
    elif a.judge_model == b.judge_model and (a.judge_record is None) != (b.judge_record is None):
        unrecorded = here.run_id if a.judge_record is None else other.run_id
        caveats.append(f"run {unrecorded} did not record its judge's weights, layout and build: the judges may differ")
    if a.judge_model != b.judge_model:
        caveats.append(f"judged by different judges ({a.judge_model} here, {b.judge_model} there)")
    elif (a.base_url or None) != (b.base_url or None):  # one model name, two servers (another quantisation...)
        # Redacted here too: a run stored before its spec redacted the URL holds its credentials.
        caveats.append(f"{a.judge_model} was served from {redact_url(a.base_url) or 'its default endpoint'} here, "
                       f"{redact_url(b.base_url) or 'its default endpoint'} there")  # fmt: skip
    theirs = {m.name: m for m in b.metrics}
    for mine in a.metrics:
        that = theirs.get(mine.name)
        if that is None:
            continue
        if mine.version != that.version:
            caveats.append(f"{mine.name} is version {mine.version} here, {that.version} there")
        elif mine.params != that.params:
            caveats.append(f"{mine.name} is set differently ({', '.join(_differing(mine.params, that.params))})")
    t_here, t_there = a.options.get("temperature"), b.options.get("temperature")
    if t_here != t_there:
        caveats.append(f"sampled at temperature {t_here if t_here is not None else 'default'} here, "
                       f"{t_there if t_there is not None else 'default'} there")  # fmt: skip
    # A run stored before specs redacted their URL holds its credentials, in a judge identity too.
    return tuple(scrub(caveats, (*url_secrets(a.base_url), *url_secrets(b.base_url))))


def _differing(a: Mapping[str, Any], b: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The dotted keys whose values differ between two nested settings (``verifier.threshold``)."""
    keys = []
    for key in sorted({*a, *b}):
        x, y = a.get(key), b.get(key)
        if isinstance(x, Mapping) and isinstance(y, Mapping):
            keys.extend(_differing(x, y, f"{prefix}{key}."))
        elif x != y:
            keys.append(f"{prefix}{key}")
    return keys


def _calls(score: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    yield from score.get("calls") or ()
    for part in score.get("parts") or ():
        yield from _calls(part)


class Texts:
    """Interned strings: judge prompts, questions and contexts repeat, so a page stores each once."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: object) -> int | None:
        if text is None:
            return None
        key = str(text)
        index = self._index.get(key)
        if index is None:
            index = self._index[key] = len(self.texts)
            self.texts.append(key)
        return index


def _end_state(score: Mapping[str, Any]) -> dict[str, Any] | None:
    """An agent score's end state as the page shows it: each state-changing call and its outcome."""
    end = (score.get("details") or {}).get("end_state")
    if not isinstance(end, Mapping):
        return None
    changes = []
    for change in end.get("state_changes") or ():
        arguments = json.dumps(change.get("arguments") or {}, ensure_ascii=False, default=str)
        changes.append(
            {
                "text": f"call {change.get('call')}: {change.get('tool')}({arguments})",
                "outcome": str(change.get("outcome") or ""),
                "tone": "bad" if change.get("outcome") == "failed" else "ok",
                "result": str(change.get("result") or ""),
            }
        )
    return {"changes": changes, "read_calls": end.get("read_calls"), "kinds": str(end.get("kinds") or "")}


def _score_entries(
    name: str, score: Mapping[str, Any], answer: str, texts: Texts, depth: int = 0
) -> list[dict[str, Any]]:
    """One metric's score (and, flattened after it, its parts) as the page shows them.

    Judge messages carry ``text``, an index into the report's interned ``texts``.
    """
    verdicts = [
        {
            "subject": str(v.get("subject", "")),
            "value": v.get("value"),
            "reason": str(v.get("reason") or ""),
            "tone": verdict_tone(v.get("value")),
            # What the verdict rests on: the cited context sentences (index, text) and flags.
            "evidence": [
                {"context": int(e.get("context", 0)), "text": str(e.get("text") or "")}
                for e in (v.get("evidence") or ())[:3]
            ],
            "flags": [str(f) for f in v.get("flags") or ()],
            # An agent requirement's cited tool calls ("call 5: book(...)").
            "cited": [str(c) for c in ((v.get("details") or {}).get("cited") or ())[:4]],
            # Answered in review: the verdict is a person's, and the page says so.
            "by_person": (v.get("decision") or {}).get("kind") == "person",
        }
        for v in score.get("verdicts") or ()
    ]
    spans = [[(int(a), int(b)) for a, b in v.get("spans") or ()] for v in score.get("verdicts") or ()]
    decomposition = score.get("decomposition") or None
    marks: list[tuple[int, int, list[int]]]
    if answer and any(spans):
        marks, unplaced = answer_segments(answer, spans), [i for i, found in enumerate(spans) if not found]
    else:
        found, unplaced = locate_statements(answer, [v["subject"] for v in verdicts]) if answer else ([], [])
        marks = [(start, end, [index]) for start, end, index in found]
    entry = {
        "name": name,
        "depth": depth,
        "value": score_value(score),
        "unscored_reason": score.get("unscored_reason"),
        "detail": score.get("detail"),
        "explanation": score.get("explanation"),
        "verdicts": verdicts,
        "end_state": _end_state(score),
        "marks": to_utf16_segments(answer, marks),
        "unplaced": unplaced if answer else list(range(len(verdicts))),
        "sentences": sentence_marks(answer, decomposition),
        "dropped": [
            {
                "text": str(d.get("text") or ""),
                "reason": str(d.get("reason") or ""),
                "detail": str(d.get("detail") or ""),
            }
            for d in (decomposition or {}).get("dropped") or ()
        ],
        "calls": [
            {
                "model": c.get("model"),
                "purpose": c.get("purpose"),
                "messages": [{"role": m.get("role"), "text": texts(m.get("content"))} for m in c.get("messages") or ()],
                "raw_output": c.get("raw_output"),
                "usage": c.get("usage") or {},
                "latency_s": c.get("latency_s"),
                "error": c.get("error"),
                "attempts": c.get("attempts"),
                "cached": c.get("cached"),
            }
            for c in score.get("calls") or ()
        ],
    }
    entries = [entry]
    for part in score.get("parts") or ():
        part_name = f"{name} / {part.get('metric') or 'part'}"
        entries.extend(_score_entries(part_name, part, answer, texts, depth + 1))
    return entries


def pending_entries(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every question of stored records waiting for a person, as the page lists it.

    Each names the question as an answers file does (line, repeat, metric, subject: what
    ``assay review RUN --import`` matches) and carries the evidence and what each judge
    leaned to, how sure it was and the confidence it needed; a question waiting in several
    repeats of a sample is listed once, with ``repeats`` (the answer settles them all).
    """
    entries: dict[tuple[int, str, str], dict[str, Any]] = {}
    for record in records:
        sample = record.get("sample") or {}
        for name, score in (record.get("scores") or {}).items():
            for pending in score.get("pending") or ():
                where = (int(record.get("line") or 0), str(name), str(pending.get("subject") or ""))
                if where in entries:  # the same question in another repeat: one answer settles both
                    entries[where]["repeats"].append(int(record.get("repeat") or 0))
                    continue
                entries[where] = {
                    "line": int(record.get("line") or 0),
                    "repeat": int(record.get("repeat") or 0),
                    "id": str(record.get("id")),
                    "metric": str(name),
                    "subject": str(pending.get("subject") or ""),
                    "answer": sample.get("answer"),
                    "evidence": [
                        {"context": int(e.get("context", 0)), "text": str(e.get("text") or "")}
                        for e in pending.get("evidence") or ()
                    ],
                    "tried": [
                        {
                            "by": str((t.get("decision") or {}).get("by") or "a judge"),
                            "value": t.get("value"),
                            "confidence": (t.get("decision") or {}).get("confidence"),
                            "threshold": (t.get("decision") or {}).get("threshold"),
                        }
                        for t in pending.get("tried") or ()
                    ],
                    "repeats": [int(record.get("repeat") or 0)],
                }
    return list(entries.values())


def _metric_names(info: RunInfo, records: Sequence[Mapping[str, Any]]) -> list[str]:
    names = [m.name for m in info.spec.metrics]
    for record in records:
        for name in record.get("scores") or {}:
            if name not in names:
                names.append(name)
    return names


def _group(records: Iterable[Mapping[str, Any]]) -> dict[int, list[Mapping[str, Any]]]:
    groups: dict[int, list[Mapping[str, Any]]] = {}
    for record in records:
        groups.setdefault(int(record.get("line") or 0), []).append(record)
    for group in groups.values():
        group.sort(key=lambda r: int(r.get("repeat") or 0))
    return groups


def _sample_values(group: Sequence[Mapping[str, Any]], metric: str) -> list[float]:
    values = []
    for record in group:
        v = score_value((record.get("scores") or {}).get(metric) or {})
        if v is not None:
            values.append(v)
    return values


def _cost(records: Iterable[Mapping[str, Any]], prices: PriceTable, asked: str | None) -> CostView:
    report = CostReport(prices=prices)
    for record in records:
        for score in (record.get("scores") or {}).values():
            report.add(JudgeCall.model_validate(c) for c in _calls(score))
    return CostView(
        calls=report.calls,
        cached_calls=report.cached_calls,
        failed_calls=report.failed_calls,
        prompt_tokens=report.usage.prompt_tokens,
        completion_tokens=report.usage.completion_tokens,
        usd=report.usd,
        unpriced_models=tuple(sorted(report.unpriced_models)),
        description=report.describe(),
        models_note=judge_models_note(report.models, asked),
    )


def _metric_view(
    name: str, groups: Mapping[int, Sequence[Mapping[str, Any]]], repeats: int, threshold: float, seed: int
) -> MetricView:
    reasons: dict[str, int] = {}
    all_values: list[float] = []
    per_repeat: list[list[float]] = [[] for _ in range(repeats)]
    spreads: list[Spread] = []
    n_samples = 0
    for group in groups.values():
        present = False
        for record in group:
            score = (record.get("scores") or {}).get(name)
            if score is None:
                continue
            present = True
            v = score_value(score)
            if v is None:
                reason = str(score.get("unscored_reason") or "unscored")
                reasons[reason] = reasons.get(reason, 0) + 1
            else:
                all_values.append(v)
                repeat = int(record.get("repeat") or 0)
                if 0 <= repeat < repeats:
                    per_repeat[repeat].append(v)
        if present:
            n_samples += 1
        s = spread(_sample_values(group, name))
        if s.n:
            spreads.append(s)
    sample_means = [s.mean for s in spreads]
    repeat_means = tuple(sum(v) / len(v) if v else math.nan for v in per_repeat)
    scored_means = [m for m in repeat_means if not math.isnan(m)]
    gate_passes = sum(1 for m in scored_means if m >= threshold)
    shares = []
    for group in groups.values():
        values = _sample_values(group, name)
        if values:
            shares.append(pass_share(values, threshold))
    return MetricView(
        name=name,
        threshold=threshold,
        mean=_mean_interval(sample_means, seed=seed),
        n_samples=n_samples,
        n_scored=len(all_values),
        n_unscored=sum(reasons.values()),
        unscored_by_reason=dict(sorted(reasons.items())),
        histogram=histogram(all_values),
        gate=Gate(repeat_means, gate_passes, pass_share(scored_means, threshold)),
        n_passing=sum(1 for m in sample_means if m >= threshold),
        n_flaky=sum(1 for p in shares if 0.0 < p < 1.0),
        spreads=tuple(sorted(spreads, key=lambda s: (s.mean, s.low, s.high))) if repeats > 1 else (),
    )


def _first_user_turn(trace: Any) -> str | None:
    """What the user first said in an agent's trace: an agent sample's question, where it has none."""
    for message in trace or ():
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str) and content.strip():
                return content
    return None


def _sample_id(group: Sequence[Mapping[str, Any]]) -> str:
    first = group[0]
    return str(first.get("id") or (first.get("sample") or {}).get("id") or f"line-{first.get('line')}")


def _with_cascade_split(
    trust: Mapping[str, TrustFigure], plans: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
) -> dict[str, TrustFigure]:
    """A cascade metric's trust line with what the run did: the share decided per level, review, calls saved."""
    out = dict(trust)
    for name, plan in plans.items():
        figure = out.get(name)
        if figure is None or figure.kind != "cascade":
            continue
        scores = [Score.model_validate(r["scores"][name]) for r in records if name in (r.get("scores") or {})]
        lines = [line for line in cascade_lines(plan, scores) if not line.startswith("guarantee:")]
        out[name] = figure.model_copy(update={"note": "; ".join([figure.note, *lines])})
    return out


def build_report(
    info: RunInfo,
    records: Iterable[Mapping[str, Any]],
    *,
    row_errors: Sequence[tuple[int, str]] = (),
    other: RunInfo | None = None,
    other_records: Iterable[Mapping[str, Any]] = (),
    threshold: float = 0.8,
    prices: PriceTable | None = None,
    seed: int = 0,
    thresholds: Mapping[str, float] | None = None,
    gate: GatePolicy | None = None,
    gated: Sequence[str] = (),
    trust: Mapping[str, TrustFigure] | None = None,
) -> ReportData:
    """Compute everything the report shows from one run's records (and another run's).

    Args:
        info: The run.
        records: Its stored records (``RunStore.records``).
        row_errors: Its invalid input rows (``RunStore.row_errors``).
        other: A run to compare with (the baseline: deltas are this run minus ``other``).
        other_records: The other run's records.
        threshold: A sample passes a metric when its value is at least this.
        prices: The price table for the cost (default: the built-in one).
        seed: Seed of every bootstrap.
        thresholds: Pass marks of some metrics, where they differ from ``threshold``
            (``assay gate -m faithfulness=0.8 -m answer_relevancy=0.7``).
        gate: The gate policy behind each metric's gate column (its threshold replaced by
            the metric's pass mark); default: ``assay gate``'s defaults with ``seed``.
        gated: The metrics whose gate verdicts head the report (``gate_results``).
        trust: Per metric, how far its judge agrees with people (:func:`assay.run.trust_for_run`,
            with the user's calibrations); default: from the run's spec and the shipped table alone.
            A gate column on an untrusted judge says ``untrusted``, as ``assay gate`` does.
    """
    records = list(records)
    names = _metric_names(info, records)
    groups = _group(records)
    repeats = max([int(info.spec.options.get("repeats") or 1)] + [int(r.get("repeat") or 0) + 1 for r in records])
    marks = {name: (thresholds or {}).get(name, threshold) for name in names}
    policy = gate or GatePolicy(threshold=threshold, seed=seed)
    # The gate's own rule on a partial run (not finished, invalid rows): the same verdicts as 'assay gate'.
    coverage = info.coverage([line for line, _ in row_errors])
    if trust is None:
        plans = info.spec.cascade_plans
        trust = {
            m.name: cascade_figure(m.name, plans[m.name]) if m.name in plans else trust_for(m, info.spec.judge_record)
            for m in info.spec.metrics
        }
    trust = _with_cascade_split(trust, info.spec.cascade_plans, records)
    views = []
    for name in names:
        view = _metric_view(name, groups, repeats, marks[name], seed)
        verdict, pass_fail = None, False
        figure = trust.get(name)
        untrusted = figure.untrusted_reason() if figure is not None and figure.untrusted else None
        if view.n_samples:
            repeat_report = analyze_repeats(records, name, seed=policy.seed)
            verdict = evaluate_gate(
                repeat_report,
                dataclasses.replace(policy, threshold=marks[name]),
                coverage,
                untrusted=untrusted,
                cascade=name in info.spec.cascade_plans,
            )
            pass_fail = is_pass_fail(repeat_report)
        views.append(dataclasses.replace(view, verdict=verdict, pass_fail=pass_fail, trust=figure))
    metrics = tuple(views)
    unknown = [name for name in gated if name not in names]
    if unknown:
        raise KeyError(unknown[0])
    gate_results = tuple(m.verdict for name in gated for m in metrics if m.name == name and m.verdict is not None)

    other_means: dict[str, dict[str, float | None]] = {}
    other_names: list[str] = []
    if other is not None:
        other_list = list(other_records)
        other_names = _metric_names(other, other_list)
        for group in _group(other_list).values():
            sid = _sample_id(group)
            if sid in other_means:
                continue  # duplicate ids: the first occurrence is the one compared
            means: dict[str, float | None] = {}
            for name in other_names:
                values = _sample_values(group, name)
                means[name] = sum(values) / len(values) if values else None
            other_means[sid] = means

    texts = Texts()
    samples: list[dict[str, Any]] = []
    pairs: dict[str, list[tuple[float, float]]] = {name: [] for name in names if name in other_names}
    seen: set[str] = set()
    for line in sorted(groups):
        group = groups[line]
        sid = _sample_id(group)
        sample = dict(group[0].get("sample") or {})
        answer = str(sample.get("answer") or "")
        stats: dict[str, dict[str, Any]] = {}
        for name in names:
            values = _sample_values(group, name)
            s = spread(values)
            scores = [(r.get("scores") or {}).get(name) for r in group]
            n_unscored = sum(1 for score in scores if score is not None and score_value(score) is None)
            stats[name] = {
                "mean": _finite(s.mean),
                "min": _finite(s.low),
                "max": _finite(s.high),
                "n": s.n,
                "unscored": n_unscored,
                "pass": _finite(pass_share(values, marks[name])),
            }
        item: dict[str, Any] = {
            "id": sid,
            "line": line,
            "question": sample.get("question"),
            "first_user_turn": None if sample.get("question") else _first_user_turn(sample.get("trace")),
            "answer": sample.get("answer"),
            "contexts": list(sample.get("contexts") or ()),
            "reference": sample.get("reference"),
            "metadata": sample.get("metadata"),
            "trace": sample.get("trace"),
            "stats": stats,
            "repeats": [
                {
                    "repeat": int(r.get("repeat") or 0),
                    "scores": [
                        entry
                        for name, score in (r.get("scores") or {}).items()
                        for entry in _score_entries(name, score, answer, texts)
                    ],
                }
                for r in group
            ],
        }
        if other is not None:
            delta: dict[str, dict[str, Any]] = {}
            theirs = other_means.get(sid) if sid not in seen else None
            for name in pairs:
                mine = stats[name]["mean"]
                their = theirs.get(name) if theirs is not None else None
                d = mine - their if mine is not None and their is not None else None
                flip = None
                if d is not None and mine is not None and their is not None:
                    pairs[name].append((mine, their))
                    if (mine >= marks[name]) != (their >= marks[name]):
                        flip = "fail→pass" if mine >= marks[name] else "pass→fail"
                delta[name] = {"other": their, "delta": d, "flip": flip}
            item["delta"] = delta
            item["in_other"] = theirs is not None
        seen.add(sid)
        samples.append(item)

    compare: list[CompareMetric] = []
    for name, paired in pairs.items():
        base = [a for a, _ in paired]
        theirs_values = [b for _, b in paired]
        compare.append(
            CompareMetric(
                name=name,
                delta=_paired_interval(base, theirs_values, seed=seed),
                base_mean=sum(base) / len(base) if base else math.nan,
                other_mean=sum(theirs_values) / len(theirs_values) if theirs_values else math.nan,
                n_to_fail=sum(1 for a, b in paired if a < marks[name] <= b),
                n_to_pass=sum(1 for a, b in paired if b < marks[name] <= a),
            )
        )
    here_ids = {s["id"] for s in samples}
    in_both = here_ids & set(other_means)
    return ReportData(
        info=info,
        threshold=threshold,
        repeats=repeats,
        metrics=metrics,
        cost=_cost(records, prices or PriceTable(), info.spec.judge_model),
        row_errors=tuple(row_errors),
        samples=samples,
        texts=texts.texts,
        other=other,
        caveats=comparison_caveats(info, other) if other is not None else (),
        compare=tuple(compare),
        n_paired=len(in_both),
        only_here=len(here_ids - in_both),
        only_other=len(set(other_means) - in_both),
        seed=seed,
        gate_results=gate_results,
        partial=partial_run_reasons(coverage, policy),
        partial_gated=not refuses_partial_run(coverage, policy),
        pending=pending_entries(records),
    )


# --------------------------------------------------------------------------- embedding

_JSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_JSON_ESCAPE_RE = re.compile("[<>&\u2028\u2029]")


def embed_json(data: Any) -> str:
    r"""``data`` as JSON that is safe inside ``<script type="application/json">``.

    ``<``, ``>``, ``&`` and U+2028/U+2029 are written as ``\uXXXX`` escapes (valid JSON,
    the same value after ``JSON.parse``), so no string in the data can close the script
    element (``</script>``), open a comment (``<!--``) or end a JavaScript line. NaN and
    infinities are refused: the report writes them as ``null`` before this.

    Raises:
        ValueError: ``data`` holds a NaN or infinity.
    """
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return _JSON_ESCAPE_RE.sub(lambda m: _JSON_ESCAPES[m.group(0)], text)
