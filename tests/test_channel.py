"""Channel laws: against independent references, across the three drivers, through Pipelines.

Budgets (hypothesis ``max_examples``) are chosen so the whole file runs in a few seconds while
still finding the issue-12 bugs on the old code; see each ``settings``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import (
    Event,
    Pipe,
    Pipeline,
    PipelineResult,
    PipeResult,
    ReasoningDelta,
    ReasoningStream,
    TextDelta,
)
from reasoning_stream.testing import ScriptedPipe, ScriptItem
from reasoning_stream.testing.strategies import (
    event_scripts,
    expected_from_script,
    scripts,
    tag_text,
    text_and_chunks,
)
from tests.helpers import examples
from tests.reference import (
    emitted_after,
    normalised,
    reference_escape,
    reference_split_auto,
)

OPEN, CLOSE = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG
DRIVERS = ("sync", "asyncio", "trio")


def balanced(chunks: Sequence[str]) -> bool:
    depth = 0
    for chunk in chunks:
        depth += (chunk == OPEN) - (chunk == CLOSE)
        if depth not in (0, 1):
            return False
    return depth == 0


def drive(runnable: Pipe | Pipeline, driver: str) -> tuple[Any, BaseException | None]:
    """Run with one of the three drivers; return the result (or ``last_result``) and the error."""
    try:
        if driver == "sync":
            return runnable.run("p"), None

        async def main() -> Any:
            return await runnable.arun("p")

        return anyio.run(main, backend=driver), None
    except Exception as error:
        return runnable.last_result, error


# --- the escaper, at pipe level, against the reference ------------------------------------


@settings(max_examples=examples(300), deadline=None)
@given(text_and_chunks())
def test_the_channel_holds_back_only_an_unfinished_tag_body(sample: tuple[str, list[str]]) -> None:
    """After every delta the channel is the reference escape of what was fed, minus what may
    still become a tag: never a character more held, never one escaped differently."""
    text, chunks = sample
    collected: list[str] = []
    pipe = Pipe().set_streaming_callback(collected.append)
    fed = ""
    for chunk in chunks:
        pipe.emit_text(chunk)
        fed += chunk
        assert "".join(collected) == emitted_after(fed)
    pipe.emit_stream_end()
    assert "".join(collected) == reference_escape(text)


@settings(max_examples=examples(150), deadline=None)
@given(text_and_chunks())
def test_reasoning_is_escaped_like_text_between_the_markers(sample: tuple[str, list[str]]) -> None:
    text, chunks = sample
    collected: list[str] = []
    pipe = Pipe().set_streaming_callback(collected.append)
    for chunk in chunks:
        pipe.emit_reasoning_chunk(chunk)
    pipe.emit_stream_end()
    expected = f"{OPEN}{reference_escape(text)}{CLOSE}" if text else ""
    assert "".join(collected) == expected


def test_an_escaped_tag_gets_one_more_backslash_at_pipe_level() -> None:
    collected: list[str] = []
    pipe = Pipe().set_streaming_callback(collected.append)
    for chunk in ("a <\\think> b <\\\\/", "THINK > c <", "\\\\\\", "\\thi", "nking>"):
        pipe.emit_text(chunk)
    pipe.emit_stream_end()
    assert "".join(collected) == "a <\\\\think> b <\\\\\\/THINK > c <\\\\\\\\\\thinking>"


def test_a_run_of_backslashes_after_a_cut_goes_out_at_once() -> None:
    collected: list[str] = []
    pipe = Pipe().set_streaming_callback(collected.append)
    pipe.emit_text("x<\\\\\\")
    assert "".join(collected) == "x<\\\\\\"
    pipe.emit_text("\\\\thi")
    assert "".join(collected) == "x<\\\\\\\\\\"
    pipe.emit_text("nk>")
    assert "".join(collected) == "x<\\\\\\\\\\\\think>"


# --- one law for the three drivers, in the same example -----------------------------------


@dataclass
class Observed:
    chunks: list[str]
    events: list[Event]
    result: PipeResult | None
    error: str | None


def summary(result: PipeResult | None) -> tuple[Any, ...] | None:
    """A result without its clock readings."""
    if result is None:
        return None
    return (
        result.text,
        result.reasoning_segments,
        result.status,
        result.finish_reason,
        result.tool_calls,
        result.usage,
        result.source,
    )


def observe(script: list[ScriptItem], driver: str, **options: Any) -> Observed:
    chunks: list[str] = []
    events: list[Event] = []
    pipe = ScriptedPipe(script, **options)
    pipe.set_streaming_callback(chunks.append).set_event_callback(events.append)
    result, error = drive(pipe, driver)
    return Observed(chunks, events, result, None if error is None else type(error).__name__)


@settings(max_examples=examples(120), deadline=None)
@given(script=scripts(), gate=st.booleans())
def test_sync_asyncio_and_trio_write_the_same_channel(script: list[ScriptItem], gate: bool) -> None:
    """Scripts with failures, stops, sleeps and plain strings: the three drivers agree chunk for
    chunk and event for event, and the channel splits into what the script says."""
    seen = {d: observe(script, d, stream_model_reasoning=gate) for d in DRIVERS}
    sync = seen["sync"]
    for driver in ("asyncio", "trio"):
        assert seen[driver].chunks == sync.chunks
        assert seen[driver].events == sync.events
        assert seen[driver].error == sync.error
        assert summary(seen[driver].result) == summary(sync.result)
    segments, text = expected_from_script(script)
    collected = ReasoningStream.split("".join(sync.chunks), lossless=True)
    assert (list(collected.segments), collected.text) == (segments if gate else [], text)
    assert balanced(sync.chunks)
    assert all(isinstance(chunk, str) and chunk for chunk in sync.chunks)
    assert sync.result is not None
    assert list(sync.result.reasoning_segments) == segments
    failed = any(isinstance(item, BaseException) for item in script)
    assert (sync.error == "ProviderError") == failed
    assert sync.result.status == ("error" if failed else sync.result.status)


# --- Pipelines of 1 to 4 pipes, different audiences, failures, three drivers ---------------


@dataclass(frozen=True)
class Stage:
    script: list[ScriptItem]
    listeners: tuple[bool, bool, bool]
    gate: bool


# Pieces that end or begin a tag, so that tags straddle pipe boundaries often.
HEADS = ("nk>", "think>", "\\think>", "THINKING >", "")
TAILS = ("x<thi", "<", "</", "<\\\\", "")


@st.composite
def stages(draw: st.DrawFn) -> Stage:
    body = draw(scripts(sleeps=False, max_size=4))
    head, tail = draw(st.sampled_from(HEADS)), draw(st.sampled_from(TAILS))
    return Stage(
        [TextDelta(head), *body, TextDelta(tail)],
        draw(st.tuples(st.booleans(), st.booleans(), st.booleans())),
        draw(st.booleans()),
    )


def run_pipeline(
    plan: list[Stage], driver: str
) -> tuple[list[list[str]], PipelineResult | None, str | None]:
    sinks: list[list[str]] = [[], [], []]
    # One callable per subscriber, shared by the pipes it listens to, as a user would write it.
    subscribers: list[Callable[[str], None]] = [sink.append for sink in sinks]
    pipes = []
    for stage in plan:
        pipe = ScriptedPipe(stage.script, stream_model_reasoning=stage.gate)
        for subscriber, listens in zip(subscribers, stage.listeners, strict=True):
            if listens:
                pipe.set_streaming_callback(subscriber)
        pipes.append(pipe)
    pipeline = Pipeline(*pipes)
    result, error = drive(pipeline, driver)
    return sinks, result, None if error is None else type(error).__name__


@settings(max_examples=examples(200), deadline=None)
@given(plan=st.lists(stages(), min_size=1, max_size=4))
def test_pipelines_give_every_subscriber_exactly_its_pipes(plan: list[Stage]) -> None:
    """Each subscriber's own chunks split into the segments and text of the pipes it listened
    to, up to the pipe that failed; the three drivers agree."""
    runs = {d: run_pipeline(plan, d) for d in DRIVERS}
    sinks, result, error = runs["sync"]
    for driver in ("asyncio", "trio"):
        assert runs[driver][0] == sinks
        assert runs[driver][2] == error
    ran: list[Stage] = []
    for stage in plan:
        ran.append(stage)
        if any(isinstance(item, BaseException) for item in stage.script):
            break
    assert result is not None and len(result.results) == len(ran)
    failed = any(isinstance(item, BaseException) for item in ran[-1].script)
    assert error == ("ProviderError" if failed else None)
    for driver in ("asyncio", "trio"):
        other = runs[driver][1]
        assert other is not None
        assert [summary(r) for r in other.results] == [summary(r) for r in result.results]
    for index, sink in enumerate(sinks):
        segments: list[str] = []
        text = ""
        for stage in ran:
            if stage.listeners[index]:
                stage_segments, stage_text = expected_from_script(stage.script)
                segments += stage_segments if stage.gate else []
                text += stage_text
        collected = ReasoningStream.split("".join(sink), lossless=True)
        assert (list(collected.segments), collected.text) == (segments, text)
        assert balanced(sink)


def test_pipelines_of_one_to_four_pipes_agree_across_drivers_with_a_failure_in_each_place() -> None:
    for size in range(1, 5):
        for failing in range(size):
            plan = [
                Stage(
                    [TextDelta("nk>" if i else ""), ReasoningDelta(f"r{i}"), TextDelta("x<thi")]
                    + ([ValueError("down")] if i == failing else []),
                    (True, i % 2 == 0, i > 0),
                    True,
                )
                for i in range(size)
            ]
            outcomes = {d: run_pipeline(plan, d) for d in DRIVERS}
            assert outcomes["asyncio"][0] == outcomes["trio"][0] == outcomes["sync"][0]
            sinks, result, error = outcomes["sync"]
            assert error == "ProviderError"
            assert result is not None
            assert [r.status for r in result.results] == ["completed"] * failing + ["error"]
            ran = range(failing + 1)
            for index, listens in enumerate(
                [ran, [i for i in ran if i % 2 == 0], [i for i in ran if i > 0]]
            ):
                split = ReasoningStream.split("".join(sinks[index]), lossless=True)
                assert split.segments == tuple(f"r{i}" for i in listens)
                assert split.text == "".join(("nk>" if i else "") + "x<thi" for i in listens)


# --- delivery interrupted by a sync callback ------------------------------------------------


def test_a_sync_callback_interrupted_mid_chunk_leaves_the_others_whole() -> None:
    """``KeyboardInterrupt`` in one subscriber: the one after it still gets that chunk and the
    closing marker, so its channel stays balanced."""
    after: list[str] = []

    def interrupting(chunk: str) -> None:
        if chunk == "r":
            raise KeyboardInterrupt

    pipe = ScriptedPipe([ReasoningDelta("r"), TextDelta("t")])
    pipe.set_streaming_callback(interrupting).set_streaming_callback(after.append)
    with pytest.raises(KeyboardInterrupt):
        pipe.run("p")
    assert after == [OPEN, "r", CLOSE]
    assert pipe.last_result is not None
    assert pipe.last_result.status == "cancelled_before_answer"


@pytest.mark.anyio
async def test_a_cancelled_async_callback_leaves_the_others_whole() -> None:
    after: list[str] = []

    async def stuck(chunk: str) -> None:
        if chunk == "r":
            await anyio.sleep(10)

    async def collect(chunk: str) -> None:
        after.append(chunk)

    pipe = ScriptedPipe([ReasoningDelta("r"), TextDelta("t")])
    pipe.set_streaming_callback(stuck).set_streaming_callback(collect)
    with anyio.move_on_after(0.05):
        await pipe.arun("p")
    assert after == [OPEN, "r", CLOSE]


# --- split's rule 4 against the reference --------------------------------------------------


@settings(max_examples=examples(400), deadline=None)
@given(tag_text())
def test_split_auto_rule_4_agrees_with_the_reference(text: str) -> None:
    segments, answer, truncated = reference_split_auto(text)
    lossless = ReasoningStream.split(text, lossless=True)
    assert (list(lossless.segments), lossless.text, lossless.truncated) == (
        segments,
        answer,
        truncated,
    )
    default = ReasoningStream.split(text)
    assert (list(default.segments), default.text) == normalised(segments, answer)
    assert default.truncated == truncated


def test_split_auto_rule_4_cases() -> None:
    assert reference_split_auto("plan</think>answer") == (["plan"], "answer", False)
    assert ReasoningStream.split("plan</think>answer").segments == ("plan",)
    # An escaped close is text, not a marker: the real close after it is the first marker.
    assert reference_split_auto("a<\\/think>b</think>c") == (["a</think>b"], "c", False)
    split = ReasoningStream.split("a<\\/think>b</think>c", lossless=True)
    assert (split.segments, split.text) == (("a</think>b",), "c")
    # A close after an open is no stray: rule 4 does not apply.
    assert reference_split_auto("x<think>y</think>z</think>w") == (["y"], "xzw", False)


@settings(max_examples=examples(100), deadline=None)
@given(event_scripts())
def test_with_the_gate_off_the_channel_is_exactly_the_reference_escape(script: list[Any]) -> None:
    chunks: list[str] = []
    ScriptedPipe(script, stream_model_reasoning=False).set_streaming_callback(chunks.append).run(
        "p"
    )
    _, text = expected_from_script(script)
    assert "".join(chunks) == reference_escape(text)


# --- subscribers joining mid-run --------------------------------------------------------


def test_a_subscriber_added_mid_run_gets_only_what_was_written_after_it_joined() -> None:
    first: list[str] = []
    late: list[str] = []
    pipe = ScriptedPipe([ReasoningDelta("r"), TextDelta("t")])

    def joining(chunk: str) -> None:
        first.append(chunk)
        if chunk == OPEN:
            # "r" is already queued for the first subscriber alone.
            pipe.set_streaming_callback(late.append)
            pipe.emit_text("X")

    pipe.set_streaming_callback(joining)

    async def main() -> None:
        await pipe.arun("p")

    anyio.run(main)
    assert first == [OPEN, "r", CLOSE, "X", "t"]
    assert late == [CLOSE, "X", "t"]


def test_a_subscriber_removed_mid_run_still_gets_what_was_written_for_it() -> None:
    leaving: list[str] = []
    leave = leaving.append
    pipe = ScriptedPipe([ReasoningDelta("r"), TextDelta("t")])

    def remover(chunk: str) -> None:
        if chunk == OPEN:
            # "r" is already queued for both subscribers.
            pipe.remove_streaming_callback(leave)
            pipe.emit_text("X")

    pipe.set_streaming_callback(remover).set_streaming_callback(leave)

    async def main() -> None:
        await pipe.arun("p")

    anyio.run(main)
    assert leaving == [OPEN, "r"]


@pytest.mark.anyio
async def test_a_subclass_that_overrides_handle_event_sees_every_event_in_arun() -> None:
    seen: list[Event] = []

    class Watching(ScriptedPipe):
        def handle_event(self, event: Event) -> None:
            seen.append(event)
            super().handle_event(event)

    script: list[Any] = [ReasoningDelta("r"), TextDelta("t")]
    result = await Watching(script).arun("p")
    assert seen == script
    assert result.text == "t"
