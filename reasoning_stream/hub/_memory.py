"""``MemoryHub``: the embedded hub, one process, no server."""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TypeAlias

import anyio

from .._events import Event, OpaqueState, TextDelta
from .._exceptions import UsageError
from .._pipe import Status
from ._base import (
    Hub,
    InvalidEntryIdError,
    StreamExpiredError,
    StreamNotFoundError,
    _Failure,
)
from ._entry import Entry
from ._wake import Wakeup

__all__ = ["MemoryHub"]

_ID = re.compile(r"[1-9][0-9]{0,17}")


_Item: TypeAlias = tuple[str, Event | None, Status | None]
"""What the run stores per entry: chunk, event, status (set on the final entry only).
Readers build the ``Entry`` objects, so the run pays for a tuple and nothing more."""


class _Log:
    """One stream's entries. ``offset`` entries were trimmed from the front; ids count from 1."""

    __slots__ = ("final", "items", "offset")

    def __init__(self) -> None:
        self.items: list[_Item] = []
        self.offset = 0
        self.final = False

    @property
    def last(self) -> int:
        return self.offset + len(self.items)

    def entries(self, position: int) -> list[Entry]:
        """The entries after ``position`` (not trimmed, at most ``last``)."""
        start = position - self.offset
        return [
            Entry(str(number), chunk, event, status is not None, status)
            for number, (chunk, event, status) in enumerate(self.items[start:], start=position + 1)
        ]


class _MemorySink:
    __slots__ = ("_hub", "_limit", "_lock", "_log", "_stream_id", "_waiters", "saw_text")

    def __init__(self, hub: MemoryHub, stream_id: str, log: _Log) -> None:
        self._hub = hub
        self._stream_id = stream_id
        self._log = log
        self._lock = hub._lock
        self._waiters = hub._waiters
        self._limit = hub.maxlen + hub._slack
        self.saw_text = False

    def put_chunk(self, chunk: str) -> None:
        items = self._log.items
        with self._lock:
            items.append((chunk, None, None))
            if len(items) > self._limit:
                self._hub._trim(self._log)
            waiters = self._waiters.pop(self._stream_id, None) if self._waiters else None
        if waiters:
            for wake in waiters:
                wake()

    def put_event(self, event: Event) -> None:
        kind = type(event)
        if kind is OpaqueState:
            return
        if kind is TextDelta:
            self.saw_text = True
        items = self._log.items
        with self._lock:
            items.append(("", event, None))
            if len(items) > self._limit:
                self._hub._trim(self._log)
            waiters = self._waiters.pop(self._stream_id, None) if self._waiters else None
        if waiters:
            for wake in waiters:
                wake()

    def finish(self, status: Status) -> _Failure | None:
        hub = self._hub
        with self._lock:
            self._log.items.append(("", None, status))
            self._log.final = True
            if hub.ttl is not None:
                hub._expiry.append((time.monotonic() + hub.ttl, self._stream_id, self._log))
            waiters = self._waiters.pop(self._stream_id, None)
        if waiters:
            for wake in waiters:
                wake()
        return None


class MemoryHub(Hub):
    """The embedded hub: every run's channel kept in this process, readers on any thread.

    ``maxlen`` bounds the entries kept per stream (the oldest go first; a reader resuming
    before them gets :class:`StreamExpiredError`); ``ttl`` is how many seconds a finished
    stream stays readable (``None``: until the hub is dropped). Safe across threads: a sync
    ``run`` in one thread, readers on asyncio or trio loops in others.

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

    def __init__(self, *, maxlen: int = 100_000, ttl: float | None = 3600.0) -> None:
        if maxlen < 1:
            raise UsageError(f"maxlen must be at least 1, got {maxlen}")
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
                raise UsageError(
                    f"stream {stream_id!r} already exists in this hub; use a new stream_id "
                    "for every run"
                )
            log = self._logs[stream_id] = _Log()
        return _MemorySink(self, stream_id, log)

    def _trim(self, log: _Log) -> None:
        """Drop the oldest entries beyond ``maxlen`` (called with the lock held)."""
        drop = len(log.items) - self.maxlen
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
            self._purge()
            log = self._logs.get(stream_id)
            if log is None:
                if after is not None:
                    raise _expired(stream_id, after)
                return []
            return self._since(stream_id, log, position)

    async def subscribe(
        self, stream_id: str, after: str | None = None, timeout: float | None = None
    ) -> AsyncIterator[Entry]:
        """Replay the entries past ``after``, then follow live; ends after the final entry.

        A stream that does not exist yet is waited for, up to ``timeout`` seconds (``None``:
        forever), then :class:`StreamNotFoundError`. Works on asyncio and trio.
        """
        position = self._position(after)
        deadline = None if timeout is None else anyio.current_time() + timeout
        while True:
            wakeup = Wakeup()
            with self._lock:
                self._purge()
                log = self._logs.get(stream_id)
                if log is None:
                    if after is not None:
                        raise _expired(stream_id, after)
                    batch: list[Entry] = []
                else:
                    batch = self._since(stream_id, log, position)
                    if not batch and log.final:
                        return
                if not batch:
                    self._waiters.setdefault(stream_id, []).append(wakeup.set)
            if batch:
                for entry in batch:
                    yield entry
                    if entry.final:
                        return
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
                self._forget(stream_id, wakeup.set)

    def _forget(self, stream_id: str, wake: Callable[[], None]) -> None:
        with self._lock:
            waiters = self._waiters.get(stream_id)
            if waiters is not None:
                with contextlib.suppress(ValueError):
                    waiters.remove(wake)
                if not waiters:
                    del self._waiters[stream_id]


def _expired(stream_id: str, after: str) -> StreamExpiredError:
    return StreamExpiredError(
        f"stream {stream_id!r} is not in the hub, so entry {after!r} cannot be resumed: it "
        "expired (ttl) or was never published here"
    )
