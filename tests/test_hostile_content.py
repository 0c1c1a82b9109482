"""Hostile content in every field runs nothing, fetches nothing and never reaches a terminal raw.

Evaluated data is untrusted: a sample's id, question, answer, contexts, reference and
metadata, the dataset's file name, a grader's criterion and the judge's own statements and
reasons may all carry markup (``<script>``, ``<img onerror>``, ``javascript:`` links,
``</script>``, CSS ``url(...)`` pointing at a server), terminal escapes (window title,
clear screen, hidden text) and bidi overrides. The real CLI runs in a subprocess against a
loopback judge that echoes the payloads back as statements and reasons; then:

- ``assay run``, ``assay gate`` and ``assay runs show`` print no raw control character
  (the payloads are shown as visible escapes);
- the HTML report, opened in headless Chromium with every sample, tab, repeat and judge
  exchange opened, executes nothing (no ``window.__xss``, no dialog, no title change, no
  error), creates no element from the data, and fetches nothing: no request leaves the
  page (DevTools network events) and the beacon server the payloads point at is never hit.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from assay.testing import FakeOpenAIServer

pytest.importorskip("openai", reason="needs the openai extra for 'assay run --judge openai:...'")

TITLE, CLEAR, HIDE, BIDI, ISOLATE = "\u001b]0;pwned\u0007", "\u001b[2J", "\u001b[8m", "\u202e", "\u2066"
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class Beacon:
    """A loopback HTTP server that counts every request: the payloads' URLs point here."""

    def __init__(self) -> None:
        hits: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.hits = hits
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Beacon:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def payload(tag: str, beacon: str) -> str:
    """Every kind of hostile content, tagged so each field's copy can be found."""
    return (
        f"{tag}: <script>window.__xss='{tag}';alert(1)</script> "
        f"<img src=x onerror=\"window.__xss='{tag}-img';alert(2)\"> <img src='{beacon}/img-{tag}'> "
        f"<a href=\"javascript:window.__xss='{tag}-link'\">click</a> "
        f"</script><script>window.__xss='{tag}-close'</script> "
        f"<style>body{{background:url({beacon}/css-{tag})}}</style> "
        f"<div style=\"background:url('{beacon}/style-{tag}')\">x</div> url({beacon}/bare-{tag}) "
        f"<svg onload=\"window.__xss='{tag}-svg'\"></svg> <iframe src='{beacon}/frame-{tag}'></iframe> "
        f"<meta http-equiv=refresh content='0;url={beacon}/meta-{tag}'> <!-- {{{{ 7*7 }}}} {{% raw %}} ]]> "
        f"{TITLE}{CLEAR}{HIDE}hidden{BIDI}desrever{ISOLATE} \u2028 [red]markup[/red]"
    )  # fmt: skip


def responder(reason: str) -> Any:
    """Statements are the answer's sentences; verdicts alternate; every reason is ``reason``."""

    def respond(body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        if "<conversation>" in user:
            return json.dumps({"reasoning": reason, "label": "FAIL"})
        if "<answer>" in user:
            answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
            return json.dumps({"statements": [s for s in re.split(r"(?<=\.)\s+", answer) if s.strip()]})
        items = user.split("<statements>\n")[1].split("\n</statements>")[0].split("\n")  # not at U+2028
        verdicts = [
            {"statement": item.split("] ", 1)[1], "reason": reason, "verdict": i % 2} for i, item in enumerate(items)
        ]
        return json.dumps({"verdicts": verdicts})

    return respond


def cli(root: Path, *args: str) -> tuple[int, str]:
    """``python -m assay ARGS`` in ``root``: exit code and stdout + stderr (never a terminal)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "CLICOLOR_FORCE")}
    env.update({"OPENAI_API_KEY": "sk-test", "COLUMNS": "200"})
    done = subprocess.run(
        [sys.executable, "-m", "assay", *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    return done.returncode, done.stdout + done.stderr


def assert_no_raw_control(
    command: str, output: str, shown: str = "\\x1b]0;pwned\\x07\\x1b[2J\\x1b[8mhidden\\u202edesrever\\u2066"
) -> None:
    """No raw control character in ``output``, and ``shown`` (the payload's visible escapes) in it."""
    found = RAW_CONTROL.search(output)
    assert found is None, (
        f"{command}: raw {found.group()!r} in {output[max(0, found.start() - 80) : found.start() + 20]!r}"
    )
    assert shown in output, (command, output)


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, dict[str, Any], Beacon]]:
    """A run of hostile rows through the real CLI; yields (folder, run id, the first row, beacon)."""
    root = tmp_path_factory.mktemp("hostile")
    with Beacon() as beacon:
        rows = []
        for i in range(2):

            def p(field: str, i: int = i) -> str:
                return payload(f"{field}{i}", beacon.url)

            rows.append(
                {
                    "id": p("id"),
                    "question": p("question"),
                    "answer": f"The sky is blue. {p('answer')} Grass is green.",
                    "contexts": ["The sky is blue.", p("context")],
                    "reference": p("reference"),
                    "metadata": {p("metakey"): p("metavalue"), "nested": [p("metalist")]},
                }
            )
        name = f"rows<img src=x onerror=window.__xss=9>{CLEAR}.jsonl"  # the file name shows in the header
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
        criterion = payload("criterion", beacon.url).replace(",", " ")
        with FakeOpenAIServer(responder(payload("reason", beacon.url))) as server:
            code, out = cli(
                root, "run", name, "-m", "faithfulness", "-m", "binary_grader",
                "--set", f"binary_grader.criteria={criterion}", "--repeats", "2",
                "--judge", "openai:fake", "--base-url", server.base_url, "--out", "out.jsonl",
            )  # fmt: skip
        assert code in (0, 3), out
        assert_no_raw_control("assay run", out)
        run_id = re.findall(r"\b(\d{8}-\d{6}-[0-9a-f]{4})\b", out)[0]
        yield root, run_id, rows[0], beacon


def test_gate_runs_show_and_run_print_no_raw_control_character(
    hostile_run: tuple[Path, str, dict[str, Any], Beacon],
) -> None:
    root, run_id, _, _ = hostile_run
    code, out = cli(root, "gate", run_id, "--per-sample", "--max-unscored", "1")
    assert code in (0, 1, 2), out
    assert_no_raw_control("assay gate", out)
    assert "id0: <script>" in out  # shown, as text
    code, out = cli(root, "runs", "show", run_id)
    assert code == 0, out
    assert_no_raw_control("assay runs show", out, shown="rows<img src=x onerror=window.__xss=9>\\x1b[2J.jsonl")


def test_report_in_chromium_runs_nothing_and_fetches_nothing(
    hostile_run: tuple[Path, str, dict[str, Any], Beacon],
) -> None:
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)")
    pytest.importorskip("websocket", reason="needs websocket-client (pip install websocket-client)")
    from cdp import Chromium

    root, run_id, first, beacon = hostile_run
    code, out = cli(root, "report", run_id, "--gate", "--out", "report.html")
    assert code == 0, out
    page = root / "report.html"
    with Chromium() as browser:
        for domain in ("Network", "Log"):
            browser.send(f"{domain}.enable")
        # A dialog would block the page (and this test): count calls instead of opening them.
        browser.send(
            "Page.addScriptToEvaluateOnNewDocument",
            {
                "source": "window.alert = window.confirm = window.prompt = "
                "() => { window.__dialogs = (window.__dialogs || 0) + 1; };"
            },
        )
        browser.navigate(page.as_uri())
        browser.wait_for("window.assayReady === true")
        title = browser.evaluate("document.title")
        assert title == f"assay report · {run_id}"
        # Open everything a reader can: each sample, each repeat, each statements tab, every disclosure.
        ids = browser.evaluate(
            "[...document.querySelectorAll('#sample-body tr')].map(tr => tr.children[1].textContent)"
        )
        assert first["id"] in ids and len(ids) == 2
        for sample_id in ids:
            assert browser.evaluate(f"window.assaySelect({json.dumps(sample_id)})")
            for button in range(browser.evaluate("document.querySelectorAll('#sample-view button').length")):
                browser.evaluate(f"document.querySelectorAll('#sample-view button')[{button}].click()")
                browser.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        browser.evaluate("window.assaySelect(" + json.dumps(first["id"]) + ")")
        browser.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")

        # The payloads are on the page as text ...
        view = browser.evaluate("document.getElementById('sample-view').textContent")
        for field in ("question", "reference"):
            assert first[field] in view, field
        assert first["answer"] == browser.evaluate("document.querySelector('#sample-view .answer').textContent")
        contexts = browser.evaluate("[...document.querySelectorAll('#sample-view ol .block')].map(b => b.textContent)")
        assert contexts == first["contexts"]
        assert (
            payload("reason", beacon.url) in view
            and json.dumps(first["metadata"], indent=2, ensure_ascii=False) in view
        )
        assert "rows<img src=x onerror=window.__xss=9>" in browser.evaluate(
            "document.querySelector('header').textContent"
        )
        # ... and did nothing.
        assert browser.evaluate("[typeof window.__xss, typeof window.__dialogs]") == ["undefined", "undefined"]
        assert browser.evaluate("document.title") == title
        made = browser.evaluate(
            "({img: document.querySelectorAll('img, iframe, a, object, embed, meta[http-equiv=refresh],"
            " body meta, body style, body link').length,"
            " scripts: document.scripts.length, styles: document.querySelectorAll('style').length,"
            " svg_in_data: document.querySelectorAll('#samples svg, header svg').length,"
            " handlers: [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a =>"
            "   a.name.startsWith('on') || (['href', 'src', 'style', 'action', 'srcset'].includes(a.name)"
            "   && /url\\(|javascript:|http:/i.test(a.value)))).map(e => e.outerHTML.slice(0, 200))})"
        )
        assert made == {"img": 0, "scripts": 2, "styles": 1, "svg_in_data": 0, "handlers": []}, made
        browser.evaluate("1")  # flush pending protocol events into browser.events
        events = list(browser.events)
    requests = [
        e["params"]["request"]["url"]
        for e in events
        if e["method"] == "Network.requestWillBeSent" and not e["params"]["request"]["url"].startswith("file:")
    ]
    assert requests == [], requests
    assert beacon.hits == [], beacon.hits
    noisy = [
        e
        for e in events
        if e["method"] in ("Page.javascriptDialogOpening", "Runtime.exceptionThrown")
        or (e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] in ("error", "warning"))
        or (e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "warning"))
    ]
    assert noisy == [], noisy
