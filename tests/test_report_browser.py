"""The HTML report in headless Chromium, driven over the DevTools protocol.

A real run store (``assay run`` against a loopback fake OpenAI server) with XSS payloads in
its data: clicking a sample shows its statements coloured, nothing in the data executes,
and a 1,000-sample report renders and filters quickly. Skipped without /usr/bin/chromium.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay import JudgeCall, Sample, Score, Usage, Verdict
from assay.cli._report import report as report_command
from assay.cli._run import run as run_command
from assay.report import write_report
from assay.run import RunSpec, RunStore, SampleResult
from assay.testing import FakeOpenAIServer

if not Path("/usr/bin/chromium").exists():
    pytest.skip("needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)", allow_module_level=True)
pytest.importorskip("websocket", reason="needs websocket-client (pip install websocket-client)")
pytest.importorskip("openai", reason="needs the openai extra for 'assay run --judge openai:...'")

from cdp import Chromium

XSS = (
    'The sky is blue. <img src=x onerror="window.__xss=1"> is an image. '
    "</script><script>window.__xss=2;document.title='pwned'</script> closes the data. "
    "Grass is green. The rewrite me statement."
)
OK_BG, BAD_BG = "rgb(218, 251, 225)", "rgb(255, 235, 233)"


def make_responder() -> Any:
    """Statements are sentences ("rewrite" ones are paraphrased); "sky" is supported; "Grass" alternates."""
    grass = itertools.count()
    lock = threading.Lock()

    def respond(body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        if "<sentence>\n" in user:  # the one-sentence rewrite: the sentence is its own statement
            return json.dumps({"statements": [user.split("<sentence>\n")[1].split("\n</sentence>")[0]]})
        if "<answer>" in user:
            answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
            statements = [s for s in re.split(r"(?<=\.)\s+", answer) if s.strip()]
            statements = ["The answer asks for a rewrite." if "rewrite" in s else s for s in statements]
            return json.dumps({"statements": statements})
        items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
        verdicts = []
        for item in items:
            text = item.split("] ", 1)[1]
            supported = "sky" in text
            if text.startswith("Grass"):
                with lock:
                    supported = next(grass) % 2 == 0
            verdicts.append({"statement": text, "reason": f"reason <i>for</i> {text[:20]}", "verdict": int(supported)})
        return json.dumps({"verdicts": verdicts})

    return respond


def cli_run(tmp_path: Path, data: Path, base_url: str, *extra: str) -> str:
    import typer

    app = typer.Typer()
    app.command("run")(run_command)
    app.command("report")(report_command)
    result = CliRunner().invoke(
        app,
        ["run", str(data), "--judge", "openai:fake", "--base-url", base_url, "--no-cache", *extra],
        env={"OPENAI_API_KEY": "sk-test", "COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    with RunStore(tmp_path / ".assay" / "runs.sqlite") as store:
        return store.runs()[0].run_id


@pytest.fixture
def browser() -> Any:
    with Chromium() as chromium:
        yield chromium


def test_clicking_a_sample_shows_coloured_statements_and_no_payload_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Chromium
) -> None:
    monkeypatch.chdir(tmp_path)
    rows = [
        {"id": "<b id=evil>x</b>", "question": "<script>window.__xss=3</script>?", "answer": XSS,
         "contexts": ["The sky is blue.", "</script><img src=y onerror=window.__xss=4>"]},
        {"id": "plain", "question": "Colour?", "answer": "The sky is blue. Grass is green.",
         "contexts": ["The sky is blue."]},
    ]  # fmt: skip
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # the whole-answer decomposition paraphrases one sentence: the paraphrase is dropped, listed, and
    # the sentence judged as itself
    llm = ("--set", "faithfulness.decomposer=llm")
    with FakeOpenAIServer(make_responder()) as server:
        base = cli_run(tmp_path, data, server.base_url, *llm)
        time.sleep(1.1)  # run ids sort by second
        head = cli_run(tmp_path, data, server.base_url, "--repeats", "2", *llm)
    out = tmp_path / "report.html"
    write_report(tmp_path / ".assay" / "runs.sqlite", head, out, compare=base, threshold=0.8)

    browser.navigate(out.as_uri())
    browser.wait_for("window.assayReady === true")
    assert browser.evaluate("document.title") == f"assay report · {head}"
    assert browser.evaluate("document.querySelectorAll('#sample-body tr').length") == 2

    index = browser.evaluate(
        "[...document.querySelectorAll('#sample-body tr')]"
        ".findIndex(tr => tr.children[1].textContent === '<b id=evil>x</b>')"
    )
    assert index >= 0
    browser.click(f"#sample-body tr:nth-child({index + 1})")
    browser.wait_for("document.getElementById('sample-view') !== null")
    spans = browser.evaluate(
        "[...document.querySelectorAll('#sample-view .answer .stmt')].map(s => "
        "({text: s.textContent, tone: s.dataset.tone, bg: getComputedStyle(s).backgroundColor, title: s.title}))"
    )
    by_text = {s["text"]: s for s in spans}
    assert by_text["The sky is blue."]["tone"] == "ok" and by_text["The sky is blue."]["bg"] == OK_BG
    img = '<img src=x onerror="window.__xss=1"> is an image.'
    assert by_text[img]["tone"] == "bad" and by_text[img]["bg"] == BAD_BG
    assert by_text[img]["title"].startswith(f"✗ {img} — reason <i>for</i>")  # the judge's reason on hover, as text
    assert "Grass is green." in by_text
    # the paraphrase is not what the answer says: dropped and listed; its sentence was judged as itself
    dropped = browser.evaluate("[...document.querySelectorAll('#sample-view ul.dropped li')].map(li => li.textContent)")
    assert len(dropped) == 1 and "The answer asks for a rewrite." in dropped[0] and "not in answer" in dropped[0]
    assert by_text["The rewrite me statement."]["tone"] == "bad"
    assert "judged as a whole sentence" in by_text["The rewrite me statement."]["title"]
    # The payloads are visible as text and did nothing.
    answer_text = browser.evaluate("document.querySelector('#sample-view .answer').innerText")
    assert answer_text == XSS
    assert browser.evaluate("typeof window.__xss") == "undefined"
    assert browser.evaluate("document.title") == f"assay report · {head}"
    assert browser.evaluate("document.querySelectorAll('img, b#evil, i').length") == 0
    assert browser.evaluate("document.scripts.length") == 2
    contexts = browser.evaluate("[...document.querySelectorAll('#sample-view ol .block')].map(b => b.textContent)")
    assert contexts == rows[0]["contexts"]
    # the raw judge exchange: open the first call, its prompt quotes the answer verbatim
    browser.click("#sample-view details.call summary")
    raw = browser.evaluate("[...document.querySelectorAll('#sample-view details.call pre')].map(p => p.textContent)")
    assert any(XSS in text for text in raw) and any('"statements"' in text for text in raw)
    # the comparison and repeats are on the page
    assert browser.evaluate("document.getElementById('compare') !== null")
    # (a sample's spread and P(pass) sit under its mean, one column per metric; Δ beside it)
    assert "mean of 2 repeats" in browser.evaluate("document.getElementById('sample-head').textContent")
    assert "P(pass)" in browser.evaluate("document.getElementById('sample-body').textContent")

    # sort by clicking a header, filter through the input
    browser.click("#sample-head th:nth-child(2)")
    assert browser.evaluate(
        "[...document.querySelectorAll('#sample-body tr')].map(tr => tr.children[1].textContent)"
    ) == [
        "<b id=evil>x</b>",
        "plain",
    ]
    browser.type_into("#filter", "plain")
    browser.wait_for("window.assayTimings.filter_count >= 1")
    assert browser.evaluate("document.querySelectorAll('#sample-body tr').length") == 1
    browser.type_into("#filter", "")
    browser.wait_for("window.assayTimings.filter_count >= 2")
    browser.click(f"#sample-body tr:nth-child({index + 1})")

    shot = browser.screenshot(tmp_path / "report.png", full_page=True)
    print(f"\nscreenshot: {shot} ({shot.stat().st_size} bytes)")
    assert shot.stat().st_size > 10_000


def big_store(path: Path, n: int = 1000) -> str:
    """A stored run of ``n`` samples with realistic records (statements, reasons, two calls each)."""
    store = RunStore(path)
    store.create(RunSpec(run_id="big", judge="openai:gpt-4o-mini", judge_model="openai:gpt-4o-mini"))
    system = "You are a careful judge. " * 60
    for i in range(n):
        statements = [f"Fact {i}.{k} about topic {i % 37} is stated here." for k in range(5)]
        answer = " ".join(statements)
        verdicts = [
            Verdict(subject=s, value=int((i + k) % 3 != 0), reason=f"context {k} says so")
            for k, s in enumerate(statements)
        ]
        prompt = ({"role": "system", "content": system}, {"role": "user", "content": f"<answer>\n{answer}\n</answer>"})
        calls = [
            JudgeCall(
                model="openai:gpt-4o-mini",
                purpose=purpose,
                messages=prompt,
                raw_output=json.dumps({"statements": statements}),
                usage=Usage(prompt_tokens=500, completion_tokens=80),
            )
            for purpose in ("faithfulness.statements", "faithfulness.verdicts")
        ]
        value = sum(int(v.value == 1) for v in verdicts) / len(verdicts)
        score = Score.scored("faithfulness", value, verdicts=verdicts, calls=calls)
        sample = Sample(
            id=f"sample-{i:04d}", question=f"What about topic {i % 37}?", answer=answer, contexts=(f"Context {i}.",) * 3
        )
        store.record("big", SampleResult(sample=sample, scores={"faithfulness": score}, line=i + 1))
    store.set_status("big", "finished")
    store.close()
    return "big"


def test_a_thousand_sample_report_renders_and_filters_quickly(tmp_path: Path, browser: Chromium) -> None:
    run_id = big_store(tmp_path / "runs.sqlite")
    out = tmp_path / "big.html"
    started = time.perf_counter()
    write_report(tmp_path / "runs.sqlite", run_id, out)
    build_s = time.perf_counter() - started

    started = time.perf_counter()
    browser.navigate(out.as_uri())
    browser.wait_for("window.assayReady === true")
    load_s = time.perf_counter() - started
    timings = browser.evaluate("window.assayTimings")
    assert browser.evaluate("document.getElementById('count').textContent") == "1000 of 1000 samples"

    started = time.perf_counter()
    browser.type_into("#filter", "topic 7?")
    browser.wait_for("window.assayTimings.filter_count >= 1")
    filter_wall_s = time.perf_counter() - started  # includes the 150 ms debounce and the protocol's round trips
    filtered = browser.evaluate("window.assayTimings.filters[0]")
    count = browser.evaluate("document.getElementById('count').textContent")
    assert count == "27 of 1000 samples"  # topic 7 of 37: i = 7, 44, ..., 969

    browser.click("#sample-head th:nth-child(4)")
    browser.click("#sample-body tr:nth-child(1)")
    assert browser.evaluate("document.querySelectorAll('#sample-view .answer .stmt').length") == 5

    size_mb = out.stat().st_size / 1e6
    print(
        f"\n1000-sample report: {size_mb:.1f} MB, built in {build_s:.2f} s; in Chromium: JSON parse "
        f"{timings['parse_ms']:.0f} ms, script {timings['script_ms']:.0f} ms, first render at "
        f"{timings['first_render_ms']:.0f} ms after navigation start (load seen by the test {load_s:.2f} s); "
        f"filter {filtered:.1f} ms in the page, {filter_wall_s * 1000:.0f} ms wall incl. 150 ms debounce"
    )
    assert timings["first_render_ms"] < 3000
    assert filtered < 1000


# --------------------------------------------------------------------------- the header for people


def settings_store(path: Path) -> tuple[str, str]:
    """A run as stored before run specs redacted their URL (credentials in it), with a grader.

    Seven samples judged twice: faithfulness (two statements, the second's verdict alternates
    across repeats), a binary grader (criterion and reason) and eight more metrics, so the
    sample table is wider than its panel.
    """
    from assay._scores import MetricSpec
    from assay.metrics import BinaryJudgeGrader, Faithfulness

    criterion = "The answer is polite."
    faithfulness = Faithfulness(decomposer="llm")
    grader = BinaryJudgeGrader(criterion)
    assert grader.name == "binary_grader"
    extra = [f"extra_metric_{k}" for k in range(8)]
    specs = (faithfulness.spec(), grader.spec(), *(MetricSpec(name=name) for name in extra))
    store = RunStore(path)
    store.create(
        RunSpec(
            run_id="people",
            dataset="data/questions.jsonl",
            dataset_fingerprint="size=7 mtime_ns=1",
            judge="openai:gpt-4o-mini",
            judge_model="openai:gpt-4o-mini",
            base_url="https://alice:pw-HEADER-SECRET@proxy.example.com/v1?api_key=QHEADERSECRET&region=eu",
            metrics=specs,
            options={"repeats": 2, "temperature": 0.7, "reasks": 1},
            assay_version="0.1.0",
        )
    )
    for line in range(1, 8):
        for repeat in range(2):
            flip = (line + repeat) % 2
            verdicts = [
                Verdict(subject="The sky is blue.", value=1, reason="stated"),
                Verdict(subject=f"Grass is red {line}.", value=flip, reason="the context says grass is green"),
            ]
            label = "PASS" if line % 3 else "FAIL"
            scores = {
                "faithfulness": Score.scored("faithfulness", (1 + flip) / 2, verdicts=verdicts, spec=specs[0]),
                "binary_grader": Score.scored(
                    "binary_grader",
                    float(label == "PASS"),
                    verdicts=[Verdict(subject=criterion, value=label, reason=f"it says please, line {line}")],
                    explanation=f"{label}: it says please, line {line}",
                    spec=specs[1],
                ),
                **{name: Score.scored(name, 0.9) for name in extra},
            }
            sample = Sample(
                id=f"sample-with-a-long-identifier-{line:03d}",
                question="What colour are the sky and the grass in the picture?",
                answer=f"The sky is blue. Grass is red {line}.",
                contexts=("The sky is blue. Grass is green.",),
            )
            store.record("people", SampleResult(sample=sample, scores=scores, line=line), repeat=repeat)
    store.set_status("people", "finished")
    store.close()
    return "people", criterion


def test_header_shows_settings_as_a_table_the_gates_verdict_and_no_raw_json(tmp_path: Path) -> None:
    from assay.analysis import GatePolicy, analyze_repeats, evaluate_gate
    from assay.report import DEFAULT_THRESHOLD

    run_id, criterion = settings_store(tmp_path / "runs.sqlite")
    out = tmp_path / "people.html"
    policy = GatePolicy(threshold=0.7, seed=3)
    data = write_report(tmp_path / "runs.sqlite", run_id, out, gate=policy)
    # The report's pass mark is the gate's: its own default, or the policy's when given.
    assert GatePolicy().threshold == DEFAULT_THRESHOLD and data.threshold == 0.7
    assert write_report(tmp_path / "runs.sqlite", run_id, tmp_path / "default.html").threshold == DEFAULT_THRESHOLD
    with RunStore(tmp_path / "runs.sqlite") as store:
        expected = evaluate_gate(analyze_repeats(list(store.records(run_id)), "faithfulness", seed=3), policy)
    assert data.gate_result is not None and data.gate_result.outcome == expected.outcome

    with Chromium(width=900, height=1100) as browser:
        browser.navigate(out.as_uri())
        browser.wait_for("window.assayReady === true")
        settings = browser.evaluate(
            "Object.fromEntries([...document.querySelectorAll('#settings tr')]"
            ".map(tr => [tr.querySelector('th').textContent, tr.querySelector('td').textContent]))"
        )
        assert settings["metric"].startswith("faithfulness v2, binary_grader v1, extra_metric_0 v1")
        assert settings["judge"] == "openai:gpt-4o-mini"
        assert settings["base URL"] == "https://[redacted]@proxy.example.com/v1?api_key=[redacted]&region=eu"
        assert settings["decomposer"].startswith("faithfulness: llm")
        # gpt-4o-mini answers 1/0: the threshold was not used, and the table says so.
        assert settings["verifier threshold"].startswith("faithfulness: not used: the judge answers 1/0")
        assert "chunks of 3,000 characters" in settings["chunking"]
        assert settings["repeats"] == "2" and settings["temperature"] == "0.7"
        assert settings["dataset"] == "data/questions.jsonl (size=7 mtime_ns=1)"
        # The header reads as text: no JSON outside the closed disclosure, which holds the spec.
        header = browser.evaluate(
            "(() => { const h = document.querySelector('header').cloneNode(true);"
            " h.querySelector('#raw-spec').remove(); return h.textContent; })()"
        )
        assert "{" not in header and '"' not in header and "pw-HEADER-SECRET" not in header
        assert browser.evaluate("document.getElementById('raw-spec').open") is False
        raw = json.loads(browser.evaluate("document.querySelector('#raw-spec pre').textContent"))
        assert raw["run_id"] == run_id and raw["base_url"].startswith("https://[redacted]@proxy.example.com")
        assert "HEADER-SECRET" not in out.read_text() and "QHEADERSECRET" not in out.read_text()
        verdict = browser.evaluate("document.getElementById('gate-verdict').textContent")
        assert verdict.startswith(f"GATE {expected.outcome.upper()}") and "faithfulness ≥ 0.7" in verdict
        assert "value ≥ 0.7" in browser.evaluate("document.querySelector('dl.spec').textContent")

        # A wide sample table scrolls inside its panel; the page never scrolls sideways.
        widths = browser.evaluate(
            "({page: document.documentElement.scrollWidth, view: document.documentElement.clientWidth,"
            " table: document.querySelector('.table-wrap').scrollWidth,"
            " panel: document.querySelector('.table-wrap').clientWidth})"
        )
        assert widths["page"] <= widths["view"], widths
        assert widths["table"] > widths["panel"], widths

        # The grader's criterion and verdict appear once in the sample view.
        assert browser.evaluate("window.assaySelect('sample-with-a-long-identifier-003')")
        view = browser.evaluate("document.getElementById('sample-view').textContent")
        assert view.count(criterion) == 1 and view.count("it says please, line 3") == 1
        assert browser.evaluate("document.querySelectorAll('#sample-view ul.criteria li.bad').length") == 1
        browser.evaluate("window.scrollTo(0, 0)")
        shot = browser.screenshot(tmp_path / "header.png")
        print(f"\nscreenshot: {shot}")
    # 'assay gate' with the same policy says the same (its exit code for that outcome).
    from assay.cli import app

    result = CliRunner().invoke(
        app, ["gate", run_id, "--store", str(tmp_path / "runs.sqlite"), "--min", "0.7", "--seed", "3"]
    )
    assert result.exit_code == {"pass": 0, "fail": 1, "flaky": 2, "unscored": 2}[expected.outcome], result.output
    # ... and so does 'assay report --gate'; gate options without --gate, or two pass marks, are refused.
    store_args = ["--store", str(tmp_path / "runs.sqlite")]
    result = CliRunner().invoke(
        app, ["report", run_id, *store_args, "--threshold", "0.7", "--seed", "3", "--gate", "-o", str(out)]
    )
    assert result.exit_code == 0 and f"gate {expected.outcome}" in result.output, result.output
    result = CliRunner().invoke(app, ["report", run_id, *store_args, "--strict", "-o", str(out)])
    assert result.exit_code == 1 and "--strict only apply with --gate" in result.output, result.output
    from assay.errors import ConfigError

    with pytest.raises(ConfigError, match="differs from the gate policy's"):
        write_report(tmp_path / "runs.sqlite", run_id, out, threshold=0.9, gate=policy)


def test_the_answer_view_colours_each_statements_words_and_marks_what_was_not_judged(
    tmp_path: Path, browser: Chromium
) -> None:
    """Issue 23: spans by verdict (two statements of one sentence share words), skipped sentences greyed,
    dropped statements listed, evidence on click; the answer's hostile text stays text."""
    from assay import Faithfulness, evaluate
    from assay.models import FunctionJudge, JudgeRequest

    answer = (
        "Sure! Ann Lee joined <b>Rain</b> in 2003 and toured Japan in 2004. "
        '<img src=x onerror="window.__xss=5"> She left in 2009.'
    )
    table = {
        "Ann Lee joined <b>Rain</b> in 2003 and toured Japan in 2004.": [
            "Ann Lee joined <b>Rain</b> in 2003.",
            "Ann Lee toured Japan in 2004.",
            "Ann Lee is best known for developing the theory of relativity.",
        ],
    }
    context = "Ann Lee joined Rain in 2003. She left the band in 2009."

    def judge_fn(messages: Any, request: JudgeRequest) -> str:
        user = messages[-1]["content"]
        if "<sentence>\n" in user:
            sentence = user.split("<sentence>\n")[1].split("\n</sentence>")[0]
            return json.dumps({"statements": table.get(sentence, [sentence])})
        statement = user.split("<statement>\n")[1].split("\n</statement>")[0]
        ok = "Japan" not in statement
        return json.dumps({"verdict": int(ok), "reason": "context: " + ("yes" if ok else "no tour <i>x</i>")})

    sample = Sample(id="ann", question="Who is Ann Lee?", answer=answer, contexts=(context,))
    store = tmp_path / "runs.sqlite"
    result = evaluate([sample], [Faithfulness(strategy="per_statement")], FunctionJudge(judge_fn), store=store)
    out = tmp_path / "report.html"
    write_report(store, result.run_id or "", out)

    browser.navigate(out.as_uri())
    browser.wait_for("window.assayReady === true")
    assert browser.evaluate("window.assaySelect('ann')")
    pieces = browser.evaluate(
        "[...document.querySelectorAll('#sample-view .answer > span')].map(s => "
        "({text: s.textContent, cls: s.className, tone: s.dataset.tone || '', title: s.title, "
        "bg: getComputedStyle(s).backgroundColor}))"
    )
    by_text = {p["text"].strip(): p for p in pieces}
    assert by_text["Sure!"]["cls"] == "skip" and "not checked: too short" in by_text["Sure!"]["title"]
    # the words only the failing statement states are red; the shared subject words take the worse tone
    red, green = by_text["toured Japan in 2004."], by_text["joined <b>Rain</b> in 2003"]
    assert (red["tone"], red["bg"], green["tone"], green["bg"]) == ("bad", BAD_BG, "ok", OK_BG)
    shared = [p for p in pieces if "✗ Ann Lee toured Japan in 2004." in p["title"] and "✓" in p["title"]]
    assert shared and all(p["tone"] == "bad" for p in shared)
    assert any(p["text"].endswith("She left in 2009.") and p["tone"] == "ok" for p in pieces)
    dropped = browser.evaluate("[...document.querySelectorAll('#sample-view ul.dropped li')].map(li => li.textContent)")
    assert len(dropped) == 1 and "theory of relativity" in dropped[0] and "not in answer" in dropped[0]
    note = browser.evaluate("document.querySelector('#sample-view .decomposition').textContent")
    assert "2 of 3 sentences checked" in note and "1 with nothing to check" in note
    # clicking the red words shows that verdict, its reason as text
    browser.evaluate(
        "[...document.querySelectorAll('#sample-view .answer .stmt')].find(s => s.textContent === "
        "'toured Japan in 2004.').click()"
    )
    picked = browser.evaluate("document.querySelector('#sample-view .picked').textContent")
    assert "Ann Lee toured Japan in 2004." in picked and "no tour <i>x</i>" in picked
    # the hostile text is on the page as text and ran nothing
    assert browser.evaluate("document.querySelector('#sample-view .answer').innerText") == answer
    assert browser.evaluate("typeof window.__xss") == "undefined"
    assert browser.evaluate("document.querySelectorAll('#sample-view .answer img, #sample-view .answer b').length") == 0


def test_an_agent_samples_question_column_shows_the_users_first_turn_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Chromium
) -> None:
    # An agent sample has no question: the column showed "—" for every row. What the user first
    # asked is the question; it is untrusted text like any other.
    monkeypatch.chdir(tmp_path)
    asked = "Cancel ABC <img src=x onerror=window.__xss=5> please."
    row = {
        "id": "trip",
        "messages": [
            {"role": "system", "content": "Policy: confirm first."},
            {"role": "user", "content": asked},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "a", "type": "function",
                 "function": {"name": "cancel_reservation", "arguments": '{"id": "ABC"}'}}]},
            {"role": "tool", "tool_call_id": "a", "content": "cancelled"},
            {"role": "user", "content": "Thanks, that is all."},
            {"role": "assistant", "content": "Done."},
        ],
        "reference_tool_calls": [{"name": "cancel_reservation", "arguments": {"id": "ABC"}}],
    }  # fmt: skip
    data = tmp_path / "agent.jsonl"
    data.write_text(json.dumps(row) + "\n")
    with FakeOpenAIServer(make_responder()) as server:
        run_id = cli_run(tmp_path, data, server.base_url, "-m", "agent_state_match")
    out = tmp_path / "report.html"
    write_report(tmp_path / ".assay" / "runs.sqlite", run_id, out)

    browser.navigate(out.as_uri())
    browser.wait_for("window.assayReady === true")
    cell = browser.evaluate("document.querySelector('#sample-body tr td.q').textContent")
    assert cell == asked
    browser.click("#sample-body tr:nth-child(1)")
    browser.wait_for("document.getElementById('sample-view') !== null")
    headings = browser.evaluate("[...document.querySelectorAll('#sample-view h3')].map(h => h.textContent)")
    assert "Question (the user's first turn)" in headings
    assert browser.evaluate("document.querySelectorAll('#sample-view img').length") == 0
    assert browser.evaluate("window.__xss === undefined") is True
