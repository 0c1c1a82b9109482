"""A run described once: :class:`RunPlan`, built by :func:`plan_run` and carried out by an engine.

``assay run`` and :func:`~assay.evaluate` / :func:`~assay.aevaluate` build the same plan
with the same function (so a bad option gives the same error from both doors), and the
local engine or the Ray engine carries it out (:func:`assay.run._evaluate.execute`). What
a run compares on resume (:class:`~assay.run.RunOptions`) is derived from the plan, never
rebuilt beside it.

Adding a run option (``--escalate``, ``--export``, ...) is one change in each of these
places, and nowhere else:

1. a field of :class:`RunPlan` (with its default) and its check in :func:`plan_run`, which
   raises the option's :class:`~assay.errors.ConfigError`;
2. the keyword of :func:`~assay.evaluate` and :func:`~assay.aevaluate` (public, typed and
   documented: one line in ``evaluate``'s docstring); both hand every keyword to
   :func:`plan_run` as it is;
3. the CLI option: an ``Annotated`` alias beside the others in ``cli/_run.py`` and its
   parameter in ``run``; :func:`assay.cli._run._new_plan` passes it on by name;
4. whether a resume compares it: an option that changes results gets a field of the same
   name in :class:`~assay.run.RunOptions` (stored with the run, compared by
   :func:`~assay.run.check_resume`, and its CLI name added to ``_RESULT_OPTIONS`` so
   ``--resume`` refuses it); an option that changes no result (throughput, where results
   are exported) stays out of it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from assay._safety import redact_url
from assay.errors import ConfigError, SampleError
from assay.metrics._base import Metric
from assay.metrics._registry import metrics_from
from assay.models._confidence import judge_string as judge_string_of
from assay.models._protocol import JudgeModel
from assay.models._registry import _canonical, get_judge
from assay.models._stack import Limits
from assay.prompts import REASKS
from assay.run._cost import PriceTable
from assay.run._data import DEFAULT_MAX_FIELD_CHARS, DEFAULT_MAX_ROW_CHARS, SizeLimits
from assay.run._progress import ProgressMode
from assay.run._results import SampleResult
from assay.run._session import RunOptions
from assay.run._store import RunStore

if TYPE_CHECKING:
    from assay.models._cache import JudgeCache

__all__ = ["URL_JUDGES", "RunPlan", "judge_kind", "plan_run"]

URL_JUDGES = ("openai", "anthropic")
"""Judge kinds that read ``base_url`` (a plugin is handed it too); ``local`` reads none."""


def judge_kind(judge: str | None) -> str:
    """``local``, ``openai``, ``anthropic`` or a plugin's name, from a judge string (as ``get_judge`` reads it)."""
    spec = _canonical(judge or os.environ.get("ASSAY_JUDGE") or "local")
    return spec.partition(":")[0]


@dataclass(frozen=True)
class RunPlan:
    """Everything one run is: its data, metrics, judge, limits, store, resume, repeats and hooks.

    Built by :func:`plan_run` (never by hand: it checks every option), read by the engines.
    ``judge`` is the judge built once; ``judge_string`` the string it was built from (what
    the store records and what Ray workers rebuild it from), ``None`` for a judge object.
    """

    data: Any
    metrics: tuple[Metric, ...]
    judge: JudgeModel
    judge_string: str | None = None
    base_url: str | None = None
    store: RunStore | str | Path | None = None
    resume: str | None = None
    run_id: str | None = None
    cache: JudgeCache | str | Path | bool | None = None
    progress: ProgressMode | bool | None = "auto"
    mapping: dict[str, str] = field(default_factory=dict)
    concurrency: int | None = None
    limits: Limits = field(default_factory=Limits)
    repeats: int = 1
    reasks: int | None = None
    temperature: float | None = None
    engine: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    ray_workers: int = 2
    prices: PriceTable | None = None
    on_result: Callable[[SampleResult], None] | None = None
    on_error: Callable[[SampleError], None] | None = None
    keep_results: bool = True
    export: str | None = None
    """Where each result is also sent as it finishes (``otlp``, ``phoenix``, ``langfuse``; ``assay run --export``)."""
    max_field_chars: int = DEFAULT_MAX_FIELD_CHARS
    max_row_chars: int = DEFAULT_MAX_ROW_CHARS
    escalate: tuple[str | JudgeModel, ...] = ()
    agreement: float | None = None
    delta: float | None = None
    cascade: dict[str, Any] | None = None
    """Per metric, the cascade's plan: filled in by the engine from the store's calibrations, before any call."""

    @property
    def size_limits(self) -> SizeLimits:
        """The size limits every row is checked against."""
        return SizeLimits(self.max_field_chars, self.max_row_chars)

    @property
    def options(self) -> RunOptions:
        """The options a resume compares, read off this plan by name (see the module's docstring)."""
        values = {name: getattr(self, name, None) for name in RunOptions.model_fields}
        values |= {
            "cache": self.cache is not None and self.cache is not False,
            "reasks": self.reasks if self.reasks is not None else REASKS.get(),
            "timeout_s": self.limits.timeout_s,
            "max_attempts": self.limits.max_attempts,
            "escalate": tuple(
                lv if isinstance(lv, str) else judge_string_of(lv.model_id, lv.identity) for lv in self.escalate
            ),
        }
        return RunOptions.model_validate(values)

    @property
    def levels(self) -> tuple[tuple[str, JudgeModel], ...]:
        """The cascade's first judge as named (``--judge``), with the judge built from it."""
        named = redact_url(self.judge_string) or judge_string_of(self.judge.model_id, self.judge.identity)
        return ((named, self.judge),)


def plan_run(
    data: Any,
    metrics: Metric | str | Sequence[Metric | str],
    judge: JudgeModel | str | None = None,
    *,
    base_url: str | None = None,
    mapping: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    api_key: str | None = None,
    **settings: Any,
) -> RunPlan:
    """Check every option of a run and describe it; the one place a run's options are checked.

    ``settings`` are :class:`RunPlan`'s other fields, as :func:`~assay.evaluate` takes them;
    ``api_key`` goes to the judge string's judge only (a dry run names a key so that it needs none).

    Raises:
        ConfigError: a bad option, named as the caller gave it.
    """
    metric_list = metrics_from(metrics)
    repeats = settings.get("repeats", 1)
    if repeats < 1:
        raise ConfigError(f"repeats must be at least 1, got {repeats}")
    engine = settings.get("engine", "local")
    if engine not in ("local", "ray"):
        raise ConfigError(f"engine is 'local' or 'ray', got {engine!r}")
    if settings.get("resume") is not None and settings.get("store") is None:
        raise ConfigError("resume= needs the store the run is in: evaluate(..., store=PATH, resume=RUN_ID)")
    SizeLimits(
        settings.get("max_field_chars", DEFAULT_MAX_FIELD_CHARS), settings.get("max_row_chars", DEFAULT_MAX_ROW_CHARS)
    )  # checked before the judge is built
    _check_export(settings.get("export"))
    if base_url is not None:
        refuse_unread_base_url(judge)
    _check_cascade(settings)
    judge_model = judge if not isinstance(judge, str | None) else get_judge(judge, base_url=base_url, api_key=api_key)
    return RunPlan(
        data=data,
        metrics=tuple(metric_list),
        judge=judge_model,
        judge_string=judge if isinstance(judge, str) else None,
        base_url=base_url,
        mapping=dict(mapping or {}),
        limits=limits or Limits(),
        **settings,
    )


def _check_export(export: str | None) -> None:
    """``export=``: a destination assay sends to, with its extra installed (checked before anything runs)."""
    if export is None:
        return
    from assay.run._export import DESTINATIONS, check_destination

    if export not in DESTINATIONS:
        raise ConfigError(f"export={export!r} (--export): use one of {', '.join(DESTINATIONS)}")
    check_destination(export)


def _check_cascade(settings: dict[str, Any]) -> None:
    """``escalate`` with its target, on the local engine, with a store (the calibrations are there)."""
    escalate = settings.get("escalate") or ()
    if isinstance(escalate, str | JudgeModel):
        escalate = (escalate,)
    settings["escalate"] = tuple(escalate)
    agreement, delta = settings.get("agreement"), settings.get("delta")
    if not escalate:
        if agreement is not None or delta is not None:
            raise ConfigError(
                "agreement= (--agreement) and delta= (--delta) are a cascade's targets: give the levels after the "
                "first judge with escalate= (--escalate JUDGE, --escalate review)"
            )
        return
    if agreement is None:
        raise ConfigError("escalate= (--escalate) needs agreement= (--agreement A): the target agreement with people")
    if not 0.5 <= agreement < 1.0:
        raise ConfigError(f"agreement (--agreement) must be at least 0.5 and below 1, got {agreement:g}")
    if delta is not None and not 0.0 < delta < 1.0:
        raise ConfigError(f"delta (--delta) must be between 0 and 1, got {delta:g}")
    if settings.get("engine", "local") != "local":
        raise ConfigError("a cascade (escalate=, --escalate) runs on the local engine only, not on Ray")
    if settings.get("store") is None:
        raise ConfigError(
            "a cascade (escalate=) needs store=: its thresholds are chosen on the calibrations stored there "
            "(assay calibrate FILE --judge X)"
        )


def refuse_unread_base_url(*judges: JudgeModel | str | None) -> None:
    """A base URL given where no judge reads one would be stored with the run, yet never used: refused.

    ``evaluate`` and ``calibrate`` ask it of their judge, ``bench_judges`` of all of its judges
    (a URL one of them reads is theirs). A judge object has its own URL; ``local`` reads none.
    """
    if any(isinstance(j, str | None) and judge_kind(j) != "local" for j in judges):
        return
    judge = judges[0]
    if not isinstance(judge, str | None):
        raise ConfigError(
            f"base_url= is for a judge string (openai:MODEL); the judge object given ({judge.model_id}) "
            "has its own URL, and this one would be recorded with the run but never used"
        )
    raise ConfigError(
        f"base_url= (--base-url) is for {' and '.join(URL_JUDGES)} judges; the {judge or 'local'} judge runs "
        "in this process and reads no URL, so it would be ignored. Drop it, or name a judge that reads it "
        "(openai:MODEL)"
    )
