"""Laws of the "auto" inline-tag reader: tags only where the text opens with one."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import Event, ReasoningDelta, ReasoningStart, TextDelta
from reasoning_stream.providers._inline import LeadingTagScanner
from reasoning_stream.testing.strategies import chunkings, tag_text
from tests.helpers import examples

# 300 examples per law: about a second each on the shared machine.
LAWS = settings(max_examples=examples(300), deadline=None)


def read(chunks: Sequence[str]) -> list[Event]:
    reader = LeadingTagScanner()
    events: list[Event] = []
    for chunk in chunks:
        events.extend(reader.feed(chunk))
    events.extend(reader.flush())
    return coalesced(events)


def coalesced(events: Sequence[Event]) -> list[Event]:
    """Adjacent text and reasoning deltas joined; empty deltas dropped."""
    out: list[Event] = []
    for event in events:
        if isinstance(event, TextDelta | ReasoningDelta):
            if not event.text:
                continue
            if out and type(out[-1]) is type(event):
                out[-1] = type(event)(out[-1].text + event.text)  # type: ignore[union-attr]
                continue
        out.append(event)
    return out


@st.composite
def text_with_chunks(draw: st.DrawFn, prefix: st.SearchStrategy[str]) -> tuple[str, list[str]]:
    text = draw(prefix) + draw(tag_text())
    return text, draw(chunkings(text))


@LAWS
@given(text_with_chunks(st.sampled_from(["", " ", "\n"])))
def test_reading_does_not_depend_on_the_chunking(case: tuple[str, list[str]]) -> None:
    text, chunks = case
    assert read(chunks) == read([text])


@LAWS
@given(
    text_with_chunks(
        st.tuples(
            st.sampled_from(["", "  ", "\n"]),
            st.text(min_size=1).filter(
                lambda s: not s.lstrip().startswith("<") and s.strip() != ""
            ),
        ).map("".join)
    )
)
def test_text_that_does_not_open_with_a_tag_passes_through_untouched(
    case: tuple[str, list[str]],
) -> None:
    """Whatever follows (tags, escapes, partial tags), the answer is the input, byte for byte."""
    text, chunks = case
    assert read(chunks) == [TextDelta(text)]


@LAWS
@given(text_with_chunks(st.sampled_from(["<think>", " <think>", "\n<thinking>", "<reasoning>"])))
def test_text_that_opens_with_a_tag_is_read_as_reasoning(case: tuple[str, list[str]]) -> None:
    _, chunks = case
    events = read(chunks)
    assert any(isinstance(event, ReasoningStart) for event in events)
    assert not any(
        isinstance(event, TextDelta) and event.text.strip()
        for event in events[: events.index(ReasoningStart())]
    )
