"""A real ``redis-server`` on a free loopback port, in a temporary directory, for the tests."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """Start and stop one ``redis-server`` process (no persistence, loopback only)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._dir = tempfile.mkdtemp(prefix="redis-test-")
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        self._process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                self._dir,
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                pass
            if time.monotonic() > deadline or self._process.poll() is not None:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(10)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """One redis-server for the session; tests keep apart by unique stream ids."""
    if not shutil.which("redis-server") and not shutil.which(REDIS_SERVER):
        pytest.fail("redis-server is not installed: apt-get install -y redis-server")
    server = RedisServer().start()
    try:
        yield server.url
    finally:
        server.cleanup()


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A redis-server of this test's own, which the test may stop (Redis down mid-run)."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.cleanup()
