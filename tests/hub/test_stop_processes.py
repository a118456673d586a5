"""Stop across processes on a real redis-server (API.md section 14): the run in process A
(sync ``hub.run`` or ``hub.arun``), ``hub.stop`` in process B, a reader in process C. The
run's model is silent when the stop comes; A's run ends within a second, cancelled, its
markers balanced; C's reader ends; B's second stop is False."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from reasoning_stream import ReasoningStream
from reasoning_stream.hub import RedisHub

ROOT = Path(__file__).resolve().parents[2]


def process(*arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.hub.stop_worker", *arguments],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def outcome(child: subprocess.Popen[str], timeout: float = 20) -> dict[str, Any]:
    try:
        out, err = child.communicate(timeout=timeout)
    finally:
        child.kill()
    assert child.returncode == 0, err
    return dict(json.loads(out.strip().splitlines()[-1]))


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_run_in_one_process_is_stopped_from_another_and_read_in_a_third(
    redis_url: str, flavour: str
) -> None:
    stream_id = f"stop-{uuid.uuid4().hex}"
    runner = process("run", redis_url, stream_id, flavour)
    reader = process("read", redis_url, stream_id)
    try:
        with RedisHub(redis_url) as hub:  # wait until the model has reasoned and gone silent
            deadline = time.monotonic() + 20
            while sum(bool(entry.chunk) for entry in hub.read(stream_id)) < 3:
                assert time.monotonic() < deadline and runner.poll() is None
                time.sleep(0.01)
        time.sleep(0.3)  # silent for a while
        stopper = process("stop", redis_url, stream_id)
        stop = outcome(stopper)
        ran = outcome(runner)
        read = outcome(reader)
    finally:
        runner.kill()
        reader.kill()
    assert stop["stopped"] == [True, False]
    # Measured from the stop's return in B to the end of the run in A (one clock: one host).
    assert ran["ended"] - stop["at"] < 1.0, ran["ended"] - stop["at"]
    assert ran["status"] == "cancelled_before_answer"
    entries = read["entries"]
    assert [entry["final"] for entry in entries].count(True) == 1 and entries[-1]["final"]
    assert entries[-1]["status"] == "cancelled_before_answer"
    channel = "".join(entry["chunk"] for entry in entries)
    assert channel == f"{ReasoningStream.OPEN_TAG}thinking hard{ReasoningStream.CLOSE_TAG}"
    split = ReasoningStream.split(channel, lossless=True)
    assert (split.reasoning, split.text) == (ran["reasoning"], ran["text"])
    assert read["ended"] - stop["at"] < 1.5
    with RedisHub(redis_url) as hub:
        assert hub.stop(stream_id) is False  # finished: a no-op that says so
        assert hub.stop(f"never-{uuid.uuid4().hex}") is False


def test_a_stop_that_cannot_reach_redis_says_so_without_the_password(
    redis_server: Any,
) -> None:
    from reasoning_stream.hub import HubError

    url = redis_server.url.replace("redis://", "redis://user:s3cret@")
    hub = RedisHub(url, connect_timeout=0.5)
    try:
        redis_server.stop()
        with pytest.raises(HubError, match="nothing was stopped") as raised:
            hub.stop("chat-1")
        assert "s3cret" not in str(raised.value) and "***" in str(raised.value)
    finally:
        hub.close()
