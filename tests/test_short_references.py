"""Short references are statements (issue 56, item 4).

A QA set's reference is often one word, number, name or time ("Paris", "1889", "9am"). Split
like a paragraph, it lost its one word (a statement needs two) and ``context_recall`` was
unscored ``no_statements`` for half a set, though the judge had returned ``["Paris"]``. Every
metric that splits text judges such a text as one statement, whole, whatever its
decomposer, whether the judge's extraction returns the text or nothing at all.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field

import pytest

from assay import Sample
from assay.grounding._anchor import answer_sentences, short_reference
from assay.metrics import ContextRecall, FactualCorrectness, Faithfulness, Metric
from assay.models import FunctionJudge

SHORT = [
    "Paris",  # a place
    "1889",  # a year
    "Shakespeare",  # a name
    "9am",  # a time
    "$4.50",  # an amount
    "Dr. Who",  # a title with an abbreviation a segmenter cuts at
    "1.5 kg",  # a measure
    "yes",  # a yes/no answer
    "2021-03-04",  # a date
    "Marie Curie",  # a full name
    "42%",  # a share
    "the Nile",  # a name with its article
]

CONTEXT = "Everything the references say is written here: " + "; ".join(SHORT) + "."


@dataclass
class Extractor:
    """Answers extraction prompts with ``echo`` (the text back) or nothing; every verdict 1; notes what it judged."""

    echo: bool
    judged: list[str] = field(default_factory=list)

    def reply(self, user: str) -> str:
        if "<statements>" in user:
            items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
            texts = [re.sub(r"^\[\d+\] ", "", item) for item in items]
            self.judged.extend(texts)
            return json.dumps({"verdicts": [{"statement": t, "reason": "said", "verdict": 1} for t in texts]})
        for tag in ("sentence", "answer"):
            if f"<{tag}>" in user:
                text = user.split(f"<{tag}>\n")[1].split(f"\n</{tag}>")[0]
                return json.dumps({"statements": [text] if self.echo else []})
        if "<statement>" in user:
            self.judged.append(user.split("<statement>\n")[1].split("\n</statement>")[0])
        return json.dumps({"verdict": 1, "reason": "said"})

    def model(self) -> FunctionJudge:
        return FunctionJudge(lambda messages, request: self.reply(messages[-1]["content"]))


def _score(metric: Metric, sample: Sample, echo: bool) -> tuple[float, list[str], list[str]]:
    judge = Extractor(echo)
    score = asyncio.run(metric.score(sample, judge.model()))
    assert score.is_scored, (sample, score.unscored_reason, score.detail)
    return score.value, [v.subject for v in score.verdicts], judge.judged


@pytest.mark.parametrize("text", SHORT)
def test_a_short_text_is_one_statement_that_is_itself(text: str) -> None:
    assert short_reference(text) == text
    assert short_reference(f"  {text}\n") == text
    (sentence,) = answer_sentences(text)
    assert sentence.checkable and sentence.text == text


@pytest.mark.parametrize(
    "text",
    [
        "It is Paris.",
        "The tower was built in 1889.",
        "Thanks!",
        "Okay.",
        "Yes. Okay.",
        "Which one?",
        "",
        "Paris\nLondon",
        "one two three four five",
    ],
)
def test_a_sentence_filler_a_question_or_a_list_is_no_short_reference(text: str) -> None:
    assert short_reference(text) is None


@pytest.mark.parametrize("echo", [True, False], ids=["judge-echoes", "judge-returns-nothing"])
@pytest.mark.parametrize("decomposer", ["llm", "sentences", "hybrid", "anchored"])
@pytest.mark.parametrize("text", SHORT)
def test_context_recall_judges_a_short_reference_whole(text: str, decomposer: str, echo: bool) -> None:
    sample = Sample(id="q", question="What is it?", reference=text, contexts=(CONTEXT,))
    metric = ContextRecall(decomposer=decomposer)  # type: ignore[arg-type]
    value, subjects, judged = _score(metric, sample, echo)
    assert (value, subjects, judged) == (1.0, [text], [text])


@pytest.mark.parametrize("echo", [True, False], ids=["judge-echoes", "judge-returns-nothing"])
@pytest.mark.parametrize("text", SHORT)
def test_factual_correctness_judges_a_short_answer_and_reference_whole(text: str, echo: bool) -> None:
    sample = Sample(id="q", question="What is it?", answer=text, reference=text)
    value, subjects, _ = _score(FactualCorrectness(), sample, echo)
    assert (value, subjects) == (1.0, [f"answer claim: {text}", f"reference claim: {text}"])


@pytest.mark.parametrize("decomposer", ["llm", "sentences", "hybrid", "anchored"])
@pytest.mark.parametrize("text", SHORT)
def test_faithfulness_judges_a_short_answer_without_a_question_whole(text: str, decomposer: str) -> None:
    sample = Sample(id="q", answer=text, contexts=(CONTEXT,))
    value, subjects, judged = _score(Faithfulness(decomposer=decomposer), sample, echo=False)  # type: ignore[arg-type]
    assert (value, subjects, judged) == (1.0, [text], [text])
