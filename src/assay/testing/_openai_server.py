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

import contextlib
import json
import random
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final

__all__ = ["FAULTS", "FakeOpenAIServer", "Responder", "minimal_instance"]

Responder = Callable[[dict[str, Any]], str]
"""Turns a chat-completions request body into the assistant message's content."""

FAULTS: Final[tuple[str, ...]] = (
    "429",
    "500",
    "503",
    "timeout",
    "reset",
    "malformed",
    "refusal",
    "truncated",
    "wrong_count",
)
"""The fault names :class:`FakeOpenAIServer` understands."""

MALFORMED_TEXT: Final = "I think the answer is yes"
REFUSAL_TEXT: Final = "I'm sorry, but I can't help with that request."

_STRING_FORMATS: Final[Mapping[str, str]] = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "email": "judge@example.com",
    "uri": "https://example.com/",
}


def minimal_instance(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """A small JSON value valid against ``schema``, as pydantic emits schemas.

    Handles ``object``, ``array``, ``string``, ``integer``, ``number``, ``boolean``,
    ``null``, ``enum`` (first value), ``const``, ``$ref`` into ``$defs``, ``anyOf`` /
    ``oneOf`` (first non-null branch) and ``allOf`` (first branch). Objects get every
    property (its ``default`` when it has one); arrays get ``max(minItems, 1)`` items
    (capped by ``maxItems``); strings honour ``minLength`` and common formats.

    Args:
        schema: The (sub)schema to satisfy.
        root: The schema holding ``$defs``; defaults to ``schema`` itself.

    Returns:
        A JSON-serializable value.

    Raises:
        ValueError: A ``$ref`` points outside the root document.
    """
    root = schema if root is None else root
    if "$ref" in schema:
        return minimal_instance(_resolve_ref(str(schema["$ref"]), root), root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return next(iter(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            branches: list[Mapping[str, Any]] = list(schema[key])
            non_null = [b for b in branches if b.get("type") != "null"]
            return minimal_instance((non_null or branches)[0], root)
    if "allOf" in schema:
        return minimal_instance(next(iter(schema["allOf"])), root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or ["null"]
        kind = kinds[0]
    if kind == "object" or (kind is None and "properties" in schema):
        properties: Mapping[str, Mapping[str, Any]] = schema.get("properties", {})
        return {
            name: sub["default"] if "default" in sub else minimal_instance(sub, root)
            for name, sub in properties.items()
        }
    if kind == "array":
        count = max(int(schema.get("minItems", 0)), 1)
        if "maxItems" in schema:
            count = min(count, int(schema["maxItems"]))
        items: Mapping[str, Any] = schema.get("items", {})
        return [minimal_instance(items, root) for _ in range(count)]
    if kind == "string":
        if schema.get("format") in _STRING_FORMATS:
            return _STRING_FORMATS[str(schema["format"])]
        return "x" * max(int(schema.get("minLength", 0)), 1)
    if kind in ("integer", "number"):
        return _minimal_number(schema, integer=kind == "integer")
    if kind == "boolean":
        return False
    return None


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any]:
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref values are supported, got {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    if not isinstance(node, Mapping):
        raise ValueError(f"$ref {ref!r} does not point at a schema")
    return node


def _minimal_number(schema: Mapping[str, Any], *, integer: bool) -> int | float:
    step = 1.0 if integer else 0.5
    value = 0.0
    if "minimum" in schema:
        value = max(value, float(schema["minimum"]))
    if "exclusiveMinimum" in schema and value <= float(schema["exclusiveMinimum"]):
        value = float(schema["exclusiveMinimum"]) + step
    if "maximum" in schema:
        value = min(value, float(schema["maximum"]))
    if "exclusiveMaximum" in schema and value >= float(schema["exclusiveMaximum"]):
        value = float(schema["exclusiveMaximum"]) - step
    return int(value) if integer else value


def _request_schema(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    response_format = body.get("response_format")
    if not isinstance(response_format, Mapping):
        return None
    if response_format.get("type") != "json_schema":
        return None
    spec = response_format.get("json_schema")
    if not isinstance(spec, Mapping):
        return None
    schema = spec.get("schema")
    return schema if isinstance(schema, Mapping) else None


def default_responder(body: dict[str, Any]) -> str:
    """A minimal valid instance of the requested JSON schema, ``{}`` for JSON mode, else OK."""
    schema = _request_schema(body)
    if schema is not None:
        return json.dumps(minimal_instance(schema))
    response_format = body.get("response_format")
    if isinstance(response_format, Mapping) and response_format.get("type") == "json_object":
        return "{}"
    return "OK"


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


class _Server(ThreadingHTTPServer):
    # Handler threads are daemons so a stuck responder cannot hang interpreter exit;
    # FakeOpenAIServer tracks and joins them itself.
    daemon_threads = True
    # The default listen backlog (5) drops connections under concurrent load, which looks
    # like a client-side connect timeout: not a fault anyone asked for.
    request_queue_size = 1024
    owner: FakeOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (timeout, reset) is routine here, not worth a traceback.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeOpenAI/1.0"
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

    def do_POST(self) -> None:
        """Serve ``POST /v1/chat/completions``."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_error(404, f"Unknown path {self.path}", "invalid_request_error")
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_error(400, "The request body is not valid JSON.", "invalid_request_error")
            return
        if not isinstance(body, dict):
            self._send_error(400, "The request body must be a JSON object.", "invalid_request_error")
            return
        self.server.owner._answer(self, body)

    # -- helpers used by FakeOpenAIServer._answer ---------------------------------------

    def _authorized(self) -> bool:
        expected = self.server.owner.require_api_key
        if expected is None:
            return True
        header = self.headers.get("Authorization") or ""
        provided = header.removeprefix("Bearer ").strip()
        if provided == expected:
            return True
        # Like the real API, echo the key that was sent: clients must not leak it onwards.
        self._send_error(
            401,
            f"Incorrect API key provided: {provided}.",
            "invalid_request_error",
            "invalid_api_key",
        )
        return False

    def _send_json(self, status: int, payload: object, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

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

    def _reset(self) -> None:
        # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.wfile.flush()
        self.connection.close()


class FakeOpenAIServer:
    """An OpenAI-compatible chat-completions server on ``127.0.0.1`` for tests.

    Use it as a context manager (or call :meth:`start` and :meth:`close`). Each request's
    JSON body is kept in :attr:`requests`; each injected fault is counted in
    :attr:`fault_counts`.

    Args:
        responder: Request body -> assistant message content. The default answers a
            minimal valid instance of the ``response_format`` JSON schema, ``{}`` in JSON
            mode, and ``OK`` otherwise.
        latency_s: Seconds to wait before answering every request.
        faults: Fault name -> probability (their sum at most 1). One draw per request
            picks at most one fault. Names: ``429`` (with ``Retry-After: 0.05``),
            ``500``, ``503``, ``timeout`` (sleep ``timeout_sleep_s`` first), ``reset``
            (drop the connection with no response), ``malformed`` (200, not JSON),
            ``refusal`` (200, ``message.refusal`` set, ``content`` null), ``truncated``
            (200, content cut in half, ``finish_reason`` ``length``), ``wrong_count``
            (200, a ``verdicts`` list one item longer than the normal answer's, or
            malformed when the schema has no ``verdicts`` array).
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
    """

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
    ) -> None:
        self.responder: Responder = responder or default_responder
        self.latency_s = latency_s
        self.timeout_sleep_s = timeout_sleep_s
        self.rejects_json_schema = rejects_json_schema
        self.rejects_max_tokens = rejects_max_tokens
        self.require_api_key = require_api_key
        self.include_usage = include_usage
        self.model = model
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._faults: dict[str, float] = {}
        self.faults = dict(faults or {})
        self._requests: list[dict[str, Any]] = []
        self._fault_counts: dict[str, int] = dict.fromkeys(FAULTS, 0)
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
        unknown = sorted(set(value) - set(FAULTS))
        if unknown:
            raise ValueError(f"unknown fault(s) {unknown}; known faults: {list(FAULTS)}")
        if any(not 0.0 <= p <= 1.0 for p in value.values()):
            raise ValueError(f"fault probabilities must be in [0, 1], got {dict(value)}")
        if sum(value.values()) > 1.0 + 1e-9:
            raise ValueError(f"fault probabilities must sum to at most 1, got {dict(value)}")
        with self._lock:
            self._faults = dict(value)

    # -- observations -----------------------------------------------------------------

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat-completions requests received, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def calls(self) -> int:
        """How many chat-completions requests arrived."""
        with self._lock:
            return self._calls

    @property
    def fault_counts(self) -> dict[str, int]:
        """How often each fault was injected (every known fault is a key)."""
        with self._lock:
            return dict(self._fault_counts)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``; available once started."""
        if self._server is None:
            raise RuntimeError("FakeOpenAIServer is not running; use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        """Bind a free port on 127.0.0.1 and serve from a background thread."""
        if self._server is not None:
            raise RuntimeError("FakeOpenAIServer is already running")
        self._stop.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="FakeOpenAIServer",
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

    def __enter__(self) -> FakeOpenAIServer:
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
        with self._lock:
            self._requests.append(body)
            self._calls += 1
        if not handler._authorized():
            return
        if not self._wait(self.latency_s):
            handler._reset()
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
        if fault == "reset":
            handler._reset()
            return
        if fault == "timeout" and not self._wait(self.timeout_sleep_s):
            handler._reset()
            return

        finish_reason = "stop"
        refusal: str | None = None
        content: str | None
        try:
            content = self.responder(body)
        except Exception as exc:  # a broken responder is a test bug: make it visible
            handler._send_error(500, f"responder raised {type(exc).__name__}: {exc}", "responder_error")
            return
        if fault == "malformed":
            content = MALFORMED_TEXT
        elif fault == "refusal":
            content, refusal = None, REFUSAL_TEXT
        elif fault == "truncated":
            content = content[: len(content) // 2]
            finish_reason = "length"
        elif fault == "wrong_count":
            content = _one_verdict_too_many(content, _request_schema(body))

        payload: dict[str, Any] = {
            "id": f"chatcmpl-fake-{self.calls}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model", self.model)),
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "logprobs": None,
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
        node = _resolve_ref(str(node["$ref"]), schema)
    verdicts = node.get("properties", {}).get("verdicts")
    if not isinstance(verdicts, Mapping):
        return None
    if "$ref" in verdicts:
        verdicts = _resolve_ref(str(verdicts["$ref"]), schema)
    if verdicts.get("type") != "array":
        return None
    items = verdicts.get("items", {})
    return items if isinstance(items, Mapping) else None
