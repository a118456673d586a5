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


def _answers_ping(port: int, pid: int | None = None) -> bool:
    """Whether a Redis answers on ``port``; with ``pid``, whether it is that process (another
    worker's server may have taken the port between probing it and our server binding it)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as connection:
            if pid is None:
                connection.sendall(b"PING\r\n")
                return connection.recv(16).startswith(b"+PONG")
            connection.sendall(b"INFO server\r\n")
            reply = b""
            while b"process_id:" not in reply or not reply.endswith(b"\r\n"):
                data = connection.recv(65536)
                if not data:
                    return False
                reply += data
            return f"process_id:{pid}\r\n".encode() in reply
    except OSError:
        return False


@contextlib.contextmanager
def running_redis(
    folder: Path, *, durable: bool = False, port: int | None = None, cluster: bool = False
) -> Iterator[RedisServer]:
    """Start ``redis-server`` on a free loopback port (or ``port``); stop it on exit.

    ``durable=True`` keeps an append-only file in ``folder``, fsynced on every write, so a
    server started again on the same folder has the data back. ``cluster=True`` starts it as
    a Redis Cluster node (see :func:`running_cluster`).
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
                # The cluster bus gets a free port of its own (by default it is port +
                # 10000, which may be taken or past 65535).
                *(("--cluster-enabled", "yes", "--cluster-config-file",
                   str(folder / "nodes.conf"), "--cluster-node-timeout", "5000",
                   "--cluster-port", str(free_port()))
                  if cluster else ()),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        server = RedisServer(process, port, folder)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and process.poll() is None:
            if _answers_ping(port, process.pid):
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


REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"


@dataclass
class RedisCluster:
    """A running Redis Cluster of three masters on loopback: its URL (any one node's)."""

    servers: list[RedisServer]

    @property
    def url(self) -> str:
        return self.servers[0].url.removesuffix("/0")


def _cluster_ok(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as connection:
            connection.sendall(b"CLUSTER INFO\r\n")
            reply = b""
            while b"cluster_known_nodes" not in reply:
                piece = connection.recv(4096)
                if not piece:
                    break
                reply += piece
            return b"cluster_state:ok" in reply
    except OSError:
        return False


@contextlib.contextmanager
def running_cluster(folder: Path) -> Iterator[RedisCluster]:
    """Three ``redis-server --cluster-enabled yes`` on free loopback ports, joined by
    ``redis-cli --cluster create`` (no replicas); stopped on exit."""
    with contextlib.ExitStack() as stack:
        servers = []
        for n in range(3):
            node = folder / f"node{n}"
            node.mkdir()
            servers.append(stack.enter_context(running_redis(node, cluster=True)))
        subprocess.run(
            [REDIS_CLI, "--cluster", "create",
             *(f"127.0.0.1:{server.port}" for server in servers),
             "--cluster-replicas", "0", "--cluster-yes"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not all(_cluster_ok(server.port) for server in servers):
            if time.monotonic() > deadline:
                raise RuntimeError("the Redis Cluster did not reach cluster_state:ok")
            time.sleep(0.1)
        yield RedisCluster(servers)


@pytest.fixture(scope="session")
def redis_cluster_url() -> Iterator[str]:
    """One three-master Redis Cluster for the session; tests keep apart by unique ids."""
    with (
        tempfile.TemporaryDirectory(prefix="redis-cluster-") as folder,
        running_cluster(Path(folder)) as cluster,
    ):
        yield cluster.url
