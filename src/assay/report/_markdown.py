r"""A gate's Markdown job summary (``assay gate --summary-md``, GitHub's ``$GITHUB_STEP_SUMMARY``).

The summary lives with the HTML report, not in :mod:`assay.analysis`: analysis computes
numbers and never formats them for a reader; this module, like the report, turns a run
into a document and owns the rule that keeps the run's text from taking it over.

Safety: everything that comes from the evaluated data (sample ids, statements, the
judge's reasons, unscored details, metric names, the run id) is untrusted. Each such
text goes through :func:`md_text`, which

1. masks API-key-shaped tokens (:func:`assay._safety.redact_secrets`);
2. turns line breaks into spaces and drops every other control character, DEL, the C1
   controls and the bidi marks and overrides (a newline would end a table row; a bidi
   override reorders what a reader sees);
3. backslash-escapes every ASCII punctuation character, so no ``[link](...)``,
   ``![image](...)``, ``<html>``, ``&entity;``, ``|`` (a table cell), ``*``/``_``
   (emphasis) or backtick survives as syntax: CommonMark and GFM render ``\X`` as a
   literal X for any ASCII punctuation X;
4. puts a WORD JOINER (U+2060, invisible) after ``:``, ``@`` and ``#``, so that text
   GitHub scans after rendering (bare ``https://`` URLs, ``@mentions``, ``#123``
   references) does not become a link either.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from assay._safety import redact_secrets
from assay.analysis import GateResult, RepeatReport, SampleGate, combined_outcome, is_pass_fail
from assay.errors import counted
from assay.run._review import waiting_for_review

__all__ = ["gate_summary_markdown", "md_text"]

_BREAKS = re.compile("[\t\n\v\f\r\x85\u2028\u2029]+")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")
_JOIN_AFTER = re.compile(r"(\\[:@#])")
_WORD_JOINER = "\u2060"

_ICON = {"pass": "✅", "fail": "❌", "flaky": "⚠️", "unscored": "⚠️", "incomplete": "⚠️", "untrusted": "⚠️"}


def md_text(text: object, limit: int = 300) -> str:
    """Untrusted ``text`` as inert Markdown: one line, no control character, every ASCII punctuation escaped.

    Longer than ``limit`` characters (after cleaning), it is cut and ends with ``…``.
    See the module docstring for what is done and why.
    """
    clean = _CONTROL.sub("", _BREAKS.sub(" ", redact_secrets(str(text))))
    clean = " ".join(clean.split())
    if len(clean) > limit:
        clean = clean[: limit - 1].rstrip() + "…"
    return _JOIN_AFTER.sub(lambda m: m.group(1) + _WORD_JOINER, _PUNCT.sub(r"\\\1", clean))


def _num(value: float, digits: int = 3) -> str:
    return "—" if math.isnan(value) else f"{value:.{digits}f}"


def _ci(ci: tuple[float, float]) -> str:
    return "—" if any(math.isnan(x) for x in ci) else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _rule(result: GateResult) -> str:
    policy = result.policy
    unit = "every sample" if policy.gates_samples else "the run mean"
    rule = "no unsupported statement" if policy.strict else f"{md_text(result.metric)} ≥ {policy.threshold:g}"
    extra = f", at least {policy.min_statements} statements" if policy.min_statements else ""
    return f"{rule}{extra} on {unit}"


def _noise_line(result: GateResult) -> str:
    policy = result.policy
    if result.method == "repeats":
        passing = sum(result.repeat_passes)
        return (
            f"**Decided from {result.n_repeats} repeats** (the gate passes on {passing}/{len(result.repeat_passes)}"
            f" of them) · P(pass) {_num(result.p_pass, 4)} · flake probability "
            f"{_num(result.flake_probability, 4)} (max {policy.max_flake:g})"
        )
    if result.flip_rate_source == "no judge call":
        return "**No judge call:** the metric's verdicts are computed; a rerun gives the same outcome."
    return (
        f"**Single run: decided on what it observed.** Estimated P(pass) {_num(result.p_pass, 4)} and flip "
        f"probability {_num(result.reversal_probability, 4)} (binomial model, statement flip rate "
        f"{result.flip_rate:g}, {result.flip_rate_source}); re-run with `assay run --repeats 3` to measure it."
    )


def _partial_lines(results: Sequence[GateResult]) -> list[str]:
    """Why the run is partial, under the headline: the gate was refused for it, or allowed (``allow_partial``)."""
    reasons = list(dict.fromkeys(reason for r in results for reason in r.partial))
    if not reasons:
        return []
    if any(r.outcome == "incomplete" for r in results):
        title = "**Not gated: the run is not the whole evaluation.** A partial run never passes:"
    else:
        title = "**Gated a partial run (`--allow-partial`)**, on the rows it judged:"
    return [title, "", *(f"- {md_text(reason, 500)}" for reason in reasons), ""]


def _metrics_table(gated: Sequence[str], reports: Mapping[str, RepeatReport]) -> list[str]:
    lines = [
        "| metric | mean | 95% CI | samples | scored results | unscored results |",
        "|---|---:|---|---:|---:|---|",
    ]
    for name, report in reports.items():
        label = md_text(name) + (" (gated)" if name in gated else "")
        level = f"{report.confidence:.0%}"
        interval = _ci(report.ci) + ("" if level == "95%" else f" ({level})")
        reasons = ", ".join(f"{md_text(r)} {n}" for r, n in report.unscored_by_reason.items())
        unscored = f"{report.n_unscored}" + (f" ({reasons})" if reasons else "")
        mean = _num(report.mean) + (" (pass rate)" if is_pass_fail(report) else "")
        lines.append(
            f"| {label} | {mean} | {interval} | {len(report.samples)} | "
            f"{report.n_records - report.n_unscored} | {unscored} |"
        )
    return lines


def _worst(result: GateResult, limit: int) -> list[SampleGate]:
    scored = [s for s in result.samples if s.is_scored]
    ranked = sorted(scored, key=lambda s: (s.passed and s.stability == "stable_pass", s.score))
    return [s for s in ranked if not s.passed or s.sinkers or s.score < 1.0][:limit]


def _sample_row(sample: SampleGate, statements: int, binary: bool = False) -> str:
    shown = []
    for k in sample.sinkers[:statements]:
        times = f" ({k.failed}/{k.repeats} repeats)" if k.repeats > 1 else ""
        shown.append(f"✗ {md_text(k.subject, 200)} — *{md_text(k.reason, 200)}*{times}")
    if len(sample.sinkers) > statements:
        shown.append(f"… and {len(sample.sinkers) - statements} more")
    interval = "" if sample.interval is None else f" {_ci(sample.interval)}"
    outcome = "pass" if sample.passed else "fail"
    why = md_text(sample.why) if sample.why else "—"
    shown_score = ("pass" if sample.score >= 1.0 else "fail") if binary else _num(sample.score)
    return (
        f"| {sample.line} | {md_text(sample.id, 80)} | {shown_score} | {outcome} | "
        f"{_num(sample.p_pass, 2)}{interval} | {why} | {'<br>'.join(shown) or '—'} |"
    )


def gate_summary_markdown(
    result: GateResult | Sequence[GateResult],
    reports: Mapping[str, RepeatReport],
    *,
    run_id: str,
    notes: Sequence[str] = (),
    worst: int = 5,
    statements: int = 5,
    trust: Mapping[str, str] | None = None,
) -> str:
    """A Markdown job summary of a gate: verdict and rule, per-metric means with CIs, noise, worst samples.

    Args:
        result: The gate (:func:`assay.analysis.evaluate_gate`), or one gate per gated
            metric (``assay gate -m faithfulness=0.8 -m answer_relevancy=0.7``): the
            headline is then the worst outcome, and each gate gets its own section.
        reports: Every metric of the run (:func:`assay.analysis.analyze_repeats`, the same
            seed as the gate), for the means, their CIs and the unscored counts; the gated
            metric's report also gives the judge-noise figures.
        run_id: The run's id.
        notes: Extra notes from the caller (trusted text; it is escaped all the same).
        worst: How many of the worst samples to list per gate (the summary says how many
            more there are, and where the rest is).
        statements: How many failing statements to list per sample.
        trust: Per metric, how far its judge agrees with people (``TrustFigure.text()``),
            listed under the verdict.

    Returns:
        Markdown ending in a newline, meant to be appended to ``$GITHUB_STEP_SUMMARY``.
    """
    results = [result] if isinstance(result, GateResult) else list(result)
    if not results:
        return "### ⚠️ assay gate: UNSCORED\n\nNo metric was gated.\n"
    outcome = combined_outcome([r.outcome for r in results])
    lines: list[str] = []
    if len(results) > 1:
        lines += [
            f"### {_ICON[outcome]} assay gate: {outcome.upper()} ({len(results)} metrics"
            f"{', partial run' if any(r.gated_partial for r in results) else ''})",
            "",
            *_partial_lines(results),
            f"**Run** {md_text(run_id, 80)} · the verdict is the worst of its gates:",
            "",
            "| gate | outcome | observed | mean | 95% CI |",
            "|---|---|---|---:|---|",
            *(
                f"| {_rule(r)} | {_ICON[r.outcome]} {r.outcome} | {r.observed or 'nothing scored'} | "
                f"{_num(r.mean)} | {_ci(r.ci)} |"
                for r in results
            ),
            "",
            *_metrics_table([r.metric for r in results], reports),
            "",
        ]
    for r in results:
        lines += _gate_section(r, reports, run_id=run_id, worst=worst, statements=statements, own=len(results) > 1)
    if trust:
        lines += ["**How far each judge agrees with people:**", ""]
        lines += [f"- {md_text(name)}: {md_text(text, 500)}" for name, text in trust.items()]
        lines.append("")
    # As 'assay gate' prints them: what bears on the verdict in the open, how it was computed folded.
    caveats = list(dict.fromkeys([note for r in results for note in r.caveats] + list(notes)))
    method = [note for note in dict.fromkeys(note for r in results for note in r.notes) if note not in caveats]
    if caveats:
        lines += [*(f"- {md_text(note, 500)}" for note in caveats), ""]
    if method:
        lines += [
            "<details><summary>How the verdict was decided</summary>",
            "",
            *(f"- {md_text(note, 500)}" for note in method),
            "",
            "</details>",
            "",
        ]
    return "\n".join(lines) + "\n"


def _gate_section(
    result: GateResult,
    reports: Mapping[str, RepeatReport],
    *,
    run_id: str,
    worst: int,
    statements: int,
    own: bool,
) -> list[str]:
    """One gate: its verdict and rule, how it was decided, its unscored share and its worst samples."""
    policy = result.policy
    partial = " (partial run)" if result.gated_partial else ""
    heading = (
        f"#### {_ICON[result.outcome]} {md_text(result.metric)}: {result.outcome.upper()}{partial}"
        if own
        else f"### {_ICON[result.outcome]} assay gate: {result.outcome.upper()}{partial}"
    )
    gated = reports.get(result.metric)
    binary = gated is not None and is_pass_fail(gated)
    if result.nothing_scored:  # no outcome was observed and there is no noise to estimate: only reasons
        reasons = ", ".join(f"{md_text(r)} {n}" for r, n in (gated.unscored_by_reason if gated else {}).items())
        n_unscored = gated.n_unscored if gated is not None else 0
        n_results = gated.n_records if gated is not None else 0
        decided = [
            f"**Rule:** {_rule(result)} · **run** {md_text(run_id, 80)} · **nothing scored:** {n_unscored} of "
            f"{counted(n_results, 'result')} unscored ({reasons or 'no reason recorded'})",
            "",
        ]
    else:
        decided = [
            f"**Rule:** {_rule(result)} · **run** {md_text(run_id, 80)} · **observed** {result.observed} · "
            f"**{'pass rate' if binary else 'mean'}** {_num(result.mean)} {_ci(result.ci)}",
            "",
            _noise_line(result),
            "",
        ]
    lines = [heading, "", *([] if own else _partial_lines([result])), *decided]
    n_pending, n_waiting = gated.pending if gated is not None else (0, 0)
    if n_pending:
        lines += [
            f"**{waiting_for_review(n_pending)}** in {counted(n_waiting, 'result')} (unscored "
            f"needs\\_review: not in the mean until a person answers them): answer them with assay review "
            f"{md_text(run_id, 80)}",
            "",
        ]
    if result.untrusted is not None:
        said = "Not gated" if result.outcome == "untrusted" else "Gated anyway (`--allow-untrusted-judge`)"
        lines += [f"**{said}:** {md_text(result.untrusted, 500)}", ""]
    n_unscored = gated.n_unscored if gated is not None else 0
    n_results = gated.n_records if gated is not None else 0
    share = "—" if math.isnan(result.unscored_share) else f"{result.unscored_share:.3f}"
    lines += [
        f"**Unscored results** (gated metric): {n_unscored}/{n_results} = {share} (max {policy.max_unscored:g})"
        + (" — **above the limit**" if result.outcome == "unscored" else ""),
        "",
    ]
    if not own:
        lines += [*_metrics_table([result.metric], reports), ""]
    if gated is not None and result.method == "repeats":
        lines += [
            f"**Judge noise from repeats:** statement flip rate {_num(gated.flip_rate, 4)} over "
            f"{gated.n_statements_compared} matched statements · **decomposition:** statement sets differed in "
            f"{gated.n_sets_changed}/{counted(gated.n_compared, 'sample')} · scores moved in {gated.n_scores_moved} "
            f"({gated.n_moved_without_flip} with no verdict flip)",
            "",
        ]
    candidates = _worst(result, len(result.samples))
    rows = candidates[:worst]
    if rows:
        title = "Worst samples" if not own else f"Worst samples of {md_text(result.metric)}"
        lines += [
            f"#### {title}",
            "",
            "| line | id | score | observed | P(pass) | why | failing statements (judge's reason) |",
            "|---:|---|---:|---|---|---|---|",
            *(_sample_row(s, statements, binary and result.n_repeats == 1) for s in rows),
            "",
        ]
        if len(candidates) > len(rows):
            lines += [
                f"Showing {len(rows)} of {counted(len(candidates), 'sample')} that failed or lost a statement; "
                "every one is in "
                f"`assay gate {md_text(run_id, 80)}` and in the HTML report (`assay report {md_text(run_id, 80)}`).",
                "",
            ]
    unscored_samples = result.unscored_samples
    if unscored_samples:
        listed = ", ".join(f"line {s.line} {md_text(s.id, 80)}" for s in unscored_samples[:worst])
        more = (
            f" and {len(unscored_samples) - worst} more (all of them: `assay runs show {md_text(run_id, 80)}`)"
            if len(unscored_samples) > worst
            else ""
        )
        lines += [f"**Unscored in every repeat:** {listed}{more}", ""]
    return lines
