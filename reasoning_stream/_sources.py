"""Event sources: the async views a pipe gets by default from what it implements.

A pipe that implements only ``iter_events`` (a sync iterator) still runs under ``arun()``: the
iterator is stepped in a worker thread (:func:`threaded`). A source that yields one event at a
time is read by the batch driver as batches of one (:func:`batches_of_one`). While a run
observer asks for chunk timings (telemetry's ``time_per_output_chunk``), :func:`timed` and
:func:`atimed` note the seconds between consecutive chunks of reasoning or answer text. All close
what they wrap, shielded from cancellation, whatever the ending: :func:`close_source` and
:func:`aclose_source`, which the run drivers also call on the source of an attempt.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from ._events import ReasoningDelta, TextDelta

__all__ = ["aclose_source", "atimed", "batches_of_one", "close_source", "threaded", "timed"]

_OUTPUT = (TextDelta, ReasoningDelta)
_clock = time.perf_counter

T = TypeVar("T")


def close_source(source: object) -> None:
    """Close ``source`` (a generator, an SDK stream) if it has a ``close()``."""
    close = getattr(source, "close", None)
    if close is not None:
        close()


async def aclose_source(source: object) -> None:
    """Close async ``source`` if it has an ``aclose()``, shielded from cancellation."""
    aclose = getattr(source, "aclose", None)
    if aclose is not None:
        with anyio.CancelScope(shield=True):
            await aclose()


async def threaded(iterator: Iterator[T]) -> AsyncIterator[T]:
    """Step a sync ``iterator`` in a worker thread, one item per step; close it there too."""
    sentinel = object()

    def step() -> object:
        return next(iterator, sentinel)

    try:
        while True:
            item = await anyio.to_thread.run_sync(step, abandon_on_cancel=False)
            if item is sentinel:
                return
            yield item  # type: ignore[misc]
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            await anyio.to_thread.run_sync(close)


async def batches_of_one(events: AsyncIterator[T]) -> AsyncIterator[Sequence[T]]:
    """Each item of ``events`` as a batch of its own; ``events`` is closed at the end."""
    try:
        async for event in events:
            yield (event,)
    finally:
        await aclose_source(events)


def _is_chunk(event: object) -> bool:
    return isinstance(event, _OUTPUT) and bool(event.text)


def timed(source: Iterable[T], intervals: list[float] | None) -> Iterable[T]:
    """``source`` itself, or (``intervals`` given) a view that appends to ``intervals`` the
    seconds from each reasoning or text chunk to the next, as they are read."""
    if intervals is None:
        return source
    return _timed(iter(source), intervals)


def _timed(source: Iterator[T], intervals: list[float]) -> Iterator[T]:
    last: float | None = None
    try:
        for event in source:
            if _is_chunk(event):
                now = _clock()
                if last is not None:
                    intervals.append(now - last)
                last = now
            yield event
    finally:
        close_source(source)


def atimed(
    source: AsyncIterator[Any], intervals: list[float] | None, batched: bool
) -> AsyncIterator[Any]:
    """Async twin of :func:`timed`; a batch (what one read of the stream gave) is one chunk."""
    if intervals is None:
        return source
    return _atimed(source, intervals, batched)


async def _atimed(
    source: AsyncIterator[Any], intervals: list[float], batched: bool
) -> AsyncIterator[Any]:
    last: float | None = None
    try:
        async for item in source:
            if any(_is_chunk(event) for event in item) if batched else _is_chunk(item):
                now = _clock()
                if last is not None:
                    intervals.append(now - last)
                last = now
            yield item
    finally:
        await aclose_source(source)
