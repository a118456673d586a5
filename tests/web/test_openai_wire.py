"""The OpenAI wire of the chat completions endpoint, without a server: laws over any run.

Each chunk is validated by the ``openai`` SDK's own pydantic types (``model_validate``, which
checks every field); the expected content, reasoning and calls are computed here from the
events, not by the translator.
"""

from __future__ import annotations

import functools
import tempfile
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from reasoning_stream import PipeResult
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
from reasoning_stream.conversation import TurnRecord
from reasoning_stream.hub import Entry
from reasoning_stream.store import SQLiteStore
from reasoning_stream.web._openai_passback import attach, digests, remember
from reasoning_stream.web._openai_wire import (
    ChunkTranslator,
    RequestError,
    completion,
    read_request,
)
from tests.helpers import examples

texts = st.text(max_size=12)
events = st.one_of(
    st.builds(ReasoningDelta, texts),
    st.builds(TextDelta, texts),
    st.just(ReasoningStart()),
    st.just(ReasoningEnd()),
    st.builds(ToolCall, st.text("abc123", min_size=1, max_size=6), texts, texts),
    st.builds(
        UsageReport,
        st.builds(Usage, st.none() | st.integers(0, 99), st.none() | st.integers(0, 99)),
    ),
    st.builds(Finish, st.sampled_from(["stop", "length", "end_turn", "tool_calls"])),
)
statuses = st.sampled_from(
    ["completed", "length", "cancelled_before_answer", "cancelled_after_partial_answer", "error"]
)


def translate(
    script: list[Any], status: str, include_usage: bool
) -> tuple[list[dict[str, Any]], list[str]]:
    translator = ChunkTranslator("chatcmpl-x", "served-name", 1_700_000_000, include_usage)
    chunks: list[dict[str, Any]] = []
    ids: list[str] = []
    entries = [Entry(str(number), event=event) for number, event in enumerate(script)]
    entries.append(Entry(str(len(script)), final=True, status=status, error="Boom: no"))  # type: ignore[arg-type]
    for entry in entries:
        for chunk in translator.feed(entry):
            chunks.append(chunk)
            ids.append(entry.id)
    return chunks, ids


@settings(max_examples=examples(200))
@given(st.lists(events, max_size=12), statuses, st.booleans())
def test_chunks_carry_every_delta_and_call_then_one_finish(
    script: list[Any], status: str, include_usage: bool
) -> None:
    chunks, _ = translate(script, status, include_usage)
    if status == "error":
        assert chunks[-1] == {
            "error": {
                "message": "Boom: no",
                "type": "server_error",
                "param": None,
                "code": "upstream_error",
            }
        }
        chunks = chunks[:-1]
    parsed = [ChatCompletionChunk.model_validate(chunk) for chunk in chunks]
    assert all(chunk.model == "served-name" and chunk.id == "chatcmpl-x" for chunk in parsed)
    choices = [chunk.choices[0] for chunk in parsed if chunk.choices]
    content = "".join(choice.delta.content or "" for choice in choices)
    reasoning = "".join(
        (choice.delta.model_extra or {}).get("reasoning_content", "") for choice in choices
    )
    calls = [call for choice in choices for call in choice.delta.tool_calls or ()]
    assert content == "".join(e.text for e in script if isinstance(e, TextDelta))
    assert reasoning == "".join(e.text for e in script if isinstance(e, ReasoningDelta))
    expected_calls = [e for e in script if isinstance(e, ToolCall)]
    assert [
        (c.index, c.id, c.function.name, c.function.arguments) for c in calls if c.function
    ] == [(index, e.id, e.name, e.arguments) for index, e in enumerate(expected_calls)]
    # No empty delta, the role once and first.
    assert all(choice.delta.model_dump(exclude_none=True) for choice in choices[:-1] or ())
    roles = [choice.delta.role for choice in choices if choice.delta.role]
    assert roles == ["assistant"] * len(roles) and len(roles) <= 1
    if roles:
        assert choices[0].delta.role == "assistant"
    reasons = [choice.finish_reason for choice in choices if choice.finish_reason]
    if status == "error":
        assert reasons == []
        return
    assert len(reasons) == 1 and choices[-1].finish_reason == reasons[0]
    finishes = [e.reason for e in script if isinstance(e, Finish)]
    if status == "length" or (finishes and finishes[-1] == "length"):
        assert reasons == ["length"]
    elif expected_calls:
        assert reasons == ["tool_calls"]
    else:
        assert reasons == ["stop"]
    usage = parsed[-1].usage
    if include_usage:
        assert parsed[-1].choices == [] and usage is not None
        reported = Usage()
        for e in script:
            if isinstance(e, UsageReport):
                reported = reported.merged(e.usage)
        assert usage.prompt_tokens == (reported.input_tokens or 0)
        assert usage.completion_tokens == (reported.output_tokens or 0)
        assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    else:
        assert all(chunk.usage is None for chunk in parsed)


@settings(max_examples=examples(100))
@given(st.lists(events, max_size=8), statuses)
def test_each_chunk_names_the_entry_it_came_from_and_a_replay_gives_the_same(
    script: list[Any], status: str
) -> None:
    first, first_ids = translate(script, status, True)
    again, again_ids = translate(script, status, True)
    assert (first, first_ids) == (again, again_ids)
    assert first_ids == sorted(first_ids, key=int)


def test_a_completion_is_what_the_sdk_reads() -> None:
    result = PipeResult(
        text="",
        model_reasoning="think",
        tool_calls=(ToolCall("c1", "f", '{"a": 1}'),),
        usage=Usage(10, 5, 3, 2),
        finish_reason="tool_use",
    )
    body = ChatCompletion.model_validate(
        completion(result, completion_id="chatcmpl-y", model="m", created=1)
    )
    message = body.choices[0].message
    assert message.content is None and (message.model_extra or {})["reasoning_content"] == "think"
    assert message.tool_calls and message.tool_calls[0].id == "c1"
    assert body.choices[0].finish_reason == "tool_calls"
    assert body.usage is not None and body.usage.completion_tokens_details is not None
    assert body.usage.completion_tokens_details.reasoning_tokens == 3
    assert body.usage.prompt_tokens_details is not None
    assert body.usage.prompt_tokens_details.cached_tokens == 2


# ------------------------------------------------------------------------- requests


def test_messages_become_chat_messages() -> None:
    request = read_request(
        {
            "model": "m",
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [
                {
                    "role": "developer",
                    "content": [
                        {"type": "text", "text": "Be "},
                        {"type": "text", "text": "brief."},
                    ],
                },
                {"role": "user", "content": "hi", "name": "ann"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                    "reasoning_content": "echoed",
                },
                {"role": "tool", "tool_call_id": "c", "content": "ok"},
            ],
        }
    )
    assert (request.model, request.stream, request.include_usage) == ("m", True, True)
    assert request.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
            "thinking": "echoed",
        },
        {"role": "tool", "tool_call_id": "c", "content": "ok"},
    ]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ([], None),
        ({"messages": [{"role": "user", "content": "x"}]}, "model"),
        ({"model": "m", "messages": "hi"}, "messages"),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 2}, "n"),
        ({"model": "m", "messages": [{"role": "function", "content": "x"}]}, "messages[0]"),
        ({"model": "m", "messages": [{"role": "tool", "content": "x"}]}, "messages[0]"),
        ({"model": "m", "messages": [{"role": "user", "content": 3}]}, "messages[0]"),
        (
            {"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"id": "c"}]}]},
            "messages[0].tool_calls[0]",
        ),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": "yes"}, "stream"),
    ],
)
def test_a_bad_request_names_the_field(body: Any, param: str | None) -> None:
    with pytest.raises(RequestError) as refused:
        read_request(body)
    assert refused.value.param == param and refused.value.status == 400
    assert set(refused.value.body()["error"]) == {"message", "type", "param", "code"}


# --------------------------------------------------------------------------- digests

messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant", "tool"]), "content": texts}
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=examples(100))
@given(messages, st.data())
def test_a_digest_depends_on_its_message_and_every_one_before_it_only(
    history: list[dict[str, Any]], data: st.DataObject
) -> None:
    found = digests(history)
    assert [digests(history[: k + 1])[-1] for k in range(len(history))] == found
    # Inert keys and an echoed reasoning_content are not part of what the client shows.
    decorated = [{**m, "thinking": "t", "reasoning_content": "r", "timestamp": 1} for m in history]
    assert digests(decorated) == found
    index = data.draw(st.integers(0, len(history) - 1))
    changed = [dict(m) for m in history]
    changed[index]["content"] += "!"
    other = digests(changed)
    assert other[:index] == found[:index]
    assert all(a != b for a, b in zip(other[index:], found[index:], strict=True))
    assert digests([{**history[0], "content": None}]) == digests([{**history[0], "content": ""}])


# ------------------------------------------------------------------------- factories


def test_a_factory_gets_the_body_only_when_it_has_a_request_parameter() -> None:
    from reasoning_stream.providers import AnthropicPipe
    from reasoning_stream.web._openai import _build

    body = {"model": "m", "temperature": 0.5}
    partial = functools.partial(AnthropicPipe, "claude-sonnet-4-6", api_key="k")
    assert _build(partial, "m", body).model == "claude-sonnet-4-6"
    seen: list[Any] = []

    def reads(request: dict[str, Any]) -> AnthropicPipe:
        seen.append(request)
        return AnthropicPipe("claude-sonnet-4-6", api_key="k")

    _build(reads, "m", body)
    assert seen == [body]
    with pytest.raises(RequestError) as refused:
        _build(lambda: "not a pipe", "m", body)  # type: ignore[arg-type, return-value]
    assert refused.value.status == 500 and "not a pipe" in str(refused.value)


# ------------------------------------------------------------------- passback round trip

results = st.builds(
    PipeResult,
    text=texts,
    model_reasoning=texts,
    reasoning_state=st.lists(
        st.builds(
            ReasoningState,
            provider=st.just("anthropic"),
            model=st.just("claude-x"),
            kind=st.sampled_from(["signature", "redacted"]),
            payload=st.text(min_size=1, max_size=20) | st.binary(min_size=1, max_size=20),
        ),
        max_size=3,
    ).map(tuple),
    tool_calls=st.lists(
        st.builds(ToolCall, st.text("abc", min_size=1, max_size=4), texts, texts), max_size=2
    ).map(tuple),
    provider=st.just("anthropic"),
    model=st.just("claude-x"),
)


def shown(message: dict[str, Any]) -> dict[str, Any]:
    """What an OpenAI client keeps of an assistant message: role, content, tool calls."""
    return {key: message[key] for key in ("role", "content", "tool_calls") if key in message}


@settings(max_examples=examples(60), deadline=None)
@given(messages, results, messages, st.booleans())
def test_a_turn_sent_back_as_role_and_content_gets_its_record_back(
    before: list[dict[str, Any]], result: PipeResult, after: list[dict[str, Any]], edit: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder, SQLiteStore(folder + "/p.db") as store:
        remember(store, before, result)
        echoed = shown(result.message)
        if edit:
            echoed["content"] += " (edited)"
        conversation = attach(store, [*before, echoed, *after], object())
    index = len(before)
    expected = None if edit else TurnRecord.from_result(result)
    assert conversation.record(index) == expected
    if not edit:
        assert conversation[index] == result.message  # the inert thinking is back too
    assert [conversation.record(i) for i in range(len(conversation)) if i != index] == [None] * (
        len(conversation) - 1
    )
