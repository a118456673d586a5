"""``hub.stop`` / ``hub.astop`` (API.md section 14): a run is cancelled within one second, also
while its model is silent; final entry and result say cancelled; markers balanced; readers end;
a second stop or an unknown id is False. In memory and on a real redis-server (one process
here; three processes in test_stop_processes.py), async (asyncio and trio) and sync."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from typing import Any

import anyio
import pytest

from reasoning_stream import Pipeline, ReasoningDelta, ReasoningStream, TextDelta
from reasoning_stream.hub import Entry, Hub
from reasoning_stream.testing import ScriptedPipe

SILENCE = 30.0
"""How long the silent model would stay silent: far past every timeout here."""
CANCELLED = ("cancelled_before_answer", "cancelled_after_partial_answer")


def silent_after_reasoning() -> list[Any]:
    return [ReasoningDelta("let me think"), SILENCE, TextDelta("never")]


def silent_after_text() -> list[Any]:
    return [ReasoningDelta("thought"), TextDelta("half an ans"), SILENCE, TextDelta("wer")]


def chatty() -> list[Any]:
    return [item for n in range(2000) for item in (ReasoningDelta(f"r{n} "), 0.005)]


def check_stopped(entries: list[Entry], status: str, result: Any) -> None:
    """One final entry, last, with ``status``; the channel balanced and split exactly."""
    assert [entry.final for entry in entries].count(True) == 1 and entries[-1].final
    assert entries[-1].status == status == result.status
    channel = "".join(entry.chunk for entry in entries)
    assert channel.count(ReasoningStream.OPEN_TAG) == channel.count(ReasoningStream.CLOSE_TAG)
    assert channel.endswith(ReasoningStream.CLOSE_TAG) or status.endswith("partial_answer")
    split = ReasoningStream.split(channel, lossless=True)
    assert (split.reasoning, split.text) == (result.model_reasoning, result.text)
    assert not split.truncated


def new_id() -> str:
    return f"stop-{uuid.uuid4().hex}"


async def wait_for_entries(hub: Hub, stream_id: str, count: int) -> None:
    with anyio.fail_after(10):
        while len(hub.read(stream_id)) < count:
            await anyio.sleep(0.005)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("script", "status", "seen"),
    [
        (silent_after_reasoning, "cancelled_before_answer", 2),
        (silent_after_text, "cancelled_after_partial_answer", 4),
    ],
)
async def test_astop_cancels_a_silent_async_run_within_a_second(
    hub: Hub, script: Any, status: str, seen: int
) -> None:
    stream_id = new_id()
    outcome: dict[str, Any] = {}
    read: list[Entry] = []

    async def run() -> None:
        outcome["result"] = await hub.arun(stream_id, ScriptedPipe(script()), "go")
        outcome["ended"] = time.monotonic()

    async def follow() -> None:
        async for entry in hub.subscribe(stream_id, timeout=10):
            read.append(entry)

    with anyio.fail_after(15):
        async with anyio.create_task_group() as group:
            await group.start(run_started, run)
            group.start_soon(follow)
            await wait_for_entries(hub, stream_id, seen)
            stopped_at = time.monotonic()
            assert await hub.astop(stream_id) is True
    assert outcome["ended"] - stopped_at < 1.0
    check_stopped(read, status, outcome["result"])
    check_stopped(hub.read(stream_id), status, outcome["result"])
    assert await hub.astop(stream_id) is False  # finished: a no-op that says so
    assert hub.stop(stream_id) is False
    assert await hub.astop(new_id()) is False  # unknown


async def run_started(run: Any, *, task_status: anyio.abc.TaskStatus[None]) -> None:
    task_status.started()
    await run()


@pytest.mark.anyio
async def test_a_second_stop_of_a_running_stream_is_false(hub: Hub) -> None:
    stream_id = new_id()
    results: list[Any] = []

    async def run() -> None:
        results.append(await hub.arun(stream_id, ScriptedPipe(silent_after_reasoning()), "go"))

    with anyio.fail_after(15):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await wait_for_entries(hub, stream_id, 2)
            first, second = hub.stop(stream_id), hub.stop(stream_id)
    assert (first, second) == (True, False)
    assert results[0].status == "cancelled_before_answer"


def run_in_thread(
    hub: Hub, stream_id: str, runnable: Any
) -> tuple[threading.Thread, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = hub.run(stream_id, runnable, "go")
        except BaseException as error:  # the test asserts there is none
            outcome["error"] = error
        outcome["ended"] = time.monotonic()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


def wait_sync(hub: Hub, stream_id: str, count: int) -> None:
    deadline = time.monotonic() + 10
    while len(hub.read(stream_id)) < count:
        assert time.monotonic() < deadline, hub.read(stream_id)
        time.sleep(0.005)


@pytest.mark.parametrize(
    ("script", "status", "seen"),
    [
        (silent_after_reasoning, "cancelled_before_answer", 2),
        (silent_after_text, "cancelled_after_partial_answer", 4),
    ],
)
def test_stop_ends_a_silent_sync_run_in_a_thread_within_a_second(
    hub: Hub, script: Any, status: str, seen: int
) -> None:
    stream_id = new_id()
    thread, outcome = run_in_thread(hub, stream_id, ScriptedPipe(script()))
    wait_sync(hub, stream_id, seen)
    stopped_at = time.monotonic()
    assert hub.stop(stream_id) is True
    thread.join(5)
    assert "error" not in outcome
    assert outcome["ended"] - stopped_at < 1.0
    check_stopped(hub.read(stream_id), status, outcome["result"])
    assert hub.stop(stream_id) is False


@pytest.mark.parametrize("pipeline", [False, True])
def test_a_stopped_sync_run_that_streams_ends_by_itself(hub: Hub, pipeline: bool) -> None:
    """The flag is checked between events: the pipe closes its segment and ends cancelled."""
    stream_id = new_id()
    pipe = ScriptedPipe(chatty())
    runnable: Any = Pipeline(pipe, ScriptedPipe(["unused"])) if pipeline else pipe
    thread, outcome = run_in_thread(hub, stream_id, runnable)
    wait_sync(hub, stream_id, 10)
    stopped_at = time.monotonic()
    assert hub.stop(stream_id) is True
    thread.join(5)
    assert outcome["ended"] - stopped_at < 1.0
    result = outcome["result"]
    assert result is runnable.last_result  # the pipe's own result, not one the hub made up
    last = result.results[-1] if pipeline else result
    assert last.status == "cancelled_before_answer"
    check_stopped(hub.read(stream_id), "cancelled_before_answer", last)


@pytest.mark.anyio
async def test_astop_reaches_a_sync_run_in_another_thread(hub: Hub) -> None:
    stream_id = new_id()
    thread, outcome = run_in_thread(hub, stream_id, ScriptedPipe(silent_after_reasoning()))
    await wait_for_entries(hub, stream_id, 2)
    assert await hub.astop(stream_id) is True
    with anyio.fail_after(5):
        entries = [entry async for entry in hub.subscribe(stream_id)]
    await anyio.to_thread.run_sync(thread.join, 5)
    check_stopped(entries, "cancelled_before_answer", outcome["result"])


def test_stop_checks_the_stream_id(hub: Hub) -> None:
    from reasoning_stream import UsageError

    with pytest.raises(UsageError, match="stream_id"):
        hub.stop("has space")


@pytest.mark.parametrize("script", [silent_after_reasoning, chatty])
def test_ctrl_c_in_a_waiting_sync_run_ends_its_stream_cancelled(hub: Hub, script: Any) -> None:
    """The pipe runs in a worker thread: Ctrl-C reaches the waiting thread, which stops the
    run and still writes its final entry before the interruption goes on."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("Ctrl-C reaches the main thread only")
    stream_id = new_id()

    def interrupt() -> None:
        wait_sync(hub, stream_id, 2)
        os.kill(os.getpid(), signal.SIGINT)  # a real signal: it wakes a blocked wait

    helper = threading.Thread(target=interrupt, daemon=True)
    helper.start()
    with pytest.raises(KeyboardInterrupt):
        hub.run(stream_id, ScriptedPipe(script()), "go")
    helper.join(5)
    entries = hub.read(stream_id)
    assert entries[-1].final and entries[-1].status == "cancelled_before_answer"
    channel = "".join(entry.chunk for entry in entries)
    assert not ReasoningStream.split(channel, lossless=True).truncated


def test_ctrl_c_delivered_to_another_thread_still_stops_a_waiting_sync_run(hub: Hub) -> None:
    """The kernel may give a process's SIGINT to any thread; Python then only flags it for the
    main thread. A waiting run must notice it within its poll, not when the run ends."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("Ctrl-C reaches the main thread only")
    stream_id = new_id()

    def interrupt() -> None:
        wait_sync(hub, stream_id, 2)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # this thread, not main

    helper = threading.Thread(target=interrupt, daemon=True)
    helper.start()
    with pytest.raises(KeyboardInterrupt):
        hub.run(stream_id, ScriptedPipe(chatty()), "go")  # 10 s unless stopped
    helper.join(5)
    entries = hub.read(stream_id)
    assert entries[-1].final and entries[-1].status == "cancelled_before_answer"
    assert len(entries) < 400, "the run went on long after Ctrl-C"


@pytest.mark.anyio
async def test_a_sync_run_called_on_an_event_loop_still_warns_once(hub: Hub) -> None:
    """The pipe runs in a worker thread now; the hub warns for it, pointing at the caller."""
    with pytest.warns(RuntimeWarning, match=r"RedisHub.run\(\)|MemoryHub.run\(\)") as caught:
        hub.run(new_id(), ScriptedPipe(["hi"]), "go")
    assert caught[0].filename == __file__
