"""Hypothesis strategies for property-testing code that reads a reasoning-stream channel.

A consumer of the channel (a display, a logger, a relay to a browser) must cope with any text a
model may write, cut at any point. These strategies draw exactly that: text dense in whole and
partial tags, escapes, long backslash runs, case variants and wide characters
(:func:`tag_text`); every chunking of a string (:func:`chunkings`); event scripts for
:class:`~reasoning_stream.testing.ScriptedPipe`, with provider failures, length stops and sleeps
(:func:`scripts`); and whole channels as a pipe writes them, re-cut at random, with the reasoning
segments and answer text they must split into (:func:`channels`).

Needs hypothesis: ``pip install 'reasoning-stream[testing]'``.

>>> from hypothesis import given, settings
>>> from reasoning_stream import ReasoningStream
>>> @settings(max_examples=20)
... @given(channels())
... def test_split(channel):
...     collected = ReasoningStream.split("".join(channel.chunks), lossless=True)
...     assert (list(collected.segments), collected.text) == (channel.segments, channel.text)
>>> test_split()
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

try:
    from hypothesis import strategies as st
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "reasoning_stream.testing.hypothesis_strategies needs hypothesis: "
        "pip install 'reasoning-stream[testing]'"
    ) from error

from .._events import Event, Finish, ReasoningDelta, ReasoningEnd, ReasoningStart, TextDelta
from ._scripted import ScriptedPipe, ScriptItem

__all__ = [
    "TAG_FRAGMENTS",
    "SampleChannel",
    "channels",
    "chunkings",
    "event_scripts",
    "expected_from_script",
    "scripts",
    "tag_text",
    "text_and_chunks",
]

TAG_FRAGMENTS: tuple[str, ...] = (
    "<",
    ">",
    "/",
    "\\",
    "\\\\",
    "\\" * 5,
    " ",
    "\t",
    "    ",
    "     ",
    "\n",
    "think",
    "thinking",
    "reasoning",
    "Think",
    "THINK",
    "ThInKiNg",
    "REASONING",
    "thin",
    "reason",
    "k",
    "ing",
    "<think>",
    "</think>",
    "<thinking>",
    "</thinking>",
    "<reasoning>",
    "</reasoning>",
    "<think >",
    "</think\t>",
    "<think    >",
    "<think     >",
    "</ReaSoning  >",
    "<\\think>",
    "<\\/think>",
    "<\\\\think>",
    "<\\\\\\\\\\\\think>",
    "</\\think>",
    "<\\\\\\",
    "<\\\\\\/thi",
    "<<think>",
    "<</think>",
    "<thinkk>",
    "< think>",
    "<thin",
    "</thi",
    "<\\thi",
    "a",
    "b",
    "é",
    "日本",
    "🙂",
    "\U0001d11e",
    "İ",
    "\u212a",
)
"""Pieces that make text hostile to a tag parser: tags in every spelling, escapes, backslash runs,
prefixes, near misses, and characters whose case folding is surprising."""


def tag_text(*, max_fragments: int = 30) -> st.SearchStrategy[str]:
    """Arbitrary text, dense in whole and partial tags, escapes and backslash runs."""
    return st.lists(
        st.one_of(
            st.sampled_from(TAG_FRAGMENTS),
            st.text(max_size=3),
            st.integers(2, 12).map(lambda n: "<" + "\\" * n),
        ),
        max_size=max_fragments,
    ).map("".join)


@st.composite
def chunkings(draw: st.DrawFn, text: str, *, max_cuts: int = 12) -> list[str]:
    """``text`` cut at arbitrary offsets; empty chunks included, ``"".join`` gives it back."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=max_cuts)))
    pieces: list[str] = []
    start = 0
    for cut in cuts:
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


@st.composite
def text_and_chunks(draw: st.DrawFn) -> tuple[str, list[str]]:
    """Tag-dense text and one chunking of it."""
    text = draw(tag_text())
    return text, draw(chunkings(text))


def event_scripts(*, max_size: int = 25) -> st.SearchStrategy[list[Event]]:
    """What a provider adapter emits: reasoning starts, ends and deltas, and text deltas.

    Payloads are tag-dense text, empty ones included.
    """
    return st.lists(
        st.one_of(
            st.just(ReasoningStart()),
            st.just(ReasoningEnd()),
            tag_text().map(ReasoningDelta),
            tag_text().map(TextDelta),
        ),
        max_size=max_size,
    )


def scripts(
    *, failures: bool = True, sleeps: bool = True, max_size: int = 25
) -> st.SearchStrategy[list[ScriptItem]]:
    """Scripts for :class:`~reasoning_stream.testing.ScriptedPipe`.

    Hook events, plain strings (answer text), ``Finish`` with a stop or a length reason,
    zero-second sleeps (a checkpoint for async drivers) and, with ``failures``, provider
    exceptions that end the stream where they stand.
    """
    items: list[st.SearchStrategy[ScriptItem]] = [
        st.just(ReasoningStart()),
        st.just(ReasoningEnd()),
        tag_text(max_fragments=8).map(ReasoningDelta),
        tag_text(max_fragments=8).map(TextDelta),
        tag_text(max_fragments=8),
        st.sampled_from([Finish("stop"), Finish("length")]),
    ]
    if sleeps:
        items.append(st.just(0))
    if failures:
        items.append(
            st.sampled_from([ValueError, ConnectionResetError, TimeoutError]).map(
                lambda kind: kind("scripted failure")
            )
        )
    return st.lists(st.one_of(items), max_size=max_size)


def expected_from_script(script: Sequence[ScriptItem]) -> tuple[list[str], str]:
    """The non-empty reasoning segments and the answer text a script stands for.

    Read from the script alone, by the hook rules (a delta opens a segment, text or an end
    closes it, empty deltas do nothing), up to the first exception.
    """
    segments: list[str] = []
    text: list[str] = []
    current: list[str] | None = None
    for item in script:
        if isinstance(item, BaseException):
            break
        if isinstance(item, str):
            item = TextDelta(item)
        if isinstance(item, ReasoningDelta) and item.text:
            if current is None:
                current = []
            current.append(item.text)
        elif isinstance(item, TextDelta) and item.text:
            if current is not None:
                segments.append("".join(current))
                current = None
            text.append(item.text)
        elif isinstance(item, ReasoningEnd) and current is not None:
            segments.append("".join(current))
            current = None
    if current is not None:
        segments.append("".join(current))
    return segments, "".join(text)


@dataclass(frozen=True, slots=True)
class SampleChannel:
    """A channel as a streaming callback receives it, and what it must split into."""

    chunks: tuple[str, ...]
    """The channel as the callback received it: each marker a whole chunk, each delta's escaped
    text its own chunk (an escape may still be split over two); with ``channels(recut=True)``
    the same text cut anew at arbitrary points, as a hub, a proxy or a log may deliver it."""
    segments: list[str]
    """The non-empty reasoning segments, in order, as the model wrote them."""
    text: str
    """The answer text as the model wrote it (escapes undone)."""
    script: tuple[Event, ...]
    """The events the channel was made from."""


@st.composite
def channels(
    draw: st.DrawFn, *, stream_model_reasoning: bool = True, recut: bool = False
) -> SampleChannel:
    """Whole channels: an event script run through a pipe, chunked as its callback received them.

    ``recut=True`` cuts the same text anew at random points (empty pieces included): for a
    consumer of a hub, an SSE ``protocol=channel`` stream or a log, which must not rely on the
    pipe's cuts (a marker may then arrive split). With ``stream_model_reasoning=False`` the
    channel carries the answer only, and ``segments`` is empty.
    """
    script = draw(event_scripts())
    collected: list[str] = []
    pipe = ScriptedPipe(script, stream_model_reasoning=stream_model_reasoning)
    pipe.set_streaming_callback(collected.append).run("")
    segments, text = expected_from_script(script)
    chunks = draw(chunkings("".join(collected))) if recut else collected
    return SampleChannel(
        chunks=tuple(chunks),
        segments=segments if stream_model_reasoning else [],
        text=text,
        script=tuple(script),
    )
