"""OpenAIJudge against a real FakeOpenAIServer on loopback (no network beyond 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import pickle
import sys
import traceback
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any, Literal, TypeVar

import pytest
from pydantic import BaseModel

from assay._scores import Binary
from assay.errors import ConfigError, JudgeError, MissingExtraError
from assay.models._http import retry_after as _retry_after
from assay.models._openai import JudgeHTTPError, OpenAIJudge
from assay.models._protocol import ChatMessage, GenerateConfig, JudgeModel, JudgeResponse
from assay.testing import FakeOpenAIServer, minimal_instance
from assay.testing._openai_server import MALFORMED_TEXT, REFUSAL_TEXT

SECRET = "sk-test-DO-NOT-LEAK-0123456789abcdef"
MESSAGES: list[ChatMessage] = [
    {"role": "system", "content": "You judge statements. Answer in JSON."},
    {"role": "user", "content": "Context: Paris is in France.\nStatement 1: Paris is in France."},
]

T = TypeVar("T")


class StatementVerdict(BaseModel):
    statement: str
    reason: str
    verdict: Binary


class Verdicts(BaseModel):
    verdicts: list[StatementVerdict]
    note: str | None = None


class Graded(BaseModel):
    grade: Literal["PASS", "FAIL", "NA"]
    score: Literal[3, 1, 2]
    kind: Literal["grader"]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_ADMIN_KEY",
        "OPENAI_CUSTOM_HEADERS",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(require_api_key=SECRET, timeout_sleep_s=3.0) as fake:
        yield fake


def make_judge(server: FakeOpenAIServer, **kwargs: Any) -> OpenAIJudge:
    options: dict[str, Any] = {"api_key": SECRET, "timeout": 2.0}
    options.update(kwargs)
    return OpenAIJudge("fake-judge", base_url=server.base_url, **options)


def run(judge: OpenAIJudge, body: Callable[[OpenAIJudge], Awaitable[T]]) -> T:
    """Run ``body(judge)`` on a fresh event loop and close the judge's client after."""

    async def main() -> T:
        async with judge:
            return await body(judge)

    return asyncio.run(main())


def ask(
    judge: OpenAIJudge,
    schema: type[BaseModel] | None = Verdicts,
    config: GenerateConfig | None = None,
) -> JudgeResponse:
    return run(judge, lambda j: j.generate(MESSAGES, schema=schema, config=config))


def fail(judge: OpenAIJudge, schema: type[BaseModel] | None = Verdicts) -> JudgeHTTPError:
    with pytest.raises(JudgeHTTPError) as info:
        ask(judge, schema)
    return info.value


def assert_no_secret(err: BaseException) -> None:
    assert err.__cause__ is None
    assert err.__context__ is None
    rendered = "".join(traceback.format_exception(err))
    assert SECRET not in rendered
    assert SECRET not in repr(err)
    assert SECRET not in str(err)


# -- the happy path --------------------------------------------------------------------


def test_is_a_judge_model(server: FakeOpenAIServer) -> None:
    judge = make_judge(server, max_concurrency=4)
    try:
        assert isinstance(judge, JudgeModel)
        assert judge.model_id == "openai:fake-judge"
        assert judge.max_concurrency == 4
        assert judge.prefers_per_statement is False
        assert SECRET not in repr(judge)
    finally:
        asyncio.run(judge.aclose())


def test_schema_call_validates_and_records_usage_latency_and_request(
    server: FakeOpenAIServer,
) -> None:
    server.latency_s = 0.05
    config = GenerateConfig(temperature=0.3, seed=7, max_tokens=123, repeat=2)
    response = ask(make_judge(server), Verdicts, config)

    parsed = Verdicts.model_validate_json(response.text)
    assert len(parsed.verdicts) == 1
    assert parsed.verdicts[0].verdict == 0  # the integer enum's first value
    assert response.model == "openai:fake-judge"
    assert response.finish_reason == "stop"
    assert response.usage.prompt_tokens > 10
    assert response.usage.completion_tokens == len(response.text) // 4 + 1
    assert response.latency_s >= 0.05

    (body,) = server.requests
    assert body["model"] == "fake-judge"
    assert body["messages"] == MESSAGES
    assert body["temperature"] == 0.3
    assert body["seed"] == 9  # seed + repeat index: repeats are real repeats
    assert body["max_tokens"] == 123
    assert "max_completion_tokens" not in body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "Verdicts",
            "schema": Verdicts.model_json_schema(),
            "strict": False,
        },
    }
    assert server.calls == 1


def test_the_prompt_and_schema_skip_the_sdks_parameter_walk(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK's create() walks its typed parameters before sending them: about 5 ms of CPU a
    # call on a first-generation EPYC for a prompt and a verdict schema, for JSON it returns
    # unchanged. The prompt and the schema must reach the server without that walk.
    completions = pytest.importorskip("openai.resources.chat.completions.completions")
    if not hasattr(completions, "async_maybe_transform"):
        pytest.skip("this openai SDK does not walk create()'s parameters with async_maybe_transform")
    walked: list[str] = []
    original = completions.async_maybe_transform

    async def recording(data: Any, expected_type: Any) -> Any:
        walked.append(repr(data))
        return await original(data, expected_type)

    monkeypatch.setattr(completions, "async_maybe_transform", recording)
    response = ask(make_judge(server), Verdicts, GenerateConfig(temperature=0.3, seed=7, max_tokens=123))
    assert Verdicts.model_validate_json(response.text)

    assert len(walked) == 1, "the spy no longer sees the SDK's parameter walk"
    assert all(m["content"] not in walked[0] for m in MESSAGES)
    assert "json_schema" not in walked[0] and "Verdicts" not in walked[0]
    (body,) = server.requests
    assert body["model"] == "fake-judge"
    assert body["messages"] == MESSAGES
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.3, 7, 123)
    assert body["response_format"]["json_schema"]["schema"] == Verdicts.model_json_schema()


def test_without_schema_sends_no_response_format(server: FakeOpenAIServer) -> None:
    response = ask(make_judge(server), schema=None)
    assert response.text == "OK"
    assert "response_format" not in server.requests[0]


@pytest.mark.parametrize(
    ("structured", "expected"),
    [("json_object", {"type": "json_object"}), ("none", None)],
)
def test_structured_modes(
    server: FakeOpenAIServer, structured: Literal["json_object", "none"], expected: object
) -> None:
    ask(make_judge(server, structured=structured))
    assert server.requests[0].get("response_format") == expected


def test_missing_usage_counts_as_zero(server: FakeOpenAIServer) -> None:
    server.include_usage = False
    response = ask(make_judge(server))
    assert response.usage.prompt_tokens == 0
    assert response.usage.completion_tokens == 0


# -- one-time fallbacks ------------------------------------------------------------------


def test_json_schema_rejection_falls_back_to_json_object_once_and_remembers(
    server: FakeOpenAIServer,
) -> None:
    server.rejects_json_schema = True
    judge = make_judge(server)

    async def twice(j: OpenAIJudge) -> list[JudgeResponse]:
        return [await j.generate(MESSAGES, schema=Verdicts) for _ in range(2)]

    first, second = run(judge, twice)
    kinds = [body["response_format"]["type"] for body in server.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert judge.structured == "json_object"
    assert first.text == second.text == "{}"


def test_max_tokens_rejection_switches_to_max_completion_tokens(
    server: FakeOpenAIServer,
) -> None:
    server.rejects_max_tokens = True

    async def twice(j: OpenAIJudge) -> list[JudgeResponse]:
        return [await j.generate(MESSAGES, schema=Verdicts) for _ in range(2)]

    run(make_judge(server), twice)
    sent = [("max_tokens" in b, b.get("max_completion_tokens")) for b in server.requests]
    assert sent == [(True, None), (False, 512), (False, 512)]


# -- faults -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "status", "retry_after"),
    [
        ("429", 429, 0.05),
        ("500", 500, None),
        ("503", 503, None),
        ("timeout", None, None),
        ("reset", None, None),
    ],
)
def test_transient_faults_map_to_judge_http_error(
    server: FakeOpenAIServer, fault: str, status: int | None, retry_after: float | None
) -> None:
    server.faults = {fault: 1.0}
    err = fail(make_judge(server, timeout=0.3))
    assert isinstance(err, JudgeError)
    assert err.transient is True
    assert err.status_code == status
    assert err.retry_after == retry_after
    assert server.fault_counts[fault] == 1
    assert server.calls == 1  # the SDK did not retry on its own
    assert_no_secret(err)


def test_rate_limit_message_names_status_and_body(server: FakeOpenAIServer) -> None:
    server.faults = {"429": 1.0}
    err = fail(make_judge(server))
    assert "HTTP 429" in str(err)
    assert "Rate limit reached" in str(err)
    assert "127.0.0.1" in str(err)


def test_refusal_becomes_a_refusal_response(server: FakeOpenAIServer) -> None:
    server.faults = {"refusal": 1.0}
    response = ask(make_judge(server))
    assert response.finish_reason == "refusal"
    assert response.text == REFUSAL_TEXT


def test_truncated_answer_keeps_finish_reason_length(server: FakeOpenAIServer) -> None:
    server.faults = {"truncated": 1.0}
    response = ask(make_judge(server))
    assert response.finish_reason == "length"
    with pytest.raises(ValueError):
        json.loads(response.text)


def test_malformed_and_wrong_count_are_returned_verbatim(server: FakeOpenAIServer) -> None:
    server.faults = {"malformed": 1.0}
    assert ask(make_judge(server)).text == MALFORMED_TEXT
    server.faults = {"wrong_count": 1.0}
    answer = Verdicts.model_validate_json(ask(make_judge(server)).text)
    assert len(answer.verdicts) == 2  # the default answer has one


def test_wrong_count_without_verdicts_array_is_malformed(server: FakeOpenAIServer) -> None:
    server.faults = {"wrong_count": 1.0}
    assert ask(make_judge(server), Graded).text == MALFORMED_TEXT


def test_client_errors_are_not_transient_and_never_leak_the_key(
    server: FakeOpenAIServer,
) -> None:
    wrong = "sk-wrong-key-" + SECRET[-12:] + "-zzzz"
    err = fail(make_judge(server, api_key=wrong))
    assert err.status_code == 401
    assert err.transient is False
    assert err.retry_after is None
    assert "OPENAI_API_KEY" in str(err)
    assert err.__context__ is None
    assert wrong not in "".join(traceback.format_exception(err))
    assert wrong not in repr(err)
    assert "Incorrect API key provided" in str(err)  # the server echoed it; we redacted it


def test_connection_refused_is_transient() -> None:
    with FakeOpenAIServer() as fake:
        base_url = fake.base_url
    judge = OpenAIJudge("m", base_url=base_url, api_key=SECRET, timeout=1.0)
    err = fail(judge)
    assert err.transient is True
    assert err.status_code is None
    assert_no_secret(err)


# -- configuration ------------------------------------------------------------------------


def test_missing_key_without_base_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIJudge("gpt-4o-mini")


def test_missing_key_for_remote_base_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIJudge("m", base_url="https://llm.example.com/v1")


def test_key_from_environment(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    judge = OpenAIJudge("fake-judge", base_url=server.base_url)
    assert ask(judge, schema=None).text == "OK"


def test_local_server_without_key_gets_a_placeholder() -> None:
    with FakeOpenAIServer(require_api_key="not-needed") as fake:
        response = ask(OpenAIJudge("local-model", base_url=fake.base_url), schema=None)
    assert response.text == "OK"


def test_missing_openai_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingExtraError) as info:
        OpenAIJudge("gpt-4o-mini", api_key=SECRET)
    assert info.value.extra == "openai"
    assert "pip install 'assay[openai]'" in str(info.value)
    assert "OpenAI-compatible judge" in str(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [{"structured": "grammar"}, {"timeout": 0.0}, {"max_concurrency": 0}],
)
def test_invalid_options_are_config_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        OpenAIJudge("m", api_key=SECRET, **kwargs)


def test_retry_after_parsing() -> None:
    assert _retry_after({"retry-after": "0.05"}) == 0.05
    assert _retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert _retry_after({"retry-after": "soon"}) is None
    assert _retry_after({}) is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    value = _retry_after({"retry-after": later})
    assert value is not None
    assert 25 < value <= 30


# -- the fake server itself -------------------------------------------------------------


def test_minimal_instance_handles_pydantic_schemas() -> None:
    assert Graded.model_validate(minimal_instance(Graded.model_json_schema())) == Graded(
        grade="PASS", score=3, kind="grader"
    )
    verdicts = Verdicts.model_validate(minimal_instance(Verdicts.model_json_schema()))
    assert verdicts.note is None


def test_fault_draws_are_seeded_and_counted() -> None:
    def counts(seed: int) -> tuple[int, int]:
        with FakeOpenAIServer(faults={"500": 0.5}, seed=seed) as fake:
            judge = OpenAIJudge("m", base_url=fake.base_url, api_key=SECRET, timeout=2.0)

            async def many(j: OpenAIJudge) -> int:
                ok = 0
                for _ in range(20):
                    try:
                        await j.generate(MESSAGES)
                        ok += 1
                    except JudgeHTTPError:
                        pass
                return ok

            ok = run(judge, many)
            assert fake.calls == 20
            return ok, fake.fault_counts["500"]

    first = counts(3)
    assert first == counts(3)
    assert sum(first) == 20
    assert 0 < first[1] < 20


def test_models_endpoint_and_unknown_fault() -> None:
    with FakeOpenAIServer(model="fake-judge") as fake:
        with urllib.request.urlopen(f"{fake.base_url}/models", timeout=2) as reply:
            listing = json.load(reply)
        assert listing["data"][0]["id"] == "fake-judge"
        with pytest.raises(ValueError, match="unknown fault"):
            fake.faults = {"gremlins": 0.1}
        with pytest.raises(ValueError, match="at most 1"):
            fake.faults = {"500": 0.7, "503": 0.7}


def test_judge_http_error_pickles_with_its_attributes() -> None:
    err = JudgeHTTPError("HTTP 429", status_code=429, retry_after=0.05, transient=True)
    copy = pickle.loads(pickle.dumps(err))
    assert (str(copy), copy.status_code, copy.retry_after, copy.transient) == (
        "HTTP 429",
        429,
        0.05,
        True,
    )


# -- a 200 that is no chat-completions reply (issue 35 item 5) --------------------------


def fail_shape(judge: OpenAIJudge) -> JudgeError:
    """The judge error of a reply in the wrong shape: said, never an AttributeError, never retried."""
    with pytest.raises(JudgeError) as info:
        ask(judge)
    err = info.value
    assert not isinstance(err, JudgeHTTPError) and not getattr(err, "transient", False)
    assert "object has no attribute" not in str(err)
    return err


def test_an_anthropic_server_is_a_judge_error_naming_the_server_and_the_shape() -> None:
    from assay.testing import FakeAnthropicServer

    with FakeAnthropicServer(any_path=True) as fake:
        err = fail_shape(OpenAIJudge("gpt-x", base_url=fake.base_url + "/v1", api_key=SECRET))
        assert fake.calls == 1
        host = fake.base_url.removeprefix("http://")
    text = str(err)
    assert text.startswith(f"The OpenAI-compatible server at {host} answered HTTP 200 with an Anthropic Messages")
    assert "Messages API reply (with 'content' blocks), not a chat-completions reply (with 'choices')" in text
    assert "--judge anthropic:MODEL" in text and "without /v1" in text


@pytest.mark.parametrize(
    ("fault", "found"),
    [("html", "an HTML page titled 'Sign in - Example Proxy'"), ("empty", "an empty body")],
)
def test_a_web_page_or_an_empty_body_is_a_judge_error(server: FakeOpenAIServer, fault: str, found: str) -> None:
    server.faults = {fault: 1.0}
    err = fail_shape(make_judge(server))
    assert f"answered HTTP 200 with {found}, not a chat-completions reply" in str(err)
    assert "/v1." not in str(err)  # the base URL ends in /v1 already: no hint about it
    assert_no_secret(err)


def test_a_web_page_at_a_base_url_without_v1_says_where_the_api_usually_is(server: FakeOpenAIServer) -> None:
    server.faults, server.any_path = {"html": 1.0}, True
    err = fail_shape(OpenAIJudge("m", base_url=server.base_url.removesuffix("/v1"), api_key=SECRET))
    assert "HTML page" in str(err) and "usually ends in /v1" in str(err)


def test_other_json_is_described_by_its_shape() -> None:
    judge = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", api_key=SECRET)
    said = {
        b"[]": "with a JSON array,",
        b"42": "with a JSON number,",
        b'{"data": [{"id": "m"}], "object": "list"}': "with a JSON object with keys 'data', 'object',",
        b'{"error": "no such route"}': "with an error: no such route,",
        b'{"choices": [{"text": "completion API"}]}': "with a JSON object with keys 'choices',",
    }
    for body, found in said.items():
        err = judge._reply_error(200, "application/json", body)
        assert err is not None and found in str(err), (body, err)
    assert judge._reply_error(200, "application/json", b'{"choices": []}') is None  # said later: no choice


def _read(judge: OpenAIJudge, reply: dict[str, Any], top_logprobs: int = 0) -> JudgeResponse:
    """The response read from a reply's bytes, as ``generate`` reads a 200 (the JSON parsed once)."""
    parsed = judge._reply(200, "application/json", json.dumps(reply).encode())
    return judge._to_response(parsed, 0.1, top_logprobs)


def _choice(**message: Any) -> dict[str, Any]:
    return {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}


def test_a_reply_is_read_from_its_json_as_servers_send_it() -> None:
    judge = OpenAIJudge("asked-model", base_url="http://127.0.0.1:9/v1", api_key=SECRET)
    full = _read(
        judge,
        {
            "model": "served-model",
            "choices": [_choice(content='{"verdict": "yes"}', refusal=None)],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
        },
    )
    assert (full.text, full.model, full.finish_reason) == ('{"verdict": "yes"}', "openai:served-model", "stop")
    assert (full.usage.prompt_tokens, full.usage.completion_tokens) == (12, 5)
    # What some servers leave out or send as null: no model, no usage counts, no finish reason.
    bare = _read(judge, {"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": None}})
    assert (bare.text, bare.model, bare.finish_reason) == ("ok", "openai:asked-model", None)
    assert (bare.usage.prompt_tokens, bare.usage.completion_tokens) == (0, 0)
    # A count that is not a count is no count, never a made-up one.
    odd = _read(judge, {"choices": [_choice(content="ok")], "usage": {"prompt_tokens": "12", "completion_tokens": -3}})
    assert (odd.usage.prompt_tokens, odd.usage.completion_tokens) == (0, 0)
    refused = _read(judge, {"choices": [_choice(content=None, refusal="I can't help with that.")]})
    assert (refused.text, refused.finish_reason) == ("I can't help with that.", "refusal")
    assert _read(judge, {"choices": [_choice(content=None)]}).text == ""  # no text: an answer that will not parse


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ({"choices": [_choice(content=[{"type": "text", "text": "ok"}])]}, "whose content is a JSON list, not text"),
        ({"choices": [_choice(content=None, refusal={"reason": "no"})]}, "whose refusal is a JSON dict, not text"),
        ({"choices": []}, "answered without any choice"),
    ],
)
def test_a_reply_whose_fields_are_not_the_apis_is_a_judge_error(reply: dict[str, Any], said: str) -> None:
    judge = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", api_key=SECRET)
    with pytest.raises(JudgeError, match=said):
        _read(judge, reply)


def test_log_probabilities_are_read_or_their_shape_is_said() -> None:
    judge = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", api_key=SECRET)
    token = {
        "token": "yes",
        "logprob": -0.1,
        "top_logprobs": [{"token": "yes", "logprob": -0.1}, {"token": "no", "logprob": -2.4}],
    }
    choice = {**_choice(content="yes"), "logprobs": {"content": [token]}}
    read = _read(judge, {"choices": [choice]}, top_logprobs=2)
    assert read.logprobs is not None and read.logprobs[0].token == "yes"
    assert read.logprobs[0].top == (("yes", -0.1), ("no", -2.4))
    assert _read(judge, {"choices": [choice]}).logprobs is None  # not asked: not read
    for broken in (
        {"content": [{"logprob": -0.1}]},
        {"content": "yes"},
        {"content": [{"token": "y", "logprob": "high"}]},
    ):
        with pytest.raises(JudgeError, match="log-probabilities that are not a list of tokens"):
            _read(judge, {"choices": [{**choice, "logprobs": broken}]}, top_logprobs=2)
    with pytest.raises(JudgeError, match="returned no log-probabilities"):
        _read(judge, {"choices": [{**choice, "logprobs": None}]}, top_logprobs=2)
