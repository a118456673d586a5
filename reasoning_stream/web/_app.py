"""``create_app(hub)``: a Starlette app serving a hub's streams as server-sent events."""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread
from anyio.abc import TaskStatus

from .._exceptions import UsageError
from .._pipe import Prompt
from .._sources import aclose_source
from ..conversation._history import check_prompt
from ..hub import (
    Entry,
    Hub,
    InvalidEntryIdError,
    MemoryHub,
    Runnable,
    StreamExistsError,
    StreamExpiredError,
    StreamNotFoundError,
)
from ..hub._base import failure_reason
from ._guard import LOOPBACK_HOSTS, BodyError, HostCheck, origin_refusal, read_json
from ._openai import STREAM_ID_HEADER, ModelFactory, openai_routes
from ._protocols import PROTOCOLS, ProtocolName, SSEEvent, translator_for
from ._stop import stop_endpoint

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse

    from ..conversation._envelopes import SealKeys
    from ..store import ConversationStore

__all__ = ["create_app"]

logger = logging.getLogger("reasoning_stream.web")

Starter = Callable[[Prompt], Runnable]
"""Builds the pipe or pipeline for a prompt posted to ``POST /streams/{stream_id}``."""

_T = TypeVar("_T")


def _import_starlette() -> None:
    try:
        import starlette  # noqa: F401
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "reasoning_stream.web needs Starlette: pip install 'reasoning-stream[web]'"
        ) from error


def create_app(
    hub: Hub,
    *,
    timeout: float = 10.0,
    start: Starter | None = None,
    routes: list[Any] | None = None,
    retry: float | None = 1.0,
    keep_alive: float | None = 15.0,
    write_timeout: float | None = 30.0,
    allowed_hosts: Sequence[str] = LOOPBACK_HOSTS,
    allowed_origins: Sequence[str] | None = None,
    max_body: int = 1_048_576,
    seal_keys: Sequence[bytes | str] | None = None,
    models: Mapping[str, ModelFactory] | None = None,
    store: ConversationStore | None = None,
    api_keys: Sequence[str] | None = None,
) -> Starlette:
    """An ASGI app that serves ``GET /streams/{stream_id}`` from ``hub`` as SSE.

    ``?protocol=channel`` (default), ``ag-ui`` or ``vercel-ui``. Every event carries ``id:``,
    the entry it came from; ``Last-Event-ID`` (or ``?after=``; the header wins) resumes right
    after that entry, so an ``EventSource`` that reconnects loses and repeats nothing. A
    stream that does not exist within ``timeout`` seconds is a 404; a malformed id a 400; a
    resume point that retention dropped a 410, and so is resuming ``ag-ui`` or ``vercel-ui``
    once retention dropped the stream's start (their parts were opened by entries that are
    gone); nothing left after the final entry a 204 (which tells an ``EventSource`` to stop
    reconnecting).

    With ``start``, a callable that builds a pipe or pipeline for a prompt, the app also takes
    ``POST /streams/{stream_id}`` with ``{"prompt": "..."}`` and runs it through the hub in
    the background: 202 once the id is claimed, 409 when it is taken (by a finished run or
    one still running). ``DELETE /streams/{stream_id}`` stops a run wherever it runs
    (``hub.astop``): 200, or 404 when there is none to stop. A failed run's reason (the
    error's type and message, never a secret) ends its stream in every protocol and is
    logged on ``reasoning_stream.web``. ``routes`` are added as they are. ``retry``
    (seconds) is sent as the SSE ``retry:`` field: how soon a browser reconnects.

    Safety defaults, so that neither a page on another site nor a DNS-rebinding name can
    start runs (which spend the API key) or read streams:

    - ``allowed_hosts``: the ``Host`` names served (exact, or ``*.example.com``); others get
      400. The default is this machine's loopback names; a deployment names its own.
      ``["*"]`` serves any name: unsafe, for a proxy that checks ``Host`` itself.
    - A POST must be ``Content-Type: application/json`` (else 415; a cross-site page cannot
      send JSON without a CORS preflight), and its ``Origin``, when sent, must be the app's
      own or one of ``allowed_origins`` (else 403), and so must a DELETE's. Listing origins
      also answers their CORS requests, so a UI served elsewhere can post, stop and read;
      ``["*"]`` allows any (unsafe).
    - Bodies over ``max_body`` bytes are 413; JSON that is malformed or nests deeper than 64
      levels is 400, and so is a prompt that is neither a string nor a list of message
      objects, or a ``stream_id`` the hub refuses (the message says why).

    ``keep_alive`` (seconds; ``None``: never) is how long a response may stay silent: while a
    stream is idle (a model thinking before its first token, a tool running) the app sends an
    SSE comment, ``: keep-alive``, so proxies and load balancers do not close an idle
    connection. A comment has no ``id:`` and is no event: readers skip it and resume points
    are unchanged.

    ``write_timeout`` (seconds; ``None``: wait forever) is how long one write to a client may
    wait for the client to take it. A client that stopped reading (a stalled tab, a dead
    network without a reset) would otherwise hold its connection, and the entries queued for
    it, until TCP gives up; past the timeout the app ends that response without its closing
    chunk, so the client sees a cut stream and resumes with ``Last-Event-ID``, losing nothing.

    ``seal_keys`` (``[key, *older]``; ``pip install 'reasoning-stream[envelopes]'``): serve
    each run's sealed reasoning state for clients that keep the history themselves:
    ``REASONING_ENCRYPTED_VALUE`` in ``ag-ui``, a reasoning part's ``providerMetadata`` in
    ``vercel-ui``, ``envelope`` on ``channel``'s ``end``. The hub seals (give it the same
    keys: ``MemoryHub(seal_keys=...)``, ``RedisHub(url, seal_keys=...)`` in the processes that
    run pipes); ``Conversation.from_ag_ui`` / ``from_ui_messages`` open what comes back. An
    envelope sealed with a key this app does not hold is still served, with a warning on
    ``reasoning_stream.web``.

    With ``models`` (names to factories that build a fresh pipe per request) the app is also
    an OpenAI-compatible server: ``POST /v1/chat/completions`` (streaming and not) and
    ``GET /v1/models``. Each completion runs through the hub under the stream id its
    ``x-reasoning-stream-id`` header names (resumable with ``GET /streams/{id}``, stoppable
    with ``DELETE``); reasoning goes out as ``reasoning_content``. With ``store`` (a
    ``ConversationStore``) the opaque state of each answer is kept and re-attached when the
    client sends the message back as role and content only. ``api_keys``: the bearer keys a
    client must send to ``/v1/...`` (``None``: none asked; the server's provider key is then
    spent for anyone who can reach it). See the docs page "OpenAI-compatible endpoint".
    """
    _import_starlette()
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.cors import CORSMiddleware
    from starlette.responses import JSONResponse, PlainTextResponse, StreamingResponse
    from starlette.routing import Route

    if isinstance(allowed_hosts, str) or isinstance(allowed_origins, str):
        raise UsageError("allowed_hosts and allowed_origins take a list of names, not a str")
    if not isinstance(max_body, int) or max_body < 1:
        raise UsageError(f"max_body must be a positive number of bytes, got {max_body!r}")
    origins = tuple(allowed_origins or ())
    keys = _seal_keys(hub, seal_keys, start)

    runs: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            runs["group"] = group
            yield
            group.cancel_scope.cancel()

    async def stream(request: Request) -> Response:
        stream_id = request.path_params["stream_id"]
        protocol = request.query_params.get("protocol", "channel")
        if protocol not in PROTOCOLS:
            return PlainTextResponse(
                f"unknown protocol {protocol!r}; use one of {', '.join(PROTOCOLS)}", 400
            )
        after = request.headers.get("last-event-id") or request.query_params.get("after") or None
        try:
            if after is not None:
                hub.check_entry_id(after)
            events = _events(hub, stream_id, protocol, after, timeout, keys)
            first = await _first(events)
        except InvalidEntryIdError as error:
            return PlainTextResponse(f"malformed or unknown Last-Event-ID: {error}", 400)
        except StreamNotFoundError as error:
            return PlainTextResponse(str(error), 404)
        except StreamExpiredError as error:
            return PlainTextResponse(str(error), 410)
        if first is None:
            return PlainTextResponse("", 204)
        headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
        if protocol == "vercel-ui":
            headers["x-vercel-ai-ui-message-stream"] = "v1"
        prelude = b"" if retry is None else f"retry: {round(retry * 1000)}\n\n".encode()
        response = StreamingResponse(
            _body(prelude, first, events), media_type="text/event-stream", headers=headers
        )
        return _streaming(response, keep_alive, write_timeout)

    async def post(request: Request) -> Response:
        assert start is not None
        stream_id = request.path_params["stream_id"]
        refusal = origin_refusal(request, origins)
        if refusal is not None:
            return PlainTextResponse(refusal, 403)
        try:
            body = await read_json(request, max_body)
        except BodyError as error:
            return PlainTextResponse(str(error), error.status)
        if not isinstance(body, dict) or "prompt" not in body:
            return PlainTextResponse('send a JSON object with the prompt: {"prompt": "..."}', 400)
        prompt = body["prompt"]
        try:
            check_prompt(prompt)
            hub.check_stream_id(stream_id)
        except UsageError as error:
            return PlainTextResponse(str(error), 400)
        group = runs.get("group")
        if group is None:
            return PlainTextResponse("the app's lifespan is not running", 503)
        try:
            runnable = start(prompt)
        except UsageError as error:
            return PlainTextResponse(str(error), 400)

        async def run(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            claim = _Claim(task_status)
            try:
                await hub.arun(stream_id, runnable, prompt, task_status=claim)
            except Exception as error:
                if not claim.claimed:
                    raise  # to the POST: the id is taken (409)
                # The reason is in the stream's final entry too; no traceback here: the
                # reason says what failed, and the traceback's locals could hold secrets.
                logger.warning("run %r failed: %s", stream_id, failure_reason(error))

        try:
            # Returns once the hub claimed the id: a second POST of it, even before this
            # run published anything, finds it taken.
            await group.start(run)
        except StreamExistsError as error:
            return PlainTextResponse(str(error), 409)
        return JSONResponse({"stream_id": stream_id, "url": f"/streams/{stream_id}"}, 202)

    route_list: list[Any] = [
        Route("/streams/{stream_id}", stream, methods=["GET"]),
        Route(
            "/streams/{stream_id}",
            stop_endpoint(hub, lambda request: origin_refusal(request, origins)),
            methods=["DELETE"],
        ),
    ]
    if start is not None:
        route_list.append(Route("/streams/{stream_id}", post, methods=["POST"]))
    if models is not None:
        route_list += openai_routes(
            hub,
            models,
            store=store,
            api_keys=api_keys,
            refusal=lambda request: origin_refusal(request, origins),
            max_body=max_body,
            timeout=timeout,
            task_group=lambda: runs.get("group"),
            streaming=lambda response: _streaming(response, keep_alive, write_timeout),
        )
    route_list += routes or []
    middleware = []
    if origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(origins),
                allow_methods=["GET", "POST", "DELETE"],
                allow_headers=["content-type", "last-event-id", "authorization"],
                expose_headers=[STREAM_ID_HEADER],
            )
        )
    if "*" not in allowed_hosts:
        # Outermost: a refused Host gets nothing else, not even a CORS answer.
        middleware.insert(0, Middleware(HostCheck, allowed_hosts=allowed_hosts))
    return Starlette(routes=route_list, middleware=middleware, lifespan=lifespan)


def _streaming(
    response: StreamingResponse, interval: float | None, write_timeout: float | None
) -> StreamingResponse:
    """``response``, sending :data:`KEEP_ALIVE` after ``interval`` silent seconds (``None``:
    never), and cut off when a write waits ``write_timeout`` seconds (see :class:`_Sender`)."""
    if interval is not None or write_timeout is not None:
        sender = _Sender(response, interval, write_timeout)
        response.stream_response = sender  # type: ignore[method-assign]
    return response


KEEP_ALIVE = b": keep-alive\n\n"
"""The SSE comment an idle response sends: no ``id:``, no event, skipped by every reader."""


class _Sender:
    """A streaming response's sender: keep-alive comments, and a write timeout.

    The body is sent by this task; a ticker in a child task writes :data:`KEEP_ALIVE`
    whenever ``interval`` seconds passed without a write. A lock keeps the two from
    interleaving (an entry's events go out in one write, so a comment never splits them).
    A write the client has not taken within ``write_timeout`` seconds ends the response
    without its closing chunk: the server closes the connection (uvicorn logs that the
    response was not completed) and the client resumes with ``Last-Event-ID``.
    """

    def __init__(self, response: Any, interval: float | None, write_timeout: float | None) -> None:
        self._response = response
        self._interval = interval
        self._write_timeout = math.inf if write_timeout is None else write_timeout

    async def __call__(self, send: Any) -> None:
        response = self._response
        lock = anyio.Lock()
        last = anyio.current_time()
        limit = self._write_timeout
        stalled = False

        async def write(message: dict[str, Any]) -> None:
            nonlocal last, stalled
            async with lock:
                with anyio.move_on_after(limit) as scope:
                    await send(message)
                if scope.cancelled_caught:
                    stalled = True
                    group.cancel_scope.cancel()
                    return
                last = anyio.current_time()

        failure: Exception | None = None

        async def tick(interval: float) -> None:
            nonlocal failure
            try:
                while True:
                    await anyio.sleep(max(0.0, last + interval - anyio.current_time()))
                    if anyio.current_time() - last >= interval:
                        await write(
                            {"type": "http.response.body", "body": KEEP_ALIVE, "more_body": True}
                        )
            except Exception as error:  # a gone client: end the response as the body would
                failure = error
                group.cancel_scope.cancel()

        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": response.raw_headers,
            }
        )
        async with anyio.create_task_group() as group:
            if self._interval is not None:
                group.start_soon(tick, self._interval)
            try:
                async for chunk in response.body_iterator:
                    await write({"type": "http.response.body", "body": chunk, "more_body": True})
            except Exception as error:  # re-raised below, unwrapped (Starlette expects OSError)
                failure = failure or error
            group.cancel_scope.cancel()
        if stalled:
            # The body's generators hold a hub subscription: end it now, not when collected.
            with anyio.CancelScope(shield=True):
                await response.body_iterator.aclose()
        if failure is not None:
            raise failure
        if stalled:
            logger.info(
                "a client took no data for %s s: its response ends here and it resumes "
                "with Last-Event-ID",
                limit,
            )
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class _Claim:
    """Passes ``started()`` on to a task status, remembering that the run claimed its id."""

    def __init__(self, status: TaskStatus[None]) -> None:
        self._status = status
        self.claimed = False

    def started(self, value: None = None) -> None:
        self.claimed = True
        self._status.started(value)


def _seal_keys(hub: Hub, seal_keys: object, start: object) -> SealKeys | None:
    """The app's keys, checked; ``UsageError`` when its hub could never seal with them."""
    if seal_keys is None:
        return None
    from ..conversation._envelopes import seal_keys_or_none

    keys = seal_keys_or_none(seal_keys)  # type: ignore[arg-type]
    if hub.seal_keys is None and (start is not None or isinstance(hub, MemoryHub)):
        raise UsageError(
            "create_app(seal_keys=...) serves the envelopes the hub seals, and this hub has no "
            "keys: give it the same ones (MemoryHub(seal_keys=...), RedisHub(url, "
            "seal_keys=...))"
        )
    return keys


def _check_key(keys: SealKeys, stream_id: str, entry: Entry) -> None:
    """Warn when a served envelope names a key this app does not hold (misconfigured keys)."""
    envelope = entry.envelope
    if envelope is not None and envelope.partition(".")[2].partition(".")[0] not in keys.key_ids:
        logger.warning(
            "stream %r was sealed with a key these seal_keys do not hold: its clients' "
            "history will come back as envelope_invalid; give every process the same keys",
            stream_id,
        )


async def _events(
    hub: Hub,
    stream_id: str,
    protocol: ProtocolName,
    after: str | None,
    timeout: float,
    keys: SealKeys | None = None,
) -> AsyncIterator[list[SSEEvent]]:
    """The SSE events of the stream past ``after``'s entry, following it live, per batch of
    entries the hub had together.

    A batch's events go out in one write (one per entry when the reader keeps up, a backlog
    at once when it does not), so a connection that drops mid-stream has given the browser
    either all of an entry's events or none (``Last-Event-ID`` counts on that).
    """
    translator = translator_for(protocol, stream_id, envelopes=keys is not None)
    # ``_closing``: a response that ends early (a cut-off client) ends its subscription
    # at once, not whenever the generator is collected.
    if not translator.replays:
        async with _closing(
            hub.subscribe_batches(stream_id, after=after, timeout=timeout)
        ) as batches:
            async for batch in batches:
                events = []
                for entry in batch:
                    if keys is not None and entry.final:
                        _check_key(keys, stream_id, entry)
                    events += translator.feed(entry)
                if events:
                    yield events
        return
    # Stateful protocols are a function of the whole stream: replay it from the first entry
    # and send only what comes after ``after`` (checked first: trimmed or unknown ids fail).
    if after is not None:
        await anyio.to_thread.run_sync(hub.read, stream_id, after)
    skipping = after is not None
    first = True
    async with _closing(hub.subscribe_batches(stream_id, timeout=timeout)) as batches:
        async for batch in batches:
            sent = []
            for entry in batch:
                if first and skipping and entry.id != hub.first_entry_id:
                    # The parts the client holds were opened by entries retention dropped: a
                    # replay from what is left would continue them under ids the client
                    # never saw.
                    raise StreamExpiredError(
                        f"the start of stream {stream_id!r} was trimmed (the hub's "
                        f"maxlen={hub.maxlen} keeps the latest entries only), so "
                        f"protocol={protocol} cannot resume it; read it again from the start, "
                        "use protocol=channel, or raise maxlen"
                    )
                first = False
                if keys is not None and entry.final and not skipping:
                    _check_key(keys, stream_id, entry)
                events = translator.feed(entry)
                if skipping:
                    skipping = entry.id != after
                    continue
                sent += events
            if sent:
                yield sent


@asynccontextmanager
async def _closing(iterator: AsyncIterator[_T]) -> AsyncIterator[AsyncIterator[_T]]:
    """``iterator``, closed on exit when it can be (a hub's subscription is a generator)."""
    try:
        yield iterator
    finally:
        await aclose_source(iterator)


async def _first(events: AsyncIterator[list[SSEEvent]]) -> list[SSEEvent] | None:
    try:
        return await events.__anext__()
    except StopAsyncIteration:
        return None


async def _body(
    prelude: bytes, first: list[SSEEvent], events: AsyncIterator[list[SSEEvent]]
) -> AsyncIterator[bytes]:
    try:
        yield prelude + b"".join(event.encode() for event in first)
        async for group in events:
            yield b"".join(event.encode() for event in group)
    except (StreamExpiredError, UsageError):
        # A reader that fell behind retention: end the response; the client's resume gets
        # the 410 that says so.
        return
    finally:
        await events.aclose()  # type: ignore[attr-defined]
