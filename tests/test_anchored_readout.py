"""benchmarks/anchored_readout.py (issue 64): a readout of the verdict state anchored at the judge's own answer.

With no data the readout is today's P exactly; its fit is the penalised logistic
optimum written out (gradient zero); leave-one-source-out never trains on the source it
scores; the learning curve's draws keep each source and label in proportion.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def ar() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import anchored_readout

        yield anchored_readout
    finally:
        sys.path.remove(str(BENCHMARKS))


def _items(ar: ModuleType, n_per_source: int = 40, d: int = 6, seed: int = 0) -> Any:
    """Sources whose label shows on state dimension 0, while the judge's P is mostly noise."""
    from _lib.grouped_cv import Data

    rng = np.random.default_rng(seed)
    sources = np.repeat(np.array(["summedits/news", "summedits/podcast", "begin", "wice"]), n_per_source)
    n = len(sources)
    y = rng.integers(0, 2, n)
    h = rng.normal(size=(n, d))
    h[:, 0] += 2.0 * (2 * y - 1)
    p = np.clip(0.5 + 0.1 * (2 * y - 1) + rng.normal(scale=0.25, size=n), 0.02, 0.98)
    sets = np.array([s.split("/")[0] for s in sources])
    data = Data(
        sets,
        [f"i{k}" for k in range(n)],
        y.astype(np.int64),
        [f"g{k}" for k in range(n)],
        p,
        np.zeros(n, dtype=bool),
        np.full(n, -1, dtype=np.int64),
    )
    return ar.Items(data, sources, h)


def test_with_no_data_the_readout_is_todays_p(ar: ModuleType) -> None:
    items = _items(ar)
    y, p = items.data.y.astype(float), items.data.p
    v, b = ar.fit_offset(items.h, ar.logit(p), y, np.ones(len(y)), 0.0)
    assert not v.any() and b == 0.0
    readout = ar.Readout(v, b, 0.0, 0.5)
    np.testing.assert_allclose(ar.sigmoid(readout.logits(items.h, p)), p, rtol=1e-9)


def test_the_fit_is_the_penalised_optimum(ar: ModuleType) -> None:
    items = _items(ar)
    y, h = items.data.y.astype(float), items.h
    offset = ar.logit(items.data.p)
    w = ar.weights(items.sources, items.data.y)
    c = 0.3
    v, b = ar.fit_offset(h, offset, y, w, c)
    mu = ar.sigmoid(offset + h @ v + b)
    # d/dv [c * sum w logloss + (|v|^2 + b^2) / 2] = c * H^T (w (mu - y)) + v, and likewise for b
    np.testing.assert_allclose(c * h.T @ (w * (mu - y)) + v, 0, atol=1e-6)
    assert abs(c * np.sum(w * (mu - y)) + b) < 1e-6
    # the label shows on dimension 0: the fit moves w there, and a stronger pull keeps it nearer w0
    assert v[0] > 0
    v_small, _ = ar.fit_offset(h, offset, y, w, 0.01)
    assert np.linalg.norm(v_small) < np.linalg.norm(v)


def test_weights_count_each_source_and_label_once(ar: ModuleType) -> None:
    sources = np.array(["a", "a", "a", "b"])
    y = np.array([1, 0, 0, 1])
    w = ar.weights(sources, y)
    assert w.mean() == pytest.approx(1.0)
    assert w[0] == pytest.approx(2 * w[1]) and w[1] == w[2]
    assert w[3] == pytest.approx(w[0])


def test_leave_one_source_out_never_trains_on_the_source_it_scores(ar: ModuleType, monkeypatch: Any) -> None:
    items = _items(ar)
    seen: list[set[str]] = []
    fit = ar.fit_readout

    def spy(train: Any, seed: int, extra: Any = None) -> Any:
        assert extra is None  # no pairs given: the readout trains on people alone
        seen.append(set(train.sources.tolist()))
        return fit(train, seed, extra)

    monkeypatch.setattr(ar, "fit_readout", spy)
    result = ar.leave_one_source_out(items, 1.0, seed=1)
    sources = set(items.sources.tolist())
    assert len(seen) == len(sources)
    for held, trained in zip(sorted(sources), seen, strict=True):
        assert held not in trained and trained == sources - {held}
    # the state carries the label and P barely does: held out, the readout beats the threshold on P
    y = items.data.y
    from assay.analysis import balanced_accuracy

    assert balanced_accuracy(y, result["preds"]["readout"]) > balanced_accuracy(y, result["preds"]["threshold"]) + 0.1


def _negatives(ar: ModuleType, items: Any, seed: int = 5) -> Any:
    """An edited side for each supported item: label 0, its item's source, a state moved against the label."""
    from _lib.grouped_cv import Data

    pos = items.take(items.data.y == 1)
    d = pos.data
    n = len(d.y)
    rng = np.random.default_rng(seed)
    data = Data(
        d.sets,
        [f"{i}-removed" for i in d.ids],
        np.zeros(n, dtype=np.int64),
        list(d.groups),
        np.clip(d.p + rng.normal(scale=0.05, size=n), 0.02, 0.98),
        d.vetoed.copy(),
        d.fixed.copy(),
    )
    h = pos.h.copy()
    h[:, 0] -= 4.0
    return ar.Items(data, pos.sources.copy(), h)


def test_pair_negatives_are_trained_on_only_away_from_the_source_they_were_made_from(
    ar: ModuleType, monkeypatch: Any
) -> None:
    items = _items(ar)
    negatives = _negatives(ar, items)
    seen: list[tuple[set[str], set[str], set[str]]] = []
    fit = ar.fit_readout

    def spy(train: Any, seed: int, extra: Any = None) -> Any:
        assert extra is not None
        seen.append((set(train.sources.tolist()), set(extra.sources.tolist()), set(extra.data.ids)))
        return fit(train, seed, extra)

    monkeypatch.setattr(ar, "fit_readout", spy)
    ar.leave_one_source_out(items, 1.0, seed=1, negatives=negatives)
    sources = set(items.sources.tolist())
    assert len(seen) == len(sources)
    for held, (trained, extra_sources, extra_ids) in zip(sorted(sources), seen, strict=True):
        assert held not in extra_sources and extra_sources == trained
        made_from_held = {i for i, s in zip(negatives.data.ids, negatives.sources, strict=True) if s == held}
        assert made_from_held and not made_from_held & extra_ids


def test_the_pairs_count_as_one_source_and_move_the_readout(ar: ModuleType) -> None:
    items = _items(ar)
    negatives = _negatives(ar, items)
    joined, weighting = ar._joined(items, negatives)
    w = ar.weights(weighting, joined.data.y)
    pair_weight = w[len(items.sources) :].sum()
    one_cell = w[: len(items.sources)][(items.sources == "begin") & (items.data.y == 0)].sum()
    assert pair_weight == pytest.approx(one_cell)
    # the negatives' states sit far on the unsupported side of dimension 0: training on them moves v there
    c = 0.3
    ((v_alone, _),) = ar._fit_on(items, None, [c])
    ((v_pairs, _),) = ar._fit_on(items, negatives, [c])
    assert v_pairs[0] > v_alone[0]


def test_the_learning_curve_keeps_each_source_and_label_in_proportion(ar: ModuleType) -> None:
    items = _items(ar, n_per_source=40)
    part = ar.subsample(items, 0.25, seed=3)
    for s in np.unique(items.sources):
        for c in (0, 1):
            whole = int(((items.sources == s) & (items.data.y == c)).sum())
            kept = int(((part.sources == s) & (part.data.y == c)).sum())
            assert kept == max(1, round(0.25 * whole))
    assert ar.subsample(items, 1.0, seed=3) is items


@pytest.mark.slow
async def test_every_statement_judged_at_once_gets_its_own_hidden_state() -> None:
    """The verifier asks for a sample's verdicts together (one thread each): each capture must be its call's own."""
    pytest.importorskip("llama_cpp")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from _lib.hidden import HiddenStateJudge, messages_key

        from assay.grounding._verify import StatementVerifier
        from tiny_model import smollm2_path

        judge = HiddenStateJudge(smollm2_path(), n_ctx=2048, n_threads=1, names=("l_out-4", "result_norm"))
        assert judge.batched_calls > 1  # the verifier gathers the calls
        context = ["The Amazon River is about 6,400 km long. It empties into the Atlantic Ocean."]
        claims = ["The Amazon is 6,400 km long.", "It empties into the Pacific.", "The river is short.", "Brazil."]
        outcomes = await StatementVerifier(method="threshold", reasons="none").verify(context, claims, judge)
        calls = [c for o in outcomes for c in o.calls if c.purpose.endswith(".p1")]
        assert len(calls) == len(claims) and all(o.failure is None for o in outcomes)
        for call in calls:
            _, vector = judge.records[messages_key(call.messages)]
            assert vector is not None and vector.shape[0] == 2 and np.isfinite(vector).all()
        # four different prompts: four different states at the verdict position
        assert len({judge.records[messages_key(c.messages)][1].tobytes() for c in calls}) == len(claims)  # type: ignore[union-attr]
    finally:
        sys.path.remove(str(BENCHMARKS))
        sys.path.remove(str(Path(__file__).resolve().parent))


def test_the_schedule_judges_every_item_once_and_the_pairs_first(ar: ModuleType) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        from test_evidence_use import _groups, _rows
    finally:
        sys.path.remove(str(Path(__file__).resolve().parent))
    import _lib.evidence_pairs as evidence_pairs

    rows = _rows()
    pairs, _ = evidence_pairs.make_pairs(rows, _groups(rows))
    plan = ar.schedule(pairs, rows, seed=3)
    judged = [(kind, r["id"]) for _, kind, entry in plan for r in entry]
    expected = {("dev", r["id"]) for rs in rows.values() for r in rs}
    expected |= {("removed", p.id + evidence_pairs.NEGATIVE_SUFFIX) for p in pairs}
    assert sorted(judged) == sorted(expected)  # each once
    order = [i for _, i in judged]
    for p in pairs:
        assert order.index(p.id) < order.index(p.id + evidence_pairs.NEGATIVE_SUFFIX)
    for name in ar.SETS:
        mine = [(kind, r["id"]) for s, kind, entry in plan if s == name for r in entry]
        in_pairs = {p.id for p in pairs if p.set == name} | {p.id + "#removed" for p in pairs if p.set == name}
        flags = [i in in_pairs for _, i in mine]
        assert flags == sorted(flags, reverse=True), name  # the pairs' sides before every other item
    for _, _, entry in plan:  # one entry, one context
        assert len({json_key(r) for r in entry}) == 1


def json_key(row: dict[str, Any]) -> str:
    return str(row.get("oracle_chunks") or row["context"])


def test_contrast_rows_are_judged_items_with_one_side_edited(ar: ModuleType, tmp_path: Path) -> None:
    """A claim edit keeps its item's context byte for byte; "changed" keeps the claim; only judged items count."""
    import json

    context = (
        "Alice Martin met Robert Chen in Paris in 2019. The company Northwind sold 40 bikes that year. "
        "Robert Chen did not attend the meeting in London. Alice Martin founded Northwind in 2012."
    )
    rows = [
        {"id": f"s{k}", "label": 1, "claim": claim, "context": context, "domain": "news"}
        for k, claim in enumerate(
            [
                "Alice Martin met Robert Chen in Paris in 2019.",
                "Northwind sold 40 bikes in 2019.",
                "Alice Martin founded Northwind in 2012.",
            ]
        )
    ]
    rows.append({"id": "s9", "label": 0, "claim": "Northwind sold 90 bikes.", "context": context, "domain": "news"})
    samples = {"summedits": rows, "begin": [], "wice": []}
    judged = {"s0", "s1", "s9"}  # s2 not judged: its pairs have no positive state to be contrasted with
    (tmp_path / "summedits.jsonl").write_text("".join(json.dumps({"id": i}) + "\n" for i in sorted(judged)))
    entries = ar.contrast_rows(tmp_path, samples)
    negatives = [r for _, entry in entries for r in entry]
    assert negatives, "the rule-based edits found nothing to edit"
    by_id = {r["id"]: r for r in rows}
    for name, entry in entries:
        assert name == "summedits"
        assert len({r["context"] for r in entry}) == 1  # one context an entry: judged together
    for negative in negatives:
        item, kind = negative["id"].rsplit(":", 1)
        original = by_id[item]
        assert item in judged and original["label"] == 1 and negative["label"] == 0
        assert kind in ar.CONTRAST_KINDS and negative["domain"] == original["domain"]
        if kind == "changed":
            assert negative["claim"] == original["claim"] and negative["context"] != original["context"]
        else:
            assert negative["context"] == original["context"] and negative["claim"] != original["claim"]
    changed = [entry[0]["id"].endswith(":changed") for _, entry in entries]
    assert changed == sorted(changed)  # the claim edits first
    assert {r["id"].rsplit(":", 1)[1] for r in negatives} >= {"changed", "entity", "number"}


def test_contrast_use_counts_only_negatives_whose_original_was_judged(ar: ModuleType) -> None:
    """A negative whose original is not among the judged items is left out, not matched to another item."""
    from _lib.grouped_cv import Data

    items = _items(ar)
    d = items.data
    first = int(np.flatnonzero(d.y == 1)[0])
    ids = [f"{d.ids[first]}:negation", "nowhere:entity"]
    n = len(ids)
    data = Data(
        np.array(["summedits", "summedits"]),
        ids,
        np.zeros(n, dtype=np.int64),
        ["g", "g"],
        np.array([0.9, 0.9]),
        np.zeros(n, dtype=bool),
        np.full(n, -1, dtype=np.int64),
    )
    contrast = ar.Items(data, np.array([items.sources[first]] * n), np.zeros((n, items.h.shape[1])))
    result = ar.leave_one_source_out(items, 1.0, seed=1)
    lines: list[str] = []
    ar.contrast_use(items, contrast, result, out=lines.append)
    rows = [line for line in lines if "contrast all      all" in line]
    assert len(rows) == 1 and "n=  1:" in rows[0], lines
    assert "shipped still supported 1.000" in rows[0]  # P 0.9, no veto: called supported as shipped


def test_fits_for_a_grid_of_c_are_each_the_fit_for_that_c_alone(ar: ModuleType) -> None:
    """``_fit_on`` warm-starts each C from the one below; every fit is still its own optimum."""
    items = _items(ar)
    cs = [0.3, 0.0, 1e-3, 1.0]
    grid = ar._fit_on(items, None, cs)
    w = ar.weights(items.sources, items.data.y)
    for c, (v, b) in zip(cs, grid, strict=True):
        alone_v, alone_b = ar.fit_offset(items.h, ar.logit(items.data.p), items.data.y.astype(float), w, c)
        np.testing.assert_allclose(v, alone_v, atol=1e-6)
        assert b == pytest.approx(alone_b, abs=1e-6)


def test_the_basis_spans_the_states_and_keeps_lengths(ar: ModuleType) -> None:
    """``h = z vt`` with orthonormal rows of ``vt``: a coefficient in the basis has the length of ``v``."""
    rng = np.random.default_rng(2)
    h = rng.normal(size=(30, 80)) @ np.diag(np.linspace(1, 50, 80))
    h[5] = h[3] + h[4]  # a dependent row: one direction fewer than rows
    a, vt = ar.svd_basis(h)
    assert np.allclose(a[:, 0], 1.0) and vt.shape == (29, 80)
    np.testing.assert_allclose(vt @ vt.T, np.eye(29), atol=1e-8)
    np.testing.assert_allclose(a[:, 1:] @ vt, h, atol=1e-6)


def test_a_store_made_with_another_generator_or_model_is_refused_not_appended_to(
    ar: ModuleType, tmp_path: Path
) -> None:
    about = {"names": ["result_norm"], "model_sha256": "abc"}
    contrast = tmp_path / "contrast"
    ar.claim_stores({tmp_path: about, contrast: {**about, "generator": 1}})
    ar.claim_stores({tmp_path: about, contrast: {**about, "generator": 1}})  # the same again: a resume
    for made in ({contrast: {**about, "generator": 2}}, {tmp_path: {**about, "model_sha256": "def"}}):
        with pytest.raises(SystemExit, match="describes other features"):
            ar.claim_stores(made)


def test_contrast_negatives_are_read_from_the_store_with_their_originals_source_and_document(
    ar: ModuleType, tmp_path: Path
) -> None:
    """The fit reads the judged ids back and takes source and group from the item each was made from."""
    import json

    rows = [
        {"id": "s1", "label": 1, "claim": "A.", "context": "Doc one.", "domain": "news"},
        {"id": "s2", "label": 1, "claim": "B.", "context": "Doc two.", "domain": "podcast"},
    ]
    samples = {"summedits": rows, "begin": [], "wice": []}
    store = tmp_path / "contrast"
    store.mkdir()
    (store / "about.json").write_text(json.dumps({"names": ["result_norm"]}))
    judged = ["s1:entity", "s2:changed", "s2:negation"]
    line = {"label": 0, "part": 0, "v": 1, "p": None, "vetoed": [], "flags": [], "verbatim": True, "calls": []}
    line["failure"] = None
    (store / "summedits.jsonl").write_text("".join(json.dumps({**line, "id": i}) + "\n" for i in judged))
    items = ar.contrast_from(tmp_path, samples)
    assert items.data.ids == judged and not items.data.y.any()
    assert items.sources.tolist() == ["summedits/news", "summedits/podcast", "summedits/podcast"]
    assert items.data.groups[1] == items.data.groups[2] != items.data.groups[0]  # s2's document, edited or not
