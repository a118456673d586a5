"""boto3's event streams (Bedrock's ``ConverseStream`` and ``InvokeModelWithResponseStream``).

boto3 is sync only. :class:`Boto3Call` describes one operation; read sync, its ``EventStream``
is iterated in the caller's thread; read async, it is opened in a worker thread and its body's
bytes are read in a thread of its own, while the event loop takes what was read since its last
look (one ``bytearray``) and decodes the frames with the stream's own botocore code, and a
blocked read can be interrupted (:func:`aevent_stream_source`).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel

from .base import AsyncSource, Source

__all__ = ["Boto3Call", "aevent_stream_source", "event_stream_source"]

# How long closing a boto3 stream waits for a read in flight after the socket was shut down.
_CLOSE_WAIT_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class Boto3Call:
    """``client.<method>(**arguments)`` on a boto3 client: one request, described once.

    ``body``: the operation's reply keeps its payload under ``"body"`` (``InvokeModel``: the
    event stream, or one-shot the bytes to read) rather than ``"stream"`` (``ConverseStream``)
    or at the top level (``Converse``).
    """

    method: str
    arguments: Mapping[str, Any]
    body: bool = False

    def opened(self, client: Any) -> tuple[Any, str | None]:
        """Send the request; the open event stream and the AWS request id (blocks)."""
        response = getattr(client, self.method)(**self.arguments)
        stream = response["body" if self.body else "stream"]
        metadata = response.get("ResponseMetadata") or {}
        return stream, metadata.get("RequestId") or None

    def open(self, client: Any) -> Source:
        """The event stream, read in this thread."""
        return event_stream_source(*self.opened(client))

    async def aopen(self, client: Any) -> AsyncSource:
        """The event stream, opened in a worker thread and its body read in another."""
        return await aevent_stream_source(functools.partial(self.opened, client))

    def send(self, client: Any) -> Any:
        """The one-shot operation; boto3's response, its ``body`` read (blocks)."""
        response = getattr(client, self.method)(**self.arguments)
        if not self.body:
            return response
        response = dict(response)
        body: Any = response.get("body")
        try:
            response["body"] = body.read() if hasattr(body, "read") else body
        finally:
            close = getattr(body, "close", None)
            if callable(close):
                close()
        return response

    async def asend(self, client: Any) -> Any:
        """:meth:`send` in a worker thread."""
        return await anyio.to_thread.run_sync(self.send, client)


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
