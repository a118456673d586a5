"""The hub under load: ``python -m benchmarks.hub`` (needs ``redis-server`` on the PATH).

1. CPU per chunk of a publishing run (``hub.run``) against the same run with one plain
   streaming callback, for MemoryHub and RedisHub (the Redis figure includes the writer
   thread: ``time.process_time`` counts every thread of the process), as the median and
   spread of interleaved rounds (``--rounds N``, default 9; ``--cpu-only`` skips part 2).
2. 100 concurrent streams over Redis, each followed by 3 readers living in 2 other
   processes: bytes lost or repeated, cross-talk, and the latency each chunk gains from the
   publishing callback to a reader (p50, p99). MemoryHub's latency is measured in-process.
3. SSE readers of the web app over several uvicorn workers sharing one RedisHub
   (``--sse-readers N``, default 2,000, over ``--workers`` 3): the same figures, plus what each
   worker's memory grew by per reader (``--sse-only`` runs this part alone).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

import anyio

from reasoning_stream import ReasoningDelta, TextDelta
from reasoning_stream.hub import Hub, MemoryHub, RedisHub
from reasoning_stream.testing import ScriptedPipe

from ._rounds import cpu_seconds, median, spread

CPU_EVENTS = 20_000
STREAMS = 100
READERS_PER_STREAM = 3
READER_PROCESSES = 2
CHUNKS_PER_STREAM = 100
CHUNK_INTERVAL = 0.01


def cpu_script() -> list[Any]:
    half = CPU_EVENTS // 2
    return [ReasoningDelta(f"r{i % 10} ") for i in range(half)] + [
        TextDelta(f"t{i % 10} ") for i in range(CPU_EVENTS - half)
    ]


def cpu_rows(
    label: str, make_pipe: Any, units: int, redis_url: str, rounds: int
) -> dict[str, list[float]]:
    """CPU per chunk of a run with one plain callback, and of the same run through each hub.

    Interleaved rounds: each round times every contender once (the best of two runs) back to
    back, and the ratios are taken within the round. One more row: the plain callback plus a
    plain event callback (``list.append`` both), the pipe's own cost of a second subscriber,
    which a hub pays before storing anything.
    """
    sink: list[str] = []
    events: list[object] = []

    def plain() -> None:
        sink.clear()
        make_pipe().set_streaming_callback(sink.append).run(PROMPT)

    def with_events() -> None:
        sink.clear()
        events.clear()
        make_pipe().set_streaming_callback(sink.append).set_event_callback(events.append).run(
            PROMPT
        )

    memory = MemoryHub(ttl=0)
    redis_hub = RedisHub(redis_url, ttl=5)

    def published(hub: Hub) -> None:
        hub.run(uuid.uuid4().hex, make_pipe(), PROMPT)

    contenders = {
        "plain callback + event callback": with_events,
        "MemoryHub.run": lambda: published(memory),
        "RedisHub.run": lambda: published(redis_hub),
    }
    floors: list[float] = []
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    ratios: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        floor = cpu_seconds(plain, repeat=2)
        floors.append(floor)
        for name, work in contenders.items():
            spent = cpu_seconds(work, repeat=2)
            seconds[name].append(spent)
            ratios[name].append(spent / floor)
    redis_hub.close()
    per_chunk = median(floors) / units * 1e6
    print(f"| {label}: `pipe.run`, one plain callback | {per_chunk:.2f} us | 1.00x |")
    for name in contenders:
        cost = median(seconds[name]) / units * 1e6
        print(f"| {label}: {name} | {cost:.2f} us | {spread(ratios[name])}x |")
    return ratios


PROMPT = "p"


def cpu_table(redis_url: str, rounds: int) -> None:
    from reasoning_stream.providers import OpenAIChatPipe

    from .bench_providers import MODEL, loopback, route

    items = cpu_script()
    print(
        f"CPU per channel chunk of the publishing run, median [spread] of {rounds} interleaved "
        "rounds (the Redis rows include the writer thread)"
    )
    print("| run | CPU/chunk | ratio to a plain callback |")
    print("|---|---|---|")
    cpu_rows(
        "ScriptedPipe (no provider)", lambda: ScriptedPipe(items), CPU_EVENTS, redis_url, rounds
    )
    import httpx

    chunks = 20_000
    with loopback([chunks]) as base, httpx.Client() as http:
        url = base + route("A", chunks)

        def provider_pipe() -> OpenAIChatPipe:
            return OpenAIChatPipe(
                MODEL, transport="httpx", base_url=url, api_key="k", http_client=http
            )

        cpu_rows("OpenAIChatPipe httpx, loopback SSE", provider_pipe, chunks, redis_url, rounds)
    print()


# ------------------------------------------------------------------------ fan-out over Redis


def stream_script(n: int, interval: float = CHUNK_INTERVAL, locked: bool = False) -> list[Any]:
    """Stream ``n``: 100 chunks, one every ``interval`` seconds.

    Streams of different users are not in step: each starts at its own phase within the
    first interval (fixed per ``n``, so runs compare). ``locked``: every stream emits in the
    same tick, the worst case for a writer and its readers (a burst of 100 chunks at once).
    """
    items: list[Any] = [] if locked else [interval * ((n * 0.618034) % 1.0)]
    for k in range(CHUNKS_PER_STREAM):
        items.append(interval)
        event = ReasoningDelta if k < CHUNKS_PER_STREAM // 2 else TextDelta
        items.append(event(f"[s{n}:{k}]"))
    return items


async def read_streams(redis_url: str, stream_ids: list[str], out: str) -> None:
    """A reader process: one subscriber per id; record chunks and their arrival times."""
    hub = RedisHub(redis_url)
    results: list[dict[str, Any]] = []

    async def reader(stream_id: str) -> None:
        chunks: list[str] = []
        arrivals: list[float] = []
        async for entry in hub.subscribe(stream_id, timeout=60):
            if entry.chunk:
                chunks.append(entry.chunk)
                arrivals.append(time.time())
        results.append({"stream_id": stream_id, "chunks": chunks, "arrivals": arrivals})

    async with anyio.create_task_group() as group:
        for stream_id in stream_ids:
            group.start_soon(reader, stream_id)
        print("ready", flush=True)
    with open(out, "w") as file:
        json.dump(results, file)
    hub.close()


async def publish(
    hub: Hub, stream_ids: list[str], interval: float = CHUNK_INTERVAL, locked: bool = False
) -> dict[str, tuple[list[str], list[float]]]:
    published: dict[str, tuple[list[str], list[float]]] = {}

    async def one(n: int, stream_id: str) -> None:
        chunks: list[str] = []
        times: list[float] = []

        def record(chunk: str) -> None:
            chunks.append(chunk)
            times.append(time.time())

        pipe = ScriptedPipe(stream_script(n, interval, locked)).set_streaming_callback(record)
        await hub.arun(stream_id, pipe, "go")
        published[stream_id] = (chunks, times)

    async with anyio.create_task_group() as group:
        for n, stream_id in enumerate(stream_ids):
            group.start_soon(one, n, stream_id)
    return published


def check(
    stream_ids: list[str],
    published: dict[str, tuple[list[str], list[float]]],
    readers: list[dict[str, Any]],
) -> dict[str, Any]:
    order = {stream_id: n for n, stream_id in enumerate(stream_ids)}
    lost_or_repeated = 0
    cross_talk = 0
    latencies: list[float] = []
    for reader in readers:
        stream_id = reader["stream_id"]
        chunks, times = published[stream_id]
        expected, got = "".join(chunks), "".join(reader["chunks"])
        if got != expected:
            lost_or_repeated += abs(len(expected) - len(got)) or 1
        own = f"[s{order[stream_id]}:"
        cross_talk += sum(
            1 for c in reader["chunks"] if c.startswith("[s") and not c.startswith(own)
        )
        if reader["chunks"] == chunks:
            latencies += [a - p for a, p in zip(reader["arrivals"], times, strict=True)]
    latencies.sort()
    if not latencies:
        latencies = [float("nan")]
    return {
        "readers": len(readers),
        "lost_or_repeated_bytes": lost_or_repeated,
        "cross_talk_chunks": cross_talk,
        "chunks_measured": len(latencies),
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
    }


def fan_out_redis(redis_url: str, locked: bool = False) -> dict[str, Any]:
    stream_ids = [f"bench-{uuid.uuid4().hex}" for _ in range(STREAMS)]
    subscriptions = [sid for sid in stream_ids for _ in range(READERS_PER_STREAM)]
    shares = [subscriptions[i::READER_PROCESSES] for i in range(READER_PROCESSES)]
    workdir = tempfile.mkdtemp(prefix="hub-bench-")
    processes = []
    for i, share in enumerate(shares):
        out = os.path.join(workdir, f"reader-{i}.json")
        process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.hub", "--reader", redis_url, out, *share],
            stdout=subprocess.PIPE,
            text=True,
        )
        processes.append((process, out))
    for process, _ in processes:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
    time.sleep(2.0)  # every subscriber is waiting on its stream
    hub = RedisHub(redis_url)
    published = anyio.run(publish, hub, stream_ids, CHUNK_INTERVAL, locked)
    hub.close()
    readers: list[dict[str, Any]] = []
    for process, out in processes:
        process.wait(120)
        with open(out) as file:
            readers += json.load(file)
    return check(stream_ids, published, readers)


def fan_out_memory(locked: bool = False) -> dict[str, Any]:
    hub = MemoryHub()
    stream_ids = [f"bench-{uuid.uuid4().hex}" for _ in range(STREAMS)]
    readers: list[dict[str, Any]] = []

    async def reader(stream_id: str) -> None:
        chunks: list[str] = []
        arrivals: list[float] = []
        async for entry in hub.subscribe(stream_id, timeout=60):
            if entry.chunk:
                chunks.append(entry.chunk)
                arrivals.append(time.time())
        readers.append({"stream_id": stream_id, "chunks": chunks, "arrivals": arrivals})

    async def main() -> dict[str, tuple[list[str], list[float]]]:
        async with anyio.create_task_group() as group:
            for stream_id in stream_ids:
                for _ in range(READERS_PER_STREAM):
                    group.start_soon(reader, stream_id)
            await anyio.sleep(0.1)
            return await publish(hub, stream_ids, CHUNK_INTERVAL, locked)

    published = anyio.run(main)
    return check(stream_ids, published, readers)


def main(argv: list[str]) -> None:
    import argparse
    import tempfile
    from pathlib import Path

    from tests.redis_server import running_redis

    parser = argparse.ArgumentParser(prog="python -m benchmarks.hub")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved CPU rounds")
    parser.add_argument("--cpu-only", action="store_true", help="skip the fan-out table")
    parser.add_argument("--sse-only", action="store_true", help="only the SSE fan-out")
    parser.add_argument(
        "--fan-out-only", action="store_true", help="only the hub fan-out (no CPU, no SSE)"
    )
    parser.add_argument("--sse-readers", type=int, default=2000, help="SSE readers in all")
    parser.add_argument("--sse-streams", type=int, default=STREAMS, help="streams they read")
    parser.add_argument("--workers", type=int, default=3, help="uvicorn worker processes")
    parser.add_argument(
        "--sse-interval", type=float, default=CHUNK_INTERVAL, help="seconds between chunks"
    )
    options = parser.parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="hub-bench-redis-") as folder,
        running_redis(Path(folder)) as server,
    ):
        print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
        if options.sse_only:
            sse_table(server.url, options)
            return
        if not options.fan_out_only:
            cpu_table(server.url, options.rounds)
        if options.cpu_only:
            return
        print(
            f"Fan-out: {STREAMS} concurrent streams x {CHUNKS_PER_STREAM} chunks, "
            f"{READERS_PER_STREAM} readers each (streams in step: every stream emits in the "
            "same tick; otherwise each at its own phase)"
        )
        print(
            "| hub | streams | readers | bytes lost or repeated | cross-talk | "
            "p50 added latency | p99 |"
        )
        print("|---|---|---|---|---|---|---|")
        for locked in (False, True):
            phase = "in step" if locked else "own phase"
            for label, figures in (
                (
                    f"RedisHub, readers in {READER_PROCESSES} other processes",
                    fan_out_redis(server.url, locked),
                ),
                ("MemoryHub, readers in-process", fan_out_memory(locked)),
            ):
                print(
                    f"| {label} | {phase} | {figures['readers']} | "
                    f"{figures['lost_or_repeated_bytes']} | {figures['cross_talk_chunks']} | "
                    f"{figures['p50_ms']:.2f} ms | {figures['p99_ms']:.2f} ms |"
                )
        if not options.fan_out_only:
            sse_table(server.url, options)
        print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


def sse_table(redis_url: str, options: Any) -> None:
    """Part 3: SSE readers over uvicorn workers sharing one RedisHub."""
    from ._sse import fan_out_sse

    streams = options.sse_streams
    per_stream = max(1, options.sse_readers // streams)

    def run(stream_ids: list[str]) -> dict[str, tuple[list[str], list[float]]]:
        hub = RedisHub(redis_url)
        try:
            return anyio.run(publish, hub, stream_ids, options.sse_interval)
        finally:
            hub.close()

    before = os.getloadavg()[0]
    figures = fan_out_sse(
        redis_url,
        streams=streams,
        readers_per_stream=per_stream,
        workers=options.workers,
        publish=run,
    )
    checked = check(figures["stream_ids"], figures["published"], figures["readers"])
    print(
        f"\nSSE fan-out: {streams} streams x {CHUNKS_PER_STREAM} chunks (one every "
        f"{options.sse_interval * 1000:g} ms), {per_stream} readers each over "
        f"{options.workers} uvicorn workers, one RedisHub (load average "
        f"{before:.1f} before, {os.getloadavg()[0]:.1f} after)"
    )
    print(
        "| readers | answered (not 200) | bytes lost or repeated | cross-talk | "
        "p50 added latency | p99 | worker RSS per reader |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {figures['expected']} | {figures['answered']} ({figures['not_200']}) | "
        f"{checked['lost_or_repeated_bytes']} | {checked['cross_talk_chunks']} | "
        f"{checked['p50_ms']:.2f} ms | {checked['p99_ms']:.2f} ms | "
        f"{figures['rss_per_reader_kb']:.1f} KB |"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--reader":
        anyio.run(read_streams, sys.argv[2], sys.argv[4:], sys.argv[3])
    elif len(sys.argv) > 1 and sys.argv[1] == "--sse-reader":
        from ._sse import read

        read(sys.argv[2:])
    else:
        main(sys.argv[1:])
