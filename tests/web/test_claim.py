"""A second POST of a stream id whose run has not published yet is 409, not 202.

Before, the app checked for entries and then started the run in the background: a second POST
in between got 202, its run failed silently and its client read the other client's answer.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from reasoning_stream import TextDelta
from reasoning_stream.hub import Hub, RedisHub
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.web import create_app
from tests.web.conftest import serve
from tests.web.sse import get, parse


def test_a_second_post_before_the_first_run_published_is_409(hub: Hub) -> None:
    started: list[Any] = []

    def start(prompt: Any) -> ScriptedPipe:
        pipe = ScriptedPipe([1.0, TextDelta(f"answer to {prompt}")])  # silent for a second
        started.append(pipe)
        return pipe

    stream_id = f"claim-{uuid.uuid4().hex}"
    with serve(create_app(hub, start=start)) as base, httpx.Client(timeout=20) as client:
        url = f"{base}/streams/{stream_id}"
        first = client.post(url, json={"prompt": "first"})
        second = client.post(url, json={"prompt": "second"})
        assert first.status_code == 202
        assert second.status_code == 409, second.text
        assert "already exists" in second.text
        events = parse(get(url).text)
        assert events[-1].event == "end" and events[-1].json()["status"] == "completed"
        assert "".join(e.json().get("chunk", "") for e in events) == "answer to first"
        assert len([p for p in started if p.prompts]) == 1  # the refused run never called out


def test_reading_another_streams_claim_as_a_stream_ends_no_live_response(redis_url: str) -> None:
    """Before: ``GET /streams/<id>:run`` made the worker's reader thread XREAD the claim hash
    of ``<id>`` (WRONGTYPE), which ended every live SSE response on that worker."""
    import threading

    from reasoning_stream import ReasoningDelta

    stream_id = f"live-{uuid.uuid4().hex}"
    with RedisHub(redis_url) as hub, serve(create_app(hub, timeout=2)) as base:
        script = [item for n in range(30) for item in (ReasoningDelta(f"r{n} "), 0.05)]
        runner = threading.Thread(target=hub.run, args=(stream_id, ScriptedPipe(script), "go"))
        runner.start()
        body: list[str] = []
        reader = threading.Thread(
            target=lambda: body.append(get(f"{base}/streams/{stream_id}").text)
        )
        reader.start()
        try:
            for suffix in (":run", ":lease"):
                probe = get(f"{base}/streams/{stream_id}{suffix}")
                assert probe.status_code == 404  # no such stream: it is not the claim
        finally:
            runner.join(30)
            reader.join(30)
        events = parse(body[0])
        assert events[-1].event == "end" and events[-1].json()["status"] == "completed"
        channel = "".join(e.json().get("chunk", "") for e in events)
        assert channel == "<think>" + "".join(f"r{n} " for n in range(30)) + "</think>"
