"""``Pipeline``: pipes in a chain, one channel for all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from . import _observers
from ._callbacks import EventCallback, StreamingCallback
from ._exceptions import ReasoningStreamError, UsageError
from ._pipe import Pipe, PipeResult, Prompt, Status, _Channel

__all__ = ["Pipeline", "PipelineResult"]


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

    All pipes write into one channel: a callback set on the pipeline reaches every pipe, and
    escaping spans the boundaries, so text ending one answer and text starting the next can
    never form a marker together.

    >>> from reasoning_stream.testing import ScriptedPipe
    >>> from reasoning_stream import TextDelta
    >>> pipeline = ScriptedPipe([TextDelta("draft")]) | ScriptedPipe(lambda p: [TextDelta(p + "!")])
    >>> pipeline.run("go").text
    'draft!'
    """

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
        self.pipes: tuple[Pipe, ...] = tuple(flat)
        self.last_result: PipelineResult | None = None

    def __or__(self, other: Pipe | Pipeline) -> Pipeline:
        return Pipeline(self, other)

    def set_streaming_callback(self, callback: StreamingCallback) -> Self:
        """Add a channel callback to every pipe: one channel for the whole chain."""
        for pipe in self.pipes:
            pipe.set_streaming_callback(callback)
        return self

    def remove_streaming_callback(self, callback: StreamingCallback) -> Self:
        """Remove a channel callback from every pipe."""
        for pipe in self.pipes:
            pipe.remove_streaming_callback(callback)
        return self

    def set_event_callback(self, callback: EventCallback) -> Self:
        """Add a typed-event callback to every pipe; events name their source pipe."""
        for pipe in self.pipes:
            pipe.set_event_callback(callback)
        return self

    def set_stream_model_reasoning(self, on: bool) -> Self:
        """Set the reasoning gate on every pipe."""
        for pipe in self.pipes:
            pipe.set_stream_model_reasoning(on)
        return self

    def run(self, prompt: Prompt) -> PipelineResult:
        """Run every pipe in order, synchronously."""
        scopes = _observers.start(self, prompt)
        previous = self.last_result
        try:
            result = self._run(prompt)
        except BaseException as error:
            current = self.last_result
            _observers.finish(scopes, None if current is previous else current, error)
            raise
        _observers.finish(scopes, result, None)
        return result

    def _run(self, prompt: Prompt) -> PipelineResult:
        results: list[PipeResult] = []
        channel = self._share_channel()
        previous: Pipe | None = None
        try:
            for pipe in self.pipes:
                if previous is not None and _audience_changes(previous, pipe):
                    previous._release_held()
                    previous._deliver()
                try:
                    results.append(pipe.run(prompt))
                finally:
                    previous = pipe
                prompt = results[-1].text
        except BaseException as error:
            self._record_failure(previous, results, error)
            if previous is not None:
                previous._release_held()
                previous._deliver(final=True)
            raise
        finally:
            self._unshare_channel(channel)
        assert previous is not None
        previous._release_held()
        previous._deliver()
        self.last_result = PipelineResult(tuple(results))
        return self.last_result

    async def arun(self, prompt: Prompt) -> PipelineResult:
        """Run every pipe in order on the running event loop (asyncio or trio)."""
        scopes = _observers.start(self, prompt)
        previous = self.last_result
        try:
            result = await self._arun(prompt)
        except BaseException as error:
            current = self.last_result
            _observers.finish(scopes, None if current is previous else current, error)
            raise
        _observers.finish(scopes, result, None)
        return result

    async def _arun(self, prompt: Prompt) -> PipelineResult:
        import anyio

        results: list[PipeResult] = []
        channel = self._share_channel()
        previous: Pipe | None = None
        try:
            for pipe in self.pipes:
                if previous is not None and _audience_changes(previous, pipe):
                    previous._release_held()
                    await previous._adeliver()
                try:
                    results.append(await pipe.arun(prompt))
                finally:
                    previous = pipe
                prompt = results[-1].text
        except BaseException as error:
            self._record_failure(previous, results, error)
            if previous is not None:
                previous._release_held()
                with anyio.CancelScope(shield=True):
                    await previous._adeliver(final=True)
            raise
        finally:
            self._unshare_channel(channel)
        assert previous is not None
        previous._release_held()
        await previous._adeliver()
        self.last_result = PipelineResult(tuple(results))
        return self.last_result

    def _share_channel(self) -> _Channel:
        channel = _Channel()
        for pipe in self.pipes:
            pipe._channel = channel
            pipe._owns_channel = False
        return channel

    def _unshare_channel(self, channel: _Channel) -> None:
        for pipe in self.pipes:
            if pipe._channel is channel:
                pipe._owns_channel = True

    def _record_failure(
        self, failed: Pipe | None, results: list[PipeResult], error: BaseException
    ) -> None:
        last = failed.last_result if failed is not None else None
        if last is not None and (not results or results[-1] is not last):
            results.append(last)
        self.last_result = PipelineResult(tuple(results))
        if isinstance(error, ReasoningStreamError):
            error.pipeline_result = self.last_result  # type: ignore[attr-defined]


def _audience_changes(previous: Pipe, following: Pipe) -> bool:
    """Whether held characters must go out now: the next pipe's callbacks are not the same."""
    return [id(c) for c in previous._callbacks] != [id(c) for c in following._callbacks]
