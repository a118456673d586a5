"""Waking a reader's event loop from any thread, without ever blocking the writer."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable
from typing import Any

import anyio
import anyio.lowlevel

__all__ = ["Wakeup", "wake_all"]


class Wakeup:
    """An event set from any thread: the writer schedules ``set`` on the reader's own loop.

    Scheduling never waits for the loop, and a loop that has gone away (a crashed reader) is
    ignored, so a reader can never slow or stop the writer. One per reader: :meth:`arm`
    before each look at what is new (a wake-up that comes between the look and the wait is
    then not lost), :meth:`wait` after.
    """

    __slots__ = ("_event", "_new_event", "schedule")

    def __init__(self) -> None:
        native: Any = anyio.lowlevel.current_token().native_token
        self._new_event: Callable[[], Any]
        schedule = getattr(native, "call_soon_threadsafe", None)
        if schedule is None:  # trio's TrioToken
            import trio

            schedule, self._new_event = native.run_sync_soon, trio.Event
        else:  # an asyncio loop
            import asyncio

            self._new_event = asyncio.Event
        self.schedule: Callable[[Callable[[], None]], object] = schedule
        """Runs a callable on the reader's loop, from any thread."""
        self._event: Any = self._new_event()  # the loop's own event: cheap to make

    def arm(self) -> None:
        """Start a new wait: a ``set`` from now on ends it (the reader's loop only)."""
        self._event = self._new_event()

    def set(self) -> None:
        """Wake the reader (thread-safe, non-blocking, never raises)."""
        with contextlib.suppress(Exception):
            self.schedule(self._event.set)

    def setter(self) -> Callable[[], None]:
        """What ends the current wait when called on the reader's loop (see :func:`wake_all`)."""
        setter: Callable[[], None] = self._event.set
        return setter

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait until woken, or ``timeout`` seconds; True when woken."""
        if timeout is None:
            await self._event.wait()
            return True
        with anyio.move_on_after(timeout):
            await self._event.wait()
            return True
        return False


def _call_each(setters: list[Callable[[], None]]) -> None:
    for setter in setters:
        setter()


def wake_all(wakeups: Iterable[Wakeup]) -> None:
    """Wake every reader of ``wakeups``: one call into each event loop, however many readers
    wait there (each call into a loop is a system call and a loop turn of its own)."""
    per_loop: dict[Callable[[Callable[[], None]], object], list[Callable[[], None]]] = {}
    for wakeup in wakeups:
        per_loop.setdefault(wakeup.schedule, []).append(wakeup.setter())
    for schedule, setters in per_loop.items():
        with contextlib.suppress(Exception):
            schedule(functools.partial(_call_each, setters))
