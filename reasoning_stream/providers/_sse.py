"""Server-sent JSON over plain httpx: the lean transport of the OpenAI-compatible pipes.

``iter_sse_json`` and ``aiter_sse_json`` POST a JSON body, read the ``text/event-stream`` reply
with httpx-sse and yield each ``data:`` line decoded by ``json.loads``, stopping at ``[DONE]``.
No SDK model objects are built, which is what makes the transport lean. Comment lines
(OpenRouter's ``: OPENROUTER PROCESSING`` keep-alives) and events without data are skipped by
the decoder. An HTTP error status becomes a ``ProviderError`` carrying the status, the
provider's own error message and the ``Retry-After`` hint.

Both are generators: closing them (``close()`` / ``await aclose()``) closes the response.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import anyio
import httpx
import httpx_sse

from .._exceptions import MalformedStreamError, ProviderError
from ._base import retry_after_seconds

__all__ = ["aiter_sse_json", "http_error", "iter_sse_json", "retry_after_seconds"]

_DONE = "[DONE]"
_DRAIN_SECONDS = 0.1


def iter_sse_json(
    client: httpx.Client,
    url: str,
    *,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    provider: str,
) -> Iterator[Any]:
    """POST ``body`` to ``url`` and yield each SSE ``data:`` payload as parsed JSON.

    >>> with httpx.Client() as client:  # doctest: +SKIP
    ...     for chunk in iter_sse_json(client, url, body=body, headers={}, provider="x"):
    ...         print(chunk["choices"])
    """
    with httpx_sse.connect_sse(client, "POST", url, json=body, headers=dict(headers)) as source:
        response = source.response
        if response.status_code >= 400:
            response.read()
            raise http_error(provider, response)
        try:
            for event in source.iter_sse():
                data = event.data
                if not data:
                    continue
                if data.startswith(_DONE):
                    return
                yield _decode(provider, data)
        except httpx_sse.SSEError as error:
            raise _not_a_stream(provider, error) from error


async def aiter_sse_json(
    client: httpx.AsyncClient,
    url: str,
    *,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    provider: str,
) -> AsyncIterator[Any]:
    """Async twin of :func:`iter_sse_json`."""
    async with httpx_sse.aconnect_sse(
        client, "POST", url, json=body, headers=dict(headers)
    ) as source:
        response = source.response
        if response.status_code >= 400:
            await response.aread()
            raise http_error(provider, response)
        events = source.aiter_sse()
        try:
            async for event in events:
                data = event.data
                if not data:
                    continue
                if data.startswith(_DONE):
                    await _drain(events)
                    return
                yield _decode(provider, data)
        except httpx_sse.SSEError as error:
            raise _not_a_stream(provider, error) from error
        finally:
            await events.aclose()


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


def _decode(provider: str, data: str) -> Any:
    try:
        return json.loads(data)
    except json.JSONDecodeError as error:
        # The payload itself stays out of the message: it may hold opaque reasoning state.
        raise MalformedStreamError(
            f"{provider}: a stream event is not valid JSON ({error.msg} at character "
            f"{error.pos} of {len(data)}); the server does not speak the expected SSE format",
            provider=provider,
        ) from error


def _not_a_stream(provider: str, error: Exception) -> MalformedStreamError:
    return MalformedStreamError(
        f"{provider}: the reply is not an event stream ({error}); check base_url points at "
        "the API root and that the server supports streaming",
        provider=provider,
    )


def http_error(provider: str, response: httpx.Response) -> ProviderError:
    """The ``ProviderError`` for an HTTP error reply whose body has been read.

    OpenAI-style bodies (``{"error": {"message": ...}}``) give their message; the status
    and ``Retry-After`` land on the error's attributes, and the original
    ``httpx.HTTPStatusError`` becomes its ``__cause__`` when raised with ``from``.
    """
    status = response.status_code
    body: Any
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        body = response.text
    detail: Any = body.get("error", body) if isinstance(body, Mapping) else body
    message = _message_of(detail) or response.reason_phrase or "request failed"
    error = ProviderError(
        f"{provider}: {message} (HTTP {status})",
        provider=provider,
        status_code=status,
        retry_after=retry_after_seconds(response.headers),
        body=detail,
    )
    error.__cause__ = httpx.HTTPStatusError(
        f"HTTP {status} from {response.request.url}", request=response.request, response=response
    )
    return error


def _message_of(detail: Any) -> str | None:
    if isinstance(detail, Mapping):
        message = detail.get("message")
        if isinstance(message, str) and message:
            return message
        return None
    if isinstance(detail, str) and detail.strip():
        # A plain-text error page: its first line is enough, and bounded.
        return detail.strip().splitlines()[0][:200]
    return None
