"""Is a statement supported by the contexts? One owner for that question.

Faithfulness (per-statement strategy) and the agreement benchmark both ask it through
:class:`StatementVerifier`, so what the benchmark measures is what users get.

Two ways to read the judge's answer:

- ``threshold`` (judges that expose logits, i.e. the local llama.cpp judge): P(verdict=1)
  is read from the logits right after ``{"verdict": `` in one forward pass, and the
  statement is supported when P >= ``threshold``. The threshold is chosen on
  human-labelled dev data (``benchmarks/judge_agreement.py``), not fixed at the argmax's
  0.5: small judges say "supported" too easily. A reason is then written only for
  unsupported statements (``reasons="failing"``), conditioned on the decided verdict
  (``{"verdict": 0, "reason": "``), reusing the whole prompt from the KV cache.
- ``generate`` (any judge): a grammar/schema-constrained JSON answer ``{verdict, reason}``.

What the judge reads (issue 15, figures in ``docs/design/grounding/verifier.md``):

- **Evidence, cited, and read where contexts are long.** Every verdict cites the context
  sentences that bear on its statement (:class:`~assay.grounding._evidence.ContextIndex`:
  BM25 fused with MiniLM embeddings). Contexts up to ``whole_chars`` (8,000) characters
  in all are read whole, split into chunks of at most ``chunk_chars`` (3,000) characters at
  sentence boundaries, max over chunks, calls ordered chunk by chunk so all statements
  judged against one chunk share its prefix. Longer contexts are read through one
  evidence window of ``evidence_chars`` (3,000) characters shared by the sample's
  statements (each statement's best sentences in turn), read once: a window plus a short
  call per statement instead of every statement against every chunk. On the dev sets
  this cut was as accurate as whole chunks above 8,000 characters and less accurate
  below 6,000 (figures in ``docs/design/grounding/verifier.md``).
- **Checks besides the model.** Numbers, names, negation, antonyms, quantifiers and
  content-word coverage are checked between the statement and its evidence
  (:func:`~assay.grounding._details.detail_features`) and kept with the verdict. The three
  checks that almost never fire on supported statements (a number or a name missing
  from the evidence, a negation it does not share) overrule a "supported" P: the small
  judge's failure is calling a statement supported when one detail is wrong. (A
  logistic model over P and every check was fitted too; see ``docs/design/grounding/verifier.md``
  for why this rule was kept instead.)
- **A copy is supported.** A statement that repeats a context sentence word for word is
  supported, citing it, with no judge call.
- **Text addressed to the judge is not a fact.** A statement that talks to the evaluator
  (:func:`~assay.grounding._addressed.addresses_judge`) is unsupported with that reason
  and flagged ``addresses_judge``, with no judge call; context sentences that address the
  judge are never used as evidence.

Every verdict carries its evidence (context index and character span): for a supported
statement the supporting sentence is its reason; an unsupported one names the detail
that failed where a check found one, and otherwise gets a reason written by the judge.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel

from assay._scores import Binary, EvidenceRef, JudgeCall, UnscoredReason, Usage, Verdict
from assay.errors import ConfigError, JudgeError
from assay.grounding._addressed import AddressedFinding, addresses_judge
from assay.grounding._details import DetailFeatures, detail_features
from assay.grounding._evidence import ContextIndex, Evidence, EvidenceSpan
from assay.grounding._sentences import _segmenter
from assay.models._protocol import ChatMessage, ChoiceScorer, GenerateConfig, JudgeModel, calls_made
from assay.parsing import Unparsed
from assay.prompts import Example, JudgePrompt, ask

__all__ = [
    "STATEMENT_PROMPT",
    "STATEMENT_PROMPT_V1",
    "StatementCheck",
    "StatementJudgement",
    "StatementOutcome",
    "StatementVerifier",
    "chunk_contexts",
]

_RULES_V1 = (
    "Verdict 1 means the context states the statement or it follows directly from the "
    "context. Verdict 0 means some part of the statement is missing from the context, "
    "contradicts it, or needs knowledge the context does not give: when in doubt, 0. "
    "Judge only against the context, never against what you know."
)


class StatementCheck(BaseModel):
    """Input of the one-statement verdict prompt (statement last: the context prefix is reused)."""

    context: list[str]
    statement: str


class StatementJudgement(BaseModel):
    """One statement's verdict and the judge's reason (verdict first: decided before the reason)."""

    verdict: Binary
    reason: str


STATEMENT_PROMPT_V1: JudgePrompt[StatementCheck, StatementJudgement] = JudgePrompt(
    name="faithfulness.verdict",
    version="1",
    instruction=f"You check whether one statement is supported by a context. {_RULES_V1}",
    input_model=StatementCheck,
    output_model=StatementJudgement,
    question="Is the statement in <statement> supported by <context>? Give verdict 1 or 0, then a one-sentence reason.",
)

_AMAZON = (
    "The Amazon River is about 6,400 km long and empties into the Atlantic Ocean. Its basin covers parts "
    "of nine countries. The river was named by the Spanish explorer Francisco de Orellana in 1542."
)

STATEMENT_PROMPT: JudgePrompt[StatementCheck, StatementJudgement] = JudgePrompt(
    name="faithfulness.verdict",
    version="2",
    instruction=(
        "You are a strict fact-checker. Decide whether one statement is fully supported by a context.\n"
        "Verdict 1 only if every part of the statement (each name, number, date, place, quantity, "
        "relation and qualifier) is stated in the context or follows from it without outside knowledge.\n"
        "Verdict 0 if any part is missing from the context, contradicts it, is more specific than the "
        "context, or changes a detail: a different name, number, date or place, a reversed relation, or a "
        "claim the context does not make. A statement that repeats most of the context's words but changes "
        "one detail is 0. Opinions, feelings and advice that the context does not state are 0.\n"
        "Judge only against the context, never against what you know. When in doubt, 0."
    ),
    input_model=StatementCheck,
    output_model=StatementJudgement,
    question="Is the statement in <statement> fully supported by <context>? Give verdict 1 or 0, then a reason.",
    examples=(
        Example(
            StatementCheck(context=[_AMAZON], statement="The Amazon empties into the Atlantic."),
            StatementJudgement(verdict=1, reason="The context says it empties into the Atlantic Ocean."),
        ),
        Example(
            StatementCheck(context=[_AMAZON], statement="The Amazon River is about 7,000 km long."),
            StatementJudgement(verdict=0, reason="The context gives about 6,400 km, not 7,000 km."),
        ),
        Example(
            StatementCheck(context=[_AMAZON], statement="Francisco de Orellana named the river in 1542."),
            StatementJudgement(verdict=1, reason="The context says Orellana named it in 1542."),
        ),
        Example(
            StatementCheck(context=[_AMAZON], statement="The Amazon basin covers nine countries, mostly Brazil."),
            StatementJudgement(verdict=0, reason="The context does not say that most of the basin is in Brazil."),
        ),
        Example(
            StatementCheck(context=[_AMAZON], statement="The river was named by a Portuguese explorer."),
            StatementJudgement(verdict=0, reason="The context says Orellana was Spanish, not Portuguese."),
        ),
    ),
)

VERDICT_PREFIX = '{"verdict": '
REASON_PREFIX = '{"verdict": 0, "reason": "'


def chunk_contexts(contexts: Sequence[str], chunk_chars: int) -> list[list[str]]:
    """Pack contexts into chunks of at most ``chunk_chars`` characters.

    Everything fits in one chunk when it can (a statement may need two contexts at once).
    Otherwise contexts are packed whole where they fit and split at sentence boundaries
    where they do not; a single sentence longer than the budget is cut.
    """
    if sum(len(c) for c in contexts) <= chunk_chars:
        return [list(contexts)]
    pieces: list[str] = []
    for context in contexts:
        if len(context) <= chunk_chars:
            pieces.append(context)
            continue
        current = ""
        for sentence in _segmenter("en").segment(context):
            while len(sentence) > chunk_chars:
                if current:
                    pieces.append(current)
                    current = ""
                pieces.append(sentence[:chunk_chars])
                sentence = sentence[chunk_chars:]
            if len(current) + len(sentence) > chunk_chars and current:
                pieces.append(current)
                current = ""
            current += sentence
        if current.strip():
            pieces.append(current)
    chunks: list[list[str]] = []
    size = 0
    for piece in pieces:
        if chunks and size + len(piece) <= chunk_chars:
            chunks[-1].append(piece)
            size += len(piece)
        else:
            chunks.append([piece])
            size = len(piece)
    return chunks


@dataclass(frozen=True)
class StatementOutcome:
    """One statement's verdict (or why there is none), P(supported) if read, and the calls.

    ``verdict`` and ``failure`` are both ``None`` for a statement left undecided because
    another statement's failure stopped the sample. ``probability`` is the judge's own
    P(supported) (a veto by the detail checks shows in the verdict and its ``details``,
    not here), and ``evidence`` what the judge read for it (``None`` when it read whole
    contexts).
    """

    statement: str
    verdict: Verdict | None
    failure: Unparsed | None
    probability: float | None
    calls: tuple[JudgeCall, ...]
    evidence: Evidence | None = None
    features: DetailFeatures | None = None


@dataclass
class _State:
    statement: str
    best: float = -1.0
    best_context: list[str] = field(default_factory=list)  # what it was read against at its best P
    supported: bool = False
    reason: str = ""
    judged: int = 0  # chunks (or windows) this statement has been judged against
    needed: int = 1  # how many it is to be judged against
    failure: Unparsed | None = None
    calls: list[JudgeCall] = field(default_factory=list)
    evidence: Evidence | None = None  # the window it was judged against (evidence mode)
    shown: Evidence | None = None  # what the verdict cites: its window, or the best sentences of the whole context
    features: DetailFeatures | None = None
    vetoed: tuple[str, ...] = ()
    addressed: AddressedFinding | None = None
    copied: EvidenceSpan | None = None  # the context sentence it repeats word for word
    p_read: str = ""  # how the judge's best P was read, where not from its logits (an API judge's confidence)


VETO_CHECKS = ("missing_numbers", "missing_entities", "negation_mismatches")
"""Detail checks that make a statement unsupported whatever P says: on the dev sets they
fire on 8-11% of unsupported SummEdits summaries and on 0-0.3% of supported ones."""


def vetoes(features: DetailFeatures, *, counts_to_judge: bool = False) -> tuple[str, ...]:
    """The veto checks that fired for a statement (empty: P decides).

    With ``counts_to_judge``, a missing number that is a count no evidence number
    contradicts ("two films" where the passage describes two) does not veto.
    """
    fired = []
    for name in VETO_CHECKS:
        value = getattr(features, name)
        if name == "missing_numbers" and counts_to_judge:
            value -= features.missing_counts
        if value > 0:
            fired.append(name)
    return tuple(fired)


def _addressed(text: str) -> bool:
    """Whether a sentence addresses the judge; asked of each context sentence by every window, so kept.

    Only sentences up to 2,000 characters are kept (8,192 of them): a "sentence" pysbd
    could not split (a table, a list) is asked again instead of held.
    """
    return _kept_addressed(text) if len(text) <= 2000 else addresses_judge(text) is not None


@lru_cache(maxsize=8192)
def _kept_addressed(text: str) -> bool:
    return addresses_judge(text) is not None


@dataclass(frozen=True)
class StatementVerifier:
    """Decides, per statement, whether the contexts support it.

    Args:
        method: ``threshold`` (P(1) from logits), ``generate`` (constrained JSON), or
            ``auto``: threshold where the judge exposes logits, else generate.
        threshold: P(supported) at or above which a statement is supported (threshold method).
        chunk_chars: Chunk size when whole contexts are judged and do not fit at once. The
            default is the evidence window's size, so the judge reads at most 3,000
            characters at once either way. (It was 2,000 until issue 32: a 2,112-character
            summary source became a 1,950-character chunk and a 160-character one, and the
            statements the first did not support were read again against the second. On
            the 411 dev items whose contexts are 2,001-3,000 characters the verdicts at the
            threshold were as accurate, 6 of 411 changed, and a quarter of the calls went.)
        reasons: Threshold method: write reasons for ``failing`` statements only, ``all``, or ``none``.
        prompt: The verdict prompt (default: the current version).
        config: Decoding settings for generated verdicts and reasons.
        evidence_chars: Contexts longer than ``whole_chars`` are judged against at most
            this many characters of evidence selected from them (``None``: never; whole
            contexts, chunked, however long).
        whole_chars: Contexts up to this many characters in all are judged whole. Below
            about 6,000 characters whole chunks were measured more accurate than an
            evidence window (WiCE oracle chunks: 0.699 against 0.645); above 8,000 as
            accurate, at a fraction of the time.
        shared_evidence: Build one evidence window for all of a sample's statements (each
            statement's best sentences in turn, ``evidence_chars`` in all) rather than one
            per statement: the judge reads it once and every statement reuses its prompt
            prefix, so a long-context sample costs one window plus a short call per
            statement. With many statements each gets fewer sentences.
        verbatim: A statement that repeats a context sentence word for word (case,
            spacing and end punctuation aside) is supported, citing that sentence, with no
            judge call: in a long window the small judge called such copies unsupported
            (2 of 8 in ``benchmarks/rag_speed.py``); on the dev sets all 25 items that are
            such copies are labelled supported.
        details: Check numbers, names, negation and other details against the evidence; a
            number or a name the evidence does not contain, or a negation it does not share,
            makes the statement unsupported whatever P says (threshold method).
        guard: Treat text that addresses the judge as what it is: such a statement is
            unsupported (flagged ``addresses_judge``), such a context sentence is never evidence.
        counts_to_judge: A missing number that is a small count of a plural noun ("two
            films") and that no number of the evidence contradicts does not veto: it may
            follow from what the evidence describes, so the judge decides (a faithful summary
            that counted "two films" scored 0 on the veto).
    """

    method: Literal["auto", "threshold", "generate"] = "auto"
    threshold: float = 0.5
    chunk_chars: int = 3000
    reasons: Literal["failing", "all", "none"] = "failing"
    prompt: JudgePrompt[StatementCheck, StatementJudgement] = STATEMENT_PROMPT
    config: GenerateConfig = field(default_factory=lambda: GenerateConfig(max_tokens=160))
    evidence_chars: int | None = 3000
    whole_chars: int = 8000
    shared_evidence: bool = True
    verbatim: bool = True
    details: bool = True
    guard: bool = True
    counts_to_judge: bool = True

    def __post_init__(self) -> None:
        if self.method not in ("auto", "threshold", "generate"):
            raise ConfigError(f"verifier method must be auto, threshold or generate, not {self.method!r}")
        if not 0.0 < self.threshold < 1.0:
            raise ConfigError(f"threshold must be between 0 and 1, got {self.threshold}")
        if self.chunk_chars < 200:
            raise ConfigError(f"chunk_chars must be at least 200, got {self.chunk_chars}")
        if self.evidence_chars is not None and self.evidence_chars < 200:
            raise ConfigError(f"evidence_chars must be at least 200 (or None), got {self.evidence_chars}")
        if self.whole_chars < 0:
            raise ConfigError(f"whole_chars must not be negative, got {self.whole_chars}")

    def uses_threshold(self, judge: JudgeModel) -> bool:
        """Whether verdicts for ``judge`` are read from logits."""
        if self.method == "threshold" and not isinstance(judge, ChoiceScorer):
            raise ConfigError(f"judge {judge.model_id} does not expose logits; use method='generate'")
        return self.method == "threshold" or (self.method == "auto" and isinstance(judge, ChoiceScorer))

    async def verify(
        self, contexts: Sequence[str], statements: Sequence[str], judge: JudgeModel
    ) -> list[StatementOutcome]:
        """Judge every statement against the contexts; never raises for judge failures."""
        states = [_State(s) for s in statements]
        threshold = self.uses_threshold(judge)
        exclude = _addressed if self.guard else None
        if self.guard:
            for state in states:
                state.addressed = addresses_judge(state.statement)
        live = [state for state in states if state.addressed is None]
        # Sentence splitting and embedding are CPU work: off the event loop.
        index = None
        if live and any(c.strip() for c in contexts):
            index = await asyncio.to_thread(ContextIndex.build, contexts)
        if index is not None and self.verbatim:
            for state in live:
                state.copied = index.copied(state.statement, exclude=exclude)
                state.supported = state.copied is not None
            live = [state for state in live if state.copied is None]
        total = sum(len(c) for c in contexts)
        windowed = self.evidence_chars is not None and total > self.whole_chars and index is not None
        kept = _Kept(contexts, self.guard)
        read: list[str] | None = None  # what chunked judging reads: the shared window, or whole contexts
        read_chars = self.chunk_chars
        if windowed and self.shared_evidence:
            assert self.evidence_chars is not None and index is not None
            window = index.select_shared(
                [state.statement for state in live], budget_chars=self.evidence_chars, exclude=exclude
            )
            if window.best is not None:  # else no sentence bears on any statement: whole contexts
                # The window is read in one piece, so every statement reuses it as its prefix.
                read, read_chars = window.blocks(), max(self.chunk_chars, self.evidence_chars)
                for state in live:
                    state.evidence = window
        if windowed and not self.shared_evidence:
            assert self.evidence_chars is not None and index is not None
            for state in live:
                evidence = index.select(state.statement, budget_chars=self.evidence_chars, exclude=exclude)
                state.shown = evidence
                if evidence.best is not None:  # else it is judged against the whole contexts
                    state.evidence = evidence
            failed = await self._judge_windows(judge, live, kept.contexts, threshold)
        else:
            read = kept.contexts if read is None else read
            failed = await self._judge_chunks(judge, live, read, threshold, read_chars)
            if index is not None:
                for state in live:
                    state.shown = index.select(
                        state.statement, budget_chars=400, top_k=1, neighbours=0, exclude=exclude
                    )
        if failed is not None:
            # The first failure stops the sample. A statement is decided if supported or
            # judged everywhere it was to be judged; the others stay undecided.
            return [
                self._outcome(state, threshold)
                if state is failed or state.supported or state.addressed is not None or state.judged >= state.needed
                else StatementOutcome(state.statement, None, None, None, tuple(state.calls))
                for state in states
            ]
        if threshold and self.details:
            for state in live:
                if state.best < 0:
                    continue
                evidence_text = " ".join(state.evidence.blocks() if state.evidence is not None else kept.contexts)
                state.features = detail_features(state.statement, evidence_text)
                state.vetoed = vetoes(state.features, counts_to_judge=self.counts_to_judge)
                if state.vetoed:
                    state.supported = False
        if threshold and self.reasons != "none":
            explain = []
            for state in live:
                if self.reasons == "all" or not state.supported:
                    if state.features is not None and state.features.problems() and not state.supported:
                        continue  # the failed check is the reason: no judge call needed
                    if state.supported and state.shown is not None and state.shown.best is not None:
                        continue  # the supporting sentence is the reason
                    explain.append(state)
            # Asked together: the local judge writes them in one batch, an API concurrently.
            await asyncio.gather(
                *(self._reason(judge, state.best_context or kept.contexts, state) for state in explain)
            )
        return [self._outcome(state, threshold) for state in states]

    async def _judge_windows(
        self, judge: JudgeModel, states: list[_State], contexts: Sequence[str], threshold: bool
    ) -> _State | None:
        """One call per statement against its own evidence; statements sharing a window go together."""

        def window(state: _State) -> tuple[str, ...]:
            return tuple(state.evidence.blocks()) if state.evidence is not None else ()

        for blocks, same in itertools.groupby(sorted(states, key=window), key=window):
            group = list(same)
            if not blocks:
                # Nothing in the contexts shares a word with these statements: judge them whole.
                failed = await self._judge_chunks(judge, group, list(contexts), threshold, self.chunk_chars)
            else:
                checks = [(state, StatementCheck(context=list(blocks), statement=state.statement)) for state in group]
                failed = await self._judge_all(judge, checks, threshold)
            if failed is not None:
                return failed
        return None

    async def _judge_chunks(
        self,
        judge: JudgeModel,
        states: list[_State],
        contexts: Sequence[str],
        threshold: bool,
        chunk_chars: int,
    ) -> _State | None:
        """Every statement on every chunk (max over chunks), chunk by chunk for prefix reuse."""
        chunks = chunk_contexts(contexts, chunk_chars)
        for state in states:
            state.needed = len(chunks)
        for chunk in chunks:
            checks = [
                (state, StatementCheck(context=chunk, statement=state.statement))
                for state in states
                if not state.supported
            ]
            failed = await self._judge_all(judge, checks, threshold)
            if failed is not None:
                return failed
        return None

    async def _judge_all(
        self, judge: JudgeModel, checks: list[tuple[_State, StatementCheck]], threshold: bool
    ) -> _State | None:
        """Judge each statement on its context; the first (in order) whose call failed, if any.

        The calls share their context, so a judge that decodes calls together (the local
        one: :attr:`~assay.models.JudgeModel.batched_calls`) gets them at once and reads
        the context once for all of them. Any other gets them one at a time, and the first
        failure stops the rest.
        """

        async def judge_one(state: _State, value: StatementCheck) -> None:
            if threshold:
                await self._probability(judge, value, state)
            else:
                await self._generated(judge, value, state)
            state.judged += 1

        if getattr(judge, "batched_calls", 1) > 1:
            await asyncio.gather(*(judge_one(state, value) for state, value in checks))
            return next((state for state, _ in checks if state.failure is not None), None)
        for state, value in checks:
            await judge_one(state, value)
            if state.failure is not None:
                return state
        return None

    async def check(
        self,
        contexts: Sequence[str],
        statements: Sequence[str],
        judge: JudgeModel,
        calls: list[JudgeCall],
        *,
        label: str = "statement",
    ) -> tuple[list[Verdict], Unparsed | None]:
        """Verdicts for ``statements``, or the first failure naming its statement.

        Every call made is appended to ``calls``; the verdicts decided before a failure are
        returned with it.
        """
        outcomes = await self.verify(contexts, statements, judge)
        verdicts: list[Verdict] = []
        failure: Unparsed | None = None
        for i, outcome in enumerate(outcomes, start=1):
            calls.extend(outcome.calls)
            if outcome.verdict is not None:
                verdicts.append(outcome.verdict)
            elif failure is None and outcome.failure is not None:
                failure = Unparsed(
                    outcome.failure.reason, f"{label} {i} ({outcome.statement!r}): {outcome.failure.detail}"
                )
        return verdicts, failure

    async def _probability(self, judge: JudgeModel, value: StatementCheck, state: _State) -> None:
        assert isinstance(judge, ChoiceScorer)
        messages = self.prompt.render(value)
        started = time.perf_counter()
        try:
            probs = await judge.choice_probabilities(messages, prefix=VERDICT_PREFIX, choices=["1", "0"])
        except JudgeError as exc:
            state.failure = Unparsed(UnscoredReason.JUDGE_ERROR, str(exc))
            # an API judge's calls that answered but gave no P, else the one call that failed
            made = calls_made(exc, f"{self.prompt.name}.p1")
            state.calls.extend(made or [self._call(judge, messages, None, started, purpose="p1", error=str(exc))])
            return
        # an API judge's calls for its P (one with log-probabilities, or K samples), else the one pass
        made = calls_made(probs, f"{self.prompt.name}.p1")
        if not made:
            usage = getattr(probs, "usage", None)
            cached = getattr(probs, "cached", False)
            made = (self._call(judge, messages, json.dumps(probs), started, purpose="p1", usage=usage, cached=cached),)
        state.calls.extend(made)
        p = probs["1"]
        if p > state.best:
            state.best, state.best_context = p, value.context
            state.p_read = getattr(probs, "how", "")
        state.supported = p >= self.threshold

    async def _generated(self, judge: JudgeModel, value: StatementCheck, state: _State) -> None:
        answer = await ask(judge, self.prompt, value, config=self.config)
        state.calls.extend(answer.calls)
        if answer.output is None:
            state.failure = answer.failure
            return
        state.reason = answer.output.reason
        if answer.output.verdict == 1:
            state.supported, state.best, state.best_context = True, 1.0, value.context
        elif state.best < 0:
            state.best, state.best_context = 0.0, value.context

    async def _reason(self, judge: JudgeModel, chunk: list[str], state: _State) -> None:
        complete = getattr(judge, "complete_string", None)
        if complete is None:
            return
        verdict = 1 if state.supported else 0
        prefix = REASON_PREFIX.replace('"verdict": 0', f'"verdict": {verdict}')
        messages = self.prompt.render(StatementCheck(context=chunk, statement=state.statement))
        started = time.perf_counter()
        try:
            response = await complete(messages, prefix=prefix, max_chars=200, config=self.config)
        except JudgeError as exc:
            state.calls.append(self._call(judge, messages, None, started, purpose="reason", error=str(exc)))
            return
        state.reason = response.text.strip()
        raw = prefix + response.text + '"}'
        state.calls.append(
            self._call(judge, messages, raw, started, purpose="reason", usage=response.usage, cached=response.cached)
        )

    def _call(
        self,
        judge: JudgeModel,
        messages: Sequence[ChatMessage],
        raw: str | None,
        started: float,
        *,
        purpose: str,
        error: str | None = None,
        usage: Usage | None = None,
        cached: bool = False,
    ) -> JudgeCall:
        return JudgeCall(
            model=judge.model_id,
            purpose=f"{self.prompt.name}.{purpose}",
            messages=tuple(dict(m) for m in messages),
            raw_output=raw,
            usage=usage or Usage(),
            latency_s=time.perf_counter() - started,
            error=error,
            cached=cached,
        )

    def _outcome(self, state: _State, threshold: bool) -> StatementOutcome:
        if state.addressed is not None:
            finding = state.addressed
            verdict = Verdict(
                subject=state.statement,
                value=0,
                reason=f"not a claim about the world: it {finding.reason} ({finding.span!r})",
                flags=("addresses_judge",),
                details={"cue": finding.cue, "families": list(finding.families)},
            )
            return StatementOutcome(state.statement, verdict, None, None, ())
        if state.copied is not None:
            span = state.copied
            verdict = Verdict(
                subject=state.statement,
                value=1,
                reason=f"context {span.context + 1} says it word for word: {_quote(span.text)}",
                evidence=(EvidenceRef(context=span.context, start=span.start, end=span.end, text=span.text),),
                details={"verbatim": True},
            )
            return StatementOutcome(state.statement, verdict, None, None, ())
        if state.failure is not None:
            return StatementOutcome(state.statement, None, state.failure, None, tuple(state.calls))
        probability = state.best if threshold else None
        cited = _cited(state.shown)
        reason = state.reason
        if state.supported and not reason and cited:
            quote = cited[0]
            reason = f"context {quote.context + 1} says: {_quote(quote.text)}"
        if threshold:
            reason = self._decided_reason(state, reason)
        details: dict[str, Any] | None = None
        if threshold:
            details = {"p_judge": round(state.best, 4), "threshold": self.threshold}
            if state.p_read:
                details["p_read"] = state.p_read
            if state.vetoed:
                details["vetoed_by"] = list(state.vetoed)
            if state.features is not None:
                details["checks"] = state.features.as_dict()
            if state.evidence is not None:
                details["evidence_chars"] = state.evidence.chars
        verdict = Verdict(
            subject=state.statement,
            value=1 if state.supported else 0,
            reason=reason or ("no reason written" if not state.supported else ""),
            evidence=cited,
            details=details,
        )
        return StatementOutcome(
            state.statement,
            verdict,
            None,
            probability,
            tuple(state.calls),
            evidence=state.evidence,
            features=state.features,
        )

    def _decided_reason(self, state: _State, reason: str) -> str:
        """A threshold verdict's reason, what decided it first.

        The veto and its cause, or the judge's P against the threshold; then the judge's own
        reason; then the detail notes that decided nothing, and what the evidence implies.
        """
        p, t = state.best, self.threshold
        judge = f"the judge's P(supported) {p:.2f} {'>=' if p >= t else '<'} threshold {t:g}"
        features = state.features
        if state.vetoed and features is not None:
            causes = features.problems_of(state.vetoed)
            verdict = "would have passed it" if p >= t else "failed it too"
            head = f"vetoed by the detail check: {'; '.join(causes) or ', '.join(state.vetoed)} ({judge}: {verdict})"
            notes = [line for line in features.problems() if line not in causes]
        else:
            head = judge
            notes = features.problems() if features is not None and not state.supported else []
        parts = [head + (f": {reason}" if reason else "")]
        if notes:
            parts.append("notes, not what decided it: " + "; ".join(notes))
        if features is not None and features.implied:
            parts.append("implied by the evidence: " + "; ".join(features.implied))
        return "; ".join(parts)


_QUOTE_CHARS = 240


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= _QUOTE_CHARS else flat[: _QUOTE_CHARS - 1] + "…")


def _cited(evidence: Evidence | None) -> tuple[EvidenceRef, ...]:
    """The sentences a verdict cites: the best match first, then the other scored ones (no filler neighbours)."""
    if evidence is None or evidence.best is None:
        return ()
    best = evidence.best
    others = sorted((s for s in evidence.spans if s.score > 0 and s != best), key=lambda s: -s.score)[:2]
    return tuple(EvidenceRef(context=s.context, start=s.start, end=s.end, text=s.text) for s in (best, *others))


class _Kept:
    """The contexts without their judge-addressed sentences, worked out only if something reads them.

    A sample read through a shared evidence window never needs them (the window leaves
    such sentences out itself), and splitting every passage again costs a RAG answer
    about 0.2 s.
    """

    def __init__(self, contexts: Sequence[str], guard: bool) -> None:
        self._given, self._guard = contexts, guard
        self._kept: list[str] | None = None

    @property
    def contexts(self) -> list[str]:
        if self._kept is None:
            self._kept = _without_addressed(self._given) if self._guard else list(self._given)
        return self._kept


def _without_addressed(contexts: Sequence[str]) -> list[str]:
    """The contexts without their sentences that address the judge (never evidence)."""
    kept: list[str] = []
    for context in contexts:
        sentences = [s for s in _segmenter("en").segment(context) if s.strip()]
        if any(_addressed(s) for s in sentences):
            context = "".join(s for s in sentences if not _addressed(s))
        kept.append(context)
    return kept
