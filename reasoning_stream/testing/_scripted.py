"""``ScriptedPipe``: a pipe that replays a script, for testing callbacks and apps offline."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import TypeAlias

import anyio

from .._callbacks import CallbackErrorHandler
from .._events import Event, ReasoningDelta, ReasoningEnd, ReasoningStart, TextDelta
from .._pipe import Pipe, Prompt

__all__ = ["ScriptItem", "ScriptedPipe"]

_EVENT_TYPES = frozenset({ReasoningDelta, TextDelta, ReasoningStart, ReasoningEnd})

ScriptItem: TypeAlias = Event | float | int | str | BaseException
"""An event; a number of seconds to sleep; a ``str`` (answer text); or an exception to raise."""


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
        self.prompts: list[Prompt] = []

    def _items(self, prompt: Prompt) -> Iterable[ScriptItem]:
        self.prompts.append(prompt)
        script = self._script
        return script(prompt) if callable(script) else script

    def iter_events(self, prompt: Prompt) -> Iterator[Event]:
        """Replay the script, sleeping with ``time.sleep``."""
        for item in self._items(prompt):
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, str):
                yield TextDelta(item)
            elif isinstance(item, int | float):
                time.sleep(item)
            else:
                yield item

    async def aiter_events(self, prompt: Prompt) -> AsyncIterator[Event]:
        """Replay the script, sleeping with ``anyio.sleep``."""
        for item in self._items(prompt):
            if type(item) in _EVENT_TYPES:
                yield item  # type: ignore[misc]
            elif isinstance(item, BaseException):
                raise item
            elif isinstance(item, str):
                yield TextDelta(item)
            elif isinstance(item, int | float):
                await anyio.sleep(item)
            else:
                yield item
