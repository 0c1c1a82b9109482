"""An example metric to copy: does the answer agree with the reference answer?

One binary question to the judge, one verdict with its reason, an unscored result when the
judge gives no usable answer. Register it from your own package (no edit of assay)::

    [project.entry-points."assay.metrics"]
    reference_agreement = "my_package.reference_agreement:build"

then ``assay run data.jsonl -m reference_agreement``. See CONTRIBUTING.md; the test in
tests/test_contributing_examples.py runs this file as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from pydantic import BaseModel

from assay import Binary, MetricSpec, Sample, Score, Verdict
from assay.metrics import SubMetric, spec_from_fields
from assay.models import JudgeModel


class AgreementInput(BaseModel):
    """What the judge is shown: each field becomes one delimited data block, in this order."""

    question: str
    reference: str
    answer: str


class AgreementJudgement(BaseModel):
    """The judge's answer: the verdict first (decided before the reason is written)."""

    verdict: Binary
    reason: str


def agreement_input(sample: Sample) -> AgreementInput:
    """The prompt's input for a sample (a module function, not a lambda: specs must rebuild)."""
    return AgreementInput(question=sample.question or "", reference=sample.reference or "", answer=sample.answer or "")


AGREES = SubMetric.define(
    "reference_agreement.verdict",
    instruction=(
        "You check whether an answer agrees with a reference answer to the same question. "
        "It agrees when it states the same facts as the reference, in any wording; extra detail "
        "that does not contradict the reference is fine. It does not agree when it contradicts "
        "the reference or leaves out what the reference says the answer is."
    ),
    input_model=AgreementInput,
    output_model=AgreementJudgement,
    question="Does <answer> agree with <reference>? Verdict 1 (agrees) or 0 (does not), then a one-sentence reason.",
    from_sample=agreement_input,
    required_fields=("question", "reference", "answer"),
    version="1",
)


@dataclass(frozen=True)
class ReferenceAgreement:
    """1.0 when the answer agrees with the reference, 0.0 when it does not.

    Args:
        name: The metric's name in results.
    """

    name: str = "reference_agreement"
    version: str = field(default="1", init=False)
    required_fields: ClassVar[tuple[str, ...]] = ("question", "reference", "answer")

    def spec(self) -> MetricSpec:
        """The configuration that rebuilds this metric (its fields and the prompt's version)."""
        return spec_from_fields(self, prompts={AGREES.name: AGREES.prompt.version})

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Ask the one question; an unusable answer is unscored with the judge's failure reason."""
        result = await AGREES.run(sample, judge)
        if result.output is None:
            assert result.failure is not None
            return Score.unscored(
                self.name, result.failure.reason, result.failure.detail, calls=result.calls, spec=self.spec()
            )
        verdict = Verdict(
            subject="the answer agrees with the reference", value=result.output.verdict, reason=result.output.reason
        )
        return Score.scored(
            self.name,
            float(result.output.verdict),
            verdicts=[verdict],
            explanation=result.output.reason,
            calls=result.calls,
            spec=self.spec(),
        )


def build(name: str = "reference_agreement") -> ReferenceAgreement:
    """The entry point's factory: ``--set reference_agreement.name=...`` becomes ``name``."""
    return ReferenceAgreement(name=name)
