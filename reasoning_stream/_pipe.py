"""``Pipe``: the hooks, the single callback channel, capture, and the two run drivers.

Provider pipes only translate their SDK's chunks into events (``iter_events`` and
``aiter_events``). Everything that makes the channel trustworthy happens here, once: the hooks
decide markers, escaping and the reasoning gate; the drivers own the stream's lifetime and make
sure every exit path closes an open segment and leaves a truthful ``last_result``.
"""

from __future__ import annotations

import inspect
import time
import types
import warnings
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Self, TypeAlias

import anyio

from . import _observers
from ._callbacks import (
    CallbackErrorHandler,
    EventCallback,
    StreamingCallback,
    is_async_callable,
    reject_awaitable,
    report_callback_error,
)
from ._events import (
    Event,
    Finish,
    OpaqueState,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ReasoningState,
    TextDelta,
    ToolCall,
    Usage,
    UsageReport,
)
from ._exceptions import (
    CallbackError,
    MalformedStreamError,
    ProviderError,
    ReasoningStreamError,
    UsageError,
)
from ._stream import ReasoningStream
from ._tags import Escaper

if TYPE_CHECKING:
    from ._pipeline import Pipeline

__all__ = ["Pipe", "PipeResult", "Prompt", "Status", "Timings"]

Status: TypeAlias = Literal[
    "completed", "length", "cancelled_before_answer", "cancelled_after_partial_answer", "error"
]
Prompt: TypeAlias = "str | Sequence[Mapping[str, Any]]"

_Coroutine = types.CoroutineType
_RETRY_STATUSES = frozenset({408, 409, 429, 529})
_OPEN = ReasoningStream.OPEN_TAG
_CLOSE = ReasoningStream.CLOSE_TAG
_clock = time.perf_counter


@dataclass(frozen=True, slots=True)
class Timings:
    """Seconds from a monotonic clock, measured from the start of the run."""

    time_to_first_reasoning: float | None = None
    time_to_first_text: float | None = None
    reasoning_duration: float = 0.0
    """Each segment's first chunk to its close, summed."""
    total: float = 0.0


@dataclass(frozen=True, slots=True)
class PipeResult:
    """Everything one run captured, whatever the streaming flag and however the run ended."""

    text: str = ""
    model_reasoning: str = ""
    """The non-empty reasoning segments joined with ``"\\n"``, untrimmed."""
    reasoning_segments: tuple[str, ...] = ()
    reasoning_state: tuple[ReasoningState, ...] = ()
    """Opaque provider state (signatures, encrypted and redacted reasoning), in stream order."""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    timings: Timings = field(default_factory=Timings)
    status: Status = "completed"
    finish_reason: str | None = None
    source: str | None = None
    """The name of the pipe that produced it."""
    provider: str | None = None
    model: str | None = None
    endpoint: str | None = None
    response_id: str | None = None
    error: BaseException | None = field(default=None, repr=False, compare=False)

    @property
    def message(self) -> dict[str, Any]:
        """The assistant message for the next request's history.

        ``"thinking"`` is inert metadata: the provider pipes never send it back as content.
        """
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message() for call in self.tool_calls]
        if self.model_reasoning:
            message["thinking"] = self.model_reasoning
        return message


class _Channel:
    """Marker state and the escaper of one channel. A Pipeline shares one between its pipes."""

    __slots__ = ("escaper", "open")

    def __init__(self) -> None:
        self.escaper = Escaper()
        self.open = False


class _Capture:
    """What a run has seen so far, independent of what reached the callbacks."""

    __slots__ = (
        "current",
        "finish_reason",
        "first_reasoning",
        "first_text",
        "reasoning_duration",
        "response_id",
        "segment_started",
        "segments",
        "started",
        "states",
        "text",
        "tool_calls",
        "usage",
    )

    def __init__(self) -> None:
        self.started = _clock()
        self.text: list[str] = []
        self.segments: list[str] = []
        self.current: list[str] | None = None
        self.states: list[ReasoningState] = []
        self.tool_calls: list[ToolCall] = []
        self.usage = Usage()
        self.finish_reason: str | None = None
        self.response_id: str | None = None
        self.first_reasoning: float | None = None
        self.first_text: float | None = None
        self.segment_started = 0.0
        self.reasoning_duration = 0.0


class Pipe:
    """One model stream routed into one callback channel.

    Reasoning deltas and answer text ride the same streaming callbacks: a reasoning segment is
    wrapped between ``ReasoningStream.OPEN_TAG`` and ``CLOSE_TAG``, and payloads are escaped so
    they can never forge a marker. ``ReasoningStream.split()`` of the collected chunks gives
    back the reasoning and the answer. Reasoning is captured on the result whether or not it is
    streamed.

    Subclasses implement :meth:`iter_events` (and optionally :meth:`aiter_events`) to turn a
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
        self.on_callback_error = on_callback_error
        self.stream_model_reasoning = stream_model_reasoning
        self.last_result: PipeResult | None = None
        # Tuples, replaced on change: delivery iterates them without copying.
        self._callbacks: tuple[StreamingCallback, ...] = ()
        self._event_callbacks: tuple[EventCallback, ...] = ()
        self._outbox: list[str] = []
        self._event_outbox: list[Event] = []
        self._deferred = False
        self._running = False
        self._channel = _Channel()
        self._owns_channel = True
        self._capture = _Capture()
        self._segment_open = False
        self._delivered = False
        # A chunk whose delivery was interrupted, and the callbacks that have not had it yet.
        self._partial: tuple[str, tuple[StreamingCallback, ...]] | None = None
        self._retries = 0
        self._retry_backoff = 0.5
        self._retry_max_delay = 8.0

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

    def _retry_delay(self, error: BaseException, attempt: int) -> float | None:
        """Seconds to wait before retrying after ``error``, or ``None`` when it is final."""
        if attempt >= self._retries or self._delivered:
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

    def set_stream_model_reasoning(self, on: bool) -> Self:
        """Gate reasoning bytes (and markers) to the callbacks; capture is unaffected."""
        self.stream_model_reasoning = on
        return self

    def set_streaming_callback(self, callback: StreamingCallback) -> Self:
        """Add a callback for channel chunks (``str``); re-adding the same one is a no-op."""
        if not any(existing is callback for existing in self._callbacks):
            self._callbacks = (*self._callbacks, callback)
        return self

    def remove_streaming_callback(self, callback: StreamingCallback) -> Self:
        """Remove a streaming callback added earlier; unknown callbacks are ignored."""
        self._callbacks = tuple(c for c in self._callbacks if c is not callback)
        return self

    def set_event_callback(self, callback: EventCallback) -> Self:
        """Add a callback for typed events; reasoning events obey the same gate as the channel."""
        if not any(existing is callback for existing in self._event_callbacks):
            self._event_callbacks = (*self._event_callbacks, callback)
        return self

    def remove_event_callback(self, callback: EventCallback) -> Self:
        """Remove an event callback added earlier; unknown callbacks are ignored."""
        self._event_callbacks = tuple(c for c in self._event_callbacks if c is not callback)
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
        """Send a reasoning delta, opening a segment if none is open; ``None``/``""`` do nothing."""
        if not delta:
            return
        capture = self._capture
        if not self._segment_open:
            self._segment_open = True
            now = _clock()
            capture.current = []
            capture.segment_started = now
            if capture.first_reasoning is None:
                capture.first_reasoning = now - capture.started
            if self._event_callbacks and self.stream_model_reasoning:
                self._event_outbox.append(ReasoningStart(source=self.name))
        assert capture.current is not None
        capture.current.append(delta)
        if self.stream_model_reasoning:
            if not self._channel.open:
                self._write_marker(_OPEN)
                self._channel.open = True
            self._write(delta)
            if self._event_callbacks:
                self._event_outbox.append(ReasoningDelta(delta, source=self.name))
        if not self._deferred:
            self._deliver()

    def emit_reasoning_end(self) -> None:
        """Close the open reasoning segment. Idempotent; without an open segment it does nothing."""
        if self._segment_open:
            self._close_segment()
            if not self._deferred:
                self._deliver()

    def emit_text(self, delta: str | None) -> None:
        """Send answer text, closing an open reasoning segment first; ``None``/``""`` do nothing."""
        if not delta:
            return
        if self._segment_open:
            self._close_segment()
        capture = self._capture
        if capture.first_text is None:
            capture.first_text = _clock() - capture.started
        capture.text.append(delta)
        self._write(delta)
        if self._event_callbacks:
            self._event_outbox.append(TextDelta(delta, source=self.name))
        if not self._deferred:
            self._deliver()

    def emit_stream_end(self) -> None:
        """End of stream: close an open segment and release characters the escaper holds.

        A run calls this itself; call it when driving the hooks by hand.
        """
        if self._segment_open:
            self._close_segment()
        self._release_held()
        if not self._deferred:
            self._deliver()

    def _close_segment(self) -> None:
        capture = self._capture
        self._segment_open = False
        capture.reasoning_duration += _clock() - capture.segment_started
        capture.segments.append("".join(capture.current or ()))
        capture.current = None
        if self._channel.open:
            self._write_marker(_CLOSE)
            self._channel.open = False
        if self._event_callbacks and self.stream_model_reasoning:
            self._event_outbox.append(ReasoningEnd(source=self.name))

    def _write(self, payload: str) -> None:
        if self.escape_markers:
            payload = self._channel.escaper.feed(payload)
            if not payload:
                return
        else:
            held = self._channel.escaper.flush()
            if held:
                self._outbox.append(held)
        self._outbox.append(payload)

    def _write_marker(self, marker: str) -> None:
        held = self._channel.escaper.flush()
        if held:
            self._outbox.append(held)
        self._outbox.append(marker)

    def _release_held(self) -> None:
        held = self._channel.escaper.flush()
        if held:
            self._outbox.append(held)

    # ---------------------------------------------------------------------------- delivery

    def _next_delivery(self) -> tuple[str, tuple[StreamingCallback, ...]] | None:
        """The next chunk and who still needs it: an interrupted delivery first, in order."""
        partial = self._partial
        if partial is not None:
            self._partial = None
            return partial
        if self._outbox:
            return self._outbox.pop(0), self._callbacks
        return None

    def _interrupted(
        self, chunk: str, targets: tuple[StreamingCallback, ...], position: int
    ) -> None:
        """Remember who has not had ``chunk`` yet, so the closing delivery still gives it."""
        rest = targets[position + 1 :]
        self._partial = (chunk, rest) if rest else None

    def _deliver(self, *, final: bool = False) -> None:
        """Hand queued chunks and events to sync callbacks, in order."""
        if self._callbacks and (self._outbox or self._partial):
            self._delivered = True
        while (item := self._next_delivery()) is not None:
            chunk, targets = item
            for position, callback in enumerate(targets):
                try:
                    result = callback(chunk)
                except Exception as error:
                    try:
                        report_callback_error(self.on_callback_error, error, chunk, final=final)
                    except CallbackError:
                        self._interrupted(chunk, targets, position)
                        raise
                    continue
                except BaseException:
                    self._interrupted(chunk, targets, position)
                    raise
                if result is not None and inspect.isawaitable(result):
                    if self._running:
                        self._interrupted(chunk, targets, position)
                    self._not_awaited(result, callback)
        self._deliver_events_sync(final)

    def _not_awaited(self, result: object, callback: object) -> None:
        """A sync delivery met an async callback: an error in run(), a warning outside a run.

        Outside a run (hooks driven by hand) there is no event loop to await it on; the sync
        callbacks still get every chunk, and the async one is told how to get them.
        """
        if self._running:
            reject_awaitable(result, callback)
        close = getattr(result, "close", None)
        if callable(close):
            close()
        warnings.warn(
            f"async callback {callback!r} skipped: hooks called outside a run deliver to sync "
            "callbacks only; use `await pipe.arun(...)`",
            RuntimeWarning,
            stacklevel=4,
        )

    def _deliver_events_sync(self, final: bool) -> None:
        events = self._event_outbox
        if not events:
            return
        self._event_outbox = []
        event_callbacks = self._event_callbacks
        if event_callbacks:
            self._delivered = True
        for event in events:
            for event_callback in event_callbacks:
                try:
                    result = event_callback(event)
                except Exception as error:
                    report_callback_error(self.on_callback_error, error, event, final=final)
                    continue
                if result is not None and inspect.isawaitable(result):
                    self._not_awaited(result, event_callback)

    async def _adeliver(self, *, final: bool = False, deadline: float | None = None) -> None:
        """Hand queued chunks and events to callbacks, awaiting async ones on this task.

        ``deadline`` bounds each async callback of a closing delivery after a cancellation, so a
        stuck subscriber cannot hold the cancellation up while the others get their closing
        chunks.
        """
        chunks = self._outbox
        callbacks = self._callbacks
        if (
            len(chunks) == 1
            and len(callbacks) == 1
            and self._partial is None
            and not self._event_outbox
            and deadline is None
        ):
            # The common case, one delta for one subscriber, without the general loop.
            self._outbox = []
            self._delivered = True
            chunk = chunks[0]
            try:
                result = callbacks[0](chunk)
                if result is not None and (
                    type(result) is _Coroutine or inspect.isawaitable(result)
                ):
                    await result
            except Exception as error:
                report_callback_error(self.on_callback_error, error, chunk, final=final)
            return
        if callbacks and (chunks or self._partial):
            self._delivered = True
        while (item := self._next_delivery()) is not None:
            chunk, targets = item
            for position, callback in enumerate(targets):
                try:
                    result = callback(chunk)
                    if result is not None and (
                        type(result) is _Coroutine or inspect.isawaitable(result)
                    ):
                        if deadline is None:
                            await result
                        else:
                            with anyio.CancelScope(deadline=deadline):
                                await result
                except Exception as error:
                    try:
                        report_callback_error(self.on_callback_error, error, chunk, final=final)
                    except CallbackError:
                        self._interrupted(chunk, targets, position)
                        raise
                except BaseException:
                    # Cancelled while this callback awaited: the others still get the chunk.
                    self._interrupted(chunk, targets, position)
                    raise
        events = self._event_outbox
        if events:
            self._event_outbox = []
            event_callbacks = self._event_callbacks
            if event_callbacks:
                self._delivered = True
            for event in events:
                for event_callback in event_callbacks:
                    try:
                        result = event_callback(event)
                        if result is not None and inspect.isawaitable(result):
                            if deadline is None:
                                await result
                            else:
                                with anyio.CancelScope(deadline=deadline):
                                    await result
                    except Exception as error:
                        report_callback_error(self.on_callback_error, error, event, final=final)

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
        elif isinstance(event, Finish):
            self._capture.finish_reason = event.reason
            self._queue_event(event)
        elif isinstance(event, ToolCall):
            self._capture.tool_calls.append(event)
            self._queue_event(event)
        elif isinstance(event, UsageReport):
            self._capture.usage = self._capture.usage.merged(event.usage)
            self._queue_event(event)
        elif isinstance(event, OpaqueState):
            # Opaque state goes on the result only: never to a callback, never as text.
            self._capture.states.append(event.state)

    def _queue_event(self, event: Event) -> None:
        if self._event_callbacks:
            self._event_outbox.append(
                event if event.source == self.name else _with_source(event, self.name)
            )
            if not self._deferred:
                self._deliver()

    def wrap_error(self, error: BaseException) -> ProviderError:
        """The ``ProviderError`` raised for a failure of the event source (original as cause)."""
        return ProviderError(
            f"{self.name}: the provider stream failed: {type(error).__name__}: {error}",
            provider=self.provider,
        )

    def set_response_id(self, response_id: str | None) -> None:
        """Record the provider's id for this response (used by persistence and recovery)."""
        if response_id:
            self._capture.response_id = response_id

    # ----------------------------------------------------------------------------- drivers

    def run(self, prompt: Prompt) -> PipeResult:
        """Stream one turn synchronously (no event loop) and return what it captured.

        Raises ``ProviderError`` on provider failure and ``UsageError`` on misuse (such as an
        async callback); either way ``last_result`` and the error's ``.result`` hold the capture.
        """
        scopes = _observers.start(self, prompt)
        previous = self.last_result
        try:
            result = self._run_with_retries(prompt)
        except BaseException as error:
            current = self.last_result
            _observers.finish(scopes, None if current is previous else current, error)
            raise
        _observers.finish(scopes, result, None)
        return result

    def _run_with_retries(self, prompt: Prompt) -> PipeResult:
        self._check_sync_callbacks()
        self._delivered = False
        attempt = 0
        while True:
            try:
                return self._run_once(prompt)
            except ProviderError as error:
                delay = self._retry_delay(error, attempt)
                if delay is None:
                    raise
            attempt += 1
            time.sleep(delay)

    def _run_once(self, prompt: Prompt) -> PipeResult:
        self._begin(deferred=False)
        try:
            source = self.iter_events(prompt)
            try:
                for event in source:
                    self.handle_event(event)
            finally:
                close = getattr(source, "close", None)
                if close is not None:
                    close()
        except BaseException as error:
            raised = self._conclude(error)
            try:
                self._deliver(final=True)
            finally:
                self._running = False
            if raised is error or raised is None:
                raise
            raise raised from error
        self._conclude(None)
        try:
            self._deliver()
        finally:
            self._running = False
        assert self.last_result is not None
        return self.last_result

    async def arun(self, prompt: Prompt) -> PipeResult:
        """Stream one turn on the running event loop (asyncio or trio, through anyio).

        Async callbacks are awaited in order on this task, so a slow subscriber slows the
        reader instead of growing a buffer. Cancellation closes the stream and the segment.
        """
        scopes = _observers.start(self, prompt)
        previous = self.last_result
        try:
            result = await self._arun_with_retries(prompt)
        except BaseException as error:
            current = self.last_result
            _observers.finish(scopes, None if current is previous else current, error)
            raise
        _observers.finish(scopes, result, None)
        return result

    async def _arun_with_retries(self, prompt: Prompt) -> PipeResult:
        self._delivered = False
        attempt = 0
        while True:
            try:
                return await self._arun_once(prompt)
            except ProviderError as error:
                delay = self._retry_delay(error, attempt)
                if delay is None:
                    raise
            attempt += 1
            await anyio.sleep(delay)

    async def _arun_once(self, prompt: Prompt) -> PipeResult:
        self._begin(deferred=True)
        try:
            source = self.aiter_events(prompt)
            handle = self.handle_event
            try:
                async for event in source:
                    handle(event)
                    if self._outbox or self._event_outbox:
                        await self._adeliver()
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
            try:
                with anyio.CancelScope(shield=True):
                    await self._adeliver(final=True, deadline=deadline)
            finally:
                self._running = False
                self._deferred = False
            if raised is error or raised is None:
                raise
            raise raised from error
        self._conclude(None)
        try:
            await self._adeliver()
        finally:
            self._running = False
            self._deferred = False
        assert self.last_result is not None
        return self.last_result

    def _check_sync_callbacks(self) -> None:
        for callback in (*self._callbacks, *self._event_callbacks):
            if is_async_callable(callback):
                raise UsageError(
                    f"callback {callback!r} is async: use `await pipe.arun(...)`, "
                    "or give run() a sync callback"
                )

    def _begin(self, *, deferred: bool) -> None:
        if self._running:
            raise UsageError(
                f"pipe {self.name!r} is already running; use one pipe per concurrent stream"
            )
        self._running = True
        self._deferred = deferred
        self._capture = _Capture()
        self._segment_open = False
        self._outbox = []
        self._event_outbox = []
        self._partial = None
        if self._owns_channel:
            self._channel = _Channel()
        self.last_result = None

    def _conclude(self, error: BaseException | None) -> BaseException | None:
        """Close what is open, record the result, and decide what the caller raises."""
        if self._segment_open:
            self._close_segment()
        if self._owns_channel:
            self._release_held()
        capture = self._capture
        raised: BaseException | None = error
        status: Status
        if error is None:
            status = "length" if capture.finish_reason == "length" else "completed"
        elif isinstance(error, ReasoningStreamError):
            status = "error"
        elif isinstance(error, Exception):
            status = "error"
            raised = self.wrap_error(error)
        else:
            # Cancellation (anyio's cancel exception, KeyboardInterrupt, SystemExit).
            status = "cancelled_after_partial_answer" if capture.text else "cancelled_before_answer"
        result = self._make_result(status, error)
        self.last_result = result
        if isinstance(raised, ReasoningStreamError):
            raised.result = result
        if error is not None:
            # The original becomes the cause only when the driver raises: redact both.
            self.redact_secrets(error)
            if raised is not None and raised is not error:
                self.redact_secrets(raised)
        return raised

    def redact_secrets(self, error: BaseException) -> None:
        """Blank out credentials a server echoed into ``error`` or its causes (provider pipes)."""

    def _make_result(self, status: Status, error: BaseException | None) -> PipeResult:
        capture = self._capture
        segments = tuple(capture.segments)
        return PipeResult(
            text="".join(capture.text),
            model_reasoning="\n".join(s for s in segments if s),
            reasoning_segments=segments,
            reasoning_state=tuple(capture.states),
            tool_calls=tuple(capture.tool_calls),
            usage=capture.usage,
            timings=Timings(
                time_to_first_reasoning=capture.first_reasoning,
                time_to_first_text=capture.first_text,
                reasoning_duration=capture.reasoning_duration,
                total=_clock() - capture.started,
            ),
            status=status,
            finish_reason=capture.finish_reason,
            source=self.name,
            provider=self.provider,
            model=self.model,
            endpoint=self.endpoint,
            response_id=capture.response_id,
            error=error,
        )


def _with_source(event: Event, source: str) -> Event:
    from dataclasses import replace

    return replace(event, source=source)
