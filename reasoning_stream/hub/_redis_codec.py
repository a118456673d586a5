"""How a ``RedisHub`` stream lies in Redis: its keys, its entries' fields, the scripts that write.

Layout, under ``prefix`` (default ``"reasoning-stream:"``), with ``<id>`` the stream id
percent-encoded for ``%``, ``{`` and ``}`` (``reasoning_stream._redis_keys``): the braces make
it the keys' Redis Cluster hash tag, so a stream's three keys share one slot, no two ids and no
two parts collide, and no key meets a ``RedisStore``'s under the same prefix.

- ``<prefix>{<id>}``: the stream. Entry ids are ``0-<n>`` for the n-th entry of the
  run, written explicitly (one writer per stream, guaranteed by the claim below), so a resume
  point can be checked against what retention kept. Fields: ``c`` the chunk (left out when
  empty); the event as ``r`` (reasoning delta text) or ``t`` (text delta text) with ``o`` its
  source, or ``e`` any other event as JSON; ``R`` or ``T`` for a delta whose chunk is its
  own text (then no ``c``: the text is stored once); ``s`` the status (final entry only),
  with ``x`` why a failed run failed (``Entry.error``) and ``v`` the run's sealed envelope
  (``Entry.envelope``, hubs given ``seal_keys``; never raw opaque state).
- ``<prefix>{<id>}:run``: the claim, a hash created when a run starts (only if absent), so
  a stream id is used once: ``owner`` (a random token, present while the run is running),
  ``writer`` (host and pid, for messages), ``lease`` (seconds) and ``close`` (the marker that
  would balance the channel if the run stopped now). Both keys get ``EXPIRE ttl`` with the
  final entry; while running they are kept ``lease + ttl`` seconds ahead.
- ``<prefix>{<id>}:lease``: the running writer's lease, ``SET ... PX lease`` and renewed by
  the writer thread (a heartbeat every third of the lease). A writer
  whose process crashed or hung stops renewing it; the first reader (or ``run`` of the same id)
  that finds the claim still owned but the lease gone ends the stream for it, in one script:
  it appends the closing marker if reasoning was open and a final entry with status
  ``"error"`` and ``x`` the reason (``Entry.error``). A writer that comes back after that is
  fenced off by its token and gets :class:`PublishError`.

Stopping (``hub.stop``): the ``STOP`` script marks the claim (``stop``, so a second stop
says False) and publishes the stream id on ``<prefix>stop`` (:func:`stop_channel`), the
channel every ``RedisHub`` that runs a stream listens on; the one running it cancels the run.

This module is the format only (pure functions and the scripts' text); the writer thread is
in ``_redis_writer``, the reading side in ``_redis_reader``, and ``_redis`` wires them.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Protocol

from .._events import Event, ReasoningDelta, TextDelta
from .._pipe import Status
from .._redis_keys import decode_id, tagged_key
from ._base import InvalidEntryIdError
from ._entry import Entry, event_from_dict, event_to_dict

__all__ = [
    "ABANDON",
    "APPEND",
    "CLAIM",
    "KEYS_LOST",
    "LEASE_LOST",
    "STOP",
    "STREAM_LOST",
    "HubSettings",
    "check_entry_id",
    "decode_entry",
    "entry_fields",
    "hold_seconds",
    "id_of",
    "import_redis",
    "past",
    "seq",
    "stop_channel",
    "stream_keys",
    "ttl_seconds",
]

_ID = re.compile(r"0-([1-9][0-9]{0,17})")
LEASE_LOST = "reasoning-stream: lease lost"
"""The error text the append script answers with when the claim is no longer ours."""


class HubSettings(Protocol):
    """What the reader and the writer read off their ``RedisHub``, at the time they need it."""

    prefix: str
    maxlen: int
    ttl: float | None
    lease: float

    @property
    def url_for_messages(self) -> str: ...


def import_redis() -> Any:
    """redis-py, imported on first use so that the hub package imports without it."""
    try:
        import redis
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "RedisHub needs redis-py: pip install 'reasoning-stream[redis]'"
        ) from error
    return redis


def stream_keys(prefix: str, stream_id: str) -> list[str]:
    """The stream's three keys, in the order every script takes them: log, claim, lease.

    They share one hash tag, the encoded id (:mod:`.._redis_keys`): no two ids and no two
    parts collide, and on Redis Cluster they live in one slot.

    >>> stream_keys("rs:", "a:run")
    ['rs:{a:run}', 'rs:{a:run}:run', 'rs:{a:run}:lease']
    """
    key = tagged_key(prefix, stream_id)
    return [key, key + ":run", key + ":lease"]


def stop_channel(prefix: str) -> str:
    """The pub/sub channel stop requests go out on (the stream id is the message).

    >>> stop_channel("rs:")
    'rs:stop'
    """
    return prefix + "stop"


def id_of(prefix: str, key: str) -> str:
    """The stream id of a log key :func:`stream_keys` built."""
    return decode_id(key[len(prefix) + 1 : -1])


def ttl_seconds(ttl: float | None) -> str:
    """The scripts' ``ttl`` argument: whole seconds, at least one; ``""`` for none."""
    return "" if ttl is None else str(max(1, round(ttl)))


def hold_seconds(lease: float, ttl: float | None) -> str:
    """How far ahead a running stream's keys are kept (``lease + ttl``); ``""`` for ever."""
    return "" if ttl is None else str(math.ceil(lease + ttl))


def check_entry_id(entry_id: str) -> None:
    """Raise :class:`InvalidEntryIdError` unless ``entry_id`` looks like a RedisHub id."""
    if not isinstance(entry_id, str) or not _ID.fullmatch(entry_id):
        raise InvalidEntryIdError(
            f"{entry_id!r} is not an entry id of a RedisHub (they look like '0-17')"
        )


def seq(entry_id: str) -> int:
    """The entry number in a ``0-<n>`` id."""
    return int(entry_id.partition("-")[2])


def past(after: str | None) -> str:
    """The ``XRANGE`` start that excludes ``after`` (every entry when ``None``)."""
    return "-" if after is None else f"({after}"


def entry_fields(
    chunk: str,
    event: Event | None,
    status: Status | None,
    error: str | None = None,
    envelope: str | None = None,
) -> list[str]:
    """An entry as XADD field/value pairs; deltas skip JSON (they are nearly every entry).

    A delta whose chunk is its own text (no marker, nothing escaped: nearly every entry)
    carries the text once, as ``R`` or ``T``.

    >>> entry_fields("hi", TextDelta("hi"), None)
    ['T', 'hi']
    >>> decode_entry("0-1", {"T": "hi"}).chunk
    'hi'
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
            # ASCII JSON: exact for any str, also one holding half a UTF-16 pair.
            fields += ("e", json.dumps(event_to_dict(event)))
    if chunk:
        fields += ("c", chunk)
    if status is not None:
        fields += ("s", status)
        if error is not None:
            fields += ("x", error)
        if envelope is not None:
            fields += ("v", envelope)
    return fields


def decode_entry(entry_id: str, fields: dict[str, str]) -> Entry:
    """The :class:`Entry` that ``entry_fields`` (or the abandon script) wrote."""
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
    return Entry(entry_id, chunk, event, final, status, fields.get("x"), fields.get("v"))  # type: ignore[arg-type]


APPEND = """
-- KEYS: per stream its log, claim and lease. ARGV: maxlen, ttl ('' = none), lease ms, hold
-- ('' = none: lease + ttl, seconds), then per stream: what to do after its entries ('f' end
-- the run, 'r' renew its lease and keep its keys, '' nothing more), owner, closing marker
-- ('k' unchanged, else 's' and the marker), the number of its first entry, its entry count,
-- then per entry: n, n fields (entry ids are 0-<number>, counting on).
-- Returns per stream 1, or why it was not written.
local results = {}
local i = 5
for s = 1, #KEYS, 3 do
  local log, claim, lease = KEYS[s], KEYS[s + 1], KEYS[s + 2]
  local after, owner, closing = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local number = tonumber(ARGV[i + 3])
  local count = tonumber(ARGV[i + 4])
  i = i + 5
  local first = i
  for _ = 1, count do i = i + 1 + tonumber(ARGV[i]) end
  local outcome = 1
  if redis.call('HGET', claim, 'owner') ~= owner then
    if redis.call('EXISTS', claim) == 0 then
      outcome = 'reasoning-stream: keys lost'
    else
      outcome = 'reasoning-stream: lease lost'
    end
  else
    local j = first
    while j < i do
      local n = tonumber(ARGV[j])
      local reply = redis.pcall(
        'XADD', log, 'MAXLEN', '~', ARGV[1], '0-' .. number, unpack(ARGV, j + 1, j + n))
      if type(reply) == 'table' and reply.err then
        outcome = reply.err
        break
      end
      number = number + 1
      j = j + 1 + n
    end
  end
  if outcome == 1 then
    if after == 'f' then
      redis.call('HDEL', claim, 'owner')
      redis.call('DEL', lease)
      if ARGV[2] ~= '' then
        redis.call('EXPIRE', log, ARGV[2])
        redis.call('EXPIRE', claim, ARGV[2])
      end
    else
      if closing ~= 'k' then redis.call('HSET', claim, 'close', string.sub(closing, 2)) end
      if after == 'r' then
        redis.call('SET', lease, owner, 'PX', ARGV[3])
        if ARGV[4] ~= '' then
          redis.call('EXPIRE', log, ARGV[4])
          redis.call('EXPIRE', claim, ARGV[4])
        end
      end
    end
  end
  results[#results + 1] = outcome
end
return results
"""
"""Appends the batches of any number of streams in one call: one script run for every stream
of a write on one Redis server (on a cluster, one per stream: a script's keys must share a
slot). The lease is renewed, and the keys kept ``lease + ttl`` ahead, on the writer's
heartbeat (every third of the lease), not with every batch. A stream whose claim is no longer
ours (a reader ended it) or whose keys vanished is left alone and named in the reply; the
others are written."""

CLAIM = """
-- KEYS: the stream, its claim, its lease. ARGV: owner, writer, lease ms, lease s, hold.
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('DEL', KEYS[1])  -- a leftover log without its claim: start clean
redis.call('HSET', KEYS[2], 'owner', ARGV[1], 'writer', ARGV[2], 'lease', ARGV[4], 'close', '')
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[3])
if ARGV[5] ~= '' then redis.call('EXPIRE', KEYS[2], ARGV[5]) end
return 1
"""
"""Claims a stream id for one run and takes its first lease."""

ABANDON = """
-- KEYS: the stream, its claim, its lease. ARGV: maxlen, ttl ('' = none).
-- Returns 1 when this call ended the stream, 0 when it is running or ended, -1 when there
-- is no claim at all (not started, expired, or its keys were lost).
if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
if not redis.call('HGET', KEYS[2], 'owner') then return 0 end  -- ended
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

KEYS_LOST = "reasoning-stream: keys lost"
"""The error text the append script answers with when the stream's claim is gone."""

STREAM_LOST = (
    "stream {stream_id!r} vanished from Redis at {url} while it was running: its keys are gone "
    "(FLUSHALL, a restart without persistence, eviction, or a failover to a replica that had "
    "not got them), so its entries and its end are lost"
)
"""What the readers and the writer of a stream whose keys vanished say (``str.format``)."""

STOP = """
-- KEYS: the stream, its claim, its lease. ARGV: the stop channel, the stream id.
-- Returns 1 when this call asked the running writer to stop, 0 when the stream is not
-- running (finished, unknown, its writer lost) or a stop was asked for already.
if not redis.call('HGET', KEYS[2], 'owner') then return 0 end
if redis.call('EXISTS', KEYS[3]) == 0 then return 0 end
if redis.call('HSETNX', KEYS[2], 'stop', '1') == 0 then return 0 end
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
"""
"""Asks the writer of a running stream to stop, exactly once (the writer's hub listens)."""
