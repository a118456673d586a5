"""``DELETE /streams/{stream_id}``: stop a run from any worker (``hub.astop``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from .._exceptions import UsageError
from ..hub import Hub, HubError

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["stop_endpoint"]

Refusal = Callable[["Request"], "str | None"]
"""Why a request may not change anything (the app's Origin check), or ``None``."""


def stop_endpoint(
    hub: Hub, refusal: Refusal | None = None
) -> Callable[[Request], Awaitable[Response]]:
    """The handler: 200 ``{"stream_id": ..., "stopped": true}`` when this request stopped
    the run (wherever it runs: another worker, another machine on a ``RedisHub``); 404 when
    there is no run to stop (finished, being stopped already, or unknown); 400 for an id the
    hub refuses; 503 when the hub's store (Redis) does not answer; 403 when ``refusal``
    refuses the request (as for a POST)."""
    from starlette.responses import JSONResponse, PlainTextResponse

    async def stop(request: Request) -> Response:
        stream_id = request.path_params["stream_id"]
        reason = refusal(request) if refusal is not None else None
        if reason is not None:
            return PlainTextResponse(reason, 403)
        try:
            stopped = await hub.astop(stream_id)
        except UsageError as error:
            return PlainTextResponse(str(error), 400)
        except HubError as error:  # the hub's store did not answer: nothing was stopped
            return PlainTextResponse(str(error), 503)
        if not stopped:
            return PlainTextResponse(
                f"stream {stream_id!r} has no run to stop: it finished, is being stopped "
                "already, or does not exist",
                404,
            )
        return JSONResponse({"stream_id": stream_id, "stopped": True})

    return stop
