"""Headless Chromium (Debian's ``chromium``) driven over the DevTools protocol, for the tests."""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import ClientConnection, connect

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=900,900",
    "--remote-debugging-port=0",
]


class Browser:
    """One Chromium with a fresh profile, and its first page, closed on ``close()``."""

    def __init__(self) -> None:
        self._profile = tempfile.mkdtemp(prefix="chromium-test-")
        self._process = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._ids = itertools.count(1)
        self._stack = contextlib.ExitStack()
        try:
            port = self._devtools_port()
            targets = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=5).json()
            page = next(t for t in targets if t["type"] == "page")
            self._socket: ClientConnection = self._stack.enter_context(
                connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=10)
            )
        except BaseException:
            self.close()
            raise

    def _devtools_port(self) -> int:
        marker = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if marker.exists():
                lines = marker.read_text().split()
                if lines:
                    return int(lines[0])
            if self._process.poll() is not None:
                raise RuntimeError("chromium exited at start")
            time.sleep(0.05)
        raise RuntimeError("chromium did not open its DevTools port")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Call a DevTools method and return its result (events meanwhile are dropped)."""
        call_id = next(self._ids)
        self._socket.send(json.dumps({"id": call_id, "method": method, "params": params}))
        deadline = time.monotonic() + 30  # events keep arriving: each recv alone is not bound
        while time.monotonic() < deadline:
            message = json.loads(self._socket.recv(timeout=30))
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result
        raise TimeoutError(f"{method}: no answer from chromium within 30 s")

    def evaluate(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression} stayed falsy for {timeout} s")
            time.sleep(0.05)

    def open(self, url: str) -> None:
        self.send("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete'")

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        self._stack.close()
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(5)
        shutil.rmtree(self._profile, ignore_errors=True)
