"""Exceptions raised by assay.

A judge that fails, refuses or answers garbage is *not* an exception: it becomes an
unscored :class:`~assay.Score` with a machine-readable reason. Exceptions are for
mistakes a person must fix (bad input, bad configuration, a missing extra).

The tree::

    AssayError
    ├── ConfigError            bad judge string, unknown metric, bad option value
    │   └── MissingExtraError  an optional dependency is not installed (names the extra)
    ├── DatasetError           an input file cannot be read at all (missing, not UTF-8)
    ├── SampleError            one row is invalid (carries file and line number)
    ├── ModelWeightsError      the local model's weights are missing or corrupt
    └── JudgeError             a judge backend failed (network, server error, timeout)
        └── JudgeRefusedError  the backend refused the request outright
"""

from __future__ import annotations

__all__ = [
    "AssayError",
    "ConfigError",
    "DatasetError",
    "JudgeError",
    "JudgeRefusedError",
    "MissingExtraError",
    "ModelWeightsError",
    "SampleError",
]


class AssayError(Exception):
    """Base class of every error assay raises on purpose."""


class ConfigError(AssayError, ValueError):
    """A configuration value is invalid: say which, and what would be valid."""


class MissingExtraError(ConfigError, ImportError):
    """An optional dependency is missing; the message names the extra that provides it."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            f"{purpose} needs the '{package}' package, which is not installed. "
            f"Install it with: pip install 'assay[{extra}]'"
        )


class DatasetError(AssayError):
    """An input dataset cannot be read at all."""


class SampleError(AssayError, ValueError):
    """One input row is invalid. ``source`` and ``line`` say where it came from."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None) -> None:
        self.source = source
        self.line = line
        self.detail = message
        where = ""
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(f"{where}{message}")


class ModelWeightsError(AssayError):
    """The local judge's weights are missing, incomplete or fail their checksum."""


class JudgeError(AssayError):
    """A judge backend failed to produce any output (network, server error, timeout)."""


class JudgeRefusedError(JudgeError):
    """The backend refused the request (content filter, policy)."""
