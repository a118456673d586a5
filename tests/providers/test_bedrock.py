"""BedrockPipe through a real boto3 ``bedrock-runtime`` client: run(), arun() on asyncio and trio.

boto3 is sync only: ``run()`` iterates its EventStream directly and ``arun()`` reads it in
worker threads. WireServer replays the bundled ``bedrock_*`` transcripts as AWS event-stream
frames at ``POST /model/{modelId}/converse-stream`` and ``/invoke-with-response-stream``.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import ReasoningStream
from reasoning_stream._events import (
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ReasoningState,
    TextDelta,
    ToolCall,
    Usage,
    UsageReport,
)
from reasoning_stream._exceptions import (
    CallbackError,
    MalformedStreamError,
    ProviderError,
    UsageError,
)
from reasoning_stream._pipe import PipeResult
from reasoning_stream._turns import HistoryTurn
from reasoning_stream.providers import BedrockPipe
from reasoning_stream.providers.bedrock import (
    ConverseStreamTranslator,
    InvokeStreamTranslator,
    TextInvokeTranslator,
)
from reasoning_stream.testing._wire import Transcript, WireServer
from tests.helpers import examples
from tests.providers.conftest import assert_channel_matches, bedrock_client, flavour_backend

OPEN = ReasoningStream.OPEN_TAG
CLOSE = ReasoningStream.CLOSE_TAG
CLAUDE = "us.anthropic.claude-sonnet-4-20250514-v1:0"
DEEPSEEK = "us.deepseek.r1-v1:0"
THINKING = {"thinking": {"type": "enabled", "budget_tokens": 2048}}
REGION = "us-east-1"

anyio_backend = flavour_backend
"""Each flavour's event loop, under the name the anyio plugin asks for."""


# ----------------------------------------------------------------------------- drivers


@dataclass
class Drive:
    """Builds a pipe for the flavour under test and runs it."""

    flavour: str

    def pipe(
        self, server: WireServer, model: str = CLAUDE, **options: Any
    ) -> tuple[BedrockPipe, list[str]]:
        chunks: list[str] = []
        pipe = BedrockPipe(model, client=bedrock_client(server), **options)
        pipe.set_streaming_callback(chunks.append)
        return pipe, chunks

    async def run(self, pipe: BedrockPipe, prompt: Any) -> PipeResult:
        if self.flavour == "sync":
            # In a worker thread: run() on the event loop's thread would block the loop.
            return await anyio.to_thread.run_sync(pipe.run, prompt)
        return await pipe.arun(prompt)


@pytest.fixture
def drive(flavour: str) -> Drive:
    return Drive(flavour)


# ----------------------------------------------------------------------------- helpers


def payloads(name: str) -> list[dict[str, Any]]:
    """The frame payloads of a bundled event-stream transcript (``inner`` for chunks)."""
    return [event.get("payload", event.get("inner")) for event in Transcript.load(name).events]


def signatures(name: str) -> list[str]:
    found: list[str] = []
    for payload in payloads(name):
        reasoning = payload.get("delta", {}).get("reasoningContent", {})
        if "signature" in reasoning:
            found.append(reasoning["signature"])
    return found


def redacted_bytes(name: str) -> bytes:
    for payload in payloads(name):
        reasoning = payload.get("delta", {}).get("reasoningContent", {})
        if "redactedContent" in reasoning:
            return base64.b64decode(reasoning["redactedContent"])
    raise AssertionError(f"{name} has no redacted content")


def assert_states_hidden(chunks: Sequence[str], result: PipeResult) -> None:
    channel = "".join(chunks)
    for state in result.reasoning_state:
        payload = state.payload
        text = payload if isinstance(payload, str) else base64.b64encode(payload).decode()
        assert text not in channel
        assert text not in repr(result)


def state(kind: str, payload: str | bytes, block: int, **extra: Any) -> ReasoningState:
    return ReasoningState(
        provider="bedrock",
        model=CLAUDE,
        kind=kind,
        payload=payload,
        block=block,
        endpoint=REGION,
        extra=extra,
    )


@dataclass
class History:
    """A prompt carrying history turns with their states, as a Conversation hands them over."""

    turns: list[HistoryTurn]

    def turns_for(self, pipe: Any) -> list[HistoryTurn]:
        return self.turns


# ---------------------------------------------------------------------------- converse


@pytest.mark.anyio
async def test_converse_reasoning_signature_then_answer(drive: Drive) -> None:
    with WireServer("bedrock_converse_reasoning") as server:
        pipe, chunks = drive.pipe(server, additional_model_request_fields=THINKING, max_tokens=4096)
        result = await drive.run(
            pipe,
            [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What is 2+2?"},
            ],
        )
    reasoning = "The user asks for 2+2. That is 4."
    assert "".join(chunks) == f"{OPEN}{reasoning}{CLOSE}2 + 2 = 4."
    assert result.text == "2 + 2 = 4."
    assert result.model_reasoning == reasoning
    assert result.reasoning_segments == (reasoning,)
    assert result.reasoning_state == (
        state(
            "signature",
            signatures("bedrock_converse_reasoning")[0],
            0,
            text=reasoning,
            text_offset=0,
            call_index=0,
            api="converse",
        ),
    )
    assert result.tool_calls == ()
    assert result.usage == Usage(input_tokens=24, output_tokens=41)
    assert (result.status, result.finish_reason) == ("completed", "stop")
    assert result.response_id == "b7a1c0de-0001-4e1f-9c3a-reasoning0001"
    assert (result.provider, result.model, result.endpoint) == ("bedrock", CLAUDE, REGION)
    assert_states_hidden(chunks, result)
    assert_channel_matches(chunks, result)
    (request,) = server.requests
    assert request.path == "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"
    assert request.json() == {
        "messages": [{"role": "user", "content": [{"text": "What is 2+2?"}]}],
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 4096},
        "additionalModelRequestFields": THINKING,
    }


@pytest.mark.anyio
async def test_converse_redacted_content_is_a_bytes_state(drive: Drive) -> None:
    """Redacted reasoning: an opaque bytes state, and not one reasoning byte on the channel."""
    with WireServer("bedrock_converse_redacted") as server:
        pipe, chunks = drive.pipe(server)
        result = await drive.run(pipe, "Explain.")
    assert "".join(chunks) == "Here is the answer."
    assert OPEN not in "".join(chunks)
    assert result.model_reasoning == ""
    assert result.reasoning_segments == ()
    payload = redacted_bytes("bedrock_converse_redacted")
    assert result.reasoning_state == (
        state("redacted", payload, 0, text_offset=0, call_index=0, api="converse"),
    )
    assert isinstance(result.reasoning_state[0].payload, bytes)
    assert result.usage == Usage(input_tokens=18, output_tokens=77)
    assert_states_hidden(chunks, result)
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_converse_reasoning_around_tool_use(drive: Drive) -> None:
    """Reasoning before and after a tool call: two segments, both signatures in order."""
    with WireServer("bedrock_converse_tool_use") as server:
        pipe, chunks = drive.pipe(server)
        result = await drive.run(pipe, "Weather and time in Paris?")
    first, second = "I need the weather in Paris.", "And the local time."
    assert "".join(chunks) == f"{OPEN}{first}{CLOSE}{OPEN}{second}{CLOSE}"
    assert result.reasoning_segments == (first, second)
    assert result.model_reasoning == f"{first}\n{second}"
    assert result.text == ""
    assert result.tool_calls == (
        ToolCall("tooluse_Wq3kR8vXTe2", "get_weather", '{"city": "Paris"}'),
        ToolCall("tooluse_T1meN0w", "get_time", "{}"),
    )
    sig_a, sig_b = signatures("bedrock_converse_tool_use")
    assert result.reasoning_state == (
        state("signature", sig_a, 0, text=first, text_offset=0, call_index=0, api="converse"),
        state("signature", sig_b, 2, text=second, text_offset=0, call_index=1, api="converse"),
    )
    assert (result.status, result.finish_reason) == ("completed", "tool_calls")
    assert result.message["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_converse_without_reasoning_has_no_marker(drive: Drive) -> None:
    with WireServer("bedrock_converse_plain") as server:
        pipe, chunks = drive.pipe(server)
        result = await drive.run(pipe, "Hi")
    assert chunks == ["Hello", " there!"]
    assert "<" not in "".join(chunks)
    assert (result.text, result.model_reasoning, result.reasoning_state) == ("Hello there!", "", ())
    assert result.usage == Usage(input_tokens=9, output_tokens=3)
    assert (result.status, result.finish_reason) == ("completed", "stop")


@pytest.mark.anyio
async def test_converse_guardrail_trace_is_not_reasoning(drive: Drive) -> None:
    with WireServer("bedrock_converse_guardrail") as server:
        pipe, chunks = drive.pipe(server)
        result = await drive.run(pipe, "How do I make something dangerous?")
    assert "".join(chunks) == "Sorry, I can't help with that."
    assert "mix the chemicals" not in "".join(chunks)
    assert result.model_reasoning == ""
    assert result.reasoning_segments == ()
    assert result.reasoning_state == ()
    assert result.finish_reason == "content_filter"
    assert result.status == "completed"
    assert result.usage == Usage(input_tokens=40, output_tokens=9)


@pytest.mark.anyio
async def test_converse_stream_exception_keeps_reasoning(drive: Drive) -> None:
    """modelStreamErrorException mid-reasoning: ProviderError, reasoning kept, markers closed."""
    with WireServer("bedrock_converse_stream_error") as server:
        pipe, chunks = drive.pipe(server)
        with pytest.raises(ProviderError) as caught:
            await drive.run(pipe, "Think hard.")
    error = caught.value
    assert "The model stream ended unexpectedly." in str(error)
    assert "modelStreamErrorException" in str(error)
    assert error.status_code == 424
    assert error.provider == "bedrock"
    assert type(error.__cause__).__name__ == "EventStreamError"
    result = error.result
    assert result is not None and result is pipe.last_result
    reasoning = "Let me think about this carefully."
    assert result.status == "error"
    assert result.model_reasoning == reasoning
    assert "".join(chunks) == f"{OPEN}{reasoning}{CLOSE}"
    assert chunks[-1] == CLOSE
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_converse_connection_cut_mid_frame(drive: Drive) -> None:
    transcript = Transcript.load("bedrock_converse_reasoning")
    frames = transcript.chunks()
    # Three whole frames (start and two reasoning deltas), then half of the signature frame.
    cut = sum(len(frame) for frame in frames[:3]) + len(frames[3]) // 2
    with WireServer() as server:
        server.add(transcript, disconnect_at_byte=cut)
        pipe, chunks = drive.pipe(server)
        with pytest.raises(ProviderError) as caught:
            await drive.run(pipe, "What is 2+2?")
    assert "connection broke" in str(caught.value)
    result = caught.value.result
    assert result is not None
    assert result.status == "error"
    assert result.model_reasoning == "The user asks for 2+2. That is 4."
    assert result.reasoning_state == ()
    assert chunks[-1] == CLOSE
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
async def test_converse_http_429_throttling(drive: Drive) -> None:
    with WireServer("bedrock_converse_throttled") as server:
        pipe, chunks = drive.pipe(server)
        with pytest.raises(ProviderError) as caught:
            await drive.run(pipe, "Hi")
        assert len(server.requests) == 1
    error = caught.value
    assert error.status_code == 429
    assert "Too many requests" in str(error)
    assert "ThrottlingException" in str(error)
    assert error.body == {"Code": "ThrottlingException", "Message": "Too many requests"}
    assert error.result is not None and error.result.status == "error"
    assert chunks == []


@pytest.mark.anyio
async def test_converse_max_tokens_is_a_length_stop(drive: Drive) -> None:
    with WireServer("bedrock_converse_max_tokens") as server:
        pipe, chunks = drive.pipe(server)
        result = await drive.run(pipe, "List the primes below 100.")
    reasoning = "Count the primes below 100."
    assert "".join(chunks) == f"{OPEN}{reasoning}{CLOSE}The primes are 2, 3, 5"
    assert (result.status, result.finish_reason) == ("length", "length")
    assert result.usage == Usage(input_tokens=22, output_tokens=64)
    assert len(result.reasoning_state) == 1
    assert_channel_matches(chunks, result)


@pytest.mark.anyio
@pytest.mark.parametrize("chunk_size", [1, 7])
async def test_converse_rechunked_bytes_give_the_same_result(drive: Drive, chunk_size: int) -> None:
    with WireServer() as server:
        server.add("bedrock_converse_tool_use", chunk_size=chunk_size)
        pipe, chunks = drive.pipe(server)
        result = await drive.run(pipe, "Weather and time in Paris?")
    assert result.reasoning_segments == ("I need the weather in Paris.", "And the local time.")
    assert [call.name for call in result.tool_calls] == ["get_weather", "get_time"]
    assert len(result.reasoning_state) == 2
    assert_channel_matches(chunks, result)


def test_reasoning_gate_off_keeps_capture() -> None:
    """set_stream_model_reasoning(False): no marker or reasoning on the channel, capture equal."""
    results: list[PipeResult] = []
    channels: list[str] = []
    for on in (True, False):
        with WireServer("bedrock_converse_reasoning") as server:
            pipe = BedrockPipe(CLAUDE, client=bedrock_client(server))
            chunks: list[str] = []
            pipe.set_streaming_callback(chunks.append).set_stream_model_reasoning(on)
            results.append(pipe.run("What is 2+2?"))
            channels.append("".join(chunks))
    with_reasoning, without = results
    assert channels[1] == "2 + 2 = 4."
    assert OPEN not in channels[1] and "That is 4." not in channels[1]
    assert channels[0] == f"{OPEN}The user asks for 2+2. That is 4.{CLOSE}2 + 2 = 4."
    for field in ("text", "model_reasoning", "reasoning_segments", "reasoning_state", "usage"):
        assert getattr(without, field) == getattr(with_reasoning, field)


# ------------------------------------------------------------------------------ passback


@pytest.mark.anyio
async def test_converse_follow_up_sends_reasoning_back_verbatim(drive: Drive) -> None:
    """States go back at the head of the assistant turn, byte-identical and in order."""
    with WireServer("bedrock_converse_reasoning") as server:
        pipe, _ = drive.pipe(server)
        signed = await drive.run(pipe, "What is 2+2?")
    with WireServer("bedrock_converse_redacted") as server:
        pipe, _ = drive.pipe(server)
        redacted = await drive.run(pipe, "Explain.")
    states = signed.reasoning_state + redacted.reasoning_state
    history = History(
        [
            HistoryTurn({"role": "user", "content": "What is 2+2?"}),
            HistoryTurn(
                {
                    "role": "assistant",
                    "content": signed.text,
                    "tool_calls": [
                        {
                            "id": "tooluse_1",
                            "type": "function",
                            "function": {"name": "calc", "arguments": '{"x": 2}'},
                        },
                    ],
                },
                states=states,
            ),
            HistoryTurn({"role": "tool", "tool_call_id": "tooluse_1", "content": "4"}),
            HistoryTurn({"role": "user", "content": "And 3+3?"}),
        ]
    )
    with WireServer("bedrock_converse_plain") as server:
        pipe, _ = drive.pipe(server)
        await drive.run(pipe, history)
        body = server.requests[0].json()
    assistant = body["messages"][1]
    assert assistant["role"] == "assistant"
    reasoning_text = assistant["content"][0]["reasoningContent"]["reasoningText"]
    assert reasoning_text == {
        "text": "The user asks for 2+2. That is 4.",
        "signature": signatures("bedrock_converse_reasoning")[0],
    }
    sent = assistant["content"][1]["reasoningContent"]["redactedContent"]
    assert base64.b64decode(sent) == redacted_bytes("bedrock_converse_redacted")
    assert assistant["content"][2:] == [
        {"text": "2 + 2 = 4."},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "calc", "input": {"x": 2}}},
    ]
    # The tool result and the next user message share one user turn: roles alternate.
    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "4"}]}},
            {"text": "And 3+3?"},
        ],
    }
    assert body["messages"][0] == {"role": "user", "content": [{"text": "What is 2+2?"}]}


# -------------------------------------------------------------------------------- invoke


@pytest.mark.anyio
async def test_invoke_anthropic_thinking_events(drive: Drive) -> None:
    with WireServer("bedrock_invoke_anthropic_thinking") as server:
        pipe, chunks = drive.pipe(server, api="invoke", additional_model_request_fields=THINKING)
        result = await drive.run(pipe, "Capital of France?")
        body = server.requests[0].json()
        path = server.requests[0].path
    reasoning = "Paris is the capital of France."
    assert "".join(chunks) == f"{OPEN}{reasoning}{CLOSE}The capital is Paris."
    assert result.text == "The capital is Paris."
    assert result.reasoning_segments == (reasoning,)
    events = payloads("bedrock_invoke_anthropic_thinking")
    signature = events[4]["delta"]["signature"]
    data = events[6]["content_block"]["data"]
    assert result.reasoning_state == (
        state(
            "signature", signature, 0, thinking=reasoning, text_offset=0, call_index=0, api="invoke"
        ),
        state("redacted", data, 1, text_offset=0, call_index=0, api="invoke"),
    )
    # The invocation metrics of the last chunk have the final word on usage.
    assert result.usage == Usage(input_tokens=30, output_tokens=52)
    assert (result.status, result.finish_reason) == ("completed", "stop")
    assert result.response_id == "msg_bdrk_01XyZ9mQ2rT7vW3kL5pN8sJd"
    assert_states_hidden(chunks, result)
    assert_channel_matches(chunks, result)
    assert path.endswith("/invoke-with-response-stream")
    assert body == {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 4096 + 2048,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Capital of France?"}]}],
        **THINKING,
    }


@pytest.mark.anyio
async def test_invoke_anthropic_follow_up_sends_blocks_back(drive: Drive) -> None:
    with WireServer("bedrock_invoke_anthropic_thinking") as server:
        pipe, _ = drive.pipe(server, api="invoke")
        first = await drive.run(pipe, "Capital of France?")
        history = History(
            [
                HistoryTurn({"role": "user", "content": "Capital of France?"}),
                HistoryTurn(first.message, states=first.reasoning_state),
                HistoryTurn({"role": "user", "content": "And Italy?"}),
            ]
        )
        await drive.run(pipe, history)
        body = server.requests[1].json()
    events = payloads("bedrock_invoke_anthropic_thinking")
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": "Paris is the capital of France.",
                "signature": events[4]["delta"]["signature"],
            },
            {"type": "redacted_thinking", "data": events[6]["content_block"]["data"]},
            {"type": "text", "text": "The capital is Paris."},
        ],
    }


@pytest.mark.anyio
async def test_invoke_deepseek_r1_starts_inside_reasoning(drive: Drive) -> None:
    """R1's text opens inside reasoning; ``</think>`` arrives split across two chunks."""
    with WireServer("bedrock_invoke_deepseek_r1") as server:
        pipe, chunks = drive.pipe(server, model=DEEPSEEK, api="invoke")
        result = await drive.run(
            pipe,
            [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "2+2?"}],
        )
        body = server.requests[0].json()
    reasoning = "Okay, the user wants 2+2.\n"
    answer = "\n\nThe answer is **4**."
    assert "".join(chunks) == f"{OPEN}{reasoning}{CLOSE}{answer}"
    assert result.model_reasoning == reasoning
    assert result.text == answer
    assert result.reasoning_state == ()
    assert result.usage == Usage(input_tokens=12, output_tokens=21)
    assert (result.status, result.finish_reason) == ("completed", "stop")
    assert_channel_matches(chunks, result)
    assert body == {
        # DeepSeek's special tokens use U+FF5C (full-width bar) and U+2581 between words.
        "prompt": "<\uff5cbegin\u2581of\u2581sentence\uff5c>You are terse."
        "<\uff5cUser\uff5c>2+2?<\uff5cAssistant\uff5c><think>\n",
        "max_tokens": 4096,
    }


# ------------------------------------------------------------------- lifetime and misuse


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_cancelled_arun_releases_a_stalled_stream(backend: str) -> None:
    """Cancelling arun() mid-read returns at once: the blocked read is woken, the stream shut."""
    with WireServer() as server:
        server.add("bedrock_converse_reasoning", hang_after=3)
        pipe = BedrockPipe(CLAUDE, client=bedrock_client(server))
        chunks: list[str] = []
        pipe.set_streaming_callback(chunks.append)

        async def main() -> None:
            with anyio.move_on_after(0.5):
                await pipe.arun("What is 2+2?")

        started = time.monotonic()
        anyio.run(main, backend=backend)
        # Closing waits up to 5 s for a read that was not woken; this proves it was.
        assert time.monotonic() - started < 3
    result = pipe.last_result
    assert result is not None
    assert result.status == "cancelled_before_answer"
    assert result.model_reasoning == "The user asks for 2+2. That is 4."
    assert "".join(chunks) == f"{OPEN}The user asks for 2+2. That is 4.{CLOSE}"


def test_early_exit_from_run_closes_the_stream() -> None:
    """A callback handler that aborts the run does not wait for the stalled stream."""

    def abort(error: Exception, chunk: Any) -> None:
        raise error

    def explode(chunk: str) -> None:
        raise RuntimeError("subscriber gone")

    with WireServer() as server:
        server.add("bedrock_converse_reasoning", hang_after=3)
        pipe = BedrockPipe(CLAUDE, client=bedrock_client(server), on_callback_error=abort)
        pipe.set_streaming_callback(explode)
        started = time.monotonic()
        with pytest.raises(CallbackError):
            pipe.run("What is 2+2?")
        assert time.monotonic() - started < 3
    assert pipe.last_result is not None and pipe.last_result.status == "error"


def test_endpoint_and_client_building(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")  # a client is built only with credentials
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    with WireServer("bedrock_converse_plain") as server:
        pipe = BedrockPipe(CLAUDE, region_name="eu-west-1", endpoint_url=server.url)
        assert pipe.endpoint == server.url
        assert pipe.region_name == "eu-west-1"
        pipe.client = None
        built = pipe.sync_client()
        assert built.meta.region_name == "eu-west-1"
        assert built.meta.endpoint_url == server.url
    assert BedrockPipe(CLAUDE, region_name="ap-south-1").endpoint == "ap-south-1"
    with pytest.raises(UsageError):
        BedrockPipe(CLAUDE, api="chat")  # type: ignore[arg-type]


# ------------------------------------------------------------------- translators, pure


def test_converse_translator_ignores_unknown_events_and_flags_a_cut_stream() -> None:
    translator = ConverseStreamTranslator(model=CLAUDE)
    assert translator.feed({"somethingNew": {"x": 1}}) == []
    assert translator.feed({"messageStart": {"role": "assistant"}}) == []
    assert (
        translator.feed({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": ""}}})
        == []
    )
    with pytest.raises(MalformedStreamError):
        translator.finish()


def test_anthropic_error_event_raises() -> None:
    translator = InvokeStreamTranslator(model=CLAUDE)
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(ProviderError, match="Overloaded"):
        translator.feed({"chunk": {"bytes": json.dumps(error).encode()}})


def test_anthropic_null_text_never_becomes_text() -> None:
    translator = InvokeStreamTranslator(model=CLAUDE)
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": None},
    }
    assert translator.feed({"chunk": {"bytes": json.dumps(delta).encode()}}) == []


def coalesce(events: list[Any]) -> list[Any]:
    merged: list[Any] = []
    for event in events:
        if (
            merged
            and type(event) is type(merged[-1])
            and isinstance(event, ReasoningDelta | TextDelta)
        ):
            merged[-1] = type(event)(merged[-1].text + event.text)
        else:
            merged.append(event)
    return merged


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=60), max_size=8))
def test_deepseek_chunking_never_changes_events(cuts: list[int]) -> None:
    text = "Let me see: <b> is bold.\n</think>\n\nUse <b>bold</b>."
    points = sorted({c for c in cuts if c < len(text)})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    translator = TextInvokeTranslator(start_in_reasoning=True)
    events: list[Any] = []
    for piece in pieces:
        events += translator.feed({"choices": [{"index": 0, "text": piece, "stop_reason": None}]})
    events += translator.feed({"choices": [{"index": 0, "text": "", "stop_reason": "length"}]})
    events += translator.finish()
    assert coalesce(events) == [
        ReasoningStart(),
        ReasoningDelta("Let me see: <b> is bold.\n"),
        ReasoningEnd(),
        TextDelta("\n\nUse <b>bold</b>."),
        Finish("length"),
    ]


def test_invocation_metrics_become_usage() -> None:
    translator = InvokeStreamTranslator(model=DEEPSEEK)
    chunk = {
        "choices": [{"index": 0, "text": "", "stop_reason": "stop"}],
        "amazon-bedrock-invocationMetrics": {"inputTokenCount": 5, "outputTokenCount": 7},
    }
    events = translator.feed({"chunk": {"bytes": json.dumps(chunk).encode()}})
    assert events[-1] == UsageReport(Usage(input_tokens=5, output_tokens=7))


def _long_text_stream(deltas: int) -> Transcript:
    """A ConverseStream answer of ``deltas`` text deltas, ``"0 "``, ``"1 "``, ..."""
    events: list[dict[str, Any]] = [
        {"event_type": "messageStart", "payload": {"role": "assistant"}}
    ]
    events += [
        {
            "event_type": "contentBlockDelta",
            "payload": {"contentBlockIndex": 0, "delta": {"text": f"{i} "}},
        }
        for i in range(deltas)
    ]
    events += [
        {"event_type": "contentBlockStop", "payload": {"contentBlockIndex": 0}},
        {"event_type": "messageStop", "payload": {"stopReason": "end_turn"}},
    ]
    return Transcript(path="/model/{modelId}/converse-stream", format="eventstream", events=events)


def test_the_async_reader_hands_over_decoded_events_in_order_and_bounded() -> None:
    """arun's boto3 reader: a consumer that does not take lets at most _BATCH_LIMIT events
    wait (the reading thread waits then), and taking returns every event once, in order."""
    from reasoning_stream.providers._transports.eventstream import _BATCH_LIMIT, _Failure, _Reader

    deltas = 3 * _BATCH_LIMIT
    with WireServer(_long_text_stream(deltas)) as server:
        reply = bedrock_client(server).converse_stream(
            modelId=CLAUDE, messages=[{"role": "user", "content": [{"text": "count"}]}]
        )
        reader = _Reader(reply["stream"], reply["stream"])
        try:
            time.sleep(0.5)  # ample for the thread to decode every event it may
            batches = [reader.take()]
            while batches[-1][-1] is not _Reader.END:
                batches.append(reader.take())
        finally:
            reader.interrupt()
            reader.close()
    assert len(batches[0]) == _BATCH_LIMIT
    assert all(len(batch) <= _BATCH_LIMIT + 1 for batch in batches)
    items = [item for batch in batches for item in batch]
    assert not any(isinstance(item, _Failure) for item in items)
    events = [item for item in items if isinstance(item, dict)]
    texts = [e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e]
    assert texts == [f"{i} " for i in range(deltas)]
    assert items[-1] is _Reader.END and items.count(_Reader.END) == 1
