"""Preflight: one test per problem code, built from the passback tests' follow-up with one
piece removed. The removed piece makes the request fail an independent check of what the
provider documents it rejects; ``preflight`` names it without a request, a run raises
``UsageError``, and the repaired request the server receives passes the same check."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import boto3
import pytest
from botocore.config import Config

from reasoning_stream import PassbackProblem, UsageError
from reasoning_stream.conversation import Conversation
from reasoning_stream.providers import BedrockPipe, OpenAIChatPipe
from reasoning_stream.testing._wire import WireServer
from tests.providers.test_passback import (
    BEDROCK_CLAUDE,
    CLAUDE,
    THINKING,
    anthropic_pipe,
    chat_pipe,
    gemini_pipe,
    responses_pipe,
    weather_loop,
)


def without_record(conversation: Conversation, index: int) -> Conversation:
    """The conversation as if message ``index`` had been added by hand (its record lost)."""
    data = conversation.to_json()
    data["records"][index] = None
    return Conversation.from_json(data)


def without_thinking(conversation: Conversation, index: int) -> Conversation:
    data = conversation.to_json()
    data["messages"][index].pop("thinking", None)
    return Conversation.from_json(data)


# ------------------------------------------------------- independent checks of the docs


def anthropic_accepts(body: Mapping[str, Any]) -> bool:
    """Thinking on: each assistant turn after the last user text starts with thinking."""
    thinking = body.get("thinking") or {}
    if thinking.get("type") not in ("enabled", "adaptive"):
        return True
    messages = body["messages"]
    last_user = max(
        i
        for i, m in enumerate(messages)
        if m["role"] == "user"
        and (isinstance(m["content"], str) or any(b.get("type") == "text" for b in m["content"]))
    )
    for message in messages[last_user + 1 :]:
        blocks = message["content"]
        calls = any(b.get("type") == "tool_use" for b in blocks)
        if (
            message["role"] == "assistant"
            and calls
            and blocks[0].get("type")
            not in (
                "thinking",
                "redacted_thinking",
            )
        ):
            return False
    return True


def gemini_accepts(body: Mapping[str, Any]) -> bool:
    """Gemini 3: the first functionCall part of each model content of the turn is signed."""
    contents = body["contents"]
    last_user = max(
        i
        for i, c in enumerate(contents)
        if c["role"] == "user" and any("text" in part for part in c["parts"])
    )
    for content in contents[last_user + 1 :]:
        calls = [part for part in content["parts"] if "functionCall" in part]
        if content["role"] == "model" and calls and "thoughtSignature" not in calls[0]:
            return False
    return True


def deepseek_accepts(body: Mapping[str, Any]) -> bool:
    """Every assistant message with tool calls carries ``reasoning_content``."""
    return all(
        "reasoning_content" in m
        for m in body["messages"]
        if m["role"] == "assistant" and m.get("tool_calls")
    )


def responses_accepts(body: Mapping[str, Any]) -> bool:
    """Stateless: an item sent with its id follows its reasoning item."""
    items = body["input"]
    for position, item in enumerate(items):
        replayed = item.get("type") in ("function_call", "message") and item.get("id")
        if replayed and not any(i.get("type") == "reasoning" for i in items[:position]):
            return False
    return True


def check(
    conversation: Conversation,
    pipe: Any,
    server: WireServer,
    code: str,
    accepts: Callable[[Mapping[str, Any]], bool] | None,
) -> list[PassbackProblem]:
    problems = conversation.preflight(pipe)
    assert [problem.code for problem in problems] == [code]
    assert problems[0].index == 2
    if accepts is not None:
        assert not accepts(pipe.build_request(conversation))
    sent = len(server.requests)
    with pytest.raises(UsageError, match=code):
        pipe.run(conversation)
    assert len(server.requests) == sent  # nothing was called
    with pytest.warns(UserWarning, match="repaired"):
        conversation.run(pipe, repair=True)
    repaired = server.requests[-1].json()
    if accepts is not None:
        assert accepts(repaired)
    return problems


def test_thinking_missing_anthropic() -> None:
    """An Anthropic tool loop whose tool-use turn lost its record (edited, compacted)."""
    with (
        WireServer("anthropic_interleaved_tool", "anthropic_tool_answer") as server,
        anthropic_pipe(server) as pipe,
    ):
        conversation = without_record(weather_loop(pipe), 2)
        check(conversation, pipe, server, "thinking_missing", anthropic_accepts)
        assert "thinking" not in server.requests[-1].json()


def test_thinking_other_model_anthropic() -> None:
    """The loop's thinking was made by another Claude model."""
    with WireServer("anthropic_interleaved_tool", "anthropic_tool_answer") as server:
        with anthropic_pipe(server) as first:
            conversation = weather_loop(first)
        with anthropic_pipe(server, "claude-opus-4-1") as pipe:
            problems = check(conversation, pipe, server, "thinking_other_model", anthropic_accepts)
    assert CLAUDE in problems[0].message  # the model that made the loop's thinking


def test_thinking_missing_bedrock() -> None:
    """Claude on Bedrock Converse with thinking on: the loop lost its signed reasoning."""
    with WireServer("bedrock_converse_tool_use", "bedrock_converse_plain") as server:
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=server.url,
            aws_access_key_id="x",
            aws_secret_access_key="x",
            config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
        )
        pipe = BedrockPipe(
            BEDROCK_CLAUDE, client=client, additional_model_request_fields={"thinking": THINKING}
        )
        conversation = without_record(weather_loop(pipe), 2)
        check(conversation, pipe, server, "thinking_missing", None)
        sent = server.requests[-1].json()
        assert "thinking" not in sent.get("additionalModelRequestFields", {})


def test_signature_missing_gemini_3() -> None:
    """A Gemini 3 function call of the current turn without its thought signature."""
    with (
        WireServer("gemini_tool_call", "gemini_tool_answer") as server,
        gemini_pipe(server) as pipe,
    ):
        conversation = without_record(weather_loop(pipe), 2)
        check(conversation, pipe, server, "signature_missing", gemini_accepts)
        assert "skip_thought_signature_validator" in server.requests[-1].body.decode()


def test_reasoning_content_missing_deepseek() -> None:
    """A DeepSeek tool-call turn whose reasoning was edited away."""
    replies = ("openai_chat_tool_call", "openai_chat_no_reasoning")
    with WireServer(*replies) as server, chat_pipe(server, "deepseek-chat") as pipe:
        conversation = without_thinking(weather_loop(pipe), 2)
        check(conversation, pipe, server, "reasoning_content_missing", deepseek_accepts)
        assistant = server.requests[-1].json()["messages"][2]
        assert assistant["reasoning_content"] == ""


def test_reasoning_item_missing_stateless_responses() -> None:
    """``store=False``: the tool-call turn's reasoning item is gone."""
    with (
        WireServer("openai_responses_function_call", "openai_responses_followup") as server,
        responses_pipe(server) as pipe,
    ):
        conversation = without_record(weather_loop(pipe), 2)
        check(conversation, pipe, server, "reasoning_item_missing", None)
        assert responses_accepts(server.requests[-1].json())


def test_a_whole_loop_has_no_problem() -> None:
    """The passback tests' own follow-ups pass preflight as they are."""
    with WireServer("anthropic_interleaved_tool") as server, anthropic_pipe(server) as pipe:
        assert weather_loop(pipe).preflight(pipe) == []


def test_kimi_tool_turn_without_reasoning_content_is_named_without_a_server() -> None:
    """Kimi's thinking models need ``reasoning_content`` back on every tool-call turn."""
    pipe = OpenAIChatPipe("kimi-k2-thinking", base_url="http://127.0.0.1:9/v1", api_key="k")
    conversation = (
        Conversation()
        .add_user("Weather?")
        .add_message(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}
                ],
            }
        )
        .add_tool_result("c1", "18 °C")
    )
    assert [(p.index, p.code) for p in conversation.preflight(pipe)] == [
        (1, "reasoning_content_missing")
    ]
    with pytest.raises(UsageError, match="reasoning_content_missing"):
        pipe.run(conversation)
    with pytest.warns(UserWarning, match="empty reasoning_content"):
        body = pipe.build_request(conversation.with_repair())
    assert deepseek_accepts(body)


def test_bedrock_invoke_claude_tool_loop_without_thinking() -> None:
    """Invoke bodies carry Claude's thinking at the top level; a repair takes it out."""
    pipe = BedrockPipe(
        BEDROCK_CLAUDE,
        api="invoke",
        region_name="us-east-1",
        additional_model_request_fields={"thinking": THINKING},
    )
    conversation = (
        Conversation()
        .add_user("Weather?")
        .add_message(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}
                ],
            }
        )
        .add_tool_result("c1", "18 °C")
    )
    assert [p.code for p in conversation.preflight(pipe)] == ["thinking_missing"]
    assert anthropic_accepts(json.loads(pipe.build_request(conversation)["body"])) is False
    with pytest.warns(UserWarning, match="thinking off"):
        body = json.loads(pipe.build_request(conversation.with_repair())["body"])
    assert "thinking" not in body and anthropic_accepts(body)


def test_a_conversation_without_problems_runs_without_warnings() -> None:
    """``repair=True`` on a sound history changes nothing and says nothing."""
    with (
        WireServer("anthropic_interleaved_tool") as server,
        anthropic_pipe(server) as pipe,
        warnings.catch_warnings(),
    ):
        conversation = weather_loop(pipe)
        expected = pipe.build_request(conversation)
        warnings.simplefilter("error")
        assert pipe.build_request(conversation.with_repair()) == expected


def test_a_deepseek_tool_turn_that_reasoned_nothing_goes_back_with_an_empty_reasoning() -> None:
    """The record says the run reasoned nothing: no problem, ``reasoning_content: ""`` is sent.

    Only a turn whose reasoning is gone (edited away, or a record written before records said
    whether the run reasoned) is a problem.
    """
    replies = ("openai_chat_tool_call_bare", "openai_chat_no_reasoning")
    with WireServer(*replies) as server, chat_pipe(server, "deepseek-chat") as pipe:
        conversation = weather_loop(pipe)
        record = conversation.record(2)
        assert record is not None and record.reasoned is False
        assert conversation.preflight(pipe) == []
        assert Conversation.from_json(conversation.to_json()).preflight(pipe) == []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            conversation.run(pipe)
        follow_up = server.requests[-1].json()
    assert deepseek_accepts(follow_up)
    assert follow_up["messages"][2]["reasoning_content"] == ""
    old = conversation.to_json()
    del old["records"][2]["reasoned"]
    assert [p.code for p in Conversation.from_json(old).preflight(pipe)] == [
        "reasoning_content_missing"
    ]
