"""Composite metrics (after Axion): typed sub-metrics composed by an orchestrator.

A :class:`SubMetric` is one typed question to a judge: a :class:`~assay.prompts.JudgePrompt`
(instruction, pydantic input and output models, typed few-shot examples) plus how to
build its input from a :class:`~assay.Sample`. The library renders the prompt (untrusted
fields in delimited blocks), calls the judge with the output model as the schema,
validates the answer, and returns a :class:`SubResult`: the typed output, or the reason
there is none, and the judge calls.

A :class:`CompositeMetric` runs named sub-metrics and turns their typed outputs into a
:class:`~assay.Score` with a user ``aggregate`` function. Without an ``orchestrate``
function every sub-metric runs on the sample (concurrently when the judge allows it);
with one, the orchestrator decides the order and feeds one sub-metric's output into the
next. Any sub-metric failure makes the score unscored with that failure's reason and the
sub-metric's name in ``detail``; every judge call made so far is kept.

Faithfulness written as a composite (the built-in :class:`~assay.metrics.Faithfulness`
uses the same prompts directly)::

    from assay.grounding._decompose import STATEMENTS_PROMPT, AnswerToSplit
    from assay.metrics._faithfulness import STATEMENT_PROMPT, StatementCheck

    statements = SubMetric(
        STATEMENTS_PROMPT,
        from_sample=lambda s: AnswerToSplit(question=s.question or "", answer=s.answer or ""),
        required_fields=("answer",),
    )
    verdict = SubMetric(STATEMENT_PROMPT, required_fields=("contexts",))


    async def plan(sample: Sample, run: CompositeRun) -> None:
        split = await run.run(statements)  # input from the sample
        await run.run_each(  # one call per statement
            verdict,
            [StatementCheck(context=list(sample.contexts), statement=s) for s in split.statements],
        )


    def aggregate(out: Outputs) -> Aggregate:
        checked = zip(out.get(statements).statements, out.each(verdict), strict=True)
        verdicts = [Verdict(subject=s, value=v.verdict, reason=v.reason) for s, v in checked]
        if not verdicts:
            return Aggregate.unscored(UnscoredReason.NO_STATEMENTS, "the answer states nothing to check")
        supported = sum(v.value == 1 for v in verdicts)
        return Aggregate(supported / len(verdicts), verdicts=verdicts, explanation=f"{supported} supported")


    faithfulness = CompositeMetric(
        "faithfulness_composite", sub_metrics=(statements, verdict), aggregate=aggregate, orchestrate=plan
    )
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from assay._samples import Sample
from assay._scores import JudgeCall, MetricSpec, Score, UnscoredReason, Verdict
from assay.errors import ConfigError
from assay.metrics._base import missing_fields
from assay.metrics._common import failed, lacking, metric_error
from assay.metrics._spec import spec_from_fields
from assay.models._protocol import GenerateConfig, JudgeModel
from assay.parsing import Unparsed
from assay.prompts import Example, JudgePrompt, ask

__all__ = [
    "Aggregate",
    "CompositeMetric",
    "CompositeRun",
    "Outputs",
    "SubMetric",
    "SubMetricFailed",
    "SubResult",
]

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out", bound=BaseModel)


@dataclass(frozen=True)
class SubResult(Generic[Out]):
    """The outcome of one sub-metric run: a typed output or the reason there is none.

    Attributes:
        name: The sub-metric's name.
        output: The validated output, or ``None`` when the run failed.
        failure: Why there is no output (its reason becomes the score's unscored reason).
        calls: The judge calls made (kept whether or not the run succeeded).
    """

    name: str
    output: Out | None
    failure: Unparsed | None
    calls: tuple[JudgeCall, ...]

    @property
    def ok(self) -> bool:
        """Whether the run produced an output."""
        return self.output is not None


@dataclass(frozen=True)
class SubMetric(Generic[In, Out]):
    """One typed judge question: a prompt and how to build its input from a sample.

    Attributes:
        prompt: Instruction, input and output models, typed examples, version.
        from_sample: Builds the prompt's input from a sample; needed to run on a sample.
        required_fields: The sample fields ``from_sample`` reads (for the composite's
            ``required_fields``).
        config: Decoding settings for this sub-metric's calls (the judge's default if None).
    """

    prompt: JudgePrompt[In, Out]
    from_sample: Callable[[Sample], In] | None = None
    required_fields: tuple[str, ...] = ()
    config: GenerateConfig | None = None

    @classmethod
    def define(
        cls,
        name: str,
        *,
        instruction: str,
        input_model: type[In],
        output_model: type[Out],
        question: str,
        examples: Iterable[Example[In, Out] | tuple[In, Out]] = (),
        from_sample: Callable[[Sample], In] | None = None,
        required_fields: Sequence[str] = (),
        version: str = "1",
        config: GenerateConfig | None = None,
    ) -> SubMetric[In, Out]:
        """Declare a sub-metric without building its :class:`JudgePrompt` by hand.

        ``examples`` are ``Example(input, output)`` or ``(input, output)`` pairs; each must
        be an instance of the declared models (checked here, a ``TypeError`` otherwise).
        """
        prompt: JudgePrompt[In, Out] = JudgePrompt(
            name=name,
            instruction=instruction,
            input_model=input_model,
            output_model=output_model,
            question=question,
            examples=tuple(e if isinstance(e, Example) else Example(e[0], e[1]) for e in examples),
            version=version,
        )
        return cls(prompt, from_sample=from_sample, required_fields=tuple(required_fields), config=config)

    @property
    def name(self) -> str:
        """The prompt's name; also the ``purpose`` of this sub-metric's judge calls."""
        return self.prompt.name

    def input_for(self, source: Sample | In) -> In:
        """The prompt input for ``source``: itself if already an input, else ``from_sample``."""
        if isinstance(source, self.prompt.input_model):
            return source
        if isinstance(source, Sample):
            if self.from_sample is None:
                raise TypeError(
                    f"sub-metric {self.name!r} has no from_sample; pass a {self.prompt.input_model.__name__}"
                )
            return self.from_sample(source)
        raise TypeError(
            f"sub-metric {self.name!r} runs on a Sample or a {self.prompt.input_model.__name__}, "
            f"not a {type(source).__name__}"
        )

    async def run(self, source: Sample | In, judge: JudgeModel) -> SubResult[Out]:
        """Render, ask ``judge`` (output model as schema), validate. Never raises for judge failures."""
        answer = await ask(judge, self.prompt, self.input_for(source), config=self.config)
        return SubResult(self.name, answer.output, answer.failure, answer.calls)


@dataclass(frozen=True)
class Aggregate:
    """What an ``aggregate`` function returns when a bare float is not enough.

    Attributes:
        value: The score (NaN when unscored).
        verdicts: The atomic verdicts behind the value.
        explanation: A sentence a person can read.
        unscored_reason: Set (via :meth:`unscored`) when the outputs admit no score, e.g.
            ``no_statements``.
        detail: Why it is unscored.
    """

    value: float
    verdicts: Sequence[Verdict] = ()
    explanation: str | None = None
    unscored_reason: UnscoredReason | None = None
    detail: str | None = None

    @classmethod
    def unscored(cls, reason: UnscoredReason, detail: str, *, verdicts: Sequence[Verdict] = ()) -> Aggregate:
        """No score, with a machine-readable reason."""
        return cls(math.nan, verdicts=verdicts, unscored_reason=reason, detail=detail)


class Outputs:
    """The typed outputs of a composite's sub-metrics, for its ``aggregate`` function.

    ``get(sub)`` is the output of a sub-metric run once (``CompositeRun.run``);
    ``each(sub)`` the outputs of one run per input (``CompositeRun.run_each``), in order.
    """

    def __init__(self, sample: Sample) -> None:
        self.sample = sample
        self._single: dict[str, BaseModel] = {}
        self._each: dict[str, tuple[BaseModel, ...]] = {}

    def __contains__(self, name: object) -> bool:
        return name in self._single or name in self._each

    def names(self) -> tuple[str, ...]:
        """The sub-metrics that have produced output, in the order they finished."""
        return (*self._single, *self._each)

    def get(self, sub: SubMetric[Any, Out]) -> Out:
        """The output of ``sub`` (run once)."""
        if sub.name in self._each:
            raise TypeError(f"sub-metric {sub.name!r} was run per item: use each()")
        if sub.name not in self._single:
            raise KeyError(f"sub-metric {sub.name!r} has not been run")
        value = self._single[sub.name]
        assert isinstance(value, sub.prompt.output_model)
        return value

    def each(self, sub: SubMetric[Any, Out]) -> tuple[Out, ...]:
        """The outputs of ``sub`` run once per input, in input order."""
        if sub.name in self._single:
            raise TypeError(f"sub-metric {sub.name!r} was run once: use get()")
        if sub.name not in self._each:
            raise KeyError(f"sub-metric {sub.name!r} has not been run")
        values = self._each[sub.name]
        return tuple(v for v in values if isinstance(v, sub.prompt.output_model))

    def _claim(self, name: str) -> None:
        if name in self:
            raise ValueError(f"sub-metric {name!r} already ran for this sample; use run_each for several inputs")


class SubMetricFailed(Exception):
    """Raised inside an orchestrator when a sub-metric has no output; the composite catches it.

    Let it propagate: the composite turns it into an unscored score. (If an orchestrator
    swallows it anyway, the composite still sees the recorded failure.)
    """

    def __init__(self, name: str, failure: Unparsed) -> None:
        super().__init__(f"sub-metric {name!r}: {failure.reason.value}: {failure.detail}")
        self.name = name
        self.failure = failure


class CompositeRun:
    """One composite's work on one sample: runs sub-metrics, gathers outputs and calls."""

    def __init__(self, metric: CompositeMetric, sample: Sample, judge: JudgeModel) -> None:
        self.sample = sample
        self.judge = judge
        self.outputs = Outputs(sample)
        self.calls: list[JudgeCall] = []
        self.failure: SubMetricFailed | None = None
        self._metric = metric
        self._limit = asyncio.Semaphore(max(1, judge.max_concurrency) if metric.concurrent else 1)

    def _check(self, sub: SubMetric[Any, Any]) -> None:
        if self.failure is not None:
            raise self.failure
        if sub not in self._metric.sub_metrics:
            raise ConfigError(f"sub-metric {sub.name!r} is not declared in composite {self._metric.name!r}")

    async def _one(self, sub: SubMetric[In, Out], source: Sample | In) -> SubResult[Out]:
        async with self._limit:
            return await sub.run(source, self.judge)

    def _fail(self, name: str, failure: Unparsed) -> SubMetricFailed:
        self.failure = SubMetricFailed(name, failure)
        return self.failure

    async def run(self, sub: SubMetric[In, Out], source: Sample | In | None = None) -> Out:
        """Run ``sub`` once on ``source`` (default: the sample) and return its output.

        Raises:
            SubMetricFailed: The sub-metric has no output; let it propagate.
        """
        self._check(sub)
        self.outputs._claim(sub.name)
        result = await self._one(sub, self.sample if source is None else source)
        self.calls.extend(result.calls)
        if result.output is None:
            assert result.failure is not None
            raise self._fail(sub.name, result.failure)
        self.outputs._single[sub.name] = result.output
        return result.output

    async def run_each(self, sub: SubMetric[In, Out], inputs: Iterable[In | Sample]) -> tuple[Out, ...]:
        """Run ``sub`` once per input (concurrently when allowed) and return the outputs in order.

        Calls are recorded in input order. Sequentially, the first failure stops the run;
        concurrently, every call completes and the first failure in input order is reported.

        Raises:
            SubMetricFailed: Some input got no output; the detail names its position.
        """
        self._check(sub)
        self.outputs._claim(sub.name)
        items = list(inputs)
        if self._metric.concurrent and self.judge.max_concurrency > 1:
            results = list(await asyncio.gather(*(self._one(sub, item) for item in items)))
        else:
            results = []
            for item in items:
                results.append(await self._one(sub, item))
                if not results[-1].ok:
                    break
        for result in results:
            self.calls.extend(result.calls)
        outputs: list[Out] = []
        for i, result in enumerate(results, start=1):
            if result.output is None:
                assert result.failure is not None
                raise self._fail(sub.name, Unparsed(result.failure.reason, f"item {i}: {result.failure.detail}"))
            outputs.append(result.output)
        self.outputs._each[sub.name] = tuple(outputs)
        return tuple(outputs)

    async def run_all(self) -> None:
        """Run every declared sub-metric on the sample (the default orchestration)."""
        subs = self._metric.sub_metrics
        if self._metric.concurrent and self.judge.max_concurrency > 1:
            results = list(await asyncio.gather(*(self._one(sub, self.sample) for sub in subs)))
        else:
            results = []
            for sub in subs:
                results.append(await self._one(sub, self.sample))
                if not results[-1].ok:
                    break
        for result in results:
            self.calls.extend(result.calls)
        for sub, result in zip(subs, results, strict=False):
            if result.output is None:
                assert result.failure is not None
                raise self._fail(sub.name, result.failure)
            self.outputs._single[sub.name] = result.output


Orchestrate = Callable[[Sample, CompositeRun], Awaitable[None]]
AggregateFn = Callable[[Outputs], "float | Aggregate"]


@dataclass(frozen=True)
class CompositeMetric:
    """A metric built from named sub-metrics and an ``aggregate`` function.

    Args:
        name: The metric's name in results.
        sub_metrics: Every sub-metric the metric may run (names must be unique). Their
            prompt names and versions go into the spec.
        aggregate: Turns the typed outputs into a value (a float in [0, 1] by
            convention) or an :class:`Aggregate` with verdicts and an explanation.
        orchestrate: ``async (sample, run) -> None`` that runs sub-metrics through
            ``run.run`` / ``run.run_each`` in any order, feeding outputs forward. Without
            it, every sub-metric runs on the sample (each needs ``from_sample``).
        concurrent: Run independent calls concurrently, up to ``judge.max_concurrency``.
        required: The sample fields the metric needs; default: the union of the
            sub-metrics' ``required_fields``.
        version: Bump when the aggregate or orchestration changes.
        params: Settings of your aggregate or orchestration, recorded in the spec.

    An exception raised by ``orchestrate`` or ``aggregate`` (a bug) makes the score
    unscored with reason ``metric_error``, keeping the calls made so far.
    """

    name: str
    sub_metrics: tuple[SubMetric[Any, Any], ...]
    aggregate: AggregateFn
    orchestrate: Orchestrate | None = None
    concurrent: bool = True
    required: tuple[str, ...] | None = None
    version: str = "1"
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sub_metrics", tuple(self.sub_metrics))
        if not self.sub_metrics:
            raise ConfigError(f"composite {self.name!r} needs at least one sub-metric")
        names = [s.name for s in self.sub_metrics]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError(f"composite {self.name!r}: sub-metric names must be unique, repeated: {duplicates}")
        if self.orchestrate is None:
            lacking = [s.name for s in self.sub_metrics if s.from_sample is None]
            if lacking:
                raise ConfigError(
                    f"composite {self.name!r} has no orchestrate function, so every sub-metric runs on the "
                    f"sample and needs from_sample; missing for {lacking}"
                )

    @property
    def required_fields(self) -> tuple[str, ...]:
        """``required`` if given, else every field a sub-metric declares it reads."""
        if self.required is not None:
            return self.required
        return tuple(dict.fromkeys(f for s in self.sub_metrics for f in s.required_fields))

    def spec(self) -> MetricSpec:
        """Name, version, every field, and the sub-metrics' prompt versions.

        Sub-metrics are recorded with their prompts (a prompt that is a module-level
        constant by its import path); the functions (``aggregate``, ``orchestrate``,
        ``from_sample``) and the prompts' pydantic models by import path. Their code is not
        in the spec: bump ``version`` when it changes. A lambda or a function or class
        defined inside a function has no import path: the spec says so, and
        :func:`~assay.metrics.metric_from_spec` refuses to rebuild the metric.
        """
        return spec_from_fields(self)

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Run the sub-metrics, then aggregate; a sub-metric failure leaves the score unscored."""
        spec = self.spec()
        missing = missing_fields(self, sample)
        if missing:
            return lacking(self.name, missing, spec)
        run = CompositeRun(self, sample, judge)
        try:
            if self.orchestrate is None:
                await run.run_all()
            else:
                await self.orchestrate(sample, run)
        except SubMetricFailed:
            pass  # recorded in run.failure
        except Exception as exc:  # a bug in user code: keep the evidence
            return metric_error(self.name, exc, spec, during="orchestrate", calls=run.calls)
        if run.failure is not None:
            during = f"sub-metric {run.failure.name!r}"
            return failed(self.name, run.failure.failure, spec, during=during, calls=run.calls)
        try:
            result = self.aggregate(run.outputs)
        except Exception as exc:
            return metric_error(self.name, exc, spec, during="aggregate", calls=run.calls)
        if not isinstance(result, Aggregate):
            result = Aggregate(float(result))
        if result.unscored_reason is not None:
            return Score.unscored(
                self.name, result.unscored_reason, result.detail, verdicts=result.verdicts, calls=run.calls, spec=spec
            )
        if not math.isfinite(result.value):
            return Score.unscored(
                self.name,
                UnscoredReason.METRIC_ERROR,
                f"aggregate returned {result.value!r}; use Aggregate.unscored(reason, detail) for no score",
                verdicts=result.verdicts,
                calls=run.calls,
                spec=spec,
            )
        return Score.scored(
            self.name,
            result.value,
            verdicts=result.verdicts,
            explanation=result.explanation,
            calls=run.calls,
            spec=spec,
        )
