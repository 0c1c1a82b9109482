"""A judge behind Anthropic's Messages API (``POST /v1/messages``).

Needs the ``anthropic`` extra (``pip install 'assay[anthropic]'``).

A schema is enforced with a forced tool call: one tool named after the schema whose
``input_schema`` is the schema's JSON schema, and ``tool_choice`` naming it. The tool
call's ``input`` comes back serialised as JSON text, so the caller validates it like any
other answer (the backend returns text, never a trusted object).

Sampling: the Messages API version that ``anthropic`` 2.x speaks (``2026-10-21``) rejects
``temperature``, ``top_p`` and ``top_k`` with HTTP 400, even at their defaults, and the SDK
no longer has those parameters. So :class:`GenerateConfig`'s ``temperature`` and ``seed``
are not sent; ``max_tokens`` is.

As with the OpenAI backend, the SDK's own retries are off (``max_retries=0``): exactly one
layer of assay owns retries, and it decides from :class:`JudgeHTTPError`'s ``transient``
and ``retry_after`` attributes.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel

from assay._safety import redact_url
from assay._schema import schema_of
from assay._scores import Usage
from assay.errors import ConfigError, JudgeError, MissingExtraError
from assay.models._http import HTTPJudge, anthropic_shaped, body_text, check_options, openai_shaped
from assay.models._protocol import ChatMessage, GenerateConfig, JudgeResponse

if TYPE_CHECKING:
    from anthropic import AnthropicError, AsyncAnthropic
    from anthropic.types import Message, MessageParam, ToolChoiceToolParam, ToolParam

__all__ = ["AnthropicJudge", "AnthropicStructuredMode"]

AnthropicStructuredMode = Literal["tool", "none"]
"""How a schema is enforced: a forced tool call, or only by the prompt."""

_FINISH_REASONS: Mapping[str, str] = {
    "max_tokens": "length",
    "model_context_window_exceeded": "length",  # cut off too: the parser treats it as truncation
    "refusal": "refusal",
}


class AnthropicJudge(HTTPJudge["AsyncAnthropic"]):
    """A judge served by Anthropic's Messages API (or a server that speaks it).

    One ``AsyncAnthropic`` client is created per event loop; close it with :meth:`aclose`
    (or use the judge as an ``async with`` context manager).

    Args:
        model: The model name, e.g. ``"claude-haiku-4-5"``.
        base_url: The server's root URL (without ``/v1``); defaults to
            ``ANTHROPIC_BASE_URL``, then Anthropic.
        api_key: Defaults to ``ANTHROPIC_API_KEY``. A local server (loopback, private
            network, ``localhost``) gets a placeholder key when neither is set.
        timeout: Seconds one request may take before it fails as transient.
        max_concurrency: How many calls the runner should keep in flight.
        structured: How ``schema`` is enforced: ``"tool"`` (a forced tool call whose
            input schema is the schema) or ``"none"`` (the prompt alone).

    Raises:
        MissingExtraError: The ``anthropic`` package is not installed.
        ConfigError: No API key for a remote server, or an invalid option.
    """

    _kind = "anthropic"
    _server = "Anthropic server"
    _client_label = "Anthropic"
    _key_env = "ANTHROPIC_API_KEY"
    _base_url_env = "ANTHROPIC_BASE_URL"
    _default_host = "api.anthropic.com"
    _default_base_url = "https://api.anthropic.com"
    _no_key_message = (
        "The Anthropic judge needs an API key: set the ANTHROPIC_API_KEY environment "
        "variable or pass api_key=..., or point base_url at a local server that "
        "speaks the Messages API."
    )
    _reply_shape = "a Messages API reply (with 'content' blocks)"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_concurrency: int = 16,
        structured: AnthropicStructuredMode = "tool",
    ) -> None:
        if not model:
            raise ConfigError("AnthropicJudge needs a model name, e.g. AnthropicJudge('claude-haiku-4-5')")
        check_options(structured, get_args(AnthropicStructuredMode), timeout=timeout, max_concurrency=max_concurrency)
        try:
            import anthropic
        except ImportError:
            raise MissingExtraError("anthropic", "anthropic", "The Anthropic judge") from None

        super().__init__(model, base_url=base_url, api_key=api_key, timeout=timeout, max_concurrency=max_concurrency)
        self._structured: AnthropicStructuredMode = structured
        self._anthropic = anthropic

    def _new_client(self) -> AsyncAnthropic:
        # An explicit api_key keeps the SDK from consulting credential environment
        # variables, profiles or workload-identity files of its own.
        return self._anthropic.AsyncAnthropic(
            api_key=self._secret, base_url=self._base_url, timeout=self._timeout, max_retries=0
        )

    def __repr__(self) -> str:
        return (
            f"AnthropicJudge(model={self._model!r}, base_url={redact_url(self._base_url)!r}, "
            f"structured={self._structured!r})"
        )

    @property
    def structured(self) -> AnthropicStructuredMode:
        """The structured-output mode in use."""
        return self._structured

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: type[BaseModel] | None = None,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        """Send one Messages request; force a tool call shaped like ``schema`` if given.

        The response text is the forced tool call's ``input`` as JSON; without a tool call
        in the reply it is the reply's text. ``finish_reason`` is ``"length"`` when the
        model hit ``max_tokens``, ``"refusal"`` when it refused, ``"stop"`` otherwise.

        Raises:
            JudgeHTTPError: The server answered with an error status, timed out, or could
                not be reached. The message never contains the API key.
            JudgeError: The server answered 200 with something that is not a Messages API
                reply (another API's reply, a web page, an empty body); any other
                failure of the client.
            ConfigError: ``messages`` has no user or assistant turn, or an unknown role.
        """
        anthropic = self._anthropic
        config = config or GenerateConfig()
        system, payload = _to_anthropic_messages(messages)
        tool = _tool_for(schema) if schema is not None and self._structured == "tool" else None
        tool_choice: ToolChoiceToolParam | None = {"type": "tool", "name": tool["name"]} if tool else None
        started = time.perf_counter()
        failure: JudgeError | None = None
        try:
            raw = await self._get_client().messages.with_raw_response.create(
                model=self._model,
                messages=payload,
                max_tokens=config.max_tokens,
                system=system if system is not None else anthropic.omit,
                tools=[tool] if tool is not None else anthropic.omit,
                tool_choice=tool_choice if tool_choice is not None else anthropic.omit,
            )
        except anthropic.AnthropicError as err:
            failure = self._failure(err)
        if failure is not None:
            # Raised outside the except block so that neither __cause__ nor __context__
            # holds the SDK's exception (whose body or request may carry the API key).
            raise failure
        problem = self._reply_error(raw.status_code, raw.headers.get("content-type"), await raw.read())
        if problem is not None:
            raise problem
        message = await raw.parse()
        return self._to_response(message, tool["name"] if tool else None, time.perf_counter() - started)

    # -- helpers ----------------------------------------------------------------------

    def _is_reply(self, value: Mapping[str, object]) -> bool:
        return anthropic_shaped(value)

    def _base_url_hint(self) -> str:
        path = urlsplit(self._base_url or "").path.rstrip("/")
        if not path.endswith("/v1"):
            return ""
        return " The Messages API's base URL is the server's root, without /v1 (the client adds /v1/messages)."

    def _other_api(self, value: Mapping[str, object]) -> tuple[str, str] | None:
        if not openai_shaped(value):
            return None
        return (
            "an OpenAI chat-completions reply (with 'choices')",
            "It speaks the OpenAI-compatible API: use --judge openai:MODEL and a --base-url ending in /v1 "
            "(OpenAIJudge in Python).",
        )

    def _failure(self, err: AnthropicError) -> JudgeError:
        """The assay error for an SDK error; its message never contains the API key."""
        anthropic = self._anthropic
        if isinstance(err, anthropic.APIStatusError):
            return self._status_error(err.status_code, err.response.headers, _error_text(err.body))
        if isinstance(err, anthropic.APITimeoutError):
            return self._timeout_error()
        if isinstance(err, anthropic.APIConnectionError):
            return self._connection_error(err)
        return self._client_error(err)

    def _to_response(self, message: Message, tool_name: str | None, latency_s: float) -> JudgeResponse:
        text = _answer_text(message, tool_name)
        usage = message.usage
        counted = Usage(
            prompt_tokens=(usage.input_tokens or 0) if usage else 0,
            completion_tokens=(usage.output_tokens or 0) if usage else 0,
        )
        finish_reason = _FINISH_REASONS.get(str(message.stop_reason), "stop")
        return JudgeResponse(
            text=text,
            model=f"anthropic:{message.model or self._model}",
            usage=counted,
            latency_s=latency_s,
            finish_reason=finish_reason,
        )


def _to_anthropic_messages(messages: Sequence[ChatMessage]) -> tuple[str | None, list[MessageParam]]:
    """System messages joined into one ``system`` string; the rest as Messages API turns."""
    system: list[str] = []
    converted: list[MessageParam] = []
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "system":
            system.append(content)
        elif role == "user":
            converted.append({"role": "user", "content": content})
        elif role == "assistant":
            converted.append({"role": "assistant", "content": content})
        else:
            raise ConfigError(f"unknown chat role {role!r}; use system, user or assistant")
    if not converted:
        raise ConfigError("The Anthropic judge needs at least one user message besides the system message.")
    return ("\n\n".join(system) if system else None), converted


def _tool_for(schema: type[BaseModel]) -> ToolParam:
    """The one tool whose input is ``schema``; tool names allow ``[A-Za-z0-9_-]{1,64}``."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64] or "answer"
    return {
        "name": name,
        "description": f"Record the answer. Its input must be a {name} object as described by the schema.",
        "input_schema": schema_of(schema),
    }


def _answer_text(message: Message, tool_name: str | None) -> str:
    """The forced tool call's input as JSON, else the text blocks joined."""
    if tool_name is not None:
        calls = [block for block in message.content if block.type == "tool_use"]
        named = [block for block in calls if block.name == tool_name]
        for block in named or calls:
            return json.dumps(block.input, ensure_ascii=False)
    return "".join(block.text for block in message.content if block.type == "text")


def _error_text(body: object) -> str:
    """``error.type: error.message`` from an Anthropic error body, else the body as text."""
    if isinstance(body, Mapping):
        error: Any = body.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            kind = error.get("type")
            return f"{kind}: {error['message']}" if isinstance(kind, str) else str(error["message"])
    return body_text(body)
