"""Review by people: answer the questions no judge of a cascade was sure of (reason ``needs_review``).

A cascade that leaves a verdict to people stores its sample unscored ``needs_review``, the
undecided questions in :attr:`~assay.Score.pending` (subject, evidence, what each judge
leaned to). Here a person's answer becomes a :class:`~assay.Verdict` decided by
``person`` (:class:`~assay.Decision` ``kind="person"``); once a score has no question
left, the metric itself computes its value from the verdicts
(:meth:`~assay.metrics.Reviewable.rescored`), and the run's summary, ``assay runs show``,
``report`` and ``gate`` read the new value from the store.

Answers come from the terminal (``assay review RUN``) or from a file the run browser writes
(:func:`read_answers`, ``assay review RUN --import FILE``): a file is checked whole before
anything is written, and its answers are stored in one transaction, so a bad entry leaves the
run as it was.

Every answer is also a labelled item in ``assay calibrate``'s format (:func:`review_labels`):
a grounding item (the sample's contexts, the statement as the claim) or a grader item (the
criteria, the question and answer): labels of the run's own kind of data, which a later
calibration and the cascade's thresholds can use.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from assay._samples import Sample
from assay._scores import Decision, EvidenceRef, MetricSpec, PendingVerdict, Score, Verdict
from assay.errors import AssayError, ConfigError
from assay.metrics._rebuild import metric_from_spec
from assay.metrics._reviewable import Reviewable
from assay.run._results import SampleResult
from assay.run._store import RunStore

__all__ = [
    "ANSWERS_FORMAT",
    "ANSWERS_VERSION",
    "PERSON",
    "Answer",
    "PendingQuestion",
    "ReviewError",
    "ReviewOutcome",
    "apply_answers",
    "default_labels_path",
    "import_answers",
    "pending_questions",
    "read_answers",
    "review_labels",
    "waiting_for_review",
    "write_labels",
]

PERSON = "person"
"""``Decision.by`` and ``Decision.kind`` of an answer given in review."""
ANSWERS_FORMAT = "assay-review-answers"
"""The ``format`` field of an answers file (the run browser writes one)."""
ANSWERS_VERSION = 1
"""The shape of answers files this assay writes and reads."""
LABEL_SOURCE = "assay review"
"""The ``source`` of the labelled items answers become (``assay calibrate`` breaks its figures down by it)."""


class ReviewError(AssayError):
    """Answers that cannot be applied: an unknown question, a file of another run, a value out of range."""


@dataclass(frozen=True)
class PendingQuestion:
    """One question waiting for a person: where it is, what it asks, what the judges leaned to.

    Its identity (:attr:`key`) is the sample's line and repeat, the metric, and the subject:
    what an answers file names.
    """

    run_id: str
    line: int
    repeat: int
    sample_id: str
    metric: str
    subject: str
    evidence: tuple[EvidenceRef, ...]
    tried: tuple[Verdict, ...]
    sample: Sample
    repeats: tuple[int, ...] = ()
    """Every repeat of the sample it waits in (an answer settles them all); ``repeat`` is the first."""

    @property
    def key(self) -> tuple[int, int, str, str]:
        """(line, repeat, metric, subject): what identifies the question in a run."""
        return (self.line, self.repeat, self.metric, self.subject)


@dataclass(frozen=True)
class Answer:
    """A person's answer to one question, named by its :attr:`PendingQuestion.key`.

    Attributes:
        line: The sample's line in the run's input.
        repeat: The repeat of the sample.
        metric: The metric whose question it is.
        subject: The statement or criterion asked about.
        supported: Whether the person found it supported (for a grader: the criterion met).
        where: How to name the answer in an error (``answers[3]`` in a file).
    """

    line: int
    repeat: int
    metric: str
    subject: str
    supported: bool
    where: str = "the answer"

    @property
    def key(self) -> tuple[int, int, str, str]:
        """(line, repeat, metric, subject), as :attr:`PendingQuestion.key`."""
        return (self.line, self.repeat, self.metric, self.subject)


@dataclass(frozen=True)
class ReviewOutcome:
    """What applying answers did.

    Attributes:
        answered: Answers recorded.
        unchanged: Answers already recorded with the same value (a file imported twice).
        rescored: (line, repeat, metric, value) of each score that has no question left and
            was computed again by its metric.
        pending: Questions of the run still waiting (``None``: not counted, ``count_pending=False``).
    """

    answered: int
    unchanged: int
    rescored: tuple[tuple[int, int, str, float], ...]
    pending: int | None


def waiting_for_review(n: int) -> str:
    """``1 question waits for review``, ``3 questions wait for review``: one wording for every view."""
    return "1 question waits for review" if n == 1 else f"{n} questions wait for review"


def _reviewable(score: Score, where: str, run_metrics: Sequence[MetricSpec] = ()) -> Reviewable:
    """The metric of ``score``, rebuilt from its spec (else the run's), which must compute its value from verdicts."""
    spec = score.spec or next((m for m in run_metrics if m.name == score.metric), None)
    if spec is None:
        raise ReviewError(f"{where}: the score has no metric spec, so its value cannot be computed again")
    try:
        metric = metric_from_spec(spec)
    except ConfigError as exc:
        raise ReviewError(f"{where}: the metric cannot be rebuilt from its spec: {exc}") from None
    if not isinstance(metric, Reviewable):
        raise ReviewError(f"{where}: metric {score.metric!r} does not compute its value from answers a person can give")
    return metric


def _questions(run_id: str, result: SampleResult) -> Iterator[PendingQuestion]:
    for name, score in result.scores.items():
        for pending in score.pending:
            yield PendingQuestion(
                run_id=run_id,
                line=result.line,
                repeat=result.repeat,
                sample_id=result.sample.id,
                metric=name,
                subject=pending.subject,
                evidence=pending.evidence,
                tried=pending.tried,
                sample=result.sample,
                repeats=(result.repeat,),
            )


def pending_questions(store: RunStore, run_id: str) -> list[PendingQuestion]:
    """Every question of ``run_id`` waiting for a person, in input order, once however many repeats it waits in.

    Raises:
        StoreError: no such run.
    """
    held = store.keyed_results(run_id, holding='"pending"')  # a record without the key has no question
    found: dict[tuple[int, str, str], PendingQuestion] = {}
    for _, result in held:
        for q in _questions(run_id, result):
            first = found.setdefault((q.line, q.metric, q.subject), q)
            if first is not q:
                found[(q.line, q.metric, q.subject)] = replace(first, repeats=(*first.repeats, q.repeat))
    return list(found.values())


def _person_verdict(pending: PendingVerdict, value: int | str) -> Verdict:
    levels = [t.decision.level for t in pending.tried if t.decision is not None]
    spans = next((t.spans for t in pending.tried if t.spans), ())
    return Verdict(
        subject=pending.subject,
        value=value,
        reason="answered by a person in review",
        evidence=pending.evidence,
        spans=spans,
        decision=Decision(by=PERSON, kind=PERSON, level=max(levels) + 1 if levels else len(pending.tried)),
    )


def _answered(score: Score, answer: Answer, metric: Reviewable) -> tuple[Score, bool]:
    """``score`` with ``answer`` recorded (and ``True``), or unchanged when it already holds it (``False``).

    Raises:
        ReviewError: the question is not pending, or a person already answered it otherwise.
    """
    value = metric.review_value(answer.supported)
    index = next((i for i, p in enumerate(score.pending) if p.subject == answer.subject), None)
    if index is None:
        earlier = next(
            (v for v in score.verdicts if v.subject == answer.subject and v.decision and v.decision.kind == PERSON),
            None,
        )
        if earlier is None:
            raise ReviewError(
                f"{answer.where}: no question {answer.subject!r} of {answer.metric} waits on line {answer.line}"
            )
        if earlier.value != value:
            raise ReviewError(
                f"{answer.where}: {answer.subject!r} on line {answer.line} was already answered {earlier.value!r} "
                f"by a person; this answer says {value!r} and is not applied"
            )
        return score, False
    pending = score.pending[index]
    verdicts = (*score.verdicts, _person_verdict(pending, value))
    left = score.pending[:index] + score.pending[index + 1 :]
    if left:
        detail = f"{waiting_for_review(len(left))} ('assay review')"
        return score.model_copy(update={"verdicts": verdicts, "pending": left, "detail": detail}), True
    return metric.rescored(score.model_copy(update={"verdicts": verdicts, "pending": ()})), True


def _waits(score: Score | None, subject: str) -> bool:
    return score is not None and any(p.subject == subject for p in score.pending)


def apply_answers(
    store: RunStore, run_id: str, answers: Sequence[Answer], *, count_pending: bool = True
) -> ReviewOutcome:
    """Record ``answers`` in ``run_id`` and compute each score left with no question again, all or none.

    Every answer is checked first (its question waits, or a person already gave the same
    answer; no question answered twice); an answer settles its question in every repeat of
    the sample it waits in. The changed results are then stored in one
    transaction. Only the answered samples are read; ``count_pending=False`` skips counting
    the questions left in the whole run (an answer at a time, in the terminal).

    Raises:
        ReviewError: an answer that cannot be applied, named by its ``where``; nothing is written.
        StoreError: no such run, or the store cannot be written (nothing is written).
    """
    read = store.keyed_results(run_id, lines={a.line for a in answers})
    row_keys: dict[tuple[int, int], str] = {}
    current: dict[tuple[int, int], SampleResult] = {}  # (line, repeat): the store's key is (row key, repeat)
    for key, result in read:
        row_keys[(result.line, result.repeat)] = key
        current[(result.line, result.repeat)] = result
    run_metrics = store.spec(run_id).metrics
    seen: dict[tuple[int, int, str, str], str] = {}
    touched: dict[tuple[tuple[int, int], str], None] = {}
    answered = unchanged = 0
    metrics: dict[str, Reviewable] = {}
    for answer in answers:
        if answer.key in seen:
            raise ReviewError(f"{answer.where}: the same question as {seen[answer.key]}; answer each once")
        seen[answer.key] = answer.where
        found = current.get((answer.line, answer.repeat))
        if found is None:
            raise ReviewError(
                f"{answer.where}: run {run_id} has no sample on line {answer.line} (repeat {answer.repeat})"
            )
        own = found.scores.get(answer.metric)
        if own is None:
            raise ReviewError(f"{answer.where}: line {answer.line} has no score of metric {answer.metric!r}")
        metric = metrics.get(answer.metric) or _reviewable(own, answer.where, run_metrics)
        metrics[answer.metric] = metric
        # The question is about the sample, not one repeat: the answer settles it in every repeat it waits in.
        waiting = [
            where
            for where, result in sorted(current.items())
            if where[0] == answer.line and _waits(result.scores.get(answer.metric), answer.subject)
        ]
        if not waiting:
            _answered(own, answer, metric)  # raises unless a person already gave this answer
            unchanged += 1
            continue
        for where in waiting:
            result = current[where]
            new, _ = _answered(result.scores[answer.metric], answer, metric)
            current[where] = SampleResult(result.sample, {**result.scores, answer.metric: new}, *where)
            touched[(where, answer.metric)] = None
        answered += 1
    changed = dict.fromkeys(where for where, _ in touched)
    if changed:
        store.replace_results(run_id, [(row_keys[where], current[where]) for where in changed])
    rescored = tuple(
        (where[0], where[1], name, current[where].scores[name].value)
        for where, name in touched
        if not current[where].scores[name].pending
    )
    return ReviewOutcome(
        answered, unchanged, rescored, len(pending_questions(store, run_id)) if count_pending else None
    )


_ANSWER_WORDS = {"supported": True, "not_supported": False, "pass": True, "fail": False}


def read_answers(path: Path, run_id: str) -> list[Answer]:
    """The answers of an answers file (JSON, as the run browser writes it) for ``run_id``.

    The file is ``{"format": "assay-review-answers", "version": 1, "run_id": ..., "answers":
    [{"line", "repeat", "metric", "subject", "answer": "supported" | "not_supported"}, ...]}``.

    Raises:
        ReviewError: the file cannot be read, is not an answers file, is of another run, or an
            entry is malformed (named ``answers[i]``, counted from 0).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ReviewError(f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ReviewError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(data, dict) or data.get("format") != ANSWERS_FORMAT:
        raise ReviewError(f"{path}: not an answers file (its 'format' must be {ANSWERS_FORMAT!r})")
    if data.get("version") != ANSWERS_VERSION:
        raise ReviewError(f"{path}: answers file version {data.get('version')!r}; this assay reads {ANSWERS_VERSION}")
    if data.get("run_id") != run_id:
        raise ReviewError(f"{path}: the answers are for run {data.get('run_id')!r}, not {run_id!r}")
    entries = data.get("answers")
    if not isinstance(entries, list):
        raise ReviewError(f"{path}: 'answers' must be a list")
    answers = []
    for i, entry in enumerate(entries):
        where = f"{path}: answers[{i}]"
        if not isinstance(entry, dict):
            raise ReviewError(f"{where}: must be an object")
        line, repeat, metric, subject = (entry.get(k) for k in ("line", "repeat", "metric", "subject"))
        if (
            isinstance(line, bool)
            or not isinstance(line, int)
            or isinstance(repeat, bool)
            or not isinstance(repeat, int)
        ):
            raise ReviewError(f"{where}: 'line' and 'repeat' must be whole numbers")
        if not isinstance(metric, str) or not isinstance(subject, str) or not subject:
            raise ReviewError(f"{where}: 'metric' and 'subject' must be non-empty text")
        word = entry.get("answer")
        if not isinstance(word, str) or word.lower() not in _ANSWER_WORDS:
            raise ReviewError(f"{where}: 'answer' must be 'supported' or 'not_supported', got {word!r}")
        answers.append(Answer(line, repeat, metric, subject, _ANSWER_WORDS[word.lower()], where))
    return answers


def import_answers(store: RunStore, run_id: str, path: Path) -> ReviewOutcome:
    """Read an answers file and apply it to ``run_id``: every answer, or none (:func:`apply_answers`)."""
    return apply_answers(store, run_id, read_answers(path, run_id))


def review_labels(store: RunStore, run_id: str) -> tuple[list[dict[str, Any]], int]:
    """Every answer a person gave in ``run_id`` as a labelled item in ``assay calibrate``'s format.

    Returns the items (each with a unique ``id``, ``source`` ``assay review`` and the run id;
    one for an answer given in several repeats of a sample) and how many answers give none (a
    grader sample graded from its trace alone).
    """
    items: list[dict[str, Any]] = []
    skipped = 0
    kept: set[tuple[int, str, str, int | str]] = set()
    run_metrics = store.spec(run_id).metrics
    for _, result in store.keyed_results(run_id):
        for name, score in result.scores.items():
            people = [v for v in score.verdicts if v.decision is not None and v.decision.kind == PERSON]
            if not people:
                continue
            metric = _reviewable(score, f"line {result.line} {name}", run_metrics)
            for n, verdict in enumerate(people):
                if (result.line, name, verdict.subject, verdict.value) in kept:
                    continue  # the same answer in another repeat: one labelled item
                kept.add((result.line, name, verdict.subject, verdict.value))
                item = metric.label_item(result.sample, verdict)
                if item is None:
                    skipped += 1
                    continue
                items.append(
                    {
                        "id": f"{run_id}:{result.line}:{result.repeat}:{name}:{n}",
                        **item,
                        "source": LABEL_SOURCE,
                        "run_id": run_id,
                        "sample_id": result.sample.id,
                    }
                )
    return items, skipped


def write_labels(store: RunStore, run_id: str, path: Path) -> tuple[int, int]:
    """Write :func:`review_labels` to ``path`` (JSONL, replaced whole); return (items written, answers with none)."""
    items, skipped = review_labels(store, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)
    path.write_text(text, encoding="utf-8")
    return len(items), skipped


def default_labels_path(store_path: Path, run_id: str) -> Path:
    """Where ``assay review`` writes a run's answers as labels: ``labels/RUN.jsonl`` beside the store."""
    return store_path.parent / "labels" / f"{run_id}.jsonl"
