"""``gen_ai.client.operation.time_per_output_chunk`` and the requested reasoning effort.

The metric, as the GenAI conventions (v1.41, ``docs/gen-ai/gen-ai-metrics.md``) define it: a
histogram in seconds, "recorded for each chunk received after the first one, measured as the
time elapsed from the end of the previous chunk to the end of the current chunk", reported for
streaming calls only, with the advised bucket boundaries below. Played through real provider
transcripts over a WireServer that waits between the pieces it writes.

The requested effort has no attribute in the v1.41 registry, so it is exported under our own
namespace: ``reasoning_stream.request.reasoning.level`` (a level) or ``.budget_tokens``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from reasoning_stream import Conversation, ReasoningDelta, TextDelta, Usage, UsageReport
from reasoning_stream.testing import Reply, ScriptedPipe, WireServer
from tests.conversation.test_budget import o4_mini
from tests.reliability import TARGETS, play, transcript
from tests.telemetry.test_telemetry import Otel, install, only_span

METRIC = "gen_ai.client.operation.time_per_output_chunk"
# The conventions: "This metric SHOULD be specified with ExplicitBucketBoundaries of [...]".
ADVISED = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
PAUSE = 0.03


@pytest.fixture
def otel() -> Iterator[Otel]:
    from reasoning_stream import telemetry

    installed = install()
    try:
        yield installed
    finally:
        telemetry.uninstrument()


@pytest.fixture
def wire() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


def chunks_seen(events: list[Any]) -> int:
    """The reasoning and text chunks the run's event callback received (the oracle's count)."""
    return sum(
        1 for event in events if isinstance(event, TextDelta | ReasoningDelta) and event.text
    )


@pytest.mark.parametrize("target_name", ["anthropic", "openai-responses", "gemini", "bedrock"])
def test_each_chunk_after_the_first_records_the_time_since_the_previous_one(
    wire: WireServer, otel: Otel, target_name: str
) -> None:
    target = TARGETS[target_name]
    name = target.showcase
    outcome = play(wire, target, name, Reply(transcript(name), delay=PAUSE), "sync")
    assert outcome.error is None
    count = chunks_seen(outcome.events)
    assert count >= 3
    (point,) = otel.points(METRIC)
    assert point.count == count - 1
    assert tuple(point.explicit_bounds) == ADVISED
    # The server paused before every piece it wrote (a piece may carry two deltas, read
    # back to back): chunks in different pieces came at least that far apart.
    assert point.max >= PAUSE * 0.8
    assert point.min >= 0
    assert point.sum <= outcome.result.timings.total
    span_attributes = dict(only_span(otel).attributes or {})
    assert point.attributes["gen_ai.provider.name"] == span_attributes["gen_ai.provider.name"]
    assert point.attributes["gen_ai.request.model"] == outcome.result.model


@pytest.mark.parametrize("flavour", ["asyncio", "trio"])
def test_async_runs_record_it_per_chunk_read(wire: WireServer, otel: Otel, flavour: Any) -> None:
    target = TARGETS["openai-chat-sdk"]
    name = target.showcase
    outcome = play(wire, target, name, Reply(transcript(name), delay=PAUSE), flavour)
    (point,) = otel.points(METRIC)
    assert 1 <= point.count <= chunks_seen(outcome.events) - 1
    assert point.max >= PAUSE * 0.8


def test_a_one_shot_request_records_no_time_per_chunk(otel: Otel) -> None:
    pipe = ScriptedPipe([ReasoningDelta("r"), TextDelta("a"), TextDelta("b")])
    pipe.stream = False  # type: ignore[attr-defined]  # provider pipes take stream=False
    pipe.run("x")
    assert otel.points(METRIC) == []
    pipe = ScriptedPipe([ReasoningDelta("r"), TextDelta("a"), TextDelta("b")])
    pipe.run("x")
    (point,) = otel.points(METRIC)
    assert point.count == 2


def test_the_per_chunk_metric_can_be_turned_off() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from reasoning_stream import telemetry

    reader = InMemoryMetricReader()
    telemetry.instrument(
        meter_provider=MeterProvider(metric_readers=[reader]), time_per_output_chunk=False
    )
    try:
        pipe = ScriptedPipe([TextDelta("a"), TextDelta("b"), TextDelta("c")])
        pipe.run("x")
        assert pipe._chunk_intervals is None
    finally:
        telemetry.uninstrument()
    data = reader.get_metrics_data()
    assert data is not None
    names = {m.name for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}
    assert "gen_ai.client.operation.duration" in names
    assert METRIC not in names


def test_without_telemetry_nothing_is_timed() -> None:
    pipe = ScriptedPipe([TextDelta("a"), TextDelta("b")])
    pipe.run("x")
    assert pipe._chunk_intervals is None


@pytest.mark.parametrize(
    ("reasoning", "attribute", "value"),
    [
        ("low", "reasoning_stream.request.reasoning.level", "low"),
        (4096, "reasoning_stream.request.reasoning.budget_tokens", 4096),
    ],
)
def test_the_requested_effort_is_on_the_span(
    wire: WireServer, otel: Otel, reasoning: Any, attribute: str, value: Any
) -> None:
    target = TARGETS["anthropic"]
    name = target.showcase

    def prepare(pipe: Any) -> None:
        pipe.reasoning = reasoning

    play(wire, target, name, Reply(transcript(name)), "sync", prepare=prepare)
    attributes = dict(only_span(otel).attributes or {})
    assert attributes[attribute] == value
    assert not any(key.startswith("gen_ai.request.reasoning") for key in attributes)


def test_no_effort_asked_means_no_effort_attribute(wire: WireServer, otel: Otel) -> None:
    target = TARGETS["openai-responses"]
    play(wire, target, target.showcase, Reply(transcript(target.showcase)), "sync")
    attributes = dict(only_span(otel).attributes or {})
    assert not any("request.reasoning" in key for key in attributes)


def test_a_budget_lowered_effort_is_the_one_on_the_span(otel: Otel) -> None:
    """The span states what the request asked for: the level the budget stepped down to."""
    with WireServer("openai_responses_followup") as server, o4_mini(server) as pipe:
        # 16 reasoning tokens spent of a 20-token cap: 80 %, two levels below "high".
        conversation = Conversation().add_user("hi").budget(reasoning_tokens=20)
        conversation.run(ScriptedPipe([UsageReport(Usage(reasoning_tokens=16)), "ok"]))
        conversation.add_user("more")
        conversation.run(pipe)
    (span,) = [span for span in otel.finished() if span.name == "chat o4-mini"]
    assert dict(span.attributes or {})["reasoning_stream.request.reasoning.level"] == "low"
    assert server.requests[0].json()["reasoning"]["effort"] == "low"
    assert pipe.reasoning == "high"
