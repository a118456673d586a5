"""OpenTelemetry spans and metrics for every run, following the GenAI semantic conventions.

``instrument()`` registers one run observer (see ``_observers``): from then on every
``Pipe.run``/``arun`` is a ``chat {model}`` client span and every ``Pipeline.run``/``arun`` an
``invoke_workflow`` span whose children are its pipes' spans. Anything that runs a pipe (a hub, a
conversation, your own code) is traced the same way. ``uninstrument()`` removes the observer;
with none registered a run pays one tuple check, so telemetry that is off costs nothing.

Only ``opentelemetry-api`` is needed (extra ``otel``), imported when ``instrument()`` is called;
without providers given, the global ones are used, so an application that configured the SDK
gets our spans in its pipeline, and one that did not gets no-op spans.

Conventions followed: the OpenTelemetry GenAI semantic conventions as published with
semantic-conventions v1.41 (the ``opentelemetry-semantic-conventions`` 0.66b2 registry) and
carried on in the ``semantic-conventions-genai`` repository; see :data:`SEMCONV_VERSION`.
Where they name nothing for what this library measures (time to first reasoning, reasoning
duration, segments, our status, the requested reasoning effort), the attribute lives under
``reasoning_stream.*``.

What is exported is decided by ``capture_content``:

* ``"none"`` (default): no text at all, only counts, timings, ids and usage.
* ``"lengths"``: adds the character lengths of the prompt, the reasoning and the answer.
* ``"full"``: adds ``gen_ai.input.messages`` and ``gen_ai.output.messages`` as JSON, with the
  reasoning as ``{"type": "reasoning", ...}`` parts.

Opaque provider state (signatures, encrypted and redacted reasoning: ``result.reasoning_state``)
is never exported at any level: messages are rebuilt from a whitelist of readable fields, and
only the count of opaque items appears.

>>> from reasoning_stream import telemetry
>>> telemetry.uninstrument()  # a no-op when nothing is instrumented
>>> telemetry.is_instrumented()
False
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from .. import _observers
from .._exceptions import UsageError
from ._messages import CAPTURE_LEVELS, ContentCapture
from ._observer import _Instruments, _Observer

# The attribute and metric names (not in __all__, but read by code that checks what was
# exported), re-exported explicitly for type checkers; one statement, kept unsorted by
# isort, which would split it into one statement per name.
# isort: off
from ._semconv import (
    CACHE_READ_TOKENS as CACHE_READ_TOKENS,
    CACHE_WRITE_TOKENS as CACHE_WRITE_TOKENS,
    COST as COST,
    ERROR_TYPE as ERROR_TYPE,
    FINISH_REASONS as FINISH_REASONS,
    INPUT_LENGTH as INPUT_LENGTH,
    INPUT_MESSAGES as INPUT_MESSAGES,
    INPUT_TOKENS as INPUT_TOKENS,
    OPAQUE_STATES as OPAQUE_STATES,
    OPERATION as OPERATION,
    OPENAI_API_TYPE as OPENAI_API_TYPE,
    OPENAI_FINGERPRINT as OPENAI_FINGERPRINT,
    OPENAI_SERVICE_TIER as OPENAI_SERVICE_TIER,
    OPERATION_DURATION_METRIC as OPERATION_DURATION_METRIC,
    OUR_PROVIDER as OUR_PROVIDER,
    OUTPUT_MESSAGES as OUTPUT_MESSAGES,
    OUTPUT_TOKENS as OUTPUT_TOKENS,
    PIPE_NAME as PIPE_NAME,
    PIPES as PIPES,
    PROVIDER as PROVIDER,
    REASONING_DURATION as REASONING_DURATION,
    REASONING_DURATION_METRIC as REASONING_DURATION_METRIC,
    REASONING_LENGTH as REASONING_LENGTH,
    REASONING_SEGMENTS as REASONING_SEGMENTS,
    REASONING_TOKENS as REASONING_TOKENS,
    REQUEST_MODEL as REQUEST_MODEL,
    REQUEST_REASONING_BUDGET as REQUEST_REASONING_BUDGET,
    REQUEST_REASONING_LEVEL as REQUEST_REASONING_LEVEL,
    REQUEST_STREAM as REQUEST_STREAM,
    RESPONSE_ID as RESPONSE_ID,
    RESPONSE_MODEL as RESPONSE_MODEL,
    RETRY_EVENT as RETRY_EVENT,
    SCOPE_NAME as SCOPE_NAME,
    SEMCONV_VERSION as SEMCONV_VERSION,
    SERVER_ADDRESS as SERVER_ADDRESS,
    SERVER_PORT as SERVER_PORT,
    STATUS as STATUS,
    SYSTEM_INSTRUCTIONS as SYSTEM_INSTRUCTIONS,
    TEXT_LENGTH as TEXT_LENGTH,
    TIME_PER_OUTPUT_CHUNK_METRIC as TIME_PER_OUTPUT_CHUNK_METRIC,
    TIME_TO_FIRST_CHUNK as TIME_TO_FIRST_CHUNK,
    TIME_TO_FIRST_CHUNK_METRIC as TIME_TO_FIRST_CHUNK_METRIC,
    TIME_TO_FIRST_REASONING as TIME_TO_FIRST_REASONING,
    TIME_TO_FIRST_TEXT as TIME_TO_FIRST_TEXT,
    TOKEN_TYPE as TOKEN_TYPE,
    TOKEN_USAGE_METRIC as TOKEN_USAGE_METRIC,
    TOOL_CALLS as TOOL_CALLS,
    WORKFLOW_NAME as WORKFLOW_NAME,
)

# isort: on

if TYPE_CHECKING:
    from opentelemetry._logs import LoggerProvider
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = [
    "SEMCONV_VERSION",
    "ContentCapture",
    "instrument",
    "is_instrumented",
    "uninstrument",
]

logger = logging.getLogger("reasoning_stream.telemetry")


def instrument(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: ContentCapture = "none",
    logger_provider: LoggerProvider | None = None,
    time_per_output_chunk: bool = True,
) -> None:
    """Trace and measure every run of every pipe and pipeline from now on.

    Args:
        tracer_provider: where spans go (default: the global one, ``trace.set_tracer_provider``).
        meter_provider: where metrics go (default: the global one).
        capture_content: ``"none"`` (default), ``"lengths"`` or ``"full"``: see the module doc.
            Opaque reasoning state is never exported, whatever the level.
        logger_provider: where the ``gen_ai.client.operation.exception`` event of a failed
            run goes (default: the global one, ``set_logger_provider``).
        time_per_output_chunk: record the conventions' ``time_per_output_chunk`` histogram on
            streaming runs, one point per chunk after the first (default on). A point costs
            the SDK's histogram record (several microseconds) per chunk: ``False`` saves it.

    Calling it again replaces the previous configuration. Raises ``UsageError`` with the install
    command when ``opentelemetry-api`` is missing.
    """
    if capture_content not in CAPTURE_LEVELS:
        raise ValueError(
            f"capture_content must be one of {', '.join(CAPTURE_LEVELS)}, got {capture_content!r}"
        )
    try:
        from opentelemetry import metrics, trace
    except ImportError as error:
        raise UsageError(
            "telemetry needs the 'opentelemetry-api' package: pip install 'reasoning-stream[otel]'"
        ) from error
    tracer = trace.get_tracer(SCOPE_NAME, tracer_provider=tracer_provider)
    meter = metrics.get_meter(SCOPE_NAME, meter_provider=meter_provider)
    from opentelemetry._logs import get_logger

    events = get_logger(SCOPE_NAME, logger_provider=logger_provider)
    observer = _Observer(
        tracer, _Instruments(meter), capture_content, events, per_chunk=time_per_output_chunk
    )
    global _active
    with _lock:
        if _active is not None:
            _observers.remove_run_observer(_active)
        _active = observer
        _observers.add_run_observer(observer)
    logger.debug("telemetry on (capture_content=%s)", capture_content)


def uninstrument() -> None:
    """Stop tracing runs; runs already under way still end their spans."""
    global _active
    with _lock:
        if _active is None:
            return
        _observers.remove_run_observer(_active)
        _active = None
    logger.debug("telemetry off")


def is_instrumented() -> bool:
    """Whether :func:`instrument` is in effect."""
    return _active is not None


_lock = threading.Lock()
_active: _Observer | None = None
