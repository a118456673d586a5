"""Tool results through a hub (memory and Redis) and both browser protocols, read by their own
clients: AG-UI's pydantic models and the AI SDK's ``readUIMessageStream`` under node."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

from ag_ui.core import Event as AGUIEvent
from ag_ui.core import EventType, ToolCallResultEvent
from pydantic import TypeAdapter

from reasoning_stream import (
    Conversation,
    Event,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolResult,
    tool,
)
from reasoning_stream.hub import Hub
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.web import create_app, translator_for
from tests.web.conftest import serve
from tests.web.sse import get, parse

AGUI = TypeAdapter(AGUIEvent)

RESULTS = (
    ToolResult("call_1", "get_weather", "18 C in Paris", duration=0.25),
    ToolResult("call_2", "get_time", "Error: tool 'get_time' raised KeyError: 'tz'", True, 0.5),
)
SCRIPT: list[Any] = [
    ReasoningDelta("I need the weather and the time."),
    TextDelta("Let me look."),
    ToolCall("call_1", "get_weather", '{"city": "Paris"}'),
    ToolCall("call_2", "get_time", '{"city": "Paris"}'),
    *RESULTS,
    ReasoningDelta("The weather came back; the time did not."),
    TextDelta("It is 18 C in Paris."),
]


def published(hub: Hub) -> str:
    stream_id = f"tools-{uuid.uuid4().hex}"
    hub.run(stream_id, ScriptedPipe(SCRIPT), "go")
    return stream_id


def test_hub_entries_carry_tool_results_exactly(hub: Hub) -> None:
    stream_id = published(hub)
    results = [e.event for e in hub.read(stream_id) if isinstance(e.event, ToolResult)]
    assert results == list(RESULTS)
    assert [(r.duration, r.source) for r in results] == [
        (0.25, "ScriptedPipe"),
        (0.5, "ScriptedPipe"),
    ]


def test_a_tool_loops_results_reach_the_pipes_event_callbacks_for_a_hub() -> None:
    """The loop hands each result to the pipe's event callbacks, the door a hub publishes
    through: an observer attached as a hub attaches sees ``ToolResult`` after its call."""

    @tool
    def get_weather(city: str) -> str:
        """Weather."""
        return f"18 C in {city}"

    def script(prompt: Any) -> list[Any]:
        if list(prompt)[-1]["role"] == "tool":
            return [TextDelta("It is 18 C.")]
        return [ToolCall("call_1", "get_weather", '{"city": "Paris"}')]

    pipe = ScriptedPipe(script)
    events: list[Event] = []
    pipe.set_event_callback(events.append)
    Conversation().add_user("Weather?").run_tools(pipe, tools=[get_weather])
    assert [type(e).__name__ for e in events if isinstance(e, ToolCall | ToolResult)] == [
        "ToolCall",
        "ToolResult",
    ]


def test_ag_ui_tool_call_result_validates_and_answers_its_call(hub: Hub) -> None:
    stream_id = published(hub)
    with serve(create_app(hub, timeout=0.5)) as base:
        events = parse(get(f"{base}/streams/{stream_id}?protocol=ag-ui").text)
    parsed = [AGUI.validate_json(event.data) for event in events]
    results = [event for event in parsed if isinstance(event, ToolCallResultEvent)]
    assert [(r.tool_call_id, r.content, r.role) for r in results] == [
        ("call_1", "18 C in Paris", "tool"),
        ("call_2", RESULTS[1].content, "tool"),
    ]
    assert len({r.message_id for r in results}) == 2
    types = [event.type for event in parsed]
    # Each result after its call's end; the model's next words are a new text message.
    assert types.index(EventType.TOOL_CALL_RESULT) > types.index(EventType.TOOL_CALL_END)
    starts = [e.message_id for e in parsed if e.type == EventType.TEXT_MESSAGE_START]
    assert len(starts) == len(set(starts)) == 2


def test_vercel_ui_tool_outputs_are_read_by_the_ai_sdk(hub: Hub, node_reader: Path) -> None:
    stream_id = published(hub)
    with serve(create_app(hub, timeout=0.5)) as base:
        body = get(f"{base}/streams/{stream_id}?protocol=vercel-ui").text
    done = subprocess.run(
        ["node", str(node_reader)], input=body, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert output["errors"] == []
    assert "tool-output-available" in output["chunkTypes"]
    assert "tool-output-error" in output["chunkTypes"]
    tools = [part for part in output["message"]["parts"] if part["type"].startswith("tool-")]
    assert [(p["type"], p["toolCallId"], p["state"]) for p in tools] == [
        ("tool-get_weather", "call_1", "output-available"),
        ("tool-get_time", "call_2", "output-error"),
    ]
    assert tools[0]["input"] == {"city": "Paris"} and tools[0]["output"] == "18 C in Paris"
    assert tools[1]["errorText"] == RESULTS[1].content
    finish = [json.loads(e.data) for e in parse(body) if e.data != "[DONE]"][-1]
    assert finish["finishReason"] == "stop"  # the calls were answered: the run ended on text


def test_the_channel_protocol_carries_the_result_fields() -> None:
    from reasoning_stream.hub import Entry

    entry = Entry("0-3", event=RESULTS[1])
    (event,) = translator_for("channel", "s").feed(entry)
    assert json.loads(event.data) == {
        "chunk": "",
        "kind": "tool_result",
        "id": "call_2",
        "name": "get_time",
        "content": RESULTS[1].content,
        "is_error": True,
        "duration": 0.5,
    }


def test_the_app_runs_a_tool_loop_posted_by_a_browser(hub: Hub, node_reader: Path) -> None:
    """``create_app(start=...)`` returning a ``ToolLoop``: a POST runs the whole loop through
    the hub, and the AI SDK reads the call, its output and the answer from one stream."""
    import httpx

    from reasoning_stream.conversation import ToolLoop

    @tool
    def get_weather(city: str) -> str:
        """Weather."""
        return f"18 C in {city}"

    def model(prompt: Any) -> list[Any]:
        if list(prompt)[-1]["role"] == "tool":
            return [ReasoningDelta("Now I know."), TextDelta("It is 18 C.")]
        return [
            ReasoningDelta("Ask the tool."),
            ToolCall("call_1", "get_weather", '{"city": "Oslo"}'),
        ]

    def start(prompt: Any) -> ToolLoop:
        return ToolLoop(ScriptedPipe(model), tools=[get_weather])

    stream_id = f"posted-{uuid.uuid4().hex}"
    with serve(create_app(hub, timeout=2, start=start)) as base:
        posted = httpx.post(f"{base}/streams/{stream_id}", json={"prompt": "Weather in Oslo?"})
        assert posted.status_code == 202
        body = get(f"{base}/streams/{stream_id}?protocol=vercel-ui").text
    done = subprocess.run(
        ["node", str(node_reader)], input=body, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    parts = json.loads(done.stdout)["message"]["parts"]
    summary = [
        (p["type"], p.get("text", p.get("output"))) for p in parts if p["type"] != "step-start"
    ]
    assert summary == [
        ("reasoning", "Ask the tool."),
        ("tool-get_weather", "18 C in Oslo"),
        ("reasoning", "Now I know."),
        ("text", "It is 18 C."),
    ]
