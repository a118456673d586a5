"""The lane's hand-off is the delivery of the entries it did not build.

``hand`` (and its async twin ``ahand``) gives a lane's delta to its one streaming callback and
the typed delta to at most one event callback without queueing them; ``deliver`` (``adeliver``)
gives the same two entries from the outbox. For every behaviour of the two callbacks and of the
error handler, both paths make the same calls, report the same errors, raise the same way and
leave the same entries behind for the closing delivery.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import ReasoningDelta, TextDelta
from reasoning_stream._channel import Channel
from reasoning_stream._delivery import adeliver, ahand, deliver, hand
from tests.helpers import examples


class Interrupt(BaseException):
    """Stands for a cancellation or ``KeyboardInterrupt`` raised by a callback."""


# What a callback does with what it is given.
BEHAVIOURS = ("returns", "raises", "interrupts", "awaits", "awaits and raises")
HANDLERS = ("none", "records", "raises")


def callback(name: str, behaviour: str, log: list[Any]) -> Callable[[Any], Any]:
    def call(payload: Any) -> Any:
        log.append((name, payload))
        if behaviour == "raises":
            raise ValueError(name)
        if behaviour == "interrupts":
            raise Interrupt(name)
        if behaviour.startswith("awaits"):

            async def later() -> None:
                log.append((name, "awaited"))
                if behaviour == "awaits and raises":
                    raise ValueError(f"{name} awaited")

            return later()
        return None

    return call


def handler(kind: str, log: list[Any]) -> Any:
    if kind == "none":
        return None

    def handle(error: Exception, payload: object) -> None:
        log.append(("handler", str(error), payload))
        if kind == "raises":
            raise RuntimeError("abort")

    return handle


def entries(channel: Channel) -> list[Any]:
    """The outbox without callback identities: payloads and how many targets each has."""
    return [(payload, len(targets)) for payload, targets in channel.outbox]  # type: ignore[misc]


Scene = tuple[Channel, Callable[[Any], Any], tuple[Any, ...], Any, list[Any]]


def scene(streaming: str, listening: str | None, on_error: str) -> Scene:
    log: list[Any] = []
    events = () if listening is None else (callback("event", listening, log),)
    return Channel(), callback("stream", streaming, log), events, handler(on_error, log), log


def outcome(run: Callable[[], object], channel: Channel, log: list[Any]) -> tuple[Any, ...]:
    try:
        result = run()
    except BaseException as error:  # the law compares how each path ends
        raised: str | None = type(error).__name__
        result = None
    else:
        raised = None
    pending = None
    if result is not None:
        close = getattr(result, "close", None)
        if close is not None:
            close()
        pending = channel.awaiting
    return log, raised, pending, entries(channel)


@settings(max_examples=examples(200), deadline=None)
@given(
    streaming=st.sampled_from(BEHAVIOURS),
    listening=st.one_of(st.none(), st.sampled_from(BEHAVIOURS)),
    on_error=st.sampled_from(HANDLERS),
    kind=st.sampled_from([TextDelta, ReasoningDelta]),
)
def test_hand_is_deliver_of_the_entries_it_did_not_build(
    streaming: str, listening: str | None, on_error: str, kind: type
) -> None:
    """Stopping at the first awaitable, as the sync driver sees it."""
    channel, call, events, errors, log = scene(streaming, listening, on_error)
    typed = kind("d", source="p") if events else None
    fast = outcome(lambda: hand(channel, call, "d", typed, events, errors), channel, log)

    channel, call, events, errors, log = scene(streaming, listening, on_error)
    channel.outbox.append(("d", (call,)))
    if events:
        channel.outbox.append((typed, events))
    general = outcome(lambda: deliver(channel, errors), channel, log)
    assert fast == general


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=examples(100), deadline=None)
@given(
    streaming=st.sampled_from(BEHAVIOURS),
    listening=st.one_of(st.none(), st.sampled_from(BEHAVIOURS)),
    on_error=st.sampled_from(HANDLERS),
)
def test_ahand_then_adeliver_is_adeliver_of_the_entries(
    backend: str, streaming: str, listening: str | None, on_error: str
) -> None:
    """Awaited to the end, as the async driver does (what it leaves queued, it delivers next)."""

    def run(fast: bool) -> tuple[Any, ...]:
        channel, call, events, errors, log = scene(streaming, listening, on_error)

        async def main() -> None:
            typed = TextDelta("d", source="p") if events else None
            if fast:
                await ahand(channel, call, "d", typed, events, errors)
            else:
                channel.outbox.append(("d", (call,)))
                if events:
                    channel.outbox.append((typed, events))
            await adeliver(channel, errors)

        return outcome(lambda: anyio.run(main, backend=backend), channel, log)

    assert run(fast=True) == run(fast=False)
