"""Greedy, grammar-constrained decoding for the local judge, with drafts checked in one batch.

llama-cpp-python's own loop (``Llama.generate``) costs the local judge most of its time on
a realistic RAG answer: sentence rewrites are generation, one token per forward pass, and
its sampler chain applies the grammar to all 151,936 candidate tokens at every step. At
temperature 0 the answer is the grammar-allowed token with the highest logit, and two
things make that cheaper without changing it:

- **Grammar second.** The highest-logit token is checked against the grammar alone; only
  when the grammar refuses it is the grammar applied to the whole vocabulary. The result
  is the same token: the best allowed token is the best token whenever the best is allowed.
- **Drafts from the prompt.** A rewrite copies most of its sentence and the JSON around it
  is in the prompt's examples, so the tokens that follow the last few generated ones in the
  prompt (or earlier in the answer) are proposed as a draft, and the model reads the last
  token and the draft in one batch. Each position's greedy token is checked against the
  draft in turn; the first disagreement ends the step and becomes the next token. A batch
  of a few tokens costs little more than one (the weights are read once), so every
  accepted draft token is nearly free. The output is the greedy output: a draft only ever
  saves a forward pass, never chooses a token (up to floating-point differences between
  batched and single-token evaluation, which can flip an exact near-tie).
- **Drafts fitted to the build** (``ASSAY_LOCAL_PASS_COSTS=build``; not yet the default).
  What a row costs depends on the build: on AMX a pass of 16 rows costs about 1.4 times
  one row, on AVX2 kernels about 5 times. Each pass then checks the draft tokens that
  give the most expected tokens per unit of the pass's cost (:func:`plan_drafts`), from
  the build's measured costs (:data:`PASS_COSTS`) and each call's own record of accepted
  drafts: a rewrite that copies its sentence keeps drafting, a requirement check whose
  drafts are refused stops. By default every draft is checked in full (``flat``).
- **Drafts the grammar allows** (:data:`GRAMMAR_DRAFTS`). A draft is cut before its first
  token the grammar refuses (a copy of the prompt's examples runs on past a string's
  closing quote): that token could never be accepted, so the model never reads it.
- **The end without a pass.** The judge's grammars are a JSON value or the rest of one
  JSON string, and once the grammar allows the end nothing may follow but whitespace. A
  call ends as soon as a token completes its grammar, instead of reading that token to
  choose the end-of-generation token after it.

Only the greedy case is handled here; sampling at a temperature goes through llama-cpp-python.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from assay.errors import ConfigError, JudgeError

__all__ = [
    "PASS_COSTS",
    "Decoded",
    "PassCosts",
    "common_prefix",
    "draft_from_context",
    "enable_sequences",
    "eval_prompt",
    "greedy_decode",
    "greedy_decode_many",
    "pass_costs",
    "plan_drafts",
    "prompt_cells",
    "prompt_logits_many",
]

DRAFT_MAX = 8
"""Tokens proposed per step at most (:func:`plan_drafts` checks as many of them as pay)."""
DRAFT_NGRAM = (4, 3, 2)
"""Suffix lengths tried, longest first, when looking for the last tokens earlier in the text."""


@dataclass(frozen=True)
class Decoded:
    """Generated token ids (without the end-of-generation token) and why generation ended."""

    tokens: list[int]
    finish_reason: str  # "stop" or "length"
    steps: int  # forward passes after the prompt
    drafted: int  # draft tokens proposed
    accepted: int  # draft tokens accepted


def draft_from_context(tokens: Sequence[int], limit: int, ngram: Sequence[int] = DRAFT_NGRAM) -> list[int]:
    """Up to ``limit`` tokens that followed the latest earlier occurrence of ``tokens``' last n tokens.

    Longer suffixes are tried first (a 4-token match is a far better guess than a 2-token
    one); the most recent earlier occurrence wins, since it is the likeliest continuation.
    """
    if limit <= 0:
        return []
    seq = list(tokens)
    n_all = len(seq)
    for n in ngram:
        if n_all <= n:
            continue
        suffix = seq[n_all - n :]
        first = suffix[0]
        # Scan backwards for the most recent earlier match of the suffix.
        for start in range(n_all - n - 1, -1, -1):
            if seq[start] == first and seq[start : start + n] == suffix:
                follow = seq[start + n : start + n + limit]
                if follow:
                    return follow
    return []


@dataclass(frozen=True)
class PassCosts:
    """What a forward pass costs by the rows it reads, relative to one row, on one kind of llama.cpp build.

    ``rows`` ascending from 1, ``relative`` the cost at each (1.0 at one row, never
    decreasing); between two the cost is interpolated, past the last it grows by the
    last two's slope.
    """

    name: str
    rows: tuple[int, ...]
    relative: tuple[float, ...]

    def __call__(self, rows: int) -> float:
        xs, ys = self.rows, self.relative
        if rows >= xs[-1]:
            return ys[-1] + (rows - xs[-1]) * (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        return float(np.interp(rows, xs, ys))


_ROWS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64)
PASS_COSTS = {
    "amx": PassCosts("amx", _ROWS, (1.0, 1.14, 1.2, 1.3, 1.3, 1.35, 1.35, 1.35, 1.35, 1.43, 1.74, 1.89, 2.5, 3.42)),
    "avx512": PassCosts(
        "avx512", _ROWS, (1.0, 1.52, 1.77, 1.77, 1.78, 2.44, 2.55, 3.05, 3.32, 3.72, 5.71, 5.71, 7.97, 10.72)
    ),
    "avx2": PassCosts(
        "avx2", _ROWS, (1.0, 1.45, 1.67, 1.67, 2.12, 2.44, 3.51, 4.84, 4.86, 4.86, 7.19, 9.14, 16.34, 16.34)
    ),
    "flat": PassCosts("flat", (1, 2), (1.0, 1.0)),
}
"""Pass costs by build, relative to one row: ``amx`` (the AMX build, Q8_0 copy), ``avx512``
and ``avx2`` (the default build, weights as shipped, on a CPU with and without AVX-512),
and ``flat`` (rows free: every call checks its whole draft, the loop before drafts were
fitted). Measured with ``benchmarks/judge_limit.py --judge-only --lengths 512 --batches
1,2,3,4,5,6,8,10,12,16,24,32,48,64`` on a 2-core Xeon (model 207; ``avx2`` is the AVX2-only
build on it), three runs alone: the median of each run's cost over its one-row cost, made
non-decreasing. ``ASSAY_LOCAL_PASS_COSTS`` chooses (:func:`pass_costs`)."""

PASS_COSTS_ENV = "ASSAY_LOCAL_PASS_COSTS"


def pass_costs(system_info: str | None = None) -> PassCosts:
    """The pass costs drafts are planned with: ``$ASSAY_LOCAL_PASS_COSTS``'s table, ``flat`` if unset.

    ``build`` picks the loaded llama.cpp build's table from its system info
    (``system_info``; default: llama.cpp's): a build with AMX's INT8 tiles is ``amx``;
    with AVX-512, ``avx512``; any other (AVX2, and builds nobody measured) ``avx2``, whose
    rows are dear: a call drafts only while its drafts are taken. ``flat`` is the
    default until the verdicts' quality is measured with the others on each build
    (they change which rows a pass reads, and so near-tie text).
    """
    import os

    chosen = os.environ.get(PASS_COSTS_ENV, "").strip().lower() or "flat"
    if chosen != "build":
        if chosen not in PASS_COSTS:
            choices = ", ".join([*PASS_COSTS, "build"])
            raise ConfigError(f"{PASS_COSTS_ENV} must be one of {choices}, got {chosen!r}")
        return PASS_COSTS[chosen]
    if system_info is None:
        import llama_cpp

        system_info = llama_cpp.llama_print_system_info().decode(errors="replace")
    if "AMX_INT8 = 1" in system_info:
        return PASS_COSTS["amx"]
    if "AVX512 = 1" in system_info:
        return PASS_COSTS["avx512"]
    return PASS_COSTS["avx2"]


def plan_drafts(guesses: Sequence[Sequence[int]], acceptance: Sequence[float], costs: PassCosts) -> list[int]:
    """How many of each call's draft tokens one pass checks: the most expected tokens per unit of the pass's cost.

    Every call in the pass yields its next token for sure; its i-th draft token is
    accepted only if the ones before it are, so with the call's acceptance ``a`` (the
    share of its drafted tokens accepted so far) it adds ``a ** i`` expected tokens and
    one row. Draft tokens are taken likeliest first, and the pass keeps the number of
    them whose expected tokens per unit of ``costs(rows)`` is highest (fewest on a tie).
    Each call's tokens taken are a prefix of its draft.
    """
    n = len(guesses)
    if n == 0:
        return []
    pairs = enumerate(zip(guesses, acceptance, strict=True))
    chances = sorted(
        ((a ** (i + 1), j, i) for j, (guess, a) in pairs for i in range(len(guess))), key=lambda c: (-c[0], c[1], c[2])
    )
    best, best_rate, expected = 0, n / costs(n), float(n)
    for k, (chance, _, _) in enumerate(chances, 1):
        expected += chance
        rate = expected / costs(n + k)
        if rate > best_rate:
            best, best_rate = k, rate
    take = [0] * n
    for _, j, _ in chances[:best]:
        take[j] += 1
    return take


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading token ids ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def eval_prompt(llama: Any, tokens: Sequence[int]) -> None:
    """Evaluate ``tokens``, re-using the KV cache of the longest prefix already in it.

    At least the last token is evaluated, so its logits are fresh. (Restoring a saved
    prefix first is the caller's: ``assay.models._local._PrefixStates``.)
    """
    n_ctx = llama.n_ctx()
    if len(tokens) > n_ctx:
        raise JudgeError(f"prompt of {len(tokens)} tokens exceeds the context window ({n_ctx})")
    common = min(common_prefix(llama._input_ids.tolist(), tokens), len(tokens) - 1)
    if common > 0 and llama._ctx.kv_cache_seq_rm(-1, common, -1):
        llama.n_tokens = common
    else:
        llama.reset()
        common = 0
    llama.eval(list(tokens[common:]))


_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)


GRAMMAR_DRAFTS = True
"""Cut each draft before its first token the grammar refuses, and end a call as soon as its
grammar allows the end (the module's doc). False: drafts as proposed, and the end token
chosen from one more pass (the loop before; ``benchmarks/judge_speed.py`` measures both)."""

GRAMMAR_CANDIDATES = 256
"""Highest-logit tokens put to the grammar together when the best one is refused, before the
whole vocabulary: the grammar checks each token on its own, and the vocabulary (151,936
tokens for the default model) costs about 30 ms a check on a 2-core Xeon, 256 tokens under
1 ms. Chosen on the three RAG answers of ``benchmarks/judge_speed.py``, whose refusals (5-18
an answer) 256 candidates all settled and 64 did not; on 4 other RAG answers (seed 12) and 3
other summaries, 33 refusals, none left to the whole vocabulary. The token is the same at
any size: only the time changes."""


class _GrammarCheck:
    """One llama.cpp grammar sampler, asked about one token first, then the next best, the whole vocabulary last."""

    def __init__(self, llama: Any, grammar: Any) -> None:
        import llama_cpp

        self._lib = llama_cpp
        self._sampler = llama_cpp.llama_sampler_init_grammar(
            llama._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not self._sampler:
            raise JudgeError("llama.cpp could not compile the output grammar")
        n_vocab = llama.n_vocab()
        self._all = np.zeros(n_vocab, dtype=_TOKEN_DATA)
        self._all["id"] = np.arange(n_vocab, dtype=np.int32)
        self._one = np.zeros(1, dtype=_TOKEN_DATA)
        self._some = np.zeros(min(GRAMMAR_CANDIDATES, n_vocab), dtype=_TOKEN_DATA)
        vocab = llama._model.vocab
        eos = llama_cpp.llama_vocab_eos(vocab)
        self._end = eos if eos >= 0 else llama_cpp.llama_vocab_eot(vocab)

    def _allows(self, token: int, sampler: Any = None) -> bool:
        self._one["id"][0], self._one["logit"][0] = token, 0.0
        self._apply(self._one, sampler)
        return bool(np.isfinite(self._one["logit"][0]))

    def complete(self) -> bool:
        """Whether the grammar allows the end here (for the judge's grammars: nothing but whitespace may follow)."""
        return self._end >= 0 and self._allows(self._end)

    def allowed(self, tokens: Sequence[int]) -> int:
        """How many of ``tokens``, in order from here, the grammar accepts (on a copy: its own state stays)."""
        if not tokens:
            return 0
        copy = self._lib.llama_sampler_clone(self._sampler)
        try:
            for i, token in enumerate(tokens):
                if not self._allows(token, copy):
                    return i
                self._lib.llama_sampler_accept(copy, token)
            return len(tokens)
        finally:
            self._lib.llama_sampler_free(copy)

    def _apply(self, data: np.ndarray, sampler: Any = None) -> None:
        """Set the logits of ``data``'s tokens the grammar refuses (in ``sampler``'s state, default its own) to -inf."""
        array = self._lib.llama_token_data_array(
            data=data.ctypes.data_as(ctypes.POINTER(self._lib.llama_token_data)),
            size=len(data),
            selected=-1,
            sorted=False,
        )
        self._lib.llama_sampler_apply(sampler or self._sampler, ctypes.byref(array))

    def best(self, logits: np.ndarray) -> int:
        """The highest-logit token the grammar allows next (the lowest id among equal logits, as argmax)."""
        top = int(logits.argmax())
        self._one["id"][0], self._one["logit"][0] = top, logits[top]
        self._apply(self._one)
        if np.isfinite(self._one["logit"][0]):
            return top
        some = self._some
        k = len(some)
        if 0 < k < len(logits):
            ids = np.argpartition(logits, -k)[-k:]
            some["id"], some["logit"] = ids, logits[ids]
            self._apply(some)
            allowed = np.isfinite(some["logit"])
            if allowed.any():
                best = some["logit"][allowed].max()
                # every token left out has a logit at most the k-th highest: the answer is among
                # the candidates unless one left out ties with it
                if best > logits[ids].min():
                    return int(some["id"][allowed & (some["logit"] == best)].min())
        self._all["logit"] = logits
        self._apply(self._all)
        chosen = int(self._all["logit"].argmax())
        if not np.isfinite(self._all["logit"][chosen]):
            raise JudgeError("the output grammar allows no token here")
        return int(self._all["id"][chosen])

    def accept(self, token: int) -> None:
        self._lib.llama_sampler_accept(self._sampler, token)

    def close(self) -> None:
        if self._sampler:
            self._lib.llama_sampler_free(self._sampler)
            self._sampler = None


def _ends(check: _GrammarCheck | None) -> bool:
    """Whether the call ends here, its grammar complete (with :data:`GRAMMAR_DRAFTS`)."""
    return check is not None and GRAMMAR_DRAFTS and check.complete()


def _logits(llama: Any, index: int) -> np.ndarray:
    import llama_cpp

    pointer = llama_cpp.llama_get_logits_ith(llama._ctx.ctx, index)
    return np.ctypeslib.as_array(pointer, shape=(llama.n_vocab(),))


def greedy_decode(
    llama: Any,
    prompt: Sequence[int],
    grammar: Any | None,
    max_tokens: int,
    *,
    draft: int = DRAFT_MAX,
    costs: PassCosts | None = None,
) -> Decoded:
    """Generate greedily after ``prompt`` under ``grammar``, re-using the KV cache of any shared prefix.

    Args:
        llama: A loaded ``llama_cpp.Llama``; its KV cache and ``input_ids`` are updated as
            llama-cpp-python's own loop would leave them (prompt and generated tokens).
        prompt: The full prompt's token ids.
        grammar: A ``LlamaGrammar`` or ``None``. The call ends as soon as the grammar allows
            the end (with :data:`GRAMMAR_DRAFTS`): it must allow nothing after its answer but
            whitespace, as the judge's do (``assay.models._local.json_value_ends``).
        max_tokens: At most this many generated tokens (``finish_reason`` ``length`` if reached).
        draft: Draft tokens proposed per step at most (0: one token per forward pass).
        costs: What a pass costs by its rows (default: the loaded build's, :func:`pass_costs`);
            they decide how much of each draft is checked (:func:`plan_drafts`).
    """
    n_ctx = llama.n_ctx()
    if len(prompt) >= n_ctx:
        raise JudgeError(f"prompt of {len(prompt)} tokens exceeds the context window ({n_ctx})")
    if not prompt:
        raise JudgeError("empty prompt")
    import llama_cpp

    vocab = llama._model.vocab
    costs = costs or pass_costs()
    eval_prompt(llama, prompt)
    check = _GrammarCheck(llama, grammar) if grammar is not None else None
    state = _Sequence(0, list(prompt), max_tokens, check, pos=len(prompt), logits=_logits(llama, -1).copy())
    try:
        while True:
            _choose(state, vocab, n_ctx, draft, llama_cpp)
            if state.finish is not None:
                break
            _plan([state], costs)
            batch = _Batch(llama)
            for k, token in enumerate(state.pending):
                batch.add(token, state.pos + k, 0, True)
            batch.decode()
            _verify(llama, state, vocab, llama_cpp)
            if state.finish is not None:
                break
        return Decoded(state.out, state.finish, state.steps, state.drafted, state.accepted)
    finally:
        if check is not None:
            check.close()
        llama.input_ids[: state.pos] = (state.prompt + state.out)[: state.pos]
        llama.n_tokens = state.pos


SEQUENCES = 8
"""Sequences one context holds at once (:func:`enable_sequences`, :func:`greedy_decode_many`)."""


def enable_sequences(llama: Any, n: int = SEQUENCES) -> None:
    """Give ``llama`` a context that holds ``n`` sequences in one KV cache (llama-cpp-python makes one).

    The cache stays unified (one buffer of ``n_ctx`` cells shared by all sequences), so a
    single sequence may still use the whole window and a shared prefix is stored once.
    """
    import contextlib

    from llama_cpp import _internals

    params = llama.context_params
    if params.n_seq_max >= n:
        return
    params.n_seq_max = n
    params.kv_unified = True
    old = llama._ctx
    llama._ctx = llama._stack.enter_context(
        contextlib.closing(_internals.LlamaContext(model=llama._model, params=params, verbose=llama.verbose))
    )
    old.close()
    llama.n_tokens = 0


class _Batch:
    """A llama.cpp batch filled token by token: (token, position, sequence, wants logits)."""

    def __init__(self, llama: Any) -> None:
        self._llama = llama
        self._raw = llama._batch.batch
        self.capacity = llama._batch._n_tokens
        self.size = 0

    def add(self, token: int, pos: int, seq: int, logits: bool) -> int:
        raw, i = self._raw, self.size
        raw.token[i], raw.pos[i], raw.n_seq_id[i], raw.logits[i] = token, pos, 1, logits
        raw.seq_id[i][0] = seq
        self.size += 1
        return i

    def decode(self) -> None:
        self._raw.n_tokens = self.size
        self._llama._ctx.decode(self._llama._batch)
        self.size = 0


@dataclass
class _Sequence:
    seq: int
    prompt: list[int]
    max_tokens: int
    check: _GrammarCheck | None
    pos: int = 0  # tokens in this sequence's cache
    out: list[int] = field(default_factory=list)
    logits: np.ndarray | None = None
    finish: str | None = None
    steps: int = 0
    drafted: int = 0
    accepted: int = 0
    pending: list[int] = field(default_factory=list)  # evaluated this step: the token, then its draft
    guess: list[int] = field(default_factory=list)  # the draft proposed after the pending token
    checked: int = 0  # draft tokens compared with the greedy token (accepted, and the first refused)
    first: int = 0  # batch index of the pending token

    @property
    def acceptance(self) -> float:
        """The share of this call's compared draft tokens that were accepted, from an even start (1 of 2)."""
        return (self.accepted + 1) / (self.checked + 2)


def greedy_decode_many(
    llama: Any,
    prompts: Sequence[Sequence[int]],
    grammars: Sequence[Any | None],
    max_tokens: Sequence[int],
    *,
    draft: int = DRAFT_MAX,
    costs: PassCosts | None = None,
) -> list[Decoded]:
    """:func:`greedy_decode` for several prompts at once, each its own sequence in one KV cache.

    A forward pass that reads one token costs nearly what one that reads a few dozen does
    (the weights are read once either way), so every step evaluates each unfinished
    sequence's last token and draft together. The prompts' shared prefix is evaluated
    once (reusing the live cache) and shared by every sequence. Each answer is the one
    :func:`greedy_decode` gives for its prompt alone, up to the floating-point differences
    batched evaluation already has (a near-tie can go the other way).

    The prompts (shared prefix once, then each one's own tokens) must fit ``n_ctx``
    together (:func:`prompt_cells`); generation shares what is left, a sequence waiting a
    step when the others hold it, and each sequence's room is what :func:`greedy_decode`
    would give it alone. When none can step, the latest ones are evicted (their cells
    freed) and read again, answer so far included, once there is room. Afterwards the
    live cache holds the shared prefix only, ready for the next batch with the same
    instructions.
    """
    if len(prompts) == 1:
        return [greedy_decode(llama, prompts[0], grammars[0], max_tokens[0], draft=draft, costs=costs)]
    import llama_cpp

    costs = costs or pass_costs()
    n_ctx = llama.n_ctx()
    vocab = llama._model.vocab
    shared = _open_sequences(llama, prompts)
    states: list[_Sequence] = []
    try:
        for seq, (prompt, grammar, limit) in enumerate(zip(prompts, grammars, max_tokens, strict=True)):
            check = _GrammarCheck(llama, grammar) if grammar is not None else None
            states.append(_Sequence(seq, list(prompt), limit, check, pos=shared))
        _read_prompts(llama, states)
        live = list(states)
        while live:
            for state in live:
                if not state.pending:
                    _choose(state, vocab, n_ctx, draft, llama_cpp)
            live = [s for s in live if not _finished(llama, s, shared)]
            if not live:
                break
            _plan(live, costs)
            stepping = []
            used = shared + sum(s.pos - shared for s in live)
            for state in live:
                need = len(_evicted(state)) + len(state.pending)
                if used + need > n_ctx:
                    continue  # waits for cells the others free
                used += need
                stepping.append(state)
            if not stepping:
                _evict(llama, live, shared, n_ctx)
                continue
            for state in stepping:
                _fill(llama, state, _evicted(state))  # an evicted sequence reads its text again first
            batch = _Batch(llama)  # after the fills: every batch is llama-cpp-python's one buffer
            for state in stepping:
                state.first = batch.size
                for k, token in enumerate(state.pending):
                    batch.add(token, state.pos + k, state.seq, True)
            batch.decode()
            for state in stepping:
                _verify(llama, state, vocab, llama_cpp)
            live = [s for s in live if not _finished(llama, s, shared)]
        return [Decoded(s.out, s.finish or "stop", s.steps, s.drafted, s.accepted) for s in states]
    finally:
        for state in states:
            if state.check is not None:
                state.check.close()
        _close_sequences(llama, prompts, shared)


def prompt_logits_many(llama: Any, prompts: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """The logits after each of ``prompts``, read together: one sequence each in one KV cache.

    The verdicts on the statements that share an evidence window differ only in their last
    few dozen tokens. One at a time, each of those short reads costs a whole forward pass
    (the weights are read once per pass, whatever its rows); together, one pass reads them
    all. The prompts' shared prefix is evaluated once (reusing the live cache), as in
    :func:`greedy_decode_many`, and afterwards the live cache holds it alone. Each row of
    logits is what the prompt alone would give, up to the floating-point differences of
    batched evaluation.
    """
    if len(prompts) == 1:
        eval_prompt(llama, prompts[0])
        return [_logits(llama, -1).copy()]
    shared = _open_sequences(llama, prompts)
    try:
        states = [_Sequence(seq, list(prompt), 0, None, pos=shared) for seq, prompt in enumerate(prompts)]
        _read_prompts(llama, states)
        logits = [state.logits for state in states if state.logits is not None]
        if len(logits) != len(states):
            raise JudgeError("a prompt's logits were not read")
        return logits
    finally:
        _close_sequences(llama, prompts, shared)


def _open_sequences(llama: Any, prompts: Sequence[Sequence[int]]) -> int:
    """Check that the prompts fit together, evaluate their shared prefix once and give every sequence its cells.

    Returns the shared prefix's length. Each prompt's own tokens are still to be read
    (:func:`_read_prompts`); :func:`_close_sequences` undoes the rest.
    """
    n_ctx = llama.n_ctx()
    if len(prompts) > llama.context_params.n_seq_max:
        raise JudgeError(f"{len(prompts)} sequences at once, above the context's {llama.context_params.n_seq_max}")
    if any(not p for p in prompts):
        raise JudgeError("empty prompt")
    shared, cells = prompt_cells(prompts)
    if cells > n_ctx:
        raise JudgeError(f"{len(prompts)} prompts take {cells} tokens together, above the context window ({n_ctx})")
    prefix = list(prompts[0][:shared])
    live_prefix = common_prefix(llama._input_ids.tolist(), prefix)
    if live_prefix > 0 and llama._ctx.kv_cache_seq_rm(-1, live_prefix, -1):
        llama.n_tokens = live_prefix
    else:
        llama.reset()
    llama.eval(prefix[live_prefix:])  # also drops every cell past the prefix, in every sequence
    if shared:
        for seq in range(1, len(prompts)):
            llama._ctx.kv_cache_seq_cp(0, seq, 0, shared)
    return shared


def _close_sequences(llama: Any, prompts: Sequence[Sequence[int]], shared: int) -> None:
    """Free every sequence's own cells: the live cache holds the shared prefix only."""
    for seq in range(1, len(prompts)):
        llama._ctx.kv_cache_seq_rm(seq, -1, -1)
    llama._ctx.kv_cache_seq_rm(0, shared, -1)
    llama.input_ids[:shared] = prompts[0][:shared]
    llama.n_tokens = shared


def prompt_cells(prompts: Sequence[Sequence[int]]) -> tuple[int, int]:
    """The prompts' shared prefix (each keeps >= 1 token of its own), and the cache cells all of them take."""
    shared = min(len(p) - 1 for p in prompts)
    for other in prompts[1:]:
        shared = min(shared, common_prefix(prompts[0], other))
    return shared, shared + sum(len(p) - shared for p in prompts)


def _evicted(state: _Sequence) -> list[int]:
    """What an evicted sequence must read again before its pending token: its prompt and answer so far."""
    return (state.prompt + state.out[:-1])[state.pos :]


def _fill(llama: Any, state: _Sequence, tokens: list[int]) -> None:
    """Read ``tokens`` into the sequence's cache (no logits: its next token is already chosen)."""
    batch = _Batch(llama)
    for token in tokens:
        batch.add(token, state.pos, state.seq, False)
        state.pos += 1
        if batch.size == batch.capacity:
            batch.decode()
    if batch.size:
        batch.decode()


def _evict(llama: Any, live: list[_Sequence], shared: int, n_ctx: int) -> None:
    """Every sequence waits on the others' cells: free the latest ones' until the first fits.

    An evicted sequence keeps its answer so far and reads it again when there is room
    (:func:`_evicted`); the first always fits alone, since its room is what it has alone.
    """
    first = live[0]
    used = shared + sum(s.pos - shared for s in live)
    for state in reversed(live[1:]):
        if used + len(_evicted(first)) + len(first.pending) <= n_ctx:
            return
        if state.pos > shared:
            llama._ctx.kv_cache_seq_rm(state.seq, shared, -1)
            used -= state.pos - shared
            state.pos = shared


def _finished(llama: Any, state: _Sequence, shared: int) -> bool:
    """Whether the sequence is done; a done sequence's own cells are freed for the others."""
    if state.finish is None:
        return False
    if state.pos > shared:
        llama._ctx.kv_cache_seq_rm(state.seq, shared, -1)
        state.pos = shared
    return True


def _read_prompts(llama: Any, states: list[_Sequence]) -> None:
    """Each sequence's own prompt tokens, packed into as few batches as fit; the last one's logits kept."""
    batch = _Batch(llama)
    waiting: list[tuple[_Sequence, int]] = []
    for state in states:
        own = state.prompt[state.pos :]
        for k, token in enumerate(own):
            last = k == len(own) - 1
            index = batch.add(token, state.pos + k, state.seq, last)
            if last:
                waiting.append((state, index))
            if batch.size == batch.capacity:
                batch.decode()
                for s, i in waiting:
                    s.logits = _logits(llama, i).copy()
                waiting = []
        state.pos = len(state.prompt)
    if batch.size:
        batch.decode()
        for s, i in waiting:
            s.logits = _logits(llama, i).copy()


def _choose(state: _Sequence, vocab: Any, n_ctx: int, draft: int, llama_cpp: Any) -> None:
    """The sequence's next token from its logits, and the draft to check with it (or its end)."""
    assert state.logits is not None
    check = state.check
    token = check.best(state.logits) if check is not None else int(state.logits.argmax())
    if llama_cpp.llama_vocab_is_eog(vocab, token):
        state.finish = "stop"
        return
    if check is not None:
        check.accept(token)
    state.out.append(token)
    if _ends(check):
        state.finish = "stop"  # the end: nothing to read
        return
    room = min(state.max_tokens - len(state.out), n_ctx - state.pos - 1)
    if room <= 0:
        state.finish = "length"
        return
    state.guess = draft_from_context(state.prompt + state.out, min(draft, room - 1)) if draft > 0 else []
    if check is not None and GRAMMAR_DRAFTS:
        del state.guess[check.allowed(state.guess) :]
    state.pending = [token]


def _plan(states: Sequence[_Sequence], costs: PassCosts) -> None:
    """Each sequence's pending token, then as much of its draft as this pass should check (:func:`plan_drafts`)."""
    take = plan_drafts([s.guess for s in states], [s.acceptance for s in states], costs)
    for state, n in zip(states, take, strict=True):
        state.pending = [state.pending[0], *state.guess[:n]]


def _verify(llama: Any, state: _Sequence, vocab: Any, llama_cpp: Any) -> None:
    """Accept the sequence's draft up to its first disagreement with the greedy token; drop the rest."""
    guess = state.pending[1:]
    state.steps += 1
    state.drafted += len(guess)
    check = state.check
    taken = 0
    for i, proposed in enumerate(guess):
        logits_i = _logits(llama, state.first + i)
        best = check.best(logits_i) if check is not None else int(logits_i.argmax())
        if best != proposed or llama_cpp.llama_vocab_is_eog(vocab, best):
            break
        if check is not None:
            check.accept(best)
        state.out.append(best)
        taken += 1
        if _ends(check):
            state.finish = "stop"
            break
    state.accepted += taken
    state.checked += taken + (taken < len(guess) and state.finish is None)  # the end is no refusal
    state.pos += 1 + taken
    if taken < len(guess):
        llama._ctx.kv_cache_seq_rm(state.seq, state.pos, -1)
    state.logits = _logits(llama, state.first + taken).copy()
    state.pending = []
    if state.finish is None and len(state.out) >= state.max_tokens:
        state.finish = "length"
