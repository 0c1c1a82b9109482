"""AnthropicJudge against a real FakeAnthropicServer on loopback (no network beyond 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from assay._scores import Binary
from assay.errors import ConfigError, JudgeError, MissingExtraError
from assay.models._anthropic import AnthropicJudge
from assay.models._openai import JudgeHTTPError
from assay.models._protocol import ChatMessage, GenerateConfig, JudgeModel, JudgeResponse
from assay.testing._anthropic_server import FakeAnthropicServer
from assay.testing._openai_server import MALFORMED_TEXT, REFUSAL_TEXT

SECRET = "sk-ant-api03-DO-NOT-LEAK-0123456789abcdef"
SYSTEM = "You judge statements. Answer with the tool."
MESSAGES: list[ChatMessage] = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "Context: Paris is in France.\nStatement 1: Paris is in France."},
]


class StatementVerdict(BaseModel):
    statement: str
    reason: str
    verdict: Binary


class Verdicts(BaseModel):
    verdicts: list[StatementVerdict]
    note: str | None = None


class Graded(BaseModel):
    grade: Literal["PASS", "FAIL", "NA"]
    reason: str


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_CUSTOM_HEADERS",
        "ANTHROPIC_PROFILE",
        "ANTHROPIC_LOG",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(require_api_key=SECRET, timeout_sleep_s=3.0) as fake:
        yield fake


def make_judge(server: FakeAnthropicServer, **kwargs: Any) -> AnthropicJudge:
    options: dict[str, Any] = {"api_key": SECRET, "timeout": 2.0}
    options.update(kwargs)
    return AnthropicJudge("fake-judge", base_url=server.base_url, **options)


def ask(
    judge: AnthropicJudge,
    schema: type[BaseModel] | None = Verdicts,
    config: GenerateConfig | None = None,
    messages: list[ChatMessage] = MESSAGES,
) -> JudgeResponse:
    async def main() -> JudgeResponse:
        async with judge:
            return await judge.generate(messages, schema=schema, config=config)

    return asyncio.run(main())


def fail(judge: AnthropicJudge, schema: type[BaseModel] | None = Verdicts) -> JudgeHTTPError:
    with pytest.raises(JudgeHTTPError) as info:
        ask(judge, schema)
    return info.value


def assert_no_secret(err: BaseException, secret: str = SECRET) -> None:
    assert err.__cause__ is None
    assert err.__context__ is None
    rendered = "".join(traceback.format_exception(err))
    assert secret not in rendered
    assert secret not in repr(err)
    assert secret not in str(err)


# -- the happy path --------------------------------------------------------------------


def test_is_a_judge_model(server: FakeAnthropicServer) -> None:
    judge = make_judge(server, max_concurrency=4)
    try:
        assert isinstance(judge, JudgeModel)
        assert judge.model_id == "anthropic:fake-judge"
        assert judge.max_concurrency == 4
        assert judge.prefers_per_statement is False
        assert judge.structured == "tool"
        assert SECRET not in repr(judge)
    finally:
        asyncio.run(judge.aclose())


def test_schema_becomes_one_forced_tool_and_its_input_the_text(server: FakeAnthropicServer) -> None:
    server.latency_s = 0.05
    config = GenerateConfig(temperature=0.3, seed=7, max_tokens=123)
    response = ask(make_judge(server), Verdicts, config)

    parsed = Verdicts.model_validate_json(response.text)
    assert len(parsed.verdicts) == 1
    assert parsed.verdicts[0].verdict == 0  # the integer enum's first value
    assert response.model == "anthropic:fake-judge"
    assert response.finish_reason == "stop"  # stop_reason "tool_use"
    assert response.latency_s >= 0.05

    (body,) = server.requests
    assert body["model"] == "fake-judge"
    assert body["system"] == SYSTEM
    assert body["messages"] == [MESSAGES[1]]  # the system message is not a turn
    assert body["max_tokens"] == 123
    (tool,) = body["tools"]
    assert tool["name"] == "Verdicts"
    assert tool["input_schema"] == Verdicts.model_json_schema()
    assert body["tool_choice"] == {"type": "tool", "name": "Verdicts"}
    assert server.calls == 1


def test_sampling_parameters_are_not_sent(server: FakeAnthropicServer) -> None:
    # API version 2026-10-21 (the SDK's default) rejects them with HTTP 400, even at defaults.
    ask(make_judge(server), config=GenerateConfig(temperature=0.7, seed=3))
    (body,) = server.requests
    assert not {"temperature", "top_p", "top_k", "seed"} & set(body)
    (version,) = server.api_versions
    assert version is not None


def test_usage_counts_input_and_output_tokens(server: FakeAnthropicServer) -> None:
    response = ask(make_judge(server))
    expected_input = (len(SYSTEM) + len(MESSAGES[1]["content"])) // 4 + 1
    assert response.usage.prompt_tokens == expected_input
    assert response.usage.completion_tokens == len(response.text) // 4 + 1


def test_missing_usage_counts_as_zero(server: FakeAnthropicServer) -> None:
    server.include_usage = False
    response = ask(make_judge(server))
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (0, 0)


def test_without_schema_sends_no_tools_and_returns_text(server: FakeAnthropicServer) -> None:
    response = ask(make_judge(server), schema=None)
    assert response.text == "OK"
    assert response.finish_reason == "stop"
    assert "tools" not in server.requests[0]
    assert "tool_choice" not in server.requests[0]


def test_structured_none_leaves_the_schema_to_the_prompt(server: FakeAnthropicServer) -> None:
    response = ask(make_judge(server, structured="none"), Graded)
    assert response.text == "OK"
    assert "tools" not in server.requests[0]


def test_several_system_messages_are_joined_and_assistant_turns_kept(server: FakeAnthropicServer) -> None:
    messages: list[ChatMessage] = [
        {"role": "system", "content": "one"},
        {"role": "system", "content": "two"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "q2"},
    ]
    ask(make_judge(server), schema=None, messages=messages)
    body = server.requests[0]
    assert body["system"] == "one\n\ntwo"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]


def test_no_system_message_sends_no_system(server: FakeAnthropicServer) -> None:
    ask(make_judge(server), schema=None, messages=[MESSAGES[1]])
    assert "system" not in server.requests[0]


def test_a_conversation_without_turns_is_a_config_error(server: FakeAnthropicServer) -> None:
    with pytest.raises(ConfigError, match="user message"):
        ask(make_judge(server), messages=[MESSAGES[0]])
    assert server.calls == 0


def test_custom_responder_fills_the_tool_input() -> None:
    def responder(body: dict[str, Any]) -> str:
        return json.dumps({"grade": "PASS", "reason": "fine"})

    with FakeAnthropicServer(responder) as fake:
        response = ask(AnthropicJudge("m", base_url=fake.base_url), Graded)
    assert Graded.model_validate_json(response.text) == Graded(grade="PASS", reason="fine")


def test_non_ascii_tool_input_survives(server: FakeAnthropicServer) -> None:
    server.responder = lambda body: json.dumps({"grade": "NA", "reason": "Zürich ≠ 東京"})
    response = ask(make_judge(server), Graded)
    assert Graded.model_validate_json(response.text).reason == "Zürich ≠ 東京"


# -- faults -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "status", "retry_after"),
    [
        ("429", 429, 0.05),
        ("500", 500, None),
        ("529", 529, None),
        ("timeout", None, None),
        ("reset", None, None),
    ],
)
def test_transient_faults_map_to_judge_http_error(
    server: FakeAnthropicServer, fault: str, status: int | None, retry_after: float | None
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


def test_error_message_names_status_type_and_host(server: FakeAnthropicServer) -> None:
    server.faults = {"529": 1.0}
    err = fail(make_judge(server))
    assert "HTTP 529" in str(err)
    assert "overloaded_error: Overloaded" in str(err)
    assert "127.0.0.1" in str(err)


def test_malformed_answer_falls_back_to_the_text(server: FakeAnthropicServer) -> None:
    server.faults = {"malformed": 1.0}
    response = ask(make_judge(server))
    assert response.text == MALFORMED_TEXT
    assert response.finish_reason == "stop"


def test_refusal_becomes_a_refusal_response(server: FakeAnthropicServer) -> None:
    server.faults = {"refusal": 1.0}
    response = ask(make_judge(server))
    assert response.finish_reason == "refusal"
    assert response.text == REFUSAL_TEXT


def test_truncated_answer_has_finish_reason_length(server: FakeAnthropicServer) -> None:
    server.faults = {"truncated": 1.0}
    response = ask(make_judge(server))
    assert response.finish_reason == "length"
    assert response.text
    with pytest.raises(ValueError):
        json.loads(response.text)


def test_broken_responder_is_a_server_error(server: FakeAnthropicServer) -> None:
    def broken(body: dict[str, Any]) -> str:
        raise ZeroDivisionError("division by zero")

    server.responder = broken
    err = fail(make_judge(server))
    assert err.status_code == 500  # the fake reports a broken responder as a server error
    assert "ZeroDivisionError" in str(err)


def test_wrong_key_is_not_transient_and_never_leaks(server: FakeAnthropicServer) -> None:
    wrong = "sk-ant-api03-wrong-" + SECRET[-12:] + "-zzzz"
    err = fail(make_judge(server, api_key=wrong))
    assert err.status_code == 401
    assert err.transient is False
    assert err.retry_after is None
    assert "ANTHROPIC_API_KEY" in str(err)
    assert "authentication_error" in str(err)  # the server echoed the key; we redacted it
    assert_no_secret(err, wrong)


def test_connection_refused_is_transient() -> None:
    with FakeAnthropicServer() as fake:
        base_url = fake.base_url
    err = fail(AnthropicJudge("m", base_url=base_url, api_key=SECRET, timeout=1.0))
    assert err.transient is True
    assert err.status_code is None
    assert_no_secret(err)


def test_one_client_per_event_loop(server: FakeAnthropicServer) -> None:
    judge = make_judge(server)
    first = ask(judge, schema=None)
    second = ask(judge, schema=None)  # a fresh loop after aclose(): a new client
    assert first.text == second.text == "OK"
    assert server.calls == 2


# -- configuration ------------------------------------------------------------------------


def test_missing_key_without_base_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicJudge("claude-haiku-4-5")


def test_missing_key_for_remote_base_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicJudge("m", base_url="https://llm.example.com")


def test_key_and_base_url_from_environment(server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    judge = AnthropicJudge("fake-judge")
    assert SECRET not in repr(judge)
    assert ask(judge, schema=None).text == "OK"


def test_local_server_without_key_gets_a_placeholder() -> None:
    with FakeAnthropicServer(require_api_key="not-needed") as fake:
        response = ask(AnthropicJudge("local-model", base_url=fake.base_url), schema=None)
    assert response.text == "OK"


def test_missing_anthropic_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(MissingExtraError) as info:
        AnthropicJudge("claude-haiku-4-5", api_key=SECRET)
    assert info.value.extra == "anthropic"
    assert "pip install 'assay[anthropic]'" in str(info.value)
    assert "Anthropic judge" in str(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [{"structured": "json_schema"}, {"timeout": 0.0}, {"timeout": float("inf")}, {"max_concurrency": 0}],
)
def test_invalid_options_are_config_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        AnthropicJudge("m", api_key=SECRET, **kwargs)


def test_empty_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="model name"):
        AnthropicJudge("", api_key=SECRET)


# -- the fake server itself -------------------------------------------------------------


def post(fake: FakeAnthropicServer, body: object, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{fake.base_url}/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=2) as reply:
            return reply.status, json.load(reply)
    except urllib.error.HTTPError as err:
        with err:
            return err.code, json.load(err)


def test_fake_rejects_sampling_parameters_on_the_new_api_version() -> None:
    body = {"model": "m", "max_tokens": 5, "temperature": 0.0, "messages": [{"role": "user", "content": "q"}]}
    with FakeAnthropicServer() as fake:
        status, reply = post(fake, body, {"anthropic-version": "2026-10-21"})
        assert status == 400
        assert reply["error"] == {
            "type": "invalid_request_error",
            "message": "temperature: Extra inputs are not permitted",
        }
        status, reply = post(fake, body, {"anthropic-version": "2023-06-01"})
        assert status == 200
        assert reply["content"] == [{"type": "text", "text": "OK"}]


def test_fake_accepts_x_api_key_and_needs_max_tokens() -> None:
    with FakeAnthropicServer(require_api_key=SECRET) as fake:
        status, _ = post(fake, {"model": "m", "messages": []}, {"x-api-key": SECRET})
        assert status == 400
        status, reply = post(fake, {"model": "m", "max_tokens": 1, "messages": []}, {"x-api-key": SECRET})
        assert (status, reply["stop_reason"]) == (200, "end_turn")
        status, reply = post(fake, {"model": "m", "max_tokens": 1, "messages": []}, {"x-api-key": "nope"})
        assert (status, reply["error"]["type"]) == (401, "authentication_error")


def test_fake_fault_draws_are_seeded_and_validated() -> None:
    def counts(seed: int) -> int:
        with FakeAnthropicServer(faults={"529": 0.5}, seed=seed) as fake:
            for _ in range(20):
                post(fake, {"model": "m", "max_tokens": 1, "messages": []})
            return fake.fault_counts["529"]

    first = counts(3)
    assert first == counts(3)
    assert 0 < first < 20
    with FakeAnthropicServer() as fake:
        with pytest.raises(ValueError, match="unknown fault"):
            fake.faults = {"503": 0.1}
        with pytest.raises(ValueError, match="at most 1"):
            fake.faults = {"500": 0.7, "529": 0.7}


# -- a 200 that is no Messages API reply (issue 35 item 5) ------------------------------


def fail_shape(judge: AnthropicJudge) -> JudgeError:
    """The judge error of a reply in the wrong shape: said, never a TypeError, never retried."""
    with pytest.raises(JudgeError) as info:
        ask(judge)
    err = info.value
    assert not isinstance(err, JudgeHTTPError) and not getattr(err, "transient", False)
    assert "NoneType" not in str(err)
    return err


def test_an_openai_compatible_server_is_a_judge_error_naming_the_server_and_the_shape() -> None:
    from assay.testing import FakeOpenAIServer

    with FakeOpenAIServer(any_path=True) as fake:
        root = fake.base_url.removesuffix("/v1")
        err = fail_shape(AnthropicJudge("claude-x", base_url=root, api_key=SECRET))
        assert fake.calls == 1
    text = str(err)
    assert text.startswith(f"The Anthropic server at {root.removeprefix('http://')} answered HTTP 200 with an OpenAI ")
    assert "chat-completions reply (with 'choices'), not a Messages API reply (with 'content' blocks)" in text
    assert "--judge openai:MODEL" in text and "/v1" in text


@pytest.mark.parametrize(
    ("fault", "found"),
    [("html", "an HTML page titled 'Sign in - Example Proxy'"), ("empty", "an empty body")],
)
def test_a_web_page_or_an_empty_body_is_a_judge_error(server: FakeAnthropicServer, fault: str, found: str) -> None:
    server.faults = {fault: 1.0}
    err = fail_shape(make_judge(server))
    assert f"answered HTTP 200 with {found}, not a Messages API reply" in str(err)
    assert_no_secret(err)


def test_a_web_page_at_a_base_url_ending_in_v1_says_the_messages_api_has_none(server: FakeAnthropicServer) -> None:
    server.faults, server.any_path = {"html": 1.0}, True
    err = fail_shape(AnthropicJudge("m", base_url=server.base_url + "/v1", api_key=SECRET))
    assert "HTML page" in str(err) and "without /v1" in str(err)


def test_other_json_is_described_by_its_shape() -> None:
    judge = AnthropicJudge("m", base_url="http://127.0.0.1:9", api_key=SECRET)
    said = {
        b"[1, 2]": "with a JSON array,",
        b'"ok"': "with a JSON string,",
        b'{"result": "yes", "id": 3}': "with a JSON object with keys 'result', 'id',",
        b'{"error": {"message": "model not loaded"}}': "with an error: model not loaded,",
        b"Service Unavailable": "with text that is not JSON (text/plain): 'Service Unavailable',",
        b'{"content": "flat text"}': "with a JSON object with keys 'content',",
    }
    for body, found in said.items():
        err = judge._reply_error(200, "text/plain" if body[:1] == b"S" else "application/json", body)
        assert err is not None and found in str(err), (body, err)
    assert judge._reply_error(200, "application/json", b'{"content": [], "type": "message"}') is None
