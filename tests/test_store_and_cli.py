"""The run store and the CLI around it: runs list/show/export, dry runs, Ctrl-C, no secrets stored."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay import Faithfulness, Sample, evaluate
from assay.cli import app
from assay.models import FunctionJudge
from assay.run import SCHEMA_VERSION, RunSpec, RunStore, SampleResult
from assay.run._store import StoreError
from assay.testing import FakeOpenAIServer

pytest.importorskip("openai")

SECRET = "sk-test-DO-NOT-STORE-1234567890abcdef"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def rows(n: int) -> str:
    return "".join(
        json.dumps(
            {
                "id": f"r{i}",
                "question": "Colour?",
                "answer": f"Row {i}. The sky is blue.",
                "contexts": ["The sky is blue."],
            }
        )
        + "\n"
        for i in range(n)
    )


def sentence_judge(body: dict[str, object]) -> str:
    user = body["messages"][1]["content"]  # type: ignore[index]
    if "<sentence>" in user:  # the anchored decomposer's rewrite of one sentence: keep it as it is
        return json.dumps({"statements": [user.split("<sentence>\n")[1].split("\n</sentence>")[0]]})
    if "<answer>" in user:
        answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
        return json.dumps({"statements": [s.strip() + "." for s in answer.split(".") if s.strip()]})
    items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    return json.dumps(
        {
            "verdicts": [
                {"statement": t, "reason": "r", "verdict": int("sky" in t)}
                for t in (i.split("] ", 1)[1] for i in items)
            ]
        }
    )


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200", **(env or {})})
    return result.exit_code, result.output


def test_run_then_list_show_export_jsonl_and_csv(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(rows(3) + "{not json\n")
    with FakeOpenAIServer(sentence_judge) as server:
        code, out = invoke(
            "run", "data.jsonl", "--judge", "openai:fake", "--base-url", server.base_url, env={"OPENAI_API_KEY": SECRET}
        )
    assert code == 2, out  # one invalid row
    store = RunStore(".assay/runs.sqlite")
    (info,) = store.runs()
    assert info.status == "finished" and info.n_results == 3 and info.n_errors == 1
    assert info.summary is not None and info.summary["faithfulness"]["mean"] == pytest.approx(0.5)

    code, out = invoke("runs", "list")
    assert code == 0 and info.run_id in out and "finished" in out
    code, out = invoke("runs", "show", info.run_id)
    assert code == 0 and "openai:fake" in out and "faithfulness" in out and "invalid row" in out
    code, out = invoke("runs", "export", info.run_id, "--format", "csv", "--out", "r.csv")
    assert code == 0
    with open("r.csv") as handle:
        table = list(csv.DictReader(handle))
    assert [r["id"] for r in table] == ["r0", "r1", "r2"]
    assert table[0]["failing"] == "Row 0." and float(table[0]["value"]) == 0.5
    code, out = invoke("runs", "export", info.run_id)
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert len(records) == 3 and records[0]["scores"]["faithfulness"]["verdicts"][1]["value"] == 1
    frame = store.to_pandas(info.run_id)
    assert list(frame["id"]) == ["r0", "r1", "r2"]
    code, out = invoke("runs", "show", "nope")
    assert code == 1 and "no run 'nope'" in out
    store.close()
    # The API key is in no table of the store, nor in the cache.
    for name in ("runs.sqlite", "cache.sqlite"):
        assert SECRET.encode() not in (tmp_path / ".assay" / name).read_bytes()


def test_dry_run_counts_calls_and_calls_nothing(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(rows(4))
    with FakeOpenAIServer(sentence_judge) as server:
        code, out = invoke(
            "run", "data.jsonl", "--judge", "openai:gpt-4o-mini", "--base-url", server.base_url, "--dry-run"
        )
        assert server.calls == 0
    assert code == 0, out
    flat = " ".join(out.split())
    assert "nothing was called" in flat
    # batch strategy: a statements call and a verdicts call per sample
    assert "│ 4 │ 0 │ 8 │" in flat.replace("  ", " ")
    assert "~$" in flat
    assert not (tmp_path / ".assay" / "runs.sqlite").exists() or not RunStore(".assay/runs.sqlite").runs()


def test_ctrl_c_keeps_finished_samples_and_resume_completes(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(rows(40))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ASSAY"))}
    with FakeOpenAIServer(sentence_judge, latency_s=0.1) as server:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "assay",
                "run",
                "data.jsonl",
                "--judge",
                "openai:fake",
                "--base-url",
                server.base_url,
                "--concurrency",
                "2",
                "--out",
                "out.jsonl",
            ],
            cwd=tmp_path,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with sqlite3.connect(tmp_path / ".assay" / "runs.sqlite") as db:
                    if db.execute("SELECT COUNT(*) FROM results").fetchone()[0] >= 5:
                        break
            except sqlite3.OperationalError:
                pass
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 130, out
        assert "assay run --resume" in out
        store = RunStore(".assay/runs.sqlite")
        (info,) = store.runs()
        assert info.status == "interrupted" and 5 <= info.n_results < 40, out
        # --out holds what was judged, and says it is not the whole run
        n = info.n_results
        said = f"--out out.jsonl: {n} results, the run so far (interrupted: {n} of 40 rows judged)"
        assert said in " ".join(out.split()) and "the whole run" not in out, out
        assert len((tmp_path / "out.jsonl").read_text().splitlines()) == n
        code, out = invoke("run", "--resume", info.run_id, "--out", "out.jsonl")
        assert code == 0, out
        assert store.info(info.run_id).status == "finished" and store.info(info.run_id).n_results == 40
        assert "--out out.jsonl: 40 results, the whole run" in " ".join(out.split())
        assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 40


def test_store_refuses_a_newer_schema(tmp_path: Path) -> None:
    RunStore(tmp_path / "s.sqlite").close()
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="newer assay"):
        RunStore(tmp_path / "s.sqlite")


def test_the_formats_reference_gives_the_schema_the_code_writes(tmp_path: Path) -> None:
    """formats.md said ``schema_version`` was 1 when the store wrote 2: its number and tables are checked."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "reference" / "formats.md").read_text(encoding="utf-8")
    said = re.search(r"`meta\.schema_version`, now `(\d+)`", text)
    assert said is not None and int(said.group(1)) == SCHEMA_VERSION
    RunStore(tmp_path / "s.sqlite").close()
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        assert tables == ["calibrations", "meta", "results", "row_errors", "runs"]
        for table in tables:  # each table's row in the doc names its columns, in the order the code makes them
            row = re.search(rf"^\| `{table}` \| ([^|]+) \|", text, re.MULTILINE)
            assert row is not None, f"formats.md has no row for the table {table}"
            columns = [str(c[1]) for c in db.execute(f"PRAGMA table_info({table})")]
            assert re.findall(r"`(\w+)`", row.group(1)) == columns, table


def test_store_records_replace_and_round_trip(tmp_path: Path) -> None:
    judge = FunctionJudge(lambda m, r: sentence_judge({"messages": [{}, {"content": m[-1]["content"]}]}))
    result = evaluate(
        [Sample(id="a", answer="The sky is blue.", contexts=("The sky is blue.",))],
        [Faithfulness(strategy="batch")],
        judge,
    )
    store = RunStore(tmp_path / "s.sqlite")
    store.create(RunSpec(run_id="r1", judge="x", judge_model="function"))
    sample_result: SampleResult = result.results[0]
    store.record("r1", sample_result)
    store.record("r1", sample_result)  # idempotent: same key replaces
    assert store.finished("r1") == {("1", 0)}
    (record,) = store.records("r1")
    assert record["scores"]["faithfulness"]["value"] == 1.0
    out = io.StringIO()
    assert store.export("r1", out, "jsonl") == 1


def test_mark_interrupted_changes_only_a_running_run(tmp_path: Path) -> None:
    """What the CLI prints after Ctrl-C is written to the store, without undoing an ended run."""
    store = RunStore(tmp_path / "s.sqlite")
    for run_id, status in (("r1", None), ("r2", "finished"), ("r3", "failed")):
        store.create(RunSpec(run_id=run_id, judge="x", judge_model="function"))
        if status is not None:
            store.set_status(run_id, status)  # type: ignore[arg-type]
        store.mark_interrupted(run_id)
    store.mark_interrupted("no-such-run")  # nothing to mark: no error, no row
    assert {r.run_id: r.status for r in store.runs()} == {"r1": "interrupted", "r2": "finished", "r3": "failed"}


def test_ctrl_c_arms_a_watchdog_that_gives_up_on_a_hung_wind_down(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from assay.cli import _run

    monkeypatch.setattr(_run, "INTERRUPT_GRACE_S", 0.2)
    gave_up = threading.Event()
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), _run._bounded_interrupt(gave_up.set):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # the handler raises here
    assert not gave_up.is_set(), "the watchdog waits for the grace period"
    assert gave_up.wait(2), "a run that does not wind down is given up on"
    assert signal.getsignal(signal.SIGINT) is before, "the previous handler is restored"


# -- paths, size limits and notes on the command line (issue 33) --------------------------------


def test_a_directory_or_a_missing_path_exits_1_and_leaves_nothing_behind(tmp_path: Path) -> None:
    (tmp_path / "exports" / "june").mkdir(parents=True)
    (tmp_path / "exports" / "june" / "rag.jsonl").write_text(rows(1))
    (tmp_path / "exports" / "README.md").write_text("not data")
    code, out = invoke("run", "exports")
    assert code == 1
    assert (
        "error: exports: is a directory; give a data file (.jsonl, .ndjson, .json, .csv, .parquet, .pq); it holds "
        "exports/june/rag.jsonl" in " ".join(out.split())
    )
    code, out = invoke("run", "nope.jsonl", "--store", "runs/store.sqlite")
    assert code == 1 and "error: nope.jsonl: no such file" in out
    code, out = invoke("run", "missing-folder/")
    assert code == 1 and "error: missing-folder: no such file" in out
    # a usage error and a dry run create nothing either: the store is opened once all is checked
    (tmp_path / "data.jsonl").write_text(rows(1))
    code, out = invoke("run", "data.jsonl", "-m", "vibes")
    assert code == 1 and "unknown metric 'vibes'" in out
    code, out = invoke("run", "data.jsonl", "--judge", "openai:gpt-4o-mini", "--dry-run", "--no-cache")
    assert code == 0, out
    assert not (tmp_path / ".assay").exists() and not (tmp_path / "runs").exists()


def test_size_limits_on_the_command_line_make_a_row_invalid_and_can_be_raised(tmp_path: Path) -> None:
    big = {"id": "big", "question": "Colour?", "answer": "The sky is blue.", "contexts": ["Sky. " * 60_000]}
    (tmp_path / "data.jsonl").write_text(rows(2) + json.dumps(big) + "\n")
    with FakeOpenAIServer(sentence_judge) as server:
        judge = ("--judge", "openai:fake", "--base-url", server.base_url)
        code, out = invoke("run", "data.jsonl", *judge)
        assert code == 2, out
        flat = " ".join(out.split())
        assert (
            "data.jsonl:3: field 'contexts[0]' is 300,000 characters, above the limit of 200,000 per field "
            "(raise it with --max-field-chars, or max_field_chars= in Python)" in flat
        )
        code, out = invoke("run", "data.jsonl", *judge, "--max-field-chars", "300000")
        assert code == 0, out
        with RunStore(".assay/runs.sqlite") as store:
            run_id = store.latest()
            assert {r["id"] for r in store.records(run_id)} == {"r0", "r1", "big"}
            assert store.spec(run_id).options["max_field_chars"] == 300_000
        code, out = invoke("run", "--resume", run_id, "--max-row-chars", "10")
        assert code == 1 and "drop --max-row-chars" in out
        code, out = invoke("run", "data.jsonl", *judge, "--max-row-chars", "0")
        assert code != 0 and "--max-row-chars" in out


def test_contexts_given_as_one_string_is_said_once_on_the_command_line(tmp_path: Path) -> None:
    one = [
        {"id": f"s{i}", "question": "Colour?", "answer": "The sky is blue.", "contexts": "The sky is blue."}
        for i in range(3)
    ]
    (tmp_path / "data.jsonl").write_text(rows(1) + "".join(json.dumps(r) + "\n" for r in one))
    with FakeOpenAIServer(sentence_judge) as server:
        code, out = invoke("run", "data.jsonl", "--judge", "openai:fake", "--base-url", server.base_url)
    assert code == 0, out
    flat = " ".join(out.split())
    assert flat.count("contexts was one string") == 1
    assert (
        "note: contexts was one string, not a list, in 3 rows of data.jsonl; each was taken as one context "
        "(give a list to pass several)" in flat
    )


# -- what the summary says of failed calls and of cost (issue 35) --------------------------------


def _calls(flat: str) -> tuple[int, int]:
    found = re.search(r"judge calls (\d+) \(cached \d+, failed (\d+)\)", flat)
    assert found, flat
    return int(found[1]), int(found[2])


def test_a_server_that_is_not_running_is_said_in_the_summary_not_only_in_runs_show(
    tmp_path: Path, refused_url: str
) -> None:
    (tmp_path / "data.jsonl").write_text(rows(3))
    host = refused_url.removeprefix("http://").removesuffix("/v1")
    code, out = invoke("run", "data.jsonl", "--judge", "openai:fake", "--base-url", refused_url,
                       "--retries", "0", "--no-cache", "--progress", "none")  # fmt: skip
    assert code == 3, out
    flat = " ".join(out.split())
    refused = f"Could not talk to the OpenAI-compatible server at {host} (ConnectError); is it running?"
    assert f"judge_error: 3 — first: statement extraction: {refused}" in flat
    calls, failed = _calls(flat)
    assert calls == failed > 0
    assert f"every judge call failed ({calls} of {calls}): {refused}" in flat
    assert "JudgeHTTPError" not in flat  # the class name is for runs show and the records, not the summary


def test_the_summary_gives_the_first_message_of_each_reason_and_no_every_call_line_when_some_answered(
    tmp_path: Path,
) -> None:
    def judge(body: dict[str, object]) -> str:
        user = str(body["messages"][1]["content"])  # type: ignore[index]
        if "Row 1." in user:
            raise RuntimeError("row one breaks the server")
        if "Row 2." in user:
            return "I would rather not say."
        return sentence_judge(body)

    (tmp_path / "data.jsonl").write_text(rows(4))
    with FakeOpenAIServer(judge) as server:
        code, out = invoke("run", "data.jsonl", "--judge", "openai:fake", "--base-url", server.base_url,
                           "--retries", "0", "--reasks", "0", "--no-cache", "--progress", "none")  # fmt: skip
    assert code == 3, out  # half of the results are unscored, above --max-unscored
    flat = " ".join(out.split())
    assert "judge_error: 1 — first: statement extraction: The OpenAI-compatible server at 127.0.0.1:" in flat
    assert "answered HTTP 500 (model 'fake'): responder raised RuntimeError: row one breaks the server" in flat
    assert "parse_failure: 1 — first: " in flat
    assert "every judge call failed" not in flat


def test_an_anthropic_judge_at_an_openai_server_counts_its_calls_and_says_what_answered(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(rows(3))
    with FakeOpenAIServer(any_path=True) as server:
        root = server.base_url.removesuffix("/v1")
        code, out = invoke("run", "data.jsonl", "--judge", "anthropic:claude-x", "--base-url", root,
                           "--no-cache", "--progress", "none")  # fmt: skip
        made = server.calls
    assert code == 3, out
    flat = " ".join(out.split())
    assert made > 0 and _calls(flat) == (made, made)  # every request that was made is counted, each failed
    assert "metric_error" not in flat and "NoneType" not in flat
    assert "judge_error: 3 — first: statement extraction: The Anthropic server at" in flat
    assert f"every judge call failed ({made} of {made}): The Anthropic server at" in flat
    assert "answered HTTP 200 with an OpenAI chat-completions reply" in flat and "--judge openai:MODEL" in flat
    with RunStore(".assay/runs.sqlite") as store:
        run_id = store.latest()
    code, shown = invoke("runs", "show", run_id)
    assert (
        code == 0
        and "TypeError" not in shown
        and "judge_error — statement extraction: JudgeError: The Anthropic server" in shown
    )


def test_a_fully_cached_run_of_an_unpriced_judge_costs_unknown_and_of_a_priced_one_nothing(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(rows(2))
    (tmp_path / "prices.json").write_text(json.dumps({"openai:priced*": {"input": 1.0, "output": 2.0}}))
    with FakeOpenAIServer(sentence_judge) as server:
        for model, cost in (("openai:fake", "cost unknown (openai:fake has no price; see --prices)"),
                            ("openai:priced", "cost $0.0000")):  # fmt: skip
            judge = ("--judge", model, "--base-url", server.base_url, "--prices", "prices.json", "--progress", "none")
            code, first = invoke("run", "data.jsonl", *judge)
            assert code == 0, first
            before = server.calls
            code, again = invoke("run", "data.jsonl", *judge)
            assert code == 0 and server.calls == before, again  # every answer came from the cache
            flat = " ".join(again.split())
            assert "judge calls 0 (cached " in flat and cost in flat, flat


def test_progress_says_unknown_before_the_first_reply_of_an_unpriced_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import assay.run._progress as progress

    monkeypatch.setattr(progress, "PLAIN_INTERVAL_S", 0.0)  # every move of the line is printed
    (tmp_path / "data.jsonl").write_text("{not json\n" + rows(2))
    with FakeOpenAIServer(sentence_judge) as server:
        for model, cost in (("openai:fake", "unknown"), ("openai:gpt-4o-mini", "$0.0000")):
            code, out = invoke("run", "data.jsonl", "--judge", model, "--base-url", server.base_url,
                               "--no-cache", "--progress", "plain")  # fmt: skip
            assert code == 2, out
            # the invalid first row moves the line before any judge call was answered
            before_reply = next(line for line in out.splitlines() if "scored 0 unscored 0 · 0 tok" in line)
            assert before_reply.split(" · ")[-2] == cost, before_reply
            if cost == "unknown":
                assert "$0.0000" not in out


def test_a_dry_runs_progress_says_it_estimates_and_scores_nothing(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text("{not json\n" + rows(4))
    for judge, cost in (("openai:gpt-4o-mini", "~$0.00"), ("openai:my-model", "cost unknown (no price)")):
        code, out = invoke("run", "data.jsonl", "--judge", judge, "--base-url", "http://127.0.0.1:9/v1",
                           "--dry-run", "--progress", "plain")  # fmt: skip
        assert code == 2, out  # one invalid row: as the run would exit
        progress = [line for line in out.splitlines() if line.startswith("estimating (dry run: ")]
        assert progress and all("nothing is called or scored" in line for line in progress), out
        assert not re.search(r"\bscored \d", out) and "unscored" not in out  # nothing was scored: none are counted
        last = progress[-1]
        assert last.startswith("estimating (dry run: nothing is called or scored): 4 · ~8 judge calls · ~"), last
        assert f"tok · {cost}" in last and "estimated, none made" in last, last
        assert "skipped data.jsonl:1: invalid JSON" in out  # an invalid row is said, as in a run
        assert "│ 4 │ 1 │ 8 │" in " ".join(out.split()).replace("  ", " ")  # the table agrees with the progress
    code, out = invoke("run", "data.jsonl", "--judge", "openai:gpt-4o-mini", "--dry-run", "--progress", "none")
    assert code == 2 and "estimating" not in out and "nothing was called" in out


def test_a_ctrl_c_that_a_library_wrapped_is_still_the_interrupt() -> None:
    """Ctrl-C can land inside pydantic's serializer, which re-raises it as its own error: still an interrupt (exit 130).

    Seen in the suite: the KeyboardInterrupt raised in ``_omit_empty`` came out as a
    PydanticSerializationError and the run exited 1 without the resume hint.
    """
    import signal

    from assay.cli._run import _bounded_interrupt

    guard = _bounded_interrupt(lambda: None)
    with pytest.raises(KeyboardInterrupt) as caught, guard:
        try:
            guard._handler(signal.SIGINT, None)
        except KeyboardInterrupt as exc:
            raise ValueError("Error calling function `_omit_empty`: KeyboardInterrupt") from exc
    assert isinstance(caught.value.__cause__, ValueError)
    assert signal.getsignal(signal.SIGINT) is not guard._handler  # restored
    with pytest.raises(ValueError, match="no Ctrl-C"), _bounded_interrupt(lambda: None):
        raise ValueError("no Ctrl-C: an error stays an error")


def test_a_run_started_elsewhere_resumes_from_another_directory_by_naming_its_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start, other = tmp_path / "project", tmp_path / "elsewhere"
    start.mkdir()
    other.mkdir()
    (start / "data.jsonl").write_text(rows(3))
    (other / "data.jsonl").write_text(rows(4))  # same name, other content
    store = str(tmp_path / "runs.sqlite")
    with FakeOpenAIServer(sentence_judge) as server:
        judge = ("--judge", "openai:fake", "--base-url", server.base_url, "--store", store)
        monkeypatch.chdir(start)
        code, out = invoke("run", "data.jsonl", *judge, "--no-cache")
        assert code == 0, out
        run_id = RunStore(store).latest()
        monkeypatch.chdir(other)
        code, out = invoke("run", "--resume", run_id, *judge[2:])  # 'data.jsonl' here is another file
        assert code == 1 and "the data changed since the run started" in " ".join(out.split()), out
        (other / "data.jsonl").unlink()
        code, out = invoke("run", "--resume", run_id, *judge[2:])
        flat = " ".join(out.split())
        assert code == 1 and f"data.jsonl: no such file in {other}" in flat and "--resume" in flat, out
        code, out = invoke("run", str(start / "data.jsonl"), "--resume", run_id, *judge[2:])
        assert code == 0, out
        code, out = invoke("run", "../project/data.jsonl", "--resume", run_id, *judge[2:])
        assert code == 0, out
        (other / "changed.jsonl").write_text(rows(2))
        code, out = invoke("run", "changed.jsonl", "--resume", run_id, *judge[2:])
        assert code == 1 and "the data changed since the run started" in " ".join(out.split()), out
    assert RunStore(store).info(run_id).n_results == 3


def test_an_unscored_result_exports_an_empty_value_in_the_long_and_the_wide_csv(tmp_path: Path) -> None:
    def half_refuses(body: dict[str, object]) -> str:
        user = str(body["messages"][1]["content"])  # type: ignore[index]
        return "I'm sorry, I cannot help with that." if "Row 1." in user else sentence_judge(body)

    (tmp_path / "data.jsonl").write_text(rows(3))
    with FakeOpenAIServer(half_refuses) as server:
        code, out = invoke("run", "data.jsonl", "--judge", "openai:fake", "--base-url", server.base_url)
    run_id = RunStore(".assay/runs.sqlite").latest()
    for wide in ((), ("--wide",)):
        code, out = invoke("runs", "export", run_id, "--format", "csv", "--out", "r.csv", *wide)
        assert code == 0, out
        with open("r.csv") as handle:
            table = {r["id"]: r for r in csv.DictReader(handle)}
        column = "faithfulness" if wide else "value"
        assert table["r1"][column] == "" and table["r0"][column] == "0.5", (wide, table["r1"])
