"""The assay pytest plugin: the fixture, the option, and assertions that name the statements that failed."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

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
    return Sample(id="s1", question="Sky?", answer=answer, contexts=("The sky is blue. Grass is green.",))
"""


def run(pytester: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_inner=JUDGE + body)
    return pytester.runpytest(*PLUGIN_ARGS, *args, "-p", "no:cacheprovider")


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
    assert "1 statements, fewer than the required 2" in out


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
