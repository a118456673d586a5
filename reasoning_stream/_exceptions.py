"""One root exception and a small documented tree.

``ReasoningStreamError``
    ``UsageError``: the library was called wrongly (fix the calling code).
    ``ProviderError``: the provider failed: HTTP error, transport failure, an error event
    mid-stream. The original exception is ``__cause__``.
        ``MalformedStreamError``: the provider's bytes do not follow its own wire format.
    ``CallbackError``: an ``on_callback_error`` handler raised and so aborted the run.

Errors raised by a run carry what it captured as ``.result`` (a ``PipeResult``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._pipe import PipeResult

__all__ = [
    "CallbackError",
    "MalformedStreamError",
    "ProviderError",
    "ReasoningStreamError",
    "UsageError",
]


class ReasoningStreamError(Exception):
    """Root of every error this library raises."""

    result: PipeResult | None = None
    """What the run captured before it ended, when the error came out of a run."""


class UsageError(ReasoningStreamError, TypeError):
    """The library was used in a way it does not support; the message says what to do."""


class ProviderError(ReasoningStreamError):
    """The provider failed. ``provider`` names it; the original exception is ``__cause__``."""

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status_code: int | None = None,
        retry_after: float | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code
        self.retry_after = retry_after
        self.body = body


class MalformedStreamError(ProviderError):
    """The stream's bytes broke the provider's own wire format (truncated, garbled, wrong types)."""


class CallbackError(ReasoningStreamError):
    """An ``on_callback_error`` handler raised, which aborts the run; its error is ``__cause__``."""
