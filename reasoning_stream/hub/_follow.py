"""One reader thread per ``RedisHub`` follows every subscribed stream with one ``XREAD BLOCK``.

Subscribers on any event loop (asyncio or trio, any thread) register a position per stream;
the thread reads all followed streams in one blocking call on its own connection, appends the
new entries to each subscriber's buffer and wakes it on its own loop. Three hundred readers in
a process cost one ``XREAD`` per batch of writes, not three hundred. A subscriber that joins
interrupts the blocking read (``CLIENT UNBLOCK``) so it is followed at once; the thread never
waits on a subscriber, so a slow or crashed reader costs nobody anything.

Each subscriber's buffer is bounded (:data:`SUBSCRIBER_BUFFER` entries): one that falls
further behind (a stalled browser whose response cannot be written) is dropped, buffer and
all, and re-joins from its position when it asks for more: it reads the rest from Redis, so
memory per reader stays bounded and nothing is lost.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ._entry import Entry
from ._redis_codec import seq
from ._wake import Wakeup, wake_all

__all__ = ["BLOCK_MS", "COUNT", "Follower", "Follows", "Subscription"]

BLOCK_MS = 1000
"""Longest single ``XREAD BLOCK`` wait."""
COUNT = 1000
"""Most entries of one stream one read takes."""
SUBSCRIBER_BUFFER = 2 * COUNT
"""Most entries the reader thread holds for one subscriber; past that it drops them and the
subscriber re-reads from Redis (``Subscription.lagged``)."""
_POLL = 0.005
"""Seconds between reads of the followed streams on a Redis Cluster when nothing came."""


class Subscription:
    """One subscriber's view: entries past ``position``, buffered until its task takes them.

    At most ``limit`` entries wait in the buffer: a delivery that would pass it drops the
    buffer and sets ``lagged`` (the follower then stops delivering); the subscriber's task,
    when it comes back, re-joins with a new subscription from its ``position``.
    """

    __slots__ = (
        "buffer",
        "delivered",
        "error",
        "key",
        "lagged",
        "limit",
        "position",
        "taken",
        "wake",
    )

    def __init__(self, key: str, position: int, limit: int = SUBSCRIBER_BUFFER) -> None:
        self.key = key
        self.position = position
        self.limit = limit
        self.buffer: deque[tuple[int, list[Entry]]] = deque()
        self.delivered = 0
        """Entries put in the buffer (written by the reader thread only)."""
        self.taken = 0
        """Entries taken from it (written by the subscriber's task only, via :meth:`take`)."""
        self.lagged = False
        self.error: BaseException | None = None
        self.wake: Wakeup | None = None
        """The subscriber's wake-up, once it waits (set by its task)."""

    def take(self) -> tuple[int, list[Entry]] | None:
        """The oldest batch, or None when the buffer is empty (the subscriber's task only)."""
        try:
            batch = self.buffer.popleft()
        except IndexError:  # dropped by the reader thread meanwhile (lagged)
            return None
        self.taken += len(batch[1])
        return batch

    def deliver(self, read_from: int, entries: list[Entry]) -> Wakeup | None:
        """Called by the reader thread: ``entries`` follow entry ``read_from`` in the stream.

        The buffer is a deque of batches, and each count has one writer, so this is
        thread-safe without a lock. Returns the subscriber's wake-up for the caller to fire
        (with every other subscriber's of the same read: one call into each event loop).
        """
        if self.lagged:
            return None
        waiting = self.delivered - self.taken
        if waiting and waiting + len(entries) > self.limit:
            self.lagged = True
            self.buffer.clear()
        else:
            self.delivered += len(entries)
            self.buffer.append((read_from, entries))
        return self.wake

    def fail(self, error: BaseException) -> None:
        self.error = error
        wake = self.wake
        if wake is not None:
            wake.set()


class Follows:
    """What a hub's reader follows: a position and subscribers per stream, and what to do with
    a read (deliver it) or a sweep (fail the readers of streams that were lost).

    Shared by the reader thread (:class:`Follower`) and the per-loop reader of asyncio
    (``_follow_loop.LoopFollower``); ``_lock`` guards the maps (uncontended on one loop).
    """

    def __init__(
        self,
        connect: Callable[[], Any],
        control: Any,
        decode: Callable[[str, dict[str, str]], Entry],
        describe: str,
        sweep_every: float,
    ) -> None:
        self._connect = connect
        """The reading connection's client (its own connection: it blocks in ``XREAD``)."""
        self._control = control
        """A sync client: ``CLIENT UNBLOCK`` for the reading connection."""
        self._decode = decode
        self._describe = describe
        self._sweep_every = sweep_every
        self._client_id: int | None = None
        """The reading connection's id, once it has one."""
        self._lock = threading.Lock()
        self._follows: dict[str, tuple[int, list[Subscription]]] = {}
        self._present: set[str] = set()
        """Followed keys the sweep found claimed: should the claim vanish, the stream was lost."""
        self._closed = False

    def _register(self, subscription: Subscription) -> None:
        """Follow ``subscription.key`` from its position; under ``_lock``."""
        if self._closed:
            raise RuntimeError("the hub is closed")
        position, subscribers = self._follows.get(subscription.key, (None, []))
        start = subscription.position if position is None else min(position, subscription.position)
        self._follows[subscription.key] = (start, [*subscribers, subscription])

    def remove(self, subscription: Subscription) -> None:
        with self._lock:
            follow = self._follows.get(subscription.key)
            if follow is None:
                return
            rest = [s for s in follow[1] if s is not subscription]
            if rest:
                self._follows[subscription.key] = (follow[0], rest)
            else:
                del self._follows[subscription.key]

    def _asked(self) -> dict[str, int]:
        """Each followed stream and the position to read it from; under ``_lock``."""
        return {key: position for key, (position, _) in self._follows.items()}

    def _deliver(self, asked: dict[str, int], response: Any) -> list[Wakeup]:
        """Hand the entries of an ``XREAD`` reply to their subscribers; their wake-ups."""
        woken: list[Wakeup] = []
        for key, items in response or ():
            entries = [self._decode(entry_id, fields) for entry_id, fields in items]
            last = seq(entries[-1].id)
            with self._lock:
                follow = self._follows.get(key)
                if follow is None:
                    continue
                position, subscribers = follow
                if position >= asked[key]:
                    position = max(position, last)
                # else: a reader joined behind us during the read; read again from its
                # position next time (the others skip what they already have).
                self._follows[key] = (position, subscribers)
                self._present.add(key)
            for subscription in subscribers:
                wake = subscription.deliver(asked[key], entries)
                if wake is not None:
                    woken.append(wake)
                if subscription.lagged:
                    self.remove(subscription)
        return woken

    def _lost(self, outcomes: dict[str, str | None]) -> None:
        """Fail the readers of streams that had a claim and lost it (their keys vanished)."""
        failed: list[tuple[list[Subscription], str]] = []
        with self._lock:
            for key, lost in outcomes.items():
                if lost is None:
                    self._present.add(key)
                elif key in self._present:
                    self._present.discard(key)
                    follow = self._follows.pop(key, None)
                    if follow is not None:
                        failed.append((follow[1], lost))
            self._present &= self._follows.keys()
        for subscribers, lost in failed:
            for subscription in subscribers:
                subscription.fail(LookupError(lost))

    def _fail(self, follows: dict[str, tuple[int, list[Subscription]]], error: Exception) -> None:
        """Redis failed under the reader: the subscribers of ``follows`` (taken from
        ``_follows`` under the lock) end with an error naming it."""
        failure = ConnectionError(
            f"Redis at {self._describe} failed while following streams "
            f"({type(error).__name__}: {error})"
        )
        for _, subscribers in follows.values():
            for subscription in subscribers:
                subscription.fail(failure)


class Follower(Follows):
    """The reader thread of one hub, started on the first subscription."""

    def __init__(
        self,
        connect: Callable[[], Any],
        control: Any,
        decode: Callable[[str, dict[str, str]], Entry],
        describe: str,
        *,
        sweep: Callable[[Any, list[str]], dict[str, str | None]] | None = None,
        sweep_every: float = 1.0,
        cluster: bool = False,
    ) -> None:
        super().__init__(connect, control, decode, describe, sweep_every)
        self._cluster = cluster
        self._sweep = sweep
        self._changed = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None

    def add(self, subscription: Subscription) -> None:
        """Follow ``subscription.key`` from its position (re-reading is filtered per reader)."""
        with self._lock:
            self._register(subscription)
            self._changed.notify()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="reasoning-stream-redis-reader", daemon=True
                )
                self._thread.start()
            client_id = self._client_id
        if client_id is not None:
            # On failure the thread still sees the new stream after its current wait.
            with contextlib.suppress(Exception):
                self._control.client_unblock(client_id)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._changed.notify()
            thread, client_id = self._thread, self._client_id
        if client_id is not None:
            with contextlib.suppress(Exception):
                self._control.client_unblock(client_id)
        if thread is not None:
            thread.join(5)

    def _poll(self, client: Any, streams: dict[str, str]) -> list[Any]:
        """On a Redis Cluster: read every followed stream without blocking, then wait a little.

        One ``XREAD`` may only name keys of one hash slot, and a blocking read holds its
        connection to one node, so the cluster client reads each stream on its own in one
        pipeline (a round trip per node) and, when nothing came, waits ``_POLL`` seconds or
        until a reader joins.
        """
        pipeline = client.pipeline()
        for key, start in streams.items():
            pipeline.xread({key: start}, count=COUNT)
        response = [item for reply in pipeline.execute() for item in reply or ()]
        if not response:
            with self._lock:
                if not self._closed:
                    self._changed.wait(_POLL)
        return response

    def _loop(self) -> None:
        client = None
        next_sweep = time.monotonic() + self._sweep_every
        try:
            while True:
                with self._lock:
                    while not self._follows and not self._closed:
                        self._changed.wait()
                    if self._closed:
                        return
                    asked = self._asked()
                streams = {key: f"0-{position}" for key, position in asked.items()}
                if client is None:
                    client = self._connect()
                    if not self._cluster:
                        with self._lock:
                            self._client_id = client.client_id()
                if self._cluster:
                    response = self._poll(client, streams)
                else:
                    response = client.xread(streams, count=COUNT, block=BLOCK_MS)
                if self._sweep is not None and time.monotonic() >= next_sweep:
                    # Streams whose writer was lost get their final entry now; this read
                    # loop then delivers it like any other.
                    self._lost(self._sweep(client, list(asked)))
                    next_sweep = time.monotonic() + self._sweep_every
                wake_all(self._deliver(asked, response))
        except Exception as error:
            with self._lock:
                follows, self._follows = self._follows, {}
                self._thread = None
                self._client_id = None
            self._fail(follows, error)
        finally:
            if client is not None:
                client.close()
