"""reasoning-stream: one streaming channel for a reasoning model's thinking and its answer.

Every provider exposes reasoning its own way. A :class:`Pipe` wraps one provider stream and
routes reasoning deltas into the same streaming callbacks as the answer, wrapped between
``ReasoningStream.OPEN_TAG`` and ``CLOSE_TAG``; :meth:`ReasoningStream.split` recovers the
reasoning and the answer from anything collected off that channel.

>>> from reasoning_stream import ReasoningStream
>>> ReasoningStream.split("<think>the user wants a greeting</think>Hello!").text
'Hello!'
"""

from typing import TYPE_CHECKING, Any

from ._events import (
    Event,
    Finish,
    OpaqueState,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningHidden,
    ReasoningStart,
    ReasoningState,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    UsageReport,
)
from ._exceptions import (
    BudgetExceededError,
    CallbackError,
    ConflictError,
    ConversationNotFoundError,
    CorruptConversationError,
    MalformedStreamError,
    ProviderError,
    ReasoningStreamError,
    StoreError,
    UsageError,
)
from ._messages import (
    INERT_MESSAGE_KEYS,
    PROVENANCE_KEY,
    PROVENANCE_VALUES,
    strip_inert_keys,
)
from ._pipe import Pipe, PipeResult, Prompt, Status, Timings
from ._pipeline import Pipeline, PipelineResult
from ._stream import ReasoningStream, Split
from ._tags import DEFAULT_TAGS
from ._tags import Escaper as Escaper
from ._tags import Scanner as Scanner

if TYPE_CHECKING:
    from . import profiles
    from ._effort import (
        Reasoning,
        ReasoningLevel,
        ReasoningPlan,
        ReasoningWarning,
        effort_table,
        plan_reasoning,
    )
    from ._effort import (
        merge_params as merge_params,
    )
    from ._tools import Tool, tool
    from .conversation import (
        Budget,
        Conversation,
        GenerationRecord,
        LedgerEntry,
        PassbackPolicy,
        PassbackProblem,
        TurnRecord,
    )

# Loaded on first use: the effort knob and the conversation container are a third of the
# package's import time, and a pipe that streams needs neither (benchmarks/import_time.py).
_LAZY = {
    "Reasoning": "_effort",
    "ReasoningLevel": "_effort",
    "ReasoningPlan": "_effort",
    "ReasoningWarning": "_effort",
    "effort_table": "_effort",
    "merge_params": "_effort",
    "plan_reasoning": "_effort",
    "Budget": "conversation",
    "Conversation": "conversation",
    "GenerationRecord": "conversation",
    "LedgerEntry": "conversation",
    "PassbackPolicy": "conversation",
    "PassbackProblem": "conversation",
    "TurnRecord": "conversation",
    "profiles": "",
    "Tool": "_tools",
    "tool": "_tools",
}


def __getattr__(name: str) -> Any:
    """Import a lazily exported name's module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    # An empty module name marks a subpackage exported under its own name.
    target = import_module(f".{module or name}", __name__)
    value = target if not module else getattr(target, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


# What users need. Escaper, Scanner and merge_params were listed here once: they stay importable
# from the package (the "X as X" imports above) but belong to their modules; ReasoningStream's
# scanner() and escaper() build the first two.
__all__ = [
    "DEFAULT_TAGS",
    "INERT_MESSAGE_KEYS",
    "PROVENANCE_KEY",
    "PROVENANCE_VALUES",
    "Budget",
    "BudgetExceededError",
    "CallbackError",
    "ConflictError",
    "Conversation",
    "ConversationNotFoundError",
    "CorruptConversationError",
    "Event",
    "Finish",
    "GenerationRecord",
    "LedgerEntry",
    "MalformedStreamError",
    "OpaqueState",
    "PassbackPolicy",
    "PassbackProblem",
    "Pipe",
    "PipeResult",
    "Pipeline",
    "PipelineResult",
    "Prompt",
    "ProviderError",
    "Reasoning",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningHidden",
    "ReasoningLevel",
    "ReasoningPlan",
    "ReasoningStart",
    "ReasoningState",
    "ReasoningStream",
    "ReasoningStreamError",
    "ReasoningWarning",
    "Split",
    "Status",
    "StoreError",
    "TextDelta",
    "Timings",
    "Tool",
    "ToolCall",
    "ToolResult",
    "TurnRecord",
    "Usage",
    "UsageError",
    "UsageReport",
    "effort_table",
    "plan_reasoning",
    "profiles",
    "strip_inert_keys",
    "tool",
]

__version__ = "0.1.0"
