"""How chunks reach a provider pipe: the SDK stream, httpx + httpx-sse, NDJSON, boto3.

Every transport opens one response and hands the driver a :class:`Source` (sync) or an
:class:`AsyncSource`: the chunks, a way to release the response on every exit path, and the
id the transport learned before the first chunk (Bedrock's request id). The driver
(:mod:`._driver`) owns the loops; translators own the meaning of the chunks.

- :func:`sdk_source` / :func:`asdk_source`: an official SDK's stream object (openai,
  anthropic), closed completely, generators included.
- :func:`iter_sse_json` / :func:`aiter_sse_json`: POST a JSON body with httpx (httpx-sse's
  ``connect_sse``), cut the ``text/event-stream`` reply's bytes into events with
  :class:`SSEReader` (httpx-sse's framing rules, checked against it by a law), decode each
  ``data:`` payload's bytes with :func:`reasoning_stream._json.loads_utf8` (msgspec with the
  ``fast`` extra, else ``json.loads``), stop at ``[DONE]``. No SDK model objects: the lean
  transport (``transport="httpx"``) of OpenAI Chat, Responses and Anthropic, and the only one
  of Gemini and OpenRouter.
- :func:`ndjson_source` / :func:`andjson_source`: a newline-delimited JSON stream as the
  ``ollama`` SDK's generator decodes it; :func:`iter_ndjson` / :func:`aiter_ndjson`: the same
  wire read with httpx alone, its lines cut from the bytes (Ollama's lean transport).
- :func:`wire_bytes` / :func:`awire_bytes`: the reply's bytes as the lean readers take them,
  through as few of httpx's layers as the reply allows (no text decoding: the readers cut
  bytes, and msgspec reads UTF-8 itself).
- :func:`lean_client`, :func:`check_lean_client`: the httpx clients of the lean transports.
- :func:`event_stream_source` / :func:`aevent_stream_source`: a boto3 ``EventStream``; boto3
  is sync only, so the async twin reads the body's bytes in a thread of its own, the event
  loop takes what was read since its last look (one ``bytearray``) and decodes the frames with
  the stream's own botocore code, and a blocked read can be interrupted.
"""

from __future__ import annotations

import codecs
import contextlib
import inspect
import json
import threading
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
)
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
import httpx
import httpx_sse

from .._exceptions import MalformedStreamError, ProviderError, UsageError
from .._json import loads_utf8
from ._errors import build_error, http_error

__all__ = [
    "SKIP",
    "TRANSPORTS",
    "AsyncSource",
    "Source",
    "aevent_stream_source",
    "aiter_ndjson",
    "aiter_sse_json",
    "andjson_source",
    "asdk_source",
    "awire_bytes",
    "check_lean_client",
    "decode_json",
    "event_stream_source",
    "iter_ndjson",
    "iter_sse_json",
    "lean_client",
    "lean_endpoint",
    "lean_url",
    "ndjson_source",
    "payload_text",
    "sdk_source",
    "wire_bytes",
]

_DRAIN_SECONDS = 0.1
# How long closing a boto3 stream waits for a read in flight after the socket was shut down.
_CLOSE_WAIT_SECONDS = 5.0


@dataclass(slots=True)
class Source:
    """The chunks of one response, and how to release it (called once, on every exit)."""

    chunks: Iterable[Any]
    close: Callable[[], None]
    response_id: str | None = None


@dataclass(slots=True)
class AsyncSource:
    """Async twin of :class:`Source`."""

    chunks: AsyncIterable[Any]
    aclose: Callable[[], Awaitable[None]]
    response_id: str | None = None


# ------------------------------------------------------------------------------ SDK streams


def sdk_source(stream: Any) -> Source:
    """An SDK's sync ``Stream`` (openai, anthropic): iterate it, ``close()`` it."""
    return Source(stream, stream.close)


def asdk_source(stream: Any) -> AsyncSource:
    """An SDK's ``AsyncStream``, closed completely: our iterator, its generator, the response.

    ``stream.close()`` releases the response but leaves the async generators behind the stream
    suspended when the run ended early; the garbage collector would finalise them later, on
    whatever event loop runs then (trio reports it as a ResourceWarning).
    """
    iterator = aiter(stream)

    async def aclose() -> None:
        try:
            for generator in (iterator, getattr(stream, "_iterator", None)):
                close = getattr(generator, "aclose", None)
                if close is not None:
                    await close()
        finally:
            await stream.close()

    return AsyncSource(iterator, aclose)


# ------------------------------------------------------------------------------- NDJSON


def ndjson_source(stream: Iterator[Any]) -> Source:
    """The ``ollama`` SDK's NDJSON generator (lazy: the request goes out on the first read)."""
    close = getattr(stream, "close", None)
    return Source(stream, close if callable(close) else _nothing)


def andjson_source(stream: AsyncIterator[Any]) -> AsyncSource:
    """Async twin of :func:`ndjson_source`."""
    aclose = getattr(stream, "aclose", None)
    return AsyncSource(stream, aclose if callable(aclose) else _anothing)


def _nothing() -> None:
    return None


async def _anothing() -> None:
    return None


# ------------------------------------------------------------------------- httpx + SSE

StatusError = Callable[[str, httpx.Response], ProviderError]
"""``(provider, response with its body read) -> the error to raise`` for an HTTP error."""
Decode = Callable[[str, bytes], Any]
"""``(provider, data) -> the decoded chunk``; raises ``MalformedStreamError``.

``data`` is the payload's UTF-8 bytes as they came off the wire (see :class:`SSEReader`)."""


DecodeEvent = Callable[[str, str, bytes], Any]
"""``(provider, event name, data) -> the decoded chunk``, or :data:`SKIP` to pass the event by.

httpx-sse names an event without an ``event:`` field ``"message"``."""

SKIP: Any = object()
"""What a :data:`DecodeEvent` returns for an event that carries no chunk (a ping)."""


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


def decode_json(provider: str, data: bytes) -> Any:
    """One payload's UTF-8 bytes as JSON, or a ``MalformedStreamError`` that does not quote it.

    The hot path of every lean transport: :func:`reasoning_stream._json.loads_utf8` (msgspec
    when the ``fast`` extra is installed) decodes exactly what ``json.loads`` decodes from
    the payload's text.
    """
    try:
        return loads_utf8(data)
    except json.JSONDecodeError as error:
        # The payload itself stays out of the message: it may hold opaque reasoning state.
        raise build_error(
            provider,
            f"a stream event is not valid JSON ({error.msg} at character {error.pos} of "
            f"{len(error.doc)}); the server does not speak the expected SSE format",
            malformed=True,
        ) from error


def payload_text(data: bytes) -> str:
    """A payload's text, as httpx's ``iter_text`` would have read it (for error bodies)."""
    return data.decode("utf-8", "replace")


def iter_sse_json(
    client: httpx.Client,
    url: str,
    *,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    provider: str,
    status_error: StatusError = http_error,
    decode: Decode = decode_json,
    decode_event: DecodeEvent | None = None,
) -> Iterator[Any]:
    """POST ``body`` to ``url`` and yield each SSE ``data:`` payload, decoded.

    Comment lines (OpenRouter's ``: OPENROUTER PROCESSING`` keep-alives) and events without
    data are skipped; ``[DONE]`` ends the stream. Closing the generator closes the response.
    ``decode_event``, when given, replaces ``decode`` and also sees the event's name (Anthropic
    names its events; a ping is :data:`SKIP`, an ``error`` event raises).

    >>> with httpx.Client() as client:  # doctest: +SKIP
    ...     for chunk in iter_sse_json(client, url, body=body, headers={}, provider="x"):
    ...         print(chunk["choices"])
    """
    with httpx_sse.connect_sse(client, "POST", url, json=body, headers=dict(headers)) as source:
        response = source.response
        if response.status_code >= 400:
            response.read()
            raise status_error(provider, response)
        _check_event_stream(provider, response)
        reader = SSEReader()
        feed = reader.feed
        for piece in wire_bytes(response):
            for name, data in feed(piece):
                if data[:6] == _DONE:
                    return
                if decode_event is None:
                    yield decode(provider, data)
                    continue
                chunk = decode_event(provider, name, data)
                if chunk is not SKIP:
                    yield chunk
        for name, data in reader.finish():
            if data[:6] == _DONE:
                return
            chunk = (
                decode(provider, data)
                if decode_event is None
                else (decode_event(provider, name, data))
            )
            if chunk is not SKIP:
                yield chunk


async def aiter_sse_json(
    client: httpx.AsyncClient,
    url: str,
    *,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    provider: str,
    status_error: StatusError = http_error,
    decode: Decode = decode_json,
    decode_event: DecodeEvent | None = None,
) -> AsyncIterator[Any]:
    """Async twin of :func:`iter_sse_json`."""
    async with httpx_sse.aconnect_sse(
        client, "POST", url, json=body, headers=dict(headers)
    ) as source:
        response = source.response
        if response.status_code >= 400:
            await response.aread()
            raise status_error(provider, response)
        _check_event_stream(provider, response)
        pieces = awire_bytes(response)
        reader = SSEReader()
        feed = reader.feed
        try:
            async for piece in pieces:
                for name, data in feed(piece):
                    if data[:6] == _DONE:
                        await _drain(pieces)
                        return
                    if decode_event is None:
                        yield decode(provider, data)
                        continue
                    chunk = decode_event(provider, name, data)
                    if chunk is not SKIP:
                        yield chunk
            for name, data in reader.finish():
                if data[:6] == _DONE:
                    return
                chunk = (
                    decode(provider, data)
                    if decode_event is None
                    else (decode_event(provider, name, data))
                )
                if chunk is not SKIP:
                    yield chunk
        finally:
            await pieces.aclose()


_DONE = b"[DONE]"


def wire_bytes(response: httpx.Response) -> Iterator[bytes]:
    """The body as UTF-8 bytes, through as few of httpx's layers as the reply allows.

    An unencoded reply is read raw (``iter_raw``: no content decoder, no text decoder); a
    compressed one is decompressed (``iter_bytes``). A reply whose charset is not UTF-8 (or a
    client whose ``default_encoding`` is not) is read as httpx reads its text, re-encoded: the
    readers then see the very text an ``iter_text`` reader would.
    """
    if not _is_utf8(response):
        return (text.encode("utf-8", "surrogatepass") for text in response.iter_text())
    if "content-encoding" in response.headers:
        return response.iter_bytes()
    return response.iter_raw()


def awire_bytes(response: httpx.Response) -> AsyncGenerator[bytes, None]:
    """Async twin of :func:`wire_bytes`; ``aclose()`` it when done."""
    if not _is_utf8(response):
        return _aencoded(response)
    if "content-encoding" in response.headers:
        return response.aiter_bytes()  # type: ignore[return-value]
    return response.aiter_raw()  # type: ignore[return-value]


async def _aencoded(response: httpx.Response) -> AsyncGenerator[bytes, None]:
    texts = response.aiter_text()
    try:
        async for text in texts:
            yield text.encode("utf-8", "surrogatepass")
    finally:
        await texts.aclose()  # type: ignore[attr-defined]


def _is_utf8(response: httpx.Response) -> bool:
    encoding = response.encoding or "utf-8"
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def _check_event_stream(provider: str, response: httpx.Response) -> None:
    """A reply that is not ``text/event-stream`` (an HTML page, JSON) is a malformed stream."""
    content_type = response.headers.get("content-type", "").partition(";")[0]
    if "text/event-stream" not in content_type:
        error = httpx_sse.SSEError(
            "Expected response header Content-Type to contain 'text/event-stream', "
            f"got {content_type!r}"
        )
        raise _not_a_stream(provider, error) from error


def sse_source(stream: Iterator[Any]) -> Source:
    """A :func:`iter_sse_json` generator as a :class:`Source`."""
    return Source(stream, stream.close)  # type: ignore[attr-defined]


def asse_source(stream: AsyncIterator[Any]) -> AsyncSource:
    """An :func:`aiter_sse_json` generator as an :class:`AsyncSource`."""
    return AsyncSource(stream, stream.aclose)  # type: ignore[attr-defined]


async def _drain(events: AsyncIterator[Any]) -> None:
    """Read what follows ``[DONE]`` (normally just the end of the body), briefly.

    A fully read body lets httpx keep the connection for the next request, and lets the
    reader's own async generators finish instead of being collected half-way (which trio
    reports as a ResourceWarning). A server that lingers past the bound is simply closed.
    """
    with anyio.move_on_after(_DRAIN_SECONDS):
        try:
            async for _ in events:
                pass
        except (httpx.HTTPError, httpx_sse.SSEError):
            # The answer is complete; a broken tail must not turn it into a failure.
            pass


def _not_a_stream(provider: str, error: Exception) -> MalformedStreamError:
    made = build_error(
        provider,
        f"the reply is not an event stream ({error}); check base_url points at the API root "
        "and that the server supports streaming",
        malformed=True,
    )
    assert isinstance(made, MalformedStreamError)
    return made


# ------------------------------------------------------------------------ httpx + NDJSON


def iter_ndjson(
    client: httpx.Client,
    url: str,
    *,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    provider: str,
    status_error: StatusError = http_error,
    decode: Decode = decode_json,
) -> Iterator[Any]:
    """POST ``body`` to ``url`` and yield each line of the NDJSON reply, decoded.

    The lines are cut from the body's bytes (see :func:`wire_bytes`); blank lines are
    skipped; closing the generator closes the response.
    """
    with client.stream("POST", url, json=body, headers=dict(headers)) as response:
        if response.status_code >= 400:
            response.read()
            raise status_error(provider, response)
        pending: list[bytes] = []
        for piece in wire_bytes(response):
            if not pending and piece[-1:] == b"\n" and _LF not in (line := piece[:-1]):
                # The common piece: one whole line (servers flush per line).
                if line.strip(_JSON_SPACE):
                    yield decode(provider, line)
                continue
            for line in _split_lines(piece, pending):
                yield decode(provider, line)
        rest = _last_line(pending)
        if rest is not None:
            yield decode(provider, rest)


async def aiter_ndjson(
    client: httpx.AsyncClient,
    url: str,
    *,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    provider: str,
    status_error: StatusError = http_error,
    decode: Decode = decode_json,
) -> AsyncIterator[Any]:
    """Async twin of :func:`iter_ndjson`."""
    async with client.stream("POST", url, json=body, headers=dict(headers)) as response:
        if response.status_code >= 400:
            await response.aread()
            raise status_error(provider, response)
        pieces = awire_bytes(response)
        pending: list[bytes] = []
        try:
            async for piece in pieces:
                if not pending and piece[-1:] == b"\n" and _LF not in (line := piece[:-1]):
                    if line.strip(_JSON_SPACE):
                        yield decode(provider, line)
                    continue
                for line in _split_lines(piece, pending):
                    yield decode(provider, line)
            rest = _last_line(pending)
            if rest is not None:
                yield decode(provider, rest)
        finally:
            await pieces.aclose()


_JSON_SPACE = b" \t\r\n"


def _split_lines(piece: bytes, pending: list[bytes]) -> list[bytes]:
    """The lines ``piece`` completes (blank ones dropped: JSON whitespace only); the unfinished
    rest stays pending.

    NDJSON lines end at ``\\n`` alone (a ``\\r`` before it is whitespace to JSON), so a U+2028
    inside a string, which ``str.splitlines`` would cut at, stays in its line; ``\\n`` is
    ASCII, never part of a multi-byte UTF-8 sequence, so the bytes are cut where the text is.
    """
    if b"\n" not in piece:
        pending.append(piece)
        return []
    if pending:
        pending.append(piece)
        piece = b"".join(pending)
        pending.clear()
    lines = piece.split(b"\n")
    rest = lines.pop()
    if rest:
        pending.append(rest)
    return [line for line in lines if line.strip(_JSON_SPACE)]


def _last_line(pending: list[bytes]) -> bytes | None:
    """The unterminated last line, unless blank."""
    rest = b"".join(pending)
    return rest if rest.strip(_JSON_SPACE) else None


def _ndjson_lines(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of the pieces, as :func:`iter_ndjson` cuts them."""
    pending: list[bytes] = []
    for piece in pieces:
        if not pending and piece[-1:] == b"\n" and _LF not in (line := piece[:-1]):
            if line.strip(_JSON_SPACE):
                yield line
            continue
        yield from _split_lines(piece, pending)
    rest = _last_line(pending)
    if rest is not None:
        yield rest


# ---------------------------------------------------------------------- lean clients

TRANSPORTS = ("sdk", "httpx")
"""The transports a pipe with a lean path takes: its official SDK, or httpx alone."""


def check_lean_client(transport: str, client: Any, http_client: Any, *, sdk: str) -> Any:
    """Validate a pipe's ``transport``, ``client`` and ``http_client``; the client to keep.

    ``sdk`` names the SDK's clients for the messages (``"an anthropic client"``).
    """
    if transport not in TRANSPORTS:
        raise UsageError(f"transport must be 'sdk' or 'httpx', got {transport!r}")
    if client is not None and http_client is not None:
        raise UsageError("give client= or http_client=, not both")
    if transport == "sdk":
        if http_client is not None:
            raise UsageError(
                f"http_client= is for transport='httpx'; with the SDK pass {sdk} built on "
                "your httpx client as client= instead"
            )
        return client
    given = client if client is not None else http_client
    if given is not None and not isinstance(given, (httpx.Client, httpx.AsyncClient)):
        raise UsageError(
            "transport='httpx' needs an httpx.Client or httpx.AsyncClient, got "
            f"{type(given).__name__}; pass it as http_client=, or use transport='sdk' with "
            f"{sdk}"
        )
    return given


def lean_url(path: str, *, base: str | None, client_given: bool, default: str) -> str:
    """Where a lean transport posts ``path``: under ``base`` (``base_url=`` or the SDK's
    environment variable), else relative to a client the user gave (its own ``base_url``),
    else under the API's ``default`` root.
    """
    if base:
        return f"{base.rstrip('/')}/{path}"
    if client_given:
        return path
    return f"{default}/{path}"


def lean_endpoint(http_client: Any, endpoint: str | None) -> str | None:
    """A pipe's ``endpoint``: the one it has, else the given httpx client's base URL."""
    if http_client is not None and endpoint is None:
        return str(http_client.base_url).rstrip("/") or None
    return endpoint


def lean_client(*, asynchronous: bool, timeout: float | None) -> httpx.Client | httpx.AsyncClient:
    """An httpx client for a lean transport the pipe builds itself.

    Without a ``timeout``: the SDKs' defaults, 600 s between reads (reasoning models may think
    a long while before the first byte) and 5 s to connect.
    """
    limit = httpx.Timeout(timeout) if timeout is not None else httpx.Timeout(600.0, connect=5.0)
    return (httpx.AsyncClient if asynchronous else httpx.Client)(timeout=limit)


# ------------------------------------------------------------------- boto3 event streams


def event_stream_source(stream: Any, request_id: str | None) -> Source:
    """A boto3 ``EventStream`` read in this thread; closed quietly on every exit."""
    return Source(stream, lambda: _close_stream(stream), request_id)


async def aevent_stream_source(open_stream: Callable[[], tuple[Any, str | None]]) -> AsyncSource:
    """Open a boto3 ``EventStream`` in a worker thread and read it with a thread of its own.

    ``open_stream`` sends the request and returns ``(stream, request_id)``; it blocks until
    the headers, so it runs in a thread. A cancelled wait for the headers still lets the
    thread finish opening; what it opened is closed instead of leaking its connection.

    boto3 reads a stream in three steps: the HTTP body's chunks (urllib3), the event-stream
    frames cut from them (botocore's ``EventStreamBuffer``), and each frame decoded into the
    event's dict by the stream's own parser. The reading thread does only the first, the one
    that blocks, and joins what it read until the event loop looks; the event loop runs the
    other two with the same botocore objects, so it gets the same dicts and the same errors
    (an in-stream exception is botocore's ``EventStreamError``) in the same order as iterating
    the stream, without every chunk or decoded event crossing between threads. A stream that
    is not botocore's own ``EventStream``, or
    whose private reading parts are not where this botocore keeps them, is iterated whole in
    the reading thread instead (see :func:`_split_reading`).

    When the run is cancelled mid-read, the socket's read side is shut down so the thread
    returns at once, then the stream is closed.
    """
    holder: list[Any] = []

    def opened() -> tuple[Any, str | None]:
        stream, request_id = open_stream()
        holder.append(stream)
        return stream, request_id

    try:
        stream, request_id = await anyio.to_thread.run_sync(opened)
    except BaseException:
        if holder:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_close_stream, holder[0])
        raise
    split = _split_reading(stream)
    if split is None:
        reader = _Reader(stream, stream)
        generator = _read_events(reader)
    else:
        body, frames, decode = split
        reader = _Reader(stream, body, joins=True)
        generator = _decode_events(reader, frames, decode)

    async def aclose() -> None:
        reader.interrupt()
        try:
            await generator.aclose()
        finally:
            await anyio.to_thread.run_sync(reader.close)

    return AsyncSource(generator, aclose, request_id)


def _split_reading(stream: Any) -> tuple[Iterator[bytes], Any, Callable[[Any], Any]] | None:
    """``(the body's chunks, an empty EventStreamBuffer, the stream's frame decoder)``, or
    ``None`` to read ``stream`` whole in the reading thread.

    botocore's ``EventStream`` iterates ``_raw_stream.stream()`` (urllib3's chunks), feeds
    each chunk to a fresh ``EventStreamBuffer`` and yields ``_parse_event(message)`` for every
    frame it completes, when that is not empty (botocore 1.44, the version tested; a test
    holds the split to what iterating the stream gives, so a botocore that reads otherwise
    fails it). These are private names: the split is taken only for botocore's own class,
    not a subclass, with every part where expected and nothing read from the stream yet.
    """
    try:
        from botocore.eventstream import EventStream, EventStreamBuffer
    except ImportError:  # pragma: no cover - boto3 always brings botocore
        return None
    if type(stream) is not EventStream:
        return None
    raw = getattr(stream, "_raw_stream", None)
    chunks = getattr(raw, "stream", None)
    decode = getattr(stream, "_parse_event", None)
    events = getattr(stream, "_event_generator", None)
    if not callable(chunks) or not callable(decode) or not inspect.isgenerator(events):
        return None
    if inspect.getgeneratorstate(events) != inspect.GEN_CREATED:
        return None  # something already read from it: its buffer holds bytes we cannot see
    return chunks(), EventStreamBuffer(), decode


async def _take(reader: _Reader) -> tuple[list[Any], Any]:
    """The next batch of the reader's items, and its end: ``_Reader.END``, a :class:`_Failure`
    (both taken out of the batch) or ``None`` when more follows.

    A checkpoint first (the run can be cancelled and other tasks run, once a batch); then the
    items already buffered, without a thread hop, or a hop that waits for the next.
    """
    await anyio.lowlevel.checkpoint()
    batch = reader.take_ready()
    if not batch:
        batch = await anyio.to_thread.run_sync(reader.take, abandon_on_cancel=True)
    last = batch[-1]
    if last is _Reader.END or isinstance(last, _Failure):
        batch.pop()
        return batch, last
    return batch, None


async def _read_events(reader: _Reader) -> AsyncGenerator[Any, None]:
    """The events a reader decoded in its thread, in order; then its end or its error."""
    while True:
        batch, end = await _take(reader)
        for event in batch:
            yield event
        if isinstance(end, _Failure):
            raise end.error
        if end is not None:
            return


_FEED_BYTES = 4096
"""The body goes to the ``EventStreamBuffer`` in pieces of this size: it copies what is left
of its data after every frame, so one large piece would cost time quadratic in its size."""


async def _decode_events(
    reader: _Reader, frames: Any, decode: Callable[[Any], Any]
) -> AsyncGenerator[Any, None]:
    """Frame and decode the body a reader read, as botocore's ``EventStream`` does: the same
    bytes, in order, through the same ``EventStreamBuffer`` and decoder (frames do not depend
    on where the bytes were cut)."""
    while True:
        batch, end = await _take(reader)
        for body in batch:
            view = memoryview(body)
            for start in range(0, len(view), _FEED_BYTES):
                frames.add_data(bytes(view[start : start + _FEED_BYTES]))
                for message in frames:
                    event = decode(message)
                    if event:
                        yield event
        if isinstance(end, _Failure):
            raise end.error
        if end is not None:
            return


_BATCH_LIMIT = 256
"""At most this many items wait for the event loop; then the reading thread waits."""
_BATCH_BYTES = 1 << 20
"""Nor more body bytes than this, but for the chunk that crosses it (urllib3's chunks are at
most 64 KiB)."""


class _Reader:
    """Iterates ``items`` (a boto3 stream, or its body's chunks) in a thread of its own; the
    event loop takes what it read.

    A thread hop costs far more than an item, so the event loop does not hop once an item:
    :meth:`take_ready` hands over every item read since the last look, and only when there is
    none does :meth:`take` (run in a worker thread) wait for the next. With ``joins``, the
    body's chunks read since the last look wait as one ``bytearray`` (one object to hand over
    instead of one per chunk). Nothing is held back to fill a batch: what was read can be
    taken at once. At most ``_BATCH_LIMIT`` items or ``_BATCH_BYTES`` body bytes wait; then
    the reading thread waits too, so a slow consumer slows the read down instead of buffering
    the whole response.

    The end of ``items`` and a read's error come last in the buffer, after the items read
    before them. ``interrupt()`` shuts the stream's socket down for reading so a blocked read
    returns at once; ``close()`` waits for the reading thread before closing the stream, so
    the stream is never closed while it is read.
    """

    END = object()

    def __init__(self, stream: Any, items: Iterable[Any], *, joins: bool = False) -> None:
        self._stream = stream
        self._items = items
        self._joins = joins
        self._ready = threading.Condition(threading.Lock())
        self._buffer: list[Any] = []
        self._bytes = 0  # the body bytes in the buffer
        self._stopped = False
        self._finished = False
        self._thread = threading.Thread(
            target=self._pump, name="reasoning-stream boto3 reader", daemon=True
        )
        self._thread.start()

    def _pump(self) -> None:
        last: Any = self.END
        ready = self._ready
        joins = self._joins
        try:
            for item in self._items:
                with ready:
                    while (
                        len(self._buffer) >= _BATCH_LIMIT or self._bytes >= _BATCH_BYTES
                    ) and not self._stopped:
                        ready.wait()
                    if self._stopped:
                        return
                    buffer = self._buffer
                    if joins:
                        self._bytes += len(item)
                        if buffer:
                            buffer[0] += item
                            continue
                        item = bytearray(item)
                    buffer.append(item)
                    if len(buffer) == 1:
                        ready.notify_all()
        except BaseException as error:  # handed to the event loop, never lost in a thread
            last = _Failure(error)
        finally:
            if inspect.isgenerator(self._items):
                with contextlib.suppress(Exception):
                    self._items.close()
            with ready:
                self._buffer.append(last)
                self._finished = True
                ready.notify_all()

    def take_ready(self) -> list[Any]:
        """Every item read by now, without waiting (the end or error last); ``[]`` if none."""
        with self._ready:
            if not self._buffer:
                return []
            batch, self._buffer, self._bytes = self._buffer, [], 0
            self._ready.notify_all()
            return batch

    def take(self) -> list[Any]:
        """Wait for at least one item; every item read by then (the end or error last)."""
        with self._ready:
            while not self._buffer and not self._stopped:
                self._ready.wait()
            if not self._buffer:
                return [self.END]
            batch, self._buffer, self._bytes = self._buffer, [], 0
            self._ready.notify_all()
            return batch

    def interrupt(self) -> None:
        with self._ready:
            self._stopped = True
            finished = self._finished
            self._ready.notify_all()
        if not finished:
            _shutdown_read(self._stream)

    def close(self) -> None:
        self._thread.join(timeout=_CLOSE_WAIT_SECONDS)
        _close_stream(self._stream)


@dataclass(frozen=True, slots=True)
class _Failure:
    error: BaseException


def _shutdown_read(stream: Any) -> None:
    """Wake a read blocked on the stream's socket (urllib3's ``HTTPResponse.shutdown``)."""
    # botocore's EventStream keeps the urllib3 response privately; reach it defensively.
    raw = getattr(stream, "_raw_stream", None)
    shutdown = getattr(raw, "shutdown", None)
    if callable(shutdown):
        with contextlib.suppress(Exception):
            shutdown()


def _close_stream(stream: Any) -> None:
    close = getattr(stream, "close", None)
    if callable(close):
        with contextlib.suppress(Exception):
            close()
