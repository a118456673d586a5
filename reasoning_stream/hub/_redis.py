"""``RedisHub``: each run's channel as a Redis Stream, for readers in any process.

Layout, under ``prefix`` (default ``"reasoning-stream:"``):

- ``<prefix><stream_id>``: the stream. Entry ids are ``0-<n>`` for the n-th entry of the
  run, written explicitly (one writer per stream, guaranteed by the claim below), so a resume
  point can be checked against what retention kept. Fields: ``c`` the chunk (left out when
  empty); the event as ``r`` (reasoning delta text) or ``t`` (text delta text) with ``o`` its
  source, or ``e`` any other event as JSON; ``s`` the status (on the final entry only).
- ``<prefix><stream_id>:run``: the claim, ``SET NX`` when a run starts, so a stream id is used
  once. Both keys get ``EXPIRE ttl`` with the final entry.

Writes go through one writer thread per hub that batches every pending entry of every running
stream into one pipelined round trip (a small script per stream running ``XADD ... MAXLEN ~
maxlen``): the run's callbacks only append to a queue, so neither Redis nor any reader can slow
the model stream. Reads go through one reader thread per hub (``_follow.py``) that follows every
subscribed stream with one ``XREAD BLOCK`` on redis-py's sync client, the same on asyncio and
trio (redis-py's asyncio client does not run on trio).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeAlias, TypeVar

import anyio
import anyio.to_thread

from .._events import Event, OpaqueState, ReasoningDelta, TextDelta
from .._exceptions import UsageError
from .._pipe import Status
from ._base import (
    Hub,
    HubError,
    InvalidEntryIdError,
    StreamExpiredError,
    StreamNotFoundError,
    _Failure,
)
from ._entry import Entry, event_from_dict, event_to_dict
from ._follow import BLOCK_MS, Follower, Subscription
from ._wake import Wakeup

__all__ = ["RedisHub"]

_T = TypeVar("_T")
_ID = re.compile(r"0-([1-9][0-9]{0,17})")
_BATCH = 2000
"""Most entries one pipelined round trip carries."""
_FINISH_TIMEOUT = 10.0


def _import_redis() -> Any:
    try:
        import redis
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "RedisHub needs redis-py: pip install 'reasoning-stream[redis]'"
        ) from error
    return redis


_Pending: TypeAlias = "tuple[_RedisSink, int, str, Event | None, Status | None]"
"""One entry waiting for the writer: sink, number, chunk, event, status (final only)."""


class _RedisSink:
    """One run's writer: numbers its entries and queues them for the hub's writer thread."""

    __slots__ = (
        "_done",
        "_put",
        "entries",
        "failure",
        "key",
        "run_key",
        "saw_text",
        "seq",
        "stream_id",
        "written",
    )

    def __init__(self, hub: RedisHub, stream_id: str, failure: str | None) -> None:
        self.stream_id = stream_id
        self.key = hub.prefix + stream_id
        self.run_key = self.key + ":run"
        self.seq = 0
        self.saw_text = False
        self.failure = failure
        """Why publishing stopped (Redis unreachable at the start or failing mid-run)."""
        self.written = 0
        """Chunks and events Redis confirmed (counted by the writer thread only)."""
        self.entries = 0
        """Entries numbered so far (writer thread only): ids are ``0-1``, ``0-2``, ..."""
        self._done = threading.Event()
        self._put = hub._writer_put()

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

    def finish(self, status: Status) -> _Failure | None:
        self.seq += 1
        if self.failure is None:
            self._put((self, self.seq, "", None, status))
            if not self._done.wait(_FINISH_TIMEOUT):
                self.fail(f"Redis did not confirm the writes within {_FINISH_TIMEOUT} s")
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

    def confirm(self, count: int, final: bool) -> None:
        """Called by the writer: Redis took ``count`` more of our chunks and events."""
        self.written += count
        if final:
            self._done.set()

    def encode(self, items: list[_Pending]) -> tuple[list[str], bool]:
        """The script arguments for ``items`` (writer thread only), and whether one is final.

        A chunk directly followed by an event shares one entry with it (an entry may carry
        both, in the order the callbacks saw them): about half the entries for a delta stream.
        """
        args: list[str] = []
        pending: list[str] | None = None  # a chunk-only entry that an event may still join
        final = False
        for _, _, chunk, event, status in items:
            if pending is not None and event is not None and not chunk and status is None:
                pending += _fields("", event, None)
                self._flush(args, pending)
                pending = None
                continue
            if pending is not None:
                self._flush(args, pending)
                pending = None
            fields = _fields(chunk, event, status)
            final = final or status is not None
            if chunk and event is None and status is None:
                pending = fields
            else:
                self._flush(args, fields)
        if pending is not None:
            self._flush(args, pending)
        return args, final

    def _flush(self, args: list[str], fields: list[str]) -> None:
        self.entries += 1
        args += (f"0-{self.entries}", str(len(fields)), *fields)


def _fields(chunk: str, event: Event | None, status: Status | None) -> list[str]:
    """An entry as XADD field/value pairs; deltas skip JSON (they are nearly every entry)."""
    fields: list[str] = []
    if chunk:
        fields += ("c", chunk)
    if event is not None:
        kind = type(event)
        if kind is ReasoningDelta:
            fields += ("r", event.text)  # type: ignore[union-attr]
        elif kind is TextDelta:
            fields += ("t", event.text)  # type: ignore[union-attr]
        else:
            fields += ("e", json.dumps(event_to_dict(event), ensure_ascii=False))
        if event.source is not None and kind in (ReasoningDelta, TextDelta):
            fields += ("o", event.source)
    if status is not None:
        fields += ("s", status)
    return fields


class _Writer:
    """The hub's writer thread: drains the queue in pipelined batches.

    Callbacks only append to a deque and, once per batch, set an event: the run pays for
    neither encoding nor network. The writer lingers ``delay`` seconds after waking so that
    one round trip carries what every running stream produced meanwhile.
    """

    def __init__(self, hub: RedisHub, delay: float) -> None:
        self._hub = hub
        self._delay = delay
        self._queue: deque[_Pending] = deque()
        self._signal = threading.Event()
        self._signalled = False
        self._closed = False
        self._thread = threading.Thread(
            target=self._loop, name="reasoning-stream-redis-writer", daemon=True
        )
        self._thread.start()

    def put(self, item: _Pending) -> None:
        self._queue.append(item)
        if not self._signalled:
            self._signalled = True
            self._signal.set()

    def close(self) -> None:
        self._closed = True
        self._signal.set()
        self._thread.join(_FINISH_TIMEOUT)

    def _loop(self) -> None:
        queue = self._queue
        while True:
            self._signal.wait()
            self._signal.clear()
            self._signalled = False
            if self._delay and not self._closed:
                time.sleep(self._delay)
            while queue:
                batch = [queue.popleft() for _ in range(min(len(queue), _BATCH))]
                self._write(batch)
            if self._closed:
                return

    def _write(self, batch: list[_Pending]) -> None:
        hub = self._hub
        redis = _import_redis()
        per_sink: dict[_RedisSink, list[_Pending]] = {}
        for item in batch:
            if item[0].failure is None:
                per_sink.setdefault(item[0], []).append(item)
        if not per_sink:
            return
        maxlen = str(hub.maxlen)
        ttl = "" if hub.ttl is None else str(max(1, round(hub.ttl)))
        pipeline = hub._client.pipeline(transaction=False)
        for sink, items in per_sink.items():
            args, final = sink.encode(items)
            hub._append_script(
                keys=[sink.key, sink.run_key],
                args=[maxlen, ttl if final else "", *args],
                client=pipeline,
            )
        try:
            pipeline.execute()
        except redis.RedisError as error:
            reason = (
                f"Redis at {hub.url_for_messages} failed mid-run ({type(error).__name__}: {error})"
            )
            for sink in per_sink:
                sink.fail(reason)
            return
        for sink, items in per_sink.items():
            sink.confirm(len(items), items[-1][4] is not None)


_APPEND = """
-- KEYS: the stream, its claim. ARGV: maxlen, ttl ('' = none), then per entry: id, n, n fields.
local i = 3
while i <= #ARGV do
  local n = tonumber(ARGV[i + 1])
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], ARGV[i], unpack(ARGV, i + 2, i + 1 + n))
  i = i + 2 + n
end
if ARGV[2] ~= '' then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  redis.call('EXPIRE', KEYS[2], ARGV[2])
end
return 1
"""
"""Appends one stream's batch of entries in one call (one round trip carries every stream)."""


class RedisHub(Hub):
    """A hub on Redis Streams: runs publish from one process, readers follow from any other.

    ``url`` is a redis-py URL (``redis://host:port/db``); ``maxlen`` bounds the entries kept
    per stream (``XADD MAXLEN ~``: Redis may keep a few more); ``ttl`` is how many seconds a
    finished stream is kept (``None``: until deleted). Keys live under ``prefix``.
    ``write_delay`` is how long the writer thread lets entries gather before one pipelined
    round trip (seconds; it bounds the latency batching adds).

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
        write_delay: float = 0.001,
    ) -> None:
        if maxlen < 1:
            raise UsageError(f"maxlen must be at least 1, got {maxlen}")
        redis = _import_redis()
        self.url = url
        self.maxlen = maxlen
        self.ttl = ttl
        self.prefix = prefix
        self._connect_timeout = connect_timeout
        self._write_delay = write_delay
        self._client: Any = redis.Redis.from_url(url, **self._options(blocking=False))
        self._reader_client: Any = redis.Redis.from_url(url, **self._options(blocking=True))
        self._append_script = self._client.register_script(_APPEND)
        self._writer: _Writer | None = None
        self._reader: Follower | None = None
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
            # A blocking XREAD waits up to BLOCK_MS; the socket must outwait it.
            "socket_timeout": (BLOCK_MS / 1000 + 5) if blocking else 5.0,
            "retry": Retry(ExponentialBackoff(cap=0.2, base=0.02), 2),
        }

    def close(self) -> None:
        """Flush pending writes and close the connections."""
        with self._writer_lock:
            writer, self._writer = self._writer, None
            reader, self._reader = self._reader, None
        if writer is not None:
            writer.close()
        if reader is not None:
            reader.close()
        self._client.close()
        self._reader_client.close()

    def __enter__(self) -> RedisHub:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------------- writing

    def _writer_put(self) -> Callable[[_Pending], None]:
        with self._writer_lock:
            if self._writer is None:
                self._writer = _Writer(self, self._write_delay)
            return self._writer.put

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
        """Replay the entries past ``after``, then follow live; ends after the final entry.

        One reader thread per hub follows every subscribed stream with one ``XREAD BLOCK``
        (redis-py's sync client: the same on asyncio and trio). A stream that does not exist
        yet is waited for, up to ``timeout`` seconds (``None``: forever), then
        :class:`StreamNotFoundError`.
        """
        key = self.prefix + stream_id
        position = 0
        if after is not None:
            self.check_entry_id(after)
            first, last = await self._in_thread(self._bounds, key)
            self._check_after(stream_id, after, first, last)
            if last[0][0] == after and "s" in last[0][1]:
                return
            position = _seq(after)
        subscription = Subscription(key, position)
        await self._in_thread(self._follower().add, subscription)
        deadline = None if timeout is None else anyio.current_time() + timeout
        found = after is not None
        fresh = after is None  # from the start: take what retention kept
        try:
            while True:
                buffer = subscription.buffer
                while buffer:
                    read_from, batch = buffer.popleft()
                    if read_from > subscription.position:
                        continue  # read past us while we joined: it is read again for us
                    if _seq(batch[0].id) > subscription.position + 1 and not fresh:
                        raise StreamExpiredError(
                            f"entries of stream {stream_id!r} after {subscription.position} "
                            f"were trimmed (maxlen={self.maxlen}) before this reader got them"
                        )
                    fresh = False
                    for entry in batch:
                        number = _seq(entry.id)
                        if number <= subscription.position:
                            continue  # re-read for a reader that joined behind us
                        subscription.position = number
                        found = True
                        yield entry
                        if entry.final:
                            return
                if subscription.error is not None:
                    raise HubError(str(subscription.error)) from subscription.error
                wakeup = Wakeup()
                subscription.wake = wakeup.set
                if buffer or subscription.error is not None:
                    continue
                if found or deadline is None:
                    await wakeup.wait()
                    continue
                remaining = deadline - anyio.current_time()
                if remaining > 0 and await wakeup.wait(min(remaining, 1.0)):
                    continue
                found = bool(await self._in_thread(self._reader_client.exists, key, key + ":run"))
                if not found and anyio.current_time() >= deadline:
                    raise StreamNotFoundError(
                        f"no stream {stream_id!r} appeared in Redis at "
                        f"{self.url_for_messages} within {timeout} s"
                    )
        finally:
            subscription.wake = None
            self._follower().remove(subscription)

    def _bounds(self, key: str) -> tuple[list[Any], list[Any]]:
        client = self._reader_client
        return client.xrange(key, count=1), client.xrevrange(key, count=1)

    async def _in_thread(self, function: Callable[..., _T], *args: Any) -> _T:
        return await anyio.to_thread.run_sync(lambda: function(*args), abandon_on_cancel=True)

    def _follower(self) -> Follower:
        with self._writer_lock:
            if self._reader is None:
                redis = _import_redis()
                self._reader = Follower(
                    lambda: redis.Redis.from_url(
                        self.url, single_connection_client=True, **self._options(blocking=True)
                    ),
                    self._client,
                    _entry,
                    self.url_for_messages,
                )
            return self._reader


def _seq(entry_id: str) -> int:
    return int(entry_id.partition("-")[2])


def _past(after: str | None) -> str:
    return "-" if after is None else f"({after}"


def _entry(entry_id: str, fields: dict[str, str]) -> Entry:
    status = fields.get("s")
    event: Event | None = None
    if "r" in fields:
        event = ReasoningDelta(fields["r"], source=fields.get("o"))
    elif "t" in fields:
        event = TextDelta(fields["t"], source=fields.get("o"))
    elif "e" in fields:
        event = event_from_dict(json.loads(fields["e"]))
    return Entry(entry_id, fields.get("c", ""), event, status is not None, status)  # type: ignore[arg-type]
