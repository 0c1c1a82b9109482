"""A fake OpenAI-compatible chat-completions server on loopback, for tests.

Built on the standard library only: an :class:`http.server.ThreadingHTTPServer` served
from a background thread. It answers ``POST /v1/chat/completions`` and ``GET /v1/models``
and can inject the faults real servers produce (rate limits, server errors, timeouts,
connection resets, malformed, refused, truncated and miscounted answers)::

    with FakeOpenAIServer(faults={"429": 0.1}, seed=0) as server:
        judge = OpenAIJudge("fake", base_url=server.base_url)
        ...
    assert server.fault_counts["429"] == ...

Request headers (``Authorization`` included) are never logged or stored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from assay.testing._answers import (
    minimal_instance,
    minimal_responder,
    request_schema,
    resolve_ref,
    word_overlap_answer,
)
from assay.testing._fake_server import FakeHandler, FakeServer, Responder

__all__ = [
    "FAULTS",
    "FakeOpenAIServer",
    "Responder",
    "TopLogprobs",
    "default_responder",
    "minimal_instance",
    "minimal_responder",
]

TopLogprobs = Callable[[Mapping[str, Any]], Sequence[tuple[str, float]] | Sequence[Sequence[tuple[str, float]]] | None]
"""Request body -> the most likely first tokens of the answer with their log-probabilities,
most likely first, or such a list for each token of a longer answer (``None``: this request
gets no log-probabilities). The answer is the first token of each list."""

FAULTS: Final[tuple[str, ...]] = (
    "401",
    "429",
    "500",
    "503",
    "timeout",
    "reset",
    "malformed",
    "refusal",
    "truncated",
    "wrong_count",
    "html",
    "empty",
)
"""The fault names :class:`FakeOpenAIServer` understands."""

MALFORMED_TEXT: Final = "I think the answer is yes"
REFUSAL_TEXT: Final = "I'm sorry, but I can't help with that request."

default_responder = word_overlap_answer
"""The answer of :class:`FakeOpenAIServer` without a responder: :func:`~assay.testing.word_overlap_answer`."""


def _text_chars(messages: object) -> int:
    if not isinstance(messages, list):
        return 0
    total = 0
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(
                len(part["text"]) for part in content if isinstance(part, Mapping) and isinstance(part.get("text"), str)
            )
    return total


class _Handler(FakeHandler):
    server_version = "FakeOpenAI/1.0"
    post_path = "/v1/chat/completions"

    def do_GET(self) -> None:
        """Serve ``GET /v1/models``."""
        owner = self.server.owner
        if self.path.rstrip("/") != "/v1/models":
            self._send_error(404, f"Unknown path {self.path}", "invalid_request_error")
            return
        if not self._authorized():
            return
        self._send_json(
            200,
            {
                "object": "list",
                "data": [{"id": owner.model, "object": "model", "created": 0, "owned_by": "assay"}],
            },
        )

    # -- helpers used by FakeOpenAIServer._answer ---------------------------------------

    def _authorized(self) -> bool:
        expected = self.server.owner.require_api_key
        if expected is None:
            return True
        provided = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        if provided == expected:
            return True
        self._send_unauthorized()
        return False

    def _send_unauthorized(self) -> None:
        # Like the real API, echo the key that was sent: clients must not leak it onwards.
        provided = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        self._send_error(
            401,
            f"Incorrect API key provided: {provided}.",
            "invalid_request_error",
            "invalid_api_key",
        )

    def _send_request_error(self, status: int, message: str) -> None:
        self._send_error(status, message, "invalid_request_error")

    def _send_error(
        self,
        status: int,
        message: str,
        kind: str,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
        param: str | None = None,
    ) -> None:
        error = {"message": message, "type": kind, "param": param, "code": code}
        self._send_json(status, {"error": error}, headers)


class FakeOpenAIServer(FakeServer[_Handler]):
    """An OpenAI-compatible chat-completions server on ``127.0.0.1`` for tests.

    Use it as a context manager (or call :meth:`start` and :meth:`close`). Each request's
    JSON body is kept in :attr:`requests`; each injected fault is counted in
    :attr:`fault_counts`.

    Args:
        responder: Request body -> assistant message content. The default,
            :func:`~assay.testing.word_overlap_answer`, answers every prompt assay sends by
            a documented word rule (a statement is supported when its content words are in
            the context), and anything else with a minimal valid instance of the
            ``response_format`` JSON schema, ``{}`` in JSON mode, ``OK`` as plain text.
            ``minimal_responder`` answers everything the latter way.
        latency_s: Seconds to wait before answering every request.
        faults: Fault name -> probability (their sum at most 1). One draw per request
            picks at most one fault. Names: ``401`` (the key refused, the message
            echoing the ``Authorization`` it got, as the real API does), ``429`` (with
            ``Retry-After: 0.05``),
            ``500``, ``503``, ``timeout`` (sleep ``timeout_sleep_s`` first), ``reset``
            (drop the connection with no response), ``malformed`` (200, not JSON),
            ``refusal`` (200, ``message.refusal`` set, ``content`` null), ``truncated``
            (200, content cut in half, ``finish_reason`` ``length``), ``wrong_count``
            (200, a ``verdicts`` list one item longer than the normal answer's, or
            malformed when the schema has no ``verdicts`` array), ``html`` (200, a
            proxy's login page as ``text/html``), ``empty`` (200, an empty body).
        seed: Seed of the random generator that draws faults.
        timeout_sleep_s: How long a ``timeout`` fault stalls; longer than the client's
            timeout.
        rejects_json_schema: Answer 400 to ``response_format`` of type ``json_schema``,
            like servers that only know JSON mode.
        rejects_max_tokens: Answer 400 to ``max_tokens``, like OpenAI's reasoning models
            that want ``max_completion_tokens``.
        require_api_key: When set, requests must carry this bearer token; others get a
            401 whose message echoes the token sent (as the real API does).
        include_usage: Whether responses carry a ``usage`` object.
        model: The model name reported by ``GET /v1/models`` (chat responses echo the
            requested model).
        answered_as: Request body and 1-based call number -> the model name a chat
            response reports (default: the requested one), to play a proxy that falls
            back to another model for some calls.
        any_path: Answer chat completions at any ``POST`` path (``/v1/messages`` too), as
            a server that ignores the path does: an Anthropic client pointed here gets a
            chat-completions reply with status 200.
        only_model: When set, the one model served: a request naming another gets a 404
            ``model_not_found``, as the real API answers an unknown model, so this server's
            answers cannot be recorded under another model's name.
        port: The port to bind on ``127.0.0.1``; 0 (the default) picks a free one.
        top_logprobs: Gives log-probabilities, as a server that supports them: for a request
            with ``logprobs: true``, this function's list (request body -> ``[(token,
            logprob), ...]``, most likely first) is the first answer token's
            ``top_logprobs``, cut to the request's ``top_logprobs`` (default 0: none listed),
            and the answer is its first token; a list of such lists gives each token of a
            longer answer. Without it (the default), every reply has
            ``"logprobs": null``, as most servers that do not support them answer.
    """

    handler_class = _Handler
    known_faults = FAULTS

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency_s: float = 0.0,
        faults: Mapping[str, float] | None = None,
        seed: int = 0,
        timeout_sleep_s: float = 5.0,
        rejects_json_schema: bool = False,
        rejects_max_tokens: bool = False,
        require_api_key: str | None = None,
        include_usage: bool = True,
        model: str = "fake-judge",
        answered_as: Callable[[Mapping[str, Any], int], str] | None = None,
        any_path: bool = False,
        only_model: str | None = None,
        port: int = 0,
        top_logprobs: TopLogprobs | None = None,
    ) -> None:
        super().__init__(
            responder or default_responder,
            latency_s=latency_s,
            faults=faults,
            seed=seed,
            timeout_sleep_s=timeout_sleep_s,
            require_api_key=require_api_key,
            include_usage=include_usage,
            model=only_model or model,
            any_path=any_path,
            port=port,
        )
        self.only_model = only_model
        self.rejects_json_schema = rejects_json_schema
        self.rejects_max_tokens = rejects_max_tokens
        self.answered_as = answered_as
        self.top_logprobs = top_logprobs

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``; available once started."""
        return f"{self._root_url}/v1"

    def _answer(self, handler: _Handler, body: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(body)
            self._calls += 1
        if not handler._authorized():
            return
        if not self._wait(self.latency_s):
            handler._reset()
            return
        if self.only_model is not None and body.get("model") != self.only_model:
            handler._send_error(
                404,
                f"The model `{body.get('model')}` does not exist: this server is assay's fake judge and answers "
                f"only as `{self.only_model}` (--judge openai:{self.only_model}).",
                "invalid_request_error",
                code="model_not_found",
                param="model",
            )
            return
        response_format = body.get("response_format")
        if (
            self.rejects_json_schema
            and isinstance(response_format, Mapping)
            and response_format.get("type") == "json_schema"
        ):
            handler._send_error(
                400,
                "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.",
                "invalid_request_error",
                param="response_format",
            )
            return
        if self.rejects_max_tokens and "max_tokens" in body:
            handler._send_error(
                400,
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                "invalid_request_error",
                code="unsupported_parameter",
                param="max_tokens",
            )
            return

        fault = self._draw_fault()
        if fault == "401":
            handler._send_unauthorized()
            return
        if fault == "429":
            handler._send_error(
                429,
                "Rate limit reached for requests. Please try again in 50ms.",
                "requests",
                code="rate_limit_exceeded",
                headers={"Retry-After": "0.05"},
            )
            return
        if fault in ("500", "503"):
            status = int(fault)
            handler._send_error(status, f"The server had an error ({status}).", "server_error")
            return
        if self._dropped(handler, fault) or self._sent_odd_body(handler, fault):
            return

        finish_reason = "stop"
        refusal: str | None = None
        content: str | None
        logprobs: dict[str, Any] | None = None
        try:
            given = self.top_logprobs(body) if self.top_logprobs is not None and body.get("logprobs") else None
            positions = _positions(given) if given else []
            content = "".join(str(at[0][0]) for at in positions) if positions else self.responder(body)
        except Exception as exc:  # a broken responder is a test bug: make it visible
            handler._send_error(500, f"responder raised {type(exc).__name__}: {exc}", "responder_error")
            return
        if positions:
            shown = int(body.get("top_logprobs") or 0)
            logprobs = {
                "content": [_token_logprob(*at[0], top=[_token_logprob(*t) for t in at[:shown]]) for at in positions]
            }
        if fault == "malformed":
            content = MALFORMED_TEXT
        elif fault == "refusal":
            content, refusal = None, REFUSAL_TEXT
        elif fault == "truncated":
            content = content[: len(content) // 2]
            finish_reason = "length"
        elif fault == "wrong_count":
            content = _one_verdict_too_many(content, request_schema(body))

        payload: dict[str, Any] = {
            "id": f"chatcmpl-fake-{self.calls}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.answered_as(body, self.calls) if self.answered_as else str(body.get("model", self.model)),
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "logprobs": logprobs,
                    "finish_reason": finish_reason,
                }
            ],
        }
        if self.include_usage:
            prompt_tokens = _text_chars(body.get("messages")) // 4 + 1
            completion_tokens = len(content or refusal or "") // 4 + 1
            payload["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
        handler._send_json(200, payload)


def _positions(given: Sequence[Any]) -> list[list[tuple[str, float]]]:
    """A ``top_logprobs`` function's answer as one list per answer token (a single list is the first token's)."""
    if given and isinstance(given[0], tuple | list) and given[0] and isinstance(given[0][0], str):
        return [[(str(t), float(lp)) for t, lp in given]]
    return [[(str(t), float(lp)) for t, lp in at] for at in given]


def _token_logprob(token: str, logprob: float, top: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One entry of a reply's ``logprobs.content`` (or of its ``top_logprobs``), as OpenAI spells it."""
    entry: dict[str, Any] = {"token": token, "logprob": logprob, "bytes": list(token.encode())}
    if top is not None:
        entry["top_logprobs"] = top
    return entry


def _one_verdict_too_many(content: str, schema: Mapping[str, Any] | None) -> str:
    """The normal answer with one extra ``verdicts`` item, or malformed text if impossible."""
    if schema is None:
        return MALFORMED_TEXT
    verdicts_schema = _verdicts_items_schema(schema)
    if verdicts_schema is None:
        return MALFORMED_TEXT
    try:
        answer = json.loads(content)
    except json.JSONDecodeError:
        return MALFORMED_TEXT
    if not isinstance(answer, dict) or not isinstance(answer.get("verdicts"), list):
        return MALFORMED_TEXT
    answer["verdicts"].append(minimal_instance(verdicts_schema, schema))
    return json.dumps(answer)


def _verdicts_items_schema(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    node: Mapping[str, Any] = schema
    if "$ref" in node:
        node = resolve_ref(str(node["$ref"]), schema)
    verdicts = node.get("properties", {}).get("verdicts")
    if not isinstance(verdicts, Mapping):
        return None
    if "$ref" in verdicts:
        verdicts = resolve_ref(str(verdicts["$ref"]), schema)
    if verdicts.get("type") != "array":
        return None
    items = verdicts.get("items", {})
    return items if isinstance(items, Mapping) else None
