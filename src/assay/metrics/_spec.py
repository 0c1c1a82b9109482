"""Metric specs: a metric's configuration as JSON, derived from its fields, and back.

:func:`spec_from_fields` writes the spec of a metric that is a dataclass or a pydantic model;
every built-in's ``spec()`` is that call. The spec holds the metric's ``name`` and
``version``, its class as ``type`` (``module:qualname``), and in ``params`` every public
field except ``name`` and ``version``, encoded recursively:

- JSON scalars as they are, tuples and lists as lists, mappings as objects (keys as strings);
- a pydantic model as its JSON dump, a dataclass as an object of its public fields;
- a nested metric as its own spec (a :class:`~assay.metrics.CombinedGrader` holds its parts');
- a function or a class as ``{"$object": "module:qualname"}``, and a judge prompt that is a
  module-level constant as ``{"$object": "module:NAME", "name": ..., "version": ...}``;
- a value whose declared type does not name its class (``Any``, a type variable, a
  protocol, a union) as ``{"$type": "module:qualname", "value": ...}``, or
  ``{"$metric": spec}`` for a metric.

``params["prompts"]`` maps the name of every judge prompt the metric uses to its version
(the judge-visible prompt identity).

:func:`~assay.metrics.metric_from_spec` (in ``_rebuild``) reverses it: it imports the class, decodes each field by its
declared type, builds the metric, and checks that the rebuilt metric's spec equals the
spec given, so a metric whose code changed since the spec was written (a new version, a
new prompt) is an error instead of a metric that silently scores differently. A lambda or
a function or class defined inside a function has no import path: its spec records why,
and rebuilding it is an error naming the metric and the object.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import functools
import importlib
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from assay._scores import MetricSpec
from assay.errors import ConfigError
from assay.metrics._base import Metric
from assay.prompts import JudgePrompt

__all__ = ["fields_json", "spec_from_fields"]

_CACHE = "_assay_spec"
_PROMPTS = "prompts"
_OWN = ("name", "version")  # the spec's own fields, not params


def spec_from_fields(metric: Any, /, *, prompts: Mapping[str, str] | None = None) -> MetricSpec:
    """The spec of ``metric`` (a dataclass or a pydantic model), derived from its fields.

    Write a metric's ``spec()`` as ``return spec_from_fields(self)`` and
    :func:`metric_from_spec` can rebuild it. The spec of a frozen dataclass is computed
    once and kept on the instance.

    Args:
        metric: The metric; its public fields become ``params``.
        prompts: ``{name: version}`` of judge prompts the metric uses that are not in its
            fields (module constants); prompts found in the fields are added.
    """
    cached = getattr(metric, "__dict__", {}).get(_CACHE) if dataclasses.is_dataclass(metric) else None
    if isinstance(cached, MetricSpec):
        return cached
    encoder = _Encoder()
    params = {
        name: encoder.encode(value, hint, name) for name, hint, value in _public_fields(metric) if name not in _OWN
    }
    found = {**(prompts or {}), **encoder.prompts}
    if found:
        if _PROMPTS in params:
            raise ConfigError(f"metric {metric.name!r}: a field named {_PROMPTS!r} clashes with the spec's prompt list")
        params[_PROMPTS] = found
    spec = MetricSpec(
        name=metric.name, version=str(getattr(metric, "version", "1")), type=_path(type(metric)), params=params
    )
    if dataclasses.is_dataclass(metric):
        object.__setattr__(metric, _CACHE, spec)  # frozen: a cache, not a field (like JudgePrompt's)
    return spec


def fields_json(obj: Any, /) -> dict[str, Any]:
    """The public fields of a dataclass or pydantic model, encoded as in a spec's ``params``."""
    encoder = _Encoder()
    return {name: encoder.encode(value, hint, name) for name, hint, value in _public_fields(obj)}


def _short(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- fields and types -------------------------------------------------------------------------


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """The class's resolved field annotations ({} if they cannot be resolved: values get type tags)."""
    if issubclass(cls, BaseModel):
        return {name: info.annotation for name, info in cls.model_fields.items()}
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation naming something not importable at runtime
        return {}


def _public_fields(obj: Any) -> list[tuple[str, Any, Any]]:
    """(name, declared type, value) of each public field of a dataclass or pydantic model."""
    hints = _hints(obj.__class__)
    if isinstance(obj, BaseModel):
        names: list[str] = list(type(obj).model_fields)
    else:
        names = [f.name for f in dataclasses.fields(obj)]
    return [(n, hints.get(n, Any), getattr(obj, n)) for n in names if not n.startswith("_")]


def _init_names(cls: type) -> set[str]:
    if issubclass(cls, BaseModel):
        return set(cls.model_fields)
    if dataclasses.is_dataclass(cls):
        return {f.name for f in dataclasses.fields(cls) if f.init}
    return set()


SPEC_MODULES = {
    "assay.grounding._addressed": "assay.metrics._addressed",
    "assay.grounding._decompose": "assay.metrics._decompose",
    "assay.grounding._details": "assay.metrics._details",
    "assay.grounding._evidence": "assay.metrics._evidence",
    "assay.grounding._verify": "assay.metrics._verify",
}
"""Modules that moved, by the name specs know them by.

A path in a spec is the object's identity, and stored runs compare and rebuild by it, so a
module that moves keeps its old name in specs: written under the old name, imported from
the new place (``docs/design/layers.md``).
"""
_MODULES_NOW = {old: new for new, old in SPEC_MODULES.items()}


def _path(obj: Any) -> str:
    return f"{SPEC_MODULES.get(obj.__module__, obj.__module__)}:{obj.__qualname__}"


def _unoptional(hint: Any) -> Any:
    """``X`` for ``X | None``; otherwise the hint unchanged (``Annotated`` stripped)."""
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    if _is_union(hint):
        arms = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(arms) == 1:
            return arms[0]
    return hint


def _allows_none(hint: Any) -> bool:
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    return hint in (None, type(None), Any, object) or (_is_union(hint) and type(None) in typing.get_args(hint))


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _names_class(hint: Any, cls: type) -> bool:
    """Whether the declared type says the value is exactly a ``cls`` (no tag needed)."""
    hint = _unoptional(hint)
    return hint is cls or typing.get_origin(hint) is cls


def _names_metric(hint: Any) -> bool:
    hint = _unoptional(hint)
    return hint is Metric or (
        isinstance(hint, type) and callable(getattr(hint, "spec", None)) and hasattr(hint, "score")
    )


def _is_sequence(hint: Any) -> bool:
    origin = typing.get_origin(hint) or hint
    return isinstance(origin, type) and issubclass(origin, collections.abc.Sequence) and not issubclass(origin, str)


def _is_mapping(hint: Any) -> bool:
    origin = typing.get_origin(hint) or hint
    return isinstance(origin, type) and issubclass(origin, collections.abc.Mapping)


def _arm(hint: Any, test: Any) -> Any:
    """The first arm of a union that passes ``test`` (the hint itself if it is no union)."""
    hint = _unoptional(hint)
    if _is_union(hint):
        return next((a for a in typing.get_args(hint) if test(a)), Any)
    return hint


def _item_hint(hint: Any, index: int) -> Any:
    hint = _arm(hint, _is_sequence)
    args = typing.get_args(hint)
    if not _is_sequence(hint) or not args:
        return Any
    if typing.get_origin(hint) is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        return args[index] if index < len(args) else Any
    return args[0]


def _mapping_hints(hint: Any) -> tuple[Any, Any]:
    hint = _arm(hint, _is_mapping)
    args = typing.get_args(hint)
    return (args[0], args[1]) if _is_mapping(hint) and len(args) == 2 else (Any, Any)


# --- encoding ---------------------------------------------------------------------------------


def _problem(obj: Any) -> str | None:
    """Why ``obj`` cannot be imported back by ``module:qualname`` (``None`` if it can)."""
    qualname = getattr(obj, "__qualname__", "")
    module = getattr(obj, "__module__", None)
    if "<lambda>" in qualname:
        return "it is a lambda"
    if "<locals>" in qualname:
        return "it is defined inside a function"
    if module == "__main__":
        return "it is defined in __main__ (a script), which another process cannot import"
    found: Any = sys.modules.get(module or "")
    for part in qualname.split(".") if found is not None else ():
        found = getattr(found, part, None)
    if found is not obj:
        return f"{module}:{qualname} does not lead back to it"
    return None


def _module_constant(prompt: JudgePrompt[Any, Any]) -> str | None:
    """``module:NAME`` when ``prompt`` is a module-level constant beside its input or output model."""
    for module in dict.fromkeys((prompt.input_model.__module__, prompt.output_model.__module__)):
        namespace = vars(sys.modules[module]) if module in sys.modules and module != "__main__" else {}
        name = next((k for k, v in namespace.items() if v is prompt and not k.startswith("__")), None)
        if name is not None:
            return f"{SPEC_MODULES.get(module, module)}:{name}"
    return None


class _Encoder:
    """Turns field values into JSON; collects the judge prompts it meets."""

    def __init__(self) -> None:
        self.prompts: dict[str, str] = {}

    def encode(self, value: Any, hint: Any, where: str) -> Any:
        if isinstance(value, enum.Enum):
            return value.value
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, Metric) and not isinstance(value, type):
            spec = value.spec().model_dump(mode="json")
            return spec if _names_metric(hint) else {"$metric": spec}
        if isinstance(value, JudgePrompt):
            self.prompts[value.name] = value.version
            constant = _module_constant(value)
            if constant is not None:
                return {"$object": constant, "name": value.name, "version": value.version}
        if isinstance(value, type | types.FunctionType | types.BuiltinFunctionType | types.MethodType):
            problem = "it is a bound method" if isinstance(value, types.MethodType) else _problem(value)
            return {"$object": _path(value)} | ({"problem": problem} if problem else {})
        if isinstance(value, BaseModel):
            try:
                body: Any = value.model_dump(mode="json")
            except Exception:  # a field pydantic cannot serialise
                return self._unencodable(value)
        elif dataclasses.is_dataclass(value):
            body = {n: self.encode(v, h, f"{where}.{n}") for n, h, v in _public_fields(value)}
        elif isinstance(value, Mapping):
            if not all(isinstance(k, str | int) and not isinstance(k, bool) for k in value):
                return self._unencodable(value)
            _, value_hint = _mapping_hints(hint)
            return {str(k): self.encode(v, value_hint, f"{where}[{k!r}]") for k, v in value.items()}
        elif isinstance(value, list | tuple):
            return [self.encode(v, _item_hint(hint, i), f"{where}[{i}]") for i, v in enumerate(value)]
        else:
            return self._unencodable(value)
        return body if _names_class(hint, type(value)) else {"$type": _path(type(value)), "value": body}

    @staticmethod
    def _unencodable(value: Any) -> dict[str, str]:
        return {"$unencodable": _path(type(value))}


# --- decoding ---------------------------------------------------------------------------------


class _Decoder:
    """Turns spec JSON back into field values, by each field's declared type."""

    def __init__(self, metric: str, rebuild: Callable[[Any], Metric]) -> None:
        self.metric = metric
        self.rebuild = rebuild  # a nested metric's spec: metric_from_spec, which lives above the metrics

    def fail(self, where: str, message: str) -> ConfigError:
        return ConfigError(f"{self.metric}: {where}: {message}")

    def load(self, path: str, where: str) -> Any:
        """Import ``module:qualname``."""
        module_name, _, qualname = path.partition(":")
        if not module_name or not qualname:
            raise self.fail(where, f"{path!r} is not module:qualname")
        if "<lambda>" in qualname or "<locals>" in qualname:
            what = "a lambda" if "<lambda>" in qualname else "defined inside a function"
            raise self.fail(where, f"{path} is {what}, so a spec cannot name it; define it at module level")
        if module_name == "__main__":
            raise self.fail(
                where, f"{path} is defined in __main__ (a script); move it into a module another process can import"
            )
        try:
            found: Any = importlib.import_module(_MODULES_NOW.get(module_name, module_name))
        except ImportError as exc:
            raise self.fail(where, f"cannot import {module_name} for {path}: {exc}") from exc
        for part in qualname.split("."):
            if not hasattr(found, part):
                raise self.fail(where, f"{module_name} has no {qualname} (renamed or removed?)")
            found = getattr(found, part)
        return found

    def decode(self, data: Any, hint: Any, where: str) -> Any:
        if isinstance(data, dict):
            if "$object" in data:
                return self._object(data, where)
            if "$type" in data:
                return self.build(self.load(data["$type"], where), data.get("value"), where)
            if "$metric" in data:
                return self._metric(data["$metric"], where)
            if "$unencodable" in data:
                raise self.fail(where, f"a {data['$unencodable']} cannot be written into a spec; use plain data")
        if data is None and _allows_none(hint):
            return None
        hint = _unoptional(hint)
        if hint is Any or hint is object or isinstance(hint, typing.TypeVar):
            return self._plain(data, where)
        if _is_union(hint):
            return self._union(data, hint, where)
        if data is None and hint is type(None):
            return None
        origin = typing.get_origin(hint)
        if origin is typing.Literal:
            if data in typing.get_args(hint):
                return data
            raise self.fail(where, f"{data!r} is not one of {', '.join(map(repr, typing.get_args(hint)))}")
        if _names_metric(hint):
            return self._metric(data, where)
        if hint is type or origin is type or origin is collections.abc.Callable:
            raise self.fail(where, f"expected {{'$object': 'module:qualname'}}, got {_short(data)}")
        cls = origin or hint
        if isinstance(cls, type):
            if dataclasses.is_dataclass(cls) or issubclass(cls, BaseModel):
                return self.build(cls, data, where)
            if _is_sequence(hint):
                if not isinstance(data, list):
                    raise self.fail(where, f"expected a list, got {_short(data)}")
                items = [self.decode(v, _item_hint(hint, i), f"{where}[{i}]") for i, v in enumerate(data)]
                return items if cls is list else tuple(items)
            if _is_mapping(hint):
                if not isinstance(data, dict):
                    raise self.fail(where, f"expected an object, got {_short(data)}")
                key_hint, value_hint = _mapping_hints(hint)
                return {
                    self._adapt(k, key_hint, f"{where} key {k!r}", strict=False): self.decode(
                        v, value_hint, f"{where}[{k!r}]"
                    )
                    for k, v in data.items()
                }
        return self._adapt(data, hint, where)

    def build(self, cls: Any, data: Any, where: str) -> Any:
        """An instance of ``cls`` (dataclass or pydantic model) from its encoded fields."""
        if not isinstance(cls, type):
            raise self.fail(where, f"{cls!r} is not a class")
        if issubclass(cls, BaseModel) and not callable(getattr(cls, "spec", None)):
            try:
                return cls.model_validate(data)
            except ValidationError as exc:
                raise self.fail(where, f"{cls.__qualname__}: {exc}") from exc
        if not isinstance(data, dict):
            raise self.fail(where, f"expected the fields of {cls.__qualname__}, got {_short(data)}")
        if not (dataclasses.is_dataclass(cls) or issubclass(cls, BaseModel)):
            raise self.fail(where, f"{_path(cls)} is neither a dataclass nor a pydantic model")
        known = {n for n in (cls.model_fields if issubclass(cls, BaseModel) else _dataclass_names(cls))}
        unknown = sorted(set(data) - {n for n in known if not n.startswith("_")})
        if unknown:
            raise self.fail(where, f"{cls.__qualname__} has no field {', '.join(unknown)}")
        hints, settable = _hints(cls), _init_names(cls)
        kwargs = {k: self.decode(v, hints.get(k, Any), f"{where}.{k}") for k, v in data.items() if k in settable}
        try:
            return cls(**kwargs)
        except (ConfigError, TypeError, ValueError) as exc:
            raise self.fail(where, f"{cls.__qualname__}: {exc}") from exc

    def _object(self, data: dict[str, Any], where: str) -> Any:
        if "problem" in data:
            raise self.fail(where, f"{data['$object']} cannot be rebuilt: {data['problem']}; define it at module level")
        found = self.load(str(data["$object"]), where)
        for key in ("name", "version"):
            if key in data and getattr(found, key, None) != data[key]:
                raise self.fail(
                    where,
                    f"{data['$object']} has {key} {getattr(found, key, None)!r}, the spec {data[key]!r}: "
                    "the prompt changed since the spec was written",
                )
        return found

    def _metric(self, data: Any, where: str) -> Metric:
        try:
            return self.rebuild(data)
        except ConfigError as exc:
            raise self.fail(where, str(exc)) from exc

    def _plain(self, data: Any, where: str) -> Any:
        if isinstance(data, list):
            return [self.decode(v, Any, f"{where}[{i}]") for i, v in enumerate(data)]
        if isinstance(data, dict):
            return {k: self.decode(v, Any, f"{where}[{k!r}]") for k, v in data.items()}
        return data

    def _union(self, data: Any, hint: Any, where: str) -> Any:
        arms = [a for a in typing.get_args(hint) if a is not type(None)]
        if isinstance(data, list | dict):  # the data's shape rules arms out: report the error of the one left
            shaped = [a for a in arms if _is_sequence(a) == isinstance(data, list)]
            arms = shaped if len(shaped) == 1 else arms
        if len(arms) == 1:
            return self.decode(data, arms[0], where)
        errors = []
        for arm in arms:
            try:
                return self.decode(data, arm, where)
            except ConfigError as exc:
                errors.append(str(exc))
        raise self.fail(where, f"{_short(data)} fits none of its types: " + " | ".join(errors))

    def _adapt(self, data: Any, hint: Any, where: str, *, strict: bool = True) -> Any:
        """``data`` validated as ``hint``; scalars strictly (``"yes"`` is no bool, ``1.5`` no int)."""
        try:
            return TypeAdapter(hint).validate_python(data, strict=strict and hint in (bool, int, float, str))
        except ValidationError as exc:
            why = "; ".join(e["msg"] for e in exc.errors())
            raise self.fail(where, f"{_short(data)} is not a {getattr(hint, '__name__', hint)} ({why})") from exc
        except TypeError as exc:  # a type pydantic cannot validate
            raise self.fail(where, f"cannot read a {hint} from a spec: {exc}") from exc


def _dataclass_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]
