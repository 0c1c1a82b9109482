"""``assay trec`` prints exactly what trec_eval 9.x prints: byte-for-byte against its own outputs.

The ``out.test*`` files are trec_eval's regression outputs (usnistgov/trec_eval ``test/``,
commit in ``fixtures/trec_eval/SOURCE_COMMIT``); each case below is the command of
trec_eval's Makefile ``quicktest`` that produced it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from assay.errors import ConfigError
from assay.retrieval import DEFAULT_MEASURES, NICKNAMES, evaluate_trec, parse_measures, parse_run, read_qrels, read_run

FIXTURES = Path(__file__).parent.parent / "fixtures" / "trec_eval"

# (expected output, trec_eval command, qrels, run, measures, -q, -l, -c)
CASES = [
    ("out.test", "trec_eval qrels.test results.test", "qrels.test", "results.test", [], False, 1, False),
    (
        "out.test.a",
        "trec_eval -m all_trec qrels.test results.test",
        "qrels.test",
        "results.test",
        ["all_trec"],
        False,
        1,
        False,
    ),
    (
        "out.test.aq",
        "trec_eval -m all_trec -q qrels.test results.test",
        "qrels.test",
        "results.test",
        ["all_trec"],
        True,
        1,
        False,
    ),
    (
        "out.test.aqc",
        "trec_eval -m all_trec -q -c qrels.test results.trunc",
        "qrels.test",
        "results.trunc",
        ["all_trec"],
        True,
        1,
        True,
    ),
    (
        "out.test.aql",
        "trec_eval -m all_trec -mrelstring.20 -q -l2 qrels.rel_level results.test",
        "qrels.rel_level",
        "results.test",
        ["all_trec", "relstring.20"],
        True,
        2,
        False,
    ),
]


ARGS = ("expected", "command", "qrels", "run", "measures", "per_query", "level", "complete")


def _params() -> list[object]:
    return [pytest.param(*case, id=case[0]) for case in CASES]


@pytest.mark.parametrize(ARGS, _params())
def test_library_output_is_trec_evals_bytes(
    expected: str,
    command: str,
    qrels: str,
    run: str,
    measures: list[str],
    per_query: bool,
    level: int,
    complete: bool,
) -> None:
    kwargs = {"measures": measures} if measures else {}
    result = evaluate_trec(
        read_qrels(FIXTURES / qrels), read_run(FIXTURES / run), level=level, complete=complete, **kwargs
    )
    want = (FIXTURES / expected).read_bytes()
    got = result.text(per_query=per_query).encode()
    assert got == want, f"differs from `{command}`"


def _app() -> typer.Typer:
    from assay.cli._retrieval import trec

    app = typer.Typer()
    app.command("noop")(lambda: None)  # two commands, so typer keeps the "trec" subcommand name
    app.command("trec")(trec)
    return app


@pytest.mark.parametrize(ARGS, _params())
def test_cli_output_is_trec_evals_bytes(
    expected: str,
    command: str,
    qrels: str,
    run: str,
    measures: list[str],
    per_query: bool,
    level: int,
    complete: bool,
) -> None:
    # The same flags trec_eval takes; `diff` against trec_eval's output must be empty.
    args = ["trec", str(FIXTURES / qrels), str(FIXTURES / run)]
    for measure in measures:
        args += ["-m", measure]
    if per_query:
        args.append("-q")
    if complete:
        args.append("-c")
    args += ["-l", str(level)]
    result = CliRunner().invoke(_app(), args)
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == (FIXTURES / expected).read_bytes(), f"differs from `{command}`"


def test_default_is_trec_evals_official_set() -> None:
    assert DEFAULT_MEASURES == ("official",)
    names = [m.name for m in parse_measures(DEFAULT_MEASURES)]
    assert names[:10] == [
        "runid",
        "num_q",
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "map",
        "gm_map",
        "Rprec",
        "bpref",
        "recip_rank",
    ]
    assert names[10:21] == [f"iprec_at_recall_{i / 10:.2f}" for i in range(11)]
    assert names[21:] == [f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]
    assert set(NICKNAMES["all_trec"]) >= set(NICKNAMES["official"]) | set(NICKNAMES["set"])


def test_output_order_is_trec_evals_not_the_order_asked() -> None:
    asked = parse_measures(["ndcg_cut.20,5", "relstring", "P.10", "runid", "map"])
    assert [m.name for m in asked] == ["runid", "map", "P_10", "relstring", "ndcg_cut_5", "ndcg_cut_20"]


def test_explicit_parameters_replace_the_nickname_defaults() -> None:
    names = [m.name for m in parse_measures(["all_trec", "relstring.20", "P.7"])]
    assert "relstring_20" in names and "relstring" not in names
    assert [n for n in names if n.startswith("P_")] == ["P_7"]
    with pytest.raises(ConfigError, match="takes one parameter"):
        parse_measures(["relstring.5,10"])
    with pytest.raises(ConfigError, match="takes no parameters"):
        parse_measures(["map.5"])


def test_runid_is_the_last_lines_run_name_and_only_on_the_all_line() -> None:
    qrels = {"q1": {"d1": 1}}
    run = parse_run(["q1 Q0 d1 1 2.0 first", "q1 Q0 d2 2 1.0 second"])
    result = evaluate_trec(qrels, run, ["runid", "num_ret"])
    assert result.lines(per_query=True) == [
        "num_ret               \tq1\t2",
        "runid                 \tall\tsecond",
        "num_ret               \tall\t2",
    ]


def test_relstring_codes_follow_m_relstring_c() -> None:
    # levels: 12 -> '>', judged 0..9 as digits, not in qrels -> '-', negative qrels level -> '.'
    qrels = {"q": {"a": 12, "b": 0, "c": -1, "d": 3}}
    run = {"q": {"a": 5.0, "b": 4.0, "x": 3.0, "c": 2.0, "d": 1.0}}
    result = evaluate_trec(qrels, run, ["relstring"])
    assert result.per_query_text["q"] == {"relstring": ">0-.3"}
    # Printed quoted, per query only (trec_eval prints no relstring on the all line).
    assert result.lines(per_query=True) == ["relstring             \tq\t'>0-.3'"]
    assert result.lines() == []
    assert evaluate_trec(qrels, run, ["relstring.3"]).lines(per_query=True) == ["relstring_3           \tq\t'>0-'"]


def test_run_lines_may_carry_trailing_text_and_comments() -> None:
    # trec_eval skips anything after the run name, and lines starting with '#'.
    run = parse_run(["# a comment", "q Q0 d1 1 1.5 sys notes here", "  # indented comment", "q Q0 d2 2 0.5 sys"])
    assert run.scores == {"q": {"d1": 1.5, "d2": 0.5}} and run.name == "sys"
