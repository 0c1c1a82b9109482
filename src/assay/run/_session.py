"""A run's lifecycle: where its data comes from, what it was run with, and resuming it safely.

:func:`~assay.evaluate` owns the run (the CLI only parses and calls it). This module holds
the parts that decide whether a run can be trusted (its data is read by
:mod:`assay.run._data`):

- :class:`RunOptions` is every option that changes results, stored with the run;
- :func:`check_resume` refuses to resume a run whose data, metrics, judge or options are
  not exactly the stored ones: a resumed run that mixed two datasets or two judges would
  look like success and be wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay._safety import redact_url
from assay._scores import MetricSpec
from assay.errors import AssayError, ConfigError
from assay.metrics._base import Metric
from assay.run._data import DEFAULT_MAX_FIELD_CHARS, DEFAULT_MAX_ROW_CHARS, DatasetSource, SizeLimits
from assay.run._judge_record import JudgeRecord
from assay.run._store import RunSpec

__all__ = ["ResumeError", "RunOptions", "check_resume"]


class ResumeError(ConfigError):
    """A run cannot be resumed as asked: its data, metrics, judge or options differ."""


class RunOptions(BaseModel):
    """Every option of a run that can change its results, stored with the run.

    A resumed run continues with exactly these. (Throughput settings such as
    concurrency and rate budgets do not change results and are not part of it.)

    Attributes:
        mapping: Column renames applied when reading the data.
        repeats: Times each sample is judged.
        reasks: Re-asks per invalid judge answer.
        temperature: Run-wide sampling temperature (``None``: each metric's own, 0).
        cache: Whether judge calls were answered from the call cache.
        timeout_s: Per-call timeout.
        max_attempts: Tries per call for transient failures.
        max_field_chars: Longest text a field may hold; a longer one makes its row invalid.
        max_row_chars: Most text a row may hold in all.
        escalate: A cascade's judge levels after the first, as named (``review`` last), if any.
        agreement: A cascade's target agreement with people.
        delta: A cascade's chance that the guarantee fails.
        cascade: Per metric, the cascade's plan: thresholds, the calibration runs and labels
            they rest on (a resume recomputes it and refuses one that moved).

    The metrics themselves are stored as their specs (``RunSpec.metrics``), from which
    :func:`~assay.metrics.metric_from_spec` rebuilds them.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    mapping: dict[str, str] = Field(default_factory=dict)
    repeats: int = 1
    reasks: int = 1
    temperature: float | None = None
    cache: bool = False
    timeout_s: float | None = 120.0
    max_attempts: int = 6
    max_field_chars: int = DEFAULT_MAX_FIELD_CHARS
    max_row_chars: int = DEFAULT_MAX_ROW_CHARS
    escalate: tuple[str, ...] = ()
    agreement: float | None = None
    delta: float | None = None
    cascade: dict[str, Any] | None = None

    @property
    def size_limits(self) -> SizeLimits:
        """The :class:`~assay.run.SizeLimits` these options set."""
        return SizeLimits(self.max_field_chars, self.max_row_chars)

    @classmethod
    def from_stored(cls, options: Mapping[str, Any]) -> RunOptions:
        """Read a spec's options (keys stored by older versions, such as metric names, are ignored)."""
        return cls.model_validate(dict(options))


def _differences(stored: Mapping[str, Any], given: Mapping[str, Any]) -> list[str]:
    return [
        f"{key}: stored {stored.get(key)!r}, given {given.get(key)!r}"
        for key in sorted(set(stored) | set(given))
        if stored.get(key) != given.get(key)
    ]


def _current_spec(stored: MetricSpec) -> dict[str, Any]:
    """A stored metric spec in today's form (specs written by older versions are rebuilt first)."""
    from assay.metrics import metric_from_spec

    try:
        return metric_from_spec(stored).spec().model_dump(mode="json")
    except AssayError:
        return stored.model_dump(mode="json")  # cannot be rebuilt: compared as stored, so it differs


_LATER_RULES = {
    "evidence_chars": "the evidence window",
    "whole_chars": "the evidence window",
    "shared_evidence": "the evidence window",
    "verbatim": "the copy rule",
    "details": "the detail checks (numbers, names, negation)",
    "guard": "the judge-addressed guard",
}


def _check_recorded(spec: RunSpec) -> None:
    """Refuse a run whose metric specs (schema 1) did not record settings today's metrics apply.

    Rebuilt, such a metric takes today's defaults for what its spec did not record, and its
    finished samples were not judged with them: resuming would judge one run two ways.
    """
    from assay.metrics._rebuild import unrecorded_settings

    for stored in spec.metrics:
        try:
            missing = unrecorded_settings(stored)
        except AssayError:
            continue  # cannot be rebuilt at all: the metric comparison below says so
        if missing:
            rules = list(dict.fromkeys(_LATER_RULES.get(name.rpartition(".")[2], name) for name in missing))
            raise ResumeError(
                f"cannot resume run {spec.run_id}: it was stored by an older assay (metric spec schema 1) that did not "
                f"record {stored.name}'s {', '.join(missing)}; its finished samples were judged without "
                f"{', '.join(rules)}, which this assay applies, so the rest would be judged another way. Start a new "
                f"run (the results stored in {spec.run_id} stay readable: assay report, assay gate)."
            )


def check_resume(
    spec: RunSpec,
    *,
    source: DatasetSource,
    metrics: Iterable[Metric],
    judge_model: str,
    base_url: str | None,
    options: RunOptions,
    judge: JudgeRecord | None = None,
) -> None:
    """Refuse to resume ``spec``'s run with anything but its own data, metrics, judge and options.

    ``judge`` is the judge's exact record (weights, layout, build, prompts): a run is resumed
    only by the judge that started it, and a run stored by schema 1 (which recorded no judge
    but its name) not at all. A later spec without a record was written by hand (or by a door
    that does not resume): the model name is checked, as before.

    Raises:
        ResumeError: naming each difference and what to do instead.
    """
    run = spec.run_id
    if spec.dataset_fingerprint != source.fingerprint:
        if spec.dataset_fingerprint and not spec.dataset_fingerprint.startswith("sha256:"):
            why = "it was stored by an older assay without a content hash, so its data cannot be verified"
        else:
            why = "the data changed since the run started (its content hash differs)"
        raise ResumeError(
            f"cannot resume run {run}: {why}; {source.description} is not the data the run was judging. "
            f"Start a new run on it instead (rows already judged in {run} stay stored)."
        )
    _check_recorded(spec)
    stored_metrics = [_current_spec(m) for m in spec.metrics]
    given_metrics = [m.spec().model_dump(mode="json") for m in metrics]
    if stored_metrics != given_metrics:
        raise ResumeError(
            f"cannot resume run {run}: its metrics were {[m['name'] for m in stored_metrics]} with their stored "
            f"settings; the metrics given differ. Resume with the run's own metrics, or start a new run."
        )
    if spec.judge_model != judge_model or (spec.base_url or None) != (redact_url(base_url) or None):
        raise ResumeError(
            f"cannot resume run {run}: it was judged by {spec.judge_model}"
            f"{f' at {spec.base_url}' if spec.base_url else ''}, not {judge_model}"
            f"{f' at {redact_url(base_url)}' if base_url else ''}; mixing two judges' verdicts in one run "
            "would make its scores meaningless. Start a new run for the other judge."
        )
    if judge is not None:
        if spec.judge_record is None and spec.schema_version < 2:  # stored before runs recorded their judge
            raise ResumeError(
                f"cannot resume run {run}: it was stored by an older assay that did not record its judge's weights, "
                "layout and llama.cpp build, so the judge now could not be shown to be the one that judged its "
                f"finished samples. Start a new run (the results stored in {run} stay readable: assay report, "
                "assay gate)."
            )
        differs = spec.judge_record.differences(judge, here="then", there="now") if spec.judge_record else []
        if differs:
            raise ResumeError(
                f"cannot resume run {run}: it was judged by another {spec.judge_model} than this one "
                f"({'; '.join(differs)}); "
                "mixing two judges' verdicts in one run would make its scores meaningless. Resume it where it "
                "started (same weights, layout and build), or start a new run for this judge."
            )
    stored = RunOptions.from_stored(spec.options).model_dump(mode="json")
    given = options.model_dump(mode="json")
    _check_cascade(run, stored, given)
    differences = _differences(stored, given)
    if differences:
        raise ResumeError(
            f"cannot resume run {run} with other options than it was started with ({'; '.join(differences)}). "
            "Resume with the run's own options, or start a new run."
        )


_CASCADE = ("escalate", "agreement", "delta", "cascade")


def _cascade_text(options: Mapping[str, Any]) -> str:
    if not options.get("escalate"):
        return "no cascade"
    levels = " -> ".join(["--judge", *options["escalate"]])
    return f"the cascade {levels} at --agreement {options.get('agreement')} --delta {options.get('delta')}"


def _check_cascade(run: str, stored: Mapping[str, Any], given: Mapping[str, Any]) -> None:
    """Refuse to resume a cascade run with other levels, targets or thresholds (or a run without one with one)."""
    if all(stored.get(key) == given.get(key) for key in _CASCADE):
        return
    if all(stored.get(key) == given.get(key) for key in _CASCADE[:3]):
        why = (
            "the same levels and targets now choose other thresholds (a calibration was stored since): its kept "
            "verdicts would rest on two plans"
        )
    else:
        why = f"it was judged with {_cascade_text(stored)}, not {_cascade_text(given)}"
    raise ResumeError(
        f"cannot resume run {run}: {why}; one run's verdicts rest on one cascade plan. Resume with the run's own "
        "--escalate, --agreement and --delta, or start a new run"
    )
