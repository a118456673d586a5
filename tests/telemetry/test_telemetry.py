"""Telemetry: GenAI spans and metrics equal to what each run captured, and nothing secret exported.

Every bundled provider transcript is played through its real SDK (the reliability kit's
``play``) with the OpenTelemetry SDK's in-memory span exporter and metric reader installed.
"""

from __future__ import annotations

import copy
import json
import logging
import sys
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from reasoning_stream import (
    Finish,
    MalformedStreamError,
    Pipeline,
    ProviderError,
    ReasoningDelta,
    TextDelta,
    UsageError,
    telemetry,
)
from reasoning_stream._pipe import PipeResult
from reasoning_stream.testing import Reply, ScriptedPipe, Transcript, WireServer
from tests.reliability import (
    API_KEY,
    FLAVOURS,
    TARGETS,
    Flavour,
    Outcome,
    fresh_prefix,
    opaque_payloads,
    play,
    transcript,
    under,
)
from tests.reliability.test_secrets import run_own, unauthorized

# The conventions' well-known gen_ai.provider.name for each provider pipe (custom values for
# the two the conventions do not list).
PROVIDER_NAMES = {
    "anthropic": "anthropic",
    "openai-responses": "openai",
    "openai-chat": "openai",
    "openrouter": "openrouter",
    "bedrock": "aws.bedrock",
    "ollama": "ollama",
    "gemini": "gcp.gemini",
}

CASES = [
    (target_name, name)
    for target_name in sorted(TARGETS)
    for name in TARGETS[target_name].transcripts + TARGETS[target_name].error_transcripts
]


@dataclass
class Otel:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def points(self, metric: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        found: list[Any] = []
        if data is None:
            return found
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name == metric:
                        found.extend(item.data.data_points)
        return found

    def everything(self) -> str:
        """Every span (attributes, events, status, links) and metric point, as JSON text."""
        texts = [span.to_json() for span in self.finished()]
        data = self.metrics.get_metrics_data()
        if data is not None:
            texts.append(data.to_json())
        return "\n".join(texts)


def install(capture: telemetry.ContentCapture = "none") -> Otel:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    metrics = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[metrics])
    telemetry.instrument(
        tracer_provider=tracer_provider, meter_provider=meter_provider, capture_content=capture
    )
    return Otel(spans, metrics, tracer_provider, meter_provider)


@pytest.fixture
def otel() -> Iterator[Otel]:
    installed = install()
    try:
        yield installed
    finally:
        telemetry.uninstrument()


@pytest.fixture
def full() -> Iterator[Otel]:
    installed = install("full")
    try:
        yield installed
    finally:
        telemetry.uninstrument()


@pytest.fixture(scope="module")
def wire() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


def only_span(otel: Otel) -> ReadableSpan:
    spans = otel.finished()
    assert len(spans) == 1, [span.name for span in spans]
    return spans[0]


def check_pipe_span(span: ReadableSpan, result: PipeResult, provider: str) -> None:
    """The span states what the result captured, under the conventions' names."""
    attributes = dict(span.attributes or {})
    assert span.name == f"chat {result.model}"
    assert span.kind is SpanKind.CLIENT
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == PROVIDER_NAMES[provider]
    assert attributes["gen_ai.request.model"] == result.model
    assert attributes["reasoning_stream.provider"] == result.provider == provider
    assert attributes["reasoning_stream.status"] == result.status
    assert attributes.get("gen_ai.response.id") == result.response_id
    # The conventions' vocabulary, the same as the output message's finish_reason.
    reason = {"tool_calls": "tool_call", "tool_use": "tool_call"}.get(
        result.finish_reason or "", result.finish_reason
    )
    expected_reasons = (reason,) if reason else None
    assert attributes.get("gen_ai.response.finish_reasons") == expected_reasons
    assert attributes.get("openai.api.type") == {
        "openai-chat": "chat_completions",
        "openai-responses": "responses",
    }.get(provider)
    assert attributes.get("gen_ai.response.model") == result.response_model
    is_openai = provider in ("openai-chat", "openai-responses")
    assert attributes.get("openai.response.service_tier") == (
        result.service_tier if is_openai else None
    )
    assert attributes.get("openai.response.system_fingerprint") == (
        result.system_fingerprint if is_openai else None
    )
    usage = result.usage
    assert attributes.get("gen_ai.usage.cache_read.input_tokens") == usage.cache_read_tokens
    assert attributes.get("gen_ai.usage.cache_creation.input_tokens") == usage.cache_write_tokens
    cost = result.cost
    assert attributes.get("reasoning_stream.cost.usd") == (None if cost is None else float(cost))
    assert attributes.get("gen_ai.usage.input_tokens") == usage.input_tokens
    assert attributes.get("gen_ai.usage.output_tokens") == usage.output_tokens
    assert attributes.get("gen_ai.usage.reasoning.output_tokens") == usage.reasoning_tokens
    timings = result.timings
    assert attributes.get("reasoning_stream.time_to_first_reasoning") == (
        timings.time_to_first_reasoning
    )
    assert attributes.get("reasoning_stream.time_to_first_text") == timings.time_to_first_text
    firsts = [t for t in (timings.time_to_first_reasoning, timings.time_to_first_text) if t]
    assert attributes.get("gen_ai.response.time_to_first_chunk") == (
        min(firsts) if firsts else None
    )
    segments = [segment for segment in result.reasoning_segments if segment]
    assert attributes["reasoning_stream.reasoning.segments"] == len(segments)
    if segments:
        assert attributes["reasoning_stream.reasoning.duration"] == timings.reasoning_duration
    assert attributes.get("reasoning_stream.tool_calls") == (len(result.tool_calls) or None)
    assert attributes.get("reasoning_stream.reasoning_state.count") == (
        len(result.reasoning_state) or None
    )
    # Loopback: the WireServer's address, never a path, a query or a key.
    if "server.address" in attributes:
        assert attributes["server.address"] in ("127.0.0.1", "localhost")
    # Off by default: no text of any kind.
    assert not any(key.startswith("reasoning_stream.content.") for key in attributes)
    assert "gen_ai.input.messages" not in attributes
    assert "gen_ai.output.messages" not in attributes


def check_error(span: ReadableSpan, outcome: Outcome) -> None:
    attributes = dict(span.attributes or {})
    error = outcome.error
    if error is None:
        assert "error.type" not in attributes
        assert span.status.status_code is StatusCode.UNSET
        return
    assert isinstance(error, ProviderError)
    assert span.status.status_code is StatusCode.ERROR
    if isinstance(error, MalformedStreamError):
        assert attributes["error.type"] == "reasoning_stream.MalformedStreamError"
    elif error.status_code is not None:
        assert attributes["error.type"] == str(error.status_code)
    else:
        cause = error.__cause__ if error.__cause__ is not None else error
        assert str(attributes["error.type"]).endswith(type(cause).__qualname__)


# -------------------------------------------------------------------- every transcript


@pytest.mark.parametrize(("target_name", "name"), CASES)
def test_every_transcript_makes_one_span_equal_to_its_result(
    wire: WireServer, otel: Otel, target_name: str, name: str
) -> None:
    target = TARGETS[target_name]
    original = transcript(name)
    outcome = play(wire, target, name, Reply(original), "sync")
    span = only_span(otel)
    check_pipe_span(span, outcome.result, target.provider)
    check_error(span, outcome)
    if original.status != 200:
        assert dict(span.attributes or {})["error.type"] == str(original.status)

    # Metrics: one duration point, and token usage as the provider reported it.
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.count == 1
    assert duration.attributes["gen_ai.provider.name"] == PROVIDER_NAMES[target.provider]
    assert duration.attributes["gen_ai.request.model"] == outcome.result.model
    assert duration.attributes.get("error.type") == dict(span.attributes or {}).get("error.type")
    assert duration.attributes["reasoning_stream.status"] == outcome.result.status
    assert duration.attributes.get("gen_ai.response.model") == outcome.result.response_model
    tokens = {
        point.attributes["gen_ai.token.type"]: point.sum
        for point in otel.points("gen_ai.client.token.usage")
    }
    usage = outcome.result.usage
    expected = {
        kind: value
        for kind, value in (("input", usage.input_tokens), ("output", usage.output_tokens))
        if value is not None
    }
    assert tokens == expected
    reasoning = otel.points("reasoning_stream.reasoning.duration")
    if any(outcome.result.reasoning_segments):
        (point,) = reasoning
        assert point.count == 1
        assert point.sum == outcome.result.timings.reasoning_duration
    else:
        assert reasoning == []
    first_chunk = otel.points("gen_ai.client.operation.time_to_first_chunk")
    timings = outcome.result.timings
    assert len(first_chunk) == (
        1 if (timings.time_to_first_reasoning or timings.time_to_first_text) else 0
    )


@pytest.mark.parametrize("flavour", ["asyncio", "trio"])
@pytest.mark.parametrize("target_name", sorted(TARGETS))
def test_async_runs_are_traced_alike(
    wire: WireServer, otel: Otel, target_name: str, flavour: Flavour
) -> None:
    target = TARGETS[target_name]
    outcome = play(wire, target, target.showcase, Reply(transcript(target.showcase)), flavour)
    assert outcome.error is None
    span = only_span(otel)
    check_pipe_span(span, outcome.result, target.provider)
    assert outcome.result.usage.output_tokens is not None or target.provider == "openrouter"


# ------------------------------------------------------------------------ pipelines


def scripted(name: str, *items: Any) -> ScriptedPipe:
    return ScriptedPipe(list(items), name=name)


def test_a_pipeline_is_a_workflow_span_with_one_child_per_pipe(otel: Otel) -> None:
    pipeline = Pipeline(
        scripted("draft", ReasoningDelta("plan"), TextDelta("v1")),
        scripted("critic", TextDelta("fine")),
        scripted(
            "polish", ReasoningDelta("a"), TextDelta("b"), ReasoningDelta("c"), TextDelta("d")
        ),
    )
    result = pipeline.run("go")
    spans = otel.finished()
    assert [span.name for span in spans] == [
        "chat scripted",
        "chat scripted",
        "chat scripted",
        "invoke_workflow draft | critic | polish",
    ]
    *children, parent = spans
    assert parent.parent is None
    assert parent.kind is SpanKind.INTERNAL
    attributes = dict(parent.attributes or {})
    assert attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert attributes["reasoning_stream.pipeline.pipes"] == 3
    assert attributes["reasoning_stream.status"] == "completed"
    for child, pipe_result in zip(children, result.results, strict=True):
        assert child.parent is not None and child.parent.span_id == parent.context.span_id
        assert child.context.trace_id == parent.context.trace_id
        child_attributes = dict(child.attributes or {})
        assert child_attributes["reasoning_stream.pipe.name"] == pipe_result.source
        assert child_attributes["reasoning_stream.reasoning.segments"] == len(
            [s for s in pipe_result.reasoning_segments if s]
        )
    assert dict(children[2].attributes or {})["reasoning_stream.reasoning.segments"] == 2


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_async_pipelines_nest_on_their_task_and_concurrent_runs_do_not_mix(
    otel: Otel, backend: str
) -> None:
    """Two pipelines on two tasks at once: each pipe span's parent is its own workflow."""

    def make(tag: str) -> Pipeline:
        return Pipeline(
            ScriptedPipe([ReasoningDelta("r"), 0.01, TextDelta("a")], name=f"{tag}1"),
            ScriptedPipe([0.01, TextDelta("b")], name=f"{tag}2"),
        )

    async def main() -> None:
        with anyio.fail_after(30):  # a hang fails the test instead of stalling the suite
            async with anyio.create_task_group() as group:
                group.start_soon(make("x").arun, "go")
                group.start_soon(make("y").arun, "go")

    anyio.run(main, backend=backend)
    spans = otel.finished()
    workflows = {span.context.span_id: span for span in spans if span.name.startswith("invoke")}
    assert len(workflows) == 2
    pipes = [span for span in spans if span.name.startswith("chat")]
    assert len(pipes) == 4
    for span in pipes:
        assert span.parent is not None
        workflow = workflows[span.parent.span_id]
        name = dict(span.attributes or {})["reasoning_stream.pipe.name"]
        assert str(name)[0] == str(workflow.name).split(" ")[1][0]


def test_a_provider_pipeline_has_one_span_per_pipe(wire: WireServer, otel: Otel) -> None:
    names = ["anthropic_thinking", "openai_chat_reasoning_content"]
    targets = [TARGETS["anthropic"], TARGETS["openai-chat-httpx"]]
    built = []
    for target, name in zip(targets, names, strict=True):
        prefix = fresh_prefix()
        wire.add(under(prefix, Reply(transcript(name))))
        built.append(target.build(wire.url + prefix, "sync", 5.0, name))
    try:
        result = Pipeline(*(b.pipe for b in built)).run("Say something.")
    finally:
        for b in built:
            b.close()
    *children, parent = otel.finished()
    assert parent.name.startswith("invoke_workflow")
    assert len(children) == 2
    for child, pipe_result, target in zip(children, result.results, targets, strict=True):
        assert child.parent is not None and child.parent.span_id == parent.context.span_id
        check_pipe_span(child, pipe_result, target.provider)


# ----------------------------------------------------------------------- errors


def test_a_failing_pipe_records_the_error_type_and_its_capture(otel: Otel) -> None:
    pipe = scripted("p", ReasoningDelta("r"), TextDelta("partial"), RuntimeError("boom"))
    with pytest.raises(ProviderError) as raised:
        pipe.run("x")
    span = only_span(otel)
    attributes = dict(span.attributes or {})
    assert attributes["error.type"] == "RuntimeError"
    assert attributes["reasoning_stream.status"] == "error"
    assert span.status.status_code is StatusCode.ERROR
    assert "boom" in (span.status.description or "")
    assert raised.value.result is not None
    assert attributes["reasoning_stream.time_to_first_text"] == (
        raised.value.result.timings.time_to_first_text
    )
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == "RuntimeError"


def test_a_pipeline_failure_marks_the_failing_pipe_and_the_workflow(otel: Otel) -> None:
    pipeline = Pipeline(scripted("ok", TextDelta("a")), scripted("bad", ValueError("no")))
    with pytest.raises(ProviderError):
        pipeline.run("x")
    ok, bad, workflow = otel.finished()
    assert "error.type" not in dict(ok.attributes or {})
    assert dict(bad.attributes or {})["error.type"] == "ValueError"
    assert dict(workflow.attributes or {})["error.type"] == "ValueError"
    assert dict(workflow.attributes or {})["reasoning_stream.status"] == "error"
    assert workflow.status.status_code is StatusCode.ERROR


def test_misuse_before_the_run_is_a_span_with_the_usage_error(otel: Otel) -> None:
    async def callback(chunk: str) -> None:
        pass

    pipe = scripted("p", TextDelta("a")).set_streaming_callback(callback)
    with pytest.raises(UsageError):
        pipe.run("x")
    attributes = dict(only_span(otel).attributes or {})
    assert attributes["error.type"] == "reasoning_stream.UsageError"
    # The refusal ends this run like any other error (API section 4: whatever the ending,
    # the run has its result), so the span carries its status.
    assert attributes["reasoning_stream.status"] == "error"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_cancellation_is_not_an_error(otel: Otel, backend: str) -> None:
    pipe = scripted("p", ReasoningDelta("r"), 5.0, TextDelta("never"))

    async def main() -> None:
        with anyio.move_on_after(0.05):
            await pipe.arun("x")

    anyio.run(main, backend=backend)
    span = only_span(otel)
    attributes = dict(span.attributes or {})
    assert attributes["reasoning_stream.status"] == "cancelled_before_answer"
    assert "error.type" not in attributes
    assert span.status.status_code is StatusCode.UNSET


def test_a_length_stop_is_not_an_error(otel: Otel) -> None:
    scripted("p", TextDelta("cut"), Finish("length")).run("x")
    attributes = dict(only_span(otel).attributes or {})
    assert attributes["reasoning_stream.status"] == "length"
    assert attributes["gen_ai.response.finish_reasons"] == ("length",)
    assert "error.type" not in attributes


# ----------------------------------------------------------------------- content


def test_lengths_capture_exports_lengths_only() -> None:
    otel = install("lengths")
    try:
        result = scripted("p", ReasoningDelta("think hard"), TextDelta("answer!")).run("prompt")
    finally:
        telemetry.uninstrument()
    attributes = dict(only_span(otel).attributes or {})
    assert attributes["reasoning_stream.content.input.length"] == len("prompt")
    assert attributes["reasoning_stream.content.reasoning.length"] == len(result.model_reasoning)
    assert attributes["reasoning_stream.content.text.length"] == len(result.text)
    exported = otel.everything()
    for text in ("think hard", "answer!", "prompt"):
        assert text not in exported


def test_full_capture_exports_reasoning_parts_and_the_answer(full: Otel) -> None:
    history = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "thinking": "greet back"},
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
    ]
    pipe = scripted(
        "p", ReasoningDelta("first"), TextDelta("x"), ReasoningDelta("second"), TextDelta("y")
    )
    result = pipe.run(history)
    attributes = dict(only_span(full).attributes or {})
    inputs = json.loads(str(attributes["gen_ai.input.messages"]))
    assert inputs == [
        {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "greet back"},
                {"type": "text", "content": "hello"},
            ],
        },
        {"role": "user", "parts": [{"type": "text", "content": "again"}]},
    ]
    (output,) = json.loads(str(attributes["gen_ai.output.messages"]))
    assert output["role"] == "assistant"
    assert output["parts"] == [
        {"type": "reasoning", "content": "first"},
        {"type": "reasoning", "content": "second"},
        {"type": "text", "content": "xy"},
    ]
    assert result.reasoning_segments == ("first", "second") and result.text == "xy"


@pytest.mark.parametrize(("target_name", "name"), CASES)
def test_full_capture_output_matches_every_transcript(
    wire: WireServer, full: Otel, target_name: str, name: str
) -> None:
    outcome = play(wire, TARGETS[target_name], name, Reply(transcript(name)), "sync")
    result = outcome.result
    (output,) = json.loads(str(dict(only_span(full).attributes or {})["gen_ai.output.messages"]))
    parts = output["parts"]
    assert [p["content"] for p in parts if p["type"] == "reasoning"] == [
        s for s in result.reasoning_segments if s
    ]
    assert "".join(p["content"] for p in parts if p["type"] == "text") == result.text
    assert [(p["id"], p["name"]) for p in parts if p["type"] == "tool_call"] == [
        (call.id, call.name) for call in result.tool_calls
    ]


# ----------------------------------------------------------------------- secrets


SECRET_CASES = [
    (target_name, name)
    for target_name in sorted(TARGETS)
    for name in TARGETS[target_name].transcripts
    if opaque_payloads(transcript(name))
]


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(("target_name", "name"), SECRET_CASES)
def test_opaque_state_is_never_exported_even_in_full(
    wire: WireServer,
    full: Otel,
    target_name: str,
    name: str,
    flavour: Flavour,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Whole and cut mid-way: the spans, metrics and our log lines at "full" hold no payload."""
    caplog.set_level(logging.DEBUG, logger="reasoning_stream")
    target = TARGETS[target_name]
    original = transcript(name)
    secrets = opaque_payloads(original)
    assert secrets
    whole = play(wire, target, name, Reply(original), flavour)
    assert whole.result.reasoning_state, "the case must carry opaque state to be a test"
    cut = Reply(original, disconnect_after=len(original.events) // 2)
    play(wire, target, name, cut, flavour)
    # A follow-up turn sends the history back, opaque state included, as users do.
    history = [{"role": "user", "content": "Say something."}, whole.result.message]
    history[1] = {**history[1], "reasoning_state": list(whole.result.reasoning_state)}
    scripted("followup", TextDelta("ok")).run(history)
    exported = full.everything()
    assert "Say something." in exported  # full capture is on: the text is there
    logged = "\n".join(caplog.handler.format(record) for record in caplog.records)
    for secret in secrets:
        assert secret not in exported, "an opaque payload was exported"
        assert secret not in logged, "an opaque payload was logged"


def test_opaque_blocks_in_a_prompt_are_never_exported(full: Otel) -> None:
    secret = "SIG-opaque-0123456789"
    history = [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "visible", "signature": secret},
                {"type": "redacted_thinking", "data": secret + "-redacted"},
                {"type": "reasoning", "encrypted_content": secret + "-encrypted"},
                {"type": "text", "text": "answer"},
            ],
            "reasoning_details": [{"type": "reasoning.encrypted", "data": secret}],
            "signature": secret,
        },
        {"role": "user", "content": "next"},
    ]
    scripted("p", TextDelta("ok")).run(history)
    exported = full.everything()
    assert "visible" in exported and "answer" in exported
    assert secret not in exported


@pytest.mark.parametrize("target_name", sorted(name for name in TARGETS if name != "bedrock"))
def test_an_echoed_api_key_is_never_exported(
    wire: WireServer, full: Otel, target_name: str
) -> None:
    target = TARGETS[target_name]
    name, reply = unauthorized(target, echo=True)
    prefix = fresh_prefix()
    wire.add(under(prefix, Reply(reply)))
    _pipe, error = anyio.run(run_own, target, wire.url + prefix, name, "sync")
    assert isinstance(error, ProviderError)
    span = only_span(full)
    assert dict(span.attributes or {})["error.type"] == "401"
    assert API_KEY not in full.everything()


# ----------------------------------------------------------------------- switching


def test_off_by_default_and_after_uninstrument() -> None:
    assert not telemetry.is_instrumented()
    otel = install()
    assert telemetry.is_instrumented()
    telemetry.uninstrument()
    telemetry.uninstrument()  # twice is fine
    scripted("p", TextDelta("a")).run("x")
    assert otel.finished() == []
    assert not telemetry.is_instrumented()


def test_instrument_again_replaces_the_configuration() -> None:
    first = install()
    second = install("lengths")
    try:
        scripted("p", TextDelta("a")).run("x")
    finally:
        telemetry.uninstrument()
    assert first.finished() == []
    assert "reasoning_stream.content.text.length" in dict(only_span(second).attributes or {})


def test_an_unknown_capture_level_is_refused() -> None:
    with pytest.raises(ValueError, match="capture_content"):
        telemetry.instrument(capture_content="everything")  # type: ignore[arg-type]
    assert not telemetry.is_instrumented()


def test_without_opentelemetry_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(UsageError, match=r"pip install 'reasoning-stream\[otel\]'"):
        telemetry.instrument()
    assert not telemetry.is_instrumented()


def test_a_one_shot_request_has_no_time_to_first_chunk(otel: Otel) -> None:
    """The conventions define time to first chunk for streaming requests only."""
    pipe = scripted("p", ReasoningDelta("r"), TextDelta("a"))
    pipe.stream = False  # type: ignore[attr-defined]  # provider pipes take stream=False
    pipe.run("x")
    attributes = dict(only_span(otel).attributes or {})
    assert "gen_ai.request.stream" not in attributes
    assert "gen_ai.response.time_to_first_chunk" not in attributes
    assert "reasoning_stream.time_to_first_reasoning" in attributes
    assert otel.points("gen_ai.client.operation.time_to_first_chunk") == []


# ------------------------------------------------------------- shared per-configuration data


def test_runs_of_one_configuration_keep_their_own_outcomes(otel: Otel) -> None:
    """Attributes built once per pipe configuration and outcome: each run's points still
    carry its own status and error type, and no run's outcome leaks into another's span."""
    from reasoning_stream import Usage, UsageReport

    usage = UsageReport(Usage(3, 5, 2))
    endings: list[tuple[list[Any], str, str | None]] = [
        ([TextDelta("a"), usage], "completed", None),
        ([TextDelta("a"), usage, Finish("length")], "length", None),
        ([TextDelta("a"), RuntimeError("boom")], "error", "RuntimeError"),
        ([TextDelta("a"), ValueError("bad")], "error", "ValueError"),
        ([TextDelta("a"), usage], "completed", None),
    ]
    for script, _, _ in endings:
        with pytest.raises(ProviderError) if isinstance(script[-1], Exception) else nullcontext():
            scripted("same", *script).run("x")
    spans = otel.finished()
    assert len(spans) == len(endings)
    for span, (_, status, error_type) in zip(spans, endings, strict=True):
        attributes = dict(span.attributes or {})
        assert attributes["reasoning_stream.status"] == status
        assert attributes.get("error.type") == error_type
    durations = {
        (p.attributes["reasoning_stream.status"], p.attributes.get("error.type")): p.count
        for p in otel.points("gen_ai.client.operation.duration")
    }
    assert durations == {
        ("completed", None): 2,
        ("length", None): 1,
        ("error", "RuntimeError"): 1,
        ("error", "ValueError"): 1,
    }
    tokens = {
        (p.attributes["reasoning_stream.status"], p.attributes["gen_ai.token.type"]): p.sum
        for p in otel.points("gen_ai.client.token.usage")
    }
    assert tokens == {
        ("completed", "input"): 6,
        ("completed", "output"): 10,
        ("length", "input"): 3,
        ("length", "output"): 5,
    }


def test_a_span_sampled_out_still_records_the_metrics() -> None:
    """A span that records nothing gets no attributes built; the metrics are recorded alike."""
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider(sampler=ALWAYS_OFF)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    metrics = InMemoryMetricReader()
    telemetry.instrument(
        tracer_provider=tracer_provider,
        meter_provider=MeterProvider(metric_readers=[metrics]),
        capture_content="full",
    )
    pipe = scripted("p", ReasoningDelta("r"), TextDelta("a"), RuntimeError("x"))
    try:
        with pytest.raises(ProviderError):
            pipe.run("prompt")
    finally:
        telemetry.uninstrument()
    otel = Otel(spans, metrics, tracer_provider, MeterProvider())
    assert otel.finished() == []
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == "RuntimeError"
    assert duration.attributes["reasoning_stream.status"] == "error"
    assert len(otel.points("reasoning_stream.reasoning.duration")) == 1
    assert len(otel.points("gen_ai.client.operation.time_to_first_chunk")) == 1


def test_every_registered_provider_has_a_conventions_name() -> None:
    """Each registry row names its ``gen_ai.provider.name``, as this test's table says."""
    from reasoning_stream.providers._spec import provider_ids
    from reasoning_stream.telemetry._semconv import provider_name

    assert set(PROVIDER_NAMES) == set(provider_ids())
    assert {p: provider_name(p, None) for p in provider_ids()} == PROVIDER_NAMES


# ------------------------------------------------------------ cached input tokens, per provider


def _with_usage(original: Transcript, key: str, extra: dict[str, Any]) -> Transcript:
    """A copy of ``original`` whose every ``key`` object (a usage report) also says ``extra``."""

    def merge(into: dict[str, Any], more: dict[str, Any]) -> None:
        for name, value in more.items():
            if isinstance(value, dict):
                merge(into.setdefault(name, {}), value)
            else:
                into[name] = value

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get(key), dict):
                merge(value[key], extra)
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    events = copy.deepcopy(original.events)
    walk(events)
    return replace(original, events=events)


# (target, transcript, usage object key, what to add, cache read, cache write, input tokens)
CACHED = [
    ("openai-chat-sdk", "openai_chat_reasoning_content", "usage",
     {"prompt_tokens_details": {"cached_tokens": 8}}, 8, None, 14),
    ("openai-responses", "openai_responses_plain", "usage",
     {"input_tokens_details": {"cached_tokens": 5}}, 5, None, None),
    ("anthropic", "anthropic_thinking", "usage",
     {"cache_creation_input_tokens": 7}, 12, 7, 45 + 7 + 12),
    ("gemini", "gemini_reasoning", "usageMetadata", {"cachedContentTokenCount": 4}, 4, None, 9),
    ("bedrock", "bedrock_converse_reasoning", "usage",
     {"cacheReadInputTokens": 10, "cacheWriteInputTokens": 3}, 10, 3, 24 + 10 + 3),
]  # fmt: skip


@pytest.mark.parametrize(
    ("target_name", "name", "key", "extra", "read", "written", "inputs"), CACHED
)
def test_cached_input_tokens_reach_usage_and_the_span(
    wire: WireServer,
    otel: Otel,
    target_name: str,
    name: str,
    key: str,
    extra: dict[str, Any],
    read: int,
    written: int | None,
    inputs: int | None,
) -> None:
    target = TARGETS[target_name]
    outcome = play(wire, target, name, Reply(_with_usage(transcript(name), key, extra)), "sync")
    usage = outcome.result.usage
    assert usage.cache_read_tokens == read
    assert usage.cache_write_tokens == written
    if inputs is not None:  # the whole prompt, cached parts included
        assert usage.input_tokens == inputs
    assert usage.cache_read_tokens <= (usage.input_tokens or 0)
    attributes = dict(only_span(otel).attributes or {})
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == read
    assert attributes.get("gen_ai.usage.cache_creation.input_tokens") == written
    check_pipe_span(only_span(otel), outcome.result, target.provider)


def test_the_status_description_leaves_the_http_status_to_error_type(
    wire: WireServer, otel: Otel
) -> None:
    target = TARGETS["anthropic"]
    outcome = play(
        wire, target, "anthropic_rate_limited", Reply(transcript("anthropic_rate_limited")), "sync"
    )
    assert outcome.error is not None
    span = only_span(otel)
    assert dict(span.attributes or {})["error.type"] == "429"
    assert "429" not in (span.status.description or "")
    assert type(outcome.error).__name__ in (span.status.description or "")


# (target, transcript, response model, service tier, system fingerprint): as the wire says
RESPONSE_DETAILS = [
    ("openai-responses", "openai_responses_plain", "o3-2025-04-16", "auto", None),
    ("openai-responses-httpx", "openai_responses_plain", "o3-2025-04-16", "auto", None),
    ("openai-chat-sdk", "openai_chat_reasoning_content", "deepseek-reasoner", None,
     "fp_3a5770e1b4"),
    ("openai-chat-httpx", "openai_chat_reasoning_content", "deepseek-reasoner", None,
     "fp_3a5770e1b4"),
    ("anthropic", "anthropic_thinking", "claude-sonnet-4-6", None, None),
    ("gemini", "gemini_reasoning", "gemini-2.5-flash", None, None),
]  # fmt: skip


@pytest.mark.parametrize(("target_name", "name", "model", "tier", "fingerprint"), RESPONSE_DETAILS)
def test_what_the_response_says_of_itself_is_on_the_span_and_metrics(
    wire: WireServer,
    otel: Otel,
    target_name: str,
    name: str,
    model: str,
    tier: str | None,
    fingerprint: str | None,
) -> None:
    target = TARGETS[target_name]
    outcome = play(wire, target, name, Reply(transcript(name)), "sync")
    assert outcome.result.response_model == model
    attributes = dict(only_span(otel).attributes or {})
    assert attributes["gen_ai.response.model"] == model
    assert attributes.get("openai.response.service_tier") == tier
    assert attributes.get("openai.response.system_fingerprint") == fingerprint
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.attributes["gen_ai.response.model"] == model
    for point in otel.points("gen_ai.client.token.usage"):
        assert point.attributes["gen_ai.response.model"] == model


# (target, transcript, settings to send (extra_body), where the wire carries them)
SETTINGS = [
    ("anthropic", "anthropic_no_thinking", {"temperature": 0.5, "top_p": 0.9}, ()),
    ("openai-chat-sdk", "openai_chat_no_reasoning",
     {"max_tokens": 300, "temperature": 0.25, "top_p": 0.75}, ()),
    ("openai-responses", "openai_responses_plain",
     {"max_output_tokens": 500, "temperature": 0.5}, ()),
    ("gemini", "gemini_plain",
     {"generationConfig": {"maxOutputTokens": 200, "temperature": 0.5, "topP": 0.5}},
     ("generationConfig",)),
]  # fmt: skip

WIRE_NAMES = {
    "max_tokens": ("max_tokens", "max_output_tokens", "maxOutputTokens"),
    "temperature": ("temperature",),
    "top_p": ("top_p", "topP"),
}


@pytest.mark.parametrize(("target_name", "name", "extra", "where"), SETTINGS)
def test_the_sampling_settings_sent_are_on_the_span(
    wire: WireServer,
    otel: Otel,
    target_name: str,
    name: str,
    extra: dict[str, Any],
    where: tuple[str, ...],
) -> None:
    target = TARGETS[target_name]
    seen = len(wire.requests)

    def prepare(pipe: Any) -> None:
        pipe.extra_body.update(extra)

    play(wire, target, name, Reply(transcript(name)), "sync", prepare=prepare)
    # The oracle: the body the server received.
    body = wire.requests[seen].json()
    for key in where:
        body = body[key]
    sent = {
        name: body[wire_name]
        for name, wire_names in WIRE_NAMES.items()
        for wire_name in wire_names
        if wire_name in body
    }
    assert sent  # the case sends something
    attributes = dict(only_span(otel).attributes or {})
    exported = {
        name: attributes[f"gen_ai.request.{name}"]
        for name in WIRE_NAMES
        if f"gen_ai.request.{name}" in attributes
    }
    assert exported == sent


SYSTEM_PROMPT = [
    {"role": "system", "content": "Answer in one word."},
    {"role": "user", "content": "Say something."},
]


@pytest.mark.parametrize(
    ("target_name", "name", "separate"),
    [
        ("anthropic", "anthropic_no_thinking", True),
        ("gemini", "gemini_plain", True),
        ("bedrock", "bedrock_converse_plain", True),
        ("openai-chat-sdk", "openai_chat_no_reasoning", False),
    ],
)
def test_a_separate_system_prompt_is_exported_as_system_instructions(
    wire: WireServer, full: Otel, target_name: str, name: str, separate: bool
) -> None:
    target = TARGETS[target_name]
    prefix = fresh_prefix()
    wire.add(under(prefix, Reply(transcript(name))))
    seen = len(wire.requests)
    built = target.build(wire.url + prefix, "sync", 10.0, name)
    try:
        built.pipe.run(SYSTEM_PROMPT)
    finally:
        built.close()
    # The oracle: where the request the server received put the system prompt.
    body = wire.requests[seen].json()
    sent_apart = any(key in body for key in ("system", "systemInstruction"))
    assert sent_apart == separate
    attributes = dict(only_span(full).attributes or {})
    inputs = json.loads(str(attributes["gen_ai.input.messages"]))
    if separate:
        assert json.loads(str(attributes["gen_ai.system_instructions"])) == [
            {"type": "text", "content": "Answer in one word."}
        ]
        assert [message["role"] for message in inputs] == ["user"]
    else:
        assert "gen_ai.system_instructions" not in attributes
        assert [message["role"] for message in inputs] == ["system", "user"]


def test_responses_instructions_are_system_instructions(wire: WireServer, full: Otel) -> None:
    target = TARGETS["openai-responses"]
    prefix = fresh_prefix()
    wire.add(under(prefix, Reply(transcript("openai_responses_plain"))))
    built = target.build(wire.url + prefix, "sync", 10.0, "openai_responses_plain")
    built.pipe.instructions = "Be brief."  # type: ignore[attr-defined]
    try:
        built.pipe.run("Say something.")
    finally:
        built.close()
    attributes = dict(only_span(full).attributes or {})
    assert json.loads(str(attributes["gen_ai.system_instructions"])) == [
        {"type": "text", "content": "Be brief."}
    ]


def test_a_failed_run_emits_the_exception_event_in_its_span(wire: WireServer) -> None:
    from opentelemetry._logs import SeverityNumber
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        name = "anthropic_rate_limited"
        outcome = play(wire, TARGETS["anthropic"], name, Reply(transcript(name)), "sync")
        ok = play(wire, TARGETS["anthropic"], "anthropic_thinking",
                  Reply(transcript("anthropic_thinking")), "sync")  # fmt: skip
    finally:
        telemetry.uninstrument()
    assert outcome.error is not None and ok.error is None
    failed = next(s for s in spans.get_finished_spans() if s.status.status_code is StatusCode.ERROR)
    (record,) = [item.log_record for item in logs.get_finished_logs()]  # none for the success
    assert record.event_name == "gen_ai.client.operation.exception"
    assert record.severity_number is SeverityNumber.WARN
    attributes = dict(record.attributes or {})
    assert attributes["error.type"] == "429"
    error_class = type(outcome.error)
    assert attributes["exception.type"] == f"{error_class.__module__}.{error_class.__qualname__}"
    assert attributes["exception.message"] == str(outcome.error)
    assert API_KEY not in json.dumps(attributes)
    context = failed.get_span_context()
    assert context is not None
    assert (record.trace_id, record.span_id) == (context.trace_id, context.span_id)
