"""The run observer: a span per run, and the metrics recorded when it ends.

One ``_Observer`` is registered by ``instrument()``; per run it opens a ``chat {model}`` client
span (a pipe) or an ``invoke_workflow`` span (a pipeline) and, at the end, sets what the run
learned as attributes in one call and records the histograms, with attribute dicts built once
per pipe configuration and outcome.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._exceptions import MalformedStreamError, ProviderError
from .._pipe import Pipe, PipeResult, Prompt
from .._pipeline import Pipeline, PipelineResult
from ._messages import ContentCapture, content_attributes
from ._semconv import (
    CACHE_READ_TOKENS,
    CACHE_WRITE_TOKENS,
    COST,
    ERROR_TYPE,
    EXCEPTION_EVENT,
    EXCEPTION_MESSAGE,
    EXCEPTION_TYPE,
    FINISH_REASON_VALUES,
    FINISH_REASONS,
    INPUT_TOKENS,
    OPAQUE_STATES,
    OPENAI_API_TYPE,
    OPENAI_API_TYPES,
    OPENAI_FINGERPRINT,
    OPENAI_SERVICE_TIER,
    OPERATION,
    OPERATION_DURATION_METRIC,
    OUR_PROVIDER,
    OUTPUT_TOKENS,
    PIPE_NAME,
    PIPES,
    PROVIDER,
    REASONING_DURATION,
    REASONING_DURATION_METRIC,
    REASONING_SEGMENTS,
    REASONING_TOKENS,
    REQUEST_MODEL,
    REQUEST_REASONING_BUDGET,
    REQUEST_REASONING_LEVEL,
    REQUEST_SETTINGS,
    REQUEST_STREAM,
    RESPONSE_ID,
    RESPONSE_MODEL,
    RETRY_EVENT,
    SECONDS_BUCKETS,
    SERVER_ADDRESS,
    SERVER_PORT,
    STATUS,
    TIME_PER_OUTPUT_CHUNK_METRIC,
    TIME_TO_FIRST_CHUNK,
    TIME_TO_FIRST_CHUNK_METRIC,
    TIME_TO_FIRST_REASONING,
    TIME_TO_FIRST_TEXT,
    TOKEN_BUCKETS,
    TOKEN_TYPE,
    TOKEN_USAGE_METRIC,
    TOOL_CALLS,
    WORKFLOW_NAME,
    provider_name,
    server,
)

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram
    from opentelemetry.trace import Span, Tracer

__all__ = ["_Instruments", "_Observer"]

_clock = time.perf_counter


class _Instruments:
    """The histograms one meter records into."""

    def __init__(self, meter: Any) -> None:
        self.duration: Histogram = _histogram(
            meter, OPERATION_DURATION_METRIC, "s", "GenAI operation duration.", SECONDS_BUCKETS
        )
        self.tokens: Histogram = _histogram(
            meter, TOKEN_USAGE_METRIC, "{token}", "Number of input and output tokens used.",
            TOKEN_BUCKETS,
        )  # fmt: skip
        self.first_chunk: Histogram = _histogram(
            meter,
            TIME_TO_FIRST_CHUNK_METRIC,
            "s",
            "Time from the request to the first chunk (reasoning or answer) of the response.",
            SECONDS_BUCKETS,
        )
        self.per_chunk: Histogram = _histogram(
            meter,
            TIME_PER_OUTPUT_CHUNK_METRIC,
            "s",
            "Time per output chunk, recorded for each chunk received after the first one, "
            "measured as the time elapsed from the end of the previous chunk to the end of the "
            "current chunk.",
            SECONDS_BUCKETS,
        )
        self.reasoning: Histogram = _histogram(
            meter,
            REASONING_DURATION_METRIC,
            "s",
            "Time the model spent streaming reasoning in one response (segments summed).",
            SECONDS_BUCKETS,
        )


def _histogram(
    meter: Any, name: str, unit: str, description: str, buckets: Sequence[float]
) -> Histogram:
    try:
        histogram: Histogram = meter.create_histogram(
            name,
            unit=unit,
            description=description,
            explicit_bucket_boundaries_advisory=list(buckets),
        )
    except TypeError:  # an API older than 1.23 takes no advisory
        histogram = meter.create_histogram(name, unit=unit, description=description)
    return histogram


class _Shape:
    """What one pipe configuration gives every run's span and metrics, computed once.

    The dicts are shared by every run of the configuration and never changed after they are
    built: tracers and meters copy what they keep (the SDK does).
    """

    __slots__ = (
        "known_server", "metric_attributes", "name", "openai", "outcomes", "separate_system",
        "start", "streaming",
    )  # fmt: skip

    def __init__(self, pipe: Pipe, stream: object) -> None:
        self.name, self.start, self.metric_attributes = _pipe_start(pipe, stream)
        self.known_server = SERVER_ADDRESS in self.metric_attributes
        self.openai = OPENAI_API_TYPE in self.start
        # Providers whose requests carry system messages apart from the chat history.
        self.separate_system = pipe.provider in _SEPARATE_SYSTEM
        # The conventions define time to first chunk for streaming requests only.
        self.streaming = stream is not False
        self.outcomes: dict[tuple[str | None, str | None, str | None], _Outcome] = {}

    def outcome(
        self, status: str | None, error_type: str | None, model: str | None = None
    ) -> _Outcome:
        """The metric attributes of a run that ended so (few combinations: built once each)."""
        key = (status, error_type, model)
        outcome = self.outcomes.get(key)
        if outcome is None:
            # Low-cardinality outcome dimensions: "how often does it run out of budget" is
            # a count of status="length", "which provider fails" one of error.type.
            attributes = dict(self.metric_attributes)
            if error_type is not None:
                attributes[ERROR_TYPE] = error_type
            if status is not None:
                attributes[STATUS] = status
            if model:
                attributes[RESPONSE_MODEL] = model
            if len(self.outcomes) > 64:  # error types are bounded, but keep the cache so too
                self.outcomes.clear()
            outcome = self.outcomes[key] = _Outcome(
                attributes,
                {**attributes, TOKEN_TYPE: "input"},
                {**attributes, TOKEN_TYPE: "output"},
            )
        return outcome


class _Outcome:
    """Metric attributes for one outcome: the run's, and its two token counts'."""

    __slots__ = ("attributes", "input", "output")

    def __init__(
        self, attributes: dict[str, Any], input: dict[str, Any], output: dict[str, Any]
    ) -> None:
        self.attributes = attributes
        self.input = input
        self.output = output


class _Observer:
    """Opens a span per run and records the metrics when it ends."""

    def __init__(
        self,
        tracer: Tracer,
        instruments: _Instruments,
        capture: ContentCapture,
        events: Any = None,
        per_chunk: bool = True,
    ):
        from opentelemetry import context, trace

        self.events = events
        self.per_chunk = per_chunk

        self.tracer = tracer
        self.instruments = instruments
        self.capture = capture
        self._attach = context.attach
        self._detach = context.detach
        self._current = context.get_current
        self._in_context = trace.set_span_in_context
        self._client_kind = trace.SpanKind.CLIENT
        self._internal_kind = trace.SpanKind.INTERNAL
        self._shapes: dict[tuple[Any, ...], _Shape] = {}

    def run_started(self, runner: Pipe | Pipeline, prompt: Prompt) -> _Scope:
        parent = self._current()
        if isinstance(runner, Pipeline):
            name, attributes = _workflow_start(runner)
            span = self.tracer.start_span(
                name, parent, kind=self._internal_kind, attributes=attributes
            )
            shape = None
        else:
            shape = self._shape(runner)
            span = self.tracer.start_span(
                shape.name, parent, kind=self._client_kind, attributes=shape.start
            )
        token = self._attach(self._in_context(span, parent))
        scope = _Scope(self, span, token, prompt, shape, parent, _clock(), runner)
        if shape is not None:
            # Read now: an exhaustion retry or a budget changes it only for the run's length.
            scope.reasoning = getattr(runner, "reasoning", None)
            if shape.streaming and self.per_chunk:
                scope.chunk_intervals = []
        return scope

    def _shape(self, pipe: Pipe) -> _Shape:
        """The span name and start attributes, cached per pipe identity (provider, model, ...)."""
        stream = getattr(pipe, "stream", True)
        key = (pipe.provider, pipe.model, pipe.endpoint, pipe.name, stream)
        shape = self._shapes.get(key)
        if shape is None:
            if len(self._shapes) > 1024:  # many pipe configurations: keep the cache bounded
                self._shapes.clear()
            shape = self._shapes[key] = _Shape(pipe, stream)
        return shape


class _Scope:
    """One run's span; ends it with the result's attributes and records the metrics."""

    __slots__ = (
        "chunk_intervals", "observer", "parent", "prompt", "reasoning", "runner", "shape", "span",
        "started", "token",
    )  # fmt: skip

    def __init__(
        self,
        observer: _Observer,
        span: Span,
        token: Any,
        prompt: Prompt,
        shape: _Shape | None,
        parent: Any,
        started: float,
        runner: Pipe | Pipeline,
    ) -> None:
        self.runner = runner
        self.observer = observer
        self.span = span
        self.token = token
        self.prompt = prompt
        self.shape = shape
        self.parent = parent
        self.started = started
        self.reasoning: object = None
        # Filled by the pipe with the seconds between chunks (see ``_observers``): streaming only.
        self.chunk_intervals: list[float] | None = None

    def run_finished(
        self, result: PipeResult | PipelineResult | None, error: BaseException | None
    ) -> None:
        observer = self.observer
        duration = _clock() - self.started
        try:
            observer._detach(self.token)
        finally:
            span = self.span
            try:
                error_type = None if error is None else _error_type(error)
                shape = self.shape
                # A span that records nothing (sampled out, a no-op tracer) is not worth the
                # attributes, the content above all.
                recording = span.is_recording()
                if shape is None or isinstance(result, PipelineResult):
                    if recording:
                        _finish_workflow(span, result, error_type, self.prompt, observer.capture)
                else:
                    first = _first_chunk(result) if shape.streaming and result is not None else None
                    if recording:
                        _finish_pipe(
                            span, result, error_type, self.prompt, observer.capture, shape, first,
                            getattr(self.runner, "request_settings", None),
                            _instructions(self.runner) if observer.capture == "full" else None,
                            self.reasoning,
                        )  # fmt: skip
                    self._record(shape, result, error_type, duration, first)
                if error_type is not None:
                    from opentelemetry.trace import Status, StatusCode

                    span.set_status(Status(StatusCode.ERROR, _description(error)))
                    if shape is not None and observer.events is not None and error is not None:
                        _exception_event(observer.events, span, error, error_type)
            finally:
                span.end()

    def retrying(self, attempt: int, delay: float, error: BaseException | None) -> None:
        """A span event per retry: its number, the wait, and what it retries after."""
        self.span.add_event(
            RETRY_EVENT,
            {
                "reasoning_stream.retry.attempt": attempt,
                "reasoning_stream.retry.delay": delay,
                ERROR_TYPE: _error_type(error) or "reasoning_exhausted",
            },
        )

    def _record(
        self,
        shape: _Shape,
        result: PipeResult | None,
        error_type: str | None,
        duration: float,
        first: float | None,
    ) -> None:
        """The run's histogram points, with attribute dicts built once per outcome."""
        instruments = self.observer.instruments
        parent = self.parent  # the context after the run: no need to look it up per point
        if result is None and error_type is None:
            instruments.duration.record(duration, shape.metric_attributes, parent)
            return
        if result is None:
            outcome = shape.outcome(None, error_type)
        else:
            outcome = shape.outcome(result.status, error_type, result.response_model)
        attributes = outcome.attributes
        instruments.duration.record(duration, attributes, parent)
        if result is None:
            return
        usage = result.usage
        if usage.input_tokens is not None:
            instruments.tokens.record(usage.input_tokens, outcome.input, parent)
        if usage.output_tokens is not None:
            instruments.tokens.record(usage.output_tokens, outcome.output, parent)
        if first is not None:
            instruments.first_chunk.record(first, attributes, parent)
        if self.chunk_intervals:
            record = instruments.per_chunk.record
            for interval in self.chunk_intervals:
                record(interval, attributes, parent)
        if result.reasoning_segments:
            instruments.reasoning.record(result.timings.reasoning_duration, attributes, parent)


def _pipe_start(pipe: Pipe, stream: object) -> tuple[str, dict[str, Any], dict[str, Any]]:
    provider = provider_name(pipe.provider, pipe.endpoint)
    attributes: dict[str, Any] = {OPERATION: "chat", PROVIDER: provider}
    if pipe.model:
        attributes[REQUEST_MODEL] = pipe.model
    address, port = server(pipe.endpoint)
    if address:
        attributes[SERVER_ADDRESS] = address
        if port is not None:
            attributes[SERVER_PORT] = port
    metric_attributes = dict(attributes)
    if stream is True:
        attributes[REQUEST_STREAM] = True
    if pipe.provider:
        attributes[OUR_PROVIDER] = pipe.provider
        api_type = OPENAI_API_TYPES.get(pipe.provider)
        if api_type is not None and provider == "openai":
            attributes[OPENAI_API_TYPE] = api_type
    attributes[PIPE_NAME] = pipe.name
    name = f"chat {pipe.model}" if pipe.model else "chat"
    return name, attributes, metric_attributes


def _workflow_start(pipeline: Pipeline) -> tuple[str, dict[str, Any]]:
    workflow = " | ".join(pipe.name for pipe in pipeline.pipes)
    attributes: dict[str, Any] = {
        OPERATION: "invoke_workflow",
        WORKFLOW_NAME: workflow,
        PIPES: len(pipeline.pipes),
    }
    return f"invoke_workflow {workflow}", attributes


def _finish_pipe(
    span: Span,
    result: PipeResult | None,
    error_type: str | None,
    prompt: Prompt,
    capture: ContentCapture,
    shape: _Shape,
    first: float | None,
    settings: dict[str, int | float] | None = None,
    instructions: str | None = None,
    reasoning: object = None,
) -> None:
    """Everything the run learned, as the span's attributes: one ``set_attributes`` call."""
    attributes: dict[str, Any] = {}
    if settings:
        for name, value in settings.items():
            attributes[REQUEST_SETTINGS[name]] = value
    if isinstance(reasoning, str):
        attributes[REQUEST_REASONING_LEVEL] = reasoning
    elif isinstance(reasoning, int) and not isinstance(reasoning, bool):
        attributes[REQUEST_REASONING_BUDGET] = reasoning
    if error_type is not None:
        attributes[ERROR_TYPE] = error_type
    if result is not None:
        attributes[STATUS] = result.status
        if result.response_id:
            attributes[RESPONSE_ID] = result.response_id
        if result.response_model:
            attributes[RESPONSE_MODEL] = result.response_model
        if shape.openai:
            if result.service_tier:
                attributes[OPENAI_SERVICE_TIER] = result.service_tier
            if result.system_fingerprint:
                attributes[OPENAI_FINGERPRINT] = result.system_fingerprint
        if result.finish_reason:
            # The same value as the output message's finish_reason ("tool_call").
            reason = result.finish_reason
            attributes[FINISH_REASONS] = (FINISH_REASON_VALUES.get(reason, reason),)
        usage = result.usage
        if usage.input_tokens is not None:
            attributes[INPUT_TOKENS] = usage.input_tokens
        if usage.output_tokens is not None:
            attributes[OUTPUT_TOKENS] = usage.output_tokens
        if usage.reasoning_tokens is not None:
            attributes[REASONING_TOKENS] = usage.reasoning_tokens
        if usage.cache_read_tokens is not None:
            attributes[CACHE_READ_TOKENS] = usage.cache_read_tokens
        if usage.cache_write_tokens is not None:
            attributes[CACHE_WRITE_TOKENS] = usage.cache_write_tokens
        cost = result.cost
        if cost is not None:
            attributes[COST] = float(cost)
        timings = result.timings
        if first is not None:
            attributes[TIME_TO_FIRST_CHUNK] = first
        if timings.time_to_first_reasoning is not None:
            attributes[TIME_TO_FIRST_REASONING] = timings.time_to_first_reasoning
        if timings.time_to_first_text is not None:
            attributes[TIME_TO_FIRST_TEXT] = timings.time_to_first_text
        segments = result.reasoning_segments
        count = len(segments) if all(segments) else sum(1 for segment in segments if segment)
        attributes[REASONING_SEGMENTS] = count
        if count:
            attributes[REASONING_DURATION] = timings.reasoning_duration
        if result.tool_calls:
            attributes[TOOL_CALLS] = len(result.tool_calls)
        if result.reasoning_state:
            attributes[OPAQUE_STATES] = len(result.reasoning_state)
        if result.endpoint and not shape.known_server:
            address, port = server(result.endpoint)
            if address:
                attributes[SERVER_ADDRESS] = address
                if port is not None:
                    attributes[SERVER_PORT] = port
    if capture != "none":
        attributes.update(
            content_attributes(
                prompt,
                result,
                capture,
                separate_system=shape.separate_system,
                instructions=instructions,
            )
        )
    span.set_attributes(attributes)


def _finish_workflow(
    span: Span,
    result: PipeResult | PipelineResult | None,
    error_type: str | None,
    prompt: Prompt,
    capture: ContentCapture,
) -> None:
    attributes: dict[str, Any] = {}
    if error_type is not None:
        attributes[ERROR_TYPE] = error_type
    last: PipeResult | None = None
    if isinstance(result, PipelineResult):
        attributes[STATUS] = result.status
        last = result.results[-1] if result.results else None
    if capture != "none":
        attributes.update(content_attributes(prompt, last, capture))
    span.set_attributes(attributes)


_SEPARATE_SYSTEM = frozenset({"anthropic", "gemini", "bedrock"})


def _instructions(runner: object) -> str | None:
    """A system prompt the pipe sends on its own (the Responses API's ``instructions``)."""
    value = getattr(runner, "instructions", None)
    return value if isinstance(value, str) and value else None


def _exception_event(events: Any, span: Span, error: BaseException, error_type: str) -> None:
    """The conventions' ``gen_ai.client.operation.exception`` log event, in the span's context.

    Severity WARN as the conventions ask; the message is the error's (already redacted by the
    pipes: no key or opaque payload), never a stack trace.
    """
    from opentelemetry._logs import SeverityNumber
    from opentelemetry.trace import set_span_in_context

    cls = type(error)
    events.emit(
        event_name=EXCEPTION_EVENT,
        severity_number=SeverityNumber.WARN,
        severity_text="WARN",
        context=set_span_in_context(span),
        attributes={
            ERROR_TYPE: error_type,
            EXCEPTION_TYPE: f"{cls.__module__}.{cls.__qualname__}",
            EXCEPTION_MESSAGE: str(error)[:500],
        },
    )


def _first_chunk(result: PipeResult) -> float | None:
    """Seconds to the first reasoning or answer chunk, whichever came first."""
    timings = result.timings
    reasoning, text = timings.time_to_first_reasoning, timings.time_to_first_text
    if reasoning is None:
        return text
    if text is None:
        return reasoning
    return min(reasoning, text)


def _error_type(error: BaseException | None) -> str | None:
    """A low-cardinality name for how the run failed; ``None`` when it did not.

    An HTTP failure is its status code (``"429"``); a malformed stream is
    ``reasoning_stream.MalformedStreamError``; another provider failure is the class of the
    error behind it (``"httpx.ReadTimeout"``, ``"openai.APIConnectionError"``); any other
    error is its own class. A cancellation (a ``BaseException``) is not an error.
    """
    if error is None:
        return None
    if not isinstance(error, Exception):
        return None  # a cancellation (anyio's, KeyboardInterrupt), SystemExit
    if isinstance(error, ProviderError) and not isinstance(error, MalformedStreamError):
        if error.status_code is not None:
            return str(error.status_code)
        if error.__cause__ is not None:
            return _class_name(error.__cause__)
    return _class_name(error)


def _class_name(error: BaseException) -> str:
    cls = type(error)
    module = cls.__module__.split(".", 1)[0]
    if module == "builtins":
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


def _description(error: BaseException | None) -> str:
    """The span status description: the error's class and message.

    An HTTP status is already the span's ``error.type``; it is taken out of the text, so the
    description stays the same across status codes (error messages are already free of keys
    and opaque payloads: the pipes redact them).
    """
    message = str(error) if error is not None else ""
    if isinstance(error, ProviderError) and error.status_code is not None:
        message = re.sub(rf"(,\s*)?\bHTTP {error.status_code}\b(:\s*)?", "", message).strip()
    text = f"{type(error).__name__}: {message}" if error is not None else ""
    return text if len(text) <= 500 else text[:499] + "…"
