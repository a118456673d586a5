"""The next turn exactly as each provider documents it: the numbered rules of issue #11.

Every test runs a first turn through the provider's real SDK (or httpx) against the loopback
WireServer, continues the conversation, and asserts the follow-up request body the server
received. Expected bodies are rebuilt here from the bundled transcripts, independently of the
pipes. Each docstring cites the provider's page that states the rule.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import anthropic
import httpx
import ollama
import openai
import pytest

from reasoning_stream._exceptions import UsageError
from reasoning_stream._pipe import Pipe
from reasoning_stream.conversation import Conversation
from reasoning_stream.providers import (
    AnthropicPipe,
    BedrockPipe,
    GeminiPipe,
    OllamaPipe,
    OpenAIChatPipe,
    OpenAIResponsesPipe,
)
from reasoning_stream.testing._wire import Transcript, WireServer
from tests.providers.conftest import bedrock_client

KEY = "test-key-not-a-secret"
CLAUDE = "claude-sonnet-4-5"
BEDROCK_CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
THINKING = {"type": "enabled", "budget_tokens": 2048}


# ----------------------------------------------------------------------------- helpers


def anthropic_content(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An Anthropic message's content blocks, accumulated from its raw stream events."""
    blocks: dict[int, dict[str, Any]] = {}
    inputs: dict[int, str] = {}
    for event in events:
        kind, index = event.get("type"), event.get("index")
        if kind == "content_block_start":
            blocks[index] = dict(event["content_block"])
        elif kind == "content_block_delta":
            block, delta = blocks[index], event["delta"]
            if delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                inputs[index] = inputs.get(index, "") + delta["partial_json"]
    for index, text in inputs.items():
        blocks[index]["input"] = json.loads(text)
    return [blocks[index] for index in sorted(blocks)]


def sse_events(name: str) -> list[dict[str, Any]]:
    return [event["data"] for event in Transcript.load(name).events]


def chunk_events(name: str) -> list[dict[str, Any]]:
    return [event["inner"] for event in Transcript.load(name).events]


def converse_content(name: str) -> list[dict[str, Any]]:
    """A ConverseStream message's content blocks, accumulated from its events."""
    blocks: dict[int, dict[str, Any]] = {}
    inputs: dict[int, str] = {}
    for event in Transcript.load(name).events:
        payload = event.get("payload") or {}
        index = payload.get("contentBlockIndex")
        if event["event_type"] == "contentBlockStart":
            tool = payload["start"]["toolUse"]
            blocks[index] = {"toolUse": {"toolUseId": tool["toolUseId"], "name": tool["name"]}}
        elif event["event_type"] == "contentBlockDelta":
            delta = payload["delta"]
            if "reasoningContent" in delta:
                block = blocks.setdefault(index, {"reasoningContent": {"reasoningText": {}}})
                text = block["reasoningContent"]["reasoningText"]
                for key in ("text", "signature"):
                    if key in delta["reasoningContent"]:
                        text[key] = text.get(key, "") + delta["reasoningContent"][key]
            elif "text" in delta:
                block = blocks.setdefault(index, {"text": ""})
                block["text"] += delta["text"]
            elif "toolUse" in delta:
                inputs[index] = inputs.get(index, "") + delta["toolUse"]["input"]
    for index, block in blocks.items():
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(inputs.get(index) or "{}")
    return [blocks[index] for index in sorted(blocks)]


def tool_loop(pipe: Pipe, prompt: str = "Weather and time in Paris?") -> Conversation:
    """A first turn that calls tools, recorded, a result for every call, then the follow-up."""
    conversation = Conversation().add_user(prompt)
    first = conversation.run(pipe)
    assert first.tool_calls, "the first transcript must call a tool"
    for call in first.tool_calls:
        conversation.add_tool_result(call.id, "18 °C")
    return conversation


@contextmanager
def anthropic_pipe(server: WireServer) -> Iterator[AnthropicPipe]:
    with anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0) as client:
        yield AnthropicPipe(CLAUDE, client=client, thinking=THINKING)


@contextmanager
def bedrock_pipe(server: WireServer, **options: Any) -> Iterator[BedrockPipe]:
    client = bedrock_client(server.url)
    try:
        yield BedrockPipe(BEDROCK_CLAUDE, client=client, **options)
    finally:
        client.close()


# ------------------------------------------------------- rule 1: blocks in the order received


@pytest.mark.parametrize(
    "transcript", ["anthropic_interleaved_two_tools", "anthropic_interleaved_tool"]
)
def test_rule_1_anthropic_echoes_the_blocks_in_the_order_received(transcript: str) -> None:
    """The tool-use turn goes back exactly as received: thinking, tool_use, thinking, tool_use
    (or thinking, redacted_thinking, text, thinking, tool_use), signatures and redacted data
    byte-identical.

    Docs: https://platform.claude.com/docs/build-with-claude/thinking-tool-workflows ("Echo
    the assistant message exactly as received: rebuilding the message or filtering out
    redacted_thinking blocks triggers a 400 error") and
    https://docs.claude.com/en/docs/build-with-claude/extended-thinking#preserving-thinking-blocks.
    """
    with WireServer(transcript, "anthropic_tool_answer") as server, anthropic_pipe(server) as pipe:
        conversation = tool_loop(pipe)
        conversation.run(pipe)
    follow_up = server.requests[1].json()
    assistant = follow_up["messages"][1]
    assert assistant == {"role": "assistant", "content": anthropic_content(sse_events(transcript))}
    raw = server.requests[1].body.decode()
    for block in assistant["content"]:
        for key in ("signature", "data"):
            if key in block:
                assert json.dumps(block[key]) in raw


def test_rule_1_bedrock_converse_echoes_reasoning_and_tool_use_in_order() -> None:
    """Converse: reasoning, toolUse, reasoning, toolUse goes back in that order, each reasoning
    text with its signature unmodified.

    Docs: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ReasoningTextBlock.html
    ("If you pass a reasoning block back to the API in a multi-turn conversation, include the
    text and its signature unmodified") and Anthropic's rule for the same models above.
    """
    with (
        WireServer("bedrock_converse_tool_use", "bedrock_converse_plain") as server,
        bedrock_pipe(server) as pipe,
    ):
        conversation = tool_loop(pipe)
        conversation.run(pipe)
    assistant = server.requests[1].json()["messages"][1]
    assert assistant == {
        "role": "assistant",
        "content": converse_content("bedrock_converse_tool_use"),
    }


def test_rule_1_bedrock_invoke_echoes_the_anthropic_blocks_in_order() -> None:
    """InvokeModel with Claude's own body: thinking, tool_use, thinking, tool_use go back as
    received, as on Anthropic's API.

    Docs: https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html
    (extended thinking with tool use on Bedrock follows the Messages API rules) and
    https://platform.claude.com/docs/build-with-claude/thinking-tool-workflows.
    """
    with (
        WireServer(
            "bedrock_invoke_anthropic_interleaved", "bedrock_invoke_anthropic_thinking"
        ) as server,
        bedrock_pipe(
            server, api="invoke", additional_model_request_fields={"thinking": THINKING}
        ) as pipe,
    ):
        conversation = tool_loop(pipe)
        conversation.run(pipe)
    assistant = server.requests[1].json()["messages"][1]
    expected = anthropic_content(chunk_events("bedrock_invoke_anthropic_interleaved"))
    assert assistant == {"role": "assistant", "content": expected}
    assert [block["type"] for block in expected] == ["thinking", "tool_use", "thinking", "tool_use"]


# ------------------------------------------------- rule 4: Responses input items in order


def responses_output(name: str) -> list[dict[str, Any]]:
    """The response's output items, as ``response.completed`` lists them."""
    for event in Transcript.load(name).events:
        if event["data"]["type"] == "response.completed":
            return list(event["data"]["response"]["output"])
    raise AssertionError(f"{name} has no response.completed")


def test_rule_4_responses_replays_items_in_the_order_of_the_response() -> None:
    """``reasoning, function_call, reasoning, function_call`` goes back in that order, each
    reasoning item directly before the call it preceded, every item with its own id.

    Docs: https://platform.openai.com/docs/guides/reasoning#keeping-reasoning-items-in-context
    and https://cookbook.openai.com/examples/responses_api/reasoning_items (pass the previous
    response's output items back as they came; a reasoning item sent without its following
    item is rejected: "Item 'rs_…' of type 'reasoning' was provided without its required
    following item").
    """
    with (
        WireServer("openai_responses_interleaved_calls", "openai_responses_followup") as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client,
    ):
        pipe = OpenAIResponsesPipe("o4-mini", client=client, store=False)
        conversation = tool_loop(pipe)
        conversation.run(pipe)
    sent = server.requests[1].json()["input"]
    output = responses_output("openai_responses_interleaved_calls")
    replayed = sent[1:5]
    assert [item["type"] for item in replayed] == [item["type"] for item in output]
    for item, original in zip(replayed, output, strict=True):
        assert item["id"] == original["id"]
        if original["type"] == "reasoning":
            assert item["encrypted_content"] == original["encrypted_content"]
            assert item["summary"] == original["summary"]
        else:
            assert (item["call_id"], item["name"], item["arguments"]) == (
                original["call_id"],
                original["name"],
                original["arguments"],
            )
    assert [item["type"] for item in sent[5:]] == ["function_call_output"] * 2


# ---------------------------------------- rule 7: DeepSeek and Kimi reasoning_content


def chat_reasoning(name: str) -> str:
    """The ``reasoning_content`` a Chat Completions transcript streams, joined."""
    parts = []
    for event in Transcript.load(name).events:
        data = event["data"]
        for choice in data.get("choices", ()) if isinstance(data, dict) else ():
            parts.append(choice["delta"].get("reasoning_content") or "")
    return "".join(parts)


@pytest.mark.parametrize("model", ["deepseek-chat", "moonshotai/kimi-k2-thinking"])
def test_rule_7_every_tool_call_turn_carries_reasoning_content(model: str) -> None:
    """Every assistant tool-call turn goes back with ``reasoning_content``: the model's own
    reasoning, ``""`` for its own turn that had none, in the tool loop and in every later
    request; a tool-call turn another model (or the application) wrote is named by preflight
    and goes back with ``""`` under ``repair=True``.

    Docs: https://api-docs.deepseek.com/guides/thinking_mode#tool-calls ("For turns that do
    perform tool calls, the reasoning_content must be fully passed back to the API in all
    subsequent requests"; a missing field answers 400 "Missing reasoning_content field in the
    assistant message at message index N") and Moonshot's thinking models, which answer 400
    "thinking is enabled but reasoning_content is missing in assistant tool call message".
    """
    foreign = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_earlier",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
            }
        ],
    }
    replies = (
        "openai_chat_tool_call",
        "openai_chat_tool_call_bare",
        "openai_chat_reasoning_content",
        "openai_chat_reasoning_content",
    )
    with (
        WireServer(*replies) as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client,
    ):
        pipe = OpenAIChatPipe(model, client=client)
        conversation = Conversation().add_user("Weather in Rome?").add_message(foreign)
        conversation.add_tool_result("call_earlier", "21 °C")
        conversation.add_user("And in Paris, with the time?")
        # The hand-written turn has no reasoning of this model: preflight names it, and only
        # repair=True sends it (with "", as the docs allow).
        with pytest.raises(UsageError, match="reasoning_content_missing"):
            conversation.run(pipe)
        assert not server.requests

        def run() -> Any:
            with pytest.warns(UserWarning, match="empty reasoning_content"):
                return conversation.run(pipe, repair=True)

        first = run()
        for call in first.tool_calls:
            conversation.add_tool_result(call.id, "18 °C")
        second = run()
        for call in second.tool_calls:
            conversation.add_tool_result(call.id, "09:00")
        run()
        conversation.add_user("Thanks. And tomorrow?")
        run()
    own = chat_reasoning("openai_chat_tool_call")
    assert own and chat_reasoning("openai_chat_tool_call_bare") == ""
    for number, expected in ((1, [""]), (2, ["", own]), (3, ["", own, ""]), (4, ["", own, ""])):
        sent = server.requests[number - 1].json()["messages"]
        calls = [m for m in sent if m["role"] == "assistant" and m.get("tool_calls")]
        assert [m.get("reasoning_content", "MISSING") for m in calls] == expected, number


# ------------------------------------- rule 5: Gemini's OpenAI-compatible endpoint


def test_rule_5_gemini_openai_compat_thoughts_and_call_signatures() -> None:
    """Through ``OpenAIChatPipe`` at ``/v1beta/openai``: ``<thought>…</thought>`` in content is
    reasoning, not answer, and the signature from ``tool_calls[i].extra_content.google.
    thought_signature`` goes back on that same tool call in the follow-up.

    Docs: https://ai.google.dev/gemini-api/docs/openai#thinking (thought summaries in
    ``<thought>`` tags with ``include_thoughts``) and
    https://ai.google.dev/gemini-api/docs/thought-signatures ("Function Calling (Strict)":
    a function call without its signature answers 400 "Function call is missing a
    thought_signature in functionCall parts").
    """
    tool = Transcript.load("openai_chat_gemini_thought_tool")
    call = next(
        part
        for event in tool.events
        if isinstance(event["data"], dict)
        for choice in event["data"]["choices"]
        for part in choice["delta"].get("tool_calls") or ()
    )
    with (
        WireServer(tool, "openai_chat_gemini_thought_answer") as server,
        openai.OpenAI(base_url=server.url + "/v1beta/openai", api_key=KEY, max_retries=0) as client,
    ):
        pipe = OpenAIChatPipe("gemini-3-pro-preview", client=client)
        conversation = Conversation().add_user("Weather in Paris?")
        first = conversation.run(pipe)
        conversation.add_tool_result(first.tool_calls[0].id, "18 °C")
        second = conversation.run(pipe)
    assert first.model_reasoning == (
        "**Checking the weather**\nThe user wants Paris; the get_weather tool answers that."
    )
    assert first.text == ""
    assert second.text == "It is 18 °C in Paris."
    assert second.model_reasoning == "**Answering**\nThe tool said 18 °C."
    sent = server.requests[1].json()["messages"]
    assistant = sent[1]
    assert assistant["content"] == ""
    assert assistant["tool_calls"] == [
        {
            "id": call["id"],
            "type": "function",
            "function": call["function"],
            "extra_content": call["extra_content"],
        }
    ]


# --------------------------------------------- rule 10: literal tags in plain answers


def chat_content(name: str) -> str:
    parts = []
    for event in Transcript.load(name).events:
        data = event["data"]
        for choice in data.get("choices", ()) if isinstance(data, dict) else ():
            parts.append(choice["delta"].get("content") or "")
    return "".join(parts)


def test_rule_10_a_plain_model_quoting_think_tags_keeps_its_whole_answer() -> None:
    """``inline_tags="auto"`` reads tags only when the model is known to write them or the
    stream starts with one: gpt-4o quoting ``<think>`` mid-answer is all answer, and the
    follow-up request carries that whole answer back.

    Docs: https://platform.openai.com/docs/api-reference/chat/streaming (``delta.content`` is
    the answer; OpenAI's models never put reasoning in it) and
    https://api-docs.deepseek.com/guides/reasoning_model (servers that separate reasoning use
    ``reasoning_content``); tags in content are a template convention of open models
    (https://huggingface.co/deepseek-ai/DeepSeek-R1#usage-recommendations), so only a stream
    that opens with one is read as reasoning.
    """
    answer = chat_content("openai_chat_literal_tags")
    assert "<think>" in answer and not answer.lstrip().startswith("<")
    with (
        WireServer("openai_chat_literal_tags", "openai_chat_literal_tags") as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client,
    ):
        pipe = OpenAIChatPipe("gpt-4o", client=client)
        conversation = Conversation().add_user("How do reasoning models mark thoughts?")
        first = conversation.run(pipe)
        conversation.add_user("Thanks!")
        conversation.run(pipe)
    assert first.model_reasoning == "" and first.reasoning_segments == ()
    assert first.text == answer
    sent = server.requests[1].json()["messages"]
    assert sent[1] == {"role": "assistant", "content": answer}


def test_rule_10_a_stream_that_opens_with_a_tag_is_still_read_as_reasoning() -> None:
    """An unknown model whose content starts with ``<think>`` (Qwen3 or MiniMax behind a
    server without a reasoning parser) still has its reasoning separated under "auto"."""
    with (
        WireServer("openai_chat_inline_think") as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client,
    ):
        result = OpenAIChatPipe("some-org/local-model", client=client).run("2+2?")
    content = chat_content("openai_chat_inline_think")
    opened = content.lstrip()
    assert opened.startswith("<think>")
    reasoning, _, text = opened[len("<think>") :].partition("</think>")
    assert (result.model_reasoning, result.text) == (reasoning, text)


# ----------------------------------------- rule 2: models that keep earlier thinking


# The anthropic SDK warns that some of these model ids are deprecated; the rule still holds.
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(
    ("model", "kept"),
    [
        ("claude-opus-4-5", True),
        ("claude-sonnet-4-6", True),
        ("claude-opus-5", True),
        ("claude-sonnet-4-5", False),
        ("claude-opus-4-1", False),
    ],
)
def test_rule_2_earlier_thinking_goes_back_to_models_that_keep_it(model: str, kept: bool) -> None:
    """After a new user turn, the previous answer's signed thinking goes back to models with
    preserved thinking (Opus 4.5+, Sonnet 4.6+, 5.x), exactly as received; older models get the
    plain answer (they ignore, and bill, thinking from before the last user turn).

    Docs: https://platform.claude.com/docs/en/build-with-claude/preserved-thinking ("On models
    with preserved thinking, usable blocks stay in context ... Send assistant turns back
    exactly as the API returned them"; "thinking blocks are tied to the model that produced
    them") and https://docs.claude.com/en/docs/build-with-claude/extended-thinking#thinking-block-preservation.
    """
    with (
        WireServer("anthropic_thinking", "anthropic_no_thinking") as server,
        anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0) as client,
    ):
        pipe = AnthropicPipe(model, client=client, thinking=THINKING)
        conversation = Conversation().add_user("Capital of France?")
        first = conversation.run(pipe)
        conversation.add_user("And of Italy?")
        conversation.run(pipe)
    events = sse_events("anthropic_thinking")
    content = anthropic_content(events)
    assistant = server.requests[1].json()["messages"][1]
    if kept:
        assert assistant == {"role": "assistant", "content": content}
    else:
        assert assistant == {"role": "assistant", "content": first.text}


# --------------------------------- rule 3: the interleaved-thinking beta header


WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.mark.parametrize(
    ("model", "thinking", "beta"),
    [
        ("claude-sonnet-4-5", THINKING, True),
        ("claude-opus-4-1", THINKING, True),
        ("claude-sonnet-4-6", {"type": "adaptive"}, False),
        ("claude-3-7-sonnet-20250219", THINKING, False),
    ],
)
def test_rule_3_manual_budget_with_tools_sends_the_interleaved_beta(
    model: str, thinking: dict[str, Any], beta: bool
) -> None:
    """Manual extended thinking with tools sends ``anthropic-beta: interleaved-thinking-
    2025-05-14`` on the first request and on the tool-loop follow-up; adaptive thinking
    interleaves without it, and Claude 3.7 cannot interleave.

    Docs: https://platform.claude.com/docs/en/build-with-claude/extended-thinking#interleaved-thinking
    (manual mode needs the beta header ``interleaved-thinking-2025-05-14`` to think between
    tool calls) and https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking
    ("Adaptive mode automatically enables interleaved thinking ... No beta header is
    required").
    """
    with (
        WireServer("anthropic_interleaved_tool", "anthropic_tool_answer") as server,
        anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0) as client,
    ):
        pipe = AnthropicPipe(
            model, client=client, thinking=thinking, extra_body={"tools": [WEATHER_TOOL]}
        )
        conversation = tool_loop(pipe)
        conversation.run(pipe)
    for request in server.requests:
        assert request.json()["tools"] == [WEATHER_TOOL]
        sent = request.headers.get("anthropic-beta", "")
        assert ("interleaved-thinking-2025-05-14" in sent) is beta


def test_rule_3_the_lean_transport_sends_the_same_beta() -> None:
    """``transport="httpx"`` builds its own headers: the beta goes out there too."""
    with WireServer("anthropic_interleaved_tool", "anthropic_tool_answer") as server:
        pipe = AnthropicPipe(
            "claude-sonnet-4-5",
            transport="httpx",
            base_url=server.url,
            api_key=KEY,
            thinking=THINKING,
            extra_body={"tools": [WEATHER_TOOL]},
        )
        tool_loop(pipe).run(pipe)
    assert len(server.requests) == 2
    for request in server.requests:
        assert "interleaved-thinking-2025-05-14" in request.headers.get("anthropic-beta", "")


def test_rule_3_no_tools_no_beta() -> None:
    """Without tools there is nothing to interleave: no beta header."""
    with (
        WireServer("anthropic_thinking") as server,
        anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0) as client,
    ):
        AnthropicPipe("claude-sonnet-4-5", client=client, thinking=THINKING).run("Hi")
    assert "anthropic-beta" not in server.requests[0].headers


# ------------------------------------------- rule 8: Ollama and gpt-oss keep thinking


def ollama_thinking(name: str) -> str:
    return "".join(
        event.get("message", {}).get("thinking") or "" for event in Transcript.load(name).events
    )


def test_rule_8_ollama_tool_loop_keeps_thinking_and_the_scope_is_the_clients_host() -> None:
    """The assistant turn of the current tool loop goes back with its ``thinking``; once a user
    turn follows, it goes back without. The pipe's endpoint is the given client's host, so a
    turn made at one server is not replayed to another.

    Docs: https://docs.ollama.com/capabilities/thinking (the chat API's ``message.thinking``)
    and https://docs.ollama.com/api/chat (an assistant message takes ``thinking``; the gpt-oss
    and Qwen3 templates render it for the turns after the last user message).
    """
    replies = ("ollama_chat_tool_call", "ollama_chat_plain", "ollama_chat_plain")
    with (
        WireServer(*replies) as server,
        WireServer("ollama_chat_plain") as other,
        ollama.Client(host=server.url) as client,
        ollama.Client(host=other.url) as other_client,
    ):
        pipe = OllamaPipe("qwen3", client=client, think=True)
        assert pipe.endpoint == server.url.rstrip("/")
        conversation = Conversation().add_user("Weather in Paris and Rome?")
        first = conversation.run(pipe)
        for call in first.tool_calls:
            conversation.add_tool_result(call.id, "18 °C", name=call.name)
        elsewhere = conversation.copy()
        conversation.run(pipe)
        conversation.add_user("Thanks!")
        conversation.run(pipe)
        foreign = OllamaPipe("qwen3", client=other_client, think=True)
        elsewhere.run(foreign)
    thinking = ollama_thinking("ollama_chat_tool_call")
    loop, after_user = (request.json()["messages"] for request in server.requests[1:])
    assert loop[1]["role"] == "assistant" and loop[1]["thinking"] == thinking
    assert after_user[1]["role"] == "assistant" and "thinking" not in after_user[1]
    sent_elsewhere = other.requests[0].json()["messages"]
    assert sent_elsewhere[1]["role"] == "assistant" and "thinking" not in sent_elsewhere[1]


def test_rule_8_gpt_oss_on_openai_compatible_servers_keeps_reasoning_in_the_loop() -> None:
    """gpt-oss keeps its chain of thought until the final answer: the tool-loop turn goes
    back with ``reasoning_content``, and not after the next user turn.

    Docs: https://cookbook.openai.com/articles/openai-harmony ("drop the previous turns'
    chain of thought once a final answer was given; keep it while the model is calling
    tools") and https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html.
    """
    replies = (
        "openai_chat_tool_call",
        "openai_chat_reasoning_content",
        "openai_chat_reasoning_content",
    )
    with (
        WireServer(*replies) as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client,
    ):
        pipe = OpenAIChatPipe("openai/gpt-oss-120b", client=client)
        conversation = tool_loop(pipe)
        conversation.run(pipe)
        conversation.add_user("Thanks!")
        conversation.run(pipe)
    reasoning = chat_reasoning("openai_chat_tool_call")
    loop, after_user = (request.json()["messages"] for request in server.requests[1:])
    assert loop[1]["reasoning_content"] == reasoning
    assert "reasoning_content" not in after_user[1]


# ------------------------------- rule 6: Gemini 3 after a model switch, native API


def gemini_served(name: str, model: str) -> Transcript:
    """A Gemini transcript served at ``model``'s path (the model id is in the URL)."""
    return replace(Transcript.load(name), path=f"/v1beta/models/{model}:streamGenerateContent")


def test_rule_6_gemini_3_gets_the_documented_stand_in_for_calls_it_did_not_sign() -> None:
    """A Gemini 3 request whose current turn holds function calls another model made (or the
    application wrote) is named by preflight; with ``repair=True`` the first call of the step
    gets the documented stand-in signature, calls before the current turn stay as written.

    Docs: https://ai.google.dev/gemini-api/docs/thought-signatures#faqs ("If you are
    transferring a conversation trace from another model ... or injecting a custom function
    call that was not generated by Gemini 3, you will not have a valid signature ... set
    the following dummy signatures of either 'context_engineering_is_the_way_to_go' or
    'skip_thought_signature_validator'") and
    https://cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures.
    """
    written = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_old",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
            }
        ],
    }
    replies = (
        gemini_served("gemini_tool_call", "gemini-2.5-flash"),
        gemini_served("gemini_tool_answer", "gemini-3-pro-preview"),
    )
    with WireServer(*replies) as server, httpx.Client() as client:
        url = server.url + "/v1beta"
        older = GeminiPipe("gemini-2.5-flash", client=client, base_url=url, api_key=KEY)
        newer = GeminiPipe("gemini-3-pro-preview", client=client, base_url=url, api_key=KEY)
        conversation = Conversation().add_user("Weather in Rome?").add_message(written)
        conversation.add_tool_result("call_old", "21 °C").add_user("And Paris?")
        first = conversation.run(older)
        for call in first.tool_calls:
            conversation.add_tool_result(call.id, "18 °C")
        # Preflight names the unsigned call; repair=True sends the documented stand-in.
        with pytest.raises(UsageError, match="signature_missing"):
            conversation.run(newer)
        with pytest.warns(UserWarning, match="placeholder thought signature"):
            conversation.run(newer, repair=True)
    contents = server.requests[1].json()["contents"]
    # The tool result and the next user message share one "user" content.
    assert [content["role"] for content in contents] == ["user", "model", "user", "model", "user"]
    # Before the current turn: as written, no stand-in.
    assert contents[1]["parts"] == [
        {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}}
    ]
    # The current turn's step came from gemini-2.5-flash: its signatures are not Gemini 3's.
    calls = [part for part in contents[3]["parts"] if "functionCall" in part]
    assert calls[0]["thoughtSignature"] == "skip_thought_signature_validator"
    assert all("thoughtSignature" not in part for part in calls[1:])
    first_signatures = {state.payload for state in first.reasoning_state}
    assert not first_signatures & {part.get("thoughtSignature") for part in contents[3]["parts"]}


# ---------------------------------------------- rule 9: the effort knob, current docs


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(
    ("model", "setting", "fields"),
    [
        ("claude-opus-5", False, {"thinking": {"type": "disabled"}}),
        ("claude-opus-5-5", False, {}),
        (
            "claude-opus-5-5",
            "low",
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}},
        ),
        ("claude-opus-4-7", False, {}),
    ],
)
def test_rule_9_claude_5_thinking_switch_as_documented(
    model: str, setting: Any, fields: dict[str, Any]
) -> None:
    """Opus 5 thinks by default and accepts ``disabled`` (at effort high or below); Opus 5.5
    cannot disable thinking (``disabled`` answers 400), so ``reasoning=False`` sends nothing
    and says so; Opus 4.7 is off unless asked.

    Docs: https://platform.claude.com/docs/en/models/opus-5/migration-guide ("thinking is on
    by default, and thinking can be disabled only at effort high or below") and
    https://platform.claude.com/docs/en/models/opus-5-5/whats-new-opus-5-5 ("Thinking can't
    be disabled": ``"thinking.type.disabled" is not supported for this model``).
    """
    with (
        WireServer("anthropic_no_thinking", "anthropic_no_thinking") as server,
        anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0) as client,
        warnings.catch_warnings(record=True),
    ):
        warnings.simplefilter("always")
        pipe = AnthropicPipe(model, client=client, reasoning=setting)
        conversation = Conversation().add_user("Hi")
        conversation.run(pipe)
        conversation.add_user("Again")
        conversation.run(pipe)
    for request in server.requests:
        body = request.json()
        assert {key: body[key] for key in ("thinking", "output_config") if key in body} == fields
    if not fields:
        assert pipe.reasoning_plan().warnings


@pytest.mark.parametrize(
    ("model", "setting", "fields"),
    [
        ("deepseek-chat", False, {"thinking": {"type": "disabled"}}),
        ("deepseek-chat", "high", {"thinking": {"type": "enabled"}, "reasoning_effort": "high"}),
        ("kimi-k2.5", False, {"thinking": {"type": "disabled"}}),
    ],
)
def test_rule_9_deepseek_and_kimi_thinking_switches(
    model: str, setting: Any, fields: dict[str, Any]
) -> None:
    """DeepSeek's API takes ``thinking: {type: enabled|disabled}`` plus ``reasoning_effort``;
    Kimi K2.5 and later take ``thinking: {type: disabled}``; both ride in the request body
    (the SDK's ``extra_body``), on every request of the conversation.

    Docs: https://api-docs.deepseek.com/guides/thinking_mode (the toggle and effort table)
    and https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model (thinking is on by
    default on K2.5 and later; ``{"type": "disabled"}`` turns it off).
    """
    with (
        WireServer("openai_chat_no_reasoning", "openai_chat_no_reasoning") as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client,
    ):
        pipe = OpenAIChatPipe(model, client=client, reasoning=setting)
        conversation = Conversation().add_user("Hi")
        conversation.run(pipe)
        conversation.add_user("Again")
        conversation.run(pipe)
    for request in server.requests:
        body = request.json()
        assert {key: body[key] for key in ("thinking", "reasoning_effort") if key in body} == fields


CONVERSE_TOOLS = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_weather",
                "inputSchema": {
                    "json": {"type": "object", "properties": {"city": {"type": "string"}}}
                },
            }
        }
    ]
}


@pytest.mark.parametrize("api", ["converse", "invoke"])
def test_rule_3_bedrock_claude_with_a_budget_and_tools_sends_the_beta_in_the_body(api: str) -> None:
    """On Bedrock the beta rides in the body: ``anthropic_beta`` in Converse's
    ``additionalModelRequestFields``, or at the top of the Invoke body, on every request of
    the tool loop.

    Docs: https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html
    (interleaved thinking with ``anthropic_beta: ["interleaved-thinking-2025-05-14"]``).
    """
    if api == "converse":
        replies = ("bedrock_converse_tool_use", "bedrock_converse_plain")
        options: dict[str, Any] = {"extra_body": {"toolConfig": CONVERSE_TOOLS}}
    else:
        replies = ("bedrock_invoke_anthropic_interleaved", "bedrock_invoke_anthropic_thinking")
        options = {"extra_body": {"tools": [WEATHER_TOOL]}}
    with (
        WireServer(*replies) as server,
        bedrock_pipe(
            server, api=api, additional_model_request_fields={"thinking": THINKING}, **options
        ) as pipe,
    ):
        conversation = tool_loop(pipe)
        conversation.run(pipe)
    for request in server.requests:
        body = request.json()
        fields = body["additionalModelRequestFields"] if api == "converse" else body
        assert fields["anthropic_beta"] == ["interleaved-thinking-2025-05-14"]
        assert fields["thinking"] == THINKING
