"""How well does ``addresses_judge`` separate text addressed to the judge from ordinary text?

No judge, no network: the detector (``assay.grounding._addressed``) is deterministic and runs
in microseconds, so every number here is exact and reproducible.

1. **The project's injection corpus** (``benchmarks/data/injection.jsonl``, 64 attacks of 16
   kinds), per attack kind: is the attack text itself detected, and is the attacked item
   (the whole attacked claim; for an attack in the context, any sentence of the attacked
   context, split with the project's segmenter)? The kinds are split into a *design* half,
   the kinds the cue families were developed against, and a *held-out* half, reported
   separately. (Honesty note: the held-out texts were visible in
   ``benchmarks/injection_corpus.py`` while the detector was written; the split keeps them
   out of tuning, not out of sight.)
2. **Unseen attacks** (``tests/fixtures/injection_unseen.jsonl``): 62 attacks in other styles
   and languages. Batch 1 (42) was written before the detector existed, batch 2 (20) after
   its first run and before the changes made from batch 1's misses. This prints today's
   rates; the blind first-run rates (each batch's first contact with the detector) are in
   ``docs/design/grounding/guard.md``. Changes made after a batch was seen make its rate optimistic.
3. **False positives on ordinary text**: every claim and every context sentence of
   ``../shared/data/grounding/{begin,summedits,wice}_dev.jsonl`` and every answer and
   context sentence of ``../shared/data/rag/halueval_qa.jsonl`` (contexts deduplicated,
   split with the project's segmenter), the sets the detector was developed against; and,
   held out, every user, assistant and tool message of
   ``../shared/data/agents/taubench_airline_dev.jsonl`` (chat: second person and polite
   imperatives throughout; the system prompt, itself an instruction to an AI, is left out).
   Every false positive is listed with its cue.

    python benchmarks/addressed.py              # all tables (about a minute: segmenting 3.6M characters)
    python benchmarks/addressed.py --no-fp      # corpus and unseen attacks only
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.grounding._addressed import AddressedFinding, addresses_judge
from assay.grounding._sentences import _segmenter, text_pieces

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "benchmarks" / "data" / "injection.jsonl"
UNSEEN = ROOT / "tests" / "fixtures" / "injection_unseen.jsonl"
SHARED = ROOT.parent / "shared" / "data"
GROUNDING = ("begin_dev", "summedits_dev", "wice_dev")

DESIGN_KINDS = (
    "ignore_instructions",
    "system_override",
    "fake_close_tag",
    "fake_json_verdict",
    "role_play",
    "lang_fr",
    "lang_zh",
    "editor_verified",
)
"""The attack kinds the cue families were developed against; the other eight are held out."""


def load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def sentences(text: str) -> Iterator[str]:
    """The project's sentence split (pysbd, long texts piece by piece), as faithfulness uses it."""
    segmenter = _segmenter("en")
    for piece in text_pieces(text):
        for sentence in segmenter.segment(piece):
            if sentence.strip():
                yield sentence.strip()


def first_addressed(texts: Iterator[str]) -> AddressedFinding | None:
    return next((found for text in texts if (found := addresses_judge(text)) is not None), None)


def rate(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.1f}%)" if n else "—"


def corpus_table(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Per attack kind: the attack text, and the attacked claim or context."""
    rows: dict[str, list[tuple[bool, bool, str]]] = defaultdict(list)
    for item in items:
        on_attack = addresses_judge(item["attack"])
        if item["placement"] == "claim":
            on_item = addresses_judge(item["claim"])
        else:
            on_item = first_addressed(sentences(item["context"]))
        cue = on_item.cue if on_item else (on_attack.cue if on_attack else "-")
        rows[item["attack_kind"]].append((on_attack is not None, on_item is not None, cue))
    print("== injection corpus: detection per attack kind ==")
    print(f"  {'kind':26s} {'half':9s} {'attack text':>13s} {'attacked item':>14s}  cues")
    totals: dict[str, list[int]] = {"design": [0, 0, 0], "held-out": [0, 0, 0]}
    figures: dict[str, Any] = {}
    for kind in sorted(rows, key=lambda k: (k not in DESIGN_KINDS, k)):
        half = "design" if kind in DESIGN_KINDS else "held-out"
        results = rows[kind]
        n, text_hits, item_hits = len(results), sum(r[0] for r in results), sum(r[1] for r in results)
        cues = ", ".join(f"{c} {k}" for c, k in Counter(r[2] for r in results).most_common())
        print(f"  {kind:26s} {half:9s} {f'{text_hits}/{n}':>13s} {f'{item_hits}/{n}':>14s}  {cues}")
        totals[half][0] += n
        totals[half][1] += text_hits
        totals[half][2] += item_hits
        figures[kind] = {"n": n, "attack_text": text_hits, "attacked_item": item_hits}
    for half, (n, text_hits, item_hits) in totals.items():
        print(f"  {'total ' + half:36s} attack text {rate(text_hits, n)}, attacked item {rate(item_hits, n)}")
    clean_claims = {i["clean_claim"] for i in items}
    clean_contexts = {i["clean_context"] for i in items}
    twin_hits = [c for c in clean_claims if addresses_judge(c)]
    twin_hits += [s for c in clean_contexts for s in sentences(c) if addresses_judge(s)]
    print(f"  clean twins (claims and context sentences) flagged: {len(twin_hits)}")
    return {"kinds": figures, "totals": totals, "clean_twins_flagged": len(twin_hits)}


def unseen_table(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Each unseen attack: detected on its own text, and which cue fired."""
    print(f"\n== unseen attacks ({UNSEEN.relative_to(ROOT)}) ==")
    by_language: dict[str, list[bool]] = defaultdict(list)
    by_batch: dict[int, list[bool]] = defaultdict(list)
    hits = 0
    for item in items:
        found = addresses_judge(item["text"])
        hits += found is not None
        by_language[item["language"]].append(found is not None)
        by_batch[item["batch"]].append(found is not None)
        what = f"{found.cue:12s} {found.reason}" if found else "MISSED"
        print(f"  {item['id']:34s} {item['language']:3s} {what}")
    print(f"  detected: {rate(hits, len(items))}")
    print("  by batch: " + ", ".join(f"{k}: {rate(sum(v), len(v))}" for k, v in sorted(by_batch.items())))
    print("  by language: " + ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in sorted(by_language.items())))
    return {"n": len(items), "detected": hits}


def ordinary_texts() -> dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]]:
    """Per data set: (claims or answers, context sentences), each with the row id."""
    sets: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {}
    for name in GROUNDING:
        rows = load(SHARED / "grounding" / f"{name}.jsonl")
        contexts = {r["context"]: r["id"] for r in rows}
        sets[name] = (
            [(r["id"], r["claim"]) for r in rows],
            [(rid, s) for context, rid in contexts.items() for s in sentences(context)],
        )
    rows = load(SHARED / "rag" / "halueval_qa.jsonl")
    contexts = {c: r["id"] for r in rows for c in r["contexts"]}
    sets["halueval_qa"] = (
        [(r["id"], r["answer"]) for r in rows],
        [(rid, s) for context, rid in contexts.items() for s in sentences(context)],
    )
    # held out: never looked at while the detector was tuned, until its first run here
    messages = {
        m["content"]: r["id"]
        for r in load(SHARED / "agents" / "taubench_airline_dev.jsonl")
        for m in r["messages"]
        if m["role"] != "system" and isinstance(m.get("content"), str) and m["content"].strip()
    }
    sets["taubench (msgs)"] = (
        [(rid, text) for text, rid in messages.items()],
        [(rid, s) for text, rid in messages.items() for s in sentences(text)],
    )
    return sets


def false_positive_table() -> dict[str, Any]:
    print("\n== false positives on ordinary text ==")
    started = time.perf_counter()
    sets = ordinary_texts()
    print(f"  (segmented in {time.perf_counter() - started:.0f}s)")
    print(f"  {'data set':16s} {'claims/messages flagged':>24s} {'sentences flagged':>26s}")
    listed: list[tuple[str, str, str, AddressedFinding]] = []
    totals = [0, 0, 0, 0]
    calls, seconds = 0, 0.0
    figures: dict[str, Any] = {}
    for name, (claims, context_sentences) in sets.items():
        counts = []
        for what, texts in (("claim", claims), ("context sentence", context_sentences)):
            started = time.perf_counter()
            flagged = [(rid, text, f) for rid, text in texts if (f := addresses_judge(text)) is not None]
            seconds += time.perf_counter() - started
            calls += len(texts)
            listed += [(what, rid, text, f) for rid, text, f in flagged]
            counts.append((len(flagged), len(texts)))
        (fc, nc), (fs, ns) = counts
        totals = [totals[0] + fc, totals[1] + nc, totals[2] + fs, totals[3] + ns]
        figures[name] = {"claims": nc, "claims_flagged": fc, "sentences": ns, "sentences_flagged": fs}
        print(f"  {name:16s} {rate(fc, nc):>24s} {rate(fs, ns):>26s}")
    fc, nc, fs, ns = totals
    print(f"  {'all':16s} {f'{fc}/{nc} ({100 * fc / nc:.3f}%)':>24s} {f'{fs}/{ns} ({100 * fs / ns:.3f}%)':>26s}")
    print(f"  speed: {1e6 * seconds / calls:.0f} µs per text on average ({calls} texts)")
    if listed:
        print("  every false positive:")
        for what, rid, text, found in listed:
            print(f"    {rid} ({what}): {found.cue} [{found.span}] {found.reason}\n      {text[:200]!r}")
    figures["all"] = {"claims": nc, "claims_flagged": fc, "sentences": ns, "sentences_flagged": fs}
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-fp", action="store_true", help="skip the false-positive scan of ../shared/data")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if not CORPUS.exists():
        print(f"{CORPUS} is missing: run python benchmarks/injection_corpus.py first", file=sys.stderr)
        return 1
    figures = {"corpus": corpus_table(load(CORPUS)), "unseen": unseen_table(load(UNSEEN))}
    if not args.no_fp:
        figures["false_positives"] = false_positive_table()
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
