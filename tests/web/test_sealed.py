"""Sealed reasoning for client-held history, through the real clients and the real SDK.

A first turn runs through the Anthropic SDK against WireServer, on a hub given seal keys; the
app serves it over HTTP; the client's own code keeps it (``@ag-ui/client``'s agent under node,
or the ``ai`` package's chat, what ``useChat`` wraps), adds the tool result and sends the history
back; ``Conversation.from_ag_ui`` / ``from_ui_messages`` rebuild it, and the follow-up request
through the Anthropic SDK carries the signed and redacted thinking blocks byte for byte. The
expected blocks are accumulated from the transcript here, not by the pipe.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from ag_ui.core import Message as AGUIMessage
from pydantic import TypeAdapter

from reasoning_stream import (
    OpaqueState,
    ReasoningDelta,
    ReasoningState,
    TextDelta,
    UsageError,
)
from reasoning_stream.conversation import Conversation, TurnRecord
from reasoning_stream.hub import Hub, MemoryHub
from reasoning_stream.providers import AnthropicPipe
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.testing._wire import Transcript, WireServer
from reasoning_stream.web import create_app
from tests.conversation.test_envelopes import assert_unreadable
from tests.web.conftest import serve
from tests.web.sse import get, parse

KEY = secrets.token_bytes(32)
CLAUDE = "claude-sonnet-4-5"
THINKING = {"type": "enabled", "budget_tokens": 2048}
FIRST, FOLLOW_UP = "anthropic_interleaved_tool", "anthropic_tool_answer"
RESULT = "18 °C, sunny"
MESSAGES = TypeAdapter(list[AGUIMessage])


def node(script: Path, argument: Any, stdin: str = "") -> Any:
    done = subprocess.run(
        ["node", str(script), json.dumps(argument)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert output["errors"] == []
    return output


def anthropic_blocks(name: str) -> list[dict[str, Any]]:
    """The content blocks an Anthropic transcript streams, accumulated here."""
    blocks: dict[int, dict[str, Any]] = {}
    for event in Transcript.load(name).events:
        data = event.get("data")
        if data["type"] == "content_block_start":
            blocks[data["index"]] = dict(data["content_block"])
        elif data["type"] == "content_block_delta":
            block, delta = blocks[data["index"]], data["delta"]
            if delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
    return [blocks[index] for index in sorted(blocks)]


@pytest.fixture
def wire() -> Iterator[WireServer]:
    with WireServer(FIRST, FOLLOW_UP) as server:
        yield server


@pytest.fixture
def hub() -> Hub:
    return MemoryHub(seal_keys=[KEY])


@pytest.fixture
def base(hub: Hub) -> Iterator[str]:
    with serve(create_app(hub, timeout=2, seal_keys=[KEY])) as url:
        yield url


def first_turn(hub: Hub, server: WireServer) -> tuple[str, AnthropicPipe, anthropic.Anthropic]:
    """The first turn through the hub (a real SDK call); returns its stream id and the pipe."""
    client = anthropic.Anthropic(base_url=server.url, api_key="test-key", max_retries=0)
    pipe = AnthropicPipe(CLAUDE, client=client, thinking=THINKING)
    stream_id = f"sealed-{uuid.uuid4().hex}"
    result = hub.run(stream_id, pipe, Conversation().add_user("Weather in Paris?"))
    assert result.tool_calls and result.reasoning_state
    return stream_id, pipe, client


def assert_follow_up_carries_the_blocks(
    conversation: Conversation, pipe: AnthropicPipe, server: WireServer
) -> None:
    """The follow-up request opens the tool turn with the first turn's blocks, byte for byte."""
    assert conversation.preflight(pipe) == []
    conversation.run(pipe)
    follow_up = server.requests[1]
    thinking0, redacted, _text, thinking3, _tool_use = anthropic_blocks(FIRST)
    tool_turn = follow_up.json()["messages"][1]
    assert tool_turn["role"] == "assistant"
    content = tool_turn["content"]
    assert [block["type"] for block in content] == [
        "thinking",
        "redacted_thinking",
        "text",
        "thinking",
        "tool_use",
    ]
    assert [content[0], content[1], content[3]] == [thinking0, redacted, thinking3]
    raw = follow_up.body.decode()
    assert json.dumps(thinking0["signature"]) in raw and json.dumps(redacted["data"]) in raw


def test_ag_ui_history_kept_by_the_ag_ui_client_goes_back_byte_for_byte(
    hub: Hub, base: str, wire: WireServer, js: Path
) -> None:
    stream_id, pipe, client = first_turn(hub, wire)
    served = get(f"{base}/streams/{stream_id}?protocol=ag-ui").text
    encrypted = [e.json() for e in parse(served) if "REASONING_ENCRYPTED" in e.data]
    assert len(encrypted) == 1 and encrypted[0]["subtype"] == "message"

    user = {"id": "user-1", "role": "user", "content": "Weather in Paris?"}
    kept = node(js / "run_ag_ui_client.mjs", [user], served)["messages"]
    sealed = [m for m in kept if m.get("encryptedValue")]
    assert [m["id"] for m in sealed] == [encrypted[0]["entityId"]]
    calls = [call for m in kept for call in m.get("toolCalls", ())]
    tools = [
        {"id": f"tool-{n}", "role": "tool", "toolCallId": call["id"], "content": RESULT}
        for n, call in enumerate(calls)
    ]
    # What the client posts next: RunAgentInput.messages, valid for the protocol's models.
    history = MESSAGES.validate_python([*kept, *tools])
    with client:
        conversation = Conversation.from_ag_ui(history, seal_keys=[KEY])
        assert [m["role"] for m in conversation] == ["user", "assistant", "tool"]
        assert_follow_up_carries_the_blocks(conversation, pipe, wire)


def test_ui_messages_kept_by_the_ai_sdk_chat_go_back_byte_for_byte(
    hub: Hub, base: str, wire: WireServer, js: Path
) -> None:
    stream_id, pipe, client = first_turn(hub, wire)
    url = f"{base}/streams/{stream_id}?protocol=vercel-ui"
    steps = [{"text": "Weather in Paris?"}, {"toolOutput": RESULT}]
    output = node(js / "use_chat.mjs", {"streams": [url], "steps": steps})
    body = output["bodies"][1]  # the request useChat sends with the tool's output
    sealed = [
        part
        for message in body["messages"]
        for part in message["parts"]
        if part["type"] == "reasoning" and part.get("providerMetadata")
    ]
    assert len(sealed) == 1 and sealed[0]["text"] == ""
    with client:
        conversation = Conversation.from_ui_messages(body["messages"], seal_keys=[KEY])
        assert [m["role"] for m in conversation] == ["user", "assistant", "tool"]
        assert conversation[2]["content"] == RESULT
        assert_follow_up_carries_the_blocks(conversation, pipe, wire)


@pytest.mark.parametrize("protocol", ["ag-ui", "vercel-ui", "channel"])
def test_no_stream_holds_a_readable_copy_of_a_signature(
    hub: Hub, base: str, wire: WireServer, protocol: str
) -> None:
    stream_id, _pipe, client = first_turn(hub, wire)
    client.close()
    served = get(f"{base}/streams/{stream_id}?protocol={protocol}").text
    assert "rs1." in served  # the envelope is there
    thinking0, redacted, _text, thinking3, _tool_use = anthropic_blocks(FIRST)
    for secret in (thinking0["signature"], redacted["data"], thinking3["signature"]):
        assert_unreadable(secret, served)


def test_an_app_without_keys_serves_no_envelope(hub: Hub, wire: WireServer) -> None:
    stream_id, _pipe, client = first_turn(hub, wire)
    client.close()
    with serve(create_app(hub, timeout=2)) as url:
        for protocol in ("ag-ui", "vercel-ui", "channel"):
            served = get(f"{url}/streams/{stream_id}?protocol={protocol}").text
            assert "rs1." not in served and "REASONING_ENCRYPTED" not in served


def test_a_tampered_envelope_stops_the_follow_up_before_any_request_unless_repaired(
    hub: Hub, base: str, wire: WireServer, js: Path
) -> None:
    stream_id, pipe, client = first_turn(hub, wire)
    served = get(f"{base}/streams/{stream_id}?protocol=ag-ui").text
    user = {"id": "user-1", "role": "user", "content": "Weather in Paris?"}
    kept = node(js / "run_ag_ui_client.mjs", [user], served)["messages"]
    for message in kept:
        if message.get("encryptedValue"):
            envelope = message["encryptedValue"]
            flipped = "A" if envelope[-5] != "A" else "B"
            message["encryptedValue"] = envelope[:-5] + flipped + envelope[-4:]
    calls = [call for m in kept for call in m.get("toolCalls", ())]
    tools = [
        {"id": f"tool-{n}", "role": "tool", "toolCallId": call["id"], "content": RESULT}
        for n, call in enumerate(calls)
    ]
    with client:
        conversation = Conversation.from_ag_ui([*kept, *tools], seal_keys=[KEY])
        codes = [problem.code for problem in conversation.preflight(pipe)]
        assert "envelope_invalid" in codes
        with pytest.raises(UsageError, match="envelope_invalid"):
            conversation.run(pipe)
        assert len(wire.requests) == 1  # refused before any request
        with pytest.warns(UserWarning) as caught:
            conversation.run(pipe, repair=True)
    notes = " | ".join(str(warning.message) for warning in caught)
    assert "without a valid sealed envelope" in notes and "thinking off" in notes
    sent = wire.requests[1].json()
    assert "thinking" not in sent  # the provider's own repair: the loop goes without thinking
    raw = wire.requests[1].body.decode()
    thinking0, redacted, _text, _thinking3, _tool_use = anthropic_blocks(FIRST)
    assert thinking0["signature"] not in raw and redacted["data"] not in raw


def test_an_envelope_sealed_with_a_key_the_app_lacks_is_served_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Misconfigured keys show at once in the log, not weeks later as envelope_invalid."""
    other = secrets.token_bytes(32)
    hub = MemoryHub(seal_keys=[other])
    hub.run("elsewhere", ScriptedPipe(["hi"]), "go")
    app = create_app(hub, timeout=2, seal_keys=[KEY])
    with serve(app) as url, caplog.at_level("WARNING", logger="reasoning_stream.web"):
        served = get(f"{url}/streams/elsewhere?protocol=ag-ui").text
    assert "REASONING_ENCRYPTED_VALUE" in served
    assert any("do not hold" in record.getMessage() for record in caplog.records)
    caplog.clear()
    app = create_app(hub, timeout=2, seal_keys=[KEY, other])
    with serve(app) as url, caplog.at_level("WARNING", logger="reasoning_stream.web"):
        get(f"{url}/streams/elsewhere?protocol=vercel-ui")
    assert not any("do not hold" in record.getMessage() for record in caplog.records)


def test_two_runs_kept_by_the_ag_ui_client_stay_two_turns_with_their_own_envelopes(
    hub: Hub, base: str, js: Path
) -> None:
    """Message ids are unique across runs: the second run's reasoning never lands in the
    first run's message, and each envelope stays on its own turn."""
    kept: list[dict[str, Any]] = []
    results = []
    for n, (thought, answer) in enumerate([("first thoughts", "One."), ("more thoughts", "Two.")]):
        signature = ReasoningState("scripted", "scripted", "signature", f"sig-{n}", block=0)
        pipe = ScriptedPipe([ReasoningDelta(thought), OpaqueState(signature), TextDelta(answer)])
        stream_id = f"turn-{n}-{uuid.uuid4().hex}"
        results.append(hub.run(stream_id, pipe, "go"))
        served = get(f"{base}/streams/{stream_id}?protocol=ag-ui").text
        user = {"id": f"user-{n}", "role": "user", "content": f"question {n}"}
        kept = node(js / "run_ag_ui_client.mjs", [*kept, user], served)["messages"]
    conversation = Conversation.from_ag_ui(MESSAGES.validate_python(kept), seal_keys=[KEY])
    assert conversation.messages == [
        {"role": "user", "content": "question 0"},
        {"role": "assistant", "content": "One.", "thinking": "first thoughts"},
        {"role": "user", "content": "question 1"},
        {"role": "assistant", "content": "Two.", "thinking": "more thoughts"},
    ]
    assert [conversation.record(1), conversation.record(3)] == [
        TurnRecord.from_result(result) for result in results
    ]


def test_an_envelope_moved_onto_another_turn_of_the_same_model_is_envelope_invalid(
    hub: Hub, base: str, js: Path
) -> None:
    """An envelope is bound to the turn it was sealed for (its text and tool calls, as the
    client sends them back): swapped between two turns of one model, neither opens."""
    kept: list[dict[str, Any]] = []
    for n, answer in enumerate(["One.", "Two."]):
        signature = ReasoningState("scripted", "scripted", "signature", f"sig-{n}", block=0)
        pipe = ScriptedPipe([ReasoningDelta("thoughts"), OpaqueState(signature), TextDelta(answer)])
        stream_id = f"moved-{n}-{uuid.uuid4().hex}"
        hub.run(stream_id, pipe, "go")
        served = get(f"{base}/streams/{stream_id}?protocol=ag-ui").text
        user = {"id": f"user-{n}", "role": "user", "content": f"question {n}"}
        kept = node(js / "run_ag_ui_client.mjs", [*kept, user], served)["messages"]
    sealed = [message for message in kept if message.get("encryptedValue")]
    assert len(sealed) == 2
    first, second = (message["encryptedValue"] for message in sealed)
    sealed[0]["encryptedValue"], sealed[1]["encryptedValue"] = second, first
    conversation = Conversation.from_ag_ui(kept, seal_keys=[KEY])
    problems = conversation.preflight(ScriptedPipe(["x"]))
    assert [(problem.index, problem.code) for problem in problems] == [
        (1, "envelope_invalid"),
        (3, "envelope_invalid"),
    ]
    record = conversation.record(1)
    assert record is not None and "belongs to another assistant turn" in str(
        record.envelope_problem
    )
    # Put back, both open; a text edited by the client is a move too.
    sealed[0]["encryptedValue"], sealed[1]["encryptedValue"] = first, second
    assert Conversation.from_ag_ui(kept, seal_keys=[KEY]).preflight(ScriptedPipe(["x"])) == []
    next(m for m in kept if m.get("content") == "Two.")["content"] = "Three."
    problems = Conversation.from_ag_ui(kept, seal_keys=[KEY]).preflight(ScriptedPipe(["x"]))
    assert [(problem.index, problem.code) for problem in problems] == [(3, "envelope_invalid")]


# ------------------------------------------------------------- a tool loop run by the hub

LOOP_STEPS = ("anthropic_interleaved_tool", "anthropic_interleaved_two_tools")


def loop_turn(hub: Hub, server: WireServer) -> tuple[str, AnthropicPipe, anthropic.Anthropic]:
    """Two model steps of an interleaved-thinking tool loop, as one hub stream (the loop
    stops at ``max_steps=2`` with the second step's tool results in)."""
    from reasoning_stream.conversation import ToolLoop
    from tests.providers.test_tool_loop_wire import TOOLS

    client = anthropic.Anthropic(base_url=server.url, api_key="test-key", max_retries=0)
    pipe = AnthropicPipe(CLAUDE, client=client, thinking=THINKING, tools=TOOLS)
    stream_id = f"loop-{uuid.uuid4().hex}"
    result = hub.run(stream_id, ToolLoop(pipe, max_steps=2), Conversation().add_user("Weather?"))
    assert result.status == "max_steps" and len(result.steps) == 2
    return stream_id, pipe, client


def assert_every_step_goes_back(
    conversation: Conversation, pipe: AnthropicPipe, server: WireServer
) -> None:
    """The request that goes on with the loop carries each step's blocks, byte for byte."""
    roles = [m["role"] for m in conversation]
    assert roles[:4] == ["user", "assistant", "tool", "assistant"] and set(roles[4:]) == {"tool"}
    assert conversation.preflight(pipe) == []
    conversation.run(pipe)
    sent = server.requests[2].json()["messages"]
    assistants = [message["content"] for message in sent if message["role"] == "assistant"]
    assert len(assistants) == 2
    for content, name in zip(assistants, LOOP_STEPS, strict=True):
        blocks = anthropic_blocks(name)
        wanted = [b for b in blocks if b["type"] in ("thinking", "redacted_thinking")]
        assert (
            wanted
            and [b for b in content if b["type"] in ("thinking", "redacted_thinking")] == wanted
        )
        assert [b["type"] for b in content] == [b["type"] for b in blocks]


@pytest.fixture
def loop_wire() -> Iterator[WireServer]:
    with WireServer(*LOOP_STEPS, FOLLOW_UP) as server:
        yield server


def test_a_hub_run_tool_loop_gives_each_step_its_state_back_through_the_ag_ui_client(
    hub: Hub, base: str, loop_wire: WireServer, js: Path
) -> None:
    stream_id, pipe, client = loop_turn(hub, loop_wire)
    served = get(f"{base}/streams/{stream_id}?protocol=ag-ui").text
    user = {"id": "user-1", "role": "user", "content": "Weather?"}
    kept = node(js / "run_ag_ui_client.mjs", [user], served)["messages"]
    assert [m["role"] for m in kept].count("tool") == 3  # TOOL_CALL_RESULT made them
    with client:
        conversation = Conversation.from_ag_ui(MESSAGES.validate_python(kept), seal_keys=[KEY])
        assert_every_step_goes_back(conversation, pipe, loop_wire)


def test_a_hub_run_tool_loop_gives_each_step_its_state_back_through_the_ai_sdk_chat(
    hub: Hub, base: str, loop_wire: WireServer, js: Path
) -> None:
    stream_id, pipe, client = loop_turn(hub, loop_wire)
    url = f"{base}/streams/{stream_id}?protocol=vercel-ui"
    steps = [{"text": "Weather?"}, {"toolOutput": "unused"}]
    output = node(js / "use_chat.mjs", {"streams": [url], "steps": steps})
    messages = output["bodies"][1]["messages"]
    parts = [part["type"] for part in messages[1]["parts"]]
    assert parts.count("step-start") == 2  # one UI message, a step-start part per model step
    with client:
        conversation = Conversation.from_ui_messages(messages, seal_keys=[KEY])
        assert_every_step_goes_back(conversation, pipe, loop_wire)
