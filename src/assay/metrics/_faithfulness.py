"""Faithfulness (after Ragas): the share of an answer's statements the contexts support."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from assay._samples import Sample
from assay._scores import AnswerMap, Binary, JudgeCall, MetricSpec, PendingVerdict, Score, UnscoredReason, Verdict
from assay.errors import ConfigError
from assay.grounding._anchor import answer_sentences
from assay.grounding._decompose import SENTENCE_PROMPT, STATEMENTS_PROMPT, Decomposition, anchored
from assay.grounding._verify import STATEMENT_PROMPT, StatementCheck, StatementJudgement, StatementVerifier
from assay.metrics._common import (
    failed,
    make_decomposer,
    missing_field,
    prompt_versions,
    supported_share,
    unusable_split,
)
from assay.metrics._escalate import Escalation, pending_score, settle
from assay.metrics._spec import spec_from_fields
from assay.models._protocol import GenerateConfig, JudgeModel
from assay.models._stack import same_in_every_repeat
from assay.parsing import Unparsed, parse_verdicts
from assay.prompts import JudgePrompt, call_and_parse

__all__ = [
    "BATCH_PROMPT",
    "DEFAULT_MAX_STATEMENTS",
    "STATEMENT_PROMPT",
    "Faithfulness",
    "StatementCheck",
    "StatementJudgement",
    "StatementsCheck",
    "VerdictList",
]

_RULES = (
    "Verdict 1 means the context states the statement or it follows directly from the "
    "context. Verdict 0 means some part of the statement is missing from the context, "
    "contradicts it, or needs knowledge the context does not give: when in doubt, 0. "
    "Judge only against the context, never against what you know."
)


class StatementsCheck(BaseModel):
    """Input of the all-statements-at-once prompt."""

    context: list[str]
    statements: list[str]


class _Item(BaseModel):
    statement: str
    reason: str
    verdict: Binary


class VerdictList(BaseModel):
    """The batch prompt's answer: one item per statement, in order."""

    verdicts: list[_Item]


BATCH_PROMPT: JudgePrompt[StatementsCheck, VerdictList] = JudgePrompt(
    name="faithfulness.verdicts",
    version="1",
    instruction=(
        "You check whether each of several numbered statements is supported by a context. "
        f"{_RULES} Give exactly one item per statement, in the statements' order, each with "
        "the statement, a one-sentence reason, and the verdict."
    ),
    input_model=StatementsCheck,
    output_model=VerdictList,
    question="For each statement in <statements>, in order: is it supported by <context>?",
)


DEFAULT_MAX_STATEMENTS = 200
"""Most statements one answer may hold before it is left unscored (``too_many_statements``), unjudged.

A RAG answer holds 3-30 sentences, a long report rarely 100; 200 statements is already
200 verdict calls for one row (per statement), or 19,200 output tokens in one batch call
(96 a statement), above the 16,384 that common API judges can write at all.
"""

FaithfulnessStrategy = Literal["auto", "per_statement", "batch"]
DecomposerName = Literal["anchored", "llm", "sentences", "hybrid"]


@dataclass(frozen=True)
class Faithfulness:
    """Share of the answer's atomic statements that the retrieved contexts support.

    score = supported statements / statements. An answer with no statements is unscored
    (``no_statements``), never 0 or 1.

    A statement is what the answer says, or it is not judged: every statement is anchored
    to the answer sentence it comes from (its verdict's ``spans`` are the offsets of its
    words in the answer); a statement taken from the question or from the prompt's example,
    a fragment, or a repeat is dropped and recorded; every checkable sentence of the answer
    is judged, as itself when its statements do not state it. The score's
    ``decomposition`` (:class:`~assay.AnswerMap`) records all of it.

    Args:
        strategy: ``per_statement`` (one constrained call per statement; best for small
            local models), ``batch`` (all statements in one structured call; cheapest for
            API judges), or ``auto`` (the judge's preference).
        decomposer: ``anchored`` (sentences; the judge splits compound sentences and resolves
            references, one sentence at a time), ``llm`` (the judge splits the whole answer
            at once), ``sentences`` (pysbd), or ``hybrid`` (sentences; the judge rewrites only
            those that cannot stand alone). Every decomposer's statements are anchored.
        fixed_statements: Decompose the same way in every repeat (no repeat index, no
            run-wide temperature), so ``--repeats`` measures the verdicts' noise, which is
            what the gate's flake estimate models. ``False``: the decomposition is sampled
            with each repeat.
        max_statements: An answer with more statements than this is unscored
            (``too_many_statements``) and costs no verdict call: its checkable sentences are
            counted before any judge call (each gives at least one statement), and its
            statements again once split, before any verdict is asked. Raise it with
            ``--set faithfulness.max_statements=N``.
        verifier: How per-statement verdicts are read (logit threshold or generated JSON),
            chunking of long contexts, and which statements get reasons.
        config: Decoding settings for the batch verdict call.
    """

    strategy: FaithfulnessStrategy = "auto"
    decomposer: DecomposerName = "anchored"
    verifier: StatementVerifier = field(default_factory=StatementVerifier)
    config: GenerateConfig = field(default_factory=lambda: GenerateConfig(max_tokens=256))
    fixed_statements: bool = True
    max_statements: int = DEFAULT_MAX_STATEMENTS
    name: str = field(default="faithfulness", init=False)
    version: str = field(default="2", init=False)
    required_fields: ClassVar[tuple[str, ...]] = ("answer", "contexts")
    """An answer and at least one context."""

    def __post_init__(self) -> None:
        if self.strategy not in ("auto", "per_statement", "batch"):
            raise ConfigError(f"faithfulness strategy must be auto, per_statement or batch, not {self.strategy!r}")
        if self.decomposer not in ("anchored", "llm", "sentences", "hybrid"):
            raise ConfigError(
                f"faithfulness decomposer must be anchored, llm, sentences or hybrid, not {self.decomposer!r}"
            )
        most = self.max_statements
        if isinstance(most, bool) or not isinstance(most, int) or most < 1:
            raise ConfigError(f"faithfulness max_statements must be a whole number, at least 1, not {most!r}")

    def spec(self) -> MetricSpec:
        """Name, version, every field, and the prompt versions (the verifier's included)."""
        return spec_from_fields(self, prompts=prompt_versions(STATEMENTS_PROMPT, SENTENCE_PROMPT, BATCH_PROMPT))

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Decompose the answer, judge every statement against the contexts, aggregate."""
        spec = self.spec()
        split = await self._split(sample, judge, spec)
        if isinstance(split, Score):
            return split
        statements, answer_map, calls = split
        per_statement = self.strategy == "per_statement" or (self.strategy == "auto" and judge.prefers_per_statement)
        if per_statement:
            verdicts, failure = await self.verifier.check(sample.contexts, statements.statements, judge, calls)
        else:
            verdicts, failure = await self._all_at_once(sample.contexts, statements.statements, judge, calls)
        return self._aggregate(_with_spans(verdicts, statements), failure, calls, spec, answer_map)

    def escalation_problem(self) -> str | None:
        """Why this faithfulness cannot escalate: ``strategy=batch`` (one call for all), ``method=generate`` (no P)."""
        if self.strategy == "batch":
            return (
                "faithfulness with strategy=batch asks one call for all statements, so no statement can go to "
                "another judge alone: use strategy=auto or per_statement with --escalate"
            )
        if self.verifier.method == "generate":
            return (
                "faithfulness with the verifier's method=generate reads no probability, so no verdict has a "
                "confidence to keep it by: use method=auto or threshold with --escalate"
            )
        return None

    async def score_escalating(self, sample: Sample, escalation: Escalation) -> Score:
        """Each statement decided by the first judge of ``escalation`` sure enough of it.

        The first judge splits the answer; every statement is verified one at a time
        (``per_statement``) by level 0, and the statements its thresholds do not keep by
        level 1, and so on (:func:`~assay.metrics.settle`). With ``review`` last, the
        statements no level kept make the sample unscored ``needs_review``, listed in
        ``pending`` with what each judge leaned to; the decided verdicts stay.
        """
        spec = self.spec()
        if (problem := self.escalation_problem()) is not None:
            raise ConfigError(problem)
        split = await self._split(sample, escalation.levels[0].judge, spec)
        if isinstance(split, Score):
            return split
        statements, answer_map, calls = split
        open_ = list(statements.statements)
        decided: dict[str, Verdict] = {}
        tried: dict[str, list[Verdict]] = {s: [] for s in open_}
        for k, level in enumerate(escalation.levels):
            if not open_:
                break
            verdicts, failure = await self.verifier.check(sample.contexts, open_, level.judge, calls)
            if failure is not None:
                kept = [decided[s] for s in statements.statements if s in decided]
                return self._aggregate(_with_spans(kept, statements), failure, calls, spec, answer_map)
            still = []
            for verdict in verdicts:
                settled = settle(verdict, k, escalation)
                if settled.kept is not None:
                    decided[verdict.subject] = settled.kept
                else:
                    assert settled.tried is not None
                    tried[verdict.subject].append(settled.tried)
                    still.append(verdict.subject)
            open_ = still
        kept = _with_spans([decided[s] for s in statements.statements if s in decided], statements)
        score = self._aggregate(kept, None, calls, spec, answer_map) if kept else None
        if not open_:
            assert score is not None
            return score
        pending = [PendingVerdict(subject=s, evidence=tried[s][-1].evidence, tried=tuple(tried[s])) for s in open_]
        base = score or Score.unscored(self.name, UnscoredReason.NEEDS_REVIEW, calls=calls, spec=spec).model_copy(
            update={"decomposition": answer_map}
        )
        return pending_score(base.model_copy(update={"verdicts": tuple(kept)}), pending)

    async def _split(
        self, sample: Sample, judge: JudgeModel, spec: MetricSpec
    ) -> Score | tuple[Decomposition, AnswerMap | None, list[JudgeCall]]:
        """The answer's statements (and the calls that made them), or the score that ends it early."""
        # Blank text is no text (Sample.field_present): an answer of "" is a missing answer,
        # and contexts that are all blank are no contexts, as when a row is read.
        missing = next((name for name in self.required_fields if not sample.field_present(name)), None)
        if missing is not None or sample.answer is None:
            return missing_field(self.name, f"sample has no {missing or 'answer'}", spec)
        question = sample.question or ""
        sentences = sum(1 for s in answer_sentences(sample.answer, question) if s.checkable)
        if sentences > self.max_statements:
            return self._too_many(f"the answer has {sentences:,} sentences to check", "no judge call was made", spec)
        decomposer = make_decomposer(self.decomposer)
        if self.fixed_statements:
            with same_in_every_repeat():
                split = await decomposer.decompose(question, sample.answer, judge)
        else:
            split = await decomposer.decompose(question, sample.answer, judge)
        split = anchored(split, question, sample.answer)
        answer_map = split.answer_map
        if answer_map is not None and not self.fixed_statements:
            answer_map = answer_map.model_copy(update={"fixed": False})
        calls = list(split.calls)
        if (unusable := unusable_split(self.name, split, spec, text="answer", calls=calls)) is not None:
            return unusable.model_copy(update={"decomposition": answer_map})
        if len(split.statements) > self.max_statements:
            made = f"{len(calls)} judge call{'s' if len(calls) != 1 else ''} split it; no verdict was asked"
            too_many = self._too_many(f"the answer split into {len(split.statements):,} statements", made, spec, calls)
            return too_many.model_copy(update={"decomposition": answer_map})
        return split, answer_map, calls

    def _aggregate(
        self,
        verdicts: list[Verdict],
        failure: Unparsed | None,
        calls: list[JudgeCall],
        spec: MetricSpec,
        answer_map: AnswerMap | None,
    ) -> Score:
        if failure is not None:
            return failed(self.name, failure, spec, verdicts=verdicts, calls=calls).model_copy(
                update={"decomposition": answer_map}
            )
        score = supported_share(
            self.name, verdicts, calls, spec, counted="statements supported by the contexts", rejected="unsupported"
        )
        return score.model_copy(
            update={"decomposition": answer_map, "explanation": _with_decomposition(score.explanation, answer_map)}
        )

    def _too_many(self, what: str, cost: str, spec: MetricSpec, calls: list[JudgeCall] | None = None) -> Score:
        """Unscored ``too_many_statements``: ``what`` is above :attr:`max_statements`, and what it cost."""
        detail = (
            f"{what}, above max_statements={self.max_statements}: not judged ({cost}); raise it with "
            f"--set {self.name}.max_statements=N (Python: Faithfulness(max_statements=N))"
        )
        return Score.unscored(self.name, UnscoredReason.TOO_MANY_STATEMENTS, detail, calls=calls or (), spec=spec)

    def review_value(self, supported: bool) -> int:
        """1 for a statement a person found supported by the contexts, else 0."""
        return 1 if supported else 0

    def rescored(self, score: Score) -> Score:
        """The share of ``score``'s verdicts that are 1, explained as :meth:`score` does, once none is pending."""
        answer_map = score.decomposition
        spec = score.spec or self.spec()
        rebuilt = supported_share(  # worded as score() words it
            self.name,
            score.verdicts,
            score.calls,
            spec,
            counted="statements supported by the contexts",
            rejected="unsupported",
        )
        return rebuilt.model_copy(
            update={
                "decomposition": answer_map,
                "explanation": _with_decomposition(rebuilt.explanation, answer_map),
                "details": score.details,
            }
        )

    def label_item(self, sample: Sample, verdict: Verdict) -> dict[str, Any] | None:
        """A grounding item: the sample's contexts, the statement as the claim, the verdict as the label."""
        if not sample.contexts or verdict.value not in (0, 1):
            return None
        return {"contexts": list(sample.contexts), "claim": verdict.subject, "label": verdict.value}

    async def _all_at_once(
        self,
        contexts: tuple[str, ...],
        statements: tuple[str, ...],
        judge: JudgeModel,
        calls: list[JudgeCall],
    ) -> tuple[list[Verdict], Unparsed | None]:
        messages = BATCH_PROMPT.render(StatementsCheck(context=list(contexts), statements=list(statements)))
        config = self.config.model_copy(update={"max_tokens": max(self.config.max_tokens, 96 * len(statements))})
        parsed, failure, made = await call_and_parse(
            judge,
            messages,
            lambda text, finish: parse_verdicts(text, len(statements), finish_reason=finish, statements=statements),
            schema=VerdictList,
            purpose=BATCH_PROMPT.name,
            config=config,
        )
        calls.extend(made)
        if parsed is None:
            assert failure is not None
            return [], failure
        return [
            Verdict(subject=s, value=1 if p.value == 1 else 0, reason=p.reason)
            for s, p in zip(statements, parsed, strict=True)
        ], None


def _with_spans(verdicts: list[Verdict], split: Decomposition) -> list[Verdict]:
    """Each verdict with the answer offsets of the statement it judged."""
    where = dict(zip(split.statements, split.spans, strict=False)) if split.spans else {}
    return [v.model_copy(update={"spans": where[v.subject]}) if v.subject in where else v for v in verdicts]


def _with_decomposition(explanation: str | None, answer_map: AnswerMap | None) -> str | None:
    """The explanation, plus what the decomposition dropped and which sentences were judged whole."""
    if answer_map is None:
        return explanation
    extra = []
    if answer_map.dropped:
        reasons = Counter(d.reason for d in answer_map.dropped)
        extra.append("dropped " + ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in sorted(reasons.items())))
    whole = sum(1 for s in answer_map.sentences if s.status == "judged_whole")
    if whole:
        extra.append(f"{whole} sentence{'s' if whole != 1 else ''} judged whole")
    if not extra:
        return explanation
    return f"{explanation} ({'; '.join(extra)})" if explanation else "; ".join(extra)
