"""Hidden reasoning: no markers in the channel, a ``ReasoningHidden`` to event callbacks.

API section 12: a segment the provider keeps hidden (a signature or encrypted payload only)
puts no markers in the channel; event callbacks get ``ReasoningHidden(duration, tokens)``.
Each case replays a wire transcript through the official SDK over the loopback WireServer:

* Anthropic ``display: "omitted"`` (the default of Claude Opus 4.7 and the 5.x models): a
  thinking block with an empty ``thinking`` and only a ``signature_delta``
  (https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking);
* Anthropic ``redacted_thinking``;
* a Responses reasoning item with only ``encrypted_content``, no summary and no text
  (https://platform.openai.com/docs/guides/reasoning#encrypted-reasoning-items);
* Bedrock Converse ``redactedContent``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import anyio
import openai
import pytest

from reasoning_stream import Event, ReasoningHidden, ReasoningStream
from reasoning_stream._pipe import PipeResult
from reasoning_stream.providers import AnthropicPipe, BedrockPipe, OpenAIResponsesPipe
from reasoning_stream.providers.anthropic import AnthropicTranslator
from reasoning_stream.testing._wire import WireServer
from tests.providers.conftest import bedrock_client, flavour_backend

anyio_backend = flavour_backend

THINKING = {"type": "enabled", "budget_tokens": 2048}


async def run(flavour: str, make: Callable[[bool], Any]) -> tuple[PipeResult, str, list[Event]]:
    """Build the pipe for ``flavour`` (``make(asynchronous)``) and run it, collecting the
    channel and the events."""
    pipe = make(flavour != "sync")
    chunks: list[str] = []
    events: list[Event] = []
    pipe.set_streaming_callback(chunks.append).set_event_callback(events.append)
    try:
        if flavour == "sync":
            result = await anyio.to_thread.run_sync(pipe.run, "hi")
        else:
            result = await pipe.arun("hi")
    finally:
        closed = pipe.client.close() if hasattr(pipe.client, "close") else None
        if hasattr(closed, "__await__"):
            await closed
    return result, "".join(chunks), events


def hidden(events: list[Event]) -> list[ReasoningHidden]:
    return [event for event in events if isinstance(event, ReasoningHidden)]


def no_markers(channel: str) -> None:
    assert ReasoningStream.OPEN_TAG not in channel
    assert ReasoningStream.CLOSE_TAG not in channel


def anthropic_pipe(server: WireServer) -> Callable[[bool], AnthropicPipe]:
    def make(asynchronous: bool) -> AnthropicPipe:
        kind = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        client = kind(base_url=server.url, api_key="k", max_retries=0)
        return AnthropicPipe("claude-opus-5", client=client, thinking=THINKING)

    return make


@pytest.mark.anyio
async def test_anthropic_omitted_thinking_is_reported_hidden_with_its_tokens(
    flavour: str,
) -> None:
    with WireServer("anthropic_signature_only") as server:
        result, channel, events = await run(flavour, anthropic_pipe(server))
    assert channel == "Paris is the capital of France."
    no_markers(channel)
    (event,) = hidden(events)
    assert event.tokens == 49 == result.usage.reasoning_tokens
    assert 0.0 <= event.duration < 5.0
    # The signature still goes on the result, for the next request.
    assert [state.kind for state in result.reasoning_state] == ["signature"]


@pytest.mark.anyio
async def test_anthropic_redacted_thinking_is_reported_hidden(flavour: str) -> None:
    with WireServer("anthropic_redacted") as server:
        result, channel, events = await run(flavour, anthropic_pipe(server))
    no_markers(channel)
    assert [(type(e).__name__, e.tokens) for e in hidden(events)] == [("ReasoningHidden", None)]
    assert [state.kind for state in result.reasoning_state] == ["redacted"]


@pytest.mark.anyio
async def test_visible_thinking_is_never_reported_hidden(flavour: str) -> None:
    with WireServer("anthropic_thinking") as server:
        result, channel, events = await run(flavour, anthropic_pipe(server))
    assert result.model_reasoning and ReasoningStream.OPEN_TAG in channel
    assert hidden(events) == []


def test_the_duration_runs_from_the_block_start_to_its_stop() -> None:
    """The translator reads its clock at the hidden block's start and stop, nowhere else."""
    ticks = iter([100.0, 104.25])
    translator = AnthropicTranslator(model="claude-opus-5", clock=lambda: next(ticks))
    events: list[Event] = []
    for event in (
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "signature_delta", "signature": "c2ln"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "A"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
         "usage": {"output_tokens": 9, "output_tokens_details": {"thinking_tokens": 7}}},
    ):  # fmt: skip
        events += translator.feed(event)
    assert hidden(events) == [ReasoningHidden(4.25, 7)]


def responses_pipe(server: WireServer) -> Callable[[bool], OpenAIResponsesPipe]:
    def make(asynchronous: bool) -> OpenAIResponsesPipe:
        kind = openai.AsyncOpenAI if asynchronous else openai.OpenAI
        client = kind(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
        return OpenAIResponsesPipe("o4-mini", client=client)

    return make


@pytest.mark.anyio
async def test_a_responses_item_with_only_encrypted_content_is_reported_hidden(
    flavour: str,
) -> None:
    with WireServer("openai_responses_encrypted_only") as server:
        result, channel, events = await run(flavour, responses_pipe(server))
    no_markers(channel)
    assert result.text == "Write <think> to open a block; done."
    (event,) = hidden(events)
    assert event.tokens == 192
    assert [state.kind for state in result.reasoning_state] == ["encrypted"]


@pytest.mark.anyio
async def test_responses_summaries_are_shown_not_hidden(flavour: str) -> None:
    with WireServer("openai_responses_summary") as server:
        result, _, events = await run(flavour, responses_pipe(server))
    assert result.model_reasoning
    assert hidden(events) == []


@pytest.mark.anyio
async def test_bedrock_redacted_content_is_reported_hidden(flavour: str) -> None:
    with WireServer("bedrock_converse_redacted") as server:

        def make(asynchronous: bool) -> BedrockPipe:
            model = "us.anthropic.claude-sonnet-4-20250514-v1:0"
            return BedrockPipe(model, client=bedrock_client(server))

        result, channel, events = await run(flavour, make)
    assert channel == "Here is the answer."
    (event,) = hidden(events)
    assert event.tokens is None
    assert [state.kind for state in result.reasoning_state] == ["redacted"]
