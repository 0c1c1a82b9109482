"""assay metrics as Inspect scorers, run through a real ``inspect_ai.eval`` on Inspect's mock model."""

from __future__ import annotations

import gc
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample as InspectSample
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from assay import Faithfulness, ToolCall
from assay.errors import MissingExtraError, SampleError
from assay.integrations.inspect import assay_scorer
from assay.metrics import BinaryJudgeGrader
from assay.models import FunctionJudge, JudgeRequest
from assay.run import JudgeCache

# Two warnings of inspect_ai's own (0.3.285), seen with its built-in match() scorer too:
# it calls tenacity's deprecated wait_exponential_jitter(initial=...), which under -W error
# fails the eval itself, and it leaves anyio memory streams unclosed.
pytestmark = [
    pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <function MemoryObjectReceiveStream.__del__"
        ":pytest.PytestUnraisableExceptionWarning"
    ),
]


def verdicts(messages: Any, request: JudgeRequest) -> str:
    """Statements mentioning the moon are unsupported; 'BROKEN' ones get a refusal."""
    user = messages[-1]["content"]
    if "<statement>" in user:
        statement = user.split("<statement>\n")[1].split("\n</statement>")[0]
        if "BROKEN" in statement:
            return "I cannot judge that"
        supported = "moon" not in statement
        reason = "the context says so" if supported else "the context never mentions the moon"
        return json.dumps({"verdict": int(supported), "reason": reason})
    if "<conversation>" in user:
        polite = "please" in user
        return json.dumps({"reasoning": "says please" if polite else "curt", "label": "PASS" if polite else "FAIL"})
    raise AssertionError(f"unexpected judge prompt: {user[:200]}")


def echo(input: list[Any], tools: object, tool_choice: object, config: object) -> ModelOutput:
    """The mock model answers with whatever follows 'Say: ' in the prompt."""
    output = ModelOutput.from_content(model="mockllm", content=input[-1].text.split("Say: ", 1)[1])
    # With usage given, mockllm does not count tokens with tiktoken (which downloads its tables).
    output.usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
    return output


CONTEXT = "On clear days the sky is blue, and grass is green."  # no answer sentence copies it word for word
DATASET = [
    InspectSample(id="grounded", input="Say: The sky is blue. Grass is green.", metadata={"contexts": [CONTEXT]}),
    InspectSample(id="moon", input="Say: The sky is blue. The moon is cheese.", metadata={"contexts": [CONTEXT]}),
    InspectSample(id="broken", input="Say: The sky is blue. It is BROKEN.", metadata={"contexts": [CONTEXT]}),
]


@pytest.fixture(autouse=True)
def _log_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    log_dir = tmp_path / "logs"
    monkeypatch.setenv("INSPECT_LOG_DIR", str(log_dir))
    yield log_dir
    # Collect inspect_ai's leaked streams now, under this module's filter, not during some
    # later test (or at exit) where the ResourceWarning would fail the run.
    gc.collect()


def task_state(
    sample_id: str | int, question: str, completion: str, metadata: dict[str, Any], messages: Any = ()
) -> Any:
    """The parts of an Inspect TaskState that to_sample reads."""
    return SimpleNamespace(
        sample_id=sample_id,
        input_text=question,
        metadata=metadata,
        messages=list(messages),
        output=SimpleNamespace(completion=completion),
    )


def run(task: Task) -> EvalLog:
    [log] = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=echo), display="none")
    assert log.status == "success", log.error
    # What was written to disk, not only what eval() returned in memory.
    return read_eval_log(log.location)


def test_scores_verdicts_and_an_unscored_sample_left_out_of_the_mean(_log_dir: Path) -> None:
    judge = FunctionJudge(verdicts)
    metric = Faithfulness(decomposer="sentences", strategy="per_statement")
    log = run(Task(dataset=DATASET, scorer=assay_scorer(metric, judge=judge)))

    assert log.location.startswith(str(_log_dir))
    assert log.samples is not None
    by_id = {str(s.id): s.scores["faithfulness"] for s in log.samples if s.scores}
    assert by_id["grounded"].value == 1.0
    assert by_id["moon"].value == 0.5
    assert isinstance(by_id["broken"].value, float) and math.isnan(by_id["broken"].value)

    moon = by_id["moon"]
    assert moon.explanation is not None and "The moon is cheese." in moon.explanation
    assert moon.metadata is not None
    assert [{k: v[k] for k in ("subject", "value", "reason")} for v in moon.metadata["verdicts"]] == [
        {"subject": "The sky is blue.", "value": 1, "reason": "the context says so"},
        {"subject": "The moon is cheese.", "value": 0, "reason": "the context never mentions the moon"},
    ]
    # the supported statement carries the context sentence it rests on
    assert moon.metadata["verdicts"][0]["evidence"][0]["text"] == CONTEXT
    assert moon.metadata["spec"]["name"] == "faithfulness"
    assert moon.metadata["spec"] == metric.spec().model_dump(mode="json")
    assert moon.metadata["judge"] == "function"
    assert moon.metadata["usage"]["judge_calls"] == 2

    broken = by_id["broken"]
    assert broken.reason == "grader_failed"
    assert broken.metadata is not None
    assert broken.metadata["unscored"]["reason"] == "refusal"
    assert "I cannot judge that" in broken.metadata["unscored"]["detail"]
    assert broken.explanation is not None and broken.explanation.startswith("unscored (refusal)")

    [eval_score] = log.results.scores if log.results else []
    assert eval_score.name == "faithfulness"
    assert (eval_score.scored_samples, eval_score.unscored_samples) == (2, 1)
    # (1.0 + 0.5) / 2: the unscored sample is neither a 0 (which would give 0.5) nor a NaN.
    assert eval_score.metrics["mean"].value == pytest.approx(0.75)
    assert eval_score.metrics["stderr"].value == pytest.approx(0.25)
    assert eval_score.params == {}
    # The eval log records what was judged: a spec that rebuilds the metric.
    assert log.eval.scorers is not None
    assert log.eval.scorers[0].metadata == {"assay_spec": metric.spec().model_dump(mode="json")}


def test_two_metrics_keep_their_names_target_is_the_reference_and_a_grader_grades(_log_dir: Path) -> None:
    dataset = [
        InspectSample(id="p", input="Say: Yes, please wait.", target="Yes", metadata={"contexts": ["We ask: wait."]}),
        InspectSample(id="r", input="Say: No.", target=["No", "Never"], metadata={"contexts": ["It says no."]}),
    ]
    seen: list[str] = []

    def grading(messages: Any, request: JudgeRequest) -> str:
        seen.append(messages[-1]["content"])
        return verdicts(messages, request)

    def grounding(messages: Any, request: JudgeRequest) -> str:  # the default decomposer may ask for a sentence
        user = messages[-1]["content"]
        if "<sentence>" in user:
            return json.dumps({"statements": [user.split("<sentence>\n")[1].split("\n</sentence>")[0]]})
        return verdicts(messages, request)

    scorers = [
        assay_scorer(BinaryJudgeGrader("The reply is polite."), judge=FunctionJudge(grading)),
        assay_scorer("faithfulness", judge=FunctionJudge(grounding), name="grounded"),
    ]
    log = run(Task(dataset=dataset, scorer=scorers))
    assert log.samples is not None
    scores = {str(s.id): s.scores for s in log.samples if s.scores}
    assert scores["p"]["binary_grader"].value == 1.0
    assert scores["r"]["binary_grader"].value == 0.0
    assert scores["r"]["binary_grader"].metadata["verdicts"] == [
        {"subject": "The reply is polite.", "value": "FAIL", "reason": "curt"}
    ]
    assert scores["p"]["grounded"].value == 1.0 and scores["p"]["grounded"].metadata["spec"]["name"] == "faithfulness"
    assert any("Yes, please wait." in prompt for prompt in seen)
    assert log.results is not None
    by_name = {s.name: s for s in log.results.scores}
    assert by_name["binary_grader"].metrics["mean"].value == pytest.approx(0.5)
    assert (by_name["grounded"].scored_samples, by_name["grounded"].unscored_samples) == (2, 0)


def test_a_sample_without_a_field_the_metric_needs_is_a_sample_error_as_in_assay_run(_log_dir: Path) -> None:
    judge = FunctionJudge(verdicts)
    dataset = [*DATASET[:1], InspectSample(id="bare", input="Say: The sky is blue.")]
    task = Task(dataset=dataset, scorer=assay_scorer("faithfulness", judge=judge))
    [log] = inspect_eval(
        task, model=get_model("mockllm/model", custom_outputs=echo), display="none", fail_on_error=False
    )
    assert log.samples is not None
    errors = {str(s.id): s.error.message for s in log.samples if s.error is not None}
    # Not a made-up unscored result: the sample is invalid, in the words assay run uses for a row.
    assert errors == {"bare": "SampleError(\"inspect sample 'bare': missing or empty field 'contexts'\")"}
    scores = {str(s.id): s.scores for s in log.samples if s.scores}
    assert list(scores) == ["grounded"] and scores["grounded"]["faithfulness"].value == 1.0


def test_epochs_are_judged_afresh_and_a_second_eval_reads_the_cache(tmp_path: Path) -> None:
    judge = FunctionJudge(verdicts)
    metric = Faithfulness(decomposer="sentences", strategy="per_statement")
    cache = JudgeCache(tmp_path / "cache.sqlite")
    try:
        log = run(Task(dataset=DATASET[1:2], scorer=assay_scorer(metric, judge=judge, cache=cache), epochs=2))
        # Two statements, two epochs: an epoch is a repeat, not a cache hit of the first.
        assert len(judge.requests) == 4
        assert log.results is not None and log.results.scores[0].metrics["mean"].value == 0.5
        # The same eval again (a new event loop, the same scorer type): every call cached.
        again = FunctionJudge(verdicts)
        log = run(Task(dataset=DATASET[1:2], scorer=assay_scorer(metric, judge=again, cache=cache), epochs=2))
        assert again.requests == []
        assert log.results is not None and log.results.scores[0].metrics["mean"].value == 0.5
    finally:
        cache.close()


def test_trace_carries_the_conversation_with_tool_calls() -> None:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
    from inspect_ai.scorer import Target
    from inspect_ai.tool import ToolCall as InspectToolCall
    from inspect_ai.tool import ToolCallError

    from assay.integrations.inspect import to_sample

    messages = [
        ChatMessageUser(content="Weather in Paris?"),
        ChatMessageAssistant(
            content="", tool_calls=[InspectToolCall(id="c1", function="weather", arguments={"city": "Paris"})]
        ),
        ChatMessageTool(content="sunny", tool_call_id="c1", function="weather"),
        ChatMessageTool(
            content="", tool_call_id="c2", function="book", error=ToolCallError(type="unknown", message="no seats")
        ),
        ChatMessageAssistant(content="It is sunny."),
    ]
    state = task_state("t", "Weather in Paris?", "It is sunny.", {}, messages)
    sample = to_sample(state, Target(""), trace=True)
    assert [(m.role, m.content) for m in sample.trace] == [
        ("user", "Weather in Paris?"),
        ("assistant", None),
        ("tool", "sunny"),
        ("tool", None),
        ("assistant", "It is sunny."),
    ]
    assert sample.trace[1].tool_calls == (ToolCall(name="weather", arguments={"city": "Paris"}, id="c1"),)
    assert (sample.trace[2].tool_call_id, sample.trace[2].name, sample.trace[2].is_error) == ("c1", "weather", False)
    assert sample.trace[3].is_error
    assert to_sample(state, Target("")).trace == ()


def test_reference_contexts_key_and_bad_contexts() -> None:
    from inspect_ai.scorer import Target

    from assay.integrations.inspect import to_sample

    metadata = {"docs": "one passage", "contexts": ["ignored"], "topic": "sky"}
    sample = to_sample(
        task_state(7, "Q?", "A.", metadata), Target(["first", "second"]), contexts_key=("docs", "contexts")
    )
    assert sample.id == "7"
    assert sample.contexts == ("one passage",)
    assert sample.reference == "first\nsecond"
    assert sample.metadata == {"contexts": ["ignored"], "topic": "sky"}

    # Read as assay run reads a row: a JSON list in a string is the list; the wrong type is a row error.
    listed = to_sample(task_state(7, "Q?", "A.", {"contexts": '["a", "b"]'}), Target(""))
    assert listed.contexts == ("a", "b")
    with pytest.raises(
        SampleError,
        match=r"inspect sample 7: field 'metadata.contexts\[0\]': expected a string \(or a LangChain Document\), "
        r"got a number \(int\)",
    ):
        to_sample(task_state(7, "Q?", "A.", {"contexts": [1, 2]}), Target(""))
    with pytest.raises(SampleError, match=r"inspect sample 7: missing or empty field 'contexts'"):
        to_sample(task_state(7, "Q?", "A.", {}), Target(""), required=("answer", "contexts"))


def test_missing_inspect_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai.scorer", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'assay\[inspect\]'"):
        assay_scorer(Faithfulness(), judge=FunctionJudge(verdicts))
