"""One product from every door: the same bad input gives the same outcome however it comes in.

Issue 35: ``evaluate(rows, ["faithfulness"])`` crashed while ``assay run -m faithfulness``
worked; a DataFrame without contexts gave ``mean=nan`` while ``assay run`` stopped and said
which column to map; a JSON string of contexts was one context in JSONL and two in a CSV
cell. Each input below goes through every door:

- ``evaluate`` on a list of dicts,
- ``evaluate`` on a pandas DataFrame,
- ``assay run`` on a JSONL file, and on a CSV file where a CSV cell can say the same,
- the pytest plugin's assertions (``assert_scores``, ``assert_faithful``), one sample each,
- the Inspect scorer (``assay_scorer``) in a real ``inspect_ai.eval``, when installed,

and every door must agree: the same refusal before any judge call, the same invalid rows
(by row number) with the same words, the same contexts handed to the judge. The pytest
plugin and the Inspect scorer see one sample at a time, so "no row has the field" is, for
them, "this sample lacks it": the per-row error.
"""

from __future__ import annotations

import csv
import gc
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import assay.pytest_plugin as plugin
from assay import Faithfulness, evaluate
from assay.cli import app
from assay.errors import AssayError, SampleError
from assay.models import FunctionJudge
from assay.run import RunStore

pytest.importorskip("openai")
from assay.testing import FakeOpenAIServer

pd = pytest.importorskip("pandas")

# inspect_ai's own warnings (0.3.285), as in tests/test_inspect_integration.py.
pytestmark = [
    pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <function MemoryObjectReceiveStream.__del__"
        ":pytest.PytestUnraisableExceptionWarning"
    ),
]

CONTEXT = "On clear days the sky is blue, and grass is green."  # no answer copies it word for word


def row(n: int, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"id": str(n), "question": "Colour?", "answer": "The sky is blue.", "contexts": [CONTEXT]}
    base.update(fields)
    return {key: value for key, value in base.items() if value is not _ABSENT}


_ABSENT = object()


# -- what every door is judged by -------------------------------------------------------------


@dataclass
class Judge:
    """Answers every faithfulness prompt (statement, batch, sentence) as supported; notes the contexts it was shown."""

    contexts: set[tuple[str, ...]] = field(default_factory=set)
    calls: int = 0

    def reply(self, user: str) -> str:
        self.calls += 1
        if "<context>\n" in user:
            block = user.split("<context>\n", 1)[1].split("\n</context>", 1)[0]
            self.contexts.add(tuple(re.sub(r"^\[\d+\] ", "", line) for line in block.splitlines()))
        if "<sentence>" in user:
            return json.dumps({"statements": [user.split("<sentence>\n")[1].split("\n</sentence>")[0]]})
        if "<statements>" in user:
            items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
            verdicts = [{"statement": item.split("] ", 1)[1], "reason": "said", "verdict": 1} for item in items]
            return json.dumps({"verdicts": verdicts})
        if "<answer>" in user:
            answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
            return json.dumps({"statements": [s.strip() + "." for s in answer.split(".") if s.strip()]})
        return json.dumps({"verdict": 1, "reason": "said"})

    def model(self) -> FunctionJudge:
        return FunctionJudge(lambda messages, request: self.reply(messages[-1]["content"]))


@dataclass(frozen=True)
class Outcome:
    """What a door made of an input, in words every door can be compared by.

    ``refused``: the error that stopped everything before any judge call, with the door's
    name for the data replaced by ``DATA``; ``invalid``: row number -> why the row was not
    judged; ``scored``: row number -> the value, or the unscored reason; ``contexts``: the
    contexts the judge was shown.
    """

    refused: str | None = None
    invalid: dict[int, str] = field(default_factory=dict)
    scored: dict[int, float | str] = field(default_factory=dict)
    contexts: frozenset[tuple[str, ...]] = frozenset()
    calls: int = 0


def _value(score: Any) -> float | str:
    return score.value if score.is_scored else score.unscored_reason.value


Door = Callable[[list[dict[str, Any]], Any, Path], Outcome]


def through_list(rows: list[dict[str, Any]], metrics: Any, tmp_path: Path) -> Outcome:
    return _evaluate(rows, metrics, f"<{len(rows)} samples>")


def through_dataframe(rows: list[dict[str, Any]], metrics: Any, tmp_path: Path) -> Outcome:
    return _evaluate(pd.DataFrame(rows), metrics, "<dataframe>")


def _evaluate(data: Any, metrics: Any, description: str) -> Outcome:
    judge = Judge()
    try:
        result = evaluate(data, metrics, judge.model(), progress=False)
    except AssayError as exc:
        return Outcome(refused=str(exc).replace(description, "DATA"), calls=judge.calls)
    for error in result.errors:
        assert error.source == ("<dataframe>" if description == "<dataframe>" else "<samples>")
    return Outcome(
        invalid={error.line or 0: error.detail for error in result.errors},
        scored={r.line: _value(r.scores["faithfulness"]) for r in result.results},
        contexts=frozenset(judge.contexts),
        calls=judge.calls,
    )


def through_cli(rows: list[dict[str, Any]], metrics: Any, tmp_path: Path, *, fmt: str = "jsonl") -> Outcome:
    data = tmp_path / f"data.{fmt}"
    if fmt == "jsonl":
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        first_row_line = 1
    else:
        columns = list(dict.fromkeys(key for r in rows for key in r))
        with data.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, columns)
            writer.writeheader()
            writer.writerows({k: json.dumps(v) if isinstance(v, list) else v for k, v in r.items()} for r in rows)
        first_row_line = 2  # the header is line 1
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    store = tmp_path / f"runs-{fmt}.sqlite"
    judge = Judge()
    with FakeOpenAIServer(lambda body: judge.reply(body["messages"][-1]["content"])) as server:
        args = ["run", str(data), "--judge", "openai:fake", "--base-url", server.base_url, "--store", str(store)]
        args += [arg for name in names for arg in ("-m", name)]
        args += ["--no-cache", "--progress", "none"]
        result = CliRunner().invoke(app, args, env={"COLUMNS": "1000", "OPENAI_API_KEY": "sk-fake"})
    out = " ".join(result.output.split())
    if result.exit_code == 1:
        message = out.split("error: ", 1)[1]
        return Outcome(refused=message.replace(str(data), "DATA"), calls=judge.calls)
    assert result.exit_code in (0, 2, 3), result.output  # 3: too many unscored (an empty answer)
    with RunStore(store) as runs:
        run_id = runs.latest()
        prefix = f"{data}:"
        invalid = {}
        for line, message in runs.row_errors(run_id):
            assert message.startswith(f"{prefix}{line}: "), message
            invalid[line - first_row_line + 1] = message.removeprefix(f"{prefix}{line}: ")
        scored = {}
        for record in runs.records(run_id):
            score = record["scores"]["faithfulness"]
            scored[record["line"] - first_row_line + 1] = score["unscored_reason"] or score["value"]
    if result.exit_code != 3:
        assert result.exit_code == (2 if invalid else 0), result.output
    return Outcome(invalid=invalid, scored=scored, contexts=frozenset(judge.contexts), calls=judge.calls)


def through_csv(rows: list[dict[str, Any]], metrics: Any, tmp_path: Path) -> Outcome:
    return through_cli(rows, metrics, tmp_path, fmt="csv")


def through_pytest_plugin(rows: list[dict[str, Any]], metrics: Any, tmp_path: Path) -> Outcome:
    """Each row asserted on its own, as a test would: ``assert_scores`` for names, else ``assert_faithful``."""
    judge = Judge()
    invalid: dict[int, str] = {}
    scored: dict[int, float | str] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plugin, "_SESSIONS", [])  # not this session's run: these samples are ours
        for number, sample in enumerate(rows, start=1):
            try:
                if metrics == "faithfulness":
                    score = plugin.assert_faithful(sample, min=0.0, judge=judge.model(), metric=Faithfulness())
                else:
                    score = plugin.assert_scores(sample, metrics, min=0.0, judge=judge.model())["faithfulness"]
            except SampleError as exc:
                invalid[number] = str(exc).removeprefix("assay: invalid sample: ")
            except AssertionError as exc:  # an unscored result fails its assertion, and says why
                reason = re.search(r"unscored \((\w+)\)", str(exc))
                assert reason is not None, str(exc)
                scored[number] = reason.group(1)
            except AssayError as exc:
                return Outcome(refused=str(exc), calls=judge.calls)
            else:
                scored[number] = _value(score)
    return Outcome(invalid=invalid, scored=scored, contexts=frozenset(judge.contexts), calls=judge.calls)


def through_inspect(rows: list[dict[str, Any]], metrics: Any, tmp_path: Path) -> Outcome:
    """Each row an Inspect sample: the mock model says the row's answer, metadata holds its contexts."""
    pytest.importorskip("inspect_ai")
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample as InspectSample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from assay.integrations.inspect import assay_scorer

    def echo(input: list[Any], tools: object, tool_choice: object, config: object) -> ModelOutput:
        output = ModelOutput.from_content(model="mockllm", content=input[-1].text.split("Say: ", 1)[1])
        output.usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
        return output

    judge = Judge()
    metric = metrics if isinstance(metrics, str) else metrics[0]
    try:
        scorer = assay_scorer(metric, judge=judge.model(), name="faithfulness")
    except AssayError as exc:
        return Outcome(refused=str(exc), calls=judge.calls)
    dataset = [
        InspectSample(
            id=int(r["id"]),
            input=f"Say: {r['answer']}",
            metadata={key: value for key, value in r.items() if key not in ("id", "question", "answer")},
        )
        for r in rows
    ]
    [log] = inspect_eval(
        Task(dataset=dataset, scorer=scorer),
        model=get_model("mockllm/model", custom_outputs=echo),
        display="none",
        fail_on_error=False,
        log_dir=str(tmp_path / "inspect-logs"),
    )
    gc.collect()
    assert log.samples is not None
    invalid: dict[int, str] = {}
    scored: dict[int, float | str] = {}
    for sample in log.samples:
        if sample.error is not None:
            found = re.fullmatch(rf"SampleError\((['\"])inspect sample {sample.id}: (.*)\1\)", sample.error.message)
            assert found is not None, sample.error.message
            invalid[int(sample.id)] = found.group(2)
        else:
            assert sample.scores is not None
            score = sample.scores["faithfulness"]
            unscored = (score.metadata or {}).get("unscored")
            scored[int(sample.id)] = unscored["reason"] if unscored else float(score.value)  # type: ignore[arg-type]
    return Outcome(invalid=invalid, scored=scored, contexts=frozenset(judge.contexts), calls=judge.calls)


BATCH_DOORS: dict[str, Door] = {"list": through_list, "dataframe": through_dataframe, "cli": through_cli}
ONE_BY_ONE: dict[str, Door] = {"pytest plugin": through_pytest_plugin, "inspect": through_inspect}


def outcomes(
    doors: dict[str, Door], rows: list[dict[str, Any]], metrics: Any, tmp_path: Path
) -> Iterator[tuple[str, Outcome]]:
    for name, door in doors.items():
        folder = tmp_path / name.replace(" ", "-")
        folder.mkdir()
        yield name, door(rows, metrics, folder)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the CLI's cache and stores, Inspect's logs: all under tmp_path


# -- the inputs -------------------------------------------------------------------------------

GOOD = [row(1), row(2), row(3)]
ALL_SUPPORTED = Outcome(scored={1: 1.0, 2: 1.0, 3: 1.0}, contexts=frozenset({(CONTEXT,)}))


def judged(outcome: Outcome) -> Outcome:
    """``outcome`` without its call count (which depends on the door's judge: batch or per statement)."""
    return Outcome(outcome.refused, outcome.invalid, outcome.scored, outcome.contexts)


@pytest.mark.parametrize("metrics", ["faithfulness", ["faithfulness"]])
def test_metric_names_as_strings_are_metrics_in_every_door(metrics: Any, tmp_path: Path) -> None:
    doors = {**BATCH_DOORS, "csv": through_csv, **ONE_BY_ONE}
    for name, outcome in outcomes(doors, GOOD, metrics, tmp_path):
        assert judged(outcome) == ALL_SUPPORTED, name


def test_a_misspelt_metric_name_is_refused_with_did_you_mean_in_every_door(tmp_path: Path) -> None:
    doors = {**BATCH_DOORS, **ONE_BY_ONE}
    for name, outcome in outcomes(doors, GOOD, ["faithfulnes"], tmp_path):
        assert outcome.refused is not None, name
        assert outcome.refused.startswith("unknown metric 'faithfulnes'; did you mean 'faithfulness'? choose from"), (
            name,
            outcome.refused,
        )
        assert outcome.calls == 0, name


def test_rows_without_contexts_are_refused_before_any_judge_call_naming_the_column_to_map(tmp_path: Path) -> None:
    rows = [row(n, contexts=_ABSENT, docs=f"passage {n}") for n in (1, 2, 3)]
    refusal = (
        "metric 'faithfulness' needs 'contexts' (also read from retrieved_contexts, retrieval_context), which no "
        "valid row of DATA has; add it to the data, or name the column that holds it: --map COLUMN=contexts on "
        "the command line, mapping={'COLUMN': 'contexts'} in Python (columns kept as metadata: 'docs')"
    )
    for name, outcome in outcomes({**BATCH_DOORS, "csv": through_csv}, rows, "faithfulness", tmp_path):
        assert outcome == Outcome(refused=refusal), name
    # One sample at a time, "no row has it" is "this sample lacks it": the row's own error.
    lacking = Outcome(invalid=dict.fromkeys((1, 2, 3), "missing or empty field 'contexts'"))
    for name, outcome in outcomes(ONE_BY_ONE, rows, "faithfulness", tmp_path):
        assert outcome == lacking, name


def test_a_column_named_like_the_field_is_the_one_the_refusal_offers_to_map(tmp_path: Path) -> None:
    rows = [row(n, contexts=_ABSENT, retrieved_context=[CONTEXT]) for n in (1, 2)]
    for name, outcome in outcomes(BATCH_DOORS, rows, "faithfulness", tmp_path):
        assert outcome.refused is not None, name
        assert (
            "--map retrieved_context=contexts on the command line, mapping={'retrieved_context': 'contexts'} in Python"
            in outcome.refused
        ), name


def test_a_row_without_an_answer_is_an_invalid_row_with_its_number_in_every_door(tmp_path: Path) -> None:
    rows = [row(1), row(2, answer=_ABSENT), row(3)]
    expected = Outcome(
        invalid={2: "missing or empty field 'answer'"},
        scored={1: 1.0, 3: 1.0},
        contexts=frozenset({(CONTEXT,)}),
    )
    # (CSV has no absent cell: test_a_blank_answer_is_a_missing_answer_in_every_door reads its
    # empty one; an Inspect sample's answer is the model's completion, always there.)
    doors = {**BATCH_DOORS, "pytest plugin": through_pytest_plugin}
    for name, outcome in outcomes(doors, rows, "faithfulness", tmp_path):
        assert judged(outcome) == expected, name


def test_contexts_as_a_json_string_are_the_list_it_holds_in_every_door(tmp_path: Path) -> None:
    rows = [row(1, contexts='["alpha passage", "beta passage"]'), row(2, contexts="one passage")]
    expected = Outcome(
        scored={1: 1.0, 2: 1.0}, contexts=frozenset({("alpha passage", "beta passage"), ("one passage",)})
    )
    doors = {**BATCH_DOORS, "csv": through_csv, **ONE_BY_ONE}
    for name, outcome in outcomes(doors, rows, "faithfulness", tmp_path):
        assert judged(outcome) == expected, name


def test_contexts_as_a_number_is_an_invalid_row_in_every_door(tmp_path: Path) -> None:
    rows = [row(1), row(2, contexts=3), row(3)]
    problem = "expected a list of strings (or one string), got a number (int)"
    # (A CSV cell is text: "3" there is one context, not a number.)
    for name, outcome in outcomes({**BATCH_DOORS, **ONE_BY_ONE}, rows, "faithfulness", tmp_path):
        assert outcome.scored == {1: 1.0, 3: 1.0}, name
        assert list(outcome.invalid) == [2], name
        # Inspect names where its contexts came from: field 'metadata.contexts'.
        assert re.fullmatch(rf"field '(metadata\.)?contexts': {re.escape(problem)}", outcome.invalid[2]), name


def test_a_blank_answer_is_a_missing_answer_in_every_door(tmp_path: Path) -> None:
    # Issue 63: "" was judged (unscored no_statements) while null was an invalid row; CSV
    # cannot tell the two apart, so no door does. (Inspect's answer is the model's completion.)
    rows = [row(1), row(2, answer=""), row(3, answer=" \t "), row(4)]  # (a newline would move CSV lines)
    expected = Outcome(
        invalid=dict.fromkeys((2, 3), "missing or empty field 'answer'"),
        scored={1: 1.0, 4: 1.0},
        contexts=frozenset({(CONTEXT,)}),
    )
    doors = {**BATCH_DOORS, "csv": through_csv, **ONE_BY_ONE}
    for name, outcome in outcomes(doors, rows, "faithfulness", tmp_path):
        assert judged(outcome) == expected, name


def test_blank_contexts_are_an_invalid_row_in_every_door(tmp_path: Path) -> None:
    # Issue 63: contexts [""] were judged (and scored 1.0) while [] was an invalid row.
    rows = [row(1), row(2, contexts=[""]), row(3, contexts=[CONTEXT, "  "]), row(4, contexts=[]), row(5)]
    blank = (
        "field 'contexts[1]' is empty or only whitespace (1 of the row's 2 contexts); remove blank contexts from "
        "the list: assay does not drop them itself, since the later ones would move up a rank and change context "
        "precision"
    )
    missing = "missing or empty field 'contexts'"
    expected = Outcome(
        invalid={2: missing, 3: blank, 4: missing}, scored={1: 1.0, 5: 1.0}, contexts=frozenset({(CONTEXT,)})
    )
    doors = {**BATCH_DOORS, "csv": through_csv, **ONE_BY_ONE}
    for name, outcome in outcomes(doors, rows, "faithfulness", tmp_path):
        assert judged(outcome) == expected, name


# -- issue 56: the same MESSAGE from every door, not only the same outcome ---------------------

MAP_ANSWR = "--map answr=answer on the command line, mapping={'answr': 'answer'} in Python"


def test_a_misspelt_column_on_one_row_gives_every_door_the_same_hint(tmp_path: Path) -> None:
    rows = [row(1), row(2, answer=_ABSENT, answr="The sky is blue."), row(3)]
    expected = Outcome(
        invalid={2: f"missing or empty field 'answer' (the row has 'answr', kept as metadata; if it holds the answer: "
                 f"{MAP_ANSWR})"},
        scored={1: 1.0, 3: 1.0},
        contexts=frozenset({(CONTEXT,)}),
    )  # fmt: skip
    doors = {**BATCH_DOORS, "pytest plugin": through_pytest_plugin}
    for name, outcome in outcomes(doors, rows, ["faithfulness"], tmp_path):
        assert judged(outcome) == expected, name


def test_a_misspelt_column_on_every_row_is_the_same_advice_in_every_door(tmp_path: Path) -> None:
    rows = [row(n, answer=_ABSENT, answr="The sky is blue.") for n in (1, 2)]
    for name, outcome in outcomes(BATCH_DOORS, rows, "faithfulness", tmp_path):
        assert outcome.refused is not None and outcome.calls == 0, name
        assert outcome.refused.endswith(
            f"add it to the data, or name the column that holds it: {MAP_ANSWR} (columns kept as metadata: 'answr')"
        ), (name, outcome.refused)
    # One sample at a time, the sample's own error, with the same mapping advice.
    (plugin_door,) = outcomes({"pytest plugin": through_pytest_plugin}, rows, "faithfulness", tmp_path)
    assert plugin_door[1].calls == 0
    assert set(plugin_door[1].invalid.values()) == {
        f"missing or empty field 'answer' (the row has 'answr', kept as metadata; if it holds the answer: {MAP_ANSWR})"
    }


def test_contexts_as_one_string_get_the_same_note_from_every_door(tmp_path: Path) -> None:
    rows = [row(1, contexts="one passage"), row(2, contexts="another passage")]
    said = "contexts was one string, not a list, in {rows}; each was taken as one context (give a list to pass several)"
    result = evaluate(rows, "faithfulness", Judge().model(), progress=False)
    assert result.notes == [said.format(rows="2 rows of <2 samples>")]
    frame = evaluate(pd.DataFrame(rows), "faithfulness", Judge().model(), progress=False)
    assert frame.notes == [said.format(rows="2 rows of <dataframe>")]
    session = plugin.SessionRun(store_path=None, report_path=None)
    judge = Judge()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plugin, "_SESSIONS", [(None, session)])
        for number, sample in enumerate(rows, start=1):
            session._test = f"test_x.py::test_{number}"
            plugin.assert_faithful(sample, min=0.0, judge=judge.model(), metric=Faithfulness())
    note = said.format(rows="2 samples (test_x.py::test_1, test_x.py::test_2)")
    assert session.note_lines() == [f"assay: note: {note}"]
    assert f"assay: note: {note}" in session.summary_lines()
