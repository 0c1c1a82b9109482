"""The judge a run ran, exactly: what the run store keeps beside the model's name.

One model name can be two judges: the default local judge reads the shipped Q4_K_M on most
CPUs and a Q8_0 copy on the AMX build, and the same weights on AVX2 and AVX-512 kernels
gave another verdict on 1 of 100 BEGIN items (``docs/design/judging.md``). So a run
records its judge's cache identity (:attr:`~assay.models.JudgeModel.identity`), its
components (weights file and layout, adapter, llama.cpp build:
:attr:`~assay.models.JudgeModel.components`) and the version of every judge prompt its
metrics use. ``resume`` refuses a judge whose record differs, and a comparison of two runs
says so before anything else (:meth:`JudgeRecord.differences`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, field_validator

from assay._scores import MetricSpec
from assay.models._endpoint import canonical_identity

if TYPE_CHECKING:
    from assay.models import JudgeModel

__all__ = ["JudgeRecord"]

_COMPONENT_ORDER = ("weights", "adapter", "build")


class JudgeRecord(BaseModel):
    """Who judged a run: model, cache identity, components and prompt versions (never a secret).

    Attributes:
        model_id: The judge's :attr:`~assay.models.JudgeModel.model_id`.
        identity: Its cache identity (what the judge-call cache keys on).
        components: ``weights``, ``adapter``, ``build`` where the judge has them.
        prompts: Per metric, each judge prompt's name and version.
    """

    model_config = ConfigDict(frozen=True)

    model_id: str
    identity: str
    components: dict[str, str] = Field(default_factory=dict)
    prompts: dict[str, dict[str, str]] = Field(default_factory=dict)

    @field_validator("identity")
    @classmethod
    def _one_spelling(cls, identity: str) -> str:
        """A record stored before endpoints were spelled one way reads as today's (``127.0.0.1`` is ``localhost``)."""
        return canonical_identity(identity)

    @classmethod
    def of(cls, judge: JudgeModel, metrics: Iterable[MetricSpec] = ()) -> JudgeRecord:
        """The record of ``judge`` running ``metrics`` (their specs)."""
        prompts: dict[str, dict[str, str]] = {}
        for spec in metrics:
            used = spec.params.get("prompts")
            if isinstance(used, dict) and used:
                prompts[spec.name] = {str(k): str(v) for k, v in used.items()}
        return cls(model_id=judge.model_id, identity=judge.identity, components=dict(judge.components), prompts=prompts)

    def flat(self) -> dict[str, str]:
        """Components and prompt versions as one flat mapping (what a browser compares)."""
        out = {name: self.components[name] for name in self._component_names(self)}
        for metric, used in self.prompts.items():
            out[f"prompts ({metric})"] = ", ".join(f"{k} v{v}" for k, v in used.items())
        out["identity"] = self.identity
        return out

    def lines(self) -> list[str]:
        """``name: value`` lines for a summary or a report (components, then prompts)."""
        return [f"{k}: {v}" for k, v in self.flat().items() if k != "identity"]

    def differences(self, other: JudgeRecord, *, here: str = "here", there: str = "there") -> list[str]:
        """How ``other`` is another judge than this one, one phrase each (empty: the same judge).

        ``here`` and ``there`` name the two sides in the phrases (``"then"``, ``"now"`` for a resume).

        Components first (weights, adapter, build), then prompt versions, then the model
        name and the cache identity where nothing above already says why they differ.
        """
        out: list[str] = []
        for name in self._component_names(self, other):
            mine, theirs = self.components.get(name), other.components.get(name)
            if mine != theirs:
                out.append(f"{name}: {mine or 'none'} {here}, {theirs or 'none'} {there}")
        for metric in dict.fromkeys([*self.prompts, *other.prompts]):
            here_p, there_p = self.prompts.get(metric, {}), other.prompts.get(metric, {})
            for prompt in dict.fromkeys([*here_p, *there_p]):
                if here_p.get(prompt) != there_p.get(prompt):
                    out.append(
                        f"{metric}'s prompt {prompt}: version {here_p.get(prompt, 'none')} {here}, "
                        f"{there_p.get(prompt, 'none')} {there}"
                    )
        if self.model_id != other.model_id:
            out.insert(0, f"model: {self.model_id} {here}, {other.model_id} {there}")
        elif not out and self.identity != other.identity:
            out.append(f"judge identity: {self.identity} {here}, {other.identity} {there}")
        return out

    @staticmethod
    def _component_names(*records: JudgeRecord) -> list[str]:
        names = dict.fromkeys(n for r in records for n in r.components)
        return [n for n in _COMPONENT_ORDER if n in names] + sorted(n for n in names if n not in _COMPONENT_ORDER)
