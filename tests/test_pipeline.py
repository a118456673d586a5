"""Pipeline: answers chain, reasoning does not, one channel for all."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import given, settings

from reasoning_stream import (
    Event,
    Pipeline,
    ProviderError,
    ReasoningDelta,
    ReasoningStream,
    TextDelta,
    UsageError,
)
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.testing.strategies import event_scripts, expected_from_script
from tests.helpers import examples

OPEN, CLOSE = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG


def test_answers_chain_and_reasoning_does_not() -> None:
    first = ScriptedPipe([ReasoningDelta("private plan"), TextDelta("draft")], name="writer")
    second = ScriptedPipe(
        lambda prompt: [ReasoningDelta("review"), TextDelta(f"{prompt}!")], name="editor"
    )
    result = (first | second).run("topic")
    assert first.prompts == ["topic"]
    assert second.prompts == ["draft"]
    assert result.text == "draft!"
    assert [r.source for r in result.results] == ["writer", "editor"]
    assert [r.model_reasoning for r in result.results] == ["private plan", "review"]


def test_one_callback_sees_every_pipe() -> None:
    chunks: list[str] = []
    events: list[Event] = []
    pipeline = Pipeline(
        ScriptedPipe([ReasoningDelta("a"), TextDelta("x")], name="one"),
        ScriptedPipe([ReasoningDelta("b"), TextDelta("y")], name="two"),
    )
    pipeline.set_streaming_callback(chunks.append).set_event_callback(events.append)
    pipeline.run("p")
    assert chunks == [OPEN, "a", CLOSE, "x", OPEN, "b", CLOSE, "y"]
    assert [e.source for e in events if isinstance(e, ReasoningDelta)] == ["one", "two"]
    split = ReasoningStream.split("".join(chunks))
    assert (split.segments, split.text) == (("a", "b"), "xy")


def test_escaping_spans_pipe_boundaries() -> None:
    chunks: list[str] = []
    pipeline = ScriptedPipe([TextDelta("x<thi")]) | ScriptedPipe([TextDelta("nk>y")])
    pipeline.set_streaming_callback(chunks.append).run("p")
    collected = "".join(chunks)
    assert collected == "x<\\think>y"
    assert ReasoningStream.split(collected, lossless=True).text == "x<think>y"


def test_a_failure_in_the_second_pipe_keeps_the_first_result() -> None:
    chunks: list[str] = []
    pipeline = ScriptedPipe([TextDelta("draft")], name="one") | ScriptedPipe(
        [ReasoningDelta("thinking about"), RuntimeError("overloaded")], name="two"
    )
    pipeline.set_streaming_callback(chunks.append)
    with pytest.raises(ProviderError) as caught:
        pipeline.run("p")
    assert pipeline.last_result is not None
    first, second = pipeline.last_result.results
    assert (first.text, first.status) == ("draft", "completed")
    assert (second.model_reasoning, second.status) == ("thinking about", "error")
    assert caught.value.result is second
    assert chunks == ["draft", OPEN, "thinking about", CLOSE]


def test_pipelines_flatten_and_reject_repeats() -> None:
    a, b, c = ScriptedPipe([]), ScriptedPipe([]), ScriptedPipe([])
    assert (a | b | c).pipes == (a, b, c)
    with pytest.raises(UsageError):
        Pipeline(a, a)


@pytest.mark.anyio
async def test_async_pipeline_with_async_callback() -> None:
    chunks: list[str] = []

    async def callback(chunk: str) -> None:
        await anyio.sleep(0)
        chunks.append(chunk)

    pipeline = ScriptedPipe([ReasoningDelta("r"), TextDelta("x<thi")]) | ScriptedPipe(
        lambda p: [TextDelta("nk>"), ReasoningDelta(p)]
    )
    result = await pipeline.set_streaming_callback(callback).arun("p")
    assert result.text == "nk>"
    split = ReasoningStream.split("".join(chunks), lossless=True)
    assert (split.segments, split.text) == (("r", "x<thi"), "x<think>")


@settings(max_examples=examples(40), deadline=None)
@given(first=event_scripts(), second=event_scripts())
def test_a_pipeline_channel_splits_into_every_pipe_segments(
    first: list[Any], second: list[Any]
) -> None:
    chunks: list[str] = []
    pipeline = ScriptedPipe(first) | ScriptedPipe(second)
    result = pipeline.set_streaming_callback(chunks.append).run("p")
    segments_a, text_a = expected_from_script(first)
    segments_b, text_b = expected_from_script(second)
    collected = ReasoningStream.split("".join(chunks), lossless=True)
    assert list(collected.segments) == segments_a + segments_b
    assert collected.text == text_a + text_b
    assert [r.text for r in result.results] == [text_a, text_b]


# ------------------------------------------------------------------------- names of pipes


def test_unnamed_pipes_of_one_class_get_distinct_names_in_a_pipeline() -> None:
    first, second, third = (ScriptedPipe([TextDelta(word)]) for word in ("a", "b", "c"))
    pipeline = first | second | third
    sources: list[str | None] = []

    def record(event: Event) -> None:
        if isinstance(event, TextDelta):
            sources.append(event.source)

    result = pipeline.set_event_callback(record).run("go")
    assert [pipe.name for pipe in pipeline.pipes] == [
        "ScriptedPipe",
        "ScriptedPipe#2",
        "ScriptedPipe#3",
    ]
    assert sources == ["ScriptedPipe", "ScriptedPipe#2", "ScriptedPipe#3"]
    assert [r.source for r in result.results] == sources


def test_a_default_name_skips_a_name_given_to_another_pipe() -> None:
    named = ScriptedPipe([TextDelta("a")], name="ScriptedPipe")
    unnamed = ScriptedPipe([TextDelta("b")])
    other = ScriptedPipe([TextDelta("c")], name="ScriptedPipe#2")
    pipeline = Pipeline(named, unnamed, other)
    assert [pipe.name for pipe in pipeline.pipes] == [
        "ScriptedPipe",
        "ScriptedPipe#3",
        "ScriptedPipe#2",
    ]


def test_duplicate_given_names_in_one_pipeline_are_refused_naming_the_name() -> None:
    writer = ScriptedPipe([TextDelta("a")], name="writer")
    with pytest.raises(UsageError, match="two pipes in this Pipeline are named 'writer'"):
        Pipeline(
            writer,
            ScriptedPipe([TextDelta("b")], name="editor"),
            ScriptedPipe([TextDelta("c")], name="writer"),
        )
    with pytest.raises(UsageError, match="'writer'"):
        writer | Pipeline(ScriptedPipe([TextDelta("d")], name="writer"))
