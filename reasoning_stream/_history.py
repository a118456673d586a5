"""Former home of the history turns; ``conversation._history`` holds them now.

Kept so imports written against the old path keep working.
"""

from .conversation._history import (
    HistoryTurn,
    check_passback,
    check_prompt,
    history_turns,
    in_received_order,
    tool_call_arguments,
)

__all__ = [
    "HistoryTurn",
    "check_passback",
    "check_prompt",
    "history_turns",
    "in_received_order",
    "tool_call_arguments",
]
