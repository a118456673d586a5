"""The six channel bugs of issue 12, each pinned by the smallest run that showed it."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from reasoning_stream import (
    CallbackError,
    Conversation,
    Event,
    Pipe,
    Pipeline,
    PipeResult,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ReasoningState,
    ReasoningStream,
    TextDelta,
    UsageError,
)
from reasoning_stream.testing import ScriptedPipe

OPEN, CLOSE = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG


# --- 1. a run owns its channel: second runs are refused before anything is touched ---------


def test_a_reentrant_pipeline_run_is_refused_and_the_outer_channel_stays_whole() -> None:
    chunks: list[str] = []
    refused: list[BaseException] = []
    pipeline = Pipeline(
        ScriptedPipe([ReasoningDelta("r1"), TextDelta("x")]), ScriptedPipe([TextDelta("y")])
    )

    def callback(chunk: str) -> None:
        chunks.append(chunk)
        if chunk == "r1":
            try:
                pipeline.run("again")
            except UsageError as error:
                refused.append(error)

    result = pipeline.set_streaming_callback(callback).run("p")
    assert len(refused) == 1 and "already running" in str(refused[0])
    assert chunks == [OPEN, "r1", CLOSE, "x", "y"]
    assert result.text == "y"
    # Nothing was left claimed: the pipeline and its pipes run again.
    assert pipeline.run("p").text == "y"
    assert pipeline.pipes[0].run("p").text == "x"


@pytest.mark.anyio
async def test_a_concurrent_arun_of_the_same_pipeline_is_refused_and_loses_no_byte() -> None:
    chunks: list[str] = []
    pipeline = ScriptedPipe([TextDelta("x<thi"), 0.05]) | ScriptedPipe([TextDelta("nk>")])
    pipeline.set_streaming_callback(chunks.append)
    async with anyio.create_task_group() as group:
        group.start_soon(pipeline.arun, "p")
        await anyio.sleep(0.01)
        with pytest.raises(UsageError, match="already running"):
            await pipeline.arun("p")
    assert "".join(chunks) == "x<\\think>"
    assert ReasoningStream.split("".join(chunks), lossless=True).text == "x<think>"


@pytest.mark.anyio
async def test_a_pipeline_cannot_start_while_one_of_its_pipes_runs_alone() -> None:
    chunks: list[str] = []
    # The lone run holds its pipe for 0.5 s after its first chunk: the pipeline starts as soon
    # as that chunk is seen, so even a loaded machine cannot let the lone run end first.
    alone = ScriptedPipe([ReasoningDelta("r"), 0.5]).set_streaming_callback(chunks.append)
    pipeline = alone | ScriptedPipe([TextDelta("t")])
    async with anyio.create_task_group() as group:
        group.start_soon(alone.arun, "p")
        with anyio.fail_after(10):
            while "r" not in chunks:
                await anyio.sleep(0.001)
        with pytest.raises(UsageError, match="already running"):
            await pipeline.arun("p")
    assert chunks == [OPEN, "r", CLOSE]
    assert alone.last_result is not None and alone.last_result.status == "completed"


def test_a_pipe_cannot_run_alone_while_its_pipeline_runs() -> None:
    first = ScriptedPipe([ReasoningDelta("r"), TextDelta("t")])
    refused: list[UsageError] = []

    def callback(chunk: str) -> None:
        if chunk == "r":
            try:
                first.run("alone")
            except UsageError as error:
                refused.append(error)

    chunks: list[str] = []
    pipeline = (first | ScriptedPipe([TextDelta("u")])).set_streaming_callback(callback)
    pipeline.set_streaming_callback(chunks.append).run("p")
    assert len(refused) == 1
    assert chunks == [OPEN, "r", CLOSE, "t", "u"]


# --- 2. escaping across pipes whatever the audiences ------------------------------------------


def test_escaping_spans_pipes_with_different_callbacks() -> None:
    both: list[str] = []
    other: list[str] = []
    first = ScriptedPipe([TextDelta("x<thi")]).set_streaming_callback(both.append)
    second = ScriptedPipe([TextDelta("nk>y")])
    second.set_streaming_callback(both.append).set_streaming_callback(other.append)
    (first | second).run("p")
    seen_by_both = ReasoningStream.split("".join(both), lossless=True)
    assert (seen_by_both.segments, seen_by_both.text) == ((), "x<think>y")
    seen_by_other = ReasoningStream.split("".join(other), lossless=True)
    assert (seen_by_other.segments, seen_by_other.text) == ((), "nk>y")
    assert "".join(other) == "nk>y"


def test_a_subscriber_that_skips_a_pipe_still_sees_one_escaped_stream() -> None:
    seen: list[str] = []
    first = ScriptedPipe([TextDelta("x<thi")]).set_streaming_callback(seen.append)
    middle = ScriptedPipe([TextDelta("m")])
    last = ScriptedPipe([TextDelta("nk>")]).set_streaming_callback(seen.append)
    (first | middle | last).run("p")
    assert ReasoningStream.split("".join(seen), lossless=True).text == "x<think>"


def test_a_subscriber_that_leaves_keeps_what_was_held_for_it() -> None:
    stays: list[str] = []
    leaves: list[str] = []
    first = ScriptedPipe([TextDelta("x<thi")])
    first.set_streaming_callback(stays.append).set_streaming_callback(leaves.append)
    second = ScriptedPipe([TextDelta("nk>")]).set_streaming_callback(stays.append)
    (first | second).run("p")
    assert "".join(stays) == "x<\\think>"
    assert "".join(leaves) == "x<thi"


# --- 3. a non-str delta is misuse: UsageError, the result kept, the pipe usable ---------------


@pytest.mark.parametrize("escape", [True, False])
def test_a_non_str_delta_is_a_usage_error_and_the_pipe_stays_usable(escape: bool) -> None:
    chunks: list[str] = []
    script: list[Any] = [ReasoningDelta("r"), TextDelta(5)]  # type: ignore[arg-type]
    pipe = ScriptedPipe(script, escape_markers=escape).set_streaming_callback(chunks.append)
    with pytest.raises(UsageError, match="must be str") as caught:
        pipe.run("x")
    assert pipe.last_result is not None
    assert caught.value.result is pipe.last_result
    assert pipe.last_result.status == "error"
    assert pipe.last_result.model_reasoning == "r"
    assert chunks == [OPEN, "r", CLOSE]
    pipe._script = (TextDelta("fine"),)  # type: ignore[attr-defined]
    assert pipe.run("x").text == "fine"


@pytest.mark.anyio
async def test_a_non_str_reasoning_delta_in_arun() -> None:
    pipe = ScriptedPipe([ReasoningDelta(b"bytes")])  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="must be str"):
        await pipe.arun("x")
    assert pipe.last_result is not None and pipe.last_result.status == "error"
    pipe._script = (TextDelta("ok"),)  # type: ignore[attr-defined]
    assert (await pipe.arun("x")).text == "ok"


def test_a_failure_while_concluding_does_not_leave_the_pipe_running() -> None:
    class Failing(ScriptedPipe):
        fail = True

        def redact_secrets(self, error: BaseException) -> None:
            if self.fail:
                raise RuntimeError("redaction broke")

    pipe = Failing([ValueError("boom")])
    with pytest.raises(RuntimeError, match="redaction broke"):
        pipe.run("x")
    assert pipe.last_result is not None and pipe.last_result.status == "error"
    pipe.fail = False
    pipe._script = (TextDelta("again"),)
    assert pipe.run("x").text == "again"


def test_hooks_refuse_non_str_outside_a_run() -> None:
    pipe = Pipe()
    with pytest.raises(UsageError):
        pipe.emit_text(3)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        pipe.emit_reasoning_chunk(["list"])  # type: ignore[arg-type]


# --- 4. event subscribers get a whole sequence even when the error handler aborts -----------


def test_event_callbacks_keep_a_whole_sequence_when_the_handler_raises() -> None:
    good: list[Event] = []

    def bad(event: Event) -> None:
        if isinstance(event, ReasoningStart):
            raise RuntimeError("subscriber bug")

    def strict(error: Exception, item: object) -> None:
        raise error

    pipe = ScriptedPipe([ReasoningDelta("r"), TextDelta("t")], on_callback_error=strict)
    pipe.set_event_callback(bad).set_event_callback(good.append)
    with pytest.raises(CallbackError):
        pipe.run("p")
    assert good[:3] == [ReasoningStart(), ReasoningDelta("r"), ReasoningEnd()]
    assert good.count(ReasoningEnd()) == good.count(ReasoningStart())


@pytest.mark.anyio
async def test_async_event_callbacks_keep_a_whole_sequence_when_the_handler_raises() -> None:
    good: list[Event] = []

    async def bad(event: Event) -> None:
        if isinstance(event, ReasoningStart):
            raise RuntimeError("subscriber bug")

    async def collect(event: Event) -> None:
        good.append(event)

    def strict(error: Exception, item: object) -> None:
        raise error

    pipe = ScriptedPipe([ReasoningDelta("r"), TextDelta("t")], on_callback_error=strict)
    pipe.set_event_callback(bad).set_event_callback(collect)
    with pytest.raises(CallbackError):
        await pipe.arun("p")
    assert good[:3] == [ReasoningStart(), ReasoningDelta("r"), ReasoningEnd()]


# --- 5. a re-entrant emit: every subscriber sees one order ----------------------------------


def test_a_reentrant_emit_gives_every_subscriber_one_order() -> None:
    first: list[str] = []
    second: list[str] = []
    pipe = Pipe()

    def echo(chunk: str) -> None:
        first.append(chunk)
        if chunk == "a":
            pipe.emit_text("X")

    pipe.set_streaming_callback(echo).set_streaming_callback(second.append)
    pipe.emit_text("a")
    pipe.emit_text("b")
    assert first == second == ["a", "X", "b"]


def test_a_reentrant_emit_inside_a_run_gives_every_subscriber_one_order() -> None:
    first: list[str] = []
    second: list[str] = []
    pipe = ScriptedPipe([ReasoningDelta("r"), TextDelta("a"), TextDelta("b")])

    def echo(chunk: str) -> None:
        first.append(chunk)
        if chunk == "a":
            pipe.emit_text("X")

    pipe.set_streaming_callback(echo).set_streaming_callback(second.append)
    result = pipe.run("p")
    assert first == second == [OPEN, "r", CLOSE, "a", "X", "b"]
    assert result.text == "aXb"


@pytest.mark.anyio
async def test_a_reentrant_emit_from_an_async_callback_gives_one_order() -> None:
    first: list[str] = []
    second: list[str] = []
    pipe = ScriptedPipe([TextDelta("a"), TextDelta("b")])

    async def echo(chunk: str) -> None:
        first.append(chunk)
        if chunk == "a":
            pipe.emit_text("X")

    async def collect(chunk: str) -> None:
        second.append(chunk)

    pipe.set_streaming_callback(echo).set_streaming_callback(collect)
    await pipe.arun("p")
    assert first == second == ["a", "X", "b"]


# --- 6. bytes anywhere in opaque state survive dumps/loads as base64 -------------------------


def test_bytes_inside_reasoning_state_extra_round_trip_as_base64() -> None:
    state = ReasoningState(
        provider="scripted",
        model="m",
        kind="encrypted",
        payload=b"\x00\xffpayload",
        extra={"nonce": b"\x01\x02", "nested": {"blobs": [b"\x03", "text"]}, "n": 1},
    )
    conversation = Conversation().add_user("hi")
    conversation.add(PipeResult(text="answer", reasoning_state=(state,), provider="scripted"))
    text = conversation.dumps()
    assert "AQI=" in text  # b"\x01\x02" in base64
    restored = Conversation.loads(text)
    assert restored.dumps() == text
    record = restored.record(-1)
    assert record is not None
    (back,) = record.states
    assert back.payload == b"\x00\xffpayload"
    assert back.extra == {"nonce": b"\x01\x02", "nested": {"blobs": [b"\x03", "text"]}, "n": 1}
