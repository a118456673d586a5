"""reasoning-stream: one streaming channel for a reasoning model's thinking and its answer.

Every provider exposes reasoning its own way. A :class:`Pipe` wraps one provider stream and
routes reasoning deltas into the same streaming callbacks as the answer, wrapped between
``ReasoningStream.OPEN_TAG`` and ``CLOSE_TAG``; :meth:`ReasoningStream.split` recovers the
reasoning and the answer from anything collected off that channel.

>>> from reasoning_stream import ReasoningStream
>>> ReasoningStream.split("<think>the user wants a greeting</think>Hello!").text
'Hello!'
"""

from ._effort import (
    Reasoning,
    ReasoningLevel,
    ReasoningPlan,
    ReasoningWarning,
    effort_table,
    plan_reasoning,
)
from ._effort import merge_params as merge_params
from ._events import (
    Event,
    Finish,
    OpaqueState,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ReasoningState,
    TextDelta,
    ToolCall,
    Usage,
    UsageReport,
)
from ._exceptions import (
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
from .conversation import (
    Conversation,
    GenerationRecord,
    PassbackPolicy,
    PassbackProblem,
    TurnRecord,
)

# What users need. Escaper, Scanner and merge_params were listed here once: they stay importable
# from the package (the "X as X" imports above) but belong to their modules; ReasoningStream's
# scanner() and escaper() build the first two.
__all__ = [
    "DEFAULT_TAGS",
    "INERT_MESSAGE_KEYS",
    "PROVENANCE_KEY",
    "PROVENANCE_VALUES",
    "CallbackError",
    "ConflictError",
    "Conversation",
    "ConversationNotFoundError",
    "CorruptConversationError",
    "Event",
    "Finish",
    "GenerationRecord",
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
    "ToolCall",
    "TurnRecord",
    "Usage",
    "UsageError",
    "UsageReport",
    "effort_table",
    "plan_reasoning",
    "strip_inert_keys",
]

__version__ = "0.1.0"
