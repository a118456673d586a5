"""What every transport hands the driver: a :class:`Source`, and a described :class:`Call`.

A provider describes one request once, as a :class:`Call` (an SDK method and its arguments, a
URL with headers and a body, a boto3 operation); the call knows how to send itself four ways:
streaming or one-shot, with a sync or an async client. The driver (:mod:`.._driver`) picks the
way and owns the loop; the transport modules own the I/O; translators own the meaning.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from ..._exceptions import ProviderError
from ..._json import loads_utf8
from .._errors import build_error

__all__ = [
    "SKIP",
    "AsyncSource",
    "Call",
    "Decode",
    "DecodeEvent",
    "PayloadDecoder",
    "Source",
    "StatusError",
    "decode_json",
    "payload_text",
]


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


class Call(Protocol):
    """One request, described once; the driver sends it sync or async, streaming or not.

    ``open`` / ``aopen`` send a streaming request and return its chunks; ``send`` / ``asend``
    send a one-shot request and return the decoded body (a dict) or the SDK's parsed object,
    whichever the translator's ``read_response`` reads. The async twins only await where the
    sync ones block.
    """

    def open(self, client: Any) -> Source:
        """Send the streaming request with a sync client; the response's chunks."""

    async def aopen(self, client: Any) -> AsyncSource:
        """Async twin of :meth:`open`."""

    def send(self, client: Any) -> Any:
        """Send the one-shot request with a sync client; the response."""

    async def asend(self, client: Any) -> Any:
        """Async twin of :meth:`send`."""


class PayloadDecoder:
    """Base of the pure decoders of a streamed body (SSE, NDJSON): bytes in, chunks out.

    ``feed(piece)`` returns the chunks a piece completes and ``finish()`` those the end of the
    body releases. A payload that fails to decode ends the stream: the chunks of the same
    piece before it still come out, and :meth:`check` raises its error after them.
    """

    __slots__ = ("_error", "stopped")

    def __init__(self) -> None:
        self._error: Exception | None = None
        self.stopped = False
        """The stream ended before its body did (``[DONE]``, or a payload that failed)."""

    def feed(self, piece: bytes) -> list[Any]:
        """The chunks ``piece`` completes, in order."""
        raise NotImplementedError

    def finish(self) -> list[Any]:
        """The chunks the end of the body releases."""
        raise NotImplementedError

    def check(self) -> None:
        """Raise the error a payload raised, once the chunks before it came out."""
        error, self._error = self._error, None
        if error is not None:
            raise error

    def _hold(self, error: Exception, chunks: list[Any]) -> None:
        """Keep ``error`` for :meth:`check` when ``chunks`` came before it, else raise it now."""
        if not chunks:
            raise error
        self.stopped = True
        self._error = error


StatusError = Callable[[str, Any], ProviderError]
"""``(provider, httpx response with its body read) -> the error to raise`` for an HTTP error."""
Decode = Callable[[str, bytes], Any]
"""``(provider, data) -> the decoded chunk``; raises ``MalformedStreamError``.

``data`` is the payload's UTF-8 bytes as they came off the wire (see ``SSEReader``)."""
DecodeEvent = Callable[[str, str, bytes], Any]
"""``(provider, event name, data) -> the decoded chunk``, or :data:`SKIP` to pass the event by.

An event without an ``event:`` field is named ``"message"`` (as httpx-sse names it)."""

SKIP: Any = object()
"""What a :data:`DecodeEvent` returns for an event that carries no chunk (a ping)."""


def decode_json(provider: str, data: bytes) -> Any:
    """One payload's UTF-8 bytes as JSON, or a ``MalformedStreamError`` that does not quote it.

    The hot path of every lean transport: :func:`reasoning_stream._json.loads_utf8` (msgspec
    when the ``fast`` extra is installed) decodes exactly what ``json.loads`` decodes from
    the payload's text.

    >>> decode_json("x", b'{"a": [1, 2]}')
    {'a': [1, 2]}
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
