"""Every score says how far its judge can be trusted, and gates refuse a judge near chance (issue 57).

A run of agent_goal_accuracy with the local judge printed a mean and a CI as confidently as
agent_state_match, though one agrees with the environment at 0.35 [0.20-0.55] and the
other at 0.98; ``assay gate`` passed or failed on it like any other metric; and a user's
own calibration was shown once, in ``assay calibrate``'s output, never beside a run. Each
door is tested here; each test failed on the code before the fix.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay import Faithfulness, Sample, evaluate
from assay._scores import MetricSpec, Score, Verdict
from assay.analysis import agreement
from assay.cli import app
from assay.metrics import build_metric
from assay.metrics._registry import builtin_names
from assay.models import FunctionJudge, JudgeRequest
from assay.models._weights import DEFAULT_MODEL_SHA256
from assay.run import JudgeRecord, RunSpec, RunStore, SampleResult, new_run_id, store_agreement, trust_for
from assay.run._trust import TRUST_TABLE, default_judge_settings, settings_fingerprint
from assay.testing import FakeOpenAIServer, word_overlap_answer

DEFAULT_LOCAL = JudgeRecord(
    model_id="local:qwen2.5-coder-1.5b-instruct-q4_k_m",
    identity=f"local:sha256:{DEFAULT_MODEL_SHA256}:strings<=300:build=avx2@0.3.36",
    components={"weights": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (Q4_K_M as shipped)", "build": "AVX2"},
)
GOAL = "agent_goal_accuracy"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "400", "OPENAI_API_KEY": "sk-test"})
    return result.exit_code, result.output


# --- the shipped table -------------------------------------------------------------------------


def test_the_shipped_table_was_measured_with_todays_settings() -> None:
    """Fails when a metric's or the default judge's cache-relevant settings change without a new table.

    Regenerate with ``python benchmarks/trust_table.py`` (``--documented`` re-records the
    written-down figures only if the change cannot move them: say why in the commit).
    """
    table = json.loads(TRUST_TABLE.read_text())
    assert table["judge"]["settings"] == default_judge_settings(), "the default judge changed: regenerate the table"
    stale = [
        name
        for name, entry in table["metrics"].items()
        if entry["settings_fingerprint"] != settings_fingerprint(build_metric(name).spec())
    ]
    assert not stale, f"{stale} changed their settings since the trust table was written: regenerate it"
    for name, entry in table["metrics"].items():
        assert name in builtin_names()
        if "model_free" in entry:
            continue
        for figure in entry["figures"].values():  # every figure says what, on what, with what, when, from where
            low, high = figure["ci"]
            assert 0 <= low <= figure["balanced_accuracy"] <= high <= 1
            assert figure["n"] > 0 and figure["dataset"] and figure["date"] and figure["measured_with"]
            assert figure["source"].startswith("benchmarks/")


def test_a_changed_setting_makes_the_fingerprint_differ() -> None:
    """The fingerprint covers the settings a verdict depends on: a threshold, a prompt version, a version."""
    base = build_metric("faithfulness").spec()
    assert settings_fingerprint(base) == settings_fingerprint(build_metric("faithfulness").spec())
    changed = build_metric("faithfulness", {"threshold": "0.7"}).spec()
    assert settings_fingerprint(changed) != settings_fingerprint(base)
    bumped = base.model_copy(update={"version": base.version + "-next"})
    assert settings_fingerprint(bumped) != settings_fingerprint(base)
    prompts = dict(base.params["prompts"])
    prompts[next(iter(prompts))] = "999"
    reprompted = base.model_copy(update={"params": {**base.params, "prompts": prompts}})
    assert settings_fingerprint(reprompted) != settings_fingerprint(base)


def test_each_metric_gets_its_kind_of_figure() -> None:
    faithfulness = trust_for(build_metric("faithfulness").spec(), DEFAULT_LOCAL)
    assert faithfulness.kind == "shipped" and not faithfulness.untrusted
    shipped = json.loads(TRUST_TABLE.read_text())["metrics"]["faithfulness"]["figure"]  # the table, not a copy
    ba, (lo, hi), n = shipped["balanced_accuracy"], shipped["ci"], shipped["n"]
    assert faithfulness.text().startswith(
        f"agrees with people: {ba:.2f} [{lo:.2f}-{hi:.2f}], SummEdits dev, n={n} (shipped figure, "
        f"{shipped['measured_with']}, {shipped['date']})"
    )
    goal = trust_for(build_metric(GOAL).spec(), DEFAULT_LOCAL)
    assert goal.untrusted and goal.figure() == "0.35 [0.20-0.55]" and goal.against == "the environment"
    assert "not for gating" in goal.text()
    assert goal.untrusted_reason().startswith(
        f"untrusted judge: {GOAL} with local:qwen2.5-coder-1.5b-instruct-q4_k_m agrees with the environment at "
        "0.35 [0.20-0.55]"
    )
    without = trust_for(build_metric("agent_goal_accuracy_without_reference").spec(), DEFAULT_LOCAL)
    assert without.untrusted and without.figure() == "0.23 [0.10-0.34]"
    for name in ("agent_state_match", "tool_call_accuracy"):  # whatever the judge
        free = trust_for(build_metric(name).spec(), None)
        assert free.kind == "model_free" and free.text().startswith("model-free: no model") and not free.untrusted
    relevancy = trust_for(build_metric("answer_relevancy").spec(), DEFAULT_LOCAL)
    assert relevancy.kind == "unmeasured"
    assert relevancy.text() == (
        "not measured for this judge — measure with "
        "`assay calibrate LABELS.jsonl --judge local:qwen2.5-coder-1.5b-instruct-q4_k_m`"
    )
    # Another judge, or the default judge set otherwise: the shipped figure is not its figure.
    api = JudgeRecord(model_id="openai:gpt-4o-mini", identity="openai:gpt-4o-mini@https://api.openai.com/v1")
    assert trust_for(build_metric("faithfulness").spec(), api).kind == "unmeasured"
    other_weights = DEFAULT_LOCAL.model_copy(update={"identity": "local:/models/my.gguf:123:strings<=300:build=avx2@1"})
    assert trust_for(build_metric("faithfulness").spec(), other_weights).kind == "unmeasured"
    reset = trust_for(build_metric("faithfulness", {"threshold": "0.7"}).spec(), DEFAULT_LOCAL)
    assert reset.kind == "unmeasured" and "with these settings" in reset.text()


# --- gates refuse an untrusted judge -----------------------------------------------------------


def goal_run(store: Path, record: JudgeRecord | None = DEFAULT_LOCAL, metric: str = GOAL) -> str:
    """A finished run of ``metric``: 4 of 5 trajectories met (0.8), as the local judge would have said."""
    spec = build_metric(metric).spec()
    run_id = new_run_id()
    with RunStore(store) as opened:
        opened.create(RunSpec(run_id=run_id, judge="local", judge_model=DEFAULT_LOCAL.model_id, judge_record=record,
                              metrics=(spec,), n_rows=5))  # fmt: skip
        for line in range(1, 6):
            value = float(line != 5)
            verdicts = (Verdict(subject="the booking was cancelled", value=int(value), reason="cancel called"),)
            score = Score(metric=metric, value=value, verdicts=verdicts)
            sample = Sample(id=f"t{line}", question="Cancel my booking.", answer="Done.")
            opened.record(run_id, SampleResult(sample, {metric: score}, line, 0), repeat=0)
        opened.set_status(run_id, "finished")
    return run_id


def test_assay_gate_exits_2_on_an_untrusted_judge_unless_told(tmp_path: Path) -> None:
    run_id = goal_run(tmp_path / "runs.sqlite")
    summary = tmp_path / "summary.md"
    code, out = invoke("gate", run_id, "--store", "runs.sqlite", "-m", f"{GOAL}=0.5", "--summary-md", str(summary))
    flat = " ".join(out.split())
    assert code == 2, out
    assert "GATE UNTRUSTED" in flat
    assert (
        f"untrusted judge: {GOAL} with local:qwen2.5-coder-1.5b-instruct-q4_k_m agrees with the environment at "
        "0.35 [0.20-0.55]" in flat
    )
    job = " ".join(summary.read_text().replace("\\", "").replace("\u2060", "").split())  # Markdown escapes
    assert "UNTRUSTED" in job and "agrees with the environment at 0.35 [0.20-0.55]" in job
    assert "not for gating" in job  # the trust line beside the score in the job summary

    code, out = invoke("gate", run_id, "--store", "runs.sqlite", "-m", f"{GOAL}=0.5", "--allow-untrusted-judge")
    assert code == 0, out
    assert "gated anyway (--allow-untrusted-judge)" in " ".join(out.split())
    code, _ = invoke("gate", run_id, "--store", "runs.sqlite", "-m", f"{GOAL}=0.9", "--allow-untrusted-judge")
    assert code == 1  # allowed, the gate decides as before: 0.8 < 0.9

    # A trusted judge and a model-free metric gate as today.
    for metric in ("agent_state_match", "faithfulness"):
        trusted = goal_run(tmp_path / f"{metric}.sqlite", metric=metric)
        code, out = invoke("gate", trusted, "--store", f"{metric}.sqlite", "-m", f"{metric}=0.5")
        assert code == 0, out
        assert "untrusted" not in out
    # An unmeasured judge gates as today, with the note in the summary.
    unmeasured = JudgeRecord(model_id="openai:x", identity="openai:x@http://127.0.0.1:1/v1")
    other = goal_run(tmp_path / "other.sqlite", record=unmeasured)
    code, out = invoke("gate", other, "--store", "other.sqlite", "-m", f"{GOAL}=0.5", "--summary-md", "other.md")
    assert code == 0, out
    assert "not measured for this judge" in Path("other.md").read_text()


def test_runs_show_the_report_and_the_browser_show_the_trust_line(tmp_path: Path) -> None:
    run_id = goal_run(tmp_path / "runs.sqlite")
    code, out = invoke("runs", "show", run_id, "--store", "runs.sqlite")
    flat = " ".join(out.split())
    assert code == 0, out
    assert f"{GOAL}: agrees with the environment: 0.35 [0.20-0.55], tau-bench airline dev trajectories, n=40" in flat
    assert "not for gating" in flat
    code, out = invoke("report", run_id, "--store", "runs.sqlite", "--out", "r.html")
    assert code == 0, out
    html = Path("r.html").read_text()
    assert "agrees with the environment: 0.35 [0.20-0.55]" in html and "not for gating" in html
    assert ">untrusted<" in html  # the gate column says what assay gate says
    code, out = invoke("browse", "--store", "runs.sqlite", "--out", "site")
    assert code == 0, out
    index = Path("site/index.html").read_text()
    assert "judge untrusted: 0.35 [0.20-0.55]" in index


# --- a user's calibration attaches to their runs -----------------------------------------------


word_judge = word_overlap_answer  # supported when each content word of the statement is a word of the context


def labels(path: Path) -> None:
    context = "The Amazon empties into the Atlantic and is about 6400 km long."
    rows = [{"id": f"s{i}", "context": context, "claim": "Amazon empties into Atlantic.", "label": 1} for i in range(6)]
    rows += [{"id": f"u{i}", "context": context, "claim": "Amazon empties into Pacific.", "label": 0} for i in range(5)]
    rows += [{"id": "miss", "context": context, "claim": "The Amazon is long.", "label": 0}]  # the judge says 1
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


SENTENCES = ("--set", "faithfulness.strategy=per_statement", "--no-cache")  # the settings calibrate measures


def test_assay_calibrate_then_assay_run_shows_that_calibration(tmp_path: Path) -> None:
    labels(tmp_path / "labels.jsonl")
    answers = [{"id": "a", "question": "Amazon?", "answer": "Amazon empties into Atlantic.",
                "contexts": ["The Amazon empties into the Atlantic."]}]  # fmt: skip
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in answers))
    with FakeOpenAIServer(word_judge) as server:
        judge = ["--judge", "openai:fake", "--base-url", server.base_url]
        code, out = invoke("calibrate", "labels.jsonl", *judge)
        assert code == 0, out
        assert "attached to faithfulness with this judge" in " ".join(out.split())
        code, out = invoke("run", "answers.jsonl", "-m", "faithfulness", *judge, *SENTENCES)
        flat = " ".join(out.split())
        assert code == 0, out
        # TP 6, FN 0, FP 1, TN 5: BA = (6/6 + 5/6) / 2 = 0.9167
        today = __import__("datetime").datetime.now(__import__("datetime").UTC).date().isoformat()
        assert "faithfulness: agrees with people: 0.92 [" in flat and "labels.jsonl, n=12 (your calibration" in flat
        assert today in flat
        # A second calibration of the same n is shown first (the newest); the other follows with its n and date.
        (tmp_path / "labels.jsonl").write_text(
            (tmp_path / "labels.jsonl").read_text().replace('"label": 0}\n', '"label": 1}\n', 1)
        )
        code, _ = invoke("calibrate", "labels.jsonl", *judge)
        code, out = invoke("run", "answers.jsonl", "-m", "faithfulness", *judge, *SENTENCES)
        flat = " ".join(out.split())
        assert "also: 0.92 [" in flat and "n=12" in flat and "the largest n of 2" in flat
    # Another endpoint is another judge: its runs do not show this calibration.
    with FakeOpenAIServer(word_judge) as other:
        code, out = invoke("run", "answers.jsonl", "-m", "faithfulness", "--judge", "openai:fake", "--base-url",
                           other.base_url, *SENTENCES)  # fmt: skip
        assert "faithfulness: not measured for this judge" in " ".join(out.split())


def verdict_judge(messages: list[dict[str, str]], request: JudgeRequest) -> str:
    return json.dumps({"verdict": 1, "reason": "r"})


def test_evaluate_carries_trust_and_its_gate_refuses_an_untrusted_judge(tmp_path: Path) -> None:
    judge = FunctionJudge(verdict_judge, name="my-judge")
    metric = Faithfulness(decomposer="sentences", strategy="per_statement")
    record = JudgeRecord.of(judge, [metric.spec()])
    # The user measured this judge near chance on their labels (6 of 10 right).
    with RunStore("runs.sqlite") as store:
        measured = agreement([1, 1, 1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 1, 0, 0, 1, 1, 0, 0, 0], seed=0)
        store_agreement(store, metric.spec(), record, measured, dataset="mine.jsonl")
    rows = [Sample(id="a", question="Q?", answer="The sky is blue.", contexts=("The sky is blue.",))]
    result = evaluate(rows, metric, judge, store="runs.sqlite", progress=False)
    trust = result.trust["faithfulness"]
    assert trust.kind == "calibration" and trust.n == 10 and trust.dataset == "mine.jsonl" and trust.untrusted
    gate = result.gate("faithfulness", threshold=0.5)
    assert gate.outcome == "untrusted" and gate.untrusted is not None
    # TPR 3/5, TNR 3/5: balanced accuracy 0.60, its CI well across 0.5
    assert gate.untrusted.startswith("untrusted judge: faithfulness with my-judge agrees with people at 0.60 [")
    assert result.gate("faithfulness", threshold=0.5, allow_untrusted_judge=True).outcome == "pass"
    # Without a store: the shipped table and the definitions only.
    free = evaluate(rows, metric, judge, progress=False)
    assert free.trust["faithfulness"].kind == "unmeasured"


PLUGIN_TEST = """
import json
from assay import Sample
from assay.metrics import build_metric
from assay.models import FunctionJudge
from assay.pytest_plugin import assert_scores
from assay.run import RunStore, store_agreement, JudgeRecord
from assay.analysis import agreement

def answer(messages, request):
    return json.dumps({"verdict": 1, "reason": "r"})

judge = FunctionJudge(answer, name="coin")
metric = build_metric("faithfulness", {"decomposer": "sentences"})

def test_calibrated_near_chance():
    record = JudgeRecord.of(judge, [metric.spec()])
    with RunStore(".assay/runs.sqlite") as store:
        measured = agreement([1] * 5 + [0] * 5, [1, 1, 0, 0, 0, 1, 1, 1, 0, 0], seed=0)
        store_agreement(store, metric.spec(), record, measured, dataset="coin.jsonl")
    sample = Sample(id="s", question="Q?", answer="The sky is blue.", contexts=("The sky is blue.",))
    assert_scores(sample, [metric], judge=judge, min=0.5)
"""


def test_the_pytest_plugin_says_the_trust_line_and_exits_2_on_an_untrusted_judge(pytester: pytest.Pytester) -> None:
    from test_pytest_plugin import PLUGIN_ARGS

    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_inner=PLUGIN_TEST)
    result = pytester.runpytest(*PLUGIN_ARGS, "-p", "no:cacheprovider")
    text = " ".join(result.stdout.str().split())
    assert result.ret == 2, text
    assert "agrees with people: 0.40 [" in text and "coin.jsonl, n=10 (your calibration" in text
    assert "assay: exit 2: untrusted judge: faithfulness with coin agrees with people at 0.40" in text
    allowed = pytester.runpytest(*PLUGIN_ARGS, "-p", "no:cacheprovider", "--assay-allow-untrusted-judge")
    assert allowed.ret == 0
    assert "gated anyway (--assay-allow-untrusted-judge)" in " ".join(allowed.stdout.str().split())


pytest_plugins = ["pytester"]


# --- issue 63: a trust figure describes the run it sits under ----------------------------------


def _flat(out: str) -> str:
    return " ".join(out.split())


def _answers(path: Path) -> None:
    answers = [{"id": "a", "question": "Amazon?", "answer": "Amazon empties into Atlantic.",
                "contexts": ["The Amazon empties into the Atlantic."]}]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in answers))


PER_STATEMENT = ("--set", "faithfulness.strategy=per_statement", "--no-cache")


def test_a_calibration_shows_only_under_runs_with_the_settings_it_measured(tmp_path: Path) -> None:
    """Issue 63, item 1: ``--set faithfulness.threshold=0.9 --set faithfulness.decomposer=sentences`` showed
    the calibration's figure, and so did an API judge's default run (one call for all statements, another
    prompt); a calibration at ``--threshold 0.9`` attached nowhere, silently."""
    labels(tmp_path / "labels.jsonl")
    _answers(tmp_path / "answers.jsonl")
    with FakeOpenAIServer(word_judge) as server:
        judge = ["--judge", "openai:fake", "--base-url", server.base_url]
        code, out = invoke("calibrate", "labels.jsonl", *judge)
        assert code == 0, out
        assert (
            "attached to faithfulness with this judge: later runs of it with --set faithfulness.strategy=per_statement "
            "show this agreement" in _flat(out)
        )

        def trust_line(*options: str) -> str:
            code, out = invoke("run", "answers.jsonl", "-m", "faithfulness", *judge, *options)
            assert code == 0, out
            return _flat(out)

        calibrated = "agrees with people: 0.92 ["
        line = trust_line(*PER_STATEMENT)
        assert calibrated in line and "labels.jsonl, n=12 (your calibration" in line, line
        # The API judge's default run: one call for all statements, the verdicts prompt.
        default = trust_line("--no-cache")
        assert calibrated not in default and "not measured for this judge with these settings" in default
        assert "strategy=auto (batch with this judge) here, per_statement in the calibration" in default
        # and says how to get the figure: calibrating again would measure per_statement again
        assert "run with `--set faithfulness.strategy=per_statement` for your calibration's figure" in default
        assert "measure with `assay calibrate" not in default
        # Each other setting is named.
        for option, named in (
            ("faithfulness.threshold=0.9", "verifier.threshold=0.9 here, 0.5 in the calibration"),
            ("faithfulness.decomposer=sentences", "decomposer=sentences here, anchored in the calibration"),
            ("faithfulness.max_statements=7", "max_statements=7 here"),
        ):
            line = trust_line(*PER_STATEMENT, "--set", option)
            assert calibrated not in line and "measured other settings" in line and named in line, (option, line)
        # The reverse: a calibration at threshold 0.9 attaches to runs at 0.9, and says so.
        code, out = invoke("calibrate", "labels.jsonl", *judge, "--threshold", "0.9", "--limit", "11")
        assert code == 0, out
        assert "--set faithfulness.strategy=per_statement --set faithfulness.threshold=0.9 show this" in _flat(out)
        at_09 = trust_line(*PER_STATEMENT, "--set", "faithfulness.threshold=0.9")
        assert "n=11 (your calibration, partial: judged 11 of 12 items (--limit 11)" in at_09, at_09
        assert "n=12 (your calibration" in trust_line(*PER_STATEMENT)  # the 0.5 run keeps its own


def _faithfulness_spec(**options: str) -> MetricSpec:
    return build_metric("faithfulness", options).spec()


def test_settings_are_matched_by_fingerprint_with_auto_read_as_the_calibrating_judge_reads_it() -> None:
    """Issue 63, item 1, the class: threshold, decomposer and a prompt version each keep a calibration off a run."""
    local = DEFAULT_LOCAL
    measured = agreement([1, 1, 1, 0, 0, 0], [1, 1, 1, 0, 0, 1], seed=0)
    calibrated_spec = _faithfulness_spec(strategy="per_statement")
    with RunStore("runs.sqlite") as store:
        store_agreement(
            store, calibrated_spec, local, measured, dataset="mine.jsonl", resolves={"strategy": "per_statement"}
        )
        stored = store.calibrations("faithfulness", local.identity)
    # The local judge reads auto as per_statement: the default run is the calibrated one.
    assert trust_for(_faithfulness_spec(), local, stored).kind == "calibration"
    assert trust_for(_faithfulness_spec(strategy="per_statement"), local, stored).kind == "calibration"
    # Otherwise set: not this calibration; the shipped figure (default settings) or "not measured", and why.
    batch = trust_for(_faithfulness_spec(strategy="batch"), local, stored)
    assert batch.kind == "unmeasured" and "strategy=batch here, per_statement in the calibration" in batch.text()
    assert "run with `--set faithfulness.strategy=per_statement` for your calibration's figure" in batch.text()
    bumped = _faithfulness_spec()
    prompts = dict(bumped.params["prompts"])
    name = next(iter(prompts))
    prompts[name] = "999"
    bumped = bumped.model_copy(update={"params": {**bumped.params, "prompts": prompts}})
    other_prompt = trust_for(bumped, local, stored)
    assert other_prompt.kind == "unmeasured" and f"prompts.{name}=999 here" in other_prompt.text()
    sentences = trust_for(_faithfulness_spec(decomposer="sentences", threshold="0.7"), local, stored)
    assert sentences.kind == "unmeasured"
    assert "decomposer=sentences here, anchored in the calibration" in sentences.text()
    assert "verifier.threshold=0.7 here, 0.5 in the calibration" in sentences.text()
    assert "measure with `assay calibrate" in sentences.text() or "run with `--set faithfulness." in sentences.text()
    # A calibration stored before settings were recorded is never the figure, and says so.
    old = {k: v for k, v in stored[0].items() if k not in ("settings", "settings_fingerprint", "resolves")}
    before = trust_for(_faithfulness_spec(), local, [old])
    assert before.kind == "shipped" and "did not record the settings it measured" in before.text()


def test_the_figure_is_the_largest_calibration_and_a_partial_one_says_so() -> None:
    """Issue 63, item 2: a 4-item ``--limit`` bench replaced an n=8 calibration and decided the gate."""
    spec = Faithfulness(strategy="per_statement", decomposer="sentences").spec()
    record = JudgeRecord(model_id="openai:m", identity="openai:m@http://localhost:8000/v1")
    eight = agreement([1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 0, 0, 0, 1], seed=0)
    four = agreement([1, 1, 0, 0], [1, 0, 1, 0], seed=0)  # 0.50 [..]: untrusted on its own
    with RunStore("runs.sqlite") as store:
        store_agreement(store, spec, record, eight, dataset="labels.jsonl", items=8, items_total=8)
        store_agreement(store, spec, record, four, dataset="grounding.jsonl", items=4, items_total=120, limit=4)
        stored = store.calibrations("faithfulness", record.identity)
    assert [r["n"] for r in stored] == [4, 8]  # newest first
    figure = trust_for(spec, record, stored)
    assert figure.n == 8 and figure.dataset == "labels.jsonl" and not figure.untrusted
    text = figure.text()
    assert "n=8 (your calibration, " in text and "the largest n of 2 with these settings" in text
    assert "also: 0.50 [" in text and "grounding.jsonl, n=4, partial: judged 4 of 120 items (--limit 4)" in text
    # Alone, the partial one is the figure, and says it is partial wherever it is shown.
    alone = trust_for(spec, record, stored[:1])
    assert alone.n == 4 and alone.untrusted
    assert "(your calibration, partial: judged 4 of 120 items (--limit 4)" in alone.text()
    assert "your calibration, partial: judged 4 of 120 items" in alone.untrusted_reason()
    # Equal n: the newest.
    with RunStore("runs.sqlite") as store:
        later = agreement([1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 0, 0, 0, 0], seed=0)
        store_agreement(store, spec, record, later, dataset="again.jsonl", items=8, items_total=8)
        assert trust_for(spec, record, store.calibrations("faithfulness", record.identity)).dataset == "again.jsonl"


def test_one_endpoint_spelled_three_ways_is_one_judge_and_two_endpoints_are_two() -> None:
    """Issue 63, item 3: localhost, 127.0.0.1 and a trailing slash were three judges."""
    from assay.models._endpoint import canonical_identity, canonical_url
    from assay.models._openai import OpenAIJudge

    same = ["http://localhost:8000/v1", "http://127.0.0.1:8000/v1", "http://localhost:8000/v1/",
            "HTTP://LocalHost:8000/v1//", "http://[::1]:8000/v1", "http://localhost:8000/v1#top"]  # fmt: skip
    identities = {OpenAIJudge("m", base_url=url, api_key="k").identity for url in same}
    assert identities == {"openai:m@http://localhost:8000/v1"}
    different = ["http://localhost:8001/v1", "http://127.0.0.2:8000/v1", "http://10.0.0.5:8000/v1",
                 "https://localhost:8000/v1", "http://localhost:8000/v2", "http://localhost:8000"]  # fmt: skip
    others = {OpenAIJudge("m", base_url=url, api_key="k").identity for url in different}
    assert len(others) == len(different) and not others & identities
    # Default ports, and credentials never part of it.
    assert canonical_url("https://api.example.com:443/v1/") == canonical_url("https://API.example.com/v1")
    assert canonical_url("http://host:80/v1") == "http://host/v1"
    assert canonical_url("http://user:hunter2@127.0.0.1:9/v1") == "http://[redacted]@localhost:9/v1"
    # Identities stored before (in runs and calibrations) read as today's; a local judge's is untouched.
    assert canonical_identity("openai:m@http://127.0.0.1:8000/v1/") == "openai:m@http://localhost:8000/v1"
    local = f"local:sha256:{DEFAULT_MODEL_SHA256}:strings<=300:build=avx2@0.3.36"
    assert canonical_identity(local) == local
    assert JudgeRecord(model_id="openai:m", identity="openai:m@http://127.0.0.1:1/v1").identity == (
        "openai:m@http://localhost:1/v1"
    )


def test_a_calibration_against_one_spelling_attaches_under_another_and_the_cache_is_shared(tmp_path: Path) -> None:
    """Issue 63, item 3, end to end: calibrate at 127.0.0.1, run at localhost with a slash, and at another port."""
    labels(tmp_path / "labels.jsonl")
    _answers(tmp_path / "answers.jsonl")
    # A calibration stored by an assay that kept the spelling it was given is found under today's.
    with RunStore("old.sqlite") as store:
        spec = Faithfulness(strategy="per_statement").spec()
        record = JudgeRecord(model_id="openai:fake", identity="openai:fake@http://localhost:1/v1")
        store_agreement(store, spec, record, agreement([1, 0], [1, 0], seed=0), dataset="old.jsonl")
    with sqlite3.connect("old.sqlite") as db:
        db.execute("UPDATE calibrations SET judge_identity = 'openai:fake@http://127.0.0.1:1/v1/'")
    with RunStore("old.sqlite") as store:
        assert [r["dataset"] for r in store.calibrations("faithfulness", record.identity)] == ["old.jsonl"]
        assert store.calibrations("faithfulness", "openai:fake@http://localhost:2/v1") == []
    with FakeOpenAIServer(word_judge) as server, FakeOpenAIServer(word_judge) as other:
        port = server.base_url.rsplit(":", 1)[1].split("/")[0]
        code, out = invoke("calibrate", "labels.jsonl", "--judge", "openai:fake", "--base-url", server.base_url)
        assert code == 0, out
        spelled = f"http://localhost:{port}/v1/"
        code, out = invoke("run", "answers.jsonl", "-m", "faithfulness", "--judge", "openai:fake", "--base-url",
                           spelled, "--set", "faithfulness.strategy=per_statement")  # fmt: skip
        assert code == 0, out
        assert "agrees with people: 0.92 [" in _flat(out) and "labels.jsonl, n=12" in _flat(out)
        asked = len(server.requests)
        code, out = invoke("run", "answers.jsonl", "-m", "faithfulness", "--judge", "openai:fake", "--base-url",
                           server.base_url, "--set", "faithfulness.strategy=per_statement")  # fmt: skip
        assert code == 0, out
        assert len(server.requests) == asked  # every call answered by the cache the other spelling filled
        code, out = invoke("run", "answers.jsonl", "-m", "faithfulness", "--judge", "openai:fake", "--base-url",
                           other.base_url, "--set", "faithfulness.strategy=per_statement")  # fmt: skip
        assert code == 0, out
        assert other.requests and "faithfulness: not measured for this judge" in _flat(out)
