"""OpenRouterPipe over httpx + httpx-sse (sync and async) against WireServer replaying
OpenRouter chat transcripts: keep-alive comments, reasoning and reasoning_details, errors."""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import openai
import pytest

from reasoning_stream import ProviderError, ReasoningStream, ToolCall, Usage, UsageError
from reasoning_stream._exceptions import MalformedStreamError
from reasoning_stream._turns import HistoryTurn
from reasoning_stream.providers import OpenRouterPipe
from reasoning_stream.providers._errors import retry_after_seconds
from reasoning_stream.testing._wire import Reply, Transcript, WireServer
from tests.providers.conftest import Mode, Served, assert_channel_matches, drive, serve

OPEN = ReasoningStream.OPEN_TAG
CLOSE = ReasoningStream.CLOSE_TAG
ROUTE = "/api/v1/chat/completions"


def root(site: Served) -> str:
    return f"{site.server.url}{site.prefix}/api/v1"


@asynccontextmanager
async def served(
    wire: WireServer, mode: Mode, *replies: str | Reply
) -> AsyncIterator[tuple[Served, dict[str, Any]]]:
    """Replies on the shared server, and the pipe keywords reaching them with ``mode``'s client."""
    site = serve(wire, *replies)
    options: dict[str, Any] = {"base_url": root(site), "api_key": "or-key"}
    if mode == "run":
        with httpx.Client(verify=False) as client:
            yield site, {**options, "client": client}
    else:
        async with httpx.AsyncClient(verify=False) as async_client:
            yield site, {**options, "client": async_client}


class _History:
    """A prompt that hands the pipe prepared turns, as a Conversation does."""

    def __init__(self, turns: list[HistoryTurn]) -> None:
        self._turns = turns

    def turns_for(self, pipe: Any) -> list[HistoryTurn]:
        return self._turns


# ------------------------------------------------------------------------- the core cases

SIGNATURE = "ErUBCkYIBRgCIkD0pAqueSIGNATUREsecret"
GEMINI_SIGNATURE = "CiQB0paqueGEMINIthoughtSIGNATURE=="


@dataclass(frozen=True)
class Case:
    transcript: str
    model: str
    channel: str
    text: str
    segments: tuple[str, ...]
    usage: Usage
    finish_reason: str = "stop"
    status: str = "completed"
    tool_calls: tuple[ToolCall, ...] = ()
    state_kinds: tuple[str, ...] = ()
    secrets: tuple[str, ...] = field(default=())


CASES = {
    "reasoning": Case(
        "openrouter_reasoning",
        "anthropic/claude-sonnet-4",
        # The same text arrives in reasoning and reasoning_details: counted once.
        channel=OPEN + "The user wants a haiku." + CLOSE + "Blue sky hums softly\nlight bends",
        text="Blue sky hums softly\nlight bends",
        segments=("The user wants a haiku.",),
        usage=Usage(input_tokens=25, output_tokens=80, reasoning_tokens=42, cache_read_tokens=0),
        state_kinds=("reasoning_details",),
        secrets=(SIGNATURE,),
    ),
    "tool_call": Case(
        "openrouter_tool_call",
        "google/gemini-2.5-pro",
        channel=OPEN + "**Finding weather**\nCall the tool." + CLOSE,
        text="",
        segments=("**Finding weather**\nCall the tool.",),
        usage=Usage(input_tokens=40, output_tokens=35, reasoning_tokens=20),
        finish_reason="tool_calls",
        tool_calls=(ToolCall("tool_get_weather_x1", "get_weather", '{"city":"Oslo"}'),),
        state_kinds=("reasoning_details", "reasoning_details", "encrypted"),
        secrets=(GEMINI_SIGNATURE,),
    ),
    "no_reasoning": Case(
        "openrouter_no_reasoning",
        "openai/gpt-4o-mini",
        channel="Hello there.",
        text="Hello there.",
        segments=(),
        usage=Usage(input_tokens=8, output_tokens=3, reasoning_tokens=0),
    ),
    "length": Case(
        "openrouter_length",
        "deepseek/deepseek-r1",
        channel=OPEN + "Count the primes below 20." + CLOSE + "There are",
        text="There are",
        segments=("Count the primes below 20.",),
        usage=Usage(input_tokens=12, output_tokens=32, reasoning_tokens=20),
        finish_reason="length",
        status="length",
    ),
}


@pytest.mark.anyio
@pytest.mark.parametrize("case_name", list(CASES))
async def test_core_case(wire: WireServer, mode: Mode, case_name: str) -> None:
    case = CASES[case_name]
    async with served(wire, mode, case.transcript) as (site, options):
        chunks: list[str] = []
        pipe = OpenRouterPipe(case.model, **options).set_streaming_callback(chunks.append)
        result = await drive(pipe, "Go.", mode)

    channel = "".join(chunks)
    assert channel == case.channel
    assert result.text == case.text
    assert result.reasoning_segments == case.segments
    assert result.model_reasoning == "\n".join(case.segments)
    assert result.tool_calls == case.tool_calls
    assert result.usage == case.usage
    assert result.status == case.status
    assert result.finish_reason == case.finish_reason
    assert tuple(state.kind for state in result.reasoning_state) == case.state_kinds
    assert all(state.provider == "openrouter" for state in result.reasoning_state)
    assert all(state.model == case.model for state in result.reasoning_state)
    assert result.provider == "openrouter"
    assert result.response_id is not None and result.response_id.startswith("gen-")
    assert_channel_matches(chunks, result)
    for secret in case.secrets:
        assert secret not in channel
    if not case.segments:
        assert OPEN not in channel and CLOSE not in channel
        assert "thinking" not in result.message
    if case.tool_calls:
        assert result.message["tool_calls"] == [call.to_message() for call in case.tool_calls]

    [request] = site.requests
    assert request.path == site.prefix + ROUTE
    assert request.json()["stream"] is True


@pytest.mark.anyio
async def test_reasoning_details_are_merged_per_index(wire: WireServer, mode: Mode) -> None:
    """Fragments of one block become one item: text joined, the late signature kept."""
    async with served(wire, mode, "openrouter_reasoning") as (_, options):
        pipe = OpenRouterPipe("anthropic/claude-sonnet-4", **options)
        result = await drive(pipe, "A haiku.", mode)

    [state] = result.reasoning_state
    assert state.block == 0
    assert state.endpoint == options["base_url"]
    assert json.loads(state.payload) == {
        "type": "reasoning.text",
        "text": "The user wants a haiku.",
        "signature": SIGNATURE,
        "format": "anthropic-claude-v1",
        "index": 0,
    }
    assert SIGNATURE not in repr(result)


@pytest.mark.anyio
async def test_flag_off_leaves_capture_unchanged(wire: WireServer, mode: Mode) -> None:
    async with served(wire, mode, "openrouter_reasoning") as (_, options):
        chunks: list[str] = []
        pipe = OpenRouterPipe("anthropic/claude-sonnet-4", **options)
        pipe.set_streaming_callback(chunks.append).set_stream_model_reasoning(False)
        result = await drive(pipe, "A haiku.", mode)

    assert "".join(chunks) == "Blue sky hums softly\nlight bends"
    assert result.model_reasoning == "The user wants a haiku."
    assert result.text == "Blue sky hums softly\nlight bends"
    assert [s.kind for s in result.reasoning_state] == ["reasoning_details"]


# ------------------------------------------------------------------------------- failures


@pytest.mark.anyio
async def test_error_chunk_mid_stream(wire: WireServer, mode: Mode) -> None:
    async with served(wire, mode, "openrouter_stream_error") as (_, options):
        chunks: list[str] = []
        pipe = OpenRouterPipe("anthropic/claude-sonnet-4", **options)
        with pytest.raises(ProviderError) as caught:
            await drive(pipe.set_streaming_callback(chunks.append), "Think.", mode)

    error = caught.value
    assert "Provider returned error: overloaded" in str(error)
    assert error.status_code == 502
    assert error.provider == "openrouter"
    result = error.result
    assert result is not None and result is pipe.last_result
    assert result.status == "error"
    assert result.model_reasoning == "Let me consider"
    assert "".join(chunks) == OPEN + "Let me consider" + CLOSE
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_http_429(wire: WireServer, mode: Mode) -> None:
    async with served(wire, mode, "openrouter_rate_limit") as (_, options):
        chunks: list[str] = []
        pipe = OpenRouterPipe("meta-llama/llama-3.3-70b-instruct:free", **options)
        with pytest.raises(ProviderError) as caught:
            await drive(pipe.set_streaming_callback(chunks.append), "Hi", mode)

    error = caught.value
    assert error.status_code == 429
    assert error.retry_after == 3.0
    assert "Rate limit exceeded: free-models-per-min." in str(error)
    assert isinstance(error.body, dict) and error.body["code"] == 429
    assert isinstance(error.__cause__, httpx.HTTPStatusError)
    assert error.result is not None and error.result.status == "error"
    assert chunks == []


@pytest.mark.anyio
async def test_disconnect_mid_reasoning(wire: WireServer, mode: Mode) -> None:
    # Pieces: two keep-alives, the opening chunk, the first reasoning delta, a keep-alive.
    reply = Reply(Transcript.load("openrouter_reasoning"), disconnect_after=5)
    async with served(wire, mode, reply) as (_, options):
        chunks: list[str] = []
        pipe = OpenRouterPipe("anthropic/claude-sonnet-4", **options)
        with pytest.raises(ProviderError) as caught:
            await drive(pipe.set_streaming_callback(chunks.append), "A haiku.", mode)

    result = caught.value.result
    assert result is not None
    assert result.status == "error"
    assert result.model_reasoning == "The user wants"
    # An unfinished block has no signature yet: nothing is kept for passback.
    assert result.reasoning_state == ()
    assert chunks[-1] == CLOSE
    assert_channel_matches(chunks, result)
    assert isinstance(caught.value.__cause__, httpx.HTTPError)


# ------------------------------------------------------------------------ the request log


@pytest.mark.anyio
async def test_request_body(wire: WireServer, mode: Mode) -> None:
    history = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello.", "thinking": "greet back"},
        {"role": "user", "content": "A haiku."},
    ]
    async with served(wire, mode, "openrouter_reasoning") as (site, options):
        pipe = OpenRouterPipe(
            "anthropic/claude-sonnet-4",
            reasoning_options={"effort": "high", "exclude": False},
            extra_body={"provider": {"order": ["Anthropic"]}, "transforms": []},
            **options,
        )
        await drive(pipe, history, mode)

    [request] = site.requests
    assert request.method == "POST"
    assert request.path == site.prefix + ROUTE
    assert request.headers["authorization"] == "Bearer or-key"
    assert request.headers["accept"] == "text/event-stream"
    assert request.json() == {
        "model": "anthropic/claude-sonnet-4",
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "A haiku."},
        ],
        "stream": True,
        "reasoning": {"effort": "high", "exclude": False},
        "provider": {"order": ["Anthropic"]},
        "transforms": [],
    }


@pytest.mark.anyio
async def test_reasoning_details_go_back_exactly_as_received(wire: WireServer, mode: Mode) -> None:
    async with served(wire, mode, "openrouter_tool_call") as (site, options):
        pipe = OpenRouterPipe("google/gemini-2.5-pro", **options)
        first = await drive(pipe, "Weather in Oslo?", mode)
        turns = [
            HistoryTurn({"role": "user", "content": "Weather in Oslo?"}),
            HistoryTurn(first.message, states=first.reasoning_state, reasoning="ignored"),
            HistoryTurn({"role": "tool", "tool_call_id": "tool_get_weather_x1", "content": "4C"}),
        ]
        await drive(pipe, _History(turns), mode)

    sent = site.requests[1].json()["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "tool_get_weather_x1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
            }
        ],
        "reasoning_details": [
            {
                "type": "reasoning.text",
                "text": "**Finding weather**\nCall the tool.",
                "format": "google-gemini-v1",
                "index": 0,
            },
            {
                "type": "reasoning.encrypted",
                "data": GEMINI_SIGNATURE,
                "id": "tool_get_weather_x1",
                "format": "google-gemini-v1",
                "index": 1,
            },
        ],
    }
    assert sent[2] == {"role": "tool", "tool_call_id": "tool_get_weather_x1", "content": "4C"}


def test_readable_reasoning_goes_back_only_when_asked() -> None:
    turn = HistoryTurn({"role": "assistant", "content": "a"}, reasoning="plan")
    history = _History([HistoryTurn({"role": "user", "content": "q"}), turn])
    default = OpenRouterPipe("deepseek/deepseek-chat-v3.1").build_request(history)
    assert default["messages"][1] == {"role": "assistant", "content": "a"}
    forced = OpenRouterPipe("deepseek/deepseek-chat-v3.1", send_reasoning_back=True)
    assert forced.build_request(history)["messages"][1]["reasoning"] == "plan"


# --------------------------------------------------------------------- clients and config


def test_defaults() -> None:
    pipe = OpenRouterPipe("deepseek/deepseek-r1")
    assert pipe.base_url == pipe.endpoint == "https://openrouter.ai/api/v1"
    assert pipe.transport == "httpx"
    # OpenRouter moves R1's reasoning into its own field: content never starts inside it.
    assert pipe.start_in_reasoning is False
    body = pipe.build_request("Hi")
    assert "stream_options" not in body and "reasoning" not in body
    assert OpenRouterPipe("m", include_usage=True).build_request("Hi")["stream_options"] == {
        "include_usage": True
    }


def test_an_sdk_client_is_refused() -> None:
    client = openai.OpenAI(api_key="k", http_client=openai.DefaultHttpxClient(verify=False))
    with pytest.raises(UsageError, match="httpx"):
        OpenRouterPipe("m", client=client)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_pipe_builds_its_own_clients_with_the_key_from_the_environment(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "env-key")
    site = serve(wire, "openrouter_no_reasoning")
    pipe = OpenRouterPipe("openai/gpt-4o-mini", base_url=root(site))
    try:
        sync_result = await anyio.to_thread.run_sync(pipe.run, "Hi")
        async_result = await pipe.arun("Hi")
    finally:
        pipe.close()
        await pipe.aclose()
    assert sync_result.text == async_result.text == "Hello there."
    assert [r.headers["authorization"] for r in site.requests] == ["Bearer env-key"] * 2


@pytest.mark.anyio
async def test_async_client_with_run_is_a_usage_error() -> None:
    async with httpx.AsyncClient(verify=False) as client:
        pipe = OpenRouterPipe("m", client=client)
        with pytest.raises(UsageError, match="arun"):
            await anyio.to_thread.run_sync(pipe.run, "Hi")


def test_retry_after_forms() -> None:
    assert retry_after_seconds(httpx.Headers({"retry-after": "2.5"})) == 2.5
    assert retry_after_seconds(httpx.Headers({"retry-after-ms": "1500"})) == 1.5
    assert retry_after_seconds(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after_seconds(httpx.Headers({})) is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    waited = retry_after_seconds(httpx.Headers({"retry-after": later}))
    assert waited is not None and 25 <= waited <= 31


def test_a_non_stream_reply_is_a_malformed_stream(wire: WireServer) -> None:
    """A 200 JSON reply (a server ignoring ``stream``) fails clearly, not silently empty."""
    plain = Transcript(path=ROUTE, format="json", events=[{"choices": []}])
    site = serve(wire, plain)
    with httpx.Client(verify=False) as client:
        pipe = OpenRouterPipe("m", base_url=root(site), client=client)
        with pytest.raises(MalformedStreamError, match="not an event stream"):
            pipe.run("Hi")
