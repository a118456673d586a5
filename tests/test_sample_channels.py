"""``channels()`` gives a channel as a streaming callback receives it, and the docs agree.

The concepts page's display recipe ("markers arrive as whole chunks") holds for every channel
``channels()`` draws; ``channels(recut=True)`` cuts the text anew, as a hub or a log may, where
only the scanner recipe holds. The recipes are copied from the docs (the docs' own blocks run in
``tests/test_docs.py``); the expected split comes from the script alone.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import find, given, settings

from reasoning_stream import ReasoningDelta, ReasoningStream, TextDelta
from reasoning_stream.testing.hypothesis_strategies import SampleChannel, channels
from tests.helpers import examples

DOCS = Path(__file__).resolve().parents[1] / "docs"


def whole_marker_display(chunks: tuple[str, ...]) -> tuple[str, str]:
    """The concepts page's recipe for a callback's chunks: (reasoning, answer)."""
    parts: dict[str, list[str]] = {"reasoning": [], "answer": []}
    target = "answer"
    for chunk in chunks:
        if chunk == ReasoningStream.OPEN_TAG:
            target = "reasoning"
        elif chunk == ReasoningStream.CLOSE_TAG:
            target = "answer"
        else:
            parts[target].append(chunk)
    return (
        ReasoningStream.unescape("".join(parts["reasoning"])),
        ReasoningStream.unescape("".join(parts["answer"])),
    )


def scanner_display(chunks: tuple[str, ...]) -> tuple[str, str]:
    """The concepts page's scanner recipe: (reasoning, answer), for any cuts."""
    scanner = ReasoningStream.scanner()
    events = [event for chunk in chunks for event in scanner.feed(chunk)] + scanner.flush()
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    answer = "".join(e.text for e in events if isinstance(e, TextDelta))
    return reasoning, answer


def _expected(channel: SampleChannel) -> tuple[str, str]:
    return "".join(channel.segments), channel.text


@settings(max_examples=examples(300), deadline=None)
@given(channels())
def test_the_whole_marker_recipe_holds_for_a_callbacks_chunks(channel: SampleChannel) -> None:
    assert whole_marker_display(channel.chunks) == _expected(channel)
    assert scanner_display(channel.chunks) == _expected(channel)


@settings(max_examples=examples(300), deadline=None)
@given(channels(stream_model_reasoning=False))
def test_an_answer_only_channel_has_no_marker(channel: SampleChannel) -> None:
    assert channel.segments == []
    assert whole_marker_display(channel.chunks) == ("", channel.text)


@settings(max_examples=examples(300), deadline=None)
@given(channels(recut=True))
def test_a_recut_channel_splits_right_with_the_scanner(channel: SampleChannel) -> None:
    assert scanner_display(channel.chunks) == _expected(channel)


def test_recut_channels_do_break_the_whole_marker_recipe() -> None:
    """``recut=True`` is a different promise: a marker may arrive split, and that recipe fails."""
    found = find(
        channels(recut=True),
        lambda channel: whole_marker_display(channel.chunks) != _expected(channel),
        settings=settings(max_examples=examples(2000), database=None),
    )
    # The smallest such channel splits a marker or glues it to its neighbours.
    markers = (ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG)
    assert any(
        chunk not in markers and chunk and chunk in "".join(markers) for chunk in found.chunks
    ) or any(
        chunk not in markers and any(marker in chunk for marker in markers)
        for chunk in found.chunks
    )


def test_the_docs_say_which_chunks_channels_gives() -> None:
    testing = " ".join((DOCS / "testing.md").read_text(encoding="utf-8").split())
    assert "`channels()`: whole channels as a streaming callback receives them" in testing
    assert "`channels(recut=True)`" in testing
    concepts = (DOCS / "concepts.md").read_text(encoding="utf-8")
    assert "chunk == ReasoningStream.OPEN_TAG" in concepts
