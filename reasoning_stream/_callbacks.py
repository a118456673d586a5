"""Calling user callbacks, sync or async, so that one failing callback never stops the others."""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeAlias, TypeVar

from ._events import Event
from ._exceptions import CallbackError, UsageError

__all__ = [
    "CallbackErrorHandler",
    "EventCallback",
    "StreamingCallback",
    "check_sync_callbacks",
    "checked_callable",
    "is_async_callable",
    "reject_awaitable",
    "report_callback_error",
    "with_callback",
    "without_callback",
]

logger = logging.getLogger("reasoning_stream.callbacks")

StreamingCallback: TypeAlias = Callable[[str], Awaitable[Any] | None]
"""Receives every channel chunk: text, markers and reasoning. Sync or async."""
EventCallback: TypeAlias = Callable[[Event], Awaitable[Any] | None]
"""Receives every typed event. Sync or async."""
CallbackErrorHandler: TypeAlias = Callable[[Exception, object], object]
"""Called as ``handler(error, chunk)`` when a callback raised; raising from it aborts the run."""


_Callable = TypeVar("_Callable")


def checked_callable(callback: _Callable, what: str) -> _Callable:
    """``callback`` itself, or ``UsageError`` when it cannot be called.

    Said where it is given, instead of once per chunk in the middle of a stream.
    """
    if not callable(callback):
        raise UsageError(
            f"{what} must be callable (a function, a bound method, an object with __call__), "
            f"got {type(callback).__name__}: {callback!r}"
        )
    return callback


def with_callback(
    callbacks: tuple[_Callable, ...], callback: _Callable, what: str
) -> tuple[_Callable, ...]:
    """``callbacks`` and then ``callback`` (``UsageError`` unless callable, see
    :func:`checked_callable`); ``callbacks`` itself when it holds ``callback`` already."""
    checked_callable(callback, what)
    if any(existing is callback for existing in callbacks):
        return callbacks
    return (*callbacks, callback)


def without_callback(callbacks: tuple[_Callable, ...], callback: object) -> tuple[_Callable, ...]:
    """``callbacks`` without ``callback`` (by identity); unknown callbacks change nothing."""
    return tuple(existing for existing in callbacks if existing is not callback)


def is_async_callable(obj: object) -> bool:
    """Whether calling ``obj`` returns an awaitable (a coroutine function or async ``__call__``)."""
    while isinstance(obj, functools.partial):
        obj = obj.func
    return inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(
        getattr(obj, "__call__", None)  # noqa: B004 - the bound __call__ of a callable object
    )


def report_callback_error(
    handler: CallbackErrorHandler | None, error: Exception, chunk: object, *, final: bool = False
) -> None:
    """Route a callback's error to the handler, or log it; a raising handler aborts the run.

    ``final`` is for the closing delivery of a run that is already ending: the handler still
    hears of the error, but cannot abort what is already over.
    """
    if handler is None:
        logger.warning("streaming callback raised; the stream goes on", exc_info=error)
        return
    try:
        handler(error, chunk)
    except Exception as handler_error:
        if final:
            logger.warning("on_callback_error raised while the run was closing", exc_info=True)
            return
        raise CallbackError(
            f"on_callback_error raised {type(handler_error).__name__} while handling "
            f"{type(error).__name__}: {error}; the run was aborted"
        ) from handler_error


def reject_awaitable(result: object, callback: object) -> None:
    """A sync delivery got an awaitable back: close it and say how to fix the call."""
    close = getattr(result, "close", None)
    if callable(close):
        close()
    raise UsageError(
        f"callback {callback!r} is async; async callbacks need `await pipe.arun(...)` "
        "(run() and hooks called outside a run deliver only to sync callbacks)"
    )


def check_sync_callbacks(callbacks: Iterable[Callable[..., object]]) -> None:
    """Refuse an async callback before a sync ``run()`` starts: nothing could await it."""
    for callback in callbacks:
        if is_async_callable(callback):
            raise UsageError(
                f"callback {callback!r} is async: use `await pipe.arun(...)`, "
                "or give run() a sync callback"
            )
