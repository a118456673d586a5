"""The retry policy of a pipe: what ``Pipe.set_retries`` stores, and which failures earn a retry.

A retry is only safe before any subscriber saw a byte (a retry after that would show it the same
text twice), and only for failures that a second request may not repeat: the statuses in
:data:`RETRY_STATUSES`, any 5xx, and transport failures before the stream began.

>>> from reasoning_stream import ProviderError
>>> policy = RetryPolicy(attempts=2, backoff=0.5, max_delay=8.0)
>>> policy.delay(ProviderError("busy", status_code=429), attempt=1, delivered=False)
1.0
>>> policy.delay(ProviderError("busy", status_code=429), attempt=1, delivered=True) is None
True
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import anyio

from . import _observers
from ._channel import Channel
from ._exceptions import MalformedStreamError, ProviderError, UsageError

__all__ = ["RETRY_STATUSES", "RetryPolicy", "announce", "aretried", "retried"]

logger = logging.getLogger("reasoning_stream.pipe")

_Result = TypeVar("_Result")

RETRY_STATUSES = frozenset({408, 409, 429, 529})
"""HTTP statuses retried besides 5xx: timeout, conflict, rate limit, overloaded."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Up to ``attempts`` retries, waiting ``Retry-After`` or ``backoff * 2**attempt`` seconds,
    both capped at ``max_delay``. The default retries nothing."""

    attempts: int = 0
    backoff: float = 0.5
    max_delay: float = 8.0

    def __post_init__(self) -> None:
        if self.attempts < 0 or self.backoff < 0 or self.max_delay < 0:
            raise ValueError("attempts, backoff and max_delay must not be negative")

    @classmethod
    def checked(cls, attempts: object, backoff: object, max_delay: object) -> RetryPolicy:
        """The policy ``Pipe.set_retries`` asks for; a wrong type is a ``UsageError`` naming
        the parameter (``set_retries("3")``), a negative number a ``ValueError``."""
        if isinstance(attempts, bool) or not isinstance(attempts, int):
            raise UsageError(
                f"set_retries: attempts must be an int (how many retries), got "
                f"{type(attempts).__name__}: {attempts!r:.40}"
            )
        seconds: list[float] = []
        for label, value in (("backoff", backoff), ("max_delay", max_delay)):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise UsageError(
                    f"set_retries: {label} must be a number of seconds, got "
                    f"{type(value).__name__}: {value!r:.40}"
                )
            seconds.append(value)
        return cls(attempts, *seconds)

    def delay(self, error: BaseException, attempt: int, delivered: bool) -> float | None:
        """Seconds to wait before retry ``attempt + 1`` after ``error``; ``None``: it is final.

        ``delivered``: a subscriber already got something from this run.
        """
        if attempt >= self.attempts or delivered:
            return None
        if not isinstance(error, ProviderError) or isinstance(error, MalformedStreamError):
            return None
        status = error.status_code
        if status is None:
            # A transport failure is retried only before the stream began.
            if error.result is not None and (error.result.text or error.result.model_reasoning):
                return None
        elif status not in RETRY_STATUSES and not 500 <= status < 600:
            return None
        if error.retry_after is not None:
            return min(max(error.retry_after, 0.0), self.max_delay)
        return float(min(self.backoff * 2**attempt, self.max_delay))


def retried(
    policy: RetryPolicy,
    channel: Channel,
    attempt: Callable[[], _Result],
    retrying: Callable[[int, float, BaseException | None], None],
) -> _Result:
    """``attempt()``, and again after each failure ``policy`` retries, told to ``retrying``.

    ``channel.handed`` says whether the attempt delivered anything (then a failure is final).
    """
    for number in itertools.count():
        channel.handed = False
        try:
            return attempt()
        except ProviderError as error:
            delay = _retry_or_raise(policy, channel, error, number, retrying)
        time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


async def aretried(
    policy: RetryPolicy,
    channel: Channel,
    attempt: Callable[[], Awaitable[_Result]],
    retrying: Callable[[int, float, BaseException | None], None],
) -> _Result:
    """Async twin of :func:`retried`: the same decisions, an ``anyio.sleep`` between."""
    for number in itertools.count():
        channel.handed = False
        try:
            return await attempt()
        except ProviderError as error:
            delay = _retry_or_raise(policy, channel, error, number, retrying)
        await anyio.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def _retry_or_raise(
    policy: RetryPolicy,
    channel: Channel,
    error: ProviderError,
    number: int,
    retrying: Callable[[int, float, BaseException | None], None],
) -> float:
    """The wait before retry ``number + 1``, announced; or ``error`` raised again: it is final."""
    delay = policy.delay(error, number, channel.handed)
    if delay is None:
        raise error
    retrying(number + 1, delay, error)
    return delay


def announce(
    name: str,
    hooks: tuple[_observers.RetryHook, ...] | None,
    attempt: int,
    delay: float,
    error: BaseException | None,
) -> None:
    """Retry number ``attempt`` of pipe ``name`` begins in ``delay`` s: log it, tell ``hooks``.

    ``error`` is ``None`` for an exhaustion retry. The line names the error's class and
    status code, never its message or body.
    """
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(
            "%s: retry %d in %.3f s after %s (status %s)",
            name,
            attempt,
            delay,
            "reasoning exhausted" if error is None else type(error).__name__,
            getattr(error, "status_code", None),
        )
    if hooks:
        _observers.retrying(hooks, attempt, delay, error)
