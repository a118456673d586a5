"""The drivers' shortcuts change nothing: a lone subscriber sees what it would among others.

A plain delta for a lone streaming callback may skip the channel (``Channel.lane``), and ``arun``
reads the events of a script or a wire chunk in batches. These laws compare each run with the
same run where a second, passive subscriber keeps every delta on the channel's general path:
for scripts that open and close lanes often, for every action a callback can take mid-run at
every chunk, and for a cancellation at every chunk.

Budgets: the script law runs 300 examples (each in three drivers, two callback kinds, two
audiences: about 2 s); the action and cancellation laws are exhaustive over one script.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import (
    Event,
    Finish,
    Pipe,
    PipeResult,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ReasoningStream,
    TextDelta,
)
from reasoning_stream.testing import ScriptedPipe, ScriptItem
from reasoning_stream.testing.strategies import expected_from_script, tag_text
from tests.helpers import examples
from tests.reference import reference_escape

OPEN, CLOSE = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG
CANCELLED = ("cancelled_before_answer", "cancelled_after_partial_answer")
# (driver, kind of the subscriber's callback): run() takes sync callbacks only.
COMBINATIONS = (("sync", "sync"), ("asyncio", "sync"), ("asyncio", "async"), ("trio", "async"))

# Deltas without "<" may take a lane; those that end in "<" or an unfinished tag must close it,
# and the ends of tags without a "<" must then be escaped as the rest of a tag.
PLAIN = st.sampled_from(["a", "b c", "", "\\", "x\\\\", "é\n", " "])
ENDS = st.sampled_from(["think>", "/thinking >", "nk> a", "\\think>", "ING\t>", "/", "thi"])
OPENINGS = st.sampled_from(["x<", "<", "a</", "<\\", "<thi", "</THINK"])
PIECES = st.one_of(PLAIN, PLAIN, ENDS, OPENINGS, tag_text(max_fragments=3))


def lane_scripts(max_size: int = 20) -> st.SearchStrategy[list[ScriptItem]]:
    """Scripts whose deltas are mostly plain, so lanes open, close and reopen within a run."""
    return st.lists(
        st.one_of(
            st.just(ReasoningStart()),
            st.just(ReasoningEnd()),
            PIECES.map(ReasoningDelta),
            PIECES.map(TextDelta),
            PIECES,
            st.sampled_from([Finish("stop"), Finish("length")]),
            st.just(0),
            st.sampled_from([ValueError, TimeoutError]).map(lambda kind: kind("scripted failure")),
        ),
        max_size=max_size,
    )


def balanced(chunks: list[str]) -> bool:
    depth = 0
    for chunk in chunks:
        depth += (chunk == OPEN) - (chunk == CLOSE)
        if depth not in (0, 1):
            return False
    return depth == 0


def summary(result: PipeResult | None) -> tuple[Any, ...] | None:
    """A result without its clock readings."""
    if result is None:
        return None
    return (result.text, result.reasoning_segments, result.status, result.finish_reason)


def drive(pipe: Pipe, driver: str) -> str | None:
    """Run ``pipe`` with one driver; the name of the error it raised, if any."""
    try:
        if driver == "sync":
            pipe.run("p")
        else:

            async def main() -> None:
                await pipe.arun("p")

            anyio.run(main, backend=driver)
    except Exception as error:
        return type(error).__name__
    return None


def subscriber(kind: str, chunks: list[str], act: Callable[[str], None] | None = None) -> Any:
    """A streaming callback of ``kind`` that acts on a chunk, then keeps it."""

    def keep(chunk: str) -> None:
        if act is not None:
            act(chunk)
        chunks.append(chunk)

    if kind == "sync":
        return keep

    async def akeep(chunk: str) -> None:
        keep(chunk)

    return akeep


# --- scripts that open and close lanes ------------------------------------------------------


@dataclass
class Played:
    chunks: list[str]
    result: tuple[Any, ...] | None
    error: str | None
    events: list[Any] = field(default_factory=list)


def play(
    script: list[ScriptItem],
    driver: str,
    kind: str,
    *,
    witnessed: bool,
    events: bool = False,
    **options: Any,
) -> Played:
    chunks: list[str] = []
    witness: list[str] = []
    typed: list[Any] = []
    pipe = ScriptedPipe(script, **options).set_streaming_callback(subscriber(kind, chunks))
    if events:
        pipe.set_event_callback(typed.append)
    if witnessed:
        pipe.set_streaming_callback(witness.append)
    error = drive(pipe, driver)
    if witnessed:
        assert witness == chunks
    return Played(chunks, summary(pipe.last_result), error, [(e, e.source) for e in typed])


@settings(max_examples=examples(300), deadline=None)
@given(script=lane_scripts(), gate=st.booleans(), escape=st.booleans())
def test_a_lone_subscriber_gets_what_it_would_among_others(
    script: list[ScriptItem], gate: bool, escape: bool
) -> None:
    """Alone or beside another subscriber, sync or async, in every driver: the same chunks,
    result and error; never an empty chunk; escaped, the chunks split into the script."""
    options = {"stream_model_reasoning": gate, "escape_markers": escape}
    for events in (True, False):
        reference = play(script, "sync", "sync", witnessed=True, events=events, **options)
        for driver, kind in COMBINATIONS:
            assert play(script, driver, kind, witnessed=False, events=events, **options) == (
                reference
            )
    chunks = reference.chunks
    assert all(type(chunk) is str and chunk for chunk in chunks)
    segments, text = expected_from_script(script)
    if escape:
        # Unescaped payloads may forge markers: these laws are for escaped channels only.
        assert balanced(chunks)
        collected = ReasoningStream.split("".join(chunks), lossless=True)
        assert (list(collected.segments), collected.text) == (segments if gate else [], text)
    if not gate:
        assert "".join(chunks) == (reference_escape(text) if escape else text)


# --- a callback acting mid-run, at every chunk ----------------------------------------------

SCRIPT: list[ScriptItem] = [
    ReasoningDelta("weigh "),
    ReasoningDelta("the "),
    ReasoningDelta("x<thi"),
    ReasoningDelta("nk> options "),
    ReasoningDelta("then "),
    0,
    ReasoningEnd(),
    TextDelta("First "),
    "answer ",
    TextDelta("is "),
    ReasoningDelta("again"),
    TextDelta("answer <"),
    TextDelta("/think> done"),
    TextDelta(" and "),
    0,
    TextDelta("more."),
    Finish("stop"),
]


@dataclass
class Scene:
    """What one acting run leaves behind, for comparison between audiences."""

    pipe: ScriptedPipe
    actor: Any = None
    joined: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


ACTIONS: dict[str, Callable[[Scene], object]] = {
    "a subscriber joins": lambda s: s.pipe.set_streaming_callback(s.joined.append),
    "the actor leaves": lambda s: s.pipe.remove_streaming_callback(s.actor),
    "an event callback joins": lambda s: s.pipe.set_event_callback(s.events.append),
    "an event callback joins, then text is emitted": lambda s: (
        s.pipe.set_event_callback(s.events.append),
        s.pipe.emit_text("y "),
    ),
    "an event callback joins, then reasoning is emitted": lambda s: (
        s.pipe.set_event_callback(s.events.append),
        s.pipe.emit_reasoning_chunk("z "),
    ),
    "the gate closes": lambda s: s.pipe.set_stream_model_reasoning(False),
    "the gate attribute closes": lambda s: setattr(s.pipe, "stream_model_reasoning", False),
    "escaping stops": lambda s: setattr(s.pipe, "escape_markers", False),
    "text is emitted": lambda s: s.pipe.emit_text("y<thi"),
    "reasoning is emitted": lambda s: s.pipe.emit_reasoning_chunk("nk> z "),
    "plain reasoning is emitted": lambda s: s.pipe.emit_reasoning_chunk("z "),
    "the segment is ended": lambda s: s.pipe.emit_reasoning_end(),
}


def act_at(
    k: int, action: str, driver: str, kind: str, *, witnessed: bool
) -> tuple[list[str], list[str], list[Event], tuple[Any, ...] | None, str | None]:
    scene = Scene(ScriptedPipe(SCRIPT))
    chunks: list[str] = []
    seen = 0

    def act(chunk: str) -> None:
        nonlocal seen
        seen += 1
        if seen == k:
            ACTIONS[action](scene)

    scene.actor = subscriber(kind, chunks, act)
    scene.pipe.set_streaming_callback(scene.actor)
    if witnessed:
        scene.pipe.set_streaming_callback([].append)
    error = drive(scene.pipe, driver)
    return chunks, scene.joined, scene.events, summary(scene.pipe.last_result), error


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_a_callback_acting_at_any_chunk_sees_what_it_would_among_others(action: str) -> None:
    """Callbacks joining and leaving, the gate and escaping switched, hooks called from the
    callback: at every chunk, in every driver, the actor, a subscriber that joins and the event
    callbacks get the same as when another subscriber listens too."""
    total = len(play(SCRIPT, "sync", "sync", witnessed=False).chunks)
    assert total > 10
    for k in range(1, total + 1):
        reference = act_at(k, action, "sync", "sync", witnessed=True)
        assert balanced(reference[0]) or action == "the actor leaves"
        for driver, kind in COMBINATIONS:
            assert act_at(k, action, driver, kind, witnessed=False) == reference, (k, driver)


# --- a lane shared with one event callback, interrupted at every chunk -----------------------


def interrupt_at(
    k: int, how: str, driver: str, kind: str, *, witnessed: bool
) -> tuple[list[str], list[tuple[Event, str | None]], tuple[Any, ...] | None, str | None]:
    """The streaming callback breaks the run at its k-th chunk: it raises into an error handler
    that aborts, or it cancels the run. What did it and the one event callback get?"""
    chunks: list[str] = []
    typed: list[Event] = []
    scopes: list[anyio.CancelScope] = []

    def act(chunk: str) -> None:
        if len(chunks) + 1 == k:
            if how == "raises":
                raise RuntimeError("the callback broke")
            scopes[0].cancel()

    def abort(error: BaseException, chunk: object) -> None:
        raise error

    pipe = ScriptedPipe(SCRIPT, on_callback_error=abort)
    pipe.set_streaming_callback(subscriber(kind, chunks, act))
    pipe.set_event_callback(typed.append)
    if witnessed:
        pipe.set_streaming_callback([].append)
    if driver == "sync":
        error = drive(pipe, driver)
    else:

        async def main() -> str | None:
            scopes.append(anyio.CancelScope())
            with scopes[0]:
                try:
                    await pipe.arun("p")
                except Exception as failure:
                    return type(failure).__name__
            return None

        error = anyio.run(main, backend=driver)
    return chunks, [(e, e.source) for e in typed], summary(pipe.last_result), error


@pytest.mark.parametrize("how", ["raises", "cancels"])
def test_an_interrupted_lane_hands_its_event_callback_what_it_would_among_others(
    how: str,
) -> None:
    """One streaming and one event callback share a lane. When the streaming callback's chunk
    ends the run (an error handler that raises, a cancellation), the event callback still gets
    that chunk's typed delta in the closing delivery, as it does when a second subscriber keeps
    every delta on the channel's general path."""
    total = len(play(SCRIPT, "sync", "sync", witnessed=False).chunks)
    for driver, kind in COMBINATIONS:
        if how == "cancels" and driver == "sync":
            continue
        for k in range(1, total + 1):
            reference = interrupt_at(k, how, driver, kind, witnessed=True)
            assert interrupt_at(k, how, driver, kind, witnessed=False) == reference, (k, driver)


# --- cancellation of a lone subscriber's run, at every chunk ----------------------------------


def assert_channel_is_capture(chunks: list[str], result: PipeResult | None) -> None:
    assert result is not None
    assert balanced(chunks)
    split = ReasoningStream.split("".join(chunks), lossless=True)
    assert (split.reasoning, split.text) == (result.model_reasoning, result.text)


@pytest.mark.parametrize("kind", ["sync", "async", "async, checkpointing"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_lone_subscriber_cancelling_at_any_chunk_keeps_channel_and_capture_equal(
    backend: str, kind: str
) -> None:
    """The subscriber cancels the run from its k-th chunk, for every k (an async one may then
    reach a checkpoint inside its own call): cancelled, balanced, and what it got is what the
    result holds."""
    total = len(play(SCRIPT, "sync", "sync", witnessed=False).chunks)

    async def once(k: int) -> tuple[list[str], PipeResult | None]:
        chunks: list[str] = []
        scope = anyio.CancelScope()
        pipe = ScriptedPipe(SCRIPT)

        def cancel(chunk: str) -> None:
            if len(chunks) + 1 == k:
                scope.cancel()

        if kind == "async, checkpointing":

            async def checkpointing(chunk: str) -> None:
                cancel(chunk)
                chunks.append(chunk)
                await anyio.sleep(0)

            pipe.set_streaming_callback(checkpointing)
        else:
            pipe.set_streaming_callback(subscriber(kind.split(",")[0], chunks, cancel))
        with scope:
            await pipe.arun("p")
        return chunks, pipe.last_result

    for k in range(1, total):
        chunks, result = anyio.run(once, k, backend=backend)
        assert result is not None and result.status in CANCELLED, (k, result)
        assert_channel_is_capture(chunks, result)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_stuck_lone_subscriber_does_not_hold_up_a_cancellation(backend: str) -> None:
    async def main() -> tuple[float, list[str], PipeResult | None]:
        chunks: list[str] = []

        async def stuck(chunk: str) -> None:
            chunks.append(chunk)
            await anyio.sleep(1.0)

        pipe = ScriptedPipe([ReasoningDelta("a"), ReasoningDelta("b"), TextDelta("t")])
        pipe.set_streaming_callback(stuck)
        started = time.perf_counter()
        with anyio.move_on_after(0.05):
            await pipe.arun("p")
        return time.perf_counter() - started, chunks, pipe.last_result

    seconds, chunks, result = anyio.run(main, backend=backend)
    assert result is not None and result.status in CANCELLED
    assert seconds < 0.5, f"cancellation waited {seconds:.1f}s for a callback"
    assert_channel_is_capture(chunks, result)


# --- what the shortcuts must not skip -----------------------------------------------------


@pytest.mark.parametrize("driver", ["sync", "asyncio", "trio"])
@pytest.mark.parametrize("kind", [TextDelta, ReasoningDelta])
def test_a_non_str_delta_on_an_open_lane_is_a_usage_error(driver: str, kind: type) -> None:
    """The delta after two plain ones of its kind: the lane is open, and refuses it."""
    chunks: list[str] = []
    script: list[ScriptItem] = [kind("a"), kind("b"), kind(["x"])]
    pipe = ScriptedPipe(script).set_streaming_callback(chunks.append)
    assert drive(pipe, driver) == "UsageError"
    assert pipe.last_result is not None and pipe.last_result.status == "error"
    assert chunks == (["a", "b"] if kind is TextDelta else [OPEN, "a", "b", CLOSE])


@pytest.mark.parametrize("driver", ["sync", "asyncio", "trio"])
def test_a_subclass_that_overrides_a_delta_hook_sees_every_delta(driver: str) -> None:
    seen: list[str] = []

    class Watching(ScriptedPipe):
        def emit_text(self, delta: str | None) -> None:
            seen.append(f"t:{delta}")
            super().emit_text(delta)

        def emit_reasoning_chunk(self, delta: str | None) -> None:
            seen.append(f"r:{delta}")
            super().emit_reasoning_chunk(delta)

    chunks: list[str] = []
    script: list[ScriptItem] = [ReasoningDelta("a"), ReasoningDelta("b"), "c", "d", "e"]
    pipe = Watching(script).set_streaming_callback(chunks.append)
    assert drive(pipe, driver) is None
    assert seen == ["r:a", "r:b", "t:c", "t:d", "t:e"]
    assert chunks == [OPEN, "a", "b", CLOSE, "c", "d", "e"]


@pytest.mark.anyio
async def test_a_subclass_that_overrides_aiter_events_is_read_through_it() -> None:
    class Doubling(ScriptedPipe):
        async def aiter_events(self, prompt: Any) -> Any:
            async for event in super().aiter_events(prompt):
                yield event
                yield event

    result = await Doubling(["a", "b"]).arun("p")
    assert result.text == "aabb"


@pytest.mark.parametrize("driver", ["sync", "asyncio", "trio"])
def test_a_lazy_script_is_read_no_further_than_the_run_has_got(driver: str) -> None:
    """A script produced lazily is never read ahead: each chunk arrives before the next item
    is drawn."""
    drawn: list[int] = []
    at_chunk: list[int] = []

    def script(prompt: Any) -> Iterator[ScriptItem]:
        for index in range(6):
            drawn.append(index)
            yield TextDelta(f"t{index}")

    pipe = ScriptedPipe(script).set_streaming_callback(lambda chunk: at_chunk.append(len(drawn)))
    assert drive(pipe, driver) is None
    assert at_chunk == [1, 2, 3, 4, 5, 6]
