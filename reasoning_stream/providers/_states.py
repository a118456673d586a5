"""The opaque state a translator makes, labelled with the response's provider, model and endpoint.

Every :class:`~reasoning_stream.ReasoningState` a translator emits carries who made it, so
that only the same provider, model and endpoint ever get it back (``may_go_to``). A translator
gets those three, with what the response says of itself, from :class:`ResponseFacts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .._events import ReasoningState

__all__ = ["Maker", "ResponseFacts", "state_of"]


class Maker(Protocol):
    """What made a response: a translator's ``provider``, ``model`` and ``endpoint``."""

    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def endpoint(self) -> str | None: ...


class ResponseFacts:
    """A translator's :class:`Maker` fields, and what its response said of itself so far: the
    provider's ``response_id`` and the ``details`` the result has fields for (``response_model``,
    ``service_tier``, ``system_fingerprint``), read by the driver beside the events."""

    __slots__ = ("details", "endpoint", "model", "provider", "response_id")

    def __init__(self, provider: str, model: str, endpoint: str | None) -> None:
        self.provider = provider
        self.model = model
        self.endpoint = endpoint
        self.response_id: str | None = None
        self.details: dict[str, str] = {}


def state_of(
    maker: Maker,
    kind: str,
    payload: str | bytes,
    block: int | str | None,
    extra: Mapping[str, Any],
) -> ReasoningState:
    """The state ``maker``'s response carried: ``kind``, ``payload``, its ``block`` and
    ``extra``, labelled with the maker's provider, model and endpoint."""
    return ReasoningState(
        provider=maker.provider,
        model=maker.model,
        kind=kind,
        payload=payload,
        block=block,
        endpoint=maker.endpoint,
        extra=extra,
    )
