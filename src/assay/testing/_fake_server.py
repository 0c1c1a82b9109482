"""The machinery shared by the fake API servers in :mod:`assay.testing`.

:class:`FakeServer` owns what does not depend on the wire format: serving an
:class:`http.server.ThreadingHTTPServer` on ``127.0.0.1`` from a background thread,
tracking and joining handler threads, the context-manager protocol, the request log and
the seeded draw of at most one fault per request. :class:`FakeHandler` is the matching
request handler: connection tracking, no logging, JSON responses, connection resets and
the parsing of a ``POST`` body. Each concrete server adds its paths, error shapes and
answers.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import struct
import sys
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Generic, Self, TypeVar

__all__ = ["HTML_PAGE", "FakeHandler", "FakeServer", "Responder"]

HTML_PAGE = (
    b"<!DOCTYPE html>\n<html><head><title>Sign in - Example Proxy</title></head>"
    b"<body><form action='/login'><input name='user'></form></body></html>\n"
)
"""What the ``html`` fault answers with status 200: a proxy's login page."""

Responder = Callable[[dict[str, Any]], str]
"""Turns a request body into the assistant's answer text."""


class _HTTPServer(ThreadingHTTPServer):
    # Handler threads are daemons so a stuck responder cannot hang interpreter exit;
    # FakeServer tracks and joins them itself.
    daemon_threads = True
    # The default listen backlog (5) drops connections under concurrent load, which looks
    # like a client-side connect timeout: not a fault anyone asked for.
    request_queue_size = 1024
    owner: FakeServer[Any]

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (timeout, reset) is routine here, not worth a traceback.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class FakeHandler(BaseHTTPRequestHandler):
    """Request handler of a :class:`FakeServer`; subclasses set :attr:`post_path`."""

    protocol_version = "HTTP/1.1"
    timeout = 30  # a guard against a client that never sends anything
    disable_nagle_algorithm = True  # headers and body go out in two writes
    server: _HTTPServer

    post_path: ClassVar[str]
    """The one path ``POST`` requests are answered on (others get a 404)."""
    response_headers: ClassVar[Mapping[str, str]] = {}
    """Headers sent with every JSON response, after ``Content-Type`` and ``Content-Length``."""

    def setup(self) -> None:
        """Register the connection with the owning server so :meth:`FakeServer.close` can drop it."""
        super().setup()
        self.server.owner._track(self.connection, threading.current_thread())

    def finish(self) -> None:
        """Unregister the connection."""
        try:
            super().finish()
        finally:
            self.server.owner._untrack(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing: request lines are noise and headers carry credentials."""

    def do_POST(self) -> None:
        """Parse a JSON object body sent to :attr:`post_path` (any path with ``any_path``) and hand it on."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if len(raw) < length:  # the client went away while sending (a killed process): no request arrived
            self.close_connection = True
            return
        if self.path.rstrip("/") != self.post_path and not self.server.owner.any_path:
            self._send_request_error(404, f"Unknown path {self.path}")
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_request_error(400, "The request body is not valid JSON.")
            return
        if not isinstance(body, dict):
            self._send_request_error(400, "The request body must be a JSON object.")
            return
        self.server.owner._answer(self, body)

    # -- helpers used by the servers' _answer -------------------------------------------

    def _send_request_error(self, status: int, message: str) -> None:
        """Send the wire format's error for a request that cannot be served (bad path or body)."""
        raise NotImplementedError

    def _send_json(self, status: int, payload: object, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in [*self.response_headers.items(), *(headers or {}).items()]:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_raw(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _reset(self) -> None:
        # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.wfile.flush()
        self.connection.close()


HandlerT = TypeVar("HandlerT", bound=FakeHandler)


class FakeServer(Generic[HandlerT]):
    """A loopback server with fault injection; subclasses answer one wire format.

    Subclasses set :attr:`handler_class` and :attr:`known_faults` and implement
    :meth:`_answer`, which typically records the request, calls :meth:`_draw_fault` and
    answers through the handler.

    Args:
        responder: Request body -> the answer text.
        latency_s: Seconds to wait before answering every request.
        faults: Fault name -> probability (their sum at most 1), names from
            :attr:`known_faults`. One draw per request picks at most one fault.
        seed: Seed of the random generator that draws faults.
        timeout_sleep_s: How long a ``timeout`` fault stalls.
        require_api_key: When set, requests must carry this key.
        include_usage: Whether responses carry a ``usage`` object.
        model: The model name reported when a request names none.
        any_path: Answer a ``POST`` to any path in this server's format, as a server or
            proxy that ignores the path does: a client of the other API pointed here
            gets this API's reply, with status 200.
        port: The port to bind on ``127.0.0.1``; 0 picks a free one.
    """

    handler_class: type[HandlerT]
    """The request handler class that speaks this server's wire format."""
    known_faults: ClassVar[tuple[str, ...]]
    """The fault names this server understands."""

    def __init__(
        self,
        responder: Responder,
        *,
        latency_s: float,
        faults: Mapping[str, float] | None,
        seed: int,
        timeout_sleep_s: float,
        require_api_key: str | None,
        include_usage: bool,
        model: str,
        any_path: bool = False,
        port: int = 0,
    ) -> None:
        self.responder: Responder = responder
        self.port = port
        self.any_path = any_path
        self.latency_s = latency_s
        self.timeout_sleep_s = timeout_sleep_s
        self.require_api_key = require_api_key
        self.include_usage = include_usage
        self.model = model
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._faults: dict[str, float] = {}
        self.faults = dict(faults or {})
        self._requests: list[dict[str, Any]] = []
        self._fault_counts: dict[str, int] = dict.fromkeys(self.known_faults, 0)
        self._calls = 0
        self._stop = threading.Event()
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- configuration ----------------------------------------------------------------

    @property
    def faults(self) -> dict[str, float]:
        """Fault name -> probability. Assignable between requests."""
        with self._lock:
            return dict(self._faults)

    @faults.setter
    def faults(self, value: Mapping[str, float]) -> None:
        unknown = sorted(set(value) - set(self.known_faults))
        if unknown:
            raise ValueError(f"unknown fault(s) {unknown}; known faults: {list(self.known_faults)}")
        if any(not 0.0 <= p <= 1.0 for p in value.values()):
            raise ValueError(f"fault probabilities must be in [0, 1], got {dict(value)}")
        if sum(value.values()) > 1.0 + 1e-9:
            raise ValueError(f"fault probabilities must sum to at most 1, got {dict(value)}")
        with self._lock:
            self._faults = dict(value)

    # -- observations -----------------------------------------------------------------

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the API requests received, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def calls(self) -> int:
        """How many API requests arrived."""
        with self._lock:
            return self._calls

    @property
    def fault_counts(self) -> dict[str, int]:
        """How often each fault was injected (every known fault is a key)."""
        with self._lock:
            return dict(self._fault_counts)

    @property
    def _root_url(self) -> str:
        """``http://127.0.0.1:PORT``; available once started."""
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not running; use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> Self:
        """Bind :attr:`port` (0: a free one) on 127.0.0.1 and serve from a background thread.

        Raises:
            OSError: The port is taken (``errno.EADDRINUSE``) or cannot be bound.
        """
        if self._server is not None:
            raise RuntimeError(f"{type(self).__name__} is already running")
        self._stop.clear()
        server = _HTTPServer(("127.0.0.1", self.port), self.handler_class)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=type(self).__name__,
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

    def __enter__(self) -> Self:
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

    def _dropped(self, handler: HandlerT, fault: str | None) -> bool:
        """Apply a ``reset`` or ``timeout`` fault; True when the connection was dropped.

        ``reset`` drops the connection at once; ``timeout`` stalls ``timeout_sleep_s``
        first, and drops the connection only when the server closes meanwhile.
        """
        if fault == "reset" or (fault == "timeout" and not self._wait(self.timeout_sleep_s)):
            handler._reset()
            return True
        return False

    def _sent_odd_body(self, handler: HandlerT, fault: str | None) -> bool:
        """Apply an ``html`` or ``empty`` fault (a 200 that is no API reply); True when one was sent."""
        if fault == "html":
            handler._send_raw(200, HTML_PAGE, "text/html; charset=utf-8")
            return True
        if fault == "empty":
            handler._send_raw(200, b"", "application/json")
            return True
        return False

    def _answer(self, handler: HandlerT, body: dict[str, Any]) -> None:
        """Answer one parsed ``POST`` body through ``handler``."""
        raise NotImplementedError
