"""Whole scores kept between runs: a cached re-run finds each score without computing it again.

The judge-call cache (:mod:`assay.models._cache`) spares a re-run its judge calls, but not
the work around them: decomposing every answer into statements (sentences, terms, the
detector's patterns), rendering every prompt, parsing every cached answer. That work was
two thirds of a cached re-run. A :class:`ScoreMemo` keeps the score itself, in the same
file, so a re-run that changes nothing reads it back.

It must never hand back a score a fresh run would not compute, so the key is everything
that made it, and a score is kept only when it can be made again from the cache:

- **the code**: the bytes of every file of the installed ``assay`` package, the
  installed version of every distribution it requires, its extras' included (pysbd's
  sentences, the encoder an extra installs), and Python's version
  (:func:`code_fingerprint`): an edit to any line, an upgrade, a missing extra is
  another key;
- **the metric's spec** (its version, parameters and prompts' versions; a metric, prompt
  or function from outside assay, whose code the fingerprint does not read, or a
  parameter the spec cannot write down, is never kept), **the judge**
  (its identity, type and every property a metric consults), **the sample** (every
  field, after the mapping), **the repeat index**, the run's **temperature** and
  **re-asks**;
- **only a score whose every judge answer is in the cache** (:func:`collecting_calls`): a
  call that failed, an answer that was not stored (invalid, refused, truncated, a
  probability that is no distribution), a probability made of calls of its own (an API
  judge's ``+logprobs``) or an error result (``judge_error``, ``metric_error``) leaves
  nothing kept;
- **read back only while those answers are still there**: ``assay cache clear`` of a
  judge clears its scores.

A score read back is the one the judge-call cache would have produced, its calls marked
``cached`` (with no latency: nothing was waited for). A cascade metric (``escalate``)
is never kept: its later judges are part of its result.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from assay._samples import Sample
from assay._scores import Score
from assay.metrics._base import Metric, score_safely
from assay.metrics._escalate import Escalation
from assay.models._cache import JudgeCache, collecting_calls
from assay.models._protocol import ChoiceScorer, JudgeModel
from assay.prompts import REASKS

__all__ = ["ScoreMemo", "code_fingerprint", "fingerprint_of", "score_sample"]

_MEMO_VERSION = 1
"""Bumped whenever what a key covers or what may be kept changes."""


@functools.cache
def code_fingerprint() -> str:
    """:func:`fingerprint_of` the installed ``assay`` package, read once per process (about 3 MB)."""
    return fingerprint_of(Path(__file__).resolve().parents[1])


def fingerprint_of(package: Path) -> str:
    """The sha256 of every file under ``package``, the versions of assay's requirements and Python's."""
    digest = hashlib.sha256()
    for path in sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    for found in _requirements():
        digest.update(found.encode() + b"\0")
    digest.update(sys.version.encode())
    return digest.hexdigest()


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements() -> list[str]:
    """Each distribution assay requires (extras too) as imports find it: ``pysbd-0.3.4``; ``pysbd-`` when absent.

    Found by name among the ``*.dist-info`` and ``*.egg-info`` entries of ``sys.path``, the
    first on the path winning as it does for an import: one directory listing each, not
    each requirement's metadata read in turn (three times slower). Other distributions
    beside them (a plugin, a tool) do not move the fingerprint.
    """
    try:
        required = importlib.metadata.requires("assay") or []
    except importlib.metadata.PackageNotFoundError:  # a source tree that was never installed
        required = []
    wanted = {_normal(m.group(0)) for r in required if (m := re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", r))}
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # a zip file, a missing directory
            continue
        for name in names:
            stem, dot, kind = name.rpartition(".")
            if dot and kind in ("dist-info", "egg-info"):
                key = _normal(stem.partition("-")[0])
                if key in wanted:
                    found.setdefault(key, stem)
    return [found.get(key, f"{key}-") for key in sorted(wanted)]


def _all_ours(spec: Any) -> bool:
    """Whether every class, function and prompt the spec names is assay's own, and every value is written down."""
    if isinstance(spec, dict):
        if "$unencodable" in spec or "problem" in spec:
            return False
        for tag in ("$object", "$type", "type"):
            named = spec.get(tag)
            if isinstance(named, str) and not named.startswith("assay."):
                return False
        return all(_all_ours(v) for v in spec.values())
    if isinstance(spec, list):
        return all(_all_ours(v) for v in spec)
    return True


def _judge_facts(judge: JudgeModel) -> dict[str, Any]:
    """What a metric can read off its judge: who it is and how it is asked."""
    return {
        "identity": judge.identity,
        "model_id": judge.model_id,
        "type": f"{type(judge).__module__}.{type(judge).__qualname__}",
        "max_concurrency": judge.max_concurrency,
        "prefers_per_statement": judge.prefers_per_statement,
        "batched_calls": judge.batched_calls,
        "choices": isinstance(judge, ChoiceScorer),
        "strings": callable(getattr(judge, "complete_string", None)),
    }


class ScoreMemo:
    """Each metric's score of a sample, kept in ``cache`` beside the answers it was built from.

    Args:
        cache: The judge-call cache of the run.
        judge: The run's judge, bare (the stack's layers add nothing a metric can read).
        temperature: The run's temperature (``None``: each metric's own).
    """

    def __init__(self, cache: JudgeCache, judge: JudgeModel, *, temperature: float | None) -> None:
        self.cache = cache
        self._fixed = {
            "v": _MEMO_VERSION,
            "code": code_fingerprint(),
            "judge": _judge_facts(judge),
            "temperature": temperature,
        }
        self._model = judge.model_id
        self._specs: dict[int, tuple[Metric, dict[str, Any] | None]] = {}

    def _spec(self, metric: Metric) -> dict[str, Any] | None:
        """``metric``'s spec as JSON, once per metric of the run; ``None`` when it may not be kept (see the module)."""
        known = self._specs.get(id(metric))
        if known is None or known[0] is not metric:
            spec = metric.spec()
            ours = (spec.type or "").startswith("assay.") and _all_ours(spec.params)
            known = (metric, spec.model_dump(mode="json") if ours else None)
            self._specs[id(metric)] = known
        return known[1]

    def key(self, metric: Metric, sample: Sample, repeat: int) -> str:
        """The sha256 of everything that makes ``metric``'s score of ``sample`` (see the module)."""
        payload = {
            **self._fixed,
            "reasks": REASKS.get(),
            "metric": self._spec(metric),
            "sample": sample.model_dump(mode="json"),
            "repeat": repeat,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    async def score(
        self,
        metric: Metric,
        sample: Sample,
        judge: JudgeModel,
        repeat: int,
        on_call: Callable[[bool], None] | None = None,
    ) -> Score:
        """The kept score, or :func:`score_safely`'s through ``judge`` (the run's stack), kept when it can be.

        ``on_call`` is called once for each call of a score read back, as the judge-call
        cache's answers are counted.
        """
        if self._spec(metric) is None:
            return await score_safely(metric, sample, judge)
        key = self.key(metric, sample, repeat)
        kept = self.cache.get_score(key)
        if kept is not None:
            if on_call is not None:
                for _ in kept.all_calls:
                    on_call(True)  # read back whole: every call it was built from is in the cache
            return kept
        with collecting_calls() as calls:
            score = await score_safely(metric, sample, judge)
        if calls.complete and not score.is_error:
            self.cache.put_score(key, score, calls.keys, model=self._model)
        return score


async def score_sample(
    metrics: Sequence[Metric],
    sample: Sample,
    judge: JudgeModel,
    *,
    memo: ScoreMemo | None,
    repeat: int,
    escalations: Mapping[str, Escalation] | None = None,
    on_call: Callable[[bool], None] | None = None,
) -> dict[str, Score]:
    """Every metric's score of ``sample`` through ``judge`` (the run's stack), from ``memo`` where kept.

    What both engines do with a row. A metric that escalates is scored along its cascade,
    never kept.
    """
    scores: dict[str, Score] = {}
    for metric in metrics:
        escalation = (escalations or {}).get(metric.name)
        if memo is None or escalation is not None:
            scores[metric.name] = await score_safely(metric, sample, judge, escalation)
        else:
            scores[metric.name] = await memo.score(metric, sample, judge, repeat, on_call)
    return scores
