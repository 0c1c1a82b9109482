"""``assay retrieval`` (judge retrieved texts) and ``assay trec`` (trec_eval on TREC files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from assay._safety import printable
from assay._sqlite import storage_error
from assay.cli._console import EXIT_BAD_ROWS, EXIT_UNSCORED, EXIT_USAGE, err_console, out_console, stdout
from assay.cli._envvars import base_url_for
from assay.errors import AssayError, ConfigError, SampleError, did_you_mean
from assay.retrieval import (
    DEFAULT_MEASURES,
    LLMJudge,
    RelevanceJudge,
    RetrievalReport,
    SemanticJudge,
    TokenOverlapJudge,
    evaluate_retrieval,
    evaluate_trec,
    load_retrieval_dataset,
    read_qrels,
    read_run,
)
from assay.run._data import check_data_file

__all__ = ["retrieval", "trec"]


def _parse_ks(text: str) -> list[int]:
    try:
        ks = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise typer.BadParameter(f"--k must be comma-separated integers, got {text!r}") from None
    if not ks or min(ks) < 1:
        raise typer.BadParameter(f"--k must be positive integers, got {text!r}")
    return ks


def _build_judge(judge: str, threshold: float | None, model: str, base_url: str | None) -> RelevanceJudge:
    if judge == "token":
        return TokenOverlapJudge() if threshold is None else TokenOverlapJudge(threshold=threshold)
    if judge == "semantic":
        return SemanticJudge() if threshold is None else SemanticJudge(threshold=threshold)
    if judge == "llm":
        from assay.models import get_judge

        return LLMJudge(get_judge(model, base_url=base_url))
    raise typer.BadParameter(
        f"--judge must be token, semantic or llm, got {judge!r};{did_you_mean(judge, ('token', 'semantic', 'llm'))}"
    )


def _mapping(pairs: list[str]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        source, eq, target = pair.partition("=")
        if not eq or not source or not target:
            raise ConfigError(f"--map takes COLUMN=FIELD (e.g. gold=expected), got {pair!r}")
        mapping[source] = target
    return mapping


def _print_report(report: RetrievalReport, show_matches: bool) -> None:
    table = Table(title=f"assay retrieval · judge {printable(report.judge)}", title_justify="left")
    table.add_column("metric")
    table.add_column("mean", justify="right")
    for name in report.metrics:
        table.add_row(printable(name), f"{report.mean[name]:.4f}")
    out_console.print(table)
    if report.n_unjudged:
        reasons = ", ".join(f"{r}: {n}" for r, n in report.unjudged_by_reason.items())
        out_console.print(f"[yellow]{report.n_unjudged} retrieved results unjudged ({printable(reasons)})[/]")
    if not show_matches:
        return
    for q in report.queries:
        t = Table(title=f"{printable(q.id, breaks=False)}: {printable(q.query[:80])}", title_justify="left")
        t.add_column("rank", justify="right")
        t.add_column("status")
        t.add_column("expected #", justify="right")
        t.add_column("why")
        t.add_column("retrieved")
        for rec in q.matches:
            t.add_row(
                str(rec.rank),
                printable(rec.status),
                "" if rec.expected_index is None else str(rec.expected_index),
                printable(rec.reason[:60]),
                printable(rec.retrieved[:60]),
            )
        out_console.print(t)


def retrieval(
    ctx: typer.Context,
    data: Annotated[
        Path,
        typer.Argument(
            help="JSONL: id, query, expected, retrieved (or Ragas' user_input, retrieved_contexts, reference_contexts; "
            "DeepEval's input, retrieval_context, context)."
        ),
    ],
    judge: Annotated[str, typer.Option("--judge", "-j", help="token, semantic or llm.")] = "token",
    k: Annotated[str, typer.Option("--k", help="Comma-separated cut-offs.")] = "1,3,5,10",
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", "-m", help="precision, recall, hit_rate, mrr, ndcg, ap, ..."),
    ] = None,
    threshold: Annotated[float | None, typer.Option(help="Match threshold of the token or semantic judge.")] = None,
    model: Annotated[str, typer.Option("--model", help="Judge model for --judge llm (see assay model).")] = "local",
    level: Annotated[int, typer.Option("--level", "-l", help="Relevance threshold.")] = 1,
    matches: Annotated[bool, typer.Option(help="Print each query's matching table.")] = False,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the full report as JSON.")] = None,
    map_: Annotated[
        list[str] | None,
        typer.Option("--map", help="Rename an input column: COLUMN=FIELD (query, expected, retrieved; repeatable)."),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", envvar="OPENAI_BASE_URL", help="Server URL of --judge llm's model.")
    ] = None,
) -> None:
    """Judge retrieved texts against expected ones and report IR metrics at each k.

    A bad row is reported as file:line: what, and the other rows are judged. Exit codes:
    0 every row evaluated; 1 could not run; 2 evaluated, but some rows were invalid; 3
    nothing was evaluated (every row invalid).
    """
    ks = _parse_ks(k)
    bad: list[SampleError] = []
    try:
        check_data_file(data)  # a directory or a missing path is a message, not a traceback
        examples = load_retrieval_dataset(data, mapping=_mapping(map_ or []), errors=bad)
        llm = judge == "llm"
        unread = None if llm else f"--judge {judge} calls no server"
        base_url = base_url_for(ctx, [model] if llm else [], base_url, unread=unread, name="--judge llm --model")
        relevance_judge = _build_judge(judge, threshold, model, base_url)
        kwargs: dict[str, object] = {"k": ks, "level": level}
        if metric:
            kwargs["metrics"] = metric
        report = evaluate_retrieval(examples, relevance_judge, **kwargs) if examples else None
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    for error in bad[:20]:
        err_console.print(f"[red]invalid row[/red] {printable(str(error))}")
    if len(bad) > 20:
        err_console.print(f"  … and {len(bad) - 20} more")
    if report is None:
        err_console.print(f"[yellow]exit {EXIT_UNSCORED}[/yellow]: nothing was evaluated: every row was invalid")
        raise typer.Exit(EXIT_UNSCORED)
    _print_report(report, matches)
    if output is not None:
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(report.model_dump_json(indent=1), encoding="utf-8")
        except OSError as exc:
            err_console.print(f"[red]error:[/red] {printable(str(storage_error(exc, output, 'the report', 'write')))}")
            raise typer.Exit(EXIT_USAGE) from None
    if bad:
        rows = "1 row was" if len(bad) == 1 else f"{len(bad)} rows were"
        err_console.print(f"[yellow]exit {EXIT_BAD_ROWS}[/yellow]: {rows} invalid and not evaluated")
        raise typer.Exit(EXIT_BAD_ROWS)


def trec(
    qrels: Annotated[Path, typer.Argument(help="TREC qrels: QID ITER DOC REL.")],
    run: Annotated[Path, typer.Argument(help="TREC run: QID Q0 DOC RANK SCORE RUN.")],
    measure: Annotated[
        list[str] | None,
        typer.Option(
            "--measure",
            "-m",
            help="trec_eval measure or nickname, e.g. map, P.5,10, ndcg_cut.10, all_trec (default: official).",
        ),
    ] = None,
    per_query: Annotated[bool, typer.Option("--per-query", "-q", help="Also print each query's values.")] = False,
    level: Annotated[int, typer.Option("--level", "-l", help="Relevance threshold (trec_eval -l).")] = 1,
    complete: Annotated[
        bool,
        typer.Option("--complete", "-c", help="Score qrels queries missing from the run as 0."),
    ] = False,
    table: Annotated[bool, typer.Option("--table", help="Print a rich table instead.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead.")] = False,
) -> None:
    """Evaluate a TREC run against qrels, with trec_eval's semantics and output format.

    Without --measure, prints trec_eval's default (official) set; the plain output is
    byte-for-byte what trec_eval 9.x prints for the same options.
    """
    try:
        result = evaluate_trec(
            read_qrels(qrels),
            read_run(run),
            measure or DEFAULT_MEASURES,
            level=level,
            complete=complete,
        )
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    if as_json:
        payload: dict[str, object] = {"run": result.run_name, "aggregate": result.aggregate}
        if per_query:
            payload["per_query"] = {
                qid: {**values, **result.per_query_text.get(qid, {})} for qid, values in result.per_query.items()
            }
        typer.echo(json.dumps(payload, indent=1))
    elif table:
        t = Table(title=f"trec · {printable(result.run_name)}", title_justify="left")
        t.add_column("measure")
        t.add_column("query")
        t.add_column("value", justify="right")
        for line in result.lines(per_query=per_query):
            name, qid, value = line.split("\t")
            t.add_row(printable(name.strip()), printable(qid), value)
        out_console.print(t)
    else:  # trec_eval's bytes (tabs and newlines kept), nothing else
        stdout.write(printable(result.text(per_query=per_query), markup=False))
        stdout.flush()
    if result.run_only_queries:
        err_console.print(f"[yellow]{len(result.run_only_queries)} run queries have no qrels and were skipped[/yellow]")
