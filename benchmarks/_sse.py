"""Many SSE readers over several uvicorn workers sharing one RedisHub (``benchmarks.hub``).

The parts that run in other processes: the app each uvicorn worker serves (``app``, built from
``REASONING_STREAM_BENCH_REDIS``), and a reader process that holds many SSE responses open on
plain asyncio sockets (``read``), recording each chunk and when it arrived. ``fan_out_sse``
drives them: it starts the workers and the reader processes, publishes the streams, and
measures what each worker's memory grew by per reader.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

__all__ = ["app", "fan_out_sse", "read"]

CLIENT_PROCESSES = 2


def app() -> Any:
    """The ASGI app of one worker (``uvicorn benchmarks._sse:app --factory``)."""
    from reasoning_stream.hub import RedisHub
    from reasoning_stream.web import create_app

    return create_app(RedisHub(os.environ["REASONING_STREAM_BENCH_REDIS"]), timeout=300)


async def _follow(port: int, stream_id: str, results: list[dict[str, Any]]) -> None:
    """One SSE response read to its end: HTTP/1.1 chunked framing, then SSE events."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"GET /streams/{stream_id}?protocol=channel HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    chunks: list[str] = []
    arrivals: list[float] = []
    status = (await reader.readline()).split(b" ")[1].decode()
    while await reader.readline() not in (b"\r\n", b""):
        pass  # the headers
    pending = b""
    done = status != "200"
    while not done:
        size = int((await reader.readline()).strip() or b"0", 16)
        if size == 0:
            break
        pending += (await reader.readexactly(size + 2))[:-2]
        *events, pending = pending.split(b"\n\n")
        now = time.time()
        for event in events:
            for line in event.split(b"\n"):
                if line.startswith(b"event: end"):
                    done = True
                elif line.startswith(b"data: "):
                    chunk = json.loads(line[6:]).get("chunk", "")
                    if chunk:
                        chunks.append(chunk)
                        arrivals.append(now)
    writer.close()
    results.append(
        {"stream_id": stream_id, "status": status, "chunks": chunks, "arrivals": arrivals}
    )


async def _read_all(ports: list[int], stream_ids: list[str], out: str) -> None:
    results: list[dict[str, Any]] = []
    tasks = [
        asyncio.create_task(_follow(ports[n % len(ports)], stream_id, results))
        for n, stream_id in enumerate(stream_ids)
    ]
    await asyncio.sleep(0.5)
    print("ready", flush=True)
    await asyncio.gather(*tasks, return_exceptions=True)
    with open(out, "w") as file:
        json.dump(results, file)


def read(argv: list[str]) -> None:
    """A reader process: ``--sse-reader PORTS OUT STREAM_ID...`` (ports comma-separated)."""
    ports, out, *stream_ids = argv
    asyncio.run(_read_all([int(p) for p in ports.split(",")], stream_ids, out))


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _wait_for_port(port: int, deadline: float) -> None:
    import socket

    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"no uvicorn worker answered on port {port}")


def fan_out_sse(
    redis_url: str, *, streams: int, readers_per_stream: int, workers: int, publish: Any
) -> dict[str, Any]:
    """``streams`` published by this process, each read by ``readers_per_stream`` SSE
    clients spread over ``workers`` uvicorn processes; ``publish(stream_ids)`` runs them and
    returns what each run's callback saw and when (as ``benchmarks.hub.publish``)."""
    import uuid

    from tests.redis_server import free_port

    stream_ids = [f"sse-{uuid.uuid4().hex}" for _ in range(streams)]
    ports = [free_port() for _ in range(workers)]
    environment = {**os.environ, "REASONING_STREAM_BENCH_REDIS": redis_url}
    servers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "benchmarks._sse:app",
                "--factory",
                "--port",
                str(port),
                "--log-level",
                "warning",
                "--no-access-log",
                "--backlog",
                "4096",
            ],
            env=environment,
        )
        for port in ports
    ]
    workdir = tempfile.mkdtemp(prefix="hub-sse-")
    clients = []
    try:
        deadline = time.monotonic() + 60
        for port in ports:
            _wait_for_port(port, deadline)
        time.sleep(1.0)
        idle = [_rss_kb(server.pid) for server in servers]
        subscriptions = [sid for sid in stream_ids for _ in range(readers_per_stream)]
        for i in range(CLIENT_PROCESSES):
            out = os.path.join(workdir, f"readers-{i}.json")
            share = subscriptions[i::CLIENT_PROCESSES]
            process = subprocess.Popen(
                [sys.executable, "-m", "benchmarks.hub", "--sse-reader",
                 ",".join(map(str, ports)), out, *share],
                stdout=subprocess.PIPE, text=True,
            )  # fmt: skip
            clients.append((process, out))
        for process, _ in clients:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
        time.sleep(3.0)  # every response is waiting on its stream
        waiting = [_rss_kb(server.pid) for server in servers]
        started = time.monotonic()
        published = publish(stream_ids)
        elapsed = time.monotonic() - started
        peak = [_rss_kb(server.pid) for server in servers]
        readers: list[dict[str, Any]] = []
        for process, out in clients:
            process.wait(600)
            with open(out) as file:
                readers += json.load(file)
    finally:
        for process, _ in clients:
            if process.poll() is None:
                process.kill()
        for server in servers:
            server.terminate()
        for server in servers:
            server.wait(30)
    total = streams * readers_per_stream
    return {
        "published": published,
        "stream_ids": stream_ids,
        "readers": readers,
        "not_200": sum(1 for reader in readers if reader["status"] != "200"),
        "answered": len(readers),
        "expected": total,
        "rss_per_reader_kb": (
            sum(max(w, p) for w, p in zip(waiting, peak, strict=True)) - sum(idle)
        )
        / total,
        "publish_seconds": elapsed,
    }
