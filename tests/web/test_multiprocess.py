"""Three uvicorn worker processes share one Redis: start through A, read through B, kill B
mid-stream, resume through C with Last-Event-ID. Nothing is lost or repeated."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.redis_server import free_port
from tests.web.multiprocess_app import expected_channel
from tests.web.sse import get, parse, within

ROOT = Path(__file__).resolve().parents[2]


def start_worker(redis_url: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "REASONING_STREAM_TEST_REDIS": redis_url, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "tests.web.multiprocess_app:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return process, f"http://127.0.0.1:{port}"


@pytest.fixture
def workers(redis_url: str) -> Iterator[list[tuple[subprocess.Popen[bytes], str]]]:
    started = [start_worker(redis_url) for _ in range(3)]
    try:
        deadline = time.monotonic() + 30
        for process, url in started:
            while True:
                try:
                    httpx.get(f"{url}/streams/-probe", timeout=0.5)  # 404 after 5 s is fine
                    break
                except httpx.TimeoutException:
                    break
                except httpx.TransportError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        errors = process.stderr.read().decode() if process.stderr else ""
                        raise RuntimeError(f"worker did not start: {errors}") from None
                    time.sleep(0.05)
        yield started
    finally:
        for process, _ in started:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process, _ in started:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


@pytest.mark.parametrize("protocol", ["channel", "ag-ui"])
def test_start_on_a_read_on_b_resume_on_c_after_b_dies(
    workers: list[tuple[subprocess.Popen[bytes], str]], protocol: str
) -> None:
    (_, a), (b_process, b), (_, c) = workers
    stream_id = f"multi-{uuid.uuid4().hex}"
    assert httpx.post(f"{a}/streams/{stream_id}", json={"prompt": "go"}).status_code == 202

    received: list[str] = []
    last_id = None
    with httpx.Client(timeout=20) as client:
        try:
            with client.stream("GET", f"{b}/streams/{stream_id}?protocol={protocol}") as response:
                assert response.status_code == 200
                block: list[str] = []
                for line in within(response.iter_lines()):
                    if line:
                        block.append(line)
                        continue
                    received.append("\n".join(block) + "\n\n")
                    last_id = block[0].removeprefix("id: ")
                    block = []
                    if len(received) == 12:
                        b_process.kill()  # worker B dies mid-reasoning
        except httpx.HTTPError:
            pass
        assert b_process.wait(5) is not None
        assert 12 <= len(received) < 60 and last_id is not None
        resumed = get(
            f"{c}/streams/{stream_id}?protocol={protocol}", last_event_id=last_id, client=client
        ).text
        whole = get(f"{a}/streams/{stream_id}?protocol={protocol}", client=client).text
    # B may have delivered a partial block of the entry it died in: resume after the last
    # entry whose events all arrived, as a browser's EventSource would (it only records
    # complete events, and an entry's events are written together).
    events = parse("".join(received) + resumed)
    assert events == parse(whole)
    if protocol == "channel":
        assert "".join(json.loads(event.data)["chunk"] for event in events) == expected_channel()
    else:
        deltas = [json.loads(event.data) for event in events]
        text = "".join(d["delta"] for d in deltas if d["type"] == "TEXT_MESSAGE_CONTENT")
        assert text == "".join(f"t{n} " for n in range(10))
