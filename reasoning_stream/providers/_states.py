"""The opaque state a translator makes, labelled with the response's provider, model and endpoint.

Every :class:`~reasoning_stream.ReasoningState` a translator emits carries who made it, so
that only the same provider, model and endpoint ever get it back (``may_go_to``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .._events import ReasoningState

__all__ = ["Maker", "state_of"]


class Maker(Protocol):
    """What made a response: a translator's ``provider``, ``model`` and ``endpoint``."""

    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def endpoint(self) -> str | None: ...


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
