"""A fake Anthropic Messages API server on loopback, for tests.

Built on the standard library only, like :class:`~assay.testing.FakeOpenAIServer`: an
:class:`http.server.ThreadingHTTPServer` served from a background thread. It answers
``POST /v1/messages`` with Anthropic's shapes (content blocks, ``tool_use`` blocks when a
tool is forced, ``usage``, ``stop_reason``) and can inject the faults the real API
produces (rate limits, server errors, overload, timeouts, connection resets, malformed,
refused and truncated answers)::

    with FakeAnthropicServer(faults={"529": 0.1}, seed=0) as server:
        judge = AnthropicJudge("fake", base_url=server.base_url)
        ...
    assert server.fault_counts["529"] == ...

Request headers (``x-api-key`` and ``Authorization`` included) are never logged or stored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from assay.testing._fake_server import FakeHandler, FakeServer, Responder
from assay.testing._openai_server import MALFORMED_TEXT, REFUSAL_TEXT, minimal_instance

__all__ = ["ANTHROPIC_FAULTS", "FakeAnthropicServer", "anthropic_default_responder"]

ANTHROPIC_FAULTS: Final[tuple[str, ...]] = (
    "429",
    "500",
    "529",
    "timeout",
    "reset",
    "malformed",
    "refusal",
    "truncated",
    "html",
    "empty",
)
"""The fault names :class:`FakeAnthropicServer` understands."""

SAMPLING_PARAMS_REMOVED_IN: Final = "2026-10-21"
"""The API version from which ``temperature``, ``top_p`` and ``top_k`` are rejected."""

_ERROR_TYPES: Final[Mapping[int, str]] = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _forced_tool(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The tool the request forces with ``tool_choice``, or its only tool under ``any``."""
    tools = body.get("tools")
    choice = body.get("tool_choice")
    if not isinstance(tools, list) or not isinstance(choice, Mapping):
        return None
    named = [tool for tool in tools if isinstance(tool, Mapping)]
    if choice.get("type") == "tool":
        for tool in named:
            if tool.get("name") == choice.get("name"):
                return tool
        return None
    if choice.get("type") == "any" and named:
        return named[0]
    return None


def anthropic_default_responder(body: dict[str, Any]) -> str:
    """A minimal valid instance of the forced tool's ``input_schema`` as JSON, else ``OK``."""
    tool = _forced_tool(body)
    if tool is not None and isinstance(tool.get("input_schema"), Mapping):
        return json.dumps(minimal_instance(tool["input_schema"]))
    return "OK"


def _text_chars(body: Mapping[str, Any]) -> int:
    total = 0
    system = body.get("system")
    if isinstance(system, str):
        total += len(system)
    elif isinstance(system, list):
        total += sum(len(b["text"]) for b in system if isinstance(b, Mapping) and isinstance(b.get("text"), str))
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(b["text"]) for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str))
    return total


class _Handler(FakeHandler):
    server_version = "FakeAnthropic/1.0"
    post_path = "/v1/messages"
    response_headers: ClassVar[Mapping[str, str]] = {"request-id": "req_fake"}

    # -- helpers used by FakeAnthropicServer._answer ------------------------------------

    def _authorized(self) -> bool:
        expected = self.server.owner.require_api_key
        if expected is None:
            return True
        # The SDK sends ``x-api-key`` (1.x) or ``Authorization: Bearer`` (2.x).
        provided = (self.headers.get("x-api-key") or "").strip()
        if not provided:
            provided = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        if provided == expected:
            return True
        # Echo the key that was sent, as a careless proxy might: clients must not leak it onwards.
        self._send_error(401, f"invalid x-api-key: {provided}")
        return False

    def _send_request_error(self, status: int, message: str) -> None:
        self._send_error(status, message)

    def _send_error(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        kind = _ERROR_TYPES.get(status, "api_error")
        payload = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake"}
        self._send_json(status, payload, headers)


class FakeAnthropicServer(FakeServer[_Handler]):
    """An Anthropic Messages API server on ``127.0.0.1`` for tests.

    Use it as a context manager (or call :meth:`start` and :meth:`close`). Each request's
    JSON body is kept in :attr:`requests` and its ``anthropic-version`` header in
    :attr:`api_versions`; each injected fault is counted in :attr:`fault_counts`.

    Args:
        responder: Request body -> the answer text. When the request forces a tool and the
            text is a JSON object, it becomes the ``tool_use`` block's ``input``; otherwise
            it is sent as a text block. The default answers a minimal valid instance of
            the forced tool's ``input_schema``, and ``OK`` without a tool.
        latency_s: Seconds to wait before answering every request.
        faults: Fault name -> probability (their sum at most 1). One draw per request
            picks at most one fault. Names: ``429`` (with ``retry-after: 0.05``), ``500``,
            ``529`` (``overloaded_error``), ``timeout`` (sleep ``timeout_sleep_s``
            first), ``reset`` (drop the connection with no response), ``malformed`` (200,
            a text block that is not JSON instead of the tool call), ``refusal`` (200,
            ``stop_reason`` ``refusal`` with a refusal text block), ``truncated`` (200,
            ``stop_reason`` ``max_tokens`` with the answer cut in half in a text block),
            ``html`` (200, a proxy's login page as ``text/html``), ``empty`` (200, an
            empty body).
        seed: Seed of the random generator that draws faults.
        timeout_sleep_s: How long a ``timeout`` fault stalls; longer than the client's
            timeout.
        require_api_key: When set, requests must carry this key (``x-api-key`` or a
            bearer token); others get a 401 whose message echoes the key sent.
        include_usage: Whether responses carry a ``usage`` object.
        reject_sampling_params: Answer 400 to ``temperature``, ``top_p`` or ``top_k``
            when the request's ``anthropic-version`` is ``2026-10-21`` or later, as the
            real API does.
        model: The model reported when a request names none.
        any_path: Answer Messages requests at any ``POST`` path
            (``/v1/chat/completions`` too), as a server that ignores the path does: an
            OpenAI client pointed here gets a Messages reply with status 200.
    """

    handler_class = _Handler
    known_faults = ANTHROPIC_FAULTS

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency_s: float = 0.0,
        faults: Mapping[str, float] | None = None,
        seed: int = 0,
        timeout_sleep_s: float = 5.0,
        require_api_key: str | None = None,
        include_usage: bool = True,
        reject_sampling_params: bool = True,
        model: str = "fake-judge",
        any_path: bool = False,
    ) -> None:
        super().__init__(
            responder or anthropic_default_responder,
            latency_s=latency_s,
            faults=faults,
            seed=seed,
            timeout_sleep_s=timeout_sleep_s,
            require_api_key=require_api_key,
            include_usage=include_usage,
            model=model,
            any_path=any_path,
        )
        self.reject_sampling_params = reject_sampling_params
        self._api_versions: list[str | None] = []

    @property
    def api_versions(self) -> list[str | None]:
        """The ``anthropic-version`` header of each request, in arrival order."""
        with self._lock:
            return list(self._api_versions)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (the SDK appends ``/v1/messages``); available once started."""
        return self._root_url

    def _answer(self, handler: _Handler, body: dict[str, Any]) -> None:
        version = handler.headers.get("anthropic-version")
        with self._lock:
            self._requests.append(body)
            self._api_versions.append(version)
            self._calls += 1
        if not handler._authorized():
            return
        if not self._wait(self.latency_s):
            handler._reset()
            return
        if self.reject_sampling_params and (version or "") >= SAMPLING_PARAMS_REMOVED_IN:
            for name in ("temperature", "top_p", "top_k"):
                if name in body:
                    handler._send_error(400, f"{name}: Extra inputs are not permitted")
                    return
        if not isinstance(body.get("max_tokens"), int):
            handler._send_error(400, "max_tokens: Field required")
            return

        fault = self._draw_fault()
        if fault == "429":
            handler._send_error(
                429,
                "Number of request tokens has exceeded your per-minute rate limit.",
                headers={"retry-after": "0.05"},
            )
            return
        if fault == "500":
            handler._send_error(500, "Internal server error")
            return
        if fault == "529":
            handler._send_error(529, "Overloaded")
            return
        if self._dropped(handler, fault) or self._sent_odd_body(handler, fault):
            return

        try:
            text = self.responder(body)
        except Exception as exc:  # a broken responder is a test bug: make it visible
            handler._send_error(500, f"responder raised {type(exc).__name__}: {exc}")
            return
        tool = _forced_tool(body)
        stop_reason = "end_turn"
        content: list[dict[str, Any]]
        if fault == "malformed":
            content = [{"type": "text", "text": MALFORMED_TEXT}]
        elif fault == "refusal":
            content, stop_reason = [{"type": "text", "text": REFUSAL_TEXT}], "refusal"
        elif fault == "truncated":
            content, stop_reason = [{"type": "text", "text": text[: len(text) // 2]}], "max_tokens"
        else:
            content = [{"type": "text", "text": text}]
            if tool is not None:
                tool_input = _json_object(text)
                if tool_input is not None:
                    content = [
                        {
                            "type": "tool_use",
                            "id": f"toolu_fake_{self.calls}",
                            "name": tool["name"],
                            "input": tool_input,
                        }
                    ]
                    stop_reason = "tool_use"

        payload: dict[str, Any] = {
            "id": f"msg_fake_{self.calls}",
            "type": "message",
            "role": "assistant",
            "model": str(body.get("model") or self.model),
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
        }
        if self.include_usage:
            produced = sum(len(json.dumps(b["input"]) if b["type"] == "tool_use" else b["text"]) for b in content)
            payload["usage"] = {"input_tokens": _text_chars(body) // 4 + 1, "output_tokens": produced // 4 + 1}
        handler._send_json(200, payload)


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
