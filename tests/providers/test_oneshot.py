"""``stream=False``: one non-streaming request per provider, through the real SDKs (openai,
anthropic, ollama, boto3) and httpx, gives the same ``PipeResult`` and the same channel as the
stream of the same answer (API.md section 10).

Each case builds the streamed transcript and the one-shot body from one :class:`Answer`
(``oneshot_content``), runs a streaming pipe and a one-shot pipe against the WireServer, and
compares everything the result carries. The request the one-shot pipe sent is checked against
each API's documented way to ask for no streaming.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import anthropic
import anyio
import httpx
import ollama
import openai
import pytest

from reasoning_stream import PipeResult, ProviderError, ReasoningStream, UsageError
from reasoning_stream.providers import (
    AnthropicPipe,
    BedrockPipe,
    GeminiPipe,
    OllamaPipe,
    OpenAIChatPipe,
    OpenAIResponsesPipe,
    OpenRouterPipe,
)
from reasoning_stream.providers._pipe import ProviderPipe
from reasoning_stream.testing._wire import RecordedRequest, Transcript, WireServer
from tests.providers import oneshot_content as content
from tests.providers.conftest import bedrock_client, flavour_backend
from tests.providers.oneshot_content import Answer

OPEN, CLOSE = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG
GEMINI = "gemini-3-pro-preview"
CLAUDE = "anthropic.claude-sonnet-4-6"
R1 = "deepseek.r1-v1:0"

anyio_backend = flavour_backend
"""Each flavour's event loop, under the name the anyio plugin asks for."""


@dataclass
class Run:
    result: PipeResult
    chunks: list[str]
    request: RecordedRequest


Build = Callable[[str, bool, bool], ProviderPipe]
"""``(server url, stream, async client) -> pipe``."""


async def drive(flavour: str, build: Build, server: WireServer, stream: bool) -> Run:
    """One run of a pipe built for ``server``; clients the test built are closed after it."""
    seen = len(server.requests)
    pipe = build(server.url, stream, flavour != "sync")
    chunks: list[str] = []
    pipe.set_streaming_callback(chunks.append)
    try:
        if flavour == "sync":
            result = await anyio.to_thread.run_sync(pipe.run, "weather?")
        else:
            result = await pipe.arun("weather?")
    finally:
        pipe.close()
        await close_client(pipe.client)
    (request,) = server.requests[seen:]
    return Run(result, chunks, request)


async def close_client(client: Any) -> None:
    if client is None:
        return
    inner = getattr(client, "_client", None)  # ollama's clients wrap an httpx client
    target = inner if isinstance(inner, httpx.Client | httpx.AsyncClient) else client
    close = getattr(target, "aclose", None) or getattr(target, "close", None)
    if close is not None:
        outcome = close()
        if inspect.isawaitable(outcome):
            await outcome


def same_result(streamed: PipeResult, one_shot: PipeResult) -> None:
    """Everything a result carries, except timings, is the same."""
    for name in (
        "text",
        "model_reasoning",
        "reasoning_segments",
        "reasoning_state",
        "tool_calls",
        "usage",
        "status",
        "finish_reason",
        "response_id",
        "provider",
        "model",
        "message",
    ):
        assert getattr(one_shot, name) == getattr(streamed, name), name


async def compare(
    flavour: str, build: Build, stream_reply: Transcript, body_reply: Transcript, *, parts: int
) -> tuple[Run, Run]:
    """Run the stream and the one-shot body of one answer; ``parts``: its reasoning and text
    parts, each of which reaches the callbacks as one chunk in the one-shot run."""
    # One server for both runs: the endpoint scopes opaque state, so it must be the same.
    with WireServer(stream_reply, body_reply) as server:
        streamed = await drive(flavour, build, server, True)
        one_shot = await drive(flavour, build, server, False)
    assert streamed.result.status in ("completed", "length")
    same_result(streamed.result, one_shot.result)
    # The same channel, whole: markers and escapes included.
    assert "".join(one_shot.chunks) == "".join(streamed.chunks)
    # One chunk per reasoning or text part: markers, then one payload per part.
    payloads = [chunk for chunk in one_shot.chunks if chunk not in (OPEN, CLOSE)]
    assert len(payloads) == parts
    split = ReasoningStream.split("".join(one_shot.chunks), lossless=True)
    assert (split.reasoning, split.text) == (
        one_shot.result.model_reasoning,
        one_shot.result.text,
    )
    return streamed, one_shot


ANSWER = Answer()


# ---------------------------------------------------------------------- chat completions


def chat(transport: str, **options: Any) -> Build:
    def build(url: str, stream: bool, asynchronous: bool) -> ProviderPipe:
        client: Any
        if transport == "httpx":
            client = (httpx.AsyncClient if asynchronous else httpx.Client)()
            return OpenAIChatPipe(
                "deepseek-reasoner",
                transport="httpx",
                http_client=client,
                base_url=f"{url}/v1",
                stream=stream,
                **options,
            )
        cls = openai.AsyncOpenAI if asynchronous else openai.OpenAI
        client = cls(base_url=f"{url}/v1", api_key="k", max_retries=0)
        return OpenAIChatPipe("deepseek-reasoner", client=client, stream=stream, **options)

    return build


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["sdk", "httpx"])
async def test_openai_chat_one_shot_equals_stream(flavour: str, transport: str) -> None:
    """reasoning_content, escaped tag text, a tool call, usage with reasoning tokens."""
    _, one_shot = await compare(
        flavour, chat(transport), content.chat_stream(ANSWER), content.chat_body(ANSWER), parts=2
    )
    sent = one_shot.request.json()
    assert "stream" not in sent and "stream_options" not in sent
    result = one_shot.result
    assert result.usage.reasoning_tokens == ANSWER.reasoning_tokens
    assert [call.id for call in result.tool_calls] == ["call_7Qx"]


@pytest.mark.anyio
async def test_openai_chat_inline_tags_in_a_final_text(flavour: str) -> None:
    """Inline tags in a final content are split, as in the stream of it."""
    answer = replace(ANSWER, reasoning=(), calls=(), text="<think>check the map</think>Paris.")
    _, one_shot = await compare(
        flavour, chat("sdk"), content.chat_stream(answer), content.chat_body(answer), parts=2
    )
    assert one_shot.result.reasoning_segments == ("check the map",)
    assert one_shot.result.text == "Paris."


@pytest.mark.anyio
async def test_openai_chat_text_that_starts_inside_reasoning(flavour: str) -> None:
    """DeepSeek-R1's template pre-fills the open tag: the final text holds only the close."""
    answer = replace(ANSWER, reasoning=(), calls=(), text="weighing it</think>It is Paris.")
    _, one_shot = await compare(
        flavour,
        chat("httpx", start_in_reasoning=True),
        content.chat_stream(answer),
        content.chat_body(answer),
        parts=2,
    )
    assert one_shot.result.reasoning_segments == ("weighing it",)
    assert one_shot.chunks[0] == OPEN


@pytest.mark.anyio
async def test_openrouter_one_shot_equals_stream(flavour: str) -> None:
    """OpenRouter's ``reasoning`` field, through the chat pipe's httpx transport."""

    def build(url: str, stream: bool, asynchronous: bool) -> ProviderPipe:
        return OpenRouterPipe(
            "deepseek/deepseek-r1", base_url=f"{url}/v1", api_key="k", stream=stream
        )

    answer = replace(ANSWER, calls=())
    _, one_shot = await compare(
        flavour,
        build,
        content.chat_stream(answer, field_name="reasoning"),
        content.chat_body(answer, field_name="reasoning"),
        parts=2,
    )
    assert "stream" not in one_shot.request.json()


# ----------------------------------------------------------------------------- responses


@pytest.mark.anyio
async def test_responses_one_shot_equals_stream(flavour: str) -> None:
    """Two summary parts, an encrypted reasoning item and its followers, a function call."""

    def build(url: str, stream: bool, asynchronous: bool) -> ProviderPipe:
        cls = openai.AsyncOpenAI if asynchronous else openai.OpenAI
        client = cls(base_url=f"{url}/v1", api_key="k", max_retries=0)
        return OpenAIResponsesPipe("o4-mini", client=client, store=False, stream=stream)

    _, one_shot = await compare(
        flavour, build, content.responses_stream(ANSWER), content.responses_body(ANSWER), parts=3
    )
    assert "stream" not in one_shot.request.json()
    result = one_shot.result
    assert result.reasoning_segments == ANSWER.reasoning
    assert [state.kind for state in result.reasoning_state] == ["encrypted"]
    assert result.usage.reasoning_tokens == ANSWER.reasoning_tokens


# ----------------------------------------------------------------------------- anthropic


@pytest.mark.anyio
async def test_anthropic_one_shot_equals_stream(flavour: str) -> None:
    """Two signed thinking blocks, a redacted one, text, a tool use; thinking tokens."""

    def build(url: str, stream: bool, asynchronous: bool) -> ProviderPipe:
        cls = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        client = cls(base_url=url, api_key="k", max_retries=0)
        return AnthropicPipe("claude-sonnet-4-6", client=client, stream=stream)

    answer = replace(ANSWER, redacted=content.redacted_blob())
    _, one_shot = await compare(
        flavour, build, content.anthropic_stream(answer), content.anthropic_body(answer), parts=3
    )
    assert "stream" not in one_shot.request.json()
    result = one_shot.result
    assert [state.kind for state in result.reasoning_state] == [
        "signature",
        "signature",
        "redacted",
    ]
    assert [state.payload for state in result.reasoning_state][:2] == list(ANSWER.signatures)
    assert result.usage.reasoning_tokens == ANSWER.reasoning_tokens


# -------------------------------------------------------------------------------- gemini


@pytest.mark.anyio
async def test_gemini_one_shot_equals_stream(flavour: str) -> None:
    """Thought parts, answer text, a function call carrying its signature: ``:generateContent``."""

    def build(url: str, stream: bool, asynchronous: bool) -> ProviderPipe:
        client = (httpx.AsyncClient if asynchronous else httpx.Client)()
        return GeminiPipe(
            GEMINI, client=client, base_url=f"{url}/v1beta", api_key="k", stream=stream
        )

    streamed, one_shot = await compare(
        flavour,
        build,
        content.gemini_stream(ANSWER, GEMINI),
        content.gemini_body(ANSWER, GEMINI),
        parts=3,
    )
    assert one_shot.request.path == f"/v1beta/models/{GEMINI}:generateContent"
    assert streamed.request.path.endswith(":streamGenerateContent?alt=sse")
    assert one_shot.result.reasoning_state[0].payload == ANSWER.signatures[0]


# -------------------------------------------------------------------------------- ollama


def ollama_pipe(**options: Any) -> Build:
    def build(url: str, stream: bool, asynchronous: bool) -> ProviderPipe:
        client = (ollama.AsyncClient if asynchronous else ollama.Client)(host=url)
        return OllamaPipe("qwen3", client=client, stream=stream, **options)

    return build


@pytest.mark.anyio
async def test_ollama_one_shot_equals_stream(flavour: str) -> None:
    """``"stream": false`` to ``/api/chat``: thinking, content and a tool call in one reply."""
    _, one_shot = await compare(
        flavour, ollama_pipe(), content.ollama_stream(ANSWER), content.ollama_body(ANSWER), parts=2
    )
    assert one_shot.request.json()["stream"] is False
    assert one_shot.result.usage.output_tokens == ANSWER.output_tokens


@pytest.mark.anyio
async def test_ollama_inline_tags_that_start_inside_reasoning(flavour: str) -> None:
    answer = replace(ANSWER, reasoning=(), calls=())
    text = "first thoughts</think>The answer <think>again</think>, done."
    _, one_shot = await compare(
        flavour,
        ollama_pipe(start_in_reasoning=True),
        content.ollama_stream(answer, content=text),
        content.ollama_body(answer, content=text),
        parts=4,
    )
    assert one_shot.result.reasoning_segments == ("first thoughts", "again")
    assert one_shot.result.text == "The answer , done."


# ------------------------------------------------------------------------------- bedrock


def bedrock(model: str, api: str) -> Build:
    def build(url: str, stream: bool, asynchronous: bool) -> ProviderPipe:
        client = bedrock_client(url)
        return BedrockPipe(model, client=client, api=api, stream=stream)  # type: ignore[arg-type]

    return build


@pytest.mark.anyio
async def test_bedrock_converse_one_shot_equals_stream(flavour: str) -> None:
    """boto3's ``converse``: signed and redacted reasoning, text, a tool use, usage."""
    answer = replace(ANSWER, redacted=content.redacted_blob())
    streamed, one_shot = await compare(
        flavour,
        bedrock(CLAUDE, "converse"),
        content.converse_stream(answer),
        content.converse_body(answer),
        parts=3,
    )
    assert one_shot.request.path.endswith("/converse")
    assert streamed.request.path.endswith("/converse-stream")
    assert one_shot.result.response_id == ANSWER.response_id
    assert [state.kind for state in one_shot.result.reasoning_state] == [
        "signature",
        "signature",
        "redacted",
    ]


@pytest.mark.anyio
async def test_bedrock_invoke_claude_one_shot_equals_stream(flavour: str) -> None:
    """``invoke_model`` for Claude: the Messages body, token counts from Bedrock's headers."""
    answer = replace(ANSWER, calls=())
    _, one_shot = await compare(
        flavour,
        bedrock(CLAUDE, "invoke"),
        content.invoke_anthropic_stream(answer),
        content.invoke_body(content.anthropic_message(answer), answer),
        parts=3,
    )
    assert one_shot.request.path.endswith("/invoke")
    assert one_shot.result.usage.input_tokens == ANSWER.input_tokens


@pytest.mark.anyio
async def test_bedrock_invoke_deepseek_text_that_starts_inside_reasoning(flavour: str) -> None:
    """DeepSeek-R1 on Invoke: ``choices[].text`` opens inside reasoning and closes with a tag."""
    text = "Two and two</think>\n\n4"
    _, one_shot = await compare(
        flavour,
        bedrock(R1, "invoke"),
        content.invoke_text_stream(text, ANSWER),
        content.invoke_body(
            {"choices": [{"index": 0, "text": text, "stop_reason": "stop"}]}, ANSWER
        ),
        parts=2,
    )
    assert one_shot.result.reasoning_segments == ("Two and two",)
    assert one_shot.result.text == "\n\n4"


# ----------------------------------------------------------------------------- recorded


RECORDED: dict[str, tuple[Callable[[], Transcript], Build, Callable[[], Transcript]]] = {
    "openai_chat_oneshot": (
        lambda: content.chat_body(ANSWER),
        chat("sdk"),
        lambda: content.chat_stream(ANSWER),
    ),
    "openai_responses_oneshot": (
        lambda: content.responses_body(ANSWER),
        lambda url, stream, asynchronous: OpenAIResponsesPipe(
            "o4-mini", base_url=f"{url}/v1", api_key="k", stream=stream
        ),
        lambda: content.responses_stream(ANSWER),
    ),
    "anthropic_oneshot": (
        lambda: content.anthropic_body(ANSWER),
        lambda url, stream, asynchronous: AnthropicPipe(
            "claude-sonnet-4-6", base_url=url, api_key="k", stream=stream
        ),
        lambda: content.anthropic_stream(ANSWER),
    ),
    "gemini_oneshot": (
        lambda: content.gemini_body(ANSWER, GEMINI),
        lambda url, stream, asynchronous: GeminiPipe(
            GEMINI, base_url=f"{url}/v1beta", api_key="k", stream=stream
        ),
        lambda: content.gemini_stream(ANSWER, GEMINI),
    ),
    "ollama_chat_oneshot": (
        lambda: content.ollama_body(ANSWER),
        lambda url, stream, asynchronous: OllamaPipe("qwen3", base_url=url, stream=stream),
        lambda: content.ollama_stream(ANSWER),
    ),
    "bedrock_converse_oneshot": (
        lambda: content.converse_body(ANSWER),
        bedrock(CLAUDE, "converse"),
        lambda: content.converse_stream(ANSWER),
    ),
    "openrouter_oneshot": (
        lambda: replace(
            content.chat_body(replace(ANSWER, calls=()), field_name="reasoning"),
            path="/api/v1/chat/completions",
        ),
        lambda url, stream, asynchronous: OpenRouterPipe(
            "deepseek/deepseek-r1", base_url=f"{url}/api/v1", api_key="k", stream=stream
        ),
        lambda: replace(
            content.chat_stream(replace(ANSWER, calls=()), field_name="reasoning"),
            path="/api/v1/chat/completions",
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_recorded_one_shot_bodies_are_the_answer_and_replay(name: str) -> None:
    """The bundled one-shot transcripts are the bodies of the shared answer, and replay through
    the SDKs to the stream's result."""
    make, build, stream = RECORDED[name]
    recorded = Transcript.load(name)
    built = make()
    assert (recorded.path, recorded.format, recorded.events) == (
        built.path,
        built.format,
        built.events,
    )
    with WireServer(stream(), recorded) as server:
        streamed = anyio.run(drive, "sync", build, server, True)
        one_shot = anyio.run(drive, "sync", build, server, False)
    same_result(streamed.result, one_shot.result)


def test_stream_must_be_a_bool() -> None:
    with pytest.raises(UsageError, match="stream must be True or False"):
        OllamaPipe("qwen3", stream="no")  # type: ignore[arg-type]


# ------------------------------------------------------------------------- failure paths


def test_an_http_error_on_a_one_shot_request_is_a_provider_error() -> None:
    """A 429 to the non-streaming call: ``ProviderError`` with its status, an empty channel."""
    refused = Transcript(
        path="/v1/chat/completions",
        status=429,
        format="json",
        headers={"retry-after": "3"},
        events=[{"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}],
    )
    with WireServer(refused) as server:
        pipe = chat("sdk")(server.url, False, False)
        chunks: list[str] = []
        pipe.set_streaming_callback(chunks.append)
        with pytest.raises(ProviderError) as raised:
            pipe.run("hi")
        pipe.close()
    assert raised.value.status_code == 429
    assert chunks == []
    assert pipe.last_result is not None and pipe.last_result.status == "error"


def test_gemini_one_shot_error_body_keeps_status_and_message() -> None:
    refused = Transcript(
        path=f"/v1beta/models/{GEMINI}:generateContent",
        status=400,
        format="json",
        events=[{"error": {"code": 400, "message": "Bad thing", "status": "INVALID_ARGUMENT"}}],
    )
    with WireServer(refused) as server:
        pipe = GeminiPipe(GEMINI, base_url=f"{server.url}/v1beta", api_key="k", stream=False)
        with pytest.raises(ProviderError, match="Bad thing") as raised:
            pipe.run("hi")
        pipe.close()
    assert raised.value.status_code == 400


def test_a_failed_responses_object_raises() -> None:
    """A non-streaming Response with status ``failed`` is a provider failure, as its event is."""
    failed = content.responses_body(ANSWER)
    value = {
        **failed.events[0],
        "status": "failed",
        "output": [],
        "error": {"code": "server_error", "message": "The model broke"},
    }
    with WireServer(replace(failed, events=[value])) as server:
        pipe = OpenAIResponsesPipe(
            "o4-mini", base_url=f"{server.url}/v1", api_key="k", stream=False
        )
        with pytest.raises(ProviderError, match="The model broke"):
            pipe.run("hi")
        pipe.close()


def test_anthropic_one_shot_length_stop() -> None:
    """``stop_reason: max_tokens`` gives status ``length`` and the captured text."""
    answer = replace(ANSWER, calls=())
    message = {**content.anthropic_message(answer), "stop_reason": "max_tokens"}
    with WireServer(content.body("/v1/messages", message)) as server:
        pipe = AnthropicPipe("claude-sonnet-4-6", base_url=server.url, api_key="k", stream=False)
        result = pipe.run("hi")
        pipe.close()
    assert (result.status, result.finish_reason, result.text) == ("length", "length", ANSWER.text)


@pytest.mark.anyio
async def test_arun_with_a_sync_client_reads_the_one_shot_in_a_thread(anyio_backend: str) -> None:
    """A sync SDK client given to ``arun()``: the one request runs in a worker thread."""
    with WireServer(content.chat_body(ANSWER)) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
        pipe = OpenAIChatPipe("deepseek-reasoner", client=client, stream=False)
        result = await pipe.arun("hi")
        client.close()
    assert result.text == ANSWER.text and result.tool_calls[0].id == "call_7Qx"


@pytest.mark.anyio
async def test_ollama_generate_one_shot_equals_stream(flavour: str) -> None:
    """``/api/generate`` with ``"stream": false``: top-level ``thinking`` and ``response``."""
    stream = Transcript.load("ollama_generate_reasoning")
    lines = stream.events
    final = dict(lines[-1])
    final["thinking"] = "".join(line.get("thinking") or "" for line in lines)
    final["response"] = "".join(line.get("response") or "" for line in lines)
    body = content.body("/api/generate", final)
    _, one_shot = await compare(flavour, ollama_pipe(api="generate"), stream, body, parts=2)
    sent = one_shot.request.json()
    assert sent["stream"] is False and "prompt" in sent
