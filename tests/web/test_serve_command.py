"""``reasoning-stream serve`` as a user runs it: a process on 127.0.0.1 serving the page."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import httpx

from reasoning_stream.__main__ import build_parser
from tests.redis_server import free_port
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


def test_a_failed_runs_reason_reaches_the_serve_terminal_and_the_page_stream() -> None:
    """A live provider that cannot be reached: the terminal and the stream say why, and the
    password in ``--base-url`` appears in neither."""
    secret = "hunter2-serve"
    port = free_port()  # nothing listens there
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reasoning_stream",
            "serve",
            "--port",
            "0",
            "--provider",
            "openai",
            "--model",
            "gpt-test",
            "--base-url",
            f"http://user:{secret}@127.0.0.1:{port}/v1",
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-key", "OPENAI_MAX_RETRIES": "0"},
    )
    try:
        assert process.stderr is not None
        lines: queue.Queue[str] = queue.Queue()
        stderr = process.stderr
        threading.Thread(target=lambda: [lines.put(line) for line in stderr], daemon=True).start()
        printed: list[str] = []
        url = None
        for _ in range(5):
            printed.append(lines.get(timeout=30))
            if match := re.search(r"open (http://127\.0\.0\.1:\d+)/", printed[-1]):
                url = match.group(1)
                break
        assert url is not None, "serve did not print its address"
        stream_id = f"cli-{uuid.uuid4().hex}"
        started = httpx.post(f"{url}/streams/{stream_id}", json={"prompt": "hi"}, timeout=10)
        assert started.status_code == 202
        end = parse(get(f"{url}/streams/{stream_id}").text)[-1]
        assert end.event == "end" and end.json()["status"] == "error"
        reason = end.json()["error"]
        assert "ProviderError" in reason and secret not in reason
        while not any(stream_id in line for line in printed):
            printed.append(lines.get(timeout=60))
        line = next(line for line in printed if stream_id in line)
        assert "failed" in line and "ProviderError" in line
        assert secret not in "".join(printed)
    finally:
        process.terminate()
        process.wait(10)
