"""A judge behind any OpenAI-compatible chat-completions server.

OpenAI itself, vLLM, Ollama, the llama.cpp server, LM Studio: anything that speaks
``POST /v1/chat/completions``. Needs the ``openai`` extra (``pip install 'assay[openai]'``).

The SDK's own retries are switched off (``max_retries=0``): exactly one layer of assay
owns retries, and it decides from :class:`JudgeHTTPError`'s ``transient`` and
``retry_after`` attributes.
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import json
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel

from assay._schema import schema_of
from assay._scores import Usage
from assay.errors import ConfigError, JudgeError, MissingExtraError
from assay.models._protocol import ChatMessage, GenerateConfig, JudgeResponse

if TYPE_CHECKING:
    from openai import APIStatusError, AsyncOpenAI, OpenAIError
    from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
    from openai.types.chat.completion_create_params import ResponseFormat

__all__ = ["JudgeHTTPError", "OpenAIJudge", "StructuredMode"]

StructuredMode = Literal["json_schema", "json_object", "none"]
"""How a schema is enforced: a JSON schema, JSON mode, or only by the prompt."""

LOCAL_PLACEHOLDER_KEY = "not-needed"
"""The API key sent to a local server when none is configured (local servers ignore it)."""

_DEFAULT_HOST = "api.openai.com"
_LOCAL_NAMES = frozenset({"localhost", "host.docker.internal"})
_EXCERPT_CHARS = 300
_SECRET_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{4})[A-Za-z0-9_\-]{4,}")


class JudgeHTTPError(JudgeError):
    """An OpenAI-compatible server failed to answer.

    Attributes:
        status_code: The HTTP status, or ``None`` for timeouts and connection errors.
        retry_after: Seconds the server asked to wait (``Retry-After`` /
            ``retry-after-ms``), if it said.
        transient: Whether trying again later may succeed: 408, 429, 5xx, timeouts and
            connection errors (a server's ``x-should-retry`` header overrides the status).
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        retry_after: float | None = None,
        transient: bool = False,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retry_after = retry_after
        self.transient = transient


class OpenAIJudge:
    """A judge served by an OpenAI-compatible chat-completions endpoint.

    One ``AsyncOpenAI`` client is created per judge; close it with :meth:`aclose` (or use
    the judge as an ``async with`` context manager).

    Args:
        model: The model name the server knows, e.g. ``"gpt-4o-mini"`` or ``"qwen2.5:7b"``.
        base_url: The server's ``/v1`` URL; defaults to ``OPENAI_BASE_URL``, then OpenAI.
        api_key: Defaults to ``OPENAI_API_KEY``. A local server (loopback, private
            network, ``localhost``) gets a placeholder key when neither is set.
        timeout: Seconds one request may take before it fails as transient.
        max_concurrency: How many calls the runner should keep in flight.
        structured: How ``schema`` is enforced: ``"json_schema"`` (falls back once, and
            for good, to ``"json_object"`` when the server rejects JSON schemas),
            ``"json_object"`` (JSON mode) or ``"none"`` (the prompt alone).

    Raises:
        MissingExtraError: The ``openai`` package is not installed.
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
        structured: StructuredMode = "json_schema",
    ) -> None:
        if not model:
            raise ConfigError("OpenAIJudge needs a model name, e.g. OpenAIJudge('gpt-4o-mini')")
        if structured not in get_args(StructuredMode):
            raise ConfigError(f"structured must be one of {list(get_args(StructuredMode))}, got {structured!r}")
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be at least 1, got {max_concurrency!r}")
        try:
            import openai
        except ImportError:
            raise MissingExtraError("openai", "openai", "The OpenAI-compatible judge") from None

        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = api_key or os.environ.get("OPENAI_API_KEY") or None
        if key is None:
            if base_url is None:
                raise ConfigError(
                    "The OpenAI judge needs an API key: set the OPENAI_API_KEY environment "
                    "variable or pass api_key=..., or point base_url at a local "
                    "OpenAI-compatible server."
                )
            if not _is_local(base_url):
                raise ConfigError(
                    f"No API key for the OpenAI-compatible server at {_host(base_url)}: set "
                    "OPENAI_API_KEY or pass api_key=... (any non-empty string if the server "
                    "needs none)."
                )
            key = LOCAL_PLACEHOLDER_KEY

        self._model = model
        self._base_url = base_url
        self._host = _host(base_url)
        self._secret = key
        self._timeout = float(timeout)
        self._max_concurrency = max_concurrency
        self._structured: StructuredMode = structured
        self._token_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
        self._openai = openai
        # One HTTP client per event loop: its connection pool belongs to the loop that
        # opened it, and evaluate() runs each call in a fresh loop.
        self._client: AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def _get_client(self) -> AsyncOpenAI:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = self._openai.AsyncOpenAI(
                api_key=self._secret, base_url=self._base_url, timeout=self._timeout, max_retries=0
            )
            self._client_loop = loop
        return self._client

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self._model!r}, base_url={self._base_url!r}, structured={self._structured!r})"

    @property
    def model_id(self) -> str:
        """``openai:<model>``."""
        return f"openai:{self._model}"

    @property
    def max_concurrency(self) -> int:
        """As configured (default 16)."""
        return self._max_concurrency

    @property
    def prefers_per_statement(self) -> bool:
        """False: an API model answers all statements of a sample in one call."""
        return False

    @property
    def structured(self) -> StructuredMode:
        """The structured-output mode in use (``json_object`` after a fallback)."""
        return self._structured

    async def aclose(self) -> None:
        """Close the HTTP client; a later call opens a new one."""
        client, self._client, self._client_loop = self._client, None, None
        if client is not None:
            await client.close()

    async def __aenter__(self) -> OpenAIJudge:
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
        """Send one chat-completions request; constrain it to ``schema`` if given.

        A refusal comes back as a response with ``finish_reason="refusal"`` and the
        refusal text; a truncated answer keeps the server's ``finish_reason``
        (``"length"``).

        Raises:
            JudgeHTTPError: The server answered with an error status, timed out, or could
                not be reached. The message never contains the API key.
            JudgeError: The server answered 200 without any choice.
        """
        import openai

        config = config or GenerateConfig()
        payload = _to_openai_messages(messages)
        # At most two one-time fallbacks (JSON schema -> JSON mode; max_tokens ->
        # max_completion_tokens), so at most three attempts.
        for _ in range(3):
            mode = self._structured if schema is not None else "none"
            token_param = self._token_param
            response_format = _response_format(schema, mode)
            started = time.perf_counter()
            failure: JudgeError | None = None
            try:
                completion = await self._get_client().chat.completions.create(
                    model=self._model,
                    messages=payload,
                    temperature=config.temperature,
                    seed=config.seed + config.repeat,  # repeats are real repeats
                    max_tokens=config.max_tokens if token_param == "max_tokens" else openai.omit,
                    max_completion_tokens=(
                        config.max_tokens if token_param == "max_completion_tokens" else openai.omit
                    ),
                    response_format=response_format if response_format else openai.omit,
                )
            except openai.BadRequestError as err:
                if mode == "json_schema" and _mentions(err, "response_format", "json_schema"):
                    self._structured = "json_object"
                    continue
                if token_param == "max_tokens" and _mentions(err, "max_completion_tokens"):
                    self._token_param = "max_completion_tokens"
                    continue
                failure = self._failure(err)
            except openai.OpenAIError as err:
                failure = self._failure(err)
            if failure is not None:
                # Raised outside the except block so that neither __cause__ nor __context__
                # holds the SDK's exception (whose body may echo the API key).
                raise failure
            return self._to_response(completion, time.perf_counter() - started)
        raise AssertionError("unreachable: every fallback happens at most once")

    # -- helpers ----------------------------------------------------------------------

    def _failure(self, err: OpenAIError) -> JudgeError:
        """The assay error for an SDK error; its message never contains the API key."""
        import openai

        if isinstance(err, openai.APIStatusError):
            return self._status_error(err)
        if isinstance(err, openai.APITimeoutError):
            return JudgeHTTPError(
                f"The OpenAI-compatible server at {self._host} did not answer within "
                f"{self._timeout:g}s (model {self._model!r}).",
                transient=True,
            )
        if isinstance(err, openai.APIConnectionError):
            cause = type(err.__cause__).__name__ if err.__cause__ else "connection error"
            return JudgeHTTPError(
                f"Could not talk to the OpenAI-compatible server at {self._host} ({cause}); is it running?",
                transient=True,
            )
        return JudgeError(f"The OpenAI client failed ({type(err).__name__}): {self._redact(str(err))[:_EXCERPT_CHARS]}")

    def _to_response(self, completion: ChatCompletion, latency_s: float) -> JudgeResponse:
        if not completion.choices:
            raise JudgeError(
                f"The OpenAI-compatible server at {self._host} answered without any choice (model {self._model!r})."
            )
        choice = completion.choices[0]
        message = choice.message
        usage = completion.usage
        counted = Usage(
            prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
            completion_tokens=(usage.completion_tokens or 0) if usage else 0,
        )
        model = f"openai:{completion.model or self._model}"
        if message.refusal:
            text, finish_reason = message.refusal, "refusal"
        else:
            text, finish_reason = message.content or "", choice.finish_reason
        return JudgeResponse(
            text=text,
            model=model,
            usage=counted,
            latency_s=latency_s,
            finish_reason=finish_reason,
        )

    def _status_error(self, err: APIStatusError) -> JudgeHTTPError:
        status = err.status_code
        headers = err.response.headers
        should_retry = (headers.get("x-should-retry") or "").lower()
        if should_retry in ("true", "false"):
            transient = should_retry == "true"
        else:
            transient = status in (408, 429) or status >= 500
        excerpt = self._redact(_body_text(err.body))[:_EXCERPT_CHARS]
        hint = ""
        if status == 401:
            hint = " Check OPENAI_API_KEY (or api_key=...)."
        elif status == 404:
            hint = f" Does the server serve model {self._model!r} at {self._host}?"
        return JudgeHTTPError(
            f"The OpenAI-compatible server at {self._host} answered HTTP {status} "
            f"(model {self._model!r}): {excerpt or '<empty body>'}{hint}",
            status_code=status,
            retry_after=_retry_after(headers),
            transient=transient,
        )

    def _redact(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "[redacted]")
        return _SECRET_LIKE.sub(r"\1...[redacted]", text)


def _to_openai_messages(messages: Sequence[ChatMessage]) -> list[ChatCompletionMessageParam]:
    converted: list[ChatCompletionMessageParam] = []
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "system":
            converted.append({"role": "system", "content": content})
        elif role == "user":
            converted.append({"role": "user", "content": content})
        elif role == "assistant":
            converted.append({"role": "assistant", "content": content})
        else:
            raise ConfigError(f"unknown chat role {role!r}; use system, user or assistant")
    return converted


def _response_format(schema: type[BaseModel] | None, mode: StructuredMode) -> ResponseFormat | None:
    if schema is None or mode == "none":
        return None
    if mode == "json_object":
        return {"type": "json_object"}
    name = re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64] or "answer"
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": schema_of(schema), "strict": False},
    }


def _mentions(err: APIStatusError, *needles: str) -> bool:
    text = f"{err.message} {err.param or ''} {_body_text(err.body)}"
    return any(needle in text for needle in needles)


def _body_text(body: object) -> str:
    if body is None:
        return ""
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        return str(body["message"])
    if isinstance(body, str):
        return body.strip()
    try:
        return json.dumps(body)
    except (TypeError, ValueError):
        return repr(body)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    header = headers.get("retry-after")
    if header is None:
        return None
    try:
        value = float(header)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(header)
        except (TypeError, ValueError):
            return None
        value = when.timestamp() - time.time()
        return max(value, 0.0)
    return value if math.isfinite(value) and value >= 0 else None


def _host(base_url: str | None) -> str:
    """``host[:port]`` of ``base_url``, without any credentials or path."""
    if base_url is None:
        return _DEFAULT_HOST
    parts = urlsplit(base_url)
    host = parts.hostname or base_url
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port else host


def _is_local(base_url: str) -> bool:
    """Whether ``base_url`` is on this machine or a private network."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host in _LOCAL_NAMES or host.endswith(".localhost") or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local
