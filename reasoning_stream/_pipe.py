"""``Pipe``: callbacks, the hooks, retries, and the two short run drivers.

Provider pipes only translate their SDK's chunks into events (``iter_events`` and
``aiter_events``). The hooks hand each delta to the capture (:mod:`._capture`) and to the
channel (:mod:`._channel`), which alone decides markers, escaping and the reasoning gate; the
drivers empty the channel's outbox with the one delivery algorithm (:mod:`._delivery`). A run owns
its channel for its lifetime: a pipe refuses a second run, concurrent or re-entrant, before
anything is touched.

The drivers take one shortcut, the channel's *lane*: while the channel says a lone callback's
stream is settled (:meth:`Channel.lane <._channel.Channel.lane>`), a delta without ``<`` is
captured and handed to that callback directly, exactly as the hook and the delivery would have
done, without building an outbox entry. ``arun()`` reads a source's events in batches
(:meth:`Pipe.aiter_event_batches`) and handles them one by one, each delivered before the next.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
import threading
import time
import types
import warnings
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Self, TypeAlias

import anyio

from . import _observers
from ._callbacks import (
    CallbackErrorHandler,
    EventCallback,
    StreamingCallback,
    checked_callable,
    is_async_callable,
    reject_awaitable,
    report_callback_error,
)
from ._capture import Capture, PipeResult, Status, Timings, status_for
from ._channel import Channel, Entry
from ._delivery import adeliver, awaitable_name, deliver_sync
from ._events import (
    Event,
    Finish,
    OpaqueState,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    ToolCall,
    UsageReport,
)
from ._exceptions import MalformedStreamError, ProviderError, ReasoningStreamError, UsageError

if TYPE_CHECKING:
    from ._pipeline import Pipeline

__all__ = [
    "Pipe",
    "PipeResult",
    "Prompt",
    "Status",
    "Timings",
    "claim",
    "release",
    "running_event_loop",
    "warn_if_loop_running",
]

Prompt: TypeAlias = "str | Sequence[Mapping[str, Any]]"

logger = logging.getLogger("reasoning_stream.pipe")

_RETRY_STATUSES = frozenset({408, 409, 429, 529})
_CLAIMS = threading.Lock()


def claim(pipes: Iterable[Pipe], channel: Channel, *, what: str) -> None:
    """Give ``channel`` to every pipe for one run, or refuse before touching any of them."""
    pipes = tuple(pipes)
    with _CLAIMS:
        for pipe in pipes:
            if pipe._run is not None:
                raise UsageError(
                    f"pipe {pipe.name!r} is already running, alone or in a Pipeline, so {what} "
                    "cannot start; use one pipe instance per concurrent stream"
                )
        for pipe in pipes:
            pipe._run = channel
            pipe._channel = channel


def release(pipes: Iterable[Pipe], channel: Channel) -> None:
    """End a run's hold on its pipes; hooks called afterwards go to each pipe's idle channel."""
    with _CLAIMS:
        for pipe in pipes:
            if pipe._run is channel:
                pipe._run = None
                pipe._channel = pipe._idle


class Pipe:
    """One model stream routed into one callback channel.

    Reasoning deltas and answer text ride the same streaming callbacks: a reasoning segment is
    wrapped between ``ReasoningStream.OPEN_TAG`` and ``CLOSE_TAG``, and payloads are escaped so
    they can never forge a marker. ``ReasoningStream.split()`` of the collected chunks gives
    back the reasoning and the answer. Reasoning is captured on the result whether or not it is
    streamed.

    Subclasses implement :meth:`iter_events` (and optionally :meth:`aiter_events`, or
    :meth:`aiter_event_batches` for a source that gets several events at once) to turn a
    provider's stream into events; the hooks and drivers here do the rest.

    Args:
        name: the pipe's name, carried by its events as ``source`` (default: the class name).
        escape_markers: escape payload text that would parse as a tag (default on).
        on_callback_error: ``handler(error, chunk)`` for a callback that raised; the default
            logs and keeps going, a handler that raises aborts the run with status ``"error"``.
        stream_model_reasoning: send reasoning to the callbacks (default on); capture is
            unaffected.
    """

    provider: str | None = None
    """The provider API this pipe speaks; set by provider pipes, scopes opaque state."""
    model: str | None = None
    """The model id, for provider pipes."""
    endpoint: str | None = None
    """The base URL or region the pipe talks to, for provider pipes."""
    closing_timeout: float = 0.2
    """Seconds each async callback gets for a closing chunk after the run was cancelled."""
    _logger = logger
    _retry_hooks: tuple[_observers.RetryHook, ...] | None = None

    def __init__(
        self,
        *,
        name: str | None = None,
        escape_markers: bool = True,
        on_callback_error: CallbackErrorHandler | None = None,
        stream_model_reasoning: bool = True,
    ) -> None:
        self.name: str = name if name is not None else type(self).__name__
        self.escape_markers = escape_markers
        if on_callback_error is not None:
            checked_callable(on_callback_error, "on_callback_error")
        self.on_callback_error = on_callback_error
        self.last_result: PipeResult | None = None
        # Tuples, replaced on change: the channel tags entries with them without copying.
        self._callbacks: tuple[StreamingCallback, ...] = ()
        self._event_callbacks: tuple[EventCallback, ...] = ()
        # Hooks write to the channel of the run holding this pipe, else to the idle channel.
        self._idle = Channel()
        self._channel = self._idle
        self._run: Channel | None = None
        self.stream_model_reasoning = stream_model_reasoning
        self._capture = Capture()
        # The pipe whose run records what this one learns beside its events (see
        # _forward_records); None: this pipe's own run.
        self._records_to: Pipe | None = None
        self._retries = 0
        self._retry_backoff = 0.5
        self._retry_max_delay = 8.0
        self._warned_loop = False

    # ----------------------------------------------------------------------- configuration

    def set_retries(self, attempts: int, *, backoff: float = 0.5, max_delay: float = 8.0) -> Self:
        """Retry a failed request up to ``attempts`` times, but only before any callback saw a byte.

        A retry after the first chunk or event reached a subscriber would show it the same
        text twice, so once anything was delivered a failure is final. Retried failures are
        HTTP 408, 409, 429, 5xx and 529, and transport failures before the stream began
        (connection refused or reset). The wait is the provider's ``Retry-After`` when it sent
        one, else ``backoff * 2**attempt``, both capped at ``max_delay`` seconds. Off by default.
        """
        if attempts < 0 or backoff < 0 or max_delay < 0:
            raise ValueError("attempts, backoff and max_delay must not be negative")
        self._retries = attempts
        self._retry_backoff = backoff
        self._retry_max_delay = max_delay
        return self

    def _retry_delay(self, error: BaseException, attempt: int, delivered: bool) -> float | None:
        """Seconds to wait before retrying after ``error``, or ``None`` when it is final."""
        if attempt >= self._retries or delivered:
            return None
        if not isinstance(error, ProviderError) or isinstance(error, MalformedStreamError):
            return None
        status = error.status_code
        if status is None:
            if error.result is not None and (error.result.text or error.result.model_reasoning):
                return None
        elif status not in _RETRY_STATUSES and not 500 <= status < 600:
            return None
        if error.retry_after is not None:
            return min(max(error.retry_after, 0.0), self._retry_max_delay)
        return float(min(self._retry_backoff * 2**attempt, self._retry_max_delay))

    def _retrying(self, attempt: int, delay: float, error: BaseException | None) -> None:
        """Retry number ``attempt`` begins in ``delay`` s: log it, tell the run's observers.

        ``error`` is ``None`` for an exhaustion retry. The line names the error's class and
        status code, never its message or body.
        """
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s: retry %d in %.3f s after %s (status %s)",
                self.name,
                attempt,
                delay,
                "reasoning exhausted" if error is None else type(error).__name__,
                getattr(error, "status_code", None),
            )
        hooks = self._retry_hooks
        if hooks:
            _observers.retrying(hooks, attempt, delay, error)

    @property
    def stream_model_reasoning(self) -> bool:
        """Whether reasoning (and its markers) goes to the callbacks; capture is unaffected."""
        return self._stream_model_reasoning

    @stream_model_reasoning.setter
    def stream_model_reasoning(self, on: bool) -> None:
        self._stream_model_reasoning = on
        # A reasoning lane opens only behind an open gate: the next delta decides again.
        self._channel.close_lanes()

    def set_stream_model_reasoning(self, on: bool) -> Self:
        """Gate reasoning bytes (and markers) to the callbacks; capture is unaffected."""
        self.stream_model_reasoning = on
        return self

    def set_streaming_callback(self, callback: StreamingCallback) -> Self:
        """Add a callback for channel chunks (``str``); re-adding the same one is a no-op.

        Anything that cannot be called raises ``UsageError`` here.
        """
        checked_callable(callback, "a streaming callback")
        if not any(existing is callback for existing in self._callbacks):
            self._callbacks = (*self._callbacks, callback)
            self._channel.close_lanes()
        return self

    def remove_streaming_callback(self, callback: StreamingCallback) -> Self:
        """Remove a streaming callback added earlier; unknown callbacks are ignored."""
        self._callbacks = tuple(c for c in self._callbacks if c is not callback)
        self._channel.close_lanes()
        return self

    def set_event_callback(self, callback: EventCallback) -> Self:
        """Add a callback for typed events; reasoning events obey the same gate as the channel.

        Anything that cannot be called raises ``UsageError`` here.
        """
        checked_callable(callback, "an event callback")
        if not any(existing is callback for existing in self._event_callbacks):
            self._event_callbacks = (*self._event_callbacks, callback)
            self._channel.close_lanes()
        return self

    def remove_event_callback(self, callback: EventCallback) -> Self:
        """Remove an event callback added earlier; unknown callbacks are ignored."""
        self._event_callbacks = tuple(c for c in self._event_callbacks if c is not callback)
        self._channel.close_lanes()
        return self

    @property
    def last_thinking(self) -> str:
        """The reasoning of the latest run (``""`` before any run or when there was none)."""
        return self.last_result.model_reasoning if self.last_result else ""

    def __or__(self, other: Pipe | Pipeline) -> Pipeline:
        from ._pipeline import Pipeline

        return Pipeline(self, other)

    # ------------------------------------------------------------------------------- hooks

    def emit_reasoning_start(self) -> None:
        """Announce a reasoning segment. Idempotent; its marker goes out with the first chunk."""
        # Nothing to do: a segment opens with its first non-empty chunk, so a start followed
        # by an end with nothing between leaves no trace in the channel.

    def emit_reasoning_chunk(self, delta: str | None) -> None:
        """Send a reasoning delta, opening a segment if none is open; ``None``/``""`` do nothing.

        Anything but a ``str`` is misuse and raises ``UsageError``.
        """
        if type(delta) is not str:
            delta = _checked(delta, "reasoning")
        if not delta:
            return
        capture = self._capture
        current = capture.current
        opened = current is None
        if current is None:
            current = capture.open_segment()
        current.append(delta)
        channel = self._channel
        channel.reasoning(
            delta,
            opened,
            self._callbacks,
            self._event_callbacks,
            self._stream_model_reasoning,
            self.escape_markers,
            self.name,
        )
        if not channel.deferred:
            self._deliver_now(channel)

    def emit_reasoning_end(self) -> None:
        """Close the open reasoning segment. Idempotent; without an open segment it does nothing."""
        if self._close_segment():
            channel = self._channel
            if not channel.deferred:
                self._deliver_now(channel)

    def emit_text(self, delta: str | None) -> None:
        """Send answer text, closing an open reasoning segment first; ``None``/``""`` do nothing.

        Anything but a ``str`` is misuse and raises ``UsageError``.
        """
        if type(delta) is not str:
            delta = _checked(delta, "text")
        if not delta:
            return
        capture = self._capture
        if capture.current is not None:
            self._close_segment()
        if capture.first_text is None:
            capture.add_text(delta)
        else:
            capture.text.append(delta)
        channel = self._channel
        channel.text(delta, self._callbacks, self._event_callbacks, self.escape_markers, self.name)
        if not channel.deferred:
            self._deliver_now(channel)

    def emit_stream_end(self) -> None:
        """End of stream: close an open segment and release characters the escaper holds.

        A run does this itself when it ends (a Pipeline's run when the last pipe ends, so that
        escaping spans the pipes); call it when driving the hooks by hand.
        """
        self._close_segment()
        channel = self._channel
        if channel is self._idle:
            channel.end()
        if not channel.deferred:
            self._deliver_now(channel)

    def _close_segment(self) -> bool:
        if not self._capture.close_segment():
            return False
        self._channel.close_segment(self._callbacks, self._event_callbacks, self.name)
        return True

    def _deliver_now(self, channel: Channel) -> None:
        deliver_sync(channel, self.on_callback_error, in_run=channel is not self._idle)

    # ------------------------------------------------------------------------------ events

    def iter_events(self, prompt: Prompt) -> Iterator[Event]:
        """Yield the events of one model turn for ``prompt``. Provider pipes implement this.

        Raise on provider failure; the driver wraps foreign exceptions in ``ProviderError``.
        """
        raise UsageError(
            f"{type(self).__name__} does not produce events: implement iter_events() "
            "(and aiter_events() for async), or drive the emit_* hooks yourself"
        )

    async def aiter_events(self, prompt: Prompt) -> AsyncIterator[Event]:
        """Async twin of :meth:`iter_events`; by default iterates it in a worker thread."""
        iterator = self.iter_events(prompt)
        sentinel = object()

        def step() -> Any:
            return next(iterator, sentinel)

        try:
            while True:
                item = await anyio.to_thread.run_sync(step, abandon_on_cancel=False)
                if item is sentinel:
                    return
                yield item
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                await anyio.to_thread.run_sync(close)

    async def aiter_event_batches(self, prompt: Prompt) -> AsyncIterator[Sequence[Event]]:
        """The events of :meth:`aiter_events` in batches: a pipe may implement this instead.

        A source that gets several events at once (the deltas of one wire chunk, a script)
        yields them together, and ``arun()`` then pays one step of the async iterator per batch
        instead of one per event. The driver handles a batch's events one by one, delivering
        each before the next, exactly as if they had come one at a time. It reads batches when
        the class that defines this method is at least as derived as the one that defines
        :meth:`aiter_events`; by default each event is a batch of its own.
        """
        events = self.aiter_events(prompt)
        try:
            async for event in events:
                yield (event,)
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()

    def handle_event(self, event: Event) -> None:
        """Route one event through the hooks and into the capture."""
        kind = type(event)
        if kind is TextDelta:
            self.emit_text(event.text)  # type: ignore[union-attr]
        elif kind is ReasoningDelta:
            self.emit_reasoning_chunk(event.text)  # type: ignore[union-attr]
        elif isinstance(event, TextDelta):
            self.emit_text(event.text)
        elif isinstance(event, ReasoningDelta):
            self.emit_reasoning_chunk(event.text)
        elif isinstance(event, ReasoningEnd):
            self.emit_reasoning_end()
        elif isinstance(event, ReasoningStart):
            self.emit_reasoning_start()
        elif isinstance(event, OpaqueState):
            # Opaque state goes on the result only: never to a callback, never as text.
            self._capture.states.append(event.state)
        else:
            capture = self._capture
            if isinstance(event, Finish):
                capture.finish_reason = event.reason
            elif isinstance(event, ToolCall):
                capture.tool_calls.append(event)
            elif isinstance(event, UsageReport):
                capture.usage = capture.usage.merged(event.usage)
            else:
                return
            if self._event_callbacks:
                channel = self._channel
                if event.source != self.name:
                    event = replace(event, source=self.name)
                channel.event(event, self._event_callbacks)
                if not channel.deferred:
                    self._deliver_now(channel)

    def wrap_error(self, error: BaseException) -> ProviderError:
        """The ``ProviderError`` raised for a failure of the event source (original as cause)."""
        return ProviderError(
            f"{self.name}: the provider stream failed: {type(error).__name__}: {error}",
            provider=self.provider,
        )

    def set_response_id(self, response_id: str | None) -> None:
        """Record the provider's id for this response (used by persistence and recovery)."""
        if self._records_to is not None:
            self._records_to.set_response_id(response_id)
        elif response_id:
            self._capture.response_id = response_id

    def _forward_records(self, to: Pipe | None) -> None:
        """Subclass seam: while ``to`` runs this pipe's events, its run records what this
        pipe learns beside them (the response id); ``None`` ends it.

        For a wrapper pipe whose ``iter_events`` drives another pipe's (a
        :class:`~reasoning_stream.strategies.StrategyPipe`): the wrapped pipe's records then
        land on the wrapper's result. Forwarding chains through wrappers of wrappers.
        """
        self._records_to = to

    def redact_secrets(self, error: BaseException) -> None:
        """Blank out credentials a server echoed into ``error`` or its causes (provider pipes)."""

    # ----------------------------------------------------------------------------- drivers

    def run(self, prompt: Prompt) -> PipeResult:
        """Stream one turn synchronously (no event loop) and return what it captured.

        Raises ``ProviderError`` on provider failure and ``UsageError`` on misuse (such as an
        async callback); either way ``last_result`` and the error's ``.result`` hold the capture.
        Called on a thread that runs an event loop (asyncio or trio), it blocks that loop for
        the whole stream: the first such call of a pipe issues a ``RuntimeWarning`` naming
        ``arun()``.
        """
        if not self._warned_loop and warn_if_loop_running(self, "run", "arun"):
            self._warned_loop = True
        channel = Channel()
        claim((self,), channel, what="run()")
        try:
            try:
                result = self._turn(channel, prompt)
            except BaseException:
                channel.end()
                deliver_sync(channel, self.on_callback_error, in_run=True, final=True)
                raise
            channel.end()
            deliver_sync(channel, self.on_callback_error, in_run=True)
            return result
        finally:
            release((self,), channel)

    async def arun(self, prompt: Prompt) -> PipeResult:
        """Stream one turn on the running event loop (asyncio or trio, through anyio).

        Async callbacks are awaited in order on this task, so a slow subscriber slows the
        reader instead of growing a buffer. Cancellation closes the stream and the segment.
        """
        channel = Channel(deferred=True)
        claim((self,), channel, what="arun()")
        try:
            try:
                result = await self._aturn(channel, prompt)
            except BaseException:
                channel.end()
                with anyio.CancelScope(shield=True):
                    await adeliver(channel, self.on_callback_error, final=True)
                raise
            channel.end()
            await adeliver(channel, self.on_callback_error)
            return result
        finally:
            release((self,), channel)

    def _turn(self, channel: Channel, prompt: Prompt) -> PipeResult:
        """One turn inside ``channel`` (this pipe's own run, or a Pipeline's), observed."""
        return _observers.observed(self, prompt, lambda: self._attempts(channel, prompt))

    async def _aturn(self, channel: Channel, prompt: Prompt) -> PipeResult:
        """Async twin of :meth:`_turn`."""
        return await _observers.aobserved(self, prompt, lambda: self._aattempts(channel, prompt))

    def _attempts(self, channel: Channel, prompt: Prompt) -> PipeResult:
        """The first attempt and the retries it may earn."""
        self._check_sync_callbacks()
        attempt = 0
        while True:
            channel.handed = False
            try:
                return self._attempt(channel, prompt)
            except ProviderError as error:
                delay = self._retry_delay(error, attempt, channel.handed)
                if delay is None:
                    raise
                failure: ProviderError = error
            attempt += 1
            self._retrying(attempt, delay, failure)
            time.sleep(delay)

    async def _aattempts(self, channel: Channel, prompt: Prompt) -> PipeResult:
        """Async twin of :meth:`_attempts`."""
        attempt = 0
        while True:
            channel.handed = False
            try:
                return await self._aattempt(channel, prompt)
            except ProviderError as error:
                delay = self._retry_delay(error, attempt, channel.handed)
                if delay is None:
                    raise
                failure: ProviderError = error
            attempt += 1
            self._retrying(attempt, delay, failure)
            await anyio.sleep(delay)

    def _attempt(self, channel: Channel, prompt: Prompt) -> PipeResult:
        self._capture = capture = Capture()
        self.last_result = None
        on_error = self.on_callback_error
        # A retry starts from a fresh capture: no delta may take a lane opened before it.
        channel.close_lanes()
        try:
            source = self.iter_events(prompt)
            try:
                handle = self.handle_event
                text_kind, reasoning_kind, lanes = _dispatch(type(self))
                text, reasoning = self.emit_text, self.emit_reasoning_chunk
                texts, outbox = capture.text, channel.outbox
                subs = self._callbacks if lanes else ()
                evs, name = self._event_callbacks, self.name
                for event in source:
                    kind = type(event)
                    # A delta on an open lane is what the hook would do, without the detour
                    # (Channel.lane says when); any other event goes through the hooks, which
                    # deliver it themselves, and the lane's targets are looked up again.
                    if kind is text_kind:
                        delta = event.text  # type: ignore[union-attr]
                        if (
                            channel.text_lane is subs
                            and type(delta) is str
                            and delta
                            and "<" not in delta
                        ):
                            texts.append(delta)
                        else:
                            text(delta)
                            delta = None
                    elif kind is reasoning_kind:
                        delta = event.text  # type: ignore[union-attr]
                        if (
                            channel.reasoning_lane is subs
                            and type(delta) is str
                            and delta
                            and "<" not in delta
                        ):
                            capture.current.append(delta)  # type: ignore[union-attr]
                        else:
                            reasoning(delta)
                            delta = None
                    else:
                        handle(event)
                        delta = None
                    if delta is None:
                        subs = self._callbacks if lanes else ()
                        evs = self._event_callbacks
                        continue
                    # What deliver_sync() does with the bare entry the hook would have queued
                    # for the lane's one callback (then the typed delta for the one event
                    # callback, if any): a hook they call only queues.
                    if evs:
                        typed = (TextDelta if kind is text_kind else ReasoningDelta)(
                            delta, source=name
                        )
                        try:
                            _hand(channel, subs[0], delta, on_error)
                        except BaseException:
                            # The typed delta waits for the closing delivery.
                            outbox.append((typed, evs))
                            raise
                        _hand(channel, evs[0], typed, on_error)
                    else:
                        channel.delivering = True
                        try:
                            result = subs[0](delta)
                        except Exception as error:
                            report_callback_error(on_error, error, delta)
                            result = None
                        finally:
                            channel.delivering = False
                        if result is not None and inspect.isawaitable(result):
                            reject_awaitable(result, awaitable_name(result))
                    if outbox:
                        # A callback emitted: the hooks re-decided the lanes, maybe for
                        # callbacks that changed too.
                        deliver_sync(channel, on_error, in_run=True)
                        subs = self._callbacks if lanes else ()
                        evs = self._event_callbacks
            finally:
                close = getattr(source, "close", None)
                if close is not None:
                    close()
        except BaseException as error:
            raised = self._conclude(error)
            deliver_sync(channel, on_error, in_run=True, final=True)
            if raised is error or raised is None:
                raise
            raise raised from error
        self._conclude(None)
        deliver_sync(channel, on_error, in_run=True)
        assert self.last_result is not None
        return self.last_result

    async def _aattempt(self, channel: Channel, prompt: Prompt) -> PipeResult:
        self._capture = capture = Capture()
        self.last_result = None
        on_error = self.on_callback_error
        channel.close_lanes()
        try:
            batched = _reads_batches(type(self))
            source: AsyncIterator[Any] = (
                self.aiter_event_batches(prompt) if batched else self.aiter_events(prompt)
            )
            try:
                handle = self.handle_event
                text_kind, reasoning_kind, lanes = _dispatch(type(self))
                text, reasoning = self.emit_text, self.emit_reasoning_chunk
                texts, outbox = capture.text, channel.outbox
                subs, solo, solo_async, plain, evs, typed_async = _lane_targets(self, lanes)
                name = self.name
                isawaitable = inspect.isawaitable
                texts_append = texts.append
                async for item in source:
                    for event in item if batched else (item,):
                        kind = type(event)
                        # As in _attempt: a delta on an open lane skips the channel; any other
                        # event goes through the hooks, which only queue here (the channel is
                        # deferred): the driver delivers, and looks up the lane's targets again.
                        if kind is text_kind:
                            delta = event.text
                            if (
                                channel.text_lane is subs
                                and type(delta) is str
                                and delta
                                and "<" not in delta
                            ):
                                texts_append(delta)
                            else:
                                text(delta)
                                delta = None
                        elif kind is reasoning_kind:
                            delta = event.text
                            if (
                                channel.reasoning_lane is subs
                                and type(delta) is str
                                and delta
                                and "<" not in delta
                            ):
                                capture.current.append(delta)  # type: ignore[union-attr]
                            else:
                                reasoning(delta)
                                delta = None
                        else:
                            handle(event)
                            delta = None
                        if delta is None:
                            if outbox:
                                await adeliver(channel, on_error)
                            subs, solo, solo_async, plain, evs, typed_async = _lane_targets(
                                self, lanes
                            )
                            continue
                        # What deliver() and adeliver() do with the one bare entry the hook
                        # would have queued for the lane's one callback (nobody else to requeue
                        # it for), then with the typed delta for the one event callback, if
                        # any. ``plain``: an async function's call, known to need awaiting,
                        # and no event callback.
                        if plain:
                            try:
                                await solo(delta)  # type: ignore[misc]
                            except Exception as error:
                                report_callback_error(on_error, error, delta)
                        elif evs:
                            await _ahand_pair(
                                solo,
                                solo_async,
                                delta,
                                (TextDelta if kind is text_kind else ReasoningDelta)(
                                    delta, source=name
                                ),
                                evs,
                                typed_async,
                                on_error,
                                outbox,
                            )
                        else:
                            try:
                                result = solo(delta)
                                if result is not None and isawaitable(result):
                                    await result
                            except Exception as error:
                                report_callback_error(on_error, error, delta)
                        if outbox:
                            # A callback emitted: the hooks re-decided the lanes, maybe for
                            # callbacks that changed too.
                            await adeliver(channel, on_error)
                            subs, solo, solo_async, plain, evs, typed_async = _lane_targets(
                                self, lanes
                            )
            finally:
                aclose = getattr(source, "aclose", None)
                if aclose is not None:
                    with anyio.CancelScope(shield=True):
                        await aclose()
        except BaseException as error:
            raised = self._conclude(error)
            # After a cancellation the closing chunks still go out, but a stuck async
            # subscriber gets a bounded time for each, so the cancellation stays prompt.
            deadline = (
                None
                if isinstance(error, Exception)
                else anyio.current_time() + self.closing_timeout
            )
            with anyio.CancelScope(shield=True):
                await adeliver(channel, on_error, final=True, deadline=deadline)
            if raised is error or raised is None:
                raise
            raise raised from error
        self._conclude(None)
        await adeliver(channel, on_error)
        assert self.last_result is not None
        return self.last_result

    def _check_sync_callbacks(self) -> None:
        for callback in (*self._callbacks, *self._event_callbacks):
            if is_async_callable(callback):
                raise UsageError(
                    f"callback {callback!r} is async: use `await pipe.arun(...)`, "
                    "or give run() a sync callback"
                )

    def _finish_result(self, result: PipeResult) -> PipeResult:
        """Subclass seam: the result an attempt records, from what it captured.

        Called once per attempt on every exit path (``run``, ``arun``, a Pipeline's turn,
        failures included) before the result lands on ``last_result`` and on the error
        raised; a subclass may return a richer result (a ``PipeResult`` subclass). The
        default returns ``result`` as it is.
        """
        return result

    def _conclude(self, error: BaseException | None) -> BaseException | None:
        """Close what is open, record the result, and decide what the caller raises."""
        capture = self._capture
        try:
            self._close_segment()
        finally:
            raised: BaseException | None = error
            if isinstance(error, Exception) and not isinstance(error, ReasoningStreamError):
                raised = self.wrap_error(error)
            result = capture.result(
                status_for(error, capture),
                error,
                source=self.name,
                provider=self.provider,
                model=self.model,
                endpoint=self.endpoint,
            )
            result = self._finish_result(result)
            self.last_result = result
            if isinstance(raised, ReasoningStreamError):
                raised.result = result
        if error is not None:
            # The original becomes the cause only when the driver raises: redact both.
            self.redact_secrets(error)
            if raised is not None and raised is not error:
                self.redact_secrets(raised)
        return raised


def running_event_loop() -> str | None:
    """``"asyncio"`` or ``"trio"`` when this thread is running that event loop, else ``None``."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return "asyncio"
    trio = sys.modules.get("trio")  # never imported here: only a loaded trio can be running
    if trio is not None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            pass
        else:
            return "trio"
    return None


def warn_if_loop_running(owner: object, method: str, async_method: str) -> bool:
    """Warn that a sync ``method`` of ``owner`` would block the running event loop.

    Returns whether it warned. The warning points at the caller's line.
    """
    loop = running_event_loop()
    if loop is None:
        return False
    warnings.warn(
        f"{type(owner).__name__}.{method}() was called inside a running {loop} event loop: "
        f"it blocks the loop until the stream ends; `await` its {async_method}() there "
        f"instead, or call {method}() from a worker thread",
        RuntimeWarning,
        stacklevel=3,
    )
    return True


def _reads_batches(cls: type[Pipe]) -> bool:
    """Whether ``arun()`` reads :meth:`Pipe.aiter_event_batches` of pipes of class ``cls``.

    It does when the most derived definition of the two async sources is the batched one, so a
    subclass that overrides only ``aiter_events`` is read through it.
    """
    for klass in cls.__mro__:
        if klass is Pipe:
            return False
        if "aiter_event_batches" in vars(klass):
            return True
        if "aiter_events" in vars(klass):
            return False
    return False


def _dispatch(cls: type[Pipe]) -> tuple[type | None, type | None, bool]:
    """The delta kinds the drivers route without ``handle_event``, and whether lanes are allowed.

    A subclass that overrides ``handle_event`` sees every event; one that overrides a delta hook
    sees every delta of its kind through it.
    """
    if cls.handle_event is not Pipe.handle_event:
        return None, None, False
    lanes = (
        cls.emit_text is Pipe.emit_text and cls.emit_reasoning_chunk is Pipe.emit_reasoning_chunk
    )
    return TextDelta, ReasoningDelta, lanes


def _returns_coroutine(callback: Callable[[Any], object]) -> bool:
    """Whether every call of ``callback`` returns a coroutine: ``async def`` functions, methods."""
    function = callback.__func__ if type(callback) is types.MethodType else callback
    return type(function) is types.FunctionType and bool(
        function.__code__.co_flags & inspect.CO_COROUTINE
    )


def _lane_targets(
    pipe: Pipe, lanes: bool
) -> tuple[
    tuple[StreamingCallback, ...],
    Callable[[str], object],
    bool,
    bool,
    tuple[EventCallback, ...],
    bool,
]:
    """What arun's lane hands a delta to, looked up again after anything else happened.

    The audience a lane must be open for (the pipe's callbacks, or none when lanes are off),
    its first callback, whether that one is an async function, whether it is with no event
    callback beside it (the plain case), the event callbacks, and whether the first is async.
    """
    subs: tuple[StreamingCallback, ...] = pipe._callbacks if lanes else ()
    solo: Callable[[str], object] = subs[0] if subs else _no_callback
    solo_async = _returns_coroutine(solo)
    events = pipe._event_callbacks
    typed_async = bool(events) and _returns_coroutine(events[0])
    return subs, solo, solo_async, solo_async and not events, events, typed_async


def _hand(
    channel: Channel,
    callback: Callable[[Any], object],
    item: Any,
    on_error: CallbackErrorHandler | None,
) -> None:
    """A lane's item to one sync-driven callback, as deliver_sync() would hand it."""
    channel.delivering = True
    try:
        result = callback(item)
    except Exception as error:
        report_callback_error(on_error, error, item)
        result = None
    finally:
        channel.delivering = False
    if result is not None and inspect.isawaitable(result):
        reject_awaitable(result, awaitable_name(result))


async def _ahand_pair(
    solo: Callable[[str], object],
    solo_async: bool,
    delta: str,
    typed: Event,
    events: tuple[EventCallback, ...],
    typed_async: bool,
    on_error: CallbackErrorHandler | None,
    outbox: deque[Entry],
) -> None:
    """A lane's delta to its streaming callback, then its typed delta to the one event callback.

    As deliver() and adeliver() would hand them over; when the first hand-over is interrupted
    (cancelled, or a raising error handler), the typed delta waits in the outbox for the closing
    delivery.
    """
    try:
        try:
            if solo_async:
                await solo(delta)  # type: ignore[misc]
            else:
                result = solo(delta)
                if result is not None and inspect.isawaitable(result):
                    await result
        except Exception as error:
            report_callback_error(on_error, error, delta)
    except BaseException:
        outbox.append((typed, events))
        raise
    callback = events[0]
    try:
        if typed_async:
            await callback(typed)  # type: ignore[misc]
        else:
            result = callback(typed)
            if result is not None and inspect.isawaitable(result):
                await result
    except Exception as error:
        report_callback_error(on_error, error, typed)


def _no_callback(chunk: str) -> None:
    """Stands for the lane's callback while no lane can open (no callback, or lanes off)."""
    raise AssertionError("a lane opened for an audience without a callback")


def _checked(delta: object, what: str) -> str:
    """``None`` means nothing; a ``str`` subclass is text; anything else is refused."""
    if delta is None:
        return ""
    if isinstance(delta, str):
        return delta
    raise UsageError(
        f"{what} deltas must be str, got {type(delta).__name__}: {delta!r}; "
        "convert the provider's payload to text before emitting it"
    )
