"""How far a metric's judge can be trusted: measured agreement beside every score.

Three sources, in this order:

1. **Model-free metrics** (``agent_state_match``, ``tool_call_accuracy``) judge nothing:
   their entry in the shipped table says what they compute, from their definition.
2. **The user's own calibration** (``assay calibrate``, or ``assay judges bench``),
   stored by :func:`store_agreement` under the metric and the judge's cache identity
   (:attr:`~assay.models.JudgeModel.identity`: another model, weights layout, llama.cpp
   build or endpoint is another judge), with the settings fingerprint of the metric it
   measured. It describes a run only when the run's settings have that fingerprint (a
   setting ``auto`` read as the calibrating judge reads it: ``strategy=auto`` is one call
   per statement with a local judge, one call for all with an API judge). Among those,
   the one with the largest n is shown (the newest on a tie), the others after it; one
   that judged only part of its file (``--limit``) says so. A calibration of this judge
   with other settings is never shown as the figure: the line names the setting that
   differs.
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
from assay.models._confidence import judge_string

if TYPE_CHECKING:
    from assay.analysis._agreement import Agreement
    from assay.run._judge_record import JudgeRecord
    from assay.run._store import RunStore

__all__ = [
    "CHANCE",
    "TRUST_TABLE",
    "TrustFigure",
    "cascade_figure",
    "default_judge_settings",
    "settings_differences",
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

TrustKind = Literal["shipped", "calibration", "model_free", "unmeasured", "cascade"]


class TrustFigure(BaseModel):
    """How far one metric's judge agrees with people (or the environment), and where that comes from.

    Attributes:
        metric: The metric's name.
        kind: ``shipped`` (the package's table), ``calibration`` (the user's own),
            ``model_free`` (no judge), ``unmeasured``, ``cascade`` (a cascade run: its
            guarantee, not one judge's figure; ``note`` says it).
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
        partial: For a calibration that judged part of its file: ``judged 4 of 120 items (--limit 4)``.
        chosen: Why this calibration was shown among several (``the largest of 2 with these settings``).
        others: The other calibrations of this metric, judge and settings (figure, n, date).
        elsewhere: A calibration of this judge measured with other settings, and the
            settings that differ (it is not the figure).
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
    partial: str | None = None
    chosen: str | None = None
    others: tuple[str, ...] = ()
    elsewhere: str | None = None

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
        if self.kind == "cascade":
            return self.note
        if self.kind == "unmeasured":
            return self.note + (f"; {self.elsewhere}" if self.elsewhere else "")
        where = ", ".join(p for p in (self.dataset, f"n={self.n}" if self.n is not None else None) if p)
        whose = "shipped figure" if self.kind == "shipped" else "your calibration"
        if self.partial:
            whose += f", partial: {self.partial}"
        extra = ", ".join(p for p in (whose, self.measured_with, self.date, self.chosen) if p)
        line = f"agrees with {self.against}: {self.figure()}, {where} ({extra})"
        if self.others:
            line += f"; also: {'; '.join(self.others)}"
        if self.elsewhere:
            line += f"; {self.elsewhere}"
        if self.untrusted:
            line += " — not for gating: its CI reaches chance (0.5)"
        return line

    def untrusted_reason(self) -> str:
        """Why a gate refuses it: ``untrusted judge: agent_goal_accuracy with local:... agrees with ... at 0.35``."""
        where = ", ".join(p for p in (self.dataset, f"n={self.n}" if self.n is not None else None) if p)
        whose = "shipped figure" if self.kind == "shipped" else "your calibration"
        if self.partial:
            whose += f", partial: {self.partial}"
        return (
            f"untrusted judge: {self.metric} with {self.judge} agrees with {self.against} at {self.figure()} "
            f"({where}; {whose}): its CI reaches chance "
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


def _unmeasured(metric: str, judge: str | None, why: str = "", sets: str | None = None) -> TrustFigure:
    command = f"assay calibrate LABELS.jsonl --judge {judge}" if judge else "assay calibrate LABELS.jsonl --judge JUDGE"
    said = f"not measured for this judge{why} — measure with `{command}`"
    if sets:  # the user's calibration measured settings a run can be given
        said = f"not measured for this judge{why} — run with `{sets}` for your calibration's figure"
    return TrustFigure(metric=metric, kind="unmeasured", judge=judge, note=said)


def _partial(record: Mapping[str, Any]) -> str | None:
    """``judged 4 of 120 items (--limit 4)`` for a calibration that judged part of its file, else ``None``."""
    if not record.get("partial"):
        return None
    limit = f" (--limit {record['limit']})" if record.get("limit") else ""
    return f"judged {record.get('items')} of {record.get('items_total')} items{limit}"


def _calibration_line(record: Mapping[str, Any]) -> str:
    ci = record.get("ci") or [math.nan, math.nan]
    value = record.get("balanced_accuracy")
    figure = "—" if value is None else f"{value:.2f} [{ci[0]:.2f}-{ci[1]:.2f}]"
    partial = _partial(record)
    parts = [
        figure,
        record.get("dataset"),
        f"n={record.get('n')}",
        partial and f"partial: {partial}",
        record.get("date"),
    ]
    return ", ".join(str(p) for p in parts if p)


def _resolved(spec: MetricSpec, resolves: Mapping[str, Any] | None) -> MetricSpec:
    """``spec`` with each ``auto`` setting read as the calibrating judge read it (``resolves``)."""
    if not resolves:
        return spec
    params = dict(spec.params)
    for key, value in resolves.items():
        if params.get(key) == "auto":
            params[key] = value
    return spec.model_copy(update={"params": params})


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as ``a.b.c`` -> value (lists as JSON), for naming what differs."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{name}."))
        else:
            out[name] = json.dumps(value) if isinstance(value, list) else value
    return out


def settings_differences(
    here: MetricSpec, measured: Mapping[str, Any], resolves: Mapping[str, Any] | None = None, *, most: int = 3
) -> list[str]:
    """What a run's metric settings (``here``) have that a calibration's (``measured``, a spec's JSON) had not.

    One phrase per setting, ``decomposer=sentences here, anchored in the calibration``, at
    most ``most`` of them (then ``and N more``). An ``auto`` setting that the calibrating
    judge reads otherwise says how: ``strategy=auto here (batch with this judge)``.
    """
    resolved = _resolved(here, resolves).model_dump(mode="json")
    resolved.pop("schema_version", None)
    theirs = dict(measured)
    theirs.pop("schema_version", None)
    mine_flat, theirs_flat = _flat(resolved), _flat(theirs)
    original = here.params
    out: list[str] = []
    for key in dict.fromkeys([*mine_flat, *theirs_flat]):
        mine, other = mine_flat.get(key, "not set"), theirs_flat.get(key, "not set")
        if mine == other or key == "type":
            continue
        short = key.removeprefix("params.")
        shown = f"{mine}"
        if resolves and short in resolves and original.get(short) == "auto":
            shown = f"auto ({mine} with this judge)"
        out.append(f"{short}={shown} here, {other} in the calibration")
    if len(out) > most:
        out = [*out[:most], f"and {len(out) - most} more"]
    return out


def _describes(record: Mapping[str, Any], spec: MetricSpec) -> bool:
    """Whether a stored calibration measured this metric with these settings (its fingerprint)."""
    measured = record.get("settings_fingerprint")
    return measured is not None and measured == settings_fingerprint(_resolved(spec, record.get("resolves")))


def _largest(records: list[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The calibration with the largest n: the one a user most likely meant."""
    return max(records, key=lambda r: int(r.get("n") or 0)) if records else None


def _sets_for(spec: MetricSpec, record: Mapping[str, Any] | None) -> str | None:
    """The ``--set`` options that give a run the settings a calibration (``record``) measured, if any do.

    ``None`` when it recorded no settings or differs otherwise than in plain parameters (another
    metric version): then only calibrating again with this run's settings gives a figure.
    """
    if record is None:
        return None
    settings = record.get("settings")
    if not isinstance(settings, Mapping) or settings.get("version") != spec.version:
        return None
    theirs = settings.get("params")
    if not isinstance(theirs, Mapping):
        return None
    mine = _resolved(spec, record.get("resolves")).params
    sets = []
    for key in dict.fromkeys([*mine, *theirs]):
        if mine.get(key) == theirs.get(key):
            continue
        value = theirs.get(key)
        if key not in theirs or not isinstance(value, str | int | float | bool):
            return None  # a setting --set cannot give back as it was
        sets.append(f"--set {spec.name}.{key}={str(value).lower() if isinstance(value, bool) else value}")
    return " ".join(sets) or None


def _elsewhere(spec: MetricSpec, others: list[Mapping[str, Any]]) -> str | None:
    """What a calibration of this judge with other settings says about this run: not its figure, and why."""
    record = _largest(others)
    if record is None:
        return None
    what = ", ".join(p for p in (record.get("dataset"), f"n={record.get('n')}", record.get("date")) if p)
    settings = record.get("settings")
    if not isinstance(settings, Mapping):
        return (
            f"your calibration of this judge ({what}) did not record the settings it measured (an older assay "
            "stored it): calibrate again to attach it"
        )
    differs = settings_differences(spec, settings, record.get("resolves"))
    more = f" (and {len(others) - 1} more)" if len(others) > 1 else ""
    return (
        f"your calibration of this judge ({what}){more} measured other settings, so it is not this run's figure: "
        + "; ".join(differs or ["another metric version"])
    )


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
        calibrations: The user's stored agreements for this metric and judge, newest first
            (:meth:`~assay.run.RunStore.calibrations`); only those measured with ``spec``'s
            settings can be the figure.
        table: The shipped table (default: :func:`shipped_table`).
    """
    table = shipped_table() if table is None else table
    entry = (table.get("metrics") or {}).get(spec.name) or {}
    judge_id = judge.model_id if judge is not None else None
    if entry.get("model_free"):
        return TrustFigure(metric=spec.name, kind="model_free", note=str(entry["model_free"]))
    stored = list(calibrations) if judge is not None else []
    describes = [_describes(r, spec) for r in stored]
    matching = [r for r, ok in zip(stored, describes, strict=True) if ok]
    others = [r for r, ok in zip(stored, describes, strict=True) if not ok]
    elsewhere = _elsewhere(spec, others)
    if matching:
        # The figure that says most: the largest n (the newest on a tie; ``stored`` is newest first).
        best = max(range(len(matching)), key=lambda i: (int(matching[i].get("n") or 0), -i))
        chosen = matching[best]
        ci = chosen.get("ci")
        return TrustFigure(
            metric=spec.name,
            kind="calibration",
            judge=judge_id,
            balanced_accuracy=chosen.get("balanced_accuracy"),
            ci=(float(ci[0]), float(ci[1])) if ci and None not in ci else None,
            n=chosen.get("n"),
            dataset=chosen.get("dataset"),
            against=str(chosen.get("against") or "people"),
            date=chosen.get("date"),
            source=chosen.get("run_id"),
            partial=_partial(chosen),
            chosen=f"the largest n of {len(matching)} with these settings" if len(matching) > 1 else None,
            others=tuple(_calibration_line(r) for i, r in enumerate(matching) if i != best)[:3],
            elsewhere=elsewhere,
        )
    if judge is None:
        return _unmeasured(spec.name, None, " (the run did not record its judge exactly)")
    named = judge_string(judge.model_id, judge.identity)  # what to calibrate: with its confidence, if it has one
    figure = entry.get("figure")
    # Where the user's calibration measured other settings, calibrating again measures what it
    # measured (assay calibrate asks one statement a call): say how a run gets that figure.
    sets = _sets_for(spec, _largest(others))
    if not figure or _judge_settings(judge.identity) != table.get("judge", {}).get("settings"):
        why = " with these settings" if elsewhere else ""
        return _unmeasured(spec.name, named, why, sets).model_copy(update={"elsewhere": elsewhere})
    if entry.get("settings_fingerprint") != settings_fingerprint(spec):
        why = " with these settings (the shipped figure is for the defaults)"
        return _unmeasured(spec.name, named, why, sets).model_copy(update={"elsewhere": elsewhere})
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
        elsewhere=elsewhere,
    )


def trust_for_run(store: RunStore, run_id: str) -> dict[str, TrustFigure]:
    """Every metric of a stored run with its :class:`TrustFigure` (the user's calibrations from ``store``)."""
    spec = store.spec(run_id)
    record = spec.judge_record
    plans = spec.cascade_plans
    return {
        m.name: cascade_figure(m.name, plans[m.name])
        if m.name in plans
        else trust_for(m, record, store.calibrations(m.name, record.identity) if record is not None else ())
        for m in spec.metrics
    }


GUARANTEE_REACH = "for items like those: it does not carry to other sources"
"""What a cascade's guarantee says of its reach, in its trust line and its summary line. Out of
fold on 126 SummEdits dev items (9 source documents, the 1.5B, delta 0.1), thresholds chosen on
half of the documents kept their promise in 71-81% of 200 checks on the other half at targets
0.70-0.80, and in 94-98% with the items split at random (docs/benchmarks.md, "Trust or escalate")."""


def cascade_figure(metric: str, plan: Mapping[str, Any]) -> TrustFigure:
    """A cascade metric's trust line: its guarantee and the labels it rests on, never one judge's figure."""
    judges = " -> ".join(
        [str(level.get("judge")) for level in plan.get("levels", [])] + (["review"] if plan.get("review") else [])
    )
    runs = ", ".join(f"calibrate run {lv['calibration']}" for lv in plan.get("levels", []) if lv.get("calibration"))
    note = (
        f"cascade {judges}: agreement with people >= {1 - float(plan['alpha']):.0%} with probability "
        f"{1 - float(plan['delta']):.0%} on the verdicts kept, thresholds chosen on {plan.get('labels')} labels of "
        f"{plan.get('dataset')} ({runs}); {GUARANTEE_REACH}"
    )
    return TrustFigure(metric=metric, kind="cascade", n=plan.get("labels"), dataset=plan.get("dataset"), note=note)


def store_agreement(
    store: RunStore,
    spec: MetricSpec,
    judge: JudgeRecord,
    measured: Agreement,
    *,
    dataset: str,
    against: str = "people",
    run_id: str | None = None,
    resolves: Mapping[str, str] | None = None,
    items: int | None = None,
    items_total: int | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """Keep a measured agreement of the metric ``spec`` describes, judged by ``judge``, for later runs.

    What ``assay calibrate`` (and ``assay judges bench``) call with their result. It is
    keyed by the metric's name and the judge's cache identity (another model, layout, build
    or endpoint is another judge) and holds the settings fingerprint of ``spec``:
    :func:`trust_for` shows it beside a run's score only when the run's settings have that
    fingerprint, the largest n first.

    Args:
        store: The run store.
        spec: The metric, set as it was measured (its settings are what the figure describes).
        judge: The judge's record.
        measured: The agreement.
        dataset: What it was measured on (a file name).
        against: ``people`` or ``the environment``.
        run_id: The calibration run.
        resolves: How this judge reads a setting given as ``auto`` (``{"strategy": "batch"}``
            for an API judge's faithfulness), so a run left at ``auto`` is matched as judged.
        items: Items judged (scored or not).
        items_total: Items in the file; fewer judged (``limit``) makes the record partial.
        limit: The ``--limit`` that cut it, if any.

    Returns:
        The stored record.
    """
    low, high = measured.balanced_accuracy_ci
    settings = spec.model_dump(mode="json")
    settings.pop("schema_version", None)
    record = {
        "balanced_accuracy": None if math.isnan(measured.balanced_accuracy) else measured.balanced_accuracy,
        "ci": None if math.isnan(low) or math.isnan(high) else [low, high],
        "n": measured.n,
        "dataset": dataset,
        "against": against,
        "date": datetime.now(UTC).date().isoformat(),
        "judge": judge.model_id,
        "run_id": run_id,
        "settings_fingerprint": settings_fingerprint(spec),
        "settings": settings,
        "resolves": dict(resolves or {}),
        "items": items,
        "items_total": items_total,
        "limit": limit,
        "partial": items is not None and items_total is not None and items < items_total,
    }
    store.add_calibration(spec.name, judge.identity, record)
    return record
