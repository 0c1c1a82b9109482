"""Issue 35, items 3, 8 and 9: what a new user met at the gate, in every door.

3. A misspelt metric in ``EvalResult.gate`` gets the CLI's "did you mean" (a ConfigError,
   not a bare KeyError), and every pass mark (``assert_faithful``'s and ``assert_scores``'
   ``min``, ``GatePolicy.threshold``, ``assay gate --min`` and ``-m NAME=MIN``, ``assay
   report --threshold``, ``assay simulate --threshold``) is checked by one function,
   :func:`assay.errors.check_threshold`, which answers 80 with "did you mean 0.8?".
8. The "nothing was judged" sentence reads right for one row and for many, and no
   statements-needed table is printed for a metric nothing was scored in.
9. With several metrics the overall verdict is the first line (``| head -1``).

Each test failed before its fix. Runs are built by hand through the real run store
(``first_hour.make_run``); the CLI is the real one (``assay.cli.app``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay import Sample, evaluate
from assay.analysis import GatePolicy
from assay.cli import app
from assay.errors import ConfigError, check_threshold
from assay.models import FunctionJudge
from assay.pytest_plugin import assert_faithful, assert_grade, assert_scores
from first_hour import make_run


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250", "NO_COLOR": "1"})
    return result.exit_code, result.output


def never_called(messages: object, request: object) -> str:
    raise AssertionError("a threshold out of range must be refused before any judge call")


SAMPLE = Sample(id="s", question="Sky?", answer="The sky is blue.", contexts=("The sky is blue.",))


# --- 3. the Python gate names a misspelt metric as the CLI does --------------------------------


def supported(messages: object, request: object) -> str:
    return '{"verdicts": [{"statement": "The sky is blue.", "reason": "said", "verdict": 1}]}'


def test_a_misspelt_metric_in_result_gate_gets_the_clis_did_you_mean(tmp_path: Path) -> None:
    judge = FunctionJudge(supported, per_statement=False)
    result = evaluate([SAMPLE], ["faithfulness"], judge, store=tmp_path / "runs.sqlite", progress=False)
    with pytest.raises(ConfigError) as raised:
        result.gate("faithfullness", threshold=0.8)
    message = str(raised.value)
    assert f"run {result.run_id} has no metric 'faithfullness'; did you mean 'faithfulness'?" in message
    assert "its metrics: faithfulness" in message
    # The CLI says exactly the same.
    code, out = invoke("gate", str(result.run_id), "--store", str(tmp_path / "runs.sqlite"), "-m", "faithfullness")
    assert code == 3 and message in " ".join(out.split()), out
    assert result.gate("faithfulness", threshold=0.8).outcome == "pass"


# --- 3. one check of every pass mark, 80 answered with 0.8 ----------------------------------------


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (80, "min is a score between 0 and 1, not 80; did you mean 0.8?"),
        (75.5, "min is a score between 0 and 1, not 75.5; did you mean 0.755?"),
        (-0.1, "min is a score between 0 and 1, not -0.1"),
        (250, "min is a score between 0 and 1, not 250"),
    ],
)
def test_the_one_threshold_check_suggests_the_fraction_of_a_percentage(value: float, said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        check_threshold(value, "min")
    assert str(raised.value) == said
    assert check_threshold(0.8, "min") == 0.8 and check_threshold(1, "min") == 1.0


def test_assert_faithful_refuses_min_80_instead_of_failing_the_score() -> None:
    judge = FunctionJudge(never_called)
    with pytest.raises(ConfigError, match=r"min is a score between 0 and 1, not 80; did you mean 0\.8\?"):
        assert_faithful(SAMPLE, min=80, judge=judge)
    with pytest.raises(ConfigError, match=r"not 90; did you mean 0\.9\?"):
        assert_scores(SAMPLE, ["faithfulness"], min=90, judge=judge)
    with pytest.raises(ConfigError, match=r"min\['faithfulness'\] is a score between 0 and 1, not 70; did you mean"):
        assert_scores(SAMPLE, ["faithfulness"], min={"faithfulness": 70}, judge=judge)
    with pytest.raises(ConfigError, match=r"not 100; did you mean 1\?"):
        assert_grade(SAMPLE, "The answer is polite.", min=100, judge=judge)
    assert not judge.requests


def test_the_python_gate_policy_says_the_same(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"threshold is a score between 0 and 1, not 80; did you mean 0\.8\?"):
        GatePolicy(threshold=80)
    judge = FunctionJudge(supported, per_statement=False)
    result = evaluate([SAMPLE], ["faithfulness"], judge, store=tmp_path / "runs.sqlite", progress=False)
    with pytest.raises(ConfigError, match=r"did you mean 0\.8\?"):
        result.gate("faithfulness", threshold=80)


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (("gate", "r", "--min", "80"), 3, "--min is a score between 0 and 1, not 80; did you mean 0.8?"),
        (("gate", "r", "-m", "faithfulness=80"), 3, "the threshold is a score between 0 and 1, not 80; did you mean"),
        (("report", "r", "--threshold", "80"), 1, "--threshold is a score between 0 and 1, not 80; did you mean 0.8?"),
        (("simulate", "--threshold", "80"), 1, "--threshold is a score between 0 and 1, not 80; did you mean 0.8?"),
    ],
)
def test_every_cli_threshold_is_checked_the_same_way(
    tmp_path: Path, args: tuple[str, ...], code: int, said: str
) -> None:
    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [{"faithfulness": 1.0}])
    got, out = invoke(*args, "--store", str(store)) if args[0] != "simulate" else invoke(*args)
    assert got == code, out
    assert said in " ".join(out.split()), out


# --- 8. the nothing-judged sentence, and no statement advice at n=0 ------------------------------


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        (1, "nothing was judged: the only input row of run r was invalid (see 'assay runs show r')"),
        (3, "nothing was judged: all 3 input rows of run r were invalid (see 'assay runs show r')"),
    ],
)
def test_the_nothing_judged_sentence_reads_right(tmp_path: Path, bad: int, said: str) -> None:
    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [], bad_rows=bad, metrics=["faithfulness"])
    code, out = invoke("gate", "r", "--store", str(store))
    assert code == 2, out
    assert said in " ".join(out.split()), out


def test_no_statements_needed_table_for_a_metric_nothing_was_scored_in(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [{"faithfulness": 1.0, "answer_relevancy": None}] * 3)
    code, out = invoke("gate", "r", "--store", str(store), "-m", "answer_relevancy=0.7")
    assert code == 2, out
    assert "GATE UNSCORED: answer_relevancy >= 0.7" in out
    assert "statements needed" not in out and "at n=0" not in out, out
    code, out = invoke("gate", "r", "--store", str(store), "-m", "faithfulness=0.8", "-m", "answer_relevancy=0.7")
    assert code == 2, out
    assert "at n=0" not in out, out
    assert out.count("statements needed for a stable") == 1  # faithfulness' own, which was scored


# --- 9. the overall verdict first -----------------------------------------------------------------


def test_the_overall_verdict_is_the_first_line(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    make_run(store, "r", [{"faithfulness": 1.0, "answer_relevancy": 0.0}] * 2)
    code, out = invoke("gate", "r", "--store", str(store), "-m", "faithfulness", "-m", "answer_relevancy")
    assert code == 1, out
    lines = out.splitlines()
    assert lines[0].startswith("GATE FAIL (2 metrics): faithfulness >= 0.8 PASS · answer_relevancy >= 0.8 FAIL"), out
    per_metric = [line for line in lines if line.startswith("GATE ")]
    assert [line.split(":")[0] for line in per_metric] == ["GATE FAIL (2 metrics)", "GATE PASS", "GATE FAIL"]
