"""The lean transport (``transport="httpx"``): a URL, headers and a JSON body, sent with httpx.

:class:`HttpCall` describes one such request; streamed, its reply is read by the SSE or the
NDJSON decoder, which do no I/O, so the sync and async read loops differ by ``async`` alone
(and the async one's brief drain after ``[DONE]``). One-shot, the reply is one JSON body:
HTTP errors become the same ``ProviderError`` as a refused stream, a reply that is not JSON
a ``MalformedStreamError`` that does not quote it, since it may hold opaque reasoning state.
The clients the lean transports build, and the checks of the ones given, are here too.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from ..._exceptions import UsageError
from ..._json import loads
from ..._redact import split_url_credentials
from .._errors import build_error, http_error
from .base import AsyncSource, Decode, DecodeEvent, PayloadDecoder, Source, StatusError, decode_json
from .ndjson import NDJSONDecoder
from .sse import SSE_HEADERS, SSEJsonDecoder, check_event_stream
from .wire import awire_bytes, drain, wire_bytes

__all__ = [
    "TRANSPORTS",
    "HttpCall",
    "check_lean_client",
    "lean_client",
    "lean_endpoint",
    "lean_url",
]

TRANSPORTS = ("sdk", "httpx")
"""The transports a pipe with a lean path takes: its official SDK, or httpx alone."""


@dataclass(frozen=True, slots=True)
class HttpCall:
    """``POST url`` with ``headers`` and the JSON ``body``: one request, described once.

    ``framing`` is how a streamed reply is cut: ``"sse"`` (``text/event-stream``, ``[DONE]``
    ends it) or ``"ndjson"``. ``status_error`` builds the error for an HTTP error reply;
    ``decode`` reads one payload's bytes, or ``decode_event`` an SSE event's name and bytes.
    """

    url: str
    body: Mapping[str, Any]
    headers: Mapping[str, str]
    provider: str
    framing: Literal["sse", "ndjson"] = "sse"
    status_error: StatusError = http_error
    decode: Decode = decode_json
    decode_event: DecodeEvent | None = None

    def read(self, client: httpx.Client) -> Generator[Any, None, None]:
        """POST with a sync httpx client; the decoded chunks of the streamed reply, as they
        come. An HTTP error reply raises ``status_error``'s error, its body read. Closing the
        generator closes the response."""
        decoder = self._decoder()
        url, headers = self._target(self._headers())
        with client.stream("POST", url, json=self.body, headers=headers) as response:
            if response.status_code >= 400:
                response.read()
                raise self.status_error(self.provider, response)
            self._check(response)
            feed = decoder.feed
            for piece in wire_bytes(response):
                yield from feed(piece)
                if decoder.stopped:
                    break
            else:
                yield from decoder.finish()
            decoder.check()

    async def aread(self, client: httpx.AsyncClient) -> AsyncGenerator[Any, None]:
        """Async twin of :meth:`read` (which drains what follows ``[DONE]``, briefly);
        ``aclose()`` it when done."""
        decoder = self._decoder()
        url, headers = self._target(self._headers())
        async with client.stream("POST", url, json=self.body, headers=headers) as response:
            if response.status_code >= 400:
                await response.aread()
                raise self.status_error(self.provider, response)
            self._check(response)
            pieces = awire_bytes(response)
            feed = decoder.feed
            try:
                async for piece in pieces:
                    for chunk in feed(piece):
                        yield chunk
                    if decoder.stopped:
                        break
                else:
                    for chunk in decoder.finish():
                        yield chunk
                decoder.check()
                if decoder.stopped:
                    await drain(pieces)
            finally:
                await pieces.aclose()

    def open(self, client: httpx.Client) -> Source:
        """:meth:`read` as a :class:`~.base.Source`."""
        chunks = self.read(client)
        return Source(chunks, chunks.close)

    async def aopen(self, client: httpx.AsyncClient) -> AsyncSource:
        """Async twin of :meth:`open`."""
        chunks = self.aread(client)
        return AsyncSource(chunks, chunks.aclose)

    def send(self, client: httpx.Client) -> Any:
        """POST with a sync httpx client; the decoded JSON reply (one-shot)."""
        url, headers = self._target(dict(self.headers))
        return self._reply(client.post(url, json=self.body, headers=headers))

    async def asend(self, client: httpx.AsyncClient) -> Any:
        """Async twin of :meth:`send`."""
        url, headers = self._target(dict(self.headers))
        sent = client.post(url, json=self.body, headers=headers)
        return self._reply(await sent)

    def _target(self, headers: dict[str, str]) -> tuple[str, dict[str, str]]:
        """Where to post, and with which headers: a ``user:password@`` in the URL (a proxy's,
        from ``base_url``) goes out as the Basic ``Authorization`` httpx would have made of it,
        so no URL httpx logs or an error quotes holds the password."""
        url, authorization = split_url_credentials(self.url)
        if authorization is not None:
            headers["Authorization"] = authorization
        return url, headers

    def _decoder(self) -> PayloadDecoder:
        if self.framing == "ndjson":
            return NDJSONDecoder(self.provider, self.decode)
        return SSEJsonDecoder(self.provider, self.decode, self.decode_event)

    def _headers(self) -> dict[str, str]:
        """A streaming request's headers (with what httpx-sse's ``connect_sse`` sets)."""
        if self.framing == "ndjson":
            return dict(self.headers)
        return {**self.headers, **SSE_HEADERS}

    def _check(self, response: httpx.Response) -> None:
        if self.framing == "sse":
            check_event_stream(self.provider, response)

    def _reply(self, response: httpx.Response) -> Any:
        """A one-shot reply's JSON; an HTTP error or a body that is not JSON raises."""
        if response.status_code >= 400:
            raise self.status_error(self.provider, response)
        try:
            return loads(response.content)
        except ValueError as error:
            raise build_error(
                self.provider,
                f"the reply is not JSON ({type(error).__name__} in {len(response.content)} "
                "bytes); check base_url points at the API root",
                malformed=True,
            ) from error


# ---------------------------------------------------------------------- lean clients


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

    >>> lean_url("v1/messages", base=None, client_given=False, default="https://x.test")
    'https://x.test/v1/messages'
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
