"""``MemoryHub``: the embedded hub, one process, no server."""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TypeAlias

import anyio

from .._events import Event, OpaqueState, TextDelta
from .._exceptions import UsageError
from .._pipe import Status
from ._base import (
    Hub,
    InvalidEntryIdError,
    StreamExistsError,
    StreamExpiredError,
    StreamNotFoundError,
    _Failure,
)
from ._entry import Entry, entries_of
from ._wake import Wakeup

__all__ = ["MemoryHub"]

_ID = re.compile(r"[1-9][0-9]{0,17}")


class _Final:
    """The final entry's item: how the run ended (and why, when it failed)."""

    __slots__ = ("envelope", "error", "status")

    def __init__(self, status: Status, error: str | None, envelope: str | None) -> None:
        self.status = status
        self.error = error
        self.envelope = envelope


_Item: TypeAlias = "str | Event | _Final"
"""What the run stores per entry: the chunk itself, the event itself, or the final status.
Readers build the ``Entry`` objects (and their ids), so the run pays for one list append."""


class _Log:
    """One stream's entries. ``offset`` entries were trimmed from the front; ids count from 1.

    The run appends without the hub's lock (a list append is atomic), then looks at
    ``waiting``; a reader registers in ``waiting`` under the lock *before* it looks for new
    entries. So either the run sees the reader and wakes it, or the reader sees the entry: no
    wake-up is lost, and a run with nobody waiting takes no lock per entry. Trimming and
    waking take the lock. (This leans on CPython running one thread's bytecode at a time: the
    append and the look happen in that order for every thread; tests/hub/test_memory.py
    checks it with the threads switching every microsecond.)
    """

    __slots__ = ("final", "items", "offset", "text_trimmed", "waiting")

    def __init__(self) -> None:
        self.items: list[_Item] = []
        self.offset = 0
        self.final = False
        self.waiting: list[Callable[[], None]] | None = None
        """Wake-ups of the readers waiting for the next entry (changed under the lock)."""
        self.text_trimmed = False
        """Trimming dropped answer text (for the status of a run that raised)."""

    @property
    def last(self) -> int:
        return self.offset + len(self.items)

    def entries(self, position: int) -> list[Entry]:
        """The entries after ``position`` (not trimmed, at most ``last``)."""
        entries: list[Entry] = []
        add = entries.append
        number = position
        for item in self.items[position - self.offset :]:
            number += 1
            if type(item) is str:
                add(Entry(str(number), item))
            elif type(item) is _Final:
                add(
                    Entry(
                        str(number),
                        final=True,
                        status=item.status,
                        error=item.error,
                        envelope=item.envelope,
                    )
                )
            else:
                add(Entry(str(number), "", item))  # type: ignore[arg-type]
        return entries


class _MemorySink:
    """One run's writer: ``put_chunk`` and ``put_event`` are closures over the log's list,
    so a chunk costs one call, one append and two checks (a reader waits; trim due)."""

    __slots__ = ("_hub", "_log", "_stream_id", "put_chunk", "put_event")

    def __init__(self, hub: MemoryHub, stream_id: str, log: _Log) -> None:
        self._hub = hub
        self._stream_id = stream_id
        self._log = log
        items = log.items
        append = items.append
        limit = hub.maxlen + hub._slack
        settle = self._settle
        opaque = OpaqueState

        def put_chunk(chunk: str) -> None:
            append(chunk)
            if log.waiting is not None or len(items) > limit:
                settle()

        def put_event(event: Event) -> None:
            if type(event) is opaque:
                return  # never stored, so never published
            append(event)
            if log.waiting is not None or len(items) > limit:
                settle()

        self.put_chunk = put_chunk
        self.put_event = put_event

    @property
    def saw_text(self) -> bool:
        """Whether answer text was published (looked up only for a run that raised)."""
        log = self._log
        with self._hub._lock:
            return log.text_trimmed or any(isinstance(item, TextDelta) for item in log.items)

    def _settle(self) -> None:
        """Trim what retention drops and wake the readers waiting; under the lock."""
        hub, log = self._hub, self._log
        with hub._lock:
            if len(log.items) > hub.maxlen + hub._slack:
                hub._trim(log)
            waiting, log.waiting = log.waiting, None
        _wake_all(waiting)

    def finish(
        self, status: Status, error: str | None = None, envelope: str | None = None
    ) -> _Failure | None:
        hub, log = self._hub, self._log
        with hub._lock:
            log.items.append(_Final(status, error, envelope))
            log.final = True
            if hub.ttl is not None:
                hub._expiry.append((time.monotonic() + hub.ttl, self._stream_id, log))
            waiting, log.waiting = log.waiting, None
        _wake_all(waiting)
        return None


class MemoryHub(Hub):
    """The embedded hub: every run's channel kept in this process, readers on any thread.

    ``maxlen`` bounds the entries kept per stream (the oldest go first; a reader resuming
    before them gets :class:`StreamExpiredError`); ``ttl`` is how many seconds a finished
    stream stays readable (``None``: until the hub is dropped). Safe across threads: a sync
    ``run`` in one thread, readers on asyncio or trio loops in others. With ``seal_keys``
    (``[key, *older]``, see ``reasoning_stream.web``'s sealed history) each run's final entry
    carries its opaque reasoning state sealed (``Entry.envelope``); raw state is never kept.

    >>> from reasoning_stream import ReasoningDelta, TextDelta
    >>> from reasoning_stream.testing import ScriptedPipe
    >>> hub = MemoryHub()
    >>> hub.run("s1", ScriptedPipe([ReasoningDelta("hmm"), TextDelta("hi")]), "go").text
    'hi'
    >>> "".join(entry.chunk for entry in hub.read("s1"))
    '<think>hmm</think>hi'
    >>> hub.read("s1")[-1].status
    'completed'
    """

    first_entry_id = "1"

    def __init__(
        self,
        *,
        maxlen: int = 100_000,
        ttl: float | None = 3600.0,
        seal_keys: Sequence[bytes | str] | None = None,
    ) -> None:
        if maxlen < 1:
            raise UsageError(f"maxlen must be at least 1, got {maxlen}")
        self._take_keys(seal_keys)
        self.maxlen = maxlen
        self.ttl = ttl
        self._lock = threading.Lock()
        self._logs: dict[str, _Log] = {}
        self._waiters: dict[str, list[Callable[[], None]]] = {}
        self._expiry: deque[tuple[float, str, _Log]] = deque()
        # Trim in steps, so appending stays O(1) amortised (at most 1/8 more is kept).
        self._slack = max(16, maxlen // 8)

    # ------------------------------------------------------------------------- writing

    def _open(self, stream_id: str) -> _MemorySink:
        with self._lock:
            self._purge()
            if stream_id in self._logs:
                raise StreamExistsError(
                    f"stream {stream_id!r} already exists in this hub; use a new stream_id "
                    "for every run"
                )
            log = self._logs[stream_id] = _Log()
            waiting = self._waiters.pop(stream_id, None)
        _wake_all(waiting)  # readers that waited for the stream to appear
        return _MemorySink(self, stream_id, log)

    def _trim(self, log: _Log) -> None:
        """Drop the oldest entries beyond ``maxlen`` (called with the lock held)."""
        drop = len(log.items) - self.maxlen
        if not log.text_trimmed:
            log.text_trimmed = any(isinstance(item, TextDelta) for item in log.items[:drop])
        del log.items[:drop]
        log.offset += drop

    def _purge(self) -> None:
        expiry = self._expiry
        now = time.monotonic()
        while expiry and expiry[0][0] <= now:
            _, stream_id, log = expiry.popleft()
            if self._logs.get(stream_id) is log:
                del self._logs[stream_id]

    # ------------------------------------------------------------------------- reading

    def check_entry_id(self, entry_id: str) -> None:
        """Raise :class:`InvalidEntryIdError` unless ``entry_id`` looks like this hub's ids."""
        if not isinstance(entry_id, str) or not _ID.fullmatch(entry_id):
            raise InvalidEntryIdError(
                f"{entry_id!r} is not an entry id of a MemoryHub (a positive integer as text)"
            )

    def _since(self, stream_id: str, log: _Log, position: int) -> list[Entry]:
        """Entries after ``position``; called with the lock held."""
        if position > log.last:
            raise InvalidEntryIdError(
                f"stream {stream_id!r} has no entry {str(position)!r} (its last is "
                f"{str(log.last)!r}); pass an id this stream gave you"
            )
        if position < log.offset:
            if position == 0:  # from the start: what retention kept
                return log.entries(log.offset)
            raise StreamExpiredError(
                f"entry {str(position)!r} of stream {stream_id!r} was trimmed (maxlen="
                f"{self.maxlen} keeps the latest entries only); read it from the start or "
                "raise maxlen"
            )
        return log.entries(position)

    def _current(self, stream_id: str, after: str | None) -> _Log | None:
        """``stream_id``'s live log (``None``: not there), expired ones purged first; raises
        :class:`StreamExpiredError` when a reader past ``after`` finds it gone. Under the lock."""
        self._purge()
        log = self._logs.get(stream_id)
        if log is None and after is not None:
            raise _expired(stream_id, after)
        return log

    def _position(self, after: str | None) -> int:
        if after is None:
            return 0
        self.check_entry_id(after)
        return int(after)

    def read(self, stream_id: str, after: str | None = None) -> list[Entry]:
        """The entries of ``stream_id`` there now, past ``after``; ``[]`` for an unknown stream.

        Raises :class:`StreamExpiredError` when ``after`` was trimmed or its stream expired.
        """
        position = self._position(after)
        with self._lock:
            log = self._current(stream_id, after)
            return [] if log is None else self._since(stream_id, log, position)

    def subscribe(
        self, stream_id: str, after: str | None = None, timeout: float | None = None
    ) -> AsyncIterator[Entry]:
        """Replay the entries past ``after``, then follow live; ends after the final entry.

        A stream that does not exist yet is waited for, up to ``timeout`` seconds (``None``:
        forever), then :class:`StreamNotFoundError`. Works on asyncio and trio.
        """
        return entries_of(self.subscribe_batches(stream_id, after, timeout))

    async def subscribe_batches(
        self, stream_id: str, after: str | None = None, timeout: float | None = None
    ) -> AsyncIterator[list[Entry]]:
        """As :meth:`subscribe`, the entries that are there together as one list."""
        position = self._position(after)
        deadline = None if timeout is None else anyio.current_time() + timeout
        while True:
            with self._lock:
                log = self._current(stream_id, after)
                if log is None:
                    batch: list[Entry] = []
                else:
                    batch = self._since(stream_id, log, position)
                    if not batch and log.final:
                        return
                if not batch:
                    wakeup = Wakeup()
                    if log is None:  # _open wakes it, under this lock
                        self._waiters.setdefault(stream_id, []).append(wakeup.set)
                    else:
                        # Registered first, looked again second: the run appends without
                        # the lock and then looks for waiters (see _Log).
                        if log.waiting is None:
                            log.waiting = []
                        log.waiting.append(wakeup.set)
                        if log.last > position:
                            log.waiting.remove(wakeup.set)
                            continue
            if batch:
                for index, entry in enumerate(batch):
                    if entry.final:
                        yield batch[: index + 1]
                        return
                yield batch
                position = int(batch[-1].id)
                continue
            try:
                if log is None and deadline is not None:
                    remaining = deadline - anyio.current_time()
                    if remaining <= 0 or not await wakeup.wait(remaining):
                        raise StreamNotFoundError(
                            f"no stream {stream_id!r} appeared in this hub within {timeout} s"
                        )
                else:
                    await wakeup.wait()
            finally:
                self._forget(stream_id, log, wakeup.set)

    def _forget(self, stream_id: str, log: _Log | None, wake: Callable[[], None]) -> None:
        """Unregister a reader's wake-up that was not used (it left, or timed out)."""
        with self._lock:
            waiting = self._waiters.get(stream_id) if log is None else log.waiting
            if waiting is None:
                return
            with contextlib.suppress(ValueError):
                waiting.remove(wake)
            if not waiting:
                if log is None:
                    del self._waiters[stream_id]
                else:
                    log.waiting = None


def _wake_all(waiting: list[Callable[[], None]] | None) -> None:
    """Wake the readers taken off a waiting list (called after the lock is released)."""
    if waiting:
        for wake in waiting:
            wake()


def _expired(stream_id: str, after: str) -> StreamExpiredError:
    return StreamExpiredError(
        f"stream {stream_id!r} is not in the hub, so entry {after!r} cannot be resumed: it "
        "expired (ttl) or was never published here"
    )
