"""``RedisStore``: conversations in Redis, shared by processes on many machines.

Every write is one Lua script, which Redis runs atomically: it checks the expected version,
takes a new one from the store's counter and writes, with no other command in between. A
load reads the head and the turns in one ``MULTI``/``EXEC`` transaction, so it never sees half
of a write. Keys, under ``namespace`` (default ``reasoning-stream``)::

    {namespace}:conversation:{id}   hash: version, length, pending (JSON, absent when none)
    {namespace}:turns:{id}          list: one JSON document per message
    {namespace}:index               sorted set of ids (lexicographic ``list(prefix)``)
    {namespace}:version             the counter every write takes its version from

The keys of one write must live on one server: use a single Redis (with replicas, if you
like), not Redis Cluster.
"""

from __future__ import annotations

import builtins
import importlib
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from .._exceptions import CorruptConversationError, StoreError, UsageError
from ._base import ConversationStore, StoredConversation, conflict, not_found

__all__ = ["RedisStore"]

_T = TypeVar("_T")

# Replies: {"ok", version} | {"missing"} | {"conflict", stored version or ""}.
_SAVE = """
local current = redis.call('HGET', KEYS[1], 'version')
if ARGV[2] == '' then
  if current then return {'conflict', current} end
elseif current ~= ARGV[2] then
  return {'conflict', current or ''}
end
local version = redis.call('INCR', KEYS[4])
redis.call('DEL', KEYS[1], KEYS[2])
local count = #ARGV - 4
for first = 5, #ARGV, 1000 do
  redis.call('RPUSH', KEYS[2], unpack(ARGV, first, math.min(first + 999, #ARGV)))
end
redis.call('HSET', KEYS[1], 'version', version, 'length', count)
if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'pending', ARGV[4]) end
redis.call('ZADD', KEYS[3], 0, ARGV[1])
return {'ok', version}
"""

_APPEND = """
local current = redis.call('HGET', KEYS[1], 'version')
if not current then return {'missing'} end
if ARGV[1] ~= '' and current ~= ARGV[1] then return {'conflict', current} end
local version = redis.call('INCR', KEYS[3])
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('HINCRBY', KEYS[1], 'length', 1)
redis.call('HSET', KEYS[1], 'version', version)
if ARGV[3] == '1' then redis.call('HDEL', KEYS[1], 'pending') end
return {'ok', version}
"""

_SET_PENDING = """
local current = redis.call('HGET', KEYS[1], 'version')
if not current then return {'missing'} end
if ARGV[1] ~= '' and current ~= ARGV[1] then return {'conflict', current} end
local version = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'version', version)
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'pending', ARGV[3])
else
  redis.call('HDEL', KEYS[1], 'pending')
end
return {'ok', version}
"""

_DELETE = """
local current = redis.call('HGET', KEYS[1], 'version')
if not current then return {'missing'} end
if ARGV[1] ~= '' and current ~= ARGV[1] then return {'conflict', current} end
redis.call('INCR', KEYS[4])
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[2])
return {'ok', 0}
"""


def _redis() -> Any:
    try:
        return importlib.import_module("redis")
    except ImportError as error:
        raise UsageError(
            "RedisStore needs the 'redis' package: pip install 'reasoning-stream[redis]'"
        ) from error


def _redacted(url: str) -> str:
    """``url`` without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.hostname or ""
    if parts.port is not None:
        netloc = f"{netloc}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + netloc))


class RedisStore(ConversationStore):
    """Conversations in Redis: many processes on many machines share them.

    Args:
        url: ``redis://[user:password@]host:port/db`` (or ``rediss://``, ``unix://``).
        namespace: the key prefix; two stores with different namespaces never meet.
        timeout: seconds to connect and to wait for a reply.
        client: a ``redis.Redis`` client to use instead of ``url`` (it must not decode
            responses); the store does not close it.

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
    ) -> None:
        redis = _redis()
        if not namespace:
            raise UsageError("namespace must be a non-empty str")
        self.url = _redacted(url)
        self.namespace = namespace
        self._owns_client = client is None
        if client is None:
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            client = redis.Redis.from_url(
                url,
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
            )
        }
        prefix = namespace.encode("utf-8")
        self._head_prefix = prefix + b":conversation:"
        self._turns_prefix = prefix + b":turns:"
        self._index = prefix + b":index"
        self._counter = prefix + b":version"

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r}, namespace={self.namespace!r})"

    def close(self) -> None:
        """Close the connections of a client this store built."""
        if self._owns_client:
            self._client.close()

    # ------------------------------------------------------------------- plumbing

    def _keys(self, conversation_id: str) -> tuple[bytes, bytes]:
        encoded = conversation_id.encode("utf-8")
        return self._head_prefix + encoded, self._turns_prefix + encoded

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
                f"Redis at {self.url} refused a command{subject}: {error}",
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
            return int(reply[1])
        if outcome == "missing":
            raise not_found(conversation_id)
        stored = reply[1].decode() if isinstance(reply[1], bytes) else str(reply[1])
        raise conflict(conversation_id, expected, int(stored) if stored.isdigit() else None)

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
        head, turn_list = self._keys(conversation_id)
        args: list[Any] = [
            conversation_id.encode("utf-8"),
            self._expected(expected),
            "0" if pending is None else "1",
            "" if pending is None else pending.encode("utf-8"),
            *(turn.encode("utf-8") for turn in turns),
        ]
        return self._write(
            "save", conversation_id, [head, turn_list, self._index, self._counter], args, expected
        )

    def _append(
        self, conversation_id: str, turn: str, clears_pending: bool, expected: int | None
    ) -> int:
        head, turn_list = self._keys(conversation_id)
        args = [self._expected(expected), turn.encode("utf-8"), "1" if clears_pending else "0"]
        return self._write(
            "append", conversation_id, [head, turn_list, self._counter], args, expected
        )

    def _set_pending(self, conversation_id: str, pending: str | None, expected: int | None) -> int:
        head, _ = self._keys(conversation_id)
        args = [
            self._expected(expected),
            "0" if pending is None else "1",
            "" if pending is None else pending.encode("utf-8"),
        ]
        return self._write("pending", conversation_id, [head, self._counter], args, expected)

    def _delete(self, conversation_id: str, expected: int | None) -> None:
        head, turn_list = self._keys(conversation_id)
        args = [self._expected(expected), conversation_id.encode("utf-8")]
        self._write(
            "delete", conversation_id, [head, turn_list, self._index, self._counter], args, expected
        )

    def _load(self, conversation_id: str) -> StoredConversation:
        head, turn_list = self._keys(conversation_id)

        def read() -> list[Any]:
            with self._client.pipeline(transaction=True) as pipeline:
                pipeline.hgetall(head)
                pipeline.lrange(turn_list, 0, -1)
                replies: list[Any] = pipeline.execute()
                return replies

        fields, turns = self._call(conversation_id, read)
        if not fields:
            raise not_found(conversation_id)
        try:
            version = int(fields[b"version"])
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
        if prefix:
            encoded = prefix.encode("utf-8")
            # 0xff never occurs in UTF-8, so it bounds every id that starts with the prefix.
            low, high = b"[" + encoded, b"(" + encoded + b"\xff"
        else:
            low, high = b"-", b"+"
        ids = self._call(None, lambda: self._client.zrangebylex(self._index, low, high))
        return [raw.decode("utf-8") for raw in ids]
