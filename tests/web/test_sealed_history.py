"""From a served stream to the client's history and back: a law over random runs.

A run goes through a hub given seal keys; the ``ag-ui`` and ``vercel-ui`` translators serve it
with envelopes; a reducer written here from each client's documented rules (``@ag-ui/client``'s
``defaultApplyEvents``, the ``ai`` package's ``processUIMessageStream``: not our code) builds
the messages the client would keep; ``Conversation.from_ag_ui`` / ``from_ui_messages`` must give
back exactly what ``conversation.add(result)`` records: the message and the turn's record.
tests/web/test_sealed.py drives the real clients under node. Hypothesis budget: 40 examples.
"""

from __future__ import annotations

import json
import secrets
import uuid
from typing import Any

import pytest
from ag_ui.core import Event as AGUIEvent
from ag_ui.core import Message as AGUIMessage
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from reasoning_stream import (
    OpaqueState,
    PipeResult,
    ReasoningDelta,
    ReasoningState,
    TextDelta,
    ToolCall,
    UsageError,
)
from reasoning_stream.conversation import Conversation, TurnRecord
from reasoning_stream.hub import MemoryHub
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.testing.strategies import event_scripts
from reasoning_stream.web import translator_for
from tests.conversation.test_envelopes import assert_unreadable
from tests.helpers import examples

KEY = secrets.token_bytes(32)
PURE = settings(max_examples=examples(40), deadline=None)
AGUI = TypeAdapter(AGUIEvent)
MESSAGES = TypeAdapter(list[AGUIMessage])


def opaque(n: int, payload: str | bytes | None = None) -> OpaqueState:
    payload = f"sig-{n}-" + "x" * n if payload is None else payload
    return OpaqueState(ReasoningState("scripted", "scripted", "signature", payload, block=n))


# Random signatures: bytes with some variety (a run of one byte could be anyone's text).
signatures = st.binary(min_size=16, max_size=48).filter(lambda raw: len(set(raw)) > 8)
scripts = st.lists(
    st.one_of(
        event_scripts(max_size=6),
        st.builds(lambda n: [ToolCall(f"call_{n}", "lookup", '{"q":1}')], st.integers(0, 9)),
        st.builds(lambda n, raw: [opaque(n, raw)], st.integers(0, 9), signatures),
    ),
    max_size=5,
).map(lambda parts: [event for part in parts for event in part])


def assert_no_signature_readable(script: list[Any], events: list[dict[str, Any]]) -> None:
    """No random signature of the run shows, in any encoding, in what the browser got."""
    text = json.dumps(events, ensure_ascii=False)
    for item in script:
        if isinstance(item, OpaqueState):
            assert_unreadable(item.state.payload, text)


def served(script: list[Any], protocol: str) -> tuple[list[dict[str, Any]], PipeResult]:
    """The run's events as a client reads them, and the run's result."""
    return served_run(ScriptedPipe(script), protocol)


def served_run(runnable: Any, protocol: str) -> tuple[list[dict[str, Any]], Any]:
    """What ``runnable`` (a pipe or a tool loop) run through a sealing hub serves."""
    hub = MemoryHub(seal_keys=[KEY])
    stream_id = uuid.uuid4().hex
    result = hub.run(stream_id, runnable, "go")
    translator = translator_for(protocol, stream_id, envelopes=True)  # type: ignore[arg-type]
    events = [
        json.loads(event.data)
        for entry in hub.read(stream_id)
        for event in translator.feed(entry)
        if event.data != "[DONE]"
    ]
    return events, result


def ag_ui_client(events: list[dict[str, Any]], messages: list[dict[str, Any]]) -> None:
    """``@ag-ui/client``'s rules: a message per ``*_START``, a tool call on its parent (or on
    a new assistant message with the call's id), the encrypted value on its entity."""
    by_id = {message["id"]: message for message in messages}
    calls: dict[str, dict[str, Any]] = {}
    for event in events:
        kind = event["type"]
        if kind in ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START"):
            role = "assistant" if kind == "TEXT_MESSAGE_START" else "reasoning"
            message = {"id": event["messageId"], "role": role, "content": ""}
            messages.append(message)
            by_id[message["id"]] = message
        elif kind in ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"):
            by_id[event["messageId"]]["content"] += event["delta"]
        elif kind == "TOOL_CALL_START":
            parent = by_id.get(event.get("parentMessageId", ""))
            if parent is None or parent["role"] != "assistant":
                parent = {"id": event["toolCallId"], "role": "assistant"}
                messages.append(parent)
                by_id[parent["id"]] = parent
            call = {
                "id": event["toolCallId"],
                "type": "function",
                "function": {"name": event["toolCallName"], "arguments": ""},
            }
            parent.setdefault("toolCalls", []).append(call)
            calls[call["id"]] = call
        elif kind == "TOOL_CALL_ARGS":
            calls[event["toolCallId"]]["function"]["arguments"] += event["delta"]
        elif kind == "REASONING_ENCRYPTED_VALUE":
            assert event["subtype"] == "message"
            by_id[event["entityId"]]["encryptedValue"] = event["encryptedValue"]


def ui_client(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``ai`` package's rules: parts in the order they start, text appended by id, a
    ``step-start`` part per ``start-step``."""
    parts: list[dict[str, Any]] = []
    active: dict[str, dict[str, Any]] = {}
    for chunk in chunks:
        kind = chunk["type"]
        if kind in ("reasoning-start", "text-start"):
            part: dict[str, Any] = {"type": kind.split("-")[0], "text": "", "state": "streaming"}
            if "providerMetadata" in chunk:
                part["providerMetadata"] = chunk["providerMetadata"]
            active[chunk["id"]] = part
            parts.append(part)
        elif kind in ("reasoning-delta", "text-delta"):
            active[chunk["id"]]["text"] += chunk["delta"]
        elif kind in ("reasoning-end", "text-end"):
            active.pop(chunk["id"])["state"] = "done"
        elif kind == "start-step":
            parts.append({"type": "step-start"})
        elif kind == "finish-step":
            active.clear()
        elif kind == "tool-input-available":
            parts.append(
                {
                    "type": f"tool-{chunk['toolName']}",
                    "toolCallId": chunk["toolCallId"],
                    "state": "input-available",
                    "input": chunk["input"],
                }
            )
    return parts


def expected(result: PipeResult) -> tuple[list[dict[str, Any]], TurnRecord | None]:
    made_something = result.text or result.tool_calls or result.reasoning_segments
    if not made_something:
        return [{"role": "user", "content": "go"}], None
    return [{"role": "user", "content": "go"}, result.message], TurnRecord.from_result(result)


@PURE
@given(scripts)
def test_ag_ui_history_rebuilds_what_the_run_recorded(script: list[Any]) -> None:
    events, result = served(script, "ag-ui")
    assert_no_signature_readable(script, events)
    for event in events:
        AGUI.validate_python(event)
    messages: list[dict[str, Any]] = [{"id": "u", "role": "user", "content": "go"}]
    ag_ui_client(events, messages)
    MESSAGES.validate_python(messages)
    conversation = Conversation.from_ag_ui(messages, seal_keys=[KEY])
    wanted, record = expected(result)
    assert conversation.messages == wanted
    if record is not None:
        assert conversation.record(1) == record


@PURE
@given(scripts)
def test_ui_messages_rebuild_what_the_run_recorded(script: list[Any]) -> None:
    chunks, result = served(script, "vercel-ui")
    assert_no_signature_readable(script, chunks)
    history = [
        {"id": "u", "role": "user", "parts": [{"type": "text", "text": "go"}]},
        {"id": "a", "role": "assistant", "parts": ui_client(chunks)},
    ]
    conversation = Conversation.from_ui_messages(history, seal_keys=[KEY])
    wanted, record = expected(result)
    if len(wanted) == 1:  # nothing visible: only the sealed part, a turn of its own
        wanted.append({"role": "assistant", "content": ""})
    assert conversation.messages == wanted
    assert conversation.record(1) == (record or TurnRecord.from_result(result))


def test_one_ui_message_holding_two_runs_is_two_turns_with_the_tool_result_between() -> None:
    """``useChat`` continues the last assistant message after a tool result."""
    first, first_result = served([opaque(1), ToolCall("call_1", "lookup", '{"q":1}')], "vercel-ui")
    second, second_result = served([opaque(2), "It is 42."], "vercel-ui")
    parts = ui_client(first)
    tool = next(part for part in parts if part["type"] == "tool-lookup")
    tool.update(state="output-available", output={"answer": 42})
    parts += ui_client(second)
    history = [
        {"id": "u", "role": "user", "parts": [{"type": "text", "text": "go"}]},
        {"id": "a", "role": "assistant", "parts": parts},
        {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "thanks"}]},
    ]
    conversation = Conversation.from_ui_messages(history, seal_keys=[KEY])
    assert conversation.messages == [
        {"role": "user", "content": "go"},
        first_result.message,
        {"role": "tool", "tool_call_id": "call_1", "content": '{"answer":42}'},
        second_result.message,
        {"role": "user", "content": "thanks"},
    ]
    assert conversation.record(1) == TurnRecord.from_result(first_result)
    assert conversation.record(3) == TurnRecord.from_result(second_result)


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([{"role": "user", "content": "hi"}], "no list of parts"),
        ([{"role": "user", "parts": [{"type": "file", "url": "x"}]}], "type 'file'"),
        ([{"role": "robot", "parts": []}], "role 'robot'"),
        ([{"role": "assistant", "parts": ["text"]}], "not an object"),
        (["hi"], "not a message object"),
    ],
)
def test_ui_messages_of_the_wrong_shape_say_what_to_fix(messages: Any, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        Conversation.from_ui_messages(messages, seal_keys=[KEY])


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([{"id": "1", "role": "robot", "content": "x"}], "role 'robot'"),
        ([{"id": "1", "role": "user", "content": [{"type": "binary"}]}], "type 'binary'"),
        ([{"id": "1", "role": "user", "content": 42}], "content of type int"),
    ],
)
def test_ag_ui_messages_of_the_wrong_shape_say_what_to_fix(messages: Any, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        Conversation.from_ag_ui(messages, seal_keys=[KEY])


def test_ag_ui_system_developer_tool_and_activity_messages() -> None:
    messages = MESSAGES.validate_python(
        [
            {"id": "s", "role": "system", "content": "Be brief."},
            {"id": "d", "role": "developer", "content": "Use metric."},
            {"id": "u", "role": "user", "content": [{"type": "text", "text": "Hi"}]},
            {
                "id": "x",
                "role": "activity",
                "activityType": "progress",
                "content": {"step": 1},
            },
            {"id": "t", "role": "tool", "toolCallId": "c", "content": "done"},
        ]
    )
    assert Conversation.from_ag_ui(messages).messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "Use metric."},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        {"role": "tool", "tool_call_id": "c", "content": "done"},
    ]


def test_an_app_whose_hub_cannot_seal_is_refused(redis_url: str) -> None:
    """Keys on the app but not on a hub that runs pipes: no envelope would ever be served."""
    from reasoning_stream.hub import RedisHub
    from reasoning_stream.testing import ScriptedPipe as Pipe
    from reasoning_stream.web import create_app

    with pytest.raises(UsageError, match=r"MemoryHub\(seal_keys=\.\.\.\)"):
        create_app(MemoryHub(), seal_keys=[KEY])
    with RedisHub(redis_url) as hub:
        create_app(hub, seal_keys=[KEY])  # a reader of writers that hold the keys
        with pytest.raises(UsageError, match="this hub has no keys"):
            create_app(hub, seal_keys=[KEY], start=lambda prompt: Pipe(["x"]))
    with pytest.raises(UsageError, match="32"):
        create_app(MemoryHub(seal_keys=[KEY]), seal_keys=[b"short"])


# ------------------------------------------------- a tool loop's steps, each on its own turn


def ag_ui_results(events: list[dict[str, Any]], messages: list[dict[str, Any]]) -> None:
    """``@ag-ui/client``'s rule for ``TOOL_CALL_RESULT``: a tool message right after the
    assistant message holding the call (after the tool messages already there)."""
    for event in events:
        if event["type"] != "TOOL_CALL_RESULT":
            continue
        message = {
            "id": event["messageId"],
            "role": "tool",
            "toolCallId": event["toolCallId"],
            "content": event["content"],
        }
        holder = next(
            index
            for index, held in enumerate(messages)
            if held["role"] == "assistant"
            and any(call["id"] == event["toolCallId"] for call in held.get("toolCalls", ()))
        )
        at = holder + 1
        while at < len(messages) and messages[at]["role"] == "tool":
            at += 1
        messages.insert(at, message)


def ui_outputs(chunks: list[dict[str, Any]], parts: list[dict[str, Any]]) -> None:
    """The ``ai`` package's rule for ``tool-output-available``: the call's part gets it."""
    for chunk in chunks:
        if chunk["type"] == "tool-output-available":
            for part in parts:
                if part.get("toolCallId") == chunk["toolCallId"]:
                    part.update(state="output-available", output=chunk["output"])


def step_scripts(draw: Any) -> list[list[Any]]:
    steps: list[list[Any]] = []
    count = draw(st.integers(1, 3))
    for n in range(count):
        step: list[Any] = [ReasoningDelta(f"thinking {n}."), opaque(n, draw(signatures))]
        if draw(st.booleans()):
            step.append(TextDelta(f"Step {n}. "))
        if n < count - 1:
            for c in range(draw(st.integers(1, 2))):
                if c and draw(st.booleans()):  # interleaved thinking between two calls
                    step += [ReasoningDelta(f"between {n}."), opaque(10 + n, draw(signatures))]
                step.append(ToolCall(f"call_{n}_{c}", "lookup", "{}"))
        else:
            step.append(TextDelta("Done."))
        steps.append(step)
    return steps


@PURE
@given(st.composite(step_scripts)(), st.sampled_from(["ag-ui", "vercel-ui"]))
def test_a_hub_run_tool_loop_rebuilds_each_step_with_its_own_record(
    steps: list[list[Any]], protocol: str
) -> None:
    from reasoning_stream import tool
    from reasoning_stream.conversation import ToolLoop

    @tool
    def lookup() -> str:
        """Look it up."""
        return "found"

    def model(prompt: Any) -> list[Any]:
        return steps[sum(1 for message in prompt if message["role"] == "assistant")]

    loop = ToolLoop(ScriptedPipe(model), tools=[lookup])
    events, result = served_run(loop, protocol)
    assert len(result.steps) == len(steps)
    assert_no_signature_readable([item for step in steps for item in step], events)
    if protocol == "ag-ui":
        messages: list[dict[str, Any]] = [{"id": "u", "role": "user", "content": "go"}]
        ag_ui_client(events, messages)
        ag_ui_results(events, messages)
        conversation = Conversation.from_ag_ui(MESSAGES.validate_python(messages), seal_keys=[KEY])
    else:
        parts = ui_client(events)
        ui_outputs(events, parts)
        history = [
            {"id": "u", "role": "user", "parts": [{"type": "text", "text": "go"}]},
            {"id": "a", "role": "assistant", "parts": parts},
        ]
        conversation = Conversation.from_ui_messages(history, seal_keys=[KEY])
    assert loop.conversation is not None
    assert conversation.messages == loop.conversation.messages
    turns = [i for i, message in enumerate(conversation) if message["role"] == "assistant"]
    assert [conversation.record(i) for i in turns] == [
        TurnRecord.from_result(step.result) for step in result.steps
    ]
