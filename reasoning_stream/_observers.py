"""Run observers: the one seam instrumentation (telemetry, logging) hooks into.

Every ``Pipe.run``/``arun`` and ``Pipeline.run``/``arun`` calls :func:`start` when it begins and
:func:`finish` when it ends, on every exit path. With no observer registered both cost one
tuple truthiness check, so instrumentation that is off costs nothing measurable.

An observer's ``run_started`` is called on the task (or thread) that runs, before anything is
requested, so it may make itself the current context (an OpenTelemetry span, say) and the runs
that nest inside it (the pipes of a Pipeline) see it as their parent. It returns a scope whose
``run_finished`` is called once, on the same task, with the result (``PipeResult`` or
``PipelineResult``, ``None`` when the run failed before it had one) and the error that ends the
run, if any. A scope may also have ``retrying(attempt, delay, error)`` (see
:class:`RetryingScope`): a pipe calls it before each retry of the same run; and a list
``chunk_intervals``, which the pipe fills with the seconds between consecutive chunks of
reasoning or text while the run reads its stream. It is optional, looked
up once per run, so a scope without it keeps working. Observers never break a run: what they
raise is logged and dropped.

This module sits below the pipe and the pipeline and imports neither: they hand themselves in
as the runner (:class:`Runner` says what is used of them).

The ``DEBUG`` lines of ``reasoning_stream.pipe`` and ``reasoning_stream.pipeline`` (a run's start
and end) come from a scope of this module, added only while that logger is enabled for ``DEBUG``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

__all__ = [
    "RetryHook",
    "RetryingScope",
    "RunObserver",
    "RunScope",
    "Runner",
    "add_run_observer",
    "aobserved",
    "finish",
    "observed",
    "remove_run_observer",
    "retrying",
    "start",
]

logger = logging.getLogger("reasoning_stream.observers")


class RunScope(Protocol):
    """What an observer keeps for one run; told once how the run ended."""

    def run_finished(self, result: Any, error: BaseException | None) -> None:
        """The run ended with ``result`` (and ``error`` when it raised).

        ``result``: the ``PipeResult`` or ``PipelineResult``, ``None`` when there was none.
        """


class RetryingScope(RunScope, Protocol):
    """A scope that also hears of retries (the method is optional on a :class:`RunScope`)."""

    def retrying(self, attempt: int, delay: float, error: BaseException | None) -> None:
        """Retry number ``attempt`` (1, 2, ...) of the run starts in ``delay`` seconds.

        ``error`` is the failure being retried (``Pipe.set_retries``), or ``None`` for an
        exhaustion retry (``set_exhaustion_retry``: the model spent its whole output budget on
        reasoning, and the pipe asks again with less; ``delay`` is then 0).
        """


RetryHook = Callable[[int, float, "BaseException | None"], None]
"""A scope's bound ``retrying`` method."""


class Runner(Protocol):
    """What this module needs of a ``Pipe`` or ``Pipeline`` that hands itself in."""

    _logger: logging.Logger
    _retry_hooks: tuple[RetryHook, ...] | None
    _chunk_intervals: list[float] | None

    @property
    def last_result(self) -> object:
        """The result of the runner's latest run, or ``None``."""


class RunObserver(Protocol):
    """Told of every run's start; returns a scope for it, or ``None`` to skip the run."""

    def run_started(self, runner: Any, prompt: Any) -> RunScope | None:
        """A run of ``runner`` (a ``Pipe`` or ``Pipeline``) on ``prompt`` begins on this task.

        Typed loosely: an observer may take the ``Pipe | Pipeline`` it knows the runner is.
        """


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


def start(runner: Runner, prompt: object) -> list[RunScope] | None:
    """Tell every observer a run begins; ``None`` (and no work) when there are none.

    Sets ``runner._retry_hooks``: the ``retrying`` methods of the scopes that have one; and
    ``runner._chunk_intervals``: the first scope's ``chunk_intervals`` list (shared with the
    other scopes that have one), or ``None``.
    """
    observers = _observers
    debug = runner._logger.isEnabledFor(logging.DEBUG)
    if not observers and not debug:
        runner._retry_hooks = runner._chunk_intervals = None
        return None
    scopes: list[RunScope] = [_LogScope(runner)] if debug else []
    for observer in observers:
        try:
            scope = observer.run_started(runner, prompt)
        except Exception:
            logger.warning("run observer %r raised in run_started", observer, exc_info=True)
            continue
        if scope is not None:
            scopes.append(scope)
    hooks = [hook for scope in scopes if (hook := getattr(scope, "retrying", None)) is not None]
    runner._retry_hooks = tuple(hooks) or None
    timing = [scope for scope in scopes if getattr(scope, "chunk_intervals", None) is not None]
    runner._chunk_intervals = intervals = timing[0].chunk_intervals if timing else None  # type: ignore[attr-defined]
    for scope in timing[1:]:
        scope.chunk_intervals = intervals  # type: ignore[attr-defined]
    return scopes


def retrying(
    hooks: tuple[RetryHook, ...], attempt: int, delay: float, error: BaseException | None
) -> None:
    """Tell each scope of a run that has a ``retrying`` method that a retry begins."""
    for hook in hooks:
        try:
            hook(attempt, delay, error)
        except Exception:
            logger.warning("run observer scope hook %r raised in retrying", hook, exc_info=True)


_Result = TypeVar("_Result")


def observed(runner: Runner, prompt: object, run: Callable[[], _Result]) -> _Result:
    """``run()`` between :func:`start` and :func:`finish`, on every exit path.

    The one observed-run wrapper of ``Pipe`` and ``Pipeline``: a run that raises reports the
    result it recorded on the way (``runner.last_result`` changed), else ``None``.
    """
    scopes = start(runner, prompt)
    previous = runner.last_result
    try:
        result = run()
    except BaseException as error:
        current = runner.last_result
        finish(scopes, None if current is previous else current, error)
        raise
    finish(scopes, result, None)
    return result


async def aobserved(
    runner: Runner, prompt: object, run: Callable[[], Awaitable[_Result]]
) -> _Result:
    """Async twin of :func:`observed`."""
    scopes = start(runner, prompt)
    previous = runner.last_result
    try:
        result = await run()
    except BaseException as error:
        current = runner.last_result
        finish(scopes, None if current is previous else current, error)
        raise
    finish(scopes, result, None)
    return result


def finish(
    scopes: list[RunScope] | None,
    result: object,
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


class _LogScope:
    """The ``DEBUG`` lines of a run: its start (never the prompt) and its end."""

    __slots__ = ("runner",)

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        log = runner._logger
        pipes = getattr(runner, "pipes", None)
        if pipes is None:
            name, provider, model = (
                getattr(runner, a, None) for a in ("name", "provider", "model")
            )
            log.debug("run start: pipe=%s provider=%s model=%s", name, provider, model)
        else:
            log.debug("run start: pipeline of %d: %s", len(pipes), [p.name for p in pipes])

    def run_finished(self, result: object, error: BaseException | None) -> None:
        status = getattr(result, "status", None) if result is not None else None
        usage = getattr(result, "usage", None)
        failed = None if error is None else type(error).__name__
        self.runner._logger.debug("run end: status=%s usage=%s error=%s", status, usage, failed)
