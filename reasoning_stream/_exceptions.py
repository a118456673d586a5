"""One root exception and a small documented tree.

``ReasoningStreamError``
    ``UsageError``: the library was called wrongly (fix the calling code); also a ``TypeError``.
        ``InvalidValueError`` (also a ``ValueError``): an argument of the right kind holds a
        value the library does not take (``reasoning="extreme"``, ``timeout=0``).
    ``ProviderError``: the provider failed: HTTP error, transport failure, an error event
    mid-stream. The original exception is ``__cause__``.
        ``MalformedStreamError``: the provider's bytes do not follow its own wire format.
    ``CallbackError``: an ``on_callback_error`` handler raised and so aborted the run.
    ``BudgetExceededError``: a conversation's budget is spent; the run was not started.
    ``StoreError``: a conversation store failed (unreachable, not a store, bad data).
        ``ConflictError``: a write's ``expected_version`` is stale; nothing was changed.
        ``CorruptConversationError``: a stored conversation cannot be read back.
        ``ConversationNotFoundError`` (also a ``KeyError``): no conversation has that id.

Errors raised by a run carry what it captured as ``.result`` (a ``PipeResult``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._capture import PipeResult

__all__ = [
    "BudgetExceededError",
    "CallbackError",
    "ConflictError",
    "ConversationNotFoundError",
    "CorruptConversationError",
    "InvalidValueError",
    "MalformedStreamError",
    "ProviderError",
    "ReasoningStreamError",
    "StoreError",
    "UsageError",
]


class ReasoningStreamError(Exception):
    """Root of every error this library raises."""

    result: PipeResult | None = None
    """What the run captured before it ended, when the error came out of a run."""


class UsageError(ReasoningStreamError, TypeError):
    """The library was used in a way it does not support; the message says what to do."""


class InvalidValueError(UsageError, ValueError):
    """An argument of the right kind holds a value the library does not take.

    Both a ``UsageError`` (this library's misuse) and a ``ValueError`` (Python's word for a
    bad value), so either ``except`` catches it.
    """


class ProviderError(ReasoningStreamError):
    """The provider failed. ``provider`` names it; the original exception is ``__cause__``.

    ``hint``, when set, is what to check (the base URL's expected shape, for a 404 or a
    server never reached); the message ends with it too.
    """

    hint: str | None = None

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


class BudgetExceededError(ReasoningStreamError):
    """A conversation's budget (``Conversation.budget``) is spent: no request was made.

    ``budget`` is the :class:`~reasoning_stream.Budget` as it stood; raise the cap with a new
    ``conversation.budget(...)`` or remove it with ``clear_budget()`` to run again.
    """

    def __init__(self, message: str, *, budget: object = None) -> None:
        super().__init__(message)
        self.budget = budget


class StoreError(ReasoningStreamError):
    """A conversation store failed: its backend is unreachable, not a store, or holds bad data.

    ``conversation_id`` names the conversation concerned, when there is one; the backend's own
    exception is ``__cause__``. A failed write changes nothing.
    """

    def __init__(self, message: str, *, conversation_id: str | None = None) -> None:
        super().__init__(message)
        self.conversation_id = conversation_id

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ConflictError(StoreError):
    """A write's ``expected_version`` is not the stored one; nothing was changed.

    Another writer got there first: load the conversation again and redo the change on the
    latest version. ``expected_version`` is what the write assumed, ``actual_version`` what
    the store holds (``None`` when the conversation does not exist).
    """

    def __init__(
        self,
        message: str,
        *,
        conversation_id: str | None = None,
        expected_version: int | None = None,
        actual_version: int | None = None,
    ) -> None:
        super().__init__(message, conversation_id=conversation_id)
        self.expected_version = expected_version
        self.actual_version = actual_version


class CorruptConversationError(StoreError):
    """The stored data of one conversation cannot be read back; the others are unaffected."""


class ConversationNotFoundError(StoreError, KeyError):
    """No conversation is stored under ``conversation_id``; a ``KeyError`` too."""
