"""One delivery algorithm: hand the outbox to callbacks now, return what must still be awaited.

:func:`deliver` calls callbacks in order until the outbox is empty or a callback returns an
awaitable, and returns that awaitable. The sync driver cannot wait, so it refuses (inside a run)
or skips with a warning (hooks driven by hand); the async driver awaits it and calls
:func:`deliver` again. There is no second copy of the loop: the async side only waits where the
sync side would have had to refuse. (The drivers' one shortcut, a plain delta on a lane handed to
a lone callback, does what this loop would do with the one entry it did not build: call, report
an error, await an awaitable.)

An entry leaves the outbox before its callbacks run. When one of them interrupts the delivery (an
error handler that raises, ``KeyboardInterrupt``, a cancellation while awaiting) or returns an
awaitable, the entry goes back first in line for exactly the subscribers that have not had it
yet; the closing delivery of the run then gives it to them, so every subscriber sees the same
sequence.
"""

from __future__ import annotations

import inspect
import types
import warnings
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ._callbacks import CallbackErrorHandler, reject_awaitable, report_callback_error
from ._channel import Channel, Entry, Targets
from ._events import Event

__all__ = ["adeliver", "awaitable_name", "deliver", "deliver_sync"]

_Coroutine = types.CoroutineType


def deliver(
    channel: Channel,
    on_error: CallbackErrorHandler | None,
    *,
    final: bool = False,
    _coroutine: type = _Coroutine,
) -> Awaitable[Any] | None:
    """Hand queued entries to their callbacks; stop at the first awaitable and return it.

    A callback that raises is reported to ``on_error`` (which may raise ``CallbackError`` to abort
    the run); the other subscribers still get the entry, now or in the closing delivery.
    """
    outbox = channel.outbox
    while outbox:
        entry = outbox.popleft()
        if type(entry) is str:
            payload: str | Event = entry
            targets = channel.solo_targets
        else:
            payload, targets = entry  # type: ignore[str-unpack, assignment]
        channel.handed = True
        for callback in targets:
            try:
                result = callback(payload)
            except Exception as error:
                try:
                    report_callback_error(on_error, error, payload, final=final)
                except BaseException:
                    _requeue(outbox, payload, targets, callback)
                    raise
                continue
            except BaseException:
                # KeyboardInterrupt or a cancellation: the others still get this payload.
                _requeue(outbox, payload, targets, callback)
                raise
            if result is not None and (type(result) is _coroutine or inspect.isawaitable(result)):
                if targets[-1] is not callback:
                    _requeue(outbox, payload, targets, callback)
                channel.awaiting = payload
                return result  # type: ignore[return-value]
    return None


def _requeue(
    outbox: deque[Entry], payload: str | Event, targets: Targets, handed: Callable[[Any], Any]
) -> None:
    """Put ``payload`` back first in line for the targets after ``handed``.

    Targets are unique by identity (callbacks are registered once each), so ``handed`` marks
    one position.
    """
    position = next(i for i, target in enumerate(targets) if target is handed) + 1
    if position < len(targets):
        outbox.appendleft((payload, targets[position:]))


def deliver_sync(
    channel: Channel,
    on_error: CallbackErrorHandler | None,
    *,
    in_run: bool,
    final: bool = False,
) -> None:
    """Deliver everything without an event loop.

    An awaitable returned by a callback cannot be awaited here: inside a run that is misuse
    (``UsageError``); outside a run (hooks driven by hand) and in a run's closing delivery the
    sync callbacks still get every chunk and the async one is skipped with a warning.
    """
    if channel.delivering:
        # A callback called a hook: the delivery under way takes the new entries in their turn,
        # so every subscriber sees one order.
        return
    channel.delivering = True
    try:
        _deliver_sync(channel, on_error, in_run=in_run, final=final)
    finally:
        channel.delivering = False


def _deliver_sync(
    channel: Channel, on_error: CallbackErrorHandler | None, *, in_run: bool, final: bool
) -> None:
    while (pending := deliver(channel, on_error, final=final)) is not None:
        if in_run and not final:
            reject_awaitable(pending, awaitable_name(pending))
        close = getattr(pending, "close", None)
        if callable(close):
            close()
        warnings.warn(
            f"async callback {awaitable_name(pending)} skipped: hooks called outside a run "
            "deliver to sync callbacks only; use `await pipe.arun(...)`",
            RuntimeWarning,
            stacklevel=5,
        )


async def adeliver(
    channel: Channel,
    on_error: CallbackErrorHandler | None,
    *,
    final: bool = False,
    deadline: float | None = None,
) -> None:
    """Deliver everything, awaiting async callbacks on this task, in order.

    ``deadline`` bounds each awaited callback of a closing delivery after a cancellation, so a
    stuck subscriber cannot hold the cancellation up while the others get their closing chunks.
    """
    while (pending := deliver(channel, on_error, final=final)) is not None:
        try:
            if deadline is None:
                await pending
            else:
                with anyio.CancelScope(deadline=deadline):
                    await pending
        except Exception as error:
            report_callback_error(on_error, error, channel.awaiting, final=final)


def awaitable_name(awaitable: object) -> str:
    """What to call the async callback that returned ``awaitable``, in a message."""
    return repr(getattr(awaitable, "__qualname__", None) or type(awaitable).__name__)
