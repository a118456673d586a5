"""The one driver of every provider pipe: the sync and async loops, client ownership, close.

A provider package supplies three things to :class:`ProviderPipe`: a translator (wire chunk ->
events, pure), how to open one response with a client (a :class:`~._transports.Source` or
:class:`~._transports.AsyncSource`), and how to build and recognise its clients. The loops
below are the only ones: they feed chunks through the translator, record the response id,
release held characters (``salvage()``) when a stream breaks, and close the response and any
client the run built on every exit path, shielded from cancellation.

Clients are given or built, sync or async:

- ``run()`` uses a given sync client, or one the pipe builds once and keeps until
  :meth:`ProviderPipe.close`; a given async client is a ``UsageError`` saying what to do.
- ``arun()`` uses a given async client; with only a sync client given it iterates ``run()``'s
  loop in a worker thread; with none it builds an async client for this run and closes it at
  the end (its connections belong to the running event loop, asyncio or trio, and the next
  ``arun()`` may be on another). Pass ``client=`` to keep connections across runs.
- Pipes whose SDK is sync only (boto3) read in worker threads (``reads_in_threads``).
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self, TypedDict
from urllib.parse import urlsplit

import anyio
import httpx

from .._callbacks import CallbackErrorHandler
from .._capture import PipeResult, merge_attempts
from .._effort import (
    Reasoning,
    ReasoningPlan,
    check_reasoning,
    lower_plan,
    merge_params,
    plan_reasoning,
    validate_reasoning,
)
from .._events import Event
from .._exceptions import ProviderError, ReasoningStreamError, UsageError
from .._messages import strip_inert_keys
from .._pipe import Pipe, Prompt
from .._pipe import logger as pipe_logger
from ..conversation._history import HistoryTurn, check_passback, check_prompt, history_turns
from ._errors import provider_error, redact_exception_chain
from ._spec import logger_for, spec
from ._transports import AsyncSource, Source

if TYPE_CHECKING:
    from .._channel import Channel


__all__ = ["EndpointOptions", "PipeOptions", "ProviderPipe", "Translator", "require"]


def require(module: str, extra: str) -> ModuleType:
    """Import an optional SDK, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise UsageError(
            f"this pipe needs the {module!r} package: pip install 'reasoning-stream[{extra}]'"
        ) from error


class Translator(Protocol):
    """What the driver needs of a provider's translator (see each ``translate.py``)."""

    @property
    def response_id(self) -> str | None:
        """The provider's id for the response, once seen."""

    def feed(self, chunk: Any) -> list[Event]:
        """The events of one chunk."""

    def finish(self) -> list[Event]:
        """The events the end of a complete stream releases."""

    def salvage(self) -> list[Event]:
        """What a broken stream still releases (held characters, completed state)."""

    def read_response(self, response: Any) -> list[Event]:
        """The events of one non-streaming response (``stream=False``), end included."""


class PipeOptions(TypedDict, total=False):
    """Keywords every provider pipe takes (see :class:`ProviderPipe`)."""

    extra_body: Mapping[str, Any] | None
    timeout: float | None
    name: str | None
    escape_markers: bool
    on_callback_error: CallbackErrorHandler | None
    stream_model_reasoning: bool
    reasoning: Reasoning
    stream: bool


class EndpointOptions(PipeOptions, total=False):
    """:class:`PipeOptions` plus the client or the endpoint and key to build one."""

    client: Any
    base_url: str | None
    api_key: str | None


class _Validated(type):
    """Runs a provider pipe's whole-configuration checks once, after its outermost ``__init__``.

    Provider constructors are layered (``OpenRouterPipe`` -> ``OpenAIChatPipe`` ->
    ``ProviderPipe``), and some checks need what the outer layers set (a transport, an
    output limit): a misconfigured pipe fails at its construction, not at its first run.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        pipe = super().__call__(*args, **kwargs)
        pipe.validate()
        return pipe


class ProviderPipe(Pipe, metaclass=_Validated):
    """Base of the provider pipes: a model, a client or an endpoint, and request options.

    Args:
        model: the provider's model id.
        client: the SDK's sync or async client (see the module docs for which run uses what).
        base_url: the API root the provider documents, to build a client.
        api_key: the key for a client the pipe builds (never shown in errors or reprs).
        extra_body: extra JSON fields merged into the request body.
        timeout: seconds to wait for the server (connect and between reads).
        reasoning: one reasoning-effort knob: ``None`` (the provider's default), ``False``,
            ``True``, ``"low"``, ``"medium"``, ``"high"`` or a token budget (``int``), mapped
            to the provider's native parameters (see :meth:`reasoning_plan`).
        stream: ``True`` (the default) streams the answer; ``False`` makes one
            non-streaming request the way the provider documents it, and gives the same
            ``PipeResult`` and the same channel (one chunk per reasoning or text part).
    """

    provider: str | None = None
    secret_env: tuple[str, ...] = ()
    """Environment variables holding this provider's credentials (redacted from errors)."""
    extra: str = "all"
    """The package extra that installs this pipe's SDK."""
    sync_client_hint: ClassVar[str] = "a sync client"
    """What to pass for ``run()``, named in the error when only an async client was given."""
    reads_in_threads: ClassVar[bool] = False
    """The SDK is sync only: ``arun()`` reads the sync client in worker threads."""
    sdk: ClassVar[str | None] = None
    """The module the pipe imports to build its client (``None``: httpx, a core dependency)."""
    client_methods: ClassVar[tuple[str, ...]] = ()
    """Dotted paths a given SDK client has (``"chat.completions.create"``): checked at
    construction, so a client of another SDK is refused there."""
    client_hint: ClassVar[str] = "the provider SDK's client"
    """What ``client=`` takes, in words, for the error that refuses another object."""

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        name: str | None = None,
        escape_markers: bool = True,
        on_callback_error: CallbackErrorHandler | None = None,
        stream_model_reasoning: bool = True,
        reasoning: Reasoning = None,
        stream: bool = True,
    ) -> None:
        _check_model(type(self).__name__, model)
        validate_reasoning(reasoning)
        if not isinstance(stream, bool):
            raise UsageError(f"stream must be True or False, got {stream!r}")
        self.reasoning: Reasoning = reasoning
        self.stream: bool = stream
        """``False``: one non-streaming request per run (see :meth:`create_response`)."""
        super().__init__(
            name=name,
            escape_markers=escape_markers,
            on_callback_error=on_callback_error,
            stream_model_reasoning=stream_model_reasoning,
        )
        self.model = model
        self.client = client
        self.base_url = base_url.rstrip("/") if base_url else None
        self._api_key = api_key
        self.extra_body: dict[str, Any] = dict(extra_body or {})
        self.timeout = timeout
        self.endpoint = self.base_url
        if self.endpoint is None and client is not None:
            root = str(getattr(client, "base_url", None) or "").rstrip("/")
            self.endpoint = root or None
        self._built: Any = None
        self._exhaustion_retries = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, name={self.name!r})"

    # ------------------------------------------------------------------------ validation

    def validate(self) -> None:
        """Refuse a configuration that cannot work; runs once, when construction ends.

        A given ``client`` must be the SDK's client this pipe calls (or an httpx client on the
        lean ``transport="httpx"``), and ``reasoning`` must be plannable for this provider and
        model (``reasoning=0`` only turns Gemini budget models off). A subclass adds its own
        checks by extending this method.
        """
        self._validate_client()
        if self.reasoning is not None and self.provider is not None:
            check_reasoning(
                self.provider,
                self.reasoning_model_id(),
                self.reasoning,
                max_tokens=self.reasoning_max_tokens(),
            )

    def _validate_client(self) -> None:
        client = self.client
        if client is None:
            return
        if getattr(self, "transport", "sdk") == "httpx":
            if isinstance(client, httpx.Client | httpx.AsyncClient):
                return
            wanted = "an httpx.Client or httpx.AsyncClient (its transport is httpx)"
        elif self.accepts_client(client):
            return
        else:
            wanted = self.client_hint
        raise UsageError(f"{self.name}: client= must be {wanted}; got {_described(client)}")

    def accepts_client(self, client: Any) -> bool:
        """Whether ``client`` has every method in :attr:`client_methods` (duck typing)."""
        return all(callable(_attribute_path(client, path)) for path in self.client_methods)

    # --------------------------------------------------------------------------- retries

    def set_exhaustion_retry(self, attempts: int = 1) -> Self:
        """Ask again with less thinking when the model spent its whole budget thinking.

        When a run stops at the output limit with reasoning and no answer
        (``result.reasoning_exhausted``) and no answer byte reached a callback, the pipe
        sends the same request again, up to ``attempts`` times, each time with the next lower
        effort plan (:meth:`lower_reasoning_plan`: ``"high"`` -> ``"medium"`` -> ``"low"``, a
        budget halved; ``None`` and ``True`` start below the provider's default). It stops
        when nothing lower changes the request. ``pipe.reasoning`` is restored after the run.

        The reasoning already streamed stays in the channel, and the result keeps it: its
        ``reasoning_segments`` hold every attempt's segments, its answer, opaque state,
        status and response id are the last attempt's, its usage adds the attempts up.
        Event callbacks see each attempt's ``Finish``. Off by default (``attempts=0``).
        """
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 0:
            raise ValueError(f"attempts must be a non-negative int, got {attempts!r}")
        self._exhaustion_retries = attempts
        return self

    def lower_reasoning_plan(self) -> ReasoningPlan | None:
        """The effort plan an exhaustion retry would use next, or ``None`` if nothing is lower.

        Nothing is called; ``plan.reasoning`` is the setting, ``plan.params`` what it sends.
        """
        if self.provider is None:
            return None
        return lower_plan(
            self.provider,
            self.reasoning_model_id(),
            self.reasoning,
            max_tokens=self.reasoning_max_tokens(),
        )

    def _attempts(self, channel: Channel, prompt: Prompt) -> PipeResult:
        if not self._exhaustion_retries:
            return super()._attempts(channel, prompt)
        descent = _Descent(self)
        try:
            result = super()._attempts(channel, prompt)
            while descent.step_down(result):
                result = super()._attempts(channel, prompt)
            return descent.finished(result)
        except BaseException as error:
            descent.failed(error)
            raise
        finally:
            self.reasoning = descent.original

    async def _aattempts(self, channel: Channel, prompt: Prompt) -> PipeResult:
        if not self._exhaustion_retries:
            return await super()._aattempts(channel, prompt)
        descent = _Descent(self)
        try:
            result = await super()._aattempts(channel, prompt)
            while descent.step_down(result):
                result = await super()._aattempts(channel, prompt)
            return descent.finished(result)
        except BaseException as error:
            descent.failed(error)
            raise
        finally:
            self.reasoning = descent.original

    # ---------------------------------------------------------------------------- effort

    def reasoning_plan(self) -> ReasoningPlan:
        """The native parameters (and warnings) ``reasoning=`` becomes for this provider and model.

        Nothing is called: this shows what the next request will carry.
        """
        return plan_reasoning(
            self.provider or "",
            self.reasoning_model_id(),
            self.reasoning,
            max_tokens=self.reasoning_max_tokens(),
        )

    def reasoning_model_id(self) -> str:
        """The model id the effort table is keyed on."""
        return self.model or ""

    def reasoning_max_tokens(self) -> int | None:
        """The output limit this pipe sends, which budget-based thinking must stay under."""
        value = getattr(self, "max_tokens", None)
        return value if isinstance(value, int) else None

    def with_reasoning(self, request: dict[str, Any]) -> dict[str, Any]:
        """``request`` with the effort plan's parameters deep-merged in (before ``extra_body``)."""
        if self.reasoning is None:
            return request
        return merge_params(request, self.reasoning_plan().params)

    # --------------------------------------------------------------------------- history

    def turns(self, prompt: Prompt | Any) -> list[HistoryTurn]:
        """The history turns to send for ``prompt``."""
        return history_turns(prompt, self)

    def messages(self, prompt: Prompt | Any) -> list[dict[str, Any]]:
        """The plain messages of ``prompt`` (inert keys removed), without any provider state."""
        return [strip_inert_keys(turn.message) for turn in self.turns(prompt)]

    # ---------------------------------------------------------------------------- clients

    def _client_options(self) -> dict[str, Any]:
        """Keyword arguments for an SDK client the pipe builds.

        Only what was given of ``base_url``, ``api_key`` and ``timeout``: the SDK's own
        defaults (and environment variables) stand for the rest, except retries. The SDKs
        retry 429s and 5xx twice by default, behind the caller's back and after the first
        attempt's sleep; the pipe's own :meth:`~Pipe.set_retries` is the one retry policy.
        """
        options: dict[str, Any] = {"max_retries": 0}
        if self.base_url is not None:
            options["base_url"] = self.base_url
        if self._api_key is not None:
            options["api_key"] = self._api_key
        if self.timeout is not None:
            options["timeout"] = self.timeout
        return options

    def is_async_client(self, client: Any) -> bool:
        """Whether ``client`` is the SDK's async client (a provider package says how)."""
        return False

    def build_client(self, *, asynchronous: bool) -> Any:
        """A new SDK client from ``base_url``, ``api_key`` and ``timeout``."""
        raise NotImplementedError

    def close_client(self, client: Any) -> None:
        """Release a sync client the pipe built."""
        client.close()

    async def aclose_client(self, client: Any) -> None:
        """Release an async client the pipe built for one run (httpx's is ``aclose()``)."""
        await (client.aclose() if isinstance(client, httpx.AsyncClient) else client.close())

    def sync_client(self) -> Any:
        """The client ``run()`` uses: the given sync one, or one built once and kept."""
        given = self.client
        if given is not None:
            if self.is_async_client(given):
                raise UsageError(
                    f"{self.name} was given an async client: pass {self.sync_client_hint} "
                    "to use run(), or use `await pipe.arun(...)`"
                )
            return given
        if self._built is None:
            self.check_can_build_client()
            self._built = self.build_client(asynchronous=False)
        return self._built

    def _async_client(self) -> tuple[Any, bool] | None:
        """``(client, built for this run)`` for ``arun()``; ``None``: use a worker thread."""
        given = self.client
        if given is not None:
            return (given, False) if self.is_async_client(given) else None
        self.check_can_build_client()
        return self.build_client(asynchronous=True), True

    def needs_api_key(self) -> bool:
        """Whether a client this pipe builds needs a key (the provider spec says; Ollama's
        and Bedrock's do not)."""
        found = spec(self.provider)
        return found is not None and found.key_needed

    def sdk_module(self) -> str | None:
        """The module :meth:`build_client` imports; ``None`` on the lean httpx transport."""
        return None if getattr(self, "transport", "sdk") == "httpx" else self.sdk

    def check_can_build_client(self) -> None:
        """Before the pipe builds a client, and so before any request: the key and the SDK.

        One ``UsageError`` for every provider: it names the environment variables the key is
        read from and, when the SDK is missing as well, the extra that installs it.
        """
        module = self.sdk_module()
        missing_sdk = module is not None and not _importable(module)
        install = f"pip install 'reasoning-stream[{self.extra}]'"
        if self.needs_api_key() and not self._has_api_key():
            found = spec(self.provider)
            names = " or ".join(found.key_env if found is not None else self.secret_env)
            needs = "an API key"
            if missing_sdk:
                needs += f" and the {module!r} package ({install})"
            local = (
                " (any non-empty string for a local server that checks none)"
                if module is not None and self.base_url is not None
                else ""
            )
            raise UsageError(
                f"{self.name} needs {needs}: set {names}, or pass api_key={local}, or pass a "
                "ready client="
            )
        if missing_sdk:
            raise UsageError(f"{self.name} needs the {module!r} package: {install}")

    def _has_api_key(self) -> bool:
        if self._api_key:
            return True
        found = spec(self.provider)
        names = (*(found.key_env if found is not None else ()), *self.secret_env)
        return any(os.environ.get(name) for name in names)

    def close(self) -> None:
        """Release the sync client the pipe built itself; clients passed in stay the caller's."""
        built, self._built = self._built, None
        if built is not None:
            self.close_client(built)

    async def aclose(self) -> None:
        """Nothing to close: an async client the pipe builds lives for one ``arun()`` only."""

    # ------------------------------------------------------------------ provider hooks

    def translator(self) -> Translator:
        """A fresh translator for one response."""
        raise NotImplementedError

    def log_request(self, path: str, body: Mapping[str, Any], method: str = "POST") -> None:
        """One ``DEBUG`` line on the provider's logger per request: the method, the path
        (``path`` may be a URL: never its host or query), the model and the body's keys,
        never a value (messages, keys and opaque state stay out of logs)."""
        log = logger_for(self.provider)
        if log.isEnabledFor(logging.DEBUG):
            where = urlsplit(path).path or path
            log.debug("%s %s model=%s body keys=%s", method, where, self.model, sorted(body))

    def open_stream(self, client: Any, prompt: Prompt | Any) -> Source:
        """Send the request for ``prompt`` with a sync client; the response's chunks."""
        raise NotImplementedError

    async def aopen_stream(self, client: Any, prompt: Prompt | Any) -> AsyncSource:
        """Async twin of :meth:`open_stream`."""
        raise NotImplementedError

    def create_response(self, client: Any, prompt: Prompt | Any) -> Any:
        """Send the non-streaming request for ``prompt`` with a sync client; the response.

        The response is the decoded body (a dict) or the SDK's parsed object; the
        translator's ``read_response`` reads either.
        """
        raise NotImplementedError(f"{type(self).__name__} has no one-shot request")

    async def acreate_response(self, client: Any, prompt: Prompt | Any) -> Any:
        """Async twin of :meth:`create_response`."""
        raise NotImplementedError(f"{type(self).__name__} has no one-shot request")

    def stream_ended(self, translator: Translator) -> None:
        """Called once a stream ended, however it ended (server timings, for instance)."""

    # ---------------------------------------------------------------------------- loops

    def iter_events(self, prompt: Prompt) -> Iterator[Event]:
        """Stream one turn with the sync client, yielding its events."""
        check_prompt(prompt)
        check_passback(prompt, self)
        if not self.stream:
            yield from self._iter_response(prompt)
            return
        client = self.sync_client()
        translator = self.translator()
        source = self.open_stream(client, prompt)
        recorded = source.response_id
        self.set_response_id(recorded)
        try:
            for chunk in source.chunks:
                events = translator.feed(chunk)
                # Most wires repeat the response's id on every chunk: record it when it changes.
                if translator.response_id != recorded and translator.response_id is not None:
                    recorded = translator.response_id
                    self.set_response_id(recorded)
                yield from events
            yield from translator.finish()
        except Exception:
            # What the translator still held is part of what was captured before the failure.
            self.set_response_id(translator.response_id)
            yield from translator.salvage()
            raise
        finally:
            try:
                self.stream_ended(translator)
            finally:
                source.close()

    async def aiter_events(self, prompt: Prompt) -> AsyncIterator[Event]:
        """Stream one turn with the async client, event by event (see the batched twin)."""
        batches = self.aiter_event_batches(prompt)
        try:
            async for batch in batches:
                for event in batch:
                    yield event
        finally:
            with anyio.CancelScope(shield=True):
                await batches.aclose()  # type: ignore[attr-defined]

    async def aiter_event_batches(self, prompt: Prompt) -> AsyncIterator[Sequence[Event]]:
        """Stream one turn with the async client, the events of each wire chunk together.

        ``arun()`` reads this loop. A given sync client runs in a worker thread, an event at a
        time.
        """
        check_prompt(prompt)
        check_passback(prompt, self)
        if not self.stream:
            async for event in self._aiter_response(prompt):
                yield (event,)
            return
        if self.reads_in_threads:
            client, owned = self.sync_client(), False
        else:
            chosen = self._async_client()
            if chosen is None:
                threaded = Pipe.aiter_events(self, prompt)
                try:
                    async for event in threaded:
                        yield (event,)
                finally:
                    with anyio.CancelScope(shield=True):
                        await threaded.aclose()  # type: ignore[attr-defined]
                return
            client, owned = chosen
        translator = self.translator()
        source: AsyncSource | None = None
        try:
            source = await self.aopen_stream(client, prompt)
            recorded = source.response_id
            self.set_response_id(recorded)
            async for chunk in source.chunks:
                events = translator.feed(chunk)
                if translator.response_id != recorded and translator.response_id is not None:
                    recorded = translator.response_id
                    self.set_response_id(recorded)
                if events:
                    yield events
            events = translator.finish()
            if events:
                yield events
        except Exception:
            self.set_response_id(translator.response_id)
            events = translator.salvage()
            if events:
                yield events
            raise
        finally:
            self.stream_ended(translator)
            with anyio.CancelScope(shield=True):
                try:
                    if source is not None:
                        await source.aclose()
                finally:
                    if owned:
                        await self.aclose_client(client)

    def _iter_response(self, prompt: Prompt) -> Iterator[Event]:
        """One non-streaming request with the sync client; its events, read at once."""
        client = self.sync_client()
        translator = self.translator()
        try:
            response = self.create_response(client, prompt)
            events = translator.read_response(response)
        finally:
            self.set_response_id(translator.response_id)
            self.stream_ended(translator)
        yield from events

    async def _aiter_response(self, prompt: Prompt) -> AsyncIterator[Event]:
        """Async twin of :meth:`_iter_response` (a given sync client runs in a thread)."""
        owned = False
        if self.reads_in_threads:
            client = self.sync_client()
        else:
            chosen = self._async_client()
            if chosen is None:
                client = self.sync_client()
            else:
                client, owned = chosen
        translator = self.translator()
        try:
            if self.reads_in_threads or (not owned and not self.is_async_client(client)):
                response = await anyio.to_thread.run_sync(self.create_response, client, prompt)
            else:
                response = await self.acreate_response(client, prompt)
            events = translator.read_response(response)
        finally:
            self.set_response_id(translator.response_id)
            self.stream_ended(translator)
            if owned:
                with anyio.CancelScope(shield=True):
                    await self.aclose_client(client)
        for event in events:
            yield event

    # --------------------------------------------------------------------------- errors

    def secrets(self) -> list[str]:
        """The credentials this pipe may send: never to appear in an error or a log line."""
        candidates = [self._api_key, getattr(self.client, "api_key", None)]
        candidates += [os.environ.get(name) for name in self.secret_env]
        # Blanking a very short value would mangle ordinary words; real keys are long.
        return [value for value in candidates if isinstance(value, str) and len(value) >= 8]

    def redact_secrets(self, error: BaseException) -> None:
        """Blank out this pipe's credentials wherever a server echoed them into ``error``.

        Servers (Google's APIs, some proxies) quote a refused key back in the error body;
        that text reaches the SDK's exception and ours. The chain (``__cause__`` and
        ``__context__``) is rewritten in place: its messages, ``message`` and ``body``.
        """
        secrets = self.secrets()
        if secrets:
            redact_exception_chain(error, secrets)

    def wrap_error(self, error: BaseException) -> ProviderError:
        """Map an SDK or transport exception to ``ProviderError``."""
        return provider_error(self.provider or self.name, error)


class _Descent:
    """One run's steps down the effort ladder (see :meth:`ProviderPipe.set_exhaustion_retry`)."""

    def __init__(self, pipe: ProviderPipe) -> None:
        self.pipe = pipe
        self.original: Reasoning = pipe.reasoning
        self.earlier: list[PipeResult] = []

    def step_down(self, result: PipeResult) -> bool:
        """Lower the pipe's effort for one more attempt after ``result``, if that is allowed."""
        pipe = self.pipe
        if len(self.earlier) >= pipe._exhaustion_retries or not result.reasoning_exhausted:
            return False
        if result.text:
            return False  # whitespace reached the callbacks: an answer byte, so no retry
        plan = pipe.lower_reasoning_plan()
        if plan is None:
            return False
        pipe_logger.info(
            "%s: the model spent its whole output budget on reasoning; asking again with "
            "reasoning=%r",
            pipe.name,
            plan.reasoning,
        )
        self.earlier.append(result)
        pipe.reasoning = plan.reasoning
        pipe._retrying(len(self.earlier), 0.0, None)
        return True

    def finished(self, result: PipeResult) -> PipeResult:
        """The run's result: every attempt's reasoning, the last attempt's answer."""
        merged = merge_attempts(self.earlier, result)
        self.pipe.last_result = merged
        return merged

    def failed(self, error: BaseException) -> None:
        """A retry failed: what it raises and ``last_result`` still hold the earlier reasoning."""
        current = self.pipe.last_result
        if not self.earlier or current is None or any(current is r for r in self.earlier):
            return
        merged = self.finished(current)
        if isinstance(error, ReasoningStreamError) and error.result is current:
            error.result = merged


def _check_model(pipe: str, model: object) -> None:
    if not isinstance(model, str) or not model.strip():
        raise UsageError(
            f"{pipe} needs a model id: a non-empty str naming the provider's model; got "
            f"{type(model).__name__}: {model!r}"
        )


def _attribute_path(obj: Any, path: str) -> Any:
    for name in path.split("."):
        obj = getattr(obj, name, None)
        if obj is None:
            return None
    return obj


def _described(client: object) -> str:
    kind = type(client)
    if kind.__module__ == "builtins":
        return f"{kind.__name__} {client!r:.60}"
    return f"{kind.__module__}.{kind.__qualname__}"


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
