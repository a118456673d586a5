"""The app's safety checks: which hosts and origins it serves, and what a POST body may be.

A page on any site can make a browser send a ``text/plain`` POST to ``127.0.0.1`` without
asking, and a DNS-rebinding name (``evil.example`` resolving to ``127.0.0.1``) makes the
browser treat the app as that site's own. So the app serves only its allowed ``Host`` names
(Starlette's ``TrustedHostMiddleware``, configured here), a POST must be JSON (which a
cross-site page cannot send without a CORS preflight the app does not grant), and a POST's
``Origin`` must be the app's own or an allowed one. Bodies are read up to a size limit and
parsed to a depth limit, so no request can make the app spend memory or stack at will.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "LOOPBACK_HOSTS",
    "MAX_DEPTH",
    "BodyError",
    "HostCheck",
    "origin_refusal",
    "read_json",
]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
"""The names a browser uses for this machine: the default ``allowed_hosts``."""

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects a POST body may have."""

_PASSED = "reasoning_stream.host_allowed"


class HostCheck:
    """Serve only requests whose ``Host`` is an allowed name; refuse the others with 400.

    The decision is ``TrustedHostMiddleware``'s (exact names, ``*.example.com`` wildcards),
    configured to the app's contract: an IPv6 literal such as ``::1`` also matches its
    bracketed form ``[::1]`` (how it appears in a ``Host`` header), an allowed host is never
    redirected to ``www.``, and the refusal names the host and how to allow it. ``"*"``
    among ``allowed_hosts`` turns the check off (unsafe: any DNS-rebinding name is served).
    """

    def __init__(self, app: ASGIApp, allowed_hosts: Sequence[str]) -> None:
        from starlette.middleware.trustedhost import TrustedHostMiddleware

        self.app = app
        self._allowed = ", ".join(allowed_hosts) or "(none)"
        patterns = []
        for host in allowed_hosts:
            host = host.strip().lower()
            if ":" in host and not host.startswith("["):
                host = f"[{host}]"  # an IPv6 literal, as the Host header spells it
            patterns.append(host)
        self._check = TrustedHostMiddleware(self._allowed_app, patterns, www_redirect=False)

    async def _allowed_app(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope[_PASSED] = True
        await self.app(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._check(scope, receive, send)
            return
        host = next((v for k, v in scope["headers"] if k == b"host"), None)
        shown = "no Host header" if host is None else f"Host {host.decode('latin-1')[:100]!r}"
        refusal = (
            f"{shown} is not served here: allowed hosts are {self._allowed} "
            "(create_app(allowed_hosts=[...]) names a deployment's own)"
        ).encode()

        async def send_or_refuse(message: Message) -> None:
            if scope.get(_PASSED):
                await send(message)
            elif message["type"] == "http.response.start":
                await send(
                    {
                        "type": "http.response.start",
                        "status": 400,
                        "headers": [
                            (b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(refusal)).encode()),
                        ],
                    }
                )
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                await send({"type": "http.response.body", "body": refusal})

        await self._check(scope, receive, send_or_refuse)


def _origin_key(origin: str) -> tuple[str, str, int | None] | None:
    """``(scheme, host, port)`` with the scheme's default port filled in; None if unreadable."""
    try:
        parts = urlsplit(origin.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return parts.scheme, parts.hostname, port


def origin_refusal(request: Request, allowed_origins: Sequence[str]) -> str | None:
    """Why ``request`` (a POST or a DELETE) may not start or stop a run, from its
    ``Origin``; None when it may.

    A browser sends ``Origin`` with every POST; a request without one is not a cross-site
    page's (curl, a server) and passes. The app's own origin (its scheme and ``Host``, which
    :class:`HostCheck` vouched for) passes, and so does every one in ``allowed_origins``
    (``"*"``: any, unsafe).
    """
    origin = request.headers.get("origin")
    if origin is None or "*" in allowed_origins:
        return None
    key = _origin_key(origin)
    own = _origin_key(f"{request.url.scheme}://{request.headers.get('host', '')}")
    if key is not None and (key == own or key in {_origin_key(o) for o in allowed_origins}):
        return None
    return (
        f"Origin {origin[:100]!r} may not start or stop runs here: only the app's own page "
        "and the origins in create_app(allowed_origins=[...]) may"
    )


class BodyError(Exception):
    """A POST body the app refuses: ``status`` (400, 413 or 415) and a message saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def read_json(request: Request, max_body: int, shape: str = '{"prompt": "..."}') -> Any:
    """The request's JSON body, read up to ``max_body`` bytes and ``MAX_DEPTH`` levels.

    Raises :class:`BodyError`: 415 unless ``Content-Type`` is ``application/json``, 413 for
    a body over ``max_body`` (told by ``Content-Length`` or counted as it arrives, so a
    chunked body is cut off too), 400 for a body that is not UTF-8 JSON or nests too deep.
    ``shape`` is the body the endpoint expects, for those messages.
    """
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise BodyError(415, f"send the body as JSON with Content-Type: application/json: {shape}")
    too_large = BodyError(413, f"the body is over {max_body} bytes (create_app(max_body=...))")
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > max_body:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_body:
            raise too_large
    try:
        data = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError) as error:
        message = "nested too deep" if isinstance(error, RecursionError) else str(error)
        raise BodyError(400, f"the body is not valid JSON ({message:.200}); send {shape}") from None
    if _depth(data) > MAX_DEPTH:
        raise BodyError(400, f"the JSON body nests deeper than {MAX_DEPTH} levels")
    return data


def _depth(data: Any) -> int:
    """How deep arrays and objects nest in ``data`` (0 for a scalar), without recursion."""
    deepest = 0
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        stack += [(child, depth + 1) for child in children]
    return deepest
