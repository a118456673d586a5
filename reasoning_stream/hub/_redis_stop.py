"""Stop requests across processes for a ``RedisHub``: one listener thread per hub.

``hub.stop`` in any process runs the ``STOP`` script (``_redis_codec``): it marks the running
stream's claim and publishes the stream id on the hub's stop channel. Every hub that runs
streams listens there (this thread, started with its first run) and stops the run it holds,
if any, through its :class:`~._stop.RunControl`. A message can be missed only while the
listener is not subscribed: so a run checks its claim's mark once the listener is subscribed
(``check``), and the listener checks every running stream's mark whenever it subscribes again
after losing its connection.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ._stop import RunControl

__all__ = ["StopListener"]

_log = logging.getLogger("reasoning_stream.hub")
_POLL = 0.5
"""Seconds between looks at ``closed`` while no message comes."""


class StopListener:
    """Subscribes to ``channel`` (a connection from ``connect()``) and stops the runs of
    ``controls()`` whose id comes in. ``marked(ids)`` answers which of the running stream ids
    have a stop mark in Redis (a look after a reconnection). Subscribed once constructed."""

    def __init__(
        self,
        connect: Callable[[], Any],
        channel: str,
        controls: Callable[[], dict[str, RunControl]],
        marked: Callable[[list[str]], list[str]],
        wake: Callable[[], object] | None = None,
    ) -> None:
        self._connect = connect
        self._wake = wake
        """Publishes a message no run answers to (an empty id), so ``close`` need not wait
        for the poll."""
        self._channel = channel
        self._controls = controls
        self._marked = marked
        self._closed = False
        self._pubsub = self._subscribe()
        self._thread = threading.Thread(
            target=self._loop, name="reasoning-stream-redis-stop", daemon=True
        )
        self._thread.start()

    def _subscribe(self) -> Any:
        pubsub = self._connect().pubsub()
        pubsub.subscribe(self._channel)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:  # the confirmation: from now on nothing is missed
            message = pubsub.get_message(timeout=0.5)
            if message is not None and message.get("type") == "subscribe":
                return pubsub
        raise TimeoutError(f"no confirmation of SUBSCRIBE {self._channel!r} within 5 s")

    def close(self) -> None:
        self._closed = True
        if self._wake is not None:
            with contextlib.suppress(Exception):
                self._wake()
        self._thread.join(2 * _POLL + 1)
        with contextlib.suppress(Exception):
            self._pubsub.close()

    def _loop(self) -> None:
        while not self._closed:
            try:
                message = self._pubsub.get_message(timeout=_POLL)
            except Exception as error:
                if self._closed:
                    return
                _log.warning(
                    "stop listener lost Redis (%s); subscribing again", type(error).__name__
                )
                self._resubscribe()
                continue
            if message is not None and message.get("type") == "message":
                self.deliver(str(message["data"]))

    def deliver(self, stream_id: str) -> None:
        """Stop the run of ``stream_id`` if this process runs it."""
        control = self._controls().get(stream_id)
        if control is not None:
            control.request()

    def _resubscribe(self) -> None:
        while not self._closed:
            try:
                self._pubsub = self._subscribe()
                for stream_id in self._marked(list(self._controls())):
                    self.deliver(stream_id)
                return
            except Exception:
                time.sleep(_POLL)
