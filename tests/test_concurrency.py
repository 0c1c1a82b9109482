"""Runs side by side, writes that fail, runs that never finished (issue 33).

A stress suite, bounded in time and on loopback only: many processes opening a new call
cache and run store at the same instant, ``assay run`` processes sharing a cache and a
store, a resume while another run writes to the same store, ``kill -9`` at random points
with ``--out`` checked after the resume, and a disk that fills. Each stress test prints
what it counted (``pytest -s`` shows it).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay._sqlite import open_sqlite
from assay.errors import StorageError
from assay.models import JudgeResponse
from assay.models._cache import JudgeCache
from assay.run import RunSpec, RunStore
from assay.testing import FakeOpenAIServer
from assay.testing._openai_server import default_responder
from stress import trials

ENV = {**os.environ, "OPENAI_API_KEY": "sk-test", "NO_COLOR": "1", "COLUMNS": "200"}


def responder(body: dict[str, Any]) -> str:
    """Supports every statement but those about grass; anything else gets a minimal valid answer."""
    user = body["messages"][-1]["content"]
    if "<statements>\n" not in user:
        return default_responder(body)
    items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    statements = [i.split("] ", 1)[1] for i in items]
    return json.dumps(
        {"verdicts": [{"statement": s, "reason": "r", "verdict": int("grass" not in s.lower())} for s in statements]}
    )


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder, latency_s=0.02) as fake:
        yield fake


def write_data(path: Path, n: int, tag: str = "") -> Path:
    rows = [
        {
            "id": f"{tag}r{i}",
            "question": f"What colour is thing {i}?",
            "answer": f"Thing {i} is blue. It was made in {1990 + i}.{' Grass grows on it.' if i % 3 == 0 else ''}",
            "contexts": [f"Thing {i} is blue and was made in {1990 + i}."],
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def assay_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "assay", *args]


def run_args(server: FakeOpenAIServer, data: Path, store: Path, cache: Path, *extra: str) -> list[str]:
    return assay_cmd(
        "run",
        str(data),
        "-j",
        "openai:fake-judge",
        "--base-url",
        server.base_url,
        "--decomposer",
        "sentences",
        "--strategy",
        "batch",
        "--store",
        str(store),
        "--cache-path",
        str(cache),
        "--progress",
        "none",
        "--retries",
        "1",
        *extra,
    )


def resume(run_id: str, store: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """``assay run --resume RUN_ID`` into ``out``, as a user types it."""
    return subprocess.run(
        assay_cmd("run", "--resume", run_id, "--store", str(store), "--out", str(out), "--progress", "none"),
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )


def out_lines(path: Path) -> list[tuple[int, int]]:
    """(line, repeat) of every record in an --out file; a torn line fails the test."""
    return [(r["line"], r["repeat"]) for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())]


# --- opening: N processes, one new file, one instant ---------------------------------------------


def _open_both(barrier: Any, cache_path: str, store_path: str, worker: int, errors: Any) -> None:
    try:
        barrier.wait(timeout=30)
        cache = JudgeCache(cache_path)
        cache.put(f"k{worker}", JudgeResponse(text="{}", model="m"), model="m")
        cache.close()
        with RunStore(store_path) as store:
            store.create(RunSpec(run_id=f"run-{worker}", judge="j", judge_model="m"))
    except BaseException as exc:  # counted by the parent, whatever it is
        errors.put(f"{type(exc).__name__}: {exc}")


def test_eight_processes_open_a_new_cache_and_store_at_once_twenty_rounds(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    n_procs, rounds = 8, 20
    errors = ctx.Queue()
    failed_rounds = 0
    for k in range(rounds):
        barrier = ctx.Barrier(n_procs)
        cache_path, store_path = tmp_path / f"c{k}.sqlite", tmp_path / f"s{k}.sqlite"
        procs = [
            ctx.Process(target=_open_both, args=(barrier, str(cache_path), str(store_path), w, errors))
            for w in range(n_procs)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        seen = []
        while not errors.empty():
            seen.append(errors.get())
        crashed = [p.exitcode for p in procs if p.exitcode != 0]
        failed_rounds += bool(seen or crashed)
        assert not seen and not crashed, f"round {k}: {seen} {crashed}"
        assert len(JudgeCache(cache_path, create=False)) == n_procs
        with RunStore(store_path) as store:
            assert len(store.runs()) == n_procs
    print(f"{n_procs} processes x {rounds} rounds on new files: {failed_rounds} rounds with an error")


def test_a_schema_upgrade_runs_once_when_many_processes_find_an_old_cache(tmp_path: Path) -> None:
    # A cache written before the identity column: every opener would migrate it.
    for k in range(5):
        path = tmp_path / f"old{k}.sqlite"
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE calls (key TEXT PRIMARY KEY, model TEXT, response TEXT, created REAL)")
        ctx = multiprocessing.get_context("fork")
        errors = ctx.Queue()
        barrier = ctx.Barrier(8)
        procs = [
            ctx.Process(target=_open_both, args=(barrier, str(path), str(tmp_path / f"s{k}.sqlite"), w, errors))
            for w in range(8)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        seen = [errors.get() for _ in range(errors.qsize())] if not errors.empty() else []
        assert not seen and all(p.exitcode == 0 for p in procs), seen
        with sqlite3.connect(path) as db:
            assert "identity" in {r[1] for r in db.execute("PRAGMA table_info(calls)")}
            assert db.execute("PRAGMA user_version").fetchone()[0] >= 1


def test_a_lock_held_too_long_is_one_error_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import assay._sqlite as opener

    path = tmp_path / "c.sqlite"
    JudgeCache(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(opener, "BUSY_TIMEOUT_S", 0.2)
    try:
        with pytest.raises(StorageError) as caught:
            open_sqlite(path, what="the judge-call cache", version=99, schema=["SELECT 1"])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    message = str(caught.value)
    assert str(path) in message and "the judge-call cache" in message and "locked" in message
    assert "0.2 s" in message


def test_a_file_from_a_newer_assay_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    JudgeCache(path).close()
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version=7")
    with pytest.raises(StorageError, match="newer assay"):
        JudgeCache(path)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 7


# --- the CLI: runs side by side -----------------------------------------------------------------


def test_eight_cli_runs_started_together_share_a_new_cache_and_store(tmp_path: Path, server: FakeOpenAIServer) -> None:
    rounds, n_procs, n_rows = trials(2, 1), 8, 4
    tracebacks = failures = 0
    for k in range(rounds):
        store, cache = tmp_path / f"runs{k}.sqlite", tmp_path / f"cache{k}.sqlite"
        data = [write_data(tmp_path / f"d{k}-{w}.jsonl", n_rows, tag=f"{w}-") for w in range(n_procs)]
        outs = [tmp_path / f"out{k}-{w}.jsonl" for w in range(n_procs)]
        procs = [
            subprocess.Popen(
                run_args(server, data[w], store, cache, "--out", str(outs[w])),
                env=ENV,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for w in range(n_procs)
        ]
        for p in procs:
            _, err = p.communicate(timeout=300)
            tracebacks += "Traceback" in err
            failures += p.returncode != 0
            assert p.returncode == 0 and "Traceback" not in err, err
        for w in range(n_procs):
            assert sorted(out_lines(outs[w])) == [(i, 0) for i in range(1, n_rows + 1)]
        with RunStore(store) as runs:
            infos = runs.runs()
            assert len(infos) == n_procs
            assert all(i.n_results == n_rows and i.status == "finished" for i in infos)
    print(
        f"{n_procs} CLI runs x {rounds} rounds on one new cache and store: {failures} failed, {tracebacks} tracebacks"
    )


def _latest_run(store: Path) -> str | None:
    if not store.exists():
        return None
    with RunStore(store) as runs:
        infos = runs.runs()
    return infos[0].run_id if infos else None


def test_resume_while_another_run_writes_to_the_same_store(tmp_path: Path, server: FakeOpenAIServer) -> None:
    store, cache = tmp_path / "runs.sqlite", tmp_path / "cache.sqlite"
    first = write_data(tmp_path / "a.jsonl", 12, tag="a")
    second = write_data(tmp_path / "b.jsonl", 12, tag="b")
    p = subprocess.Popen(
        run_args(server, first, store, cache, "--concurrency", "1"),
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    run_id = None
    while time.monotonic() < deadline:  # kill it once some results are stored
        run_id = _latest_run(store)
        if run_id is not None:
            with RunStore(store) as runs:
                if len(runs.finished(run_id)) >= 2:
                    break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert run_id is not None
    other = subprocess.Popen(
        run_args(server, second, store, cache, "--out", str(tmp_path / "b.out")),
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    resumed = resume(run_id, store, tmp_path / "a.out")
    _, other_err = other.communicate(timeout=300)
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr
    assert other.returncode == 0 and "Traceback" not in other_err, other_err
    assert sorted(out_lines(tmp_path / "a.out")) == [(i, 0) for i in range(1, 13)]
    assert sorted(out_lines(tmp_path / "b.out")) == [(i, 0) for i in range(1, 13)]
    with RunStore(store) as runs:
        assert {i.run_id: (i.n_results, i.status) for i in runs.runs()}[run_id] == (12, "finished")


def _kill_when(p: subprocess.Popen[bytes], store: Path, results: int, extra_s: float) -> str:
    """SIGKILL ``p`` ``extra_s`` after the store holds ``results`` results; what the kill interrupted."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and p.poll() is None:
        run_id = _latest_run(store)
        if run_id is not None:
            with RunStore(store) as runs:
                if len(runs.finished(run_id)) >= results:
                    break
        time.sleep(0.01)
    time.sleep(extra_s)
    finished = p.poll() is not None
    p.send_signal(signal.SIGKILL)
    p.wait()
    return "finished before the kill" if finished else "killed mid-run"


def test_kill_9_at_random_points_then_resume_leaves_a_complete_out(tmp_path: Path) -> None:
    """Killed at a random point, resumed (to the same --out or a new one): --out is the whole run."""
    n_trials, n_rows = trials(30, 4), 6
    rng = random.Random(33)
    data = write_data(tmp_path / "d.jsonl", n_rows)
    counted = {"killed mid-run": 0, "finished before the kill": 0}
    incomplete_before = 0
    with FakeOpenAIServer(responder, latency_s=0.1) as slow:
        for t in range(n_trials):
            store, cache, out = tmp_path / f"s{t}.sqlite", tmp_path / f"c{t}.sqlite", tmp_path / f"o{t}.jsonl"
            p = subprocess.Popen(
                run_args(slow, data, store, cache, "--out", str(out), "--concurrency", "1"),
                env=ENV,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            # a random point: after 0..n-1 stored results, then up to one judge call later
            counted[_kill_when(p, store, rng.randrange(n_rows), rng.uniform(0.0, 0.12))] += 1
            run_id = _latest_run(store)
            assert run_id is not None
            try:
                incomplete_before += sorted(out_lines(out)) != [(i, 0) for i in range(1, n_rows + 1)]
            except (json.JSONDecodeError, FileNotFoundError):  # a torn last line, or no file yet
                incomplete_before += 1
            target = out if t % 2 == 0 else tmp_path / f"new{t}.jsonl"
            resumed = resume(run_id, store, target)
            assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr
            assert sorted(out_lines(target)) == [(i, 0) for i in range(1, n_rows + 1)], f"trial {t}"
            with RunStore(store) as runs:
                assert runs.info(run_id).n_results == n_rows
                assert runs.info(run_id).status == "finished"
    print(f"kill -9 x {n_trials}: {counted}; --out incomplete or torn before the resume: {incomplete_before}")
    assert counted["killed mid-run"] >= n_trials * 2 // 3  # the trials did test what they are for


# --- writes that fail ---------------------------------------------------------------------------


def test_out_on_a_full_device_is_one_error_without_a_traceback(tmp_path: Path, server: FakeOpenAIServer) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    data = write_data(tmp_path / "d.jsonl", 3)
    store = tmp_path / "runs.sqlite"
    done = subprocess.run(
        run_args(server, data, store, tmp_path / "c.sqlite", "--out", "/dev/full"),
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert "/dev/full" in errors[0] and "No space left on device" in errors[0] and "assay runs export" in errors[0]
    assert done.returncode == 1
    with RunStore(store) as runs:  # the run itself is complete in the store
        info = runs.runs()[0]
        assert info.n_results == 3 and info.status == "finished"


def _limit_file_size(limit: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_store_that_fills_up_mid_run_is_one_error_and_the_run_resumes(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    data = write_data(tmp_path / "d.jsonl", 40)
    store, cache = tmp_path / "runs.sqlite", tmp_path / "cache.sqlite"
    full = subprocess.run(
        run_args(server, data, store, cache, "--no-cache", "--concurrency", "1"),
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: _limit_file_size(160_000),
    )
    assert "Traceback" not in full.stderr, full.stderr
    errors = [line for line in full.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, full.stderr
    assert str(store) in errors[0] and "the run store" in errors[0]
    assert full.returncode == 1
    run_id = _latest_run(store)
    assert run_id is not None and f"assay run --resume {run_id}" in full.stderr
    with RunStore(store) as runs:
        kept = len(runs.finished(run_id))
    assert 0 < kept < 40
    resumed = resume(run_id, store, tmp_path / "o.jsonl")
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(out_lines(tmp_path / "o.jsonl")) == [(i, 0) for i in range(1, 41)]
    print(f"store filled after {kept} of 40 results; the resume judged the other {40 - kept}")


def test_a_cache_that_cannot_be_written_warns_once_and_the_scores_stand(tmp_path: Path) -> None:
    from assay import evaluate
    from assay.metrics import Faithfulness
    from assay.models import FunctionJudge

    def judge(messages: list[dict[str, str]], schema: type | None) -> str:
        return responder({"messages": messages})

    cache = JudgeCache(tmp_path / "c.sqlite")
    cache._db.execute("PRAGMA query_only=ON")  # every write now fails, as on a full or read-only disk
    rows = [json.loads(line) for line in write_data(tmp_path / "d.jsonl", 3).read_text().splitlines()]
    result = evaluate(
        rows, Faithfulness(strategy="batch", decomposer="sentences"), FunctionJudge(judge), cache=cache, progress=False
    )
    assert cache.failed_writes == 3 and cache.write_error is not None
    assert "the judge-call cache" in str(cache.write_error) and str(cache.path) in str(cache.write_error)
    assert [s.value for s in result.scores("faithfulness")] == pytest.approx([2 / 3, 1.0, 1.0])


def test_a_result_that_cannot_be_kept_ends_the_run_with_its_error_instead_of_hanging(tmp_path: Path) -> None:
    # The store's write failing (or a user's on_result raising) killed the worker that called it;
    # with every worker dead the reader blocked forever on a full queue.
    import threading

    from assay import evaluate
    from assay.metrics import Faithfulness
    from assay.models import FunctionJudge

    class Full(Exception):
        pass

    def keep(result: object) -> None:
        raise Full("cannot keep it")

    rows = [json.loads(line) for line in write_data(tmp_path / "d.jsonl", 30).read_text().splitlines()]
    outcome: list[BaseException | None] = []

    def go() -> None:
        try:
            evaluate(
                rows,
                Faithfulness(strategy="batch", decomposer="sentences"),
                FunctionJudge(lambda m, s: responder({"messages": m})),
                progress=False,
                concurrency=2,
                on_result=keep,
            )
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the run hung after its results could not be kept"
    assert isinstance(outcome[0], Full)


def test_resume_with_a_store_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    done = subprocess.run(
        assay_cmd("run", "--resume", "20260101-000000-abcd", "--store", str(tmp_path / "typo" / "runs.sqlite")),
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "no run store at" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "typo").exists()


def test_notes_are_said_in_the_summary_when_progress_is_off(tmp_path: Path, server: FakeOpenAIServer) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"question": "Colour?", "answer": "It is blue.", "contexts": "It is blue."}) + "\n")
    done = subprocess.run(
        run_args(server, data, tmp_path / "s.sqlite", tmp_path / "c.sqlite"), env=ENV, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert " ".join(done.stderr.split()).count("contexts was one string") == 1


def test_a_refused_run_leaves_no_store_and_an_earlier_out_untouched(tmp_path: Path, server: FakeOpenAIServer) -> None:
    # Before: the store was created before the data was checked, and --out was truncated at the start.
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"question": "Colour?", "answer": "It is blue."}) + "\n")  # no contexts
    out = tmp_path / "results.jsonl"
    out.write_text('{"earlier": "results"}\n')
    store = tmp_path / "fresh" / "runs.sqlite"
    done = subprocess.run(
        run_args(server, data, store, tmp_path / "c.sqlite", "--out", str(out)), env=ENV, capture_output=True, text=True
    )
    assert done.returncode == 1 and "needs 'contexts'" in done.stderr and "Traceback" not in done.stderr
    assert not store.exists() and not (tmp_path / "fresh").exists()
    assert out.read_text() == '{"earlier": "results"}\n'
