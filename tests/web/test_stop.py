"""``DELETE /streams/{stream_id}`` on any worker (API.md section 14): three uvicorn workers
on one Redis; the run starts through A, its model goes silent, DELETE through B stops it, and
a reader through C ends within a second with a cancelled status and balanced markers. A
second DELETE, or one of an unknown id, is 404."""

from __future__ import annotations

import json
import subprocess
import time
import uuid

import httpx

from reasoning_stream import ReasoningDelta, ReasoningStream, TextDelta
from reasoning_stream.hub import MemoryHub
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.web import create_app
from tests.web.conftest import serve
from tests.web.sse import get, parse, within
from tests.web.test_multiprocess import workers

__all__ = ["workers"]


def test_delete_on_b_stops_a_silent_run_on_a_and_the_reader_on_c_ends(
    workers: list[tuple[subprocess.Popen[bytes], str]],
) -> None:
    (_, a), (_, b), (_, c) = workers
    stream_id = f"stop-{uuid.uuid4().hex}"
    assert httpx.post(f"{a}/streams/{stream_id}", json={"prompt": "silent"}).status_code == 202
    lines: list[str] = []
    with httpx.Client(timeout=20) as client:
        with client.stream("GET", f"{c}/streams/{stream_id}") as response:
            assert response.status_code == 200
            chunks = 0
            for line in within(response.iter_lines()):
                lines.append(line)
                if line.startswith("data:") and json.loads(line[5:]).get("chunk"):
                    chunks += 1
                    if chunks == 3:  # open marker and both deltas: now the model is silent
                        time.sleep(0.3)
                        stopped_at = time.monotonic()
                        stop = client.delete(f"{b}/streams/{stream_id}")
                        assert stop.status_code == 200, stop.text
                        assert stop.json() == {"stream_id": stream_id, "stopped": True}
            ended = time.monotonic()
        assert ended - stopped_at < 1.0, ended - stopped_at
        again = client.delete(f"{c}/streams/{stream_id}")
        assert again.status_code == 404 and "no run to stop" in again.text
        unknown = client.delete(f"{a}/streams/never-{uuid.uuid4().hex}")
        assert unknown.status_code == 404
        assert client.delete(f"{a}/streams/bad%20id").status_code == 400
    events = parse("\n".join(lines) + "\n\n")
    assert events[-1].event == "end"
    assert json.loads(events[-1].data)["status"] == "cancelled_before_answer"
    channel = "".join(json.loads(event.data).get("chunk", "") for event in events)
    assert channel == f"{ReasoningStream.OPEN_TAG}thinking hard{ReasoningStream.CLOSE_TAG}"


def test_delete_stops_a_silent_run_of_a_memory_hub() -> None:
    hub = MemoryHub()

    def start(prompt: object) -> ScriptedPipe:
        return ScriptedPipe([ReasoningDelta("hmm"), TextDelta("half"), 60.0, TextDelta("never")])

    with serve(create_app(hub, timeout=2, start=start)) as base, httpx.Client(timeout=10) as client:
        assert client.post(f"{base}/streams/chat-1", json={"prompt": "hi"}).status_code == 202
        deadline = time.monotonic() + 10
        while len(hub.read("chat-1")) < 4:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        stopped_at = time.monotonic()
        stop = client.delete(f"{base}/streams/chat-1")
        assert stop.status_code == 200 and stop.json()["stopped"] is True
        events = parse(get(f"{base}/streams/chat-1", client=client).text)
        assert time.monotonic() - stopped_at < 1.0
        assert events[-1].event == "end"
        assert json.loads(events[-1].data)["status"] == "cancelled_after_partial_answer"
        channel = "".join(json.loads(event.data).get("chunk", "") for event in events)
        assert channel == "<think>hmm</think>half"
        assert client.delete(f"{base}/streams/chat-1").status_code == 404
        assert client.delete(f"{base}/streams/chat-2").status_code == 404
        assert client.delete(f"{base}/streams/a%20b").status_code == 400


def test_delete_follows_the_safety_rules_of_a_post() -> None:
    """A foreign Origin may not stop a run (403), a foreign Host gets nothing (400); the
    run goes on. The app's own origin, and a listed one, may."""
    hub = MemoryHub()

    def start(prompt: object) -> ScriptedPipe:
        return ScriptedPipe([ReasoningDelta("hmm"), 60.0])

    app = create_app(hub, timeout=2, start=start, allowed_origins=["https://ui.example"])
    with serve(app) as base, httpx.Client(timeout=10) as client:
        for stream_id in ("chat-1", "chat-2"):
            assert (
                client.post(f"{base}/streams/{stream_id}", json={"prompt": "x"}).status_code == 202
            )
        foreign = client.delete(
            f"{base}/streams/chat-1", headers={"origin": "https://evil.example"}
        )
        assert foreign.status_code == 403 and "may not start or stop runs" in foreign.text
        rebound = client.delete(f"{base}/streams/chat-1", headers={"host": "evil.example"})
        assert rebound.status_code == 400
        assert not any(entry.final for entry in hub.read("chat-1"))  # still running
        own = client.delete(f"{base}/streams/chat-1", headers={"origin": base})
        assert own.status_code == 200
        listed = client.delete(f"{base}/streams/chat-2", headers={"origin": "https://ui.example"})
        assert listed.status_code == 200
        assert listed.headers["access-control-allow-origin"] == "https://ui.example"
