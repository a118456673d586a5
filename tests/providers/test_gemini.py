"""GeminiPipe over real httpx + httpx-sse (sync and async clients) against WireServer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from reasoning_stream import (
    Finish,
    MalformedStreamError,
    OpaqueState,
    ProviderError,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningState,
    ReasoningStream,
    TextDelta,
    ToolCall,
    Usage,
    UsageError,
    UsageReport,
)
from reasoning_stream._turns import HistoryTurn
from reasoning_stream.providers import GeminiPipe
from reasoning_stream.providers.gemini import GeminiTranslator
from reasoning_stream.testing._wire import Reply, Transcript, WireServer
from tests.providers.conftest import Mode, assert_channel_matches, drive

OPEN = ReasoningStream.OPEN_TAG
CLOSE = ReasoningStream.CLOSE_TAG
KEY = "test-gemini-key-123"


THOUGHT_SIG = "CiQB0e2Kb3RoaW5rLXNpZy1vbi10aG91Z2h0LXBhcnQ="
EMPTY_SIG = "CiQB0e2KZW1wdHktdGV4dC1wYXJ0LXNpZ25hdHVyZQ=="
CALL_SIG = "EjQKMgHR7YpmdW5jdGlvbi1jYWxsLXBhcmlzLXNpZ25hdHVyZQ=="
THOUGHT_SIG_2 = "EjQKMgHR7YpzZWNvbmQtdGhvdWdodC1zaWduYXR1cmU="
TEXT_SIG = "CiIB0e2KdGV4dC1wYXJ0LXNpZ25hdHVyZQ=="

REASONING = "**Adding numbers**\n\nThe user wants 2+2. That is <thinking> basic arithmetic."


@asynccontextmanager
async def served(mode: Mode, *replies: Any) -> AsyncIterator[tuple[WireServer, Any]]:
    """A WireServer with ``replies`` and the httpx client that ``mode`` needs."""
    async with WireServer(*replies) as server:
        if mode == "run":
            with httpx.Client() as client:
                yield server, client
        else:
            async with httpx.AsyncClient() as async_client:
                yield server, async_client


def gemini(server: WireServer, model: str, client: Any = None, **options: Any) -> GeminiPipe:
    options.setdefault("api_key", KEY)
    return GeminiPipe(model, client=client, base_url=server.url + "/v1beta", **options)


def assert_opaque(chunks: list[str], result: Any) -> None:
    """Signatures are on the result only: not in the channel, not in any repr."""
    channel = "".join(chunks)
    for state in result.reasoning_state:
        assert state.payload not in channel
        assert state.payload not in repr(state)
        assert state.payload not in repr(result)


# ----------------------------------------------------------------------------- streaming


@pytest.mark.anyio
async def test_reasoning_then_answer(mode: Mode) -> None:
    async with served(mode, "gemini_reasoning") as (server, client):
        chunks: list[str] = []
        pipe = gemini(server, "gemini-2.5-flash", client).set_streaming_callback(chunks.append)
        result = await drive(pipe, "What is 2+2?", mode)
        base = server.url + "/v1beta"

    assert "".join(chunks) == (
        OPEN
        + "**Adding numbers**\n\nThe user wants 2+2. That is <\\thinking> basic arithmetic."
        + CLOSE
        + "2 + 2 = 4."
    )
    assert result.text == "2 + 2 = 4."
    assert result.model_reasoning == REASONING
    assert result.reasoning_segments == (REASONING,)
    assert result.tool_calls == ()
    assert result.usage == Usage(input_tokens=9, output_tokens=31, reasoning_tokens=24)
    assert result.status == "completed"
    assert result.finish_reason == "stop"
    assert result.response_id == "mK1aaPqGL9ayz7IP5JbX0Qs"
    assert result.reasoning_state == (
        ReasoningState(
            "gemini",
            "gemini-2.5-flash",
            "signature",
            THOUGHT_SIG,
            block="0:1",
            endpoint=base,
            extra={"part": "thought", "text_offset": 0, "call_index": 0},
        ),
        ReasoningState(
            "gemini",
            "gemini-2.5-flash",
            "signature",
            EMPTY_SIG,
            block="0:4",
            endpoint=base,
            extra={"part": "empty", "text_offset": 10, "call_index": 0},
        ),
    )
    assert_opaque(chunks, result)
    assert_channel_matches(chunks, result)

    [request] = server.requests
    assert request.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == KEY
    assert KEY not in request.path
    assert request.json() == {
        "contents": [{"role": "user", "parts": [{"text": "What is 2+2?"}]}],
        "generationConfig": {"thinkingConfig": {"includeThoughts": True}},
    }


@pytest.mark.anyio
async def test_reasoning_around_tool_calls(mode: Mode) -> None:
    async with served(mode, "gemini_tool_call") as (server, client):
        chunks: list[str] = []
        pipe = gemini(server, "gemini-3-pro-preview", client)
        result = await drive(pipe.set_streaming_callback(chunks.append), "Weather?", mode)
        base = server.url + "/v1beta"

    assert "".join(chunks) == (
        OPEN + "I need the weather for Paris." + CLOSE + OPEN + "Tokyo as well." + CLOSE
    )
    assert result.reasoning_segments == ("I need the weather for Paris.", "Tokyo as well.")
    assert result.model_reasoning == "I need the weather for Paris.\nTokyo as well."
    assert result.text == ""
    assert result.tool_calls == (
        ToolCall("call_0", "get_weather", '{"city": "Paris", "unit": "celsius"}'),
        ToolCall("call_1", "get_weather", '{"city": "Tokyo"}'),
    )
    assert result.usage == Usage(input_tokens=50, output_tokens=84, reasoning_tokens=64)
    assert result.finish_reason == "stop"
    call_state, thought_state = result.reasoning_state
    assert call_state == ReasoningState(
        "gemini",
        "gemini-3-pro-preview",
        "signature",
        CALL_SIG,
        block="0:1",
        endpoint=base,
        extra={
            "part": "function_call",
            "name": "get_weather",
            "call_id": "call_0",
            "text_offset": 0,
            "call_index": 0,
        },
    )
    assert (thought_state.payload, thought_state.block, thought_state.extra["part"]) == (
        THOUGHT_SIG_2,
        "0:2",
        "thought",
    )
    assert_opaque(chunks, result)
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_no_reasoning_sends_no_marker_and_keeps_a_text_signature(mode: Mode) -> None:
    async with served(mode, "gemini_plain") as (server, client):
        chunks: list[str] = []
        pipe = gemini(server, "gemini-2.0-flash", client)
        result = await drive(pipe.set_streaming_callback(chunks.append), "hi", mode)

    assert chunks == ["Hello", ", world!"]
    assert result.text == "Hello, world!"
    assert result.model_reasoning == ""
    assert result.reasoning_segments == ()
    assert result.usage == Usage(input_tokens=4, output_tokens=4, reasoning_tokens=None)
    [state] = result.reasoning_state
    assert (state.payload, state.block, state.extra["part"]) == (TEXT_SIG, "0:0", "text")
    assert_opaque(chunks, result)
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_error_event_mid_stream(mode: Mode) -> None:
    async with served(mode, "gemini_error_midstream") as (server, client):
        chunks: list[str] = []
        pipe = gemini(server, "gemini-2.5-flash", client).set_streaming_callback(chunks.append)
        with pytest.raises(ProviderError) as caught:
            await drive(pipe, "go", mode)

    error = caught.value
    assert "An internal error has occurred" in str(error)
    assert "INTERNAL" in str(error)
    assert error.status_code == 500
    assert error.provider == "gemini"
    result = error.result
    assert result is not None
    assert result is pipe.last_result
    assert result.status == "error"
    assert result.model_reasoning == "Working on it"
    assert result.text == ""
    assert "".join(chunks) == OPEN + "Working on it" + CLOSE
    split = ReasoningStream.split("".join(chunks), lossless=True)
    assert not split.truncated
    assert (split.reasoning, split.text) == (result.model_reasoning, result.text)


@pytest.mark.anyio
async def test_connection_cut_inside_an_event(mode: Mode) -> None:
    transcript = Transcript.load("gemini_reasoning")
    lengths = [len(chunk) for chunk in transcript.chunks()]
    cut = sum(lengths[:2]) + lengths[2] // 2  # inside the first answer event
    async with served(mode, Reply(transcript, disconnect_at_byte=cut)) as (server, client):
        chunks: list[str] = []
        pipe = gemini(server, "gemini-2.5-flash", client).set_streaming_callback(chunks.append)
        with pytest.raises(ProviderError) as caught:
            await drive(pipe, "go", mode)

    result = caught.value.result
    assert result is not None
    assert result.status == "error"
    assert result.model_reasoning == REASONING
    assert result.text == ""
    assert [s.payload for s in result.reasoning_state] == [THOUGHT_SIG]
    assert "".join(chunks).endswith(CLOSE)
    assert KEY not in str(caught.value)
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_http_error_status_with_retry_delay(mode: Mode) -> None:
    async with served(mode, "gemini_http_error") as (server, client):
        pipe = gemini(server, "gemini-2.5-flash", client)
        with pytest.raises(ProviderError) as caught:
            await drive(pipe, "hi", mode)

    error = caught.value
    assert error.status_code == 429
    assert error.retry_after == 7.0
    assert "RESOURCE_EXHAUSTED" in str(error)
    assert "exceeded your current quota" in str(error)
    assert error.result is not None
    assert error.result.status == "error"


@pytest.mark.anyio
async def test_api_key_never_appears_in_a_provider_error(mode: Mode) -> None:
    key = "AIzaFAKE-test-key-0001"  # the transcript's server echoes this key back
    async with served(mode, "gemini_bad_key") as (server, client):
        pipe = gemini(server, "gemini-2.5-flash", client, api_key=key)
        with pytest.raises(ProviderError) as caught:
            await drive(pipe, "hi", mode)
        [request] = server.requests

    error = caught.value
    assert error.status_code == 400
    assert "API key not valid" in str(error)
    assert key not in str(error)
    assert key not in repr(error)
    assert key not in json.dumps(error.body)
    assert key not in request.path
    assert request.headers["x-goog-api-key"] == key


@pytest.mark.anyio
async def test_flag_off_keeps_reasoning_out_of_the_channel(mode: Mode) -> None:
    async with served(mode, "gemini_reasoning") as (server, client):
        on_chunks: list[str] = []
        on_pipe = gemini(server, "gemini-2.5-flash", client).set_streaming_callback(
            on_chunks.append
        )
        on = await drive(on_pipe, "q", mode)
        off_chunks: list[str] = []
        off_pipe = gemini(server, "gemini-2.5-flash", client)
        off_pipe.set_stream_model_reasoning(False).set_streaming_callback(off_chunks.append)
        off = await drive(off_pipe, "q", mode)

    assert off_chunks == ["2 + 2 ", "= 4."]
    assert OPEN in "".join(on_chunks)
    assert (off.text, off.model_reasoning, off.reasoning_segments) == (
        on.text,
        on.model_reasoning,
        on.reasoning_segments,
    )
    assert off.reasoning_state == on.reasoning_state
    assert off.usage == on.usage


@pytest.mark.parametrize("chunk_size", [1, 5, 64])
def test_rechunked_bytes_give_the_same_result(chunk_size: int) -> None:
    """HTTP chunks that split events, lines and UTF-8 characters change nothing."""
    with WireServer("gemini_tool_answer") as server:
        whole = gemini(server, "gemini-3-pro-preview").run("q")
    with WireServer(Reply(Transcript.load("gemini_tool_answer"), chunk_size=chunk_size)) as server:
        chunks: list[str] = []
        pipe = gemini(server, "gemini-3-pro-preview").set_streaming_callback(chunks.append)
        pieces = pipe.run("q")
    assert pieces.text == whole.text == "Paris is 18°C, Tokyo 25°C."
    assert pieces.reasoning_segments == whole.reasoning_segments
    assert [(s.payload, s.block, s.extra) for s in pieces.reasoning_state] == [
        (s.payload, s.block, s.extra) for s in whole.reasoning_state
    ]
    assert pieces.usage == whole.usage
    assert_channel_matches(chunks, pieces)


# -------------------------------------------------------------------- signature passback


class Conversation:
    """Stands in for a conversation store: it hands the pipe turns with their states."""

    def __init__(self, turns: list[HistoryTurn]) -> None:
        self.turns = turns

    def turns_for(self, pipe: Any) -> list[HistoryTurn]:
        return self.turns


def strip(message: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in message.items() if key != "thinking"}


@pytest.mark.anyio
async def test_tool_loop_sends_each_signature_back_on_its_own_part(mode: Mode) -> None:
    async with served(mode, "gemini_tool_call", "gemini_tool_answer") as (server, client):
        pipe = gemini(server, "gemini-3-pro-preview", client)
        first = await drive(pipe, "Weather in Paris and Tokyo?", mode)
        conversation = Conversation(
            [
                HistoryTurn({"role": "system", "content": "Be brief."}),
                HistoryTurn({"role": "user", "content": "Weather in Paris and Tokyo?"}),
                HistoryTurn(strip(first.message), first.reasoning_state),
                HistoryTurn(
                    {"role": "tool", "tool_call_id": "call_0", "content": '{"temp_c": 18}'}
                ),
                HistoryTurn({"role": "tool", "tool_call_id": "call_1", "content": "25C"}),
            ]
        )
        chunks: list[str] = []
        second = await drive(pipe.set_streaming_callback(chunks.append), conversation, mode)
        followup = server.requests[1].json()

    assert followup["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert followup["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris and Tokyo?"}]},
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {
                        "name": "get_weather",
                        "args": {"city": "Paris", "unit": "celsius"},
                    },
                    "thoughtSignature": CALL_SIG,
                },
                {"text": "", "thought": True, "thoughtSignature": THOUGHT_SIG_2},
                {"functionCall": {"name": "get_weather", "args": {"city": "Tokyo"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"temp_c": 18}}},
                {"functionResponse": {"name": "get_weather", "response": {"result": "25C"}}},
            ],
        },
    ]
    # Reasoning text is never sent back, only the opaque signatures.
    assert "I need the weather" not in server.requests[1].body.decode()

    assert second.text == "Paris is 18°C, Tokyo 25°C."
    assert second.model_reasoning == "Both results are in."
    assert "".join(chunks) == OPEN + "Both results are in." + CLOSE + "Paris is 18°C, Tokyo 25°C."
    assert second.usage == Usage(input_tokens=120, output_tokens=30, reasoning_tokens=18)
    assert_opaque(chunks, second)
    assert_channel_matches(chunks, second)


@pytest.mark.anyio
async def test_thought_and_empty_part_signatures_go_back_in_place(mode: Mode) -> None:
    async with served(mode, "gemini_reasoning") as (server, client):
        pipe = gemini(server, "gemini-2.5-flash", client)
        first = await drive(pipe, "What is 2+2?", mode)
        conversation = Conversation(
            [
                HistoryTurn({"role": "user", "content": "What is 2+2?"}),
                HistoryTurn(strip(first.message), first.reasoning_state, first.model_reasoning),
                HistoryTurn({"role": "user", "content": "And 3+3?"}),
            ]
        )
        await drive(pipe, conversation, mode)
        followup = server.requests[1].json()

    assert followup["contents"] == [
        {"role": "user", "parts": [{"text": "What is 2+2?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "", "thought": True, "thoughtSignature": THOUGHT_SIG},
                {"text": "2 + 2 = 4."},
                {"text": "", "thoughtSignature": EMPTY_SIG},
            ],
        },
        {"role": "user", "parts": [{"text": "And 3+3?"}]},
    ]


def test_text_signature_cuts_the_answer_where_its_part_began() -> None:
    def state(block: str, part: str, offset: int) -> ReasoningState:
        extra = {"part": part, "text_offset": offset, "call_index": 0}
        return ReasoningState("gemini", "m", "signature", f"sig-{block}", block, extra=extra)

    turn = HistoryTurn(
        {"role": "assistant", "content": "Hello, world! Bye."},
        (state("0:0", "text", 0), state("0:2", "text", 13), state("0:3", "empty", 18)),
    )
    other_model = ReasoningState("gemini", "other-model", "signature", "foreign", "0:0")
    foreign = HistoryTurn({"role": "assistant", "content": "x"}, (other_model,))
    body = GeminiPipe("m", api_key="k").build_request(Conversation([turn, foreign]))
    assert body["contents"] == [
        {
            "role": "model",
            "parts": [
                {"text": "Hello, world!", "thoughtSignature": "sig-0:0"},
                {"text": " Bye.", "thoughtSignature": "sig-0:2"},
                {"text": "", "thoughtSignature": "sig-0:3"},
                {"text": "x"},
            ],
        }
    ]


def test_server_call_ids_go_back_on_the_call_and_its_response() -> None:
    state = ReasoningState(
        "gemini",
        "m",
        "signature",
        "sig",
        "0:0",
        extra={
            "part": "function_call",
            "name": "f",
            "call_id": "fc-1",
            "id": "fc-1",
            "text_offset": 0,
            "call_index": 0,
        },
    )
    call = {"id": "fc-1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    turns = [
        HistoryTurn({"role": "assistant", "content": "", "tool_calls": [call]}, (state,)),
        HistoryTurn({"role": "tool", "tool_call_id": "fc-1", "content": "[1, 2]"}),
    ]
    body = GeminiPipe("m", api_key="k").build_request(Conversation(turns))
    assert body["contents"] == [
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "f", "args": {}, "id": "fc-1"}, "thoughtSignature": "sig"}
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "f", "response": {"result": [1, 2]}, "id": "fc-1"}}
            ],
        },
    ]


# ------------------------------------------------------------------- request and clients


def test_request_options_tools_and_extra_body() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    pipe = GeminiPipe(
        "models/gemini-2.5-pro",
        api_key="k",
        thinking_config={"thinkingBudget": 1024},
        tools=[tool, {"googleSearch": {}}],
        extra_body={"generationConfig": {"temperature": 0.1}},
    )
    body = pipe.build_request(
        [{"role": "developer", "content": "Rules."}, {"role": "user", "content": "q"}]
    )
    assert pipe.url.endswith("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
    assert body["systemInstruction"] == {"parts": [{"text": "Rules."}]}
    assert body["generationConfig"] == {
        "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 1024},
        "temperature": 0.1,
    }
    # The function's JSON Schema goes as parametersJsonSchema (JSON Schema as written).
    declaration = {
        "name": "get_weather",
        "description": "Weather for a city",
        "parametersJsonSchema": tool["function"]["parameters"],
    }
    assert body["tools"] == [{"functionDeclarations": [declaration]}, {"googleSearch": {}}]
    assert "generationConfig" not in GeminiPipe("m", include_thoughts=False).build_request("q")


@pytest.mark.anyio
async def test_pipe_builds_its_own_client_and_reads_the_key_from_the_environment(
    mode: Mode, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "env-key")
    async with WireServer("gemini_plain") as server:
        pipe = GeminiPipe("gemini-2.0-flash", base_url=server.url + "/v1beta/")
        result = await drive(pipe, "hi", mode)
        [request] = server.requests
    assert result.text == "Hello, world!"
    assert request.headers["x-goog-api-key"] == "env-key"


def test_no_key_and_no_client_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(UsageError, match="GEMINI_API_KEY"):
        GeminiPipe("gemini-2.5-flash").run("hi")


@pytest.mark.anyio
async def test_arun_with_only_a_sync_client_runs_it_in_a_thread() -> None:
    async with WireServer("gemini_reasoning") as server:
        with httpx.Client() as client:
            result = await gemini(server, "gemini-2.5-flash", client).arun("q")
    assert result.text == "2 + 2 = 4."
    assert result.model_reasoning == REASONING


def test_run_with_only_an_async_client_is_a_usage_error() -> None:
    pipe = GeminiPipe("gemini-2.5-flash", api_key="k", client=httpx.AsyncClient())
    with pytest.raises(UsageError, match="arun"):
        pipe.run("q")


# ------------------------------------------------------------------- translator, pure


def candidate(parts: list[Any], **fields: Any) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, **fields}]}


def test_translator_finish_reasons() -> None:
    for wire, reason in [("STOP", "stop"), ("MAX_TOKENS", "length"), ("SAFETY", "safety")]:
        translator = GeminiTranslator(model="m")
        assert translator.feed(candidate([], finishReason=wire)) == [Finish(reason)]


def test_translator_null_text_other_parts_and_server_ids() -> None:
    translator = GeminiTranslator(model="m")
    code = {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
    events = [
        *translator.feed(candidate([{"text": None, "thought": True}, {"text": None}])),
        *translator.feed([candidate([{**code, "thoughtSignature": "s1"}])]),
        *translator.feed(candidate([{"functionCall": {"id": "fc-9", "name": "f", "args": None}}])),
        *translator.feed({"usageMetadata": {"promptTokenCount": 3}}),
        *translator.feed({"somethingNew": True}),
        *translator.finish(),
    ]
    assert events[0] == ReasoningEnd()
    assert isinstance(events[1], OpaqueState)
    assert events[1].state.extra == {
        "part": "other",
        "raw": code,
        "text_offset": 0,
        "call_index": 0,
    }
    assert events[1].state.block == "0:2"
    assert events[2:] == [ToolCall("fc-9", "f", "{}"), UsageReport(Usage(input_tokens=3))]


def test_translator_segments_and_error_objects() -> None:
    translator = GeminiTranslator(model="m")
    assert translator.feed(candidate([{"text": "a", "thought": True}])) == [ReasoningDelta("a")]
    assert translator.feed(candidate([{"text": "b", "thought": True}, {"text": "c"}])) == [
        ReasoningDelta("b"),
        ReasoningEnd(),
        TextDelta("c"),
    ]
    with pytest.raises(ProviderError, match="boom") as caught:
        translator.feed({"error": {"code": 503, "message": "boom", "status": "UNAVAILABLE"}})
    assert caught.value.status_code == 503


@pytest.mark.anyio
async def test_garbled_event_is_a_malformed_stream(mode: Mode) -> None:
    async with served(mode, "gemini_malformed") as (server, client):
        chunks: list[str] = []
        pipe = gemini(server, "gemini-2.5-flash", client).set_streaming_callback(chunks.append)
        with pytest.raises(MalformedStreamError) as caught:
            await drive(pipe, "go", mode)

    result = caught.value.result
    assert result is not None
    assert (result.status, result.model_reasoning) == ("error", "Fine so far.")
    assert "".join(chunks) == OPEN + "Fine so far." + CLOSE
