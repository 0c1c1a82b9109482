"""A new user's first hour, scripted (assay issue 26): the real CLI in a subprocess, and the library.

What a user coming from Ragas, DeepEval or pandas does first: judge Ragas-named JSONL,
DeepEval-named JSONL carrying both its retrieved and its ideal context, a pandas frame; a
CSV with a misspelt ``--map``; a two-metric gate; a gate piped into ``head``; the run
browser. Every step asserts the field that was judged, the exit code and the input order,
not only that something ran.

The judge is a loopback OpenAI-compatible server (``first_hour.word_judge``): a statement is
supported when every one of its words is in the context it was judged against, so which
field was judged shows in the score.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.testing import FakeOpenAIServer
from first_hour import assay_cli, cli_env, word_judge

pytest.importorskip("openai")
pd = pytest.importorskip("pandas")

# Six questions; every answer is one of its contexts' sentences or not.
RAGAS = [
    {"user_input": "What is the capital of France?", "response": "Paris is the capital of France.",
     "retrieved_contexts": ["Paris is the capital of France."], "reference": "Paris"},
    {"user_input": "What is the capital of Spain?", "response": "Lyon is the capital of Spain.",
     "retrieved_contexts": ["Madrid is the capital of Spain."], "reference": "Madrid"},
    {"user_input": "Which planet is largest?", "response": "Jupiter is the largest planet.",
     "retrieved_contexts": ["Jupiter is the largest planet.", "Saturn has rings."], "reference": "Jupiter"},
]  # fmt: skip
# DeepEval names, with both contexts. The ideal `context` supports every answer; what was
# retrieved (`retrieval_context`) does not support the second: judged against the right
# field it scores 0, against the ideal one it would score 1.
DEEPEVAL = [
    {"input": "What is the capital of Italy?", "actual_output": "Rome is the capital of Italy.",
     "retrieval_context": ["Rome is the capital of Italy."], "context": ["Rome is the capital of Italy."]},
    {"input": "What is the capital of Peru?", "actual_output": "Lima is the capital of Peru.",
     "retrieval_context": ["Cusco was the capital of the Incas."], "context": ["Lima is the capital of Peru."]},
    {"input": "What is the capital of Chile?", "actual_output": "Santiago is the capital of Chile.",
     "context": ["Santiago is the capital of Chile."]},  # nothing retrieved: a row error, not the ideal context
]  # fmt: skip


def jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run_id_of(output: str) -> str:
    return output.split("as run ")[1].split()[0]


def wide(cwd: Path, run_id: str) -> list[dict[str, str]]:
    done = assay_cli(cwd, "runs", "export", run_id, "--format", "csv", "--wide")
    assert done.returncode == 0, done.stderr
    return list(csv.DictReader(io.StringIO(done.stdout)))


@pytest.fixture(scope="module")
def server() -> Any:
    with FakeOpenAIServer(word_judge) as fake:
        yield fake


def test_the_first_hour(tmp_path: Path, server: Any) -> None:
    judge = ["--judge", "openai:fake", "--base-url", server.base_url]
    two = ["-m", "faithfulness", "-m", "answer_relevancy"]

    # 1. Ragas-named JSONL: read as question / answer / contexts; the results in input order.
    done = assay_cli(tmp_path, "run", str(jsonl(tmp_path / "ragas.jsonl", RAGAS)), *two, *judge, "--progress", "none")
    assert done.returncode == 0, done.stdout + done.stderr
    ragas_run = run_id_of(done.stdout)
    rows = wide(tmp_path, ragas_run)
    assert [r["question"] for r in rows] == [r["user_input"] for r in RAGAS]
    assert [r["faithfulness"] for r in rows] == ["1.0", "0.0", "1.0"]  # Lyon is not in what was retrieved
    assert [r["answer_relevancy"] for r in rows] == ["1.0", "1.0", "1.0"]

    # 2. DeepEval-named JSONL with both contexts: judged against what was retrieved, never the
    #    ideal context; the row with only the ideal context is reported (exit 2), with a hint
    #    that does not suggest judging the ideal context.
    done = assay_cli(tmp_path, "run", str(jsonl(tmp_path / "deepeval.jsonl", DEEPEVAL)), *judge, "--progress", "none")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "deepeval.jsonl:3: missing or empty field 'contexts'" in done.stderr
    assert "--map context=contexts" not in done.stderr and "retrieval_context" in done.stderr
    rows = wide(tmp_path, run_id_of(done.stdout))
    assert [(r["id"], r["faithfulness"]) for r in rows] == [("line-1", "1.0"), ("line-2", "0.0")]

    # 3. A pandas frame through the library: no store needed, results in input order.
    import assay
    from assay.metrics import AnswerRelevancy, Faithfulness
    from assay.models import OpenAIJudge

    answers = ["Paris is the capital of France.", "Lyon is the capital.", "Paris is big."] * 3
    frame = pd.DataFrame(
        [{"id": f"f{i}", "question": "What is the capital of France?", "answer": answer,
          "contexts": ["Paris is the capital of France."]} for i, answer in enumerate(answers)]
    )  # fmt: skip
    result = assay.evaluate(
        frame, [Faithfulness(), AnswerRelevancy()], OpenAIJudge("fake", base_url=server.base_url), progress=False
    )
    assert [r.sample.id for r in result.results] == list(frame["id"])
    table = result.to_pandas(wide=True)
    assert list(table["id"]) == list(frame["id"])
    assert list(table["faithfulness"])[:3] == [1.0, 0.0, 0.0]

    # 4. A CSV with a misspelt --map: the run stops before any judge call and says which column.
    csv_path = tmp_path / "answers.csv"
    csv_path.write_text(
        "id,question,answer,model_answer,contexts\n"
        "c1,What is the capital of France?,a default column,"
        "Paris is the capital of France.,Paris is the capital of France.\n"
    )
    calls = server.calls
    done = assay_cli(tmp_path, "run", str(csv_path), "--map", "model_answr=answer", *judge, "--progress", "none")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no column 'model_answr'" in done.stderr and "did you mean 'model_answer'?" in done.stderr
    assert server.calls == calls
    done = assay_cli(tmp_path, "run", str(csv_path), "--map", "model_answer=answer", *judge, "--progress", "none")
    assert done.returncode == 0, done.stderr
    (row,) = wide(tmp_path, run_id_of(done.stdout))
    assert row["answer"] == "Paris is the capital of France." and row["faithfulness"] == "1.0"

    # 5. A two-metric gate on the Ragas run: faithfulness (2 of 3) fails a 0.8 mark, relevancy passes.
    done = assay_cli(tmp_path, "gate", ragas_run, "-m", "faithfulness=0.8", "-m", "answer_relevancy=0.7")
    assert done.returncode == 1, done.stdout
    assert "GATE FAIL (2 metrics): faithfulness >= 0.8 FAIL · answer_relevancy >= 0.7 PASS" in done.stdout
    done = assay_cli(tmp_path, "gate", ragas_run, "-m", "faithfulness=0.6", "-m", "answer_relevancy=0.7")
    assert done.returncode == 0, done.stdout

    # 6. Piped into head: the exit code is still the verdict (with pipefail, as CI shells run).
    for thresholds, verdict in ((("faithfulness=0.6", "answer_relevancy=0.7"), 0), (("faithfulness=0.8",), 1)):
        metrics = " ".join(f"-m {t}" for t in thresholds)
        piped = subprocess.run(
            ["bash", "-c", f"set -o pipefail; {sys.executable} -m assay gate {ragas_run} {metrics} | head -1"],
            cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert piped.returncode == verdict, piped.stdout + piped.stderr
        assert piped.stdout.startswith("GATE") and "Traceback" not in piped.stderr

    # 7. Every run, browsable offline.
    done = assay_cli(tmp_path, "browse", "-o", "site")
    assert done.returncode == 0 and "3 runs" in done.stdout, done.stdout + done.stderr
    index = (tmp_path / "site" / "index.html").read_text()
    assert ragas_run in index and (tmp_path / "site" / "runs" / f"{ragas_run}.html").exists()
