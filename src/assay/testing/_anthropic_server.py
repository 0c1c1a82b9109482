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

import contextlib
import json
import random
import socket
import struct
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final

from assay.testing._openai_server import MALFORMED_TEXT, REFUSAL_TEXT, Responder, minimal_instance

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


class _Server(ThreadingHTTPServer):
    # Handler threads are daemons so a stuck responder cannot hang interpreter exit;
    # FakeAnthropicServer tracks and joins them itself.
    daemon_threads = True
    # The default listen backlog (5) drops connections under concurrent load.
    request_queue_size = 1024
    owner: FakeAnthropicServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (timeout, reset) is routine here, not worth a traceback.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeAnthropic/1.0"
    timeout = 30  # a guard against a client that never sends anything
    disable_nagle_algorithm = True  # headers and body go out in two writes
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, threading.current_thread())

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._untrack(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing: request lines are noise and headers carry credentials."""

    def do_POST(self) -> None:
        """Serve ``POST /v1/messages``."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") != "/v1/messages":
            self._send_error(404, f"Unknown path {self.path}")
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_error(400, "The request body is not valid JSON.")
            return
        if not isinstance(body, dict):
            self._send_error(400, "The request body must be a JSON object.")
            return
        self.server.owner._answer(self, body)

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

    def _send_json(self, status: int, payload: object, headers: Mapping[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), headers)

    def _send_bytes(self, status: int, data: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_fake")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_error(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        kind = _ERROR_TYPES.get(status, "api_error")
        payload = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake"}
        self._send_json(status, payload, headers)

    def _reset(self) -> None:
        # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.wfile.flush()
        self.connection.close()


class FakeAnthropicServer:
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
            ``stop_reason`` ``max_tokens`` with the answer cut in half in a text block).
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
    """

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
    ) -> None:
        self.responder: Responder = responder or anthropic_default_responder
        self.latency_s = latency_s
        self.timeout_sleep_s = timeout_sleep_s
        self.require_api_key = require_api_key
        self.include_usage = include_usage
        self.reject_sampling_params = reject_sampling_params
        self.model = model
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._faults: dict[str, float] = {}
        self.faults = dict(faults or {})
        self._requests: list[dict[str, Any]] = []
        self._api_versions: list[str | None] = []
        self._fault_counts: dict[str, int] = dict.fromkeys(ANTHROPIC_FAULTS, 0)
        self._calls = 0
        self._stop = threading.Event()
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- configuration ----------------------------------------------------------------

    @property
    def faults(self) -> dict[str, float]:
        """Fault name -> probability. Assignable between requests."""
        with self._lock:
            return dict(self._faults)

    @faults.setter
    def faults(self, value: Mapping[str, float]) -> None:
        unknown = sorted(set(value) - set(ANTHROPIC_FAULTS))
        if unknown:
            raise ValueError(f"unknown fault(s) {unknown}; known faults: {list(ANTHROPIC_FAULTS)}")
        if any(not 0.0 <= p <= 1.0 for p in value.values()):
            raise ValueError(f"fault probabilities must be in [0, 1], got {dict(value)}")
        if sum(value.values()) > 1.0 + 1e-9:
            raise ValueError(f"fault probabilities must sum to at most 1, got {dict(value)}")
        with self._lock:
            self._faults = dict(value)

    # -- observations -----------------------------------------------------------------

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the Messages requests received, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def api_versions(self) -> list[str | None]:
        """The ``anthropic-version`` header of each request, in arrival order."""
        with self._lock:
            return list(self._api_versions)

    @property
    def calls(self) -> int:
        """How many Messages requests arrived."""
        with self._lock:
            return self._calls

    @property
    def fault_counts(self) -> dict[str, int]:
        """How often each fault was injected (every known fault is a key)."""
        with self._lock:
            return dict(self._fault_counts)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (the SDK appends ``/v1/messages``); available once started."""
        if self._server is None:
            raise RuntimeError("FakeAnthropicServer is not running; use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> FakeAnthropicServer:
        """Bind a free port on 127.0.0.1 and serve from a background thread."""
        if self._server is not None:
            raise RuntimeError("FakeAnthropicServer is already running")
        self._stop.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="FakeAnthropicServer",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, drop open connections and join every thread. Idempotent."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stop.set()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join()
        with self._lock:
            connections = dict(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        for handler_thread in connections.values():
            handler_thread.join(timeout=5.0)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeAnthropicServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- request handling (called from handler threads) --------------------------------

    def _track(self, connection: socket.socket, thread: threading.Thread) -> None:
        with self._lock:
            self._connections[connection] = thread

    def _untrack(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.pop(connection, None)

    def _draw_fault(self) -> str | None:
        with self._lock:
            if not self._faults:
                return None
            draw = self._rng.random()
            cumulative = 0.0
            for name, probability in self._faults.items():
                cumulative += probability
                if draw < cumulative:
                    self._fault_counts[name] += 1
                    return name
            return None

    def _wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; False when the server is closing."""
        if seconds <= 0:
            return not self._stop.is_set()
        return not self._stop.wait(seconds)

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
        if fault == "reset":
            handler._reset()
            return
        if fault == "timeout" and not self._wait(self.timeout_sleep_s):
            handler._reset()
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
