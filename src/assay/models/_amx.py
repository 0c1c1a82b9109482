"""Which llama.cpp build the local judge loads: the AMX one only where this machine grants AMX.

Intel's AMX tiles multiply int8 matrices several times faster than AVX-512, and llama.cpp
has kernels for them; on a 2-core Xeon they read prompts 1.4x faster (figures in
``docs/design/judging.md``). They are also how a judge run gets killed: a machine can list
``amx_int8`` and still not allow tile instructions, and then the first one is SIGILL, the
whole process gone with the run in it. So the AMX build is never the only one and never
trusted on the flags alone:

- ``make install`` builds llama-cpp-python as always (no AMX), and builds llama.cpp's
  libraries a second time with AMX into ``<venv>/lib/assay-llama-amx`` only where a probe
  (``scripts/amx_probe.c``: ask the kernel for tile permission, multiply two tiles) runs
  cleanly, and only if that build's logits agree with the default build's on a real prompt
  (``python -m assay.models._amx_check check DIR``). Its ``BUILD.json`` records the
  llama-cpp-python version it matches.
- Before the local judge first imports ``llama_cpp``, :func:`choose_library` runs the
  probe again, in a child process, on the machine the judge runs on. Only a clean
  ``granted`` points ``LLAMA_CPP_LIB_PATH`` at the AMX build; a refusal, a SIGILL, a
  timeout, a missing build or a version mismatch leaves the default build, and the reason
  is kept (:attr:`LibraryChoice.reason`).

``ASSAY_AMX=off`` never loads the AMX build; ``ASSAY_LLAMA_AMX_DIR`` names another
directory; a ``LLAMA_CPP_LIB_PATH`` set by the user is always respected.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LibraryChoice", "LoadedBuild", "amx_library_dir", "choose_library", "loaded_build", "probe_amx"]

AMX_DIR_ENV = "ASSAY_LLAMA_AMX_DIR"
BUILD_FILE = "BUILD.json"
PROBE_FILE = "amx-probe"
PROBE_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class LibraryChoice:
    """The llama.cpp build a process loads, and why.

    ``library`` is ``"amx"`` (the AMX build in ``path``) or ``"default"`` (the one
    llama-cpp-python installed, or the user's ``LLAMA_CPP_LIB_PATH``).
    """

    library: str
    reason: str
    path: str | None = None


def amx_library_dir() -> Path:
    """Where ``make install`` puts the AMX build: ``$ASSAY_LLAMA_AMX_DIR``, else ``<venv>/lib/assay-llama-amx``."""
    chosen = os.environ.get(AMX_DIR_ENV)
    return Path(chosen).expanduser() if chosen else Path(sys.prefix) / "lib" / "assay-llama-amx"


def probe_amx(probe: Path, timeout: float = PROBE_TIMEOUT_S) -> tuple[bool, str]:
    """Run the AMX probe in a child process: (granted, what it said or how it died)."""
    try:
        done = subprocess.run([str(probe)], capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return False, f"the AMX probe did not answer within {timeout:.0f} s"
    except OSError as exc:
        return False, f"the AMX probe could not run: {exc}"
    said = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        return False, f"the AMX probe was killed by {name}: this machine lists AMX but does not allow it"
    if done.returncode == 0 and said == "granted":
        return True, "granted"
    return False, said or f"the AMX probe exited with {done.returncode}"


_CHOICE: LibraryChoice | None = None
_CHOICE_LOCK = threading.Lock()


def choose_library() -> LibraryChoice:
    """Decide, once per process and before ``llama_cpp`` is imported, which build to load."""
    global _CHOICE
    with _CHOICE_LOCK:
        if _CHOICE is None:
            _CHOICE = _choose()
            if _CHOICE.library == "amx" and _CHOICE.path is not None:
                os.environ["LLAMA_CPP_LIB_PATH"] = _CHOICE.path
        return _CHOICE


def _choose() -> LibraryChoice:
    user_path = os.environ.get("LLAMA_CPP_LIB_PATH")
    if user_path:
        return LibraryChoice("default", f"LLAMA_CPP_LIB_PATH is set ({user_path}): that build is used")
    if os.environ.get("ASSAY_AMX", "").strip().lower() in ("0", "off", "no", "false"):
        return LibraryChoice("default", "ASSAY_AMX=off")
    if "llama_cpp" in sys.modules:
        return LibraryChoice("default", "llama_cpp was imported before the local judge chose its build")
    directory = amx_library_dir()
    build = directory / BUILD_FILE
    if not build.is_file():
        return LibraryChoice("default", f"no AMX build of llama.cpp at {directory} (made only where AMX is granted)")
    try:
        built_for = str(json.loads(build.read_text())["llama_cpp_python"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return LibraryChoice("default", f"unreadable {build}: {exc}")
    try:
        installed = importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return LibraryChoice("default", "llama-cpp-python is not installed")
    if built_for != installed:
        return LibraryChoice(
            "default", f"the AMX build is for llama-cpp-python {built_for}, {installed} is installed: run make install"
        )
    granted, said = probe_amx(directory / PROBE_FILE)
    if not granted:
        return LibraryChoice("default", said)
    return LibraryChoice("amx", "AMX tiles granted: probed in a child process", str(directory))


@dataclass(frozen=True)
class LoadedBuild:
    """The llama.cpp build a process has loaded: which library, its widest kernels, its version.

    ``kernels`` is ``amx``, ``avx512``, ``avx2`` or ``generic`` (what the build's own
    ``llama_print_system_info`` reports as compiled in), or ``unknown`` where ``llama_cpp``
    cannot be imported. Two builds of one llama.cpp version that differ here compute
    P(supported) differently (1 of 100 BEGIN verdicts moved between AVX2 and AVX-512:
    ``docs/design/judging.md``), so they are two judges.
    """

    library: str
    kernels: str
    version: str

    @property
    def tag(self) -> str:
        """The short form a cache key and a run record hold, e.g. ``avx2@0.3.36``."""
        return f"{self.kernels}@{self.version}"

    def describe(self) -> str:
        """For people: ``llama.cpp default build, AVX2 kernels (llama-cpp-python 0.3.36)``."""
        return f"llama.cpp {self.library} build, {self.kernels.upper()} kernels (llama-cpp-python {self.version})"


def kernels_of(system_info: str) -> str:
    """The widest kernels a build's ``llama_print_system_info`` text says it has."""
    flags = {
        name.strip().upper(): value.strip() for name, _, value in (p.partition("=") for p in system_info.split("|"))
    }
    flags = {name.rpartition(":")[2].strip(): value for name, value in flags.items()}
    for flag, kernels in (("AMX_INT8", "amx"), ("AVX512", "avx512"), ("AVX2", "avx2")):
        if flags.get(flag) == "1":
            return kernels
    return "generic"


_BUILD: LoadedBuild | None = None


def loaded_build() -> LoadedBuild:
    """The build this process loads (chosen by :func:`choose_library` first), once per process."""
    global _BUILD
    if _BUILD is None:
        choice = choose_library()  # before llama_cpp is first imported: it loads its build then
        try:
            version = importlib.metadata.version("llama-cpp-python")
        except importlib.metadata.PackageNotFoundError:
            version = "none"
        try:
            import llama_cpp

            info = llama_cpp.llama_print_system_info().decode(errors="replace")
        except (ImportError, OSError, AttributeError):
            return LoadedBuild(choice.library, "unknown", version)  # not kept: a later import may work
        _BUILD = LoadedBuild(choice.library, kernels_of(info), version)
    return _BUILD


def _main(argv: list[str]) -> int:
    if argv[:1] == ["choose"]:
        choice = choose_library()
        print(json.dumps({"library": choice.library, "reason": choice.reason, "path": choice.path}))
        return 0
    print(
        "usage: python -m assay.models._amx choose (the install-time check: python -m assay.models._amx_check)",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
