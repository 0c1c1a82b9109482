"""``assay calibrate`` and its statistics: formulas written out, degenerate cases, the CLI end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from assay.analysis._agreement import (
    Confusion,
    agreement,
    balanced_accuracy,
    bootstrap_ci,
    cohen_kappa,
    confusion,
    precision_recall,
)
from assay.cli._calibrate import calibrate
from assay.run import RunStore
from assay.testing import FakeOpenAIServer

pytest.importorskip("openai")


def pairs(tp: int, fn: int, fp: int, tn: int) -> tuple[list[int], list[int]]:
    labels = [1] * tp + [1] * fn + [0] * fp + [0] * tn
    preds = [1] * tp + [0] * fn + [1] * fp + [0] * tn
    return labels, preds


# --- statistics ------------------------------------------------------------------------------


def test_two_by_two_against_the_formulas_written_out() -> None:
    labels, preds = pairs(tp=20, fn=5, fp=10, tn=65)
    assert confusion(labels, preds) == Confusion(tp=20, fn=5, fp=10, tn=65)
    # TPR = 20 / 25 = 0.8; TNR = 65 / 75 = 0.8667; BA = (0.8 + 0.8667) / 2 = 0.8333
    assert balanced_accuracy(labels, preds) == pytest.approx((20 / 25 + 65 / 75) / 2)
    assert balanced_accuracy(labels, preds) == pytest.approx(0.833333, abs=1e-6)
    # p_o = (20 + 65) / 100 = 0.85
    # p_e = P(label 1) P(judge 1) + P(label 0) P(judge 0) = 0.25 * 0.30 + 0.75 * 0.70 = 0.075 + 0.525 = 0.60
    # kappa = (0.85 - 0.60) / (1 - 0.60) = 0.25 / 0.40 = 0.625
    assert cohen_kappa(labels, preds) == pytest.approx(0.625)
    per_class = precision_recall(labels, preds)
    # class 1: precision 20 / (20 + 10), recall 20 / (20 + 5); class 0: precision 65 / (65 + 5), recall 65 / 75
    assert per_class[1].precision == pytest.approx(20 / 30)
    assert per_class[1].recall == pytest.approx(0.8)
    assert per_class[1].f1 == pytest.approx(2 * (2 / 3) * 0.8 / (2 / 3 + 0.8))
    assert per_class[1].support == 25
    assert per_class[0].precision == pytest.approx(65 / 70)
    assert per_class[0].recall == pytest.approx(65 / 75)
    assert per_class[0].support == 75


def test_kappa_is_order_free_and_matches_a_second_table() -> None:
    # TP=3 FN=1 FP=1 TN=3: p_o = 6/8 = 0.75, p_e = 0.5*0.5 + 0.5*0.5 = 0.5, kappa = 0.25 / 0.5 = 0.5
    labels, preds = pairs(3, 1, 1, 3)
    assert cohen_kappa(labels, preds) == pytest.approx(0.5)
    assert cohen_kappa(labels[::-1], preds[::-1]) == pytest.approx(0.5)
    assert balanced_accuracy(labels, preds) == pytest.approx(0.75)


def test_degenerate_one_class_everywhere_gives_nan_kappa_without_dividing_by_zero() -> None:
    # People and judge both say 1 for everything: p_o = 1, p_e = 1, kappa = 0/0 -> documented NaN.
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))
    assert math.isnan(cohen_kappa([0, 0], [0, 0]))
    # Labels of one class: balanced accuracy is that class's recall.
    assert balanced_accuracy([1, 1, 1], [1, 1, 1]) == 1.0
    assert balanced_accuracy([1, 1, 1, 1], [1, 0, 1, 1]) == pytest.approx(0.75)
    # Labels all 1, judge mixed: p_e = 1 * 0.75 + 0 * 0.25 = 0.75 = p_o, so kappa = 0.
    assert cohen_kappa([1, 1, 1, 1], [1, 0, 1, 1]) == pytest.approx(0.0)
    # Labels all 1, judge all 0: p_o = 0, p_e = 0, kappa = 0.
    assert cohen_kappa([1, 1], [0, 0]) == 0.0
    # Nothing judged at all.
    assert math.isnan(balanced_accuracy([], []))
    assert math.isnan(cohen_kappa([], []))
    # Undefined precision (no item judged 0) is NaN, not a silent 0.
    assert math.isnan(precision_recall([1, 0], [1, 1])[0].precision)


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="one length"):
        confusion([1, 0], [1])
    with pytest.raises(ValueError, match="0 or 1"):
        confusion([2], [1])


def test_bootstrap_ci_is_seeded_reproducible_and_contains_the_estimate() -> None:
    labels, preds = pairs(20, 5, 10, 65)
    first = bootstrap_ci(balanced_accuracy, labels, preds, seed=3, n=500)
    assert first == bootstrap_ci(balanced_accuracy, labels, preds, seed=3, n=500)
    assert first != bootstrap_ci(balanced_accuracy, labels, preds, seed=4, n=500)
    lo, hi = first
    assert lo < balanced_accuracy(labels, preds) < hi
    klo, khi = bootstrap_ci(cohen_kappa, labels, preds, seed=3, n=500)
    assert klo < 0.625 < khi
    assert all(math.isnan(v) for v in bootstrap_ci(cohen_kappa, [1, 1], [1, 1], seed=0, n=50))
    assert all(math.isnan(v) for v in bootstrap_ci(cohen_kappa, [], [], seed=0, n=50))


def test_bootstrap_fast_path_equals_the_generic_loop() -> None:
    labels, preds = pairs(7, 3, 2, 5)
    for stat in (balanced_accuracy, cohen_kappa):
        generic = bootstrap_ci(lambda y, p, f=stat: f(y, p), labels, preds, seed=5, n=300)  # type: ignore[misc]
        assert bootstrap_ci(stat, labels, preds, seed=5, n=300) == pytest.approx(generic)


def test_agreement_bundles_everything_and_serialises_nan_as_null() -> None:
    report = agreement([1, 1], [1, 1], seed=0, n_boot=50)
    data = report.to_dict()
    assert data["n"] == 2 and data["kappa"] is None and data["balanced_accuracy"] == 1.0
    json.dumps(data, allow_nan=False)


@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=1, max_size=60))
def test_ranges_and_perfect_agreement(items: list[tuple[int, int]]) -> None:
    labels = [y for y, _ in items]
    preds = [p for _, p in items]
    ba = balanced_accuracy(labels, preds)
    assert 0.0 <= ba <= 1.0
    kappa = cohen_kappa(labels, preds)
    assert math.isnan(kappa) or -1.0 <= kappa <= 1.0 + 1e-12
    # Swapping who is "people" and who is "judge" leaves kappa unchanged.
    swapped = cohen_kappa(preds, labels)
    assert (math.isnan(kappa) and math.isnan(swapped)) or kappa == pytest.approx(swapped)
    assert balanced_accuracy(labels, labels) == 1.0
    if len(set(labels)) == 2:
        assert cohen_kappa(labels, labels) == pytest.approx(1.0)


# --- the command ------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False)
    app.callback()(lambda: None)
    app.command("calibrate")(calibrate)
    return app


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(_app(), ["calibrate", *args], env={"COLUMNS": "240", "OPENAI_API_KEY": "sk-test"})
    return result.exit_code, result.output


def _block(text: str, tag: str) -> str:
    return text.split(f"<{tag}>\n")[1].split(f"\n</{tag}>")[0]


def fake_judge(body: dict[str, Any]) -> str:
    """Supported when the statement appears word for word in the context; graders read a marker."""
    user = body["messages"][-1]["content"]
    if "<conversation>" in user:
        turns = json.loads(_block(user, "conversation"))
        answer = turns[-1]["content"]
        label = "NA" if "n/a" in answer else "PASS" if "good" in answer else "FAIL"
        return json.dumps({"reasoning": f"graded {label.lower()}", "label": label})
    statement = _block(user, "statement").rstrip(".").lower()
    supported = statement in _block(user, "context").lower()
    return json.dumps({"verdict": int(supported), "reason": "found in the context" if supported else "not stated"})


CONTEXT = "The Amazon empties into the Atlantic. It is about 6400 km long."


def grounding_rows() -> list[dict[str, Any]]:
    # Not whole sentences of CONTEXT: a word-for-word copy would be supported without asking the judge.
    supported, unsupported = "Amazon empties into the Atlantic.", "Amazon empties into the Pacific."
    rows: list[dict[str, Any]] = []
    # TP=3 FN=1 FP=1 TN=3. FN: labelled 1, the judge says 0; FP: labelled 0, the judge says 1.
    for i in range(3):
        rows.append({"id": f"tp{i}", "context": CONTEXT, "claim": supported, "label": 1, "source": "wice"})
    rows.append({"id": "fn0", "contexts": [CONTEXT], "claim": "The river is roughly 6,400 km.", "label": 1,
                 "source_dataset": "BEGIN"})  # fmt: skip
    rows.append({"id": "fp0", "context": CONTEXT, "answer": supported, "label": 0, "source": "wice"})
    for i in range(3):
        rows.append({"id": f"tn{i}", "context": CONTEXT, "claim": unsupported, "label": 0, "source_dataset": "BEGIN"})
    return rows


def write(path: Path, rows: list[dict[str, Any]], extra: str = "") -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + extra)


def test_cli_grounding_items_figures_disagreements_and_store(tmp_path: Path) -> None:
    write(tmp_path / "items.jsonl", grounding_rows())
    with FakeOpenAIServer(fake_judge) as server:
        code, out = invoke("items.jsonl", "--judge", "openai:fake", "--base-url", server.base_url, "--seed", "1")
    assert code == 0, out
    flat = " ".join(out.split())
    # TP=3 FN=1 FP=1 TN=3: BA = (3/4 + 3/4) / 2 = 0.75; kappa = (0.75 - 0.5) / (1 - 0.5) = 0.5
    assert "balanced accuracy 0.750 [" in flat
    assert "Cohen's kappa 0.500 [" in flat
    assert "│ label 1 │ 3 │ 1 │" in flat and "│ label 0 │ 1 │ 3 │" in flat
    assert "per source" in flat and "BEGIN" in flat and "wice" in flat
    assert "disagreements (2, showing 2)" in flat
    assert "fn0" in flat and "fp0" in flat and "not stated" in flat and "found in the context" in flat
    assert "tp1" not in flat.split("disagreements")[1]

    store = RunStore(".assay/runs.sqlite")
    (info,) = store.runs()
    assert info.spec.engine == "calibrate" and info.status == "finished" and info.n_results == 8
    assert info.spec.metrics[0].name == "statement_verifier"
    records = list(store.records(info.run_id))
    assert [r["id"] for r in records][:3] == ["tp0", "tp1", "tp2"]
    fn = next(r for r in records if r["id"] == "fn0")
    assert fn["sample"]["metadata"]["label"] == 1 and fn["sample"]["metadata"]["source"] == "BEGIN"
    verdict = fn["scores"]["statement_verifier"]["verdicts"][0]
    assert verdict["value"] == 0 and verdict["reason"] == "not stated"
    assert info.summary is not None
    stats = info.summary["_calibration"]
    assert stats["balanced_accuracy"] == pytest.approx(0.75) and stats["kappa"] == pytest.approx(0.5)
    assert stats["confusion"] == {"tp": 3, "fn": 1, "fp": 1, "tn": 3}
    assert stats["by_source"]["BEGIN"]["n"] == 4 and sorted(stats["disagreements"]) == ["fn0", "fp0"]
    lo, hi = stats["balanced_accuracy_ci"]
    assert lo <= 0.75 <= hi
    assert info.summary["statement_verifier"]["n_scored"] == 8
    store.close()

    # Same seed, same intervals.
    with FakeOpenAIServer(fake_judge) as server:
        _, again = invoke("items.jsonl", "--judge", "openai:fake", "--base-url", server.base_url, "--seed", "1")
    assert out.split("balanced accuracy")[1].split("\n")[0] == again.split("balanced accuracy")[1].split("\n")[0]


def test_cli_grader_items_na_is_unscored_and_reported(tmp_path: Path) -> None:
    criteria = "The answer is polite."
    rows: list[dict[str, Any]] = [
        {"id": "g1", "criteria": criteria, "question": "Hi?", "completion": "good day", "label": "PASS"},
        {"id": "g2", "criteria": criteria, "completion": "go away", "label": "pass", "source": "team-a"},
        {"id": "g3", "criteria": criteria, "answer": "rude", "label": "FAIL"},
        {"id": "g4", "criteria": criteria, "completion": "meh", "label": 0},
        {"id": "g5", "criteria": criteria, "completion": "good", "label": 1},
        {"id": "g6", "criteria": criteria, "completion": "n/a here", "label": "FAIL"},
    ]
    write(
        tmp_path / "graded.jsonl", rows, extra='{"id": "bad", "criteria": "x", "completion": "y", "label": "maybe"}\n'
    )
    with FakeOpenAIServer(fake_judge) as server:
        code, out = invoke(
            "graded.jsonl", "--judge", "openai:fake", "--base-url", server.base_url, "--disagreements", "5"
        )
    assert code == 2, out  # judged, but one row was invalid
    flat = " ".join(out.split())
    assert "graded.jsonl:7" in flat and "maybe" in flat
    # Scored: g1 TP, g2 FN, g3 TN, g4 TN, g5 TP (g6 is NA, unscored): TP=2 FN=1 FP=0 TN=2
    # BA = (2/3 + 2/2) / 2 = 0.8333; p_o = 4/5 = 0.8, p_e = 3/5 * 2/5 + 2/5 * 3/5 = 0.48,
    # kappa = (0.8 - 0.48) / (1 - 0.48) = 0.32 / 0.52 = 0.6154
    assert "balanced accuracy 0.833 [" in flat
    assert "Cohen's kappa 0.615 [" in flat
    assert "unscored 1 (not_applicable: 1)" in flat
    assert "disagreements (1, showing 1)" in flat and "g2" in flat and "graded fail" in flat
    store = RunStore(".assay/runs.sqlite")
    (info,) = store.runs()
    assert info.n_results == 6 and info.n_errors == 1
    assert info.summary is not None and info.summary["_calibration"]["unscored"] == {"not_applicable": 1}
    assert info.summary["binary_grader"]["unscored_by_reason"] == {"not_applicable": 1}
    g6 = next(r for r in store.records(info.run_id) if r["id"] == "g6")
    assert g6["scores"]["binary_grader"]["verdicts"][0]["value"] == "NA"
    assert g6["sample"]["metadata"]["label"] == 0
    store.close()


def test_cli_limit_and_user_errors(tmp_path: Path) -> None:
    write(tmp_path / "items.jsonl", grounding_rows())
    with FakeOpenAIServer(fake_judge) as server:
        code, out = invoke("items.jsonl", "--judge", "openai:fake", "--base-url", server.base_url, "--limit", "3")
        assert code == 0, out
        assert server.calls == 3
    assert "n=3" in out
    code, out = invoke("missing.jsonl", "--judge", "openai:fake")
    assert code == 1 and "missing.jsonl: no such file" in " ".join(out.split())
    (tmp_path / "empty.jsonl").write_text('{"id": 1, "label": 1}\n')
    code, out = invoke("empty.jsonl", "--judge", "openai:fake")
    assert code == 1 and "holds no valid item" in out


def test_cli_reads_items_like_assay_run_reads_rows(tmp_path: Path) -> None:
    """calibrate had its own JSONL reader.

    A BOM lost row 1, one deep line or one non-UTF-8 byte crashed it, and ids repeated silently.
    """
    rows = grounding_rows()
    good = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
    data = (
        b"\xef\xbb\xbf"  # a byte-order mark before row 1
        + good
        + b'{"id": "latin1", "context": "caf\xe9", "claim": "x y", "label": 1}\n'  # line 9: not UTF-8
        + b"[" * 100_000
        + b"]" * 100_000
        + b"\n"  # line 10: nested too deep
        + json.dumps({**rows[0], "claim": "Again."}).encode()
        + b"\n"  # line 11: id tp0 again
    )
    (tmp_path / "items.jsonl").write_bytes(data)
    with FakeOpenAIServer(fake_judge) as server:
        code, out = invoke("items.jsonl", "--judge", "openai:fake", "--base-url", server.base_url)
        assert server.calls == 8  # every good item judged, row 1 included
    flat = " ".join(out.split())
    assert code == 2, out  # judged, with invalid rows
    assert "n=8" in flat
    assert "items.jsonl:9" in flat and "not UTF-8" in flat
    assert "items.jsonl:10" in flat and "nested too deep" in flat
    assert "items.jsonl:11" in flat and "already used on line 1" in flat


def test_library_calibrate_is_what_the_command_runs_and_a_judge_serves_twice(tmp_path: Path) -> None:
    import assay
    from assay.models import OpenAIJudge

    write(tmp_path / "items.jsonl", grounding_rows(), extra="not json\n")
    seen: list[str] = []
    with FakeOpenAIServer(fake_judge) as server:
        judge = OpenAIJudge("fake", base_url=server.base_url, api_key="sk-test")
        result = assay.calibrate("items.jsonl", judge, seed=1, progress=False, on_error=lambda e: seen.append(str(e)))
        again = assay.calibrate("items.jsonl", judge, seed=1, progress=False, limit=2)  # closed, then reopened
    assert result.overall.balanced_accuracy == pytest.approx(0.75) and result.overall.kappa == pytest.approx(0.5)
    assert [o.item.id for o in result.disagreements] == ["fn0", "fp0"]
    assert [o.item.id for o in result.outcomes] == [r["id"] for r in grounding_rows()]  # input order
    assert set(result.by_source) == {"BEGIN", "wice"} and result.by_source["wice"].n == 4
    assert len(result.errors) == 1 and result.errors[0].line == 9 and seen == [str(result.errors[0])]
    assert len(again.outcomes) == 2
    with RunStore(result.store_path) as store:
        info = store.info(result.run_id)
        assert info.status == "finished" and info.n_results == 8 and info.spec.judge == "openai:fake"
        assert info.summary is not None and info.summary["_calibration"]["disagreements"] == ["fn0", "fp0"]


@pytest.mark.parametrize("judge_says", ["banana", "I'd rather not judge this.", '{"verdict": "maybe"}'])
def test_cli_a_calibration_that_scored_nothing_exits_3_and_attaches_nothing(tmp_path: Path, judge_says: str) -> None:
    # (a judge whose every call fails takes the same path; its retries make it a slow test)
    write(tmp_path / "items.jsonl", grounding_rows())
    with FakeOpenAIServer(lambda body: judge_says) as server:
        code, out = invoke("items.jsonl", "--judge", "openai:fake", "--base-url", server.base_url)
    flat = " ".join(out.split())
    assert code == 3, out
    assert "nothing was scored: 8 of 8 items unscored" in flat and "none is attached" in flat
    assert "attached to faithfulness" not in flat
