"""The lean transports' SSE framing (``SSEReader``) against httpx-sse's decoder, as a law.

For any text and any way of cutting it into pieces, ``SSEReader`` yields exactly the
``(event, data)`` pairs that httpx-sse's own line and event decoders yield for the same pieces,
minus the events without data (which every consumer skips). httpx-sse is an independent
implementation of the WHATWG event-stream rules, so it is the oracle.
"""

from __future__ import annotations

import itertools
from typing import Any

from httpx_sse._decoders import SSEDecoder, SSELineDecoder
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reasoning_stream.providers._transports import SSEReader, _ndjson_lines

# Pieces that make the framing's edge cases likely: every line end, blank lines, comments,
# fields with and without a space or a colon, unknown fields, and JSON-ish data.
ATOMS = st.sampled_from(
    [
        "\n", "\r", "\r\n", "\n\n", "\r\r", ":", ": keep-alive", "data", "data:", "data: ",
        "event", "event:", "event: ping", "id: 7", "retry: 30", "x-field: 1", " ", "{", "}",
        '"a"', "[DONE]", "é", "\u2028", "\x00", "message",
    ]
)  # fmt: skip
TEXTS = st.lists(st.one_of(ATOMS, st.text(max_size=4)), max_size=40).map("".join)


def oracle(pieces: list[str]) -> list[tuple[str, str]]:
    """What httpx-sse yields for ``pieces`` (its iter_sse loop), events with data only."""
    lines = SSELineDecoder()
    events = SSEDecoder()
    out: list[tuple[str, str]] = []

    def take(line: str) -> None:
        sse = events.decode(line.rstrip("\n"))
        if sse is not None and sse.data:
            out.append((sse.event, sse.data))

    for piece in pieces:
        if piece:  # httpx never hands an empty piece to the decoder
            for line in lines.decode(piece):
                take(line)
    for line in lines.flush():
        take(line)
    return out


def read(pieces: list[str]) -> list[tuple[str, str]]:
    reader = SSEReader()
    out: list[tuple[str, str]] = []
    for piece in pieces:
        if piece:
            out += reader.feed(piece)
    return out + reader.finish()


@st.composite
def chunked(draw: st.DrawFn) -> list[str]:
    text = draw(TEXTS)
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=8)))
    bounds = [0, *cuts, len(text)]
    return [text[start:end] for start, end in itertools.pairwise(bounds)]


# 400 examples: about 1 s.
@settings(max_examples=400, deadline=None)
@given(chunked())
@example(["data: a\r", "\ndata: b\r", "\r"])
@example(["\n\ndata: x\n\n\n", "data: y\n", "\n"])
@example(["event: e\n", "\n", "data: z\n\n"])
def test_reader_matches_httpx_sse_for_any_text_and_chunking(pieces: list[str]) -> None:
    assert read(pieces) == oracle(pieces)


@settings(max_examples=100, deadline=None)
@given(TEXTS)
def test_one_piece_or_one_character_at_a_time_is_the_same(text: str) -> None:
    assert read([text]) == read(list(text)) == oracle([text])


def test_long_event_in_many_pieces_is_read_once() -> None:
    """A 1 MB data line in 1 KB pieces comes out whole (and the reader stays linear)."""
    payload = "x" * 1_000_000
    text = f"data: {payload}\n\n"
    pieces = [text[i : i + 1024] for i in range(0, len(text), 1024)]
    assert read(pieces) == [("message", payload)]


# ------------------------------------------------------------------------ NDJSON lines

LINE_TEXTS = st.lists(
    st.one_of(st.sampled_from(["\n", "\r\n", "\r", " ", "\u2028", "{}", '{"a": 1}']), st.text()),
    max_size=30,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(LINE_TEXTS, st.data())
def test_ndjson_lines_are_the_whole_texts_lines_for_any_chunking(text: str, data: Any) -> None:
    """Cut anywhere, the pieces give the lines of the whole text split at ``\\n`` alone,
    blank ones dropped (``\\r`` and U+2028 stay inside their line)."""
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    pieces = [text[start:end] for start, end in itertools.pairwise([0, *cuts, len(text)])]
    expected = [line for line in text.split("\n") if line.strip(" \t\r\n")]
    assert list(_ndjson_lines(piece for piece in pieces if piece)) == expected
