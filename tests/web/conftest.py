"""Web tests run the app under a real uvicorn on a loopback port, and read it over HTTP."""

from __future__ import annotations

import contextlib
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reasoning_stream.hub import Hub, MemoryHub, RedisHub
from tests.redis_server import redis_server, redis_url
from tests.web.npm import install

__all__ = ["hub", "js", "node_reader", "redis_server", "redis_url", "serve"]

JS_DIR = Path(__file__).parent / "js"


@pytest.fixture(params=["memory", "redis"])
def hub(request: pytest.FixtureRequest) -> Iterator[Hub]:
    """The app's hub, in memory and on a real Redis (a module may define its own)."""
    if request.param == "memory":
        yield MemoryHub()
        return
    with RedisHub(request.getfixturevalue("redis_url")) as redis_hub:
        yield redis_hub


@contextlib.contextmanager
def serve(app: Any) -> Iterator[str]:
    """Run ``app`` under uvicorn in a thread; yield its base URL; stop it after.

    The listening socket is bound here and handed to uvicorn: a port probed free and let go
    could be taken by another worker's server before uvicorn bound it."""
    import uvicorn

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = int(listener.getsockname()[1])
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    with listener:
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(10)


@pytest.fixture(scope="session")
def js() -> Path:
    """tests/web/js with its npm packages (the ``ai`` package and ``@ag-ui/client``) installed,
    once for all the workers (tests/web/npm.py)."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("node and npm are needed to check the web protocols with their own clients")
    return install(JS_DIR, npm)


@pytest.fixture(scope="session")
def node_reader(js: Path) -> Path:
    """The AI SDK's own reader script, with its npm dependencies installed."""
    return js / "read_ui_message_stream.mjs"
