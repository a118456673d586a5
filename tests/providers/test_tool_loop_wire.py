"""``run_tools`` through every provider's real SDK (or httpx) against the loopback WireServer.

Response 1 (a bundled transcript) calls tools; the loop runs them and sends their results;
response 2 answers. For each provider the test asserts, from the bodies the server received:
request 1 carries the tools; request 2 carries the tools again, every result in call order
in the provider's documented shape, and the first response's reasoning passed back exactly as
its rule says (the expected turns are rebuilt from the transcripts, as in
``test_passback_rules.py``, whose docstrings cite each rule).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import anthropic
import anyio
import httpx
import ollama
import openai
import pytest

from reasoning_stream import Conversation, ReasoningStream, ToolCall, ToolResult, tool
from reasoning_stream.conversation import ToolLoopResult
from reasoning_stream.providers import (
    AnthropicPipe,
    GeminiPipe,
    OllamaPipe,
    OpenAIChatPipe,
    OpenAIResponsesPipe,
    OpenRouterPipe,
)
from reasoning_stream.testing._wire import Transcript, WireServer
from tests.providers.test_passback_rules import (
    CLAUDE,
    KEY,
    THINKING,
    anthropic_content,
    bedrock_pipe,
    chat_reasoning,
    chunk_events,
    converse_content,
    responses_output,
    sse_events,
)


@tool
def get_weather(city: str, unit: str = "c") -> str:
    """Current weather for a city."""
    return f"18 {unit} in {city}"


@tool
def get_time(city: str = "", tz: str = "") -> str:
    """Local time in a city or time zone."""
    return f"09:00 {city or tz}"


TOOLS = [get_weather, get_time]


def expected_output(call: ToolCall) -> str:
    """What the tools above answer, computed here from the call (not by the loop)."""
    arguments = json.loads(call.arguments or "{}")
    if call.name == "get_weather":
        return f"18 {arguments.get('unit', 'c')} in {arguments['city']}"
    return f"09:00 {arguments.get('city') or arguments.get('tz', '')}"


# ------------------------------------------------------------ what each request carries


def names_in(value: Any) -> list[str]:
    """Every ``name`` string under ``value`` (tool declarations, in any provider's shape)."""
    if isinstance(value, dict):
        found = [value["name"]] if isinstance(value.get("name"), str) else []
        return found + [name for item in value.values() for name in names_in(item)]
    if isinstance(value, list):
        return [name for item in value for name in names_in(item)]
    return []


def chat_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"]


def anthropic_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (block["tool_use_id"], block["content"])
        for message in body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def converse_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (block["toolResult"]["toolUseId"], block["toolResult"]["content"][0]["text"])
        for message in body["messages"]
        for block in message["content"]
        if "toolResult" in block
    ]


def responses_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (item["call_id"], item["output"])
        for item in body["input"]
        if item.get("type") == "function_call_output"
    ]


def gemini_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    # Gemini answers calls by name and order (its calls here carry no id).
    return [
        (part["functionResponse"]["name"], part["functionResponse"]["response"]["result"])
        for content in body["contents"]
        for part in content["parts"]
        if "functionResponse" in part
    ]


def ollama_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["tool_name"], m["content"]) for m in body["messages"] if m["role"] == "tool"]


# ---------------------------------------------------------------- the passback, per rule


def anthropic_passback(transcript: str, events: Callable[[str], list[dict[str, Any]]]) -> Any:
    def check(body: dict[str, Any]) -> None:
        assistant = body["messages"][1]
        assert assistant == {"role": "assistant", "content": anthropic_content(events(transcript))}

    return check


def converse_passback(body: dict[str, Any]) -> None:
    assert body["messages"][1] == {
        "role": "assistant",
        "content": converse_content("bedrock_converse_tool_use"),
    }


def responses_passback(body: dict[str, Any]) -> None:
    replayed = [
        item for item in body["input"] if item.get("type") in ("reasoning", "function_call")
    ]
    output = responses_output("openai_responses_interleaved_calls")
    assert [item["id"] for item in replayed] == [item["id"] for item in output]
    for item, original in zip(replayed, output, strict=True):
        if original["type"] == "reasoning":
            assert item["encrypted_content"] == original["encrypted_content"]


def deepseek_passback(body: dict[str, Any]) -> None:
    assistant = body["messages"][1]
    assert assistant["reasoning_content"] == chat_reasoning("openai_chat_tool_call")


def openai_chat_passback(body: dict[str, Any]) -> None:
    """Chat Completions takes no reasoning back from an OpenAI model: the turn is its calls."""
    assistant = body["messages"][1]
    assert set(assistant) == {"role", "content", "tool_calls"}


def gemini_openai_passback(body: dict[str, Any]) -> None:
    tool = Transcript.load("openai_chat_gemini_thought_tool")
    sent_call = next(
        part
        for event in tool.events
        if isinstance(event["data"], dict)
        for choice in event["data"]["choices"]
        for part in choice["delta"].get("tool_calls") or ()
    )
    (call,) = body["messages"][1]["tool_calls"]
    assert call["extra_content"] == sent_call["extra_content"]


def openrouter_passback(body: dict[str, Any]) -> None:
    details = [
        detail
        for event in Transcript.load("openrouter_tool_call").events
        if isinstance(event["data"], dict)
        for choice in event["data"].get("choices", ())
        for detail in choice["delta"].get("reasoning_details") or ()
    ]
    sent = body["messages"][1]["reasoning_details"]
    assert [d.get("data") or d.get("text") for d in sent] == [
        d.get("data") or d.get("text") for d in details
    ]


def gemini_passback(body: dict[str, Any]) -> None:
    """Each ``thoughtSignature`` goes back on the part it came with (the first call's part)."""
    made = [
        part.get("thoughtSignature")
        for event in Transcript.load("gemini_tool_call").events
        for candidate in event["data"].get("candidates", ())
        for part in candidate["content"]["parts"]
        if "functionCall" in part
    ]
    model = next(content for content in body["contents"] if content["role"] == "model")
    sent = [part.get("thoughtSignature") for part in model["parts"] if "functionCall" in part]
    assert sent == made and made[0]


def ollama_passback(body: dict[str, Any]) -> None:
    """Ollama: the tool loop's own thinking goes back on its turn (``thinking``)."""
    assistant = body["messages"][1]
    assert assistant["thinking"] == "I need the weather for both cities."
    assert [call["function"]["name"] for call in assistant["tool_calls"]] == ["get_weather"] * 2


# ------------------------------------------------------------------------ the cases


@dataclass(frozen=True)
class Case:
    replies: tuple[str, str]
    pipe: Callable[[WireServer, ExitStack], Any]
    results: Callable[[dict[str, Any]], list[tuple[str, str]]]
    passback: Callable[[dict[str, Any]], None]
    by_name: bool = False
    """Results are matched to calls by tool name (the API has no call ids)."""


def openai_client(server: WireServer, stack: ExitStack, root: str = "/v1") -> openai.OpenAI:
    return stack.enter_context(
        openai.OpenAI(base_url=server.url + root, api_key=KEY, max_retries=0)
    )


def _bedrock(server: WireServer, stack: ExitStack, **options: Any) -> Any:
    return stack.enter_context(bedrock_pipe(server, tools=TOOLS, **options))


CASES: dict[str, Case] = {
    "anthropic": Case(
        ("anthropic_interleaved_two_tools", "anthropic_tool_answer"),
        lambda server, stack: AnthropicPipe(
            CLAUDE,
            client=stack.enter_context(
                anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)
            ),
            thinking=THINKING,
            tools=TOOLS,
        ),
        anthropic_results,
        anthropic_passback("anthropic_interleaved_two_tools", sse_events),
    ),
    "bedrock-converse": Case(
        ("bedrock_converse_tool_use", "bedrock_converse_plain"),
        _bedrock,
        converse_results,
        converse_passback,
    ),
    "bedrock-invoke": Case(
        ("bedrock_invoke_anthropic_interleaved", "bedrock_invoke_anthropic_thinking"),
        lambda server, stack: _bedrock(
            server, stack, api="invoke", additional_model_request_fields={"thinking": THINKING}
        ),
        anthropic_results,
        anthropic_passback("bedrock_invoke_anthropic_interleaved", chunk_events),
    ),
    "openai-responses": Case(
        ("openai_responses_interleaved_calls", "openai_responses_followup"),
        lambda server, stack: OpenAIResponsesPipe(
            "o4-mini", client=openai_client(server, stack), store=False, tools=TOOLS
        ),
        responses_results,
        responses_passback,
    ),
    "openai-chat": Case(
        ("openai_chat_tool_call", "openai_chat_no_reasoning"),
        lambda server, stack: OpenAIChatPipe(
            "gpt-4.1", client=openai_client(server, stack), tools=TOOLS
        ),
        chat_results,
        openai_chat_passback,
    ),
    "deepseek": Case(
        ("openai_chat_tool_call", "openai_chat_reasoning_content"),
        lambda server, stack: OpenAIChatPipe(
            "deepseek-chat", client=openai_client(server, stack), tools=TOOLS
        ),
        chat_results,
        deepseek_passback,
    ),
    "gemini-openai": Case(
        ("openai_chat_gemini_thought_tool", "openai_chat_gemini_thought_answer"),
        lambda server, stack: OpenAIChatPipe(
            "gemini-3-pro-preview",
            client=openai_client(server, stack, "/v1beta/openai"),
            tools=TOOLS,
        ),
        chat_results,
        gemini_openai_passback,
    ),
    "openrouter": Case(
        ("openrouter_tool_call", "openrouter_reasoning"),
        lambda server, stack: OpenRouterPipe(
            "google/gemini-2.5-pro",
            base_url=server.url + "/api/v1",
            api_key=KEY,
            client=stack.enter_context(httpx.Client()),
            tools=TOOLS,
        ),
        chat_results,
        openrouter_passback,
    ),
    "gemini": Case(
        ("gemini_tool_call", "gemini_tool_answer"),
        lambda server, stack: GeminiPipe(
            "gemini-3-pro-preview",
            client=stack.enter_context(httpx.Client()),
            base_url=server.url + "/v1beta",
            api_key=KEY,
            tools=TOOLS,
        ),
        gemini_results,
        gemini_passback,
        by_name=True,
    ),
    "ollama": Case(
        ("ollama_chat_tool_call", "ollama_chat_reasoning"),
        lambda server, stack: OllamaPipe(
            "qwen3", client=ollama.Client(host=server.url), think=True, tools=TOOLS
        ),
        ollama_results,
        ollama_passback,
        by_name=True,
    ),
}


@pytest.fixture(params=list(CASES))
def case(request: pytest.FixtureRequest) -> Iterator[tuple[str, Case]]:
    yield request.param, CASES[request.param]


def test_run_tools_sends_tools_results_and_passback_through_each_sdk(
    case: tuple[str, Case],
) -> None:
    name, spec = case
    chunks: list[str] = []
    events: list[Any] = []
    with WireServer(*spec.replies) as server, ExitStack() as stack:
        pipe = spec.pipe(server, stack)
        pipe.set_streaming_callback(chunks.append).set_event_callback(events.append)
        conversation = Conversation().add_user("Weather and time in Paris?")
        result = conversation.run_tools(pipe)
    check_loop(name, spec, server, result, chunks, events)


def check_loop(
    name: str,
    spec: Case,
    server: WireServer,
    result: ToolLoopResult,
    chunks: list[str],
    events: list[Any],
) -> None:
    assert result.status == "completed", name
    assert len(result.steps) == 2 and len(server.requests) == 2
    calls = result.steps[0].result.tool_calls
    assert calls and result.text == result.steps[1].result.text
    first, second = (request.json() for request in server.requests)
    # Both requests offer the pipe's tools, in the provider's shape.
    for body in (first, second):
        sent = names_in(body.get("tools") or body.get("toolConfig"))
        assert sent.count("get_weather") == sent.count("get_time") == 1, name
    # Request 2: every result, in call order, as the tools computed it.
    key = (lambda call: call.name) if spec.by_name else (lambda call: call.id)
    assert spec.results(second) == [(key(call), expected_output(call)) for call in calls]
    assert [r.content for r in result.steps[0].tool_results] == [expected_output(c) for c in calls]
    spec.passback(second)
    # One channel: balanced; the typed events put each result after the calls of its step.
    collected = "".join(chunks)
    assert collected.count(ReasoningStream.OPEN_TAG) == collected.count(ReasoningStream.CLOSE_TAG)
    assert ReasoningStream.split(collected, lossless=True).text == "".join(
        step.result.text for step in result.steps
    )
    kinds = [type(e).__name__ for e in events if isinstance(e, ToolCall | ToolResult)]
    assert kinds == ["ToolCall"] * len(calls) + ["ToolResult"] * len(calls)


@pytest.mark.anyio
async def test_arun_tools_through_the_async_sdks() -> None:
    """The same loop under ``arun_tools`` (asyncio and trio), over httpx's async client."""
    spec = CASES["gemini"]
    chunks: list[str] = []
    events: list[Any] = []
    async with WireServer(*spec.replies) as server, httpx.AsyncClient() as client:
        pipe = GeminiPipe(
            "gemini-3-pro-preview",
            client=client,
            base_url=server.url + "/v1beta",
            api_key=KEY,
            tools=TOOLS,
        )
        pipe.set_streaming_callback(chunks.append).set_event_callback(events.append)
        with anyio.fail_after(10):
            result = await Conversation().add_user("Weather?").arun_tools(pipe)
    check_loop("gemini", spec, server, result, chunks, events)


@pytest.mark.anyio
async def test_arun_tools_through_the_async_anthropic_sdk() -> None:
    spec = CASES["anthropic"]
    chunks: list[str] = []
    events: list[Any] = []
    async with WireServer(*spec.replies) as server:
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key=KEY, max_retries=0)
        async with client:
            pipe = AnthropicPipe(CLAUDE, client=client, thinking=THINKING, tools=TOOLS)
            pipe.set_streaming_callback(chunks.append).set_event_callback(events.append)
            with anyio.fail_after(10):
                result = await Conversation().add_user("Weather?").arun_tools(pipe)
    check_loop("anthropic", spec, server, result, chunks, events)


@pytest.mark.anyio
async def test_arun_tools_through_the_async_openai_sdk() -> None:
    """Responses over ``AsyncOpenAI``: reasoning items and function calls replayed in order."""
    spec = CASES["openai-responses"]
    chunks: list[str] = []
    events: list[Any] = []
    async with WireServer(*spec.replies) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
        async with client:
            pipe = OpenAIResponsesPipe("o4-mini", client=client, store=False, tools=TOOLS)
            pipe.set_streaming_callback(chunks.append).set_event_callback(events.append)
            with anyio.fail_after(10):
                result = await Conversation().add_user("Weather?").arun_tools(pipe)
    check_loop("openai-responses", spec, server, result, chunks, events)
