"""The turns a request carries, and what preflight reads and reports about them.

Pure data, below the provider registry and every provider package: a :class:`HistoryTurn` is
one message of the history with the opaque state and readable reasoning that may go back with
it (a ``Conversation`` decides which); a :class:`PreflightTurn` is such a turn with what a
provider's preflight needs to judge it; a :class:`PassbackProblem` is one thing the provider is
documented to reject. Request builders and preflight rules in the provider packages read
these; nothing here decides anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._events import ReasoningState

__all__ = ["HistoryTurn", "PassbackProblem", "PreflightTurn"]


@dataclass(frozen=True, slots=True)
class HistoryTurn:
    """One message of the history, with what this pipe may send back for it.

    ``message`` is the plain dict with inert keys removed. ``states`` is the opaque reasoning
    state that this pipe's provider, model and endpoint made for the turn and requires back;
    ``reasoning`` is the turn's readable reasoning, for hosts that ask for it back
    (``reasoning_content`` on some hosts' tool turns). Both are empty unless the pipe's passback
    policy asks for them (a ``Conversation`` decides it).
    """

    message: Mapping[str, Any]
    states: tuple[ReasoningState, ...] = ()
    reasoning: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PassbackProblem:
    """One thing in a conversation that the pipe's provider is documented to reject.

    Attributes:
        index: the message's index in the conversation; ``-1`` for a problem of the request's
            own settings (its tool choice, sampling settings, output limit), which belongs to
            no message.
        code: a stable identifier (``"thinking_missing"``, ``"signature_missing"``, ...).
        message: what is wrong and what to do about it.

    >>> str(PassbackProblem(3, "thinking_missing", "keep the turn as the run produced it"))
    'message 3: thinking_missing: keep the turn as the run produced it'
    >>> str(PassbackProblem(-1, "sampling_with_thinking", "leave temperature unset"))
    'request: sampling_with_thinking: leave temperature unset'
    """

    index: int
    code: str
    message: str

    def __str__(self) -> str:
        where = "request" if self.index < 0 else f"message {self.index}"
        return f"{where}: {self.code}: {self.message}"


@dataclass(frozen=True, slots=True)
class PreflightTurn:
    """A history turn as a pipe would send it, with what a preflight needs to judge it.

    Attributes:
        index: the message's index in the conversation.
        turn: the turn the request would carry (states and reasoning already scoped).
        record: the ``TurnRecord`` of the run that made the message, or ``None``.
        in_tool_loop: the message comes after the last user message (the current tool loop).
        in_tool_turn: the message belongs to a turn (a user message and what answers it)
            in which the assistant called tools.
    """

    index: int
    turn: HistoryTurn
    record: Any
    in_tool_loop: bool
    in_tool_turn: bool = False

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
