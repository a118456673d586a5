"""One non-streaming request over httpx: POST a JSON body, read one JSON reply.

The httpx-based pipes (Gemini's ``:generateContent``, the lean Chat Completions transport,
OpenRouter) use these for ``stream=False``; SDK-based pipes call their SDK's non-streaming
method instead. HTTP errors become the same ``ProviderError`` as a refused stream, and a
reply that is not JSON is a ``MalformedStreamError`` that does not quote the body (it may hold
opaque reasoning state). The body is decoded with :func:`reasoning_stream._json.loads`: msgspec
under the ``fast`` extra, the stdlib otherwise, the same values either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from .._json import loads
from ._errors import build_error, http_error
from ._transports import StatusError

__all__ = ["apost_json", "post_json"]


def post_json(
    client: httpx.Client,
    url: str,
    *,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    provider: str,
    status_error: StatusError = http_error,
) -> Any:
    """POST ``body`` to ``url``; the decoded JSON reply."""
    response = client.post(url, json=body, headers=dict(headers))
    if response.status_code >= 400:
        raise status_error(provider, response)
    return _decode(provider, response)


async def apost_json(
    client: httpx.AsyncClient,
    url: str,
    *,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    provider: str,
    status_error: StatusError = http_error,
) -> Any:
    """Async twin of :func:`post_json`."""
    response = await client.post(url, json=body, headers=dict(headers))
    if response.status_code >= 400:
        raise status_error(provider, response)
    return _decode(provider, response)


def _decode(provider: str, response: httpx.Response) -> Any:
    try:
        return loads(response.content)
    except ValueError as error:
        raise build_error(
            provider,
            f"the reply is not JSON ({type(error).__name__} in {len(response.content)} bytes); "
            "check base_url points at the API root",
            malformed=True,
        ) from error
