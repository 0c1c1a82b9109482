"""The plugin examples of CONTRIBUTING.md, run as they are, and judge backends found through entry points.

``examples/plugins`` holds a metric and a judge backend a contributor copies. They are
installed here the way a package installs them: a ``*.dist-info`` with an
``entry_points.txt`` on ``sys.path``, found by ``importlib.metadata`` like any other.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from assay import Sample, evaluate
from assay.errors import ConfigError
from assay.metrics import build_metric, metric_entries, metric_from_spec, score_safely
from assay.models import FunctionJudge, JudgeModel, get_judge, judge_forms, judge_plugins
from assay.models import _registry as registry
from evaluate_kept import evaluate_kept

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ROOT / "examples" / "plugins"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"

ENTRY_POINTS = """\
[assay.judges]
command = command_judge:build

[assay.metrics]
reference_agreement = reference_agreement:build
"""

# A stand-in for a local LLM CLI: reads the request on stdin, answers the agreement question.
FAKE_LLM = r"""
import json, sys, time
request = json.load(sys.stdin)
user = request["messages"][-1]["content"]
if "FAIL" in user:
    sys.stderr.write("model crashed: out of memory\n")
    sys.exit(3)
if "SLOW" in user:
    time.sleep(30)
reference = user.split("<reference>\n")[1].split("\n</reference>")[0]
answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
agrees = reference.lower() in answer.lower()
reason = "it says " + reference if agrees else "it never says " + reference
assert request["schema"]["properties"]["verdict"], request["schema"]
print(json.dumps({"verdict": int(agrees), "reason": reason}))
"""


def write_distribution(site: Path) -> None:
    """What ``pip install`` leaves for a package declaring the two entry points."""
    info = site / "assay_plugin_examples-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: assay-plugin-examples\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The examples installed as a distribution on sys.path; yields the fake LLM script."""
    site = tmp_path / "site"
    write_distribution(site)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(PLUGINS))
    script = tmp_path / "fake_llm.py"
    script.write_text(FAKE_LLM)
    yield script
    for name in ("command_judge", "reference_agreement"):
        sys.modules.pop(name, None)


def command(script: Path) -> str:
    return f"command:{sys.executable} {script}"


SAMPLES = [
    Sample(id="yes", question="Capital of France?", reference="Paris", answer="It is Paris, on the Seine."),
    Sample(id="no", question="Capital of France?", reference="Paris", answer="It is Lyon."),
]


def test_both_examples_run_through_their_entry_points_with_a_real_subprocess(installed: Path) -> None:
    assert "command" in judge_plugins()
    assert "command:MODEL" in judge_forms()
    assert metric_entries()["reference_agreement"].summary == "plugin from reference_agreement:build"

    judge = get_judge(command(installed))
    assert isinstance(judge, JudgeModel)
    assert judge.model_id == f"command:{Path(sys.executable).name}"
    metric = build_metric("reference_agreement")
    result = evaluate(SAMPLES, [metric], judge, progress=False)

    scores = {r.sample.id: r.scores["reference_agreement"] for r in result.results}
    assert (scores["yes"].value, scores["no"].value) == (1.0, 0.0)
    assert scores["no"].verdicts[0].reason == "it never says Paris"
    assert scores["yes"].explanation == "it says Paris"
    assert [c.purpose for c in scores["yes"].calls] == ["reference_agreement.verdict"]
    # The spec rebuilds the plugin's metric (the class is found by its import path).
    assert metric_from_spec(scores["yes"].spec or metric.spec()) == metric


def test_a_failing_or_hanging_command_is_an_unscored_judge_error(installed: Path) -> None:
    from command_judge import CommandJudge

    failing = Sample(id="f", question="Q? FAIL", reference="x", answer="x")
    judge = get_judge(command(installed))
    [result] = evaluate_kept([failing], [build_metric("reference_agreement")], judge, progress=False).results
    score = result.scores["reference_agreement"]
    assert score.unscored_reason is not None and score.unscored_reason.value == "judge_error"
    assert "exited with status 3: model crashed: out of memory" in (score.detail or "")

    slow = Sample(id="s", question="Q? SLOW", reference="x", answer="x")
    judge = CommandJudge(f"{sys.executable} {installed}", timeout_s=0.5)
    started = time.monotonic()
    [result] = evaluate_kept([slow], [build_metric("reference_agreement")], judge, progress=False).results
    assert time.monotonic() - started < 10
    assert "no answer within 0.5 s" in (result.scores["reference_agreement"].detail or "")


def test_the_metric_example_is_unscored_when_the_judge_answer_is_unusable() -> None:
    sys.path.insert(0, str(PLUGINS))
    try:
        from reference_agreement import ReferenceAgreement
    finally:
        sys.path.remove(str(PLUGINS))
        sys.modules.pop("reference_agreement", None)
    [result] = evaluate([SAMPLES[0]], [ReferenceAgreement()], FunctionJudge(lambda m, r: "yes"), progress=False).results
    score = result.scores["reference_agreement"]
    assert score.unscored_reason is not None and score.unscored_reason.value == "parse_failure"
    # A row without the fields it needs never reaches the metric: an invalid row, as in assay run.
    rows = [SAMPLES[0], Sample(id="q", answer="A.")]
    result = evaluate(rows, [ReferenceAgreement()], FunctionJudge(lambda m, r: ""), progress=False)
    assert [r.sample.id for r in result.results] == [SAMPLES[0].id]
    assert [e.detail for e in result.errors] == ["missing or empty field 'question', 'reference'"]
    # Called on its own, the metric is guarded the same way: unscored missing_field, no judge call.
    score = asyncio.run(score_safely(ReferenceAgreement(), Sample(id="q", answer="A."), FunctionJudge(lambda m, r: "")))
    assert score.detail == "sample lacks question, reference"


def test_assay_run_finds_both_plugins_in_a_fresh_process(installed: Path, tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(s.model_dump(exclude_defaults=True)) + "\n" for s in SAMPLES))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(PLUGINS)])}
    run = subprocess.run(
        [
            *(sys.executable, "-m", "assay", "run", str(data), "-m", "reference_agreement"),
            *("--judge", command(installed), "--out", str(tmp_path / "out.jsonl")),
            *("--store", str(tmp_path / "runs.sqlite"), "--progress", "none"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert {r["id"]: r["scores"]["reference_agreement"]["value"] for r in records} == {"yes": 1.0, "no": 0.0}


# -- the entry point lookup itself, with entry_points() replaced --------------------------


class EchoJudge(FunctionJudge):
    """A judge a fake plugin module builds."""


def echo_factory(model: str) -> JudgeModel:
    return EchoJudge(lambda m, r: "{}", name=f"echo:{model}")


def keyed_factory(model: str, *, api_key: str | None = None) -> JudgeModel:
    return EchoJudge(lambda m, r: "{}", name=f"keyed:{model}:{bool(api_key)}")


def not_a_judge(model: str) -> object:
    return {"model": model}


@pytest.fixture
def fake_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("fake_judge_plugins")
    for name, value in [("echo", echo_factory), ("keyed", keyed_factory), ("bad", not_a_judge)]:
        setattr(module, name, value)
    monkeypatch.setitem(sys.modules, "fake_judge_plugins", module)
    points = [
        EntryPoint(name="echo", value="fake_judge_plugins:echo", group="assay.judges"),
        EntryPoint(name="echo", value="fake_judge_plugins:bad", group="assay.judges"),  # a second "echo": ignored
        EntryPoint(name="keyed", value="fake_judge_plugins:keyed", group="assay.judges"),
        EntryPoint(name="bad", value="fake_judge_plugins:bad", group="assay.judges"),
        EntryPoint(name="broken", value="no_such_module_anywhere:build", group="assay.judges"),
        EntryPoint(name="local", value="fake_judge_plugins:echo", group="assay.judges"),  # cannot take over
    ]

    def entry_points(*, group: str) -> list[EntryPoint]:
        return [p for p in points if p.group == group]

    monkeypatch.setattr(registry, "entry_points", entry_points)


def test_plugins_come_after_the_built_ins_and_the_first_of_a_name_wins(fake_plugins: None) -> None:
    plugins = judge_plugins()
    assert sorted(plugins) == ["bad", "broken", "echo", "keyed"]
    assert plugins["echo"].value == "fake_judge_plugins:echo"
    judge = get_judge("echo:tiny")
    assert isinstance(judge, EchoJudge) and judge.model_id == "echo:tiny"
    assert type(get_judge("local:/models/x.gguf")).__name__ == "LocalJudge"


def test_options_reach_a_plugin_that_takes_them_and_stop_one_that_does_not(fake_plugins: None) -> None:
    assert get_judge("keyed:m", api_key="sk-test").model_id == "keyed:m:True"
    with pytest.raises(ConfigError, match=r"judge plugin 'echo' \(fake_judge_plugins:echo\) cannot be called as "):
        get_judge("echo:m", base_url="http://127.0.0.1:1")


def test_a_broken_plugin_or_one_returning_no_judge_is_named(fake_plugins: None) -> None:
    with pytest.raises(
        ConfigError, match=r"judge plugin 'broken' \(no_such_module_anywhere:build\) could not be loaded"
    ):
        get_judge("broken:m")
    with pytest.raises(ConfigError, match=r"judge plugin 'bad' .* returned a dict, not a judge"):
        get_judge("bad:m")


def test_an_unknown_judge_lists_the_plugins(fake_plugins: None) -> None:
    with pytest.raises(ConfigError) as raised:
        get_judge("nope:m")
    message = str(raised.value)
    assert message.startswith("unknown judge 'nope:m'; use one of: local, ")
    assert message.endswith("anthropic:MODEL, bad:MODEL, broken:MODEL, echo:MODEL, keyed:MODEL")


def test_the_guide_names_files_that_exist_and_the_commands_it_documents() -> None:
    guide = CONTRIBUTING.read_text(encoding="utf-8")
    for path in ("examples/plugins/reference_agreement.py", "examples/plugins/command_judge.py"):
        assert path in guide and (ROOT / path).exists()
    for referenced in set(_paths_in(guide)):
        assert (ROOT / referenced).exists(), f"CONTRIBUTING.md names {referenced}, which does not exist"
    assert '[project.entry-points."assay.judges"]' in guide and '[project.entry-points."assay.metrics"]' in guide
    assert "make test" in guide and "make lint" in guide and '-m "not slow"' in guide


def _paths_in(text: str) -> Iterator[str]:
    import re

    for match in re.finditer(r"`((?:src|tests|docs|examples|benchmarks)/[\w./-]+\.(?:py|md|jsonl|yml))`", text):
        yield match.group(1)
