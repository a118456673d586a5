"""Run observers: the one seam instrumentation (telemetry, logging) hooks into.

Every ``Pipe.run``/``arun`` and ``Pipeline.run``/``arun`` calls :func:`start` when it begins and
:func:`finish` when it ends, on every exit path. With no observer registered both cost one
tuple truthiness check, so instrumentation that is off costs nothing measurable.

An observer's ``run_started`` is called on the task (or thread) that runs, before anything is
requested, so it may make itself the current context (an OpenTelemetry span, say) and the runs
that nest inside it (the pipes of a Pipeline) see it as their parent. It returns a scope whose
``run_finished`` is called once, on the same task, with the result (``PipeResult`` or
``PipelineResult``, ``None`` when the run failed before it had one) and the error that ends the
run, if any. Observers never break a run: what they raise is logged and dropped.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ._pipe import Pipe, PipeResult, Prompt
    from ._pipeline import Pipeline, PipelineResult

__all__ = ["RunObserver", "RunScope", "add_run_observer", "finish", "remove_run_observer", "start"]

logger = logging.getLogger("reasoning_stream.observers")


class RunScope(Protocol):
    """What an observer keeps for one run; told once how the run ended."""

    def run_finished(
        self, result: PipeResult | PipelineResult | None, error: BaseException | None
    ) -> None:
        """The run ended with ``result`` (and ``error`` when it raised)."""


class RunObserver(Protocol):
    """Told of every run's start; returns a scope for it, or ``None`` to skip the run."""

    def run_started(self, runner: Pipe | Pipeline, prompt: Prompt) -> RunScope | None:
        """A run of ``runner`` on ``prompt`` begins on the current task or thread."""


_observers: tuple[RunObserver, ...] = ()


def add_run_observer(observer: RunObserver) -> None:
    """Register ``observer`` for every run from now on; adding it twice is a no-op."""
    global _observers
    if not any(existing is observer for existing in _observers):
        _observers = (*_observers, observer)


def remove_run_observer(observer: RunObserver) -> None:
    """Unregister ``observer``; an unknown observer is ignored."""
    global _observers
    _observers = tuple(existing for existing in _observers if existing is not observer)


def start(runner: Pipe | Pipeline, prompt: Prompt) -> list[RunScope] | None:
    """Tell every observer a run begins; ``None`` (and no work) when there are none."""
    observers = _observers
    if not observers:
        return None
    scopes: list[RunScope] = []
    for observer in observers:
        try:
            scope = observer.run_started(runner, prompt)
        except Exception:
            logger.warning("run observer %r raised in run_started", observer, exc_info=True)
            continue
        if scope is not None:
            scopes.append(scope)
    return scopes


def finish(
    scopes: list[RunScope] | None,
    result: PipeResult | PipelineResult | None,
    error: BaseException | None,
) -> None:
    """Tell each scope the run ended, innermost (last started) first."""
    if not scopes:
        return
    for scope in reversed(scopes):
        try:
            scope.run_finished(result, error)
        except Exception:
            logger.warning("run observer scope %r raised in run_finished", scope, exc_info=True)
