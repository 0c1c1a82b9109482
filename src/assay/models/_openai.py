"""A judge behind any OpenAI-compatible chat-completions server.

OpenAI itself, vLLM, Ollama, the llama.cpp server, LM Studio: anything that speaks
``POST /v1/chat/completions``. Needs the ``openai`` extra (``pip install 'assay[openai]'``).

The SDK's own retries are switched off (``max_retries=0``): exactly one layer of assay
owns retries, and it decides from :class:`JudgeHTTPError`'s ``transient`` and
``retry_after`` attributes.

The request's body (prompt, JSON schema, decoding settings) is sent as ``extra_body``,
not as ``create``'s typed parameters: the SDK walks those value by value before sending
them (``openai._utils._transform``), each message tried against every message type of
the union and the schema key by key (1.7 ms of CPU for a verdict call on a
first-generation EPYC; 0.2 ms for what is left), and returns plain JSON such as ours
unchanged. ``extra_body`` is the SDK's documented way
to add JSON to a request, merged into the body after that walk, its keys replacing the
typed ones (``create`` requires ``model`` and ``messages``; ``messages=[]`` stands in).
The request is the same JSON, and the SDK still sends it and owns the connection, the
timeout, the raw response and its errors. The reply is parsed once, to tell it from
another API's reply or a web page, and its few fields are read from that JSON: the SDK's
``ChatCompletion`` built from it cost 0.15 ms a call more (Xeon).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel

from assay._safety import redact_url
from assay._schema import schema_of
from assay._scores import Usage
from assay.errors import ConfigError, JudgeError, MissingExtraError
from assay.models._http import HTTPJudge, JudgeHTTPError, anthropic_shaped, body_text, check_options, openai_shaped
from assay.models._protocol import ChatMessage, GenerateConfig, JudgeResponse, TokenLogprobs

if TYPE_CHECKING:
    from openai import APIStatusError, AsyncOpenAI, OpenAIError
    from openai.types.chat import ChatCompletionMessageParam
    from openai.types.chat.completion_create_params import ResponseFormat

__all__ = ["JudgeHTTPError", "OpenAIJudge", "StructuredMode"]

StructuredMode = Literal["json_schema", "json_object", "none"]
"""How a schema is enforced: a JSON schema, JSON mode, or only by the prompt."""


class OpenAIJudge(HTTPJudge["AsyncOpenAI"]):
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

    _kind = "openai"
    _server = "OpenAI-compatible server"
    _client_label = "OpenAI"
    _key_env = "OPENAI_API_KEY"
    _base_url_env = "OPENAI_BASE_URL"
    _default_host = "api.openai.com"
    _default_base_url = "https://api.openai.com/v1"
    _no_key_message = (
        "The OpenAI judge needs an API key: set the OPENAI_API_KEY environment "
        "variable or pass api_key=..., or point base_url at a local "
        "OpenAI-compatible server."
    )
    _reply_shape = "a chat-completions reply (with 'choices')"

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
        check_options(structured, get_args(StructuredMode), timeout=timeout, max_concurrency=max_concurrency)
        try:
            import openai
        except ImportError:
            raise MissingExtraError("openai", "openai", "The OpenAI-compatible judge") from None

        super().__init__(model, base_url=base_url, api_key=api_key, timeout=timeout, max_concurrency=max_concurrency)
        self._structured: StructuredMode = structured
        self._token_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
        self._openai = openai

    def _new_client(self) -> AsyncOpenAI:
        return self._openai.AsyncOpenAI(
            api_key=self._secret, base_url=self._base_url, timeout=self._timeout, max_retries=0
        )

    def __repr__(self) -> str:
        return (
            f"OpenAIJudge(model={self._model!r}, base_url={redact_url(self._base_url)!r}, "
            f"structured={self._structured!r})"
        )

    @property
    def gives_logprobs(self) -> bool:
        """True: a call whose config asks ``top_logprobs`` requests ``logprobs`` and returns them, or fails."""
        return True

    @property
    def structured(self) -> StructuredMode:
        """The structured-output mode in use (``json_object`` after a fallback)."""
        return self._structured

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
        (``"length"``). With ``config.top_logprobs`` set, the request asks for
        ``logprobs`` and that many ``top_logprobs``, and the response carries them
        (:attr:`~assay.models.JudgeResponse.logprobs`).

        Raises:
            JudgeHTTPError: The server answered with an error status, timed out, or could
                not be reached. The message never contains the API key.
            JudgeError: The server answered 200 with something that is not a
                chat-completions reply (another API's reply, a web page, an empty body),
                or one without any choice, or without the log-probabilities asked for.
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
            # The body goes in ``extra_body``, past the SDK's parameter walk: see the module docstring.
            body: dict[str, object] = {
                "messages": payload,
                "temperature": config.temperature,
                "seed": config.seed + config.repeat,  # repeats are real repeats
                token_param: config.max_tokens,
            }
            if response_format:
                body["response_format"] = response_format
            if config.top_logprobs:
                body["logprobs"] = True
                body["top_logprobs"] = config.top_logprobs
            try:
                raw = await self._get_client().chat.completions.with_raw_response.create(
                    model=self._model,
                    messages=[],  # replaced by extra_body's
                    extra_body=body,
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
            reply = self._reply(raw.status_code, raw.headers.get("content-type"), raw.content)
            return self._to_response(reply, time.perf_counter() - started, config.top_logprobs)
        raise AssertionError("unreachable: every fallback happens at most once")

    # -- helpers ----------------------------------------------------------------------

    def _is_reply(self, value: Mapping[str, object]) -> bool:
        return openai_shaped(value)

    def _base_url_hint(self) -> str:
        path = urlsplit(self._base_url or "").path.rstrip("/")
        return "" if path.endswith("/v1") else " An OpenAI-compatible API's base URL usually ends in /v1."

    def _other_api(self, value: Mapping[str, object]) -> tuple[str, str] | None:
        if not anthropic_shaped(value):
            return None
        return (
            "an Anthropic Messages API reply (with 'content' blocks)",
            "It speaks Anthropic's Messages API: use --judge anthropic:MODEL and a --base-url without /v1 "
            "(AnthropicJudge in Python).",
        )

    def _failure(self, err: OpenAIError) -> JudgeError:
        """The assay error for an SDK error; its message never contains the API key."""
        import openai

        if isinstance(err, openai.APIStatusError):
            return self._status_error(err.status_code, err.response.headers, body_text(err.body))
        if isinstance(err, openai.APITimeoutError):
            return self._timeout_error()
        if isinstance(err, openai.APIConnectionError):
            return self._connection_error(err)
        return self._client_error(err)

    def _to_response(self, reply: Mapping[str, object], latency_s: float, top_logprobs: int = 0) -> JudgeResponse:
        """The response in a chat-completions reply, read from its JSON.

        Read by hand rather than built into the SDK's ``ChatCompletion`` (a walk of every
        field through its types: 0.15 ms a call against 0.013, Xeon): the reply is already
        parsed once, to tell it from another API's, and four fields are read from it.
        Raises :class:`JudgeError` for a reply whose fields are not what the API says.
        """
        choices = reply["choices"]
        assert isinstance(choices, list)  # openai_shaped: a list of choices, each with a message object
        if not choices:
            raise JudgeError(
                f"The OpenAI-compatible server at {self._host} answered without any choice (model {self._model!r})."
            )
        choice, usage = choices[0], reply.get("usage")
        message = choice["message"]
        counted = Usage(
            prompt_tokens=_count(usage, "prompt_tokens"),
            completion_tokens=_count(usage, "completion_tokens"),
        )
        served = reply.get("model")
        model = f"openai:{served if isinstance(served, str) and served else self._model}"
        refusal, content, finish = message.get("refusal"), message.get("content"), choice.get("finish_reason")
        finish_reason: str | None
        if refusal:
            text, finish_reason = self._text(refusal, "refusal"), "refusal"
        else:
            text = "" if content is None else self._text(content, "content")
            finish_reason = finish if isinstance(finish, str) else None
        logprobs = None
        if top_logprobs and finish_reason != "refusal":
            given = choice.get("logprobs")
            tokens = given.get("content") if isinstance(given, Mapping) else None
            if not tokens:
                raise JudgeError(
                    f"The OpenAI-compatible server at {self._host} returned no log-probabilities for model "
                    f"{self._model!r} though asked (logprobs=true, top_logprobs={top_logprobs}): it does not give "
                    "them, so no confidence can be read from them. Use +samples:K instead of +logprobs "
                    "(agreement over K answers)."
                )
            logprobs = self._logprobs(tokens)
        return JudgeResponse(
            text=text,
            model=model,
            usage=counted,
            latency_s=latency_s,
            finish_reason=finish_reason,
            logprobs=logprobs,
        )

    def _text(self, value: object, field: str) -> str:
        if not isinstance(value, str):
            raise JudgeError(
                f"The OpenAI-compatible server at {self._host} answered with a message whose {field} is a JSON "
                f"{type(value).__name__}, not text (model {self._model!r})."
            )
        return value

    def _logprobs(self, tokens: object) -> tuple[TokenLogprobs, ...]:
        try:
            if not isinstance(tokens, list):
                raise TypeError("not a list")
            return tuple(
                TokenLogprobs(
                    token=item["token"],
                    logprob=item["logprob"],
                    top=tuple((alt["token"], alt["logprob"]) for alt in item.get("top_logprobs") or ()),
                )
                for item in tokens
            )
        except (KeyError, TypeError, AttributeError, ValueError):
            raise JudgeError(
                f"The OpenAI-compatible server at {self._host} returned log-probabilities that are not a list of "
                f"tokens, each with its logprob and top_logprobs (model {self._model!r})."
            ) from None


def _count(usage: object, field: str) -> int:
    """A token count of the reply's ``usage``; 0 where the server gave none (or not a count)."""
    value = usage.get(field) if isinstance(usage, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


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
    text = f"{err.message} {err.param or ''} {body_text(err.body)}"
    return any(needle in text for needle in needles)
