"""What the HTTP judge backends (OpenAI-compatible, Anthropic) share.

Option checks, API-key resolution, one SDK client per event loop, and the mapping of SDK
failures to :class:`JudgeHTTPError` (status, ``Retry-After``, transient or not) with the
API key redacted. Each backend keeps what is specific to its SDK and wire format: the
request, the response, which SDK exception is which, and how an error body reads.
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
from collections.abc import Mapping
from types import TracebackType
from typing import ClassVar, Generic, Protocol, Self, TypeVar
from urllib.parse import urlsplit

from assay._safety import redact_secrets, redact_url, url_secrets
from assay.errors import ConfigError, JudgeError
from assay.models._endpoint import canonical_url
from assay.models._protocol import JudgeModel

__all__ = [
    "LOCAL_PLACEHOLDER_KEY",
    "HTTPJudge",
    "JudgeHTTPError",
    "anthropic_shaped",
    "body_text",
    "check_options",
    "host_of",
    "is_local",
    "openai_shaped",
    "retry_after",
]

LOCAL_PLACEHOLDER_KEY = "not-needed"
"""The API key sent to a local server when none is configured (local servers ignore it)."""

_LOCAL_NAMES = frozenset({"localhost", "host.docker.internal"})
_EXCERPT_CHARS = 300


class JudgeHTTPError(JudgeError):
    """An OpenAI-compatible or Anthropic server failed to answer.

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


class _Client(Protocol):
    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=_Client)


def _check_base_url(url: str, client: str, key_env: str) -> None:
    """Refuse a base URL with a query string: the SDK appends its path after it, so it cannot work.

    ``https://host/v1?api_key=...`` is sent as ``https://host/v1?api_key=.../chat/completions``
    (any query, ``?region=eu`` too): every call fails, a 404, after the run has started. It
    is refused before any call, with the URL redacted.
    """
    if urlsplit(url).query:
        raise ConfigError(
            f"the base URL {redact_url(url)} has a query string: the {client} client appends its own path "
            f"(/chat/completions) after it, so no request could reach the server. Give the URL without "
            f"'?...' and the key in {key_env} (or api_key=...)"
        )


def check_options(structured: str, modes: tuple[str, ...], *, timeout: float, max_concurrency: int) -> None:
    """Raise :class:`ConfigError` for an unknown ``structured`` mode, timeout or concurrency."""
    if structured not in modes:
        raise ConfigError(f"structured must be one of {list(modes)}, got {structured!r}")
    if not (timeout > 0 and math.isfinite(timeout)):
        raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if max_concurrency < 1:
        raise ConfigError(f"max_concurrency must be at least 1, got {max_concurrency!r}")


class HTTPJudge(JudgeModel, Generic[ClientT]):
    """The state and plumbing of a judge behind an HTTP API, one SDK client per event loop.

    A backend sets the class variables, checks its own options and imports its SDK, then
    calls ``super().__init__``; it implements :meth:`_new_client` and maps SDK errors
    with :meth:`_status_error`, :meth:`_timeout_error`, :meth:`_connection_error` and
    :meth:`_client_error`.
    """

    _kind: ClassVar[str]
    """The ``model_id`` prefix, e.g. ``"openai"``."""
    _server: ClassVar[str]
    """What errors call the server, e.g. ``"OpenAI-compatible server"``."""
    _client_label: ClassVar[str]
    """What errors call the SDK client, e.g. ``"OpenAI"``."""
    _key_env: ClassVar[str]
    _base_url_env: ClassVar[str]
    _default_host: ClassVar[str]
    _default_base_url: ClassVar[str]
    """The SDK's base URL when none is configured (part of :attr:`identity`)."""
    _no_key_message: ClassVar[str]
    """The :class:`ConfigError` message when there is neither an API key nor a base URL."""
    _reply_shape: ClassVar[str]
    """What a successful reply is, for errors: ``"a chat-completions reply (a JSON object with 'choices')"``."""

    def _base_url_hint(self) -> str:
        """What may be wrong with the base URL when a web page answered (``""`` when it looks right)."""
        return ""

    def _is_reply(self, value: Mapping[str, object]) -> bool:
        """Whether a JSON object has the shape of this API's reply."""
        raise NotImplementedError

    def _other_api(self, value: Mapping[str, object]) -> tuple[str, str] | None:
        """(what the object is, what to do) when it is another API's reply, else ``None``."""
        raise NotImplementedError

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None,
        api_key: str | None,
        timeout: float,
        max_concurrency: int,
    ) -> None:
        base_url = base_url or os.environ.get(self._base_url_env) or None
        if base_url is not None:
            _check_base_url(base_url, self._client_label, self._key_env)
        key = api_key or os.environ.get(self._key_env) or None
        if key is None:
            if base_url is None:
                raise ConfigError(self._no_key_message)
            if not is_local(base_url):
                raise ConfigError(
                    f"No API key for the {self._server} at {host_of(base_url)}: set "
                    f"{self._key_env} or pass api_key=... (any non-empty string if the server "
                    "needs none)."
                )
            key = LOCAL_PLACEHOLDER_KEY

        self._model = model
        self._base_url = base_url
        self._host = host_of(base_url) if base_url is not None else self._default_host
        self._secret = key
        self._timeout = float(timeout)
        self._max_concurrency = max_concurrency
        # One HTTP client per event loop: its connection pool belongs to the loop that
        # opened it, and evaluate() runs each call in a fresh loop.
        self._client: ClientT | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def _new_client(self) -> ClientT:
        """A new SDK client with the API key, base URL, timeout and ``max_retries=0``."""
        raise NotImplementedError

    def _get_client(self) -> ClientT:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = self._new_client()
            self._client_loop = loop
        return self._client

    @property
    def model_id(self) -> str:
        """``<backend>:<model>``, e.g. ``openai:gpt-4o-mini``."""
        return f"{self._kind}:{self._model}"

    @property
    def identity(self) -> str:
        """``<backend>:<model>@<base URL>``, the URL without credentials, spelled one way.

        The same model name behind two servers is two judges: the judge-call cache and
        calibrations key on this, not on :attr:`model_id`. One server spelled two ways
        (``localhost`` or ``127.0.0.1``, a trailing slash) is one judge
        (:func:`~assay.models._endpoint.canonical_url`).
        """
        return f"{self._kind}:{self._model}@{canonical_url(self._base_url or self._default_base_url)}"

    @property
    def max_concurrency(self) -> int:
        """As configured (default 16)."""
        return self._max_concurrency

    @property
    def prefers_per_statement(self) -> bool:
        """False: an API model answers all statements of a sample in one call."""
        return False

    async def aclose(self) -> None:
        """Close the HTTP client; a later call opens a new one."""
        client, self._client, self._client_loop = self._client, None, None
        if client is not None:
            await client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- errors: their messages never contain the API key ------------------------------

    def _status_error(self, status: int, headers: Mapping[str, str], body: str) -> JudgeHTTPError:
        """The error for an HTTP error status; ``body`` is the error body as text."""
        should_retry = (headers.get("x-should-retry") or "").lower()
        if should_retry in ("true", "false"):
            transient = should_retry == "true"
        else:
            # Anthropic's 529 (overloaded) is a 5xx like any other.
            transient = status in (408, 429) or status >= 500
        excerpt = self._redact(body)[:_EXCERPT_CHARS]
        hint = ""
        if status == 401:
            hint = f" Check {self._key_env} (or api_key=...)."
        elif status == 404:
            hint = f" Does the server serve model {self._model!r} at {self._host}?"
        return JudgeHTTPError(
            f"The {self._server} at {self._host} answered HTTP {status} "
            f"(model {self._model!r}): {excerpt or '<empty body>'}{hint}",
            status_code=status,
            retry_after=retry_after(headers),
            transient=transient,
        )

    def _timeout_error(self) -> JudgeHTTPError:
        return JudgeHTTPError(
            f"The {self._server} at {self._host} did not answer within {self._timeout:g}s (model {self._model!r}).",
            transient=True,
        )

    def _connection_error(self, err: BaseException) -> JudgeHTTPError:
        cause = type(err.__cause__).__name__ if err.__cause__ else "connection error"
        return JudgeHTTPError(
            f"Could not talk to the {self._server} at {self._host} ({cause}); is it running?",
            transient=True,
        )

    def _client_error(self, err: BaseException) -> JudgeError:
        return JudgeError(
            f"The {self._client_label} client failed ({type(err).__name__}): {self._redact(str(err))[:_EXCERPT_CHARS]}"
        )

    def _reply(self, status: int, content_type: str | None, body: bytes) -> Mapping[str, object]:
        """A success status's body as this API's reply, read once.

        Raises:
            JudgeError: The body is not this API's reply (see :meth:`_reply_error`).
        """
        try:
            value: object = json.loads(body)
        except ValueError:
            value = _NOT_JSON
        if isinstance(value, dict) and self._is_reply(value):
            return value
        problem = self._reply_error(status, content_type, body)
        raise problem if problem is not None else AssertionError("unreachable: a reply that is not one")

    def _reply_error(self, status: int, content_type: str | None, body: bytes) -> JudgeError | None:
        """The error for a success status whose body is not this API's reply, else ``None``.

        A server of another API (an OpenAI-compatible server behind an Anthropic judge, or
        the reverse), a web page or a proxy's login form, an empty body: each would
        otherwise fail deep inside the SDK (``'NoneType' object is not iterable``) as a
        bug of the metric. Said instead as a judge error naming the server, what it sent
        and the shape expected; not transient, since asking again gets the same answer.
        """
        text = body.decode("utf-8", errors="replace").strip()
        hint = ""
        if not text:
            found = "an empty body"
        else:
            try:
                value: object = json.loads(text)
            except ValueError:
                value = _NOT_JSON
            if value is _NOT_JSON:
                if "html" in (content_type or "").lower() or text[:1] == "<":
                    title = _HTML_TITLE.search(text)
                    named = f" titled {self._redact(' '.join(title.group(1).split()))[:80]!r}" if title else ""
                    found = f"an HTML page{named}"
                    hint = (
                        f" Is {redact_url(self._base_url) or self._host} the API, not a web page or a proxy's "
                        f"login page?{self._base_url_hint()}"
                    )
                else:
                    excerpt = self._redact(" ".join(text.split()))[: _EXCERPT_CHARS // 3]
                    found = f"text that is not JSON ({content_type or 'no content type'}): {excerpt!r}"
            elif isinstance(value, dict):
                if self._is_reply(value):
                    return None
                other = self._other_api(value)
                if other is not None:
                    found, hint = other[0], f" {other[1]}"
                elif "error" in value:
                    found = f"an error: {self._redact(body_text(value['error']))[:_EXCERPT_CHARS]}"
                else:
                    keys = ", ".join(repr(self._redact(str(key))) for key in list(value)[:6])
                    found = f"a JSON object with {'keys ' + keys if keys else 'no keys'}"
            else:
                found = f"a JSON {_JSON_KINDS.get(type(value), type(value).__name__)}"
        return JudgeError(
            f"The {self._server} at {self._host} answered HTTP {status} with {found}, not {self._reply_shape} "
            f"(model {self._model!r}).{hint}"
        )

    def _redact(self, text: str) -> str:
        # A server may echo the key it got (401) or the URL it was asked for (404 with the
        # query): mask the key and every credential in the base URL.
        return redact_secrets(text, self._secret, *url_secrets(self._base_url))


_NOT_JSON = object()
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_JSON_KINDS: Mapping[type, str] = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def openai_shaped(value: Mapping[str, object]) -> bool:
    """Whether a JSON object is a chat-completions reply: a ``choices`` list, each with a ``message`` object."""
    choices = value.get("choices")
    return isinstance(choices, list) and all(
        isinstance(choice, Mapping) and isinstance(choice.get("message"), Mapping) for choice in choices
    )


def anthropic_shaped(value: Mapping[str, object]) -> bool:
    """Whether a JSON object is a Messages API reply: a ``content`` list of blocks."""
    content = value.get("content")
    return isinstance(content, list) and all(isinstance(block, Mapping) for block in content)


def body_text(body: object) -> str:
    """An error body as text: its ``message`` if it has one, else the body itself."""
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


def retry_after(headers: Mapping[str, str]) -> float | None:
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


def host_of(base_url: str) -> str:
    """``host[:port]`` of ``base_url``, without any credentials or path.

    A URL without a scheme is read as ``host[:port]/path``; one without any host comes
    back without what precedes an ``@`` and with its query redacted, so an error message
    naming it never leaks a credential.
    """
    parts = urlsplit(base_url)
    if not parts.hostname:
        parts = urlsplit("//" + base_url.partition("://")[2] if "://" in base_url else "//" + base_url)
    host = parts.hostname or redact_url(base_url.rpartition("@")[2]) or ""
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port else host


def is_local(base_url: str) -> bool:
    """Whether ``base_url`` is on this machine or a private network."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host in _LOCAL_NAMES or host.endswith(".localhost") or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local
