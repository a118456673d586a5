"""The reading side of a ``RedisHub``: ``read`` now, and ``subscribe`` to follow live.

Live reads go through the hub's one reader thread (``_follow.py``) that follows every
subscribed stream with one ``XREAD BLOCK`` on redis-py's sync client, the same on asyncio and
trio (redis-py's asyncio client does not run on trio). A stream whose writer was lost is ended
before it is read (``end_abandoned``), so no reader waits on a dead run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from ._base import HubError, InvalidEntryIdError, StreamExpiredError, StreamNotFoundError
from ._entry import Entry
from ._follow import Follower, Subscription
from ._follow_loop import LoopFollower
from ._redis_codec import HubSettings, check_entry_id, decode_entry, past, seq, stream_keys
from ._wake import Wakeup

__all__ = ["RedisReader"]

_T = TypeVar("_T")


class RedisReader:
    """Reads a hub's streams on ``client`` (a connection that may block).

    ``follower()`` gives the hub's reader thread (started on first use); ``end_abandoned(keys,
    client)`` ends the stream at ``keys`` if its writer's lease lapsed, True when it did.
    """

    def __init__(
        self,
        hub: HubSettings,
        client: Any,
        follower: Callable[[], Follower],
        end_abandoned: Callable[[list[str], Any], bool],
        loop_follower: Callable[[], LoopFollower | None] = lambda: None,
    ) -> None:
        self._hub = hub
        self._client = client
        self._follower = follower
        self._loop_follower = loop_follower
        self._end_abandoned = end_abandoned

    def check_after(self, stream_id: str, after: str, first: list[Any], last: list[Any]) -> None:
        """Whether the stream still holds everything past ``after``."""
        hub = self._hub
        if not last:
            raise StreamExpiredError(
                f"stream {stream_id!r} is not in Redis at {hub.url_for_messages}, so entry "
                f"{after!r} cannot be resumed: it expired (ttl) or was never published there"
            )
        position = seq(after)
        if position > seq(last[0][0]):
            raise InvalidEntryIdError(
                f"stream {stream_id!r} has no entry {after!r} (its last is {last[0][0]!r}); "
                "pass an id this stream gave you"
            )
        if position + 1 < seq(first[0][0]):
            raise StreamExpiredError(
                f"entry {after!r} of stream {stream_id!r} was trimmed (maxlen={hub.maxlen} "
                "keeps the latest entries only); read it from the start or raise maxlen"
            )

    def read(self, stream_id: str, after: str | None = None) -> list[Entry]:
        """As ``RedisHub.read``."""
        key = stream_keys(self._hub.prefix, stream_id)[0]
        client = self._client
        if after is not None:
            check_entry_id(after)
            self.check_after(
                stream_id, after, client.xrange(key, count=1), client.xrevrange(key, count=1)
            )
        entries = [decode_entry(i, f) for i, f in client.xrange(key, min=past(after))]
        if (not entries or not entries[-1].final) and self._end_abandoned(
            stream_keys(self._hub.prefix, stream_id), client
        ):
            entries = [decode_entry(i, f) for i, f in client.xrange(key, min=past(after))]
        return entries

    async def subscribe_batches(
        self, stream_id: str, after: str | None = None, timeout: float | None = None
    ) -> AsyncIterator[list[Entry]]:
        """As ``RedisHub.subscribe_batches``."""
        hub = self._hub
        key = stream_keys(hub.prefix, stream_id)[0]
        position = 0
        if after is not None:
            check_entry_id(after)
            first, last = await self._in_thread(self._bounds, key)
            self.check_after(stream_id, after, first, last)
            if last[0][0] == after and "s" in last[0][1]:
                return
            position = seq(after)
        wakeup = Wakeup()
        on_loop = self._loop_follower()  # asyncio: a task of this loop, else the thread
        follower: Follower | LoopFollower = on_loop or self._follower()

        async def join(subscription: Subscription) -> None:
            subscription.wake = wakeup
            if on_loop is not None:
                await on_loop.add(subscription)
            else:
                await self._in_thread(self._follower().add, subscription)

        subscription = Subscription(key, position)
        await join(subscription)
        deadline = None if timeout is None else anyio.current_time() + timeout
        found = after is not None
        fresh = after is None  # from the start: take what retention kept
        try:
            while True:
                if subscription.lagged:
                    # We fell too far behind and the reader thread dropped our buffer: follow
                    # again from where we are (re-read from Redis; trimmed entries fail below).
                    follower.remove(subscription)
                    subscription = Subscription(key, subscription.position)
                    await join(subscription)
                while (taken := subscription.take()) is not None:
                    read_from, batch = taken
                    if read_from > subscription.position:
                        continue  # read past us while we joined: it is read again for us
                    if seq(batch[0].id) > subscription.position + 1 and not fresh:
                        raise StreamExpiredError(
                            f"entries of stream {stream_id!r} after {subscription.position} "
                            f"were trimmed (maxlen={hub.maxlen}) before this reader got them"
                        )
                    fresh = False
                    new = batch
                    if seq(batch[0].id) <= subscription.position:
                        # Re-read for a reader that joined behind us: skip what we have.
                        position = subscription.position
                        new = [entry for entry in batch if seq(entry.id) > position]
                        if not new:
                            continue
                    subscription.position = seq(new[-1].id)
                    found = True
                    yield new
                    if new[-1].final:
                        return
                if subscription.error is not None:
                    raise HubError(str(subscription.error)) from subscription.error
                wakeup.arm()
                if subscription.buffer or subscription.error is not None or subscription.lagged:
                    continue
                if found or deadline is None:
                    await wakeup.wait()
                    continue
                remaining = deadline - anyio.current_time()
                if remaining > 0 and await wakeup.wait(min(remaining, 1.0)):
                    continue
                found = bool(await self._in_thread(self._client.exists, key, key + ":run"))
                if not found and anyio.current_time() >= deadline:
                    raise StreamNotFoundError(
                        f"no stream {stream_id!r} appeared in Redis at "
                        f"{hub.url_for_messages} within {timeout} s"
                    )
        finally:
            subscription.wake = None
            follower.remove(subscription)

    def _bounds(self, key: str) -> tuple[list[Any], list[Any]]:
        client = self._client
        return client.xrange(key, count=1), client.xrevrange(key, count=1)

    async def _in_thread(self, function: Callable[..., _T], *args: Any) -> _T:
        return await anyio.to_thread.run_sync(lambda: function(*args), abandon_on_cancel=True)
