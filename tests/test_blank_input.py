"""Blank is missing, in every format, and an invalid row is counted wherever scores are (issue 63).

``contexts: [""]`` was judged (it scored 1.0) while ``contexts: []`` was an invalid row; an
answer of ``""`` was judged while a JSON ``null`` was an invalid row, and CSV (which cannot
tell the two apart) read its empty cell as ``""``. Each case below writes the same rows
through every format ``evaluate`` reads (JSON Lines, a JSON array, CSV, Parquet, a
DataFrame, a list of dicts, ``Sample`` objects) and expects the same invalid rows, in the
same words, at the same place, and no blank text shown to the judge.

And ``evaluate(..., progress=False)`` with an invalid row said nothing of it: its summary
read ``n_scored=2 n_unscored=0``. The summaries carry the count and the messages now, and
``assay run`` and ``assay runs show`` say the count.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay import Faithfulness, Sample, aevaluate, evaluate
from assay.cli import app
from assay.models import FunctionJudge
from assay.run import RunStore, read_jsonl
from assay.run._data import Row
from faithfulness_fakes import faithfulness_answer

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

CONTEXT = "On clear days the sky is blue, and grass is green."
ANSWER = "The sky is blue."
MISSING_ANSWER = "missing or empty field 'answer'"
MISSING_CONTEXTS = "missing or empty field 'contexts'"


def blank_among(indices: list[int], n: int) -> str:
    """The message for blank contexts among real ones (the words a user reads)."""
    names = ", ".join(f"'contexts[{i}]'" for i in indices)
    one = len(indices) == 1
    return (
        f"field{'' if one else 's'} {names} {'is' if one else 'are'} empty or only whitespace "
        f"({len(indices)} of the row's {n} contexts); remove blank contexts from the list: assay does not drop "
        "them itself, since the later ones would move up a rank and change context precision"
    )


@dataclass
class Judge:
    """Supports every statement; notes every context it was shown."""

    contexts: list[str] = field(default_factory=list)

    def reply(self, messages: Any, request: Any) -> str:
        user = messages[-1]["content"]
        if "<context>\n" in user:
            block = user.split("<context>\n", 1)[1].split("\n</context>", 1)[0]
            self.contexts.extend(re.sub(r"^\[\d+\] ", "", line) for line in block.splitlines())
        return faithfulness_answer(user, supported=lambda statement: True)

    def model(self) -> FunctionJudge:
        return FunctionJudge(self.reply, concurrency=2, per_statement=False)


def row(n: int, **fields: Any) -> dict[str, Any]:
    return {"id": f"r{n}", "question": "Colour?", "answer": ANSWER, "contexts": [CONTEXT], **fields}


# -- one set of rows, written in every format --------------------------------------------------
# Each writer returns (data for evaluate, where row n is: its line, item or row number).


def as_jsonl(rows: list[dict[str, Any]], tmp: Path) -> tuple[Any, Callable[[int], int]]:
    path = tmp / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, lambda n: n


def as_json_array(rows: list[dict[str, Any]], tmp: Path) -> tuple[Any, Callable[[int], int]]:
    path = tmp / "d.json"
    path.write_text(json.dumps(rows, indent=2))
    return path, lambda n: n


def as_csv(rows: list[dict[str, Any]], tmp: Path) -> tuple[Any, Callable[[int], int]]:
    path = tmp / "d.csv"
    columns = list(dict.fromkeys(key for r in rows for key in r))
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, columns, lineterminator="\n")
    writer.writeheader()  # a null is an empty cell, as a spreadsheet writes it
    starts = {}  # a record starts on the line after the previous one ends (a cell may hold a newline)
    for n, r in enumerate(rows, start=1):
        starts[n] = out.getvalue().count("\n") + 1
        writer.writerow({k: json.dumps(v) if isinstance(v, list) else v for k, v in r.items()})
    path.write_text(out.getvalue())
    return path, starts.__getitem__


def as_parquet(rows: list[dict[str, Any]], tmp: Path) -> tuple[Any, Callable[[int], int]]:
    path = tmp / "d.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path, lambda n: n


def as_dataframe(rows: list[dict[str, Any]], tmp: Path) -> tuple[Any, Callable[[int], int]]:
    return pd.DataFrame(rows), lambda n: n


def as_dicts(rows: list[dict[str, Any]], tmp: Path) -> tuple[Any, Callable[[int], int]]:
    return [dict(r) for r in rows], lambda n: n


def as_samples(rows: list[dict[str, Any]], tmp: Path) -> tuple[Any, Callable[[int], int]]:
    return [Sample(**r) for r in rows], lambda n: n


FORMATS: dict[str, Callable[[list[dict[str, Any]], Path], tuple[Any, Callable[[int], int]]]] = {
    "jsonl": as_jsonl,
    "json array": as_json_array,
    "csv": as_csv,
    "parquet": as_parquet,
    "dataframe": as_dataframe,
    "list of dicts": as_dicts,
    "samples": as_samples,
}


def run_in(fmt: str, rows: list[dict[str, Any]], tmp_path: Path) -> tuple[dict[int, str], dict[int, float], Judge]:
    """(row number -> invalid message, row number -> faithfulness, the judge) for ``rows`` read as ``fmt``."""
    folder = tmp_path / fmt.replace(" ", "-")
    folder.mkdir()
    data, where = FORMATS[fmt](rows, folder)
    judge = Judge()
    result = evaluate(data, [Faithfulness(decomposer="sentences")], judge.model(), progress=False)
    back = {where(n): n for n in range(1, len(rows) + 1)}
    invalid = {}
    for error in result.errors:
        assert error.line is not None
        invalid[back[error.line]] = error.detail
        if isinstance(data, Path):
            assert str(error).startswith(f"{data}:"), str(error)  # the file is named, with the place
    scored = {back[r.line]: r.scores["faithfulness"].value for r in result.results}
    assert result.summary()["faithfulness"].n_invalid == len(invalid), fmt
    return invalid, scored, judge


# -- item 3: a blank answer is a missing answer, in the same words everywhere ---------------------

BLANK_ANSWERS = [None, "", "   ", "\n\t "]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_null_empty_or_whitespace_answer_is_one_invalid_row_in_every_format(fmt: str, tmp_path: Path) -> None:
    rows = [row(1), *(row(n, answer=value) for n, value in enumerate(BLANK_ANSWERS, start=2)), row(6)]
    invalid, scored, _ = run_in(fmt, rows, tmp_path)
    assert invalid == dict.fromkeys((2, 3, 4, 5), MISSING_ANSWER)
    assert scored == {1: 1.0, 6: 1.0}


def test_an_absent_answer_and_a_blank_one_read_alike_beside_an_alias(tmp_path: Path) -> None:
    # A blank 'answer' is no answer, so 'response' gives it: no "two columns" conflict, as with null.
    rows = [
        {"id": "a", "answer": "", "response": ANSWER, "contexts": [CONTEXT]},
        {"id": "b", "answer": None, "response": ANSWER, "contexts": [CONTEXT]},
        {"id": "c", "answer": "  ", "response": ANSWER, "contexts": [CONTEXT]},
    ]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    read = list(read_jsonl(path, required=["answer"]))
    assert all(isinstance(item, Row) for item in read), read
    assert [item.sample.answer for item in read if isinstance(item, Row)] == [ANSWER] * 3


# -- item 1: blank contexts are no contexts; blank among real ones is refused, never dropped -----

BLANK_CONTEXTS: list[tuple[list[str], str]] = [
    ([], MISSING_CONTEXTS),
    ([""], MISSING_CONTEXTS),
    (["   "], MISSING_CONTEXTS),
    (["", "\n\t"], MISSING_CONTEXTS),
    ([CONTEXT, ""], blank_among([1], 2)),
    (["", CONTEXT, " \n"], blank_among([0, 2], 3)),
]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_blank_contexts_are_an_invalid_row_in_every_format(fmt: str, tmp_path: Path) -> None:
    rows = [row(1), *(row(n, contexts=c) for n, (c, _) in enumerate(BLANK_CONTEXTS, start=2))]
    rows.append(row(len(rows) + 1))
    invalid, scored, judge = run_in(fmt, rows, tmp_path)
    assert invalid == {n: message for n, (_, message) in enumerate(BLANK_CONTEXTS, start=2)}
    assert scored == {1: 1.0, len(rows): 1.0}
    assert judge.contexts and all(text.strip() for text in judge.contexts), judge.contexts


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "dataframe", "list of dicts"])
def test_contexts_given_as_blank_text_are_no_contexts(fmt: str, tmp_path: Path) -> None:
    rows = [row(1), row(2, contexts=""), row(3, contexts="  \n"), row(4)]
    invalid, scored, _ = run_in(fmt, rows, tmp_path)
    assert invalid == {2: MISSING_CONTEXTS, 3: MISSING_CONTEXTS}
    assert scored == {1: 1.0, 4: 1.0}


def test_blank_contexts_of_a_row_whose_metrics_do_not_read_them_do_not_make_it_invalid() -> None:
    # Checked where a metric needs the contexts: a row judged on its trace alone is not refused.
    from assay.run._data import read_rows as rows_from_items

    items = [row(1, contexts=[CONTEXT, ""]), row(2, contexts=[""])]
    assert all(isinstance(item, Row) for item in rows_from_items(items, required=["answer"]))
    refused = list(rows_from_items(items, required=["answer", "contexts"]))
    assert [str(item) for item in refused] == [
        f"<samples>:1: {blank_among([1], 2)}",
        f"<samples>:2: {MISSING_CONTEXTS}",
    ]


# -- item 2: the invalid rows are counted, with their messages, in every door --------------------

THREE = [row(1), row(2, answer=None), row(3)]
SAID = f"<samples>:2: {MISSING_ANSWER}"


def test_evaluate_without_progress_counts_the_invalid_row_in_its_summary() -> None:
    result = evaluate(THREE, [Faithfulness(decomposer="sentences")], Judge().model(), progress=False)
    summary = result.summary()["faithfulness"]
    assert (summary.n_scored, summary.n_unscored, summary.n_invalid) == (2, 0, 1)
    whole = result.run_summary()
    assert (whole.n_row_errors, tuple(whole.row_errors)) == (1, (SAID,))
    assert [str(error) for error in result.errors] == [SAID]
    assert "1 invalid row" in repr(result)


def test_aevaluate_counts_the_invalid_row_too() -> None:
    result = asyncio.run(aevaluate(THREE, [Faithfulness(decomposer="sentences")], Judge().model(), progress=False))
    assert result.summary()["faithfulness"].n_invalid == 1
    assert tuple(result.run_summary().row_errors) == (SAID,)


def test_a_stored_run_counts_its_invalid_rows_from_the_store(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    result = evaluate(THREE, [Faithfulness(decomposer="sentences")], Judge().model(), progress=False, store=store)
    assert result.summary()["faithfulness"].n_invalid == 1  # read back from the store
    with RunStore(store) as runs:
        stored = runs.summary(result.run_id or "")
    assert stored.metrics["faithfulness"].n_invalid == 1
    assert tuple(stored.row_errors) == (SAID,)


def test_assay_run_and_runs_show_say_how_many_rows_were_invalid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai")
    from assay.testing import FakeOpenAIServer

    monkeypatch.chdir(tmp_path)
    rows = [row(1), *(row(n, answer="") for n in range(2, 24)), row(24)]  # 22 invalid: more than are listed
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = tmp_path / "runs.sqlite"
    judge = Judge()
    env = {"COLUMNS": "200", "OPENAI_API_KEY": "sk-fake"}
    with FakeOpenAIServer(lambda body: judge.reply(body["messages"], None)) as server:
        args = ["run", str(data), "--judge", "openai:fake", "--base-url", server.base_url, "--store", str(store)]
        args += ["-m", "faithfulness", "--set", "faithfulness.decomposer=sentences", "--no-cache", "--progress", "none"]
        ran = CliRunner().invoke(app, args, env=env)
    assert ran.exit_code == 2, ran.output
    out = " ".join(ran.output.split())
    assert "2 results · 22 invalid input rows (not judged) · judge calls" in out
    assert "… and 2 more ('assay report" in out
    with RunStore(store) as runs:
        run_id = runs.latest()
    shown = CliRunner().invoke(app, ["runs", "show", run_id, "--store", str(store)], env=env)
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "22 invalid input rows (not judged)" in text
    assert text.count(f"invalid row {data}:") == 20 and "… and 2 more" in text
