"""Every option of every command reads ``ASSAY_<COMMAND>_<OPTION>``, the name the docs give.

The variables used to follow the Python parameters: ``ASSAY_GATE_MIN=0.95 assay gate`` gated
at the default 0.8 (the variable read was ``ASSAY_GATE_MIN_SCORE``), ``ASSAY_RUN_STORE``
left the run in ``.assay/runs.sqlite`` (``ASSAY_RUN_STORE_PATH``). Each test sets the
documented variable and looks at what the command did with it.
"""

from __future__ import annotations

import csv
import io
import json
import warnings
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer.testing import CliRunner

from assay.cli import app
from assay.run import RunStore
from assay.testing import FakeOpenAIServer

pytest.importorskip("openai")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250", "NO_COLOR": "1", **(env or {})})
    return result.exit_code, result.output


def sky_judge(body: dict[str, Any]) -> str:
    """Statements are the answer's sentences; one is supported when it mentions the sky."""
    user = body["messages"][1]["content"]
    if "<sentence>" in user:
        return json.dumps({"statements": [user.split("<sentence>\n")[1].split("\n</sentence>")[0]]})
    if "<answer>" in user:
        answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
        return json.dumps({"statements": [s.strip() + "." for s in answer.split(".") if s.strip()]})
    if "<statement>" in user:  # --set faithfulness.strategy=per_statement: one statement a call
        statement = user.split("<statement>\n")[1].split("\n</statement>")[0]
        return json.dumps({"verdict": int("sky" in statement), "reason": "r"})
    items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    statements = [i.split("] ", 1)[1] for i in items]
    return json.dumps({"verdicts": [{"statement": s, "reason": "r", "verdict": int("sky" in s)} for s in statements]})


# Faithfulness 1.0 and 0.8: a mean of 0.9, a pass at the default --min 0.8, a fail at 0.95.
ANSWERS = [
    "The sky is blue. The sky is wide.",
    "The sky is blue. The sky is high. The sky is vast. The sky is clear. The grass is red.",
]


def write_rows(path: Path, answer_field: str = "answer", contexts_field: str = "contexts") -> None:
    path.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "question": "Sky?", answer_field: a, contexts_field: ["The sky is blue."]})
            + "\n"
            for i, a in enumerate(ANSWERS)
        )
    )


def judged_run(store: str, server: FakeOpenAIServer) -> str:
    """A finished run in ``store`` (given on the command line); its id."""
    write_rows(Path("data.jsonl"))
    code, out = invoke("run", "data.jsonl", "--judge", "openai:fake", "--base-url", server.base_url,
                       "--store", store, "--progress", "none")  # fmt: skip
    assert code == 0, out
    with RunStore(store) as runs:
        (info,) = runs.runs()
    return info.run_id


# -- the rule, over the whole command tree -------------------------------------------------------


def documented_name(path: list[str], option: Any) -> str:
    """``ASSAY_<COMMAND PATH>_<FIRST LONG NAME>``, upper-cased, ``-`` as ``_``: the rule docs/reference states."""
    (long, *_) = [o for o in option.opts if o.startswith("--")]
    return "_".join(["ASSAY", *path, long[2:]]).upper().replace("-", "_")


def every_option() -> list[tuple[list[str], Any, str]]:
    """``(command path, option, the variable it reads first)`` for every option of the app, at any depth."""
    found: list[tuple[list[str], Any, str]] = []

    def walk(command: Any, path: list[str]) -> None:
        prefix = "_".join(["ASSAY", *path]).upper().replace("-", "_")
        for param in command.params:
            if param.param_type_name != "option":
                continue
            envvar = param.envvar
            if envvar is None:  # click's own name, from the Python parameter (only typer's completion options)
                first = f"{prefix}_{param.name.upper()}"
            else:
                first = envvar if isinstance(envvar, str) else envvar[0]
            found.append((path, param, first))
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


def test_every_option_of_every_command_reads_its_documented_variable_first() -> None:
    options = every_option()
    assert len(options) > 100  # the walk reached the whole tree, nested groups included
    assert any(path == ["runs", "export"] for path, _, _ in options)
    wrong = {
        f"assay {' '.join(path)} {option.opts[0]}": (first, documented_name(path, option))
        for path, option, first in options
        if first != documented_name(path, option)
    }
    assert wrong == {}


def test_an_option_with_a_named_variable_reads_the_command_one_first_then_the_named_one() -> None:
    envvars = {
        (tuple(path), option.name): option.envvar for path, option, _ in every_option() if option.name == "judge"
    }
    assert envvars[("run",), "judge"] == ["ASSAY_RUN_JUDGE", "ASSAY_JUDGE"]
    assert envvars[("calibrate",), "judge"] == ["ASSAY_CALIBRATE_JUDGE", "ASSAY_JUDGE"]
    assert envvars[("judges", "bench"), "judge"] == "ASSAY_JUDGES_BENCH_JUDGE"


def test_help_names_the_documented_variables() -> None:
    code, out = invoke("gate", "--help")
    assert code == 0, out
    assert "ASSAY_GATE_MIN]" in out and "ASSAY_GATE_STORE]" in out
    assert "ASSAY_GATE_MIN_SCORE" not in out and "ASSAY_GATE_STORE_PATH" not in out
    code, out = invoke("runs", "export", "--help")
    assert "ASSAY_RUNS_EXPORT_FORMAT" in out and "ASSAY_RUNS_EXPORT_FMT" not in out
    code, out = invoke("run", "--help")
    assert "ASSAY_RUN_SET]" in out and "ASSAY_RUN_MAP]" in out and "ASSAY_RUN_STORE]" in out
    assert "ASSAY_RUN_SET_" not in out and "ASSAY_RUN_MAP_" not in out and "ASSAY_RUN_STORE_PATH" not in out
    assert "ASSAY_RUN_JUDGE, ASSAY_JUDGE" in out


# -- what a command does with the variable ------------------------------------------------------


def test_assay_run_store_is_where_the_run_is_kept(tmp_path: Path) -> None:
    write_rows(tmp_path / "data.jsonl")
    with FakeOpenAIServer(sky_judge) as server:
        code, out = invoke("run", "data.jsonl", "--judge", "openai:fake", "--progress", "none",
                           env={"ASSAY_RUN_STORE": "mine.sqlite", "ASSAY_RUN_BASE_URL": server.base_url})  # fmt: skip
    assert code == 0, out
    assert (tmp_path / "mine.sqlite").is_file()
    assert not (tmp_path / ".assay" / "runs.sqlite").exists()
    with RunStore("mine.sqlite") as store:
        (info,) = store.runs()
    assert info.status == "finished" and info.n_results == 2


def test_assay_gate_min_is_the_gate_threshold_and_assay_gate_store_its_store(tmp_path: Path) -> None:
    with FakeOpenAIServer(sky_judge) as server:
        judged_run("mine.sqlite", server)
    code, out = invoke("gate", "--latest", "--store", "mine.sqlite")
    assert code == 0, out  # 0.9 passes the default 0.8
    assert ">= 0.8" in out
    code, out = invoke("gate", "--latest", env={"ASSAY_GATE_MIN": "0.95", "ASSAY_GATE_STORE": "mine.sqlite"})
    assert code == 1, out
    assert ">= 0.95" in out and ">= 0.8" not in out
    # the command line still beats the environment
    env = {"ASSAY_GATE_MIN": "0.95", "ASSAY_GATE_STORE": "mine.sqlite"}
    code, out = invoke("gate", "--latest", "--min", "0.5", env=env)
    assert code == 0 and ">= 0.5" in out, out


def test_a_dashed_option_reads_its_variable_with_an_underscore(tmp_path: Path) -> None:
    write_rows(tmp_path / "data.jsonl")
    with FakeOpenAIServer(sky_judge) as server:
        # OPENAI_BASE_URL, set for some other tool, names a port nothing listens on; assay's own wins
        env = {"ASSAY_RUN_BASE_URL": server.base_url, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
        code, out = invoke(
            "run", "data.jsonl", "--judge", "openai:fake", "--progress", "none", "--retries", "0", env=env
        )
        assert server.calls == 2
    assert code == 0, out
    code, out = invoke("gate", "--latest", env={"ASSAY_GATE_SUMMARY_MD": "summary.md"})
    assert code == 0, out
    assert "faithfulness" in (tmp_path / "summary.md").read_text()


def test_a_nested_subcommand_reads_group_command_option(tmp_path: Path) -> None:
    with FakeOpenAIServer(sky_judge) as server:
        run_id = judged_run("mine.sqlite", server)
    code, out = invoke("runs", "export", run_id,
                       env={"ASSAY_RUNS_EXPORT_FORMAT": "csv", "ASSAY_RUNS_EXPORT_STORE": "mine.sqlite"})  # fmt: skip
    assert code == 0, out
    table = list(csv.DictReader(io.StringIO(out[out.index("run_id,") :])))  # after the "exported" line
    assert [row["id"] for row in table] == ["r0", "r1"]
    assert [float(row["value"]) for row in table] == [1.0, 0.8]


def test_a_repeatable_option_takes_its_values_from_one_variable_split_on_spaces(tmp_path: Path) -> None:
    write_rows(tmp_path / "renamed.jsonl", answer_field="response", contexts_field="passages")
    env = {
        "ASSAY_RUN_MAP": "response=answer passages=contexts",
        "ASSAY_RUN_SET": "faithfulness.decomposer=llm faithfulness.strategy=per_statement",
    }
    with FakeOpenAIServer(sky_judge) as server:
        code, out = invoke("run", "renamed.jsonl", "--judge", "openai:fake", "--base-url", server.base_url,
                           "--progress", "none", "--no-cache", env=env)  # fmt: skip
        prompts = [r["messages"][1]["content"] for r in server.requests]
    # both --set values reached the metric, where the defaults make one verdicts call a sample:
    # a decomposition call a sample (llm), and verdict calls of one statement each (per_statement)
    assert sum("<answer>" in p for p in prompts) == 2
    assert sum("<statement>" in p for p in prompts) == len(prompts) - 2 > 0
    assert not any("<statements>" in p for p in prompts)
    assert code == 0, out
    with RunStore(".assay/runs.sqlite") as store:
        (info,) = store.runs()
    assert info.summary is not None and info.summary["faithfulness"]["mean"] == pytest.approx(0.9)


def test_a_flag_whose_parameter_is_named_otherwise_reads_its_option_name(tmp_path: Path) -> None:
    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 2.0 mine\nq1 Q0 d2 2 1.0 mine\n")
    code, out = invoke("trec", "qrels", "run", "-m", "map", env={"ASSAY_TREC_JSON": "1"})
    assert code == 0, out
    assert json.loads(out)["aggregate"]["map"] == pytest.approx(1.0)


def test_the_command_variable_beats_the_named_one(tmp_path: Path) -> None:
    write_rows(tmp_path / "data.jsonl")
    code, out = invoke("run", "data.jsonl", "--dry-run",
                       env={"ASSAY_JUDGE": "openai:gpt-4o", "ASSAY_RUN_JUDGE": "openai:gpt-4o-mini"})  # fmt: skip
    assert code == 0, out
    assert "gpt-4o-mini" in out


# -- the old spellings ---------------------------------------------------------------------------


def test_an_old_parameter_spelling_is_still_read_and_names_the_variable_to_set(tmp_path: Path) -> None:
    with FakeOpenAIServer(sky_judge) as server:
        judged_run(".assay/runs.sqlite", server)
    with pytest.warns(FutureWarning, match="ASSAY_GATE_MIN_SCORE is the old name of ASSAY_GATE_MIN"):
        code, out = invoke("gate", "--latest", env={"ASSAY_GATE_MIN_SCORE": "0.95"})
    assert code == 1 and ">= 0.95" in out, out
    # the documented name set too: it wins, and nothing is said
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out = invoke("gate", "--latest", env={"ASSAY_GATE_MIN_SCORE": "0.95", "ASSAY_GATE_MIN": "0.5"})
    assert code == 0 and ">= 0.5" in out, out


def test_an_old_spelling_that_is_another_options_name_reaches_only_that_option() -> None:
    from assay.cli._envvars import AssayGroup

    tiny = typer.Typer(cls=AssayGroup, context_settings={"auto_envvar_prefix": "ASSAY"})

    @tiny.command("show")
    def show(
        store_path: Annotated[str, typer.Option("--store")] = "default.sqlite",
        other: Annotated[str, typer.Option("--store-path")] = "-",
    ) -> None:
        typer.echo(f"store={store_path} other={other}")

    @tiny.command("unused")
    def unused() -> None: ...

    result = CliRunner().invoke(tiny, ["show"], env={"ASSAY_SHOW_STORE_PATH": "x.sqlite"})
    assert result.output.strip() == "store=default.sqlite other=x.sqlite"
