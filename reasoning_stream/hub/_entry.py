"""One entry of a hub stream, and the JSON shape its event travels in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from .._events import (
    Event,
    Finish,
    OpaqueState,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningHidden,
    ReasoningStart,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    UsageReport,
)
from .._pipe import Status
from .._sources import aclose_source

__all__ = ["Entry", "entries_of", "event_from_dict", "event_to_dict"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of a run's log: a channel chunk, a typed event, or both; or the final entry.

    ``id`` is opaque: pass it back as ``after=`` to resume right past this entry.
    """

    id: str
    chunk: str = ""
    """Channel text (markers and escapes included); ``""`` when the entry carries none."""
    event: Event | None = None
    """A typed event as an event callback saw it; never opaque provider state."""
    final: bool = False
    """The run's last entry; ``status`` then holds how the run ended."""
    status: Status | None = None
    error: str | None = None
    """On a final entry with status ``"error"``: why the run failed (the error's type and
    message, without secrets), or, on one the hub wrote for a run that could not (its writer
    was lost: the process crashed or hung, see ``RedisHub(lease=)``), why the stream ended.
    ``None`` on every other entry."""
    envelope: str | None = None
    """On the final entry of a run published by a hub given ``seal_keys``: the run's record
    (its opaque reasoning state, scope and order; one per model step of a tool loop, each
    bound to its step's text and tool calls) sealed, so that a client can keep it and send it
    back, but neither read, alter, nor move it to another turn. ``None`` on every other
    entry."""


def event_to_dict(event: Event) -> dict[str, Any]:
    """A typed event as a JSON-safe dict, ``kind`` first. Opaque state has no shape here."""
    kind = type(event)
    data: dict[str, Any] = {"kind": event.kind}
    if kind is ReasoningDelta or kind is TextDelta:
        data["text"] = event.text  # type: ignore[union-attr]
    elif isinstance(event, Finish):
        data["reason"] = event.reason
    elif isinstance(event, ToolCall):
        data.update(id=event.id, name=event.name, arguments=event.arguments)
    elif isinstance(event, ToolResult):
        data.update(
            id=event.id,
            name=event.name,
            content=event.content,
            is_error=event.is_error,
            duration=event.duration,
        )
    elif isinstance(event, UsageReport):
        usage = event.usage
        data["usage"] = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "reasoning_tokens": usage.reasoning_tokens,
        }
        # Cached input counts ride along only when reported (older readers ignore nothing).
        if usage.cache_read_tokens is not None:
            data["usage"]["cache_read_tokens"] = usage.cache_read_tokens
        if usage.cache_write_tokens is not None:
            data["usage"]["cache_write_tokens"] = usage.cache_write_tokens
    elif isinstance(event, ReasoningHidden):
        data.update(duration=event.duration, tokens=event.tokens)
    elif isinstance(event, OpaqueState):
        raise ValueError("opaque provider state is never published")
    elif not isinstance(event, ReasoningStart | ReasoningEnd):
        raise ValueError(f"cannot publish event {type(event).__name__}")
    if event.source is not None:
        data["source"] = event.source
    return data


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event written by :func:`event_to_dict`."""
    kind = data["kind"]
    source = data.get("source")
    if kind == "reasoning_delta":
        return ReasoningDelta(data["text"], source=source)
    if kind == "text_delta":
        return TextDelta(data["text"], source=source)
    if kind == "reasoning_start":
        return ReasoningStart(source=source)
    if kind == "reasoning_end":
        return ReasoningEnd(source=source)
    if kind == "finish":
        return Finish(data["reason"], source=source)
    if kind == "tool_call":
        return ToolCall(data["id"], data["name"], data["arguments"], source=source)
    if kind == "tool_result":
        return ToolResult(
            data["id"],
            data["name"],
            data["content"],
            is_error=data["is_error"],
            duration=data["duration"],
            source=source,
        )
    if kind == "usage":
        return UsageReport(Usage(**data["usage"]), source=source)
    if kind == "reasoning_hidden":
        return ReasoningHidden(data["duration"], data.get("tokens"), source=source)
    raise ValueError(f"unknown event kind {kind!r}")


async def entries_of(batches: AsyncIterator[list[Entry]]) -> AsyncIterator[Entry]:
    """The entries of ``batches`` one by one (closing them when the reader stops early)."""
    try:
        async for batch in batches:
            for entry in batch:
                yield entry
    finally:
        await aclose_source(batches)
