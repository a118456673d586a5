"""``ScriptedPipe``: a pipe that replays a script, for testing callbacks and apps offline."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from typing import TypeAlias

import anyio

from .._callbacks import CallbackErrorHandler
from .._events import Event, ReasoningDelta, ReasoningEnd, ReasoningStart, TextDelta
from .._pipe import Pipe, Prompt

__all__ = ["ScriptItem", "ScriptedPipe"]

_EVENT_TYPES = frozenset({ReasoningDelta, TextDelta, ReasoningStart, ReasoningEnd})

ScriptItem: TypeAlias = Event | float | int | str | BaseException
"""An event; a number of seconds to sleep; a ``str`` (answer text); or an exception to raise."""
_Step: TypeAlias = "tuple[Event, ...] | float | int | BaseException"


class ScriptedPipe(Pipe):
    """A pipe that replays a script through the hooks, as a provider stream would.

    Items are events (``ReasoningDelta``, ``TextDelta``, ``Finish("length")``, ...), numbers
    (sleep that many seconds: ``time.sleep`` in ``run()``, ``anyio.sleep`` in ``arun()``), plain
    strings (answer text) and exception instances (raised at that point, as a provider failure).
    The script may be a callable that takes the prompt and returns the items. Every prompt
    received is kept in ``prompts``.

    >>> from reasoning_stream import ReasoningDelta, TextDelta
    >>> chunks = []
    >>> pipe = ScriptedPipe([ReasoningDelta("hmm"), TextDelta("hi")])
    >>> pipe.set_streaming_callback(chunks.append).run("hello").text
    'hi'
    >>> chunks
    ['<think>', 'hmm', '</think>', 'hi']
    """

    provider = "scripted"

    def __init__(
        self,
        script: Iterable[ScriptItem] | Callable[[Prompt], Iterable[ScriptItem]],
        *,
        name: str | None = None,
        escape_markers: bool = True,
        on_callback_error: CallbackErrorHandler | None = None,
        stream_model_reasoning: bool = True,
        model: str = "scripted",
    ) -> None:
        super().__init__(
            name=name,
            escape_markers=escape_markers,
            on_callback_error=on_callback_error,
            stream_model_reasoning=stream_model_reasoning,
        )
        self.model = model
        self._script = script if callable(script) else tuple(script)
        # The script cut into steps, for the script it was cut from.
        self._plan: tuple[object, list[_Step]] | None = None
        self.prompts: list[Prompt] = []

    def _steps(self, prompt: Prompt) -> Iterator[_Step]:
        """The script for ``prompt`` as runs of events, sleeps and exceptions, in order.

        A script given as a sequence is cut into runs once; one produced lazily is read one
        item at a time, as the run goes (a run of one event each), never ahead.
        """
        self.prompts.append(prompt)
        script = self._script
        if not callable(script):
            planned = self._plan
            if planned is None or planned[0] is not script:
                self._plan = planned = (script, _plan(script))
            return iter(planned[1])
        items = script(prompt)
        if isinstance(items, list | tuple):
            return iter(_plan(items))
        return (step for item in items for step in _plan((item,)))

    def iter_events(self, prompt: Prompt) -> Iterator[Event]:
        """Replay the script, sleeping with ``time.sleep``."""
        for step in self._steps(prompt):
            if type(step) is tuple:
                yield from step
            elif isinstance(step, BaseException):
                raise step
            else:
                time.sleep(step)  # type: ignore[arg-type]

    async def aiter_events(self, prompt: Prompt) -> AsyncIterator[Event]:
        """Replay the script, sleeping with ``anyio.sleep``."""
        async for batch in self.aiter_event_batches(prompt):
            for event in batch:
                yield event

    async def aiter_event_batches(self, prompt: Prompt) -> AsyncIterator[Sequence[Event]]:
        """Replay the script, a run of events without a sleep or an exception at a time."""
        for step in self._steps(prompt):
            if type(step) is tuple:
                yield step
            elif isinstance(step, BaseException):
                raise step
            else:
                await anyio.sleep(step)  # type: ignore[arg-type]


def _plan(items: Iterable[ScriptItem]) -> list[_Step]:
    """Runs of consecutive events (a ``str`` is answer text), and the sleeps and exceptions."""
    steps: list[_Step] = []
    run: list[Event] = []
    for item in items:
        if type(item) in _EVENT_TYPES:
            run.append(item)  # type: ignore[arg-type]
        elif isinstance(item, str):
            run.append(TextDelta(item))
        elif isinstance(item, BaseException | int | float):
            if run:
                steps.append(tuple(run))
                run = []
            steps.append(item)
        else:
            run.append(item)
    if run:
        steps.append(tuple(run))
    return steps
