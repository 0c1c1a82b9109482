"""A tiny Chrome DevTools Protocol client for browser tests: headless Debian Chromium over loopback.

Uses ``websocket-client`` (a test-only dependency). The browser runs with a throw-away
profile and no network features; :class:`Chromium` is a context manager that closes the
socket, terminates the browser and removes the profile.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import websocket

CHROMIUM = Path("/usr/bin/chromium")


class CDPError(RuntimeError):
    """The browser answered a command with an error, or a script threw."""


class Chromium:
    """Headless Chromium driven over one page's DevTools websocket."""

    def __init__(self, executable: Path = CHROMIUM, *, width: int = 1400, height: int = 1000, timeout: float = 30):
        self.executable = executable
        self.width, self.height = width, height
        self.timeout = timeout
        self.profile = Path(tempfile.mkdtemp(prefix="assay-chromium-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.ws: websocket.WebSocket | None = None
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def __enter__(self) -> Chromium:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                str(self.executable),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-sync",
                "--hide-scrollbars",
                "--mute-audio",
                f"--user-data-dir={self.profile}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--window-size={self.width},{self.height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        port = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise CDPError(f"chromium exited with {self.proc.returncode} before DevTools started")
            if port_file.exists():
                lines = port_file.read_text().split()
                if lines:
                    port = int(lines[0])
                    break
            time.sleep(0.05)
        if port is None:
            raise CDPError("chromium did not start DevTools in time")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        url = None
        while time.monotonic() < deadline and url is None:
            with opener.open(f"http://127.0.0.1:{port}/json/list", timeout=5) as response:
                targets = json.loads(response.read())
            url = next((t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page"), None)
            if url is None:
                time.sleep(0.05)
        if url is None:
            raise CDPError("chromium has no page target")
        self.ws = websocket.create_connection(url, timeout=self.timeout, suppress_origin=True, http_no_proxy=["*"])
        self.send("Page.enable")
        self.send("Runtime.enable")

    def close(self) -> None:
        if self.ws is not None:
            try:
                self.ws.close()
            finally:
                self.ws = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
            self.proc = None
        shutil.rmtree(self.profile, ignore_errors=True)

    # ------------------------------------------------------------------ protocol

    def send(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        assert self.ws is not None, "browser not started"
        self._next_id += 1
        ident = self._next_id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": dict(params or {})}))
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise CDPError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append(message)
        raise CDPError(f"{method}: no answer in {self.timeout} s")

    def wait_event(self, method: str) -> dict[str, Any]:
        """Wait for (and consume) the first event named ``method``."""
        assert self.ws is not None, "browser not started"
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            for i, event in enumerate(self.events):
                if event["method"] == method:
                    del self.events[i]
                    params: dict[str, Any] = event.get("params", {})
                    return params
            message = json.loads(self.ws.recv())
            if "method" in message:
                self.events.append(message)
        raise CDPError(f"no {method} event in {self.timeout} s")

    # ------------------------------------------------------------------ helpers

    def navigate(self, url: str) -> None:
        """Open ``url`` and wait for its load event."""
        self.events.clear()
        result = self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise CDPError(f"navigate {url}: {result['errorText']}")
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (promises awaited); a thrown error raises."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise CDPError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 10.0) -> Any:
        """Poll ``expression`` until it is truthy; return its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise CDPError(f"{expression!r} still falsy after {timeout} s")
            time.sleep(0.02)

    def click(self, selector: str) -> None:
        """A real mouse click at the centre of the first element matching ``selector``."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()"
        )
        if box is None:
            raise CDPError(f"no element matches {selector!r}")
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": box["x"], "y": box["y"], "button": "left", "clickCount": 1},
            )

    def type_into(self, selector: str, text: str) -> None:
        """Focus ``selector``, clear it, and type ``text`` (fires ``input`` events)."""
        self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.focus(); e.select(); }})()"
        )
        self.send("Input.insertText", {"text": text})

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        """Save a PNG of the viewport (or the whole page) to ``path``."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path
