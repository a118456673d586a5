"""``RedisStore``: conversations in Redis, shared by processes on many machines.

Every write is one Lua script, which Redis runs atomically: it checks the expected version,
takes a new one from the store's counter and writes, with no other command in between. A
load reads the head and the turns in one ``MULTI``/``EXEC`` transaction, so it never sees half
of a write. Keys, under ``namespace`` (default ``reasoning-stream``), with ``<id>`` the
conversation id with ``%``, ``{`` and ``}`` percent-encoded::

    <namespace>:{<id>}:conversation   hash: version, length, pending (JSON, absent when none)
    <namespace>:{<id>}:turns          list: one JSON document per message
    <namespace>:{<id>}:version        the counter its writes take versions from (kept after
                                      a delete, so a conversation saved again goes on above)

The braces make the encoded id the keys' Redis Cluster hash tag: one conversation's keys share
a hash slot, so each script runs on a cluster too. No two ids and no two parts collide, and
none meets a key of a ``RedisHub`` under the same prefix (see ``reasoning_stream._redis_keys``).
``list`` scans the keys (on every primary of a cluster).
"""

from __future__ import annotations

import builtins
import importlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .._exceptions import CorruptConversationError, StoreError, UsageError
from .._redis_client import cluster_hint, connect
from .._redis_keys import (
    check_prefix,
    decode_id,
    encode_id,
    glob_escape,
    redacted_url,
    tagged_key,
)
from ._base import ConversationStore, StoredConversation, conflict, not_found

__all__ = ["RedisStore"]

_T = TypeVar("_T")

# KEYS: the head, the turns, the counter (one hash slot: see the key layout above). ARGV[1]:
# the highest version this store object has seen, ARGV[2]: the expected version ('' = none).
# A version is the greatest of: the conversation's last + 1, Redis's clock in microseconds, the
# caller's highest + 1. So versions grow per conversation, per store object, and (as far as
# the servers' clocks agree) across the store, with no key shared by all conversations: a
# Redis Cluster runs every script on the one node that holds its conversation.
# Replies: {"ok", version} | {"missing"} | {"conflict", stored version or ""}.
_VERSION = """
local function next_version()
  local clock = redis.call('TIME')
  local version = math.max(
    tonumber(redis.call('GET', KEYS[3]) or '0') + 1,
    tonumber(clock[1]) * 1000000 + tonumber(clock[2]),
    tonumber(ARGV[1]) + 1)
  version = string.format('%.0f', version)
  redis.call('SET', KEYS[3], version)
  return version
end
local current = redis.call('HGET', KEYS[1], 'version')
"""

_SAVE = (
    _VERSION
    + """
if ARGV[2] == '' then
  if current then return {'conflict', current} end
elseif current ~= ARGV[2] then
  return {'conflict', current or ''}
end
local version = next_version()
redis.call('DEL', KEYS[1], KEYS[2])
local count = #ARGV - 4
for first = 5, #ARGV, 1000 do
  redis.call('RPUSH', KEYS[2], unpack(ARGV, first, math.min(first + 999, #ARGV)))
end
redis.call('HSET', KEYS[1], 'version', version, 'length', count)
if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'pending', ARGV[4]) end
return {'ok', version}
"""
)

# The first check of every script but _SAVE: the conversation exists, at the expected version.
_EXISTING = (
    _VERSION
    + """
if not current then return {'missing'} end
if ARGV[2] ~= '' and current ~= ARGV[2] then return {'conflict', current} end
"""
)

_APPEND = (
    _EXISTING
    + """
local version = next_version()
redis.call('RPUSH', KEYS[2], ARGV[3])
redis.call('HINCRBY', KEYS[1], 'length', 1)
redis.call('HSET', KEYS[1], 'version', version)
if ARGV[4] == '1' then redis.call('HDEL', KEYS[1], 'pending') end
return {'ok', version}
"""
)

_SET_PENDING = (
    _EXISTING
    + """
local version = next_version()
redis.call('HSET', KEYS[1], 'version', version)
if ARGV[3] == '1' then
  redis.call('HSET', KEYS[1], 'pending', ARGV[4])
else
  redis.call('HDEL', KEYS[1], 'pending')
end
return {'ok', version}
"""
)

_DELETE = (
    _EXISTING
    + """
next_version()  -- the counter stays: a conversation saved again under this id goes on above
redis.call('DEL', KEYS[1], KEYS[2])
return {'ok', 0}
"""
)

_LOAD = """
return {redis.call('HGETALL', KEYS[1]), redis.call('LRANGE', KEYS[2], 0, -1)}
"""


def _redis() -> Any:
    try:
        return importlib.import_module("redis")
    except ImportError as error:
        raise UsageError(
            "RedisStore needs the 'redis' package: pip install 'reasoning-stream[redis]'"
        ) from error


class RedisStore(ConversationStore):
    """Conversations in Redis: many processes on many machines share them.

    Args:
        url: ``redis://[user:password@]host:port/db`` (or ``rediss://``, ``unix://``).
        namespace: the key prefix; two stores with different namespaces never meet.
        timeout: seconds to connect and to wait for a reply.
        client: a ``redis.Redis`` (or ``RedisCluster``) client to use instead of ``url`` (it
            must not decode responses); the store does not close it.
        cluster: ``url`` names a node of a Redis Cluster. A conversation's keys share one
            hash slot, so every write is still one atomic script.

    The client built from ``url`` never retries a command by itself: a write whose reply was
    lost could otherwise land twice. A Redis that is down raises
    :class:`~reasoning_stream.StoreError` and nothing is written.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        namespace: str = "reasoning-stream",
        timeout: float | None = 10.0,
        client: Any = None,
        cluster: bool = False,
    ) -> None:
        redis = _redis()
        if not namespace:
            raise UsageError("namespace must be a non-empty str")
        try:
            check_prefix(namespace, "namespace")
        except ValueError as error:
            raise UsageError(str(error)) from None
        self.url = redacted_url(url)
        self.namespace = namespace
        self.cluster = cluster
        self._owns_client = client is None
        if client is None:
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            client = connect(
                url,
                cluster=cluster,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry=Retry(NoBackoff(), 0),
                decode_responses=False,
            )
        self._client = client
        self._errors: tuple[type[BaseException], ...] = (redis.exceptions.RedisError,)
        self._response_error: type[BaseException] = redis.exceptions.ResponseError
        self._scripts = {
            name: client.register_script(source)
            for name, source in (
                ("save", _SAVE),
                ("append", _APPEND),
                ("pending", _SET_PENDING),
                ("delete", _DELETE),
                ("load", _LOAD),
            )
        }
        self._prefix = namespace + ":"
        self._highest = 0
        """The highest version this object wrote or read (a floor for the next one)."""
        self._highest_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r}, namespace={self.namespace!r})"

    def close(self) -> None:
        """Close the connections of a client this store built."""
        if self._owns_client:
            self._client.close()

    # ------------------------------------------------------------------- plumbing

    def _keys(self, conversation_id: str) -> list[bytes]:
        """Head, turns and counter of ``conversation_id``: one hash tag, so one slot."""
        return [
            tagged_key(self._prefix, conversation_id, part).encode("utf-8")
            for part in (":conversation", ":turns", ":version")
        ]

    def _call(self, conversation_id: str | None, work: Callable[[], _T]) -> _T:
        subject = "" if conversation_id is None else f" for conversation {conversation_id!r}"
        try:
            return work()
        except self._response_error as error:
            if conversation_id is not None and "WRONGTYPE" in str(error):
                raise CorruptConversationError(
                    f"stored conversation {conversation_id!r} is corrupt: a key of it holds "
                    f"the wrong Redis type ({error})",
                    conversation_id=conversation_id,
                ) from error
            raise StoreError(
                f"Redis at {self.url} refused a command{subject}: {error}{cluster_hint(error)}",
                conversation_id=conversation_id,
            ) from error
        except self._errors as error:
            raise StoreError(
                f"Redis at {self.url} failed{subject} ({type(error).__name__}: {error}); "
                "nothing was written",
                conversation_id=conversation_id,
            ) from error

    def _write(
        self,
        script: str,
        conversation_id: str,
        keys: list[bytes],
        args: list[Any],
        expected: int | None,
    ) -> int:
        reply = self._call(conversation_id, lambda: self._scripts[script](keys=keys, args=args))
        outcome = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
        if outcome == "ok":
            return self._seen(int(reply[1]))
        if outcome == "missing":
            raise not_found(conversation_id)
        stored = reply[1].decode() if isinstance(reply[1], bytes) else str(reply[1])
        raise conflict(conversation_id, expected, int(stored) if stored.isdigit() else None)

    def _seen(self, version: int) -> int:
        with self._highest_lock:
            self._highest = max(self._highest, version)
        return version

    @staticmethod
    def _expected(expected: int | None) -> str:
        return "" if expected is None else str(expected)

    # ----------------------------------------------------------------- primitives

    def _save(
        self,
        conversation_id: str,
        turns: builtins.list[str],
        pending: str | None,
        expected: int | None,
    ) -> int:
        args: list[Any] = [
            str(self._highest),
            self._expected(expected),
            "0" if pending is None else "1",
            "" if pending is None else pending.encode("utf-8"),
            *(turn.encode("utf-8") for turn in turns),
        ]
        return self._write("save", conversation_id, self._keys(conversation_id), args, expected)

    def _append(
        self, conversation_id: str, turn: str, clears_pending: bool, expected: int | None
    ) -> int:
        args = [
            str(self._highest),
            self._expected(expected),
            turn.encode("utf-8"),
            "1" if clears_pending else "0",
        ]
        return self._write("append", conversation_id, self._keys(conversation_id), args, expected)

    def _set_pending(self, conversation_id: str, pending: str | None, expected: int | None) -> int:
        args = [
            str(self._highest),
            self._expected(expected),
            "0" if pending is None else "1",
            "" if pending is None else pending.encode("utf-8"),
        ]
        return self._write("pending", conversation_id, self._keys(conversation_id), args, expected)

    def _delete(self, conversation_id: str, expected: int | None) -> None:
        args = [str(self._highest), self._expected(expected)]
        self._write("delete", conversation_id, self._keys(conversation_id), args, expected)

    def _load(self, conversation_id: str) -> StoredConversation:
        keys = self._keys(conversation_id)[:2]
        flat, turns = self._call(conversation_id, lambda: self._scripts["load"](keys=keys))
        fields = dict(zip(flat[::2], flat[1::2], strict=True))
        if not fields:
            raise not_found(conversation_id)
        try:
            version = self._seen(int(fields[b"version"]))
            length = int(fields[b"length"])
            pending = fields.get(b"pending")
            texts = [turn.decode("utf-8") for turn in turns]
            if length != len(texts):
                raise ValueError(f"{len(texts)} turns stored but the head says {length}")
            return StoredConversation(
                texts, None if pending is None else pending.decode("utf-8"), version
            )
        except (KeyError, ValueError) as error:
            raise CorruptConversationError(
                f"stored conversation {conversation_id!r} is corrupt and cannot be loaded: {error}",
                conversation_id=conversation_id,
            ) from error

    def _list(self, prefix: str) -> builtins.list[str]:
        # Percent-encoding is per character, so an id starts with ``prefix`` exactly when its
        # encoding starts with the prefix's encoding.
        head = self._prefix + "{"
        match = glob_escape(head + encode_id(prefix)) + "*" + glob_escape("}:conversation")

        def scan() -> set[bytes]:
            return set(self._client.scan_iter(match=match.encode("utf-8"), count=1000))

        ids = {
            decode_id(key.decode("utf-8")[len(head) : -len("}:conversation")])
            for key in self._call(None, scan)
        }
        # Sorted by code point, which is the order of their UTF-8 bytes.
        return sorted(ids)
