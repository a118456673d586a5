"""The three protocols as pure functions of the entries, checked against the run's result.

The AG-UI events are validated with the ``ag-ui-protocol`` package's own pydantic models.
Hypothesis budget: 60 examples per law (pure, no I/O).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections import defaultdict
from typing import Any

import pytest
from ag_ui.core import Event as AGUIEvent
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from reasoning_stream import (
    Finish,
    PipeResult,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    Usage,
    UsageReport,
)
from reasoning_stream.hub import Entry, MemoryHub
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.testing.strategies import event_scripts
from reasoning_stream.web import translator_for
from tests.helpers import examples

AGUI = TypeAdapter(AGUIEvent)
PURE = settings(max_examples=examples(60), deadline=None)

scripts = st.lists(
    st.one_of(
        event_scripts().map(tuple),
        st.builds(lambda n: (ToolCall(f"call_{n}", "lookup", '{"q": 1}'),), st.integers(0, 9)),
        st.just((UsageReport(Usage(3, 5, 2)),)),
    ),
    max_size=4,
).map(lambda parts: [event for part in parts for event in part])


def published(script: list[Any]) -> tuple[list[Entry], PipeResult]:
    hub = MemoryHub()
    pipe = ScriptedPipe(script)
    stream_id = uuid.uuid4().hex
    with contextlib.suppress(Exception, KeyboardInterrupt):
        hub.run(stream_id, pipe, "go")
    assert pipe.last_result is not None
    return hub.read(stream_id), pipe.last_result


def translate(protocol: str, entries: list[Entry]) -> list[tuple[str, str]]:
    translator = translator_for(protocol, "s")  # type: ignore[arg-type]
    return [(event.id, event.data) for entry in entries for event in translator.feed(entry)]


def ids_follow_entries(events: list[tuple[str, str]], entries: list[Entry]) -> None:
    order = {entry.id: n for n, entry in enumerate(entries)}
    positions = [order[event_id] for event_id, _ in events]
    assert positions == sorted(positions)


@PURE
@given(script=scripts)
def test_channel_protocol_carries_the_channel(script: list[Any]) -> None:
    entries, _ = published(script)
    events = translate("channel", entries)
    ids_follow_entries(events, entries)
    assert [event_id for event_id, _ in events] == [entry.id for entry in entries]
    data = [json.loads(d) for _, d in events]
    assert "".join(item["chunk"] for item in data) == "".join(e.chunk for e in entries)
    assert data[-1] == {"chunk": "", "status": entries[-1].status}


TOOL_INSIDE_REASONING = [ReasoningDelta("a"), ToolCall("call_0", "f", "{}"), ReasoningDelta("b")]


@PURE
@given(script=scripts)
@example(script=TOOL_INSIDE_REASONING)
def test_ag_ui_events_validate_and_rebuild_the_result(script: list[Any]) -> None:
    entries, result = published(script)
    events = translate("ag-ui", entries)
    ids_follow_entries(events, entries)
    parsed = [AGUI.validate_json(data) for _, data in events]
    raw = [json.loads(data) for _, data in events]
    types = [item["type"] for item in raw]
    assert types[0] == "RUN_STARTED" and types[-1] in ("RUN_FINISHED", "RUN_ERROR")
    assert types.count("RUN_STARTED") == 1
    assert all(item["delta"] for item in raw if "delta" in item)  # never an empty delta
    reasoning: dict[str, str] = defaultdict(str)
    text = ""
    open_messages: set[str] = set()
    for item in raw:
        kind = item["type"]
        if kind in ("REASONING_START", "REASONING_MESSAGE_START", "TEXT_MESSAGE_START"):
            key = f"{kind.rsplit('_', 1)[0]}:{item['messageId']}"
            assert key not in open_messages
            open_messages.add(key)
        elif kind in ("REASONING_END", "REASONING_MESSAGE_END", "TEXT_MESSAGE_END"):
            open_messages.remove(f"{kind.rsplit('_', 1)[0]}:{item['messageId']}")
        elif kind == "REASONING_MESSAGE_CONTENT":
            assert f"REASONING_MESSAGE:{item['messageId']}" in open_messages
            reasoning[item["messageId"]] += item["delta"]
        elif kind == "TEXT_MESSAGE_CONTENT":
            assert f"TEXT_MESSAGE:{item['messageId']}" in open_messages
            text += item["delta"]
    assert not open_messages
    assert list(reasoning.values()) == [s for s in result.reasoning_segments if s]
    assert text == result.text
    assert len(parsed) == len(raw)
    calls = [item["toolCallId"] for item in raw if item["type"] == "TOOL_CALL_START"]
    assert calls == [call.id for call in result.tool_calls]


@PURE
@given(script=scripts)
@example(script=TOOL_INSIDE_REASONING)
def test_vercel_ui_parts_rebuild_the_result(script: list[Any]) -> None:
    entries, result = published(script)
    events = translate("vercel-ui", entries)
    ids_follow_entries(events, entries)
    assert events[-1][1] == "[DONE]"
    raw = [json.loads(data) for _, data in events[:-1]]
    assert raw[0]["type"] == "start" and raw[-1]["type"] in ("finish", "error")
    reasoning: dict[str, str] = defaultdict(str)
    text = ""
    for item in raw:
        if item["type"] == "reasoning-delta":
            reasoning[item["id"]] += item["delta"]
        elif item["type"] == "text-delta":
            text += item["delta"]
    assert all(item["delta"] for item in raw if "delta" in item)
    assert list(reasoning.values()) == [s for s in result.reasoning_segments if s]
    assert text == result.text


ENDINGS: dict[str, tuple[list[Any], str, dict[str, Any], dict[str, Any]]] = {
    "completed": (
        [ReasoningDelta("r"), TextDelta("t")],
        "completed",
        {"type": "RUN_FINISHED", "outcome": {"type": "success"}, "result": {"status": "completed"}},
        {"type": "finish", "finishReason": "stop"},
    ),
    "length": (
        [ReasoningDelta("r"), TextDelta("t"), Finish("length")],
        "length",
        {"type": "RUN_FINISHED", "outcome": {"type": "success"}},
        {"type": "finish", "finishReason": "length"},
    ),
    "cancelled": (
        [ReasoningDelta("r"), KeyboardInterrupt()],
        "cancelled_before_answer",
        {"type": "RUN_FINISHED", "outcome": {"type": "cancelled"}},
        {"type": "finish", "finishReason": "other"},
    ),
    "error": (
        [ReasoningDelta("r"), RuntimeError("boom")],
        "error",
        {"type": "RUN_ERROR", "code": "error"},
        {"type": "error"},
    ),
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_statuses_map_onto_each_protocol(ending: str) -> None:
    script, status, ag_ui, vercel = ENDINGS[ending]
    entries, result = published(script)
    assert result.status == status
    last_ag_ui = json.loads(translate("ag-ui", entries)[-1][1])
    AGUI.validate_python(last_ag_ui)
    assert last_ag_ui.items() >= {k: v for k, v in ag_ui.items() if k != "result"}.items()
    if status != "error":
        assert last_ag_ui["result"]["status"] == status
    vercel_events = translate("vercel-ui", entries)
    last_vercel = json.loads(vercel_events[-2][1])
    assert last_vercel.items() >= vercel.items()
    # Markers were closed before the end: the last reasoning part ended before finishing.
    types = [json.loads(d)["type"] for _, d in vercel_events[:-1]]
    assert types.index("reasoning-end") < len(types) - 1


@pytest.mark.parametrize(
    ("protocol", "start", "end"),
    [("ag-ui", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END"), ("vercel-ui", "text-start", "text-end")],
)
def test_each_pipe_of_a_pipeline_speaks_in_its_own_text_part(
    protocol: str, start: str, end: str
) -> None:
    """Answer text from another source (the next pipe of a pipeline) opens a new text part."""
    hub = MemoryHub()
    stream_id = uuid.uuid4().hex
    first = ScriptedPipe([TextDelta("draft")], name="first")
    second = ScriptedPipe([TextDelta("final")], name="second")
    hub.run(stream_id, first | second, "go")
    events = translate(protocol, hub.read(stream_id))
    data = [json.loads(d) for _, d in events if d != "[DONE]"]
    kinds = [item["type"] for item in data]
    assert kinds.count(start) == 2 and kinds.count(end) == 2
    assert kinds.index(end) < kinds.index(start, kinds.index(start) + 1)


def test_hidden_reasoning_travels_the_hub_and_the_channel_protocol_only() -> None:
    """``ReasoningHidden`` is a typed event: the hub keeps it (memory and the Redis entry
    codec), the channel protocol carries it as JSON; AG-UI and the AI SDK UI stream have no
    event for reasoning nobody can read, so they leave it out (their streams stay valid)."""
    from reasoning_stream import ReasoningHidden
    from reasoning_stream.hub._redis_codec import decode_entry, entry_fields

    entries, result = published([ReasoningHidden(4.5, 812), TextDelta("Paris.")])
    (entry,) = [e for e in entries if isinstance(e.event, ReasoningHidden)]
    assert (entry.chunk, entry.event) == ("", ReasoningHidden(4.5, 812))
    fields = entry_fields(entry.chunk, entry.event, None)
    assert decode_entry("0-1", dict(zip(fields[::2], fields[1::2], strict=True))).event == (
        ReasoningHidden(4.5, 812)
    )
    channel = [json.loads(data) for _, data in translate("channel", entries)]
    hidden = {"chunk": "", "kind": "reasoning_hidden", "duration": 4.5, "tokens": 812}
    assert hidden | {"source": "ScriptedPipe"} in channel
    for event_id, data in translate("ag-ui", entries):
        AGUI.validate_python(json.loads(data))
        assert "hidden" not in data, event_id
    assert all("hidden" not in data for _, data in translate("vercel-ui", entries))
    assert result.text == "Paris." and result.model_reasoning == ""
