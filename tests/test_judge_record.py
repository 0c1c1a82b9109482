"""The run records the judge it ran, exactly (issue 56, item 6).

One judge name covered several judges: the default local judge reads a Q8_0 copy of its
weights on the AMX build and the shipped Q4_K_M elsewhere, and the same weights on AVX2
and AVX-512 kernels moved 1 of 100 BEGIN verdicts. A run recorded only the name, so a run
started on one machine could be resumed on another and finish judged by two judges, and a
comparison of the two runs said nothing. Each test failed on the code before the fix.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay import Faithfulness, evaluate
from assay.cli import app
from assay.models import FunctionJudge, JudgeRequest
from assay.models._amx import LoadedBuild, kernels_of
from assay.report._browse import build_browser
from assay.report._build import comparison_caveats
from assay.run import JudgeRecord, ResumeError, RunSpec, RunStore

METRIC = Faithfulness(decomposer="sentences", strategy="per_statement")


def verdict(messages: list[dict[str, str]], request: JudgeRequest) -> str:
    statement = messages[-1]["content"].split("<statement>\n")[1].split("\n</statement>")[0]
    return json.dumps({"verdict": int("blue" in statement), "reason": "r"})


@dataclass
class BuiltJudge(FunctionJudge):
    """A test judge with the components of a local judge: one name, several builds."""

    build: str = "llama.cpp default build, AVX2 kernels (llama-cpp-python 0.3.36)"
    weights: str = "judge.gguf (Q4_K_M as shipped)"

    @property
    def identity(self) -> str:
        """Like the local judge's key: the build is in it."""
        return f"{self.name}:build={self.build}"

    @property
    def components(self) -> dict[str, str]:
        """Weights and build."""
        return {"weights": self.weights, "build": self.build}


AVX512 = "llama.cpp default build, AVX512 kernels (llama-cpp-python 0.3.36)"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def data(path: Path, n: int = 3) -> Path:
    rows = [
        {"id": f"r{i}", "question": "Sky?", "answer": f"The sky is blue. Row {i} is green.", "contexts": ["sky"]}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_run_stores_its_judges_weights_build_and_prompt_versions(tmp_path: Path) -> None:
    judge = BuiltJudge(verdict, name="local:same-name")
    result = evaluate(data(tmp_path / "d.jsonl"), METRIC, judge, store="runs.sqlite", progress=False)
    with RunStore("runs.sqlite") as store:
        record = store.spec(str(result.run_id)).judge_record
    assert record is not None
    assert record.model_id == "local:same-name" and record.identity == judge.identity
    assert record.components == {"weights": "judge.gguf (Q4_K_M as shipped)", "build": judge.build}
    prompts = METRIC.spec().params["prompts"]
    assert prompts and record.prompts == {"faithfulness": {k: str(v) for k, v in prompts.items()}}
    assert result.judge_record == record

    # Shown where the run is read: runs show and the report's settings.
    shown = CliRunner().invoke(app, ["runs", "show", str(result.run_id), "--store", "runs.sqlite"],
                               env={"COLUMNS": "300"}).output  # fmt: skip
    assert "build: llama.cpp default build, AVX2 kernels" in shown and "weights: judge.gguf" in shown
    out = CliRunner().invoke(app, ["report", str(result.run_id), "--store", "runs.sqlite", "--out", "r.html"])
    assert out.exit_code == 0, out.output
    html = Path("r.html").read_text()
    assert "judge build" in html and "AVX2 kernels" in html and "judge.gguf (Q4_K_M as shipped)" in html


def test_resume_refuses_the_same_model_name_on_another_build_or_layout(tmp_path: Path) -> None:
    path = data(tmp_path / "d.jsonl", 4)
    first = evaluate(path, METRIC, BuiltJudge(verdict, name="local:m"), store="runs.sqlite", progress=False)
    with sqlite3.connect("runs.sqlite") as db:  # what Ctrl-C leaves behind: 2 of 4 rows judged
        db.execute("DELETE FROM results WHERE line > 2")
        db.execute("UPDATE runs SET status = 'interrupted'")
    for other in (
        BuiltJudge(verdict, name="local:m", build=AVX512),
        BuiltJudge(verdict, name="local:m", weights="judge.q8_0.gguf (Q8_0 copy, one scale per 256 weights)"),
    ):
        with pytest.raises(ResumeError) as caught:
            evaluate(path, METRIC, other, store="runs.sqlite", resume=first.run_id, progress=False)
        said = str(caught.value)
        assert "another local:m" in said and " then, " in said and " now" in said, said
        assert ("AVX512" in said) == (other.build == AVX512)
        assert ("Q8_0 copy" in said) == (other.build != AVX512)
    with RunStore("runs.sqlite") as store:
        assert len(list(store.results(str(first.run_id)))) == 2  # nothing judged by the other judge
    # The same judge resumes as before, and judges the 2 rows left.
    done = evaluate(path, METRIC, BuiltJudge(verdict, name="local:m"), store="runs.sqlite", resume=first.run_id,
                    progress=False)  # fmt: skip
    assert done.n_samples == 2


def schema_1_store(path: Path) -> str:
    """A store as assay wrote it before runs recorded their judge (schema 1): one interrupted run."""
    with RunStore(path) as store:
        spec = RunSpec(run_id="old-run", judge="local", judge_model="local:m", metrics=(METRIC.spec(),))
        store.create(spec)
    with sqlite3.connect(path) as db:
        raw = json.loads(db.execute("SELECT spec FROM runs").fetchone()[0])
        raw.pop("judge_record")
        raw["schema_version"] = 1
        db.execute("UPDATE runs SET spec = ?, status = 'interrupted'", (json.dumps(raw),))
        db.execute("DROP TABLE calibrations")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
        db.execute("PRAGMA user_version = 1")
    return "old-run"


def test_a_schema_1_store_is_read_and_its_runs_are_not_resumed_by_an_unverifiable_judge(tmp_path: Path) -> None:
    run_id = schema_1_store(tmp_path / "runs.sqlite")
    with RunStore(tmp_path / "runs.sqlite") as store:  # upgraded in place: the new table exists
        spec = store.spec(run_id)
        assert spec.schema_version == 1 and spec.judge_record is None
        assert store.calibrations("faithfulness", "x") == []
    path = data(tmp_path / "d.jsonl")
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:  # the data's fingerprint as the run had it
        from assay.run import open_dataset

        raw = json.loads(db.execute("SELECT spec FROM runs").fetchone()[0])
        raw["dataset_fingerprint"] = open_dataset(path).fingerprint
        db.execute("UPDATE runs SET spec = ?", (json.dumps(raw),))
    with pytest.raises(ResumeError, match=r"did not record its judge's weights, layout and llama\.cpp build"):
        evaluate(path, METRIC, BuiltJudge(verdict, name="local:m"), store=tmp_path / "runs.sqlite",
                 resume=run_id, progress=False)  # fmt: skip


def test_a_comparison_says_first_that_two_runs_had_two_judges_of_one_name(tmp_path: Path) -> None:
    path = data(tmp_path / "d.jsonl")
    a = evaluate(path, METRIC, BuiltJudge(verdict, name="local:m"), store="runs.sqlite", progress=False)
    b = evaluate(path, METRIC, BuiltJudge(verdict, name="local:m", build=AVX512), store="runs.sqlite",
                 temperature=0.2, progress=False)  # fmt: skip
    with RunStore("runs.sqlite") as store:
        here, there = store.info(str(b.run_id)), store.info(str(a.run_id))
        caveats = comparison_caveats(here, there)
        assert caveats[0].startswith("judged by two different local:m judges (build: ")
        assert "AVX512 kernels (llama-cpp-python 0.3.36) here" in caveats[0]
        assert any("temperature" in c for c in caveats[1:])  # the other caveats follow
        assert comparison_caveats(here, here) == ()
        browser = build_browser([(here, list(store.records(here.run_id))), (there, list(store.records(there.run_id)))])
    parts = {run["id"]: run["judge_parts"] for run in browser.payload["runs"]}
    assert parts[str(b.run_id)]["build"] == AVX512 and parts[str(a.run_id)]["build"] != AVX512
    out = CliRunner().invoke(app, ["report", str(b.run_id), "--compare", str(a.run_id), "--store", "runs.sqlite",
                                   "--out", "c.html"])  # fmt: skip
    assert out.exit_code == 0, out.output
    html = Path("c.html").read_text()
    first = html.index("judged by two different local:m judges")
    assert first < html.index("temperature 0.2")


def test_the_record_names_each_difference_in_words() -> None:
    a = JudgeRecord(model_id="m", identity="k1", components={"weights": "w", "build": "avx2"},
                    prompts={"faithfulness": {"verdict": "2"}})  # fmt: skip
    b = a.model_copy(update={"identity": "k2", "components": {"weights": "w", "build": "amx", "adapter": "lora-7"},
                             "prompts": {"faithfulness": {"verdict": "3"}}})  # fmt: skip
    assert a.differences(b) == [
        "adapter: none here, lora-7 there",
        "build: avx2 here, amx there",
        "faithfulness's prompt verdict: version 2 here, 3 there",
    ]
    # Only the identity differs (another endpoint, another file of one name): still said.
    assert a.differences(a.model_copy(update={"identity": "k3"})) == ["judge identity: k1 here, k3 there"]
    assert a.differences(a) == []


def test_the_local_judges_cache_key_and_record_name_the_build_that_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another build is another judge: its cached answers are not served for this one."""
    from assay.models import LocalJudge, _local

    keys = {}
    for kernels in ("avx2", "avx512", "amx"):
        monkeypatch.setattr(_local, "loaded_build", lambda k=kernels: LoadedBuild("default", k, "0.3.36"))
        monkeypatch.setattr(_local.LocalJudge, "_runs_amx_layout", lambda self: False)
        judge = LocalJudge()
        keys[kernels] = judge.identity
        assert judge.identity.endswith(f":build={kernels}@0.3.36")
        assert (
            judge.components["build"] == f"llama.cpp default build, {kernels.upper()} kernels (llama-cpp-python 0.3.36)"
        )
        assert judge.components["weights"] == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (Q4_K_M as shipped)"
    assert len(set(keys.values())) == 3


@pytest.mark.parametrize(
    ("info", "kernels"),
    [
        ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | LLAMAFILE = 1 | OPENMP = 1 |", "avx2"),
        ("CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | REPACK = 1 |", "avx512"),
        ("CPU : AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | REPACK = 1 |", "amx"),
        ("CPU : AVX512 = 0 | AVX512_VNNI = 1 | AVX2 = 0 | AVX = 1 |", "generic"),
    ],
)
def test_the_build_is_read_from_what_the_loaded_library_reports(info: str, kernels: str) -> None:
    assert kernels_of(info) == kernels


@pytest.mark.e2e  # a real browser: not in make test-fast
def test_the_run_browser_says_first_that_two_runs_had_two_judges_of_one_name(tmp_path: Path) -> None:
    pytest.importorskip("websocket", reason="needs websocket-client (pip install websocket-client)")
    from cdp import CHROMIUM, Chromium

    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian's chromium at {CHROMIUM} (make browser, or apt-get install chromium)")
    path = data(tmp_path / "d.jsonl")
    evaluate(path, METRIC, BuiltJudge(verdict, name="local:m"), store="runs.sqlite", progress=False)
    evaluate(path, METRIC, BuiltJudge(verdict, name="local:m", build=AVX512), store="runs.sqlite", progress=False)
    out = CliRunner().invoke(app, ["browse", "--store", "runs.sqlite", "-o", "site"])
    assert out.exit_code == 0, out.output
    with Chromium(width=1280, height=1000) as browser:
        browser.navigate((tmp_path / "site" / "index.html").as_uri())
        browser.wait_for("window.assayBrowserReady === true")
        note = browser.evaluate("document.getElementById('compare-note').textContent")
    assert note.startswith("warning: the runs were judged by two different local:m judges: build: "), note
    assert "AVX2 kernels" in note and "AVX512 kernels" in note
