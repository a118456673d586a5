"""Stopping a run from anywhere: the switch each running run holds, reachable from any thread.

A hub keeps one :class:`RunControl` per run it is running in this process. ``hub.stop`` (or,
on a ``RedisHub``, a stop request that another process published) calls ``request``:

- an async run (``arun``) has its cancel scope cancelled on its own event loop (asyncio or
  trio), so a model that is silent (awaiting the network, or a ``ScriptedPipe`` sleeping) is
  cancelled at once, exactly as a cancelled task would be;
- a sync run (``run``) cannot be interrupted inside a blocking call, so the hub runs the pipe in
  a worker thread and the calling thread waits: the stop raises in the run's own streaming
  callback at the next chunk (a flag checked between events, so the pipe closes its segment and
  ends with a cancelled status by itself), and wakes the calling thread, which waits
  :data:`STOP_GRACE` seconds for that and otherwise ends the run's channel itself (what the
  escaper holds, the closing marker if reasoning was open, then the final entry) and
  returns; the silent model's thread is left to finish its blocking call, and whatever it
  produces after that is dropped.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel

from .._stream import ReasoningStream

__all__ = ["STOP_GRACE", "RunControl", "Stopped"]

STOP_GRACE = 0.3
"""Seconds a stopped sync run gets to end by itself before the hub ends its stream for it."""
_OPEN, _CLOSE = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG


class Stopped(BaseException):
    """Raised inside a stopped sync run, at its next chunk (a cancellation, not an error)."""


class RunControl:
    """One running run's stop switch, and (sync runs) the gate its callbacks pass through."""

    __slots__ = ("_cancel", "_lock", "dropping", "open", "raised", "requested", "wake")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requested = False
        """A stop was asked for (set once)."""
        self.raised = False
        """The sync run's callback raised :class:`Stopped` (once)."""
        self.dropping = False
        """The hub ended the stream for a silent sync run: later chunks go nowhere."""
        self.open = False
        """A reasoning segment is open in what the sink got (sync runs)."""
        self.wake = threading.Event()
        """Set by a stop and by the end of a sync run's worker thread."""
        self._cancel: Callable[[], None] | None = None

    def bind_scope(self, scope: anyio.CancelScope) -> None:
        """Cancel ``scope`` on the current event loop when a stop comes (from any thread)."""
        native: Any = anyio.lowlevel.current_token().native_token
        schedule = getattr(native, "call_soon_threadsafe", None) or native.run_sync_soon
        with self._lock:
            self._cancel = lambda: schedule(scope.cancel)
            requested = self.requested
        if requested:
            scope.cancel()

    def request(self) -> bool:
        """Stop the run; False when a stop was already asked for. Never blocks, never raises."""
        with self._lock:
            if self.requested:
                return False
            self.requested = True
            cancel = self._cancel
        self.wake.set()
        if cancel is not None:
            with contextlib.suppress(Exception):  # the loop has gone: the run has ended
                cancel()
        return True

    def gate(self, put: Callable[[Any], None], *, chunks: bool) -> Callable[[Any], None]:
        """``put`` behind the stop flag: after a stop, the next item goes out and then
        :class:`Stopped` is raised, once (the pipe counts an item whose callback raised as
        delivered); the pipe's closing chunks pass. ``chunks``: ``put`` takes channel chunks,
        whose markers say whether a segment is open."""
        late = self._late

        if not chunks:

            def gated_event(item: Any) -> None:
                if self.requested:
                    late(put, item)
                else:
                    put(item)

            return gated_event

        def gated_chunk(item: Any) -> None:
            if self.requested:
                late(put, item)
                return
            if item == _OPEN:
                self.open = True
            elif item == _CLOSE:
                self.open = False
            put(item)

        return gated_chunk

    def _late(self, put: Callable[[Any], None], item: Any) -> None:
        with self._lock:
            if self.dropping:
                return
            if item == _OPEN:
                self.open = True
            elif item == _CLOSE:
                self.open = False
            put(item)  # delivered: a callback that raises has had its item
            if not self.raised:
                self.raised = True
                raise Stopped

    def drop(self) -> bool:
        """From now on the run's chunks go nowhere; True when a segment was left open."""
        with self._lock:
            self.dropping = True
            return self.open


class Threads:
    """Worker threads for sync runs, reused: a run costs a hand-off, not a thread start.

    A thread that finished its job waits :data:`_IDLE` seconds for the next one, then ends.
    A job left running (a silent model that was stopped) keeps its thread; others are started
    as needed, so a job never waits for a thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Slot] = []

    def start(self, job: Callable[[], None]) -> None:
        with self._lock:
            slot = self._idle.pop() if self._idle else None
        if slot is None:
            slot = _Slot(self)
        slot.give(job)

    def _park(self, slot: _Slot) -> None:
        with self._lock:
            self._idle.append(slot)

    def _leave(self, slot: _Slot) -> bool:
        """A slot that waited long enough leaves, unless a job was just handed to it."""
        with self._lock:
            if slot in self._idle:
                self._idle.remove(slot)
                return True
            return False


_IDLE = 10.0
"""Seconds an idle worker thread waits for the next sync run before it ends."""


class _Slot:
    __slots__ = ("_job", "_owner", "_ready")

    def __init__(self, owner: Threads) -> None:
        self._owner = owner
        self._ready = threading.Event()
        self._job: Callable[[], None] | None = None
        threading.Thread(target=self._loop, name="reasoning-stream-hub-run", daemon=True).start()

    def give(self, job: Callable[[], None]) -> None:
        self._job = job
        self._ready.set()

    def _loop(self) -> None:
        while True:
            if not self._ready.wait(_IDLE) and self._owner._leave(self):
                return
            self._ready.wait()  # a job was handed over as the slot was about to leave
            self._ready.clear()
            job, self._job = self._job, None
            if job is not None:
                job()
            self._owner._park(self)


THREADS = Threads()
"""The worker threads of every hub's sync runs."""
