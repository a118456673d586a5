"""create_app over real HTTP (uvicorn on loopback): ids, resume from every entry, bad input."""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from reasoning_stream import ReasoningDelta, ReasoningStream, TextDelta, ToolCall
from reasoning_stream.hub import Hub, MemoryHub
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.web import create_app
from tests.web.conftest import serve
from tests.web.sse import WAIT, after_entry, get, parse, within

SCRIPT: list[Any] = [
    ReasoningDelta("Let me <think> about "),
    ReasoningDelta("it: 6 * 7 = 42?"),
    TextDelta("It is "),
    ToolCall("call_1", "calculator", '{"expr": "6*7"}'),
    ReasoningDelta("check again"),
    TextDelta("**42**"),
]


@pytest.fixture
def base(hub: Hub) -> Iterator[str]:
    with serve(create_app(hub, timeout=0.5)) as url:
        yield url


def published(hub: Hub, script: list[Any] = SCRIPT) -> tuple[str, list[str]]:
    stream_id = f"web-{uuid.uuid4().hex}"
    pipe = ScriptedPipe(script)
    seen: list[str] = []
    pipe.set_streaming_callback(seen.append)
    hub.run(stream_id, pipe, "go")
    return stream_id, seen


@pytest.mark.parametrize("protocol", ["channel", "ag-ui", "vercel-ui"])
def test_resume_from_every_entry_gives_exactly_the_rest(hub: Hub, base: str, protocol: str) -> None:
    stream_id, _ = published(hub)
    url = f"{base}/streams/{stream_id}?protocol={protocol}"
    whole = get(url)
    assert whole.status_code == 200
    assert whole.headers["content-type"].startswith("text/event-stream")
    events = parse(whole.text)
    entry_ids = [entry.id for entry in hub.read(stream_id)]
    assert {event.id for event in events} <= set(entry_ids)
    for entry_id in dict.fromkeys(event.id for event in events):
        assert entry_id is not None
        resumed = get(url, last_event_id=entry_id)
        rest = after_entry(events, entry_id)
        if rest:
            assert parse(resumed.text) == rest
        else:
            assert resumed.status_code == 204  # nothing after the end: EventSource stops
        # ?after= does the same; the header wins over it.
        via_query = get(f"{url}&after={entry_id}")
        assert via_query.text == resumed.text
        both = get(f"{url}&after={entry_ids[0]}", last_event_id=entry_id)
        assert both.text == resumed.text


def test_channel_events_are_the_entries(hub: Hub, base: str) -> None:
    stream_id, seen = published(hub)
    events = parse(get(f"{base}/streams/{stream_id}").text)
    data = [event.json() for event in events]
    assert "".join(item["chunk"] for item in data) == "".join(seen)
    assert events[-1].event == "end" and data[-1]["status"] == "completed"
    assert all(event.event == "message" for event in events[:-1])
    kinds = [item.get("kind") for item in data]
    assert "tool_call" in kinds and "reasoning_delta" in kinds


def test_vercel_ui_is_read_by_the_ai_sdk(hub: Hub, base: str, node_reader: Path) -> None:
    stream_id, seen = published(hub)
    url = f"{base}/streams/{stream_id}?protocol=vercel-ui"
    response = get(url)
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    split = ReasoningStream.split("".join(seen), lossless=True)
    expected_parts = [
        ("reasoning", split.segments[0]),
        ("text", "It is "),
        ("tool-calculator", {"expr": "6*7"}),
        ("reasoning", split.segments[1]),
        ("text", "**42**"),
    ]

    def read(body: str) -> list[tuple[str, Any]]:
        done = subprocess.run(
            ["node", str(node_reader)], input=body, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        output = json.loads(done.stdout)
        assert output["errors"] == []
        parts = output["message"]["parts"]
        return [
            (part["type"], part.get("text", part.get("input")))
            for part in parts
            if part["type"] not in ("step-start",)
        ]

    assert read(response.text) == expected_parts
    # A reader that reconnects mid-stream continues the same parts.
    events = parse(response.text)
    middle = events[len(events) // 2].id
    assert middle is not None
    head = response.text.split(f"id: {middle}\n")
    prefix = head[0] + "".join(f"id: {middle}\n{part}" for part in head[1:-1])
    prefix += f"id: {middle}\n" + head[-1].split("\n\n", 1)[0] + "\n\n"
    resumed = get(url, last_event_id=middle).text
    assert parse(prefix + resumed) == events
    assert read(prefix + resumed) == expected_parts


def test_live_stream_with_a_dropped_connection_resumes_exactly(hub: Hub, base: str) -> None:
    """A reader that leaves mid-reasoning and comes back with Last-Event-ID."""
    stream_id = f"web-{uuid.uuid4().hex}"
    script: list[Any] = [item for n in range(30) for item in (0.01, ReasoningDelta(f"r{n} "))]
    script += [item for n in range(10) for item in (0.01, TextDelta(f"t{n} "))]
    pipe = ScriptedPipe(script)
    seen: list[str] = []
    pipe.set_streaming_callback(seen.append)
    runner = threading.Thread(target=hub.run, args=(stream_id, pipe, "go"))
    runner.start()
    url = f"{base}/streams/{stream_id}"
    got: list[str] = []
    last_id = None
    with httpx.Client(timeout=20) as client:
        with client.stream("GET", url) as response:
            for line in within(response.iter_lines()):
                if line.startswith("id: "):
                    last_id = line[4:]
                if line.startswith("data: "):
                    got.append(json.loads(line[6:])["chunk"])
                if len(got) == 10:
                    break  # the connection drops mid-reasoning
        assert last_id is not None
        rest = get(url, last_event_id=last_id, client=client).text
    runner.join(WAIT)
    assert not runner.is_alive(), "the run did not finish"
    got += [event.json()["chunk"] for event in parse(rest)]
    assert "".join(got) == "".join(seen)


def test_unknown_stream_is_404_after_the_timeout(base: str) -> None:
    start = time.monotonic()
    response = get(f"{base}/streams/never-{uuid.uuid4().hex}")
    assert response.status_code == 404 and "within 0.5 s" in response.text
    assert time.monotonic() - start >= 0.45


@pytest.mark.parametrize("protocol", ["channel", "ag-ui", "vercel-ui"])
def test_malformed_last_event_id_is_400(hub: Hub, base: str, protocol: str) -> None:
    stream_id, _ = published(hub)
    response = get(f"{base}/streams/{stream_id}?protocol={protocol}", last_event_id="x/../1")
    assert response.status_code == 400
    assert "Last-Event-ID" in response.text
    beyond = "99999" if isinstance(hub, MemoryHub) else "0-99999"
    response = get(f"{base}/streams/{stream_id}?protocol={protocol}", last_event_id=beyond)
    assert response.status_code == 400


def test_unknown_protocol_is_400(hub: Hub, base: str) -> None:
    stream_id, _ = published(hub)
    response = get(f"{base}/streams/{stream_id}?protocol=smoke-signals")
    assert response.status_code == 400 and "ag-ui" in response.text


def test_trimmed_resume_point_is_410() -> None:
    hub = MemoryHub(maxlen=5)
    stream_id, _ = published(hub, [TextDelta(f"{n}") for n in range(100)])
    with serve(create_app(hub, timeout=0.5)) as base:
        for protocol in ("channel", "ag-ui"):
            response = get(f"{base}/streams/{stream_id}?protocol={protocol}", last_event_id="1")
            assert response.status_code == 410 and "trimmed" in response.text


def test_posting_a_prompt_starts_a_run() -> None:
    hub = MemoryHub()

    def start(prompt: object) -> ScriptedPipe:
        return ScriptedPipe([ReasoningDelta("thinking about "), TextDelta(f"{prompt}!")])

    with serve(create_app(hub, timeout=2, start=start)) as base:
        created = httpx.post(f"{base}/streams/chat-1", json={"prompt": "hi"})
        assert created.status_code == 202
        events = parse(get(f"{base}/streams/chat-1").text)
        chunks = "".join(event.json()["chunk"] for event in events)
        assert chunks == "<think>thinking about </think>hi!"
        again = httpx.post(f"{base}/streams/chat-1", json={"prompt": "hi"})
        assert again.status_code == 409
        json_type = {"content-type": "application/json"}
        assert (
            httpx.post(f"{base}/streams/chat-2", content=b"nope", headers=json_type).status_code
            == 400
        )
        assert httpx.post(f"{base}/streams/chat-2", content=b"nope").status_code == 415


def idle_run(hub: Hub, pause: float) -> tuple[str, threading.Thread, list[str]]:
    """A run that goes quiet for ``pause`` seconds mid-reasoning and before its answer."""
    stream_id = f"idle-{uuid.uuid4().hex}"
    pipe = ScriptedPipe(
        [ReasoningDelta("think "), pause, ReasoningDelta("harder"), pause, TextDelta("done")]
    )
    seen: list[str] = []
    pipe.set_streaming_callback(seen.append)
    runner = threading.Thread(target=hub.run, args=(stream_id, pipe, "go"))
    runner.start()
    return stream_id, runner, seen


@pytest.mark.parametrize("protocol", ["channel", "ag-ui", "vercel-ui"])
def test_an_idle_stream_gets_keep_alive_comments_that_change_nothing(
    hub: Hub, protocol: str, node_reader: Path
) -> None:
    with serve(create_app(hub, timeout=2, keep_alive=0.1)) as base:
        stream_id, runner, _ = idle_run(hub, 0.5)
        url = f"{base}/streams/{stream_id}?protocol={protocol}"
        live = get(url).text
        runner.join(WAIT)
        assert not runner.is_alive(), "the run did not finish"
        finished = get(url).text
    blocks = [block for block in live.split("\n\n") if block]
    comments = [block for block in blocks if block.startswith(":")]
    assert len(comments) >= 4  # two pauses of 0.5 s, a comment every 0.1 s of silence
    assert set(comments) == {": keep-alive"}  # a bare comment: no id, no event, no data
    assert ": keep-alive" not in finished  # a stream with nothing to wait for never idles
    # Readers skip comments: the same events, the same ids, so resume is unaffected.
    assert parse(live) == parse(finished)
    if protocol == "vercel-ui":
        done = subprocess.run(
            ["node", str(node_reader)], input=live, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        output = json.loads(done.stdout)
        assert output["errors"] == []
        parts = output["message"]["parts"]
        texts = [part.get("text") for part in parts if part["type"] != "step-start"]
        assert texts == ["think harder", "done"]


def test_keep_alive_can_be_turned_off(hub: Hub) -> None:
    with serve(create_app(hub, timeout=2, keep_alive=None)) as base:
        stream_id, runner, seen = idle_run(hub, 0.3)
        live = get(f"{base}/streams/{stream_id}").text
        runner.join(WAIT)
        assert not runner.is_alive(), "the run did not finish"
    assert ": keep-alive" not in live
    assert "".join(event.json()["chunk"] for event in parse(live)) == "".join(seen)
