"""On asyncio, a ``RedisHub``'s readers are followed by a task of their own loop, not a thread.

The reader thread (``_follow.Follower``) serves any loop, trio's too, but every entry crosses
two threads: the thread wakes on the reply, takes the GIL from the loop, then wakes the loop,
which takes it back. Under load each hand-over waits for the other thread's slice (up to the
interpreter's 5 ms switch interval). On an asyncio loop (uvicorn's, an app's) one task per loop
and hub reads every stream its subscribers follow with one ``XREAD BLOCK`` on an asyncio
connection and hands entries to them directly: no thread, no hand-over. A subscriber that
joins interrupts the blocking read (``CLIENT UNBLOCK``) as with the thread; a stream whose
writer was lost is ended by the same sweep, run in a worker thread once a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread

from ._entry import Entry
from ._follow import BLOCK_MS, COUNT, Follows, Subscription

__all__ = ["LoopFollower"]


class LoopFollower(Follows):
    """The reader of one hub on one asyncio loop: a task started by the first subscription of
    that loop, ended when its last subscriber leaves (or the hub closes)."""

    def __init__(
        self,
        connect: Callable[[], Any],
        control: Any,
        decode: Callable[[str, dict[str, str]], Entry],
        describe: str,
        *,
        sweep: Callable[[list[str]], dict[str, str | None]],
        sweep_every: float = 1.0,
    ) -> None:
        super().__init__(connect, control, decode, describe, sweep_every)
        self._sweep = sweep
        self._task: asyncio.Task[None] | None = None
        self._reading = False
        """The task waits in ``XREAD BLOCK`` (a new stream must interrupt it)."""

    async def add(self, subscription: Subscription) -> None:
        """Follow ``subscription.key`` from its position (on the follower's loop)."""
        with self._lock:
            self._register(subscription)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="reasoning-stream-redis-reader"
            )
        elif self._reading and self._client_id is not None:
            await self._unblock(self._client_id)

    async def _unblock(self, client_id: int) -> None:
        # On failure the task still sees the new stream after its current wait.
        with contextlib.suppress(Exception):
            await anyio.to_thread.run_sync(self._control.client_unblock, client_id)

    def close(self) -> None:
        """Stop following (any thread): the task ends after its current read."""
        with self._lock:
            self._closed = True
            client_id = self._client_id if self._reading else None
        if client_id is not None:
            with contextlib.suppress(Exception):
                self._control.client_unblock(client_id)

    async def _run(self) -> None:
        client = None
        next_sweep = time.monotonic() + self._sweep_every
        try:
            while True:
                with self._lock:
                    if not self._follows or self._closed:
                        self._task = None  # the next subscriber starts a new task
                        return
                    asked = self._asked()
                streams = {key: f"0-{position}" for key, position in asked.items()}
                if client is None:
                    client = self._connect()
                    self._client_id = await client.client_id()
                self._reading = True
                try:
                    response = await client.xread(streams, count=COUNT, block=BLOCK_MS)
                finally:
                    self._reading = False
                if time.monotonic() >= next_sweep:
                    # Streams whose writer was lost get their final entry now; this loop
                    # then delivers it like any other.
                    self._lost(await anyio.to_thread.run_sync(self._sweep, list(asked)))
                    next_sweep = time.monotonic() + self._sweep_every
                for wake in self._deliver(asked, response):
                    wake.setter()()  # on this loop: no call across threads
        except Exception as error:
            with self._lock:
                follows, self._follows = self._follows, {}
                self._task = None
            self._fail(follows, error)
        finally:
            self._client_id = None
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.aclose()
