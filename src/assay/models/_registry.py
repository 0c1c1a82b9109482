"""Choosing a judge by a string: ``local``, ``local:/path.gguf``, ``openai:MODEL``, or a plugin's ``NAME:MODEL``.

A judge that generates its verdicts (not ``local``) is given a confidence for them by a
suffix after the model: ``openai:gpt-4o-mini+logprobs`` (the answer token's
log-probabilities, ``+logprobs:N`` for the top N), ``anthropic:MODEL+samples:5`` (agreement
over 5 answers); see :mod:`assay.models._confidence`. Without one, nothing changes.

A judge backend in another package registers under the ``assay.judges`` entry point
group, in its ``pyproject.toml``::

    [project.entry-points."assay.judges"]
    command = "my_package.judges:build"

where ``build(model: str, **options) -> JudgeModel``. ``get_judge("command:MODEL")`` (and
so ``assay run --judge command:MODEL``) then calls ``build("MODEL")``, after the built-in
names: a plugin cannot take over ``local``, ``openai`` or ``anthropic``. ``base_url`` and
``api_key``, when given to :func:`get_judge`, are passed on as options.
"""

from __future__ import annotations

import inspect
import os
import re
from importlib.metadata import EntryPoint, entry_points

from assay.errors import AssayError, ConfigError, did_you_mean
from assay.models._protocol import JudgeModel

__all__ = ["BUILTIN_JUDGES", "JUDGE_FORMS", "JUDGE_GROUP", "get_judge", "judge_forms", "judge_plugins"]

JUDGE_FORMS = "local, local:/path/to/model.gguf, openai:MODEL, anthropic:MODEL"
"""The built-in judge strings (:func:`judge_forms` adds the installed plugins)."""

_CONFIDENCE = re.compile(r"\+((?:logprobs|samples)(?::[^+]*)?)$")

JUDGE_GROUP = "assay.judges"
"""The entry point group judge backends register under."""

BUILTIN_JUDGES = ("local", "openai", "anthropic")


def judge_plugins() -> dict[str, EntryPoint]:
    """Judge backends installed under the ``assay.judges`` entry point group, by name.

    A name the built-ins use is left out, and of two plugins with one name the first
    found wins.
    """
    plugins: dict[str, EntryPoint] = {}
    for point in entry_points(group=JUDGE_GROUP):
        if point.name not in BUILTIN_JUDGES:
            plugins.setdefault(point.name, point)
    return plugins


def judge_forms() -> str:
    """Every judge string this installation knows: the built-ins, then ``NAME:MODEL`` per plugin."""
    return _forms(judge_plugins())


def _forms(plugins: dict[str, EntryPoint]) -> str:
    return ", ".join([JUDGE_FORMS, *(f"{name}:MODEL" for name in sorted(plugins))])


def _plugin_judge(point: EntryPoint, model: str, options: dict[str, str]) -> JudgeModel:
    where = f"judge plugin {point.name!r} ({point.value})"
    try:
        factory = point.load()
    except Exception as exc:  # a broken plugin: say which one, whatever it raised
        raise ConfigError(f"{where} could not be loaded: {type(exc).__name__}: {exc}") from exc
    try:
        inspect.signature(factory).bind(model, **options)
    except TypeError:
        given = ", ".join(["model", *options])
        raise ConfigError(f"{where} cannot be called as factory({given})") from None
    except ValueError:  # no signature to check (a builtin): let the call decide
        pass
    try:
        judge = factory(model, **options)
    except AssayError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    if not isinstance(judge, JudgeModel):
        raise ConfigError(
            f"{where} returned a {type(judge).__name__}, not a judge "
            "(it needs model_id, max_concurrency, prefers_per_statement and generate)"
        )
    return judge


_PROVIDER_FORMS = ("openai", "anthropic")


def _canonical(spec: str) -> str:
    """The judge string in assay's own form: ``openai:MODEL`` for the forms other tools use.

    LiteLLM and Inspect write ``openai/gpt-4o-mini``; promptfoo writes ``openai:chat:gpt-4o-mini``.
    Both mean ``openai:gpt-4o-mini`` (and the same for ``anthropic``). A model name may hold
    a slash itself (``openai:meta-llama/Llama-3``), so only a string without a colon is read
    as ``provider/model``.
    """
    spec = spec.strip()
    provider, slash, model = spec.partition("/")
    if ":" not in spec and slash and provider in _PROVIDER_FORMS and model:
        return f"{provider}:{model}"
    kind, _, rest = spec.partition(":")
    if kind in _PROVIDER_FORMS and rest.startswith(("chat:", "messages:")):
        return f"{kind}:{rest.partition(':')[2]}"
    return spec


def get_judge(spec: str | None = None, *, base_url: str | None = None, api_key: str | None = None) -> JudgeModel:
    """Build a judge from its string form.

    Args:
        spec: ``local`` (the embedded default), ``local:/path/model.gguf`` (any GGUF file),
            ``openai:MODEL`` (any OpenAI-compatible server), ``anthropic:MODEL``, or
            ``NAME:MODEL`` for a judge plugin (``assay.judges`` entry point ``NAME``).
            ``openai/MODEL`` (LiteLLM, Inspect) and ``openai:chat:MODEL`` (promptfoo) are
            read as ``openai:MODEL``. Default: ``$ASSAY_JUDGE``, else ``local``.
        base_url: For ``openai:``; default ``$OPENAI_BASE_URL``, else OpenAI's. Passed on
            to a plugin when given.
        api_key: For ``openai:``; default ``$OPENAI_API_KEY``. Passed on to a plugin when
            given.

    A judge other than ``local`` takes a confidence suffix: ``openai:MODEL+logprobs``,
    ``+logprobs:N``, ``+samples:K`` (:class:`~assay.models.ConfidentJudge`).

    Raises:
        ConfigError: the string names no known judge, or a plugin fails to load, does
            not accept the options, or returns something that is not a judge; a
            confidence suffix the judge cannot take.
    """
    spec = (spec or os.environ.get("ASSAY_JUDGE") or "local").strip()
    suffix = _CONFIDENCE.search(spec)
    if suffix is None:
        return _plain_judge(spec, base_url=base_url, api_key=api_key)
    from assay.models._confidence import Confidence, ConfidentJudge

    confidence = Confidence.parse(suffix.group(1))  # a bad suffix is refused before any judge is built
    return ConfidentJudge(_plain_judge(spec[: suffix.start()], base_url=base_url, api_key=api_key), confidence)


def _plain_judge(spec: str, *, base_url: str | None, api_key: str | None) -> JudgeModel:
    spec = _canonical(spec)
    kind, _, rest = spec.partition(":")
    if kind == "local":
        from assay.models._local import LocalJudge

        return LocalJudge(rest or None)
    if kind == "openai":
        if not rest:
            raise ConfigError("openai judge needs a model name, e.g. openai:gpt-4o-mini")
        from assay.models._openai import OpenAIJudge

        return OpenAIJudge(rest, base_url=base_url or os.environ.get("OPENAI_BASE_URL"), api_key=api_key)
    if kind == "anthropic":
        if not rest:
            raise ConfigError("anthropic judge needs a model name, e.g. anthropic:claude-sonnet-4-5")
        from assay.models._anthropic import AnthropicJudge

        return AnthropicJudge(rest, base_url=base_url, api_key=api_key)
    plugins = judge_plugins()
    if kind in plugins:
        options = {k: v for k, v in (("base_url", base_url), ("api_key", api_key)) if v is not None}
        return _plugin_judge(plugins[kind], rest, options)
    known = [*BUILTIN_JUDGES, *plugins]
    raise ConfigError(f"unknown judge {spec!r};{did_you_mean(kind, known)} use one of: {_forms(plugins)}")
