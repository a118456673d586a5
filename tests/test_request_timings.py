"""Timings start when the request is sent, not before the SDK import and the client build.

A pipe whose client build sleeps stands for the first run's SDK import (about 1.3 s for some
SDKs): neither ``result.timings`` nor telemetry's time to first chunk may count it.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from reasoning_stream import telemetry
from reasoning_stream.providers import AnthropicPipe, OpenAIChatPipe
from reasoning_stream.testing import WireServer
from tests.telemetry.test_telemetry import install

BUILD = 0.6  # seconds the client build sleeps
KEY = "sk-test-key-0123456789"


class SlowChat(OpenAIChatPipe):
    def build_client(self, *, asynchronous: bool) -> Any:
        time.sleep(BUILD)
        return super().build_client(asynchronous=asynchronous)


class SlowAnthropic(AnthropicPipe):
    def build_client(self, *, asynchronous: bool) -> Any:
        time.sleep(BUILD)
        return super().build_client(asynchronous=asynchronous)


def _pipes(url: str, stream: bool) -> list[Any]:
    return [
        SlowChat("o4-mini", base_url=url + "/v1", api_key=KEY, stream=stream),
        SlowChat("o4-mini", base_url=url + "/v1", api_key=KEY, stream=stream, transport="httpx"),
        SlowAnthropic("claude-sonnet-4-5", base_url=url, api_key=KEY, stream=stream),
    ]


TRANSCRIPTS = {
    True: ("openai_chat_reasoning_content", "anthropic_thinking"),
    False: ("openai_chat_oneshot", "anthropic_oneshot"),
}


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "one-shot"])
async def test_timings_leave_out_the_client_build(stream: bool) -> None:
    chat, anthropic = TRANSCRIPTS[stream]
    with WireServer(chat, anthropic) as server:
        for pipe in _pipes(server.url, stream):
            for run in ("run", "arun"):
                started = time.perf_counter()
                if run == "run":
                    result = await anyio.to_thread.run_sync(pipe.run, "hi")
                else:
                    result = await pipe.arun("hi")
                elapsed = time.perf_counter() - started
                pipe.close()
                pipe._built = None  # build again: every run pays the slow build
                timings = result.timings
                assert elapsed >= BUILD, (pipe, run)
                assert timings.total < BUILD / 2, (pipe, run, timings)
                assert timings.time_to_first_reasoning is not None, (pipe, run)
                assert timings.time_to_first_reasoning < BUILD / 2, (pipe, run, timings)


def test_telemetry_time_to_first_chunk_leaves_out_the_client_build() -> None:
    otel = install()
    try:
        with WireServer("openai_chat_reasoning_content") as server:
            SlowChat("o4-mini", base_url=server.url + "/v1", api_key=KEY).run("hi")
    finally:
        telemetry.uninstrument()
    (span,) = otel.finished()
    attributes = span.attributes or {}
    first = attributes["gen_ai.response.time_to_first_chunk"]
    assert isinstance(first, float) and first < BUILD / 2
    (point,) = otel.points("gen_ai.client.operation.time_to_first_chunk")
    assert point.sum < BUILD / 2
