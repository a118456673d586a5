"""A failed tool call reaches the model in each API's documented error form (request 2).

``run_tools`` through every provider's real SDK (or httpx) against the loopback WireServer,
with ``get_weather`` raising and ``get_time`` answering. The error forms, written out here from
the docs and SDK types:

* Anthropic (and Bedrock Invoke with Claude): the ``tool_result`` block's ``is_error: true``
  (anthropic ``ToolResultBlockParam.is_error``).
* Bedrock Converse: ``toolResult.status: "error"`` (botocore ``ToolResultBlock.status``,
  ``success`` | ``error``; "only supported by Amazon Nova and Anthropic Claude 3 and 4").
* Gemini: ``functionResponse.response`` with the ``error`` key ("Use "output" key to specify
  function output and "error" key to specify error details",
  googleapis.github.io/js-genai/classes/types.FunctionResponse.html).
* OpenAI Chat Completions, Responses, OpenRouter, Ollama: no error field; the reason is the
  content, and no ``is_error`` key is sent.

A successful result carries no error mark anywhere.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import pytest

from reasoning_stream import Conversation, tool
from reasoning_stream.testing._wire import WireServer
from tests.providers.test_tool_loop_wire import CASES, get_time

REASON = "the weather station is offline"


@tool
def get_weather(city: str, unit: str = "c") -> str:
    """Current weather for a city."""
    raise RuntimeError(REASON)


# (result key: call id or tool name, marked as an error, content) per provider's request 2.
Marked = list[tuple[str, bool, str]]


def anthropic_marks(body: dict[str, Any]) -> Marked:
    return [
        (block["tool_use_id"], block.get("is_error", False), str(block["content"]))
        for message in body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def converse_marks(body: dict[str, Any]) -> Marked:
    found: Marked = []
    for message in body["messages"]:
        for block in message["content"]:
            if "toolResult" in block:
                result = block["toolResult"]
                assert result.get("status") in (None, "error")
                error = result.get("status") == "error"
                found.append((result["toolUseId"], error, result["content"][0]["text"]))
    return found


def chat_marks(body: dict[str, Any]) -> Marked:
    tools = [m for m in body["messages"] if m["role"] == "tool"]
    assert all("is_error" not in m for m in tools), "is_error is not an OpenAI-style field"
    key = "tool_name" if any("tool_name" in m for m in tools) else "tool_call_id"
    return [(m[key], False, m["content"]) for m in tools]


def responses_marks(body: dict[str, Any]) -> Marked:
    items = [item for item in body["input"] if item.get("type") == "function_call_output"]
    assert all(set(item) == {"type", "call_id", "output"} for item in items)
    return [(item["call_id"], False, item["output"]) for item in items]


def gemini_marks(body: dict[str, Any]) -> Marked:
    found: Marked = []
    for content in body["contents"]:
        for part in content["parts"]:
            if "functionResponse" in part:
                response = part["functionResponse"]["response"]
                text = response.get("error", response.get("result"))
                found.append((part["functionResponse"]["name"], "error" in response, text))
    return found


MARKS = {
    "anthropic": anthropic_marks,
    "bedrock-invoke": anthropic_marks,
    "bedrock-converse": converse_marks,
    "openai-responses": responses_marks,
    "openai-chat": chat_marks,
    "deepseek": chat_marks,
    "gemini-openai": chat_marks,
    "openrouter": chat_marks,
    "gemini": gemini_marks,
    "ollama": chat_marks,
}
HAS_ERROR_FORM = {"anthropic", "bedrock-invoke", "bedrock-converse", "gemini"}


@pytest.mark.parametrize("name", list(CASES))
def test_a_failed_call_reaches_the_model_in_the_documented_error_form(name: str) -> None:
    spec = CASES[name]
    with WireServer(*spec.replies) as server, ExitStack() as stack:
        pipe = spec.pipe(server, stack)
        pipe.tools = [get_weather, get_time]
        conversation = Conversation().add_user("Weather and time in Paris?")
        result = conversation.run_tools(pipe)
    assert len(server.requests) == 2, name
    outcomes = result.steps[0].tool_results
    assert any(r.is_error for r in outcomes), name
    # The conversation keeps the mark on the tool message (inert: never sent raw).
    stored = [m for m in conversation.messages if m["role"] == "tool"]
    assert [m.get("is_error", False) for m in stored] == [r.is_error for r in outcomes]
    second = server.requests[1].json()
    marks = MARKS[name](second)
    assert len(marks) == len(outcomes), name
    for (key, marked, content), outcome in zip(marks, outcomes, strict=True):
        assert key in (outcome.id, outcome.name), name
        assert marked == (outcome.is_error and name in HAS_ERROR_FORM), (name, outcome)
        if outcome.is_error:
            assert REASON in content, name
        else:
            assert content == outcome.content, name


def test_a_message_list_carries_the_mark_too() -> None:
    """A prompt given as a list of messages: the tool message's ``is_error`` reaches Anthropic
    as the block's flag, and never as a raw key."""
    import anthropic

    from reasoning_stream.providers import AnthropicPipe

    call = {"id": "t1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "t1", "content": REASON, "is_error": True},
    ]
    with WireServer("anthropic_tool_answer") as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
        with client:
            AnthropicPipe("claude-sonnet-4-5", client=client).run(messages)
    body = server.requests[0].json()
    assert anthropic_marks(body) == [("t1", True, REASON)]
    assert "is_error" not in body["messages"][-1]
