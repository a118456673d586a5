"""``reasoning-stream serve`` as a user runs it: a process on 127.0.0.1 serving the page."""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import httpx

from reasoning_stream.__main__ import build_parser
from tests.web.sse import get, parse

ROOT = Path(__file__).resolve().parents[2]


def test_serve_is_a_command() -> None:
    args = build_parser().parse_args(["serve", "--port", "0"])
    assert args.port == 0 and args.provider is None


def test_serve_runs_the_offline_demo_on_loopback() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "reasoning_stream", "serve", "--port", "0"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        # Read stderr on a thread so that a server that never prints fails after 30 s
        # instead of blocking readline for ever.
        lines: queue.Queue[str] = queue.Queue()
        stderr = process.stderr
        threading.Thread(target=lambda: [lines.put(line) for line in stderr], daemon=True).start()
        url = None
        for _ in range(5):
            line = lines.get(timeout=30)
            if match := re.search(r"open (http://127\.0\.0\.1:\d+)/", line):
                url = match.group(1)
                break
        assert url is not None, "serve did not print its address"
        page = httpx.get(f"{url}/", timeout=10)
        assert page.status_code == 200 and "new EventSource(" in page.text
        stream_id = f"cli-{uuid.uuid4().hex}"
        started = httpx.post(f"{url}/streams/{stream_id}", json={"prompt": "hi"}, timeout=10)
        assert started.status_code == 202
        events = parse(get(f"{url}/streams/{stream_id}").text)
        kinds = [event.json().get("kind") for event in events[:-1]]
        assert kinds.index("reasoning_delta") < kinds.index("text_delta")
        assert events[-1].event == "end" and events[-1].json()["status"] == "completed"
    finally:
        process.terminate()
        process.wait(10)


def test_serve_with_a_provider_needs_a_model() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "reasoning_stream", "serve", "--provider", "openai"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--model" in done.stderr
