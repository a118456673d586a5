"""``RedisHub``: each run's channel as a Redis Stream, for readers in any process.

Layout, under ``prefix`` (default ``"reasoning-stream:"``):

- ``<prefix><stream_id>``: the stream. Entry ids are ``0-<n>`` for the n-th entry of the
  run, written explicitly (one writer per stream, guaranteed by the claim below), so a resume
  point can be checked against what retention kept. Fields: ``c`` the chunk (left out when
  empty); the event as ``r`` (reasoning delta text) or ``t`` (text delta text) with ``o`` its
  source, or ``e`` any other event as JSON; ``R`` or ``T`` for a delta whose chunk is its
  own text (then no ``c``: the text is stored once); ``s`` the status (final entry only).
- ``<prefix><stream_id>:run``: the claim, a hash created when a run starts (only if absent), so
  a stream id is used once: ``owner`` (a random token, present while the run is running),
  ``writer`` (host and pid, for messages), ``lease`` (seconds) and ``close`` (the marker that
  would balance the channel if the run stopped now). Both keys get ``EXPIRE ttl`` with the
  final entry; while running they are kept ``lease + ttl`` seconds ahead.
- ``<prefix><stream_id>:lease``: the running writer's lease, ``SET ... PX lease`` and renewed by
  the writer thread (a heartbeat every third of the lease, and with every write). A writer
  whose process crashed or hung stops renewing it; the first reader (or ``run`` of the same id)
  that finds the claim still owned but the lease gone ends the stream for it, in one script:
  it appends the closing marker if reasoning was open and a final entry with status
  ``"error"`` and ``x`` the reason (``Entry.error``). A writer that comes back after that is
  fenced off by its token and gets :class:`PublishError`.

Writes go through one writer thread per hub that batches every pending entry of every running
stream into one pipelined round trip (a small script per stream running ``XADD ... MAXLEN ~
maxlen``): the run's callbacks only append to a queue, so neither Redis nor any reader can slow
the model stream. Reads go through one reader thread per hub (``_follow.py``) that follows every
subscribed stream with one ``XREAD BLOCK`` on redis-py's sync client, the same on asyncio and
trio (redis-py's asyncio client does not run on trio).
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
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
from .._stream import ReasoningStream
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
_OPEN, _CLOSE = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG
_LOST = "reasoning-stream: lease lost"


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
        "closing",
        "entries",
        "failure",
        "key",
        "keys",
        "owner",
        "saw_text",
        "seq",
        "stream_id",
        "written",
    )

    def __init__(self, hub: RedisHub, stream_id: str, failure: str | None, owner: str = "") -> None:
        self.stream_id = stream_id
        self.key = hub.prefix + stream_id
        self.keys = [self.key, self.key + ":run", self.key + ":lease"]
        self.owner = owner
        """The claim's token: every write checks it is still ours (fencing)."""
        self.closing = ""
        """The marker that would balance the channel if the run stopped now (writer thread)."""
        self.seq = 0
        self.saw_text = False
        self.failure = failure
        """Why publishing stopped (Redis unreachable at the start or failing mid-run)."""
        self.written = 0
        """Chunks and events Redis confirmed (counted by the writer thread only)."""
        self.entries = 0
        """Entries numbered so far (writer thread only): ids are ``0-1``, ``0-2``, ..."""
        self._done = threading.Event()
        self._put = hub._writer_put(self if failure is None else None)

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

    def encode(self, items: list[_Pending]) -> tuple[list[str], bool]:
        """The script arguments for ``items`` (writer thread only), and whether one is final.

        The number of the batch's first entry, then each entry as its field count and fields
        (the script numbers the entries on from the first). A chunk directly followed by an
        event shares one entry with it (an entry may carry both, in the order the callbacks saw
        them): about half the entries for a delta stream.
        """
        args = [str(self.entries + 1)]
        pending: str | None = None  # a chunk-only entry that an event may still join
        final = False
        for _, _, chunk, event, status in items:
            if pending is not None:
                if event is not None and not chunk and status is None:
                    self._flush(args, _fields(pending, event, None))
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
                self._flush(args, _fields(chunk, event, status))
        if pending is not None:
            self._flush(args, ["c", pending])
        return args, final

    def _flush(self, args: list[str], fields: list[str]) -> None:
        self.entries += 1
        args.append(str(len(fields)))
        args += fields


def _fields(chunk: str, event: Event | None, status: Status | None) -> list[str]:
    """An entry as XADD field/value pairs; deltas skip JSON (they are nearly every entry).

    A delta whose chunk is its own text (no marker, nothing escaped: nearly every entry)
    carries the text once, as ``R`` or ``T``.
    """
    fields: list[str] = []
    if event is not None:
        kind = type(event)
        if kind is ReasoningDelta or kind is TextDelta:
            text: str = event.text  # type: ignore[union-attr]
            if chunk == text:
                fields += ("R" if kind is ReasoningDelta else "T", text)
                chunk = ""
            else:
                fields += ("r" if kind is ReasoningDelta else "t", text)
            if event.source is not None:
                fields += ("o", event.source)
        else:
            fields += ("e", json.dumps(event_to_dict(event), ensure_ascii=False))
    if chunk:
        fields += ("c", chunk)
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
        self._heartbeat = hub.lease / 3
        self._running: set[_RedisSink] = set()
        """Sinks whose lease this thread renews (added by ``run``, removed at their end)."""
        self._running_lock = threading.Lock()
        self._queue: deque[_Pending] = deque()
        self._signal = threading.Event()
        self._signalled = False
        self._closed = False
        self._thread = threading.Thread(
            target=self._loop, name="reasoning-stream-redis-writer", daemon=True
        )
        self._thread.start()

    def hold(self, sink: _RedisSink) -> None:
        """Renew ``sink``'s lease from now until its final entry (or a failure)."""
        with self._running_lock:
            self._running.add(sink)
        self._signal.set()

    def release(self, sink: _RedisSink) -> None:
        with self._running_lock:
            self._running.discard(sink)

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
        next_beat = time.monotonic() + self._heartbeat
        while True:
            wait = max(0.0, next_beat - time.monotonic()) if self._running else None
            self._signal.wait(wait)
            self._signal.clear()
            self._signalled = False
            if self._delay and not self._closed and queue:
                time.sleep(self._delay)
            beat = bool(self._running) and time.monotonic() >= next_beat
            if beat:
                next_beat = time.monotonic() + self._heartbeat
            while queue or beat:
                batch = [queue.popleft() for _ in range(min(len(queue), _BATCH))]
                self._write(batch, beat)
                beat = False
            if self._closed:
                return

    def _write(self, batch: list[_Pending], beat: bool) -> None:
        hub = self._hub
        redis = _import_redis()
        per_sink: dict[_RedisSink, list[_Pending]] = {}
        if beat:  # every running stream renews its lease, with entries or without
            with self._running_lock:
                per_sink = {sink: [] for sink in self._running if sink.failure is None}
        for item in batch:
            if item[0].failure is None:
                per_sink.setdefault(item[0], []).append(item)
        if not per_sink:
            return
        maxlen = str(hub.maxlen)
        ttl = "" if hub.ttl is None else str(max(1, round(hub.ttl)))
        hold = "" if hub.ttl is None else str(math.ceil(hub.lease + hub.ttl))
        lease_ms = str(max(1, round(hub.lease * 1000)))
        pipeline = hub._client.pipeline(transaction=False)
        for sink, items in per_sink.items():
            args, final = sink.encode(items)
            head = [maxlen, ttl, "1" if final else "", sink.owner, lease_ms, hold, sink.closing]
            hub._append_script(keys=sink.keys, args=[*head, *args], client=pipeline)
        try:
            results = pipeline.execute(raise_on_error=False)
        except redis.RedisError as error:
            results = [error] * len(per_sink)
        for (sink, items), result in zip(per_sink.items(), results, strict=True):
            if isinstance(result, Exception):
                if _LOST in str(result):
                    sink.lost(hub.lease)
                else:
                    sink.fail(
                        f"Redis at {hub.url_for_messages} failed mid-run "
                        f"({type(result).__name__}: {result})"
                    )
                self.release(sink)
                continue
            final = bool(items) and items[-1][4] is not None
            sink.confirm(len(items), final)
            if final:
                self.release(sink)


_APPEND = """
-- KEYS: the stream, its claim, its lease. ARGV: maxlen, ttl ('' = none), final ('1' or ''),
-- owner, lease ms, hold ('' = none: lease + ttl, seconds), closing marker, the number of
-- the first entry, then per entry: n, n fields (entry ids are 0-<number>, counting on).
if redis.call('HGET', KEYS[2], 'owner') ~= ARGV[4] then
  return redis.error_reply('ERR reasoning-stream: lease lost')
end
local number = tonumber(ARGV[8])
local i = 9
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '0-' .. number, unpack(ARGV, i + 1, i + n))
  number = number + 1
  i = i + 1 + n
end
if ARGV[3] == '1' then
  redis.call('HDEL', KEYS[2], 'owner')
  redis.call('DEL', KEYS[3])
  if ARGV[2] ~= '' then
    redis.call('EXPIRE', KEYS[1], ARGV[2])
    redis.call('EXPIRE', KEYS[2], ARGV[2])
  end
else
  redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5])
  redis.call('HSET', KEYS[2], 'close', ARGV[7])
  if ARGV[6] ~= '' then
    redis.call('EXPIRE', KEYS[1], ARGV[6])
    redis.call('EXPIRE', KEYS[2], ARGV[6])
  end
end
return 1
"""
"""Appends one stream's batch of entries and renews its lease, in one call (one round trip
carries every stream); refuses when the claim is no longer ours (a reader ended the stream)."""

_CLAIM = """
-- KEYS: the stream, its claim, its lease. ARGV: owner, writer, lease ms, lease s, hold.
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('DEL', KEYS[1])  -- a leftover log without its claim: start clean
redis.call('HSET', KEYS[2], 'owner', ARGV[1], 'writer', ARGV[2], 'lease', ARGV[4], 'close', '')
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[3])
if ARGV[5] ~= '' then redis.call('EXPIRE', KEYS[2], ARGV[5]) end
return 1
"""
"""Claims a stream id for one run and takes its first lease."""

_ABANDON = """
-- KEYS: the stream, its claim, its lease. ARGV: maxlen, ttl ('' = none).
if not redis.call('HGET', KEYS[2], 'owner') then return 0 end  -- unknown, or ended
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end       -- its writer is alive
local info = redis.call('HMGET', KEYS[2], 'writer', 'lease', 'close')
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local n = 0
if #last > 0 then n = tonumber(string.match(last[1][1], '%-(%d+)$')) end
local fields = {}
if info[3] and info[3] ~= '' then fields = {'c', info[3]} end
table.insert(fields, 's')
table.insert(fields, 'error')
table.insert(fields, 'x')
table.insert(fields, 'the writer of this stream (' .. tostring(info[1]) .. ') stopped ' ..
  'renewing its ' .. tostring(info[2]) .. ' s lease before the final entry (its process ' ..
  'crashed, hung or lost Redis): the hub ended the stream for it')
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '0-' .. (n + 1), unpack(fields))
redis.call('HDEL', KEYS[2], 'owner')
if ARGV[2] ~= '' then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  redis.call('EXPIRE', KEYS[2], ARGV[2])
end
return 1
"""
"""Ends a stream whose writer was lost (claim still owned, lease gone), exactly once."""


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
        lease: float = 10.0,
    ) -> None:
        if maxlen < 1:
            raise UsageError(f"maxlen must be at least 1, got {maxlen}")
        if not lease > 0:
            raise UsageError(f"lease must be a positive number of seconds, got {lease}")
        self.lease = lease
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
        self._claim_script = self._client.register_script(_CLAIM)
        self._abandon_script = self._client.register_script(_ABANDON)
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

    def _writer_put(self, running: _RedisSink | None) -> Callable[[_Pending], None]:
        with self._writer_lock:
            if self._writer is None:
                self._writer = _Writer(self, self._write_delay)
            if running is not None:
                self._writer.hold(running)
            return self._writer.put

    def _keys(self, stream_id: str) -> list[str]:
        key = self.prefix + stream_id
        return [key, key + ":run", key + ":lease"]

    def _end_abandoned(self, keys: list[str], client: Any = None) -> bool:
        """End the stream at ``keys`` if its writer's lease lapsed; True when this call did."""
        ttl = "" if self.ttl is None else str(max(1, round(self.ttl)))
        return bool(
            self._abandon_script(
                keys=keys, args=[str(self.maxlen), ttl], client=client or self._client
            )
        )

    def _sweep(self, client: Any, keys: list[str]) -> None:
        """The reader thread, now and then: end every followed stream whose writer was lost."""
        ttl = "" if self.ttl is None else str(max(1, round(self.ttl)))
        pipeline = client.pipeline(transaction=False)
        for key in keys:
            self._abandon_script(
                keys=[key, key + ":run", key + ":lease"],
                args=[str(self.maxlen), ttl],
                client=pipeline,
            )
        pipeline.execute()

    def _open(self, stream_id: str) -> _RedisSink:
        redis = _import_redis()
        keys = self._keys(stream_id)
        owner = os.urandom(12).hex()
        hold = "" if self.ttl is None else str(math.ceil(self.lease + self.ttl))
        writer = f"{socket.gethostname()} pid {os.getpid()}"
        abandoned = False
        try:
            claimed = self._claim_script(
                keys=keys,
                args=[owner, writer, max(1, round(self.lease * 1000)), f"{self.lease:g}", hold],
            )
            if not claimed:
                abandoned = self._end_abandoned(keys)
        except redis.RedisError as error:
            return _RedisSink(
                self,
                stream_id,
                f"Redis at {self.url_for_messages} was unreachable when the run started "
                f"({type(error).__name__}: {error})",
            )
        if not claimed:
            lost = (
                " (its writer was lost, so the hub ended it with status 'error')"
                if abandoned
                else ""
            )
            raise UsageError(
                f"stream {stream_id!r} already exists in Redis at {self.url_for_messages}"
                f"{lost}; use a new stream_id for every run"
            )
        return _RedisSink(self, stream_id, None, owner)

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
        A stream whose writer was lost (see ``lease``) is ended first, so it reads finished.
        """
        key = self.prefix + stream_id
        client = self._reader_client
        if after is not None:
            self.check_entry_id(after)
            self._check_after(
                stream_id, after, client.xrange(key, count=1), client.xrevrange(key, count=1)
            )
        entries = [_entry(i, f) for i, f in client.xrange(key, min=_past(after))]
        if (not entries or not entries[-1].final) and self._end_abandoned(
            self._keys(stream_id), client
        ):
            entries = [_entry(i, f) for i, f in client.xrange(key, min=_past(after))]
        return entries

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
                    sweep=self._sweep,
                    sweep_every=min(self.lease / 2, 1.0),
                )
            return self._reader


def _seq(entry_id: str) -> int:
    return int(entry_id.partition("-")[2])


def _past(after: str | None) -> str:
    return "-" if after is None else f"({after}"


def _entry(entry_id: str, fields: dict[str, str]) -> Entry:
    status = fields.get("s")
    event: Event | None = None
    chunk = fields.get("c", "")
    if "R" in fields:
        chunk = fields["R"]
        event = ReasoningDelta(chunk, source=fields.get("o"))
    elif "T" in fields:
        chunk = fields["T"]
        event = TextDelta(chunk, source=fields.get("o"))
    elif "r" in fields:
        event = ReasoningDelta(fields["r"], source=fields.get("o"))
    elif "t" in fields:
        event = TextDelta(fields["t"], source=fields.get("o"))
    elif "e" in fields:
        event = event_from_dict(json.loads(fields["e"]))
    final = status is not None
    return Entry(entry_id, chunk, event, final, status, fields.get("x"))  # type: ignore[arg-type]
