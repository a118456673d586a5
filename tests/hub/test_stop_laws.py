"""Stop laws, as properties (API.md section 14 with section 8's laws): a run stopped at any
point where its model goes silent ends with one final entry whose status, like the result's,
is ``cancelled_after_partial_answer`` when answer text went out and
``cancelled_before_answer`` otherwise; the channel is balanced and splits into exactly the
reasoning segments and text the script had produced, read from the script alone
(``expected_from_script``, an oracle that does not run the pipe or the hub)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning_stream import ReasoningStream
from reasoning_stream.hub import MemoryHub
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.testing.hypothesis_strategies import event_scripts, expected_from_script

SILENCE = 60.0


class Silent:
    """A script that plays ``prefix``, says it reached the silence, then sleeps."""

    def __init__(self, prefix: list[Any]) -> None:
        self.prefix = prefix
        self.reached = threading.Event()

    def __call__(self, prompt: object) -> Iterator[Any]:
        yield from self.prefix
        self.reached.set()
        yield SILENCE


def check(hub: MemoryHub, stream_id: str, prefix: list[Any], result: Any) -> None:
    segments, text = expected_from_script(prefix)
    status = "cancelled_after_partial_answer" if text else "cancelled_before_answer"
    entries = hub.read(stream_id)
    assert [entry.final for entry in entries].count(True) == 1 and entries[-1].final
    assert entries[-1].status == status == result.status
    split = ReasoningStream.split("".join(entry.chunk for entry in entries), lossless=True)
    assert not split.truncated  # every segment closed: the markers are balanced
    assert [s for s in split.segments if s] == segments
    assert split.text == text
    assert (split.reasoning, split.text) == (result.model_reasoning, result.text)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prefix=event_scripts(max_size=12))
def test_an_async_run_stopped_while_silent_ends_cancelled_and_balanced(
    backend: str, prefix: list[Any]
) -> None:
    hub = MemoryHub()
    stream_id = uuid.uuid4().hex
    silent = Silent(prefix)
    results: list[Any] = []

    async def main() -> None:
        async def run() -> None:
            results.append(await hub.arun(stream_id, ScriptedPipe(silent), "go"))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(run)
                while not silent.reached.is_set():
                    await anyio.sleep(0.001)
                assert await hub.astop(stream_id) is True

    anyio.run(main, backend=backend)
    check(hub, stream_id, prefix, results[0])
    assert hub.stop(stream_id) is False


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prefix=event_scripts(max_size=12), stop_early=st.booleans())
def test_a_sync_run_stopped_while_silent_ends_cancelled_and_balanced(
    prefix: list[Any], stop_early: bool
) -> None:
    hub = MemoryHub()
    stream_id = uuid.uuid4().hex
    silent = Silent(prefix)
    results: list[Any] = []
    thread = threading.Thread(
        target=lambda: results.append(hub.run(stream_id, ScriptedPipe(silent), "go"))
    )
    thread.start()
    assert silent.reached.wait(10)
    if not stop_early:
        time.sleep(0.01)
    assert hub.stop(stream_id) is True
    thread.join(5)
    assert not thread.is_alive()
    check(hub, stream_id, prefix, results[0])
