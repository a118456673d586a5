"""``Pipeline``: pipes in a chain, one channel for all."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Self

import anyio

from . import _observers
from ._callbacks import EventCallback, StreamingCallback
from ._channel import Channel, claim, release
from ._delivery import adeliver, deliver_sync
from ._exceptions import ReasoningStreamError, UsageError
from ._loops import warn_if_loop_running
from ._pipe import Pipe, PipeResult, Prompt, Status

__all__ = ["Pipeline", "PipelineResult"]


def _name_pipes(pipes: list[Pipe]) -> None:
    """Give each pipe of a Pipeline a name of its own: events say which pipe made them.

    Names given (``name=``, or set on the pipe) must differ: a repeat is a ``UsageError``
    naming it. A pipe left unnamed keeps its class name when that is free, else gets the next
    free ``<class>#2``, ``<class>#3``... (the pipe keeps that name after the Pipeline).
    """
    unnamed = [p for p in pipes if getattr(p, "_default_name", None) == p.name]
    defaults = {id(p) for p in unnamed}
    taken: set[str] = set()
    for pipe in pipes:
        if id(pipe) in defaults:
            continue
        if pipe.name in taken:
            raise UsageError(
                f"two pipes in this Pipeline are named {pipe.name!r}: give each its own name= "
                "(events and results name their pipe by it)"
            )
        taken.add(pipe.name)
    for pipe in unnamed:
        base = type(pipe).__name__
        name, number = base, 1
        while name in taken:
            number += 1
            name = f"{base}#{number}"
        taken.add(name)
        pipe.name = name
        pipe._default_name = name


@dataclass(frozen=True, slots=True)
class PipelineResult:
    """One ``PipeResult`` per pipe that ran, in order."""

    results: tuple[PipeResult, ...]

    @property
    def text(self) -> str:
        """The last pipe's answer."""
        return self.results[-1].text if self.results else ""

    @property
    def status(self) -> Status:
        """The status of the last pipe that ran."""
        return self.results[-1].status if self.results else "completed"

    @property
    def message(self) -> dict[str, object]:
        """The last pipe's assistant message."""
        return self.results[-1].message if self.results else {"role": "assistant", "content": ""}


class Pipeline:
    """Pipes run in order: each pipe's answer (never its reasoning) is the next pipe's prompt.

    All pipes write into one channel, owned by the run: a callback set on the pipeline reaches
    every pipe, and escaping spans the boundaries, so text ending one answer and text starting
    the next can never form a marker together, whatever callbacks each pipe has.

    >>> from reasoning_stream.testing import ScriptedPipe
    >>> from reasoning_stream import TextDelta
    >>> pipeline = ScriptedPipe([TextDelta("draft")]) | ScriptedPipe(lambda p: [TextDelta(p + "!")])
    >>> pipeline.run("go").text
    'draft!'
    """

    _logger = logging.getLogger("reasoning_stream.pipeline")
    _retry_hooks: tuple[_observers.RetryHook, ...] | None = None
    _chunk_intervals: list[float] | None = None

    def __init__(self, *pipes: Pipe | Pipeline) -> None:
        flat: list[Pipe] = []
        for pipe in pipes:
            if isinstance(pipe, Pipeline):
                flat.extend(pipe.pipes)
            elif isinstance(pipe, Pipe):
                flat.append(pipe)
            else:
                raise UsageError(f"Pipeline takes Pipe objects, got {type(pipe).__name__}")
        if not flat:
            raise UsageError("a Pipeline needs at least one pipe")
        if len({id(p) for p in flat}) != len(flat):
            raise UsageError("a pipe may appear only once in a Pipeline; create another instance")
        _name_pipes(flat)
        self.pipes: tuple[Pipe, ...] = tuple(flat)
        self.last_result: PipelineResult | None = None
        self._warned_loop = False

    def __or__(self, other: Pipe | Pipeline) -> Pipeline:
        return Pipeline(self, other)

    def set_streaming_callback(self, callback: StreamingCallback) -> Self:
        """Add a channel callback to every pipe: one channel for the whole chain."""
        return self._each(lambda pipe: pipe.set_streaming_callback(callback))

    def remove_streaming_callback(self, callback: StreamingCallback) -> Self:
        """Remove a channel callback from every pipe."""
        return self._each(lambda pipe: pipe.remove_streaming_callback(callback))

    def set_event_callback(self, callback: EventCallback) -> Self:
        """Add a typed-event callback to every pipe; events name their source pipe."""
        return self._each(lambda pipe: pipe.set_event_callback(callback))

    def set_stream_model_reasoning(self, on: bool) -> Self:
        """Set the reasoning gate on every pipe."""
        return self._each(lambda pipe: pipe.set_stream_model_reasoning(on))

    def _each(self, setting: Callable[[Pipe], object]) -> Self:
        for pipe in self.pipes:
            setting(pipe)
        return self

    def run(self, prompt: Prompt) -> PipelineResult:
        """Run every pipe in order, synchronously.

        Refused with ``UsageError`` while this pipeline, or any pipe in it, is running (also
        from a callback), before anything is touched. Like ``Pipe.run()``, its first call on a
        thread running an event loop issues a ``RuntimeWarning`` naming ``arun()``.
        """
        if not self._warned_loop and warn_if_loop_running(self, "run", "arun"):
            self._warned_loop = True
        channel = Channel()
        claim(self.pipes, channel, what="the Pipeline")
        return _observers.observed(self, prompt, lambda: self._run(channel, prompt))

    def _run(self, channel: Channel, prompt: Prompt) -> PipelineResult:
        results: list[PipeResult] = []
        current = self.pipes[0]
        try:
            try:
                for pipe in self.pipes:
                    current = pipe
                    results.append(pipe._turn(channel, prompt))
                    prompt = results[-1].text
            except BaseException as error:
                self._record_failure(current, results, error)
                channel.end()
                deliver_sync(channel, current.on_callback_error, in_run=True, final=True)
                raise
            channel.end()
            deliver_sync(channel, current.on_callback_error, in_run=True)
        finally:
            release(self.pipes, channel)
        self.last_result = PipelineResult(tuple(results))
        return self.last_result

    async def arun(self, prompt: Prompt) -> PipelineResult:
        """Run every pipe in order on the running event loop (asyncio or trio).

        Refused like :meth:`run` while this pipeline or any of its pipes is running.
        """
        channel = Channel(deferred=True)
        claim(self.pipes, channel, what="the Pipeline")
        return await _observers.aobserved(self, prompt, lambda: self._arun(channel, prompt))

    async def _arun(self, channel: Channel, prompt: Prompt) -> PipelineResult:
        results: list[PipeResult] = []
        current = self.pipes[0]
        try:
            try:
                for pipe in self.pipes:
                    current = pipe
                    results.append(await pipe._aturn(channel, prompt))
                    prompt = results[-1].text
            except BaseException as error:
                self._record_failure(current, results, error)
                channel.end()
                with anyio.CancelScope(shield=True):
                    await adeliver(channel, current.on_callback_error, final=True)
                raise
            channel.end()
            await adeliver(channel, current.on_callback_error)
        finally:
            release(self.pipes, channel)
        self.last_result = PipelineResult(tuple(results))
        return self.last_result

    def _record_failure(
        self, failed: Pipe, results: list[PipeResult], error: BaseException
    ) -> None:
        last = failed.last_result
        if last is not None and (not results or results[-1] is not last):
            results.append(last)
        self.last_result = PipelineResult(tuple(results))
        if isinstance(error, ReasoningStreamError):
            error.pipeline_result = self.last_result  # type: ignore[attr-defined]


# ``pipe | other`` builds a Pipeline: the pipe module sits below this one and imports nothing of it.
Pipe._chain = Pipeline
