"""Metrics round-trip through their spec: spec -> metric_from_spec -> the same spec and the same scores."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from assay import Message, MetricSpec, Sample, Score, ToolCall, Verdict
from assay._scores import METRIC_SPEC_VERSION, Binary
from assay.errors import ConfigError
from assay.grounding._decompose import STATEMENTS_PROMPT, AnswerToSplit
from assay.grounding._verify import STATEMENT_PROMPT_V1
from assay.metrics import (
    AgentGoalAccuracy,
    AgentStateMatch,
    Aggregate,
    AnswerRelevancy,
    ArgumentMatch,
    BinaryJudgeGrader,
    CombinedGrader,
    CompositeMetric,
    CompositeRun,
    ContextPrecision,
    ContextRecall,
    FactualCorrectness,
    Faithfulness,
    HolisticGoalAccuracy,
    Metric,
    Outputs,
    RangeJudgeGrader,
    Shot,
    StateChanges,
    StatementVerifier,
    SubMetric,
    TemplatedPromptJudgeGrader,
    ToolCallAccuracy,
    TraceFormatter,
    build_metric,
    metric_entries,
    metric_from_spec,
    spec_from_fields,
)
from assay.models import ChatMessage, FunctionJudge, GenerateConfig, JudgeModel, JudgeRequest

FIXTURES = Path(__file__).parent / "fixtures"


def same_city(expected: object, actual: object) -> bool:
    """A per-argument comparison, defined at module level so specs can rebuild it."""
    return str(expected).casefold() == str(actual).casefold()


SAMPLE = Sample(
    id="s1",
    question="What is the capital of France, and how many people live there?",
    answer=(
        "Paris is the capital of France. Paris has about two million residents. It is also the largest city of France."
    ),
    contexts=("Paris is the capital and largest city of France.", "About 2.1 million people live in Paris."),
    reference="The capital of France is Paris. Roughly 2.1 million people live in the city.",
    trace=(
        Message(role="system", content="You are a travel agent."),
        Message(role="user", content="Book me a table in Paris for two."),
        Message(role="assistant", tool_calls=(ToolCall(name="book", arguments={"city": "Paris", "people": 2}),)),
        Message(role="tool", name="book", content='{"status": "booked", "time": "20:00"}'),
        Message(role="assistant", content="Your table for two in Paris is booked for 20:00."),
    ),
    reference_tool_calls=(ToolCall(name="book", arguments={"city": "Paris", "people": 2}),),
    metadata={"lang": "en"},
)


# --- a judge that answers any schema, deterministically from the prompt ----------------------------


def _pick(seed: str, n: int) -> int:
    return int(hashlib.sha256(seed.encode()).hexdigest(), 16) % n


def _fake(schema: dict[str, Any], defs: dict[str, Any], seed: str) -> Any:
    if "$ref" in schema:
        return _fake(defs[schema["$ref"].rsplit("/", 1)[1]], defs, seed)
    if "enum" in schema:
        return schema["enum"][_pick(seed, len(schema["enum"]))]
    if "const" in schema:
        return schema["const"]
    if "anyOf" in schema:
        return _fake(next(s for s in schema["anyOf"] if s.get("type") != "null"), defs, seed)
    kind = schema.get("type")
    if kind == "object":
        return {k: _fake(v, defs, f"{seed}.{k}") for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [_fake(schema.get("items", {}), defs, f"{seed}[{i}]") for i in range(4)]
    if kind == "integer":
        return _pick(seed, 2)
    if kind == "number":
        return 0.5
    if kind == "boolean":
        return _pick(seed, 2) == 1
    return f"claim number {_pick(seed, 1000)} holds"


def any_schema(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
    """A valid answer to whatever is asked, chosen by a hash of the whole prompt (a sentence rewrites to itself)."""
    assert request.schema is not None
    user = messages[-1]["content"]
    if "<sentence>\n" in user:
        return json.dumps({"statements": [user.split("<sentence>\n", 1)[1].split("\n</sentence>", 1)[0]]})
    schema = request.schema.model_json_schema()
    seed = json.dumps(list(messages), sort_keys=True)
    return json.dumps(_fake(schema, schema.get("$defs", {}), seed))


def judge() -> FunctionJudge:
    return FunctionJudge(any_schema, concurrency=1)


# --- a composite metric written with module-level functions and models -------------------------------


class Claim(BaseModel):
    answer: str
    claim: str


class ClaimCheck(BaseModel):
    reason: str
    verdict: Binary


def claim_input(sample: Sample) -> Claim:
    return Claim(answer=sample.answer or "", claim=sample.reference or "")


CLAIM = SubMetric.define(
    "spec_test.claim",
    instruction="Does the answer make the claim?",
    input_model=Claim,
    output_model=ClaimCheck,
    question="Does <answer> make the claim in <claim>?",
    examples=[(Claim(answer="Paris.", claim="Paris"), ClaimCheck(reason="it says Paris", verdict=1))],
    from_sample=claim_input,
    required_fields=("answer", "reference"),
    version="4",
    config=GenerateConfig(max_tokens=77),
)
SPLIT = SubMetric(
    STATEMENTS_PROMPT,
    from_sample=lambda s: AnswerToSplit(question=s.question or "", answer=s.answer or ""),  # never rebuilt
)
SPLIT_BY_DEF = SubMetric(STATEMENTS_PROMPT, required_fields=("answer",))


async def claim_then_split(sample: Sample, run: CompositeRun) -> None:
    await run.run(CLAIM)
    await run.run(SPLIT_BY_DEF, AnswerToSplit(question=sample.question or "", answer=sample.answer or ""))


def claim_aggregate(out: Outputs) -> Aggregate:
    check = out.get(CLAIM)
    statements = out.get(SPLIT_BY_DEF).statements
    verdict = Verdict(subject="claim", value=check.verdict, reason=check.reason)
    return Aggregate(float(check.verdict), verdicts=[verdict], explanation=f"{len(statements)} statements")


COMPOSITE = CompositeMetric(
    "spec_test_composite",
    sub_metrics=(CLAIM, SPLIT_BY_DEF),
    aggregate=claim_aggregate,
    orchestrate=claim_then_split,
    version="7",
    params={"cutoff": 0.5, "labels": ["a", "b"], "nested": {"deep": [1, 2]}},
)


# --- plugin-style metrics: a pydantic model, registered under the assay.metrics entry point ----------


class KeywordMetric(BaseModel):
    """A plugin metric as a frozen pydantic model: 1.0 when the answer has the keyword."""

    model_config = ConfigDict(frozen=True)

    keyword: str
    case_sensitive: bool = False
    config: GenerateConfig = GenerateConfig(max_tokens=5)
    name: str = "keyword_plugin"
    required_fields: tuple[str, ...] = ("answer",)

    @property
    def version(self) -> str:
        return "3"

    def spec(self) -> MetricSpec:
        return spec_from_fields(self)

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        answer = sample.answer or ""
        found = self.keyword in answer if self.case_sensitive else self.keyword.lower() in answer.lower()
        return Score.scored(self.name, float(found), explanation=f"{self.keyword!r} found: {found}", spec=self.spec())


def build_keyword_metric(keyword: str, case_sensitive: str = "false") -> KeywordMetric:
    return KeywordMetric(keyword=keyword, case_sensitive=case_sensitive == "true")


@dataclasses.dataclass(frozen=True)
class HandWrittenSpecMetric:
    """A plugin metric whose spec is written by hand, naming no type: rebuilt through its entry point."""

    keyword: str
    name: str = "handwritten_plugin"
    required_fields: tuple[str, ...] = ()

    def spec(self) -> MetricSpec:
        return MetricSpec(name=self.name, params={"keyword": self.keyword})

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        return Score.scored(self.name, float(self.keyword in (sample.answer or "")), spec=self.spec())


def build_handwritten(keyword: str) -> HandWrittenSpecMetric:
    return HandWrittenSpecMetric(keyword)


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Install two entry points in the ``assay.metrics`` group (a real dist-info on sys.path)."""
    dist = tmp_path / "assay_spec_test_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: assay-spec-test-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        f"[assay.metrics]\nkeyword_plugin = {__name__}:build_keyword_metric\n"
        f"handwritten_plugin = {__name__}:build_handwritten\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))


# --- the metrics under test ----------------------------------------------------------------------


SHOTS = (
    Shot(question="Capital of France?", answer="Lyon.", label="FAIL", reasoning="Lyon is not the capital."),
    Shot(
        messages=(Message(role="user", content="Hi"), Message(role="assistant", content="Hello!")),
        label="NA",
        reasoning="No capital was asked for.",
    ),
)
OPTIONS = {"criteria": "The answer is correct.", "template": "Is {answer} right for {question}?"}


def registry_metrics() -> dict[str, Metric]:
    """Every built-in registry entry, with the options it requires."""
    built = {}
    for name, entry in metric_entries().items():
        if entry.summary.startswith("plugin from"):
            continue
        built[name] = build_metric(name, {k: OPTIONS[k] for k in entry.required_options})
    return built


def extra_metrics() -> dict[str, Metric]:
    grader = BinaryJudgeGrader("The answer is polite.", shots=SHOTS, name="polite", config=GenerateConfig(seed=3))
    scale = RangeJudgeGrader("Concision", {1: "rambling", 3: "fine", 5: "tight"}, expected_value=True, name="concise")
    strict = Faithfulness(
        strategy="per_statement",
        decomposer="sentences",
        verifier=StatementVerifier(
            method="generate", threshold=0.7, chunk_chars=300, reasons="all", prompt=STATEMENT_PROMPT_V1
        ),
    )
    inner = CombinedGrader([(grader, 2.0), (scale, 1)], require_all_pass=True, pass_threshold=0.6, name="inner")
    return {
        "grader_with_shots": grader,
        "range_expected_value": scale,
        "templated_binary": TemplatedPromptJudgeGrader(
            "Grade {answer} against {reference} ({metadata[lang]}).", output="binary"
        ),
        "faithfulness_v1_prompt": strict,
        "recall_custom": ContextRecall(decomposer="sentences", verifier=StatementVerifier(threshold=0.8)),
        "factual_recall": FactualCorrectness(mode="recall"),
        "precision_with_reference": ContextPrecision(reference=True, config=GenerateConfig(max_tokens=64)),
        "relevancy_custom": AnswerRelevancy(config=GenerateConfig(temperature=0.3)),
        "goal_custom": AgentGoalAccuracy(
            reference=False,
            state=StateChanges(tools=("book*",), error_prefixes=("failed",)),
            include_policy=False,
            calls_chars=None,
        ),
        "goal_holistic": HolisticGoalAccuracy(
            reference=False, formatter=TraceFormatter(include_system=True, max_chars=None, head_share=0.5)
        ),
        "tools_unordered": ToolCallAccuracy(strict_order=False, ignore_extra_arguments=True),
        "tools_state_changing": ToolCallAccuracy(
            calls="state_changing",
            trajectory="superset",
            arguments=ArgumentMatch(mode="expected_keys", ignore=("book.note",), compare={"city": same_city}),
        ),
        "state_match_custom": AgentStateMatch(
            state=StateChanges(read_only=("book_lookup",)), arguments=ArgumentMatch(mode="names"), strict_order=True
        ),
        "combined": inner,
        "combined_nested": CombinedGrader({inner: 1.0, strict: 3.0, ToolCallAccuracy(): 0.5}, name="nested"),
        "composite": COMPOSITE,
        "plugin_pydantic": KeywordMetric(keyword="paris", config=GenerateConfig(max_tokens=9)),
    }


BUILT_IN = registry_metrics()
ALL = {**BUILT_IN, **extra_metrics()}


def _without_latency(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _without_latency(v) for k, v in data.items() if k != "latency_s"}
    if isinstance(data, list):
        return [_without_latency(v) for v in data]
    return data


def scored(metric: Metric) -> tuple[Score, FunctionJudge]:
    used = judge()
    return asyncio.run(metric.score(SAMPLE, used)), used


# --- round trips ---------------------------------------------------------------------------------


def test_every_registry_entry_is_covered() -> None:
    assert set(registry_metrics()) >= {
        "faithfulness",
        "binary_grader",
        "range_grader",
        "templated_grader",
        "answer_relevancy",
        "context_precision",
        "context_recall",
        "factual_correctness",
        "agent_goal_accuracy",
        "agent_state_match",
        "tool_call_accuracy",
    }


@pytest.mark.parametrize("key", list(ALL))
def test_spec_rebuild_spec_is_identical_and_the_rebuilt_metric_scores_the_same(key: str) -> None:
    metric = ALL[key]
    spec = metric.spec()
    assert spec.schema_version == METRIC_SPEC_VERSION
    assert spec.type == f"{type(metric).__module__}:{type(metric).__qualname__}"
    stored = json.loads(json.dumps(spec.model_dump(mode="json")))  # as a run store keeps it
    rebuilt = metric_from_spec(stored)
    assert type(rebuilt) is type(metric)
    assert rebuilt is not metric
    assert rebuilt == metric
    assert rebuilt.spec() == spec
    assert metric_from_spec(rebuilt.spec()).spec() == spec

    original_score, original_judge = scored(metric)
    rebuilt_score, rebuilt_judge = scored(rebuilt)
    assert _without_latency(rebuilt_score.model_dump(mode="json")) == _without_latency(
        original_score.model_dump(mode="json")
    )
    assert [r.messages for r in rebuilt_judge.requests] == [r.messages for r in original_judge.requests]
    assert [r.config for r in rebuilt_judge.requests] == [r.config for r in original_judge.requests]
    assert original_score.spec == spec
    # The comparison is not vacuous: the metric did its work on the sample.
    assert original_score.unscored_reason is None or original_score.unscored_reason.value in (
        "not_applicable",
        "undecided",
    )
    assert original_score.verdicts or original_score.parts or original_score.explanation


def test_the_judged_sample_exercises_both_verdicts() -> None:
    score, _ = scored(ALL["faithfulness"])
    assert {v.value for v in score.verdicts} == {0, 1}, "the fake judge should not answer every statement alike"


def test_specs_keep_the_prompt_identity_and_the_fields() -> None:
    params = ALL["faithfulness"].spec().params
    assert params["prompts"] == {
        "faithfulness.statements": "1",
        "faithfulness.sentence_statements": "1",
        "faithfulness.verdicts": "1",
        "faithfulness.verdict": "2",
    }
    assert params["verifier"]["prompt"] == {
        "$object": "assay.metrics._verify:STATEMENT_PROMPT",
        "name": "faithfulness.verdict",
        "version": "2",
    }
    assert ALL["faithfulness_v1_prompt"].spec().params["prompts"]["faithfulness.verdict"] == "1"
    shots = ALL["grader_with_shots"].spec().params["shots"]
    assert [s["label"] for s in shots] == ["FAIL", "NA"] and shots[1]["messages"][1]["content"] == "Hello!"
    combined = ALL["combined"].spec().params
    assert [(spec["name"], weight) for spec, weight in combined["graders"]] == [("polite", 2.0), ("concise", 1.0)]
    assert combined["graders"][0][0] == ALL["grader_with_shots"].spec().model_dump(mode="json")


def test_a_composite_records_its_functions_models_and_prompts_by_import_path() -> None:
    params = COMPOSITE.spec().params
    assert params["aggregate"] == {"$object": f"{__name__}:claim_aggregate"}
    assert params["orchestrate"] == {"$object": f"{__name__}:claim_then_split"}
    claim, split = params["sub_metrics"]
    assert claim["prompt"]["input_model"] == {"$object": f"{__name__}:Claim"}
    assert claim["prompt"]["examples"][0]["input"] == {
        "$type": f"{__name__}:Claim",
        "value": {"answer": "Paris.", "claim": "Paris"},
    }
    assert claim["from_sample"] == {"$object": f"{__name__}:claim_input"}
    assert split["prompt"]["$object"] == "assay.metrics._decompose:STATEMENTS_PROMPT"
    assert params["prompts"] == {"spec_test.claim": "4", "faithfulness.statements": "1"}
    assert params["params"] == {"cutoff": 0.5, "labels": ["a", "b"], "nested": {"deep": [1, 2]}}


def test_a_derived_spec_follows_dataclasses_replace() -> None:
    metric = Faithfulness()
    assert metric.spec().params["strategy"] == "auto"  # computed, and kept on the instance
    assert dataclasses.replace(metric, strategy="batch").spec().params["strategy"] == "batch"


# --- what cannot be rebuilt, and what must not be -------------------------------------------------


def test_a_lambda_in_a_composite_is_a_clear_error_naming_the_metric_and_the_object() -> None:
    metric = CompositeMetric("lambda_composite", sub_metrics=(CLAIM,), aggregate=lambda out: 1.0)
    spec = metric.spec()  # writing the spec never fails: scores carry it
    assert spec.params["aggregate"]["problem"] == "it is a lambda"
    with pytest.raises(ConfigError, match=r"lambda_composite.*aggregate.*<lambda>.*it is a lambda.*module level"):
        metric_from_spec(spec)


def test_a_lambda_from_sample_inside_a_sub_metric_is_named_too() -> None:
    metric = CompositeMetric("lambda_split", sub_metrics=(SPLIT,), aggregate=claim_aggregate)
    with pytest.raises(ConfigError, match=r"lambda_split.*sub_metrics\[0\]\.from_sample.*lambda.*module level"):
        metric_from_spec(metric.spec())


def test_a_local_function_or_class_is_a_clear_error() -> None:
    def aggregate(out: Outputs) -> float:
        return 1.0

    class LocalCheck(BaseModel):
        verdict: Binary

    with pytest.raises(ConfigError, match=r"local_fn.*aggregate.*inside a function.*module level"):
        metric_from_spec(CompositeMetric("local_fn", sub_metrics=(CLAIM,), aggregate=aggregate).spec())
    local = SubMetric.define(
        "local",
        instruction="i",
        input_model=Claim,
        output_model=LocalCheck,
        question="q",
        from_sample=claim_input,
    )
    spec = CompositeMetric("local_model", sub_metrics=(local,), aggregate=claim_aggregate).spec()
    with pytest.raises(ConfigError, match=r"local_model.*output_model.*LocalCheck.*inside a function"):
        metric_from_spec(spec)


def _edited(spec: MetricSpec, path: Sequence[str | int], value: Any) -> dict[str, Any]:
    data = json.loads(spec.model_dump_json())
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return dict(data)


def test_a_metric_whose_version_or_prompt_changed_is_refused_not_rebuilt_silently() -> None:
    spec = Faithfulness().spec()
    with pytest.raises(ConfigError, match=rf"'faithfulness'.*version was '0', is now '{Faithfulness().version}'"):
        metric_from_spec(_edited(spec, ["version"], "0"))
    with pytest.raises(ConfigError, match=r"prompts was .*'faithfulness.verdicts': '0'"):
        metric_from_spec(_edited(spec, ["params", "prompts", "faithfulness.verdicts"], "0"))
    with pytest.raises(ConfigError, match=r"STATEMENT_PROMPT has version '2', the spec '1'.*prompt changed"):
        metric_from_spec(_edited(spec, ["params", "verifier", "prompt", "version"], "1"))


def test_bad_specs_are_clear_errors() -> None:
    spec = ToolCallAccuracy().spec()
    with pytest.raises(ConfigError, match=r"'tool_call_accuracy'.*ToolCallAccuracy has no field colour"):
        metric_from_spec(_edited(spec, ["params", "colour"], "red"))
    with pytest.raises(ConfigError, match=r"strict_order.*'yes'"):
        metric_from_spec(_edited(spec, ["params", "strict_order"], "yes"))
    with pytest.raises(ConfigError, match=r"cannot import no_such_module"):
        metric_from_spec(_edited(spec, ["type"], "no_such_module:Metric"))
    with pytest.raises(ConfigError, match=r"assay.metrics._tools has no Gone"):
        metric_from_spec(_edited(spec, ["type"], "assay.metrics._tools:Gone"))
    with pytest.raises(ConfigError, match=r"newer assay"):
        metric_from_spec(_edited(spec, ["schema_version"], METRIC_SPEC_VERSION + 1))
    with pytest.raises(ConfigError, match=r"'faithfulness'.*threshold must be between 0 and 1"):
        metric_from_spec(_edited(Faithfulness().spec(), ["params", "verifier", "threshold"], 1.5))
    with pytest.raises(ConfigError, match=r"not a metric spec"):
        metric_from_spec({"params": {}})


# --- plugins ---------------------------------------------------------------------------------------


@pytest.mark.usefixtures("plugins")
def test_a_plugin_metric_built_through_its_entry_point_round_trips() -> None:
    metric = build_metric("keyword_plugin", {"keyword": "PARIS", "case_sensitive": "true"})
    spec = metric.spec()
    assert spec.type == f"{__name__}:KeywordMetric" and spec.version == "3"
    assert spec.params["keyword"] == "PARIS" and spec.params["case_sensitive"] is True
    rebuilt = metric_from_spec(spec)
    assert rebuilt == metric
    assert asyncio.run(rebuilt.score(SAMPLE, judge())).value == 0.0  # case-sensitive: "Paris" is not "PARIS"


@pytest.mark.usefixtures("plugins")
def test_a_plugin_spec_without_a_type_is_rebuilt_through_its_entry_point() -> None:
    metric = build_metric("handwritten_plugin", {"keyword": "Paris"})
    spec = metric.spec()
    assert spec.type is None and spec.schema_version == 1
    assert metric_from_spec(spec) == metric


def test_a_spec_without_a_type_that_nothing_knows_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"'mystery'.*neither a built-in nor an installed plugin"):
        metric_from_spec(MetricSpec(name="mystery", params={"x": 1}))


# --- records written before schema 2 -----------------------------------------------------------------


V1 = json.loads((FIXTURES / "metric_specs_v1.json").read_text())


def test_an_old_record_reads_as_schema_1_and_a_new_one_as_schema_2() -> None:
    assert MetricSpec.model_validate(V1["faithfulness"]).schema_version == 1
    assert MetricSpec.model_validate(json.loads(Faithfulness().spec().model_dump_json())).schema_version == 2
    assert MetricSpec(name="x", type="m:X").schema_version == 2


@pytest.mark.parametrize(
    "name", [n for n in V1 if n in BUILT_IN and n != "faithfulness" and not n.startswith("agent_goal")]
)
def test_schema_1_specs_of_the_registry_metrics_rebuild_the_same_metric(name: str) -> None:
    expected = registry_metrics()[name]
    verifier = getattr(expected, "verifier", None)
    if verifier is not None:
        # Recorded when chunks were 2,000 characters (the default until issue 32): the
        # record's own size is rebuilt, not today's default.
        assert verifier.chunk_chars == 3000
        expected = dataclasses.replace(expected, verifier=dataclasses.replace(verifier, chunk_chars=2000))
    assert metric_from_spec(V1[name]) == expected


@pytest.mark.parametrize("name", [n for n in V1 if n.startswith("agent_goal")])
def test_schema_1_specs_of_the_holistic_goal_accuracy_say_it_was_replaced(name: str) -> None:
    with pytest.raises(ConfigError, match=r"version 1 judged a summary of the trace holistically"):
        metric_from_spec(V1[name])


@pytest.mark.parametrize("name", ["faithfulness", "faith_custom"])
def test_a_schema_1_faithfulness_is_refused_its_statements_are_made_differently_now(name: str) -> None:
    # Faithfulness 2 anchors every statement to the answer and judges every sentence: a run
    # recorded with version 1 would not be continued, or re-scored, by a different metric.
    with pytest.raises(ConfigError, match=r"'faithfulness'.*version was 1, is now 2"):
        metric_from_spec(V1[name])


def test_schema_1_specs_of_customised_metrics_rebuild_the_same_metric() -> None:
    polite = BinaryJudgeGrader(
        "The answer is polite.",
        shots=[
            Shot(question="Capital of France?", answer="Lyon.", label="FAIL", reasoning="Lyon is not the capital."),
            Shot(
                messages=(Message(role="user", content="Hi"), Message(role="assistant", content="Hello!")),
                label="NA",
                reasoning="n/a",
            ),
        ],
        name="polite",
    )
    concise = RangeJudgeGrader("Concision", {1: "rambling", 3: "ok", 5: "tight"}, expected_value=True, name="concise")
    assert metric_from_spec(V1["shots_grader"]) == polite
    assert metric_from_spec(V1["combined"]) == CombinedGrader(
        [(polite, 2.0), (concise, 1.0)], require_all_pass=True, pass_threshold=0.6, name="overall"
    )
    # Version 1 of agent goal accuracy (holistic) was replaced; its records say so instead of rebuilding.
    with pytest.raises(ConfigError, match=r"'agent_goal_accuracy_without_reference'.*HolisticGoalAccuracy"):
        metric_from_spec(V1["goal_custom"])


def test_a_schema_1_spec_whose_prompt_changed_is_refused() -> None:
    old = json.loads(json.dumps(V1["answer_relevancy"]))
    old["params"]["prompts"]["answer_relevancy.verdict"] = "0"
    with pytest.raises(
        ConfigError, match=r"'answer_relevancy'.*prompt answer_relevancy.verdict was version 0, is now 1"
    ):
        metric_from_spec(old)


def test_a_schema_1_composite_cannot_be_rebuilt_and_says_why() -> None:
    old = {"name": "demo", "version": "1", "params": {"sub_metrics": {"demo.on_topic": "1"}, "concurrent": True}}
    with pytest.raises(ConfigError, match=r"'demo' is a composite metric recorded by an older assay"):
        metric_from_spec(old)
