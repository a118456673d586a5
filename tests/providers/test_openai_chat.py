"""OpenAIChatPipe through the real ``openai`` SDK (sync and async) and the lean httpx transport,
against WireServer replaying Chat Completions transcripts."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import (
    Finish,
    ProviderError,
    ReasoningDelta,
    ReasoningStream,
    TextDelta,
    ToolCall,
    Usage,
    UsageError,
    UsageReport,
)
from reasoning_stream._turns import HistoryTurn
from reasoning_stream.providers import OpenAIChatPipe
from reasoning_stream.providers.openai_chat import OpenAIChatTranslator, starts_in_reasoning
from reasoning_stream.testing._wire import Reply, Transcript, WireServer
from tests.helpers import coalesce, examples
from tests.providers.conftest import Served, assert_channel_matches, drive, serve

OPEN = ReasoningStream.OPEN_TAG
CLOSE = ReasoningStream.CLOSE_TAG

Mode = Literal["sdk-run", "sdk-arun", "httpx-run", "httpx-arun"]
MODES: tuple[Mode, ...] = ("sdk-run", "sdk-arun", "httpx-run", "httpx-arun")


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> Mode:
    """The transport (openai SDK or httpx) and the driver (``run()`` in a thread or ``arun()``)."""
    return request.param  # type: ignore[no-any-return]


@asynccontextmanager
async def clients(mode: Mode, base_url: str) -> AsyncIterator[dict[str, Any]]:
    """The pipe keywords for ``mode``: the official SDK client, or an httpx client.

    The clients skip TLS setup (the server is plain HTTP on loopback), which keeps each test
    fast; the pipes' own client building is tested separately.
    """
    if mode == "sdk-run":
        http = openai.DefaultHttpxClient(verify=False)
        client: Any = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0, http_client=http)
        try:
            yield {"client": client}
        finally:
            client.close()
    elif mode == "sdk-arun":
        async_http = openai.DefaultAsyncHttpxClient(verify=False)
        client = openai.AsyncOpenAI(
            base_url=base_url, api_key="k", max_retries=0, http_client=async_http
        )
        try:
            yield {"client": client}
        finally:
            await client.close()
    elif mode == "httpx-run":
        with httpx.Client(verify=False) as sync_client:
            yield {
                "transport": "httpx",
                "base_url": base_url,
                "api_key": "k",
                "http_client": sync_client,
            }
    else:
        async with httpx.AsyncClient(verify=False) as async_client:
            yield {
                "transport": "httpx",
                "base_url": base_url,
                "api_key": "k",
                "http_client": async_client,
            }


@asynccontextmanager
async def served(
    wire: WireServer, mode: Mode, *replies: str | Reply
) -> AsyncIterator[tuple[Served, dict[str, Any]]]:
    """Replies on the shared server and the pipe keywords ``mode`` needs to reach them."""
    site = serve(wire, *replies)
    async with clients(mode, site.base_url) as options:
        yield site, options


# ------------------------------------------------------------------------- the core cases


@dataclass(frozen=True)
class Case:
    transcript: str
    model: str
    channel: str
    text: str
    segments: tuple[str, ...]
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"
    status: str = "completed"
    tool_calls: tuple[ToolCall, ...] = ()
    state_kinds: tuple[str, ...] = ()
    response_id: str | None = None


SKY = (
    "The user asks why the sky is blue.\nRayleigh scattering: short wavelengths scatter more "
    "(a literal </think> is just text)."
)
CASES = {
    "reasoning_content": Case(
        "openai_chat_reasoning_content",
        "deepseek-reasoner",
        # The reasoning's own "</think>" is escaped so it cannot pass for a marker.
        channel=OPEN
        + SKY.replace("</think>", "<\\/think>")
        + CLOSE
        + "The sky is blue because air scatters blue light most.",
        text="The sky is blue because air scatters blue light most.",
        segments=(SKY,),
        usage=Usage(input_tokens=14, output_tokens=52, reasoning_tokens=31, cache_read_tokens=0),
        response_id="0f8e2c1a-5b7d-4c9e-a1f3-6d2b8e4c7a90",
    ),
    "reasoning_field": Case(
        "openai_chat_reasoning_field",
        "Qwen/Qwen3-8B",
        channel=OPEN + "Two plus two is four." + CLOSE + "4",
        text="4",
        segments=("Two plus two is four.",),
        usage=Usage(input_tokens=11, output_tokens=9),
    ),
    "reasoning_details": Case(
        "openai_chat_reasoning_details",
        "openai/o4-mini",
        # Two summary blocks (index 0 and 1) stay two segments.
        channel=OPEN
        + "**Plan**\nAdd the numbers."
        + CLOSE
        + OPEN
        + "**Check**\nIt is 4."
        + CLOSE
        + "2 + 2 = 4",
        text="2 + 2 = 4",
        segments=("**Plan**\nAdd the numbers.", "**Check**\nIt is 4."),
        usage=Usage(input_tokens=20, output_tokens=140, reasoning_tokens=128),
        state_kinds=("reasoning_details", "reasoning_details", "reasoning_details", "encrypted"),
    ),
    "duplicate_fields": Case(
        "openai_chat_duplicate_fields",
        "Qwen/QwQ-32B",
        channel=OPEN + "Check the units." + CLOSE + "Use metres.",
        text="Use metres.",
        segments=("Check the units.",),
    ),
    "tool_call": Case(
        "openai_chat_tool_call",
        "deepseek-chat",
        channel=OPEN + "I need the weather and the local time." + CLOSE,
        text="",
        segments=("I need the weather and the local time.",),
        usage=Usage(input_tokens=120, output_tokens=60, reasoning_tokens=12),
        finish_reason="tool_calls",
        tool_calls=(
            ToolCall("call_0_9f2a", "get_weather", '{"city": "Paris"}'),
            ToolCall("call_1_7b3c", "get_time", '{"tz": "CET"}'),
        ),
    ),
    "no_reasoning": Case(
        "openai_chat_no_reasoning",
        "gpt-4o-mini",
        channel="Yes: 2 < 3, and <b> is not a tag here.",
        text="Yes: 2 < 3, and <b> is not a tag here.",
        segments=(),
        usage=Usage(input_tokens=9, output_tokens=12, reasoning_tokens=0),
    ),
    "inline_think": Case(
        "openai_chat_inline_think",
        "Qwen/Qwen3-8B",
        channel=OPEN + "Let me think about é→ß.\n" + CLOSE + "\n\nThe answer is 42 — ünïcode.",
        text="\n\nThe answer is 42 — ünïcode.",
        segments=("Let me think about é→ß.\n",),
        usage=Usage(input_tokens=18, output_tokens=30),
    ),
    "r1_prefilled": Case(
        "openai_chat_r1_prefilled",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
        channel=OPEN + "Okay, the user wants 2+2.\n" + CLOSE + "\n\n2 + 2 = 4.",
        text="\n\n2 + 2 = 4.",
        segments=("Okay, the user wants 2+2.\n",),
    ),
    "length": Case(
        "openai_chat_length",
        "deepseek-reasoner",
        channel=OPEN + "Long proof ahead." + CLOSE + "Step one: assume",
        text="Step one: assume",
        segments=("Long proof ahead.",),
        usage=Usage(input_tokens=30, output_tokens=64, reasoning_tokens=40),
        finish_reason="length",
        status="length",
    ),
}


@pytest.mark.anyio
@pytest.mark.parametrize("case_name", list(CASES))
async def test_core_case(wire: WireServer, mode: Mode, case_name: str) -> None:
    """Each transcript gives the exact channel and capture on every transport and driver."""
    case = CASES[case_name]
    async with served(wire, mode, case.transcript) as (server, options):
        chunks: list[str] = []
        pipe = OpenAIChatPipe(case.model, **options).set_streaming_callback(chunks.append)
        result = await drive(pipe, "Question?", mode)

    assert "".join(chunks) == case.channel
    assert result.text == case.text
    assert result.reasoning_segments == case.segments
    assert result.model_reasoning == "\n".join(case.segments)
    assert result.tool_calls == case.tool_calls
    assert result.usage == case.usage
    assert result.status == case.status
    assert result.finish_reason == case.finish_reason
    assert tuple(state.kind for state in result.reasoning_state) == case.state_kinds
    assert result.provider == "openai-chat"
    assert result.model == case.model
    if case.response_id is not None:
        assert result.response_id == case.response_id
    assert_channel_matches(chunks, result)
    assert pipe.last_result is result

    message = result.message
    assert message["content"] == case.text
    if case.tool_calls:
        assert message["tool_calls"] == [call.to_message() for call in case.tool_calls]
    else:
        assert "tool_calls" not in message
    if case.segments:
        assert message["thinking"] == result.model_reasoning
    else:
        # Not one marker byte when there is no reasoning.
        assert "thinking" not in message
        assert OPEN not in "".join(chunks) and CLOSE not in "".join(chunks)

    [request] = server.requests
    assert request.path == server.prefix + "/v1/chat/completions"
    assert request.json()["stream"] is True


@pytest.mark.anyio
async def test_reasoning_details_kept_verbatim_and_never_in_the_channel(
    wire: WireServer, mode: Mode
) -> None:
    """Each item is merged across its fragments; the encrypted item is also an "encrypted" state."""
    async with served(wire, mode, "openai_chat_reasoning_details") as (_, options):
        chunks: list[str] = []
        pipe = OpenAIChatPipe("openai/o4-mini", **options).set_streaming_callback(chunks.append)
        result = await drive(pipe, "2+2?", mode)

    details = [
        json.loads(s.payload) for s in result.reasoning_state if s.kind == "reasoning_details"
    ]
    assert details == [
        {
            "type": "reasoning.summary",
            "summary": "**Plan**\nAdd the numbers.",
            "id": None,
            "format": "openai-responses-v1",
            "index": 0,
        },
        {
            "type": "reasoning.summary",
            "summary": "**Check**\nIt is 4.",
            "id": None,
            "format": "openai-responses-v1",
            "index": 1,
        },
        {
            "type": "reasoning.encrypted",
            "data": "gAAAAABoEnCrYpTeD-0paque-STATE-xyz==",
            "id": "rs_0a1b2c3d",
            "format": "openai-responses-v1",
            "index": 2,
        },
    ]
    [encrypted] = [s for s in result.reasoning_state if s.kind == "encrypted"]
    assert encrypted.payload == "gAAAAABoEnCrYpTeD-0paque-STATE-xyz=="
    assert encrypted.block == 2
    assert [s.block for s in result.reasoning_state] == [0, 1, 2, 2]
    assert all(s.provider == "openai-chat" for s in result.reasoning_state)
    assert all(s.model == "openai/o4-mini" for s in result.reasoning_state)
    assert "0paque" not in "".join(chunks)
    assert "0paque" not in repr(result)


@pytest.mark.anyio
async def test_flag_off_leaves_capture_unchanged(wire: WireServer, mode: Mode) -> None:
    async with served(wire, mode, "openai_chat_reasoning_content") as (_, options):
        chunks: list[str] = []
        pipe = OpenAIChatPipe("deepseek-reasoner", **options)
        pipe.set_streaming_callback(chunks.append).set_stream_model_reasoning(False)
        result = await drive(pipe, "Why?", mode)

    assert "".join(chunks) == "The sky is blue because air scatters blue light most."
    assert result.model_reasoning == SKY
    assert result.reasoning_segments == (SKY,)
    assert result.text == "The sky is blue because air scatters blue light most."


# ------------------------------------------------------------------------------- failures


@pytest.mark.anyio
async def test_disconnect_mid_reasoning(wire: WireServer, mode: Mode) -> None:
    """The body stops after three events: error, reasoning kept, markers balanced."""
    reply = Reply(Transcript.load("openai_chat_reasoning_content"), disconnect_after=3)
    async with served(wire, mode, reply) as (_, options):
        chunks: list[str] = []
        pipe = OpenAIChatPipe("deepseek-reasoner", **options).set_streaming_callback(chunks.append)
        with pytest.raises(ProviderError) as caught:
            await drive(pipe, "Why?", mode)

    result = caught.value.result
    assert result is not None and result is pipe.last_result
    assert result.status == "error"
    assert result.model_reasoning == "The user asks why the sky is blue.\nRayleigh scattering"
    assert result.text == ""
    assert chunks[-1] == CLOSE
    assert "".join(chunks) == OPEN + result.model_reasoning + CLOSE
    assert_channel_matches(chunks, result)
    assert caught.value.provider == "openai-chat"
    assert caught.value.__cause__ is not None


@pytest.mark.anyio
async def test_error_object_mid_stream(wire: WireServer, mode: Mode) -> None:
    async with served(wire, mode, "openai_chat_stream_error") as (_, options):
        chunks: list[str] = []
        pipe = OpenAIChatPipe("Qwen/Qwen3-8B", **options).set_streaming_callback(chunks.append)
        with pytest.raises(ProviderError) as caught:
            await drive(pipe, "List.", mode)

    error = caught.value
    assert "The engine died while generating." in str(error)
    assert error.status_code == 500
    result = error.result
    assert result is not None
    assert result.status == "error"
    assert result.model_reasoning == "Start by listing"
    assert "".join(chunks) == OPEN + "Start by listing" + CLOSE
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_http_429(wire: WireServer, mode: Mode) -> None:
    async with served(wire, mode, "openai_chat_rate_limit") as (_, options):
        chunks: list[str] = []
        pipe = OpenAIChatPipe("o4-mini", **options).set_streaming_callback(chunks.append)
        with pytest.raises(ProviderError) as caught:
            await drive(pipe, "Hi", mode)

    error = caught.value
    assert error.status_code == 429
    assert error.retry_after == 7.0
    assert "Rate limit reached for o4-mini" in str(error)
    assert isinstance(error.body, dict) and error.body["code"] == "rate_limit_exceeded"
    assert error.__cause__ is not None
    assert error.result is not None and error.result.status == "error"
    assert chunks == []


# ---------------------------------------------------------------------------- inline tags


INLINE_CHANNEL = CASES["inline_think"].channel


@pytest.mark.anyio
async def test_inline_tags_byte_by_byte(wire: WireServer, mode: Mode) -> None:
    """Every SSE body byte arrives alone (mid-tag, mid-UTF-8 character): same result."""
    reply = Reply(Transcript.load("openai_chat_inline_think"), chunk_size=1)
    async with served(wire, mode, reply) as (_, options):
        chunks: list[str] = []
        pipe = OpenAIChatPipe("Qwen/Qwen3-8B", **options).set_streaming_callback(chunks.append)
        result = await drive(pipe, "Answer?", mode)

    assert "".join(chunks) == INLINE_CHANNEL
    assert result.model_reasoning == "Let me think about é→ß.\n"
    assert result.text == "\n\nThe answer is 42 — ünïcode."


@pytest.mark.parametrize("transport", ["sdk", "httpx"])
def test_inline_tags_cut_at_every_offset(wire: WireServer, transport: str) -> None:
    """Every byte offset of the body is a cut of some request, among different neighbours.

    Request ``r`` of stride ``p`` is cut at offsets ``r+1, r+1+p, ...``: each offset is cut
    once per stride, so the decoders see every split point without one request per offset.
    """
    transcript = Transcript.load("openai_chat_inline_think")
    size = len(transcript.encode())
    replies = [
        Reply(transcript, cut_points=range(first, size, stride))
        for stride in (5, 23, 97)
        for first in range(1, stride + 1)
    ]
    site = serve(wire, *replies)
    if transport == "sdk":
        http = openai.DefaultHttpxClient(verify=False)
        client: Any = openai.OpenAI(
            base_url=site.base_url, api_key="k", max_retries=0, http_client=http
        )
        pipe = OpenAIChatPipe("Qwen/Qwen3-8B", client=client)
    else:
        client = httpx.Client(verify=False)
        pipe = OpenAIChatPipe(
            "Qwen/Qwen3-8B", transport="httpx", base_url=site.base_url, http_client=client
        )
    seen = set()
    with client:
        for _ in replies:
            chunks: list[str] = []
            pipe.set_streaming_callback(chunks.append)
            result = pipe.run("Answer?")
            pipe.remove_streaming_callback(chunks.append)
            seen.add(("".join(chunks), result.model_reasoning, result.text, result.status))
    assert seen == {
        (
            INLINE_CHANNEL,
            "Let me think about é→ß.\n",
            "\n\nThe answer is 42 — ünïcode.",
            "completed",
        )
    }
    assert len(site.requests) == len(replies)


@pytest.mark.anyio
async def test_inline_tags_off_keeps_tags_as_text(wire: WireServer, mode: Mode) -> None:
    async with served(wire, mode, "openai_chat_inline_think") as (_, options):
        chunks: list[str] = []
        pipe = OpenAIChatPipe("Qwen/Qwen3-8B", inline_tags=False, **options)
        result = await drive(pipe.set_streaming_callback(chunks.append), "Answer?", mode)

    raw = "<think>Let me think about é→ß.\n</think>\n\nThe answer is 42 — ünïcode."
    assert result.text == raw
    assert result.model_reasoning == ""
    # Escaped in the channel, so the tags come back as text.
    assert "".join(chunks) == raw.replace("<think>", "<\\think>").replace("</think>", "<\\/think>")
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_r1_start_in_reasoning_can_be_turned_off(wire: WireServer, mode: Mode) -> None:
    async with served(wire, mode, "openai_chat_r1_prefilled") as (_, options):
        pipe = OpenAIChatPipe(
            "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", start_in_reasoning=False, **options
        )
        result = await drive(pipe, "2+2?", mode)
    # A stray leading close is dropped; everything is answer text.
    assert result.model_reasoning == ""
    assert result.text == "Okay, the user wants 2+2.\n\n\n2 + 2 = 4."


def test_model_ids_known_to_start_inside_reasoning() -> None:
    assert starts_in_reasoning("deepseek-ai/DeepSeek-R1")
    assert starts_in_reasoning("DeepSeek-R1-0528")
    assert starts_in_reasoning("deepseek-ai/DeepSeek-R1-Distill-Llama-70B")
    assert starts_in_reasoning("bartowski/DeepSeek-R1-Distill-Qwen-7B-GGUF")
    assert starts_in_reasoning("some-org/r1-distill-qwen")
    assert not starts_in_reasoning("deepseek-reasoner")
    assert not starts_in_reasoning("deepseek-chat")
    assert not starts_in_reasoning("Qwen/Qwen3-8B")
    assert OpenAIChatPipe("deepseek-r1:14b", base_url="http://x/v1").start_in_reasoning
    assert not OpenAIChatPipe("deepseek-reasoner", base_url="http://x/v1").start_in_reasoning


# ------------------------------------------------------------------------ the request log


@pytest.mark.anyio
async def test_request_body(wire: WireServer, mode: Mode) -> None:
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello.", "thinking": "greet back"},
        {"role": "user", "content": "Why is the sky blue?"},
    ]
    extra = {"chat_template_kwargs": {"enable_thinking": True}, "top_k": 20}
    async with served(wire, mode, "openai_chat_reasoning_content") as (server, options):
        pipe = OpenAIChatPipe("deepseek-reasoner", extra_body=extra, **options)
        await drive(pipe, history, mode)

    [request] = server.requests
    assert request.method == "POST"
    assert request.path == server.prefix + "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer k"
    body = request.json()
    assert body["model"] == "deepseek-reasoner"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["chat_template_kwargs"] == {"enable_thinking": True}
    assert body["top_k"] == 20
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Why is the sky blue?"},
    ]
    assert all("thinking" not in message for message in body["messages"])


def test_include_usage_off_and_extra_body_override() -> None:
    pipe = OpenAIChatPipe(
        "m", base_url="http://x/v1", include_usage=False, extra_body={"grammar": "root ::= x"}
    )
    body = pipe.build_request("Hi")
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "grammar": "root ::= x",
    }


class _History:
    """A prompt that hands the pipe prepared turns, as a Conversation does."""

    def __init__(self, turns: list[HistoryTurn]) -> None:
        self._turns = turns

    def turns_for(self, pipe: Any) -> list[HistoryTurn]:
        return self._turns


TOOL_TURN = {
    "role": "assistant",
    "content": "",
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
}


def _assistant(pipe: OpenAIChatPipe, turn: HistoryTurn) -> dict[str, Any]:
    history = _History([HistoryTurn({"role": "user", "content": "q"}), turn])
    message: dict[str, Any] = pipe.build_request(history)["messages"][1]
    return message


def test_reasoning_passback_policy() -> None:
    with_tools = HistoryTurn(TOOL_TURN, reasoning="plan")
    without_tools = HistoryTurn({"role": "assistant", "content": "a"}, reasoning="plan")

    deepseek = OpenAIChatPipe("deepseek-chat", base_url="http://x/v1")
    assert _assistant(deepseek, with_tools)["reasoning_content"] == "plan"
    assert "reasoning_content" not in _assistant(deepseek, without_tools)

    kimi = OpenAIChatPipe("moonshotai/Kimi-K2-Thinking", base_url="http://x/v1")
    assert _assistant(kimi, without_tools)["reasoning_content"] == "plan"

    plain = OpenAIChatPipe("gpt-4o", base_url="http://x/v1")
    assert "reasoning_content" not in _assistant(plain, with_tools)
    forced = OpenAIChatPipe("gpt-4o", base_url="http://x/v1", send_reasoning_back=True)
    assert _assistant(forced, without_tools)["reasoning_content"] == "plan"
    never = OpenAIChatPipe("deepseek-chat", base_url="http://x/v1", send_reasoning_back=False)
    assert "reasoning_content" not in _assistant(never, with_tools)


@pytest.mark.anyio
async def test_reasoning_details_go_back_on_the_assistant_message(
    wire: WireServer, mode: Mode
) -> None:
    """States from a first run return as that turn's ``reasoning_details``, exactly as kept."""
    async with served(wire, mode, "openai_chat_reasoning_details") as (server, options):
        pipe = OpenAIChatPipe("openai/o4-mini", **options)
        first = await drive(pipe, "2+2?", mode)
        turns = [
            HistoryTurn({"role": "user", "content": "2+2?"}),
            HistoryTurn(first.message, states=first.reasoning_state),
            HistoryTurn({"role": "user", "content": "And 3+3?"}),
        ]
        await drive(pipe, _History(turns), mode)

    sent = server.requests[1].json()["messages"][1]
    assert sent["role"] == "assistant"
    assert sent["content"] == "2 + 2 = 4"
    assert "thinking" not in sent
    assert sent["reasoning_details"] == [
        json.loads(s.payload) for s in first.reasoning_state if s.kind == "reasoning_details"
    ]
    assert "reasoning_content" not in sent


def test_states_of_another_model_are_not_sent() -> None:
    pipe = OpenAIChatPipe("model-a", base_url="http://x/v1")
    other = OpenAIChatPipe("model-b", base_url="http://x/v1").translator()
    other.feed({"choices": [{"delta": {"reasoning_details": [{"type": "reasoning.text"}]}}]})
    states = tuple(e.state for e in other.finish() if e.kind == "opaque_state")
    assert states
    message = _assistant(pipe, HistoryTurn({"role": "assistant", "content": ""}, states=states))
    assert "reasoning_details" not in message


# --------------------------------------------------------------------- clients and modes


def test_async_client_with_run_is_a_usage_error() -> None:
    client = openai.AsyncOpenAI(
        base_url="http://127.0.0.1:9/v1",
        api_key="k",
        http_client=openai.DefaultAsyncHttpxClient(verify=False),
    )
    pipe = OpenAIChatPipe("m", client=client)
    with pytest.raises(UsageError, match="arun"):
        pipe.run("Hi")


@pytest.mark.anyio
async def test_sync_client_with_arun_runs_in_a_thread(wire: WireServer) -> None:
    site = serve(wire, "openai_chat_reasoning_field")
    async with clients("sdk-run", site.base_url) as options:
        chunks: list[str] = []
        pipe = OpenAIChatPipe("Qwen/Qwen3-8B", **options).set_streaming_callback(chunks.append)
        result = await pipe.arun("2+2?")
    assert "".join(chunks) == CASES["reasoning_field"].channel
    assert result.text == "4"


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["sdk", "httpx"])
async def test_pipe_builds_its_own_clients(wire: WireServer, transport: str) -> None:
    """From ``base_url`` and ``api_key``: a sync client for run(), an async one for arun()."""
    site = serve(wire, "openai_chat_reasoning_field")
    pipe = OpenAIChatPipe(
        "Qwen/Qwen3-8B",
        base_url=site.base_url,
        api_key="secret",
        transport=transport,  # type: ignore[arg-type]
    )
    try:
        sync_result = await anyio.to_thread.run_sync(pipe.run, "2+2?")
        async_result = await pipe.arun("2+2?")
        again = await pipe.arun("2+2?")
    finally:
        pipe.close()
        await pipe.aclose()
    assert sync_result.text == async_result.text == again.text == "4"
    assert sync_result.model_reasoning == async_result.model_reasoning == "Two plus two is four."
    assert [r.headers["authorization"] for r in site.requests] == ["Bearer secret"] * 3
    assert pipe.endpoint == site.base_url


@pytest.mark.anyio
async def test_httpx_transport_with_a_client_that_has_the_base_url(wire: WireServer) -> None:
    site = serve(wire, "openai_chat_tool_call")
    async with httpx.AsyncClient(base_url=site.base_url, verify=False) as http:
        pipe = OpenAIChatPipe("deepseek-chat", transport="httpx", http_client=http)
        result = await pipe.arun("Weather and time?")
    assert [call.name for call in result.tool_calls] == ["get_weather", "get_time"]
    # A given client brings its own credentials: no key is read from the environment.
    assert "authorization" not in site.requests[0].headers
    assert pipe.endpoint == site.base_url


def test_misuse_is_reported_at_construction() -> None:
    with pytest.raises(UsageError, match="transport"):
        OpenAIChatPipe("m", transport="grpc")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="inline_tags"):
        OpenAIChatPipe("m", inline_tags="yes")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="http_client"):
        OpenAIChatPipe("m", http_client=httpx.Client(verify=False))
    sdk_client = openai.OpenAI(api_key="k", http_client=openai.DefaultHttpxClient(verify=False))
    with pytest.raises(UsageError, match="httpx"):
        OpenAIChatPipe("m", transport="httpx", client=sdk_client)
    with pytest.raises(ValueError):
        OpenAIChatPipe("m", tags=["bad tag"])


# ------------------------------------------------------------------ the translator alone


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "x", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _feed_all(translator: OpenAIChatTranslator, chunks: list[dict[str, Any]]) -> list[Any]:
    events: list[Any] = []
    for chunk in chunks:
        events += translator.feed(chunk)
    return events + translator.finish()


def test_auto_inline_tags_stop_once_native_reasoning_appears() -> None:
    translator = OpenAIChatTranslator(provider="p", model="m")
    events = _feed_all(
        translator,
        [
            _chunk({"content": "a <thi"}),
            _chunk({"reasoning_content": "native"}),
            _chunk({"content": "<think>literal</think>"}, "stop"),
        ],
    )
    # The held "<thi" is released as text when the scanner is switched off.
    assert coalesce(events) == [
        TextDelta("a <thi"),
        ReasoningDelta("native"),
        TextDelta("<think>literal</think>"),
        Finish("stop"),
    ]


def test_inline_tags_true_keeps_scanning_after_native_reasoning() -> None:
    translator = OpenAIChatTranslator(provider="p", model="m", inline_tags=True)
    events = _feed_all(
        translator,
        [_chunk({"reasoning_content": "native"}), _chunk({"content": "<think>more</think>ok"})],
    )
    texts = [(type(e).__name__, getattr(e, "text", None)) for e in coalesce(events)]
    assert ("ReasoningDelta", "more") in texts
    assert texts[-1] == ("TextDelta", "ok")


def test_null_and_empty_fields_never_become_text() -> None:
    translator = OpenAIChatTranslator(provider="p", model="m")
    events = _feed_all(
        translator,
        [
            _chunk({"content": None, "reasoning_content": None, "reasoning": None}),
            _chunk({"content": "", "reasoning": "", "reasoning_details": []}),
            {"id": "x", "choices": [], "usage": None},
            {"id": "x", "choices": [{"index": 1, "delta": {"content": "other choice"}}]},
        ],
    )
    assert events == []


def test_finish_reason_error_without_an_error_object_still_fails() -> None:
    translator = OpenAIChatTranslator(provider="p", model="m")
    assert translator.feed(_chunk({"content": "par"})) == [TextDelta("par")]
    with pytest.raises(ProviderError, match="finish_reason 'error'"):
        translator.feed(_chunk({"content": ""}, "error"))


def test_usage_on_a_sdk_free_dict_and_other_finish_reasons() -> None:
    translator = OpenAIChatTranslator(provider="p", model="m")
    events = translator.feed(
        {
            "choices": [{"index": 0, "delta": {"refusal": "I can't."}, "finish_reason": "eos"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4},
        }
    )
    assert events == [
        TextDelta("I can't."),
        Finish("stop"),
        UsageReport(Usage(input_tokens=3, output_tokens=4)),
    ]


def test_tool_calls_without_index_are_split_by_id() -> None:
    translator = OpenAIChatTranslator(provider="p", model="m")
    events = _feed_all(
        translator,
        [
            _chunk({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]}),
            _chunk({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{"}}]}),
            _chunk({"tool_calls": [{"function": {"arguments": "}"}}]}, "tool_calls"),
        ],
    )
    assert events == [ToolCall("a", "f", "{}"), ToolCall("b", "g", "{}"), Finish("tool_calls")]


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=8))
def test_any_chunking_of_inline_content_gives_the_same_events(cuts: list[int]) -> None:
    content = "<think>Plan: é→ß <b> and </thinking \t>x</think>Answer <thin"
    bounds = sorted({min(c, len(content)) for c in cuts} | {0, len(content)})
    pieces = [content[a:b] for a, b in itertools.pairwise(bounds)]
    whole = _feed_all(OpenAIChatTranslator(provider="p", model="m"), [_chunk({"content": content})])
    split = _feed_all(
        OpenAIChatTranslator(provider="p", model="m"), [_chunk({"content": p}) for p in pieces]
    )
    assert coalesce(split) == coalesce(whole)
