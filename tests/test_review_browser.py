"""A run's page in headless Chromium: its answer buttons write the file ``assay review --import`` applies.

Skipped without /usr/bin/chromium (``make browser`` installs it).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app

if not Path("/usr/bin/chromium").exists():
    pytest.skip("needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)", allow_module_level=True)
pytest.importorskip("websocket", reason="needs websocket-client (pip install websocket-client)")

from cdp import Chromium
from test_review import CRITERIA, HOSTILE, RUN, make_run, people, stored


def _downloaded(folder: Path, timeout: float = 15.0) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [p for p in folder.glob("*.json") if p.is_file()]
        if done and not list(folder.glob("*.crdownload")):
            return done[0]
        time.sleep(0.05)
    raise AssertionError(f"no answers file downloaded to {folder} in {timeout} s")


def test_answers_given_on_the_page_import_as_the_terminals_do(tmp_path: Path) -> None:
    store, typed = tmp_path / "runs.sqlite", tmp_path / "typed.sqlite"
    make_run(store)
    make_run(typed)
    said = CliRunner().invoke(app, ["review", RUN, "--store", str(typed)], input="n\ns\ns\n")
    assert said.exit_code == 0, said.output
    out = tmp_path / "browse"
    shown = CliRunner().invoke(app, ["browse", "--store", str(store), "--out", str(out)])
    assert shown.exit_code == 0, shown.output
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with Chromium() as browser:
        browser.send("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
        browser.navigate((out / "runs" / f"{RUN}.html").as_uri())
        browser.wait_for("window.assayReady === true")
        questions: list[dict[str, Any]] = browser.evaluate(
            "Array.from(document.querySelectorAll('#review-list > li')).map(li => ({"
            " subject: li.querySelector('.subject').textContent, text: li.textContent }))"
        )
        assert [q["subject"] for q in questions] == [HOSTILE, "The sea is green.", CRITERIA]
        assert "local leaned supported (confidence 0.62, needed 0.90)" in questions[0]["text"]
        assert "context 1: The sky is blue." in questions[0]["text"]
        assert "local leaned not supported (confidence 0.850, needed 0.851)" in questions[1]["text"]
        assert browser.evaluate("document.querySelector('#review-list img') === null")  # text, never markup
        assert browser.evaluate("window.__xss === undefined")
        assert browser.evaluate("document.getElementById('review-download').disabled")
        for index, answer in ((0, "not_supported"), (1, "supported"), (2, "supported")):
            browser.click(f"#review-list button[data-question='{index}'][data-answer='{answer}']")
        assert browser.evaluate("document.getElementById('review-count').textContent") == "3 of 3 answered"
        browser.click("#review-download")
        answers = _downloaded(downloads)
        assert browser.evaluate("window.__xss === undefined")
    data = json.loads(answers.read_text())
    assert data["run_id"] == RUN and len(data["answers"]) == 3
    result = CliRunner().invoke(app, ["review", RUN, "--store", str(store), "--import", str(answers)])
    assert result.exit_code == 0, result.output
    assert "imported 3 answers" in result.output
    mine, theirs = stored(store), stored(typed)
    assert people(mine) == people(theirs) != []
    assert [{n: s["value"] for n, s in r["scores"].items()} for r in mine] == [
        {n: s["value"] for n, s in r["scores"].items()} for r in theirs
    ]
