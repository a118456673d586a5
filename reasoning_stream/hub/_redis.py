"""``RedisHub``: each run's channel as a Redis Stream, for readers in any process.

The hub claims a stream id for each run, ends the streams whose writer was lost, and wires the
two sides: writes go through one writer thread per hub (``_redis_writer``) that batches every
pending entry of every running stream into one pipelined round trip, so neither Redis nor any
reader can slow the model stream; reads go through one reader thread per hub
(``_redis_reader`` over ``_follow``). How a stream lies in Redis (keys, entry fields, the
scripts) is in ``_redis_codec``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from .._exceptions import UsageError
from .._pipe import Status
from .._redis_client import cluster_hint, connect, run_scripts
from .._redis_keys import check_prefix, redacted_url
from ._base import Hub, HubError, StreamExistsError, _Failure
from ._entry import Entry, entries_of
from ._follow import BLOCK_MS, Follower
from ._follow_loop import LoopFollower
from ._redis_codec import (
    ABANDON,
    APPEND,
    CLAIM,
    STOP,
    STREAM_LOST,
    check_entry_id,
    decode_entry,
    hold_seconds,
    id_of,
    import_redis,
    stop_channel,
    stream_keys,
    ttl_seconds,
)
from ._redis_loop_writer import LoopWriter
from ._redis_reader import RedisReader
from ._redis_stop import StopListener
from ._redis_writer import Pending, RedisSink, RedisWriter, Writes
from ._stop import RunControl

__all__ = ["RedisHub"]

_Part = TypeVar("_Part", LoopFollower, LoopWriter)

_log = logging.getLogger("reasoning_stream.hub")


class RedisHub(Hub):
    """A hub on Redis Streams: runs publish from one process, readers follow from any other.

    ``url`` is a redis-py URL (``redis://host:port/db``); ``maxlen`` bounds the entries kept
    per stream (``XADD MAXLEN ~``: Redis may keep a few more); ``ttl`` is how many seconds a
    finished stream is kept (``None``: until deleted). Keys live under ``prefix``.
    Writes go out as soon as there is something to write; what comes while a write is in
    flight goes in the next, one script call for every stream (runs on an asyncio loop are
    written by a task of that loop, the others by the hub's writer thread). ``write_delay``
    (seconds, default none) makes the writer thread linger after waking so that one round
    trip carries more, at that much latency. ``cluster=True``: ``url``
    names a node of a Redis Cluster (each stream's keys share one hash slot, so every script
    runs on one node; see the key layout in ``_redis_codec``).

    If Redis is down when a run starts or fails during it, the run itself goes on to its end;
    :class:`PublishError` then names Redis and says how many entries were not published, with
    the run's result as ``.result``.

    ``lease`` (seconds) bounds how long a run's writer may go silent: the writer thread renews
    the run's lease in Redis every ``lease / 3`` seconds. When a process dies mid-run (a
    crash, ``SIGKILL``, a lost machine) or hangs longer than ``lease``, its readers, in any
    process, end the stream for it: after the closing marker if reasoning was open, a final
    entry with ``status == "error"`` and ``Entry.error`` naming the lost writer (host and pid).
    So no reader waits forever on a dead run, and the web app ends its responses the same way
    (``event: end``, ``RUN_ERROR``, ``error``). The stream id stays taken for ``ttl`` seconds
    after that, as for any finished run. A writer that was only slow and comes back is turned
    away by Redis (its token no longer owns the claim): its run finishes and raises
    :class:`PublishError` with the result.

    ``seal_keys`` (``[key, *older]``): each run's final entry carries its opaque reasoning
    state sealed in this process (``Entry.envelope``), so Redis never holds raw state and a
    web app in another process serves envelopes it could not have made.
    """

    first_entry_id = "0-1"

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        maxlen: int = 100_000,
        ttl: float | None = 3600.0,
        prefix: str = "reasoning-stream:",
        connect_timeout: float = 2.0,
        write_delay: float = 0.0,
        lease: float = 10.0,
        cluster: bool = False,
        seal_keys: Sequence[bytes | str] | None = None,
    ) -> None:
        if maxlen < 1:
            raise UsageError(f"maxlen must be at least 1, got {maxlen}")
        self._take_keys(seal_keys)
        if not lease > 0:
            raise UsageError(f"lease must be a positive number of seconds, got {lease}")
        try:
            check_prefix(prefix, "prefix")
        except ValueError as error:
            raise UsageError(str(error)) from None
        self.lease = lease
        import_redis()
        self.url = url
        self.maxlen = maxlen
        self.ttl = ttl
        self.prefix = prefix
        self._connect_timeout = connect_timeout
        self._write_delay = write_delay
        self.cluster = cluster
        self._client: Any = connect(url, cluster=cluster, **self._options(blocking=False))
        self._reader_client: Any = connect(url, cluster=cluster, **self._options(blocking=True))
        self._append_script = self._client.register_script(APPEND)
        self._claim_script = self._client.register_script(CLAIM)
        self._abandon_script = self._client.register_script(ABANDON)
        self._stop_script = self._client.register_script(STOP)
        self._stop_listener: StopListener | None = None
        self._writer: RedisWriter | None = None
        self._reader_thread: Follower | None = None
        self._writer_lock = threading.Lock()
        self._loop_followers: weakref.WeakKeyDictionary[Any, LoopFollower] = (
            weakref.WeakKeyDictionary()
        )
        self._loop_writers: weakref.WeakKeyDictionary[Any, LoopWriter] = weakref.WeakKeyDictionary()
        self._reading = RedisReader(
            self, self._reader_client, self._follower, self._end_abandoned, self._loop_follower
        )

    @property
    def url_for_messages(self) -> str:
        """The URL without a password, for error messages."""
        return redacted_url(self.url)

    def _options(self, *, blocking: bool, on_asyncio: bool = False) -> dict[str, Any]:
        from redis.backoff import ExponentialBackoff

        if on_asyncio:
            from redis.asyncio.retry import Retry
        else:
            from redis.retry import Retry  # type: ignore[assignment]

        return {
            "decode_responses": True,
            "socket_connect_timeout": self._connect_timeout,
            # A blocking XREAD waits up to BLOCK_MS; the socket must outwait it.
            "socket_timeout": (BLOCK_MS / 1000 + 5) if blocking else 5.0,
            "retry": Retry(ExponentialBackoff(cap=0.2, base=0.02), 2),
        }

    def _async_dedicated(self) -> Any:
        """An asyncio client on one connection of its own (a loop's reader task)."""
        import redis.asyncio

        options = self._options(blocking=True, on_asyncio=True)
        return redis.asyncio.Redis.from_url(self.url, single_connection_client=True, **options)

    def _async_connection(self) -> Any:
        """An asyncio connection of its own (a loop's writer task), connected on first use."""
        import redis.asyncio

        options = self._options(blocking=False, on_asyncio=True)
        pool = redis.asyncio.ConnectionPool.from_url(self.url, **options)
        return pool.make_connection()  # type: ignore[no-untyped-call]

    def _dedicated(self, *, blocking: bool) -> Any:
        """A client on one connection of its own (a thread's: the reader's, the stop
        listener's)."""
        return connect(
            self.url,
            cluster=self.cluster,
            single_connection_client=True,
            **self._options(blocking=blocking),
        )

    def close(self) -> None:
        """Flush pending writes and close the connections."""
        with self._writer_lock:
            writer, self._writer = self._writer, None
            reader, self._reader_thread = self._reader_thread, None
            listener, self._stop_listener = self._stop_listener, None
        if listener is not None:
            listener.close()
        if writer is not None:
            writer.close()
        if reader is not None:
            reader.close()
        with self._writer_lock:
            followers = list(self._loop_followers.values())
            self._loop_followers.clear()
            # A loop's writer task ends by itself once its loop's streams have ended.
            self._loop_writers.clear()
        for follower in followers:
            follower.close()
        self._client.close()
        self._reader_client.close()

    def __enter__(self) -> RedisHub:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------------- writing

    def _writer_put(
        self, running: RedisSink | None, writer: Writes | None = None
    ) -> Callable[[Pending], None]:
        """The ``put`` of ``writer`` (the hub's thread when None), holding ``running``'s lease."""
        if writer is None:
            with self._writer_lock:
                if self._writer is None:
                    self._writer = RedisWriter(
                        self, self._client, self._append_script, self._write_delay
                    )
                writer = self._writer
        if running is not None:
            writer.hold(running)
        return writer.put

    def _loop_writer(self) -> LoopWriter | None:
        """The writer task of the running asyncio loop (one Redis server); None on trio and on
        a cluster, whose runs the writer thread writes."""
        return self._on_loop(
            self._loop_writers,
            lambda loop: LoopWriter(self, loop, self._async_connection, APPEND),
        )

    def _on_loop(
        self, parts: weakref.WeakKeyDictionary[Any, _Part], make: Callable[[Any], _Part]
    ) -> _Part | None:
        """The running asyncio loop's part in ``parts`` (made by ``make(loop)`` the first
        time); None on trio and on a cluster."""
        if self.cluster:
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # trio
            return None
        with self._writer_lock:
            part = parts.get(loop)
            if part is None:
                part = parts[loop] = make(loop)
            return part

    def _end_abandoned(self, keys: list[str], client: Any = None) -> bool:
        """End the stream at ``keys`` if its writer's lease lapsed; True when this call did."""
        ended = self._abandon_script(
            keys=keys,
            args=[str(self.maxlen), ttl_seconds(self.ttl)],
            client=client or self._client,
        )
        return int(ended) == 1

    def _sweep(self, client: Any, keys: list[str]) -> dict[str, str | None]:
        """The reader thread, now and then: end every followed stream whose writer was lost.

        Returns, per key, ``None`` while the stream has its claim, else the error for its
        readers should it have had one before (its keys vanished while it was running).
        """
        args = [str(self.maxlen), ttl_seconds(self.ttl)]
        calls = [([key, key + ":run", key + ":lease"], args) for key in keys]
        outcomes: dict[str, str | None] = {}
        for key, ended in zip(keys, run_scripts(client, self._abandon_script, calls), strict=True):
            if isinstance(ended, Exception):
                raise ended
            outcomes[key] = (
                STREAM_LOST.format(stream_id=id_of(self.prefix, key), url=self.url_for_messages)
                if int(ended) == -1
                else None
            )
        return outcomes

    def _open(self, stream_id: str, writer: Writes | None = None) -> RedisSink:
        redis = import_redis()
        keys = stream_keys(self.prefix, stream_id)
        owner = os.urandom(12).hex()
        hold = hold_seconds(self.lease, self.ttl)
        process = f"{socket.gethostname()} pid {os.getpid()}"
        abandoned = False
        try:
            claimed = self._claim_script(
                keys=keys,
                args=[owner, process, max(1, round(self.lease * 1000)), f"{self.lease:g}", hold],
            )
            if not claimed:
                abandoned = self._end_abandoned(keys)
        except redis.RedisError as error:
            return RedisSink(
                stream_id,
                keys,
                f"Redis at {self.url_for_messages} was unreachable when the run started "
                f"({type(error).__name__}: {error}){cluster_hint(error)}",
                self._writer_put,
            )
        if not claimed:
            lost = (
                " (its writer was lost, so the hub ended it with status 'error')"
                if abandoned
                else ""
            )
            raise StreamExistsError(
                f"stream {stream_id!r} already exists in Redis at {self.url_for_messages}"
                f"{lost}; use a new stream_id for every run"
            )
        return RedisSink(
            stream_id, keys, None, functools.partial(self._writer_put, writer=writer), owner
        )

    async def _aopen(self, stream_id: str) -> RedisSink:
        return await anyio.to_thread.run_sync(self._open, stream_id, self._loop_writer())

    async def _afinish(
        self, sink: Any, status: Status, error: str | None = None, envelope: str | None = None
    ) -> _Failure | None:
        finish: Callable[[Status, str | None, str | None], _Failure | None] = sink.finish
        return await anyio.to_thread.run_sync(finish, status, error, envelope)

    # ------------------------------------------------------------------------ stopping

    def _request_stop(self, stream_id: str) -> bool:
        """Mark the running stream's claim and publish the stop (``STOP`` in the codec).

        Raises :class:`HubError` when Redis does not answer (nothing was stopped).
        """
        redis = import_redis()
        try:
            return bool(
                self._stop_script(
                    keys=stream_keys(self.prefix, stream_id),
                    args=[stop_channel(self.prefix), stream_id],
                )
            )
        except redis.RedisError as error:
            raise HubError(
                f"could not ask Redis at {self.url_for_messages} to stop stream {stream_id!r} "
                f"({type(error).__name__}: {error}){cluster_hint(error)}; nothing was stopped, "
                "try again"
            ) from None

    def _started(self, stream_id: str, control: RunControl) -> None:
        """Listen for stop requests (once per hub), then catch one that came before."""
        try:
            with self._writer_lock:
                if self._stop_listener is None:
                    self._stop_listener = StopListener(
                        lambda: connect(
                            self.url,
                            cluster=self.cluster,
                            single_connection_client=True,
                            **self._options(blocking=False),
                        ),
                        stop_channel(self.prefix),
                        self._controls,
                        self._marked,
                        wake=lambda: self._client.publish(stop_channel(self.prefix), ""),
                    )
            if self._marked([stream_id]):
                control.request()
        except Exception as error:
            _log.warning(
                "stream %r cannot be stopped from other processes: Redis at %s did not answer (%s)",
                stream_id,
                self.url_for_messages,
                type(error).__name__,
            )

    def _marked(self, stream_ids: list[str]) -> list[str]:
        """Which of ``stream_ids`` a stop request marked."""
        return [
            stream_id
            for stream_id in stream_ids
            if self._client.hget(stream_keys(self.prefix, stream_id)[1], "stop")
        ]

    async def astop(self, stream_id: str) -> bool:
        """As :meth:`stop`: one Redis round trip, in a worker thread."""
        return await super().astop(stream_id)

    # ------------------------------------------------------------------------- reading

    def check_entry_id(self, entry_id: str) -> None:
        """Raise :class:`InvalidEntryIdError` unless ``entry_id`` looks like this hub's ids."""
        check_entry_id(entry_id)

    def read(self, stream_id: str, after: str | None = None) -> list[Entry]:
        """The entries of ``stream_id`` there now, past ``after``; ``[]`` for an unknown stream.

        Raises :class:`StreamExpiredError` when ``after`` was trimmed or its stream expired.
        A stream whose writer was lost (see ``lease``) is ended first, so it reads finished.
        """
        return self._reading.read(stream_id, after)

    def subscribe(
        self, stream_id: str, after: str | None = None, timeout: float | None = None
    ) -> AsyncIterator[Entry]:
        """Replay the entries past ``after``, then follow live; ends after the final entry.

        On an asyncio loop, one task of that loop follows every stream its subscribers read
        with one ``XREAD BLOCK``; on trio, and on a Redis Cluster, the hub's reader thread
        does (redis-py's sync client). A stream that does not exist yet is waited for, up to
        ``timeout`` seconds (``None``: forever), then :class:`StreamNotFoundError`.
        """
        return entries_of(self._reading.subscribe_batches(stream_id, after, timeout))

    def subscribe_batches(
        self, stream_id: str, after: str | None = None, timeout: float | None = None
    ) -> AsyncIterator[list[Entry]]:
        """As :meth:`subscribe`, the entries that came in one read as one list."""
        return self._reading.subscribe_batches(stream_id, after, timeout)

    def _loop_follower(self) -> LoopFollower | None:
        """The reader task of the running asyncio loop (one Redis server); None on trio and
        on a cluster, whose readers the reader thread follows."""
        return self._on_loop(
            self._loop_followers,
            lambda _: LoopFollower(
                self._async_dedicated,
                self._client,
                decode_entry,
                self.url_for_messages,
                sweep=lambda keys: self._sweep(self._client, keys),
                sweep_every=min(self.lease / 2, 1.0),
            ),
        )

    def _follower(self) -> Follower:
        with self._writer_lock:
            if self._reader_thread is None:
                self._reader_thread = Follower(
                    lambda: self._dedicated(blocking=True),
                    self._client,
                    decode_entry,
                    self.url_for_messages,
                    sweep=self._sweep,
                    sweep_every=min(self.lease / 2, 1.0),
                    cluster=self.cluster,
                )
            return self._reader_thread
