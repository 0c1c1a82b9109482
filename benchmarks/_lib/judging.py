"""The per-item judging cache: its folder, one slug per judge that answers, the product's own key; balanced accuracy."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from assay.grounding._verify import StatementVerifier
from assay.models import JudgeModel

CACHE = Path(__file__).resolve().parents[1] / ".cache"  # benchmarks/.cache


def ev_key(verifier: StatementVerifier) -> str:
    """An ``ev`` variant's name with every setting spelled out: its cache key.

    The prompt is named by its own version, so a reworded prompt is never read back from
    entries judged with the old one. ``verbatim`` and ``counts_to_judge`` are not in the
    name: every ``ev`` variant keeps them as they ship.
    """
    v = verifier
    flags = "-d0" * (not v.details) + "-g0" * (not v.guard) + "-s" * v.shared_evidence
    return f"ev-v{v.prompt.version}-c{v.chunk_chars}-e{v.evidence_chars}-w{v.whole_chars}{flags}"


PRODUCT_KEY = ev_key(StatementVerifier())
"""``product``: the faithfulness metric's own verifier, every setting as it ships."""


def balanced_accuracy(labels: np.ndarray, preds: np.ndarray) -> float:
    tpr = (preds[labels == 1] == 1).mean() if (labels == 1).any() else np.nan
    tnr = (preds[labels == 0] == 0).mean() if (labels == 0).any() else np.nan
    return float((tpr + tnr) / 2)


def bootstrap_ci(labels: np.ndarray, preds: np.ndarray, seed: int, n: int = 2000) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    values = [balanced_accuracy(labels[idx], preds[idx]) for idx in rng.integers(0, len(labels), (n, len(labels)))]
    lo, hi = np.nanpercentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def model_slug(judge: JudgeModel) -> str:
    """The judge's name and a digest of its whole identity: one cache per judge that answers.

    ``model_id`` alone is one name for several judges: the shipped weights on the AVX2
    build and their Q8_0 copy on the AMX build give different P (docs/design/judging.md),
    and a cache keyed on the name would serve one's verdicts as the other's.
    """
    name = judge.model_id.replace(":", "_").replace("/", "_")
    return f"{name}-{hashlib.sha1(judge.identity.encode()).hexdigest()[:10]}"
