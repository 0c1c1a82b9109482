"""The run store: every run's spec and every sample's result, committed as it finishes.

SQLite, one file per project directory (``.assay/runs.sqlite`` by default). The schema
carries a version (``meta.schema_version``); a reader refuses a newer version and
upgrades older ones explicitly. A killed run keeps every sample it finished, and
``assay run --resume RUN_ID`` continues it without judging those samples again.

API keys never reach the store: a run spec records the judge string and base URL only.

Tables::

    meta(key, value)                                  schema_version
    runs(run_id, created_at, updated_at, status, spec, summary, written)   summary: annotations (scores: computed)
    results(run_id, row_key, repeat, line, sample_id, record, finished_at)
    row_errors(run_id, line, message)
    calibrations(metric, judge_identity, created_at, record)   a user's measured agreement (schema 2)

Schema 2 added the judge's exact record to a run's spec (:attr:`RunSpec.judge_record`:
weights, layout, build, prompt versions) and the ``calibrations`` table. A spec written by
schema 1 has no judge record: it is read as it is (``judge_record`` is ``None``, shown as
"not recorded"), and such a run cannot be resumed, since the judge that finished it could
not be shown to be the one that started it.

Schema 3 (this one) added ``runs.written``: the store's write counter when the run was
last written (created, a result or invalid row committed, its status changed, an
annotation kept). "The latest run" (:meth:`RunStore.latest`, ``--latest``) is the run
written last, so a run resumed after another was made is the latest once it writes again;
it used to be the run created last, and ``assay gate --latest`` gated the other run. The
counter is a number, not a time: ``updated_at`` has one-second resolution, and a clock can
step back. A schema 2 store is upgraded in place: its runs are numbered in the order of
their last write as it recorded them (the later of ``updated_at`` and the run's last
``results.finished_at``), runs written within one second in the order they were created.
"""

from __future__ import annotations

import contextlib
import csv
import json
import re
import secrets
import sqlite3
import threading
from collections.abc import Collection, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay._scores import ERROR_REASONS, MetricSpec
from assay._sqlite import open_sqlite, storage_error
from assay.errors import SampleError, StorageError
from assay.models._endpoint import canonical_identity
from assay.run._cost import PriceTable
from assay.run._frames import score_value, wide_rows
from assay.run._judge_record import JudgeRecord
from assay.run._results import SampleResult
from assay.run._summary import RunSummary, summarize_results

if TYPE_CHECKING:
    import pandas as pd

    from assay.analysis import RunCoverage

__all__ = ["SCHEMA_VERSION", "RunInfo", "RunSpec", "RunStatus", "RunStore", "new_run_id"]

SCHEMA_VERSION = 3
RunStatus = Literal["running", "finished", "interrupted", "failed"]


def new_run_id() -> str:
    """A sortable, unique run id: ``YYYYMMDD-HHMMSS-xxxx``."""
    return f"{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


class RunSpec(BaseModel):
    """Everything needed to understand, resume and re-score a run (never a secret)."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = SCHEMA_VERSION
    run_id: str
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    dataset: str | None = None
    dataset_fingerprint: str | None = None
    n_rows: int | None = None
    """Rows the input held when the run started, valid and invalid: what a finished run judged or
    reported invalid, so a gate can say how many an interrupted run never judged (``None``: not
    recorded, by runs stored before it was)."""
    judge: str
    judge_model: str
    judge_record: JudgeRecord | None = None
    """The judge exactly (identity, weights and layout, build, prompt versions); ``None`` in specs
    of schema 1 and of runs that judged nothing themselves."""
    base_url: str | None = None
    metrics: tuple[MetricSpec, ...] = ()
    options: dict[str, Any] = Field(default_factory=dict)
    engine: str = "local"
    assay_version: str = ""

    @property
    def cascade_plans(self) -> dict[str, Any]:
        """Metric name -> its escalation plan as stored, for the metrics the run escalated (else empty)."""
        return self.options.get("cascade") or {}


class RunInfo(BaseModel):
    """One line of ``assay runs list``.

    ``summary`` is :meth:`RunSummary.to_json` computed from the run's stored records when
    the info is read (never a copy written at some earlier point), or ``None`` when the
    run has no result yet.
    """

    run_id: str
    created_at: str
    updated_at: str
    status: str
    n_results: int
    n_errors: int
    spec: RunSpec
    summary: dict[str, Any] | None
    n_samples: int = 0
    """Samples (input rows) with a result: ``n_results`` counts (sample, repeat) results."""

    @property
    def n_repeats(self) -> int:
        """Results per sample (1 for a single run; the most any sample has)."""
        return max(1, round(self.n_results / self.n_samples)) if self.n_samples else 1

    def coverage(self, invalid_lines: Sequence[int] = (), invalid_messages: Sequence[str] = ()) -> RunCoverage:
        """How much of the run's input was judged, for a gate (the invalid rows' lines and messages).

        A pytest session has no lines: its invalid rows are named by the tests that made
        them, read from their messages (the plugin's ``TEST: invalid sample: ...``).
        """
        from assay.analysis import RunCoverage

        tests: tuple[str, ...] = ()
        if self.spec.engine == "pytest":
            found = (_PYTEST_INVALID.match(message) for message in invalid_messages)
            tests = tuple(dict.fromkeys(match.group(1) for match in found if match is not None))
        return RunCoverage(
            run_id=self.run_id,
            status=self.status,
            n_judged=self.n_samples,
            n_rows=self.spec.n_rows,
            n_invalid=self.n_errors,
            invalid_lines=tuple(invalid_lines),
            resumable=self.spec.engine != "pytest",
            invalid_tests=tests,
        )


_PYTEST_INVALID = re.compile(r"^line \d+: (.+?): invalid sample: ")
"""A pytest session's invalid row: ``line N: TEST: invalid sample: ...`` (:mod:`assay.pytest_plugin`)."""


_DDL = [
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY, created_at TEXT, updated_at TEXT, status TEXT, spec TEXT, summary TEXT,
        written INTEGER)""",
    """CREATE TABLE IF NOT EXISTS results (
        run_id TEXT, row_key TEXT, repeat INTEGER, line INTEGER, sample_id TEXT, record TEXT,
        finished_at TEXT, PRIMARY KEY (run_id, row_key, repeat))""",
    "CREATE TABLE IF NOT EXISTS row_errors (run_id TEXT, line INTEGER, message TEXT, PRIMARY KEY (run_id, line))",
    """CREATE TABLE IF NOT EXISTS calibrations (
        metric TEXT, judge_identity TEXT, created_at TEXT, record TEXT)""",
]


def _migrate(db: sqlite3.Connection, found: int) -> None:
    """Inside the opener's schema transaction: bring a store of schema ``found`` to this one.

    0 is a new file, or one from before ``PRAGMA user_version`` was kept (it has the
    ``meta`` row); each step below reads what the file holds rather than trusting ``found``.

    - Schema 1 to 2: the ``calibrations`` table (made by the DDL); specs stay as written
      and are read with ``judge_record=None``.
    - Schema 2 to 3: the ``runs.written`` column, numbered from what the file recorded of
      each run's last write (see the module docstring).

    Raises:
        StoreError: the ``meta`` row says a newer assay wrote the file (nothing is changed).
    """
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is not None and int(row[0]) > SCHEMA_VERSION:  # a newer writer that kept only meta
        raise StoreError(
            f"the run store was written by a newer assay (schema {row[0]}, this one reads up to "
            f"{SCHEMA_VERSION}); upgrade assay to read it"
        )
    columns = {str(column[1]) for column in db.execute("PRAGMA table_info(runs)")}
    if "written" not in columns:
        db.execute("ALTER TABLE runs ADD COLUMN written INTEGER")
    db.execute(
        """UPDATE runs SET written = (
               SELECT n FROM (
                   SELECT run_id, ROW_NUMBER() OVER (ORDER BY last, created) AS n FROM (
                       SELECT r.run_id, r.rowid AS created,
                              MAX(COALESCE(r.updated_at, ''),
                                  COALESCE((SELECT MAX(s.finished_at) FROM results s WHERE s.run_id = r.run_id), ''))
                              AS last
                       FROM runs r)) AS ordered
               WHERE ordered.run_id = runs.run_id)
           WHERE written IS NULL"""
    )
    db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))


_NEXT_WRITE = "(SELECT COALESCE(MAX(written), 0) + 1 FROM runs)"
"""The store's next write number: one statement reads and sets it, under SQLite's write lock (any process)."""


_LATEST_FIRST = "written DESC, rowid DESC"
"""Runs in the order of their last write, the latest first (one order for ``latest()`` and ``runs()``)."""


class StoreError(StorageError):
    """The run store cannot be used (unknown run, newer schema)."""


def _holds_error(record: str) -> bool:
    """Whether a stored record has a score unscored for an error (:data:`~assay._scores.ERROR_REASONS`)."""
    scores = json.loads(record).get("scores") or {}
    return any(score.get("unscored_reason") in ERROR_REASONS for score in scores.values())


class RunStore:
    """A SQLite file of runs. Safe to share between the threads of one process."""

    def __init__(self, path: str | Path = ".assay/runs.sqlite") -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = open_sqlite(self.path, what="the run store", version=SCHEMA_VERSION, schema=_DDL, migrate=_migrate)
        row = self._execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is not None and int(row[0]) > SCHEMA_VERSION:  # a newer writer that kept only meta
            self._db.close()
            raise StoreError(
                f"{self.path} was written by a newer assay (schema {row[0]}, this one reads up to "
                f"{SCHEMA_VERSION}); upgrade assay to read it"
            )

    def _execute(self, sql: str, params: Sequence[object] = ()) -> sqlite3.Cursor:
        """Run one statement; a SQLite failure (full disk, lock held too long) names the store and the cause."""
        try:
            return self._db.execute(sql, params)
        except sqlite3.Error as exc:
            doing = "read" if sql.lstrip().upper().startswith("SELECT") else "write to"
            raise storage_error(exc, self.path, "the run store", doing) from None

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _now(self) -> str:
        return datetime.now(UTC).isoformat(timespec="seconds")

    @contextlib.contextmanager
    def _writing(self, run_id: str) -> Iterator[None]:
        """Writes to a run's rows and the run marked as written last, in one transaction (lock held)."""
        self._execute("BEGIN IMMEDIATE")
        try:
            yield
            self._execute(
                f"UPDATE runs SET updated_at = ?, written = {_NEXT_WRITE} WHERE run_id = ?", (self._now(), run_id)
            )
            self._execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    def _written(self, run_id: str, sql: str, params: Sequence[object]) -> None:
        """One write to a run's rows, and the run marked as written last, in one transaction (lock held)."""
        with self._writing(run_id):
            self._execute(sql, params)

    def create(self, spec: RunSpec) -> None:
        """Register a new run as ``running`` (the latest run, until another is written)."""
        with self._lock:
            self._execute(
                f"INSERT INTO runs VALUES (?, ?, ?, 'running', ?, NULL, {_NEXT_WRITE})",
                (spec.run_id, spec.created_at, self._now(), spec.model_dump_json()),
            )

    def spec(self, run_id: str) -> RunSpec:
        """The spec of ``run_id``.

        Raises:
            StoreError: no such run.
        """
        with self._lock:
            row = self._execute("SELECT spec FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id!r} in {self.path}; see 'assay runs list'")
        return RunSpec.model_validate_json(row[0])

    def add_calibration(self, metric: str, judge_identity: str, record: dict[str, Any]) -> None:
        """Keep a measured agreement of ``metric`` judged by the judge whose cache identity is ``judge_identity``."""
        with self._lock:
            self._execute(
                "INSERT INTO calibrations VALUES (?, ?, ?, ?)",
                (metric, canonical_identity(judge_identity), self._now(), json.dumps(record, sort_keys=True)),
            )

    def calibrations(self, metric: str, judge_identity: str) -> list[dict[str, Any]]:
        """The agreements kept for ``metric`` and that judge, newest first.

        Identities are compared as :func:`~assay.models._endpoint.canonical_identity` spells
        them, so a calibration stored under ``127.0.0.1`` before endpoints were spelled one
        way is found under ``localhost``.
        """
        wanted = canonical_identity(judge_identity)
        with self._lock:
            rows = self._execute(
                "SELECT judge_identity, record FROM calibrations WHERE metric = ? ORDER BY rowid DESC", (metric,)
            ).fetchall()
        return [json.loads(row[1]) for row in rows if canonical_identity(row[0]) == wanted]

    def record(self, run_id: str, result: SampleResult, *, row_key: str | None = None, repeat: int = 0) -> None:
        """Commit one sample's result (replacing an earlier one with the same key).

        Raises:
            StoreError: the result holds text SQLite cannot store (a lone surrogate); the
                caller reports the row, and nothing is written.
        """
        key = row_key if row_key is not None else str(result.line)
        record = json.dumps(result.to_record(), ensure_ascii=False)
        try:
            record.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise StoreError(
                f"cannot store the result: its text is not valid Unicode ({exc.reason} at character {exc.start})"
            ) from None
        with self._lock:
            self._written(
                run_id,
                "INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run_id, key, repeat, result.line, result.sample.id, record, self._now()),
            )

    def keyed_results(
        self, run_id: str, *, lines: Collection[int] | None = None, holding: str | None = None
    ) -> Iterator[tuple[str, SampleResult]]:
        """Each stored result with its row key (what :meth:`replace_results` takes), in input order.

        ``lines``: only the results of those input lines. ``holding``: only records whose
        text holds that string (a cheap filter before parsing; the caller still checks each
        result it reads).
        """
        self.spec(run_id)
        sql = "SELECT row_key, record, repeat FROM results WHERE run_id = ?"
        params: list[object] = [run_id]
        if lines is not None:
            wanted = sorted(set(lines))
            sql += f" AND line IN ({', '.join('?' * len(wanted))})"
            params.extend(wanted)
        if holding is not None:
            sql += " AND instr(record, ?) > 0"
            params.append(holding)
        with self._lock:
            rows = self._execute(sql + " ORDER BY line, repeat", params).fetchall()
        for key, record, repeat in rows:
            data = json.loads(record)
            data["repeat"] = repeat
            yield str(key), SampleResult.from_record(data)

    def replace_results(self, run_id: str, results: Sequence[tuple[str, SampleResult]]) -> None:
        """Replace stored results (row key, result) of ``run_id`` all together, in one transaction.

        Every result must already be stored under its key and repeat (a review changes
        results, it never adds one); if one is not, or a write fails, none is replaced.

        Raises:
            StoreError: a result is not stored for the run, or holds text SQLite cannot store.
        """
        rows = []
        for key, result in results:
            record = json.dumps(result.to_record(), ensure_ascii=False)
            try:
                record.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise StoreError(
                    f"cannot store the result of line {result.line}: its text is not valid Unicode"
                ) from exc
            rows.append((record, self._now(), run_id, key, result.repeat))
        with self._lock, self._writing(run_id):
            for row in rows:
                cursor = self._execute(
                    "UPDATE results SET record = ?, finished_at = ? WHERE run_id = ? AND row_key = ? AND repeat = ?",
                    row,
                )
                if cursor.rowcount != 1:
                    raise StoreError(f"run {run_id!r} has no result {row[3]!r} (repeat {row[4]}) to replace")

    def record_error(self, run_id: str, error: SampleError) -> None:
        """Keep an invalid input row's message with its line."""
        with self._lock:
            self._written(
                run_id, "INSERT OR REPLACE INTO row_errors VALUES (?, ?, ?)", (run_id, error.line or 0, str(error))
            )

    def finished(self, run_id: str) -> set[tuple[str, int]]:
        """(row key, repeat) of every sample committed for ``run_id`` that a resume need not judge again.

        A result holding an error (:data:`~assay.ERROR_REASONS`: the judge could not be
        asked, or assay raised) is no verdict: it is left out, so a resume judges it again
        and replaces it.
        """
        with self._lock:
            rows = self._execute("SELECT row_key, repeat, record FROM results WHERE run_id = ?", (run_id,)).fetchall()
        return {(str(k), int(r)) for k, r, record in rows if not _holds_error(record)}

    def set_status(self, run_id: str, status: RunStatus) -> None:
        """Mark the run's status (its summary is always computed from its records)."""
        with self._lock:
            self._execute(
                f"UPDATE runs SET status = ?, updated_at = ?, written = {_NEXT_WRITE} WHERE run_id = ?",
                (status, self._now(), run_id),
            )

    def mark_interrupted(self, run_id: str) -> None:
        """Mark ``run_id`` interrupted if it is still ``running`` (a finished or failed run keeps its status)."""
        with self._lock:
            self._execute(
                f"UPDATE runs SET status = 'interrupted', updated_at = ?, written = {_NEXT_WRITE} "
                "WHERE run_id = ? AND status = 'running'",
                (self._now(), run_id),
            )

    def annotate(self, run_id: str, key: str, data: Any) -> None:
        """Keep an analysis of the run that its records alone do not give (e.g. calibration statistics).

        Stored under ``key`` (which must start with ``_``) and merged into
        :attr:`RunInfo.summary`; the per-metric summaries are never stored, always computed.
        """
        if not key.startswith("_"):
            raise StoreError(f"annotation keys start with '_' (metric summaries are computed), got {key!r}")
        with self._lock:
            row = self._execute("SELECT summary FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise StoreError(f"no run {run_id!r} in {self.path}; see 'assay runs list'")
            notes = self._annotations(row[0])
            notes[key] = data
            self._written(run_id, "UPDATE runs SET summary = ? WHERE run_id = ?", (json.dumps(notes), run_id))

    def add_unstored_calls(self, run_id: str, n: int) -> None:
        """Count ``n`` judge calls made for samples an interrupt stopped (they are in no record).

        Kept as the ``_unstored_calls`` annotation, summed over the run's interruptions, so
        ``assay runs show`` says what the stored records' cost leaves out.
        """
        with self._lock:
            row = self._execute("SELECT summary FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        before = self._annotations(row[0] if row else None).get("_unstored_calls", 0)
        self.annotate(run_id, "_unstored_calls", int(before) + n)

    @staticmethod
    def _annotations(stored: str | None) -> dict[str, Any]:
        """The ``_``-keys of the stored summary column (anything else there predates computed summaries)."""
        data = json.loads(stored) if stored else {}
        return {k: v for k, v in data.items() if k.startswith("_") and k not in ("_cost", "_counts")}

    def _summary_json(self, run_id: str, n_results: int, stored: str | None) -> dict[str, Any] | None:
        notes = self._annotations(stored)
        if not n_results and not notes:
            return None
        computed = self.summary(run_id).to_json() if n_results else {}
        return {**computed, **notes}

    def latest(self) -> str:
        """The id of the run written last (``--latest`` in every command): the first of :meth:`runs`.

        Written, not created: a run resumed after another run was made is the latest once
        it commits a result or its status again (see the module docstring).

        Raises:
            StoreError: the store holds no run.
        """
        with self._lock:
            row = self._execute(f"SELECT run_id FROM runs ORDER BY {_LATEST_FIRST} LIMIT 1").fetchone()
        if row is None:
            raise StoreError(f"no run in {self.path} yet; 'assay run' creates one")
        return str(row[0])

    def results(self, run_id: str) -> Iterator[SampleResult]:
        """Each stored result as a :class:`~assay.run.SampleResult`, in input order."""
        for record in self.records(run_id):
            yield SampleResult.from_record(record)

    def summary(self, run_id: str, prices: PriceTable | None = None) -> RunSummary:
        """The run's :class:`~assay.run.RunSummary`, computed from every stored record."""
        spec = self.spec(run_id)
        names = [m.name for m in spec.metrics]
        errors = [message for _, message in self.row_errors(run_id)]
        return summarize_results(self.results(run_id), names, row_errors=errors, prices=prices)

    def runs(self) -> list[RunInfo]:
        """Every run, the one written last first (:meth:`latest` is the first)."""
        with self._lock:
            rows = self._execute(
                f"""SELECT r.run_id, r.created_at, r.updated_at, r.status, r.spec, r.summary,
                   (SELECT COUNT(*) FROM results s WHERE s.run_id = r.run_id),
                   (SELECT COUNT(*) FROM row_errors e WHERE e.run_id = r.run_id),
                   (SELECT COUNT(DISTINCT row_key) FROM results s WHERE s.run_id = r.run_id)
                   FROM runs r ORDER BY {_LATEST_FIRST}"""
            ).fetchall()
        return [
            RunInfo(
                run_id=r[0],
                created_at=r[1],
                updated_at=r[2],
                status=r[3],
                spec=RunSpec.model_validate_json(r[4]),
                summary=self._summary_json(r[0], r[6], r[5]),
                n_results=r[6],
                n_errors=r[7],
                n_samples=r[8],
            )
            for r in rows
        ]

    def info(self, run_id: str) -> RunInfo:
        """One run's :class:`RunInfo`."""
        spec = self.spec(run_id)
        with self._lock:
            created, updated, status, stored = self._execute(
                "SELECT created_at, updated_at, status, summary FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            n_results = self._execute("SELECT COUNT(*) FROM results WHERE run_id = ?", (run_id,)).fetchone()[0]
            n_samples = self._execute(
                "SELECT COUNT(DISTINCT row_key) FROM results WHERE run_id = ?", (run_id,)
            ).fetchone()[0]
            n_errors = self._execute("SELECT COUNT(*) FROM row_errors WHERE run_id = ?", (run_id,)).fetchone()[0]
        return RunInfo(
            run_id=run_id,
            created_at=created,
            updated_at=updated,
            status=status,
            spec=spec,
            summary=self._summary_json(run_id, n_results, stored),
            n_results=n_results,
            n_errors=n_errors,
            n_samples=n_samples,
        )

    def records(self, run_id: str) -> Iterator[dict[str, Any]]:
        """Each stored sample record (as written by ``SampleResult.to_record``), in input order."""
        self.spec(run_id)
        with self._lock:
            rows = self._execute(
                "SELECT record, repeat FROM results WHERE run_id = ? ORDER BY line, repeat", (run_id,)
            ).fetchall()
        for record, repeat in rows:
            data = json.loads(record)
            data["repeat"] = repeat
            yield data

    def row_errors(self, run_id: str) -> list[tuple[int, str]]:
        """(line, message) of each invalid input row of the run."""
        with self._lock:
            return [
                (int(line), str(msg))
                for line, msg in self._execute(
                    "SELECT line, message FROM row_errors WHERE run_id = ? ORDER BY line", (run_id,)
                )
            ]

    def coverage(self, run_id: str) -> RunCoverage:
        """How much of the run's input was judged: its status, rows judged, rows in the input, invalid rows.

        Every gate on a stored run takes it (:func:`assay.analysis.evaluate_gate`): a run that
        is not finished, or has invalid rows, is not passed unless the gate allows it.
        """
        errors = self.row_errors(run_id)
        return self.info(run_id).coverage([line for line, _ in errors], [message for _, message in errors])

    def flat_rows(self, run_id: str) -> Iterator[dict[str, Any]]:
        """One flat row per (sample, repeat, metric): for CSV and DataFrames (the *long* frame)."""
        for record in self.records(run_id):
            sample = record.get("sample") or {}
            for metric, score in record["scores"].items():
                failing = [v["subject"] for v in score.get("verdicts", ()) if v["value"] in (0, "FAIL")]
                yield {
                    "run_id": run_id,
                    "id": record["id"],
                    "line": record["line"],
                    "repeat": record["repeat"],
                    "question": sample.get("question"),
                    "answer": sample.get("answer"),
                    "metric": metric,
                    "value": score_value(score),  # unscored: empty, as in the wide frame (CSV wrote "nan")
                    "unscored_reason": score.get("unscored_reason"),
                    "n_verdicts": len(score.get("verdicts", ())),
                    "failing": " | ".join(failing),
                    "explanation": score.get("explanation") or score.get("detail"),
                    "judge_calls": len(score.get("calls", ())),
                    "prompt_tokens": sum(c["usage"]["prompt_tokens"] for c in score.get("calls", ())),
                    "completion_tokens": sum(c["usage"]["completion_tokens"] for c in score.get("calls", ())),
                }

    def wide_rows(self, run_id: str) -> Iterator[dict[str, Any]]:
        """One row per (sample, repeat), a value, reason and unscored column per metric (the *wide* frame).

        In input order; see :func:`assay.run._frames.wide_rows` for the columns.
        """
        return wide_rows(self.records(run_id), [m.name for m in self.spec(run_id).metrics])

    def export(self, run_id: str, out: IO[str], fmt: Literal["jsonl", "csv"] = "jsonl", *, wide: bool = False) -> int:
        """Write the run's results to ``out``; return how many rows were written.

        ``jsonl``: the full records. ``csv``: one row per (sample, repeat, metric), or with
        ``wide=True`` one row per (sample, repeat) and a column per metric.
        """
        n = 0
        if fmt == "jsonl" and not wide:
            for record in self.records(run_id):
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                n += 1
            return n
        rows = self.wide_rows(run_id) if wide else self.flat_rows(run_id)
        if fmt == "jsonl":
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
            return n
        writer: csv.DictWriter[str] | None = None
        for row in rows:
            if writer is None:
                writer = csv.DictWriter(out, fieldnames=list(row))
                writer.writeheader()
            writer.writerow(row)
            n += 1
        return n

    def to_pandas(self, run_id: str, *, wide: bool = False) -> pd.DataFrame:
        """The run as a DataFrame (needs pandas), in input order.

        One row per (sample, repeat, metric), or with ``wide=True`` one row per (sample,
        repeat) and a column per metric.
        """
        try:
            import pandas as pd
        except ImportError as exc:
            from assay.errors import MissingExtraError

            raise MissingExtraError("pandas", "pandas", "RunStore.to_pandas()") from exc
        return pd.DataFrame(list(self.wide_rows(run_id) if wide else self.flat_rows(run_id)))
