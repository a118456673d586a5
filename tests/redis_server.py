"""A real ``redis-server`` on a free loopback port, for the hub, web and store tests."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


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
                self.process.wait(timeout=10)


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
    for _ in range(5):  # a free port can be taken between probing and binding: try another
        port = port or free_port()
        process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port", str(port),
                "--bind", "127.0.0.1",
                "--dir", str(folder),
                "--save", "",
                "--appendonly", "yes" if durable else "no",
                "--appendfsync", "always",
                "--protected-mode", "yes",
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
    raise RuntimeError(f"redis-server ({REDIS_SERVER}) did not start")


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """One redis-server for the session; tests keep apart by unique stream ids or namespaces."""
    if not shutil.which("redis-server") and not shutil.which(REDIS_SERVER):
        pytest.fail("redis-server is not installed: apt-get install -y redis-server")
    with (
        tempfile.TemporaryDirectory(prefix="redis-test-") as folder,
        running_redis(Path(folder)) as server,
    ):
        yield server.url


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own, which the test may stop (Redis down mid-run)."""
    with running_redis(tmp_path) as server:
        yield server
