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
duration, segments, our status), the attribute lives under ``reasoning_stream.*``.

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

import functools
import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias
from urllib.parse import urlsplit

from . import _observers
from ._exceptions import MalformedStreamError, ProviderError, UsageError
from ._pipe import Pipe, PipeResult, Prompt
from ._pipeline import Pipeline, PipelineResult

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram, MeterProvider
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = [
    "SEMCONV_VERSION",
    "ContentCapture",
    "instrument",
    "is_instrumented",
    "uninstrument",
]

logger = logging.getLogger("reasoning_stream.telemetry")

ContentCapture: TypeAlias = Literal["none", "lengths", "full"]
"""How much of the prompt, reasoning and answer text a span carries."""

SEMCONV_VERSION: Final = "GenAI semantic conventions, semantic-conventions v1.41 (development)"
"""The version of the OpenTelemetry GenAI conventions the attribute and metric names follow."""

SCOPE_NAME: Final = "reasoning_stream"

_CAPTURE_LEVELS: Final = ("none", "lengths", "full")

# Attribute keys: the conventions' where they have one, ours under ``reasoning_stream.``.
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_STREAM = "gen_ai.request.stream"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
WORKFLOW_NAME = "gen_ai.workflow.name"
TOKEN_TYPE = "gen_ai.token.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
RETRY_EVENT = "reasoning_stream.retry"

OUR_PROVIDER = "reasoning_stream.provider"
PIPE_NAME = "reasoning_stream.pipe.name"
STATUS = "reasoning_stream.status"
TIME_TO_FIRST_REASONING = "reasoning_stream.time_to_first_reasoning"
TIME_TO_FIRST_TEXT = "reasoning_stream.time_to_first_text"
REASONING_DURATION = "reasoning_stream.reasoning.duration"
REASONING_SEGMENTS = "reasoning_stream.reasoning.segments"
OPAQUE_STATES = "reasoning_stream.reasoning_state.count"
TOOL_CALLS = "reasoning_stream.tool_calls"
PIPES = "reasoning_stream.pipeline.pipes"
INPUT_LENGTH = "reasoning_stream.content.input.length"
REASONING_LENGTH = "reasoning_stream.content.reasoning.length"
TEXT_LENGTH = "reasoning_stream.content.text.length"

# Metric names.
OPERATION_DURATION_METRIC = "gen_ai.client.operation.duration"
TOKEN_USAGE_METRIC = "gen_ai.client.token.usage"
TIME_TO_FIRST_CHUNK_METRIC = "gen_ai.client.operation.time_to_first_chunk"
REASONING_DURATION_METRIC = "reasoning_stream.reasoning.duration"

# Bucket boundaries the conventions advise for durations (seconds) and token counts.
_SECONDS_BUCKETS: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
_TOKEN_BUCKETS: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip

# Our provider ids to the conventions' well-known ``gen_ai.provider.name`` values. An
# OpenAI-compatible endpoint is named by its host where the conventions know the host.
_PROVIDER_NAMES: Final[Mapping[str, str]] = {
    "anthropic": "anthropic",
    "openai-chat": "openai",
    "openai-responses": "openai",
    "bedrock": "aws.bedrock",
    "gemini": "gcp.gemini",
    "ollama": "ollama",
    "openrouter": "openrouter",
}
_OPENAI_COMPATIBLE_HOSTS: Final = (
    ("deepseek.com", "deepseek"),
    ("x.ai", "x_ai"),
    ("groq.com", "groq"),
    ("mistral.ai", "mistral_ai"),
    ("perplexity.ai", "perplexity"),
    ("openai.azure.com", "azure.ai.openai"),
)

# Provider finish reasons, already normalised by the pipes, to the conventions' vocabulary.
_FINISH_REASONS: Final[Mapping[str, str]] = {"tool_calls": "tool_call", "tool_use": "tool_call"}

_clock = time.perf_counter


def instrument(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: ContentCapture = "none",
) -> None:
    """Trace and measure every run of every pipe and pipeline from now on.

    Args:
        tracer_provider: where spans go (default: the global one, ``trace.set_tracer_provider``).
        meter_provider: where metrics go (default: the global one).
        capture_content: ``"none"`` (default), ``"lengths"`` or ``"full"``: see the module doc.
            Opaque reasoning state is never exported, whatever the level.

    Calling it again replaces the previous configuration. Raises ``UsageError`` with the install
    command when ``opentelemetry-api`` is missing.
    """
    if capture_content not in _CAPTURE_LEVELS:
        raise ValueError(
            f"capture_content must be one of {', '.join(_CAPTURE_LEVELS)}, got {capture_content!r}"
        )
    try:
        from opentelemetry import metrics, trace
    except ImportError as error:
        raise UsageError(
            "telemetry needs the 'opentelemetry-api' package: pip install 'reasoning-stream[otel]'"
        ) from error
    tracer = trace.get_tracer(SCOPE_NAME, tracer_provider=tracer_provider)
    meter = metrics.get_meter(SCOPE_NAME, meter_provider=meter_provider)
    observer = _Observer(tracer, _Instruments(meter), capture_content)
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


# ----------------------------------------------------------------------------- internals


class _Instruments:
    """The histograms one meter records into."""

    def __init__(self, meter: Any) -> None:
        self.duration: Histogram = _histogram(
            meter, OPERATION_DURATION_METRIC, "s", "GenAI operation duration.", _SECONDS_BUCKETS
        )
        self.tokens: Histogram = _histogram(
            meter, TOKEN_USAGE_METRIC, "{token}", "Number of input and output tokens used.",
            _TOKEN_BUCKETS,
        )  # fmt: skip
        self.first_chunk: Histogram = _histogram(
            meter,
            TIME_TO_FIRST_CHUNK_METRIC,
            "s",
            "Time from the request to the first chunk (reasoning or answer) of the response.",
            _SECONDS_BUCKETS,
        )
        self.reasoning: Histogram = _histogram(
            meter,
            REASONING_DURATION_METRIC,
            "s",
            "Time the model spent streaming reasoning in one response (segments summed).",
            _SECONDS_BUCKETS,
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

    __slots__ = ("known_server", "metric_attributes", "name", "outcomes", "start", "streaming")

    def __init__(self, pipe: Pipe, stream: object) -> None:
        self.name, self.start, self.metric_attributes = _pipe_start(pipe, stream)
        self.known_server = SERVER_ADDRESS in self.metric_attributes
        # The conventions define time to first chunk for streaming requests only.
        self.streaming = stream is not False
        self.outcomes: dict[tuple[str | None, str | None], _Outcome] = {}

    def outcome(self, status: str | None, error_type: str | None) -> _Outcome:
        """The metric attributes of a run that ended so (few combinations: built once each)."""
        key = (status, error_type)
        outcome = self.outcomes.get(key)
        if outcome is None:
            # Low-cardinality outcome dimensions: "how often does it run out of budget" is
            # a count of status="length", "which provider fails" one of error.type.
            attributes = dict(self.metric_attributes)
            if error_type is not None:
                attributes[ERROR_TYPE] = error_type
            if status is not None:
                attributes[STATUS] = status
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

    def __init__(self, tracer: Tracer, instruments: _Instruments, capture: ContentCapture):
        from opentelemetry import context, trace

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
        return _Scope(self, span, token, prompt, shape, parent, _clock())

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

    __slots__ = ("observer", "parent", "prompt", "shape", "span", "started", "token")

    def __init__(
        self,
        observer: _Observer,
        span: Span,
        token: Any,
        prompt: Prompt,
        shape: _Shape | None,
        parent: Any,
        started: float,
    ) -> None:
        self.observer = observer
        self.span = span
        self.token = token
        self.prompt = prompt
        self.shape = shape
        self.parent = parent
        self.started = started

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
                            span, result, error_type, self.prompt, observer.capture, shape, first
                        )
                    self._record(shape, result, error_type, duration, first)
                if error_type is not None:
                    from opentelemetry.trace import Status, StatusCode

                    span.set_status(Status(StatusCode.ERROR, _description(error)))
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
        outcome = shape.outcome(None if result is None else result.status, error_type)
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
        if result.reasoning_segments:
            instruments.reasoning.record(result.timings.reasoning_duration, attributes, parent)


def _pipe_start(pipe: Pipe, stream: object) -> tuple[str, dict[str, Any], dict[str, Any]]:
    provider = _provider_name(pipe.provider, pipe.endpoint)
    attributes: dict[str, Any] = {OPERATION: "chat", PROVIDER: provider}
    if pipe.model:
        attributes[REQUEST_MODEL] = pipe.model
    address, port = _server(pipe.endpoint)
    if address:
        attributes[SERVER_ADDRESS] = address
        if port is not None:
            attributes[SERVER_PORT] = port
    metric_attributes = dict(attributes)
    if stream is True:
        attributes[REQUEST_STREAM] = True
    if pipe.provider:
        attributes[OUR_PROVIDER] = pipe.provider
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
) -> None:
    """Everything the run learned, as the span's attributes: one ``set_attributes`` call."""
    attributes: dict[str, Any] = {}
    if error_type is not None:
        attributes[ERROR_TYPE] = error_type
    if result is not None:
        attributes[STATUS] = result.status
        if result.response_id:
            attributes[RESPONSE_ID] = result.response_id
        if result.finish_reason:
            attributes[FINISH_REASONS] = (result.finish_reason,)
        usage = result.usage
        if usage.input_tokens is not None:
            attributes[INPUT_TOKENS] = usage.input_tokens
        if usage.output_tokens is not None:
            attributes[OUTPUT_TOKENS] = usage.output_tokens
        if usage.reasoning_tokens is not None:
            attributes[REASONING_TOKENS] = usage.reasoning_tokens
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
            address, port = _server(result.endpoint)
            if address:
                attributes[SERVER_ADDRESS] = address
                if port is not None:
                    attributes[SERVER_PORT] = port
    if capture != "none":
        attributes.update(_content(prompt, result, capture))
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
        attributes.update(_content(prompt, last, capture))
    span.set_attributes(attributes)


def _first_chunk(result: PipeResult) -> float | None:
    """Seconds to the first reasoning or answer chunk, whichever came first."""
    timings = result.timings
    reasoning, text = timings.time_to_first_reasoning, timings.time_to_first_text
    if reasoning is None:
        return text
    if text is None:
        return reasoning
    return min(reasoning, text)


def _provider_name(provider: str | None, endpoint: str | None) -> str:
    if provider in ("openai-chat", "openai-responses") and endpoint:
        host = (_server(endpoint)[0] or "").lower()
        for suffix, name in _OPENAI_COMPATIBLE_HOSTS:
            if host == suffix or host.endswith("." + suffix):
                return name
    if provider == "gemini" and endpoint and "aiplatform.googleapis.com" in endpoint:
        return "gcp.vertex_ai"
    if provider is None:
        return "_OTHER"
    return _PROVIDER_NAMES.get(provider, provider)


@functools.lru_cache(maxsize=256)
def _server(endpoint: str | None) -> tuple[str | None, int | None]:
    """Host and port of a URL endpoint (never its user info, path or query)."""
    if not endpoint or "://" not in endpoint:
        return None, None
    try:
        parts = urlsplit(endpoint)
        return parts.hostname, parts.port
    except ValueError:
        return None, None


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
    # Error messages are already free of keys and opaque payloads (the pipes redact them).
    text = f"{type(error).__name__}: {error}" if error is not None else ""
    return text if len(text) <= 500 else text[:499] + "…"


# ------------------------------------------------------------------------------- content


def _content(prompt: Prompt, result: PipeResult | None, capture: ContentCapture) -> dict[str, Any]:
    inputs = _input_messages(prompt)
    if capture == "lengths":
        lengths: dict[str, Any] = {INPUT_LENGTH: sum(_part_length(m) for m in inputs)}
        if result is not None:
            lengths[REASONING_LENGTH] = len(result.model_reasoning)
            lengths[TEXT_LENGTH] = len(result.text)
        return lengths
    attributes: dict[str, Any] = {INPUT_MESSAGES: _json(inputs)}
    if result is not None:
        attributes[OUTPUT_MESSAGES] = _json([_output_message(result)])
    return attributes


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _part_length(message: Mapping[str, Any]) -> int:
    return sum(len(part.get("content", "")) for part in message["parts"])


def _output_message(result: PipeResult) -> dict[str, Any]:
    """The answer as a GenAI output message: reasoning parts, the text, tool calls.

    Built from readable fields only; ``reasoning_state`` is never looked at.
    """
    parts: list[dict[str, Any]] = [
        {"type": "reasoning", "content": segment}
        for segment in result.reasoning_segments
        if segment
    ]
    if result.text:
        parts.append({"type": "text", "content": result.text})
    for call in result.tool_calls:
        parts.append(
            {
                "type": "tool_call",
                "id": call.id,
                "name": call.name,
                "arguments": _arguments(call.arguments),
            }
        )
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    reason = result.finish_reason or ("error" if result.status == "error" else None)
    if reason:
        message["finish_reason"] = _FINISH_REASONS.get(reason, reason)
    return message


def _arguments(text: str) -> object:
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return text


def _input_messages(prompt: Prompt) -> list[dict[str, Any]]:
    """The prompt as GenAI input messages, from readable fields only.

    Taken: ``role``; ``content`` as a string or as text and thinking blocks (their text only);
    ``thinking`` and ``reasoning_content`` strings; tool calls (id, name, arguments); a tool
    result's ``tool_call_id`` and content. Everything else a message may carry (signatures,
    encrypted or redacted reasoning, provider records) is left out.
    """
    if isinstance(prompt, str):
        return [{"role": "user", "parts": [{"type": "text", "content": prompt}]}]
    messages: list[dict[str, Any]] = []
    for message in prompt:
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        role = role if isinstance(role, str) else "user"
        parts: list[dict[str, Any]] = []
        for key in ("thinking", "reasoning_content"):
            value = message.get(key)
            if isinstance(value, str) and value:
                parts.append({"type": "reasoning", "content": value})
        content = message.get("content")
        if role == "tool":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": str(message.get("tool_call_id", "")),
                    "response": _text_of(content),
                }
            )
        else:
            parts.extend(_content_parts(content))
        for call in message.get("tool_calls") or ():
            part = _tool_call_part(call)
            if part is not None:
                parts.append(part)
        messages.append({"role": role, "parts": parts})
    return messages


def _content_parts(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}] if content else []
    parts: list[dict[str, Any]] = []
    if isinstance(content, Sequence):
        for block in content:
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind in ("text", "input_text", "output_text") and isinstance(block.get("text"), str):
                parts.append({"type": "text", "content": block["text"]})
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                parts.append({"type": "reasoning", "content": block["thinking"]})
    return parts


def _text_of(content: object) -> str:
    return "".join(part["content"] for part in _content_parts(content))


def _tool_call_part(call: object) -> dict[str, Any] | None:
    if not isinstance(call, Mapping):
        return None
    function = call.get("function")
    if isinstance(function, Mapping):
        name, arguments = function.get("name"), function.get("arguments")
    else:
        name, arguments = call.get("name"), call.get("arguments")
    if not isinstance(name, str):
        return None
    return {
        "type": "tool_call",
        "id": str(call.get("id", "")),
        "name": name,
        "arguments": _arguments(arguments) if isinstance(arguments, str) else arguments,
    }


_lock = threading.Lock()
_active: _Observer | None = None
