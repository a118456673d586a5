"""Load: 200 concurrent streams on one event loop (asyncio, then trio), no cross-talk.

Every stream has its own pipe, its own callbacks and its own transcript, whose every delta
names the stream (``r17.3``, ``t17.3``): a chunk of another stream in a channel, a lost or
doubled chunk, or a result that is not exactly its own stream fails the test. The streams mix
three stacks: OpenAI Chat through the lean httpx transport, the same through the openai SDK,
and Anthropic through its SDK.

WireServer listens with socketserver's default backlog of 5. A burst of simultaneous connects
overflows it; with SYN cookies on (Linux's default) the overflowed connections are then reset
when the client sends its request (``httpx.ReadError``, ECONNRESET). Streams therefore open
their connections a few at a time (at most ``PENDING`` not yet accepted); they stream
concurrently once open. ``benchmarks/load.py`` measures the burst case.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anthropic
import anyio
import httpx
import openai
import pytest

from reasoning_stream import ReasoningStream
from reasoning_stream._pipe import Pipe, PipeResult
from reasoning_stream.providers import AnthropicPipe, OpenAIChatPipe
from reasoning_stream.testing import Reply, Transcript, WireServer

from . import (
    API_KEY,
    RESOURCE_CHECKS,
    assert_balanced,
    collected_garbage,  # noqa: F401 - the fixture RESOURCE_CHECKS names
    frozen_survivors,  # noqa: F401 - the fixture collected_garbage needs
)

pytestmark = RESOURCE_CHECKS

STREAMS = 200
DELTAS = 12
"""Reasoning deltas and answer deltas per stream (each)."""
DELAY = 0.005
"""Seconds before each piece the server writes."""
PENDING = 4
"""Connections opened but not yet accepted, at most: below the server's backlog of 5."""


def chat_events(i: int) -> list[dict[str, Any]]:
    """An OpenAI Chat Completions stream whose every delta names stream ``i``."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {
            "data": {"id": f"chatcmpl-{i}", "object": "chat.completion.chunk", "choices": [choice]}
        }

    events = [chunk({"reasoning_content": f"r{i}.{k} "}) for k in range(DELTAS)]
    events += [chunk({"content": f"t{i}.{k} "}) for k in range(DELTAS)]
    return [*events, chunk({}, "stop"), {"data": "[DONE]"}]


def anthropic_events(i: int) -> list[dict[str, Any]]:
    """An Anthropic Messages stream whose every delta names stream ``i``."""

    def event(data: dict[str, Any]) -> dict[str, Any]:
        return {"event": data["type"], "data": data}

    def delta(index: int, body: dict[str, Any]) -> dict[str, Any]:
        return event({"type": "content_block_delta", "index": index, "delta": body})

    message: dict[str, Any] = {
        "id": f"msg_{i}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    thinking = {"type": "thinking", "thinking": "", "signature": ""}
    events = [
        event({"type": "message_start", "message": message}),
        event({"type": "content_block_start", "index": 0, "content_block": thinking}),
    ]
    events += [
        delta(0, {"type": "thinking_delta", "thinking": f"r{i}.{k} "}) for k in range(DELTAS)
    ]
    events += [
        delta(0, {"type": "signature_delta", "signature": f"sig-{i}"}),
        event({"type": "content_block_stop", "index": 0}),
        event(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            }
        ),
    ]
    events += [delta(1, {"type": "text_delta", "text": f"t{i}.{k} "}) for k in range(DELTAS)]
    events += [
        event({"type": "content_block_stop", "index": 1}),
        event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 2 * DELTAS},
            }
        ),
        event({"type": "message_stop"}),
    ]
    return events


@dataclass(frozen=True)
class Stack:
    """How one kind of stream is served and read."""

    name: str
    path: str
    events: Callable[[int], list[dict[str, Any]]]
    pipe: Callable[[str, int], tuple[Pipe, Callable[[], Any]]]


def _chat_httpx(url: str, i: int) -> tuple[Pipe, Callable[[], Any]]:
    client = httpx.AsyncClient(verify=False, timeout=30)
    pipe = OpenAIChatPipe(
        "m", transport="httpx", http_client=client, base_url=url + "/v1", api_key=API_KEY
    )
    return pipe, client.aclose


def _chat_sdk(url: str, i: int) -> tuple[Pipe, Callable[[], Any]]:
    client = openai.AsyncOpenAI(
        base_url=url + "/v1",
        api_key=API_KEY,
        max_retries=0,
        timeout=30,
        http_client=openai.DefaultAsyncHttpxClient(verify=False),
    )
    return OpenAIChatPipe("m", client=client), client.close


def _anthropic(url: str, i: int) -> tuple[Pipe, Callable[[], Any]]:
    client = anthropic.AsyncAnthropic(
        base_url=url,
        api_key=API_KEY,
        max_retries=0,
        timeout=30,
        http_client=anthropic.DefaultAsyncHttpxClient(verify=False),
    )
    return AnthropicPipe("claude-sonnet-4-6", client=client), client.close


STACKS = (
    Stack("openai-chat-httpx", "/v1/chat/completions", chat_events, _chat_httpx),
    Stack("openai-chat-sdk", "/v1/chat/completions", chat_events, _chat_sdk),
    Stack("anthropic", "/v1/messages", anthropic_events, _anthropic),
)


@dataclass
class Run:
    """What one stream's callbacks saw and what its pipe returned."""

    chunks: list[str] = field(default_factory=list)
    sources: set[str | None] = field(default_factory=set)
    result: PipeResult | None = None
    error: BaseException | None = None


def expected(i: int) -> tuple[str, str]:
    reasoning = "".join(f"r{i}.{k} " for k in range(DELTAS))
    return reasoning, "".join(f"t{i}.{k} " for k in range(DELTAS))


async def stream_all(server: WireServer) -> tuple[dict[int, Run], int, float]:
    """Run every stream concurrently; return the runs, the peak overlap and the wall time."""
    runs = {i: Run() for i in range(STREAMS)}
    active = peak = arrived = 0
    # Opening is paced, so the first streams would finish before the last ones start: every
    # stream waits at its first chunk until all have one. From there all stream at once.
    everyone_in = anyio.Event()
    started = time.perf_counter()

    def arrive() -> None:
        nonlocal arrived
        arrived += 1
        if arrived == STREAMS:
            everyone_in.set()

    async def one(i: int) -> None:
        nonlocal active, peak
        # Open at most PENDING connections the server has not yet accepted (see the module
        # docstring); once a request is in, the stream runs alongside all the others.
        while len(server.requests) < i - PENDING:
            await anyio.sleep(0.001)
        stack = STACKS[i % len(STACKS)]
        pipe, close = stack.pipe(f"{server.url}/s{i}", i)
        pipe.name = f"stream-{i}"
        run = runs[i]
        counted = False

        async def collect(chunk: str) -> None:
            nonlocal active, peak, counted
            if not counted:
                counted = True
                active += 1
                peak = max(peak, active)
                arrive()
                await everyone_in.wait()
            run.chunks.append(chunk)

        pipe.set_streaming_callback(collect)
        pipe.set_event_callback(lambda event: run.sources.add(event.source))
        try:
            run.result = await pipe.arun(f"stream {i}")
        except Exception as error:
            run.error = error
        finally:
            if counted:
                active -= 1
            else:
                arrive()  # a stream that failed before its first chunk must not block the rest
            await close()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for i in range(STREAMS):
                group.start_soon(one, i)
    return runs, peak, time.perf_counter() - started


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_concurrent_streams_keep_to_themselves(backend: str) -> None:
    with WireServer() as server:
        for i in range(STREAMS):
            stack = STACKS[i % len(STACKS)]
            transcript = Transcript(path=f"/s{i}{stack.path}", events=stack.events(i))
            server.add(Reply(transcript, delay=DELAY))
        runs, peak, seconds = anyio.run(stream_all, server, backend=backend)

    failures = {i: repr(run.error) for i, run in runs.items() if run.error is not None}
    assert not failures, failures
    for i, run in runs.items():
        assert run.result is not None
        reasoning, text = expected(i)
        assert (run.result.model_reasoning, run.result.text) == (reasoning, text), i
        assert run.result.status == "completed"
        channel = "".join(run.chunks)
        # Exactly its own stream: markers, then its reasoning, then its answer.
        assert channel == f"{ReasoningStream.OPEN_TAG}{reasoning}{ReasoningStream.CLOSE_TAG}{text}"
        assert_balanced(channel)
        assert run.sources == {f"stream-{i}"}
    # Concurrency, not a queue: every stream was mid-flight at once.
    assert peak == STREAMS, f"only {peak} streams overlapped"
    assert seconds < 20
