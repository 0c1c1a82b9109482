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

Only the greedy case is handled here; sampling at a temperature goes through llama-cpp-python.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from assay.errors import JudgeError

__all__ = ["Decoded", "common_prefix", "draft_from_context", "eval_prompt", "greedy_decode"]

DRAFT_MAX = 8
"""Tokens proposed per step: past about this many, a batch costs noticeably more than one token."""
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


class _GrammarCheck:
    """One llama.cpp grammar sampler, asked about one token first and the whole vocabulary only if needed."""

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

    def _apply(self, data: np.ndarray) -> None:
        array = self._lib.llama_token_data_array(
            data=data.ctypes.data_as(ctypes.POINTER(self._lib.llama_token_data)),
            size=len(data),
            selected=-1,
            sorted=False,
        )
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(array))

    def best(self, logits: np.ndarray) -> int:
        """The highest-logit token the grammar allows next."""
        top = int(logits.argmax())
        self._one["id"][0], self._one["logit"][0] = top, logits[top]
        self._apply(self._one)
        if np.isfinite(self._one["logit"][0]):
            return top
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


def _logits(llama: Any, index: int) -> np.ndarray:
    import llama_cpp

    pointer = llama_cpp.llama_get_logits_ith(llama._ctx.ctx, index)
    return np.ctypeslib.as_array(pointer, shape=(llama.n_vocab(),))


def _decode_batch(llama: Any, tokens: Sequence[int]) -> None:
    """Append ``tokens`` to the sequence with logits for every one of them."""
    n_past = llama.n_tokens
    llama._batch.set_batch(batch=list(tokens), n_past=n_past, logits_all=True)
    llama._ctx.decode(llama._batch)
    llama.input_ids[n_past : n_past + len(tokens)] = tokens
    llama.n_tokens = n_past + len(tokens)


def greedy_decode(
    llama: Any,
    prompt: Sequence[int],
    grammar: Any | None,
    max_tokens: int,
    *,
    draft: int = DRAFT_MAX,
) -> Decoded:
    """Generate greedily after ``prompt`` under ``grammar``, re-using the KV cache of any shared prefix.

    Args:
        llama: A loaded ``llama_cpp.Llama``; its KV cache and ``input_ids`` are updated as
            llama-cpp-python's own loop would leave them (prompt and generated tokens).
        prompt: The full prompt's token ids.
        grammar: A ``LlamaGrammar`` or ``None``.
        max_tokens: At most this many generated tokens (``finish_reason`` ``length`` if reached).
        draft: Draft tokens proposed per step (0: one token per forward pass).
    """
    n_ctx = llama.n_ctx()
    if len(prompt) >= n_ctx:
        raise JudgeError(f"prompt of {len(prompt)} tokens exceeds the context window ({n_ctx})")
    if not prompt:
        raise JudgeError("empty prompt")
    import llama_cpp

    vocab = llama._model.vocab
    eval_prompt(llama, prompt)
    check = _GrammarCheck(llama, grammar) if grammar is not None else None
    context = list(prompt)
    out: list[int] = []
    steps = drafted = accepted = 0
    logits = _logits(llama, -1)
    try:
        while True:
            token = check.best(logits) if check is not None else int(logits.argmax())
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                return Decoded(out, "stop", steps, drafted, accepted)
            if check is not None:
                check.accept(token)
            out.append(token)
            context.append(token)
            room = min(max_tokens - len(out), n_ctx - llama.n_tokens - 1)
            if room <= 0:
                return Decoded(out, "length", steps, drafted, accepted)
            guess = draft_from_context(context, min(draft, room - 1)) if draft > 0 else []
            _decode_batch(llama, [token, *guess])
            steps += 1
            drafted += len(guess)
            taken = 0
            for i, proposed in enumerate(guess):
                logits_i = _logits(llama, i)
                best = check.best(logits_i) if check is not None else int(logits_i.argmax())
                if best != proposed or llama_cpp.llama_vocab_is_eog(vocab, best):
                    break
                if check is not None:
                    check.accept(best)
                out.append(best)
                context.append(best)
                taken += 1
            accepted += taken
            if taken < len(guess):
                keep = llama.n_tokens - (len(guess) - taken)
                llama._ctx.kv_cache_seq_rm(-1, keep, -1)
                llama.n_tokens = keep
            logits = _logits(llama, taken)
            if len(out) >= max_tokens:
                return Decoded(out, "length", steps, drafted, accepted)
    finally:
        if check is not None:
            check.close()
