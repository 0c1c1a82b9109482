"""The logistic-regression combiner over P(supported) and the detail features.

Fitted by ``benchmarks/fit_detail_combiner.py``; measured and not shipped
(``docs/design/grounding/verifier.md``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.grounding._details._features import DETAIL_FEATURES, DetailFeatures

COMBINER_SCHEMA = 1
"""Version of the combiner file's layout; :meth:`DetailCombiner.from_dict` reads only this one."""

FEATURES_VERSION = "2"
"""Version of the detail checks' rules. Bump it when a rule changes what a feature counts:
coefficients fitted on other rules are then refused instead of silently misapplied (2: a number the
evidence implies, a count of what it names, a running score, a total or margin, is not missing)."""

LOGIT_P = "logit_p"
"""Name of the combiner input ``log(q / (1 - q))``, q the clipped P(supported)."""


def _logit(p: float, clip: float) -> float:
    q = min(max(p, clip), 1.0 - clip)
    return math.log(q / (1.0 - q))


@dataclass(frozen=True)
class DetailCombiner:
    """P(supported) corrected by the detail checks: a logistic regression.

    ``probability(p, f) = sigmoid(intercept + sum_i coefficients[i] * x_i)``, where
    ``x_i`` is the input named ``feature_names[i]``: ``"logit_p"`` is
    ``log(q / (1 - q))`` with ``q = min(max(p, clip), 1 - clip)``, any other name is that
    field of :class:`DetailFeatures`. With coefficient 1 on ``logit_p`` and 0 elsewhere it
    returns ``q``: the identity on P inside ``[clip, 1 - clip]``.

    Attributes:
        coefficients: One weight per input, in the order of ``feature_names``.
        intercept: The constant term.
        feature_names: ``"logit_p"`` and names from :data:`DETAIL_FEATURES`, each at most once.
        version: Names this set of coefficients (stored beside results that used it).
        clip: P is clipped to ``[clip, 1 - clip]`` before the logit (0 < clip < 0.5).
        threshold: Decision threshold on the combined probability chosen with the fit.
        features_version: The :data:`FEATURES_VERSION` the coefficients were fitted on; a
            combiner for other rules is refused.
        fit: How the coefficients were fitted (sets, sizes, cross-validated figures).
    """

    coefficients: tuple[float, ...]
    intercept: float
    feature_names: tuple[str, ...]
    version: str
    clip: float = 1e-6
    threshold: float = 0.5
    features_version: str = FEATURES_VERSION
    fit: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.features_version != FEATURES_VERSION:
            raise ConfigError(
                f"DetailCombiner {self.version!r} was fitted on detail features version "
                f"{self.features_version!r}, but this assay computes version {FEATURES_VERSION!r}: "
                "refit it with benchmarks/fit_detail_combiner.py"
            )
        if len(self.coefficients) != len(self.feature_names):
            raise ConfigError(
                f"DetailCombiner: {len(self.coefficients)} coefficients for {len(self.feature_names)} "
                f"feature names {list(self.feature_names)}"
            )
        known = {LOGIT_P, *DETAIL_FEATURES}
        unknown = [n for n in self.feature_names if n not in known]
        if unknown:
            raise ConfigError(f"DetailCombiner: unknown feature names {unknown}; known: {sorted(known)}")
        if len(set(self.feature_names)) != len(self.feature_names):
            raise ConfigError(f"DetailCombiner: repeated feature names in {list(self.feature_names)}")
        numbers = [*self.coefficients, self.intercept, self.threshold]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in numbers):
            raise ConfigError("DetailCombiner: coefficients, intercept and threshold must be finite numbers")
        if not 0.0 < self.clip < 0.5:
            raise ConfigError(f"DetailCombiner: clip must be in (0, 0.5), got {self.clip}")
        if not 0.0 < self.threshold < 1.0:
            raise ConfigError(f"DetailCombiner: threshold must be in (0, 1), got {self.threshold}")

    def probability(self, p_supported: float, features: DetailFeatures) -> float:
        """The combined P(supported) (see the class docstring for the formula).

        Raises:
            ValueError: ``p_supported`` is not a number in [0, 1].
        """
        if isinstance(p_supported, bool) or not isinstance(p_supported, int | float) or not 0.0 <= p_supported <= 1.0:
            raise ValueError(f"DetailCombiner.probability: p_supported must be a number in [0, 1], got {p_supported!r}")
        values = features.values()
        z = self.intercept
        for name, weight in zip(self.feature_names, self.coefficients, strict=True):
            z += weight * (_logit(float(p_supported), self.clip) if name == LOGIT_P else values[name])
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)

    def to_dict(self) -> dict[str, Any]:
        """The combiner file's content (:data:`COMBINER_SCHEMA`)."""
        return {
            "schema": COMBINER_SCHEMA,
            "version": self.version,
            "feature_names": list(self.feature_names),
            "coefficients": list(self.coefficients),
            "intercept": self.intercept,
            "clip": self.clip,
            "threshold": self.threshold,
            "features_version": self.features_version,
            "fit": dict(self.fit),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "combiner") -> DetailCombiner:
        """Rebuild a combiner from :meth:`to_dict`'s output.

        Raises:
            ConfigError: the schema is not :data:`COMBINER_SCHEMA`, or a key is missing or invalid
                (the message names ``source`` and the key).
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: a detail combiner must be a JSON object, got {type(data).__name__}")
        if data.get("schema") != COMBINER_SCHEMA:
            raise ConfigError(
                f"{source}: detail combiner schema {data.get('schema')!r} is not supported "
                f"(this assay reads schema {COMBINER_SCHEMA})"
            )
        required = ("version", "feature_names", "coefficients", "intercept", "features_version")
        missing = [k for k in required if k not in data]
        if missing:
            raise ConfigError(f"{source}: detail combiner lacks {missing}")
        names, weights = data["feature_names"], data["coefficients"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"{source}: 'feature_names' must be a list of strings")
        if not isinstance(weights, list):
            raise ConfigError(f"{source}: 'coefficients' must be a list of numbers")
        fit = data.get("fit", {})
        try:
            return cls(
                coefficients=tuple(weights),
                intercept=data["intercept"],
                feature_names=tuple(names),
                version=str(data["version"]),
                clip=data.get("clip", 1e-6),
                threshold=data.get("threshold", 0.5),
                features_version=str(data.get("features_version")),
                fit=dict(fit) if isinstance(fit, Mapping) else {},
            )
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
        except TypeError as exc:
            raise ConfigError(f"{source}: invalid detail combiner ({exc})") from None


def load_detail_combiner(path: str | Path) -> DetailCombiner:
    """Read a combiner file written by ``benchmarks/fit_detail_combiner.py``.

    Raises:
        ConfigError: the file cannot be read, is not JSON, or is not a valid combiner.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the detail combiner ({exc})") from None
    return DetailCombiner.from_dict(data, source=str(path))
