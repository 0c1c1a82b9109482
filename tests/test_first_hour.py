"""A new user's first hour (assay issue 26): every path that looks like success is success.

Each test pins one item of the issue and failed before its fix. Runs are stored through
the real run store (``first_hour.make_run``) and the CLI is the real one: typer's
``CliRunner`` on ``assay.cli.app``, or ``python -m assay`` in a subprocess where a pipe or
an exit code of the process itself is the point.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from first_hour import cli_env, make_run


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250", "NO_COLOR": "1"})
    return result.exit_code, result.output


def invoke_stdout(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250", "NO_COLOR": "1"})
    return result.exit_code, result.stdout


# --- 1. assay gate --metric A --metric B gates every metric ------------------------------------


def test_gate_with_two_metrics_gates_both_and_exits_with_the_worse(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    make_run(
        store, "r", [{"faithfulness": 1.0, "answer_relevancy": 0.0}, {"faithfulness": 1.0, "answer_relevancy": 0.0}]
    )
    # The failing metric first: the old gate kept only the last --metric and passed.
    code, out = invoke("gate", "r", "--store", str(store), "--metric", "answer_relevancy", "--metric", "faithfulness")
    assert code == 1, out
    assert "answer_relevancy" in out and "faithfulness" in out
    assert "GATE FAIL (2 metrics): answer_relevancy >= 0.8 FAIL · faithfulness >= 0.8 PASS" in out


def test_each_gated_metric_has_its_own_threshold(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    rows = [{"faithfulness": 0.75, "answer_relevancy": 1.0}] * 3 + [{"faithfulness": 0.75, "answer_relevancy": 0.0}]
    make_run(store, "r", rows)
    code, out = invoke("gate", "r", "--store", str(store), "-m", "faithfulness=0.7", "-m", "answer_relevancy>=0.7")
    assert code == 0, out
    assert "GATE PASS (2 metrics): faithfulness >= 0.7 PASS · answer_relevancy >= 0.7 PASS" in out
    code, out = invoke("gate", "r", "--store", str(store), "-m", "faithfulness=0.8", "-m", "answer_relevancy=0.7")
    assert code == 1 and "faithfulness >= 0.8 FAIL · answer_relevancy >= 0.7 PASS" in out, out
    # --min is the threshold of a metric named without its own.
    code, out = invoke(
        "gate", "r", "--store", str(store), "-m", "faithfulness", "-m", "answer_relevancy", "--min", "0.7"
    )
    assert code == 0, out
    # A threshold outside [0, 1], a metric given twice, a misspelt one: usage errors (3), with a suggestion.
    assert invoke("gate", "r", "--store", str(store), "-m", "faithfulness=8")[0] == 3
    assert invoke("gate", "r", "--store", str(store), "-m", "faithfulness", "-m", "faithfulness=0.5")[0] == 3
    code, out = invoke("gate", "r", "--store", str(store), "-m", "answer_relevance")
    assert code == 3 and "did you mean 'answer_relevancy'?" in out, out


# --- 5. a closed pipe is not a verdict ---------------------------------------------------------


def _gate_into_a_closed_pipe(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    read, write = os.pipe()
    os.close(read)  # like `| head -1` once head has exited: every write gets EPIPE
    try:
        return subprocess.run(
            [sys.executable, "-m", "assay", "gate", *args],
            cwd=cwd, env=cli_env(), stdout=write, stderr=subprocess.PIPE, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        os.close(write)


def test_a_gate_piped_into_a_closed_pipe_still_exits_with_its_verdict(tmp_path: Path) -> None:
    make_run(tmp_path / "runs.sqlite", "good", [{"faithfulness": 1.0}, {"faithfulness": 1.0}])
    make_run(tmp_path / "runs.sqlite", "bad", [{"faithfulness": 0.0}, {"faithfulness": 0.5}])
    done = _gate_into_a_closed_pipe(tmp_path, "good", "--store", "runs.sqlite")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
    assert _gate_into_a_closed_pipe(tmp_path, "bad", "--store", "runs.sqlite").returncode == 1


# --- 8. every row invalid; one unscored budget -------------------------------------------------


def test_gate_on_a_run_whose_every_row_was_invalid_says_nothing_was_judged(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    make_run(store, "empty", [], bad_rows=3, metrics=["faithfulness"])
    code, out = invoke("gate", "empty", "--store", str(store))
    assert code == 2, out  # unscored: nothing to decide on, not a usage error
    assert "GATE UNSCORED" in out and "nothing was judged: all 3 input rows of run empty were invalid" in out
    assert "has no metric" not in out


def test_run_and_gate_share_one_unscored_budget(tmp_path: Path) -> None:
    from assay.analysis import GatePolicy
    from assay.cli._run import DEFAULT_MAX_UNSCORED, exit_code
    from assay.run import RunStore

    assert GatePolicy().max_unscored == DEFAULT_MAX_UNSCORED
    # 1 result in 12 unscored (8%): assay run calls it evaluated (exit 0); so must the gate.
    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [{"faithfulness": 1.0}] * 11 + [{"faithfulness": None}])
    with RunStore(store) as runs:
        assert exit_code(runs.summary("r"), DEFAULT_MAX_UNSCORED)[0] == 0
    code, out = invoke("gate", "r", "--store", str(store))
    assert code == 0, out


# --- 7. one run, one set of settings, one verdict ----------------------------------------------


def test_a_schema_1_run_with_a_verifier_is_not_resumed_under_todays_verifier(tmp_path: Path) -> None:
    """Its finished samples were judged without the detail veto, guard, evidence window and copy rule."""
    import json

    from assay import Faithfulness, evaluate
    from assay.errors import ConfigError
    from assay.metrics import metric_from_spec
    from assay.models import ScriptedJudge
    from assay.run import ResumeError, RunOptions, RunSpec, RunStore, open_dataset

    v1 = json.loads((Path(__file__).parent / "fixtures" / "metric_specs_v1.json").read_text())
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": i, "question": "Capital?", "answer": f"{i}.", "contexts": [f"{i}."]}) + "\n"
            for i in ("Paris", "Rome")
        )
    )
    judge = ScriptedJudge([])
    for name in ("faithfulness", "answer_relevancy"):
        store = tmp_path / f"{name}.sqlite"
        with RunStore(store) as runs:
            runs.create(
                RunSpec(
                    run_id="old", dataset=str(data), dataset_fingerprint=open_dataset(data).fingerprint,
                    judge=judge.model_id, judge_model=judge.model_id, metrics=(v1[name],),
                    options=RunOptions().model_dump(mode="json"),
                )
            )  # fmt: skip
            runs.set_status("old", "interrupted")
        if name == "faithfulness":
            # its spec no longer rebuilds (faithfulness 2 makes statements differently), and
            # today's faithfulness is refused too: the finished samples were judged another way
            with pytest.raises(ConfigError, match=r"version was 1, is now 2"):
                metric_from_spec(v1[name])
            with pytest.raises(ResumeError, match=r"cannot resume run old"):
                evaluate(data, [Faithfulness()], judge, store=store, resume="old", progress=False, reasks=1)
            continue
        # everything its judging depends on was recorded: it resumes
        metric = metric_from_spec(v1[name])
        result = evaluate(data, [metric], judge, store=store, resume="old", progress=False, reasks=1)
        assert result.run_id == "old" and result.n_samples == 2


def test_the_report_gate_column_is_the_gates_own_verdict(tmp_path: Path) -> None:
    """Every repeat passes, but one simulated rerun in nine fails: the gate says flaky, so must the column."""
    import re

    from assay.analysis import GatePolicy, analyze_repeats, evaluate_gate
    from assay.run import RunStore

    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [{"faithfulness": [1.0, 1.0, 0.5]}, {"faithfulness": [0.5, 1.0, 1.0]}])
    with RunStore(store) as runs:
        expected = evaluate_gate(analyze_repeats(list(runs.records("r")), "faithfulness"), GatePolicy(threshold=0.7))
    assert expected.outcome == "flaky" and all(expected.repeat_passes)
    out = tmp_path / "report.html"
    code, output = invoke("report", "r", "--store", str(store), "--threshold", "0.7", "--gate", "-o", str(out))
    assert code == 0, output
    html = out.read_text()
    summary = re.sub(r"<[^>]+>", " ", html.split('<section id="summary">')[1].split("</section>")[0])
    assert "GATE FLAKY" in html, html
    assert f"P(pass) {expected.p_pass:.2f}" in summary


def test_a_base_url_carrying_the_key_in_its_query_is_refused_before_any_call(tmp_path: Path) -> None:
    """The client appends /chat/completions after the query: such a URL can never work."""
    from assay.errors import ConfigError
    from assay.models import get_judge

    with pytest.raises(ConfigError, match=r"api_key=\[redacted\] has a query string.*OPENAI_API_KEY") as caught:
        get_judge("openai:m", base_url="http://127.0.0.1:9/v1?api_key=sk-SECRETSECRET")
    assert "SECRETSECRET" not in str(caught.value)
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "a", "answer": "Paris.", "contexts": ["Paris."]}\n')
    code, out = invoke("run", str(data), "--judge", "openai:m", "--base-url", "http://127.0.0.1:9/v1?key=sk-SECRETSECRET",
                       "--store", str(tmp_path / "runs.sqlite"))  # fmt: skip
    assert code == 1 and "SECRETSECRET" not in out and "query string" in out, out


# --- 2. every column named in --map exists -----------------------------------------------------


def test_a_misspelt_map_column_stops_the_run_and_suggests_the_real_one(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("id,question,answer,my_answer,contexts\na,Q?,default answer,the real answer,ctx\n")
    code, out = invoke("run", str(data), "--map", "my_answr=answer", "--judge", "openai:m", "--dry-run",
                       "--base-url", "http://127.0.0.1:9/v1",
                       "--store", str(tmp_path / "runs.sqlite"))  # fmt: skip
    assert code == 1, out
    assert "no column 'my_answr'" in out and "did you mean 'my_answer'?" in out
    assert "columns are id, question, answer, my_answer, contexts" in out


@pytest.mark.parametrize("kind", ["jsonl", "records", "dataframe"])
def test_a_mapping_that_names_no_column_is_an_error_in_python_too(tmp_path: Path, kind: str) -> None:
    from assay import evaluate
    from assay.errors import ConfigError
    from assay.metrics import Faithfulness
    from assay.models import ScriptedJudge

    rows = [{"id": "a", "answer": "x.", "my_contexts": ["x."], "contexts": ["y."]}]
    data: object = rows
    if kind == "jsonl":
        data = tmp_path / "data.jsonl"
        data.write_text("".join(__import__("json").dumps(r) + "\n" for r in rows))
    elif kind == "dataframe":
        data = pytest.importorskip("pandas").DataFrame(rows)
    judge = ScriptedJudge([])
    with pytest.raises(ConfigError, match=r"no column 'my_context'.*did you mean 'my_contexts'\?"):
        evaluate(data, [Faithfulness()], judge, mapping={"my_context": "contexts"}, progress=False)
    assert judge.calls == 0 if hasattr(judge, "calls") else True


# --- 3. a hint never suggests judging the ideal context ----------------------------------------


def test_the_deepeval_hint_never_suggests_judging_the_ideal_context(tmp_path: Path) -> None:
    import json

    from assay.errors import ConfigError, SampleError
    from assay.run import open_dataset, read_jsonl

    both = tmp_path / "both.jsonl"
    both.write_text(
        json.dumps({"id": "a", "input": "Q?", "actual_output": "A.", "retrieval_context": ["r"], "context": ["ideal"]})
        + "\n"
        + json.dumps({"id": "b", "input": "Q?", "actual_output": "B.", "context": ["ideal"]})
        + "\n"
    )
    (_, error) = read_jsonl(both, required=["contexts"])
    assert isinstance(error, SampleError) and error.line == 2
    # --map context=contexts would judge row 1 against its ideal context instead of what it retrieved.
    assert "--map context=contexts" not in str(error)
    assert "retrieval_context" in str(error) and "ideal context" in str(error)
    # When no row has retrieved contexts at all, the mapping cannot take any row's retrieved
    # passages away: the dataset-level error may offer it.
    only = tmp_path / "only.jsonl"
    only.write_text(json.dumps({"id": "b", "input": "Q?", "actual_output": "B.", "context": ["ideal"]}) + "\n")
    from assay.metrics import Faithfulness

    with pytest.raises(ConfigError, match=r"--map context=contexts"):
        open_dataset(only).check_fields([Faithfulness()])


# --- 4. results in input order, DataFrames without a store ------------------------------------


def _slow_first_judge():
    import asyncio
    import json

    from assay.models import FunctionJudge

    async def answer(messages, request):
        user = messages[-1]["content"]
        text = user.split("<answer>\n")[1].split("\n</answer>")[0] if "<answer>" in user else ""
        if text:  # the first rows take longest: they finish last
            await asyncio.sleep(0.02 * (10 - int(text.split()[1].rstrip("."))))
            return json.dumps({"statements": [text]})
        block = user.split("<statements>\n")[1].split("\n</statements>")[0] if "<statements>" in user else ""
        asked = [line.split("] ", 1)[1] for line in block.splitlines() if "] " in line] or ["s"]
        return json.dumps({"verdicts": [{"statement": a, "reason": "ok", "verdict": 1} for a in asked]})

    return FunctionJudge(answer, per_statement=False)


@pytest.mark.parametrize("kind", ["records", "dataframe", "stored dataframe"])
def test_results_and_frames_come_back_in_input_order(tmp_path: Path, kind: str) -> None:
    from assay import evaluate
    from assay.metrics import Faithfulness

    rows = [{"id": f"s{i}", "question": "Q?", "answer": f"Answer {i}.", "contexts": ["c"]} for i in range(8)]
    data: object = rows
    if kind != "records":
        data = pytest.importorskip("pandas").DataFrame(rows)
    store = tmp_path / "runs.sqlite" if kind == "stored dataframe" else None
    result = evaluate(data, [Faithfulness()], _slow_first_judge(), store=store, progress=False, concurrency=8)
    ids = [f"s{i}" for i in range(8)]
    assert [r.sample.id for r in result.results] == ids
    assert list(result.to_pandas()["id"]) == ids


# --- 9. runs list, runs show and the lowest table count samples, say "unknown" ----------------


@pytest.fixture
def judge_server():
    pytest.importorskip("openai")
    from assay.testing import FakeOpenAIServer
    from first_hour import word_judge

    with FakeOpenAIServer(word_judge) as server:
        yield server


def _write_rows(path: Path, rows: list[dict[str, object]]) -> Path:
    import json

    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


ROWS = [
    {
        "id": "good",
        "question": "Capital of France?",
        "answer": "Paris is the capital.",
        "contexts": ["Paris is the capital."],
    },
    {
        "id": "bad",
        "question": "Capital of Spain?",
        "answer": "Lyon is the capital.",
        "contexts": ["Madrid is the capital."],
    },
]


def test_the_lowest_table_lists_a_sample_once_however_many_repeats(tmp_path: Path, judge_server: Any) -> None:
    data = _write_rows(tmp_path / "data.jsonl", ROWS)
    server = judge_server.base_url
    code, out = invoke("run", str(data), "--judge", "openai:fake", "--base-url", server, "--repeats", "3",
                       "--store", str(tmp_path / "runs.sqlite"), "--no-cache")  # fmt: skip
    assert code == 0, out
    lowest = out.split("lowest faithfulness")[1].split("stored in")[0]
    assert lowest.count("bad") == 1, lowest
    assert "3 repeats" in lowest


def test_runs_list_counts_samples_and_runs_show_says_unknown_cost(tmp_path: Path, judge_server: Any) -> None:
    data = _write_rows(tmp_path / "data.jsonl", ROWS)
    store = str(tmp_path / "runs.sqlite")
    server = judge_server.base_url
    code, out = invoke("run", str(data), "--judge", "openai:fake", "--base-url", server, "--repeats", "3",
                       "--store", store, "--no-cache")  # fmt: skip
    assert code == 0, out
    code, listed = invoke("runs", "list", "--store", store)
    assert code == 0
    header, row = [line for line in listed.splitlines() if "│" in line or "┃" in line][:2]
    cells = dict(zip([c.strip() for c in header.split("┃")], [c.strip() for c in row.split("│")], strict=False))
    assert cells["samples"] == "2" and cells["repeats"] == "3", listed
    run_id = cells["run"]
    code, shown = invoke("runs", "show", run_id, "--store", store)
    assert code == 0 and "$0.0000" not in shown and "cost unknown (openai:fake has no price" in shown, shown


def test_runs_list_without_a_store_says_there_are_no_runs_yet(tmp_path: Path) -> None:
    code, out = invoke("runs", "list", "--store", str(tmp_path / "nothing" / "runs.sqlite"))
    assert code == 0 and "no runs yet" in out, out
    assert not (tmp_path / "nothing").exists()


# --- 10. dry runs, --out folders, --set errors, "did you mean", provider/model ----------------


def test_a_dry_run_needs_no_api_key_and_takes_provider_slash_model(tmp_path: Path) -> None:
    data = _write_rows(tmp_path / "data.jsonl", ROWS)
    for judge in ("openai:gpt-4o-mini", "openai/gpt-4o-mini"):
        code, out = invoke("run", str(data), "--judge", judge, "--dry-run", "--store", str(tmp_path / "runs.sqlite"))
        assert code == 0, out
        assert "judge openai:gpt-4o-mini · nothing was called" in out and "~$" in out


def test_provider_slash_model_is_the_same_judge(tmp_path: Path) -> None:
    from assay.models import get_judge

    judge = get_judge("openai/gpt-4o-mini", base_url="http://127.0.0.1:9/v1")
    assert judge.model_id == get_judge("openai:gpt-4o-mini", base_url="http://127.0.0.1:9/v1").model_id
    assert get_judge("anthropic/claude-x", api_key="k").model_id.startswith("anthropic:claude-x")


def test_out_into_a_new_folder_creates_it(tmp_path: Path, judge_server: Any) -> None:
    data = _write_rows(tmp_path / "data.jsonl", ROWS)
    out_file = tmp_path / "results" / "today" / "out.jsonl"
    code, out = invoke("run", str(data), "--judge", "openai:fake", "--base-url", judge_server.base_url,
                       "--out", str(out_file), "--store", str(tmp_path / "runs.sqlite"))  # fmt: skip
    assert code == 0, out
    assert len(out_file.read_text().splitlines()) == 2
    export = tmp_path / "exports" / "run.csv"
    code, out = invoke("runs", "export", "--store", str(tmp_path / "runs.sqlite"),
                       _only_run(tmp_path / "runs.sqlite"), "--format", "csv", "--out", str(export))  # fmt: skip
    assert code == 0 and export.exists(), out


def _only_run(store: Path) -> str:
    from assay.run import RunStore

    with RunStore(store) as runs:
        return runs.latest()


def test_set_errors_name_the_option_and_misspellings_get_a_suggestion(tmp_path: Path) -> None:
    data = _write_rows(tmp_path / "data.jsonl", ROWS)
    base = ["run", str(data), "--judge", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--dry-run"]
    code, out = invoke(*base, "--set", "faithfulness.threshold=abc")
    assert code == 1 and "--set faithfulness.threshold=abc" in out, out
    code, out = invoke(*base, "--set", "faithfulness.threshhold=0.6")
    assert code == 1 and "did you mean 'threshold'?" in out and "--set faithfulness.threshhold=0.6" in out, out
    code, out = invoke(*base, "-m", "faithfulnes")
    assert code == 1 and "did you mean 'faithfulness'?" in out, out


# --- 14. runs export has the question and the answer; LangChain Documents; Inspect base_url ---


def test_runs_export_has_the_question_and_answer_and_a_wide_layout(tmp_path: Path) -> None:
    import csv
    import io

    store = tmp_path / "runs.sqlite"
    make_run(
        store, "r", [{"faithfulness": 1.0, "answer_relevancy": 0.0}, {"faithfulness": None, "answer_relevancy": 1.0}]
    )
    code, out = invoke_stdout("runs", "export", "r", "--store", str(store), "--format", "csv")
    long = list(csv.DictReader(io.StringIO(out)))
    assert long[0]["question"] == "Question 1?" and long[0]["answer"] == "Answer 1."
    code, out = invoke_stdout("runs", "export", "r", "--store", str(store), "--format", "csv", "--wide")
    assert code == 0, out
    wide = list(csv.DictReader(io.StringIO(out)))
    assert [r["id"] for r in wide] == ["s1", "s2"]
    assert wide[0]["faithfulness"] == "1.0" and wide[0]["answer_relevancy"] == "0.0"
    assert wide[1]["faithfulness"] == "" and wide[1]["faithfulness_unscored"] == "parse_failure"
    assert "the judge rambled" in wide[1]["faithfulness_reason"]


def test_the_wide_frame_from_python_is_one_row_per_sample_in_input_order() -> None:
    pytest.importorskip("pandas")
    from assay import evaluate
    from assay.metrics import Faithfulness

    rows = [{"id": f"s{i}", "question": "Q?", "answer": f"Answer {i}.", "contexts": ["c"]} for i in range(5)]
    frame = evaluate(rows, [Faithfulness()], _slow_first_judge(), progress=False).to_pandas(wide=True)
    assert list(frame["id"]) == [f"s{i}" for i in range(5)]
    assert {"question", "answer", "faithfulness", "faithfulness_reason", "faithfulness_unscored"} <= set(frame.columns)
    assert list(frame["faithfulness"]) == [1.0] * 5


class Document:
    """What LangChain's ``langchain_core.documents.Document`` looks like (duck-typed: assay never imports LangChain)."""

    def __init__(self, page_content: str, metadata: dict[str, object] | None = None) -> None:
        self.page_content = page_content
        self.metadata = metadata or {}


def test_langchain_documents_are_contexts() -> None:
    from assay import Sample
    from assay.run import sample_from_record

    sample = Sample(id="a", answer="x", contexts=[Document("Paris is the capital.", {"source": "wiki"})])
    assert sample.contexts == ("Paris is the capital.",)
    # serialized Documents (Document.dict(), LangChain's dumpd) too
    record = {
        "id": "b",
        "answer": "x",
        "retrieved_contexts": [{"page_content": "Madrid.", "metadata": {}, "type": "Document"}],
    }
    assert sample_from_record(record).contexts == ("Madrid.",)


def test_the_inspect_scorer_takes_a_base_url() -> None:
    pytest.importorskip("inspect_ai")
    from assay.errors import ConfigError
    from assay.integrations.inspect import assay_scorer

    assay_scorer("faithfulness", judge="openai:m", base_url="http://127.0.0.1:9/v1")  # no key needed on loopback
    with pytest.raises(ConfigError, match="query string"):
        assay_scorer("faithfulness", judge="openai:m", base_url="http://127.0.0.1:9/v1?api_key=x")


# --- 8. a row with contexts of the wrong type is named, with the type -----------------------


def test_contexts_of_the_wrong_type_name_the_row_and_the_type(tmp_path: Path) -> None:
    data = _write_rows(
        tmp_path / "data.jsonl",
        [{"id": "a", "answer": "A.", "contexts": {"doc": "A."}}, {"id": "b", "answer": "B."}],
    )
    code, out = invoke("run", str(data), "--judge", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                       "--store", str(tmp_path / "runs.sqlite"))  # fmt: skip
    assert code == 1, out
    # not just "no row has 'contexts'": the row that has them, and what is wrong with them
    assert f"{data}:1: field 'contexts': expected a list of strings (or one string), got an object (dict)" in out, out
    every_row_bad = _write_rows(tmp_path / "bad.jsonl", [{"id": "a", "answer": "A.", "retrieved_contexts": [1, 2]}])
    code, out = invoke("run", str(every_row_bad), "--judge", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                       "--store", str(tmp_path / "runs.sqlite"))  # fmt: skip
    assert code == 3, out
    assert "field 'retrieved_contexts[0]': expected a string (or a LangChain Document), got a number (int)" in out
    assert "nothing was judged: every input row (1) was invalid" in out, out


# --- 11. job summary, pass/fail metrics, single runs --------------------------------------------


def test_a_single_run_never_marks_a_sample_or_the_gate_flaky(tmp_path: Path) -> None:
    from assay.analysis import GatePolicy, analyze_repeats, evaluate_gate
    from assay.run import RunStore

    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [{"faithfulness": 0.75}, {"faithfulness": 1.0}, {"faithfulness": (0.8, 5)}])
    with RunStore(store) as runs:
        report = analyze_repeats(list(runs.records("r")), "faithfulness")
    for policy in (GatePolicy(threshold=0.8), GatePolicy(threshold=0.75, per_sample=True)):
        result = evaluate_gate(report, policy)
        assert result.method == "binomial" and 0.0 < result.p_pass < 1.0  # the model's estimate is not certain...
        assert result.stability != "flaky"  # ...but nothing was seen to flake
        assert [s.stability for s in result.samples if s.is_scored].count("flaky") == 0


def test_the_job_summary_says_what_it_left_out_and_where_the_rest_is(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [{"faithfulness": 0.25}] * 8 + [{"faithfulness": None}] * 7 + [{"faithfulness": 1.0}] * 60)
    summary = tmp_path / "summary.md"
    code, out = invoke("gate", "r", "--store", str(store), "--min", "0.95", "--summary-md", str(summary))
    assert code == 1, out
    text = summary.read_text()
    assert "Showing 5 of 8 samples that failed" in text and "assay gate r" in text
    assert "and 2 more (all of them: `assay runs show r`)" in text


def test_a_pass_fail_metric_gate_reads_as_a_pass_rate(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [{"answer_relevancy": 1.0}] * 3 + [{"answer_relevancy": 0.0}])
    code, out = invoke(
        "gate", "r", "--store", str(store), "-m", "answer_relevancy=0.7", "--summary-md", str(tmp_path / "s.md")
    )
    assert code == 0, out
    assert "pass rate 0.750 (3 of 4 samples pass)" in out
    assert "statements needed" not in out  # the statement-count advice of graded metrics
    assert "pass rate" in (tmp_path / "s.md").read_text()


# --- 13. assay retrieval reads peers' names, takes --map and --base-url, goes on past a bad row -


RETRIEVAL_ROWS = {
    "ragas": [
        {"user_input": "Who designed it?", "retrieved_contexts": ["Gustave built it.", "Koechlin designed it."],
         "reference_contexts": ["Koechlin designed it."], "response": "Koechlin.", "reference": "Koechlin"},
        {"user_input": "Largest planet?", "retrieved_contexts": ["Jupiter is the largest planet."],
         "reference_contexts": ["Jupiter is the largest planet."]},
    ],
    "deepeval": [
        {"input": "Who designed it?", "retrieval_context": ["Gustave built it.", "Koechlin designed it."],
         "context": ["Koechlin designed it."], "actual_output": "Koechlin."},
        {"input": "Largest planet?", "retrieval_context": ["Jupiter is the largest planet."],
         "context": ["Jupiter is the largest planet."]},
    ],
}  # fmt: skip


@pytest.mark.parametrize("shape", ["ragas", "deepeval"])
def test_retrieval_reads_ragas_and_deepeval_columns(tmp_path: Path, shape: str) -> None:
    import json

    data = _write_rows(tmp_path / "data.jsonl", RETRIEVAL_ROWS[shape])
    out = tmp_path / "report.json"
    code, printed = invoke("retrieval", str(data), "--judge", "token", "--k", "1,2", "-o", str(out))
    assert code == 0, printed
    report = json.loads(out.read_text())
    assert report["mean"]["precision@1"] == 0.5 and report["mean"]["mrr@2"] == 0.75
    assert [q["query"] for q in report["queries"]] == ["Who designed it?", "Largest planet?"]


def test_retrieval_takes_map_and_reports_a_bad_row_and_goes_on(tmp_path: Path) -> None:
    import json

    rows = [
        {"q": "Who designed it?", "gold": ["Koechlin designed it."], "hits": ["Koechlin designed it."]},
        {"q": "Broken row", "gold": [], "hits": ["x"]},
        {"q": "Largest planet?", "gold": ["Jupiter is the largest planet."], "hits": ["Mars is red."]},
    ]
    data = _write_rows(tmp_path / "data.jsonl", rows)
    out = tmp_path / "report.json"
    maps = ["--map", "q=query", "--map", "gold=expected", "--map", "hits=retrieved"]
    code, printed = invoke("retrieval", str(data), *maps, "--k", "1", "-o", str(out))
    assert code == 2, printed  # evaluated, but a row was invalid
    assert f"{data}:2: gold: List should have at least 1 item" in printed  # the column as written
    assert json.loads(out.read_text())["mean"]["hit_rate@1"] == 0.5  # rows 1 and 3 were judged
    code, printed = invoke("retrieval", str(data), "--map", "qq=query", "--k", "1")
    assert code == 1 and "no column 'qq'" in printed, printed


def test_retrieval_llm_judge_takes_a_base_url(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    from assay.testing import FakeOpenAIServer

    data = _write_rows(tmp_path / "data.jsonl", RETRIEVAL_ROWS["ragas"])
    with FakeOpenAIServer() as server:
        code, printed = invoke("retrieval", str(data), "--judge", "llm", "--model", "openai:fake",
                               "--base-url", server.base_url, "--k", "1")  # fmt: skip
        assert code == 0, printed
        assert server.calls == 2  # one pair per query at k=1


# --- peers: several metrics in one pytest assertion (DeepEval's assert_test) --------------------


def _rag_judge():  # type: ignore[no-untyped-def]
    """Statements are sentences, supported when every word is in the context; relevant when a word is shared."""
    import json

    from assay.models import FunctionJudge
    from first_hour import word_judge

    def answer(messages, request):  # type: ignore[no-untyped-def]
        name = request.schema.__name__ if request.schema is not None else None
        body = {"messages": list(messages), "response_format": {"json_schema": {"name": name}}}
        if name == "Statements" or name == "VerdictList" or name == "RelevanceJudgement":
            return word_judge(body)
        return json.dumps({})

    return FunctionJudge(answer, per_statement=False)


def test_assert_scores_gates_several_metrics_and_lists_every_failure() -> None:
    from assay import Sample
    from assay.metrics import AnswerRelevancy
    from assay.pytest_plugin import assert_scores

    good = Sample(id="g", question="Capital of France?", answer="Paris is the capital of France.",
                  contexts=["Paris is the capital of France."])  # fmt: skip
    scores = assert_scores(good, ["faithfulness", AnswerRelevancy()], min={"faithfulness": 0.8}, judge=_rag_judge())
    assert scores["faithfulness"].value == 1.0 and scores["answer_relevancy"].value == 1.0
    bad = Sample(id="b", question="Capital of France?", answer="Lyon is big.", contexts=["Paris is the capital."])
    with pytest.raises(AssertionError) as failed:
        assert_scores(bad, ["faithfulness", "answer_relevancy"], min=0.5, judge=_rag_judge())
    message = str(failed.value)
    assert message.startswith("2 of 2 metrics failed")
    assert "assay faithfulness of sample 'b': score 0.000 < 0.5" in message and "Lyon is big." in message
    assert "assay answer_relevancy of sample 'b'" in message
    from assay.errors import ConfigError

    with pytest.raises(ConfigError, match="did you mean 'faithfulness'"):
        assert_scores(good, ["faithfulnes"], judge=_rag_judge())


# --- a run whose judge calls another model answered says so everywhere ----------------------------


def test_a_run_answered_by_two_models_says_its_scores_mix_judges(tmp_path: Path) -> None:
    # A proxy that falls back to another model for some calls: every score looked like the
    # asked judge's, and nothing in the summary, the stored run, the gate or the report said otherwise.
    pytest.importorskip("openai")
    import html

    from assay.report import write_report
    from assay.testing import FakeOpenAIServer
    from first_hour import word_judge

    fallback = "fallback-<b>model</b>"

    def answered_as(body: Any, call: int) -> str:
        return fallback if call % 2 == 0 else str(body["model"])

    data = _write_rows(tmp_path / "data.jsonl", ROWS)
    store = tmp_path / "runs.sqlite"
    with FakeOpenAIServer(word_judge, answered_as=answered_as) as server:
        code, out = invoke("run", str(data), "--judge", "openai:fake", "--base-url", server.base_url,
                           "--store", str(store), "--no-cache")  # fmt: skip
        calls = server.calls
    assert code == 0, out
    assert calls >= 2
    flat = " ".join(out.split())
    assert "warning: judge calls were answered by 2 models: openai:fake (" in flat
    assert f"openai:{fallback} (" in flat and "the run asked for openai:fake: the scores mix judges" in flat
    run_id = flat.split("stored in ")[1].split(" as run ")[1].split()[0]
    code, shown = invoke("runs", "show", run_id, "--store", str(store))
    assert code == 0 and "the scores mix judges" in " ".join(shown.split())
    # the gate does not pass scores that mix judges, whatever they show, unless told to
    code, gated = invoke("gate", run_id, "--store", str(store), "--min", "0.0")
    flat_gate = " ".join(gated.split())
    assert code == 2 and "GATE UNTRUSTED" in flat_gate, gated
    assert "faithfulness: judge calls were answered by 2 models" in flat_gate
    assert "not gated: judge calls were answered by 2 models" in flat_gate and "no one judge's verdict" in flat_gate
    code, gated = invoke("gate", run_id, "--store", str(store), "--min", "0.0", "--allow-untrusted-judge")
    assert code == 0 and "gated anyway (--allow-untrusted-judge)" in " ".join(gated.split()), gated
    write_report(store, run_id, tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text()
    assert "the scores mix judges" in page and html.escape(f"openai:{fallback}") in page
    assert fallback not in page  # the server's text is escaped on the page


def test_a_run_answered_by_the_model_asked_for_or_its_snapshot_says_nothing_of_models() -> None:
    from assay.analysis import judge_models_note

    assert judge_models_note({"openai:gpt-4o-mini-2024-07-18": 12}, "openai:gpt-4o-mini") is None
    assert judge_models_note({"openai:fake": 3}, "openai:fake") is None
    assert judge_models_note({}, "openai:fake") is None
    assert judge_models_note({"openai:gpt-4o": 3}, "openai:gpt-4o-mini") == (
        "every judge call was answered by openai:gpt-4o, not openai:gpt-4o-mini as asked"
    )


def test_a_priced_judge_whose_server_sends_no_token_counts_costs_unknown_not_zero(tmp_path: Path) -> None:
    # A proxy that omits `usage`: every call read as 0 tokens, and a paid gpt-4o-mini run
    # was summarised as costing $0.0000.
    pytest.importorskip("openai")
    from assay.testing import FakeOpenAIServer
    from first_hour import word_judge

    data = _write_rows(tmp_path / "data.jsonl", ROWS)
    store = tmp_path / "runs.sqlite"
    with FakeOpenAIServer(word_judge, include_usage=False) as server:
        code, out = invoke("run", str(data), "--judge", "openai:gpt-4o-mini", "--base-url", server.base_url,
                           "--store", str(store), "--no-cache")  # fmt: skip
    assert code == 0, out
    flat = " ".join(out.split())
    assert "cost unknown (openai:gpt-4o-mini reported no token counts)" in flat
    assert "$0.0000" not in flat
    run_id = flat.split("stored in ")[1].split(" as run ")[1].split()[0]
    code, shown = invoke("runs", "show", run_id, "--store", str(store))
    assert "cost unknown (openai:gpt-4o-mini reported no token counts)" in " ".join(shown.split())
