"""``--latest`` is the run written last, in every door (issue 63).

Run A is interrupted, run B is made, A is resumed and finishes: ``assay gate --latest``
gated B (it printed B's id on stderr, and exited with B's verdict), because "latest" was
the run created last. The latest run is now the one whose last write (a result, an
invalid row, a status) came last: ``RunStore.latest()``, the first of ``RunStore.runs()``,
``assay gate --latest``, ``assay report --latest``, the first row of ``assay runs list``
and of ``assay browse``'s index. The runs are made by the runner itself (evaluate,
resume, a FunctionJudge, the real store).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay import Faithfulness, Sample, aevaluate, evaluate
from assay.cli import app
from assay.errors import SampleError
from assay.models import FunctionJudge
from assay.models._protocol import ChatMessage
from assay.report import write_browser
from assay.run import SCHEMA_VERSION, RunSpec, RunStore, SampleResult
from interrupting import cancel_after

SENTENCES = Faithfulness(strategy="batch", decomposer="sentences")
SKY = "The sky is blue."


def _answer(messages: Sequence[ChatMessage], value: int) -> str:
    """Every statement of the request judged ``value`` (1 supported, 0 not)."""
    items = messages[-1]["content"].split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    said = [{"statement": i.split("] ", 1)[1], "reason": "as told", "verdict": value} for i in items]
    return json.dumps({"verdicts": said})


def verdicts(value: int) -> FunctionJudge:
    """A judge that calls every statement supported (1) or unsupported (0)."""
    return FunctionJudge(lambda messages, request: _answer(messages, value))


def data(path: Path, n: int) -> Path:
    rows = [{"id": f"r{i}", "question": "Colour?", "answer": SKY, "contexts": [SKY]} for i in range(n)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def run_ids(store: Path) -> set[str]:
    if not store.exists():
        return set()
    with RunStore(store) as opened:
        return {info.run_id for info in opened.runs()}


def interrupted(store: Path, path: Path, keep: int = 2) -> str:
    """A run of ``path`` cancelled after ``keep`` rows were judged (what Ctrl-C does); its id."""
    before = run_ids(store)
    cancel_after(
        keep,
        lambda messages, request: _answer(messages, 1),
        lambda slow: aevaluate(path, SENTENCES, FunctionJudge(slow, concurrency=1), store=store, progress=False),
    )
    (run_id,) = run_ids(store) - before
    with RunStore(store) as opened:
        assert opened.info(run_id).status == "interrupted"
    return run_id


def finished(store: Path, path: Path, value: int, resume: str | None = None) -> str:
    result = evaluate(path, SENTENCES, verdicts(value), store=store, resume=resume, progress=False)
    assert result.run_id is not None
    return result.run_id


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def resumed_after_another(tmp_path: Path) -> tuple[Path, str, str]:
    """A (passes when whole) interrupted, B (fails) made and finished, then A resumed to the end."""
    store = tmp_path / "runs.sqlite"
    a_data, b_data = data(tmp_path / "a.jsonl", 6), data(tmp_path / "b.jsonl", 3)
    a = interrupted(store, a_data)
    b = finished(store, b_data, 0)
    assert finished(store, a_data, 1, resume=a) == a
    with RunStore(store) as opened:
        assert (opened.info(a).status, opened.info(a).n_samples) == ("finished", 6)
    return store, a, b


def test_gate_latest_gates_the_run_resumed_last_not_the_run_created_last(
    resumed_after_another: tuple[Path, str, str],
) -> None:
    store, a, b = resumed_after_another
    code, out, err = cli("gate", "--latest", "--store", str(store))
    assert code == 0, out + err  # A's verdict: every statement supported (B's would be 1, a fail)
    assert f"gating the latest run in {store}: {a}" in " ".join(err.split())
    assert f"run {a}" in out and b not in out
    code, out, err = cli("gate", b, "--store", str(store))
    assert code == 1, out + err  # B itself still fails: the order changed, not the runs


def test_every_door_that_names_the_latest_run_names_the_same_one(
    resumed_after_another: tuple[Path, str, str], tmp_path: Path
) -> None:
    store, a, b = resumed_after_another
    with RunStore(store) as opened:  # the Python API
        assert opened.latest() == a
        assert [info.run_id for info in opened.runs()] == [a, b]
    code, out, err = cli("report", "--latest", "--store", str(store), "--out", str(tmp_path / "r.html"))
    assert code == 0, out + err
    assert f"reporting the latest run in {store}: {a}" in " ".join(err.split())
    assert a in (tmp_path / "r.html").read_text()
    code, out, err = cli("runs", "list", "--store", str(store))
    assert code == 0, out + err
    assert out.index(a) < out.index(b), out  # the first row is the run --latest picks
    index = write_browser(store, tmp_path / "browse", reports=False)
    assert [entry.info.run_id for entry in index.runs] == [a, b]


def spec(run_id: str) -> RunSpec:
    return RunSpec(run_id=run_id, judge="function", judge_model="function", metrics=(SENTENCES.spec(),))


def result(line: int) -> SampleResult:
    (scored,) = evaluate([Sample(id=f"s{line}", answer=SKY, contexts=(SKY,))], SENTENCES, verdicts(1)).results
    return SampleResult(scored.sample, scored.scores, line, 0)


# Each ordering: what is written, in order, and which run is then the latest. Writes are
# (run, what): create, record, error, running, interrupted, finished, annotate.
ORDERINGS = {
    "created last, nothing after": ([("A", "create"), ("B", "create")], "B"),
    "interrupted, another made, not resumed": (
        [("A", "create"), ("A", "record"), ("A", "interrupted"), ("B", "create"), ("B", "finished")],
        "B",
    ),
    "resumed and still running": (
        [("A", "create"), ("A", "interrupted"), ("B", "create"), ("B", "finished"), ("A", "running"), ("A", "record")],
        "A",
    ),
    "resumed and finished": (
        [
            ("A", "create"),
            ("A", "interrupted"),
            ("B", "create"),
            ("B", "finished"),
            ("A", "running"),
            ("A", "record"),
            ("A", "finished"),
        ],
        "A",
    ),
    "both interrupted, the first resumed": (
        [
            ("A", "create"),
            ("A", "interrupted"),
            ("B", "create"),
            ("B", "interrupted"),
            ("A", "running"),
            ("A", "finished"),
        ],
        "A",
    ),
    "both resumed, the second last": (
        [
            ("A", "create"),
            ("A", "interrupted"),
            ("B", "create"),
            ("B", "interrupted"),
            ("A", "running"),
            ("A", "finished"),
            ("B", "running"),
            ("B", "finished"),
        ],
        "B",
    ),
    "resumed, killed before its status was written": (  # SIGKILL: results committed, no status after them
        [("A", "create"), ("A", "interrupted"), ("B", "create"), ("B", "finished"), ("A", "record")],
        "A",
    ),
    "an invalid row is a write": ([("A", "create"), ("B", "create"), ("A", "error")], "A"),
    "an annotation is a write": ([("A", "create"), ("B", "create"), ("A", "annotate")], "A"),
    "marking a finished run interrupted writes nothing": (
        [("A", "create"), ("A", "finished"), ("B", "create"), ("A", "mark_interrupted")],
        "B",
    ),
}


@pytest.mark.parametrize("name", list(ORDERINGS))
def test_the_latest_run_is_the_one_written_last(tmp_path: Path, name: str) -> None:
    writes, latest = ORDERINGS[name]
    with RunStore(tmp_path / "runs.sqlite") as store:
        for line, (run, what) in enumerate(writes, start=1):
            if what == "create":
                store.create(spec(run))
            elif what == "record":
                store.record(run, result(line))
            elif what == "error":
                store.record_error(run, SampleError("no answer", line=line))
            elif what == "annotate":
                store.annotate(run, "_note", line)
            elif what == "mark_interrupted":
                store.mark_interrupted(run)
            else:
                store.set_status(run, what)  # type: ignore[arg-type]
        assert store.latest() == latest, name
        assert store.runs()[0].run_id == latest, name


# --- a store written before runs recorded their last write (schema 2) ---------------------

_SCHEMA_2 = [
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE runs (run_id TEXT PRIMARY KEY, created_at TEXT, updated_at TEXT, status TEXT, spec TEXT, "
    "summary TEXT)",
    "CREATE TABLE results (run_id TEXT, row_key TEXT, repeat INTEGER, line INTEGER, sample_id TEXT, record TEXT, "
    "finished_at TEXT, PRIMARY KEY (run_id, row_key, repeat))",
    "CREATE TABLE row_errors (run_id TEXT, line INTEGER, message TEXT, PRIMARY KEY (run_id, line))",
    "CREATE TABLE calibrations (metric TEXT, judge_identity TEXT, created_at TEXT, record TEXT)",
    "INSERT INTO meta VALUES ('schema_version', '2')",
    "PRAGMA user_version = 2",
]


def schema_2_store(path: Path, runs: Sequence[tuple[str, str, str | None]]) -> None:
    """A store as assay 0.x wrote it at schema 2: per run (id, updated_at, its last result's finished_at)."""
    record = json.dumps(result(1).to_record())
    with sqlite3.connect(path) as db:
        for statement in _SCHEMA_2:
            db.execute(statement)
        for run_id, updated, last_result in runs:
            db.execute("INSERT INTO runs VALUES (?, ?, ?, 'finished', ?, NULL)",
                       (run_id, "2026-01-01T00:00:00+00:00", updated, spec(run_id).model_dump_json()))  # fmt: skip
            if last_result is not None:
                db.execute("INSERT INTO results VALUES (?, '1', 0, 1, 's1', ?, ?)", (run_id, record, last_result))


def test_a_schema_2_store_is_upgraded_and_its_runs_ordered_by_the_last_write_it_recorded(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    schema_2_store(path, [
        ("resumed", "2026-01-01T00:05:00+00:00", "2026-01-01T00:04:59+00:00"),  # created first, finished last
        ("made-between", "2026-01-01T00:03:00+00:00", "2026-01-01T00:02:00+00:00"),
        ("killed", "2026-01-01T00:01:00+00:00", "2026-01-01T00:04:00+00:00"),  # results after its status
        ("same-second-1", "2026-01-01T00:00:30+00:00", None),
        ("same-second-2", "2026-01-01T00:00:30+00:00", None),  # a tie: the order of creation
    ])  # fmt: skip
    with RunStore(path) as store:
        assert [info.run_id for info in store.runs()] == [
            "resumed", "killed", "made-between", "same-second-2", "same-second-1",
        ]  # fmt: skip
        assert store.latest() == "resumed"
        assert store.info("killed").n_results == 1  # the records are read as they were
        store.set_status("same-second-1", "finished")  # a write after the upgrade counts as any other
        assert store.latest() == "same-second-1"
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "3"
        assert db.execute("SELECT COUNT(*) FROM runs WHERE written IS NULL").fetchone()[0] == 0


def test_a_newer_schema_in_meta_is_refused_before_anything_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    schema_2_store(path, [("r", "2026-01-01T00:00:00+00:00", None)])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(Exception, match="newer assay"):
        RunStore(path)
    with sqlite3.connect(path) as db:  # left as it was found
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2
        assert "written" not in {row[1] for row in db.execute("PRAGMA table_info(runs)")}
