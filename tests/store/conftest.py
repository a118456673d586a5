"""A real ``redis-server`` on a free loopback port, and every store built on it and on SQLite."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reasoning_stream.store import ConversationStore, RedisStore, SQLiteStore


@dataclass
class RedisServer:
    """A running ``redis-server``: its URL, and a way to stop it early."""

    process: subprocess.Popen[bytes]
    port: int
    folder: Path

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextlib.contextmanager
def running_redis(
    folder: Path, *, durable: bool = False, port: int | None = None
) -> Iterator[RedisServer]:
    """Start ``redis-server`` on a free loopback port (or ``port``); stop it on exit.

    ``durable=True`` keeps an append-only file in ``folder``, fsynced on every write, so a
    server started again on the same folder has the data back.
    """
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    for _ in range(5):  # a free port can be taken between probing and binding: try another
        port = port or free_port()
        process = subprocess.Popen(
            [
                binary,
                "--port", str(port),
                "--bind", "127.0.0.1",
                "--dir", str(folder),
                "--save", "",
                "--appendonly", "yes" if durable else "no",
                "--appendfsync", "always",
                "--daemonize", "no",
                "--loglevel", "warning",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        server = RedisServer(process, port, folder)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and process.poll() is None:
            if _answers_ping(port):
                try:
                    yield server
                finally:
                    server.stop()
                return
            time.sleep(0.02)
        server.stop()
        port = None
    raise RuntimeError(f"redis-server ({binary}) did not start")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One ``redis-server`` for the whole session, in a temporary folder."""
    with tempfile.TemporaryDirectory() as folder, running_redis(Path(folder)) as server:
        yield server


StoreFactory = Callable[[], ConversationStore]


@pytest.fixture(params=["sqlite", "redis"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[StoreFactory]:
    """Open stores on one backend: each call is another client of the same data."""
    opened: list[ConversationStore] = []
    namespace = f"test-{uuid.uuid4().hex}"

    def make() -> ConversationStore:
        store: ConversationStore
        if store_kind == "sqlite":
            store = SQLiteStore(tmp_path / "conversations.db")
        else:
            server: RedisServer = request.getfixturevalue("redis_server")
            store = RedisStore(server.url, namespace=namespace)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> ConversationStore:
    """A fresh, empty store: SQLite in a temporary file, or a namespace of the Redis server."""
    return make_store()


def store_address(store: ConversationStore) -> tuple[str, str, str]:
    """What a worker process needs to open the same store: kind, path or URL, namespace."""
    if isinstance(store, SQLiteStore):
        return ("sqlite", store.path, "")
    assert isinstance(store, RedisStore)
    return ("redis", store.url, store.namespace)
