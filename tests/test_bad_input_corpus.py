"""The bad-input corpus: every input row is read right or reported where it is.

Each case is a dataset file built in code (JSONL, JSON array, CSV, Parquet), run through
the real ``assay run`` command against a loopback OpenAI-compatible server. Each asserts
the exit code (0 all judged, 1 could not run, 2 some rows invalid, 3 nothing scored or
too much unscored), that every invalid row is reported with its file, its line (item,
row) and what is wrong, and that every good row was judged and stored, with its text
intact, in the run store.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.run import RunStore
from assay.testing import FakeOpenAIServer

pytest.importorskip("openai")

CONTEXT = "Paris is the capital of France. It lies on the Seine."
ANSWER = "Paris is the capital of France. It lies on the Seine."


def supporting_judge(body: dict[str, Any]) -> str:
    """Faithfulness (batch strategy): a sentence to rewrite is its own statement; every statement supported."""
    user = body["messages"][-1]["content"]
    if "<sentence>" in user:
        return json.dumps({"statements": [user.split("<sentence>\n")[1].split("\n</sentence>")[0]]})
    block = user.rsplit("<statements>\n", 1)[1].split("\n</statements>")[0]
    statements = [line.split("] ", 1)[1] for line in block.splitlines() if line.startswith("[") and "] " in line]
    items = [{"statement": s, "reason": "stated", "verdict": 1} for s in statements]
    return json.dumps({"verdicts": items})


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(supporting_judge) as fake:
        yield fake


# -- building files -------------------------------------------------------------------------


def good(n: int, **fields: Any) -> dict[str, Any]:
    return {"id": f"g{n}", "question": "Where is Paris?", "answer": ANSWER, "contexts": [CONTEXT], **fields}


def jsonl(*rows: Any) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows).encode()


HEADER = ["id", "question", "answer", "contexts"]


def csv_bytes(*rows: list[str], header: bool = True) -> bytes:
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerows([HEADER, *rows] if header else rows)
    return out.getvalue().encode()


def separated(delimiter: bytes, *rows: list[str]) -> bytes:
    """A header and rows separated by ``delimiter`` (cells quoted only when they must be)."""
    out = io.StringIO(newline="")
    csv.writer(out, delimiter=delimiter.decode(), lineterminator="\n").writerows([HEADER, *rows])
    return out.getvalue().encode()


def crow(n: int, answer: str = ANSWER, contexts: str | None = None) -> list[str]:
    return [f"g{n}", "Where is Paris?", answer, contexts if contexts is not None else json.dumps([CONTEXT])]


def parquet(columns: dict[str, Any]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        pq.write_table(pa.table(columns) if not isinstance(columns, pa.Table) else columns, path)

    return write


def pq_good(ids: list[Any]) -> dict[str, Any]:
    n = len(ids)
    return {"id": ids, "question": ["Where is Paris?"] * n, "answer": [ANSWER] * n, "contexts": [[CONTEXT]] * n}


@dataclass(frozen=True)
class Case:
    """One corpus entry.

    Attributes:
        name: The file name (its suffix picks the reader).
        content: The file's bytes, or a function writing it (Parquet), or ``None`` for a
            directory.
        code: The expected exit code.
        judged: Ids that must be stored with a score (every good row).
        unscored: (id, reason) of rows stored unscored.
        errors: (where, what) of each invalid row: both appear in one reported message,
            and the run store keeps as many row errors as listed.
        message: Fragments of the error of a run that could not start (exit 1).
        same_text: Id -> answer that must be stored exactly (no character lost or changed).
    """

    name: str
    content: bytes | Callable[[Path], None] | None
    code: int
    judged: tuple[str, ...] = ()
    unscored: tuple[tuple[str, str], ...] = ()
    errors: tuple[tuple[str, str], ...] = ()
    message: tuple[str, ...] = ()
    same_text: tuple[tuple[str, str], ...] = ()


ZERO_WIDTH = "Paris\u200b is the capital\u200d of France.\u2060 It lies on the \ufeffSeine."
RTL = "\u202eParis is the capital of France. \u05e4\u05e8\u05d9\u05d6 \u0628\u0627\u0631\u064a\u0633 is on the Seine."
EMOJI = "Paris 🇫🇷 is the capital of France 👩\u200d👩\u200d👧. It lies on the Seine 🌊."
NUL = "Paris is the capital\u0000 of France. It lies on the Seine."
SURROGATE_LINE = (
    '{"id": "bad", "question": "Q?", "answer": "Fact 1 \\ud800 is here.", "contexts": ["Paris is in France."]}'
)
DEEP = "[" * 100_000 + "]" * 100_000


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def deepeval(n: int) -> dict[str, Any]:
    return {
        "id": f"g{n}",
        "input": "Where is Paris?",
        "actual_output": ANSWER,
        "expected_output": "In France.",
        "retrieval_context": [CONTEXT],
        "context": ["An ideal context the retriever never returned."],
    }


def ragas(n: int) -> dict[str, Any]:
    return {
        "id": f"g{n}",
        "user_input": "Where is Paris?",
        "response": ANSWER,
        "retrieved_contexts": [CONTEXT],
        "reference": "In France.",
        "reference_contexts": ["An ideal context."],
    }


CASES: dict[str, Case] = {
    # -- JSONL ----------------------------------------------------------------------------
    "jsonl-good": Case("d.jsonl", jsonl(good(1), good(2), good(3)), 0, judged=("g1", "g2", "g3")),
    "jsonl-empty-file": Case("d.jsonl", b"", 1, message=("d.jsonl: no rows",)),
    "jsonl-only-blank-lines": Case("d.jsonl", b"\n   \n\t\r\n\n", 1, message=("d.jsonl: no rows",)),
    "jsonl-bom": Case("d.jsonl", b"\xef\xbb\xbf" + jsonl(good(1), good(2)), 0, judged=("g1", "g2")),
    "jsonl-crlf": Case("d.jsonl", jsonl(good(1), good(2)).replace(b"\n", b"\r\n"), 0, judged=("g1", "g2")),
    "jsonl-invalid-json": Case(
        "d.jsonl",
        jsonl(good(1), '{"id": "x", "answer": ', good(3)),
        2,
        ("g1", "g3"),
        errors=((":2:", "invalid JSON: Expecting value at the end of the line"),),  # not "line 2 column 1"
    ),
    "jsonl-row-not-an-object": Case(
        "d.jsonl", jsonl(good(1), [1, 2], good(3)), 2, ("g1", "g3"), errors=((":2:", "expected a JSON object"),)
    ),
    "jsonl-lone-surrogate": Case(
        "d.jsonl",
        jsonl(good(1), SURROGATE_LINE, good(3)),
        2,
        ("g1", "g3"),
        errors=((":2:", "field 'answer': lone surrogate U+D800 at character 8"),),
    ),
    "jsonl-nested-100000-deep": Case(
        "d.jsonl", jsonl(good(1), DEEP, good(3)), 2, ("g1", "g3"), errors=((":2:", "nested too deep"),)
    ),
    "jsonl-metadata-nested-300-deep": Case(
        "d.jsonl",
        jsonl(good(1), good(2, metadata={"k": nested(300)})),
        2,
        ("g1",),
        errors=((":2:", "nested deeper than 100 levels"),),
    ),
    "jsonl-missing-answer-on-row-1": Case(
        "d.jsonl",
        jsonl({"id": "x", "question": "Q?", "contexts": [CONTEXT]}, good(2), good(3)),
        2,
        ("g2", "g3"),
        errors=((":1:", "missing or empty field 'answer'"),),
    ),
    "jsonl-missing-answer-later": Case(
        "d.jsonl",
        jsonl(good(1), good(2), {"id": "x", "contexts": [CONTEXT]}),
        2,
        ("g1", "g2"),
        errors=((":3:", "missing or empty field 'answer'"),),
    ),
    "jsonl-null-answer": Case(
        "d.jsonl",
        jsonl(good(1), good(2, answer=None)),
        2,
        ("g1",),
        errors=((":2:", "missing or empty field 'answer'"),),
    ),
    "jsonl-empty-answers": Case(  # blank is missing, as null is (issue 63)
        "d.jsonl",
        jsonl(good(1, answer=""), good(2, answer="  \n "), good(3)),
        2,
        ("g3",),
        errors=((":1:", "missing or empty field 'answer'"), (":2:", "missing or empty field 'answer'")),
    ),
    "jsonl-blank-contexts": Case(  # [""] was judged, and scored 1.0 (issue 63)
        "d.jsonl",
        jsonl(good(1, contexts=[""]), good(2, contexts=[CONTEXT, " "]), good(3, contexts=[" ", "\n"]), good(4)),
        2,
        ("g4",),
        errors=(
            (":1:", "missing or empty field 'contexts'"),
            (":2:", "field 'contexts[1]' is empty or only whitespace (1 of the row's 2 contexts)"),
            (":3:", "missing or empty field 'contexts'"),
        ),
    ),
    "jsonl-missing-contexts": Case(
        "d.jsonl",
        jsonl(good(1), {"id": "x", "answer": ANSWER}),
        2,
        ("g1",),
        errors=((":2:", "missing or empty field 'contexts'"),),
    ),
    "jsonl-null-fields": Case(
        "d.jsonl",
        jsonl(good(1, question=None, reference=None), good(2, contexts=None)),
        2,
        ("g1",),
        errors=((":2:", "missing or empty field 'contexts'"),),
    ),
    "jsonl-contexts-as-a-string": Case("d.jsonl", jsonl(good(1, contexts=CONTEXT)), 0, ("g1",)),
    "jsonl-contexts-not-strings": Case(
        "d.jsonl", jsonl(good(1), good(2, contexts=[1, 2])), 2, ("g1",), errors=((":2:", "field 'contexts[0]'"),)
    ),
    "jsonl-contexts-objects": Case(
        "d.jsonl",
        jsonl(good(1, contexts=[{"text": CONTEXT}]), good(2)),
        2,
        ("g2",),
        errors=((":1:", "field 'contexts[0]'"),),
    ),
    "jsonl-answer-a-number": Case(
        "d.jsonl", jsonl(good(1, answer=42), good(2)), 2, ("g2",), errors=((":1:", "field 'answer'"),)
    ),
    "jsonl-duplicate-id": Case(
        "d.jsonl",
        jsonl(good(1), good(2), good(1), good(3)),
        2,
        ("g1", "g2", "g3"),
        errors=((":3:", "id 'g1' already used on line 1"),),
    ),
    "jsonl-integer-and-whole-float-ids": Case(
        "d.jsonl", jsonl(good(1, id=17), good(2, id=18.0)), 0, judged=("17", "18")
    ),
    "jsonl-fractional-id": Case(
        "d.jsonl", jsonl(good(1), good(2, id=3.5)), 2, ("g1",), errors=((":2:", "field 'id'"),)
    ),
    "jsonl-boolean-id": Case(
        "d.jsonl", jsonl(good(1), good(2, id=True)), 2, ("g1",), errors=((":2:", "field 'id': True is a boolean"),)
    ),
    "jsonl-metadata-not-an-object": Case(
        "d.jsonl",
        jsonl(good(1, metadata="team a"), good(2)),
        2,
        ("g2",),
        errors=((":1:", "field 'metadata': expected a JSON object"),),
    ),
    "jsonl-answer-and-response": Case(
        "d.jsonl",
        jsonl(good(1), good(2, response="Lyon.")),
        2,
        ("g1",),
        errors=((":2:", "columns 'answer' and 'response' both give the answer"),),
    ),
    "jsonl-contexts-and-retrieved-contexts": Case(
        "d.jsonl",
        jsonl(good(1, retrieved_contexts=["other"]), good(2)),
        2,
        ("g2",),
        errors=((":1:", "'contexts' and 'retrieved_contexts'"),),
    ),
    "jsonl-a-key-twice": Case(
        "d.jsonl",
        jsonl(good(1), '{"id": "g2", "answer": "a.", "answer": "b.", "contexts": ["c"]}'),
        2,
        ("g1",),
        errors=((":2:", "the key 'answer' appears twice"),),
    ),
    "jsonl-deepeval-columns": Case("d.jsonl", jsonl(deepeval(1), deepeval(2)), 0, ("g1", "g2")),
    "jsonl-deepeval-ideal-context-only": Case(
        "d.jsonl",
        jsonl({"input": "q", "actual_output": ANSWER, "context": [CONTEXT]}),
        1,
        message=("needs 'contexts'", "--map context=contexts"),  # no row has retrieved contexts: the map is safe
    ),
    "jsonl-ragas-columns": Case("d.jsonl", jsonl(ragas(1), ragas(2)), 0, ("g1", "g2")),
    "jsonl-extra-columns-are-metadata": Case("d.jsonl", jsonl(good(1, topic="geo", score=0.5, tags=["a"])), 0, ("g1",)),
    # -- size limits: 200,000 characters a field, 1,000,000 a row (issue 33) -------------------
    "jsonl-1mb-context": Case(
        "d.jsonl",
        jsonl(good(1, contexts=[CONTEXT + " Filler." * 130_000]), good(2)),
        2,
        ("g2",),
        errors=((":1:", "field 'contexts[0]' is 1,040,053 characters, above the limit of 200,000 per field"),),
    ),
    "jsonl-context-at-the-field-limit": Case(
        "d.jsonl", jsonl(good(1, contexts=[CONTEXT, CONTEXT.ljust(200_000, "x")]), good(2)), 0, ("g1", "g2")
    ),
    "jsonl-question-above-the-field-limit": Case(
        "d.jsonl",
        jsonl(good(1), good(2, question="Where? " * 30_000)),
        2,
        ("g1",),
        errors=((":2:", "field 'question' is 210,000 characters, above the limit of 200,000 per field (raise it"),),
    ),
    "jsonl-row-above-the-row-limit": Case(
        "d.jsonl",
        jsonl(good(1, contexts=[CONTEXT + " Filler." * 18_000] * 7), good(2)),
        2,
        ("g2",),
        errors=((":1:", "characters of text, above the limit of 1,000,000 per row (largest: contexts 1,008,371"),),
    ),
    "jsonl-5000-sentence-answer": Case(
        "d.jsonl",
        jsonl(good(1, answer=" ".join(f"Paris has bridge number {i}." for i in range(5000)))),  # pysbd's worst case
        3,
        unscored=(("g1", "too_many_statements"),),  # above faithfulness.max_statements: no verdict asked
    ),
    "jsonl-10mb-line": Case(
        "d.jsonl",
        jsonl(good(1, metadata={"blob": "x" * 10_000_000}), good(2)),
        2,
        ("g2",),
        errors=((":1:", "field 'metadata.blob' is 10,000,000 characters"),),
    ),
    "jsonl-contexts-a-json-list-in-a-string": Case(
        "d.jsonl", jsonl(good(1, contexts=json.dumps([CONTEXT, "It has bridges."]))), 0, ("g1",)
    ),
    "jsonl-invalid-utf8": Case(
        "d.jsonl",
        jsonl(good(1)) + b'{"id": "x", "answer": "caf\xe9"}\n' + jsonl(good(3)),
        2,
        ("g1", "g3"),
        errors=((":2:", "not UTF-8"),),
    ),
    "jsonl-raw-nul-byte": Case(
        "d.jsonl",
        jsonl(good(1)) + b'{"id": "x", "answer": "a\x00b"}\n',
        2,
        ("g1",),
        errors=((":2:", "invalid JSON: Invalid control character"),),
    ),
    "jsonl-escaped-nul": Case("d.jsonl", jsonl(good(1, answer=NUL)), 0, ("g1",), same_text=(("g1", NUL),)),
    "jsonl-zero-width-characters": Case(
        "d.jsonl", jsonl(good(1, answer=ZERO_WIDTH)), 0, ("g1",), same_text=(("g1", ZERO_WIDTH),)
    ),
    "jsonl-right-to-left": Case("d.jsonl", jsonl(good(1, answer=RTL)), 0, ("g1",), same_text=(("g1", RTL),)),
    "jsonl-emoji": Case("d.jsonl", jsonl(good(1, answer=EMOJI)), 0, ("g1",), same_text=(("g1", EMOJI),)),
    # -- paths ------------------------------------------------------------------------------
    "path-is-a-directory": Case("adir.jsonl", None, 1, message=("adir.jsonl: is a directory",)),
    "path-is-a-directory-without-a-suffix": Case(
        "adir", None, 1, message=("adir: is a directory; give a data file (.jsonl, .ndjson, .json, .csv",)
    ),
    "path-unknown-suffix": Case("d.txt", jsonl(good(1)), 1, message=("cannot tell the format",)),
    # -- JSON array -------------------------------------------------------------------------
    "json-array": Case("d.json", json.dumps([good(1), good(2)], indent=2).encode(), 0, ("g1", "g2")),
    "json-array-with-bad-items": Case(
        "d.json",
        json.dumps([good(1), "text", good(3), good(1)]).encode(),
        2,
        ("g1", "g3"),
        errors=((": item 2:", "expected a JSON object"), (": item 4:", "already used on item 1")),
    ),
    "json-array-empty": Case("d.json", b"[]", 1, message=("d.json: no rows",)),
    "json-array-broken": Case("d.json", b'[\n {"id": "a"},\n {"id": \n]\n', 1, message=("d.json: not valid JSON",)),
    "json-array-with-bom": Case("d.json", b"\xef\xbb\xbf" + json.dumps([good(1)]).encode(), 0, ("g1",)),
    "json-file-of-json-lines": Case("d.json", jsonl(good(1), good(2)), 0, ("g1", "g2")),
    # -- CSV --------------------------------------------------------------------------------
    "csv-good": Case("d.csv", csv_bytes(crow(1), crow(2)), 0, ("g1", "g2")),
    # Issue 56: a spreadsheet in a European locale writes ';'; a TSV saved as .csv has tabs.
    "csv-semicolon-separated": Case(
        "d.csv", separated(b";", crow(1, answer="Paris, the capital, is in France."), crow(2)), 0, ("g1", "g2")
    ),
    "csv-tab-separated": Case("d.csv", separated(b"\t", crow(1), crow(2)), 0, ("g1", "g2")),
    "csv-semicolons-and-tabs-no-comma": Case(
        "d.csv",
        b"id;question\tanswer;contexts\n" + csv_bytes(crow(1), header=False),
        1,
        message=("d.csv: the header holds both ';' and tabs and no comma", "save the file as comma-separated"),
    ),
    "jsonl-raw-control-character-in-a-string": Case(
        "d.jsonl",
        jsonl(good(1), '{"id": "x", "answer": "a\x01b", "contexts": ["c"]}'),  # a raw control character
        2,
        ("g1",),
        errors=(
            (":2:", "invalid JSON: Invalid control character at column 25"),
        ),  # not "at at line", nor a line 1 of its own
    ),
    "jsonl-misspelt-answer-column-on-one-row": Case(
        "d.jsonl",
        jsonl(good(1), {"id": "x", "question": "Q?", "answr": ANSWER, "contexts": [CONTEXT]}),
        2,
        ("g1",),
        errors=(
            (
                ":2:",
                "missing or empty field 'answer' (the row has 'answr', kept as metadata; if it holds the answer: "
                "--map answr=answer on the command line, mapping={'answr': 'answer'} in Python)",
            ),
        ),
    ),
    "csv-empty-file": Case("d.csv", b"", 1, message=("d.csv: no rows",)),
    "csv-header-only": Case("d.csv", csv_bytes(), 1, message=("d.csv: no rows",)),
    "csv-bom-and-crlf": Case(
        "d.csv",
        b"\xef\xbb\xbf" + csv_bytes(crow(1), crow(2)).replace(b"\n", b"\r\n"),
        0,
        ("g1", "g2"),
    ),
    "csv-unclosed-quote-to-the-end": Case(
        "d.csv",
        csv_bytes(crow(1))
        + b'g2,Where?,"An answer with a stray quote,ctx\n'
        + csv_bytes(crow(3, contexts=CONTEXT), crow(4, contexts=CONTEXT), header=False),
        2,
        ("g1", "g3", "g4"),
        errors=((":3-5:", "unclosed quote in a cell opened on line 3; lines 4-5 were read into it"),),
    ),
    "csv-unclosed-quote-closed-by-a-later-quote": Case(
        "d.csv",
        csv_bytes(crow(1))
        + b'g2,Where?,"An answer with a stray quote,ctx\n'
        + csv_bytes(crow(3), crow(4), header=False),
        2,
        ("g1", "g3", "g4"),
        errors=((":3-4:", "unclosed quote in a cell opened on line 3; line 4 was read into it"),),
    ),
    "csv-json-list-with-a-raw-newline": Case(
        "d.csv", csv_bytes(crow(1, contexts=json.dumps([CONTEXT]).replace(". ", ".\n"))), 0, ("g1",)
    ),
    "csv-python-list-literal": Case("d.csv", csv_bytes(crow(1, contexts=str([CONTEXT, "x"]))), 0, ("g1",)),
    "csv-plain-text-context": Case("d.csv", csv_bytes(crow(1, contexts=CONTEXT)), 0, ("g1",)),
    "csv-multi-line-cell": Case(
        "d.csv", csv_bytes(crow(1, answer=ANSWER.replace(". ", ".\n")), crow(2)), 0, ("g1", "g2")
    ),
    "csv-too-many-cells": Case(
        "d.csv", csv_bytes(crow(1), [*crow(2), "extra"], crow(3)), 2, ("g1", "g3"), errors=((":3:", "5 cells"),)
    ),
    "csv-invalid-utf8": Case(
        "d.csv", csv_bytes(crow(1)) + b"x,q,caf\xe9,ctx\n", 2, ("g1",), errors=((":3:", "not UTF-8"),)
    ),
    "csv-duplicate-id": Case(
        "d.csv", csv_bytes(crow(1), crow(1), crow(2)), 2, ("g1", "g2"), errors=((":3:", "already used on line 2"),)
    ),
    "csv-empty-answer-cell": Case(
        "d.csv",
        csv_bytes(crow(1, answer=""), crow(2, answer="   "), crow(3)),
        2,
        ("g3",),
        errors=((":2:", "missing or empty field 'answer'"), (":3:", "missing or empty field 'answer'")),
    ),
    "csv-blank-contexts": Case(
        "d.csv",
        csv_bytes(
            crow(1, contexts='[""]'), crow(2, contexts=json.dumps(["", CONTEXT])), crow(3, contexts="  "), crow(4)
        ),
        2,
        ("g4",),
        errors=(
            (":2:", "missing or empty field 'contexts'"),
            (":3:", "field 'contexts[0]' is empty or only whitespace (1 of the row's 2 contexts)"),
            (":4:", "missing or empty field 'contexts'"),
        ),
    ),
    "csv-nul-character": Case("d.csv", csv_bytes(crow(1, answer=NUL)), 0, ("g1",), same_text=(("g1", NUL),)),
    "csv-1mb-context": Case(
        "d.csv",
        csv_bytes(crow(1), crow(2, contexts=CONTEXT + " Filler." * 130_000)),
        2,
        ("g1",),
        errors=((":3:", "longer than the CSV field limit"),),
    ),
    # -- Parquet ------------------------------------------------------------------------------
    "parquet-good": Case("d.parquet", parquet(pq_good(["g1", "g2"])), 0, ("g1", "g2")),
    "parquet-answer-of-the-wrong-type": Case(
        "d.parquet",
        parquet({**pq_good(["g1", "g2"]), "answer": [1, 2]}),
        3,
        errors=((": row 1:", "field 'answer'"), (": row 2:", "field 'answer'")),
    ),
    "parquet-contexts-of-the-wrong-type": Case(
        "d.parquet",
        parquet({**pq_good(["g1", "g2"]), "contexts": [[1], [2]]}),
        3,
        errors=((": row 1:", "field 'contexts[0]'"), (": row 2:", "field 'contexts[0]'")),
    ),
    "parquet-float-ids": Case("d.parquet", parquet(pq_good([1.0, 2.0])), 0, ("1", "2")),
    "parquet-answer-above-the-field-limit": Case(
        "d.parquet",
        parquet({**pq_good(["g1", "g2"]), "answer": [ANSWER, "Paris. " * 30_000]}),
        2,
        ("g1",),
        errors=((": row 2:", "field 'answer' is 210,000 characters, above the limit of 200,000 per field"),),
    ),
    "parquet-null-answer": Case(
        "d.parquet",
        parquet({**pq_good(["g1", "g2"]), "answer": [ANSWER, None]}),
        2,
        ("g1",),
        errors=((": row 2:", "missing or empty field 'answer'"),),
    ),
    "parquet-blank-answers-and-contexts": Case(
        "d.parquet",
        parquet(
            {
                **pq_good(["g1", "g2", "g3", "g4", "g5"]),
                "answer": [ANSWER, "", " \t", ANSWER, ANSWER],
                "contexts": [[CONTEXT], [CONTEXT], [CONTEXT], [""], [CONTEXT, ""]],
            }
        ),
        2,
        ("g1",),
        errors=(
            (": row 2:", "missing or empty field 'answer'"),
            (": row 3:", "missing or empty field 'answer'"),
            (": row 4:", "missing or empty field 'contexts'"),
            (": row 5:", "field 'contexts[1]' is empty or only whitespace"),
        ),
    ),
    "parquet-contexts-as-text": Case(
        "d.parquet",
        parquet({**pq_good(["g1", "g2"]), "contexts": [CONTEXT, json.dumps([CONTEXT])]}),
        0,
        ("g1", "g2"),
    ),
    "parquet-struct-metadata": Case(
        "d.parquet", parquet({**pq_good(["g1"]), "metadata": [{"team": "a", "n": 1}]}), 0, ("g1",)
    ),
    "parquet-duplicate-id": Case(
        "d.parquet",
        parquet(pq_good(["g1", "g2", "g1"])),
        2,
        ("g1", "g2"),
        errors=((": row 3:", "id 'g1' already used on row 1"),),
    ),
    "parquet-no-rows": Case("d.parquet", parquet({"id": [], "answer": []}), 1, message=("d.parquet: no rows",)),
    "parquet-not-parquet": Case("d.parquet", b"id,answer\na,b\n", 1, message=("not a readable Parquet file",)),
}


def _write(case: Case, path: Path) -> None:
    if case.content is None:
        path.mkdir()
    elif isinstance(case.content, bytes):
        path.write_bytes(case.content)
    else:
        case.content(path)


@pytest.mark.parametrize("case_id", list(CASES))
def test_bad_input(case_id: str, tmp_path: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[case_id]
    monkeypatch.chdir(tmp_path)
    data = tmp_path / case.name
    _write(case, data)
    store_path = tmp_path / "runs.sqlite"
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(data),
            "--judge",
            "openai:m",
            "--base-url",
            server.base_url,
            "-m",
            "faithfulness",
            "--set",
            "faithfulness.decomposer=sentences",
            "--no-cache",
            "--store",
            str(store_path),
        ],
    )
    output = result.output
    assert result.exit_code == case.code, output[-3000:]
    assert "Traceback" not in output
    if case.code == 1:
        for fragment in case.message:
            assert fragment in output, output[-3000:]
        if store_path.exists():
            with RunStore(store_path) as store:
                assert all(info.n_results == 0 for info in store.runs())
        return
    with RunStore(store_path) as store:
        run_id = store.latest()
        records = {record["id"]: record for record in store.records(run_id)}
        row_errors = [message for _, message in store.row_errors(run_id)]
    expected_ids = set(case.judged) | {i for i, _ in case.unscored}
    assert set(records) == expected_ids
    for record_id in case.judged:
        score = records[record_id]["scores"]["faithfulness"]
        assert score["value"] == 1.0, score.get("unscored_reason")
    for record_id, reason in case.unscored:
        score = records[record_id]["scores"]["faithfulness"]
        assert math.isnan(score["value"]) and score["unscored_reason"] == reason
    for record_id, text in case.same_text:
        assert records[record_id]["sample"]["answer"] == text
    assert len(row_errors) == len(case.errors), row_errors
    for where, what in case.errors:
        located = f"{case.name}{where} "
        stored = [m for m in row_errors if located in m]
        assert stored and what in stored[0], (located, what, row_errors)
        shown = [line for line in output.splitlines() if located in line]
        assert any(what in line for line in shown), (located, what, output[-3000:])


def test_a_long_answer_is_split_piece_by_piece_as_pysbd_splits_it_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """pysbd is superlinear (a 5,000-sentence answer took 80 s); pieces keep it linear, same sentences."""
    import asyncio
    import random

    from assay.grounding._decompose import SentenceDecomposer, is_checkable
    from assay.grounding._sentences import SEGMENT_CHARS, _segmenter

    parts = [
        "Dr. Smith met Mrs. Jones at 5 p.m. in the U.S. Army base.",
        "It was cold!",
        "Was it? Yes, e.g. The Times said so.",
        "They paid $3.50 for approx. Five items.",
        "Mr. Brown left at No. 5 Main St. today.",
        "The museum opened in 1889. Visitors came from 12 countries.",
    ]
    rng = random.Random(7)
    text = " ".join(rng.choice(parts) for _ in range(400))
    whole = [s.strip() for s in _segmenter("en").segment(text) if is_checkable(s.strip())]
    seen: list[int] = []
    segmenter = _segmenter("en")
    original = segmenter.segment

    def counting(piece: str) -> list[str]:
        seen.append(len(piece))
        return list(original(piece))

    monkeypatch.setattr(segmenter, "segment", counting)
    split = asyncio.run(SentenceDecomposer().decompose("", text, None))  # type: ignore[arg-type]
    assert list(split.statements) == whole
    assert len(seen) > 5 and max(seen) < 2 * SEGMENT_CHARS


def test_the_corpus_is_large_and_covers_every_format() -> None:
    assert len(CASES) >= 50
    suffixes = {Path(case.name).suffix for case in CASES.values()}
    assert {".jsonl", ".json", ".csv", ".parquet"} <= suffixes
    assert all(re.fullmatch(r"[a-z0-9-]+", name) for name in CASES)
