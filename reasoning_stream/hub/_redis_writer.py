"""The writing side of a ``RedisHub``: each run's sink, and the one writer thread per hub.

A run's callbacks only append to a queue (:class:`RedisSink`), so neither Redis nor any reader
can slow the model stream. One thread per hub (:class:`RedisWriter`) writes every pending entry
of every running stream in one round trip: one run of the append script for all of them on one
Redis server (``XADD ... MAXLEN ~ maxlen`` per entry), or one per stream, pipelined per node, on
a cluster; and it renews the running streams' leases on its heartbeat.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeAlias

from .._events import Event, OpaqueState, TextDelta
from .._pipe import Status
from .._redis_client import is_cluster, run_scripts
from .._stream import ReasoningStream
from ._base import _Failure
from ._redis_codec import (
    KEYS_LOST,
    LEASE_LOST,
    STREAM_LOST,
    HubSettings,
    entry_fields,
    hold_seconds,
    ttl_seconds,
)

__all__ = ["FINISH_TIMEOUT", "Pending", "RedisSink", "RedisWriter", "Writes"]

_BATCH = 2000
"""Most entries one pipelined round trip carries."""
FINISH_TIMEOUT = 10.0
"""Seconds a run's end waits for Redis to confirm its writes (and ``close`` for the thread)."""
_OPEN, _CLOSE = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG

Pending: TypeAlias = "tuple[RedisSink, int, str, Event | None, Status | None]"
"""One entry waiting for the writer: sink, number, chunk, event, status (final only)."""


class RedisSink:
    """One run's writer: numbers its entries and queues them for the hub's writer thread.

    ``writer_put(sink)`` hands back the queue's ``put``; given the sink (not ``None``: a run
    that could not claim its stream writes nothing), the writer renews the sink's lease until
    its final entry.
    """

    __slots__ = (
        "_done",
        "_put",
        "closing",
        "closing_sent",
        "entries",
        "envelope",
        "error",
        "failure",
        "key",
        "keys",
        "owner",
        "saw_text",
        "seq",
        "stream_id",
        "written",
    )

    def __init__(
        self,
        stream_id: str,
        keys: list[str],
        failure: str | None,
        writer_put: Callable[[RedisSink | None], Callable[[Pending], None]],
        owner: str = "",
    ) -> None:
        self.stream_id = stream_id
        self.key = keys[0]
        self.keys = keys
        self.owner = owner
        """The claim's token: every write checks it is still ours (fencing)."""
        self.closing = ""
        """The marker that would balance the channel if the run stopped now (writer thread)."""
        self.closing_sent = ""
        """The marker the stream's claim holds (the claim starts with none)."""
        self.seq = 0
        self.error: str | None = None
        """Why the run failed, for its final entry (set before that entry is queued)."""
        self.envelope: str | None = None
        """The run's sealed record, for its final entry (set before that entry is queued)."""
        self.saw_text = False
        self.failure = failure
        """Why publishing stopped (Redis unreachable at the start or failing mid-run)."""
        self.written = 0
        """Chunks and events Redis confirmed (counted by the writer thread only)."""
        self.entries = 0
        """Entries numbered so far (writer thread only): ids are ``0-1``, ``0-2``, ..."""
        self._done = threading.Event()
        self._put = writer_put(self if failure is None else None)

    def put_chunk(self, chunk: str) -> None:
        self.seq += 1
        if self.failure is None:
            self._put((self, self.seq, chunk, None, None))

    def put_event(self, event: Event) -> None:
        kind = type(event)
        if kind is OpaqueState:
            return
        if kind is TextDelta:
            self.saw_text = True
        self.seq += 1
        if self.failure is None:
            self._put((self, self.seq, "", event, None))

    def finish(
        self, status: Status, error: str | None = None, envelope: str | None = None
    ) -> _Failure | None:
        self.seq += 1
        self.error = error
        self.envelope = envelope
        if self.failure is None:
            self._put((self, self.seq, "", None, status))
            if not self._done.wait(FINISH_TIMEOUT):
                self.fail(f"Redis did not confirm the writes within {FINISH_TIMEOUT} s")
        if self.failure is None:
            return None
        unpublished = self.seq - self.written
        return _Failure(
            f"{self.failure}: {unpublished} of the {self.seq} chunks, events and final "
            f"status of stream {self.stream_id!r} were not published (the final entry among "
            "them), so its readers will not see its end",
            unpublished,
        )

    def fail(self, reason: str) -> None:
        """Called by the writer: a batch with entries of ours did not reach Redis."""
        if self.failure is None:
            self.failure = reason
        self._done.set()

    def lost(self, lease: float) -> None:
        """Called by the writer: a reader ended the stream because our lease had lapsed."""
        self.fail(
            f"the lease on stream {self.stream_id!r} lapsed (no heartbeat reached Redis for "
            f"{lease:g} s: the process hung or lost Redis) and a reader ended the stream as "
            "abandoned"
        )

    def confirm(self, count: int, final: bool) -> None:
        """Called by the writer: Redis took ``count`` more of our chunks and events."""
        self.written += count
        if final:
            self._done.set()

    def encode(self, items: list[Pending], renew: bool) -> list[str]:
        """This stream's part of the append script's arguments for ``items`` (writer thread
        only); ``renew``: renew the lease (also done on the stream's first write).

        What to do after the entries (end the run, renew, nothing), owner, closing marker
        (when it changed), the number of the batch's first entry and the entry count, then
        each entry as its field count and fields (the script numbers the entries on from the
        first). A chunk directly followed by an event shares one entry with it (an
        entry may carry both, in the order the callbacks saw them): about half the entries for
        a delta stream.
        """
        first = self.entries
        args: list[str] = []
        pending: str | None = None  # a chunk-only entry that an event may still join
        final = False
        for _, _, chunk, event, status in items:
            if pending is not None:
                if event is not None and not chunk and status is None:
                    self._flush(args, entry_fields(pending, event, None))
                    pending = None
                    continue
                self._flush(args, ["c", pending])
                pending = None
            final = final or status is not None
            if chunk == _OPEN:
                self.closing = _CLOSE
            elif chunk == _CLOSE:
                self.closing = ""
            if chunk and event is None and status is None:
                pending = chunk
            else:
                final_entry = status is not None
                self._flush(
                    args,
                    entry_fields(
                        chunk,
                        event,
                        status,
                        self.error if final_entry else None,
                        self.envelope if final_entry else None,
                    ),
                )
        if pending is not None:
            self._flush(args, ["c", pending])
        after = "f" if final else "r" if renew or not first else ""
        closing = "k"
        if self.closing != self.closing_sent:
            closing, self.closing_sent = "s" + self.closing, self.closing
        return [after, self.owner, closing, str(first + 1), str(self.entries - first), *args]

    def _flush(self, args: list[str], fields: list[str]) -> None:
        self.entries += 1
        args.append(str(len(fields)))
        args += fields


class Writes:
    """What a hub's writer does, whoever runs it (its thread, or a task of an asyncio loop):
    the running streams whose leases it renews, the queue, and a batch turned into script
    calls and back into each stream's outcome."""

    def __init__(self, hub: HubSettings, cluster: bool) -> None:
        self._hub = hub
        self._cluster = cluster
        self._heartbeat = hub.lease / 3
        self._running: set[RedisSink] = set()
        """Sinks whose lease this writer renews (added by ``run``, removed at their end)."""
        self._running_lock = threading.Lock()
        self._queue: deque[Pending] = deque()
        self._signalled = False

    def hold(self, sink: RedisSink) -> None:
        """Renew ``sink``'s lease from now until its final entry (or a failure)."""
        with self._running_lock:
            self._running.add(sink)
        self._wake()

    def release(self, sink: RedisSink) -> None:
        with self._running_lock:
            self._running.discard(sink)

    def put(self, item: Pending) -> None:
        self._queue.append(item)
        if not self._signalled:
            self._signalled = True
            self._wake()

    def _wake(self) -> None:
        """Wake the writer (any thread)."""
        raise NotImplementedError

    def _take(self) -> list[Pending]:
        queue = self._queue
        return [queue.popleft() for _ in range(min(len(queue), _BATCH))]

    def _woke(self, next_beat: float) -> tuple[bool, float]:
        """The writer woke: whether a heartbeat is due (the running streams renew their
        leases), and when the next one is."""
        self._signalled = False
        now = time.monotonic()
        if self._running and now >= next_beat:
            return True, now + self._heartbeat
        return False, next_beat

    def _plan(
        self, batch: list[Pending], beat: bool
    ) -> tuple[list[list[tuple[RedisSink, list[Pending]]]], list[tuple[list[str], list[str]]]]:
        """The streams of ``batch`` (every running one on a heartbeat), grouped per script
        call, and the calls: one for all on one server, one per stream on a cluster (a
        script's keys must share a slot)."""
        hub = self._hub
        per_sink: dict[RedisSink, list[Pending]] = {}
        if beat:  # every running stream renews its lease, with entries or without
            with self._running_lock:
                per_sink = {sink: [] for sink in self._running if sink.failure is None}
        for item in batch:
            if item[0].failure is None:
                per_sink.setdefault(item[0], []).append(item)
        if not per_sink:
            return [], []
        head = [
            str(hub.maxlen),
            ttl_seconds(hub.ttl),
            str(max(1, round(hub.lease * 1000))),
            hold_seconds(hub.lease, hub.ttl),
        ]
        sinks = list(per_sink.items())
        groups = [sinks] if not self._cluster else [[item] for item in sinks]
        calls = []
        for group in groups:
            keys: list[str] = []
            args = list(head)
            for sink, items in group:
                keys += sink.keys
                args += sink.encode(items, beat)
            calls.append((keys, args))
        return groups, calls

    def _settle_all(
        self, groups: list[list[tuple[RedisSink, list[Pending]]]], results: list[Any]
    ) -> None:
        for group, result in zip(groups, results, strict=True):
            outcomes = [result] * len(group) if isinstance(result, Exception) else result
            for (sink, items), outcome in zip(group, outcomes, strict=True):
                self._settle(sink, items, outcome)

    def _failed(self, batch: list[Pending], error: Exception) -> None:
        # A bug here must not end the writer: every later run of every stream would publish
        # nothing. The streams of this batch fail, loudly.
        for sink in {item[0] for item in batch}:
            sink.fail(f"the hub could not write ({type(error).__name__}: {error})")
            self.release(sink)

    def _settle(self, sink: RedisSink, items: list[Pending], outcome: object) -> None:
        """Tell ``sink`` what became of its part of a write (1: written)."""
        hub = self._hub
        if outcome != 1:
            if KEYS_LOST in str(outcome):
                sink.fail(STREAM_LOST.format(stream_id=sink.stream_id, url=hub.url_for_messages))
            elif LEASE_LOST in str(outcome):
                sink.lost(hub.lease)
            else:
                reason = (
                    f"{type(outcome).__name__}: {outcome}"
                    if isinstance(outcome, Exception)
                    else outcome
                )
                sink.fail(f"Redis at {hub.url_for_messages} failed mid-run ({reason})")
            self.release(sink)
            return
        final = bool(items) and items[-1][4] is not None
        sink.confirm(len(items), final)
        if final:
            self.release(sink)


class RedisWriter(Writes):
    """The hub's writer thread, for runs on threads and on trio (asyncio runs have a task of
    their loop, ``_redis_loop_writer``).

    Callbacks only append to a deque and, once per batch, set an event: the run pays for
    neither encoding nor network. Entries that come while a write is in flight go together
    in the next one; ``delay`` (seconds, default none) lingers after waking so that one round
    trip carries more. ``append`` is the append script registered on ``client``.
    """

    def __init__(self, hub: HubSettings, client: Any, append: Any, delay: float) -> None:
        super().__init__(hub, is_cluster(client))
        self._client = client
        self._append = append
        self._delay = delay
        self._closed = False
        self._signal = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name="reasoning-stream-redis-writer", daemon=True
        )
        self._thread.start()

    def _wake(self) -> None:
        self._signal.set()

    def close(self) -> None:
        self._closed = True
        self._signal.set()
        self._thread.join(FINISH_TIMEOUT)

    def _loop(self) -> None:
        queue = self._queue
        next_beat = time.monotonic() + self._heartbeat
        while True:
            wait = max(0.0, next_beat - time.monotonic()) if self._running else None
            self._signal.wait(wait)
            self._signal.clear()
            if self._delay and not self._closed and queue:
                time.sleep(self._delay)
            beat, next_beat = self._woke(next_beat)
            while queue or beat:
                batch = self._take()
                try:
                    groups, calls = self._plan(batch, beat)
                    if calls:
                        self._settle_all(groups, run_scripts(self._client, self._append, calls))
                except Exception as error:
                    self._failed(batch, error)
                beat = False
            if self._closed:
                return
