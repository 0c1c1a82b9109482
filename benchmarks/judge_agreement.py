"""How often does the judge agree with people? Balanced accuracy on human-labelled grounding data.

Runs the product's own statement verifier (``assay.grounding._verify.StatementVerifier``,
what faithfulness uses per statement) over fixed, seeded, stratified samples of the dev
sets in ../shared/data/grounding/:

- WiCE dev: claim vs. its oracle chunks (packed into chunks of --chunk-chars, max over chunks);
  ``wicefull``: the same claims vs. the whole cited article (5-12k characters);
- BEGIN dev: dialogue response vs. its knowledge snippet;
- SummEdits dev: summary vs. document (chunked at --chunk-chars, max over chunks).

Variants (``--variants``, comma-separated):

- ``product`` (the default): the faithfulness metric's own verifier with every setting as
  it ships (chunks, evidence window, whole-context limit, shared window, detail checks,
  guard), reasons left out; the same as the ``ev`` variant spelled with those settings;
- ``p1-v1``, ``p1-v2``: P(supported) read from the logits with verdict prompt v1 / v2;
  a ``-c5000`` suffix changes the chunk size for that variant;
- ``atoms-v2``: the claim is first decomposed into atomic statements (the faithfulness
  decomposer); the item's P(supported) is the lowest of its atoms';
- ``gen-v1``, ``gen-v2``: the generated-JSON verdict under the grammar (the judge as the
  foundation issue first shipped it);
- ``ev-v2`` (``-eCHARS`` evidence budget, ``-wCHARS`` whole-context limit, ``-d0`` no
  detail checks, ``-g0`` no judge-addressed guard, ``-s`` one window shared by the
  claims that share a context): the issue-15 verifier, evidence
  windows with detail checks; its entries keep the judge's own P, the statement's
  evidence and flags, for ``fit_detail_combiner.py`` (``--export``);
- ``mean(p1-v1+p1-v2)``: self-consistency over prompt variants, the mean of the two
  probabilities. Computed from the cached members, no extra judge calls.

Every item's result is cached in benchmarks/.cache/ by judge, seed, set, variant and item
id (the variant with every setting resolved: ``ev-v2`` is cached as
``ev-v2-c2000-e1200-w2000``, ``p1-v2 --chunk-chars 3000`` as ``p1-v2-c3000``), so a
larger ``--n`` only judges what is new and a cut-off run keeps what it measured.
Items are judged grouped by context, so the judge reuses a context's KV cache the way
faithfulness does.

Per variant and set it reports balanced accuracy with a seeded bootstrap 95% CI and the
confusion counts:

- at the argmax (threshold 0.5), all items (the plain dev figure);
- at a threshold chosen by grouped cross-validation (``grouped_cv.py``): the items are
  dealt into folds with every item of one source document in one fold (SummEdits: the
  document; BEGIN: the knowledge snippet and dialogue turn; WiCE: the article), the
  threshold is chosen on the other folds and scored on each fold in turn. The same
  threshold chosen on all items and scored on them is printed beside it: the gap between
  the two is what choosing on the scored items adds. (Until issue 24 the threshold was
  chosen on a random half, which put summaries of one document on both sides.)

``--cv`` reports, from ``hidden_states.py``'s cache (the verdict-position hidden states
and today's verifier's P, veto and flags, read once per item), today's verifier and every
variant of issue 24 side by side, plain and grouped-CV, per set: P alone, P + the detail
veto (today's default), the threshold and the veto chosen by CV, and linear probes on the
hidden state (layer, regularisation and threshold chosen inside each training part),
alone, with P, and with the veto.

``--speed`` measures statements per second on a quiet machine in the shape faithfulness
runs: several statements (SummEdits summaries) against one document under 2,000
characters, and one response per fresh BEGIN snippet.

    python benchmarks/judge_agreement.py                       # 60 items a set, p1-v1 and p1-v2
    python benchmarks/judge_agreement.py --n 120 --variants p1-v2,atoms-v2 --sets wice
    python benchmarks/judge_agreement.py --speed
    python benchmarks/judge_agreement.py --cv --json cv.json   # issue 24's table, no model needed
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _lib.devsets import DATA, SETS, contexts_of, load
from _lib.grouped_cv import THRESHOLDS, Data, Probe, Threshold, document_groups, evaluate, folds_of, load_hidden, table
from _lib.judging import CACHE, PRODUCT_KEY, balanced_accuracy, bootstrap_ci, ev_key, model_slug

from assay.grounding._decompose import LLMDecomposer
from assay.grounding._verify import STATEMENT_PROMPT, STATEMENT_PROMPT_V1, StatementVerifier
from assay.models import JudgeModel, get_judge

PROMPTS = {"1": STATEMENT_PROMPT_V1, "2": STATEMENT_PROMPT}
VARIANT = re.compile(
    r"^(?P<kind>p1|gen|atoms|ev)-v(?P<prompt>[12])(?:-c(?P<chars>\d+))?(?:-e(?P<evidence>\d+))?"
    r"(?:-w(?P<whole>\d+))?(?P<nodetails>-d0)?(?P<noguard>-g0)?(?P<shared>-s)?$"
)
ENSEMBLE = re.compile(r"^mean\((?P<members>[^)]+)\)$")


class Variant:
    """One way of asking the judge; ``judge_row`` returns the cache entry for one item."""

    def __init__(self, key: str, default_chars: int) -> None:
        if key == "product":
            key = PRODUCT_KEY
        match = VARIANT.match(key)
        if match is None:
            raise SystemExit(f"unknown variant {key!r}: expected product, p1-vN, gen-vN, atoms-vN or ev-vN")
        self.kind = match["kind"]
        chars = int(match["chars"] or default_chars)
        method = "generate" if self.kind == "gen" else "threshold"
        if self.kind == "ev":
            # The issue-15 verifier: evidence windows, detail checks, the judge-addressed guard.
            self.verifier = StatementVerifier(
                method="threshold",
                prompt=PROMPTS[match["prompt"]],
                reasons="none",
                chunk_chars=chars,
                evidence_chars=int(match["evidence"] or 1200),
                whole_chars=int(match["whole"] or 2000),
                details=not match["nodetails"],
                guard=not match["noguard"],
                shared_evidence=bool(match["shared"]),
            )
            self.key = ev_key(self.verifier)
        else:
            # As the verifier was before issue 15: whole contexts in chunks, max over chunks.
            self.verifier = StatementVerifier(
                method=method,
                prompt=PROMPTS[match["prompt"]],
                reasons="none",
                chunk_chars=chars,
                evidence_chars=None,
                verbatim=False,
                details=False,
                guard=False,
            )
            self.key = f"{self.kind}-v{self.verifier.prompt.version}-c{chars}"
        # The cache is keyed by every setting resolved (a chunk size from --chunk-chars
        # included), so an entry is never read back for a variant judged another way.
        self.decomposer = LLMDecomposer()

    async def judge_rows(self, judge: JudgeModel, name: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Cache entries for items that share one context, judged together as faithfulness would.

        The verifier goes chunk by chunk with every claim, so each chunk is evaluated once
        and every further claim costs only its own tokens; seconds are shared out evenly.
        """
        started = time.perf_counter()
        claims = [[str(row["claim"])] for row in rows]
        calls = [0] * len(rows)
        if self.kind == "atoms":
            for i, row in enumerate(rows):
                split = await self.decomposer.decompose("", str(row["claim"]), judge)
                calls[i] += len(split.calls)
                if split.statements:
                    claims[i] = list(split.statements)
        flat = [claim for group in claims for claim in group]
        outcomes = await self.verifier.verify(contexts_of(name, rows[0]), flat, judge)
        seconds = (time.perf_counter() - started) / len(rows)
        entries: list[dict[str, Any]] = []
        for i, group in enumerate(claims):
            mine, outcomes = outcomes[: len(group)], outcomes[len(group) :]
            calls_i = calls[i] + sum(len(o.calls) for o in mine)
            failed = next((o for o in mine if o.verdict is None), None)
            if failed is not None:
                why = failed.failure.reason.value if failed.failure else "undecided"
                entries.append({"p": None, "v": None, "s": seconds, "calls": calls_i, "why": why})
                continue
            # A copied sentence is supported without a judge call (no P): count it as P = 1.
            probabilities = [
                1.0 if o.verdict and (o.verdict.details or {}).get("verbatim") else o.probability for o in mine
            ]
            entry: dict[str, Any] = {
                "v": min(int(o.verdict.value) for o in mine if o.verdict is not None),
                "p": None if None in probabilities else min(p for p in probabilities if p is not None),
                "s": seconds,
                "calls": calls_i,
                "statements": len(group),
            }
            if self.kind == "ev":
                # What the detail combiner is fitted on: the judge's own P and what it read.
                raw = [o.probability for o in mine]
                entry["p_raw"] = None if None in raw else min(p for p in raw if p is not None)
                # A verdict the detail checks (or the guard) decided is 0 whatever P was.
                if any(o.verdict and (o.verdict.flags or (o.verdict.details or {}).get("vetoed_by")) for o in mine):
                    entry["p"] = 0.0
                entry["evidence"] = [" ".join(o.evidence.blocks()) if o.evidence else None for o in mine]
                entry["flags"] = sorted({f for o in mine if o.verdict for f in o.verdict.flags})
            if self.kind == "atoms":
                entry["atoms"] = group
            entries.append(entry)
        return entries


async def score_items(
    judge: JudgeModel,
    name: str,
    rows: list[dict[str, Any]],
    variant: Variant,
    cache: dict[str, Any],
    save: Callable[[], None],
) -> None:
    """Fill cache[set/variant][item id], judging the items that share a context together."""
    done = cache.setdefault(f"{name}/{variant.key}", {})
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["id"] not in done:
            groups.setdefault("\x00".join(contexts_of(name, row)), []).append(row)
    todo = sum(len(g) for g in groups.values())
    finished = 0
    last = time.monotonic()
    for group in groups.values():
        for row, entry in zip(group, await variant.judge_rows(judge, name, group), strict=True):
            done[row["id"]] = entry
        finished += len(group)
        print(f"\r{name}/{variant.key}: {finished}/{todo}", end="", file=sys.stderr, flush=True)
        if time.monotonic() - last > 30:
            save()  # a long run that is cut off keeps what it measured
            last = time.monotonic()
    save()
    if todo:
        print(file=sys.stderr)


def report_line(label: str, labels: np.ndarray, preds: np.ndarray, seed: int) -> dict[str, Any]:
    tp = int(((labels == 1) & (preds == 1)).sum())
    fn = int(((labels == 1) & (preds == 0)).sum())
    fp = int(((labels == 0) & (preds == 1)).sum())
    tn = int(((labels == 0) & (preds == 0)).sum())
    ba = balanced_accuracy(labels, preds)
    lo, hi = bootstrap_ci(labels, preds, seed)
    counts = f"TP {tp:3d} FN {fn:3d} FP {fp:3d} TN {tn:3d}"
    tnr = tn / (tn + fp) if tn + fp else float("nan")
    tpr = tp / (tp + fn) if tp + fn else float("nan")
    print(f"  {label:38s} n={len(labels):4d}  BA {ba:.3f} [{lo:.3f}-{hi:.3f}]  TNR {tnr:.3f}  TPR {tpr:.3f}  {counts}")
    return {
        "label": label,
        "n": len(labels),
        "balanced_accuracy": ba,
        "ci95": [lo, hi],
        "tp": tp,
        "fn": fn,
        "fp": fp,
        "tn": tn,
        "tnr": tnr,
        "tpr": tpr,
    }


def entry_probability(entry: dict[str, Any]) -> float | None:
    if entry.get("p") is not None:
        return float(entry["p"])
    return None if entry.get("v") is None else float(entry["v"])


def report(
    key: str, sets: list[str], rows: dict[str, list[dict[str, Any]]], cache: dict[str, Any], seed: int
) -> list[dict[str, Any]]:
    """Balanced accuracy of one variant (or ensemble) per set: argmax, tuned threshold held out."""
    members = ENSEMBLE.match(key)
    parts = members["members"].split("+") if members else [key]
    print(f"\n== {key} ==")
    scored: list[tuple[str, str, int, float]] = []  # set, id, label, p
    unscored: dict[str, int] = {}
    for name in sets:
        for row in rows[name]:
            entries = [cache.get(f"{name}/{part}", {}).get(row["id"]) for part in parts]
            if any(e is None for e in entries):
                continue
            probabilities = [entry_probability(e) for e in entries if e is not None]
            if any(p is None for p in probabilities):
                unscored[name] = unscored.get(name, 0) + 1
                continue
            scored.append(
                (name, row["id"], int(row["label"]), float(np.mean([p for p in probabilities if p is not None])))
            )
    if not scored:
        print("  (nothing judged yet)")
        return []
    graded = len({p for *_, p in scored} - {0.0, 1.0}) > 0
    cv = None
    if graded:
        # One threshold for all sets, chosen by grouped CV (folds of source documents).
        group_of: dict[str, str] = {}
        for name in sets:
            group_of.update({i: f"{name}/{g}" for i, g in document_groups(name, rows[name]).items()})
        data = Data(
            np.array([n for n, *_ in scored]),
            [i for _, i, *_ in scored],
            np.array([y for *_, y, _ in scored], dtype=np.int64),
            [group_of[i] for _, i, *_ in scored],
            np.array([p for *_, p in scored], dtype=np.float64),
            np.zeros(len(scored), dtype=bool),
            np.full(len(scored), -1, dtype=np.int64),
        )
        try:
            cv = evaluate(Threshold("t by CV", THRESHOLDS), data, folds_of(data, 5, seed), seed)
        except SystemExit as exc:  # too few documents for five folds
            print(f"  (no grouped CV: {exc})")
        if cv is not None:
            print(f"  threshold by grouped CV over {', '.join(sets)}: {'; '.join(cv.chosen)}")
    out: list[dict[str, Any]] = []
    for name in sets:
        mine = [x for x in scored if x[0] == name]
        if not mine:
            continue
        entries = [cache[f"{name}/{parts[0]}"][i] for _, i, *_ in mine]
        seconds = sum(e["s"] for e in entries)
        statements = sum(e.get("statements", 1) for e in entries)
        print(
            f" {name}: {len(mine)} of {len(rows[name])} judged, unscored {unscored.get(name, 0)}; "
            f"{statements / seconds:.2f} statements/s as run (see --speed for clean figures)"
        )
        labels = np.array([y for _, _, y, _ in mine])
        base = {"variant": key, "set": name}
        argmax = np.array([int(p >= 0.5) for *_, p in mine])
        out.append({**base, "threshold": 0.5, **report_line("threshold 0.50, all items", labels, argmax, seed)})
        if cv is not None:
            mask = np.array([n == name for n, *_ in scored])
            line = report_line("threshold chosen on all items", labels, cv.plain[mask], seed)
            out.append({**base, "threshold": "all items", "split": "plain", **line})
            line = report_line("threshold by grouped CV (out of fold)", labels, cv.cv[mask], seed)
            out.append({**base, "threshold": "grouped CV", "split": "grouped-cv", **line})
    return out


def cv_report(judge: JudgeModel, sets: list[str], seed: int, folds: int, layers: list[str]) -> list[dict[str, Any]]:
    """Issue 24's table: today's verifier and its variants, plain and grouped-CV, from hidden_states.py's cache."""
    folder = CACHE / f"hidden-{model_slug(judge)}-s{seed}"
    if not (folder / "about.json").exists():
        raise SystemExit(f"no hidden states in {folder}: run benchmarks/hidden_states.py first")
    data = load_hidden(folder, [s for s in sets if s != "wicefull"])
    if not len(data):
        raise SystemExit(f"no items in {folder}")
    wanted = layers or [n for n in data.layers if n not in ("l_out-0", "l_out-2")]
    shared: dict[Any, Any] = {}
    variants = [
        Threshold("today: P >= 0.5, veto", vetoes=(True,)),
        Threshold("P >= 0.5, no veto"),
        Threshold("P, threshold by CV", THRESHOLDS),
        Threshold("P + veto, threshold by CV", THRESHOLDS, (True,)),
        Threshold("P, veto and threshold by CV", THRESHOLDS, (True, False)),
        Probe("probe, last layer", ["result_norm"], shared=shared),
        Probe("probe, layer by CV", wanted, shared=shared),
        Probe("probe + P", wanted, with_p=True, shared=shared),
        Probe("probe + veto", wanted, veto=True, shared=shared),
        Probe("probe + P + veto", wanted, with_p=True, veto=True, shared=shared),
    ]
    fold = folds_of(data, folds, seed)
    print(
        f"judge {judge.model_id}; items from {folder.name}: "
        + ", ".join(f"{s} {int((data.sets == s).sum())}" for s in dict.fromkeys(data.sets.tolist()))
        + f"; {folds} folds grouped by source document (seed {seed}); probe layers {', '.join(wanted)}"
    )
    results = []
    for variant in variants:
        started = time.perf_counter()
        results.append(evaluate(variant, data, fold, seed))
        print(f"  {variant.name}: {'; '.join(results[-1].chosen)} ({time.perf_counter() - started:.0f} s)")
    return table(results, data, seed, baseline=variants[0].name)


async def speed(judge: JudgeModel, documents: int, per_document: int) -> None:
    """Statements per second, warm model, on contexts under 2,000 characters."""
    verifier = StatementVerifier(method="auto", reasons="none")
    summedits = [json.loads(line) for line in (DATA / SETS["summedits"]).open()]
    by_doc: dict[str, list[str]] = {}
    for row in summedits:
        if len(row["context"]) < 2000:
            by_doc.setdefault(row["context"], []).append(row["claim"])
    begin = [json.loads(line) for line in (DATA / SETS["begin"]).open()]
    snippets = list({r["context"]: r for r in begin if len(r["context"]) < 2000}.values())
    random.Random(0).shuffle(snippets)
    await verifier.verify(["Warm-up context."], ["Warm-up statement."], judge)  # model load and the prompt prefix
    total_s, total_n, first_s, rest_s, rest_n = 0.0, 0, 0.0, 0.0, 0
    for document, claims in list(by_doc.items())[:documents]:
        claims = claims[:per_document]
        started = time.perf_counter()
        outcomes = await verifier.verify([document], claims[:1], judge)
        first = time.perf_counter() - started
        outcomes += await verifier.verify([document], claims[1:], judge)
        elapsed = time.perf_counter() - started
        total_s, total_n = total_s + elapsed, total_n + len(outcomes)
        first_s, rest_s, rest_n = first_s + first, rest_s + elapsed - first, rest_n + len(claims) - 1
        print(
            f"  document of {len(document):4d} chars: {len(claims)} statements in {elapsed:5.1f} s "
            f"(first {first:4.1f} s, then {(elapsed - first) / max(1, len(claims) - 1):4.2f} s each)"
        )
    print(
        f"SummEdits, {per_document} statements per document under 2,000 chars: {total_n / total_s:.2f} statements/s "
        f"(a fresh document {first_s / documents:.1f} s, each further statement {rest_s / max(1, rest_n):.2f} s)"
    )
    started = time.perf_counter()
    chars = 0
    for row in snippets[:documents]:
        await verifier.verify([row["context"]], [row["claim"]], judge)
        chars += len(row["context"])
    elapsed = time.perf_counter() - started
    print(
        f"BEGIN, one statement per fresh snippet (mean {chars / documents:.0f} chars): "
        f"{documents / elapsed:.2f} statements/s"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", default="local")
    parser.add_argument("--n", type=int, default=60, help="items per set (seeded, stratified)")
    parser.add_argument("--sets", default="begin,wice,summedits")
    parser.add_argument("--variants", default="product", help="comma-separated; see the module docstring")
    parser.add_argument("--report", default="", help="extra variants or ensembles to report from the cache only")
    parser.add_argument("--chunk-chars", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--threads", type=int, default=0, help="a local judge's CPU threads (default: all cores; 1 on a shared machine)"
    )
    parser.add_argument(
        "--context-chars",
        default="",
        help="LOW-HIGH: only items whose contexts total that many characters (e.g. 2001-3000: where a chunk size acts)",
    )
    parser.add_argument("--speed", action="store_true", help="measure statements per second instead")
    parser.add_argument("--documents", type=int, default=8, help="--speed: documents (and BEGIN snippets)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--cv",
        action="store_true",
        help="issue 24's grouped-CV table from hidden_states.py's cache (today's verifier, thresholds, veto, probes)",
    )
    parser.add_argument("--folds", type=int, default=5, help="--cv: folds grouped by source document")
    parser.add_argument("--probe-layers", default="", help="--cv: layers a probe may choose from (default: l_out-4 on)")
    parser.add_argument(
        "--same-items-as",
        default="",
        help="judge only the items that variant KEY already judged (before/after on the same items)",
    )
    parser.add_argument(
        "--export",
        type=Path,
        help="write ev-*/p1-* items as JSONL {set, id, label, p, statement, evidence} (fit_detail_combiner)",
    )
    parser.add_argument(
        "--first", type=int, default=0, help="only the first K of those items per set (a costly variant on a subset)"
    )
    args = parser.parse_args()
    judge = get_judge(args.judge)
    if args.threads:
        if not hasattr(judge, "n_threads"):
            raise SystemExit(f"--threads: {judge.model_id} is not a local judge")
        judge.n_threads = args.threads  # as the default (the machine's cores), not part of its identity
    if args.cv:
        layers = [x.strip() for x in args.probe_layers.split(",") if x.strip()]
        rows_out = cv_report(judge, [s.strip() for s in args.sets.split(",")], args.seed, args.folds, layers)
        if args.json:
            args.json.write_text(json.dumps({"judge": judge.model_id, "seed": args.seed, "cv": rows_out}, indent=2))
        return
    if args.speed:
        await speed(judge, args.documents, per_document=6)
        return
    sets = [s.strip() for s in args.sets.split(",")]
    chars = None
    if args.context_chars:
        low, _, high = args.context_chars.partition("-")
        chars = (int(low or 0), int(high or 10**9))
    rows = {name: load(name, args.n, args.seed, chars) for name in sets}
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"agreement-{model_slug(judge)}-s{args.seed}.json"
    cache: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}

    def save() -> None:
        # Re-read and merge: another run of this script may be filling the same file.
        # Entries are only added to the dicts already in ``cache`` (callers hold references to them).
        on_disk: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        for key, entries in on_disk.items():
            mine = cache.setdefault(key, {})
            for item, entry in entries.items():
                mine.setdefault(item, entry)
        path.write_text(json.dumps(cache))

    if args.same_items_as:
        for name in sets:
            judged = cache.get(f"{name}/{args.same_items_as}", {})
            rows[name] = [row for row in rows[name] if row["id"] in judged]
    if args.first:
        rows = {name: items[: args.first] for name, items in rows.items()}

    variants = [Variant(v.strip(), args.chunk_chars) for v in args.variants.split(",") if v.strip()]
    print(f"judge {judge.model_id}; {args.n} items per set (seed {args.seed}); {', '.join(v.key for v in variants)}")
    for name in sets:
        for variant in variants:
            await score_items(judge, name, rows[name], variant, cache, save)
    figures: dict[str, Any] = {"judge": judge.model_id, "n": args.n, "seed": args.seed, "results": []}
    extra = [k.strip() for k in args.report.split(",") if k.strip()]
    for key in [v.key for v in variants] + extra:
        figures["results"] += report(key, sets, rows, cache, args.seed)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    if args.export:
        with args.export.open("w") as out:
            for variant in variants:
                if variant.kind not in ("ev", "p1"):
                    continue
                for name in sets:
                    done = cache.get(f"{name}/{variant.key}", {})
                    for row in rows[name]:
                        entry = done.get(row["id"])
                        p_raw = entry.get("p_raw", entry.get("p")) if entry else None
                        if p_raw is None or "addresses_judge" in entry.get("flags", []):
                            continue
                        # p1-* read whole contexts: the checks then compare against the whole context.
                        evidence = (entry.get("evidence") or [None])[0]
                        item = {
                            "set": name,
                            "id": row["id"],
                            "label": int(row["label"]),
                            "p": p_raw,
                            "statement": row["claim"],
                            "evidence": evidence if evidence is not None else "\n".join(contexts_of(name, row)),
                        }
                        out.write(json.dumps(item) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
