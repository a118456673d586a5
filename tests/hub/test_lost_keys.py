"""Redis loses a running stream's keys (FLUSHALL, a restart without persistence, eviction,
failover): its readers end within the lease with an error that says so, and so does its run.

Before, readers waited forever and the run's ``PublishError`` blamed "a reader".
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis

from reasoning_stream import ReasoningDelta, TextDelta
from reasoning_stream.hub import HubError, PublishError, RedisHub
from reasoning_stream.hub._redis_codec import stream_keys
from reasoning_stream.testing import ScriptedPipe
from tests.redis_server import RedisServer

LEASE = 2.0


def slow_script() -> list[Any]:
    return [item for n in range(60) for item in (ReasoningDelta(f"r{n} "), 0.05)] + [
        TextDelta("answer")
    ]


@pytest.mark.parametrize("loss", ["FLUSHALL", "claim evicted"])
@pytest.mark.anyio
async def test_readers_and_the_run_of_a_stream_whose_keys_vanished_end_saying_so(
    redis_server: RedisServer, loss: str
) -> None:
    stream_id = f"lost-{uuid.uuid4().hex}"
    writer_hub = RedisHub(redis_server.url, lease=LEASE)
    reader_hub = RedisHub(redis_server.url, lease=LEASE)
    control = redis.Redis.from_url(redis_server.url)
    outcome: dict[str, BaseException | object] = {}

    def run() -> None:
        try:
            outcome["result"] = writer_hub.run(stream_id, ScriptedPipe(slow_script()), "go")
        except BaseException as error:
            outcome["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    got: list[Any] = []
    try:
        with anyio.fail_after(LEASE + 10):
            with pytest.raises(HubError) as caught:
                async for entry in reader_hub.subscribe(stream_id, timeout=10):
                    got.append(entry)
                    if len(got) == 5:
                        if loss == "FLUSHALL":
                            control.flushall()
                        else:
                            control.delete(stream_keys(reader_hub.prefix, stream_id)[1])
                        lost_at = time.monotonic()
        assert time.monotonic() - lost_at < LEASE + 1
        message = str(caught.value)
        assert stream_id in message and "vanished from Redis" in message and "FLUSHALL" in message
        assert "reader" not in message
    finally:
        thread.join(20)
        writer_hub.close()
        reader_hub.close()
        control.close()
    error = outcome.get("error")
    assert isinstance(error, PublishError), outcome
    assert "vanished from Redis" in str(error) and "a reader" not in str(error)
    assert error.result is not None and error.result.text == "answer"


@pytest.mark.anyio
async def test_readers_end_when_redis_restarts_without_persistence(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """The server is stopped mid-run and started again, empty, on the same port."""
    from tests.redis_server import running_redis

    stream_id = f"restart-{uuid.uuid4().hex}"
    writer_hub = RedisHub(redis_server.url, lease=LEASE)
    reader_hub = RedisHub(redis_server.url, lease=LEASE)
    outcome: dict[str, BaseException | object] = {}

    def run() -> None:
        try:
            outcome["result"] = writer_hub.run(stream_id, ScriptedPipe(slow_script()), "go")
        except BaseException as error:
            outcome["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    again = tmp_path / "again"
    again.mkdir()
    restarted = contextlib.ExitStack()
    try:
        with anyio.fail_after(LEASE + 20):
            with pytest.raises(HubError) as caught:
                async for entry in reader_hub.subscribe(stream_id, timeout=10):
                    if entry.id == "0-5":
                        redis_server.stop()
                        restarted.enter_context(running_redis(again, port=redis_server.port))
        message = str(caught.value)
        # Usually redis-py reconnects to the new, empty server and the sweep finds the keys
        # gone; when the restart outlasts its retries, the reader thread says Redis failed.
        assert "vanished from Redis" in message or "failed while following" in message
        assert "reader" not in message
    finally:
        thread.join(20)
        writer_hub.close()
        reader_hub.close()
        restarted.close()
    assert isinstance(outcome.get("error"), PublishError), outcome


@pytest.mark.anyio
async def test_a_stream_that_lost_its_keys_leaves_the_others_of_its_write_intact(
    redis_server: RedisServer,
) -> None:
    """One write carries every running stream (one script run): a stream whose keys vanished
    fails alone; the streams written with it keep every entry and their end."""
    hub = RedisHub(redis_server.url, lease=LEASE)
    control = redis.Redis.from_url(redis_server.url, decode_responses=True)
    ids = [f"batch-{n}-{uuid.uuid4().hex}" for n in range(4)]
    victim = ids[0]
    outcomes: dict[str, BaseException | object] = {}

    async def run(stream_id: str) -> None:
        try:
            outcomes[stream_id] = await hub.arun(stream_id, ScriptedPipe(slow_script()), "go")
        except Exception as error:
            outcomes[stream_id] = error

    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for stream_id in ids:
                    group.start_soon(run, stream_id)
                while control.xlen(stream_keys(hub.prefix, victim)[0]) < 5:
                    await anyio.sleep(0.02)
                control.delete(*stream_keys(hub.prefix, victim))
    finally:
        hub.close()
    assert isinstance(outcomes[victim], PublishError), outcomes[victim]
    assert "vanished from Redis" in str(outcomes[victim])
    expected = "".join(f"r{n} " for n in range(60))
    with RedisHub(redis_server.url) as reader:
        for stream_id in ids[1:]:
            entries = reader.read(stream_id)
            assert entries[-1].status == "completed", (stream_id, entries[-1])
            channel = "".join(e.chunk for e in entries)
            assert channel.startswith("<think>" + expected) and channel.endswith("answer")
            assert outcomes[stream_id].text == "answer"  # type: ignore[union-attr]
    control.close()


def test_a_running_streams_keys_expire_from_its_first_write(redis_server: RedisServer) -> None:
    """The lease is renewed on the writer's heartbeat, not with every write, yet the stream's
    log gets its expiry (lease + ttl ahead) with its first write: a writer that dies before
    its first heartbeat leaves nothing behind for ever."""
    hub = RedisHub(redis_server.url, lease=30.0, ttl=60)
    control = redis.Redis.from_url(redis_server.url)
    stream_id = f"expiry-{uuid.uuid4().hex}"
    seen: list[int] = []
    key = stream_keys(hub.prefix, stream_id)

    def look(chunk: str) -> None:
        if chunk == "r3 ":
            time.sleep(0.2)  # the writer has written the first entries meanwhile
            seen.extend(control.ttl(k) for k in key)

    try:
        pipe = ScriptedPipe(slow_script()[:20]).set_streaming_callback(look)
        hub.run(stream_id, pipe, "go")
    finally:
        hub.close()
        control.close()
    log, claim, lease = seen
    assert 60 < log <= 90 and 60 < claim <= 90, seen  # lease + ttl ahead
    assert 0 < lease <= 30, seen
