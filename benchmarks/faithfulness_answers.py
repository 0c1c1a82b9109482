"""Faithfulness of whole answers against answer-level human labels, and how answers become statements.

The number a user sees is the faithfulness score of a whole answer. This scores whole
answers with the product's default ``Faithfulness()`` on the local judge and compares with
answer-level labels on four sets built from ``../shared/data`` (seeded, stratified by label):

- ``summedits``: a SummEdits summary (the answer) of its document (the context); label:
  the summary is consistent with the document (human-verified edits).
- ``begin``: a BEGIN dialogue response (the answer; the dialogue turn is the question) and
  its knowledge snippet; label: fully attributable.
- ``halueval``: a HotpotQA question with its contexts and either the right or the
  hallucinated answer (both answers of each question drawn; labels by construction).
- ``rag``: long multi-sentence answers built from WiCE dev. For a Wikipedia subject with
  two or more cited claims, the answer strings its claims together the way an assistant
  writes: later claims refer to the subject by a pronoun, one is hedged ("Reportedly,
  ..."), and a question asks about the subject; the contexts are the cited articles, each
  cut to about 3,000 characters around the cited lines. Label: faithful iff every claim
  is labelled supported by people.

What it prints, per set, with bootstrap 95% CIs (seeded):

- answer-level balanced accuracy of "faithful iff every statement is supported" (score
  == 1) and of the README's gate threshold (score >= 0.8), the mean score of faithful
  and of unfaithful answers, unscored answers by reason;
- decomposition fidelity: statements per answer; the share of judged statements anchored
  to the answer (``assay.grounding.anchor_statement``: every content word is the source
  sentence's or a referent's, and at least half of them are the sentence's own); judged
  statements that come from the question (not anchored, most content words the
  question's) or from the decomposition prompt's own example (its words, absent from the
  answer and the question); the share of checkable answer sentences that yield a judged
  statement, and of those whose judged statements state every number, every capitalised
  word and four fifths of the sentence's terms; seconds per answer.

Every answer's record (statements, verdicts, spans, dropped statements, coverage, calls,
seconds) is written to ``--out`` as JSONL, so fidelity can be recomputed from a run made
by an older assay (``--records FILE`` reports from a file without judging).

    python benchmarks/faithfulness_answers.py --n 40 --out /tmp/answers.jsonl
    python benchmarks/faithfulness_answers.py --records /tmp/answers.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import re
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from _lib.rag_samples import DATA, _cut, _pronoun

GATE = 0.8  # the README's gate threshold
SETS = ("summedits", "begin", "halueval", "rag")


# --- the sets -------------------------------------------------------------------------------------


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _stratified(items: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    by_label: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for item in items:
        by_label[item["label"]].append(item)
    share = {k: len(v) / len(items) for k, v in by_label.items()}
    out: list[dict[str, Any]] = []
    for label, group in sorted(by_label.items()):
        rng.shuffle(group)
        out.extend(group[: max(1, round(n * share[label]))])
    rng.shuffle(out)
    return out[:n]


def summedits(n: int, seed: int) -> list[dict[str, Any]]:
    rows = _rows(DATA / "grounding" / "summedits_dev.jsonl")
    items = [
        {"id": r["id"], "question": "", "answer": r["claim"], "contexts": [r["context"]], "label": int(r["label"])}
        for r in rows
    ]
    return _stratified(items, n, seed)


def begin(n: int, seed: int) -> list[dict[str, Any]]:
    rows = _rows(DATA / "grounding" / "begin_dev.jsonl")
    items = [
        {
            "id": r["id"],
            "question": r.get("dialogue_message") or "",
            "answer": r["claim"],
            "contexts": [r["context"]],
            "label": int(r["label"]),
        }
        for r in rows
    ]
    return _stratified(items, n, seed)


def halueval(n: int, seed: int) -> list[dict[str, Any]]:
    rows = _rows(DATA / "rag" / "halueval_qa.jsonl")
    by_question: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_question[r["question"]].append(r)
    pairs = [group for group in by_question.values() if len(group) == 2]
    random.Random(seed).shuffle(pairs)
    items: list[dict[str, Any]] = []
    for group in pairs[: max(1, n // 2)]:
        for r in group:
            contexts = r["contexts"] if isinstance(r["contexts"], list) else json.loads(r["contexts"])
            items.append(
                {"id": r["id"], "question": r["question"], "answer": r["answer"], "contexts": contexts,
                 "label": int(r["label"])}
            )  # fmt: skip
    return items


def rag(n: int, seed: int) -> list[dict[str, Any]]:
    """Long answers about one subject, from its WiCE claims (see the module docstring)."""
    rows = _rows(DATA / "grounding" / "wice_dev.jsonl")
    by_title: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_title[r["claim_title"]].append(r)
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    for title, claims in sorted(by_title.items()):
        if len(claims) < 2:
            continue
        claims = claims[:5]
        pronoun = _pronoun(title, " ".join(c.get("claim_context") or "" for c in claims))
        subject_words = [w for w in title.split() if w[:1].isupper()]
        sentences: list[str] = []
        for i, c in enumerate(claims):
            text = c["claim"].strip()
            first = text.split()[0].strip(",") if text else ""
            if i > 0 and first in subject_words:  # "Winslet teamed with ..." -> "She teamed with ..."
                rest = text.split(maxsplit=1)[1] if len(text.split()) > 1 else ""
                text = f"{pronoun} {rest}"
            if i == len(claims) - 1 and len(claims) > 2:
                text = "Reportedly, " + text[0].lower() + text[1:]
            sentences.append(text)
        contexts = []
        for c in claims:
            oracle = c["oracle_chunks"] if isinstance(c["oracle_chunks"], list) else json.loads(c["oracle_chunks"])
            contexts.append(_cut(c["context"], oracle))
        items.append(
            {
                "id": f"rag-{re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')}",
                "question": f"What do the sources say about {title}?",
                "answer": " ".join(sentences),
                "contexts": contexts,
                "label": int(all(int(c["label"]) == 1 for c in claims)),
            }
        )
    rng.shuffle(items)
    return items[:n]


BUILDERS = {"summedits": summedits, "begin": begin, "halueval": halueval, "rag": rag}


# --- judging --------------------------------------------------------------------------------------


def _record(item: dict[str, Any], set_name: str, score: Any, seconds: float) -> dict[str, Any]:
    data = score.model_dump(mode="json")
    return {
        "set": set_name,
        "id": item["id"],
        "label": item["label"],
        "question": item["question"],
        "answer": item["answer"],
        "value": None if math.isnan(score.value) else score.value,
        "unscored_reason": data.get("unscored_reason"),
        "verdicts": data.get("verdicts", []),
        "decomposition": data.get("decomposition"),
        "calls": len(data.get("calls", [])),
        "seconds": seconds,
    }


PREAMBLES = (
    "Here is a concise summary of the passage.",
    "Below are the key points from the text:",
    "Sure! Here's a brief overview of the document.",
    "Based on the provided context, here is a summary:",
    "The following is a short summary of the article.",
    "Here's what the passage says:",
)
"""Sentences about the answer itself, as generated summaries and RAG answers open (issue 34).
The rules were developed while reading answers with these: report them as seen."""

HELD_OUT_PREAMBLES = (
    "Sure, here is a short summary of the text:",
    "Here are the main points of the article.",
    "Of course! Here is my answer based on the context.",
    "Below you will find a brief recap of the story.",
    "Certainly, here is an overview of the passage:",
    "Here is what I found in the provided documents.",
)
"""Wordings chosen after the rules were written and never used to change them (``--preamble held-out``)."""


def with_preamble(item: dict[str, Any], seed: int, wordings: tuple[str, ...] = PREAMBLES) -> dict[str, Any]:
    """``item`` whose answer opens with one of ``wordings`` (chosen by the item's id and the seed)."""
    pick = random.Random(f"{seed}:{item['id']}").choice(wordings)
    return {**item, "answer": f"{pick} {item['answer']}"}


async def judge_all(
    sets: list[str], n: int, seed: int, out: Path, judge_name: str, preamble: str = "none"
) -> list[dict[str, Any]]:
    from assay.metrics import Faithfulness
    from assay.models import get_judge

    judge = get_judge(judge_name)
    metric = Faithfulness()
    done = {(r["set"], r["id"]) for r in (_read(out) if out.exists() else [])}
    records: list[dict[str, Any]] = _read(out) if out.exists() else []
    with out.open("a", encoding="utf-8") as sink:
        for set_name in sets:
            items = BUILDERS[set_name](n, seed)
            if preamble != "none":
                wordings = HELD_OUT_PREAMBLES if preamble == "held-out" else PREAMBLES
                items = [with_preamble(item, seed, wordings) for item in items]
            for k, item in enumerate(items, start=1):
                if (set_name, item["id"]) in done:
                    continue
                from assay import Sample

                sample = Sample(id=item["id"], question=item["question"] or None, answer=item["answer"],
                                contexts=tuple(item["contexts"]))  # fmt: skip
                started = time.perf_counter()
                score = await metric.score(sample, judge)
                record = _record(item, set_name, score, time.perf_counter() - started)
                sink.write(json.dumps(record) + "\n")
                sink.flush()
                records.append(record)
                print(f"\r{set_name}: {k}/{len(items)}", end="", flush=True)
            print()
    return records


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- figures --------------------------------------------------------------------------------------


def balanced_accuracy(labels: list[int], preds: list[int]) -> float:
    y, p = np.asarray(labels), np.asarray(preds)
    rates = [float(np.mean(p[y == c] == c)) for c in (0, 1) if np.any(y == c)]
    return float(np.mean(rates)) if rates else math.nan


def bootstrap(labels: list[int], preds: list[int], seed: int, rounds: int = 2000) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    y, p = np.asarray(labels), np.asarray(preds)
    values = []
    for _ in range(rounds):
        idx = rng.integers(0, len(y), len(y))
        if len(set(y[idx].tolist())) < 2:
            continue
        values.append(balanced_accuracy(y[idx].tolist(), p[idx].tolist()))
    return float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))


def _content(text: str) -> set[str]:
    from assay.grounding import content_lemmas

    return set(content_lemmas(text))


EXAMPLE_WORDS = {"relativity", "physicist", "german-born", "theoretical", "einstein", "albert"}


def fidelity(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Statements per answer, anchored share, leaks and coverage of one set's records."""
    from assay.grounding import anchor_statement, answer_sentences
    from assay.grounding._anchor import _left_out

    statements = anchored = from_question = from_example = 0
    sentences = covered = stated = 0
    for r in records:
        question = r["question"] or ""
        judged = [v["subject"] for v in r["verdicts"]]
        statements += len(judged)
        answer_words = _content(r["answer"])
        question_words = _content(question)
        given = {w.lower() for w in re.findall(r"[A-Za-z-]+", r["answer"] + " " + question)}
        located = [(x.start, x.end) for x in answer_sentences(r["answer"], question)]
        anchors = {}
        for v in r["verdicts"]:
            s = v["subject"]
            # the sentence the record says it comes from (its spans), checked again here;
            # records without spans (an older assay) are anchored wherever they fit best
            start = (v.get("spans") or [[None]])[0][0]
            within = next(((a, b) for a, b in located if start is not None and a <= start < b), None)
            found = anchor_statement(s, r["answer"], question, within=within)
            anchors[s] = found
            if found is not None:
                anchored += 1
            words = _content(s)
            # not what the answer says, and mostly the question's words
            if found is None and words and len(words & question_words - answer_words) >= max(1, len(words) // 2):
                from_question += 1
            if {w.lower() for w in re.findall(r"[A-Za-z-]+", s)} & (EXAMPLE_WORDS - given):
                from_example += 1
        for index, sentence in enumerate(answer_sentences(r["answer"], question)):
            if not sentence.checkable:
                continue
            sentences += 1
            mine = [(s, a) for s, a in anchors.items() if a is not None and a.sentence == index]
            if mine:
                covered += 1
                if _left_out(sentence, [a for _, a in mine], [s for s, _ in mine]) is None:
                    stated += 1
    n = len(records)
    return {
        "statements_per_answer": statements / n if n else math.nan,
        "anchored": anchored / statements if statements else math.nan,
        "from_question": from_question,
        "from_example": from_example,
        "covered": covered / sentences if sentences else math.nan,
        "fully_stated": stated / sentences if sentences else math.nan,
        "sentences": sentences,
        "seconds_per_answer": float(np.mean([r["seconds"] for r in records])) if records else math.nan,
    }


def report(records: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for set_name in SETS:
        rows = [r for r in records if r["set"] == set_name]
        if not rows:
            continue
        scored = [r for r in rows if r["value"] is not None]
        labels = [r["label"] for r in scored]
        every = [int(r["value"] == 1.0) for r in scored]
        gate = [int(r["value"] >= GATE) for r in scored]
        faithful = [r["value"] for r in scored if r["label"] == 1]
        unfaithful = [r["value"] for r in scored if r["label"] == 0]
        entry = {
            "n": len(rows),
            "unscored": dict(Counter(r["unscored_reason"] for r in rows if r["value"] is None)),
            "ba_every": balanced_accuracy(labels, every),
            "ba_every_ci": bootstrap(labels, every, seed),
            "tpr_every": float(np.mean([p for p, y in zip(every, labels, strict=True) if y == 1] or [math.nan])),
            "tnr_every": float(np.mean([1 - p for p, y in zip(every, labels, strict=True) if y == 0] or [math.nan])),
            "ba_gate": balanced_accuracy(labels, gate),
            "ba_gate_ci": bootstrap(labels, gate, seed),
            "mean_faithful": float(np.mean(faithful)) if faithful else math.nan,
            "mean_unfaithful": float(np.mean(unfaithful)) if unfaithful else math.nan,
        }
        try:
            entry["fidelity"] = fidelity(rows)
        except ImportError as exc:  # an assay without the anchoring instruments
            entry["fidelity"] = {"error": str(exc)}
        figures[set_name] = entry
    return figures


def show(figures: dict[str, Any]) -> None:
    for set_name, f in figures.items():
        lo, hi = f["ba_every_ci"]
        glo, ghi = f["ba_gate_ci"]
        print(
            f"{set_name:10} n={f['n']:3}  faithful iff every statement supported: BA {f['ba_every']:.3f} "
            f"[{lo:.3f}-{hi:.3f}] (TPR {f['tpr_every']:.2f}, TNR {f['tnr_every']:.2f});  score >= {GATE}: "
            f"BA {f['ba_gate']:.3f} [{glo:.3f}-{ghi:.3f}];  mean score faithful {f['mean_faithful']:.2f}, "
            f"unfaithful {f['mean_unfaithful']:.2f};  unscored {f['unscored'] or 0}"
        )
        d = f["fidelity"]
        if "error" in d:
            print(f"{'':10} fidelity: {d['error']}")
            continue
        print(
            f"{'':10} statements/answer {d['statements_per_answer']:.2f}; anchored {d['anchored']:.1%}; "
            f"from the question {d['from_question']}; from the prompt's example {d['from_example']}; "
            f"answer sentences covered {d['covered']:.1%} of {d['sentences']} (every number, name and 4/5 of "
            f"the words stated: {d['fully_stated']:.1%}); "
            f"{d['seconds_per_answer']:.1f} s/answer"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--n", type=int, default=40, help="answers per set (seeded, stratified by label)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--judge", default="local")
    parser.add_argument("--out", type=Path, default=Path("answers.jsonl"), help="per-answer records (appended)")
    parser.add_argument("--records", type=Path, help="report from these records; judge nothing")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--preamble",
        choices=("none", "seen", "held-out"),
        default="none",
        help="open every answer with a sentence about the answer itself ('Here is a concise summary of the "
        "passage.'), as generated summaries do: the same labels, a harder input (issue 34). 'seen': the "
        "wordings the rules were developed on; 'held-out': wordings never used to change them",
    )
    args = parser.parse_args()
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    if args.records is not None:
        records = [r for r in _read(args.records) if r["set"] in sets]
    else:
        records = asyncio.run(judge_all(sets, args.n, args.seed, args.out, args.judge, args.preamble))
    figures = report(records, args.seed)
    show(figures)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
