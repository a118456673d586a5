"""The docs' ``useChat`` example, its non-React core run under node against the app.

``tests/web/js/resume_stop.mjs`` builds the ``ai`` package's chat (``AbstractChat``: what
``useChat`` wraps) with the transport the docs show: a POST that starts a run and reads its
stream, ``prepareReconnectToStreamRequest`` pointing at ``GET /streams/{id}?protocol=vercel-ui``,
and a Stop that calls ``stop()`` and ``DELETE /streams/{id}``. Resuming mid-stream reads the
answer once (nothing repeated); stopping ends the run wherever it runs, cancelled.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from reasoning_stream import ReasoningDelta, TextDelta
from reasoning_stream.hub import MemoryHub
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.web import create_app
from tests.web.conftest import serve


def chat(script: Path, argument: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        ["node", str(script.parent / "resume_stop.mjs"), json.dumps(argument)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    output: dict[str, Any] = json.loads(done.stdout)
    assert output["errors"] == []
    return output


def texts(message: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["type"], p["text"]) for p in message["parts"] if p["type"] in ("reasoning", "text")]


def wait_for(condition: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_resume_stream_reconnects_mid_stream_and_reads_the_answer_once(node_reader: Path) -> None:
    hub = MemoryHub()
    script = [ReasoningDelta("Thinking."), TextDelta("Hello "), 2.0, TextDelta("world.")]
    stream_id = f"resume-{uuid.uuid4().hex}"
    with serve(create_app(hub, timeout=5, start=lambda prompt: ScriptedPipe(script))) as base:
        posted = httpx.post(f"{base}/streams/{stream_id}", json={"prompt": "Hello?"}, timeout=5)
        assert posted.status_code == 202
        # The page that sent it reloads while the answer streams: its stored history ends
        # with the user's message, and useChat({resume: true}) calls resumeStream().
        wait_for(lambda: any(entry.chunk == "Hello " for entry in hub.read(stream_id)))
        user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hello?"}]}
        output = chat(
            node_reader, {"base": base, "streamId": stream_id, "mode": "resume", "messages": [user]}
        )
        assert hub.read(stream_id)[-1].status == "completed"
    user_back, answer = output["messages"]
    assert user_back == user and output["status"] == "ready"
    assert texts(answer) == [("reasoning", "Thinking."), ("text", "Hello world.")]


def test_stop_ends_the_run_on_the_server_cancelled(node_reader: Path) -> None:
    hub = MemoryHub()
    script = [ReasoningDelta("Thinking."), TextDelta("Hello "), 30.0, TextDelta("never")]
    stream_id = f"stop-{uuid.uuid4().hex}"
    with serve(create_app(hub, timeout=5, start=lambda prompt: ScriptedPipe(script))) as base:
        started = time.monotonic()
        output = chat(
            node_reader, {"base": base, "streamId": stream_id, "mode": "stop", "messages": []}
        )
        wait_for(lambda: hub.read(stream_id)[-1].final, seconds=5)
        assert time.monotonic() - started < 20  # not the 30 s the model would have taken
    assert output["deleted"] == 200
    final = hub.read(stream_id)[-1]
    assert final.status == "cancelled_after_partial_answer"
    _user, answer = output["messages"]
    assert ("text", "Hello ") in texts(answer)
    assert "never" not in json.dumps(output)
