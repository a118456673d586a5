"""Server-sent events, as JSON payloads: the framing and the ``[DONE]`` sentinel, pure.

:class:`SSEReader` cuts the ``text/event-stream`` framing from the body's bytes;
:class:`SSEJsonDecoder` turns what it cuts into decoded payloads and owns ``[DONE]``, the end
the OpenAI-style APIs send. Neither does I/O, so the sync and async read loops that feed them
(:mod:`.wire`'s one pair, for a :class:`~.lean.HttpCall`) differ by ``async`` alone. OpenAI
Chat, Responses and Anthropic on ``transport="httpx"``, Gemini and OpenRouter always, read
their streams this way.
"""

from __future__ import annotations

from typing import Any

import httpx
import httpx_sse

from ..._exceptions import MalformedStreamError
from .._errors import build_error
from .base import SKIP, Decode, DecodeEvent, PayloadDecoder, decode_json

__all__ = ["SSE_HEADERS", "SSEJsonDecoder", "SSEReader", "check_event_stream"]


class SSEReader:
    """The ``text/event-stream`` framing, incrementally: bytes in, ``(event, data)`` pairs out.

    The body is read as the server sent it, UTF-8 bytes, without decoding it to text first:
    every byte the framing looks at (``\\r``, ``\\n``, ``:``, a space) is ASCII, which never
    occurs inside a multi-byte UTF-8 sequence, so cutting the bytes is cutting the text. The
    event's name comes out as text (UTF-8, a malformed sequence read as U+FFFD, as httpx's
    ``iter_text`` reads it); its data stays bytes, for a JSON decoder that reads UTF-8 itself
    (:func:`reasoning_stream._json.loads_utf8`).

    Lines end at ``\\r\\n``, ``\\n`` or ``\\r`` (a ``\\r`` that ends one piece waits for the
    next, which may start with its ``\\n``); a blank line dispatches the event; ``:`` starts a
    comment; ``data`` lines join with ``\\n``; ``event`` names it (``"message"`` without one);
    other fields are ignored. Only events with data come out: what httpx-sse's decoder yields
    for the body's text, minus the events without data, whatever the chunking (a hypothesis
    law checks exactly that), at a fraction of the per-event cost: complete events are cut
    from the bytes in one go, and a piece that is one whole event of one ``data:`` line (after
    an ``event:`` line or not), the common case, needs no line loop.

    >>> reader = SSEReader()
    >>> reader.feed(b"event: ping\\ndata: {}\\n\\ndata: [1,")
    [('ping', b'{}')]
    >>> reader.feed(b" 2]\\r\\n\\r\\n: keep-alive\\n\\n")
    [('message', b'[1, 2]')]
    """

    __slots__ = ("_cr", "_newline", "_pending")

    def __init__(self) -> None:
        self._pending: list[bytes] = []
        self._newline = False  # the pending bytes end with a line end
        self._cr = False  # a "\r" ended the last piece

    def feed(self, chunk: bytes) -> list[tuple[str, bytes]]:
        """The events that ``chunk`` completes, in order."""
        if not self._pending and not self._cr:
            # The common pieces: whole events and nothing more (servers flush per event).
            # (Byte membership, slicing and comparison cost less than a method call each.)
            if chunk[-2:] == b"\n\n":
                if _CR not in chunk:
                    end = len(chunk) - 2
                    if chunk[:6] == b"data: ":
                        data = chunk[6:end]
                        if _LF not in data:
                            return [("message", data)] if data else []
                    elif chunk[:7] == b"event: ":
                        line = chunk.find(b"\n")
                        if chunk[line + 1 : line + 7] == b"data: ":
                            data = chunk[line + 7 : end]
                            if _LF not in data:
                                if not data:
                                    return []
                                name = chunk[7:line].decode("utf-8", "replace") or "message"
                                return [(name, data)]
                    return self._blocks(chunk.split(b"\n\n")[:-1])
            elif chunk[-4:] == b"\r\n\r\n" and chunk[:6] == b"data: ":
                # CRLF line ends (Google's servers): one data line ends at the first "\r".
                data = chunk[6:-4]
                if _CR not in data and _LF not in data:
                    return [("message", data)] if data else []
        if self._cr:
            chunk = b"\r" + chunk
            self._cr = False
        if chunk.endswith(b"\r"):
            chunk = chunk[:-1]
            self._cr = True
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not chunk:
            return []
        pending = self._pending
        if b"\n\n" not in chunk and not (self._newline and chunk[0] == _LF):
            pending.append(chunk)
            self._newline = chunk[-1] == _LF
            return []
        pending.append(chunk)
        blocks = b"".join(pending).split(b"\n\n")
        rest = blocks.pop()
        self._pending = [rest] if rest else []
        self._newline = rest.endswith(b"\n")
        return self._blocks(blocks)

    @staticmethod
    def _blocks(blocks: list[bytes]) -> list[tuple[str, bytes]]:
        events: list[tuple[str, bytes]] = []
        for block in blocks:
            if block.startswith(b"data: ") and b"\n" not in block:
                if len(block) > 6:
                    events.append(("message", block[6:]))
                continue
            event = _parse_block(block)
            if event is not None:
                events.append(event)
        return events

    def finish(self) -> list[tuple[str, bytes]]:
        """The end of the stream: a held ``\\r`` still ends a line (an unfinished event is lost)."""
        if not self._cr:
            return []
        self._cr = False
        return self.feed(b"\n")


_LF = ord("\n")
_CR = ord("\r")


def _parse_block(block: bytes) -> tuple[str, bytes] | None:
    name = b""
    data: list[bytes] = []
    for line in block.split(b"\n"):
        if not line or line[0] == _COLON:
            # A blank line can only lead a block (a third line end in a row): it dispatches
            # what came before it, and nothing did.
            continue
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data.append(value)
        elif field == b"event":
            name = value
    joined = b"\n".join(data)
    if not joined:
        return None
    return (name.decode("utf-8", "replace") or "message", joined)


_COLON = ord(":")


_DONE = b"[DONE]"


class SSEJsonDecoder(PayloadDecoder):
    """The payloads of an SSE stream, decoded: the wire's bytes in, chunks out. Pure.

    Each event's data goes through ``decode`` (or ``decode_event``, which also sees the
    event's name and may return :data:`~.base.SKIP` for an event without a chunk, a ping).
    Data that starts with ``[DONE]`` ends the stream: nothing after it is decoded, and
    :attr:`stopped` turns true. A payload that fails to decode ends it too; the chunks of the
    same piece before it still come out, and :meth:`check` raises the error after them.

    >>> decoder = SSEJsonDecoder("x")
    >>> decoder.feed(b'data: {"a": 1}\\n\\ndata: [2')
    [{'a': 1}]
    >>> decoder.feed(b']\\n\\ndata: [DONE]\\n\\ndata: {}\\n\\n'), decoder.stopped
    ([[2]], True)
    """

    __slots__ = ("_decode", "_decode_event", "_provider", "_reader")

    def __init__(
        self, provider: str, decode: Decode = decode_json, decode_event: DecodeEvent | None = None
    ) -> None:
        super().__init__()
        self._provider = provider
        self._decode = decode
        self._decode_event = decode_event
        self._reader = SSEReader()

    def feed(self, piece: bytes) -> list[Any]:
        """The chunks of the events ``piece`` completes, in order."""
        reader = self._reader
        if reader._pending or reader._cr:
            return self._payloads(reader.feed(piece))
        # The common pieces (servers flush per event): one whole event of one data line, after
        # an event line or not, decoded here without the reader's lists (its own short ways).
        head = 0
        if piece[-2:] == b"\n\n" and _CR not in piece:
            if piece[:6] == b"data: ":
                data = piece[6:-2]
            elif piece[:7] == b"event: " and piece[(head := piece.find(b"\n")) + 1 : head + 7] == (
                b"data: "
            ):
                data = piece[head + 7 : -2]
            else:
                return self._payloads(reader.feed(piece))
        elif piece[-4:] == b"\r\n\r\n" and piece[:6] == b"data: ":
            # CRLF line ends (Google's servers): one data line ends at the first "\r".
            data = piece[6:-4]
            if _CR in data:
                return self._payloads(reader.feed(piece))
        else:
            return self._payloads(reader.feed(piece))
        if _LF in data:
            return self._payloads(reader.feed(piece))
        if not data:
            return []
        if data[:6] == _DONE:
            self.stopped = True
            return []
        decode_event = self._decode_event
        if decode_event is None:
            return [self._decode(self._provider, data)]
        name = piece[7:head].decode("utf-8", "replace") if head else ""
        chunk = decode_event(self._provider, name or "message", data)
        return [] if chunk is SKIP else [chunk]

    def finish(self) -> list[Any]:
        """The chunks the end of the body releases (a held ``\\r`` still ends a line)."""
        return self._payloads(self._reader.finish())

    def _payloads(self, events: list[tuple[str, bytes]]) -> list[Any]:
        chunks: list[Any] = []
        provider, decode, decode_event = self._provider, self._decode, self._decode_event
        try:
            for name, data in events:
                if data[:6] == _DONE:
                    self.stopped = True
                    break
                if decode_event is None:
                    chunks.append(decode(provider, data))
                    continue
                chunk = decode_event(provider, name, data)
                if chunk is not SKIP:
                    chunks.append(chunk)
        except Exception as error:
            # The chunks decoded before it are still the stream's: the error waits for them.
            self._hold(error, chunks)
        return chunks


SSE_HEADERS = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
"""What httpx-sse's ``connect_sse`` asks for, set over the caller's headers."""


def check_event_stream(provider: str, response: httpx.Response) -> None:
    """A reply that is not ``text/event-stream`` (an HTML page, JSON) is a malformed stream."""
    content_type = response.headers.get("content-type", "").partition(";")[0]
    if "text/event-stream" not in content_type:
        error = httpx_sse.SSEError(
            "Expected response header Content-Type to contain 'text/event-stream', "
            f"got {content_type!r}"
        )
        made = build_error(
            provider,
            f"the reply is not an event stream ({error}); check base_url points at the API "
            "root and that the server supports streaming",
            malformed=True,
        )
        assert isinstance(made, MalformedStreamError)
        raise made from error
