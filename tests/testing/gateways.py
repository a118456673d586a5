"""Tiny gateways for the conformance probe's tests: a forwarding proxy that damages one thing.

``Gateway`` is a Starlette app under uvicorn on a loopback port. It forwards every request
to the probe's upstream, byte for byte, except where its :class:`Damage` says otherwise:
``request`` rewrites the JSON body going upstream, ``event`` each streamed object coming
back (an SSE ``data`` line or an NDJSON line), ``oneshot`` a one-shot JSON reply.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tests.redis_server import free_port
from tests.web.conftest import serve

Json = Any


def _same(value: Json) -> Json:
    return value


@dataclass
class Damage:
    """What a gateway breaks: functions over JSON values, the identity by default."""

    request: Callable[[Json], Json] = _same
    event: Callable[[Json], Json] = _same
    oneshot: Callable[[Json], Json] = _same


@dataclass
class Gateway:
    """A forwarding proxy to ``127.0.0.1:upstream_port``, damaging what ``damage`` says."""

    upstream_port: int = field(default_factory=free_port)
    damage: Damage = field(default_factory=Damage)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self._forward, methods=["GET", "POST"])])

    async def _forward(self, request: Request) -> Response:
        body = await request.body()
        if body:
            body = json.dumps(self.damage.request(json.loads(body))).encode()
        headers = {
            key: value
            for key, value in request.headers.items()
            if key.lower() not in ("host", "content-length", "accept-encoding")
        }
        target = f"http://127.0.0.1:{self.upstream_port}{request.url.path}"
        if request.url.query:
            target += f"?{request.url.query}"
        client = httpx.AsyncClient(timeout=30)
        upstream = await client.send(
            client.build_request(request.method, target, content=body, headers=headers),
            stream=True,
        )
        kind = upstream.headers.get("content-type", "application/json")
        if kind.startswith("application/json"):
            raw = await upstream.aread()
            await upstream.aclose()
            await client.aclose()
            if upstream.status_code == 200 and raw:
                raw = json.dumps(self.damage.oneshot(json.loads(raw))).encode()
            return Response(raw, status_code=upstream.status_code, media_type=kind)

        async def events() -> Any:
            # SSE data lines, or NDJSON lines (Ollama): each JSON object through the damage.
            try:
                async for line in upstream.aiter_lines():
                    if line.startswith("data: ") and line[6:].startswith("{"):
                        line = "data: " + json.dumps(self.damage.event(json.loads(line[6:])))
                    elif line.startswith("{"):
                        line = json.dumps(self.damage.event(json.loads(line)))
                    yield (line + "\n").encode()
            finally:
                await upstream.aclose()
                await client.aclose()

        return StreamingResponse(events(), status_code=upstream.status_code, media_type=kind)


@contextlib.contextmanager
def running(gateway: Gateway) -> Iterator[str]:
    """Serve ``gateway``; yield its server root URL."""
    with serve(gateway.app()) as url:
        yield url
