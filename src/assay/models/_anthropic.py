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

import asyncio
import json
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel

from assay._schema import schema_of
from assay._scores import Usage
from assay.errors import ConfigError, JudgeError, MissingExtraError
from assay.models._openai import (
    _SECRET_LIKE,
    LOCAL_PLACEHOLDER_KEY,
    JudgeHTTPError,
    _body_text,
    _host,
    _is_local,
    _retry_after,
)
from assay.models._protocol import ChatMessage, GenerateConfig, JudgeResponse

if TYPE_CHECKING:
    from anthropic import AnthropicError, APIStatusError, AsyncAnthropic
    from anthropic.types import Message, MessageParam, ToolChoiceToolParam, ToolParam

__all__ = ["AnthropicJudge", "AnthropicStructuredMode"]

AnthropicStructuredMode = Literal["tool", "none"]
"""How a schema is enforced: a forced tool call, or only by the prompt."""

_DEFAULT_HOST = "api.anthropic.com"
_EXCERPT_CHARS = 300
_FINISH_REASONS: Mapping[str, str] = {
    "max_tokens": "length",
    "model_context_window_exceeded": "length",  # cut off too: the parser treats it as truncation
    "refusal": "refusal",
}


class AnthropicJudge:
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
        if structured not in get_args(AnthropicStructuredMode):
            raise ConfigError(
                f"structured must be one of {list(get_args(AnthropicStructuredMode))}, got {structured!r}"
            )
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be at least 1, got {max_concurrency!r}")
        try:
            import anthropic
        except ImportError:
            raise MissingExtraError("anthropic", "anthropic", "The Anthropic judge") from None

        base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        key = api_key or os.environ.get("ANTHROPIC_API_KEY") or None
        if key is None:
            if base_url is None:
                raise ConfigError(
                    "The Anthropic judge needs an API key: set the ANTHROPIC_API_KEY environment "
                    "variable or pass api_key=..., or point base_url at a local server that "
                    "speaks the Messages API."
                )
            if not _is_local(base_url):
                raise ConfigError(
                    f"No API key for the Anthropic server at {_host(base_url)}: set "
                    "ANTHROPIC_API_KEY or pass api_key=... (any non-empty string if the server "
                    "needs none)."
                )
            key = LOCAL_PLACEHOLDER_KEY

        self._model = model
        self._base_url = base_url
        self._host = _host(base_url) if base_url is not None else _DEFAULT_HOST
        self._secret = key
        self._timeout = float(timeout)
        self._max_concurrency = max_concurrency
        self._structured: AnthropicStructuredMode = structured
        self._anthropic = anthropic
        # One HTTP client per event loop: its connection pool belongs to the loop that
        # opened it, and evaluate() runs each call in a fresh loop.
        self._client: AsyncAnthropic | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def _get_client(self) -> AsyncAnthropic:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            # An explicit api_key keeps the SDK from consulting credential environment
            # variables, profiles or workload-identity files of its own.
            self._client = self._anthropic.AsyncAnthropic(
                api_key=self._secret, base_url=self._base_url, timeout=self._timeout, max_retries=0
            )
            self._client_loop = loop
        return self._client

    def __repr__(self) -> str:
        return f"AnthropicJudge(model={self._model!r}, base_url={self._base_url!r}, structured={self._structured!r})"

    @property
    def model_id(self) -> str:
        """``anthropic:<model>``."""
        return f"anthropic:{self._model}"

    @property
    def max_concurrency(self) -> int:
        """As configured (default 16)."""
        return self._max_concurrency

    @property
    def prefers_per_statement(self) -> bool:
        """False: an API model answers all statements of a sample in one call."""
        return False

    @property
    def structured(self) -> AnthropicStructuredMode:
        """The structured-output mode in use."""
        return self._structured

    async def aclose(self) -> None:
        """Close the HTTP client; a later call opens a new one."""
        client, self._client, self._client_loop = self._client, None, None
        if client is not None:
            await client.close()

    async def __aenter__(self) -> AnthropicJudge:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

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
            JudgeError: Any other failure of the client.
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
            message = await self._get_client().messages.create(
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
        return self._to_response(message, tool["name"] if tool else None, time.perf_counter() - started)

    # -- helpers ----------------------------------------------------------------------

    def _failure(self, err: AnthropicError) -> JudgeError:
        """The assay error for an SDK error; its message never contains the API key."""
        anthropic = self._anthropic
        if isinstance(err, anthropic.APIStatusError):
            return self._status_error(err)
        if isinstance(err, anthropic.APITimeoutError):
            return JudgeHTTPError(
                f"The Anthropic server at {self._host} did not answer within "
                f"{self._timeout:g}s (model {self._model!r}).",
                transient=True,
            )
        if isinstance(err, anthropic.APIConnectionError):
            cause = type(err.__cause__).__name__ if err.__cause__ else "connection error"
            return JudgeHTTPError(
                f"Could not talk to the Anthropic server at {self._host} ({cause}); is it running?",
                transient=True,
            )
        return JudgeError(
            f"The Anthropic client failed ({type(err).__name__}): {self._redact(str(err))[:_EXCERPT_CHARS]}"
        )

    def _status_error(self, err: APIStatusError) -> JudgeHTTPError:
        status = err.status_code
        headers = err.response.headers
        should_retry = (headers.get("x-should-retry") or "").lower()
        if should_retry in ("true", "false"):
            transient = should_retry == "true"
        else:
            # 529 (overloaded) is a 5xx like any other.
            transient = status in (408, 429) or status >= 500
        excerpt = self._redact(_error_text(err.body))[:_EXCERPT_CHARS]
        hint = ""
        if status == 401:
            hint = " Check ANTHROPIC_API_KEY (or api_key=...)."
        elif status == 404:
            hint = f" Does the server serve model {self._model!r} at {self._host}?"
        return JudgeHTTPError(
            f"The Anthropic server at {self._host} answered HTTP {status} "
            f"(model {self._model!r}): {excerpt or '<empty body>'}{hint}",
            status_code=status,
            retry_after=_retry_after(headers),
            transient=transient,
        )

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

    def _redact(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "[redacted]")
        return _SECRET_LIKE.sub(r"\1...[redacted]", text)


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
    return _body_text(body)
