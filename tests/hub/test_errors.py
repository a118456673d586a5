"""Bad input and broken parts: clear errors, no hangs, and the run's result is never lost."""

from __future__ import annotations

import time
import uuid

import anyio
import pytest

from reasoning_stream import ReasoningDelta, TextDelta, UsageError
from reasoning_stream.hub import (
    Hub,
    InvalidEntryIdError,
    MemoryHub,
    PublishError,
    RedisHub,
    StreamExpiredError,
    StreamNotFoundError,
)
from reasoning_stream.testing import ScriptedPipe
from tests.redis_server import RedisServer, free_port

WAIT = 10.0
"""Longest a reader here may wait: a hang fails the test instead of stalling the suite."""


def new_id() -> str:
    return f"err-{uuid.uuid4().hex}"


def make_hub(kind: str, redis_url: str | None, **options: float) -> Hub:
    if kind == "memory":
        return MemoryHub(**options)  # type: ignore[arg-type]
    assert redis_url is not None
    return RedisHub(redis_url, **options)  # type: ignore[arg-type]


def test_a_stream_id_runs_once(hub: Hub) -> None:
    stream_id = new_id()
    hub.run(stream_id, ScriptedPipe([TextDelta("first")]), "go")
    with pytest.raises(UsageError, match="already exists"):
        hub.run(stream_id, ScriptedPipe([TextDelta("second")]), "go")
    assert "".join(entry.chunk for entry in hub.read(stream_id)) == "first"


@pytest.mark.anyio
async def test_a_stream_id_runs_once_async(hub: Hub) -> None:
    stream_id = new_id()
    await hub.arun(stream_id, ScriptedPipe([TextDelta("first")]), "go")
    with pytest.raises(UsageError, match="already exists"):
        await hub.arun(stream_id, ScriptedPipe([TextDelta("second")]), "go")


@pytest.mark.anyio
async def test_unknown_stream_times_out_with_a_clear_error(hub: Hub) -> None:
    start = time.monotonic()
    with anyio.fail_after(WAIT), pytest.raises(StreamNotFoundError, match=r"within 0\.3 s"):
        async for _ in hub.subscribe(new_id(), timeout=0.3):
            pass
    assert 0.25 <= time.monotonic() - start < 3
    assert hub.read(new_id()) == []


@pytest.mark.anyio
async def test_a_reader_waits_for_a_stream_that_starts_later(hub: Hub) -> None:
    stream_id = new_id()
    got: list[str] = []

    async def reader() -> None:
        async for entry in hub.subscribe(stream_id, timeout=5):
            got.append(entry.chunk)

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            group.start_soon(reader)
            await anyio.sleep(0.3)
            await hub.arun(stream_id, ScriptedPipe([TextDelta("late")]), "go")
    assert "".join(got) == "late"


@pytest.mark.parametrize("kind", ["memory", "redis"])
@pytest.mark.anyio
async def test_resuming_past_retention_is_a_clear_error(
    kind: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("redis_url") if kind == "redis" else None
    hub = make_hub(kind, url, maxlen=5)
    stream_id = new_id()
    await anyio.to_thread.run_sync(
        hub.run, stream_id, ScriptedPipe([TextDelta(f"{n} ") for n in range(400)]), "go"
    )
    entries = hub.read(stream_id)
    assert entries[-1].final and len(entries) < 400
    with pytest.raises(StreamExpiredError, match="trimmed"):
        hub.read(stream_id, after="1" if kind == "memory" else "0-1")
    with anyio.fail_after(WAIT), pytest.raises(StreamExpiredError, match="trimmed"):
        async for _ in hub.subscribe(stream_id, after="1" if kind == "memory" else "0-1"):
            pass
    # What retention kept still resumes exactly.
    assert hub.read(stream_id, after=entries[0].id) == entries[1:]


@pytest.mark.parametrize("kind", ["memory", "redis"])
@pytest.mark.anyio
async def test_an_expired_stream_is_a_clear_error(
    kind: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("redis_url") if kind == "redis" else None
    hub = make_hub(kind, url, ttl=1 if kind == "redis" else 0.05)
    stream_id = new_id()
    await anyio.to_thread.run_sync(hub.run, stream_id, ScriptedPipe([TextDelta("gone soon")]), "go")
    last = hub.read(stream_id)[0].id
    await anyio.sleep(1.3 if kind == "redis" else 0.1)
    assert hub.read(stream_id) == []
    with pytest.raises(StreamExpiredError, match="expired"):
        hub.read(stream_id, after=last)
    with anyio.fail_after(3), pytest.raises(StreamExpiredError, match="expired"):
        async for _ in hub.subscribe(stream_id, after=last):
            pass
    # The id is free again once the stream expired.
    await anyio.to_thread.run_sync(hub.run, stream_id, ScriptedPipe([TextDelta("again")]), "go")


@pytest.mark.anyio
@pytest.mark.parametrize("bad", ["", "abc", "0", "-1", "1-2-3", "0-0", "1e3", " 1"])
async def test_malformed_ids_are_rejected(hub: Hub, bad: str) -> None:
    stream_id = new_id()
    await anyio.to_thread.run_sync(hub.run, stream_id, ScriptedPipe([TextDelta("x")]), "go")
    with pytest.raises(InvalidEntryIdError):
        hub.read(stream_id, after=bad)
    with anyio.fail_after(WAIT), pytest.raises(InvalidEntryIdError):
        async for _ in hub.subscribe(stream_id, after=bad):
            pass


def test_an_id_past_the_end_is_rejected(hub: Hub) -> None:
    stream_id = new_id()
    hub.run(stream_id, ScriptedPipe([TextDelta("x")]), "go")
    beyond = "999" if isinstance(hub, MemoryHub) else "0-999"
    with pytest.raises(InvalidEntryIdError, match="no entry"):
        hub.read(stream_id, after=beyond)


def test_bad_stream_ids_are_usage_errors(hub: Hub) -> None:
    for bad in ["", "a b", "a/b", "x" * 201]:
        with pytest.raises(UsageError):
            hub.run(bad, ScriptedPipe([TextDelta("x")]), "go")


SCRIPT = [ReasoningDelta("think "), TextDelta("the "), TextDelta("whole "), TextDelta("answer")]


def test_redis_down_at_start_the_run_finishes_and_says_what_was_lost() -> None:
    hub = RedisHub(f"redis://127.0.0.1:{free_port()}/0", connect_timeout=0.5)
    pipe = ScriptedPipe(SCRIPT)  # type: ignore[arg-type]
    seen: list[object] = []
    pipe.set_streaming_callback(seen.append).set_event_callback(seen.append)
    with pytest.raises(PublishError) as caught:
        hub.run(new_id(), pipe, "go")
    error = caught.value
    assert "Redis at redis://127.0.0.1" in str(error) and "unreachable" in str(error)
    assert "were not published" in str(error)
    assert error.result is not None and error.result.text == "the whole answer"
    assert error.result.status == "completed" and pipe.last_result is error.result
    assert error.unpublished == len(seen) + 1  # every chunk and event, and the final entry
    hub.close()


@pytest.mark.anyio
async def test_redis_down_at_start_async() -> None:
    hub = RedisHub(f"redis://127.0.0.1:{free_port()}/0", connect_timeout=0.5)
    with pytest.raises(PublishError, match="unreachable") as caught:
        await hub.arun(new_id(), ScriptedPipe(SCRIPT), "go")  # type: ignore[arg-type]
    assert caught.value.result is not None and caught.value.result.text == "the whole answer"
    hub.close()


def test_redis_down_mid_run_the_run_finishes_and_says_what_was_lost(
    redis_server: RedisServer,
) -> None:
    hub = RedisHub(redis_server.url, connect_timeout=0.5)
    pipe = ScriptedPipe([*SCRIPT[:2], 0.3, *SCRIPT[2:]])  # type: ignore[arg-type]
    stopped = []

    def stop_redis(chunk: str) -> None:
        if chunk == "the " and not stopped:
            time.sleep(0.1)  # let the writer publish what came before
            redis_server.stop()
            stopped.append(True)

    pipe.set_streaming_callback(stop_redis)
    stream_id = new_id()
    with pytest.raises(PublishError, match="failed mid-run") as caught:
        hub.run(stream_id, pipe, "go")
    error = caught.value
    assert error.result is not None and error.result.text == "the whole answer"
    assert 0 < error.unpublished < 13
    assert f"stream {stream_id!r}" in str(error)
    hub.close()


def test_a_failing_run_keeps_its_own_error_and_notes_the_hub(redis_server: RedisServer) -> None:
    hub = RedisHub(f"redis://127.0.0.1:{free_port()}/0", connect_timeout=0.5)
    with pytest.raises(Exception, match="boom") as caught:
        hub.run(new_id(), ScriptedPipe([TextDelta("a"), RuntimeError("boom")]), "go")
    assert any("Redis" in note for note in getattr(caught.value, "__notes__", []))
    hub.close()
