"""AnthropicPipe through the real anthropic SDK (sync, and async on asyncio and trio).

Every stream test runs three times: ``run()`` with ``anthropic.Anthropic``, and ``arun()`` with
``anthropic.AsyncAnthropic`` on asyncio and on trio, against WireServer replaying the bundled
``anthropic_*`` transcripts at ``POST /v1/messages``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic
import anyio
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning_stream import ReasoningStream
from reasoning_stream._events import (
    Finish,
    OpaqueState,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    ToolCall,
    Usage,
    UsageReport,
)
from reasoning_stream._exceptions import ProviderError, UsageError
from reasoning_stream._pipe import PipeResult
from reasoning_stream._turns import HistoryTurn
from reasoning_stream.providers import AnthropicPipe
from reasoning_stream.providers.anthropic import AnthropicTranslator
from reasoning_stream.testing._wire import Transcript, WireServer
from tests.helpers import examples
from tests.providers.conftest import assert_channel_matches, flavour_backend

OPEN = ReasoningStream.OPEN_TAG
CLOSE = ReasoningStream.CLOSE_TAG
MODEL = "claude-sonnet-4-6"
THINKING = {"type": "enabled", "budget_tokens": 2048}

anyio_backend = flavour_backend
"""Each flavour's event loop, under the name the anyio plugin asks for."""


# ----------------------------------------------------------------------------- drivers


@dataclass
class Drive:
    """Builds a pipe for the flavour under test and runs it."""

    flavour: str
    clients: list[Any] = field(default_factory=list)

    def client(self, server: WireServer) -> Any:
        client_class = anthropic.Anthropic if self.flavour == "sync" else anthropic.AsyncAnthropic
        client = client_class(base_url=server.url, api_key="test-key", max_retries=0)
        self.clients.append(client)
        return client

    async def aclose(self) -> None:
        # An async client left to the garbage collector closes itself on whatever asyncio
        # loop runs then (a later test's), which breaks; close each on its own loop.
        for client in self.clients:
            if self.flavour == "sync":
                client.close()
            else:
                await client.close()

    def pipe(self, server: WireServer, **options: Any) -> tuple[AnthropicPipe, list[str]]:
        chunks: list[str] = []
        options.setdefault("thinking", THINKING)
        pipe = AnthropicPipe(MODEL, client=self.client(server), **options)
        pipe.set_streaming_callback(chunks.append)
        return pipe, chunks

    async def run(self, pipe: AnthropicPipe, prompt: Any) -> PipeResult:
        if self.flavour == "sync":
            return await anyio.to_thread.run_sync(pipe.run, prompt)
        return await pipe.arun(prompt)


@pytest.fixture
async def drive(flavour: str) -> AsyncIterator[Drive]:
    driver = Drive(flavour)
    try:
        yield driver
    finally:
        await driver.aclose()


# ----------------------------------------------------------------------------- helpers


def transcript_events(name: str) -> list[dict[str, Any]]:
    """The ``data`` objects of a bundled SSE transcript, in order."""
    return [event["data"] for event in Transcript.load(name).events]


def blocks_from_transcript(name: str) -> list[dict[str, Any]]:
    """The content blocks a transcript streams, accumulated independently of the pipe."""
    blocks: dict[int, dict[str, Any]] = {}
    json_parts: dict[int, list[str]] = {}
    for data in transcript_events(name):
        if data["type"] == "content_block_start":
            blocks[data["index"]] = dict(data["content_block"])
        elif data["type"] == "content_block_delta":
            block, delta = blocks[data["index"]], data["delta"]
            if delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                json_parts.setdefault(data["index"], []).append(delta["partial_json"])
    for index, parts in json_parts.items():
        blocks[index]["input"] = json.loads("".join(parts))
    return [blocks[index] for index in sorted(blocks)]


def assert_secrets_hidden(chunks: Sequence[str], result: PipeResult) -> None:
    channel = "".join(chunks)
    assert result.reasoning_state
    for state in result.reasoning_state:
        assert isinstance(state.payload, str) and state.payload
        assert state.payload not in channel
        assert state.payload not in repr(result)


def sent_body(server: WireServer, index: int = 0) -> dict[str, Any]:
    request = server.requests[index]
    assert (request.method, request.path) == ("POST", "/v1/messages")
    body: dict[str, Any] = request.json()
    return body


# ------------------------------------------------------------------------------ streams


@pytest.mark.anyio
async def test_thinking_then_answer(drive: Drive) -> None:
    with WireServer("anthropic_thinking") as server:
        pipe, chunks = drive.pipe(server)
        result = await drive.run(pipe, "What is 17 * 23?")
        url = server.url
    reasoning = "The user asks for 17 * 23. 17 * 20 = 340 and 17 * 3 = 51, so 340 + 51 = 391."
    assert "".join(chunks) == f"{OPEN}{reasoning}{CLOSE}17 * 23 = **391** (340 + 51)."
    assert result.text == "17 * 23 = **391** (340 + 51)."
    assert result.model_reasoning == reasoning
    assert result.reasoning_segments == (reasoning,)
    assert result.tool_calls == ()
    assert result.status == "completed"
    assert result.finish_reason == "stop"
    assert result.response_id == "msg_01ThinkingAnswer7x9"
    # input_tokens adds the cache reads (45 + 12); thinking tokens come from the details.
    assert result.usage == Usage(
        input_tokens=57,
        output_tokens=96,
        reasoning_tokens=71,
        cache_read_tokens=12,
        cache_write_tokens=0,
    )
    (state,) = result.reasoning_state
    expected = blocks_from_transcript("anthropic_thinking")[0]
    assert (state.provider, state.model, state.kind, state.block) == (
        "anthropic",
        MODEL,
        "signature",
        0,
    )
    assert state.payload == expected["signature"]
    # Where the block sat in the message: no answer text and no tool call before it.
    assert state.extra == {"thinking": expected["thinking"], "text_offset": 0, "call_index": 0}
    assert state.endpoint == pipe.endpoint == url
    assert_secrets_hidden(chunks, result)
    assert_channel_matches(chunks, result)
    assert pipe.last_result is result
    body = sent_body(server)
    assert body["model"] == MODEL
    assert body["stream"] is True
    assert body["thinking"] == THINKING
    assert body["max_tokens"] > THINKING["budget_tokens"]
    assert body["messages"] == [{"role": "user", "content": "What is 17 * 23?"}]


@pytest.mark.anyio
async def test_interleaved_thinking_around_tool_use(drive: Drive) -> None:
    """Two thinking blocks become two segments; every opaque block is kept, in order."""
    with WireServer("anthropic_interleaved_tool") as server:
        pipe, chunks = drive.pipe(server)
        result = await drive.run(pipe, "Weather in Paris?")
    first = "The user wants the weather in Paris (Île-de-France). I have a get_weather tool."
    second = "Celsius suits a Paris question."
    assert "".join(chunks) == f"{OPEN}{first}{CLOSE}Let me look that up.{OPEN}{second}{CLOSE}"
    assert result.reasoning_segments == (first, second)
    assert result.model_reasoning == f"{first}\n{second}"
    assert result.text == "Let me look that up."
    assert result.tool_calls == (
        ToolCall(
            "toolu_01A09q90qw90lq917835lq9",
            "get_weather",
            '{"location": "Paris, France", "unit": "celsius"}',
        ),
    )
    assert result.finish_reason == "tool_calls"
    assert result.status == "completed"
    assert result.usage == Usage(
        input_tokens=310,
        output_tokens=141,
        reasoning_tokens=58,
        cache_read_tokens=0,
        cache_write_tokens=0,
    )
    blocks = blocks_from_transcript("anthropic_interleaved_tool")
    assert [(s.kind, s.block) for s in result.reasoning_state] == [
        ("signature", 0),
        ("redacted", 1),
        ("signature", 3),
    ]
    thinking0, redacted, thinking3 = result.reasoning_state
    assert (thinking0.payload, thinking0.extra["thinking"]) == (
        blocks[0]["signature"],
        blocks[0]["thinking"],
    )
    assert redacted.payload == blocks[1]["data"]
    assert (thinking3.payload, thinking3.extra["thinking"]) == (
        blocks[3]["signature"],
        blocks[3]["thinking"],
    )
    assert result.message["tool_calls"][0]["function"]["name"] == "get_weather"
    assert_secrets_hidden(chunks, result)
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_redacted_thinking_is_opaque(drive: Drive) -> None:
    with WireServer("anthropic_redacted") as server:
        pipe, chunks = drive.pipe(server)
        result = await drive.run(pipe, "hi")
    assert chunks == ["Here is my answer."]
    assert result.text == "Here is my answer."
    assert result.model_reasoning == ""
    assert result.reasoning_segments == ()
    (state,) = result.reasoning_state
    assert (state.kind, state.block) == ("redacted", 0)
    assert state.payload == blocks_from_transcript("anthropic_redacted")[0]["data"]
    assert result.usage == Usage(
        input_tokens=38, output_tokens=52, cache_read_tokens=0, cache_write_tokens=0
    )
    assert_secrets_hidden(chunks, result)
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_signature_only_thinking_leaves_no_markers(drive: Drive) -> None:
    """Thinking with ``display: "omitted"``: the state is kept, the channel sees only text."""
    with WireServer("anthropic_signature_only") as server:
        pipe, chunks = drive.pipe(server)
        result = await drive.run(pipe, "Capital of France?")
    assert chunks == ["Paris is the capital of France."]
    assert result.reasoning_segments == ()
    assert result.model_reasoning == ""
    assert result.timings.time_to_first_reasoning is None
    (state,) = result.reasoning_state
    assert (state.kind, state.block, state.extra) == (
        "signature",
        0,
        {"thinking": "", "text_offset": 0, "call_index": 0},
    )
    assert result.usage.reasoning_tokens == 49
    assert "thinking" not in result.message
    assert_secrets_hidden(chunks, result)
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_no_thinking_no_marker_byte(drive: Drive) -> None:
    with WireServer("anthropic_no_thinking") as server:
        pipe, chunks = drive.pipe(server, thinking=None)
        result = await drive.run(pipe, "Hello")
    assert "".join(chunks) == "Hello! How can I help <you> today?"
    assert OPEN not in "".join(chunks) and CLOSE not in "".join(chunks)
    assert result.text == "Hello! How can I help <you> today?"
    assert (result.model_reasoning, result.reasoning_segments, result.reasoning_state) == (
        "",
        (),
        (),
    )
    # 9 fresh + 100 written to the cache + 2048 read from it.
    assert result.usage == Usage(
        input_tokens=2157, output_tokens=12, cache_read_tokens=2048, cache_write_tokens=100
    )
    assert result.finish_reason == "stop"
    assert_channel_matches(chunks, result)
    assert "thinking" not in sent_body(server)


@pytest.mark.anyio
async def test_max_tokens_stop_is_length(drive: Drive) -> None:
    with WireServer("anthropic_max_tokens") as server:
        pipe, chunks = drive.pipe(server)
        result = await drive.run(pipe, "Tell me a long story.")
    reasoning = "A long story is wanted. The prompt quotes a </think> tag; tell the story anyway."
    assert result.status == "length"
    assert result.finish_reason == "length"
    assert result.text == "Once upon a time, there"
    assert result.model_reasoning == reasoning
    # The quoted tag is escaped in the channel, so it cannot close the segment early.
    assert "".join(chunks) == (
        f"{OPEN}A long story is wanted. The prompt quotes a <\\/think> tag; tell the story "
        f"anyway.{CLOSE}Once upon a time, there"
    )
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_streaming_flag_off_keeps_capture(drive: Drive) -> None:
    with WireServer("anthropic_thinking", "anthropic_thinking") as server:
        on, on_chunks = drive.pipe(server)
        expected = await drive.run(on, "What is 17 * 23?")
        off, off_chunks = drive.pipe(server)
        off.set_stream_model_reasoning(False)
        result = await drive.run(off, "What is 17 * 23?")
    assert "".join(off_chunks) == expected.text == result.text
    assert OPEN not in "".join(off_chunks) and "17 * 20" not in "".join(off_chunks)
    assert OPEN in "".join(on_chunks)
    assert result.model_reasoning == expected.model_reasoning
    assert result.reasoning_segments == expected.reasoning_segments
    assert result.reasoning_state == expected.reasoning_state
    assert result.usage == expected.usage
    assert result.status == expected.status


# ------------------------------------------------------------------------------- errors


@pytest.mark.anyio
async def test_error_event_mid_stream(drive: Drive) -> None:
    """``event: error`` after some thinking: ProviderError, reasoning kept, markers closed."""
    with WireServer("anthropic_overloaded_midstream") as server:
        pipe, chunks = drive.pipe(server)
        with pytest.raises(ProviderError) as caught:
            await drive.run(pipe, "Think hard.")
    error = caught.value
    assert isinstance(error.__cause__, anthropic.APIStatusError)
    assert error.provider == "anthropic"
    assert error.status_code == 529
    assert error.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    assert "overloaded_error" in str(error)
    result = error.result
    assert result is not None and result is pipe.last_result
    assert result.status == "error"
    assert result.model_reasoning == "Let me think about this carefully."
    assert result.text == ""
    assert result.response_id == "msg_01Overloaded00099"
    assert "".join(chunks) == f"{OPEN}Let me think about this carefully.{CLOSE}"
    assert chunks[-1] == CLOSE
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_connection_cut_inside_an_event(drive: Drive) -> None:
    body = Transcript.load("anthropic_thinking").encode()
    # Inside the third thinking delta's data line: the SSE event never completes.
    cut = body.index(b"so 340 + 51")
    with WireServer() as server:
        server.add("anthropic_thinking", disconnect_at_byte=cut)
        pipe, chunks = drive.pipe(server)
        with pytest.raises(ProviderError) as caught:
            await drive.run(pipe, "What is 17 * 23?")
    error = caught.value
    assert isinstance(error.__cause__, httpx2.TransportError | anthropic.APIConnectionError)
    assert error.status_code is None
    result = error.result
    assert result is not None and result is pipe.last_result
    assert result.status == "error"
    assert result.model_reasoning == "The user asks for 17 * 23. 17 * 20 = 340 and 17 * 3 = 51,"
    assert result.reasoning_state == ()
    assert chunks[-1] == CLOSE
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("transcript", "status", "error_type", "retry_after"),
    [
        ("anthropic_rate_limited", 429, "rate_limit_error", 17.0),
        ("anthropic_overloaded_http", 529, "overloaded_error", None),
    ],
)
async def test_http_error_status(
    drive: Drive, transcript: str, status: int, error_type: str, retry_after: float | None
) -> None:
    with WireServer(transcript) as server:
        pipe, chunks = drive.pipe(server)
        with pytest.raises(ProviderError) as caught:
            await drive.run(pipe, "hi")
    error = caught.value
    assert isinstance(error.__cause__, anthropic.APIStatusError)
    assert error.status_code == status
    assert error.retry_after == retry_after
    assert isinstance(error.body, dict) and error.body["error"]["type"] == error_type
    assert error_type in str(error) and f"HTTP {status}" in str(error)
    assert chunks == []
    assert error.result is not None and error.result.status == "error"
    assert len(server.requests) == 1


# ------------------------------------------------------------------------------ passback


class History:
    """A stand-in for a conversation: hands the pipe prepared turns."""

    def __init__(self, turns: list[HistoryTurn]) -> None:
        self._turns = turns

    def turns_for(self, pipe: Any) -> list[HistoryTurn]:
        return self._turns


@pytest.mark.anyio
async def test_states_go_back_in_the_order_of_the_tool_use_turn(drive: Drive) -> None:
    with WireServer("anthropic_interleaved_tool", "anthropic_tool_answer") as server:
        pipe, _ = drive.pipe(server)
        first = await drive.run(pipe, "Weather in Paris?")
        call = first.tool_calls[0]
        history = History(
            [
                HistoryTurn({"role": "system", "content": "You are terse."}),
                HistoryTurn({"role": "user", "content": "Weather in Paris?"}),
                HistoryTurn(first.message, states=first.reasoning_state),
                HistoryTurn({"role": "tool", "tool_call_id": call.id, "content": "18 °C, sunny"}),
            ]
        )
        chunks: list[str] = []
        pipe.set_streaming_callback(chunks.append)
        second = await drive.run(pipe, history)
    assert second.text == "It is 18 °C and sunny in Paris."
    body = sent_body(server, 1)
    assert body["system"] == "You are terse."
    blocks = blocks_from_transcript("anthropic_interleaved_tool")
    thinking0, redacted, text, thinking3, tool_use = blocks
    assert body["messages"] == [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            # Exactly the order of the response (rule 1 of issue #11).
            "content": [
                thinking0,
                redacted,
                {"type": "text", "text": text["text"]},
                thinking3,
                tool_use,
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "18 °C, sunny"}],
        },
    ]
    assert thinking0 == {
        "type": "thinking",
        "thinking": (
            "The user wants the weather in Paris (Île-de-France). I have a get_weather tool."
        ),
        "signature": thinking0["signature"],
    }
    assert redacted["type"] == "redacted_thinking"
    # The opaque strings reach the wire exactly as they arrived.
    raw = server.requests[1].body
    for secret in (thinking0["signature"], redacted["data"], thinking3["signature"]):
        assert json.dumps(secret).encode() in raw


# ---------------------------------------------------------------------- clients and setup


@pytest.mark.anyio
async def test_pipe_builds_its_client_from_base_url(drive: Drive) -> None:
    with WireServer("anthropic_no_thinking") as server:
        pipe = AnthropicPipe(MODEL, base_url=server.url + "/", api_key="sk-test")
        result = await drive.run(pipe, "Hello")
    assert result.text == "Hello! How can I help <you> today?"
    request = server.requests[0]
    assert request.path == "/v1/messages"
    headers = request.headers
    assert headers.get("x-api-key") == "sk-test" or headers.get("authorization") == "Bearer sk-test"
    assert "anthropic-version" in headers
    assert "sk-test" not in repr(pipe)


@pytest.mark.anyio
async def test_run_with_only_an_async_client_says_what_to_do(anyio_backend: str) -> None:
    client = anthropic.AsyncAnthropic(api_key="k")
    pipe = AnthropicPipe(MODEL, client=client)
    with pytest.raises(UsageError, match="arun"):
        await anyio.to_thread.run_sync(pipe.run, "hi")
    assert pipe.last_result is not None and pipe.last_result.status == "error"
    await client.close()


@pytest.mark.anyio
async def test_arun_with_only_a_sync_client_uses_a_worker_thread(anyio_backend: str) -> None:
    with WireServer("anthropic_thinking") as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
        chunks: list[str] = []
        pipe = AnthropicPipe(MODEL, client=client).set_streaming_callback(chunks.append)
        result = await pipe.arun("What is 17 * 23?")
    assert result.text == "17 * 23 = **391** (340 + 51)."
    assert len(result.reasoning_state) == 1
    assert_channel_matches(chunks, result)


@settings(
    max_examples=examples(8),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(chunk_size=st.integers(min_value=1, max_value=48))
def test_rechunked_bytes_give_the_same_result(chunk_size: int) -> None:
    """However the server splits the bytes (inside UTF-8 characters too), nothing changes."""
    with WireServer() as server:
        server.add("anthropic_interleaved_tool", chunk_size=chunk_size)
        client = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
        chunks: list[str] = []
        pipe = AnthropicPipe(MODEL, client=client).set_streaming_callback(chunks.append)
        result = pipe.run("Weather in Paris?")
    assert result.text == "Let me look that up."
    assert len(result.reasoning_segments) == 2
    assert [s.kind for s in result.reasoning_state] == ["signature", "redacted", "signature"]
    assert result.tool_calls[0].arguments == '{"location": "Paris, France", "unit": "celsius"}'
    assert_channel_matches(chunks, result)


# ------------------------------------------------------------------------ request building


def test_request_converts_canonical_messages() -> None:
    pipe = AnthropicPipe(MODEL, extra_body={"metadata": {"user_id": "u1"}})
    calls = [
        {"id": "toolu_1", "type": "function", "function": {"name": "a", "arguments": '{"x": 1}'}},
        {"id": "toolu_2", "type": "function", "function": {"name": "b", "arguments": ""}},
    ]
    body = pipe.build_request(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "system", "content": "Use metric units."},
            {"role": "user", "content": "Go."},
            {"role": "assistant", "content": "", "tool_calls": calls, "thinking": "inert"},
            {"role": "tool", "tool_call_id": "toolu_1", "content": "one"},
            {"role": "tool", "tool_call_id": "toolu_2", "content": "two"},
            {"role": "user", "content": [{"type": "text", "text": "And?"}]},
        ]
    )
    assert body == {
        "model": MODEL,
        "max_tokens": 4096,
        "system": [
            {"type": "text", "text": "Be brief."},
            {"type": "text", "text": "Use metric units."},
        ],
        "messages": [
            {"role": "user", "content": "Go."},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "a", "input": {"x": 1}},
                    {"type": "tool_use", "id": "toolu_2", "name": "b", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "one"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "two"},
                ],
            },
            {"role": "user", "content": [{"type": "text", "text": "And?"}]},
        ],
        "metadata": {"user_id": "u1"},
    }


def test_request_keeps_max_tokens_above_the_thinking_budget() -> None:
    assert AnthropicPipe(MODEL).build_request("x")["max_tokens"] == 4096
    assert AnthropicPipe(MODEL, thinking=THINKING).build_request("x")["max_tokens"] == 6144
    big = {"type": "enabled", "budget_tokens": 10000}
    assert AnthropicPipe(MODEL, thinking=big).build_request("x")["max_tokens"] == 14096
    assert (
        AnthropicPipe(MODEL, thinking=big, max_tokens=12000).build_request("x")["max_tokens"]
        == 12000
    )
    with pytest.raises(UsageError, match="budget"):
        AnthropicPipe(MODEL, thinking=big, max_tokens=10000).build_request("x")


def test_request_rejects_tool_arguments_that_are_not_an_object() -> None:
    call = {"id": "t", "type": "function", "function": {"name": "f", "arguments": "[1"}}
    with pytest.raises(UsageError, match="JSON"):
        AnthropicPipe(MODEL).build_request([{"role": "assistant", "tool_calls": [call]}])


# ------------------------------------------------------------------------ the translator


def translate(events: list[dict[str, Any]]) -> Iterator[Any]:
    translator = AnthropicTranslator(model=MODEL, endpoint="https://api.anthropic.com")
    for event in events:
        yield from translator.feed(event)
    yield from translator.finish()


def test_translator_ignores_unknown_events_and_null_text() -> None:
    events = list(
        translate(
            [
                {"type": "ping"},
                {"type": "future_event", "payload": {"a": 1}},
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": None},
                },
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": None},
                },
                {"type": "content_block_delta", "index": 0, "delta": {"type": "future_delta"}},
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "ok"},
                },
                {"type": "content_block_stop", "index": 0},
                {"type": "message_delta", "delta": {"stop_reason": "refusal"}, "usage": None},
            ]
        )
    )
    assert events == [TextDelta("ok"), Finish("refusal")]


def test_translator_finish_closes_blocks_left_open() -> None:
    events = list(
        translate(
            [
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                },
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "hm"},
                },
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "f",
                        "input": {"q": 1},
                    },
                },
            ]
        )
    )
    # The unsigned thinking block cannot be sent back, so it leaves no state.
    assert events == [
        ReasoningStart(),
        ReasoningDelta("hm"),
        ReasoningEnd(),
        ToolCall("t1", "f", '{"q": 1}'),
    ]


def test_translator_raises_for_an_error_event() -> None:
    error_event = {"type": "error", "error": {"type": "api_error", "message": "Internal"}}
    translator = AnthropicTranslator(model=MODEL)
    with pytest.raises(ProviderError) as caught:
        translator.feed(error_event)
    assert caught.value.status_code == 500
    assert caught.value.body == error_event


def test_translator_states_and_usage_from_dicts() -> None:
    translator = AnthropicTranslator(model=MODEL, endpoint="https://api.anthropic.com")
    start = {
        "type": "message_start",
        "message": {"id": "msg_1", "usage": {"input_tokens": 3, "output_tokens": 1}},
    }
    assert translator.feed(start) == [UsageReport(Usage(input_tokens=3, output_tokens=1))]
    assert translator.response_id == "msg_1"
    redacted = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "redacted_thinking", "data": "opaque"},
    }
    (event,) = translator.feed(redacted)
    assert isinstance(event, OpaqueState)
    assert (event.state.kind, event.state.payload, event.state.block) == ("redacted", "opaque", 0)
    assert event.state.endpoint == "https://api.anthropic.com"
