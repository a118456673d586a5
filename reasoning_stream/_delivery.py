"""One delivery algorithm and its lane: hand the outbox to callbacks now, return what must wait.

:func:`deliver` calls callbacks in order until the outbox is empty or a callback returns an
awaitable, and returns that awaitable. The sync driver cannot wait, so it refuses (inside a run)
or skips with a warning (hooks driven by hand); the async driver awaits it and calls
:func:`deliver` again. There is no second copy of the loop: the async side only waits where the
sync side would have had to refuse.

The *lane* is the drivers' one shortcut, and it lives here, beside the path it shortens. While
the channel says a lone callback's stream is settled (:meth:`Channel.lane
<._channel.Channel.lane>`), a delta without ``<`` would come out of the channel unchanged, for
that callback alone (and its typed delta for at most one event callback). :func:`hand` gives
them over without building the outbox entries, exactly as :func:`deliver` would give the
entries the hook would have queued, stopping at the first awaitable; :func:`ahand`, its async
twin, awaits there (:func:`resume`) and goes on as :func:`hand` would. :func:`pump` and
:func:`apump` are the drivers' loops over a source's events: they live here so that the hot
loop calls into this module instead of restating it, and where no event callback listens they
hand a delta over inline, saving the call. Laws compare the two paths on every input:
``tests/test_delivery.py`` (one hand-off against :func:`deliver`) and ``tests/test_lanes.py``
(every lane run against the same run kept on the general path).

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
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol

import anyio

from ._callbacks import (
    CallbackErrorHandler,
    EventCallback,
    StreamingCallback,
    reject_awaitable,
    report_callback_error,
)
from ._capture import Capture
from ._channel import Channel, Entry, Targets
from ._events import Event, ReasoningDelta, TextDelta
from ._unicode import is_clean

__all__ = [
    "Dispatch",
    "Hooks",
    "adeliver",
    "ahand",
    "apump",
    "awaitable_name",
    "deliver",
    "deliver_sync",
    "dispatch",
    "hand",
    "pump",
    "reads_batches",
    "resume",
]

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


# ------------------------------------------------------------------------------------ the lane


def hand(
    channel: Channel,
    callback: Callable[[Any], object],
    delta: str,
    typed: Event | None,
    events: tuple[EventCallback, ...],
    on_error: CallbackErrorHandler | None,
    _coroutine: type = _Coroutine,
) -> Awaitable[Any] | None:
    """A lane's ``delta`` to its one ``callback``, then ``typed`` (if any) to ``events[0]``.

    The non-blocking hand-off: what :func:`deliver` does with the bare chunk and the typed delta
    the hook would have queued (the lane is open for one streaming and at most one event
    callback, so nobody else is waiting for either). It stops at the first awaitable and returns
    it, with ``typed`` first in line in the outbox if it was not handed yet; so it is, too, when
    the first hand-over is interrupted, and the closing delivery gives it. A hook that a
    callback calls only queues (``channel.delivering``), as during :func:`deliver_sync`.
    """
    channel.delivering = True
    try:
        try:
            result = callback(delta)
        except Exception as error:
            report_callback_error(on_error, error, delta)
            result = None
    except BaseException:
        if typed is not None:
            channel.outbox.append((typed, events))
        raise
    finally:
        channel.delivering = False
    if result is not None and (type(result) is _coroutine or inspect.isawaitable(result)):
        if typed is not None:
            channel.outbox.append((typed, events))
        channel.awaiting = delta
        return result  # type: ignore[return-value]
    if typed is None:
        return None
    return _hand_one(channel, events[0], typed, on_error)


async def ahand(
    channel: Channel,
    callback: Callable[[Any], object],
    delta: str,
    typed: Event | None,
    events: tuple[EventCallback, ...],
    on_error: CallbackErrorHandler | None,
) -> None:
    """Async twin of :func:`hand`: awaits where :func:`hand` stops, then goes on as it would.

    Entries that callbacks queued meanwhile stay in the outbox for the caller's next delivery.
    A hot loop calls :func:`hand` and, only when it returned an awaitable, :func:`resume`.
    """
    pending = hand(channel, callback, delta, typed, events, on_error)
    if pending is not None:
        await resume(channel, pending, typed, events, on_error)


async def resume(
    channel: Channel,
    pending: Awaitable[Any],
    typed: Event | None,
    events: tuple[EventCallback, ...],
    on_error: CallbackErrorHandler | None,
) -> None:
    """The waiting half of :func:`ahand`: await ``pending``, then hand ``typed`` if it waits."""
    while True:
        try:
            await pending
        except Exception as error:
            report_callback_error(on_error, error, channel.awaiting)
        outbox = channel.outbox
        if typed is None or not outbox or outbox[0][0] is not typed:
            return
        # The typed delta that hand() left first in line, to its one event callback.
        outbox.popleft()
        next_pending = _hand_one(channel, events[0], typed, on_error)
        if next_pending is None:
            return
        pending = next_pending


def _hand_one(
    channel: Channel,
    callback: Callable[[Any], object],
    payload: str | Event,
    on_error: CallbackErrorHandler | None,
    _coroutine: type = _Coroutine,
) -> Awaitable[Any] | None:
    """``payload`` to its one ``callback``, as :func:`deliver` hands an entry with one target."""
    channel.delivering = True
    try:
        result = callback(payload)
    except Exception as error:
        report_callback_error(on_error, error, payload)
        result = None
    finally:
        channel.delivering = False
    if result is not None and (type(result) is _coroutine or inspect.isawaitable(result)):
        channel.awaiting = payload
        return result  # type: ignore[return-value]
    return None


class Hooks(Protocol):
    """What the drivers' loops use of a pipe: its hooks, callbacks and capture."""

    name: str
    on_callback_error: CallbackErrorHandler | None
    _callbacks: tuple[StreamingCallback, ...]
    _event_callbacks: tuple[EventCallback, ...]
    _capture: Capture

    def handle_event(self, event: Event) -> None: ...
    def emit_text(self, delta: str | None) -> None: ...
    def emit_reasoning_chunk(self, delta: str | None) -> None: ...


Dispatch = tuple["type[TextDelta] | None", "type[ReasoningDelta] | None", bool]
"""The delta kinds a loop routes without ``handle_event``, and whether lanes may open."""


def dispatch(cls: type[Hooks], base: type[Hooks]) -> Dispatch:
    """What the loops route without ``handle_event`` for pipes of class ``cls``.

    ``base`` is the class whose hooks are the defaults. A subclass that overrides
    ``handle_event`` sees every event; one that overrides a delta hook sees every delta of its
    kind through it, so no lane opens for it.
    """
    if cls.handle_event is not base.handle_event:
        return None, None, False
    lanes = (
        cls.emit_text is base.emit_text and cls.emit_reasoning_chunk is base.emit_reasoning_chunk
    )
    return TextDelta, ReasoningDelta, lanes


def reads_batches(cls: type, base: type) -> bool:
    """Whether :func:`apump` reads ``aiter_event_batches`` of pipes of class ``cls``.

    It does when the most derived definition of the two async sources below ``base`` is the
    batched one, so a subclass that overrides only ``aiter_events`` is read through it.
    """
    for klass in cls.__mro__:
        if klass is base:
            return False
        if "aiter_event_batches" in vars(klass):
            return True
        if "aiter_events" in vars(klass):
            return False
    return False


def pump(pipe: Hooks, channel: Channel, source: Iterable[Event], kinds: Dispatch) -> None:
    """The sync driver's loop: each event through the hooks, or a plain delta down its lane.

    A hook delivers what it queued itself; after anything but a lane's delta, the lane's
    targets are looked up again (the callbacks may have changed).
    """
    text_kind, reasoning_kind, lanes = kinds
    on_error, name, capture = pipe.on_callback_error, pipe.name, pipe._capture
    handle, text, reasoning = pipe.handle_event, pipe.emit_text, pipe.emit_reasoning_chunk
    texts, outbox = capture.text, channel.outbox
    isawaitable = inspect.isawaitable
    audience = pipe._callbacks if lanes else ()
    events = pipe._event_callbacks
    for event in source:
        kind = type(event)
        if kind is text_kind:
            delta = event.text  # type: ignore[union-attr]
            if (
                channel.text_lane is audience
                and type(delta) is str
                and delta
                and "<" not in delta
                and (delta.isascii() or is_clean(delta))
            ):
                texts.append(delta)
            else:
                text(delta)
                delta = None
        elif kind is reasoning_kind:
            delta = event.text  # type: ignore[union-attr]
            if (
                channel.reasoning_lane is audience
                and type(delta) is str
                and delta
                and "<" not in delta
                and (delta.isascii() or is_clean(delta))
            ):
                capture.current.append(delta)  # type: ignore[union-attr]
            else:
                reasoning(delta)
                delta = None
        else:
            handle(event)
            delta = None
        if delta is not None:
            if events:
                typed = (TextDelta if kind is TextDelta else ReasoningDelta)(delta, source=name)
                pending = hand(channel, audience[0], delta, typed, events, on_error)
            else:
                # _hand_one() inlined for a lane without an event callback: the hot loop saves
                # the call.
                channel.delivering = True
                try:
                    pending = audience[0](delta)
                except Exception as error:
                    report_callback_error(on_error, error, delta)
                    pending = None
                finally:
                    channel.delivering = False
            if pending is not None and isawaitable(pending):
                reject_awaitable(pending, awaitable_name(pending))
            if not outbox:
                continue
            # A callback emitted: the hooks re-decided the lanes, maybe for new callbacks.
            deliver_sync(channel, on_error, in_run=True)
        audience = pipe._callbacks if lanes else ()
        events = pipe._event_callbacks


async def apump(
    pipe: Hooks,
    channel: Channel,
    source: AsyncIterable[Any],
    kinds: Dispatch,
    *,
    batched: bool,
) -> None:
    """Async twin of :func:`pump` over a source of events, or of batches of events.

    The hooks only queue here (the channel is deferred): this loop delivers, each event's
    entries before the next event is handled.
    """
    text_kind, reasoning_kind, lanes = kinds
    on_error, name, capture = pipe.on_callback_error, pipe.name, pipe._capture
    handle, text, reasoning = pipe.handle_event, pipe.emit_text, pipe.emit_reasoning_chunk
    texts_append, outbox = capture.text.append, channel.outbox
    isawaitable = inspect.isawaitable
    audience, callback, plain, events = _lane(pipe, lanes)
    async for item in source:
        batch: Sequence[Event] = item if batched else (item,)
        for event in batch:
            kind = type(event)
            if kind is text_kind:
                delta = event.text  # type: ignore[union-attr]
                if (
                    channel.text_lane is audience
                    and type(delta) is str
                    and delta
                    and "<" not in delta
                    and (delta.isascii() or is_clean(delta))
                ):
                    texts_append(delta)
                else:
                    text(delta)
                    delta = None
            elif kind is reasoning_kind:
                delta = event.text  # type: ignore[union-attr]
                if (
                    channel.reasoning_lane is audience
                    and type(delta) is str
                    and delta
                    and "<" not in delta
                    and (delta.isascii() or is_clean(delta))
                ):
                    capture.current.append(delta)  # type: ignore[union-attr]
                else:
                    reasoning(delta)
                    delta = None
            else:
                handle(event)
                delta = None
            if delta is not None:
                # ahand() inlined where no event callback listens: the hot loop saves two calls
                # (and, for an ``async def`` callback, the test of what it returned).
                if plain:
                    try:
                        await callback(delta)
                    except Exception as error:
                        report_callback_error(on_error, error, delta)
                elif events:
                    # ahand(), without a coroutine when nothing needs awaiting.
                    typed = (TextDelta if kind is TextDelta else ReasoningDelta)(delta, source=name)
                    pending = hand(channel, callback, delta, typed, events, on_error)
                    if pending is not None:
                        await resume(channel, pending, typed, events, on_error)
                else:
                    try:
                        result = callback(delta)
                        if result is not None and isawaitable(result):
                            await result
                    except Exception as error:
                        report_callback_error(on_error, error, delta)
                if not outbox:
                    continue
            elif not outbox:
                audience, callback, plain, events = _lane(pipe, lanes)
                continue
            await adeliver(channel, on_error)
            audience, callback, plain, events = _lane(pipe, lanes)


def _lane(
    pipe: Hooks, lanes: bool
) -> tuple[Targets, Callable[[Any], Any], bool, tuple[EventCallback, ...]]:
    """What :func:`apump` hands a lane's delta to, looked up again after anything else happened.

    The audience a lane must be open for (none when lanes are off), its one callback, whether
    that is an ``async def`` function with no event callback beside it, and the event callbacks.
    """
    audience: Targets = pipe._callbacks if lanes else ()
    callback = audience[0] if audience else _no_callback
    events = pipe._event_callbacks
    function = callback.__func__ if type(callback) is types.MethodType else callback
    plain = (
        not events
        and type(function) is types.FunctionType
        and bool(function.__code__.co_flags & inspect.CO_COROUTINE)
    )
    return audience, callback, plain, events


def _no_callback(chunk: str) -> None:
    """Stands for the lane's callback while no lane can open (no callback, or lanes off)."""
    raise AssertionError("a lane opened for an audience without a callback")
