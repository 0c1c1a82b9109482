"""How far a metric's judge can be trusted: measured agreement beside every score.

Three sources, in this order:

1. **Model-free metrics** (``agent_state_match``, ``tool_call_accuracy``) judge nothing:
   their entry in the shipped table says what they compute, from their definition.
2. **The user's own calibration** (``assay calibrate``, or ``assay judges bench``),
   stored by :func:`store_agreement` under the metric and the judge's cache identity
   (:attr:`~assay.models.JudgeModel.identity`: another model, weights layout, llama.cpp
   build or endpoint is another judge). The newest comes first.
3. **The shipped table** (``agreement.json`` beside this module, written by
   ``benchmarks/trust_table.py``): the default local judge's measured agreement per
   metric, with its CI, n, data set, weights, build and date. It applies when the run's
   judge is the default local judge (its weights' digest and grammar bound) and the
   metric's settings fingerprint (:func:`settings_fingerprint`) is the one the table was
   measured with; a metric set otherwise is "not measured".

Otherwise: "not measured for this judge", with the command that measures it.

A figure whose 95% CI reaches down to chance (lower bound <= 0.5) is *untrusted*: gates
do not pass or fail on it (``assay gate``, ``EvalResult.gate``, the pytest plugin and the
Action exit 2) unless told so (``--allow-untrusted-judge``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from assay._scores import MetricSpec

if TYPE_CHECKING:
    from assay.analysis._agreement import Agreement
    from assay.run._judge_record import JudgeRecord
    from assay.run._store import RunStore

__all__ = [
    "CHANCE",
    "TRUST_TABLE",
    "TrustFigure",
    "default_judge_settings",
    "settings_fingerprint",
    "shipped_table",
    "store_agreement",
    "trust_for",
    "trust_for_run",
]

TRUST_TABLE = Path(__file__).with_name("agreement.json")
"""The shipped measured-agreement table (regenerate: ``python benchmarks/trust_table.py``)."""
CHANCE = 0.5
"""Balanced accuracy of a coin: a judge whose CI reaches down to it is not trusted to gate."""

TrustKind = Literal["shipped", "calibration", "model_free", "unmeasured"]


class TrustFigure(BaseModel):
    """How far one metric's judge agrees with people (or the environment), and where that comes from.

    Attributes:
        metric: The metric's name.
        kind: ``shipped`` (the package's table), ``calibration`` (the user's own),
            ``model_free`` (no judge), ``unmeasured``.
        judge: The judge's ``model_id`` (``None`` for a model-free metric).
        balanced_accuracy: The figure, or ``None``.
        ci: Its 95% CI.
        n: Items it was measured on.
        dataset: What it was measured on (``SummEdits dev``, ``labels.jsonl``).
        against: ``people`` or ``the environment`` (tau-bench's own check).
        date: When it was measured (ISO date).
        measured_with: The weights and build it was measured with (shipped figures).
        source: Which benchmark run produced it (shipped figures) or which calibration run.
        note: The definition of a model-free metric, or what to do when unmeasured.
        earlier: Older calibrations for the same metric and judge (``n``, ``date``, figure).
    """

    model_config = ConfigDict(frozen=True)

    metric: str
    kind: TrustKind
    judge: str | None = None
    balanced_accuracy: float | None = None
    ci: tuple[float, float] | None = None
    n: int | None = None
    dataset: str | None = None
    against: str = "people"
    date: str | None = None
    measured_with: str | None = None
    source: str | None = None
    note: str = ""
    earlier: tuple[str, ...] = ()

    @property
    def untrusted(self) -> bool:
        """A measured figure whose CI's lower bound is at or below chance (0.5)."""
        return self.ci is not None and self.kind in ("shipped", "calibration") and self.ci[0] <= CHANCE + 1e-12

    def figure(self) -> str:
        """``0.78 [0.72-0.84]`` (empty when there is no figure)."""
        if self.balanced_accuracy is None:
            return ""
        ci = f" [{self.ci[0]:.2f}-{self.ci[1]:.2f}]" if self.ci is not None else ""
        return f"{self.balanced_accuracy:.2f}{ci}"

    def text(self) -> str:
        """One line for a summary: ``agrees with people: 0.78 [0.72-0.84], SummEdits dev, n=100 (...)``."""
        if self.kind == "model_free":
            return f"model-free: {self.note}"
        if self.kind == "unmeasured":
            return self.note
        where = ", ".join(p for p in (self.dataset, f"n={self.n}" if self.n is not None else None) if p)
        whose = "shipped figure" if self.kind == "shipped" else "your calibration"
        extra = ", ".join(p for p in (whose, self.measured_with, self.date) if p)
        line = f"agrees with {self.against}: {self.figure()}, {where} ({extra})"
        if self.earlier:
            line += f"; earlier: {'; '.join(self.earlier)}"
        if self.untrusted:
            line += " — not for gating: its CI reaches chance (0.5)"
        return line

    def untrusted_reason(self) -> str:
        """Why a gate refuses it: ``untrusted judge: agent_goal_accuracy with local:... agrees with ... at 0.35``."""
        where = ", ".join(p for p in (self.dataset, f"n={self.n}" if self.n is not None else None) if p)
        return (
            f"untrusted judge: {self.metric} with {self.judge} agrees with {self.against} at {self.figure()} "
            f"({where}; {'shipped figure' if self.kind == 'shipped' else 'your calibration'}): its CI reaches chance "
            "(0.5), so a pass or a fail on it means nothing. Use a judge measured above chance, or pass "
            "--allow-untrusted-judge (allow_untrusted_judge=True) to gate on it anyway"
        )

    def to_json(self) -> dict[str, Any]:
        """JSON-ready, with the summary line and ``untrusted`` (for reports and the browser)."""
        return {**self.model_dump(mode="json"), "text": self.text(), "untrusted": self.untrusted}


def settings_fingerprint(spec: MetricSpec | Mapping[str, Any]) -> str:
    """The fingerprint of a metric's cache-relevant settings: its spec (name, version, prompts, params).

    The spec holds every field a metric judges with, prompt versions included, so a change
    that can move a verdict changes it. 16 hex digits of a sha256 over the canonical JSON.
    """
    data = spec.model_dump(mode="json") if isinstance(spec, MetricSpec) else dict(spec)
    data.pop("schema_version", None)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def default_judge_settings(max_string_chars: int = 300) -> str:
    """The part of the default local judge's cache identity a figure depends on, whatever the machine.

    ``local:sha256:<digest>`` then the grammar's string bound. The layout (Q8_0 copy on AMX)
    and the build are in the identity too, but a shipped figure is shown for every build
    with the build it was measured on beside it (between builds 1 of 100 BEGIN verdicts moved,
    ``docs/design/judging.md``), never hidden.
    """
    from assay.models._weights import DEFAULT_MODEL_SHA256

    return f"local:sha256:{DEFAULT_MODEL_SHA256}|strings<={max_string_chars}"


def _judge_settings(identity: str) -> str | None:
    """:func:`default_judge_settings` of a local judge's identity, or ``None`` for another judge."""
    if not identity.startswith("local:sha256:"):
        return None
    parts = identity.split(":")
    strings = next((p for p in parts if p.startswith("strings<=")), None)
    return f"local:sha256:{parts[2]}|{strings}" if strings else None


@functools.cache
def shipped_table(path: Path = TRUST_TABLE) -> dict[str, Any]:
    """The shipped table (read once)."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _unmeasured(metric: str, judge: str | None, why: str = "") -> TrustFigure:
    command = f"assay calibrate LABELS.jsonl --judge {judge}" if judge else "assay calibrate LABELS.jsonl --judge JUDGE"
    said = f"not measured for this judge{why} — measure with `{command}`"
    return TrustFigure(metric=metric, kind="unmeasured", judge=judge, note=said)


def _calibration_line(record: Mapping[str, Any]) -> str:
    ci = record.get("ci") or [math.nan, math.nan]
    return f"{record['balanced_accuracy']:.2f} [{ci[0]:.2f}-{ci[1]:.2f}], n={record.get('n')}, {record.get('date')}"


def trust_for(
    spec: MetricSpec,
    judge: JudgeRecord | None,
    calibrations: Iterable[Mapping[str, Any]] = (),
    *,
    table: Mapping[str, Any] | None = None,
) -> TrustFigure:
    """How far ``spec``'s metric judged by ``judge`` can be trusted (see the module docstring).

    Args:
        spec: The metric's spec as the run stored it.
        judge: The run's judge record (``None``: not recorded).
        calibrations: The user's stored agreements for this metric and judge, newest first.
        table: The shipped table (default: :func:`shipped_table`).
    """
    table = shipped_table() if table is None else table
    entry = (table.get("metrics") or {}).get(spec.name) or {}
    judge_id = judge.model_id if judge is not None else None
    if entry.get("model_free"):
        return TrustFigure(metric=spec.name, kind="model_free", note=str(entry["model_free"]))
    stored = list(calibrations)
    if stored and judge is not None:
        newest = stored[0]
        ci = newest.get("ci")
        return TrustFigure(
            metric=spec.name,
            kind="calibration",
            judge=judge_id,
            balanced_accuracy=newest.get("balanced_accuracy"),
            ci=(float(ci[0]), float(ci[1])) if ci and None not in ci else None,
            n=newest.get("n"),
            dataset=newest.get("dataset"),
            against=str(newest.get("against") or "people"),
            date=newest.get("date"),
            source=newest.get("run_id"),
            earlier=tuple(_calibration_line(r) for r in stored[1:4]),
        )
    if judge is None:
        return _unmeasured(spec.name, None, " (the run did not record its judge exactly)")
    figure = entry.get("figure")
    if not figure or _judge_settings(judge.identity) != table.get("judge", {}).get("settings"):
        return _unmeasured(spec.name, judge_id)
    if entry.get("settings_fingerprint") != settings_fingerprint(spec):
        return _unmeasured(spec.name, judge_id, " with these settings (the shipped figure is for the defaults)")
    return TrustFigure(
        metric=spec.name,
        kind="shipped",
        judge=judge_id,
        balanced_accuracy=float(figure["balanced_accuracy"]),
        ci=(float(figure["ci"][0]), float(figure["ci"][1])),
        n=int(figure["n"]),
        dataset=str(figure["dataset"]),
        against=str(figure.get("against") or "people"),
        date=str(figure["date"]),
        measured_with=str(figure.get("measured_with") or "") or None,
        source=str(figure.get("source") or "") or None,
    )


def trust_for_run(store: RunStore, run_id: str) -> dict[str, TrustFigure]:
    """Every metric of a stored run with its :class:`TrustFigure` (the user's calibrations from ``store``)."""
    spec = store.spec(run_id)
    record = spec.judge_record
    return {
        m.name: trust_for(m, record, store.calibrations(m.name, record.identity) if record is not None else ())
        for m in spec.metrics
    }


def store_agreement(
    store: RunStore,
    metric: str,
    judge: JudgeRecord,
    measured: Agreement,
    *,
    dataset: str,
    against: str = "people",
    run_id: str | None = None,
) -> dict[str, Any]:
    """Keep a measured agreement of ``metric`` judged by ``judge``, so later runs show it beside the score.

    What ``assay calibrate`` (and ``assay judges bench``) call with their result. It is
    keyed by the metric and the judge's cache identity (another model, layout, build or
    endpoint is another judge); :func:`trust_for` shows the newest first, with n and date.

    Returns:
        The stored record.
    """
    low, high = measured.balanced_accuracy_ci
    record = {
        "balanced_accuracy": None if math.isnan(measured.balanced_accuracy) else measured.balanced_accuracy,
        "ci": None if math.isnan(low) or math.isnan(high) else [low, high],
        "n": measured.n,
        "dataset": dataset,
        "against": against,
        "date": datetime.now(UTC).date().isoformat(),
        "judge": judge.model_id,
        "run_id": run_id,
    }
    store.add_calibration(metric, judge.identity, record)
    return record
