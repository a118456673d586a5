"""reasoning-stream: one streaming channel for a reasoning model's thinking and its answer.

Every provider exposes reasoning its own way. A :class:`Pipe` wraps one provider stream and
routes reasoning deltas into the same streaming callbacks as the answer, wrapped between
``ReasoningStream.OPEN_TAG`` and ``CLOSE_TAG``; :meth:`ReasoningStream.split` recovers the
reasoning and the answer from anything collected off that channel.

>>> from reasoning_stream import ReasoningStream
>>> ReasoningStream.split("<think>the user wants a greeting</think>Hello!").text
'Hello!'
"""

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
    MalformedStreamError,
    ProviderError,
    ReasoningStreamError,
    UsageError,
)
from ._pipe import Pipe, PipeResult, Prompt, Status, Timings
from ._pipeline import Pipeline, PipelineResult
from ._stream import ReasoningStream, Split
from ._tags import DEFAULT_TAGS, Escaper, Scanner

__all__ = [
    "DEFAULT_TAGS",
    "CallbackError",
    "Escaper",
    "Event",
    "Finish",
    "MalformedStreamError",
    "OpaqueState",
    "Pipe",
    "PipeResult",
    "Pipeline",
    "PipelineResult",
    "Prompt",
    "ProviderError",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningStart",
    "ReasoningState",
    "ReasoningStream",
    "ReasoningStreamError",
    "Scanner",
    "Split",
    "Status",
    "TextDelta",
    "Timings",
    "ToolCall",
    "Usage",
    "UsageError",
    "UsageReport",
]

__version__ = "0.1.0"
