"""The assay pytest plugin: the fixture, the option, and assertions that name the statements that failed."""

from __future__ import annotations

import json
import re
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from assay.run import RunStore

pytest_plugins = ["pytester"]

# Until the pytest11 entry point is installed, load the plugin by module name (never both:
# pluggy refuses to register one module under two names).
_INSTALLED = any(ep.value == "assay.pytest_plugin" for ep in entry_points(group="pytest11"))
PLUGIN_ARGS: tuple[str, ...] = () if _INSTALLED else ("-p", "assay.pytest_plugin")

JUDGE = """
import json
from assay import Faithfulness, Sample
from assay.metrics import BinaryJudgeGrader
from assay.models import FunctionJudge
from assay.pytest_plugin import assert_faithful, assert_grade

def answer(messages, request):
    user = messages[-1]["content"]
    if "<statement>" in user:
        statement = user.split("<statement>\\n")[1].split("\\n</statement>")[0]
        if "BROKEN" in statement:
            return "I cannot judge that"
        supported = "moon" not in statement
        reason = "the context says so" if supported else "the context never mentions the moon"
        return json.dumps({"verdict": int(supported), "reason": reason})
    if "<conversation>" in user:
        polite = "please" in user
        return json.dumps({"reasoning": "it says please" if polite else "curt, no please",
                           "label": "PASS" if polite else "FAIL"})
    raise AssertionError(user)

judge = FunctionJudge(answer)
metric = Faithfulness(decomposer="sentences", strategy="per_statement")

def sample(answer):
    context = "On clear days the sky is blue, and grass is green."
    return Sample(id="s1", question="Sky?", answer=answer, contexts=(context,))
"""


def run(pytester: pytest.Pytester, body: str, *args: str, **kwargs: bool) -> pytest.RunResult:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_inner=JUDGE + body)
    return pytester.runpytest(*PLUGIN_ARGS, *args, "-p", "no:cacheprovider", **kwargs)


def test_assert_faithful_passes_and_returns_the_score(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_ok():
    score = assert_faithful(sample("The sky is blue. Grass is green."), min=0.8, judge=judge, metric=metric)
    assert score.value == 1.0
""",
    )
    result.assert_outcomes(passed=1)


def test_assert_faithful_lists_each_unsupported_statement_with_the_reason(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_below_min():
    assert_faithful(sample("The sky is blue. The moon is cheese."), min=0.8, judge=judge, metric=metric)

def test_strict_sinks_a_padded_answer():
    padded = "The sky is blue. Grass is green. The sky is blue indeed. Grass is green too. The moon is made of cheese."
    assert_faithful(sample(padded), min=0.8, judge=judge, metric=metric)  # 4/5 = 0.8 passes...
    assert_faithful(sample(padded), min=0.8, judge=judge, metric=metric, strict=True)  # ...strict does not

def test_too_few_statements():
    assert_faithful(sample("The sky is blue."), judge=judge, metric=metric, min_statements=2)
""",
    )
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    assert "score 0.500 < 0.8" in out
    assert "✗ The moon is cheese." in out and "judge: the context never mentions the moon" in out
    assert "1 unsupported statement(s) (strict)" in out and "✗ The moon is made of cheese." in out
    assert "1 statement, fewer than the required 2" in out


def test_unscored_fails_with_its_reason_never_silently(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_unscored():
    assert_faithful(sample("The sky is blue. It is BROKEN."), min=0.0, judge=judge, metric=metric)
""",
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "unscored, which never passes" in out
    assert "unscored (refusal): statement 2 ('It is BROKEN.'): I cannot judge that" in out


def test_assert_grade_with_a_criteria_string(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_polite():
    assert_grade(Sample(id="p", question="Help?", answer="Yes, please wait."), "The reply is polite.", judge=judge)

def test_rude():
    assert_grade(Sample(id="r", question="Help?", answer="No."), "The reply is polite.", judge=judge)
""",
    )
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "assay binary_grader of sample 'r': score 0.000 < 1" in out
    assert "✗ The reply is polite." in out and "judge: curt, no please" in out


def test_fixture_reads_the_option_then_the_environment(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = """
def test_judge(assay_judge):
    print("JUDGE=" + assay_judge.model_id)
"""
    result = run(pytester, body, "-s", "--assay-judge", "local:/models/other.gguf")
    result.assert_outcomes(passed=1)
    assert "JUDGE=local:other" in result.stdout.str()
    monkeypatch.setenv("ASSAY_JUDGE", "local:/models/from-env.gguf")
    result = run(pytester, body, "-s")
    assert "JUDGE=local:from-env" in result.stdout.str()
    monkeypatch.delenv("ASSAY_JUDGE")
    result = run(pytester, body, "-s")
    assert "JUDGE=local:qwen2.5-coder-1.5b-instruct-q4_k_m" in result.stdout.str()
    assert "--assay-judge=JUDGE" in run(pytester, body, "--help").stdout.str()


def plugin_source_lines() -> list[str]:
    """The plugin's code lines long enough to be unmistakable in a traceback."""
    import assay.pytest_plugin as plugin

    lines = Path(plugin.__file__).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if len(line.strip()) > 30 and not line.strip().startswith(("#", '"'))]


@pytest.mark.parametrize("tb", ["auto", "long"])
def test_a_failure_shows_statements_and_reasons_but_no_plugin_frame(pytester: pytest.Pytester, tb: str) -> None:
    result = run(
        pytester,
        """
def test_moon():
    assert_faithful(sample("The sky is blue. The moon is cheese."), min=0.8, judge=judge, metric=metric)

def test_rude():
    assert_grade(Sample(id="r", question="Help?", answer="No."), "The reply is polite.", judge=judge)
""",
        f"--tb={tb}",
    )
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "✗ The moon is cheese." in out and "judge: the context never mentions the moon" in out
    assert "✗ The reply is polite." in out and "judge: curt, no please" in out
    assert "pytest_plugin.py" not in out
    shown = [line for line in plugin_source_lines() if line in out]
    assert shown == []


def test_the_session_is_one_stored_run_with_a_summary_and_a_report(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_ok():
    assert_faithful(sample("The sky is blue. Grass is green."), judge=judge, metric=metric)

def test_moon():
    assert_faithful(sample("The sky is blue. The moon is cheese."), min=0.8, judge=judge, metric=metric)

def test_broken():
    assert_faithful(sample("The sky is blue. It is BROKEN."), min=0.0, judge=judge, metric=metric)

def test_grades():
    assert_grade(Sample(id="p", question="Help?", answer="Yes, please wait."), "The reply is polite.", judge=judge)
    assert_grade(Sample(id="r", question="Help?", answer="No."), "The reply is polite.", judge=judge)

def test_bad_sample():
    assert_faithful({"id": "bad", "question": 3, "answer": "A."}, judge=judge, metric=metric)
""",
        "--assay-report",
        "out/report.html",
    )
    result.assert_outcomes(passed=1, failed=4)
    out = result.stdout.str()
    assert "SampleError: assay: invalid sample: field 'question': Input should be a valid string" in out

    with RunStore(pytester.path / ".assay" / "runs.sqlite") as store:
        [info] = store.runs()
        records = list(store.records(info.run_id))
        row_errors = store.row_errors(info.run_id)
    assert row_errors == [
        (6, "line 6: test_inner.py::test_bad_sample: invalid sample: field 'question': Input should be a valid string")
    ]
    assert info.status == "finished"
    assert info.spec.engine == "pytest"
    assert [m.name for m in info.spec.metrics] == ["faithfulness", "binary_grader"]
    assert info.spec.judge == "function"
    assert len(records) == info.n_results == 5
    assert [(r["id"], r["line"]) for r in records] == [("s1", 1), ("s1", 2), ("s1", 3), ("p", 4), ("r", 5)]
    tests = [(r["sample"]["metadata"]["pytest"]["test"], r["sample"]["metadata"]["pytest"]["passed"]) for r in records]
    assert tests == [
        ("test_inner.py::test_ok", True),
        ("test_inner.py::test_moon", False),
        ("test_inner.py::test_broken", False),
        ("test_inner.py::test_grades", True),
        ("test_inner.py::test_grades", False),
    ]
    moon = records[1]["scores"]["faithfulness"]
    assert moon["value"] == 0.5
    assert [v["reason"] for v in moon["verdicts"]] == ["the context says so", "the context never mentions the moon"]
    assert records[2]["scores"]["faithfulness"]["unscored_reason"] == "refusal"

    assert (
        f"assay: run {info.run_id} stored in .assay/runs.sqlite: 5 assertions, 3 failed, judge function, "
        "1 invalid sample" in out
    )
    assert "faithfulness: mean 0.750, scored 2, unscored 1 (refusal 1), failed assertions 2 of 3" in out
    # The invalid sample was never judged: the session's run is partial, and the summary says a gate will not pass it.
    assert (
        "assay: a partial run, which 'assay gate' does not pass: 1 input row was invalid "
        "(test test_inner.py::test_bad_sample) and not judged; "
        "fix it and run again, or pass --max-invalid-rows 1" in out
    )
    assert info.spec.n_rows == 6  # a finished session knows its size: 5 assertions and 1 invalid sample
    assert "binary_grader: mean 0.500, scored 2, unscored 0, failed assertions 1 of 2" in out
    report = pytester.path / "out" / "report.html"
    assert "assay: report written to out/report.html" in out
    html = report.read_text(encoding="utf-8")
    match = re.search(r'<script type="application/json" id="assay-data">(.*?)</script>', html, re.S)
    assert match is not None
    data = json.loads(match.group(1))
    assert info.run_id in html
    assert len(data["samples"]) == 5


def test_store_option_none_and_a_session_without_assertions(pytester: pytest.Pytester) -> None:
    body = """
def test_ok():
    assert_faithful(sample("The sky is blue."), judge=judge, metric=metric)
"""
    result = run(pytester, body, "--assay-store", "none")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / ".assay").exists()
    assert "assay: 1 assertion, 0 failed, judge function (not stored: --assay-store none)" in result.stdout.str()
    assert "faithfulness: mean 1.000, scored 1, unscored 0, failed assertions 0 of 1" in result.stdout.str()

    result = run(pytester, body, "--assay-store", "none", "--assay-report", "r.html")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--assay-report needs the run store" in result.stderr.str()

    result = run(pytester, "\ndef test_nothing():\n    pass\n", "--assay-store", "elsewhere/runs.sqlite")
    result.assert_outcomes(passed=1)
    assert "assay:" not in result.stdout.str()
    assert not (pytester.path / "elsewhere").exists()


def test_an_interrupted_session_marks_the_run_interrupted(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_ok():
    assert_faithful(sample("The sky is blue."), judge=judge, metric=metric)

def test_stop():
    raise KeyboardInterrupt
""",
        "--assay-store",
        "runs.sqlite",
        no_reraise_ctrlc=True,  # the inner session's Ctrl-C must not stop this one
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    with RunStore(pytester.path / "runs.sqlite") as store:
        [info] = store.runs()
    assert (info.status, info.n_results) == ("interrupted", 1)
    # A session cut short is a partial run: the summary says a gate will not pass it, and the gate does not.
    assert (
        f"assay: a partial run, which 'assay gate' does not pass: run {info.run_id} is interrupted: 1 row judged; "
        "the input's size was not recorded; run it again, or pass --allow-partial" in result.stdout.str()
    )
    code, out = gate(pytester.path / "runs.sqlite", info.run_id)
    assert code == 2 and "GATE INCOMPLETE" in out, out
    assert f"not gated: run {info.run_id} is interrupted: 1 row judged; the input's size was not recorded" in out
    code, out = gate(pytester.path / "runs.sqlite", info.run_id, "--allow-partial")
    assert code == 0 and "GATE PASS (partial run)" in out, out


def gate(store: Path, run_id: str, *args: str) -> tuple[int, str]:
    from typer.testing import CliRunner

    from assay.cli import app

    result = CliRunner().invoke(app, ["gate", run_id, "--store", str(store), *args], env={"COLUMNS": "300"})
    return result.exit_code, " ".join(result.output.split())


# -- issue 56: the pytest door says what the other doors say, without assay's frames --------------


@pytest.mark.parametrize("tb", ["auto", "long"])
def test_assays_own_errors_show_no_frame_of_assay(pytester: pytest.Pytester, tb: str) -> None:
    result = run(
        pytester,
        """
from assay.pytest_plugin import assert_scores

def test_percent():
    assert_faithful(sample("The sky is blue."), min=80, judge=judge, metric=metric)

def test_misspelt_metric():
    assert_scores(sample("The sky is blue."), ["faithfulnes"], judge=judge)

def test_misspelt_column():
    assert_faithful({"id": "m", "answr": "The sky is blue.", "contexts": ["c"]}, judge=judge, metric=metric)
""",
        f"--tb={tb}",
    )
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    assert "ConfigError: min is a score between 0 and 1, not 80; did you mean 0.8?" in out
    assert "ConfigError: unknown metric 'faithfulnes'; did you mean 'faithfulness'?" in out
    assert (
        "SampleError: assay: invalid sample: missing or empty field 'answer' (the row has 'answr', kept as metadata; "
        "if it holds the answer: --map answr=answer on the command line, mapping={'answr': 'answer'} in Python)"
    ) in out
    for frame in (
        "errors.py",
        "_registry.py",
        "pytest_plugin.py",
        "_validate.py",
        "_read.py",
        "def check_threshold",
        "site-packages",
    ):
        assert frame not in out, frame
    # Each failure shows the test's own line, and nothing under it.
    assert out.count("test_inner.py:") >= 3


def test_the_sessions_gate_names_the_tests_of_invalid_samples_not_lines(pytester: pytest.Pytester) -> None:
    from typer.testing import CliRunner

    from assay.cli import app

    result = run(
        pytester,
        """
def test_ok():
    assert_faithful(sample("The sky is blue."), min=0.0, judge=judge, metric=metric)

def test_no_contexts():
    assert_faithful({"id": "a", "answer": "The sky is blue."}, judge=judge, metric=metric)

def test_no_answer():
    assert_faithful({"id": "b", "contexts": ["The sky is blue."]}, judge=judge, metric=metric)
""",
    )
    result.assert_outcomes(passed=1, failed=2)
    tests = "tests test_inner.py::test_no_contexts, test_inner.py::test_no_answer"
    assert f"2 input rows were invalid ({tests}) and not judged" in result.stdout.str()
    store = pytester.path / ".assay" / "runs.sqlite"
    gate = CliRunner().invoke(app, ["gate", "--latest", "--store", str(store)], env={"COLUMNS": "400"})
    assert gate.exit_code == 2, gate.output
    said = " ".join(gate.output.split())
    assert f"2 input rows were invalid ({tests}) and not judged" in said
    assert "lines 2, 3" not in said and "(line" not in said


def test_contexts_as_one_string_are_noted_once_for_the_session(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def one_string(id):
    return {"id": id, "answer": "The sky is blue.", "contexts": "The sky is blue."}

def test_a():
    assert_faithful(one_string("a"), min=0.0, judge=judge, metric=metric)

def test_b():
    assert_faithful(one_string("b"), min=0.0, judge=judge, metric=metric)
""",
    )
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    note = (
        "assay: note: contexts was one string, not a list, in 2 samples "
        "(test_inner.py::test_a, test_inner.py::test_b); "
        "each was taken as one context (give a list to pass several)"
    )
    assert out.count("contexts was one string") == 1
    assert note in out


BASE_URL_TESTS = """
from assay import Sample
from assay.pytest_plugin import assert_faithful

CONTEXT = "The Eiffel Tower is 330 metres tall."

def test_grounded(assay_judge):
    print("JUDGE=" + assay_judge.model_id)
    assert_faithful(Sample(id="g", answer="The tower is 330 metres tall.", contexts=[CONTEXT]), min=1.0,
                    judge=assay_judge)

def test_not_grounded(assay_judge):
    assert_faithful(Sample(id="b", answer="The tower is 300 metres tall.", contexts=[CONTEXT]), min=1.0,
                    judge=assay_judge)
"""


def test_the_judges_server_comes_from_the_option_then_the_environment(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--assay-base-url`` / ``$ASSAY_BASE_URL`` point the fixture's judge at a server (issue 63)."""
    pytest.importorskip("openai")
    from assay.testing import FAKE_JUDGE_MODEL, FakeOpenAIServer

    def session(*args: str) -> pytest.RunResult:
        pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
        pytester.makepyfile(test_inner=BASE_URL_TESTS)
        return pytester.runpytest(*PLUGIN_ARGS, "-p", "no:cacheprovider", "-s", "--assay-store", "none", *args)

    for name in ("OPENAI_API_KEY", "ASSAY_JUDGE", "ASSAY_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    # The app's own OpenAI client may point elsewhere: the judge must not follow it there.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    judge = f"openai:{FAKE_JUDGE_MODEL}"
    with FakeOpenAIServer(only_model=FAKE_JUDGE_MODEL) as server:
        result = session("--assay-judge", judge, "--assay-base-url", server.base_url)
        result.assert_outcomes(passed=1, failed=1)  # the word rule: '300' is not in the context
        assert f"JUDGE={judge}" in result.stdout.str()
        assert "✗ The tower is 300 metres tall." in result.stdout.str()
        by_option = server.calls
        assert by_option >= 2

        monkeypatch.setenv("ASSAY_BASE_URL", server.base_url)
        session("--assay-judge", judge).assert_outcomes(passed=1, failed=1)
        assert server.calls > by_option

    # Without either, an openai: judge goes to OPENAI_BASE_URL, as before (nothing listens there).
    monkeypatch.delenv("ASSAY_BASE_URL")
    result = session("--assay-judge", judge)
    result.assert_outcomes(failed=2)
    assert "127.0.0.1:9" in result.stdout.str()

    # The local judge runs in-process: a base URL for it is refused, not silently ignored.
    result = session("--assay-judge", "local:/models/other.gguf", "--assay-base-url", "http://127.0.0.1:8765/v1")
    assert result.ret != 0
    assert "which runs in-process" in result.stdout.str() + result.stderr.str()
    assert "--assay-base-url=URL" in session("--help").stdout.str()
