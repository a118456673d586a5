"""``Pipe``: callbacks, the hooks, and the two short run drivers.

Provider pipes only translate their SDK's chunks into events (``iter_events`` and
``aiter_events``). The hooks hand each delta to the capture (:mod:`._capture`) and to the
channel (:mod:`._channel`), which alone decides markers, escaping and the reasoning gate. The
drivers' loops, the delivery that empties the outbox and its one shortcut (the *lane*) are
:mod:`._delivery`; retries are :mod:`._retry`. A run owns its channel for its lifetime: a pipe
refuses a second run, concurrent or re-entrant, before anything is touched.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Self, TypeAlias

import anyio

from . import _arguments, _observers
from ._callbacks import (
    CallbackErrorHandler,
    EventCallback,
    StreamingCallback,
    check_sync_callbacks,
    checked_callable,
    with_callback,
    without_callback,
)
from ._capture import Capture, PipeResult, Status, Timings, status_for
from ._channel import Channel, claim, release
from ._delivery import adeliver, apump, deliver_sync, dispatch, pump, reads_batches
from ._events import (
    Event,
    Finish,
    OpaqueState,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningHidden,
    ReasoningStart,
    TextDelta,
    ToolCall,
    ToolResult,
    UsageReport,
)
from ._exceptions import ProviderError, ReasoningStreamError, UsageError
from ._loops import warn_if_loop_running
from ._retry import RetryPolicy, announce, aretried, retried
from ._sources import aclose_source, atimed, batches_of_one, close_source, threaded, timed
from ._unicode import REPLACEMENT, checked_delta, is_clean, mend_delta, whole

__all__ = [
    "Pipe",
    "PipeResult",
    "Prompt",
    "Status",
    "Timings",
]

Prompt: TypeAlias = "str | Sequence[Mapping[str, Any]]"

logger = logging.getLogger("reasoning_stream.pipe")


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
    _chunk_intervals: list[float] | None = None
    _chain: ClassVar[Callable[..., Any]]
    """What ``pipe | other`` builds: the Pipeline class, set by the module that defines it."""

    def __init__(
        self,
        *,
        name: str | None = None,
        escape_markers: bool = True,
        on_callback_error: CallbackErrorHandler | None = None,
        stream_model_reasoning: bool = True,
    ) -> None:
        name = _arguments.name(name)
        self.name: str = name if name is not None else type(self).__name__
        # The name this pipe got by default (None: given); a Pipeline numbers such names.
        self._default_name: str | None = None if name is not None else self.name
        self.escape_markers = _arguments.flag("escape_markers", escape_markers)
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
        self._retry = RetryPolicy()
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
        self._retry = RetryPolicy.checked(attempts, backoff, max_delay)
        return self

    def _request_sent(self) -> None:
        """Start this attempt's timings now: a pipe calls it as it sends its request.

        What came before (importing an SDK, building a client) is then not counted in
        ``result.timings``. Without the call, timings run from the start of the attempt.
        """
        self._capture.restart_clock()

    def _retrying(self, attempt: int, delay: float, error: BaseException | None) -> None:
        """Retry number ``attempt`` begins in ``delay`` s (``error``: ``None`` for exhaustion)."""
        announce(self.name, self._retry_hooks, attempt, delay, error)

    @property
    def stream_model_reasoning(self) -> bool:
        """Whether reasoning (and its markers) goes to the callbacks; capture is unaffected."""
        return self._stream_model_reasoning

    @stream_model_reasoning.setter
    def stream_model_reasoning(self, on: bool) -> None:
        self._stream_model_reasoning = _arguments.flag("stream_model_reasoning", on)
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
        self._callbacks = with_callback(self._callbacks, callback, "a streaming callback")
        self._channel.close_lanes()
        return self

    def remove_streaming_callback(self, callback: StreamingCallback) -> Self:
        """Remove a streaming callback added earlier; unknown callbacks are ignored."""
        self._callbacks = without_callback(self._callbacks, callback)
        self._channel.close_lanes()
        return self

    def set_event_callback(self, callback: EventCallback) -> Self:
        """Add a callback for typed events; reasoning events obey the same gate as the channel.

        Anything that cannot be called raises ``UsageError`` here.
        """
        self._event_callbacks = with_callback(self._event_callbacks, callback, "an event callback")
        self._channel.close_lanes()
        return self

    def remove_event_callback(self, callback: EventCallback) -> Self:
        """Remove an event callback added earlier; unknown callbacks are ignored."""
        self._event_callbacks = without_callback(self._event_callbacks, callback)
        self._channel.close_lanes()
        return self

    @property
    def last_thinking(self) -> str:
        """The reasoning of the latest run (``""`` before any run or when there was none)."""
        return self.last_result.model_reasoning if self.last_result else ""

    def __or__(self, other: Any) -> Any:
        """``self | other``: a :class:`~reasoning_stream.Pipeline` of this pipe and ``other``.

        Typed loosely: the pipeline sits above the pipe and hands its class in (``_chain``).
        """
        return self._chain(self, other)

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
            delta = checked_delta(delta, "reasoning")
        if not delta:
            return
        capture = self._capture
        if capture.held or not (delta.isascii() or is_clean(delta)):
            delta = mend_delta(capture, delta, True, self._release_held, self._channel.close_lanes)
            if not delta:
                return
        current = capture.current
        if current is None:
            current = capture.open_segment()
        current.append(delta)
        channel = self._channel
        channel.reasoning(
            delta,
            self._callbacks,
            self._event_callbacks,
            self._stream_model_reasoning,
            self.escape_markers,
            self.name,
        )
        if capture.held:
            channel.close_lanes()
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
            delta = checked_delta(delta, "text")
        if not delta:
            return
        capture = self._capture
        if capture.held or not (delta.isascii() or is_clean(delta)):
            delta = mend_delta(capture, delta, False, self._release_held, self._channel.close_lanes)
            if not delta:
                return
        if capture.current is not None:
            self._close_segment()
        if capture.first_text is None:
            capture.add_text(delta)
        else:
            capture.text.append(delta)
        channel = self._channel
        channel.text(delta, self._callbacks, self._event_callbacks, self.escape_markers, self.name)
        if capture.held:
            channel.close_lanes()
        if not channel.deferred:
            self._deliver_now(channel)

    def emit_stream_end(self) -> None:
        """End of stream: close an open segment and release characters the escaper holds.

        A run does this itself when it ends (a Pipeline's run when the last pipe ends, so that
        escaping spans the pipes); call it when driving the hooks by hand.
        """
        self._release_held()
        self._close_segment()
        channel = self._channel
        if channel is self._idle:
            channel.end()
        if not channel.deferred:
            self._deliver_now(channel)

    def _release_held(self) -> None:
        """A held high surrogate whose low half never came: it goes out as U+FFFD."""
        capture = self._capture
        if capture.held:
            capture.held = ""
            if capture.held_reasoning:
                self.emit_reasoning_chunk(REPLACEMENT)
            else:
                self.emit_text(REPLACEMENT)

    def _close_segment(self) -> bool:
        if self._capture.held_reasoning:
            self._release_held()
        if not self._capture.close_segment():
            return False
        self._channel.close_segment(self._callbacks, self._event_callbacks, self.name)
        return True

    def _deliver_now(self, channel: Channel) -> None:
        deliver_sync(channel, self.on_callback_error, in_run=channel is not self._idle)

    # ------------------------------------------------------------------------------ events

    def iter_events(self, prompt: Prompt) -> Iterator[Event]:
        """Yield the events of one model turn for ``prompt`` (provider pipes implement this);
        raise on provider failure: the driver wraps foreign exceptions in ``ProviderError``."""
        raise UsageError(
            f"{type(self).__name__} does not produce events: implement iter_events() "
            "(and aiter_events() for async), or drive the emit_* hooks yourself"
        )

    async def aiter_events(self, prompt: Prompt) -> AsyncIterator[Event]:
        """Async twin of :meth:`iter_events`; by default iterates it in a worker thread."""
        async for event in threaded(self.iter_events(prompt)):
            yield event

    async def aiter_event_batches(self, prompt: Prompt) -> AsyncIterator[Sequence[Event]]:
        """The events of :meth:`aiter_events` in batches: a pipe may implement this instead.

        A source that gets several events at once (the deltas of one wire chunk, a script)
        yields them together, and ``arun()`` then pays one step of the async iterator per batch
        instead of one per event. The driver handles a batch's events one by one, delivering
        each before the next, exactly as if they had come one at a time. It reads batches when
        the class that defines this method is at least as derived as the one that defines
        :meth:`aiter_events`; by default each event is a batch of its own.
        """
        async for batch in batches_of_one(self.aiter_events(prompt)):
            yield batch

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
                if not (is_clean(event.id) and is_clean(event.name) and is_clean(event.arguments)):
                    event = replace(event, id=whole(event.id), name=whole(event.name),
                                    arguments=whole(event.arguments))  # fmt: skip
                capture.tool_calls.append(event)
            elif isinstance(event, UsageReport):
                capture.usage = capture.usage.merged(event.usage)
            elif not isinstance(event, ToolResult | ReasoningHidden):
                # A tool result comes after the turn it answers; hidden reasoning goes to event
                # callbacks only (it has no text, no markers).
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

    def set_response_details(self, details: Mapping[str, str]) -> None:
        """Record what the response said of itself: ``response_model``, ``service_tier``,
        ``system_fingerprint`` (the keys ``PipeResult`` has fields for; others are ignored)."""
        if self._records_to is not None:
            self._records_to.set_response_details(details)
        else:
            self._capture.details.update(details)

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
        """The first attempt and the retries it may earn (:mod:`._retry`)."""
        return retried(self._retry, channel, lambda: self._attempt(channel, prompt), self._retrying)

    async def _aattempts(self, channel: Channel, prompt: Prompt) -> PipeResult:
        """Async twin of :meth:`_attempts`."""
        return await aretried(
            self._retry, channel, lambda: self._aattempt(channel, prompt), self._retrying
        )

    def _attempt(self, channel: Channel, prompt: Prompt) -> PipeResult:
        """One request: the source's events through :func:`~._delivery.pump`, then the result."""
        self._capture = Capture()
        self.last_result = None
        on_error = self.on_callback_error
        # A retry starts from a fresh capture: no delta may take a lane opened before it.
        channel.close_lanes()
        try:
            # Inside the attempt, so a refused async callback still leaves this run's result
            # (status "error") on last_result and on the UsageError, as every ending does.
            check_sync_callbacks((*self._callbacks, *self._event_callbacks))
            source = timed(self.iter_events(prompt), self._chunk_intervals)
            try:
                pump(self, channel, source, dispatch(type(self), Pipe))
            finally:
                close_source(source)
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
        """Async twin of :meth:`_attempt`, reading batches when the class provides them."""
        self._capture = Capture()
        self.last_result = None
        on_error = self.on_callback_error
        channel.close_lanes()
        try:
            batched = reads_batches(type(self), Pipe)
            source: AsyncIterator[Any] = atimed(
                self.aiter_event_batches(prompt) if batched else self.aiter_events(prompt),
                self._chunk_intervals,
                batched,
            )
            try:
                await apump(self, channel, source, dispatch(type(self), Pipe), batched=batched)
            finally:
                await aclose_source(source)
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
            self._release_held()
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
