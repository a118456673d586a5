"""``POST /v1/chat/completions`` and ``GET /v1/models``: the hub's runs for OpenAI clients.

``create_app(hub, models={"name": factory}, store=...)`` adds these routes. Each request:

1. is checked (the app's ``Host`` and ``Origin`` guards, JSON only, ``max_body``, and the
   bearer key when ``api_keys`` is set), and its messages read (:mod:`._openai_wire`);
2. becomes a :class:`~reasoning_stream.conversation.Conversation` in which every assistant
   message the server recognises gets back the opaque state it stored for it
   (:mod:`._openai_passback`); ``conversation.preflight(pipe)`` then names what the
   provider would reject, and the request is refused with that problem's code;
3. runs through the hub under a fresh stream id (``chatcmpl-<hex>``, also the completion's
   ``id`` and the ``x-reasoning-stream-id`` response header), in the app's own task group:
   the run goes on when the client leaves, ``GET /streams/{id}`` replays and follows it, and
   ``DELETE /streams/{id}`` stops it;
4. answers from the hub stream (``stream: true``: chunks, each with ``id:`` = the hub entry)
   or from the run's result (one ``chat.completion``), after the turn is stored.
"""

from __future__ import annotations

import hmac
import inspect
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup, TaskStatus

from .._capture import PipeResult
from .._exceptions import StoreError, UsageError
from .._pipe import Pipe
from ..hub import Hub, HubError
from ..hub._base import failure_reason
from ._guard import BodyError, read_json
from ._openai_passback import attach, remember
from ._openai_wire import ChunkTranslator, RequestError, completion, error_body, read_request, sse

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse

    from ..conversation import Conversation
    from ..store import ConversationStore

__all__ = ["STREAM_ID_HEADER", "ModelFactory", "openai_routes"]

logger = logging.getLogger("reasoning_stream.web")

ModelFactory: TypeAlias = Callable[..., Pipe]
"""Builds a fresh pipe for one request: called with no argument, or, when it has a parameter
named ``request``, with the request body (a dict) as ``request=`` (to read ``temperature``,
``max_tokens``, ``tools``...)."""

STREAM_ID_HEADER = "x-reasoning-stream-id"
"""The response header naming the hub stream of a completion."""

_STORE_WAIT = 10.0
"""Seconds a response waits, after the run's end, for its turn to be stored."""


@dataclass
class _Outcome:
    """How a background run ended: its result (or error), once its turn is stored."""

    done: anyio.Event = field(default_factory=anyio.Event)
    result: PipeResult | None = None
    error: BaseException | None = None


def openai_routes(
    hub: Hub,
    models: Mapping[str, ModelFactory],
    *,
    store: ConversationStore | None,
    api_keys: Sequence[str] | None,
    refusal: Callable[[Request], str | None],
    max_body: int,
    timeout: float,
    task_group: Callable[[], TaskGroup | None],
    streaming: Callable[[StreamingResponse], Response],
) -> list[Any]:
    """The Starlette routes; ``create_app`` passes its guards, task group and keep-alive."""
    from starlette.responses import JSONResponse
    from starlette.responses import StreamingResponse as Streaming
    from starlette.routing import Route

    if not isinstance(models, Mapping) or not all(
        isinstance(name, str) and callable(factory) for name, factory in models.items()
    ):
        raise UsageError(
            'models= maps model names to factories that build a pipe: {"name": lambda: Pipe(...)}'
        )
    if isinstance(api_keys, str) or not all(isinstance(key, str) and key for key in api_keys or ()):
        raise UsageError("api_keys= takes a list of non-empty key strings, not a str")
    served = dict(models)
    keys = tuple(api_keys or ())

    def refuse(error: RequestError) -> Response:
        headers = {"www-authenticate": "Bearer"} if error.status == 401 else None
        return JSONResponse(error.body(), error.status, headers=headers)

    def check_key(request: Request) -> None:
        if not keys:
            return
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not any(
            hmac.compare_digest(given.strip().encode(), key.encode()) for key in keys
        ):
            raise RequestError(
                "missing or wrong API key: send Authorization: Bearer <one of the server's "
                "api_keys>",
                status=401,
                code="invalid_api_key",
            )

    async def list_models(request: Request) -> Response:
        try:
            check_key(request)
        except RequestError as error:
            return refuse(error)
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": "reasoning-stream"}
            for name in served
        ]
        return JSONResponse({"object": "list", "data": data})

    async def chat_completions(request: Request) -> Response:
        try:
            check_key(request)
            reason = refusal(request)
            if reason is not None:
                raise RequestError(reason, status=403, code="origin_not_allowed")
            try:
                body = await read_json(request, max_body, shape='{"model": ..., "messages": [...]}')
            except BodyError as error:
                raise RequestError(str(error), status=error.status) from None
            chat = read_request(body)
            factory = served.get(chat.model)
            if factory is None:
                raise RequestError(
                    f"The model {chat.model!r} does not exist on this server; it serves "
                    f"{', '.join(map(repr, served)) or 'none'}",
                    status=404,
                    param="model",
                    code="model_not_found",
                )
            pipe = _build(factory, chat.model, body)
            try:
                conversation = await anyio.to_thread.run_sync(attach, store, chat.messages, pipe)
            except StoreError as error:
                raise RequestError(
                    f"the conversation store did not answer: {error}",
                    status=503,
                    type="server_error",
                ) from None
            problems = conversation.preflight(pipe)
            if problems:
                first = problems[0]
                raise RequestError(
                    "; ".join(str(problem) for problem in problems)
                    + ". The server keeps the reasoning state of the assistant messages it "
                    "produced; send those messages back exactly as they were received",
                    param=f"messages[{first.index}]",
                    code=first.code,
                )
            group = task_group()
            if group is None:
                raise RequestError(
                    "the app's lifespan is not running", status=503, type="server_error"
                )
        except RequestError as error:
            return refuse(error)

        stream_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        outcome = _Outcome()
        try:
            await group.start(_run, hub, stream_id, pipe, conversation, store, outcome)
        except HubError as error:  # the hub's store (Redis) did not take the run
            return refuse(RequestError(str(error), status=503, type="server_error"))
        headers = {STREAM_ID_HEADER: stream_id}
        if not chat.stream:
            await outcome.done.wait()
            result = outcome.result
            if result is None or result.status == "error":
                failure = outcome.error or (result.error if result else None)
                why = failure_reason(failure) if failure is not None else "the run failed"
                return JSONResponse(
                    error_body(why, type="server_error", code="upstream_error"),
                    502,
                    headers=headers,
                )
            body_out = completion(
                result, completion_id=stream_id, model=chat.model, created=created
            )
            return JSONResponse(body_out, headers=headers)
        translator = ChunkTranslator(stream_id, chat.model, created, chat.include_usage)
        chunks = _chunks(hub, stream_id, translator, outcome, timeout)
        headers.update({"cache-control": "no-cache", "x-accel-buffering": "no"})
        return streaming(Streaming(chunks, media_type="text/event-stream", headers=headers))

    return [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/models", list_models, methods=["GET"]),
    ]


def _build(factory: ModelFactory, name: str, body: Any) -> Pipe:
    """The pipe ``factory`` makes for this request (the body as ``request=`` when it asks)."""
    try:
        # By name: a pipe class (or a partial of one) shows only *args and **kwargs.
        parameter = inspect.signature(factory).parameters.get("request")
        takes_body = parameter is not None and parameter.kind in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        )
    except (TypeError, ValueError):
        takes_body = False
    try:
        pipe = factory(request=dict(body)) if takes_body else factory()
    except Exception as error:
        raise RequestError(
            f"the server could not build a pipe for model {name!r}: {failure_reason(error)}",
            status=500,
            type="server_error",
        ) from error
    if not isinstance(pipe, Pipe):
        raise RequestError(
            f"the server's factory for model {name!r} returned {type(pipe).__name__}, not a "
            "pipe: models={...} takes callables that return a fresh provider pipe",
            status=500,
            type="server_error",
        )
    return pipe


async def _run(
    hub: Hub,
    stream_id: str,
    pipe: Pipe,
    conversation: Conversation,
    store: ConversationStore | None,
    outcome: _Outcome,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Run ``pipe`` through the hub, then store the turn it made; set ``outcome``."""
    claimed = False

    class Claim:
        def started(self, value: None = None) -> None:
            nonlocal claimed
            claimed = True
            task_status.started()

    try:
        try:
            outcome.result = await hub.arun(stream_id, pipe, conversation, task_status=Claim())
        except Exception as error:
            if not claimed:
                raise
            outcome.error = error
            captured = getattr(error, "result", None)
            outcome.result = captured if isinstance(captured, PipeResult) else None
            logger.warning("completion %r failed: %s", stream_id, failure_reason(error))
        result = outcome.result
        if store is not None and result is not None and result.status != "error":
            with anyio.CancelScope(shield=True):
                try:
                    await anyio.to_thread.run_sync(remember, store, conversation.messages, result)
                except Exception as error:  # the answer is out; only its passback is lost
                    logger.warning(
                        "completion %r: its turn could not be stored: %s",
                        stream_id,
                        failure_reason(error),
                    )
    finally:
        outcome.done.set()


async def _chunks(
    hub: Hub, stream_id: str, translator: ChunkTranslator, outcome: _Outcome, timeout: float
) -> AsyncIterator[bytes]:
    """The completion's SSE body: the hub stream's chunks, then ``data: [DONE]``.

    The last chunk waits for the turn to be stored, so a client that sends its next request
    as soon as the stream ends finds it.
    """
    async for entry in hub.subscribe(stream_id, timeout=timeout):
        if entry.final:
            with anyio.move_on_after(_STORE_WAIT):
                await outcome.done.wait()
        chunks = translator.feed(entry)
        if chunks:
            yield b"".join(sse(chunk, entry.id) for chunk in chunks)
    yield sse("[DONE]")
