"""The run browser: one page over every run in a store, each run's report beside it.

``assay browse`` (Python: :func:`write_browser`) writes a folder that works offline and as
a CI artifact (a zip of static files, no server, no network)::

    assay-runs/index.html          every run: date, data, judge, samples, mean and CI per metric;
                                   compare any two runs side by side, sample by sample
    assay-runs/runs/<run>.html     each run's report (the same page as ``assay report``)

The index embeds, per run, each sample's question, answer, per-metric value and verdicts
(subject, value, reason): enough to compare two runs' answers and verdicts side by side
without a server. Every sample links to its run's report, opened on that sample
(``runs/<run>.html#sample=<id>``). The judge's raw exchange stays in the reports.

Safety is the report's: data travels as JSON escaped for a script element
(:func:`~assay.report._build.embed_json`), the page's script builds the DOM with
``textContent`` only, and the same Content-Security-Policy forbids any network access.
Links are built from run ids mapped to file names here (:func:`report_file`), never from
data.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from assay._safety import redact_url, scrub, url_secrets
from assay.analysis import bootstrap_mean_ci
from assay.report._build import Interval, Texts, embed_json
from assay.run import RunInfo, TrustFigure, trust_for
from assay.run._frames import score_value

__all__ = ["BROWSER_SAMPLES", "BrowserData", "RunEntry", "build_browser", "report_file"]

BROWSER_SAMPLES = 2000
"""Samples per run the index embeds for side-by-side comparison (each run's report has all of them)."""

_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,80}")


def report_file(run_id: str) -> str:
    """The file name of a run's report inside the browser's ``runs/`` folder.

    A run id made by assay (``20250101-120000-ab12``) is its own name; any other id (given
    to ``evaluate(run_id=...)``) is reduced to safe characters and made unique by a hash.
    """
    if _SAFE.fullmatch(run_id) and not run_id.endswith("."):
        return f"{run_id}.html"
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", run_id).strip("-.")[:60] or "run"
    return f"{slug}-{hashlib.sha256(run_id.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}.html"


@dataclass(frozen=True)
class RunEntry:
    """One run as the index lists it.

    Attributes:
        info: The run (spec, status, counts).
        means: Metric -> mean over samples with its bootstrap CI (the report's numbers).
        file: Its report's file name in ``runs/``.
        n_shown: Samples embedded for comparison (at most ``BROWSER_SAMPLES``).
        n_samples: Samples the run has.
        trust: Metric -> how far its judge agrees with people (shown beside the mean).
    """

    info: RunInfo
    means: Mapping[str, Interval]
    file: str
    n_shown: int
    n_samples: int
    trust: Mapping[str, TrustFigure] = field(default_factory=dict)
    n_pending: int = 0
    """Questions waiting for a person (``needs_review``), answered on the run's report or by ``assay review``."""


@dataclass(frozen=True)
class BrowserData:
    """Everything the index shows: runs (the one written last first), the metrics they have, and the page's JSON."""

    runs: tuple[RunEntry, ...]
    metrics: tuple[str, ...]
    payload: dict[str, Any] = field(repr=False)
    store: str = ""
    generated_at: str = ""


def _samples(
    records: Sequence[Mapping[str, Any]], names: Sequence[str], texts: Texts, limit: int
) -> tuple[list[dict[str, Any]], dict[str, Interval], int]:
    """Per sample (repeats grouped, in input order): id, question, answer, value and verdicts per metric."""
    groups: dict[int, list[Mapping[str, Any]]] = {}
    for record in records:
        groups.setdefault(int(record.get("line") or 0), []).append(record)
    per_metric: dict[str, list[float]] = {name: [] for name in names}
    samples: list[dict[str, Any]] = []
    for line in sorted(groups):
        group = sorted(groups[line], key=lambda r: int(r.get("repeat") or 0))
        first = group[0]
        sample = first.get("sample") or {}
        scores: dict[str, Any] = {}
        for name in names:
            values = [v for r in group if (v := score_value((r.get("scores") or {}).get(name) or {})) is not None]
            mean = sum(values) / len(values) if values else None
            if mean is not None:
                per_metric[name].append(mean)
            shown = (first.get("scores") or {}).get(name)
            if shown is None:
                continue
            scores[name] = {
                "value": mean,
                "unscored": shown.get("unscored_reason") if not values else None,
                "verdicts": [
                    [texts(v.get("subject", "")), v.get("value"), texts(v.get("reason") or "")]
                    for v in (shown.get("verdicts") or ())[:50]
                ],
            }
        if len(samples) < limit:
            samples.append(
                {
                    "id": str(first.get("id") or sample.get("id") or f"line-{line}"),
                    "line": line,
                    "q": texts(sample.get("question")),
                    "a": texts(sample.get("answer")),
                    "s": scores,
                }
            )
    means = {}
    for name, values in per_metric.items():
        low, high = bootstrap_mean_ci(values)
        means[name] = Interval(sum(values) / len(values) if values else math.nan, low, high, len(values))
    return samples, means, len(groups)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def build_browser(
    runs: Sequence[tuple[RunInfo, Sequence[Mapping[str, Any]]]],
    *,
    threshold: float = 0.8,
    store: str = "",
    max_samples: int = BROWSER_SAMPLES,
    trust: Mapping[str, Mapping[str, TrustFigure]] | None = None,
) -> BrowserData:
    """The index's data from every run and its records (pure: no file, no store).

    Args:
        runs: ``(RunInfo, records)`` per run, the one written last first (:meth:`RunStore.runs`).
        threshold: The pass mark samples are coloured by (``assay gate``'s default).
        store: The store's path, for the page's title.
        max_samples: Samples per run embedded for comparison (the rest are in its report).
        trust: Per run id, per metric, how far its judge agrees with people (with the user's
            calibrations: :func:`assay.run.trust_for_run`); default: from each run's spec and
            the shipped table alone.
    """
    texts = Texts()
    entries: list[RunEntry] = []
    metrics: list[str] = []
    payload_runs: list[dict[str, Any]] = []
    for info, records in runs:
        names = [m.name for m in info.spec.metrics]
        for record in records:
            for name in record.get("scores") or {}:
                if name not in names:
                    names.append(name)
        for name in names:
            if name not in metrics:
                metrics.append(name)
        samples, means, n_samples = _samples(records, names, texts, max_samples)
        figures = (trust or {}).get(info.run_id) or {
            m.name: trust_for(m, info.spec.judge_record) for m in info.spec.metrics
        }
        waiting = sum(len(score.get("pending") or ()) for r in records for score in (r.get("scores") or {}).values())
        entry = RunEntry(info, means, report_file(info.run_id), len(samples), n_samples, figures, waiting)
        entries.append(entry)
        payload_runs.append(
            {
                "id": info.run_id,
                "created": info.created_at,
                "status": info.status,
                "dataset": info.spec.dataset,
                "judge": info.spec.judge_model,
                # The judge exactly (weights, layout, build, prompts): one name can be two judges.
                "judge_parts": (
                    scrub(info.spec.judge_record.flat(), url_secrets(info.spec.base_url))
                    if info.spec.judge_record is not None
                    else None
                ),
                # What a comparison must match besides the data: each metric's version and settings.
                "settings": {
                    m.name: f"version {m.version} " + json.dumps(m.params, sort_keys=True, default=str)
                    for m in info.spec.metrics
                },
                "temperature": info.spec.options.get("temperature"),
                "endpoint": redact_url(info.spec.base_url),  # a run stored before specs redacted it
                "file": entry.file,
                "metrics": names,
                "n_samples": n_samples,
                "n_shown": len(samples),
                "means": {
                    n: {"mean": _finite(i.estimate), "low": _finite(i.low), "high": _finite(i.high)}
                    for n, i in means.items()
                },
                "samples": samples,
            }
        )
    payload = {"runs": payload_runs, "texts": texts.texts, "threshold": threshold, "metrics": metrics}
    return BrowserData(
        runs=tuple(entries),
        metrics=tuple(metrics),
        payload=payload,
        store=store,
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def browser_json(data: BrowserData) -> str:
    """The index's embedded JSON (escaped for a script element)."""
    return embed_json(data.payload)


def shown_date(created_at: str) -> str:
    """``2025-01-01 12:00 UTC`` from a stored ISO time (as stored when it does not parse)."""
    try:
        moment = datetime.fromisoformat(created_at)
    except ValueError:
        return created_at
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
