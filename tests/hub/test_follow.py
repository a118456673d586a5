"""The Redis reader thread when a reader joins while its XREAD is in flight (a real Redis; the
test only holds the reply back until the second reader has joined)."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
import redis

from reasoning_stream import TextDelta
from reasoning_stream.hub import RedisHub
from reasoning_stream.hub._follow import SUBSCRIBER_BUFFER, Follower, Subscription
from reasoning_stream.hub._redis_codec import decode_entry, stream_keys
from reasoning_stream.testing import ScriptedPipe


class HeldReads:
    """A real client whose first XREAD reply is held until ``release`` is set."""

    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url, decode_responses=True)
        self.in_read = threading.Event()
        self.release = threading.Event()

    def xread(self, streams: dict[str, str], **options: Any) -> Any:
        reply = self.client.xread(streams, **options)
        if not self.in_read.is_set():
            self.in_read.set()
            self.release.wait(10)
        return reply

    def client_id(self) -> int:
        return int(self.client.client_id())

    def close(self) -> None:
        self.client.close()


def test_a_reader_joining_behind_an_in_flight_read_gets_everything(redis_url: str) -> None:
    hub = RedisHub(redis_url)
    stream_id = f"follow-{uuid.uuid4().hex}"
    hub.run(stream_id, ScriptedPipe([TextDelta(f"{n} ") for n in range(10)]), "go")
    total = len(hub.read(stream_id))
    key = stream_keys(hub.prefix, stream_id)[0]
    held = HeldReads(redis_url)
    control = redis.Redis.from_url(redis_url)
    follower = Follower(lambda: held, control, decode_entry, redis_url)
    ahead, behind = Subscription(key, 5), Subscription(key, 2)
    try:
        follower.add(ahead)
        assert held.in_read.wait(5)  # the thread has read past entry 5 and holds the reply
        follower.add(behind)  # joins behind that read
        held.release.set()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if any(read_from <= 2 for read_from, _ in list(behind.buffer)):
                break
            time.sleep(0.02)
        batches = list(behind.buffer)
        from_behind = [batch for read_from, batch in batches if read_from <= 2]
        assert from_behind, f"the reader behind got only {[r for r, _ in batches]}"
        ids = [entry.id for entry in from_behind[0]]
        assert ids == [f"0-{n}" for n in range(3, total + 1)]
    finally:
        follower.close()
        control.close()
        hub.close()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_reader_that_stops_taking_costs_bounded_memory_and_loses_nothing(
    redis_url: str, backend: str
) -> None:
    """A subscriber that pauses while a long run publishes, next to one that keeps up: the
    reader (the loop's task on asyncio, the reader thread on trio) never holds more than
    SUBSCRIBER_BUFFER entries for the slow one, and both get every entry once, in order."""
    import anyio

    hub = RedisHub(redis_url)
    stream_id = f"lag-{uuid.uuid4().hex}"
    count = 6 * SUBSCRIBER_BUFFER
    peak = 0
    got: dict[str, list[str]] = {"slow": [], "fast": []}

    async def read(name: str, pause: anyio.Event | None) -> None:
        async for entry in hub.subscribe(stream_id, timeout=10):
            got[name].append(entry.id)
            if pause is not None and len(got[name]) == 10:
                await pause.wait()

    async def main() -> None:
        nonlocal peak
        resume = anyio.Event()
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(read, "slow", resume)
                group.start_soon(read, "fast", None)
                await anyio.sleep(0.2)
                pipe = ScriptedPipe([TextDelta(f"{n} ") for n in range(count)])
                runner = threading.Thread(target=hub.run, args=(stream_id, pipe, "go"))
                runner.start()
                total: int | None = None  # known once the run ended (read once: it is long)
                while total is None or len(got["fast"]) < total:
                    if total is None and not runner.is_alive():
                        total = len(hub.read(stream_id))
                    follower: Any = (
                        hub._reader_thread
                        if backend == "trio"
                        else next(iter(hub._loop_followers.values()), None)
                    )
                    assert follower is not None
                    with follower._lock:
                        subs = [s for _, ss in follower._follows.values() for s in ss]
                    held = [sum(len(b) for _, b in list(s.buffer)) for s in subs]
                    peak = max([peak, *held])
                    await anyio.sleep(0.002)
                resume.set()

    try:
        anyio.run(main, backend=backend)
        whole = [entry.id for entry in hub.read(stream_id)]
    finally:
        hub.close()
    assert peak <= SUBSCRIBER_BUFFER
    assert got["slow"] == whole and got["fast"] == whole


def test_a_hub_used_from_many_event_loops_keeps_none_of_them(redis_url: str) -> None:
    """A hub keeps one writer task and one reader task per asyncio loop, by the loop, weakly:
    an app that calls ``anyio.run`` per request does not pile up dead loops in its hub."""
    import gc

    import anyio

    hub = RedisHub(redis_url)

    async def once(n: int) -> None:
        stream_id = f"loops-{n}-{uuid.uuid4().hex}"
        with anyio.fail_after(10):
            await hub.arun(stream_id, ScriptedPipe([TextDelta("a"), TextDelta("b")]), "go")
            got = [entry.chunk async for entry in hub.subscribe(stream_id)]
        assert "".join(got) == "ab"

    try:
        for n in range(3):
            anyio.run(once, n)
        gc.collect()
        assert len(hub._loop_writers) == 0 and len(hub._loop_followers) == 0
    finally:
        hub.close()
