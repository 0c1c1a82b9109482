"""``assay gate`` over runs made by ``assay run --repeats`` against a loopback server, and ``assay simulate``.

The fake judge's verdicts depend on the request's ``seed`` (= seed + repeat): a statement
containing "maybe" is supported only on repeat 0, so it flips across repeats.
"""

from __future__ import annotations

import json
from pathlib import Path
from xml.dom import minidom

import pytest
import typer
from typer.testing import CliRunner

from assay.cli._gate import gate
from assay.cli._run import run
from assay.cli._simulate import simulate
from assay.run import RunStore
from assay.testing import FakeOpenAIServer

pytest.importorskip("openai")

# The registration lines proposed for assay/cli/__init__.py, on a local app.
app = typer.Typer(pretty_exceptions_enable=False, context_settings={"auto_envvar_prefix": "ASSAY"})
app.command("run")(run)
app.command("gate", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})(gate)
app.command("simulate")(simulate)


def responder(body: dict[str, object]) -> str:
    user = body["messages"][1]["content"]  # type: ignore[index]
    repeat = int(body.get("seed") or 0)  # type: ignore[call-overload]
    items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    statements = [i.split("] ", 1)[1] for i in items]
    if any("BROKEN" in s for s in statements):
        return "I think the answer is yes"
    verdicts = []
    for s in statements:
        if "maybe" in s:
            ok, reason = repeat == 0, f"repeat {repeat}: the context does not say it"
        elif "grass" in s:
            ok, reason = False, "the context never mentions grass"
        else:
            ok, reason = True, "stated in the context"
        verdicts.append({"statement": s, "reason": reason if not ok else "stated in the context", "verdict": int(ok)})
    return json.dumps({"verdicts": verdicts})


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250", "OPENAI_API_KEY": "sk-test"})
    return result.exit_code, result.output


def rows(*answers: str) -> str:
    return "".join(
        json.dumps({"id": f"r{i}", "question": "Sky?", "answer": a, "contexts": ["The sky is blue."]}) + "\n"
        for i, a in enumerate(answers)
    )


DATASETS = {
    "pass": rows("The sky is blue. The sky is vast.", "The sky is blue. The sky is wide."),
    "fail": rows("The sky is blue. The grass is red.", "The sky is blue. The sky is high."),
    "flaky": rows("The sky is blue. The sky is maybe green. The sky is big.", "The sky is blue. The sky is wide."),
    "unscored": rows("The sky is blue. The sky is wide.", "The sky is blue. It is BROKEN.", "The sky is high."),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """name -> (store, run id): each dataset run with 3 repeats, plus single runs of the pass and fail data."""
    root = tmp_path_factory.mktemp("gate")
    made: dict[str, tuple[Path, str]] = {}
    single = {"single": "pass", "single_fail": "fail"}
    with FakeOpenAIServer(responder) as server:
        for name, repeats in [*((n, 3) for n in DATASETS), *((n, 1) for n in single)]:
            data = root / f"{name}.jsonl"
            data.write_text(DATASETS[single.get(name, name)])
            store = root / f"{name}.sqlite"
            code, out = invoke(
                "run", str(data), "--judge", "openai:fake", "--base-url", server.base_url, "--decomposer",
                "sentences", "--repeats", str(repeats), "--no-cache", "--store", str(store), "--reasks", "0",
            )  # fmt: skip
            assert code == (3 if name == "unscored" else 0), out  # assay run exits 3 when too much is unscored
            with RunStore(store) as opened:
                (info,) = opened.runs()
            made[name] = (store, info.run_id)
    return made


def gate_cmd(runs: dict[str, tuple[Path, str]], name: str, *args: str) -> tuple[int, str]:
    store, run_id = runs[name]
    return invoke("gate", run_id, "--store", str(store), *args)


def test_exit_0_when_every_repeat_passes(runs: dict[str, tuple[Path, str]]) -> None:
    code, out = gate_cmd(runs, "pass", "--metric", "faithfulness", "--min", "0.8")
    assert code == 0, out
    assert out.startswith("GATE PASS: faithfulness >= 0.8 on the run mean")
    assert "P(pass) 1.0000 (from 3 repeats; the gate passes on 3/3 of them)" in out
    assert "flake probability 0.0000" in out
    code, out = gate_cmd(runs, "pass", "--per-sample", "--strict")
    assert code == 0, out


def test_exit_1_names_the_statements_that_sank_each_sample(runs: dict[str, tuple[Path, str]]) -> None:
    code, out = gate_cmd(runs, "fail", "--min", "0.8", "--per-sample")
    assert code == 1, out
    assert out.startswith("GATE FAIL")
    assert "r0" in out and "The grass is red." in out and "the context never mentions grass" in out
    assert "[3/3 repeats]" in out and "score below 0.8" in out
    # Strict mode says why, too; and a run-mean gate fails on the mean.
    code, out = gate_cmd(runs, "fail", "--strict")
    assert code == 1 and "an unsupported statement (strict)" in out
    code, out = gate_cmd(runs, "fail", "--min", "0.9")
    assert code == 1 and "mean 0.750" in out


def test_exit_2_when_a_flipping_statement_makes_the_gate_flaky(runs: dict[str, tuple[Path, str]]) -> None:
    # Sample r0 scores 1 on repeat 0 and 2/3 on repeats 1-2: a per-sample 0.8 gate passes 1 time in 3.
    code, out = gate_cmd(runs, "flaky", "--per-sample", "--min", "0.8")
    assert code == 2, out
    assert out.startswith("GATE FLAKY") and "P(pass) 0.3333 (from 3 repeats; the gate passes on 1/3 of them)" in out
    assert "The sky is maybe green." in out and "repeat 1: the context does not say it" in out
    assert "[2/3 repeats]" in out
    assert "flip rate 0.0667 over 5 statements" in out  # 1 minority verdict in 15
    assert "unstable samples 0.5000" in out


def test_exit_2_when_unscored_results_exceed_the_limit(runs: dict[str, tuple[Path, str]]) -> None:
    code, out = gate_cmd(runs, "unscored", "--max-unscored", "0.05")
    assert code == 2, out
    assert out.startswith("GATE UNSCORED") and "unscored results above the limit: 0.333 > 0.05" in out
    assert "unscored: line 2 r1: parse_failure" in out
    code, out = gate_cmd(runs, "unscored", "--max-unscored", "0.5")
    assert code == 0, out


def test_a_single_run_decides_on_what_it_observed(runs: dict[str, tuple[Path, str]]) -> None:
    # Regression: a single run that passed was called FLAKY (exit 2) because the gate *assumed* a 5% flip rate.
    # Two samples x two supported statements, default ε = 0.05: the mean stays >= 0.8 only if all 4 stay 1,
    # so the model estimates P(pass) ≈ .95⁴ = .8145 (simulated); that is printed, not turned into "flaky".
    code, out = gate_cmd(runs, "single")
    assert code == 0, out
    assert out.startswith("GATE PASS") and "observed" not in out.splitlines()[0]  # a pass is what it observed
    flat = " ".join(out.split())
    assert "single run: decided on what it observed" in flat
    assert "binomial model, flip rate 0.05 (default)" in flat
    # One flip in 4 statements reverses it: the advice is part of this verdict; the notes wait for --explain.
    assert "statements needed for a stable 0.8 gate" in flat and "assumed ε = 0.05" not in flat
    code, explained = gate_cmd(runs, "single", "--explain")
    assert code == 0 and "note: no repeats to measure the judge's flip rate: assumed ε = 0.05" in explained
    flip = float(flat.split("estimated flip probability ")[1].split(":")[0])
    assert flip == pytest.approx(1 - 0.95**4, abs=0.015)
    assert "re-run with 'assay run --repeats 3' to measure it" in flat
    # An observed fail exits 1 (not 2), though the model gives it a 4.75% chance to pass: r0 is 1 of 2.
    code, out = gate_cmd(runs, "single_fail", "--per-sample")
    assert code == 1, out
    assert out.startswith("GATE FAIL") and "The grass is red." in out
    code, out = gate_cmd(runs, "single", "--flip-rate", "0")
    assert code == 0, out
    code, out = gate_cmd(runs, "single", "--min-statements", "3", "--flip-rate", "0", "--per-sample")
    assert code == 1 and "2 statements, fewer than the minimum 3" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("gate", "nope"), "no run 'nope'"),
        (("gate", "RUN", "--metric", "relevance"), "has no metric 'relevance'; its metrics: faithfulness"),
        (("gate", "RUN", "--min", "1.5"), "--min is a score between 0 and 1, not 1.5"),
        (("gate", "RUN", "--min", "high"), "--min is a score between 0 and 1, not 'high'"),
        (("gate", "RUN", "--bogus"), "unexpected arguments: --bogus"),
        (("gate",), "give the RUN_ID to gate, or --latest"),
    ],
)
def test_exit_3_on_usage_errors(runs: dict[str, tuple[Path, str]], args: tuple[str, ...], message: str) -> None:
    store, run_id = runs["pass"]
    code, out = invoke(*(run_id if a == "RUN" else a for a in args), "--store", str(store))
    assert code == 3, out
    assert message in " ".join(out.split())


def test_exit_3_without_a_store(tmp_path: Path) -> None:
    code, out = invoke("gate", "x", "--store", str(tmp_path / "none.sqlite"))
    assert code == 3 and "no run store" in out


def test_simulate_prints_closed_form_and_histograms_and_writes_svg(tmp_path: Path) -> None:
    svg = tmp_path / "out.svg"
    code, out = invoke(
        "simulate", "--statements", "3,10,20", "--flip-rate", "0.1", "--threshold", "0.8", "--true-rate", "0.9",
        "--runs", "4000", "--seed", "0", "--svg", str(svg),
    )  # fmt: skip
    assert code == 0, out
    # q = .9·.9 + .1·.1 = .82; with 3 statements a .8 gate needs all 3: .82³ = .5514
    assert "q = 0.820" in out and "0.5514" in out
    assert "n = 3: P(pass)" in out and "n = 20: P(pass)" in out and "◀ threshold" in out
    assert "no statement count up to 200" in " ".join(out.split())
    doc = minidom.parse(str(svg))
    assert doc.documentElement.tagName == "svg"
    titles = [t.firstChild.data for t in doc.getElementsByTagName("text") if t.firstChild is not None]
    assert any(t.startswith("n = 10: P(pass) =") for t in titles)
    code, out = invoke("simulate", "--statements", "3,x")
    assert code == 1 and "comma-separated counts" in out


def test_a_run_with_invalid_rows_does_not_pass_its_gate_unless_they_are_tolerated(tmp_path: Path) -> None:
    """assay run judged 8 of 10 rows (exit 2); the gate used to pass on those 8 and exit 0."""
    lines = rows(*["The sky is blue. The sky is vast."] * 10).splitlines()
    lines[3] = '{"id": "r3", "question": '  # not JSON
    lines[8] = json.dumps({"id": "r8", "question": "Sky?", "contexts": ["The sky is blue."]})  # no answer
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(lines) + "\n")
    store = tmp_path / "runs.sqlite"
    with FakeOpenAIServer(responder) as server:
        code, out = invoke(
            "run", str(data), "--judge", "openai:fake", "--base-url", server.base_url, "--decomposer", "sentences",
            "--no-cache", "--store", str(store), "--reasks", "0",
        )  # fmt: skip
    assert code == 2, out  # some input rows were invalid
    code, out = invoke("gate", "--latest", "--store", str(store), "-m", "faithfulness=0.8")
    flat = " ".join(out.split())
    assert code == 2, out
    assert "GATE INCOMPLETE: faithfulness >= 0.8" in flat and "observed pass on the 8 samples judged" in flat
    assert (
        "not gated: 2 input rows were invalid (lines 4, 9) and not judged; fix them and run again, or pass "
        "--max-invalid-rows 2" in flat
    )
    code, out = invoke("gate", "--latest", "--store", str(store), "-m", "faithfulness=0.8", "--max-invalid-rows", "2")
    assert code == 0 and "GATE PASS: faithfulness >= 0.8" in out, out
    assert "tolerated by --max-invalid-rows 2; the gate covers the 8 rows judged" in " ".join(out.split())
    code, out = invoke("gate", "--latest", "--store", str(store), "--max-invalid-rows", "-1")
    assert code == 3 and "-1 is not in [0" in out, out  # a usage error, not click's 2 (which means not passed)
