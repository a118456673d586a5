"""The command line: the offline demo, split, and live chat's errors and output modes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reasoning_stream import ReasoningStream
from reasoning_stream.__main__ import main
from reasoning_stream._demo import DEMO_PROVIDERS
from reasoning_stream._render import ChannelRenderer
from reasoning_stream.testing import Transcript, WireServer
from tests.helpers import said


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_demo_streams_a_pipeline_and_proves_the_split(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "demo")
    assert status == 0
    assert "Thinking" in out and "a <think> tag keeps them apart." in out
    assert "equals every result's reasoning and text: True" in out
    assert "EuYBCkQIBxgCIkDdemo" not in out  # the signature stays opaque


@pytest.mark.parametrize("provider", sorted(DEMO_PROVIDERS))
def test_demo_replays_each_provider(capsys: pytest.CaptureFixture[str], provider: str) -> None:
    status, out, _ = run_cli(capsys, "demo", "--provider", provider)
    assert status == 0
    assert "equals every result's reasoning and text: True" in out
    assert "status" in out and "completed" in out


def test_demo_raw_is_the_channel(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "demo", "--raw")
    assert status == 0
    split = ReasoningStream.split(out, lossless=True)
    assert len(split.segments) == 2
    assert "a <think> tag" in split.text
    assert "<\\think>" in out  # escaped in the channel, restored by split


def test_split_reads_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "channel.txt"
    path.write_text("<think> a </think> b", encoding="utf-8")
    status, out, _ = run_cli(capsys, "split", str(path))
    assert status == 0
    assert json.loads(out) == {"reasoning": "a", "text": "b", "segments": ["a"], "truncated": False}
    status, out, _ = run_cli(capsys, "split", "--lossless", str(path))
    assert json.loads(out)["segments"] == [" a "]


def test_split_of_a_missing_file_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "split", "/nonexistent/file")
    assert status == 2
    assert err.count("\n") == 1 and "cannot read" in err


def test_chat_without_a_key_says_what_to_do(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    status, _, err = run_cli(capsys, "chat", "hi", "--provider", "anthropic", "--model", "m")
    assert status == 2
    assert said(err) == [
        "reasoning-stream: set ANTHROPIC_API_KEY to talk to anthropic (or pass --base-url)"
    ]


def test_chat_against_an_unreachable_endpoint_is_the_error_and_where_it_went(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run_cli(
        capsys, "chat", "hi", "--provider", "openai", "--model", "m",
        "--base-url", "http://127.0.0.1:9/v1",
    )  # fmt: skip
    assert status == 1
    assert "Traceback" not in err
    error, hint = said(err)
    assert error.startswith(
        "reasoning-stream: openai-chat: cannot connect to http://127.0.0.1:9/v1"
    )
    assert hint.startswith("reasoning-stream: cannot connect to http://127.0.0.1:9/v1;")


@pytest.fixture
def openai_server() -> WireServer:
    with WireServer(Transcript.load("demo_deepseek")) as server:
        yield server  # type: ignore[misc]


def test_chat_renders_a_live_turn(
    openai_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("chat", "hi", "--provider", "openai", "--model", "deepseek-reasoner")
    status, out, err = run_cli(capsys, *args, "--base-url", openai_server.url + "/v1")
    assert status == 0
    assert out.startswith("Thinking\nThe user wants a haiku")
    assert "a <think> tag keeps them apart." in out
    assert "openai-chat" not in out and "completed" in err and "reasoning 38" in err


def test_chat_json_writes_one_event_per_line(
    openai_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("chat", "hi", "--provider", "openai", "--model", "deepseek-reasoner", "--json")
    status, out, _ = run_cli(capsys, *args, "--base-url", openai_server.url + "/v1")
    assert status == 0
    events = [json.loads(line) for line in out.splitlines()]
    kinds = [event["kind"] for event in events]
    assert kinds[0] == "reasoning_start" and "reasoning_end" in kinds
    assert kinds[-1] in ("finish", "usage")
    usage = next(event for event in events if event["kind"] == "usage")
    assert usage["usage"]["reasoning_tokens"] == 38


def test_chat_without_streamed_reasoning(
    openai_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("chat", "hi", "--provider", "openai", "--model", "m", "--raw", "--no-stream-reasoning")
    status, out, _ = run_cli(capsys, *args, "--base-url", openai_server.url + "/v1")
    assert status == 0
    assert "<think>" not in out.replace("<\\think>", "")
    assert out.startswith("Thoughts run ahead")


def test_renderer_with_color_dims_reasoning() -> None:
    out = io.StringIO()
    renderer = ChannelRenderer(out, color=True)
    for chunk in ("<think>", "why", "</think>", "because"):
        renderer(chunk)
    renderer.close()
    assert "\x1b[" in out.getvalue() and "because" in out.getvalue()


def test_module_entry_point_runs() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "reasoning_stream", "split", "-"],
        input="<think>r</think>t",
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(completed.stdout)["text"] == "t"


def test_ctrl_c_during_reasoning_closes_the_segment_and_reports_the_capture() -> None:
    """SIGINT mid-reasoning: exit 130, no traceback, the capture reported on stderr."""
    import signal
    import time

    from reasoning_stream.testing import Reply

    with WireServer(Reply(Transcript.load("demo_deepseek"), hang_after=5)) as server:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "reasoning_stream", "chat", "hi", "--provider", "openai",
                "--model", "deepseek-reasoner", "--base-url", server.url + "/v1", "--raw",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,  # unbuffered: communicate() must see every byte not read here
            env={**os.environ, "OPENAI_API_KEY": "test-key"},
        )  # fmt: skip
        assert process.stdout is not None
        seen = b""
        deadline = time.monotonic() + 30
        while b"<think>" not in seen and time.monotonic() < deadline:
            seen += process.stdout.read(1)
        time.sleep(0.3)  # let the held reasoning chunks arrive
        process.send_signal(signal.SIGINT)
        out_bytes, err_bytes = process.communicate(timeout=30)
    collected = (seen + out_bytes).decode()
    err = err_bytes.decode()
    assert process.returncode == 130
    assert "Traceback" not in err
    assert "interrupted; captured" in err and "cancelled_before_answer" in err
    split = ReasoningStream.split(collected, lossless=True)
    assert collected.endswith(ReasoningStream.CLOSE_TAG) and not split.truncated
    assert split.reasoning.startswith("The user wants a haiku")
