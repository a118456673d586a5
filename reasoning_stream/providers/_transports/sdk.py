"""An official SDK's call: openai, anthropic and ollama, stream objects or generators.

:class:`SdkCall` names the client's method and its keyword arguments once; the driver sends it
sync or async, streaming or one-shot. The sources close what they wrap completely, the SDK's
own generators included.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .base import AsyncSource, Source

__all__ = ["SdkCall", "andjson_source", "asdk_source", "ndjson_source", "sdk_source"]


@dataclass(frozen=True, slots=True)
class SdkCall:
    """``client.<method>(**arguments)``: one SDK request, described once.

    ``method`` is a dotted path on the client (``"chat.completions.create"``). ``generator``:
    the method returns a plain (async) generator (the ``ollama`` SDK's NDJSON reader, lazy:
    the request goes out on the first read) rather than a stream object with ``close()``.
    A one-shot request's arguments simply say so (no ``stream``, or ``"stream": False``).
    """

    method: str
    arguments: Mapping[str, Any]
    generator: bool = False

    def _bound(self, client: Any) -> Any:
        for name in self.method.split("."):
            client = getattr(client, name)
        return client

    def open(self, client: Any) -> Source:
        """Call the method with a sync client; its stream as a :class:`~.base.Source`."""
        made = self._bound(client)(**self.arguments)
        return ndjson_source(made) if self.generator else sdk_source(made)

    async def aopen(self, client: Any) -> AsyncSource:
        """Async twin of :meth:`open`."""
        made = await self._bound(client)(**self.arguments)
        return andjson_source(made) if self.generator else asdk_source(made)

    def send(self, client: Any) -> Any:
        """Call the method with a sync client; the SDK's parsed response."""
        return self._bound(client)(**self.arguments)

    async def asend(self, client: Any) -> Any:
        """Async twin of :meth:`send`."""
        return await self._bound(client)(**self.arguments)


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


def ndjson_source(stream: Iterator[Any]) -> Source:
    """A generator of chunks (the ``ollama`` SDK's NDJSON reader, an httpx read loop)."""
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
