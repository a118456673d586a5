"""Pipe: the hook laws, the channel laws, capture, and every exit path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import (
    CallbackError,
    Event,
    Finish,
    Pipe,
    ProviderError,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ReasoningStream,
    TextDelta,
    ToolCall,
    Usage,
    UsageError,
    UsageReport,
)
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.testing.strategies import event_scripts, expected_from_script
from tests.helpers import examples
from tests.reference import reference_escape

OPEN, CLOSE = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG


def collecting_pipe(**options: Any) -> tuple[Pipe, list[str]]:
    chunks: list[str] = []
    pipe = Pipe(**options).set_streaming_callback(chunks.append)
    return pipe, chunks


# --- TPipe's pinned hook cases --------------------------------------------------------------


def test_flag_off_gives_zero_bytes() -> None:
    pipe, chunks = collecting_pipe()
    pipe.set_stream_model_reasoning(False)
    pipe.emit_reasoning_start()
    pipe.emit_reasoning_chunk("secret")
    pipe.emit_reasoning_end()
    pipe.emit_stream_end()
    assert chunks == []


def test_start_chunks_end() -> None:
    pipe, chunks = collecting_pipe()
    pipe.emit_reasoning_start()
    pipe.emit_reasoning_chunk("thought-a")
    pipe.emit_reasoning_chunk("thought-b")
    pipe.emit_reasoning_end()
    assert chunks == [OPEN, "thought-a", "thought-b", CLOSE]


def test_flag_defaults_on_and_setter_returns_the_pipe() -> None:
    pipe = Pipe()
    assert pipe.stream_model_reasoning is True
    assert pipe.set_stream_model_reasoning(False) is pipe
    assert pipe.stream_model_reasoning is False


def test_repeated_start_and_end_are_idempotent() -> None:
    pipe, chunks = collecting_pipe()
    pipe.emit_reasoning_start()
    pipe.emit_reasoning_start()
    pipe.emit_reasoning_chunk("x")
    pipe.emit_reasoning_start()
    pipe.emit_reasoning_end()
    pipe.emit_reasoning_end()
    assert chunks == [OPEN, "x", CLOSE]


def test_end_without_start_emits_nothing() -> None:
    pipe, chunks = collecting_pipe()
    pipe.emit_reasoning_end()
    assert chunks == []


def test_start_then_end_with_nothing_between_emits_nothing() -> None:
    pipe, chunks = collecting_pipe()
    pipe.emit_reasoning_start()
    pipe.emit_reasoning_end()
    pipe.emit_stream_end()
    assert chunks == []


def test_chunk_without_start_auto_opens() -> None:
    pipe, chunks = collecting_pipe()
    pipe.emit_reasoning_chunk("x")
    pipe.emit_stream_end()
    assert chunks == [OPEN, "x", CLOSE]


def test_explicit_end_then_end_of_run_closes_once() -> None:
    chunks: list[str] = []
    pipe = ScriptedPipe([ReasoningStart(), ReasoningDelta("r"), ReasoningEnd()])
    pipe.set_streaming_callback(chunks.append).run("p")
    assert chunks == [OPEN, "r", CLOSE]


def test_thinking_then_answer() -> None:
    pipe, chunks = collecting_pipe()
    pipe.emit_reasoning_start()
    pipe.emit_reasoning_chunk("thinking")
    pipe.emit_reasoning_end()
    pipe.emit_text("answer")
    assert chunks == [OPEN, "thinking", CLOSE, "answer"]


# --- our fixes ------------------------------------------------------------------------------


def test_text_auto_closes_an_open_segment() -> None:
    pipe, chunks = collecting_pipe()
    pipe.emit_reasoning_chunk("r")
    pipe.emit_text("t")
    assert chunks == [OPEN, "r", CLOSE, "t"]


def test_reasoning_after_text_opens_a_new_segment() -> None:
    pipe = ScriptedPipe(
        [ReasoningDelta("r1"), TextDelta("t1"), ReasoningDelta("r2"), TextDelta("t2")]
    )
    chunks: list[str] = []
    result = pipe.set_streaming_callback(chunks.append).run("p")
    assert chunks == [OPEN, "r1", CLOSE, "t1", OPEN, "r2", CLOSE, "t2"]
    assert result.reasoning_segments == ("r1", "r2")
    assert result.model_reasoning == "r1\nr2"
    assert result.text == "t1t2"


def test_none_and_empty_never_open_a_segment() -> None:
    pipe, chunks = collecting_pipe()
    pipe.emit_reasoning_chunk(None)
    pipe.emit_reasoning_chunk("")
    pipe.emit_text(None)
    pipe.emit_text("")
    pipe.emit_stream_end()
    assert chunks == []


def test_hooks_outside_a_run_release_held_characters_at_stream_end() -> None:
    pipe, chunks = collecting_pipe()
    pipe.emit_text("a <thin")
    assert "".join(chunks) == "a <"
    pipe.emit_stream_end()
    assert "".join(chunks) == "a <thin"


def test_escaping_is_on_by_default_and_can_be_turned_off() -> None:
    pipe, chunks = collecting_pipe()
    pipe.emit_text("say <think> now")
    pipe.emit_stream_end()
    assert "".join(chunks) == "say <\\think> now"
    raw, raw_chunks = collecting_pipe(escape_markers=False)
    raw.emit_text("say <think> now")
    raw.emit_stream_end()
    assert "".join(raw_chunks) == "say <think> now"


def test_callbacks_are_deduplicated_by_identity_and_removable() -> None:
    chunks: list[str] = []
    pipe = Pipe().set_streaming_callback(chunks.append)
    callback = chunks.append
    pipe.set_streaming_callback(callback).set_streaming_callback(callback)
    pipe.emit_text("x")
    assert chunks == ["x", "x"]  # two bound-method objects, one registered twice
    pipe.remove_streaming_callback(callback)
    pipe.emit_text("y")
    assert chunks == ["x", "x", "y"]


# --- capture and results --------------------------------------------------------------------


def test_result_captures_everything_whatever_the_flag() -> None:
    script: list[Any] = [
        ReasoningDelta("plan"),
        TextDelta("Hello"),
        ToolCall("call_1", "lookup", '{"q": 1}'),
        UsageReport(Usage(input_tokens=3, output_tokens=5)),
        UsageReport(Usage(reasoning_tokens=2)),
        Finish("tool_calls"),
    ]
    for flag in (True, False):
        chunks: list[str] = []
        pipe = ScriptedPipe(script).set_stream_model_reasoning(flag)
        result = pipe.set_streaming_callback(chunks.append).run("hi")
        assert result.model_reasoning == "plan"
        assert result.text == "Hello"
        assert result.tool_calls == (ToolCall("call_1", "lookup", '{"q": 1}'),)
        assert result.usage == Usage(3, 5, 2)
        assert result.status == "completed"
        assert result.finish_reason == "tool_calls"
        assert result.message == {
            "role": "assistant",
            "content": "Hello",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q": 1}'},
                }
            ],
            "thinking": "plan",
        }
        assert pipe.last_result is result
        assert pipe.last_thinking == "plan"
        assert "".join(chunks) == (f"{OPEN}plan{CLOSE}Hello" if flag else "Hello")


def test_message_has_no_thinking_key_without_reasoning() -> None:
    result = ScriptedPipe([TextDelta("hi")]).run("p")
    assert result.message == {"role": "assistant", "content": "hi"}


def test_timings_come_from_a_monotonic_clock() -> None:
    result = ScriptedPipe(
        [0.01, ReasoningDelta("a"), 0.02, ReasoningEnd(), TextDelta("b"), ReasoningDelta("c"), 0.01]
    ).run("p")
    timings = result.timings
    assert timings.time_to_first_reasoning is not None and timings.time_to_first_reasoning >= 0.01
    assert timings.time_to_first_text is not None
    assert timings.time_to_first_text >= timings.time_to_first_reasoning + 0.02
    assert 0.03 <= timings.reasoning_duration <= timings.total


def test_length_stop() -> None:
    chunks: list[str] = []
    pipe = ScriptedPipe([ReasoningDelta("long"), Finish("length")])
    result = pipe.set_streaming_callback(chunks.append).run("p")
    assert result.status == "length"
    assert chunks == [OPEN, "long", CLOSE]


def test_typed_events_carry_their_source_and_obey_the_gate() -> None:
    events: list[Event] = []
    pipe = ScriptedPipe([ReasoningDelta("r"), TextDelta("t"), Finish()], name="first")
    pipe.set_event_callback(events.append).run("p")
    assert events == [
        ReasoningStart(),
        ReasoningDelta("r"),
        ReasoningEnd(),
        TextDelta("t"),
        Finish(),
    ]
    assert {event.source for event in events} == {"first"}
    events.clear()
    pipe.set_stream_model_reasoning(False).run("p")
    assert events == [TextDelta("t"), Finish()]


@pytest.mark.parametrize("first", [True, False])
def test_the_gate_turned_mid_segment_keeps_events_framed_like_the_channel(first: bool) -> None:
    """Typed events obey the same gate as the channel (API section 4): where the channel
    opens a marker for reasoning that flows again, event callbacks get a ``ReasoningStart``,
    and every ``ReasoningStart`` gets its ``ReasoningEnd``."""
    chunks: list[str] = []
    events: list[Event] = []
    pipe = Pipe(stream_model_reasoning=first)
    pipe.set_streaming_callback(chunks.append).set_event_callback(events.append)
    pipe.emit_reasoning_chunk("a")
    pipe.set_stream_model_reasoning(not first)
    pipe.emit_reasoning_chunk("b")
    pipe.emit_text("t")
    pipe.emit_stream_end()
    shown = "a" if first else "b"
    assert chunks == [OPEN, shown, CLOSE, "t"]
    assert events == [ReasoningStart(), ReasoningDelta(shown), ReasoningEnd(), TextDelta("t")]


# --- exit paths -----------------------------------------------------------------------------


def balanced(chunks: list[str]) -> bool:
    depth = 0
    for chunk in chunks:
        if chunk == OPEN:
            depth += 1
        elif chunk == CLOSE:
            depth -= 1
        if depth not in (0, 1):
            return False
    return depth == 0


def test_provider_error_mid_reasoning_keeps_what_was_captured() -> None:
    chunks: list[str] = []
    failure = ConnectionResetError("peer went away")
    pipe = ScriptedPipe([ReasoningDelta("half a thought"), failure])
    pipe.set_streaming_callback(chunks.append)
    with pytest.raises(ProviderError) as caught:
        pipe.run("p")
    assert caught.value.__cause__ is failure
    assert caught.value.result is pipe.last_result
    assert pipe.last_result is not None
    assert pipe.last_result.status == "error"
    assert pipe.last_result.model_reasoning == "half a thought"
    assert chunks == [OPEN, "half a thought", CLOSE]


def test_a_raising_callback_does_not_stop_the_others() -> None:
    good: list[str] = []
    errors: list[tuple[Exception, object]] = []

    def bad(chunk: str) -> None:
        raise RuntimeError("subscriber bug")

    pipe = ScriptedPipe([ReasoningDelta("r"), TextDelta("t")])
    pipe.on_callback_error = lambda error, chunk: errors.append((error, chunk))
    result = pipe.set_streaming_callback(bad).set_streaming_callback(good.append).run("p")
    assert result.status == "completed"
    assert good == [OPEN, "r", CLOSE, "t"]
    assert [chunk for _, chunk in errors] == [OPEN, "r", CLOSE, "t"]


def test_a_raising_callback_is_logged_by_default(caplog: pytest.LogCaptureFixture) -> None:
    def bad(chunk: str) -> None:
        raise RuntimeError("subscriber bug")

    result = ScriptedPipe([TextDelta("t")]).set_streaming_callback(bad).run("p")
    assert result.status == "completed"
    assert "subscriber bug" in caplog.text


def test_a_raising_error_handler_aborts_the_run_with_markers_balanced() -> None:
    good: list[str] = []

    def bad(chunk: str) -> None:
        if chunk == "second":
            raise RuntimeError("subscriber bug")

    def strict(error: Exception, chunk: object) -> None:
        raise error

    pipe = ScriptedPipe(
        [
            ReasoningDelta("first"),
            ReasoningDelta("second"),
            ReasoningDelta("third"),
            TextDelta("t"),
        ],
        on_callback_error=strict,
    )
    pipe.set_streaming_callback(bad).set_streaming_callback(good.append)
    with pytest.raises(CallbackError) as caught:
        pipe.run("p")
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert pipe.last_result is not None and pipe.last_result.status == "error"
    assert pipe.last_result.model_reasoning == "firstsecond"
    assert balanced(good)
    assert good[-1] == CLOSE


def test_async_callback_in_sync_run_is_a_usage_error() -> None:
    async def callback(chunk: str) -> None:
        pass

    pipe = ScriptedPipe([TextDelta("t")]).set_streaming_callback(callback)
    with pytest.raises(UsageError, match="arun"):
        pipe.run("p")


@pytest.mark.parametrize("where", ["streaming", "event"])
def test_a_refused_async_callback_leaves_this_runs_error_result(where: str) -> None:
    """API section 4: whatever the ending, ``last_result`` is this run's result (status
    ``"error"``) and the raised error carries it; never the previous run's."""

    async def callback(item: object) -> None:
        pass

    pipe = ScriptedPipe([TextDelta("t")])
    assert pipe.run("first").status == "completed"
    if where == "streaming":
        pipe.set_streaming_callback(callback)
    else:
        pipe.set_event_callback(callback)
    with pytest.raises(UsageError, match="arun") as caught:
        pipe.run("second")
    assert pipe.last_result is not None
    assert pipe.last_result.status == "error"
    assert pipe.last_result.text == ""
    assert caught.value.result is pipe.last_result


def test_a_pipe_without_events_says_what_to_implement() -> None:
    with pytest.raises(UsageError, match="iter_events"):
        Pipe().run("p")


def test_keyboard_interrupt_is_a_cancellation() -> None:
    chunks: list[str] = []
    pipe = ScriptedPipe([ReasoningDelta("r"), KeyboardInterrupt()])
    with pytest.raises(KeyboardInterrupt):
        pipe.set_streaming_callback(chunks.append).run("p")
    assert pipe.last_result is not None
    assert pipe.last_result.status == "cancelled_before_answer"
    assert chunks == [OPEN, "r", CLOSE]


# --- async: the same on asyncio and trio ---------------------------------------------------


@pytest.mark.anyio
async def test_async_callbacks_are_awaited_in_order() -> None:
    seen: list[str] = []

    async def slow(chunk: str) -> None:
        await anyio.sleep(0)
        seen.append(chunk)

    pipe = ScriptedPipe([ReasoningDelta("r"), TextDelta("t")]).set_streaming_callback(slow)
    result = await pipe.arun("p")
    assert seen == [OPEN, "r", CLOSE, "t"]
    assert result.status == "completed"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("script", "status", "expected"),
    [
        ([ReasoningDelta("r"), 10.0], "cancelled_before_answer", [OPEN, "r", CLOSE]),
        (
            [ReasoningDelta("r"), TextDelta("partial"), 10.0],
            "cancelled_after_partial_answer",
            [OPEN, "r", CLOSE, "partial"],
        ),
    ],
)
async def test_cancellation_closes_the_segment(
    script: list[Any], status: str, expected: list[str]
) -> None:
    seen: list[str] = []

    async def callback(chunk: str) -> None:
        seen.append(chunk)

    pipe = ScriptedPipe(script).set_streaming_callback(callback)
    with anyio.move_on_after(0.05):
        await pipe.arun("p")
    assert pipe.last_result is not None
    assert pipe.last_result.status == status
    assert pipe.last_result.model_reasoning == "r"
    assert seen == expected


@pytest.mark.anyio
async def test_cancellation_inside_a_slow_callback() -> None:
    seen: list[str] = []

    async def callback(chunk: str) -> None:
        seen.append(chunk)
        if chunk == "r":
            await anyio.sleep(10)

    pipe = ScriptedPipe([ReasoningDelta("r"), TextDelta("t")]).set_streaming_callback(callback)
    with anyio.move_on_after(0.05):
        await pipe.arun("p")
    assert pipe.last_result is not None
    assert pipe.last_result.status == "cancelled_before_answer"
    assert seen == [OPEN, "r", CLOSE]


@pytest.mark.anyio
async def test_async_provider_error_mid_reasoning() -> None:
    seen: list[str] = []

    async def callback(chunk: str) -> None:
        seen.append(chunk)

    pipe = ScriptedPipe([ReasoningDelta("r"), ValueError("boom")]).set_streaming_callback(callback)
    with pytest.raises(ProviderError) as caught:
        await pipe.arun("p")
    assert isinstance(caught.value.__cause__, ValueError)
    assert caught.value.result is not None and caught.value.result.status == "error"
    assert seen == [OPEN, "r", CLOSE]


@pytest.mark.anyio
async def test_a_pipe_runs_one_stream_at_a_time() -> None:
    pipe = ScriptedPipe([0.05, TextDelta("t")])
    async with anyio.create_task_group() as group:
        group.start_soon(pipe.arun, "p")
        await anyio.sleep(0.01)
        with pytest.raises(UsageError, match="already running"):
            await pipe.arun("p")


# --- the channel laws -----------------------------------------------------------------------


Runner = Callable[[Pipe, str], Any]


def run_sync(pipe: Pipe) -> Any:
    return pipe.run("p")


def run_with(backend: str) -> Callable[[Pipe], Any]:
    def runner(pipe: Pipe) -> Any:
        async def main() -> Any:
            return await pipe.arun("p")

        return anyio.run(main, backend=backend)

    return runner


RUNNERS = {"sync": run_sync, "asyncio": run_with("asyncio"), "trio": run_with("trio")}


@settings(max_examples=examples(60), deadline=None)
@given(script=event_scripts(), runner=st.sampled_from(sorted(RUNNERS)))
def test_channel_split_gives_back_the_script(script: list[Any], runner: str) -> None:
    chunks: list[str] = []
    pipe = ScriptedPipe(script).set_streaming_callback(chunks.append)
    result = RUNNERS[runner](pipe)
    segments, text = expected_from_script(script)
    collected = ReasoningStream.split("".join(chunks), lossless=True)
    assert (list(collected.segments), collected.text) == (segments, text)
    assert (collected.reasoning, collected.text) == (result.model_reasoning, result.text)
    assert list(result.reasoning_segments) == segments
    assert not collected.truncated
    assert all(isinstance(chunk, str) and chunk for chunk in chunks)


@settings(max_examples=examples(60), deadline=None)
@given(script=event_scripts())
def test_with_the_flag_off_the_channel_is_exactly_the_escaped_text(script: list[Any]) -> None:
    chunks: list[str] = []
    pipe = ScriptedPipe(script).set_stream_model_reasoning(False)
    result = pipe.set_streaming_callback(chunks.append).run("p")
    _, text = expected_from_script(script)
    assert "".join(chunks) == reference_escape(text)
    segments, _ = expected_from_script(script)
    assert list(result.reasoning_segments) == segments


@settings(max_examples=examples(60), deadline=None)
@given(script=event_scripts())
def test_markers_appear_only_when_reasoning_flows(script: list[Any]) -> None:
    chunks: list[str] = []
    ScriptedPipe(script).set_streaming_callback(chunks.append).run("p")
    segments, _ = expected_from_script(script)
    assert chunks.count(OPEN) == chunks.count(CLOSE) == len(segments)
    assert balanced(chunks)


def test_sync_callbacks_may_return_values() -> None:
    """``sys.stdout.write`` returns a count; a return value is not an awaitable."""
    lengths: list[int] = []

    def write(chunk: str) -> int:
        lengths.append(len(chunk))
        return len(chunk)

    result = (
        ScriptedPipe([ReasoningDelta("ab"), TextDelta("cde")])
        .set_streaming_callback(write)
        .run("p")
    )
    assert result.text == "cde"
    assert lengths == [len(OPEN), 2, len(CLOSE), 3]


def test_outside_a_run_async_callbacks_are_skipped_with_a_warning() -> None:
    chunks: list[str] = []

    async def later(chunk: str) -> None:
        pass

    pipe = Pipe().set_streaming_callback(later).set_streaming_callback(chunks.append)
    with pytest.warns(RuntimeWarning, match="arun"):
        pipe.emit_text("hi")
    assert chunks == ["hi"]
