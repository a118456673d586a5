"""OllamaPipe through the real ``ollama`` SDK (Client and AsyncClient) against WireServer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import ollama
import pytest

from reasoning_stream import (
    Finish,
    ProviderError,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ReasoningState,
    ReasoningStream,
    TextDelta,
    ToolCall,
    Usage,
    UsageError,
    UsageReport,
)
from reasoning_stream._turns import HistoryTurn
from reasoning_stream.providers import OllamaPipe
from reasoning_stream.providers.ollama import OllamaTranslator
from reasoning_stream.testing._wire import Reply, Transcript, WireServer
from tests.providers.conftest import Mode, assert_channel_matches, drive

OPEN = ReasoningStream.OPEN_TAG
CLOSE = ReasoningStream.CLOSE_TAG


@asynccontextmanager
async def served(mode: Mode, *replies: Any) -> AsyncIterator[tuple[WireServer, Any]]:
    """A WireServer with ``replies`` and the official SDK client that ``mode`` needs."""
    async with WireServer(*replies) as server:
        if mode == "run":
            client: Any = ollama.Client(host=server.url)
            try:
                yield server, client
            finally:
                client.close()
        else:
            client = ollama.AsyncClient(host=server.url)
            try:
                yield server, client
            finally:
                await client.close()


TIMINGS = {
    "total_duration": 2.5,
    "load_duration": 0.5,
    "prompt_eval_duration": 0.1,
    "eval_duration": 1.6,
}


# ------------------------------------------------------------------------------ chat API


@pytest.mark.anyio
async def test_chat_reasoning_then_answer(mode: Mode) -> None:
    async with served(mode, "ollama_chat_reasoning") as (server, client):
        chunks: list[str] = []
        pipe = OllamaPipe("qwen3", client=client, think=True)
        pipe.set_streaming_callback(chunks.append)
        result = await drive(pipe, "What is 2+2?", mode)

    reasoning = "The user asks for 2+2. Easy: <think> is just text here."
    # The reasoning's own "<think>" is escaped so it cannot pass for a marker.
    assert "".join(chunks) == (
        OPEN + "The user asks for 2+2. Easy: <\\think> is just text here." + CLOSE + "2 + 2 = 4."
    )
    assert result.text == "2 + 2 = 4."
    assert result.model_reasoning == reasoning
    assert result.reasoning_segments == (reasoning,)
    assert result.reasoning_state == ()
    assert result.tool_calls == ()
    assert result.usage == Usage(input_tokens=12, output_tokens=40, reasoning_tokens=None)
    assert result.status == "completed"
    assert result.finish_reason == "stop"
    assert result.provider == "ollama"
    assert pipe.last_server_timings == pytest.approx(TIMINGS)
    assert_channel_matches(chunks, result)

    [request] = server.requests
    assert request.path == "/api/chat"
    body = request.json()
    assert body["model"] == "qwen3"
    assert body["think"] is True
    assert body["stream"] is True
    assert body["messages"] == [{"role": "user", "content": "What is 2+2?"}]


@pytest.mark.anyio
async def test_chat_reasoning_around_tool_calls(mode: Mode) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    async with served(mode, "ollama_chat_tool_call") as (server, client):
        chunks: list[str] = []
        pipe = OllamaPipe("qwen3", client=client, think=True, tools=tools)
        result = await drive(pipe.set_streaming_callback(chunks.append), "Paris or Tokyo?", mode)

    assert "".join(chunks) == OPEN + "I need the weather for both cities." + CLOSE
    assert result.text == ""
    assert result.model_reasoning == "I need the weather for both cities."
    assert result.reasoning_segments == ("I need the weather for both cities.",)
    assert result.tool_calls == (
        ToolCall("call_0", "get_weather", '{"city": "Paris", "unit": "c"}'),
        ToolCall("call_1", "get_weather", '{"city": "Tokyo"}'),
    )
    assert result.usage == Usage(input_tokens=80, output_tokens=31)
    assert result.finish_reason == "stop"
    assert result.status == "completed"
    assert_channel_matches(chunks, result)
    body = server.requests[0].json()
    assert body["tools"][0]["function"]["name"] == "get_weather"


@pytest.mark.anyio
async def test_chat_without_reasoning_sends_no_marker(mode: Mode) -> None:
    async with served(mode, "ollama_chat_plain") as (_, client):
        chunks: list[str] = []
        pipe = OllamaPipe("llama3.2", client=client).set_streaming_callback(chunks.append)
        result = await drive(pipe, "hi", mode)

    assert chunks == ["Hello", ", world!"]
    assert result.text == "Hello, world!"
    assert result.model_reasoning == ""
    assert result.reasoning_segments == ()
    assert result.usage == Usage(input_tokens=9, output_tokens=4)
    assert result.status == "completed"
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_error_line_mid_stream_raises_and_keeps_reasoning(mode: Mode) -> None:
    async with served(mode, "ollama_chat_error_midstream") as (_, client):
        chunks: list[str] = []
        pipe = OllamaPipe("qwen3", client=client, think=True).set_streaming_callback(chunks.append)
        with pytest.raises(ProviderError) as caught:
            await drive(pipe, "go", mode)

    error = caught.value
    assert "unexpected EOF" in str(error)
    assert error.provider == "ollama"
    assert error.status_code is None
    assert isinstance(error.__cause__, ollama.ResponseError)
    result = error.result
    assert result is pipe.last_result
    assert result is not None
    assert result.status == "error"
    assert result.model_reasoning == "Working on it"
    assert result.text == ""
    # The segment was open when the stream broke: the channel still closes it.
    assert "".join(chunks) == OPEN + "Working on it" + CLOSE
    split = ReasoningStream.split("".join(chunks), lossless=True)
    assert not split.truncated
    assert (split.reasoning, split.text) == (result.model_reasoning, result.text)


@pytest.mark.anyio
async def test_connection_cut_inside_a_line(mode: Mode) -> None:
    transcript = Transcript.load("ollama_chat_reasoning")
    lengths = [len(chunk) for chunk in transcript.chunks()]
    cut = sum(lengths[:3]) + lengths[3] // 2  # halfway through the first answer line
    async with served(mode, Reply(transcript, disconnect_at_byte=cut)) as (_, client):
        chunks: list[str] = []
        pipe = OllamaPipe("qwen3", client=client, think=True).set_streaming_callback(chunks.append)
        with pytest.raises(ProviderError) as caught:
            await drive(pipe, "go", mode)

    result = caught.value.result
    assert result is not None
    assert result.status == "error"
    assert result.model_reasoning == "The user asks for 2+2. Easy: <think> is just text here."
    assert result.text == ""
    assert "".join(chunks).endswith(CLOSE)
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_http_error_status(mode: Mode) -> None:
    async with served(mode, "ollama_chat_http_error") as (_, client):
        pipe = OllamaPipe("nope", client=client)
        with pytest.raises(ProviderError) as caught:
            await drive(pipe, "hi", mode)

    error = caught.value
    assert error.status_code == 404
    assert 'model "nope" not found' in str(error)
    assert error.result is not None
    assert error.result.status == "error"
    assert pipe.last_result is error.result


@pytest.mark.anyio
async def test_flag_off_keeps_reasoning_out_of_the_channel(mode: Mode) -> None:
    async with served(mode, "ollama_chat_reasoning", "ollama_chat_reasoning") as (_, client):
        on_chunks: list[str] = []
        on = await drive(
            OllamaPipe("qwen3", client=client, think=True).set_streaming_callback(on_chunks.append),
            "q",
            mode,
        )
        off_chunks: list[str] = []
        pipe = OllamaPipe("qwen3", client=client, think=True)
        pipe.set_stream_model_reasoning(False).set_streaming_callback(off_chunks.append)
        off = await drive(pipe, "q", mode)

    assert off_chunks == ["2 + 2 ", "= 4."]
    assert (off.text, off.model_reasoning, off.reasoning_segments, off.usage) == (
        on.text,
        on.model_reasoning,
        on.reasoning_segments,
        on.usage,
    )
    assert off.model_reasoning != ""
    assert OPEN in "".join(on_chunks)


@pytest.mark.anyio
async def test_think_level_and_options_reach_the_request(mode: Mode) -> None:
    async with served(mode, "ollama_chat_reasoning") as (server, client):
        pipe = OllamaPipe(
            "gpt-oss:20b",
            client=client,
            think="high",
            options={"temperature": 0.2},
            extra_body={"options": {"num_ctx": 8192}, "keep_alive": "5m"},
        )
        await drive(
            pipe,
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "q"}],
            mode,
        )

    body = server.requests[0].json()
    assert body["think"] == "high"
    assert body["options"] == {"temperature": 0.2, "num_ctx": 8192}
    assert body["keep_alive"] == "5m"
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}


@pytest.mark.anyio
async def test_inline_tags_split_across_lines_with_think_off(mode: Mode) -> None:
    # Re-chunked into 7-byte HTTP pieces too: the SDK reassembles lines, the scanner tags.
    async with served(mode, Reply(Transcript.load("ollama_chat_inline_tags"), chunk_size=7)) as (
        server,
        client,
    ):
        chunks: list[str] = []
        pipe = OllamaPipe("deepseek-r1", client=client, think=False)
        result = await drive(pipe.set_streaming_callback(chunks.append), "2+2?", mode)

    assert "".join(chunks) == OPEN + "Let me check." + CLOSE + "The answer is 4."
    assert result.model_reasoning == "Let me check."
    assert result.reasoning_segments == ("Let me check.",)
    assert result.text == "The answer is 4."
    assert result.usage == Usage(input_tokens=10, output_tokens=14)
    assert_channel_matches(chunks, result)
    assert server.requests[0].json()["think"] is False


@pytest.mark.anyio
async def test_inline_tags_off_leaves_tags_as_text(mode: Mode) -> None:
    async with served(mode, "ollama_chat_inline_tags") as (_, client):
        chunks: list[str] = []
        pipe = OllamaPipe("deepseek-r1", client=client, inline_tags=False)
        result = await drive(pipe.set_streaming_callback(chunks.append), "2+2?", mode)

    assert result.model_reasoning == ""
    assert result.text == "<think>Let me check.</think>The answer is 4."
    assert OPEN not in "".join(chunks)  # escaped on the channel
    assert_channel_matches(chunks, result)


# -------------------------------------------------------------------------- generate API


@pytest.mark.anyio
async def test_generate_api_thinking(mode: Mode) -> None:
    async with served(mode, "ollama_generate_reasoning") as (server, client):
        chunks: list[str] = []
        pipe = OllamaPipe("qwen3", client=client, api="generate", think=True)
        prompt = [
            {"role": "system", "content": "Count carefully."},
            {"role": "user", "content": "How many r's in strawberry?"},
        ]
        result = await drive(pipe.set_streaming_callback(chunks.append), prompt, mode)

    assert "".join(chunks) == OPEN + "Counting the r's: three." + CLOSE + "There are 3 r's."
    assert result.model_reasoning == "Counting the r's: three."
    assert result.text == "There are 3 r's."
    assert result.finish_reason == "length"
    assert result.status == "length"
    assert result.usage == Usage(input_tokens=7, output_tokens=25)
    assert pipe.last_server_timings == pytest.approx(
        {
            "total_duration": 0.9,
            "load_duration": 0.01,
            "prompt_eval_duration": 0.02,
            "eval_duration": 0.8,
        }
    )
    assert_channel_matches(chunks, result)
    [request] = server.requests
    assert request.path == "/api/generate"
    body = request.json()
    assert body["prompt"] == "How many r's in strawberry?"
    assert body["system"] == "Count carefully."
    assert body["think"] is True


def test_generate_api_refuses_a_conversation() -> None:
    pipe = OllamaPipe("qwen3", api="generate")
    with pytest.raises(UsageError, match="api='chat'"):
        pipe.build_request(
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
        )


# ------------------------------------------------------------------ history and clients


@pytest.mark.anyio
async def test_history_never_resends_reasoning(mode: Mode) -> None:
    async with served(mode, "ollama_chat_tool_call", "ollama_chat_plain") as (server, client):
        pipe = OllamaPipe("qwen3", client=client, think=True)
        first = await drive(pipe, "weather?", mode)
        assert first.message["thinking"] == "I need the weather for both cities."
        history = [
            {"role": "user", "content": "weather?"},
            first.message,
            {"role": "tool", "tool_call_id": "call_0", "content": "18C"},
            {"role": "tool", "tool_call_id": "call_1", "content": "25C"},
        ]
        await drive(pipe, history, mode)

    messages = server.requests[1].json()["messages"]
    assert messages == [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "tool_calls": [
                {"function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}},
                {"function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}},
            ],
        },
        {"role": "tool", "content": "18C", "tool_name": "get_weather"},
        {"role": "tool", "content": "25C", "tool_name": "get_weather"},
    ]
    assert "thinking" not in server.requests[1].body.decode()


def test_history_turn_states_and_reasoning_are_not_sent() -> None:
    state = ReasoningState("ollama", "qwen3", "signature", "SECRET-STATE")

    class Conversation:
        def turns_for(self, pipe: Any) -> list[HistoryTurn]:
            return [
                HistoryTurn({"role": "user", "content": "a"}),
                HistoryTurn({"role": "assistant", "content": "b"}, (state,), "old thoughts"),
                HistoryTurn({"role": "user", "content": "c"}),
            ]

    request = OllamaPipe("qwen3").build_request(Conversation())
    assert request["messages"] == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ]
    assert "old thoughts" not in json.dumps(request)
    assert "SECRET-STATE" not in json.dumps(request)


@pytest.mark.anyio
async def test_pipe_builds_its_own_client_from_base_url(mode: Mode) -> None:
    async with WireServer("ollama_chat_reasoning") as server:
        pipe = OllamaPipe("qwen3", base_url=server.url, think=True, api_key="ollama-key")
        result = await drive(pipe, "q", mode)
        assert pipe.endpoint == server.url
    assert result.text == "2 + 2 = 4."
    assert server.requests[0].headers["authorization"] == "Bearer ollama-key"


@pytest.mark.anyio
async def test_arun_with_only_a_sync_client_runs_it_in_a_thread() -> None:
    async with WireServer("ollama_chat_reasoning") as server:
        with ollama.Client(host=server.url) as client:
            result = await OllamaPipe("qwen3", client=client, think=True).arun("q")
    assert result.text == "2 + 2 = 4."
    assert result.model_reasoning.startswith("The user asks")


def test_run_with_only_an_async_client_is_a_usage_error() -> None:
    pipe = OllamaPipe("qwen3", client=ollama.AsyncClient(host="http://127.0.0.1:9"))
    with pytest.raises(UsageError, match="arun"):
        pipe.run("q")
    assert pipe.last_result is not None
    assert pipe.last_result.status == "error"


def test_unknown_extra_body_key_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not_a_field"):
        OllamaPipe("qwen3", extra_body={"not_a_field": 1}).build_request("q")


# ------------------------------------------------------------------- translator, pure


def line(**message: Any) -> dict[str, Any]:
    return {"message": {"role": "assistant", **message}, "done": False}


def test_translator_auto_inline_tags_stop_once_native_thinking_appears() -> None:
    translator = OllamaTranslator(model="qwen3")
    events = [
        *translator.feed(line(thinking="plan")),
        *translator.feed(line(content="<think>not a tag</think> ok")),
        *translator.finish(),
    ]
    assert events == [
        ReasoningDelta("plan"),
        ReasoningEnd(),
        TextDelta("<think>not a tag</think> ok"),
    ]


def test_translator_inline_tags_before_native_thinking_are_flushed() -> None:
    translator = OllamaTranslator(model="m")
    events = [
        *translator.feed(line(content="<think>a</thi")),
        *translator.feed(line(thinking="b")),
        *translator.feed(line(content="c")),
        *translator.finish(),
    ]
    assert events == [
        ReasoningStart(),
        ReasoningDelta("a"),
        ReasoningDelta("</thi"),
        ReasoningEnd(),
        ReasoningDelta("b"),
        ReasoningEnd(),
        TextDelta("c"),
    ]


def test_translator_start_in_reasoning_and_custom_tags() -> None:
    translator = OllamaTranslator(model="m", start_in_reasoning=True, tags=["reason"])
    events = [*translator.feed(line(content="x</reason>y")), *translator.finish()]
    assert events == [ReasoningStart(), ReasoningDelta("x"), ReasoningEnd(), TextDelta("y")]


def test_translator_null_fields_and_done_line() -> None:
    translator = OllamaTranslator(model="m")
    events = translator.feed(
        {
            "message": {"role": "assistant", "content": None, "thinking": None},
            "done": True,
            "done_reason": None,
            "eval_count": 3,
        }
    )
    assert events == [UsageReport(Usage(output_tokens=3)), Finish("stop")]
    assert translator.finish() == []
    assert translator.server_timings is None


def test_translator_keeps_a_server_call_id_when_a_dict_carries_one() -> None:
    translator = OllamaTranslator(model="m", inline_tags=False)
    call = {"id": "call_xyz", "function": {"name": "f", "arguments": {"a": [1, "é"]}}}
    assert translator.feed(line(tool_calls=[call])) == [
        ToolCall("call_xyz", "f", '{"a": [1, "é"]}')
    ]
