"""Preflight: what a provider is documented to reject in the request a pipe would build.

Core and provider-free. A provider package that knows passback rules registers two functions
on its ``ProviderSpec``: ``preflight(pipe, turns) -> list[PassbackProblem]`` and
``repair(pipe, turns) -> (turns, notes)``. Both read :class:`PreflightTurn` s: each history
turn as the pipe would send it, with the record of the run that made it and whether it is part
of the current tool loop. Nothing here calls anything.

Problem codes (see the README section "One-shot calls and preflight"):

- ``signature_missing``: a Gemini 3 function call of the current turn without its thought
  signature. Repair fills Google's documented placeholder signature.
- ``thinking_missing``: an Anthropic or Bedrock (Claude) tool-use turn of the current tool loop
  without its signed thinking while thinking is on (after an edit, a compaction, or a message
  added by hand). Repair runs that request with thinking off, as the docs require of a turn
  that cannot start with thinking.
- ``thinking_other_model``: the same, because another Claude model made the thinking; the
  newest Claude models bind thinking to the model that made it. Repaired likewise.
- ``reasoning_item_missing``: under ``store=False`` (Responses), a turn of the current tool loop
  whose reasoning item cannot be sent. Repair sends its items without ids, which the API
  accepts without their reasoning item.
- ``reasoning_content_missing``: a DeepSeek or Kimi assistant turn with tool calls and no
  ``reasoning_content``. Repair fills an empty ``reasoning_content``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._history import HistoryTurn

__all__ = ["PassbackProblem", "PreflightTurn"]


@dataclass(frozen=True, slots=True)
class PassbackProblem:
    """One thing in a conversation that the pipe's provider is documented to reject.

    Attributes:
        index: the message's index in the conversation.
        code: a stable identifier (``"thinking_missing"``, ``"signature_missing"``, ...).
        message: what is wrong and what to do about it.
    """

    index: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"message {self.index}: {self.code}: {self.message}"


@dataclass(frozen=True, slots=True)
class PreflightTurn:
    """A history turn as a pipe would send it, with what a preflight needs to judge it.

    Attributes:
        index: the message's index in the conversation.
        turn: the turn the request would carry (states and reasoning already scoped).
        record: the ``TurnRecord`` of the run that made the message, or ``None``.
        in_tool_loop: the message comes after the last user message (the current tool loop).
    """

    index: int
    turn: HistoryTurn
    record: Any
    in_tool_loop: bool

    @property
    def message(self) -> Any:
        """The plain message (inert keys removed)."""
        return self.turn.message

    @property
    def role(self) -> Any:
        """The message's role."""
        return self.turn.message.get("role")

    @property
    def calls_tools(self) -> bool:
        """An assistant message with tool calls."""
        return self.role == "assistant" and bool(self.turn.message.get("tool_calls"))
