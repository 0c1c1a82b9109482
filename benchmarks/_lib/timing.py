"""What every speed or PASS/MISS figure carries: the machine it ran on, the exit code, the configurations compared."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from assay.models._encoders import MiniLMEncoder

EXTENSIONS = (
    "avx2",
    "fma",
    "avx_vnni",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx512_bf16",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
)


def cpu() -> tuple[str, set[str]]:
    model, flags = "unknown CPU", set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name") and model == "unknown CPU":
            model = line.split(":", 1)[1].strip()
        elif line.startswith("flags") and not flags:
            flags = set(line.split(":", 1)[1].split())
    return model, flags


def machine_line() -> str:
    model, flags = cpu()
    shown = " ".join(f for f in EXTENSIONS if f in flags)
    return f"{model}, {os.cpu_count()} cores, {shown}; load average {os.getloadavg()[0]:.2f}"


def exit_code(rows: Sequence[str]) -> int:
    """1 when any figure MISSed its target, else 0 (what every PASS/MISS benchmark exits with)."""
    missed = [row for row in rows if row.rstrip().endswith(" MISS")]
    if missed:
        which = "1 figure missed its" if len(missed) == 1 else f"{len(missed)} figures missed their"
        print(f"\n{which} target")
    return 1 if missed else 0


class FixedCount(MiniLMEncoder):
    """The encoder before issue 32's eighth round: ``size`` texts a pass, whatever their length."""

    def __init__(self, size: int) -> None:
        super().__init__(batch_tokens=10**9)  # each group of ``size`` in one pass, padded to its longest
        self.size = size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), self.size):
            idx = order[start : start + self.size]
            out[idx] = MiniLMEncoder.encode(self, [texts[i] for i in idx])
        return out
