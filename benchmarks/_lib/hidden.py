"""The local judge's hidden states at the verdict position, captured in the verdict's own forward pass.

How and why they are read this way: ``hidden_states.py``'s docstring. ``HiddenStateJudge``
is the judge with the capture; ``extract`` writes the per-item cache that ``grouped_cv``
(``load_hidden``), ``fit_probe.py``, ``anchored_readout.py`` and ``verifier_head.py`` read.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from assay.grounding._verify import StatementVerifier
from assay.models._local import _STATES, LocalJudge
from assay.models._protocol import ChatMessage, ChoiceProbabilities

from .devsets import contexts_of

N_LAYERS = 28  # Qwen2.5-1.5B


LAYERS = (*range(0, N_LAYERS, 2), N_LAYERS - 1)  # every other layer's output, and the last


NAMES = (*(f"l_out-{i}" for i in LAYERS), "result_norm")


FEATURE_VERSION = 1  # what a row is: NAMES at the verdict position (the token before the verdict digit)


class _Capture:
    """What the graph callback is asked for and what it read (module state: the C callback has no self)."""

    def __init__(self) -> None:
        self.armed = False
        self.wanted: frozenset[bytes] = frozenset(n.encode() for n in NAMES)
        self.grabbed: dict[str, np.ndarray] = {}
        self.errors: list[str] = []
        self.asked = 0


_CAP = _Capture()


_CAPTURING = threading.Lock()
"""One capturing call at a time: ``_CAP`` is module state, and the verifier asks a judge that
decodes calls together (``batched_calls`` > 1) for a sample's verdicts at once, each from its
own thread, so a second call's reset would empty the first's capture."""


_GGML: Any = None


def _ggml() -> Any:
    global _GGML
    if _GGML is None:
        import llama_cpp

        lib = ctypes.CDLL(str(Path(llama_cpp.__file__).parent / "lib" / "libggml-base.so"))
        lib.ggml_get_name.argtypes = [ctypes.c_void_p]
        lib.ggml_get_name.restype = ctypes.c_char_p
        lib.ggml_backend_tensor_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
        lib.ggml_backend_tensor_get.restype = None
        _GGML = lib
    return _GGML


def _on_node(tensor: int, ask: bool, user_data: int) -> bool:
    """ggml_backend_sched_eval_callback: ask=True, "do you want this node?"; ask=False, "here it is"."""
    if not _CAP.armed:
        return not ask
    try:
        lib = _GGML
        name = lib.ggml_get_name(tensor)
        if ask:
            _CAP.asked += 1
            return bool(name in _CAP.wanted)
        # struct ggml_tensor: int32 type (+4 padding), buffer pointer, int64 ne[4], size_t nb[4], ...
        kind = ctypes.c_int32.from_address(tensor).value
        ne = (ctypes.c_int64 * 4).from_address(tensor + 16)
        nb = (ctypes.c_size_t * 4).from_address(tensor + 48)
        if kind != 0 or nb[0] != 4:  # GGML_TYPE_F32, contiguous rows
            _CAP.errors.append(f"{name!r}: type {kind}, nb0 {nb[0]}")
            return True
        out = np.empty(int(ne[0]), dtype=np.float32)
        lib.ggml_backend_tensor_get(tensor, out.ctypes.data, int((ne[1] - 1) * nb[1]), int(ne[0]) * 4)
        _CAP.grabbed[name.decode()] = out  # the last column: the batch's last token
    except Exception as exc:  # an exception in a C callback would abort the decode
        _CAP.errors.append(repr(exc))
    return True


def _callback() -> Any:
    import llama_cpp

    return llama_cpp.ggml_backend_sched_eval_callback(_on_node)


_CALLBACK: Any = None


def messages_key(messages: Sequence[ChatMessage] | Sequence[dict[str, Any]]) -> str:
    return hashlib.sha1(json.dumps([dict(m) for m in messages], sort_keys=True).encode()).hexdigest()


class HiddenStateJudge(LocalJudge):
    """``LocalJudge`` whose verdict calls also keep the hidden states at the verdict position.

    ``mode``: ``cb`` reads every layer through the graph callback (same forward pass),
    ``off`` disarms it (the callback still answers "no" per node), ``embd`` turns llama.cpp's
    embedding output on for the whole verdict call (every token an output) and reads the
    last token's, ``split`` decodes all but the last token as usual and the last alone with
    embeddings on.
    """

    def __init__(self, *args: Any, mode: str = "cb", names: Sequence[str] = NAMES, **kwargs: Any) -> None:
        kwargs.setdefault("batch_choices", False)  # verdict calls one at a time, through _choices_sync below
        super().__init__(*args, **kwargs)
        self.mode = mode
        self.names = tuple(names)  # the graph nodes kept, in this order (``cb`` mode)
        self.records: dict[str, tuple[float, np.ndarray | None]] = {}

    def _load_key(self, path: Path) -> tuple[object, ...]:
        """A model loaded with the graph callback is another model: a plain one loaded before reads no hidden state."""
        return (*super()._load_key(path), "cb_eval")

    def load(self, progress: Any = None) -> Any:
        global _CALLBACK
        import llama_cpp.llama_cpp as lib

        _ggml()
        if _CALLBACK is None:
            _CALLBACK = _callback()
        original = lib.llama_context_default_params

        def with_callback() -> Any:
            params = original()
            params.cb_eval = _CALLBACK
            params.cb_eval_user_data = None
            return params

        lib.llama_context_default_params = with_callback
        try:
            llama = super().load(progress)
        finally:
            lib.llama_context_default_params = original
        return llama

    def _choices_sync(
        self, messages: Sequence[ChatMessage], prefix: str, choices: Sequence[str]
    ) -> ChoiceProbabilities:
        with _CAPTURING:
            return self._capture(messages, prefix, choices)

    def _capture(self, messages: Sequence[ChatMessage], prefix: str, choices: Sequence[str]) -> ChoiceProbabilities:
        import llama_cpp

        llama = self.load()
        _CAP.grabbed = {}
        vector: np.ndarray | None = None
        if self.mode == "cb":
            _CAP.wanted = frozenset(n.encode() for n in self.names)
            _CAP.armed = True
            try:
                result = super()._choices_sync(messages, prefix, choices)
            finally:
                _CAP.armed = False
            missing = [n for n in self.names if n not in _CAP.grabbed]
            if missing:
                raise RuntimeError(f"hidden states not read: {missing[:3]} (errors: {_CAP.errors[:3]})")
            vector = np.stack([_CAP.grabbed[n] for n in self.names])
        elif self.mode == "embd":
            llama_cpp.llama_set_embeddings(llama._ctx.ctx, True)
            try:
                result = super()._choices_sync(messages, prefix, choices)
                n_embd = llama.n_embd()
                pointer = llama_cpp.llama_get_embeddings_ith(llama._ctx.ctx, -1)
                vector = np.ctypeslib.as_array(pointer, shape=(n_embd,)).astype(np.float32)[None, :]
            finally:
                llama_cpp.llama_set_embeddings(llama._ctx.ctx, False)
        elif self.mode == "split":
            result, vector = self._split(llama, messages, prefix, choices)
        else:
            result = super()._choices_sync(messages, prefix, choices)
        self.records[messages_key(messages)] = (float(result["1"]), vector)
        return result

    def _split(
        self, llama: Any, messages: Sequence[ChatMessage], prefix: str, choices: Sequence[str]
    ) -> tuple[ChoiceProbabilities, np.ndarray]:
        """All but the last token as usual; the last one alone with embeddings on."""
        import llama_cpp

        from assay._scores import Usage
        from assay.models._local import _LOCKS, _common_prefix

        tok = self._tokenizer(llama, messages)
        base = tok(prefix)
        first = {}
        common = len(base)
        for choice in choices:
            ids = tok(prefix + choice)
            common = _common_prefix(base, ids)
            first[choice] = ids[common]
        prompt = base[:common]
        with _LOCKS[self._key]:
            self._eval_with_prefix_reuse(llama, prompt[:-1], self._instructions(llama, messages, prompt))
            llama_cpp.llama_set_embeddings(llama._ctx.ctx, True)
            try:
                llama.eval(prompt[-1:])
                logits = np.ctypeslib.as_array(
                    llama_cpp.llama_get_logits_ith(llama._ctx.ctx, -1), shape=(llama.n_vocab(),)
                ).copy()
                pointer = llama_cpp.llama_get_embeddings_ith(llama._ctx.ctx, -1)
                vector = np.ctypeslib.as_array(pointer, shape=(llama.n_embd(),)).astype(np.float32)[None, :]
            finally:
                llama_cpp.llama_set_embeddings(llama._ctx.ctx, False)
            _STATES[self._key].remember(llama)
        picked = np.array([logits[first[c]] for c in choices], dtype=np.float64)
        picked = np.exp(picked - picked.max())
        picked /= picked.sum()
        probs = {c: float(p) for c, p in zip(choices, picked, strict=True)}
        return ChoiceProbabilities(probs, Usage(prompt_tokens=len(prompt))), vector


def cold(judge: LocalJudge) -> None:
    """Forget the KV cache and the saved prefixes: the next call reads its whole prompt."""
    llama = judge.load()
    llama.reset()
    llama._ctx.kv_cache_clear()
    _STATES[judge._key]._saved.clear()


def groups_of_rows(name: str, rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault("\x00".join(contexts_of(name, row)), []).append(row)
    return list(groups.values())


async def extract(judge: HiddenStateJudge, name: str, rows: list[dict[str, Any]], folder: Path) -> None:
    verifier = StatementVerifier(method="threshold", reasons="none")  # today's defaults otherwise
    meta_path = folder / f"{name}.jsonl"
    done = {json.loads(line)["id"] for line in meta_path.read_text().splitlines()} if meta_path.exists() else set()
    part = len(list(folder.glob(f"{name}-*.npy")))
    todo = [[r for r in group if r["id"] not in done] for group in groups_of_rows(name, rows)]
    todo = [g for g in todo if g]
    total = sum(len(g) for g in todo)
    finished = 0
    started = time.perf_counter()
    for group in todo:
        judge.records.clear()
        t0 = time.perf_counter()
        outcomes = await verifier.verify(contexts_of(name, group[0]), [str(r["claim"]) for r in group], judge)
        seconds = (time.perf_counter() - t0) / len(group)
        vectors: list[np.ndarray] = []
        lines = []
        for row, outcome in zip(group, outcomes, strict=True):
            calls = []
            for call in outcome.calls:
                if not call.purpose.endswith(".p1") or call.error:
                    continue
                p, vector = judge.records[messages_key(call.messages)]
                assert vector is not None
                calls.append({"p": p, "row": len(vectors)})
                vectors.append(vector.astype(np.float16))
            verdict = outcome.verdict
            details = (verdict.details or {}) if verdict is not None else {}
            lines.append(
                {
                    "id": row["id"],
                    "label": int(row["label"]),
                    "part": part,
                    "v": None if verdict is None else int(verdict.value),
                    "p": outcome.probability,
                    "vetoed": details.get("vetoed_by", []),
                    "flags": list(verdict.flags) if verdict is not None else [],
                    "verbatim": bool(details.get("verbatim")),
                    "features": outcome.features.values() if outcome.features is not None else None,
                    "missing_counts": outcome.features.missing_counts if outcome.features is not None else 0,
                    "calls": calls,
                    "s": seconds,
                    "failure": outcome.failure.detail if outcome.failure is not None else None,
                }
            )
        if vectors:
            np.save(folder / f"{name}-{part}.npy", np.stack(vectors))
        else:
            np.save(folder / f"{name}-{part}.npy", np.zeros((0, len(NAMES), 1), dtype=np.float16))
        with meta_path.open("a") as out:
            for line in lines:
                out.write(json.dumps(line) + "\n")
        part += 1
        finished += len(group)
        elapsed = time.perf_counter() - started
        print(f"\r{name}: {finished}/{total} ({elapsed / finished:.1f} s an item)", end="", file=sys.stderr, flush=True)
    if total:
        print(file=sys.stderr)
