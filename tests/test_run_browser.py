"""The run browser (``assay browse``) and the report's layout, in headless Chromium (assay issue 26).

Runs are made by the real ``assay run`` against a loopback judge; the browser is written
by the real ``assay browse`` and opened from disk (``file://``), as it is from a CI
artifact. Skipped without /usr/bin/chromium.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

if not Path("/usr/bin/chromium").exists():
    pytest.skip("needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)", allow_module_level=True)
pytest.importorskip("websocket", reason="needs websocket-client (pip install websocket-client)")
pytest.importorskip("openai", reason="needs the openai extra for 'assay run --judge openai:...'")

from assay.cli import app
from assay.report import load_report, report_file
from assay.run import RunStore
from assay.testing import FakeOpenAIServer
from cdp import Chromium
from first_hour import word_judge

FACTS = ["Paris is the capital of France.", "Madrid is the capital of Spain.", "Rome is the capital of Italy."]


def rows(version: int) -> list[dict[str, Any]]:
    """Six samples; version 2 answers sample 0 and 4 differently (one gets worse, one better)."""
    out = []
    for i in range(6):
        fact = FACTS[i % 3]
        wrong = fact.replace("capital", "largest city") + " Nobody knows."
        good = (i != 0) if version == 2 else (i != 4)
        out.append(
            {
                "id": f"s{i}",
                "user_input": f"What is the capital, question {i}?",
                "response": fact if good else wrong,
                "retrieved_contexts": [fact],
            }
        )
    out.append(  # data is untrusted: none of it may run or fetch anything
        {
            "id": "<img src=x onerror=window.__xss=1>",
            "user_input": "<script>window.__xss=2</script>capital?",
            "response": "</script><script>window.__xss=3</script>Paris is the capital of France.",
            "retrieved_contexts": ["Paris is the capital of France."],
        }
    )
    return out


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200", "OPENAI_API_KEY": "sk-test"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two runs of the same data by the real CLI, the newer one with two repeats."""
    root = tmp_path_factory.mktemp("browse")
    store = root / "runs.sqlite"
    ids = []
    with FakeOpenAIServer(word_judge) as server:
        for version, extra in ((1, ()), (2, ("--repeats", "2"))):
            data = root / f"v{version}.jsonl"
            data.write_text("".join(json.dumps(r) + "\n" for r in rows(version)))
            invoke("run", str(data), "-m", "faithfulness", "-m", "answer_relevancy", "--judge", "openai:fake",
                   "--base-url", server.base_url, "--store", str(store), "--no-cache", *extra)  # fmt: skip
            with RunStore(store) as runs:
                ids.append(runs.latest())
            time.sleep(1.05)  # created_at has one-second resolution
    return {"root": root, "store": store, "old": ids[0], "new": ids[1]}


@pytest.fixture(scope="module")
def site(runs: dict[str, Any]) -> dict[str, Any]:
    """``assay browse`` over them."""
    out = invoke("browse", "--store", str(runs["store"]), "-o", str(runs["root"] / "site"))
    assert "2 runs" in out
    return {**runs, "site": runs["root"] / "site"}


@pytest.fixture
def browser() -> Any:
    with Chromium(width=1280, height=1000) as chromium:
        yield chromium


def test_the_index_lists_every_run_with_its_means_and_links_to_each_report(
    site: dict[str, Any], browser: Chromium
) -> None:
    browser.navigate((site["site"] / "index.html").as_uri())
    browser.wait_for("window.assayBrowserReady === true")
    listed = browser.evaluate(
        "[...document.querySelectorAll('#run-table tbody tr')].map(tr => ({run: tr.dataset.run,"
        " href: tr.querySelector('a.report-link').getAttribute('href'),"
        " cells: [...tr.children].map(td => td.textContent.trim())}))"
    )
    assert [r["run"] for r in listed] == [site["new"], site["old"]]  # newest first
    heads = browser.evaluate("[...document.querySelectorAll('#run-table thead th')].map(th => th.textContent.trim())")
    for entry in listed:
        assert entry["href"] == f"runs/{report_file(entry['run'])}"
        assert (site["site"] / entry["href"]).exists()
        report = load_report(site["store"], entry["run"])  # the report's own numbers
        for metric in report.metrics:
            column = next(i for i, h in enumerate(heads) if h.startswith(metric.name))
            m = metric.mean
            assert entry["cells"][column] == f"{m.estimate:.3f}[{m.low:.3f}, {m.high:.3f}]", entry
        samples = heads.index("samples")
        assert entry["cells"][samples].startswith("7"), entry  # samples, not (sample, repeat) results
        assert entry["cells"][heads.index("data")].endswith(("v1.jsonl", "v2.jsonl"))
    assert browser.evaluate("window.__xss") is None


def test_two_runs_side_by_side_show_both_answers_and_verdicts(site: dict[str, Any], browser: Chromium) -> None:
    browser.navigate((site["site"] / "index.html").as_uri())
    browser.wait_for("window.assayBrowserReady === true")
    # The two newest runs are preselected: A the older, B the newer.
    title = browser.evaluate("document.getElementById('compare-title').textContent")
    assert title == f"{site['old']} (A) and {site['new']} (B)"
    # Same judge, same settings (repeats are not a setting of the metric): nothing to warn about.
    assert "warning" not in browser.evaluate("document.getElementById('compare-note').textContent")
    row = browser.evaluate(
        "(() => { const tr = document.querySelector('#compare-body tr[data-sample-id=\"s0\"]');"
        " return [...tr.children].map(td => td.textContent); })()"
    )
    assert "Paris is the capital of France." in row[2] and "largest city" in row[3]  # A's answer, B's answer
    assert "✓Paris is the capital of France." in row[2] and "✗Paris is the largest city of France." in row[3]
    assert "faithfulness -1.000" in row[4] and "pass→fail" in row[4]
    # Only what changed: s0 got worse, s4 better (and both runs judged the hostile row the same).
    browser.click("#changed")
    changed = browser.evaluate("[...document.querySelectorAll('#compare-body tr')].map(tr => tr.dataset.sampleId)")
    assert changed == ["s0", "s4"]
    # Any two runs: swap them.
    browser.click(f"#run-table tr[data-run='{site['new']}'] input[name=run-a]")
    browser.click(f"#run-table tr[data-run='{site['old']}'] input[name=run-b]")
    row = browser.evaluate(
        "[...document.querySelector('#compare-body tr[data-sample-id=\"s0\"]').children].map(td => td.textContent)"
    )
    assert "faithfulness +1.000" in row[4] and "fail→pass" in row[4]
    assert browser.evaluate("window.__xss") is None
    assert browser.evaluate("document.querySelectorAll('#compare-body script, #compare-body img').length") == 0


def test_a_sample_link_opens_that_sample_in_its_runs_report(site: dict[str, Any], browser: Chromium) -> None:
    browser.navigate((site["site"] / "index.html").as_uri())
    browser.wait_for("window.assayBrowserReady === true")
    href = browser.evaluate(
        "document.querySelector('#compare-body tr[data-sample-id=\"s4\"] a.sample-link:last-child')"
        ".getAttribute('href')"
    )
    assert href == f"runs/{report_file(site['new'])}#sample=s4"
    browser.events.clear()
    browser.click("#compare-body tr[data-sample-id='s4'] a.sample-link:last-child")
    browser.wait_event("Page.loadEventFired")  # a real navigation, to the other file
    browser.wait_for("window.assayReady === true && document.getElementById('sample-view') !== null")
    assert browser.evaluate("document.getElementById('sample-view').dataset.sampleId") == "s4"
    assert browser.evaluate("document.title") == f"assay report · {site['new']}"
    assert browser.evaluate("document.getElementById('back-to-runs').getAttribute('href')") == "../index.html"
    # The hostile id travels through the link as text, not markup.
    browser.navigate((site["site"] / "index.html").as_uri())
    browser.wait_for("window.assayBrowserReady === true")
    browser.events.clear()
    browser.click("#compare-body tr:last-child a.sample-link:last-child")
    browser.wait_event("Page.loadEventFired")
    browser.wait_for("document.getElementById('sample-view') !== null")
    assert browser.evaluate("document.getElementById('sample-view').dataset.sampleId") == (
        "<img src=x onerror=window.__xss=1>"
    )
    assert browser.evaluate("window.__xss") is None


@pytest.mark.parametrize("width", [1280, 1920])
def test_the_report_sample_table_uses_the_page_and_shows_every_delta(runs: dict[str, Any], width: int) -> None:
    """Item 12: the table used half the page, scrolled sideways and hid its Δ columns."""
    out = runs["root"] / f"report-{width}.html"
    invoke("report", runs["new"], "--compare", runs["old"], "--store", str(runs["store"]), "-o", str(out))
    with Chromium(width=width, height=1000) as browser:
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
        )
        browser.navigate(out.as_uri())
        browser.wait_for("window.assayReady === true")
        layout = browser.evaluate(
            "(() => { const wrap = document.querySelector('.table-wrap'), sec = document.getElementById('samples');"
            " const right = wrap.getBoundingClientRect().right;"
            " return {wrap: wrap.clientWidth, scroll: wrap.scrollWidth, section: sec.clientWidth,"
            " page: document.documentElement.scrollWidth, view: document.documentElement.clientWidth,"
            " hidden: [...document.querySelectorAll('#sample-head th')]"
            ".filter(th => th.getBoundingClientRect().right > right + 1).map(th => th.textContent),"
            " deltas: [...document.querySelectorAll('#sample-head th.delta')].length,"
            " untitled: [...document.querySelectorAll('#summary th, #sample-head th.metric')]"
            ".filter(th => !th.title).length}; })()"
        )
        assert layout["page"] <= layout["view"], layout  # the page never scrolls sideways
        assert layout["wrap"] >= 0.95 * layout["section"], layout  # the table takes the page's width
        assert layout["deltas"] == 2 and layout["hidden"] == [], layout  # every Δ column in view
        assert layout["untitled"] == 0, layout  # summary and metric headers explain themselves
        # A sample opens in a panel, and the table keeps its width; Esc closes it.
        browser.click("#sample-body tr:first-child")
        browser.wait_for("document.body.classList.contains('viewing')")
        assert browser.evaluate("document.getElementById('detail').getBoundingClientRect().width") > 400
        assert browser.evaluate("document.querySelector('.table-wrap').clientWidth") >= (
            layout["wrap"] if width < 1800 else 0.5 * layout["wrap"]
        )
        browser.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": "Escape", "code": "Escape"})
        browser.wait_for("!document.body.classList.contains('viewing')")


def test_runs_judged_by_different_judges_or_settings_are_compared_with_a_warning(
    tmp_path: Path, browser: Chromium
) -> None:
    # Δ between two runs is read as "what my change did"; a different judge or metric setting
    # moves scores by itself, and neither the report nor the browser said so.
    store = tmp_path / "runs.sqlite"
    data = tmp_path / "v1.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows(1)))
    ids = []
    with FakeOpenAIServer(word_judge) as server:
        for judge, extra in (("openai:fake", ()), ("openai:other", ("--set", "faithfulness.threshold=0.7"))):
            invoke("run", str(data), "-m", "faithfulness", "--judge", judge, "--base-url", server.base_url,
                   "--store", str(store), "--no-cache", *extra)  # fmt: skip
            with RunStore(store) as opened:
                ids.append(opened.latest())
            time.sleep(1.05)
    result = CliRunner().invoke(app, ["report", ids[1], "--compare", ids[0], "--store", str(store), "-o",
                                      str(tmp_path / "r.html")], env={"COLUMNS": "250"})  # fmt: skip
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "warning: the runs differ in more than the system judged" in flat
    assert "judged by different judges (openai:other here, openai:fake there)" in flat
    assert "faithfulness is set differently (verifier.threshold)" in flat
    page = (tmp_path / "r.html").read_text()
    assert "judged by different judges (openai:other here, openai:fake there)" in page
    invoke("browse", "--store", str(store), "-o", str(tmp_path / "site"))
    browser.navigate((tmp_path / "site" / "index.html").as_uri())
    browser.wait_for("window.assayBrowserReady === true")
    note = browser.evaluate("document.getElementById('compare-note').textContent")
    assert "warning: the runs differ in more than the system judged" in note
    assert "judged by different judges (openai:fake, openai:other)" in note
    assert "faithfulness is set differently" in note


def test_one_judge_served_from_two_endpoints_is_compared_with_a_warning(tmp_path: Path, browser: Chromium) -> None:
    store = tmp_path / "runs.sqlite"
    data = tmp_path / "v1.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows(1)))
    ids = []
    for _ in range(2):
        with FakeOpenAIServer(word_judge) as server:  # a new server, a new port: another endpoint
            invoke("run", str(data), "-m", "faithfulness", "--judge", "openai:fake", "--base-url", server.base_url,
                   "--store", str(store), "--no-cache")  # fmt: skip
        with RunStore(store) as opened:
            ids.append(opened.latest())
        time.sleep(1.05)
    result = CliRunner().invoke(app, ["report", ids[1], "--compare", ids[0], "--store", str(store), "-o",
                                      str(tmp_path / "r.html")], env={"COLUMNS": "250"})  # fmt: skip
    assert "openai:fake was served from http://127.0.0.1:" in " ".join(result.output.split())
    invoke("browse", "--store", str(store), "-o", str(tmp_path / "site"))
    browser.navigate((tmp_path / "site" / "index.html").as_uri())
    browser.wait_for("window.assayBrowserReady === true")
    note = browser.evaluate("document.getElementById('compare-note').textContent")
    assert "openai:fake was served from two endpoints" in note
