"""Event sources: the async views a pipe gets by default from what it implements.

A pipe that implements only ``iter_events`` (a sync iterator) still runs under ``arun()``: the
iterator is stepped in a worker thread (:func:`threaded`). A source that yields one event at a
time is read by the batch driver as batches of one (:func:`batches_of_one`). Both close what
they wrap, shielded from cancellation, whatever the ending.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TypeVar

import anyio
import anyio.to_thread

__all__ = ["batches_of_one", "threaded"]

T = TypeVar("T")


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
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                await aclose()
