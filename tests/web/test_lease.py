"""The web app over a run whose process is killed mid-stream: every protocol ends its
response with the hub's "error" ending (the writer's lease lapsed) instead of hanging."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from ag_ui.core import Event as AGUIEvent
from pydantic import TypeAdapter

from reasoning_stream import ReasoningStream
from reasoning_stream.hub import RedisHub
from reasoning_stream.web import create_app
from tests.hub.test_lease import LEASE, writer
from tests.web.conftest import serve
from tests.web.sse import get, parse

AGUI = TypeAdapter(AGUIEvent)


def test_the_web_app_ends_a_lost_writers_stream_in_every_protocol(
    redis_url: str, node_reader: Path
) -> None:
    reader_hub = RedisHub(redis_url, lease=LEASE)
    stream_id = f"crash-{uuid.uuid4().hex}"
    child = writer(redis_url, stream_id)
    live: list[str] = []
    with serve(create_app(reader_hub, timeout=20)) as base:
        url = f"{base}/streams/{stream_id}"

        def read_live() -> None:
            live.append(get(url).text)

        reading = threading.Thread(target=read_live)
        reading.start()
        try:
            deadline = time.monotonic() + 20
            while len(reader_hub.read(stream_id)) < 10:
                assert time.monotonic() < deadline
                time.sleep(0.02)
            child.send_signal(signal.SIGKILL)
            reading.join(15)
        finally:
            child.kill()
            child.wait(10)
            reader_hub.close()
        assert not reading.is_alive() and live
        bodies = {p: get(f"{url}?protocol={p}").text for p in ("ag-ui", "vercel-ui")}
    # channel, read live across the crash: ends with `event: end`, status error, the reason.
    events = parse(live[0])
    end = events[-1]
    assert end.event == "end" and [e.event for e in events].count("end") == 1
    assert end.json()["status"] == "error" and f"pid {child.pid}" in end.json()["error"]
    channel = "".join(event.json()["chunk"] for event in events)
    assert ReasoningStream.split(channel, lossless=True).text == ""
    # ag-ui: RUN_ERROR, after the reasoning message was closed; every event validates.
    agui = [json.loads(event.data) for event in parse(bodies["ag-ui"])]
    for item in agui:
        AGUI.validate_python(item)
    assert agui[-1]["type"] == "RUN_ERROR" and agui[-1]["code"] == "error"
    assert f"pid {child.pid}" in agui[-1]["message"]
    assert [item["type"] for item in agui[-3:-1]] == ["REASONING_MESSAGE_END", "REASONING_END"]
    # vercel-ui: `error` then [DONE], read by the AI SDK's own reader.
    vercel = parse(bodies["vercel-ui"])
    assert vercel[-1].data == "[DONE]"
    last: dict[str, Any] = vercel[-2].json()
    assert last["type"] == "error" and f"pid {child.pid}" in last["errorText"]
    done = subprocess.run(
        ["node", str(node_reader)],
        input=bodies["vercel-ui"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert output["chunkTypes"][-1] == "error"
    assert any(f"pid {child.pid}" in error for error in output["errors"])
