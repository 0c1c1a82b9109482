"""A run's lifecycle: where its data comes from, what it was run with, and resuming it safely.

:func:`~assay.evaluate` owns the run (the CLI only parses and calls it). This module holds
the parts that decide whether a run can be trusted:

- :func:`open_dataset` turns whatever the user passed (a file path, a DataFrame, a Hugging
  Face dataset, a list of dicts or samples) into a re-readable :class:`DatasetSource` with
  a content fingerprint, checked in one cheap pass before any judge call;
- :class:`RunOptions` is every option that changes results, stored with the run;
- :func:`check_resume` refuses to resume a run whose data, metrics, judge or options are
  not exactly the stored ones: a resumed run that mixed two datasets or two judges would
  look like success and be wrong.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay._safety import redact_url
from assay._samples import Sample
from assay._scores import MetricSpec
from assay.errors import AssayError, ConfigError, DatasetError, SampleError, counted
from assay.metrics._base import Metric
from assay.run._dataset import (
    DEFAULT_MAX_FIELD_CHARS,
    DEFAULT_MAX_ROW_CHARS,
    NOTES,
    Row,
    SizeLimits,
    likely_column,
    map_advice,
    rows_from_items,
)
from assay.run._judge_record import JudgeRecord
from assay.run._readers import from_arrow, from_dataframe, from_hf_dataset, read_dataset
from assay.run._store import RunSpec

__all__ = ["DatasetSource", "ResumeError", "RunOptions", "check_resume", "open_dataset"]


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

    @property
    def size_limits(self) -> SizeLimits:
        """The :class:`~assay.run.SizeLimits` these options set."""
        return SizeLimits(self.max_field_chars, self.max_row_chars)

    @classmethod
    def from_stored(cls, options: Mapping[str, Any]) -> RunOptions:
        """Read a spec's options (keys stored by older versions, such as metric names, are ignored)."""
        return cls.model_validate(dict(options))


@dataclass(frozen=True)
class DatasetSource:
    """A dataset that can be read more than once, with its fingerprint and size.

    Attributes:
        description: The path, or what kind of in-memory data it is.
        fingerprint: ``sha256:<hex>`` of the file's bytes, or of the rows read from
            in-memory data; equal fingerprints mean the same rows.
        n_rows: Rows read (valid and invalid).
        n_valid: Valid rows.
        present: For each sample field, how many valid rows have it.
        path: The file, when the data is one.
    """

    description: str
    fingerprint: str
    n_rows: int
    n_valid: int
    present: Mapping[str, int]
    path: Path | None
    _read: Callable[[Sequence[str]], Iterator[Row | SampleError]]
    ideal: Mapping[str, int] = field(default_factory=dict)
    """Ideal-context column (DeepEval's ``context``...) -> valid rows that have it (kept in metadata)."""
    errors: tuple[SampleError, ...] = ()
    """The first few invalid rows, for errors that must say why rows are missing."""
    notes: Mapping[str, int] = field(default_factory=dict)
    """Row note (a key of :data:`~assay.run._dataset.NOTES`) -> valid rows that have it."""
    columns: Mapping[str, int] = field(default_factory=dict)
    """Column kept as metadata (no sample field) -> valid rows that have it, in the order first seen."""

    def note_messages(self) -> list[str]:
        """What was taken on trust in the data, each said once (``contexts was one string ... in 12 rows``)."""
        return [
            NOTES[key].format(rows=f"{n} row{'s' if n != 1 else ''} of {self.description}")
            for key, n in self.notes.items()
            if key in NOTES
        ]

    def rows(self, required: Sequence[str] = ()) -> Iterator[Row | SampleError]:
        """Read the rows again (a bad row is a :class:`~assay.errors.SampleError`, not a stop)."""
        return self._read(required)

    def check_fields(self, metrics: Sequence[Metric]) -> None:
        """Fail before any judge call when *no* row has a field some metric needs.

        A field missing from only some rows is reported per row (``file:line: what``) and
        the other rows are judged; a field no row has is one clear error, not one per row.
        Every door says it alike (:func:`~assay.evaluate` on a file, a table or a list, and
        ``assay run``), naming the field, the columns read for it, the columns that were
        kept as metadata instead, and how to map one: ``--map COLUMN=FIELD`` on the
        command line, ``mapping={"COLUMN": "FIELD"}`` in Python.

        Raises:
            ConfigError: a metric needs a field that no valid row has.
        """
        from assay.run._dataset import ALIASES, IDEAL_CONTEXT_COLUMNS

        if self.n_valid == 0:
            return
        for metric in metrics:
            missing = [f for f in metric.required_fields if self.present.get(f, 0) == 0]
            if not missing:
                continue
            field_name = missing[0]
            aliases = {v: [k for k, t in ALIASES.items() if t == v] for v in missing}
            names = "; ".join(
                f"'{m}'" + (f" (also read from {', '.join(aliases[m])})" if aliases[m] else "") for m in missing
            )
            ideal = [name for name in IDEAL_CONTEXT_COLUMNS if self.ideal.get(name)]
            if "contexts" in missing and ideal:
                # No row has retrieved contexts, so this mapping takes no row's away from it.
                advice = (
                    f"the column '{ideal[0]}' is {IDEAL_CONTEXT_COLUMNS[ideal[0]]} (what should have been "
                    f"retrieved), kept in metadata and never judged against; add what was retrieved as "
                    f"'retrieval_context' or 'retrieved_contexts', or, if '{ideal[0]}' does hold the retrieved "
                    f"passages, {map_advice(ideal[0], 'contexts')}"
                )
            else:
                others = [name for name in self.columns if name not in IDEAL_CONTEXT_COLUMNS]
                # A column named like the field or one of its aliases ('retrieved_context') is the likely one.
                column = likely_column(field_name, others) or "COLUMN"
                advice = f"add it to the data, or name the column that holds it: {map_advice(column, field_name)}"
                if others:
                    shown = ", ".join(f"'{name}'" for name in others[:_COLUMNS_SHOWN])
                    more = f" and {len(others) - _COLUMNS_SHOWN} more" if len(others) > _COLUMNS_SHOWN else ""
                    advice += f" (columns kept as metadata: {shown}{more})"
            rejected = [e for e in self.errors if any(f"'{f}" in e.detail for f in missing)]
            if rejected:
                shown = "; ".join(str(e) for e in rejected[:3])
                advice += f". Rows that have it were invalid: {shown}"
            raise ConfigError(
                f"metric '{metric.name}' needs {names}, which no valid row of {self.description} has; {advice}"
            )


_COLUMNS_SHOWN = 5


_FINGERPRINT_CHUNK = 1 << 20
_ERRORS_KEPT = 20
_COLUMNS_KEPT = 100  # metadata columns remembered for the advice of check_fields (a wide table stays cheap)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_FINGERPRINT_CHUNK):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def _reader(
    data: Any, mapping: Mapping[str, str], limits: SizeLimits | None = None
) -> tuple[str, Path | None, Callable[..., Iterator[Any]]]:
    """What the data is, its path if any, and a function that reads it (again) as rows."""
    if isinstance(data, str | Path):
        path = Path(data)
        return str(path), path, lambda required: read_dataset(path, required=required, mapping=mapping, limits=limits)
    kind = f"{type(data).__module__}.{type(data).__qualname__}"
    if kind.split(".")[0] == "pandas" and kind.endswith("DataFrame"):
        return (
            "<dataframe>",
            None,
            lambda required: from_dataframe(data, required=required, mapping=mapping, limits=limits),
        )
    if kind.split(".")[0] == "pyarrow" and kind.endswith(("Table", "RecordBatch")):
        return (
            "<arrow table>",
            None,
            lambda required: from_arrow(data, required=required, mapping=mapping, limits=limits),
        )
    if kind.startswith("datasets."):
        return (
            "<dataset>",
            None,
            lambda required: from_hf_dataset(data, required=required, mapping=mapping, limits=limits),
        )
    if isinstance(data, Mapping):
        raise DatasetError("evaluate() takes a list of samples or dicts, a file path, or a table; got one dict")
    if not isinstance(data, Sequence):
        data = list(data)  # a generator is read twice: once to check, once to judge
    items: Sequence[Any] = data
    return (
        f"<{counted(len(items), 'sample')}>",
        None,
        lambda required: rows_from_items(items, required=required, mapping=mapping, limits=limits),
    )


def open_dataset(
    data: Any, *, mapping: Mapping[str, str] | None = None, limits: SizeLimits | None = None
) -> DatasetSource:
    """Check ``data`` in one pass and return a re-readable source with its fingerprint.

    Args:
        data: A file path (JSONL, CSV, Parquet, a JSON array), a pandas DataFrame, a
            Hugging Face ``Dataset``, or a sequence of :class:`~assay.Sample` objects or
            dicts (a generator is read into a list).
        mapping: Column renames (``{"my_answer": "answer"}``).
        limits: The text a field and a row may hold (default :class:`~assay.run.SizeLimits`);
            a row above either is a row error, found here, before any judge call.

    Raises:
        DatasetError: the data cannot be read (a missing path, a directory), or holds no
            row at all.
    """
    mapping = dict(mapping or {})
    description, path, read = _reader(data, mapping, limits)
    from assay.run._dataset import IDEAL_CONTEXT_COLUMNS

    digest = hashlib.sha256()
    n_rows = n_valid = 0
    present: dict[str, int] = {}
    ideal: dict[str, int] = {}
    errors: list[SampleError] = []
    notes: dict[str, int] = {}
    columns: dict[str, int] = {}
    for item in read(()):
        n_rows += 1
        if isinstance(item, SampleError) and len(errors) < _ERRORS_KEPT:
            errors.append(item)
        if isinstance(item, Row):
            n_valid += 1
            for note in item.notes:
                notes[note] = notes.get(note, 0) + 1
            for name in Sample.model_fields:
                if item.sample.field_present(name):
                    present[name] = present.get(name, 0) + 1
            for name in IDEAL_CONTEXT_COLUMNS:
                if item.sample.metadata.get(name):
                    ideal[name] = ideal.get(name, 0) + 1
            for name in item.sample.metadata:
                if len(columns) < _COLUMNS_KEPT or name in columns:
                    columns[name] = columns.get(name, 0) + 1
            if path is None:
                # ASCII JSON: text that is not valid Unicode (a lone surrogate) still hashes.
                digest.update(json.dumps(item.sample.model_dump(mode="json"), sort_keys=True).encode() + b"\n")
        elif path is None:
            digest.update(str(item).encode("utf-8", "surrogatepass") + b"\n")
    if n_rows == 0:
        raise DatasetError(f"{description}: holds no rows; nothing to evaluate")
    fingerprint = _file_sha256(path) if path is not None else f"sha256:{digest.hexdigest()}"
    return DatasetSource(
        description, fingerprint, n_rows, n_valid, present, path, read, ideal, tuple(errors), notes, columns
    )


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
    differences = _differences(stored, given)
    if differences:
        raise ResumeError(
            f"cannot resume run {run} with other options than it was started with ({'; '.join(differences)}). "
            "Resume with the run's own options, or start a new run."
        )
