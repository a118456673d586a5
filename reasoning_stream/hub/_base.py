"""What every hub shares: ``run`` / ``arun`` written once over a sink (the errors are in
``_errors``, and named here too).

A hub publishes a run through two callbacks it attaches for that run only: a streaming
callback (channel chunks) and an event callback (typed events). Both hand their item to the
run's *sink*, which never blocks and never raises: publishing to the outside world (a list
under a lock, or a Redis writer thread) cannot slow the model stream or break it. When the run
ends, whatever the way, the sink writes exactly one final entry with the run's status.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import logging
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, cast, overload

import anyio
import anyio.to_thread
from anyio.abc import TaskStatus

from .._events import Event
from .._exceptions import UsageError
from .._loops import warn_if_loop_running
from .._pipe import Pipe, PipeResult, Prompt, Status
from .._pipeline import Pipeline, PipelineResult
from .._sources import aclose_source
from .._stream import ReasoningStream
from .._unicode import is_clean
from ..conversation._tool_loop import ToolLoopResult
from ..conversation._tool_runnable import ToolLoop
from ._errors import (
    HubError,
    InvalidEntryIdError,
    PublishError,
    StreamExistsError,
    StreamExpiredError,
    StreamNotFoundError,
)
from ._stop import STOP_GRACE, THREADS, RunControl, Stopped

if TYPE_CHECKING:
    from ..conversation._envelopes import SealKeys
    from ._entry import Entry

__all__ = [
    "Hub",
    "HubError",
    "InvalidEntryIdError",
    "PublishError",
    "Runnable",
    "StreamExistsError",
    "StreamExpiredError",
    "StreamNotFoundError",
]

Runnable: TypeAlias = Pipe | Pipeline | ToolLoop
"""What a hub runs: one pipe, a pipeline (one channel for all its pipes), or a pipe's tool
loop (``ToolLoop``: every step, tool calls and results, one stream)."""
Result: TypeAlias = PipeResult | PipelineResult | ToolLoopResult
"""What a run returns: its pipe's, its pipeline's or its tool loop's result."""

logger = logging.getLogger("reasoning_stream.hub")

_CLOSING_TIMEOUT = 10.0
"""Seconds a cancelled ``arun`` may still spend writing its final entry."""


@dataclass(frozen=True, slots=True)
class _Failure:
    """Why some entries of a run were not published, and how many."""

    message: str
    unpublished: int


class _Sink(Protocol):
    """One run's writer: the two callbacks never block or raise; ``finish`` ends the stream.

    ``put_event`` drops opaque state; ``saw_text`` says whether answer text was published.
    """

    @property
    def saw_text(self) -> bool: ...

    def put_chunk(self, chunk: str) -> None: ...

    def put_event(self, event: Event) -> None: ...

    def finish(
        self, status: Status, error: str | None = None, envelope: str | None = None
    ) -> _Failure | None:
        """Write the final entry (``error``: why a failed run failed; ``envelope``: the run's
        sealed record); say what was not published, if anything."""
        ...


class _Attachment:
    """The two callbacks a run gets, bound once so that removing them finds the same objects."""

    __slots__ = ("on_chunk", "on_event", "runnable")

    on_chunk: Callable[[str], None]
    on_event: Callable[[Event], None]

    def __init__(self, runnable: Runnable, sink: _Sink, control: RunControl | None = None) -> None:
        self.runnable = runnable
        if control is None:
            self.on_chunk = sink.put_chunk
            self.on_event = sink.put_event
        else:  # a sync run: its callbacks raise at the first chunk after a stop
            self.on_chunk = control.gate(sink.put_chunk, chunks=True)
            self.on_event = control.gate(sink.put_event, chunks=False)
        runnable.set_streaming_callback(self.on_chunk)
        runnable.set_event_callback(self.on_event)

    def detach(self) -> None:
        runnable = self.runnable
        runnable.remove_streaming_callback(self.on_chunk)
        pipes = runnable.pipes if isinstance(runnable, Pipeline) else (runnable,)
        for pipe in pipes:
            pipe.remove_event_callback(self.on_event)


class Hub:
    """Base of the hubs: an append-only log of each run's channel, readable from anywhere.

    Subclasses provide the storage (``_open``, ``read``, ``subscribe``); running is shared.
    """

    maxlen: int
    ttl: float | None
    seal_keys: SealKeys | None = None
    """The keys a run's final entry is sealed with (``seal_keys=`` given), else ``None``."""
    first_entry_id: str
    """The id of every stream's first entry: a reader whose first entry has another id
    starts where retention trimmed the stream."""

    # ------------------------------------------------------------------ storage (subclasses)

    def _open(self, stream_id: str) -> _Sink:
        raise NotImplementedError

    async def _aopen(self, stream_id: str) -> _Sink:
        return self._open(stream_id)

    async def _afinish(
        self, sink: _Sink, status: Status, error: str | None = None, envelope: str | None = None
    ) -> _Failure | None:
        return sink.finish(status, error, envelope)

    # --------------------------------------------------------------------------- sealing

    def _take_keys(self, seal_keys: object) -> None:
        """Keep ``seal_keys`` (checked now: a bad key fails at construction)."""
        if seal_keys is not None:
            from ..conversation._envelopes import seal_keys_or_none

            self.seal_keys = seal_keys_or_none(seal_keys)  # type: ignore[arg-type]

    def _envelope(self, result: object) -> str | None:
        """The run's records, opaque states included, sealed for its final entry (hubs given
        ``seal_keys``; one per model step, see :mod:`._seal`): raw state never leaves this
        process, its envelope may."""
        if self.seal_keys is None:
            return None
        from ._seal import seal_result

        return seal_result(self.seal_keys, result)

    def read(self, stream_id: str, after: str | None = None) -> list[Entry]:
        """The entries of ``stream_id`` there now (past ``after``), without waiting."""
        raise NotImplementedError

    def subscribe(
        self, stream_id: str, after: str | None = None, timeout: float | None = None
    ) -> AsyncIterator[Entry]:
        """Replay the entries past ``after``, then follow live until the final entry."""
        raise NotImplementedError

    async def subscribe_batches(
        self, stream_id: str, after: str | None = None, timeout: float | None = None
    ) -> AsyncIterator[list[Entry]]:
        """As :meth:`subscribe`, the entries that are there together as one list (never
        empty): a reader that writes them somewhere (a web response) makes one write of a
        backlog, not one per entry. A hub that only has ``subscribe`` gives one per list."""
        entries = self.subscribe(stream_id, after, timeout)
        try:
            async for entry in entries:
                yield [entry]
        finally:
            await aclose_source(entries)

    def check_entry_id(self, entry_id: str) -> None:
        """Raise :class:`InvalidEntryIdError` unless ``entry_id`` has this hub's id shape."""
        raise NotImplementedError

    def check_stream_id(self, stream_id: str) -> None:
        """Raise ``UsageError`` naming the rule unless this hub can run ``stream_id``."""
        _check_stream_id(stream_id)

    # --------------------------------------------------------------------------- stopping

    def _controls(self) -> dict[str, RunControl]:
        """The runs this hub runs in this process, by stream id (made on first use)."""
        controls: dict[str, RunControl] = self.__dict__.setdefault("_running_here", {})
        return controls

    @contextlib.contextmanager
    def _running(self, stream_id: str) -> Iterator[RunControl]:
        control = self._controls()[stream_id] = RunControl()
        self._started(stream_id, control)
        try:
            yield control
        finally:
            self._controls().pop(stream_id, None)
            self._ended(stream_id)

    def _started(self, stream_id: str, control: RunControl) -> None:
        """Subclass seam: a run of this process took ``stream_id`` (RedisHub listens)."""

    def _ended(self, stream_id: str) -> None:
        """Subclass seam: the run of ``stream_id`` in this process ended."""

    def _request_stop(self, stream_id: str) -> bool:
        """Ask the run of ``stream_id`` to stop, wherever it runs; True when one was asked.

        The base stops runs of this process only (a ``MemoryHub`` has no others).
        """
        control = self._controls().get(stream_id)
        return control is not None and control.request()

    def stop(self, stream_id: str) -> bool:
        """Cancel the run of ``stream_id``, wherever it runs; True when this call stopped it.

        The run ends within a second, also while its model is silent: its final entry and
        its runner's result have a cancelled status (``"cancelled_before_answer"`` or
        ``"cancelled_after_partial_answer"``), after the closing marker when reasoning was
        open, and its readers end. False, and nothing happens, for a stream that finished,
        that is being stopped already, or that this hub does not know. Returns once the stop
        is on its way (it does not wait for the run's end).
        """
        _check_stream_id(stream_id)
        return self._request_stop(stream_id)

    async def astop(self, stream_id: str) -> bool:
        """:meth:`stop` for async code (asyncio or trio); never blocks the event loop."""
        _check_stream_id(stream_id)
        return await anyio.to_thread.run_sync(self._request_stop, stream_id)

    # --------------------------------------------------------------------------- running

    @overload
    def run(self, stream_id: str, runnable: Pipe, prompt: Prompt) -> PipeResult: ...
    @overload
    def run(self, stream_id: str, runnable: Pipeline, prompt: Prompt) -> PipelineResult: ...
    @overload
    def run(self, stream_id: str, runnable: ToolLoop, prompt: Any) -> ToolLoopResult: ...
    def run(self, stream_id: str, runnable: Runnable, prompt: Any) -> Result:
        """Run a pipe, a pipeline or a tool loop synchronously, publishing it as ``stream_id``.

        Returns the run's result (a ``PipeResult``, a ``PipelineResult`` for a pipeline, a
        ``ToolLoopResult`` for a :class:`~reasoning_stream.conversation.ToolLoop`).
        Raises :class:`StreamExistsError` (a ``UsageError``) when ``stream_id`` is taken; the
        run's own errors come through unchanged after the final entry is written; when the run
        succeeded but the hub could not publish everything, :class:`PublishError` carries the
        result as ``.result``.

        The pipe runs in a worker thread while this thread waits, so that :meth:`stop` can end
        the run even while its model is silent: a stopped run returns its result with a
        cancelled status (see :mod:`._stop` for how).
        """
        self.check_stream_id(stream_id)
        # The pipe runs in a worker thread, where it cannot see the caller's loop: warn here.
        if not self.__dict__.get("_warned_loop") and warn_if_loop_running(self, "run", "arun"):
            self._warned_loop = True
        sink = self._open(stream_id)
        before = runnable.last_result
        with self._running(stream_id) as control:
            attachment = _Attachment(runnable, sink, control)
            worker = _Worker(runnable, prompt, attachment, control)
            try:
                _wait_interruptibly(control.wake)
                if not worker.done.is_set():  # stopped: let the run end by itself first
                    worker.done.wait(STOP_GRACE)
            except BaseException:  # Ctrl-C while waiting: stop the run too, end its stream
                control.request()
                worker.done.wait(STOP_GRACE)
                with contextlib.suppress(Exception):  # the interruption is what goes on
                    _settle(worker, runnable, before, sink, control, self._envelope)
                raise
            return _settle(worker, runnable, before, sink, control, self._envelope)

    @overload
    async def arun(
        self,
        stream_id: str,
        runnable: Pipe,
        prompt: Prompt,
        *,
        task_status: TaskStatus[None] = ...,
    ) -> PipeResult: ...
    @overload
    async def arun(
        self,
        stream_id: str,
        runnable: Pipeline,
        prompt: Prompt,
        *,
        task_status: TaskStatus[None] = ...,
    ) -> PipelineResult: ...
    @overload
    async def arun(
        self,
        stream_id: str,
        runnable: ToolLoop,
        prompt: Any,
        *,
        task_status: TaskStatus[None] = ...,
    ) -> ToolLoopResult: ...
    async def arun(
        self,
        stream_id: str,
        runnable: Runnable,
        prompt: Any,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> Result:
        """Run a pipe, pipeline or tool loop on the running event loop (asyncio or trio).

        As :meth:`run`. A cancelled run still writes its final entry (with the cancelled
        status) before the cancellation goes on. ``task_status.started()`` is called once
        ``stream_id`` is claimed, so ``await task_group.start(hub.arun, stream_id, pipe,
        prompt)`` returns when the run owns its id, and raises :class:`StreamExistsError` in
        the caller when another run has it. A run ended by :meth:`stop` returns its result,
        with a cancelled status, instead of raising.
        """
        self.check_stream_id(stream_id)
        sink = await self._aopen(stream_id)
        task_status.started()
        before = runnable.last_result
        with self._running(stream_id) as control:
            attachment = _Attachment(runnable, sink)
            try:
                with anyio.CancelScope() as scope:
                    control.bind_scope(scope)
                    result: Result = await runnable.arun(prompt)
                if scope.cancelled_caught:
                    result = _stopped_result(runnable, sink, before)
            except BaseException as error:
                attachment.detach()
                status = _status_after(runnable, before, error, sink)
                reason = failure_reason(error) if status == "error" else None
                failure: _Failure | None = _Failure(
                    f"the final entry of stream {stream_id!r} was not written in time", 1
                )
                envelope = self._envelope(_result_after(runnable, before, error))
                with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSING_TIMEOUT):
                    failure = await self._afinish(sink, status, reason, envelope)
                _note_failure(error, failure)
                raise
            attachment.detach()
            envelope = self._envelope(result)
            return _conclude(await self._afinish(sink, _final(result), None, envelope), result)


class _Worker:
    """A sync run's pipe, run in a thread of its own (its context copied) while the caller
    waits; sets ``control.wake`` when it ends."""

    def __init__(
        self, runnable: Runnable, prompt: Any, attachment: _Attachment, control: RunControl
    ) -> None:
        self.result: Result | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._attachment = attachment
        self._control = control
        self._lock = threading.Lock()
        self._abandoned = False
        context = contextvars.copy_context()
        THREADS.start(lambda: context.run(self._run, runnable, prompt))

    def _run(self, runnable: Runnable, prompt: Any) -> None:
        try:
            self.result = runnable.run(prompt)
        except BaseException as error:
            self.error = error
        finally:
            self._attachment.detach()
            with self._lock:
                self.done.set()
                self._control.wake.set()

    def abandon(self) -> bool:
        """Give up on a silent run; False when it ended meanwhile (then use its outcome)."""
        with self._lock:
            if self.done.is_set():
                return True
            self._abandoned = True
            return False


def _wait_interruptibly(event: threading.Event) -> None:
    """Wait for ``event``, waking every 0.1 s: the kernel may hand Ctrl-C's SIGINT to another
    thread (the pipe's worker), where Python only flags it; a thread asleep in an untimed wait
    would see it when the run ended, not now (and stop the run, ending its stream)."""
    while not event.wait(0.1):
        pass


def _settle(
    worker: _Worker,
    runnable: Runnable,
    before: object,
    sink: _Sink,
    control: RunControl,
    seal: Callable[[object], str | None],
) -> Result:
    """Write a sync run's final entry from how its worker ended (or was left behind)."""
    if not worker.done.is_set() and not worker.abandon():
        # The model is silent: end its stream here and leave its thread behind.
        _end_silent(runnable, control)
        stopped = _stopped_result(runnable, sink)
        return _conclude(_abandon(sink, control, seal(stopped)), stopped)
    error = worker.error
    if error is not None and not isinstance(error, Stopped):
        status = _status_after(runnable, before, error, sink)
        reason = failure_reason(error) if status == "error" else None
        failure = sink.finish(status, reason, seal(_result_after(runnable, before, error)))
        _note_failure(error, failure)
        raise error
    if error is not None:
        stopped = _stopped_result(runnable, sink, before)
        return _conclude(sink.finish(_final(stopped), None, seal(stopped)), stopped)
    assert worker.result is not None
    result = worker.result
    return _conclude(sink.finish(_final(result), None, seal(result)), result)


def _end_silent(runnable: Runnable, control: RunControl) -> None:
    """End the channel of a silent stopped run from this thread: its running pipe's
    ``emit_stream_end`` releases what the escaper holds and closes the open segment, through
    the run's callbacks (into the stream) and its capture (into the result). Its own thread
    is blocked in the model's silence meanwhile; what it does after that goes nowhere."""
    control.raised = True  # the closing chunks pass the gate
    if isinstance(runnable, ToolLoop):
        runnable.stop()  # the loop left behind must not call the model again
    pipes = runnable.pipes if isinstance(runnable, Pipeline | ToolLoop) else (runnable,)
    for pipe in pipes:
        channel = pipe._channel
        if channel is not pipe._idle:
            with contextlib.suppress(Exception):  # best effort: _abandon still balances
                pipe.emit_stream_end()
                channel.end()  # what the run's own end would do: flush the escaper
                pipe._deliver_now(channel)


def _abandon(sink: _Sink, control: RunControl, envelope: str | None) -> _Failure | None:
    """End the stream of a stopped run that stays silent: close its segment, final entry."""
    if control.drop():
        sink.put_chunk(ReasoningStream.CLOSE_TAG)
    return sink.finish(_cancelled(sink), None, envelope)


def _cancelled(sink: _Sink) -> Status:
    return "cancelled_after_partial_answer" if sink.saw_text else "cancelled_before_answer"


def _stopped_result(runnable: Runnable, sink: _Sink, before: object = None) -> Result:
    """The result of a stopped run: the one it recorded, else what the hub saw of it."""
    last = runnable.last_result
    if last is not None and last is not before and last.status.startswith("cancelled"):
        return last
    if isinstance(runnable, ToolLoop):  # its completed steps, as far as they went
        return ToolLoopResult(tuple(runnable.steps), _cancelled(sink))
    capture = getattr(runnable, "_capture", None)
    if isinstance(runnable, Pipe) and capture is not None:
        # A copy, its open segment closed: the silent run's thread still holds the original.
        capture = copy.copy(capture)
        capture.segments = list(capture.segments)
        if capture.current is not None:
            capture.current = list(capture.current)
        capture.close_segment()
        return cast(
            PipeResult,
            capture.result(
                _cancelled(sink),
                None,
                source=runnable.name,
                provider=runnable.provider,
                model=runnable.model,
                endpoint=runnable.endpoint,
            ),
        )
    result = PipeResult(status=_cancelled(sink))
    return PipelineResult((result,)) if isinstance(runnable, Pipeline) else result


_STREAM_ID = re.compile(r"[^\x00-\x20\x7f/]{1,200}")


def _check_stream_id(stream_id: str) -> None:
    if (
        not isinstance(stream_id, str)
        or not _STREAM_ID.fullmatch(stream_id)
        or not is_clean(stream_id)
    ):
        raise UsageError(
            f"stream_id must be 1 to 200 printable characters without spaces, '/' or halves "
            f"of UTF-16 pairs, got {stream_id!r}"
        )


_REASON_LIMIT = 1000
"""Most characters of a failed run's reason kept in its final entry."""


def failure_reason(error: BaseException) -> str:
    """Why a run failed, for its final entry (``Entry.error``) and logs: type and message.

    Library errors never carry secrets (providers redact keys and URL passwords); as a last
    guard, a URL's ``user:password@`` is blanked here too, so no reader ever sees one.

    >>> failure_reason(ValueError("bad https://u:pw@example.com/v1 answer"))
    'ValueError: bad https://***@example.com/v1 answer'
    """
    from .._redact import redact_url_credentials

    text = redact_url_credentials(f"{type(error).__name__}: {error}")
    return text if len(text) <= _REASON_LIMIT else text[: _REASON_LIMIT - 1] + "…"


def _result_after(runnable: Runnable, before: object, error: BaseException) -> object:
    """What a run that raised left: the error's result, else the run's own, else ``None``."""
    captured = getattr(error, "result", None)
    if isinstance(captured, PipeResult):
        return captured
    last = runnable.last_result
    return last if last is not None and last is not before else None


def _status_after(runnable: Runnable, before: object, error: BaseException, sink: _Sink) -> Status:
    """The status of a run that raised: from its result when it left one, else from the error."""
    captured = getattr(error, "result", None)
    if isinstance(captured, PipeResult):
        return captured.status
    last = runnable.last_result
    if last is not None and last is not before:
        return _final(last)
    if isinstance(error, Exception):
        return "error"
    return "cancelled_after_partial_answer" if sink.saw_text else "cancelled_before_answer"


def _note_failure(error: BaseException, failure: _Failure | None) -> None:
    if failure is not None:
        error.add_note(f"reasoning_stream.hub: {failure.message}")


def _final(result: Result) -> Status:
    """The status a run's final entry holds: a tool loop's own (``"max_steps"``, ...) too."""
    return cast(Status, result.status)


def _conclude(failure: _Failure | None, result: Result) -> Result:
    if failure is None:
        return result
    error = PublishError(failure.message, unpublished=failure.unpublished)
    if isinstance(result, ToolLoopResult):
        error.result = result.result
    else:
        error.result = result if isinstance(result, PipeResult) else result.results[-1]
    error.pipeline_result = result if isinstance(result, PipelineResult) else None  # type: ignore[attr-defined]
    raise error
