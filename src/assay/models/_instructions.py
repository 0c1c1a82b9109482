"""The KV cells of a prompt's instructions, kept on disk between processes.

Every verdict prompt starts with the same ~900 tokens of instructions and examples (the
system message), every sentence rewrite with the same ~480. A process reads each kind
once, at about 100-200 tokens/s on two cores: on ``make demo`` that was 6-7 s of 34,
spent again by every ``assay run``. llama.cpp can hand out the cells of a sequence
(``llama_state_seq_get_data``) and take them back; this keeps those of each set of
instructions in a file, so a later process loads them (tens of milliseconds) instead.

A cached cell must be the cell the judge would have computed, or every verdict read
after it is another judge's. So:

- **The instructions are always read alone.** A process that does not find them on disk
  evaluates exactly those tokens from an empty cache (:meth:`_PrefixStates.instructions`
  in ``_local``), saves them, then reads the rest of the prompt; a process that finds them
  loads the same bytes and reads the rest. The first sample of a run and the hundredth
  start from the same cells, with or without the file.
- **The file's key is everything the cells depend on** (:func:`identity`): the weights
  file (path, size, modification time), every shared library of the llama.cpp build
  loaded (so the AMX build and the default one never share cells, nor a rebuild its
  predecessor), llama-cpp-python's version, the context size, batch size and threads,
  every ``GGML_*`` setting of the environment, and the instruction tokens themselves.
  The key is stored in the file and compared, not only hashed into its name.
- **A damaged file is not read.** The payload's SHA-256 is checked before llama.cpp gets
  it; a file that is short, altered, of another key or another format is ignored (and
  replaced by the next save), and the instructions are computed instead.
- **Writing is best effort and atomic.** A full disk or a read-only cache directory
  costs speed, never a run: the file is written beside its final name and renamed into
  place, so a reader never sees half of it, and two processes saving one key at once
  both leave a whole file. At most :data:`KEEP` files and :data:`KEEP_BYTES` bytes are
  kept (the least recently used go first; the newest is always kept).

``ASSAY_LOCAL_INSTRUCTION_CACHE=off`` keeps nothing on disk (the instructions are still
read alone first); any other value is the directory to use, by default
``<cache dir>/instructions`` (:func:`~assay.models._weights.cache_dir`).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import struct
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assay.models._weights import cache_dir

__all__ = ["KEEP", "KEEP_BYTES", "InstructionFiles", "identity", "instruction_files", "instructions_dir", "kept"]

ENV = "ASSAY_LOCAL_INSTRUCTION_CACHE"
MAGIC = b"ASSAYKV1"
KEEP = 32
"""Files kept (a few kinds of prompt per judge configuration; each ~28 KB a token for the default model)."""
KEEP_BYTES = 512 * 2**20
"""Bytes kept in all: the newest files up to this (the default metric's two take 38 MB)."""


def _file_facts(path: Path) -> str:
    stat = path.stat()
    return f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"


def identity(weights: Path, *, n_ctx: int, n_batch: int, n_threads: int) -> str:
    """What the cells of a prompt depend on, besides its tokens (see the module's doc)."""
    import llama_cpp
    import llama_cpp.llama_cpp as low

    library = Path(low._lib._name).resolve()
    libraries = sorted(p for p in library.parent.iterdir() if ".so" in p.name or p.suffix in (".dylib", ".dll"))
    settings = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("GGML_"))
    parts = {
        "weights": _file_facts(weights),
        "libraries": [_file_facts(p) for p in libraries if p.is_file()],
        "llama_cpp_python": llama_cpp.__version__,
        "n_ctx": n_ctx,
        "n_batch": n_batch,
        "n_threads": n_threads,
        "environment": settings,
    }
    return json.dumps(parts, sort_keys=True)


class InstructionFiles:
    """Files of saved instruction cells under ``directory``, for one :func:`identity`."""

    def __init__(self, directory: Path, key: str) -> None:
        self.directory = directory
        self.key = key
        self.loaded = 0  # files read and accepted
        self.refused = 0  # files found but not used (damaged, or another key)

    def _path(self, tokens: Sequence[int]) -> Path:
        digest = hashlib.sha256(self.key.encode() + b"\0" + struct.pack(f"<{len(tokens)}i", *tokens))
        return self.directory / f"{digest.hexdigest()[:40]}.kv"

    def load(self, tokens: Sequence[int]) -> bytes | None:
        """The saved cells of exactly ``tokens`` under this key, or None."""
        path = self._path(tokens)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        payload = self._payload(data, tokens)
        if payload is None:
            self.refused += 1
            return None
        self.loaded += 1
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: pruned last
        return payload

    def _payload(self, data: bytes, tokens: Sequence[int]) -> bytes | None:
        if len(data) < len(MAGIC) + 4 or not data.startswith(MAGIC):
            return None
        (length,) = struct.unpack_from("<I", data, len(MAGIC))
        start = len(MAGIC) + 4 + length
        try:
            header = json.loads(data[len(MAGIC) + 4 : start])
        except ValueError:
            return None
        payload = data[start:]
        if (
            not isinstance(header, dict)
            or header.get("key") != self.key
            or header.get("tokens") != list(tokens)
            or header.get("size") != len(payload)
            or header.get("sha256") != hashlib.sha256(payload).hexdigest()
        ):
            return None
        return payload

    def save(self, tokens: Sequence[int], cells: Any, size: int) -> bool:
        """Write ``size`` bytes of ``cells`` as the cells of ``tokens``; False if it could not be written."""
        payload = ctypes.string_at(ctypes.addressof(cells), size)
        header = json.dumps(
            {"key": self.key, "tokens": list(tokens), "size": size, "sha256": hashlib.sha256(payload).hexdigest()}
        ).encode()
        path = self._path(tokens)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=".part")
        except OSError:
            return False
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(MAGIC + struct.pack("<I", len(header)) + header + payload)
            os.replace(temporary, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            return False
        self._prune()
        return True

    def _prune(self) -> None:
        stale = time.time() - 3600  # a write cut short (the process killed) leaves its part behind
        with contextlib.suppress(OSError):
            for part in self.directory.glob(".*.part"):
                with contextlib.suppress(OSError):
                    if part.stat().st_mtime < stale:
                        part.unlink()
        try:
            files = sorted(_files(self.directory), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        except OSError:
            return
        total = 0
        for rank, path in enumerate(files):
            with contextlib.suppress(OSError):
                total += path.stat().st_size
                if rank >= KEEP or (rank > 0 and total > KEEP_BYTES):
                    path.unlink()


def _files(directory: Path) -> list[Path]:
    return list(directory.glob("*.kv")) if directory.is_dir() else []


def kept(directory: Path) -> tuple[int, int]:
    """How many instruction files ``directory`` holds, and their bytes in all.

    A file another run prunes meanwhile is not counted (several runs share the directory).
    """
    count = size = 0
    for path in _files(directory):
        with contextlib.suppress(OSError):
            size += path.stat().st_size
            count += 1
    return count, size


def instructions_dir() -> Path | None:
    """Where instruction cells are kept: ``$ASSAY_LOCAL_INSTRUCTION_CACHE``, else ``<cache dir>/instructions``.

    None when that variable says ``off``.
    """
    chosen = os.environ.get(ENV, "").strip()
    if chosen.lower() in ("off", "0", "no", "false"):
        return None
    return Path(chosen).expanduser() if chosen else cache_dir() / "instructions"


def instruction_files(weights: Path, *, n_ctx: int, n_batch: int, n_threads: int) -> InstructionFiles | None:
    """The files for a judge loaded from ``weights`` with these settings; None when turned off."""
    directory = instructions_dir()
    if directory is None:
        return None
    try:
        key = identity(weights, n_ctx=n_ctx, n_batch=n_batch, n_threads=n_threads)
    except (OSError, AttributeError):
        return None  # the build cannot be named: nothing is shared
    return InstructionFiles(directory, key)
