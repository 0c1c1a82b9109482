"""Every option's environment variable, named in one place: ``ASSAY_<COMMAND>_<OPTION>``.

click's ``auto_envvar_prefix`` names an option's variable after its Python parameter, not
after the option a user types: ``assay gate --min`` was ``ASSAY_GATE_MIN_SCORE`` (the
parameter ``min_score``), ``--set`` was ``ASSAY_RUN_SET_``. The documented
``ASSAY_GATE_MIN=0.95`` was silently ignored and the gate ran at its default. Here each
option's variable is derived from its first long name, so it cannot drift from the option:
the command path and the option, upper-cased, ``-`` as ``_`` (``assay runs export --format``
is ``ASSAY_RUNS_EXPORT_FORMAT``). An option with a named variable of its own (``ASSAY_JUDGE``,
``OPENAI_BASE_URL``) reads the command's variable first, then the named one.

The parameter-named spellings a user may have set are still read (click falls back to them
when the documented variable is unset), with a warning that names the variable to set.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from typer.core import TyperGroup

from assay.errors import ConfigError

try:  # typer >= 0.20 ships its own copy of click
    from typer._click.core import ParameterSource
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover - older typer on plain click
    from click.core import ParameterSource  # type: ignore[assignment]
    from click.globals import get_current_context  # type: ignore[no-redef]

__all__ = ["AssayGroup", "base_url_for", "command_prefix", "given_for_command", "option_envvar", "options_with_envvars"]


def command_prefix(parent: str, name: str) -> str:
    """The variable prefix of command ``name`` under ``parent`` (click's own rule for a context's prefix)."""
    return f"{parent}_{name}".upper().replace("-", "_")


def option_envvar(prefix: str, option: Any) -> str:
    """``PREFIX_<LONG NAME>`` of an option: its first ``--`` name, upper-cased, ``-`` as ``_``."""
    long = next((o for o in option.opts if o.startswith("--")), None)
    name = long[2:] if long is not None else option.name
    return f"{prefix}_{name}".upper().replace("-", "_")


def options_with_envvars(command: Any, prefix: str) -> Iterator[tuple[str, Any, Any]]:
    """``(prefix, command, option)`` for every option of ``command`` and of its subcommands, at any depth."""
    for param in command.params:
        if param.param_type_name == "option" and getattr(param, "allow_from_autoenv", False):
            yield prefix, command, param
    for name, sub in (getattr(command, "commands", None) or {}).items():
        yield from options_with_envvars(sub, command_prefix(prefix, name))


def _name_envvars(root: Any, root_prefix: str) -> None:
    """Give every option of the tree its documented variable, and warn where an old spelling is read."""
    options = list(options_with_envvars(root, root_prefix))
    taken: dict[Any, set[str]] = {}
    for prefix, command, option in options:
        taken.setdefault(command, set()).add(option_envvar(prefix, option))
    old_names: dict[Any, list[tuple[str, str, list[str]]]] = {}
    for prefix, command, option in options:
        named = [option.envvar] if isinstance(option.envvar, str) else list(option.envvar or ())
        documented = option_envvar(prefix, option)
        if documented not in named:  # idempotent: a tree walked twice keeps one entry
            named.insert(0, documented)
        option.envvar = named[0] if len(named) == 1 else named
        old = f"{prefix}_{option.name.upper()}"  # what click reads when none of these is set
        if old in named:
            continue
        if old in taken[command]:  # another option's name (--store-path beside --store's store_path): not this one's
            option.allow_from_autoenv = False
        else:
            old_names.setdefault(command, []).append((option.name, old, named))
    for command, olds in old_names.items():
        if command.callback is not None and not getattr(command.callback, "_assay_old_envvars", False):
            command.callback = _warning_of_old_names(command.callback, olds)


def _warning_of_old_names(callback: Callable[..., Any], olds: list[tuple[str, str, list[str]]]) -> Callable[..., Any]:
    @functools.wraps(callback)
    def checked(*args: Any, **kwargs: Any) -> Any:
        ctx = get_current_context()
        for name, old, documented in olds:
            if (
                ctx.get_parameter_source(name) is ParameterSource.ENVIRONMENT
                and os.environ.get(old)
                and not any(os.environ.get(var) for var in documented)
            ):
                warnings.warn(
                    f"{old} is the old name of {documented[0]}; it is read for now, set {documented[0]} instead",
                    FutureWarning,
                    stacklevel=2,
                )
        return callback(*args, **kwargs)

    checked._assay_old_envvars = True  # type: ignore[attr-defined]
    return checked


class AssayGroup(TyperGroup):
    """The root ``assay`` group: names every option's variable of the whole tree once it is built."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        prefix = (self.context_settings or {}).get("auto_envvar_prefix")
        if prefix:
            _name_envvars(self, prefix)


def given_for_command(ctx: Any, name: str) -> str | None:
    """How option ``name`` was given for this command (``--base-url``, ``ASSAY_RUN_BASE_URL``), or None.

    None when it is unset, or came from a variable other tools share (``OPENAI_BASE_URL``,
    ``RAY_ADDRESS``): set for every program, not meant for this command.
    """
    option = next(p for p in ctx.command.params if p.name == name)
    source = ctx.get_parameter_source(name)
    if source is ParameterSource.COMMANDLINE:
        return next((o for o in option.opts if o.startswith("--")), name)
    own = option_envvar(ctx.auto_envvar_prefix, option) if ctx.auto_envvar_prefix else None
    if source is ParameterSource.ENVIRONMENT and own is not None and os.environ.get(own):
        return own
    return None


def base_url_for(
    ctx: Any, judges: Sequence[str | None], base_url: str | None, *, unread: str | None = None, name: str = "--judge"
) -> str | None:
    """The ``--base-url`` a command passes on to its judges.

    Where no judge reads a URL (none, or every one ``local``), one given for this command is
    refused (it would be recorded and never used: the job named a server, and another judge
    judged), and one from a variable other tools share is dropped. ``unread`` says why none
    reads it (default: the local judge runs in this process); ``name`` is the option that
    names a judge that would.
    """
    from assay.run._plan import URL_JUDGES, judge_kind

    if base_url is None or any(judge_kind(j) != "local" for j in judges):
        return base_url
    given = given_for_command(ctx, "base_url")
    if given is None:
        return None  # OPENAI_BASE_URL, set for other tools: not this judge's
    named = " and ".join(j or "local" for j in judges)
    unread = unread or f"the {named} judge runs in this process and reads no URL"
    raise ConfigError(
        f"{given} is for {' and '.join(URL_JUDGES)} judges; {unread}, so it would be ignored. Drop it, or name a "
        f"judge that reads it ({name} openai:MODEL)"
    )
