"""MemoryHub's own concurrency: a run on one thread appends without a lock, readers on others."""

from __future__ import annotations

import queue
import sys
import threading
import uuid
from collections.abc import Iterator

import anyio
import pytest

from reasoning_stream import ToolCall
from reasoning_stream.hub import MemoryHub
from reasoning_stream.testing import ScriptedPipe

STEPS = 2000


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_waiting_reader_is_woken_for_every_entry(backend: str) -> None:
    """Each entry reaches a reader that waits for it, with no later entry to wake it up.

    The run writes an entry, then waits until the reader on another thread has it; a lost
    wake-up (the run appending between the reader's look and its registration) would leave
    both waiting, and the run fails after 5 s. Tool calls, so one event is one entry; a tiny
    switch interval makes the threads interleave everywhere.
    """
    hub = MemoryHub()
    stream_id = f"mem-{uuid.uuid4().hex}"
    acks: queue.Queue[str] = queue.Queue()
    got: list[str] = []

    def script(prompt: object) -> Iterator[ToolCall]:
        for n in range(STEPS):
            yield ToolCall(f"call_{n}", "step", "{}")
            acks.get(timeout=5)

    async def follow() -> None:
        with anyio.fail_after(30):  # a lost final entry fails the reader instead of hanging it
            async for entry in hub.subscribe(stream_id, timeout=5):
                if isinstance(entry.event, ToolCall):
                    got.append(entry.event.id)
                    acks.put(entry.id)

    reader = threading.Thread(target=anyio.run, args=(follow,), kwargs={"backend": backend})
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        reader.start()
        result = hub.run(stream_id, ScriptedPipe(script), "go")
    finally:
        sys.setswitchinterval(interval)
        reader.join(30)
    assert not reader.is_alive(), "the reader did not finish"
    assert result.status == "completed"
    assert got == [f"call_{n}" for n in range(STEPS)]
