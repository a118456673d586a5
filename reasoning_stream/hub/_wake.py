"""Waking a reader's event loop from any thread, without ever blocking the writer."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel

__all__ = ["Wakeup"]


class Wakeup:
    """An event set from any thread: the writer schedules ``set`` on the reader's own loop.

    Scheduling never waits for the loop, and a loop that has gone away (a crashed reader) is
    ignored, so a reader can never slow or stop the writer.
    """

    __slots__ = ("_event", "_schedule")

    def __init__(self) -> None:
        self._event = anyio.Event()
        native: Any = anyio.lowlevel.current_token().native_token
        schedule = getattr(native, "call_soon_threadsafe", None)
        if schedule is None:
            schedule = native.run_sync_soon  # trio's TrioToken
        self._schedule: Callable[[Callable[[], None]], object] = schedule

    def set(self) -> None:
        """Wake the reader (thread-safe, non-blocking, never raises)."""
        with contextlib.suppress(Exception):
            self._schedule(self._event.set)

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait until woken, or ``timeout`` seconds; True when woken."""
        if timeout is None:
            await self._event.wait()
            return True
        with anyio.move_on_after(timeout):
            await self._event.wait()
            return True
        return False
