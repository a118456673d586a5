"""A streamed httpx reply's bytes, as the lean transports' decoders take them.

:func:`wire_bytes` / :func:`awire_bytes` take the reply's bytes through as few of httpx's
layers as the reply allows: no text decoding, since the decoders cut bytes and msgspec reads
UTF-8 itself. :func:`drain` reads what follows the end of a stream, briefly.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncGenerator, AsyncIterator, Iterator

import anyio
import httpx
import httpx_sse

__all__ = ["awire_bytes", "drain", "wire_bytes"]

_DRAIN_SECONDS = 0.1


def wire_bytes(response: httpx.Response) -> Iterator[bytes]:
    """The body as UTF-8 bytes, through as few of httpx's layers as the reply allows.

    An unencoded reply is read raw (``iter_raw``: no content decoder, no text decoder); a
    compressed one is decompressed (``iter_bytes``). A reply whose charset is not UTF-8 (or a
    client whose ``default_encoding`` is not) is read as httpx reads its text, re-encoded: the
    decoders then see the very text an ``iter_text`` reader would.
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


async def drain(pieces: AsyncIterator[bytes]) -> None:
    """Read what follows ``[DONE]`` (normally just the end of the body), briefly.

    A fully read body lets httpx keep the connection for the next request, and lets the
    reader's own async generators finish instead of being collected half-way (which trio
    reports as a ResourceWarning). A server that lingers past the bound is simply closed.
    """
    with anyio.move_on_after(_DRAIN_SECONDS):
        try:
            async for _ in pieces:
                pass
        except (httpx.HTTPError, httpx_sse.SSEError):
            # The answer is complete; a broken tail must not turn it into a failure.
            pass
