"""The hub's errors: one base, ``HubError``, and what each subclass says."""

from __future__ import annotations

from .._exceptions import ReasoningStreamError, UsageError

__all__ = [
    "HubError",
    "InvalidEntryIdError",
    "PublishError",
    "StreamExistsError",
    "StreamExpiredError",
    "StreamNotFoundError",
]


class HubError(ReasoningStreamError):
    """A hub could not do what was asked; the subclasses say what."""


class StreamExistsError(HubError, UsageError):
    """A run was started on a stream id that is taken (running, finished, or ended as lost).

    The claim of an id is atomic, in one process (a lock) and across processes (one Redis
    script): of two runs started on one id at once, exactly one runs.
    """


class StreamNotFoundError(HubError, LookupError):
    """No stream with that id appeared within the reader's ``timeout=``."""


class StreamExpiredError(HubError, LookupError):
    """``after=`` names an entry that retention trimmed, of a stream that may have expired."""


class InvalidEntryIdError(HubError, ValueError):
    """``after=`` is not an entry id this hub could have written for that stream."""


class PublishError(HubError):
    """The run finished, but the hub could not publish all of it.

    ``result`` holds the run's result, as for every error a run raises; ``unpublished``
    counts the entries that readers will not see (the final entry included when it is one of
    them).
    """

    def __init__(self, message: str, *, unpublished: int) -> None:
        super().__init__(message)
        self.unpublished = unpublished
