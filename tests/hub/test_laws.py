"""The hub laws, on MemoryHub and on RedisHub over a real redis-server.

Hypothesis budgets: 40 examples per law and hub (each Redis example is a few round trips), no
deadline; the whole file runs in well under a minute.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning_stream import (
    Event,
    Finish,
    ReasoningDelta,
    ReasoningStream,
    TextDelta,
    ToolCall,
    Usage,
    UsageReport,
)
from reasoning_stream.hub import Entry, Hub
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.testing.strategies import event_scripts, tag_text
from tests.helpers import examples

LAWS = settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

extra_events = st.lists(
    st.one_of(
        event_scripts().map(tuple),
        st.builds(lambda n: (ToolCall(f"call_{n}", "lookup", '{"q": 1}'),), st.integers(0, 9)),
        st.just((UsageReport(Usage(3, 5, 2)),)),
    ),
    max_size=4,
).map(lambda parts: [event for part in parts for event in part])
"""Channel events mixed with tool calls and usage reports (events without channel text)."""


WAIT = 30.0
"""Longest a reader or a run here may take: a hang fails the test instead of stalling the suite
(generous: two cores run the suite, Redis and the readers at once)."""


def new_id() -> str:
    return f"law-{uuid.uuid4().hex}"


def chunks(entries: list[Entry]) -> str:
    return "".join(entry.chunk for entry in entries)


def recording(pipe: ScriptedPipe) -> list[str]:
    seen: list[str] = []
    pipe.set_streaming_callback(seen.append)
    return seen


async def collect(hub: Hub, stream_id: str, after: str | None = None) -> list[Entry]:
    with anyio.fail_after(WAIT):  # ``timeout`` bounds only the wait for the stream to appear
        return [entry async for entry in hub.subscribe(stream_id, after=after, timeout=5)]


@LAWS
@given(events=extra_events)
def test_entries_carry_exactly_the_channel(hub: Hub, events: list[Event]) -> None:
    pipe = ScriptedPipe(events)
    seen = recording(pipe)
    stream_id = new_id()
    result = hub.run(stream_id, pipe, "go")
    entries = hub.read(stream_id)
    assert chunks(entries) == "".join(seen)
    split = ReasoningStream.split(chunks(entries), lossless=True)
    assert (split.reasoning, split.text) == (result.model_reasoning, result.text)
    published = [entry.event for entry in entries if entry.event is not None]
    assert [e for e in published if isinstance(e, ToolCall)] == list(result.tool_calls)
    assert len(set(entry.id for entry in entries)) == len(entries)


@LAWS
@given(events=event_scripts(), backend=st.sampled_from(["asyncio", "trio"]))
def test_resume_after_every_entry_is_exact(hub: Hub, events: list[Event], backend: str) -> None:
    stream_id = new_id()
    pipe = ScriptedPipe(events)
    seen = recording(pipe)
    hub.run(stream_id, pipe, "go")
    entries = hub.read(stream_id)
    whole = "".join(seen)

    async def resumes() -> None:
        assert await collect(hub, stream_id) == entries
        for k, entry in enumerate(entries):
            rest = await collect(hub, stream_id, after=entry.id)
            assert rest == entries[k + 1 :]
            assert chunks(entries[: k + 1]) + chunks(rest) == whole
            assert hub.read(stream_id, after=entry.id) == rest

    anyio.run(resumes, backend=backend)


@pytest.mark.anyio
@pytest.mark.parametrize("join", ["before", "mid-reasoning", "after"])
async def test_live_readers_join_anytime_and_resume_exactly(hub: Hub, join: str) -> None:
    """Readers that join before the run, mid-reasoning or after it, and one that resumes."""
    script: list[object] = [ReasoningDelta("let me <think> about it ")]
    script += [item for n in range(12) for item in (0.005, ReasoningDelta(f"step {n}. "))]
    script += [TextDelta("the answer "), 0.005, TextDelta("is <42>")]
    pipe = ScriptedPipe(script)  # type: ignore[arg-type]
    seen = recording(pipe)
    stream_id = new_id()
    got: dict[str, str] = {}

    async def follow() -> None:
        got["follow"] = chunks(await collect(hub, stream_id))

    async def leave_and_resume() -> None:
        first: list[Entry] = []
        async for entry in hub.subscribe(stream_id, timeout=5):
            first.append(entry)
            if len(first) == 5:
                break
        rest = await collect(hub, stream_id, after=first[-1].id)
        got["resumed"] = chunks(first) + chunks(rest)

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            if join == "before":
                group.start_soon(follow)
                group.start_soon(leave_and_resume)
                await anyio.sleep(0.05)
            result = await hub.arun(stream_id, pipe, "go") if join != "mid-reasoning" else None
            if join == "mid-reasoning":
                group.start_soon(hub.arun, stream_id, pipe, "go")
                await anyio.sleep(0.02)
                group.start_soon(follow)
                group.start_soon(leave_and_resume)
            if join == "after":
                assert result is not None
                group.start_soon(follow)
                group.start_soon(leave_and_resume)
    whole = "".join(seen)
    assert got == {"follow": whole, "resumed": whole}


def ending_scripts() -> dict[str, tuple[list[object], str]]:
    return {
        "completed": ([ReasoningDelta("r"), TextDelta("t")], "completed"),
        "length": ([ReasoningDelta("r"), TextDelta("t"), Finish("length")], "length"),
        "provider error mid-reasoning": ([ReasoningDelta("r"), RuntimeError("boom")], "error"),
        "interrupted mid-reasoning": (
            [ReasoningDelta("r"), KeyboardInterrupt()],
            "cancelled_before_answer",
        ),
        "interrupted mid-answer": (
            [ReasoningDelta("r"), TextDelta("partial"), KeyboardInterrupt()],
            "cancelled_after_partial_answer",
        ),
    }


def assert_one_final(entries: list[Entry], status: str) -> None:
    finals = [entry for entry in entries if entry.final]
    assert len(finals) == 1 and entries[-1].final
    assert entries[-1].status == status
    assert all(entry.status is None for entry in entries[:-1])
    assert not ReasoningStream.split(chunks(entries), lossless=True).truncated


@pytest.mark.parametrize("ending", list(ending_scripts()))
def test_every_sync_exit_path_ends_with_one_final_entry(hub: Hub, ending: str) -> None:
    script, status = ending_scripts()[ending]
    pipe = ScriptedPipe(script)  # type: ignore[arg-type]
    stream_id = new_id()
    with contextlib.suppress(Exception, KeyboardInterrupt):
        hub.run(stream_id, pipe, "go")
    assert pipe.last_result is not None and pipe.last_result.status == status
    assert_one_final(hub.read(stream_id), status)


def test_a_raising_callback_handler_ends_with_one_final_error_entry(hub: Hub) -> None:
    def handler(error: Exception, chunk: object) -> None:
        raise RuntimeError("stop the run")

    def explode(chunk: str) -> None:
        if "b" in chunk:
            raise ValueError("callback fails")

    pipe = ScriptedPipe([ReasoningDelta("a"), TextDelta("b")], on_callback_error=handler)
    pipe.set_streaming_callback(explode)
    stream_id = new_id()
    with pytest.raises(Exception, match="aborted"):
        hub.run(stream_id, pipe, "go")
    assert_one_final(hub.read(stream_id), "error")


@pytest.mark.anyio
@pytest.mark.parametrize("ending", list(ending_scripts()))
async def test_every_async_exit_path_ends_with_one_final_entry(hub: Hub, ending: str) -> None:
    script, status = ending_scripts()[ending]
    pipe = ScriptedPipe(script)  # type: ignore[arg-type]
    stream_id = new_id()
    with contextlib.suppress(Exception, KeyboardInterrupt):
        await hub.arun(stream_id, pipe, "go")
    assert_one_final(await collect(hub, stream_id), status)


@pytest.mark.anyio
@pytest.mark.parametrize("answered", [False, True])
async def test_cancellation_ends_with_one_final_entry(hub: Hub, answered: bool) -> None:
    script: list[object] = [ReasoningDelta("thinking")]
    if answered:
        script.append(TextDelta("half an"))
    script += [60.0, TextDelta("never")]
    stream_id = new_id()
    with anyio.move_on_after(0.2):
        await hub.arun(stream_id, ScriptedPipe(script), "go")  # type: ignore[arg-type]
    status = "cancelled_after_partial_answer" if answered else "cancelled_before_answer"
    entries = await collect(hub, stream_id)
    assert_one_final(entries, status)
    with anyio.fail_after(1):  # no reader of a finished stream waits
        assert await collect(hub, stream_id, after=entries[-1].id) == []


@pytest.mark.anyio
async def test_streams_never_mix(hub: Hub) -> None:
    def script(n: int) -> list[object]:
        return [
            item
            for k in range(6)
            for item in (0.001 * (n % 3), ReasoningDelta(f"[{n}:{k}]"), TextDelta(f"({n}:{k})"))
        ]

    pipes = {new_id(): ScriptedPipe(script(n)) for n in range(8)}  # type: ignore[arg-type]
    seen = {stream_id: recording(pipe) for stream_id, pipe in pipes.items()}
    read: dict[str, str] = {}

    async def reader(stream_id: str) -> None:
        read[stream_id] = chunks(await collect(hub, stream_id))

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            for stream_id, pipe in pipes.items():
                group.start_soon(reader, stream_id)
                group.start_soon(hub.arun, stream_id, pipe, "go")
    assert read == {stream_id: "".join(chunks) for stream_id, chunks in seen.items()}


def opaque_script() -> list[object]:
    from reasoning_stream import OpaqueState, ReasoningState

    state = ReasoningState("scripted", "m", "signature", "SECRET-SIGNATURE-PAYLOAD", block=0)
    return [ReasoningDelta("visible"), OpaqueState(state), TextDelta("answer")]


def test_opaque_state_is_never_published(hub: Hub) -> None:
    stream_id = new_id()
    result = hub.run(stream_id, ScriptedPipe(opaque_script()), "go")  # type: ignore[arg-type]
    assert result.reasoning_state  # captured on the result...
    entries = hub.read(stream_id)
    assert "SECRET" not in repr(entries)  # ...and in no entry
    assert all(entry.event is None or entry.event.kind != "opaque_state" for entry in entries)
    from reasoning_stream.hub import RedisHub

    if isinstance(hub, RedisHub):
        from reasoning_stream._redis_client import connect
        from reasoning_stream.hub._redis_codec import stream_keys

        client = connect(hub.url, cluster=hub.cluster)
        keys = stream_keys(hub.prefix, stream_id)
        assert client.exists(*keys) == 2  # the log and the claim (the lease ended with the run)
        for key in keys:
            dumped = client.dump(key) or b""
            assert b"SECRET" not in dumped
        client.close()


@LAWS
@given(text=tag_text())
def test_a_pipeline_is_one_stream(hub: Hub, text: str) -> None:
    first = ScriptedPipe([ReasoningDelta(text), TextDelta("x<thi")], name="first")
    second = ScriptedPipe(lambda prompt: [TextDelta("nk>" + text)], name="second")
    pipeline = first | second
    seen: list[str] = []
    pipeline.set_streaming_callback(seen.append)
    stream_id = new_id()
    result = hub.run(stream_id, pipeline, "go")
    entries = hub.read(stream_id)
    assert chunks(entries) == "".join(seen)
    assert_one_final(entries, "completed")
    assert result.text == "nk>" + text
    sources = {entry.event.source for entry in entries if entry.event is not None}
    assert sources <= {"first", "second"}


@pytest.mark.anyio
async def test_slow_and_crashed_readers_cost_the_run_nothing(hub: Hub) -> None:
    """A reader that stalls, one that leaves, and one whose event loop dies mid-stream."""
    script: list[object] = [
        item for n in range(50) for item in (ReasoningDelta(f"r{n} "), TextDelta(f"t{n} "))
    ]
    stream_id = new_id()
    stalled = anyio.Event()

    async def stall() -> None:
        async for _ in hub.subscribe(stream_id, timeout=5):
            await stalled.wait()  # never consumes past the first entry

    async def leave() -> None:
        async for _ in hub.subscribe(stream_id, timeout=5):
            break

    def crash() -> None:
        async def reader() -> None:
            with anyio.fail_after(WAIT):  # a TimeoutError here is no RuntimeError: it fails
                async for _ in hub.subscribe(stream_id, timeout=5):
                    raise RuntimeError("reader crashed")

        with pytest.raises(RuntimeError):
            anyio.run(reader)

    callback_errors: list[object] = []
    pipe = ScriptedPipe(script, on_callback_error=lambda e, c: callback_errors.append(e))  # type: ignore[arg-type]
    seen = recording(pipe)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            group.start_soon(stall)
            group.start_soon(leave)
            group.start_soon(anyio.to_thread.run_sync, crash)
            await anyio.sleep(0.05)
            result = await hub.arun(stream_id, pipe, "go")
            assert result.status == "completed" and callback_errors == []
            assert chunks(hub.read(stream_id)) == "".join(seen)
            stalled.set()


def test_memory_hub_serves_readers_on_other_threads_and_loops() -> None:
    """A sync run in one thread; readers on asyncio and on trio loops in other threads."""
    import threading

    from reasoning_stream.hub import MemoryHub

    hub = MemoryHub()
    stream_id = new_id()
    script: list[object] = [item for n in range(20) for item in (0.002, TextDelta(f"{n},"))]
    got: dict[str, str] = {}

    def reader(backend: str) -> Callable[[], None]:
        def go() -> None:
            got[backend] = chunks(anyio.run(collect, hub, stream_id, backend=backend))

        return go

    threads = [threading.Thread(target=reader(b)) for b in ("asyncio", "trio")]
    for thread in threads:
        thread.start()
    pipe = ScriptedPipe(script)  # type: ignore[arg-type]
    seen = recording(pipe)
    hub.run(stream_id, pipe, "go")
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive(), "a reader thread did not finish"
    assert got == {"asyncio": "".join(seen), "trio": "".join(seen)}


def test_a_reader_whose_event_loop_died_costs_the_run_nothing(hub: Hub) -> None:
    """The reader's loop is gone without any cleanup (its thread crashed): waking it is a no-op."""
    import asyncio

    stream_id = new_id()
    loop = asyncio.new_event_loop()
    reader = hub.subscribe(stream_id, timeout=30)
    pending = loop.create_task(reader.__anext__())  # type: ignore[arg-type]
    loop.run_until_complete(asyncio.sleep(0.3))  # the reader now waits for the stream
    loop.close()  # dies with the reader still registered
    callback_errors: list[object] = []
    pipe = ScriptedPipe(
        [ReasoningDelta("r"), TextDelta("t")],
        on_callback_error=lambda error, chunk: callback_errors.append(error),
    )
    seen = recording(pipe)
    assert hub.run(stream_id, pipe, "go").status == "completed"
    assert callback_errors == []
    assert chunks(hub.read(stream_id)) == "".join(seen)
    del pending, reader


@pytest.mark.anyio
async def test_many_readers_leaving_and_resuming_during_a_live_run(hub: Hub) -> None:
    """Readers join, leave after k entries and resume after entry k while the run streams:
    on Redis they share one reader thread whose reads are in flight when they join."""
    script: list[object] = [
        item
        for n in range(80)
        for item in (0.002, ReasoningDelta(f"r{n} ") if n < 50 else TextDelta(f"t{n} "))
    ]
    pipe = ScriptedPipe(script)  # type: ignore[arg-type]
    seen = recording(pipe)
    stream_id = new_id()
    got: list[str] = []

    async def reader(leave_after: int, delay: float) -> None:
        await anyio.sleep(delay)
        first: list[Entry] = []
        async for entry in hub.subscribe(stream_id, timeout=5):
            first.append(entry)
            if len(first) == leave_after:
                break
        if first and first[-1].final:
            got.append(chunks(first))
            return
        got.append(chunks(first) + chunks(await collect(hub, stream_id, after=first[-1].id)))

    with anyio.fail_after(2 * WAIT):  # a lost entry would leave a reader waiting
        async with anyio.create_task_group() as group:
            for n in range(24):
                group.start_soon(reader, 1 + (n * 7) % 60, (n % 8) * 0.02)
            group.start_soon(hub.arun, stream_id, pipe, "go")
    assert got == ["".join(seen)] * 24
