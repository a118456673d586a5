"""Former home of ``Conversation``; the ``conversation`` package holds it now.

Kept so imports written against the old path keep working.
"""

from .conversation import (
    Conversation,
    GenerationRecord,
    GenerationStatus,
    PassbackPolicy,
    PassbackProblem,
    ReasoningPassback,
    StatePassback,
    TurnRecord,
)

__all__ = [
    "Conversation",
    "GenerationRecord",
    "GenerationStatus",
    "PassbackPolicy",
    "PassbackProblem",
    "ReasoningPassback",
    "StatePassback",
    "TurnRecord",
]
