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
    │   └── TraceFormatError   a trace is in no format assay reads (names the closest and where it failed)
    ├── ModelWeightsError      the local model's weights are missing or corrupt
    ├── ExportError            a trace backend did not take a run's scores (says what was sent)
    └── JudgeError             a judge backend failed (network, server error, timeout)
        ├── JudgeRefusedError  the backend refused the request outright
        └── JudgeUnavailableError  every judge call of a run failed: nothing was judged
                               (``evaluate`` raises it; ``.result`` keeps what was stored)
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable

__all__ = [
    "AssayError",
    "ConfigError",
    "DatasetError",
    "ExportError",
    "JudgeCallWarning",
    "JudgeError",
    "JudgeRefusedError",
    "JudgeUnavailableError",
    "MissingExtraError",
    "ModelWeightsError",
    "SampleError",
    "StorageError",
    "TraceFormatError",
    "check_threshold",
    "counted",
    "did_you_mean",
    "json_message",
]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``" did you mean 'X'?"`` for the choice closest to a misspelt ``word``, or ``""``.

    Used by every error that names something a person typed (a metric, an option, a
    column, a sample id): ``f"unknown metric {name!r};{did_you_mean(name, names)} choose from ..."``.
    Case is ignored when comparing; the choice is shown as written.
    """
    close = closest(word, choices)
    return f" did you mean {close!r}?" if close is not None else ""


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to a misspelt ``word`` (case ignored), as written, or ``None`` (:func:`did_you_mean`)."""
    options = {choice.lower(): choice for choice in choices if choice}
    close = difflib.get_close_matches(word.lower(), list(options), n=1, cutoff=0.75)
    return options[close[0]] if close else None


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with its noun, singular for one: ``"1 sample"``, ``"3 samples"``, ``"1 bad row"``.

    ``plural`` for a noun that does not take an ``s`` (``counted(n, "repeat", "repeats")``
    needs none; ``counted(n, "query", "queries")`` does).
    """
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def json_message(exc: json.JSONDecodeError) -> str:
    """What a JSON decode error says, without the dangling "at" some of its messages end in.

    The standard library's ``msg`` for a raw control character is ``"Invalid control
    character at"``: followed by a location it read ``... at at line 1``. Every message
    that names the place itself (``at line L column C``) starts from this.
    """
    return exc.msg.removesuffix(" at")


def check_threshold(value: float, name: str = "threshold") -> float:
    """``value`` as a float when it is a score between 0 and 1, else a :class:`ConfigError`.

    The one check of every pass mark a person types, in every door: ``assert_faithful``'s
    and ``assert_scores``' ``min``, :class:`~assay.analysis.GatePolicy`'s ``threshold``
    (``EvalResult.gate``), ``assay gate --min`` and ``-m NAME=MIN``, ``assay report
    --threshold``, ``assay simulate --threshold``. A percentage is the usual slip, so a
    value up to 100 is answered with its fraction: ``min is a score between 0 and 1, not
    80; did you mean 0.8?``. ``name`` is what the person wrote (``min``, ``--threshold``).
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} is a score between 0 and 1, not {value!r}") from None
    if 0.0 <= number <= 1.0:
        return number
    hint = f"; did you mean {number / 100:g}?" if 2.0 <= number <= 100.0 else ""  # a percentage
    shown = f"{number:g}" if number == number else "nan"
    raise ConfigError(f"{name} is a score between 0 and 1, not {shown}{hint}")


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


class ExportError(AssayError):
    """``assay export`` stopped part-way: ``.report`` (an ``ExportReport``) says what was sent and what was not."""

    def __init__(self, message: str, *, report: object = None) -> None:
        super().__init__(message)
        self.report = report


class DatasetError(AssayError):
    """An input dataset cannot be read at all."""


class SampleError(AssayError, ValueError):
    """One input row is invalid. ``source``, ``line`` and ``unit`` say where it came from.

    ``unit`` names what ``line`` counts: ``"line"`` (JSONL and CSV: the physical line,
    shown as ``file:12:``, or ``file:12-40:`` when the row spans to ``end_line``),
    ``"item"`` (the 1-based index in a JSON array file, shown as ``file: item 3:``) or
    ``"row"`` (Parquet and datasets, shown as ``file: row 3:``). ``label`` is shown in
    place of the number where the data names its rows itself: a DataFrame's index label
    (``<dataframe>: index 0:``, ``<dataframe>: index 'q17':``), while ``line`` keeps the
    1-based position.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        end_line: int | None = None,
        unit: str = "line",
        label: str | None = None,
    ) -> None:
        self.source = source
        self.line = line
        self.end_line = end_line
        self.unit = unit
        self.label = label
        self.detail = message
        super().__init__(f"{self.where}{message}")

    @property
    def where(self) -> str:
        """The location prefix of the message (``"data.jsonl:3: "``), empty when unknown."""
        if self.line is None:
            return f"{self.source}: " if self.source is not None else ""
        span = (
            f"{self.line}-{self.end_line}"
            if self.end_line is not None and self.end_line != self.line
            else str(self.line)
        )
        if self.unit == "line":
            return f"{self.source}:{span}: " if self.source is not None else f"line {span}: "
        place = f"{self.unit} {self.label if self.label is not None else span}: "
        return f"{self.source}: {place}" if self.source is not None else place


class TraceFormatError(SampleError):
    """An agent trace is in none of the formats assay reads (see ``assay.load_trace``).

    ``path`` locates the failing part (``trace[2].content[1]``), ``problem`` says what is
    wrong with it, and ``format`` names the format it was read as (the closest one when
    none fits).
    """

    def __init__(self, message: str, *, path: str = "trace", problem: str = "", format: str | None = None) -> None:
        self.path = path
        self.problem = problem or message
        self.format = format
        super().__init__(message)


class StorageError(AssayError):
    """A file assay writes (the run store, the call cache, ``--out``) cannot be opened or written.

    The message names the file, what it is and the cause (a lock held too long, a full
    disk, a read-only directory). Whatever was already committed stays committed.
    """


class ModelWeightsError(AssayError):
    """The local judge's weights are missing, incomplete or fail their checksum."""


class JudgeError(AssayError):
    """A judge backend failed to produce any output (network, server error, timeout)."""


class JudgeUnavailableError(JudgeError):
    """Every judge call of a run failed, so nothing was judged (``assay run`` exits 3 for it).

    Raised by :func:`~assay.evaluate` once the run is over (and stored, when it has a
    store), with the first call's error and its hint; ``result`` is the run's
    :class:`~assay.EvalResult`, every sample unscored, for whoever wants to look.
    """

    def __init__(self, message: str, result: object = None) -> None:
        super().__init__(message)
        self.result = result


class JudgeCallWarning(UserWarning):
    """Some judge calls of a run failed (not all): said once per kind of error, with the first one's text."""


class JudgeRefusedError(JudgeError):
    """The backend refused the request (content filter, policy)."""
