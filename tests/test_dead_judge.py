"""Every door says when nothing could be judged, in the same words (issue 56, item 3).

``assay run`` against a judge server that is not running said "every judge call failed
(14 of 14): Could not talk to ...; is it running?" and exited 3, while ``evaluate`` returned
``faithfulness=nan`` with no note and no warning. Now ``evaluate`` raises the error the CLI
prints, and a run where only some calls failed warns once per kind of error.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay import evaluate
from assay.cli import app
from assay.errors import JudgeCallWarning, JudgeUnavailableError
from assay.run import RunStore

pytest.importorskip("openai")
pytest.importorskip("anthropic")
from assay.testing import FakeOpenAIServer
from faithfulness_fakes import faithfulness_answer

ROWS = [
    {"id": f"r{i}", "question": "Colour?", "answer": f"The sky is blue. Row {i} is here.", "contexts": ["The sky."]}
    for i in range(3)
]


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "300", "OPENAI_API_KEY": "sk-test"})
    return result.exit_code, " ".join(result.output.split())


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("judge", ["openai:gpt-4o-mini", "anthropic:claude-haiku-4-5"])
def test_a_judge_server_that_is_not_running_raises_in_python_with_the_words_the_cli_prints(
    judge: str, refused_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = refused_url
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    options = ("--retries", "0", "--no-cache")
    code, out = _cli("run", "rows.jsonl", "-m", "faithfulness", "--judge", judge, "--base-url", url, *options)
    assert code == 3, out
    with pytest.raises(JudgeUnavailableError) as raised:
        evaluate(ROWS, "faithfulness", judge=judge, base_url=url, progress="none", limits=_no_retries())
    message = _flat(str(raised.value))
    assert message.startswith("every judge call failed (")
    assert "127.0.0.1" in message  # where it tried
    # the same words from both doors: the count may differ (one call a sample), the error may not
    assert message.split("): ", 1)[1] in out, (message, out)
    # what was judged is kept for whoever wants to look: every sample, unscored with its reason
    result = raised.value.result
    assert [r.scores["faithfulness"].unscored_reason for r in result.results] == ["judge_error"] * 3  # type: ignore[attr-defined]


def _no_retries() -> Any:
    from assay.models import Limits

    return Limits(max_attempts=1)


def test_a_stored_run_whose_every_call_failed_is_kept_and_raises(refused_url: str, tmp_path: Path) -> None:
    url = refused_url
    with pytest.raises(JudgeUnavailableError) as raised:
        evaluate(
            ROWS,
            "faithfulness",
            judge="openai:gpt-4o-mini",
            base_url=url,
            store=tmp_path / "runs.sqlite",
            progress="none",
            limits=_no_retries(),
        )
    run_id = raised.value.result.run_id  # type: ignore[attr-defined]
    with RunStore(tmp_path / "runs.sqlite") as store:
        assert store.info(run_id).n_results == 3
        assert store.finished(run_id) == set()  # errors, not verdicts: a resume judges them again


def _flaky(body: dict[str, Any]) -> str:
    user = body["messages"][-1]["content"]
    if "Row 1" in user:
        raise RuntimeError("the server fell over")  # answered as a 500
    return faithfulness_answer(user, supported=lambda statement: True)


def test_some_failed_calls_warn_once_per_kind_and_the_notes_say_so(tmp_path: Path) -> None:
    with FakeOpenAIServer(_flaky) as server, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = evaluate(
            ROWS, "faithfulness", judge="openai:fake", base_url=server.base_url, progress="none", limits=_no_retries()
        )
    said = [w for w in caught if issubclass(w.category, JudgeCallWarning)]
    assert len(said) == 1, [str(w.message) for w in caught]
    text = str(said[0].message)
    assert text.startswith("1 of ") or " judge calls failed: " in text
    assert "judge calls failed" in text and "500" in text
    assert text in result.notes
    values = {r.sample.id: r.scores["faithfulness"] for r in result.results}
    assert values["r1"].unscored_reason == "judge_error" and values["r0"].value == 1.0
