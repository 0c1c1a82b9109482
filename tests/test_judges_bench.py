"""``assay judges bench``: judges side by side on the shipped labelled sets (issue 57, item 5).

Two judges are served by the loopback OpenAI-compatible test server: one always says yes
(supported, useful, met), so on a balanced set its TPR is 1, its TNR 0 and its balanced
accuracy (1 + 0) / 2 = 0.5; the other reads each item's label from the shipped file, so it
agrees on every item (balanced accuracy 1). Each test failed before the command existed.
"""

from __future__ import annotations

import json
import re
import runpy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.errors import ConfigError, JudgeError
from assay.models import ChatMessage, FunctionJudge
from assay.run import BENCH_SETS, RunStore, bench_judges, bench_sets
from assay.run._calibrate import read_items
from assay.testing import FakeOpenAIServer

pytest.importorskip("openai")

KEY_CHARS = 60
REPLY_CHARS = 1000  # the agent metric shows the final reply's first 1,500 characters


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _rows(name: str) -> list[dict[str, Any]]:
    path = bench_sets()[name].path
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _final_reply(trace: list[dict[str, Any]]) -> str:
    return next(m["content"] for m in reversed(trace) if m["role"] == "assistant" and m.get("content"))


def _keys() -> list[tuple[tuple[str, ...], int]]:
    """Text that identifies each shipped item in the prompt that judges it, with its label."""
    keys: list[tuple[tuple[str, ...], int]] = []
    keys += [((r["claim"],), r["label"]) for r in _rows("grounding")]
    keys += [((r["question"], r["passage"][:KEY_CHARS]), r["label"]) for r in _rows("retrieval")]
    keys += [((_final_reply(r["trace"])[:REPLY_CHARS],), r["label"]) for r in _rows("agents")]
    return keys


KEYS = _keys()


def _label_in(prompt: str) -> int:
    found = {label for key, label in KEYS if all(part in prompt for part in key)}
    assert len(found) == 1, f"the prompt does not name one item: {prompt[:300]!r}"
    return found.pop()


def _answer(schema_props: Mapping[str, Any], yes: bool) -> str:
    """A valid answer of the kind the schema asks for: yes (supported, useful, met) or no."""
    if "requirements" in schema_props:  # agent goal: the goal split into requirements
        return json.dumps({"requirements": ["The agent reaches the user's goal"]})
    if "calls" in schema_props:  # agent goal: one requirement checked
        return json.dumps({"verdict": "met" if yes else "not met", "calls": [], "reason": "as scripted"})
    return json.dumps({"verdict": int(yes), "reason": "as scripted"})


def _props(body: Mapping[str, Any]) -> Mapping[str, Any]:
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema") or {}
    return schema.get("properties") or {}


def responder(body: dict[str, Any]) -> str:
    """``always-yes`` says yes to everything; ``reads-label`` answers each item's label."""
    props = _props(body)
    prompt = body["messages"][-1]["content"]
    if body["model"] == "always-yes" or "requirements" in props:
        return _answer(props, True)
    assert body["model"] == "reads-label", body["model"]
    return _answer(props, bool(_label_in(prompt)))


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["judges", "bench", *args], env={"COLUMNS": "250", "OPENAI_API_KEY": "sk-test"})
    return result.exit_code, result.stdout, result.stderr


def _section(out: str, name: str) -> str:
    """The part of the output about one set."""
    starts = {n: out.index(f"\n{n} (") for n in BENCH_SETS if f"\n{n} (" in out}
    after = sorted(i for i in starts.values() if i > starts[name])
    return out[starts[name] : after[0] if after else len(out)]


def _row(section: str, label: str) -> list[str]:
    line = next(line for line in section.splitlines() if label in line)
    return [c.strip() for c in line.split("│")[2:-1]]


def test_two_judges_side_by_side_with_their_figures_limit_and_licences(tmp_path: Path) -> None:
    with FakeOpenAIServer(responder) as server:
        code, out, err = invoke(
            "--judge", "openai:always-yes", "--judge", "openai:reads-label", "--base-url", server.base_url,
            "--limit", "6",
        )  # fmt: skip
    assert code == 0, out + err
    asked = {
        model: sum(1 for body in server.requests if body["model"] == model) for model in ("always-yes", "reads-label")
    }
    counted = {"always-yes": 0, "reads-label": 0}
    for name in BENCH_SETS:
        section = _section(out, name)
        yes, oracle = _row(section, "balanced accuracy")
        assert yes.startswith("0.500 [") and oracle == "1.000 [1.000-1.000]", section
        assert _row(section, "n (scored of judged)") == ["6 of 6", "6 of 6"], section  # --limit: 6 of each set
        assert _row(section, "TPR") == ["1.000", "1.000"] and _row(section, "TNR") == ["0.000", "1.000"], section
        calls, tokens, cost = _row(section, "calls"), _row(section, "tokens"), _row(section, "cost")
        counted["always-yes"] += int(calls[0])
        counted["reads-label"] += int(calls[1])
        assert all(re.fullmatch(r"[\d,]+ in / [\d,]+ out", t) and not t.startswith("0 in") for t in tokens)
        assert cost == ["unknown", "unknown"], section
        flat_section = " ".join(section.split())
        for model in ("always-yes", "reads-label"):
            assert f"cost of openai:{model}: unknown (openai:{model} has no price; see --prices)" in flat_section
    assert counted == asked and min(asked.values()) >= 6 * len(BENCH_SETS) - 6, (counted, asked)  # calls are real
    # The licence of every source, and that these are dev items.
    flat = " ".join(out.split())
    for licence in ("CC-BY-4.0", "Apache-2.0 (salesforce/factualNLG)", "MIT (RUCAIBox/HaluEval)", "CC-BY-SA-4.0",
                    "MIT (sierra-research/tau-bench)"):  # fmt: skip
        assert licence in flat, licence
    assert "note: dev items" in flat and "labels: human" in flat and "by construction" in flat
    # Each judge on each set is a stored calibration of 6 items.
    with RunStore(".assay/runs.sqlite") as store:
        runs = store.runs()
    assert len(runs) == 2 * len(BENCH_SETS)
    assert {r.spec.engine for r in runs} == {"calibrate"} and {r.n_results for r in runs} == {6}
    assert {r.spec.judge_model for r in runs} == {"openai:always-yes", "openai:reads-label"}
    for run in runs:
        assert run.summary is not None and run.summary["_calibration"]["n"] == 6


def test_a_judge_that_cannot_be_reached_is_an_error_naming_it_and_exits_1(refused_url: str) -> None:
    code, out, err = invoke("--judge", "openai:reads-label", "--base-url", refused_url, "--limit", "2",
                            "--set", "retrieval", "--set", "grounding")  # fmt: skip
    assert code == 1, out + err
    flat = " ".join(err.split())
    assert "judge openai:reads-label failed" in flat and "every judge call failed" in flat, flat
    assert "nan" not in out.lower() and "0.500" not in out and "1.000 [" not in out
    assert "error: every judge call failed" in " ".join(_section(out, "retrieval").split())
    assert "not asked: every call failed on retrieval" in " ".join(_section(out, "grounding").split())


def test_library_judges_side_by_side_and_a_failing_judge_is_an_error_not_figures() -> None:
    def always_no(messages: list[ChatMessage], request: Any) -> str:
        props = (request.schema.model_json_schema().get("properties") or {}) if request.schema else {}
        return _answer(props, False)

    def broken(messages: list[ChatMessage], request: Any) -> str:
        raise JudgeError("the judge is down")

    result = bench_judges(
        [FunctionJudge(always_no, name="function:no"), FunctionJudge(broken, name="function:broken")],
        sets=["retrieval", "agents"],
        limit=4,
        progress=False,
    )
    assert result.judges == ["function:no", "function:broken"]
    for name in ("retrieval", "agents"):
        cell = result.cell("function:no", name)
        assert cell.error is None and cell.agreement is not None
        assert cell.agreement.n == 4 and cell.agreement.balanced_accuracy == 0.5
        assert cell.agreement.per_class[1].recall == 0.0 and cell.agreement.per_class[0].recall == 1.0
        assert cell.cost.calls >= 4 and cell.seconds > 0
    bad = result.cell("function:broken", "retrieval")
    assert bad.agreement is None and bad.error is not None and "the judge is down" in bad.error
    assert result.cell("function:broken", "agents").error == "not asked: every call failed on retrieval"
    assert set(result.failed) == {"function:broken"}


def test_unknown_set_or_a_judge_named_twice_is_a_usage_error() -> None:
    with pytest.raises(ConfigError, match="unknown set nope; the sets are grounding, retrieval, agents"):
        bench_judges(["local"], sets=["nope"])
    with pytest.raises(ConfigError, match="named twice"):
        bench_judges(["openai:m", "openai:m"])
    code, _, err = invoke("--judge", "openai:m", "--set", "nope")
    assert code == 1 and "unknown set nope" in err


def test_shipped_sets_are_balanced_in_every_prefix_and_name_their_licences() -> None:
    sets = bench_sets()
    assert list(sets) == list(BENCH_SETS)
    total = 0
    for name, bench_set in sets.items():
        rows = _rows(name)
        total += bench_set.path.stat().st_size
        assert len(rows) == bench_set.items and len({r["id"] for r in rows}) == len(rows)
        for n in (2, 10, len(rows)):
            labels = [r["label"] for r in rows[:n]]
            assert labels.count(1) == labels.count(0), (name, n)
        assert {r["source"] for r in rows} == set(bench_set.licences)
        assert all(r["provenance"]["license"] for r in rows)
    assert total < 1_500_000


def test_the_shipped_files_are_what_the_script_builds_from_the_dev_data(tmp_path: Path) -> None:
    """``python benchmarks/bench_sets.py`` rebuilds the shipped files byte for byte (needs ../shared/data)."""
    script = runpy.run_path(str(Path(__file__).parents[1] / "benchmarks" / "bench_sets.py"))
    if not Path(script["DATA"]).is_dir():
        pytest.skip(f"no dev data at {script['DATA']}")
    script["main"](["--out", str(tmp_path)])
    shipped = bench_sets()["grounding"].path.parent
    for name in (*BENCH_SETS, "MANIFEST"):
        file = f"{name}.jsonl" if name != "MANIFEST" else "MANIFEST.json"
        assert (tmp_path / file).read_bytes() == (shipped / file).read_bytes(), file


def test_calibrate_reads_relevance_and_agent_items_and_names_a_bad_row_with_its_line(tmp_path: Path) -> None:
    rows = [
        {"id": "r", "question": "Who?", "reference": "Ann", "passage": "Ann did it.", "label": 1},
        {"id": "a", "trace": [{"role": "user", "content": "Cancel X1"}], "goal": "Cancel X1", "label": 0},
        {"id": "bad-trace", "trace": "not a list", "label": 1},
        {"id": "bad-passage", "passage": "Ann did it.", "question": "Who?", "label": 0},
    ]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    items, errors = read_items(path)
    assert [(i.id, i.kind) for i in items] == [("r", "relevance"), ("a", "agent")]
    assert items[0].contexts == ("Ann did it.",) and items[0].reference == "Ann" and items[1].reference == "Cancel X1"
    assert [(e.line, e.source) for e in errors] == [(3, str(path)), (4, str(path))]
    assert "'trace': a non-empty list of messages" in str(errors[0])
    assert "needs non-empty 'passage', 'question' and 'reference'" in str(errors[1])


def test_a_limited_bench_says_how_many_it_judged_is_stored_as_partial_and_never_replaces_a_calibration(
    tmp_path: Path,
) -> None:
    """Issue 63, items 2 and 4: after an n=8 calibration, ``--set grounding --limit 4`` became the figure the
    gate read; the bench did not say it judged 4 of 120 items, and ``assay runs list`` showed its mean."""
    from assay import Faithfulness
    from assay.models._openai import OpenAIJudge
    from assay.run import JudgeRecord, trust_for

    Path("labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows("grounding")[:8]))
    with FakeOpenAIServer(responder) as server:
        result = CliRunner().invoke(
            app, ["calibrate", "labels.jsonl", "--judge", "openai:reads-label", "--base-url", server.base_url],
            env={"COLUMNS": "250", "OPENAI_API_KEY": "sk-test"},
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "partial" not in result.stdout
        code, out, err = invoke("--judge", "openai:reads-label", "--base-url", server.base_url, "--set", "grounding",
                                "--limit", "4")  # fmt: skip
        identity = OpenAIJudge("reads-label", base_url=server.base_url, api_key="k").identity
    assert code == 0, out + err
    assert "judged 4 of 120 items (--limit 4" in " ".join(out.split())
    with RunStore(".assay/runs.sqlite") as store:
        runs = {r.spec.dataset: r for r in store.runs()}
        bench_run = next(r for name, r in runs.items() if name and name.endswith("grounding.jsonl"))
        stored = bench_run.summary["_calibration"] if bench_run.summary else {}
        assert (stored["items"], stored["items_total"], stored["limit"], stored["partial"]) == (4, 120, 4, True)
        full = runs["labels.jsonl"].summary["_calibration"]  # type: ignore[index]
        assert (full["items"], full["items_total"], full["partial"]) == (8, 8, False)
        calibrations = store.calibrations("faithfulness", identity)
    assert [(c["n"], c["partial"]) for c in calibrations] == [(4, True), (8, False)]  # newest first
    record = JudgeRecord(model_id="openai:reads-label", identity=identity)
    figure = trust_for(Faithfulness(strategy="per_statement").spec(), record, calibrations)
    assert figure.n == 8 and figure.dataset == "labels.jsonl" and figure.partial is None
    assert "grounding.jsonl, n=4, partial: judged 4 of 120 items (--limit 4)" in figure.text()
    # 'assay runs list' shows each as a calibration: its agreement, and the partial one as partial.
    listed = CliRunner().invoke(app, ["runs", "list"])
    scores: list[str] = []  # the scores column, its wrapped lines joined per run
    for line in listed.stdout.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if cells and cells[0]:
            scores.append(cells[-1])
        elif cells:
            scores[-1] += f" {cells[-1]}"
    text = "\n".join(scores)
    assert text.count("calibration: balanced accuracy 1.000 [1.000-1.000]") == 2, listed.stdout
    assert "n=4, partial: judged 4 of 120 items (--limit 4)" in text and "n=8" in text
    assert "statement_verifier" not in text  # not the share of claims judged supported


def test_a_judge_object_with_a_confidence_is_its_own_column_named_with_it(tmp_path: Path) -> None:
    """``openai:m+logprobs`` given as an object was a column named ``openai:m``, the plain judge's name.

    Its figures (read by threshold from log-probabilities) were shown as the plain judge's,
    and the plain judge beside it was refused as "named twice".
    """
    import math

    from assay.models import get_judge

    def p(body: Mapping[str, Any]) -> list[tuple[str, float]] | None:
        return [("1", math.log(0.7)), ("0", math.log(0.3))] if body.get("logprobs") else None

    with FakeOpenAIServer(responder, top_logprobs=p) as server:
        plain = get_judge("openai:fake", base_url=server.base_url)
        confident = get_judge("openai:fake+logprobs", base_url=server.base_url)
        result = bench_judges(
            [plain, confident], sets=["grounding"], limit=2, store=tmp_path / "r.sqlite", progress=False
        )
        asked = [r for r in server.requests if r.get("logprobs")]
    assert result.judges == ["openai:fake", "openai:fake+logprobs:20"]
    assert asked, "the second column's judge read its P from log-probabilities"
    assert result.cell("openai:fake+logprobs:20", "grounding").error is None
