"""The report's header for people: the run's settings as a table, and the gate's verdict.

:func:`run_settings` reads a stored :class:`~assay.run.RunSpec` into rows a reader can
scan (metric, judge, decomposer, verifier threshold, chunking, repeats, temperature,
dataset, base URL); the raw spec stays available behind a disclosure
(:func:`raw_spec`). Both mask the base URL's credentials (userinfo, key-like query
parameters; not its host and path) at render time, so a run stored before the run spec
redacted its URL never shows a credential either. :func:`gate_line` words an
``assay gate`` verdict the way the gate prints it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay._safety import redact_url, scrub, url_secrets
from assay.analysis import GateResult
from assay.models._confidence import judge_string
from assay.run import JudgeRecord, RunSpec

__all__ = ["RAW_SPEC_LABEL", "Setting", "gate_line", "raw_spec", "run_settings"]


@dataclass(frozen=True)
class Setting:
    """One row of the settings table.

    Attributes:
        name: What is set (``decomposer``).
        value: Its value, in words (``llm (the judge lists the answer's statements)``).
        note: A dimmed remark after the value (a dataset's fingerprint), or empty.
    """

    name: str
    value: str
    note: str = ""


_DECOMPOSERS = {
    "llm": "llm (the judge lists the answer's statements)",
    "sentences": "sentences (the answer's sentences, no judge call)",
}
_STRATEGIES = {
    "auto": "auto (per statement for a judge that gives probabilities, one call per sample for other API judges)",
    "per_statement": "one judge call per statement",
    "batch": "one judge call per sample",
}


def _gives_probabilities(judge: str, record: JudgeRecord | None) -> bool:
    """The local judge (its logits), or an API judge asked for a confidence (its identity says so)."""
    local = judge == "local" or judge.startswith("local:")
    return local or (record is not None and judge_string(record.model_id, record.identity) != record.model_id)


def _strategy(params: Mapping[str, Any], spec: RunSpec) -> str | None:
    """The faithfulness verdicts' strategy, and for ``auto`` what it was for this run's judge where that is known."""
    if "strategy" not in params:
        return None
    strategy = str(params["strategy"])
    if strategy != "auto":
        return _STRATEGIES.get(strategy, strategy)
    if _gives_probabilities(spec.judge_model, spec.judge_record):
        return f"auto: {_STRATEGIES['per_statement']} (the judge gives probabilities)"
    if spec.judge_model.startswith(("openai:", "anthropic:")):
        return f"auto: {_STRATEGIES['batch']} (an API judge without a confidence)"
    return _STRATEGIES["auto"]  # a plugin says for itself (prefers_per_statement), unrecorded


def _verifier(params: Mapping[str, Any]) -> Mapping[str, Any]:
    verifier = params.get("verifier")
    return verifier if isinstance(verifier, Mapping) else {}


def _threshold(params: Mapping[str, Any], judge: str, record: JudgeRecord | None) -> str | None:
    """The verifier's threshold, and whether this run's judge used it (only a judge with probabilities has one).

    A judge with probabilities: the local one (its logits), or an API judge asked for a
    confidence (``openai:m+logprobs``, ``m+samples:K``: its identity says so).
    """
    verifier = _verifier(params)
    if "threshold" not in verifier:
        return None
    rule = f"P(supported) ≥ {verifier['threshold']:g}"
    method = verifier.get("method")
    if method == "generate" or (method == "auto" and not _gives_probabilities(judge, record)):
        return f"not used: the judge answers 1/0 ({rule} applies to a judge that gives probabilities)"
    return f"{rule}, from the judge's probabilities"


def _chunking(params: Mapping[str, Any]) -> str | None:
    verifier = _verifier(params)
    if "chunk_chars" not in verifier:
        return None
    size = verifier["chunk_chars"]
    if not size:
        return "off: each statement is checked against all contexts at once"
    return f"contexts in chunks of {size:,} characters; a statement is supported if any chunk supports it"


def _per_metric(spec: RunSpec, describe: Any) -> str | None:
    """One value if every metric that has the setting agrees, else ``metric: value`` pairs."""
    values = [(m.name, describe(m.params)) for m in spec.metrics]
    present = [(name, value) for name, value in values if value is not None]
    if not present:
        return None
    distinct = list(dict.fromkeys(value for _, value in present))
    if len(distinct) == 1 and len(spec.metrics) == 1:
        return str(distinct[0])
    return "; ".join(f"{name}: {value}" for name, value in present)


def _temperature(options: Mapping[str, Any]) -> str:
    value = options.get("temperature")
    if value is None:
        return "0 (default)"
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError):
        return str(value)


def run_settings(spec: RunSpec, repeats: int) -> tuple[Setting, ...]:
    """The run's settings as rows for people (the base URL redacted).

    Args:
        spec: The stored run spec.
        repeats: How many times each sample was judged (as the report counted them).
    """
    rows = [
        Setting("metric", ", ".join(f"{m.name} v{m.version}" for m in spec.metrics) or "—"),
        Setting("judge", f"{spec.judge} → {spec.judge_model}" if spec.judge != spec.judge_model else spec.judge),
    ]
    if spec.base_url:
        rows.append(Setting("base URL", redact_url(spec.base_url) or "—"))
    if spec.judge_record is not None:
        for part, said in spec.judge_record.flat().items():
            if part != "identity":
                rows.append(Setting(f"judge {part}", said))
    elif spec.engine not in ("pytest", "calibrate"):
        rows.append(Setting("judge weights and build", "not recorded (a run stored before assay recorded them)"))
    per_metric: Sequence[tuple[str, Any]] = (
        ("decomposer", lambda p: _DECOMPOSERS.get(p["decomposer"], p["decomposer"]) if "decomposer" in p else None),
        ("verdicts", lambda p: _strategy(p, spec)),
        ("verifier threshold", lambda p: _threshold(p, spec.judge, spec.judge_record)),
        ("chunking", _chunking),
    )
    for name, describe in per_metric:
        value = _per_metric(spec, describe)
        if value is not None:
            rows.append(Setting(name, value))
    options = spec.options
    rows.append(Setting("repeats", str(repeats)))
    rows.append(Setting("temperature", _temperature(options)))
    if "reasks" in options:
        rows.append(Setting("re-asks", f"{options['reasks']} (when a judge's answer is invalid)"))
    rows.append(Setting("dataset", spec.dataset or "—", spec.dataset_fingerprint or ""))
    if options.get("mapping"):
        rows.append(Setting("column mapping", ", ".join(f"{k} → {v}" for k, v in dict(options["mapping"]).items())))
    rows.append(Setting("engine", spec.engine))
    return tuple(rows)


RAW_SPEC_LABEL = (
    "Raw run spec (JSON, as stored, but for the base URL's credentials: its user and password, and each query "
    "parameter named like a key, token, secret, password, auth or signature, are masked; its host and path are not)"
)
"""What the report's disclosure of :func:`raw_spec` says it holds: exactly what is masked.

The host and path stay: they say which server judged (one model name behind two servers is
two judges), and they are no secret; a URL's userinfo and ``?api-key=`` are."""


def raw_spec(spec: RunSpec) -> str:
    """The stored spec as indented JSON, as :data:`RAW_SPEC_LABEL` says: the base URL's credentials masked.

    Masked wherever they occur in the spec (a judge identity or an option that repeats the
    URL), not only in ``base_url``: a run stored before its spec redacted the URL holds them.
    """
    data = scrub(spec.model_dump(mode="json"), url_secrets(spec.base_url))
    data["base_url"] = redact_url(spec.base_url)
    return json.dumps(data, indent=2, ensure_ascii=False)


def _p(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.4f}"


def gate_line(result: GateResult) -> str:
    """What ``assay gate`` says about the run, in one line (rule, observed, P(pass), flake)."""
    policy = result.policy
    unit = "every sample" if policy.gates_samples else "the run mean"
    rule = "no unsupported statement" if policy.strict else f"{result.metric} ≥ {policy.threshold:g}"
    source = (
        f"from {result.n_repeats} repeats"
        if result.method == "repeats"
        else "no judge call: computed verdicts"
        if result.flip_rate_source == "no judge call"
        else f"binomial model, flip rate {result.flip_rate:g} ({result.flip_rate_source})"
    )
    mean = "—" if math.isnan(result.mean) else f"{result.mean:.3f}"
    return (
        f"{rule} on {unit} · observed {result.observed or 'nothing: no sample scored'} · mean {mean} · "
        f"P(pass) {_p(result.p_pass)} ({source}) · flake probability {_p(result.flake_probability)} "
        f"(max {policy.max_flake:g}) · unscored {_p(result.unscored_share)} (max {policy.max_unscored:g})"
    )
