"""A run whose process dies (SIGKILL) or hangs mid-stream: the lease lapses and its readers,
in other processes and on asyncio and trio, get a final entry with status "error" naming the
lost writer, instead of waiting forever. Real redis-server, real child processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from reasoning_stream import ReasoningDelta, ReasoningStream, TextDelta, UsageError
from reasoning_stream.hub import Entry, RedisHub
from reasoning_stream.hub._redis_codec import stream_keys
from reasoning_stream.testing import ScriptedPipe

ROOT = Path(__file__).resolve().parents[2]
LEASE = 0.5


def writer(redis_url: str, stream_id: str, first_pause: float = 0.0) -> subprocess.Popen[str]:
    """The run, in a child process of its own."""
    arguments = [redis_url, stream_id, str(LEASE), str(first_pause)]
    return subprocess.Popen(
        [sys.executable, "-m", "tests.hub.crashing_writer", *arguments],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def reader_hub(redis_url: str) -> Iterator[RedisHub]:
    """The readers' hub: another process's view (its own connections and threads)."""
    hub = RedisHub(redis_url, lease=LEASE)
    try:
        yield hub
    finally:
        hub.close()


def check_abandoned(entries: list[Entry], pid: int) -> None:
    """One final entry, last, status error, naming the lost writer; the channel balanced."""
    assert [entry.final for entry in entries].count(True) == 1 and entries[-1].final
    final = entries[-1]
    assert final.status == "error" and final.error is not None
    assert f"pid {pid}" in final.error and "lease" in final.error
    assert all(entry.error is None for entry in entries[:-1])
    channel = "".join(entry.chunk for entry in entries)
    split = ReasoningStream.split(channel, lossless=True)
    reasoning = "".join(
        entry.event.text  # type: ignore[union-attr]
        for entry in entries
        if entry.event is not None and entry.event.kind == "reasoning_delta"
    )
    assert split.reasoning == reasoning and split.text == ""
    assert channel.endswith(ReasoningStream.CLOSE_TAG)  # the hub closed the open marker


@pytest.mark.anyio
async def test_a_killed_writer_ends_its_stream_for_every_reader(
    redis_url: str, reader_hub: RedisHub
) -> None:
    stream_id = f"crash-{uuid.uuid4().hex}"
    child = writer(redis_url, stream_id)
    got: list[Entry] = []
    killed_at = 0.0
    try:
        with anyio.fail_after(30):
            async for entry in reader_hub.subscribe(stream_id, timeout=20):
                got.append(entry)
                if len(got) == 20:
                    child.send_signal(signal.SIGKILL)  # mid-reasoning, no final entry written
                    killed_at = time.monotonic()
    finally:
        child.kill()
        child.wait(10)
    ended_after = time.monotonic() - killed_at
    assert child.returncode == -signal.SIGKILL and killed_at
    check_abandoned(got, child.pid)
    # The lease lapses after LEASE s; the reader thread sweeps at most every second.
    assert ended_after < LEASE + 4, ended_after
    # Every later reader sees the same ending, and resume stays exact around it.
    assert reader_hub.read(stream_id) == got
    for k in (0, len(got) // 2, len(got) - 2, len(got) - 1):
        with anyio.fail_after(10):
            rest = [entry async for entry in reader_hub.subscribe(stream_id, after=got[k].id)]
        assert got[: k + 1] + rest == got
    # The id stays taken, like any finished run's, until ttl.
    with pytest.raises(UsageError, match="already exists"):
        await reader_hub.arun(stream_id, ScriptedPipe([TextDelta("again")]), "go")


@pytest.mark.anyio
async def test_a_writer_killed_before_its_first_entry(redis_url: str, reader_hub: RedisHub) -> None:
    """A claimed stream with nothing published yet: its readers end too (with no chunk)."""
    stream_id = f"crash-{uuid.uuid4().hex}"
    child = writer(redis_url, stream_id, first_pause=30)
    try:
        deadline = time.monotonic() + 20
        while not reader_hub._reader_client.exists(stream_keys(reader_hub.prefix, stream_id)[1]):
            assert time.monotonic() < deadline and child.poll() is None
            await anyio.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        with anyio.fail_after(10):
            got = [entry async for entry in reader_hub.subscribe(stream_id, timeout=5)]
    finally:
        child.kill()
        child.wait(10)
    assert len(got) == 1 and got[0].id == "0-1" and got[0].chunk == ""
    assert got[0].final and got[0].status == "error" and f"pid {child.pid}" in str(got[0].error)


def test_read_ends_a_lost_writers_stream_without_a_subscriber(
    redis_url: str, reader_hub: RedisHub
) -> None:
    stream_id = f"crash-{uuid.uuid4().hex}"
    child = writer(redis_url, stream_id)
    try:
        deadline = time.monotonic() + 20
        while len(reader_hub.read(stream_id)) < 10:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        assert not reader_hub.read(stream_id)[-1].final  # the lease has not lapsed yet
        time.sleep(LEASE + 0.3)
        entries = reader_hub.read(stream_id)
    finally:
        child.kill()
        child.wait(10)
    check_abandoned(entries, child.pid)
    assert reader_hub.read(stream_id) == entries  # ended once, by whoever came first


def test_a_hung_writer_is_fenced_off_and_its_run_says_so(
    redis_url: str, reader_hub: RedisHub
) -> None:
    """SIGSTOP past the lease: readers end the stream; the writer, resumed, may not append."""
    stream_id = f"crash-{uuid.uuid4().hex}"
    child = writer(redis_url, stream_id)
    try:
        deadline = time.monotonic() + 20
        while len(reader_hub.read(stream_id)) < 10:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        child.send_signal(signal.SIGSTOP)
        time.sleep(LEASE + 0.3)
        entries = reader_hub.read(stream_id)
        child.send_signal(signal.SIGCONT)
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
        child.wait(10)
    check_abandoned(entries, child.pid)
    outcome = json.loads(out)
    assert outcome["ended"] == "PublishError", err
    assert "lease" in outcome["message"] and "abandoned" in outcome["message"]
    assert outcome["text"] == "answer"  # the run itself finished; its result is not lost
    assert reader_hub.read(stream_id) == entries  # nothing appended after the end


@pytest.mark.anyio
async def test_a_live_writer_that_goes_quiet_keeps_its_stream(
    redis_url: str, reader_hub: RedisHub
) -> None:
    """Silence longer than the lease (a model thinking, a tool running) is not a lost writer:
    the writer thread's heartbeat keeps the lease while nothing is published."""
    stream_id = f"quiet-{uuid.uuid4().hex}"
    writing = RedisHub(redis_url, lease=0.3)
    pipe = ScriptedPipe([2.0, ReasoningDelta("slow"), 2.0, TextDelta("answer")])
    got: list[Entry] = []

    async def read() -> None:
        async for entry in reader_hub.subscribe(stream_id, timeout=10):
            got.append(entry)

    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(read)
                result = await writing.arun(stream_id, pipe, "go")
    finally:
        writing.close()
    assert result.status == "completed"
    assert got[-1].final and got[-1].status == "completed" and got[-1].error is None
    assert "".join(entry.chunk for entry in got) == "<think>slow</think>answer"


def test_a_lease_must_be_positive(redis_url: str) -> None:
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(UsageError, match="lease must be a positive"):
            RedisHub(redis_url, lease=bad)
