"""Chat messages as plain dicts, and the inert keys that never reach a provider."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "INERT_MESSAGE_KEYS",
    "PROVENANCE_KEY",
    "PROVENANCE_VALUES",
    "TOOL_ERROR",
    "messages_from_prompt",
    "strip_inert_keys",
    "tool_error_extra",
]

INERT_MESSAGE_KEYS: frozenset[str] = frozenset({"thinking", "provenance", "timestamp", "is_error"})
"""Keys a message may carry for the application's own use; pipes drop them from requests
(a tool message's ``is_error`` reaches the APIs with an error form through
:func:`tool_error_extra`, never as a raw key)."""

TOOL_ERROR = "is_error"
"""``HistoryTurn.extra`` key: this tool message reports a failed call."""


def tool_error_extra(message: Mapping[str, Any]) -> dict[str, Any]:
    """``{"is_error": True}`` for a tool message marked ``is_error``, else ``{}``: what a
    history turn carries for the request builders.

    >>> tool_error_extra({"role": "tool", "content": "boom", "is_error": True})
    {'is_error': True}
    """
    if message.get("role") == "tool" and message.get(TOOL_ERROR) is True:
        return {TOOL_ERROR: True}
    return {}


PROVENANCE_KEY = "provenance"
"""Marks a turn the framework injected rather than the user or the model wrote."""

PROVENANCE_VALUES: frozenset[str] = frozenset({"continuation", "final_answer", "proactive"})
"""The documented values of :data:`PROVENANCE_KEY`."""


def strip_inert_keys(message: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``message`` without the inert keys (``thinking``, ``provenance``, ``timestamp``,
    ``is_error``).

    >>> strip_inert_keys({"role": "assistant", "content": "hi", "thinking": "greet"})
    {'role': 'assistant', 'content': 'hi'}
    """
    return {key: value for key, value in message.items() if key not in INERT_MESSAGE_KEYS}


def messages_from_prompt(prompt: str | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A prompt as a list of messages: a string becomes one user message; inert keys go."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [strip_inert_keys(message) for message in prompt]
