"""Reasoning the provider keeps hidden: timed per block, reported as ``ReasoningHidden``.

A hidden segment (an Anthropic thinking block with ``display: "omitted"``, a redacted thinking
block, a Responses reasoning item with no text, a Bedrock redacted block) puts no markers in the
channel. Translators time such a block from its start to its stop and hand the durations here;
they go out as :class:`~reasoning_stream.ReasoningHidden` events once the response reports its
token counts (its last usage), so ``tokens`` is filled when the provider reports them: the
reasoning tokens of the response when it had exactly one reasoning block and it was hidden
(providers count reasoning per response, not per block), else ``None``.

Only block boundaries read the clock; deltas cost nothing more.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

from .._events import ReasoningHidden

__all__ = ["HiddenBlocks"]


class HiddenBlocks:
    """Times reasoning blocks and releases the hidden ones as events.

    >>> ticks = iter([10.0, 14.5])
    >>> blocks = HiddenBlocks(clock=lambda: next(ticks))
    >>> blocks.start(0); blocks.stop(0, hidden=True)
    >>> blocks.release(tokens=812)
    [ReasoningHidden(duration=4.5, tokens=812)]
    """

    __slots__ = ("_clock", "_done", "_open", "_visible")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._open: dict[Hashable, float] = {}
        self._done: list[float] = []
        self._visible = False

    def start(self, key: Hashable) -> None:
        """A reasoning block ``key`` opened now (a second start keeps the first time)."""
        self._open.setdefault(key, self._clock())

    def stop(self, key: Hashable, *, hidden: bool) -> None:
        """Block ``key`` closed: kept for release when ``hidden``, else noted as visible."""
        began = self._open.pop(key, None)
        if not hidden:
            self._visible = True
        else:
            # A block read whole (a one-shot response) has no start of its own: it took no time
            # this side could see.
            self._done.append(0.0 if began is None else max(0.0, self._clock() - began))

    def release(self, tokens: int | None = None) -> list[ReasoningHidden]:
        """The hidden blocks closed so far, as events; ``tokens``: the response's reasoning
        tokens, when reported."""
        if not self._done:
            return []
        done, self._done = self._done, []
        count = tokens if len(done) == 1 and not self._visible else None
        return [ReasoningHidden(duration, count) for duration in done]
