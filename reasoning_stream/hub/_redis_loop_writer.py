"""On asyncio, a ``RedisHub``'s runs are written by a task of their own loop, not a thread.

The writer thread (``_redis_writer.RedisWriter``) serves runs on any thread and on trio, but it
shares the GIL with the loop whose callbacks feed it: a busy loop (many streams, each chunk a
little Python) keeps taking the GIL back, and the thread waits up to the interpreter's switch
interval (5 ms) each time it wakes and each time a reply comes. On an asyncio loop one task
per loop and hub writes with an asyncio connection instead: the callbacks append to the queue
and set an event, the task writes what is there in one script call, and whatever came
meanwhile goes in the next. Leases are renewed on the same heartbeat as the thread's.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from ._redis_codec import HubSettings
from ._redis_writer import Writes

__all__ = ["LoopWriter"]


class LoopWriter(Writes):
    """The writer of one hub on one asyncio loop: a task that lives while a stream of that loop
    runs. ``connect`` makes its connection (a redis-py asyncio ``Connection``, on the loop),
    ``script`` is the append script's text."""

    def __init__(
        self,
        hub: HubSettings,
        loop: asyncio.AbstractEventLoop,
        connect: Callable[[], Any],
        script: str,
    ) -> None:
        super().__init__(hub, cluster=False)
        # Weakly: the hub keeps a writer per loop, by the loop, for as long as the loop lives.
        self._loop = weakref.ref(loop)
        self._loop_thread = threading.get_ident()
        self._connect = connect
        self._script_text = script
        self._sha = hashlib.sha1(script.encode()).hexdigest()
        self._event: asyncio.Event | None = None
        """The running task's (an event holds its loop once waited on)."""
        self._task: asyncio.Task[None] | None = None
        self._client: Any = None
        """The task's connection (a redis-py asyncio ``Connection``), made on first write."""

    def _wake(self) -> None:
        if threading.get_ident() == self._loop_thread:
            self._start_or_set()
            return
        loop = self._loop()  # a run opened in a worker thread, or a callback from one
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(self._start_or_set)

    def _start_or_set(self) -> None:
        if self._task is not None and self._event is not None:
            self._event.set()
            return
        loop = self._loop()
        if loop is None or loop.is_closed():
            return
        self._event = asyncio.Event()
        self._task = loop.create_task(self._run(self._event), name="reasoning-stream-redis-writer")

    def _idle(self) -> bool:
        """Nothing to write and nobody to renew: the task ends (the next run starts one)."""
        with self._running_lock:
            return not self._queue and not self._running

    async def _run(self, event: asyncio.Event) -> None:
        queue = self._queue
        next_beat = time.monotonic() + self._heartbeat
        try:
            while True:
                if self._idle():
                    return
                if not queue:
                    wait = max(0.0, next_beat - time.monotonic())
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(wait):
                            await event.wait()
                event.clear()
                beat, next_beat = self._woke(next_beat)
                while queue or beat:
                    batch = self._take()
                    try:
                        await self._write(batch, beat)
                    except Exception as error:
                        self._failed(batch, error)
                    beat = False
        finally:
            self._task = self._event = None
            connection, self._client = self._client, None
            if connection is not None:
                with contextlib.suppress(Exception):
                    await connection.disconnect()

    async def _write(self, batch: list[Any], beat: bool) -> None:
        import redis

        groups, calls = self._plan(batch, beat)
        if not calls:
            return
        ((keys, args),) = calls
        try:
            result: Any = await self._evalsha(keys, args)
        except (redis.RedisError, ValueError) as error:  # ValueError: text Redis cannot take
            result = error
        self._settle_all(groups, [result])

    async def _evalsha(self, keys: list[str], args: list[str]) -> Any:
        """Run the append script on the writer's own connection, packed here: redis-py's
        asyncio client packs commands in Python, which costs more than the whole write for a
        batch of a hundred streams (its sync client packs in C)."""
        from redis.exceptions import NoScriptError

        if self._client is None:
            self._client = self._connect()
        connection = self._client
        packed = _pack(["EVALSHA", self._sha, str(len(keys)), *keys, *args])

        async def call() -> Any:
            await connection.send_packed_command(packed)
            return await connection.read_response()

        async def fail(_: Exception) -> None:
            await connection.disconnect()

        try:
            return await connection.retry.call_with_retry(call, fail)
        except NoScriptError:  # a restarted or flushed server: load the script, once
            await connection.send_packed_command(_pack(["SCRIPT", "LOAD", self._script_text]))
            await connection.read_response()
            return await connection.retry.call_with_retry(call, fail)


def _pack(args: list[str]) -> bytes:
    """A command in the Redis protocol (RESP), every argument as a bulk string (UTF-8)."""
    parts = [b"*%d\r\n" % len(args)]
    add = parts.append
    for arg in args:
        data = arg.encode()
        add(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)
