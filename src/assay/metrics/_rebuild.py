"""A metric rebuilt from its spec: :func:`metric_from_spec`, including specs without a ``type``.

A spec with a ``type`` names its class; :mod:`assay.metrics._spec` decodes its fields. A
spec without one is a schema 1 record of a built-in or a hand-written plugin spec. This
module sits above every metric (it may import any of them, and the registry), so the
metrics themselves import only :mod:`~assay.metrics._spec`, never what rebuilds them.

Schema 1 (before ``type``) wrote each built-in's params by hand. Graders carry a ``kind``;
the other built-ins are known by name. Each is rebuilt from those params, then checked:
same name, same version, and every prompt version it recorded unchanged. A composite
metric's schema 1 spec names no functions, so it cannot be rebuilt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from assay._scores import METRIC_SPEC_VERSION, MetricSpec
from assay.errors import ConfigError
from assay.metrics._base import Metric
from assay.metrics._spec import _OWN, _PROMPTS, _Decoder, _init_names, _short

__all__ = ["metric_from_spec", "metric_without_type", "unrecorded_settings"]

_TAGS = ("$object", "$type", "$metric")


def metric_from_spec(spec: MetricSpec | Mapping[str, Any]) -> Metric:
    """Rebuild the metric ``spec`` describes: any built-in, a user or plugin metric.

    A spec with a ``type`` is rebuilt by importing that class and decoding its fields. A
    spec without one is a record of an older assay (schema 1: built-in metrics are
    upgraded) or a plugin metric whose spec was written by hand (rebuilt through its
    ``assay.metrics`` entry point with ``params`` as options).

    Raises:
        ConfigError: The spec cannot be rebuilt: an object without an import path (a
            lambda, a local function or class), a class that is gone, an unknown field, or
            a metric that would not match its spec (its version or a prompt changed).
    """
    try:
        spec = spec if isinstance(spec, MetricSpec) else MetricSpec.model_validate(spec)
    except ValidationError as exc:
        raise ConfigError(f"not a metric spec: {exc}") from exc
    if spec.schema_version > METRIC_SPEC_VERSION:
        raise ConfigError(
            f"metric {spec.name!r}: spec schema {spec.schema_version} was written by a newer assay (this one reads "
            f"up to {METRIC_SPEC_VERSION}); upgrade assay"
        )
    if spec.type is None:
        return metric_without_type(spec)
    where = f"metric {spec.name!r}"
    cls = _Decoder(where, metric_from_spec).load(spec.type, "type")
    if not isinstance(cls, type):
        raise ConfigError(f"{where}: type {spec.type!r} is not a class")
    data = {k: v for k, v in spec.params.items() if k != _PROMPTS}
    settable = _init_names(cls)
    data.update({k: getattr(spec, k) for k in _OWN if k in settable})
    metric = _Decoder(where, metric_from_spec).build(cls, data, "params")
    if not isinstance(metric, Metric):
        raise ConfigError(f"{where}: {spec.type} is not a metric (it needs name, required_fields, spec and score)")
    _check_rebuilt(spec, metric)
    return metric


def _check_rebuilt(spec: MetricSpec, metric: Metric) -> None:
    """Raise unless ``metric``'s spec is ``spec``: the rebuilt metric must be the stored one.

    Raises:
        ConfigError: Naming what differs (version, a prompt version, a field).
    """
    rebuilt = metric.spec()
    before, after = spec.model_dump(mode="json"), rebuilt.model_dump(mode="json")
    if before == after:
        return
    old, new = before.pop("params"), after.pop("params")
    differences = [
        f"{where}{key} was {_short(a.get(key))}, is now {_short(b.get(key))}"
        for where, a, b in (("", before, after), ("params.", old, new))
        for key in dict.fromkeys([*a, *b])
        if a.get(key) != b.get(key)
    ]
    raise ConfigError(
        f"metric {spec.name!r} rebuilt from its spec is not the metric the spec describes: {'; '.join(differences)}. "
        "The metric's code (or the spec) changed since the spec was written; its scores would not be comparable"
    )


def unrecorded_settings(spec: MetricSpec) -> tuple[str, ...]:
    """Settings today's metric has that a schema 1 spec did not record (``verifier.details``, ...).

    A schema 1 built-in is rebuilt with today's defaults for everything its spec did not
    write down: the statement verifier's evidence window, copy rule, detail checks and
    judge-addressed guard came later. Results judged under the spec were judged without
    them, so a run cannot be *continued* with the rebuilt metric (its old and new samples
    would be judged two ways); its stored results stay readable. Empty for specs of
    schema 2 (they record every field) and for metrics whose settings were all recorded.

    Raises:
        ConfigError: the spec cannot be rebuilt at all.
    """
    if spec.type is not None or spec.schema_version != 1:
        return ()
    parts = spec.params.get("parts")
    if spec.params.get("kind") == "combined_grader" and isinstance(parts, list):
        found: list[str] = []
        for part in parts:
            inner = MetricSpec.model_validate(part["spec"])
            found += [f"{inner.name}.{name}" for name in unrecorded_settings(inner)]
        return tuple(found)
    now = metric_from_spec(spec).spec().model_dump(mode="json")["params"]
    return tuple(_missing(spec.params, now, ""))


def _missing(stored: Mapping[str, Any], now: Mapping[str, Any], prefix: str) -> list[str]:
    found: list[str] = []
    for key, value in now.items():
        if key == "prompts":
            continue
        if key not in stored:
            found.append(prefix + key)
        elif isinstance(value, dict) and isinstance(stored[key], dict) and not any(tag in value for tag in _TAGS):
            found += _missing(stored[key], value, f"{prefix}{key}.")
    return found


def metric_without_type(spec: MetricSpec) -> Metric:
    """Rebuild a spec that names no class: a schema 1 built-in, or a plugin through its entry point.

    Raises:
        ConfigError: Neither applies, the params are malformed, or the metric changed.
    """
    from assay.metrics._registry import build_metric, builtin_names, metric_entries

    if spec.schema_version == 1:
        built = _schema_1(spec)
        if built is not None:
            _check(spec, built)
            return built
    if spec.name in metric_entries() and spec.name not in builtin_names():
        try:
            return build_metric(spec.name, spec.params)
        except ConfigError as exc:
            raise ConfigError(
                f"metric {spec.name!r}: its spec names no type, and its plugin entry point does not take the spec's "
                f"params as options: {exc}. Give the plugin's spec() a type (assay.metrics.spec_from_fields)"
            ) from exc
    if spec.params.get("sub_metrics") is not None:
        raise ConfigError(
            f"metric {spec.name!r} is a composite metric recorded by an older assay (spec schema 1), which did not "
            "record its functions; build it in Python again"
        )
    raise ConfigError(
        f"metric {spec.name!r}: its spec names no type and it is neither a built-in nor an installed plugin, so it "
        "cannot be rebuilt (write its spec() with assay.metrics.spec_from_fields)"
    )


def _check(spec: MetricSpec, built: Metric) -> None:
    now = built.spec()
    prompts = now.params.get("prompts", {})
    changed = [
        f"prompt {name} was version {version}, is now {prompts.get(name)}"
        for name, version in spec.params.get("prompts", {}).items()
        if prompts.get(name) != version
    ]
    if built.name != spec.name:
        changed.insert(0, f"name was {spec.name!r}, is now {built.name!r}")
    if now.version != spec.version:
        changed.insert(0, f"version was {spec.version}, is now {now.version}")
    if changed:
        raise ConfigError(
            f"metric {spec.name!r} rebuilt from its spec (schema 1) is not the metric the spec describes: "
            f"{'; '.join(changed)}; its scores would not be comparable"
        )


def _schema_1(spec: MetricSpec) -> Metric | None:
    """The built-in a schema 1 spec describes, or ``None`` when it is not one."""
    params = spec.params
    kind = params.get("kind")
    base = spec.name.removesuffix("_with_reference").removesuffix("_without_reference")
    if kind is None and base in _REPLACED:
        raise ConfigError(f"metric {spec.name!r} (version {spec.version}, spec schema 1): {_REPLACED[base]}")
    build = _GRADERS.get(kind) if isinstance(kind, str) else _BY_NAME.get(base)
    if build is None:
        return None
    try:
        return build(spec.name, params)
    except (KeyError, TypeError, ValueError, ConfigError) as exc:
        raise ConfigError(f"metric {spec.name!r}: its stored spec (schema 1) is malformed: {exc!r}") from exc


def _config(params: Mapping[str, Any]) -> Any:
    from assay.models._protocol import GenerateConfig

    return GenerateConfig.model_validate(params["config"])


def _verifier(params: Mapping[str, Any]) -> Any:
    from assay.grounding._verify import STATEMENT_PROMPT, STATEMENT_PROMPT_V1, StatementVerifier

    stored = params["verifier"]
    prompts = {f"{p.name} v{p.version}": p for p in (STATEMENT_PROMPT, STATEMENT_PROMPT_V1)}
    if stored["prompt"] not in prompts:
        raise ValueError(f"unknown verifier prompt {stored['prompt']!r}")
    return StatementVerifier(
        method=stored["method"],
        threshold=stored["threshold"],
        chunk_chars=stored["chunk_chars"],
        reasons=stored["reasons"],
        prompt=prompts[stored["prompt"]],
        config=_config(stored),
    )


def _binary(name: str, p: Mapping[str, Any]) -> Metric:
    from assay.metrics._graders import BinaryJudgeGrader, Shot

    shots = [Shot.model_validate(s) for s in p.get("shots", [])]
    return BinaryJudgeGrader(p["criteria"], shots=shots, name=name, config=_config(p))


def _range(name: str, p: Mapping[str, Any]) -> Metric:
    from assay.metrics._graders import RangeJudgeGrader

    scale = {int(level): text for level, text in p["scale"].items()}
    return RangeJudgeGrader(p["criteria"], scale, expected_value=p["expected_value"], name=name, config=_config(p))


def _templated(name: str, p: Mapping[str, Any]) -> Metric:
    from assay.metrics._graders import TemplatedPromptJudgeGrader

    return TemplatedPromptJudgeGrader(p["template"], output=p["output"], name=name, config=_config(p))


def _combined(name: str, p: Mapping[str, Any]) -> Metric:
    from assay.metrics._graders import CombinedGrader

    parts = [(metric_from_spec(part["spec"]), part["weight"]) for part in p["parts"]]
    return CombinedGrader(parts, require_all_pass=p["require_all_pass"], pass_threshold=p["pass_threshold"], name=name)


def _faithfulness(name: str, p: Mapping[str, Any]) -> Metric:
    from assay.metrics._faithfulness import Faithfulness

    return Faithfulness(strategy=p["strategy"], decomposer=p["decomposer"], verifier=_verifier(p), config=_config(p))


def _context_recall(name: str, p: Mapping[str, Any]) -> Metric:
    from assay.metrics._rag import ContextRecall

    return ContextRecall(decomposer=p["decomposer"], verifier=_verifier(p))


def _factual_correctness(name: str, p: Mapping[str, Any]) -> Metric:
    from assay.metrics._rag import FactualCorrectness

    return FactualCorrectness(mode=p["mode"], decomposer=p["decomposer"], verifier=_verifier(p))


def _answer_relevancy(name: str, p: Mapping[str, Any]) -> Metric:
    from assay.metrics._rag import AnswerRelevancy

    return AnswerRelevancy(config=_config(p))


def _context_precision(name: str, p: Mapping[str, Any]) -> Metric:
    from assay.metrics._rag import ContextPrecision

    return ContextPrecision(reference=p["reference"], config=_config(p))


def _tool_call_accuracy(name: str, p: Mapping[str, Any]) -> Metric:
    from assay.metrics._tools import ToolCallAccuracy

    return ToolCallAccuracy(strict_order=p["strict_order"], ignore_extra_arguments=p["ignore_extra_arguments"])


_Build = Callable[[str, Mapping[str, Any]], Metric]

_GRADERS: dict[str, _Build] = {
    "binary_grader": _binary,
    "range_grader": _range,
    "templated_grader": _templated,
    "combined_grader": _combined,
}

_REPLACED: dict[str, str] = {
    "agent_goal_accuracy": (
        "version 1 judged a summary of the trace holistically; version 2 checks the goal's atomic requirements "
        "against the tool calls, so the scores are not comparable. Run the evaluation again, or reproduce version 1 "
        "with assay.metrics.HolisticGoalAccuracy (named agent_goal_accuracy_holistic)"
    ),
}
"""Built-ins whose schema 1 records describe a metric that no longer exists under that name."""

_BY_NAME: dict[str, _Build] = {
    "faithfulness": _faithfulness,
    "context_recall": _context_recall,
    "factual_correctness": _factual_correctness,
    "answer_relevancy": _answer_relevancy,
    "context_precision": _context_precision,
    "tool_call_accuracy": _tool_call_accuracy,
}
