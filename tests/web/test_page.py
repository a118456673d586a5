"""``reasoning-stream serve`` in headless Chromium: reasoning shows live before the answer, and
a connection the server drops mid-reasoning neither loses nor repeats a byte on the page."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from reasoning_stream import ReasoningStream
from reasoning_stream.hub import MemoryHub
from reasoning_stream.web._serve import build_app, demo_starter
from tests.web.cdp import Browser
from tests.web.conftest import serve


class DropFirstStream:
    """ASGI middleware: the first ``GET /streams/...`` response ends after the write that
    takes it to ``writes`` entries.

    The server closes that response cleanly mid-stream and abandons it, as a restarting
    worker or a proxy timeout would; the browser's EventSource has to reconnect.
    """

    def __init__(self, app: Any, writes: int) -> None:
        self.app = app
        self.writes = writes
        self.dropped = False
        self.sent = b""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            self.dropped
            or scope["type"] != "http"
            or scope["method"] != "GET"
            or not scope["path"].startswith("/streams/")
        ):
            await self.app(scope, receive, send)
            return
        self.dropped = True
        count = 0
        async with anyio.create_task_group() as group:

            async def cutting_send(message: Any) -> None:
                nonlocal count
                if message["type"] == "http.response.body":
                    # Entries, not writes: a write carries every entry the hub had waiting.
                    count += len(re.findall(rb"(?m)^id: ", message.get("body", b"")))
                    self.sent += message.get("body", b"")
                    if count >= self.writes:
                        await send({**message, "more_body": False})
                        group.cancel_scope.cancel()
                        return
                await send(message)

            group.start_soon(self.app, scope, receive, cutting_send)


@pytest.fixture
def browser() -> Iterator[Browser]:
    opened = Browser()
    try:
        yield opened
    finally:
        opened.close()


def test_page_shows_reasoning_live_and_survives_a_dropped_connection(
    browser: Browser, tmp_path: Path
) -> None:
    hub = MemoryHub()
    with demo_starter(delay=0.02) as start:
        app = DropFirstStream(build_app(hub, start), writes=12)
        with serve(app) as base:
            browser.open(f"{base}/")
            browser.evaluate("document.querySelector('#ask button').click()")
            # Reasoning is on the page while no answer is.
            browser.wait_for(
                "window.reasoningStream.segments.length > 0 && "
                "window.reasoningStream.segments[0].length > 0 && "
                "window.reasoningStream.answer === ''"
            )
            assert browser.wait_for("document.querySelector('details.thinking').open")
            state = browser.wait_for(
                "window.reasoningStream.done && window.reasoningStream", timeout=60
            )
            summaries = browser.evaluate(
                "[...document.querySelectorAll('details.thinking')]"
                ".map(d => [d.open, d.querySelector('summary').textContent])"
            )
            browser.screenshot(tmp_path / "serve.png")
    # The server really dropped the first connection mid-reasoning, and the page reconnected.
    assert b'"kind":"reasoning_delta"' in app.sent and b'"kind":"text_delta"' not in app.sent
    assert state["errors"] >= 1
    # Nothing lost, nothing repeated: the page holds exactly the run's reasoning and answer.
    channel = "".join(entry.chunk for entry in hub.read(state["streamId"]))
    split = ReasoningStream.split(channel, lossless=True)
    assert state["segments"] == [segment for segment in split.segments if segment]
    assert state["answer"] == split.text and split.text
    assert state["status"] == "completed"
    assert state["firstReasoningAt"] < state["firstAnswerAt"]
    # Each Thinking block collapsed when its answer started, showing how long it took.
    assert summaries and all(not is_open for is_open, _ in summaries)
    assert all(re.fullmatch(r"Thought for \d+\.\d s", text) for _, text in summaries)
    png = (tmp_path / "serve.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    if target := os.environ.get("REASONING_STREAM_SCREENSHOT"):
        Path(target).write_bytes(png)


LISTENER = """<!doctype html><script>
window.got = {events: [], errors: 0, done: false};
const source = new EventSource(location.search.slice(1));
source.onmessage = (e) => window.got.events.push([e.lastEventId, e.data]);
source.addEventListener("end", (e) => {
  window.got.events.push([e.lastEventId, e.data]); window.got.done = true; source.close();
});
source.onerror = () => { window.got.errors += 1; };
</script>"""


def test_keep_alive_comments_do_not_disturb_an_event_source(browser: Browser) -> None:
    """A browser's EventSource on a stream that idles between keep-alive comments."""
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    from reasoning_stream import ReasoningDelta, TextDelta
    from reasoning_stream.testing import ScriptedPipe
    from reasoning_stream.web import create_app

    hub = MemoryHub()

    async def page(request: Any) -> HTMLResponse:
        return HTMLResponse(LISTENER)

    app = create_app(hub, timeout=5, keep_alive=0.05, routes=[Route("/", page)])
    pipe = ScriptedPipe([ReasoningDelta("a"), 0.4, ReasoningDelta("b"), 0.4, TextDelta("c")])
    with serve(app) as base:
        browser.open(f"{base}/?/streams/idle")
        anyio.run(hub.arun, "idle", pipe, "go")
        got = browser.wait_for("window.got.done && window.got", timeout=30)
    entries = hub.read("idle")
    assert got["errors"] == 0  # comments never made it reconnect
    assert [event_id for event_id, _ in got["events"]] == [entry.id for entry in entries]
    chunks = "".join(json.loads(data)["chunk"] for _, data in got["events"])
    assert chunks == "".join(entry.chunk for entry in entries) == "<think>ab</think>c"


def test_page_says_why_a_run_failed(browser: Browser) -> None:
    from reasoning_stream import ProviderError, ReasoningDelta
    from reasoning_stream.testing import ScriptedPipe

    def start(prompt: object) -> ScriptedPipe:
        error = ProviderError("openai: insufficient credit (APIStatusError, HTTP 402)")
        return ScriptedPipe([ReasoningDelta("thinking "), error])

    with serve(build_app(MemoryHub(), start)) as base:
        browser.open(f"{base}/")
        browser.evaluate("document.querySelector('#ask button').click()")
        browser.wait_for("window.reasoningStream.done", timeout=30)
        status = browser.evaluate("document.getElementById('status').textContent")
    assert status.startswith("status: error") and "insufficient credit" in status


ATTACKER = """<!doctype html><script>
window.tried = (async () => {
  const target = location.search.slice(1);
  const said = [];
  // A simple request: no preflight, so the browser sends it and only hides the answer.
  try {
    await fetch(target + "/streams/from-text-plain", {method: "POST", mode: "no-cors",
      headers: {"content-type": "text/plain"}, body: '{"prompt": "spend"}'});
    said.push("text/plain sent");
  } catch (e) { said.push("text/plain failed: " + e); }
  // JSON needs a CORS preflight, which the app does not grant to this origin.
  try {
    await fetch(target + "/streams/from-json", {method: "POST",
      headers: {"content-type": "application/json"}, body: '{"prompt": "spend"}'});
    said.push("json sent");
  } catch (e) { said.push("json refused"); }
  return said;
})();
</script>"""


def test_a_page_on_another_site_cannot_start_runs(browser: Browser) -> None:
    """Real Chromium: a page on another origin posts to the app the ways a page can."""
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    from reasoning_stream.testing import ScriptedPipe

    hub = MemoryHub()
    started: list[object] = []

    def start(prompt: object) -> ScriptedPipe:
        started.append(prompt)
        return ScriptedPipe(["spent"])

    async def attacker(request: Any) -> HTMLResponse:
        return HTMLResponse(ATTACKER)

    with (
        serve(build_app(hub, start)) as victim,
        serve(Starlette(routes=[Route("/", attacker)])) as evil,
    ):
        # Another port is another origin; "localhost" makes it another site's name too.
        browser.open(f"{evil.replace('127.0.0.1', 'localhost')}/?{victim}")
        browser.wait_for("window.tried !== undefined")
        said = browser.evaluate("window.tried")
    assert "text/plain sent" in said and "json refused" in said
    assert started == []
    assert hub.read("from-text-plain") == [] and hub.read("from-json") == []
