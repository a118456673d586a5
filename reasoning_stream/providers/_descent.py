"""The exhaustion retry: ask again with less thinking when the model spent its budget thinking.

When a run stops at the output limit with reasoning and no answer
(``result.reasoning_exhausted``) and no answer byte reached a callback, the pipe sends the same
request again with the next lower effort plan (see
:meth:`~._pipe.ProviderPipe.set_exhaustion_retry`). :func:`descend` and :func:`adescend` run
the attempts; :class:`Descent` holds one run's steps down the ladder and merges their results.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, Self

from .._capture import PipeResult, merge_attempts
from .._effort import Reasoning, ReasoningPlan
from .._exceptions import ReasoningStreamError
from .._pipe import logger as pipe_logger

__all__ = ["Descending", "Descent", "adescend", "descend"]


class Descending(Protocol):
    """What a descent needs of the pipe it lowers."""

    name: str
    reasoning: Reasoning
    last_result: PipeResult | None
    _exhaustion_retries: int

    def lower_reasoning_plan(self) -> ReasoningPlan | None:
        """The next lower effort plan, or ``None`` if nothing is lower."""

    def _retrying(self, attempt: int, delay: float, error: BaseException | None) -> None: ...


class Descent:
    """One run's steps down the effort ladder, as a context: when the run ends, however it
    ends, the pipe's ``reasoning`` is restored, and a failure keeps the earlier reasoning."""

    def __init__(self, pipe: Descending) -> None:
        self.pipe = pipe
        self.original: Reasoning = pipe.reasoning
        self.earlier: list[PipeResult] = []

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: Any
    ) -> None:
        try:
            if error is not None:
                self.failed(error)
        finally:
            self.pipe.reasoning = self.original

    def step_down(self, result: PipeResult) -> bool:
        """Lower the pipe's effort for one more attempt after ``result``, if that is allowed."""
        pipe = self.pipe
        if len(self.earlier) >= pipe._exhaustion_retries or not result.reasoning_exhausted:
            return False
        if result.text:
            return False  # whitespace reached the callbacks: an answer byte, so no retry
        plan = pipe.lower_reasoning_plan()
        if plan is None:
            return False
        pipe_logger.info(
            "%s: the model spent its whole output budget on reasoning; asking again with "
            "reasoning=%r",
            pipe.name,
            plan.reasoning,
        )
        self.earlier.append(result)
        pipe.reasoning = plan.reasoning
        pipe._retrying(len(self.earlier), 0.0, None)
        return True

    def finished(self, result: PipeResult) -> PipeResult:
        """The run's result: every attempt's reasoning, the last attempt's answer."""
        merged = merge_attempts(self.earlier, result)
        self.pipe.last_result = merged
        return merged

    def failed(self, error: BaseException) -> None:
        """A retry failed: what it raises and ``last_result`` still hold the earlier reasoning."""
        current = self.pipe.last_result
        if not self.earlier or current is None or any(current is r for r in self.earlier):
            return
        merged = self.finished(current)
        if isinstance(error, ReasoningStreamError) and error.result is current:
            error.result = merged


def descend(pipe: Descending, attempt: Callable[[], PipeResult]) -> PipeResult:
    """Run ``attempt``, and again one step lower while the model exhausts its budget."""
    with Descent(pipe) as descent:
        result = attempt()
        while descent.step_down(result):
            result = attempt()
        return descent.finished(result)


async def adescend(pipe: Descending, attempt: Callable[[], Awaitable[PipeResult]]) -> PipeResult:
    """Async twin of :func:`descend`."""
    with Descent(pipe) as descent:
        result = await attempt()
        while descent.step_down(result):
            result = await attempt()
        return descent.finished(result)
