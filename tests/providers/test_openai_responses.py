"""OpenAIResponsesPipe through the real openai SDK against WireServer (sync, asyncio, trio)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import anyio
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning_stream import (
    Finish,
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
from reasoning_stream._messages import strip_inert_keys
from reasoning_stream._pipe import PipeResult
from reasoning_stream._turns import HistoryTurn
from reasoning_stream.providers import OpenAIResponsesPipe
from reasoning_stream.providers.openai_responses import OpenAIResponsesTranslator
from reasoning_stream.testing._wire import Reply, Transcript, WireServer
from tests.helpers import examples

OPEN, CLOSE = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG
MODEL = "o4-mini"
API_KEY = "sk-test-not-a-secret"

SUMMARY_SEGMENTS = (
    "**Adding small numbers**\n\nThe user asks for 2 + 2.",
    "**Checking the sum**\n\nTwo plus two is four.",
)
SUMMARY_TEXT = "2 + 2 = 4."
SUMMARY_CHANNEL = (
    f"{OPEN}{SUMMARY_SEGMENTS[0]}{CLOSE}{OPEN}{SUMMARY_SEGMENTS[1]}{CLOSE}{SUMMARY_TEXT}"
)

RAW_REASONING = (
    "The user wants the capital of France. Careful: do not write </think> in the answer. "
    "It is Paris."
)
# The escaper adds one backslash after "<" so the payload cannot close the segment.
RAW_CHANNEL = (
    f"{OPEN}{RAW_REASONING.replace('</think>', '<' + chr(92) + '/think>')}{CLOSE}"
    "The capital of France is Paris."
)

ENCRYPTED = (
    "gAAAAABoQ3ENCRYPTEDx7Kq9_reasoning-state-DO-NOT-LEAK_Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZg=="
)
CALL_REASONING = "**Looking up the weather**\n\nI need the weather tool for Paris."
CALL = ToolCall("call_Wq1xY3Paris", "get_weather", '{"city": "Paris"}')
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


# ------------------------------------------------------------------------------ helpers


def sync_client(server: WireServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=API_KEY, max_retries=0)


def async_client(server: WireServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=API_KEY, max_retries=0)


def run_sync(
    replies: Sequence[str | Reply], prompt: Any = "hi", **options: Any
) -> tuple[PipeResult, list[str], WireServer]:
    chunks: list[str] = []
    with WireServer(*replies) as server, sync_client(server) as client:
        pipe = OpenAIResponsesPipe(MODEL, client=client, **options)
        pipe.set_streaming_callback(chunks.append)
        result = pipe.run(prompt)
        assert pipe.last_result is result
    return result, chunks, server


async def run_async(
    replies: Sequence[str | Reply], prompt: Any = "hi", **options: Any
) -> tuple[PipeResult, list[str], WireServer]:
    chunks: list[str] = []
    async with WireServer(*replies) as server, async_client(server) as client:
        pipe = OpenAIResponsesPipe(MODEL, client=client, **options)
        pipe.set_streaming_callback(chunks.append)
        result = await pipe.arun(prompt)
        assert pipe.last_result is result
    return result, chunks, server


def fail_sync(replies: Sequence[str | Reply]) -> tuple[ProviderError, list[str]]:
    chunks: list[str] = []
    with WireServer(*replies) as server, sync_client(server) as client:
        pipe = OpenAIResponsesPipe(MODEL, client=client)
        pipe.set_streaming_callback(chunks.append)
        with pytest.raises(ProviderError) as caught:
            pipe.run("hi")
        assert caught.value.result is pipe.last_result
    return caught.value, chunks


async def fail_async(replies: Sequence[str | Reply]) -> tuple[ProviderError, list[str]]:
    chunks: list[str] = []
    async with WireServer(*replies) as server, async_client(server) as client:
        pipe = OpenAIResponsesPipe(MODEL, client=client)
        pipe.set_streaming_callback(chunks.append)
        with pytest.raises(ProviderError) as caught:
            await pipe.arun("hi")
        assert caught.value.result is pipe.last_result
    return caught.value, chunks


def assert_round_trip(chunks: list[str], result: PipeResult) -> None:
    """The channel splits back into exactly what the result captured."""
    split = ReasoningStream.split("".join(chunks), lossless=True)
    assert (split.reasoning, split.text) == (result.model_reasoning, result.text)
    assert not split.truncated


def assert_error_channel(error: ProviderError, chunks: list[str], reasoning: str) -> PipeResult:
    result = error.result
    assert result is not None
    assert result.status == "error"
    assert result.model_reasoning == reasoning
    assert result.text == ""
    assert result.error is not None
    if reasoning:
        assert chunks[-1] == CLOSE
        assert "".join(chunks) == f"{OPEN}{reasoning}{CLOSE}"
    else:
        assert chunks == []
    assert_round_trip(chunks, result)
    return result


# ------------------------------------------------------------------- reasoning summary


def check_summary(result: PipeResult, chunks: list[str]) -> None:
    assert "".join(chunks) == SUMMARY_CHANNEL
    assert result.text == SUMMARY_TEXT
    assert result.reasoning_segments == SUMMARY_SEGMENTS
    assert result.model_reasoning == "\n".join(SUMMARY_SEGMENTS)
    assert result.tool_calls == ()
    assert result.usage == Usage(
        input_tokens=13, output_tokens=148, reasoning_tokens=128, cache_read_tokens=0
    )
    assert (result.status, result.finish_reason) == ("completed", "stop")
    assert result.response_id == "resp_68a1summary0001"
    assert result.provider == "openai-responses"
    (state,) = result.reasoning_state
    assert (state.provider, state.model, state.kind, state.block) == (
        "openai-responses",
        MODEL,
        "reasoning_item",
        "rs_68a1summary0001",
    )
    item = json.loads(state.payload)
    assert item["type"] == "reasoning"
    assert [part["text"] for part in item["summary"]] == list(SUMMARY_SEGMENTS)
    assert state.extra["followed_by"] == [{"type": "message", "id": "msg_68a1summary0001"}]
    assert_round_trip(chunks, result)


def test_summary_parts_are_separate_segments_sync() -> None:
    result, chunks, server = run_sync(["openai_responses_summary"])
    check_summary(result, chunks)
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/v1/responses")
    assert request.json() == {
        "model": MODEL,
        "input": [{"role": "user", "content": "hi"}],
        "stream": True,
        "reasoning": {"summary": "auto"},
    }


@pytest.mark.anyio
async def test_summary_parts_are_separate_segments_async() -> None:
    result, chunks, _ = await run_async(["openai_responses_summary"])
    check_summary(result, chunks)


def test_hidden_reasoning_leaves_channel_clean_and_capture_equal() -> None:
    chunks: list[str] = []
    with WireServer("openai_responses_summary") as server, sync_client(server) as client:
        pipe = OpenAIResponsesPipe(MODEL, client=client).set_stream_model_reasoning(False)
        pipe.set_streaming_callback(chunks.append)
        result = pipe.run("hi")
    assert "".join(chunks) == SUMMARY_TEXT
    assert result.reasoning_segments == SUMMARY_SEGMENTS
    assert result.model_reasoning == "\n".join(SUMMARY_SEGMENTS)
    assert result.usage.reasoning_tokens == 128


@pytest.mark.anyio
async def test_hidden_reasoning_async() -> None:
    chunks: list[str] = []
    async with WireServer("openai_responses_summary") as server, async_client(server) as client:
        pipe = OpenAIResponsesPipe(MODEL, client=client, stream_model_reasoning=False)
        pipe.set_streaming_callback(chunks.append)
        result = await pipe.arun("hi")
    assert "".join(chunks) == SUMMARY_TEXT
    assert result.model_reasoning == "\n".join(SUMMARY_SEGMENTS)


_SUMMARY_BYTES = len(Transcript.load("openai_responses_summary").encode())


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(cuts=st.lists(st.integers(1, _SUMMARY_BYTES - 1), max_size=60, unique=True).map(sorted))
def test_rechunked_bytes_give_the_same_run(cuts: list[int]) -> None:
    """However the HTTP body is cut, the SDK and the pipe give the same channel and result."""
    result, chunks, _ = run_sync(
        [Reply(Transcript.load("openai_responses_summary"), cut_points=cuts)]
    )
    check_summary(result, chunks)


# ----------------------------------------------------------------- raw reasoning text


def check_reasoning_text(result: PipeResult, chunks: list[str]) -> None:
    assert "".join(chunks) == RAW_CHANNEL
    assert result.text == "The capital of France is Paris."
    assert result.reasoning_segments == (RAW_REASONING,)
    assert result.model_reasoning == RAW_REASONING
    assert result.usage == Usage(
        input_tokens=72, output_tokens=41, reasoning_tokens=29, cache_read_tokens=0
    )
    assert (result.status, result.finish_reason) == ("completed", "stop")
    (state,) = result.reasoning_state
    assert state.kind == "reasoning_item"
    item = json.loads(state.payload)
    assert item["content"] == [{"type": "reasoning_text", "text": RAW_REASONING}]
    assert item["encrypted_content"] is None
    assert_round_trip(chunks, result)


def test_raw_reasoning_text_sync() -> None:
    result, chunks, _ = run_sync(["openai_responses_reasoning_text"], reasoning_summary=None)
    check_reasoning_text(result, chunks)


@pytest.mark.anyio
async def test_raw_reasoning_text_async() -> None:
    result, chunks, server = await run_async(
        ["openai_responses_reasoning_text"], reasoning_summary=None
    )
    check_reasoning_text(result, chunks)
    assert "reasoning" not in server.requests[0].json()


# ------------------------------------------------ function call with encrypted reasoning


def check_function_call(result: PipeResult, chunks: list[str]) -> None:
    assert "".join(chunks) == f"{OPEN}{CALL_REASONING}{CLOSE}"
    assert result.text == ""
    assert result.model_reasoning == CALL_REASONING
    assert result.tool_calls == (CALL,)
    assert (result.status, result.finish_reason) == ("completed", "tool_calls")
    assert result.usage == Usage(
        input_tokens=81, output_tokens=92, reasoning_tokens=64, cache_read_tokens=0
    )
    assert result.message["tool_calls"] == [CALL.to_message()]
    (state,) = result.reasoning_state
    assert (state.kind, state.block) == ("encrypted", "rs_5e2bfunccall")
    # The full value from output_item.done, not the partial one from output_item.added.
    assert json.loads(state.payload)["encrypted_content"] == ENCRYPTED
    assert state.extra["followed_by"] == [
        {"type": "function_call", "id": "fc_5e2bfunccall", "call_id": "call_Wq1xY3Paris"}
    ]
    # The opaque payload never reaches the channel, the result's repr or the message.
    assert ENCRYPTED[:24] not in "".join(chunks)
    assert "ENCRYPTED" not in repr(result)
    assert "ENCRYPTED" not in repr(result.message)
    assert_round_trip(chunks, result)


def test_function_call_keeps_encrypted_reasoning_sync() -> None:
    result, chunks, server = run_sync(
        ["openai_responses_function_call"],
        "What is the weather in Paris?",
        store=False,
        extra_body={"tools": [WEATHER_TOOL]},
    )
    check_function_call(result, chunks)
    assert server.requests[0].json() == {
        "model": MODEL,
        "input": [{"role": "user", "content": "What is the weather in Paris?"}],
        "stream": True,
        "reasoning": {"summary": "auto"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "tools": [WEATHER_TOOL],
    }


@pytest.mark.anyio
async def test_function_call_keeps_encrypted_reasoning_async() -> None:
    result, chunks, _ = await run_async(["openai_responses_function_call"], store=False)
    check_function_call(result, chunks)


class _Conversation:
    """Anything with ``turns_for(pipe)`` stands in for a conversation."""

    def __init__(self, turns: list[HistoryTurn]) -> None:
        self.turns = turns

    def turns_for(self, pipe: object) -> list[HistoryTurn]:
        return self.turns


def follow_up(first: PipeResult) -> _Conversation:
    return _Conversation(
        [
            HistoryTurn({"role": "user", "content": "What is the weather in Paris?"}),
            HistoryTurn(strip_inert_keys(first.message), states=first.reasoning_state),
            HistoryTurn(
                {
                    "role": "tool",
                    "tool_call_id": "call_Wq1xY3Paris",
                    "content": '{"temperature_c": 18, "sky": "sunny"}',
                }
            ),
        ]
    )


EXPECTED_FOLLOW_UP_INPUT = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "type": "reasoning",
        "id": "rs_5e2bfunccall",
        "summary": [{"type": "summary_text", "text": CALL_REASONING}],
        "encrypted_content": ENCRYPTED,
    },
    {
        "type": "function_call",
        "call_id": "call_Wq1xY3Paris",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
        "id": "fc_5e2bfunccall",
    },
    {
        "type": "function_call_output",
        "call_id": "call_Wq1xY3Paris",
        "output": '{"temperature_c": 18, "sky": "sunny"}',
    },
]


def test_follow_up_replays_encrypted_reasoning_before_the_call_sync() -> None:
    """The reasoning item goes back, encrypted content included, right before its call."""
    with (
        WireServer("openai_responses_function_call", "openai_responses_followup") as server,
        sync_client(server) as client,
    ):
        pipe = OpenAIResponsesPipe(MODEL, client=client, store=False)
        first = pipe.run("What is the weather in Paris?")
        second = pipe.run(follow_up(first))  # type: ignore[arg-type]
    body = server.requests[1].json()
    assert body["input"] == EXPECTED_FOLLOW_UP_INPUT
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["store"] is False
    assert second.text == "It is 18 °C and sunny in Paris."
    assert second.model_reasoning == "**Reporting**\n\nRelay the forecast."
    assert [state.kind for state in second.reasoning_state] == ["encrypted"]


@pytest.mark.anyio
async def test_follow_up_replays_encrypted_reasoning_async() -> None:
    async with (
        WireServer("openai_responses_function_call", "openai_responses_followup") as server,
        async_client(server) as client,
    ):
        pipe = OpenAIResponsesPipe(MODEL, client=client, store=False)
        first = await pipe.arun("What is the weather in Paris?")
        second = await pipe.arun(follow_up(first))  # type: ignore[arg-type]
    assert server.requests[1].json()["input"] == EXPECTED_FOLLOW_UP_INPUT
    assert second.finish_reason == "stop"


def test_follow_up_with_stored_reasoning_pairs_message_ids() -> None:
    """Without encrypted content the item is replayed by id with its message's id."""
    with WireServer("openai_responses_summary") as server, sync_client(server) as client:
        first = OpenAIResponsesPipe(MODEL, client=client).run("2 + 2?")
    pipe = OpenAIResponsesPipe(MODEL, base_url="http://unused.invalid/v1", api_key=API_KEY)
    body = pipe.build_request(
        _Conversation(
            [
                HistoryTurn({"role": "user", "content": "2 + 2?"}),
                HistoryTurn(strip_inert_keys(first.message), states=first.reasoning_state),
                HistoryTurn({"role": "user", "content": "And 3 + 3?"}),
            ]
        )
    )
    assert body["input"] == [
        {"role": "user", "content": "2 + 2?"},
        {
            "type": "reasoning",
            "id": "rs_68a1summary0001",
            "summary": [{"type": "summary_text", "text": text} for text in SUMMARY_SEGMENTS],
        },
        {
            "type": "message",
            "id": "msg_68a1summary0001",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": SUMMARY_TEXT, "annotations": []}],
        },
        {"role": "user", "content": "And 3 + 3?"},
    ]
    # A stateless request cannot resolve a stored item by id, so it is left out.
    stateless = OpenAIResponsesPipe(MODEL, base_url="http://unused.invalid/v1", store=False)
    items = stateless.turn_items(
        HistoryTurn(strip_inert_keys(first.message), states=first.reasoning_state)
    )
    assert items == [{"role": "assistant", "content": SUMMARY_TEXT}]


# ------------------------------------------------------------------------ no reasoning


def check_plain(result: PipeResult, chunks: list[str]) -> None:
    joined = "".join(chunks)
    assert joined == "Write <\\think> to open a block; done."
    assert OPEN not in joined and CLOSE not in joined
    assert result.text == "Write <think> to open a block; done."
    assert (result.model_reasoning, result.reasoning_segments) == ("", ())
    assert result.timings.time_to_first_reasoning is None
    # The silent reasoning item is still kept for replay.
    assert [state.kind for state in result.reasoning_state] == ["reasoning_item"]
    assert result.usage.reasoning_tokens == 192
    assert "thinking" not in result.message
    assert_round_trip(chunks, result)


def test_no_reasoning_no_marker_bytes_sync() -> None:
    result, chunks, _ = run_sync(["openai_responses_plain"])
    check_plain(result, chunks)


@pytest.mark.anyio
async def test_no_reasoning_no_marker_bytes_async() -> None:
    result, chunks, _ = await run_async(["openai_responses_plain"])
    check_plain(result, chunks)


# ------------------------------------------------------------------------------ errors

FAILED_REASONING = "**Considering the request**\n\nLet me think"
ERROR_EVENT_REASONING = "**Planning**\n\nFirst I will"


def check_failed(error: ProviderError, chunks: list[str]) -> None:
    assert "server_error" in str(error)
    assert "The model produced invalid content" in str(error)
    assert error.provider == "openai-responses"
    result = assert_error_channel(error, chunks, FAILED_REASONING)
    assert result.response_id == "resp_1f4dfailed"


def test_response_failed_mid_reasoning_sync() -> None:
    check_failed(*fail_sync(["openai_responses_failed"]))


@pytest.mark.anyio
async def test_response_failed_mid_reasoning_async() -> None:
    check_failed(*await fail_async(["openai_responses_failed"]))


def check_error_event(error: ProviderError, chunks: list[str]) -> None:
    assert "rate_limit_exceeded: Rate limit reached for o4-mini" in str(error)
    assert isinstance(error.body, dict) and error.body["code"] == "rate_limit_exceeded"
    assert_error_channel(error, chunks, ERROR_EVENT_REASONING)


def test_error_event_mid_reasoning_sync() -> None:
    check_error_event(*fail_sync(["openai_responses_error_event"]))


@pytest.mark.anyio
async def test_error_event_mid_reasoning_async() -> None:
    check_error_event(*await fail_async(["openai_responses_error_event"]))


def nested_error_event() -> Transcript:
    """An ``error`` event whose details sit in a nested object, which the SDK itself raises."""
    transcript = Transcript.load("openai_responses_error_event")
    event = transcript.events[-1]
    data = event["data"]
    nested = {"type": "error", "sequence_number": data["sequence_number"]}
    nested["error"] = {"type": "server_error", "code": "server_error", "message": "Try again."}
    transcript.events[-1] = {"event": "error", "data": nested}
    return transcript


def test_nested_error_event_raised_by_the_sdk() -> None:
    error, chunks = fail_sync([Reply(nested_error_event())])
    assert isinstance(error.__cause__, openai.APIError)
    assert "Try again." in str(error)
    assert_error_channel(error, chunks, ERROR_EVENT_REASONING)


DISCONNECT_REASONING = "**Adding small numbers**\n\nThe user asks for "


def disconnect_mid_reasoning() -> Reply:
    # created, in_progress, item added, part added, then two of the three deltas.
    return Reply(Transcript.load("openai_responses_summary"), disconnect_after=6)


def test_disconnect_mid_reasoning_sync() -> None:
    error, chunks = fail_sync([disconnect_mid_reasoning()])
    assert isinstance(error.__cause__, openai.APIConnectionError)
    assert error.status_code is None
    assert_error_channel(error, chunks, DISCONNECT_REASONING)


@pytest.mark.anyio
async def test_disconnect_mid_reasoning_async() -> None:
    error, chunks = await fail_async([disconnect_mid_reasoning()])
    assert isinstance(error.__cause__, openai.APIConnectionError)
    assert_error_channel(error, chunks, DISCONNECT_REASONING)


def stall_mid_reasoning() -> Reply:
    return Reply(Transcript.load("openai_responses_summary"), hang_after=6)


def test_read_timeout_mid_reasoning_sync() -> None:
    """A stalled stream hits the built client's timeout and keeps the reasoning so far."""
    chunks: list[str] = []
    with WireServer(stall_mid_reasoning()) as server:
        pipe = OpenAIResponsesPipe(MODEL, base_url=server.url + "/v1", api_key=API_KEY, timeout=0.3)
        pipe.set_streaming_callback(chunks.append)
        with pytest.raises(ProviderError) as caught:
            pipe.run("hi")
    assert isinstance(caught.value.__cause__, openai.APITimeoutError)
    assert_error_channel(caught.value, chunks, DISCONNECT_REASONING)


@pytest.mark.anyio
async def test_cancel_mid_reasoning_closes_the_segment_async() -> None:
    chunks: list[str] = []
    async with WireServer(stall_mid_reasoning()) as server, async_client(server) as client:
        pipe = OpenAIResponsesPipe(MODEL, client=client)
        pipe.set_streaming_callback(chunks.append)
        with anyio.move_on_after(0.3) as scope:
            await pipe.arun("hi")
    assert scope.cancelled_caught
    result = pipe.last_result
    assert result is not None
    assert result.status == "cancelled_before_answer"
    assert result.model_reasoning == DISCONNECT_REASONING
    assert "".join(chunks) == f"{OPEN}{DISCONNECT_REASONING}{CLOSE}"


def check_rate_limited(error: ProviderError, chunks: list[str]) -> None:
    assert isinstance(error.__cause__, openai.RateLimitError)
    assert (error.status_code, error.retry_after) == (429, 2.0)
    assert "Rate limit reached for o4-mini" in str(error)
    assert "HTTP 429" in str(error)
    assert API_KEY not in str(error)
    assert_error_channel(error, chunks, "")


def test_http_429_sync() -> None:
    check_rate_limited(*fail_sync(["openai_responses_rate_limited"]))


@pytest.mark.anyio
async def test_http_429_async() -> None:
    check_rate_limited(*await fail_async(["openai_responses_rate_limited"]))


# -------------------------------------------------------------------------- length stop


def check_incomplete(result: PipeResult, chunks: list[str]) -> None:
    assert "".join(chunks) == f"{OPEN}**Listing primes**\n\nStart from 2.{CLOSE}" + (
        "The first primes are 2, 3, 5"
    )
    assert (result.status, result.finish_reason) == ("length", "length")
    assert result.usage == Usage(
        input_tokens=15, output_tokens=64, reasoning_tokens=48, cache_read_tokens=0
    )
    assert len(result.reasoning_state) == 1
    assert_round_trip(chunks, result)


def test_incomplete_is_a_length_stop_sync() -> None:
    result, chunks, _ = run_sync(["openai_responses_incomplete"])
    check_incomplete(result, chunks)


@pytest.mark.anyio
async def test_incomplete_is_a_length_stop_async() -> None:
    result, chunks, _ = await run_async(["openai_responses_incomplete"])
    check_incomplete(result, chunks)


# ---------------------------------------------------------------------------- clients


def test_builds_its_own_clients_from_base_url_sync() -> None:
    chunks: list[str] = []
    with WireServer("openai_responses_summary") as server:
        pipe = OpenAIResponsesPipe(MODEL, base_url=server.url + "/v1/", api_key=API_KEY)
        result = pipe.set_streaming_callback(chunks.append).run("hi")
        assert server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
        assert pipe.endpoint == server.url + "/v1"
        assert result.reasoning_state[0].endpoint == server.url + "/v1"
    check_summary(result, chunks)


@pytest.mark.anyio
async def test_builds_its_own_clients_from_base_url_async() -> None:
    chunks: list[str] = []
    async with WireServer("openai_responses_summary") as server:
        pipe = OpenAIResponsesPipe(MODEL, base_url=server.url + "/v1", api_key=API_KEY)
        result = await pipe.set_streaming_callback(chunks.append).arun("hi")
    check_summary(result, chunks)


@pytest.mark.anyio
async def test_arun_with_only_a_sync_client_uses_a_worker_thread() -> None:
    chunks: list[str] = []
    async with WireServer("openai_responses_summary") as server:
        with sync_client(server) as client:
            pipe = OpenAIResponsesPipe(MODEL, client=client)
            result = await pipe.set_streaming_callback(chunks.append).arun("hi")
    check_summary(result, chunks)


@pytest.mark.anyio
async def test_run_with_only_an_async_client_is_a_usage_error() -> None:
    async with WireServer("openai_responses_summary") as server, async_client(server) as client:
        pipe = OpenAIResponsesPipe(MODEL, client=client)
        assert pipe.endpoint == server.url + "/v1"
        with pytest.raises(UsageError, match="arun"):
            await anyio.to_thread.run_sync(pipe.run, "hi")
    assert server.requests == []


# -------------------------------------------------------------------- request building


def test_build_request_options_and_history() -> None:
    pipe = OpenAIResponsesPipe(
        "gpt-5-codex",
        base_url="http://unused.invalid/v1",
        api_key=API_KEY,
        instructions="You are terse.",
        reasoning_summary="detailed",
        extra_body={"reasoning": {"effort": "high"}, "max_output_tokens": 512},
    )
    foreign = ReasoningState("anthropic", "claude", "signature", "sig", block=0)
    other_model = ReasoningState(
        "openai-responses", "o3", "encrypted", '{"id":"rs_o3","summary":[]}', block="rs_o3"
    )
    body = pipe.build_request(
        _Conversation(
            [
                HistoryTurn({"role": "developer", "content": "Use metric units."}),
                HistoryTurn(
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "What is this?"},
                            {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
                        ],
                    }
                ),
                HistoryTurn(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "look", "arguments": {"zoom": 2}},
                            }
                        ],
                    },
                    states=(foreign, other_model),
                ),
                HistoryTurn({"role": "tool", "tool_call_id": "call_1", "content": "a cat"}),
                HistoryTurn({"type": "item_reference", "id": "msg_abc"}),
            ]
        )
    )
    assert body == {
        "model": "gpt-5-codex",
        "input": [
            {"role": "developer", "content": "Use metric units."},
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is this?"},
                    {"type": "input_image", "image_url": "https://x.test/a.png", "detail": "auto"},
                ],
            },
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "look",
                "arguments": '{"zoom": 2}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "a cat"},
            {"type": "item_reference", "id": "msg_abc"},
        ],
        "stream": True,
        "instructions": "You are terse.",
        "reasoning": {"summary": "detailed", "effort": "high"},
        "max_output_tokens": 512,
    }
    plain = OpenAIResponsesPipe(
        "gpt-4.1", base_url="http://unused.invalid/v1", reasoning_summary=None
    )
    assert plain.build_request([{"role": "user", "content": "hi", "thinking": "x"}]) == {
        "model": "gpt-4.1",
        "input": [{"role": "user", "content": "hi"}],
        "stream": True,
    }


def test_unknown_sdk_fields_travel_as_extra_body() -> None:
    with WireServer("openai_responses_plain") as server, sync_client(server) as client:
        pipe = OpenAIResponsesPipe(
            MODEL,
            client=client,
            store=False,
            extra_body={"include": ["message.output_text.logprobs"], "vendor_option": {"a": 1}},
        )
        pipe.run("hi")
    body = server.requests[0].json()
    assert body["include"] == ["reasoning.encrypted_content", "message.output_text.logprobs"]
    assert body["vendor_option"] == {"a": 1}


# -------------------------------------------------------------------- translator alone


def feed_all(events: list[dict[str, Any]]) -> Iterator[object]:
    translator = OpenAIResponsesTranslator(model=MODEL)
    for event in events:
        yield from translator.feed(event)
    yield from translator.finish()


def test_translator_ignores_unknown_events_and_null_deltas() -> None:
    events = [
        {"type": "response.something_new", "output_index": 0},
        {"type": "response.output_text.delta", "output_index": 0, "delta": None},
        {"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": None},
        {"type": "response.output_text.delta", "output_index": 0, "delta": "ok"},
    ]
    assert list(feed_all(events)) == [TextDelta("ok")]


def test_translator_separates_parts_without_done_events() -> None:
    def delta(index: int, text: str) -> dict[str, Any]:
        return {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "output_index": 0,
            "summary_index": index,
            "delta": text,
        }

    assert list(feed_all([delta(0, "a"), delta(0, "b"), delta(1, "c")])) == [
        ReasoningDelta("a"),
        ReasoningDelta("b"),
        ReasoningEnd(),
        ReasoningDelta("c"),
        ReasoningEnd(),
    ]


def test_translator_reads_reasoning_and_text_from_finished_items() -> None:
    """A server that sends only finished items still yields segments, text and the call."""
    reasoning = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "one"}],
        "content": [{"type": "reasoning_text", "text": "two"}],
    }
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "answer", "annotations": []}],
    }
    call = {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "f", "arguments": ""}
    events = [
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.done", "output_index": 1, "item": message},
        {"type": "response.output_item.added", "output_index": 2, "item": call},
        {"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "{}"},
    ]
    out = list(feed_all(events))
    assert out[:5] == [
        ReasoningDelta("one"),
        ReasoningEnd(),
        ReasoningDelta("two"),
        ReasoningEnd(),
        TextDelta("answer"),
    ]
    assert isinstance(out[5], OpaqueState) and out[5].state.kind == "reasoning_item"
    assert out[6:] == [ToolCall("c1", "f", "{}")]


def test_translator_maps_usage_and_stop_reasons() -> None:
    usage = {"input_tokens": 1, "output_tokens": 2, "output_tokens_details": None}
    completed = {"type": "response.completed", "response": {"id": "r1", "usage": usage}}
    assert list(feed_all([completed])) == [UsageReport(Usage(1, 2, None)), Finish("stop")]
    filtered = {
        "type": "response.incomplete",
        "response": {"id": "r2", "incomplete_details": {"reason": "content_filter"}},
    }
    assert list(feed_all([filtered])) == [Finish("content_filter")]
    translator = OpenAIResponsesTranslator(model=MODEL)
    translator.feed(completed)
    assert translator.response_id == "r1"
    with pytest.raises(ProviderError, match="no details given"):
        translator.feed({"type": "response.failed", "response": {"error": None}})
