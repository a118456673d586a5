"""``RedisHub``: each run's channel as a Redis Stream, for readers in any process.

Layout, under ``prefix`` (default ``"reasoning-stream:"``):

- ``<prefix><stream_id>``: the stream. Entry ids are ``0-<n>`` for the n-th entry of the
  run, written explicitly (one writer per stream, guaranteed by the claim below), so a resume
  point can be checked against what retention kept. Fields: ``c`` the chunk (left out when
  empty), ``e`` the event as JSON, ``s`` the status (present on the final entry only).
- ``<prefix><stream_id>:run``: the claim, ``SET NX`` when a run starts, so a stream id is used
  once. Both keys get ``EXPIRE ttl`` with the final entry.

Writes go through one writer thread per hub that batches every pending entry of every running
stream into one pipelined round trip (``XADD ... MAXLEN ~ maxlen``): the run's callbacks only
append to a queue, so neither Redis nor any reader can slow the model stream. Readers use
``XREAD BLOCK`` (redis-py's asyncio client on asyncio, its sync client in worker threads on
trio, where the asyncio client cannot run).
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, TypeVar

import anyio
import anyio.to_thread

from .._events import Event
from .._exceptions import UsageError
from .._pipe import Status
from ._base import (
    Hub,
    InvalidEntryIdError,
    StreamExpiredError,
    StreamNotFoundError,
    _Failure,
)
from ._entry import Entry, event_from_dict, event_to_dict
from ._wake import on_asyncio

__all__ = ["RedisHub"]

_T = TypeVar("_T")
_ID = re.compile(r"0-([1-9][0-9]{0,17})")
_BATCH = 2000
"""Most entries one pipelined round trip carries."""
_BLOCK_MS = 1000
"""Longest single ``XREAD BLOCK`` wait; a reader re-checks between waits."""
_FINISH_TIMEOUT = 10.0


def _import_redis() -> Any:
    try:
        import redis
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "RedisHub needs redis-py: pip install 'reasoning-stream[redis]'"
        ) from error
    return redis


class _RedisSink:
    """One run's writer: numbers its entries and queues them for the hub's writer thread."""

    __slots__ = (
        "_done",
        "_hub",
        "failure",
        "key",
        "run_key",
        "saw_text",
        "seq",
        "stream_id",
        "written",
    )

    def __init__(self, hub: RedisHub, stream_id: str, failure: str | None) -> None:
        self._hub = hub
        self.stream_id = stream_id
        self.key = hub.prefix + stream_id
        self.run_key = self.key + ":run"
        self.seq = 0
        self.saw_text = False
        self.failure = failure
        """Why publishing stopped (Redis unreachable at the start or failing mid-run)."""
        self.written = 0
        """Entries Redis confirmed (counted by the writer thread only)."""
        self._done = threading.Event()

    def put(self, chunk: str, event: Event | None) -> None:
        self.seq += 1
        if self.failure is not None:
            return
        fields: dict[str, str] = {}
        if chunk:
            fields["c"] = chunk
        if event is not None:
            fields["e"] = json.dumps(event_to_dict(event), ensure_ascii=False)
        self._hub._enqueue(self, self.seq, fields)

    def finish(self, status: Status) -> _Failure | None:
        self.seq += 1
        if self.failure is None:
            self._hub._enqueue(self, self.seq, {"s": status})
            if not self._done.wait(_FINISH_TIMEOUT):
                self.fail(f"Redis did not confirm the writes within {_FINISH_TIMEOUT} s")
        if self.failure is None:
            return None
        unpublished = self.seq - self.written
        return _Failure(
            f"{self.failure}: {unpublished} of the {self.seq} entries of stream "
            f"{self.stream_id!r} were not published (the final entry among them), so its "
            "readers will not see its end",
            unpublished,
        )

    def fail(self, reason: str) -> None:
        """Called by the writer: a batch with entries of ours did not reach Redis."""
        if self.failure is None:
            self.failure = reason
        self._done.set()

    def confirm(self, count: int, final: bool) -> None:
        """Called by the writer: Redis took ``count`` more of our entries."""
        self.written += count
        if final:
            self._done.set()


class _Writer:
    """The hub's writer thread: drains the queue in pipelined batches."""

    def __init__(self, hub: RedisHub) -> None:
        self._hub = hub
        self._queue: deque[tuple[_RedisSink, int, dict[str, str]]] = deque()
        self._ready = threading.Condition(threading.Lock())
        self._closed = False
        self._thread = threading.Thread(
            target=self._loop, name="reasoning-stream-redis-writer", daemon=True
        )
        self._thread.start()

    def put(self, sink: _RedisSink, seq: int, fields: dict[str, str]) -> None:
        with self._ready:
            self._queue.append((sink, seq, fields))
            self._ready.notify()

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify()
        self._thread.join(_FINISH_TIMEOUT)

    def _loop(self) -> None:
        queue = self._queue
        while True:
            with self._ready:
                while not queue and not self._closed:
                    self._ready.wait()
                if not queue and self._closed:
                    return
                batch = [queue.popleft() for _ in range(min(len(queue), _BATCH))]
            self._write(batch)

    def _write(self, batch: list[tuple[_RedisSink, int, dict[str, str]]]) -> None:
        hub = self._hub
        redis = _import_redis()
        pipeline = hub._client.pipeline(transaction=False)
        live = [item for item in batch if item[0].failure is None]
        for sink, seq, fields in live:
            pipeline.xadd(sink.key, fields, id=f"0-{seq}", maxlen=hub.maxlen, approximate=True)
            if "s" in fields and hub.ttl is not None:
                ttl = max(1, round(hub.ttl))
                pipeline.expire(sink.key, ttl)
                pipeline.expire(sink.run_key, ttl)
        if not live:
            return
        try:
            pipeline.execute()
        except redis.RedisError as error:
            reason = (
                f"Redis at {hub.url_for_messages} failed mid-run ({type(error).__name__}: {error})"
            )
            for sink, _, _ in live:
                sink.fail(reason)
            return
        for sink, _, fields in live:
            sink.confirm(1, "s" in fields)


class _Commands(Protocol):
    """The few reads a subscriber needs, awaited the same way on asyncio and trio."""

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any: ...

    async def aclose(self) -> None: ...


class _AsyncioCommands:
    def __init__(self, hub: RedisHub) -> None:
        import redis.asyncio

        self._client = redis.asyncio.Redis.from_url(hub.url, **hub._options(blocking=True))

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method: Callable[..., Awaitable[Any]] = getattr(self._client, name)
        return await method(*args, **kwargs)

    async def aclose(self) -> None:
        await self._client.aclose()


class _ThreadCommands:
    """The sync client in worker threads: redis-py's asyncio client does not run on trio."""

    def __init__(self, hub: RedisHub) -> None:
        self._client = hub._reader_client
        self._limiter = hub._reader_limiter

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method: Callable[..., Any] = getattr(self._client, name)
        return await anyio.to_thread.run_sync(
            lambda: method(*args, **kwargs), abandon_on_cancel=True, limiter=self._limiter
        )

    async def aclose(self) -> None:
        return None


class RedisHub(Hub):
    """A hub on Redis Streams: runs publish from one process, readers follow from any other.

    ``url`` is a redis-py URL (``redis://host:port/db``); ``maxlen`` bounds the entries kept
    per stream (``XADD MAXLEN ~``: Redis may keep a few more); ``ttl`` is how many seconds a
    finished stream is kept (``None``: until deleted). Keys live under ``prefix``.

    If Redis is down when a run starts or fails during it, the run itself goes on to its end;
    :class:`PublishError` then names Redis and says how many entries were not published, with
    the run's result as ``.result``.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        maxlen: int = 100_000,
        ttl: float | None = 3600.0,
        prefix: str = "reasoning-stream:",
        connect_timeout: float = 2.0,
    ) -> None:
        if maxlen < 1:
            raise UsageError(f"maxlen must be at least 1, got {maxlen}")
        redis = _import_redis()
        self.url = url
        self.maxlen = maxlen
        self.ttl = ttl
        self.prefix = prefix
        self._connect_timeout = connect_timeout
        self._client: Any = redis.Redis.from_url(url, **self._options(blocking=False))
        self._reader_client: Any = redis.Redis.from_url(url, **self._options(blocking=True))
        self._reader_limiter = anyio.CapacityLimiter(64)
        self._writer: _Writer | None = None
        self._writer_lock = threading.Lock()

    @property
    def url_for_messages(self) -> str:
        """The URL without a password, for error messages."""
        return re.sub(r"//[^@/]*@", "//***@", self.url)

    def _options(self, *, blocking: bool) -> dict[str, Any]:
        from redis.backoff import ExponentialBackoff
        from redis.retry import Retry

        return {
            "decode_responses": True,
            "socket_connect_timeout": self._connect_timeout,
            # A blocking XREAD waits up to _BLOCK_MS; the socket must outwait it.
            "socket_timeout": (_BLOCK_MS / 1000 + 5) if blocking else 5.0,
            "retry": Retry(ExponentialBackoff(cap=0.2, base=0.02), 2),
        }

    def close(self) -> None:
        """Flush pending writes and close the connections."""
        with self._writer_lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
        self._client.close()
        self._reader_client.close()

    def __enter__(self) -> RedisHub:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------------- writing

    def _enqueue(self, sink: _RedisSink, seq: int, fields: dict[str, str]) -> None:
        writer = self._writer
        if writer is None:
            with self._writer_lock:
                writer = self._writer = self._writer or _Writer(self)
        writer.put(sink, seq, fields)

    def _open(self, stream_id: str) -> _RedisSink:
        redis = _import_redis()
        key = self.prefix + stream_id
        try:
            claimed = self._client.set(key + ":run", "running", nx=True)
            if claimed and self._client.exists(key):
                # A leftover log without its claim (claim expired first): start clean.
                self._client.delete(key)
        except redis.RedisError as error:
            return _RedisSink(
                self,
                stream_id,
                f"Redis at {self.url_for_messages} was unreachable when the run started "
                f"({type(error).__name__}: {error})",
            )
        if not claimed:
            raise UsageError(
                f"stream {stream_id!r} already exists in Redis at {self.url_for_messages}; "
                "use a new stream_id for every run"
            )
        return _RedisSink(self, stream_id, None)

    async def _aopen(self, stream_id: str) -> _RedisSink:
        return await anyio.to_thread.run_sync(self._open, stream_id)

    async def _afinish(self, sink: Any, status: Status) -> _Failure | None:
        finish: Callable[[Status], _Failure | None] = sink.finish
        return await anyio.to_thread.run_sync(finish, status)

    # ------------------------------------------------------------------------- reading

    def check_entry_id(self, entry_id: str) -> None:
        """Raise :class:`InvalidEntryIdError` unless ``entry_id`` looks like this hub's ids."""
        if not isinstance(entry_id, str) or not _ID.fullmatch(entry_id):
            raise InvalidEntryIdError(
                f"{entry_id!r} is not an entry id of a RedisHub (they look like '0-17')"
            )

    def _check_after(self, stream_id: str, after: str, first: list[Any], last: list[Any]) -> None:
        """Whether the stream still holds everything past ``after``."""
        if not last:
            raise StreamExpiredError(
                f"stream {stream_id!r} is not in Redis at {self.url_for_messages}, so entry "
                f"{after!r} cannot be resumed: it expired (ttl) or was never published there"
            )
        position = _seq(after)
        if position > _seq(last[0][0]):
            raise InvalidEntryIdError(
                f"stream {stream_id!r} has no entry {after!r} (its last is {last[0][0]!r}); "
                "pass an id this stream gave you"
            )
        if position + 1 < _seq(first[0][0]):
            raise StreamExpiredError(
                f"entry {after!r} of stream {stream_id!r} was trimmed (maxlen={self.maxlen} "
                "keeps the latest entries only); read it from the start or raise maxlen"
            )

    def read(self, stream_id: str, after: str | None = None) -> list[Entry]:
        """The entries of ``stream_id`` there now, past ``after``; ``[]`` for an unknown stream.

        Raises :class:`StreamExpiredError` when ``after`` was trimmed or its stream expired.
        """
        key = self.prefix + stream_id
        client = self._reader_client
        if after is not None:
            self.check_entry_id(after)
            self._check_after(
                stream_id, after, client.xrange(key, count=1), client.xrevrange(key, count=1)
            )
        return [_entry(i, f) for i, f in client.xrange(key, min=_past(after))]

    async def subscribe(
        self, stream_id: str, after: str | None = None, timeout: float | None = None
    ) -> AsyncIterator[Entry]:
        """Replay the entries past ``after``, then follow live with ``XREAD BLOCK``.

        Ends after the final entry. A stream that does not exist yet is waited for, up to
        ``timeout`` seconds (``None``: forever), then :class:`StreamNotFoundError`.
        """
        if after is not None:
            self.check_entry_id(after)
        key = self.prefix + stream_id
        commands: _Commands = _AsyncioCommands(self) if on_asyncio() else _ThreadCommands(self)
        try:
            last_id = "0-0"
            if after is not None:
                first = await commands.call("xrange", key, count=1)
                last = await commands.call("xrevrange", key, count=1)
                self._check_after(stream_id, after, first, last)
                if last[0][0] == after and "s" in last[0][1]:
                    return
                last_id = after
            deadline = None if timeout is None else anyio.current_time() + timeout
            found = after is not None
            while True:
                block = _BLOCK_MS
                if not found and deadline is not None:
                    remaining = deadline - anyio.current_time()
                    block = max(1, min(block, int(remaining * 1000)))
                response = await commands.call("xread", {key: last_id}, count=_BATCH, block=block)
                if response:
                    found = True
                    for entry_id, fields in response[0][1]:
                        entry = _entry(entry_id, fields)
                        yield entry
                        if entry.final:
                            return
                        last_id = entry_id
                    continue
                if not found:
                    found = bool(await commands.call("exists", key, key + ":run"))
                    if not found and deadline is not None and anyio.current_time() >= deadline:
                        raise StreamNotFoundError(
                            f"no stream {stream_id!r} appeared in Redis at "
                            f"{self.url_for_messages} within {timeout} s"
                        )
        finally:
            with anyio.CancelScope(shield=True):
                await commands.aclose()


def _seq(entry_id: str) -> int:
    return int(entry_id.partition("-")[2])


def _past(after: str | None) -> str:
    return "-" if after is None else f"({after}"


def _entry(entry_id: str, fields: dict[str, str]) -> Entry:
    event = fields.get("e")
    status = fields.get("s")
    return Entry(
        entry_id,
        fields.get("c", ""),
        None if event is None else event_from_dict(json.loads(event)),
        status is not None,
        status,  # type: ignore[arg-type]
    )
