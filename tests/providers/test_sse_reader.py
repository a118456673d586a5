"""The lean transports' framing, on the wire's bytes, against httpx's and httpx-sse's, as laws.

``SSEReader`` and the NDJSON line cutter read the body's bytes as they arrive (httpx's
``iter_raw``), without decoding them to text first. For any body and any way of cutting it
into pieces, byte by byte included (so inside a multi-byte UTF-8 character), they must give
what a text reader gives: httpx's ``iter_text`` decoding the same pieces (UTF-8, a malformed
sequence read as U+FFFD), then httpx-sse's own line and event decoders, an independent
implementation of the WHATWG event-stream rules and so the oracle, minus the events without
data (which every consumer skips). The bodies include malformed UTF-8, byte order marks,
every line end and split ``\\r\\n`` pairs.
"""

from __future__ import annotations

import codecs
import itertools
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from httpx_sse._decoders import SSEDecoder, SSELineDecoder
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reasoning_stream.providers._transports import (
    HttpCall,
    NDJSONDecoder,
    SSEJsonDecoder,
    SSEReader,
)
from reasoning_stream.providers._transports.ndjson import ndjson_lines
from reasoning_stream.testing import Reply, WireServer
from tests.helpers import examples
from tests.reliability import RawTranscript

# Pieces that make the framing's edge cases likely: every line end, blank lines, comments,
# fields with and without a space or a colon, unknown fields, and JSON-ish data.
ATOMS = st.sampled_from(
    [
        "\n", "\r", "\r\n", "\n\n", "\r\r", ":", ": keep-alive", "data", "data:", "data: ",
        "event", "event:", "event: ping", "id: 7", "retry: 30", "x-field: 1", " ", "{", "}",
        '"a"', "[DONE]", "é", "\u2028", "\x00", "message", "\ufeff", "日本", "🙂",
    ]
)  # fmt: skip
TEXTS = st.lists(st.one_of(ATOMS, st.text(max_size=4)), max_size=40).map("".join)
# Bytes no text encodes: malformed UTF-8 (a lone continuation byte, a truncated sequence, an
# overlong form, an encoded surrogate, a byte never valid), next to the text's own bytes.
BAD_UTF8 = st.sampled_from(
    [b"\xff", b"\x80", b"\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf0\x9f", b"\xef\xbb\xbf"]
)
BODIES = st.lists(
    st.one_of(TEXTS.map(lambda text: text.encode("utf-8")), BAD_UTF8), max_size=6
).map(b"".join)


def cut(body: bytes, data: Any) -> list[bytes]:
    """``body`` cut at any byte positions (empty pieces left out, as httpx never yields one)."""
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=8)))
    bounds = [0, *cuts, len(body)]
    return [body[start:end] for start, end in itertools.pairwise(bounds) if end > start]


def iter_text(pieces: list[bytes]) -> list[str]:
    """The text pieces httpx's ``iter_text`` makes of the byte pieces (its TextDecoder)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    texts = [decoder.decode(piece) for piece in pieces]
    texts.append(decoder.decode(b"", True))
    return [text for text in texts if text]


def oracle(pieces: list[bytes]) -> list[tuple[str, str]]:
    """What httpx-sse yields for the body's text (its iter_sse loop), events with data only."""
    lines = SSELineDecoder()
    events = SSEDecoder()
    out: list[tuple[str, str]] = []

    def take(line: str) -> None:
        sse = events.decode(line.rstrip("\n"))
        if sse is not None and sse.data:
            out.append((sse.event, sse.data))

    for text in iter_text(pieces):
        for line in lines.decode(text):
            take(line)
    for line in lines.flush():
        take(line)
    return out


def read(pieces: list[bytes]) -> list[tuple[str, str]]:
    """The reader's events, their data read as text the way the JSON decoder reads it."""
    reader = SSEReader()
    out: list[tuple[str, bytes]] = []
    for piece in pieces:
        out += reader.feed(piece)
    out += reader.finish()
    for name, data in out:
        assert type(name) is str and type(data) is bytes
    return [(name, data.decode("utf-8", "replace")) for name, data in out]


# 400 examples each: about 1 s.
@settings(max_examples=examples(400), deadline=None)
@given(TEXTS, st.data())
@example("data: a\r\ndata: b\r\r", None)
@example("\n\ndata: x\n\n\ndata: y\n\n", None)
@example("event: e\n\ndata: z\n\n", None)
@example("event: é\ndata: 日本\n\n", None)
@example("data: {}\r\n\r\n", None)
def test_reader_matches_httpx_sse_for_any_text_and_byte_chunking(text: str, data: Any) -> None:
    body = text.encode("utf-8")
    pieces = cut(body, data) if data is not None else [body[i : i + 1] for i in range(len(body))]
    assert read(pieces) == oracle(pieces)


@settings(max_examples=examples(400), deadline=None)
@given(BODIES, st.data())
def test_reader_matches_httpx_sse_on_malformed_utf8(body: bytes, data: Any) -> None:
    pieces = cut(body, data)
    assert read(pieces) == oracle(pieces)


FIELD_LINES = st.sampled_from(
    ["data: ", "data:", "data: {}", "data: [1]", "data: é", "event: ping", "event: ", "event:x",
     ": keep-alive", "id: 1", "data: a: b", "data:  x", "data: [DONE]", "data: [DONE",
     "data: [DONE] more"]
)  # fmt: skip
LINE_ENDS = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def server_pieces(draw: st.DrawFn) -> list[bytes]:
    """Events as servers flush them, one piece each (the shapes the short ways serve), with
    any mix of line ends; now and then two events share a piece or one is split."""
    pieces: list[bytes] = []
    for _ in range(draw(st.integers(1, 6))):
        lines = draw(st.lists(FIELD_LINES, min_size=1, max_size=3))
        end = draw(LINE_ENDS)
        ends = [draw(st.one_of(st.just(end), LINE_ENDS)) for _ in lines]
        event = "".join(line + ending for line, ending in zip(lines, ends, strict=True)) + end
        pieces.append(event.encode("utf-8"))
    if len(pieces) > 1 and draw(st.booleans()):
        at = draw(st.integers(0, len(pieces) - 2))
        pieces[at : at + 2] = [pieces[at] + pieces[at + 1]]
    if draw(st.booleans()):
        at = draw(st.integers(0, len(pieces) - 1))
        split = draw(st.integers(1, max(1, len(pieces[at]) - 1)))
        pieces[at : at + 1] = [pieces[at][:split], pieces[at][split:]]
    return [piece for piece in pieces if piece]


@settings(max_examples=examples(400), deadline=None)
@given(server_pieces())
@example([b"data: x\ndata: y\r\n\r\n"])
@example([b"event: e\ndata: x\ndata: y\n\n"])
def test_reader_matches_httpx_sse_on_pieces_servers_send(pieces: list[bytes]) -> None:
    assert read(pieces) == oracle(pieces)


@settings(max_examples=examples(150), deadline=None)
@given(BODIES)
def test_one_piece_or_one_byte_at_a_time_is_the_same(body: bytes) -> None:
    whole = [body] if body else []
    bytewise = [body[i : i + 1] for i in range(len(body))]
    assert read(whole) == read(bytewise) == oracle(whole)


def test_whole_event_pieces_take_the_short_ways_and_give_the_same() -> None:
    """The pieces servers send (one event each: OpenAI's, Anthropic's named ones, Google's
    CRLF ones, keep-alives) against the oracle, one by one and joined."""
    pieces = [
        b": OPENROUTER PROCESSING\n\n",
        b'data: {"a": 1}\n\n',
        b'event: content_block_delta\ndata: {"b": "\xc3\xa9"}\n\n',
        b"event: ping\ndata: \n\n",
        b"event: \ndata: x\n\n",
        b'data: {"c": 2}\r\n\r\n',
        b"data: \r\n\r\n",
        b"data: [DONE]\n\n",
    ]
    assert read(pieces) == oracle(pieces) == read([b"".join(pieces)])
    assert len(read(pieces)) == 5


def test_long_event_in_many_pieces_is_read_once() -> None:
    """A 1 MB data line in 1 KB pieces comes out whole (and the reader stays linear)."""
    payload = b"x" * 1_000_000
    body = b"data: " + payload + b"\n\n"
    pieces = [body[i : i + 1024] for i in range(0, len(body), 1024)]
    assert read(pieces) == [("message", payload.decode())]


# ------------------------------------------------- the pure SSE JSON decoder and [DONE]


def _data(provider: str, data: bytes) -> str:
    return data.decode("utf-8", "replace")


def decoded(pieces: list[bytes], **decoding: Any) -> list[Any]:
    """What the read loops take from an ``SSEJsonDecoder`` fed ``pieces``."""
    decoder = SSEJsonDecoder("law", **decoding)
    out: list[Any] = []
    for piece in pieces:
        out += decoder.feed(piece)
        if decoder.stopped:
            break
    else:
        out += decoder.finish()
    decoder.check()
    return out


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(server_pieces(), BODIES.map(lambda body: [body])), st.data())
@example([b"data: [DONE]\n\n", b"data: x\n\n"], None)
@example([b"data: a\n\ndata: [DONE]\n\ndata: b\n\n"], None)
def test_the_decoder_gives_httpx_sses_events_until_done(pieces: list[bytes], data: Any) -> None:
    """Fed any pieces, the pure decoder gives the data of httpx-sse's events before the first
    ``[DONE]``, through ``decode`` (its short way for a whole event) and ``decode_event``
    (which sees names too) alike."""
    if data is not None and data.draw(st.booleans()):
        pieces = cut(b"".join(pieces), data)
    expected = until_done(oracle([b"".join(pieces)] if pieces else []))
    assert decoded(pieces, decode_event=_named) == expected
    assert decoded(pieces, decode=_data) == [text for _, text in expected]


def _strict(provider: str, data: bytes) -> bytes:
    if data == b"bad":
        raise ValueError("bad payload")
    return data


def test_a_payload_that_fails_comes_after_the_chunks_before_it() -> None:
    """The chunks a piece completes before a payload that fails still come out; the error
    follows them (``check()``), and the stream stops there."""
    decoder = SSEJsonDecoder("law", decode=_strict)
    assert decoder.feed(b"data: a\n\ndata: bad\n\ndata: c\n\n") == [b"a"]
    assert decoder.stopped
    with pytest.raises(ValueError, match="bad payload"):
        decoder.check()
    lines = NDJSONDecoder("law", decode=_strict)
    assert lines.feed(b"a\nbad\nc\n") == [b"a"]
    assert lines.stopped
    with pytest.raises(ValueError, match="bad payload"):
        lines.check()
    with pytest.raises(ValueError, match="bad payload"):
        SSEJsonDecoder("law", decode=_strict).feed(b"data: bad\n\n")


# ------------------------------------------------------------------------ NDJSON lines

LINE_ATOMS = st.sampled_from(["\n", "\r\n", "\r", " ", "\t", "\u2028", "\x85", "{}", '{"a": 1}'])
LINE_BODIES = st.lists(
    st.one_of(LINE_ATOMS.map(str.encode), st.text().map(str.encode), BAD_UTF8), max_size=30
).map(b"".join)


@settings(max_examples=examples(300), deadline=None)
@given(LINE_BODIES, st.data())
@example(b'{"a": 1}\n{"b": 2}\n', None)
@example(b'{"a": "\xe2\x80\xa8"}\r\n \n\n{}', None)
def test_ndjson_lines_are_the_whole_bodys_lines_for_any_chunking(body: bytes, data: Any) -> None:
    """Cut anywhere, the pieces give the lines of the whole body split at ``\\n`` alone,
    blank ones (JSON whitespace only) dropped; ``\\r``, U+2028 and U+0085 stay inside their
    line, and so does a malformed sequence."""
    pieces = cut(body, data) if data is not None else [body[i : i + 1] for i in range(len(body))]
    expected = [line for line in body.split(b"\n") if line.strip(b" \t\r\n")]
    assert list(ndjson_lines(pieces)) == expected


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(LINE_ATOMS, max_size=20).map("".join), st.data())
def test_ndjson_lines_are_the_lines_of_the_text(text: str, data: Any) -> None:
    """The same law stated on the text an ``iter_text`` reader would cut: its lines at ``\\n``."""
    pieces = cut(text.encode("utf-8"), data)
    expected = [line for line in "".join(iter_text(pieces)).split("\n") if line.strip(" \t\r\n")]
    assert [line.decode("utf-8") for line in ndjson_lines(pieces)] == expected


# ------------------------------------------------- the transports' own loops, over a socket
#
# The lean read loops (an HttpCall's read and aread, over SSE or NDJSON) take each piece's
# short way themselves; these laws serve any body, cut anywhere, from a real loopback server
# and read it through them, against the oracle's reading of the whole body.

_routes = itertools.count()


@pytest.fixture(scope="module")
def server() -> Iterator[WireServer]:
    with WireServer() as wire:
        yield wire


def served(wire: WireServer, pieces: list[bytes], content_type: str) -> str:
    """The URL where ``wire`` answers one POST with ``pieces``, each written and flushed."""
    path = f"/law{next(_routes)}"
    headers = {"Content-Type": content_type}
    wire.add(Reply(RawTranscript(path=path, format="raw", headers=headers, pieces=pieces)))
    return wire.url + path


def until_done(events: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The events before the first whose data starts with ``[DONE]`` (which ends a stream)."""
    for position, (_, data) in enumerate(events):
        if data.startswith("[DONE]"):
            return events[:position]
    return events


def _named(provider: str, name: str, data: bytes) -> tuple[str, str]:
    return (name, data.decode("utf-8", "replace"))


def _line(provider: str, line: bytes) -> bytes:
    return line


async def _aread_sse(url: str) -> list[Any]:
    async with httpx.AsyncClient() as client:
        stream = HttpCall(url, {}, {}, "law", decode_event=_named).aread(client)
        return [event async for event in stream]


async def _aread_ndjson(url: str) -> list[Any]:
    async with httpx.AsyncClient() as client:
        stream = HttpCall(url, {}, {}, "law", framing="ndjson", decode=_line).aread(client)
        return [line async for line in stream]


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.one_of(server_pieces(), BODIES.map(lambda body: [body])), st.data())
def test_the_sse_transport_reads_any_body_as_httpx_sse(
    server: WireServer, pieces: list[bytes], data: Any
) -> None:
    if data.draw(st.booleans()):
        pieces = cut(b"".join(pieces), data)
    expected = until_done(oracle([b"".join(pieces)] if pieces else []))
    url = served(server, pieces, "text/event-stream")
    with httpx.Client() as client:
        stream = HttpCall(url, {}, {}, "law", decode_event=_named).read(client)
        assert list(stream) == expected
    url = served(server, pieces, "text/event-stream")
    assert anyio.run(_aread_sse, url) == expected


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(LINE_BODIES, st.data())
def test_the_ndjson_transport_cuts_any_body_at_newlines(
    server: WireServer, body: bytes, data: Any
) -> None:
    pieces = (
        cut(body, data)
        if data.draw(st.booleans())
        else [line + b"\n" for line in body.split(b"\n")]
    )
    pieces = [piece for piece in pieces if piece]
    expected = [line for line in b"".join(pieces).split(b"\n") if line.strip(b" \t\r\n")]
    url = served(server, pieces, "application/x-ndjson")
    with httpx.Client() as client:
        stream = HttpCall(url, {}, {}, "law", framing="ndjson", decode=_line).read(client)
        assert list(stream) == expected
    url = served(server, pieces, "application/x-ndjson")
    assert anyio.run(_aread_ndjson, url) == expected
