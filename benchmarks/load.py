"""Load: 500 concurrent streams, their memory, what they leave behind, CPU per chunk.

A WireServer in a child process serves one transcript per stream, every delta naming its
stream, with a small delay before each piece; ``time.process_time`` here counts the client's
CPU only. Six stacks are measured, each on asyncio and on trio: OpenAI Chat and Anthropic each
through the lean httpx transport and through their SDK, and the lean transports of OpenAI
Responses and Ollama (NDJSON). Each stream has its own pipe, client and callback.

For each stack and backend the script runs 10 single streams one after another (the floor),
then 500 at once, and prints a table: CPU per chunk and its ratio to the floor (target 1.2x
or less), the peak number of streams in flight, the process's peak resident set, and whether
any pipe, result, socket or thread outlived its run (idle worker threads that event loops keep
for reuse are pools, not stream state, and are not counted). CPU per chunk includes each
stream's own setup (client, pipe, connection) in both cases; the floor also pays one event-loop
wake-up per server piece, which concurrent streams share, so a ratio under 1 is expected.

WireServer and 500 connections. WireServer listens with socketserver's default backlog of 5.
When more connects arrive at once than the accept queue holds, Linux drops the overflow and,
with SYN cookies on (the default), resets those connections when the client sends its request:
the client sees ``httpx.ReadError`` (ECONNRESET) before any response. The first two rows show
it: 500 streams opened in one burst, as shipped and with the listening socket's backlog raised
to 1024 (a diagnosis only: ``socket.listen(1024)`` on the server's socket in the child). The
measured rows open connections at most 4 at a time (released by each stream's first chunk),
then hold every stream at its first chunk until all 500 have one, so all 500 stream at once.

Run: ``python -m benchmarks.load`` (``--streams N``, ``--deltas N``, ``--delay SECONDS``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import platform
import resource
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anthropic
import anyio
import httpx
import openai

from reasoning_stream import ReasoningStream
from reasoning_stream._pipe import Pipe, PipeResult
from reasoning_stream.providers import (
    AnthropicPipe,
    OllamaPipe,
    OpenAIChatPipe,
    OpenAIResponsesPipe,
)
from reasoning_stream.testing import Reply, Transcript, WireServer

from ._timing import child_server

_ROOT = Path(__file__).resolve().parent.parent
SINGLE_RUNS = 10
PENDING = 4
"""Connections opened but not yet answered, at most, in the paced runs."""


# ------------------------------------------------------------------------------ streams


def chat_events(i: int, deltas: int) -> list[dict[str, Any]]:
    """An OpenAI Chat Completions stream whose every delta names stream ``i``."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        data = {"id": f"chatcmpl-{i}", "object": "chat.completion.chunk", "choices": [choice]}
        return {"data": data}

    events = [chunk({"reasoning_content": f"r{i}.{k} "}) for k in range(deltas)]
    events += [chunk({"content": f"t{i}.{k} "}) for k in range(deltas)]
    return [*events, chunk({}, "stop"), {"data": "[DONE]"}]


def anthropic_events(i: int, deltas: int) -> list[dict[str, Any]]:
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
    text = {"type": "text", "text": ""}
    events = [
        event({"type": "message_start", "message": message}),
        event({"type": "content_block_start", "index": 0, "content_block": thinking}),
    ]
    events += [
        delta(0, {"type": "thinking_delta", "thinking": f"r{i}.{k} "}) for k in range(deltas)
    ]
    events += [
        delta(0, {"type": "signature_delta", "signature": f"sig-{i}"}),
        event({"type": "content_block_stop", "index": 0}),
        event({"type": "content_block_start", "index": 1, "content_block": text}),
    ]
    events += [delta(1, {"type": "text_delta", "text": f"t{i}.{k} "}) for k in range(deltas)]
    stop = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}}
    return [*events, event({"type": "content_block_stop", "index": 1}), event(stop)]


def responses_events(i: int, deltas: int) -> list[dict[str, Any]]:
    """An OpenAI Responses stream (a reasoning summary, then text) naming stream ``i``."""

    def event(data: dict[str, Any]) -> dict[str, Any]:
        return {"event": data["type"], "data": data}

    response = {"id": f"resp_{i}", "object": "response", "status": "in_progress", "output": []}
    reasoning = {"id": f"rs_{i}", "type": "reasoning", "summary": []}
    message = {"id": f"msg_{i}", "type": "message", "role": "assistant", "content": []}
    summary = {"item_id": f"rs_{i}", "output_index": 0, "summary_index": 0}
    text = {"item_id": f"msg_{i}", "output_index": 1, "content_index": 0}
    events = [
        event({"type": "response.created", "response": response}),
        event({"type": "response.output_item.added", "output_index": 0, "item": reasoning}),
        event(
            {
                "type": "response.reasoning_summary_part.added",
                **summary,
                "part": {"type": "summary_text", "text": ""},
            }
        ),
    ]
    events += [
        event({"type": "response.reasoning_summary_text.delta", **summary, "delta": f"r{i}.{k} "})
        for k in range(deltas)
    ]
    events += [
        event({"type": "response.output_item.done", "output_index": 0, "item": reasoning}),
        event({"type": "response.output_item.added", "output_index": 1, "item": message}),
    ]
    events += [
        event({"type": "response.output_text.delta", **text, "delta": f"t{i}.{k} "})
        for k in range(deltas)
    ]
    done = {**response, "status": "completed"}
    return [*events, event({"type": "response.completed", "response": done})]


def ollama_lines(i: int, deltas: int) -> list[dict[str, Any]]:
    """An Ollama ``/api/chat`` NDJSON stream (thinking, then content) naming stream ``i``."""

    def line(message: dict[str, Any], done: bool = False) -> dict[str, Any]:
        body = {"role": "assistant", "content": "", **message}
        return {"model": "qwen3", "message": body, "done": done}

    lines = [line({"thinking": f"r{i}.{k} "}) for k in range(deltas)]
    lines += [line({"content": f"t{i}.{k} "}) for k in range(deltas)]
    return [*lines, {**line({}, True), "done_reason": "stop", "eval_count": 2 * deltas}]


def expected_channel(i: int, deltas: int) -> str:
    reasoning = "".join(f"r{i}.{k} " for k in range(deltas))
    answer = "".join(f"t{i}.{k} " for k in range(deltas))
    return f"{ReasoningStream.OPEN_TAG}{reasoning}{ReasoningStream.CLOSE_TAG}{answer}"


Closer = Callable[[], Any]


def _chat_httpx(url: str) -> tuple[Pipe, Closer]:
    client = httpx.AsyncClient(verify=False, timeout=60)
    pipe = OpenAIChatPipe("m", transport="httpx", http_client=client, base_url=url + "/v1")
    return pipe, client.aclose


def _chat_sdk(url: str) -> tuple[Pipe, Closer]:
    client = openai.AsyncOpenAI(
        base_url=url + "/v1",
        api_key="k",
        max_retries=0,
        timeout=60,
        http_client=openai.DefaultAsyncHttpxClient(verify=False),
    )
    return OpenAIChatPipe("m", client=client), client.close


def _anthropic(url: str) -> tuple[Pipe, Closer]:
    client = anthropic.AsyncAnthropic(
        base_url=url,
        api_key="k",
        max_retries=0,
        timeout=60,
        http_client=anthropic.DefaultAsyncHttpxClient(verify=False),
    )
    return AnthropicPipe("claude-sonnet-4-6", client=client), client.close


def _anthropic_httpx(url: str) -> tuple[Pipe, Closer]:
    client = httpx.AsyncClient(verify=False, timeout=60)
    pipe = AnthropicPipe(
        "claude-sonnet-4-6", transport="httpx", http_client=client, base_url=url, api_key="k"
    )
    return pipe, client.aclose


def _responses_httpx(url: str) -> tuple[Pipe, Closer]:
    client = httpx.AsyncClient(verify=False, timeout=60)
    pipe = OpenAIResponsesPipe(
        "o4-mini", transport="httpx", http_client=client, base_url=url + "/v1", api_key="k"
    )
    return pipe, client.aclose


def _ollama_httpx(url: str) -> tuple[Pipe, Closer]:
    client = httpx.AsyncClient(verify=False, timeout=60)
    return OllamaPipe("qwen3", transport="httpx", http_client=client, base_url=url), client.aclose


@dataclass(frozen=True)
class Stack:
    name: str
    path: str
    events: Callable[[int, int], list[dict[str, Any]]]
    pipe: Callable[[str], tuple[Pipe, Closer]]
    format: Literal["sse", "ndjson"] = "sse"


STACKS = (
    Stack("openai-chat httpx", "/v1/chat/completions", chat_events, _chat_httpx),
    Stack("openai-chat SDK", "/v1/chat/completions", chat_events, _chat_sdk),
    Stack("anthropic httpx", "/v1/messages", anthropic_events, _anthropic_httpx),
    Stack("anthropic SDK", "/v1/messages", anthropic_events, _anthropic),
    Stack("responses httpx", "/v1/responses", responses_events, _responses_httpx),
    Stack("ollama httpx", "/api/chat", ollama_lines, _ollama_httpx, "ndjson"),
)


# ------------------------------------------------------------------------------- server


def serve_until_stdin_closes(streams: int, deltas: int, delay: float, backlog: int) -> None:
    """The child process: every stack's routes, the URL on stdout, stop at end of stdin."""
    server = WireServer()
    for s, stack in enumerate(STACKS):
        for i in range(streams):
            transcript = Transcript(
                path=f"/k{s}/s{i}{stack.path}", events=stack.events(i, deltas), format=stack.format
            )
            server.add(Reply(transcript, delay=delay))
    with server:
        if backlog:
            # Diagnosis only: the same server with a deeper accept queue.
            server._server.socket.listen(backlog)  # type: ignore[union-attr]
        print(server.url, flush=True)
        sys.stdin.read()


_SERVER_SCRIPT = (
    "import sys\n"
    "from benchmarks.load import serve_until_stdin_closes\n"
    "serve_until_stdin_closes(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]),"
    " int(sys.argv[4]))\n"
)


@contextlib.contextmanager
def loopback(streams: int, deltas: int, delay: float, backlog: int = 0) -> Iterator[str]:
    """A WireServer in a child process; yields its ``http://127.0.0.1:PORT``."""
    arguments = [str(streams), str(deltas), str(delay), str(backlog)]
    with child_server(_SERVER_SCRIPT, *arguments) as url:
        yield url


# -------------------------------------------------------------------------------- runs


@dataclass
class Measured:
    streams: int
    ok: int
    chunks: int
    cpu: float
    wall: float
    peak: int
    errors: dict[str, int]
    pipes: list[weakref.ref[Pipe]]


async def run_streams(
    url: str, stack_index: int, indexes: range, deltas: int, *, paced: bool
) -> Measured:
    """Run the streams ``indexes`` of one stack at once; only numbers and weakrefs come back."""
    stack = STACKS[stack_index]
    gate = anyio.Semaphore(PENDING)
    everyone_in = anyio.Event()
    arrived = active = peak = ok = chunks_seen = 0
    errors: dict[str, int] = {}
    pipes: list[weakref.ref[Pipe]] = []

    def arrive() -> None:
        nonlocal arrived
        arrived += 1
        if arrived == len(indexes):
            everyone_in.set()

    async def one(i: int) -> None:
        nonlocal active, peak, ok, chunks_seen
        pipe, close = stack.pipe(f"{url}/k{stack_index}/s{i}")
        pipes.append(weakref.ref(pipe))
        chunks: list[str] = []
        first = True

        async def collect(chunk: str) -> None:
            nonlocal first, active, peak
            if first:
                first = False
                active += 1
                peak = max(peak, active)
                if paced:
                    gate.release()
                    arrive()
                    await everyone_in.wait()
            chunks.append(chunk)

        pipe.set_streaming_callback(collect)
        if paced:
            await gate.acquire()
        try:
            result: PipeResult = await pipe.arun(f"stream {i}")
            if "".join(chunks) == expected_channel(i, deltas) and result.status == "completed":
                ok += 1
        except Exception as error:
            cause = error.__cause__ or error
            errors[type(cause).__name__] = errors.get(type(cause).__name__, 0) + 1
        finally:
            if first:
                if paced:
                    gate.release()
                    arrive()
            else:
                active -= 1
            chunks_seen += len(chunks)
            await close()

    cpu, wall = time.process_time(), time.perf_counter()
    async with anyio.create_task_group() as group:
        for i in indexes:
            group.start_soon(one, i)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return Measured(len(indexes), ok, chunks_seen, cpu, wall, peak, errors, pipes)


async def run_singles(url: str, stack_index: int, deltas: int) -> Measured:
    """The floor: the same streams one at a time."""
    total = Measured(0, 0, 0, 0.0, 0.0, 1, {}, [])
    for i in range(SINGLE_RUNS):
        one = await run_streams(url, stack_index, range(i, i + 1), deltas, paced=False)
        total.streams += 1
        total.ok += one.ok
        total.chunks += one.chunks
        total.cpu += one.cpu
        total.wall += one.wall
        total.pipes += one.pipes
    return total


def peak_rss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux (bytes on macOS).
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return -1


def _is_pool_thread(thread: threading.Thread) -> bool:
    name = thread.name
    return name.startswith(("AnyIO worker thread", "Trio thread", "asyncio_"))


def baseline() -> tuple[int, int]:
    """Open file descriptors and threads (pools aside) before a run."""
    return open_fds(), sum(not _is_pool_thread(thread) for thread in threading.enumerate())


def left_behind(measured: Measured, fds: int, threads: int) -> str:
    """What outlived the run: pipes, results, sockets, threads ("nothing" is the goal)."""
    gc.collect()
    pipes = sum(ref() is not None for ref in measured.pipes)
    results = sum(isinstance(obj, PipeResult) for obj in gc.get_objects())
    extra_fds = open_fds() - fds
    # Event loops keep idle worker threads around for reuse (anyio's and trio's caches, the
    # asyncio default executor): a pool, not state of any stream.
    extra_threads = baseline()[1] - threads
    found = [
        f"{count} {what}"
        for count, what in (
            (pipes, "pipes"),
            (results, "results"),
            (extra_fds, "fds"),
            (extra_threads, "threads"),  # names: see _is_pool_thread
        )
        if count > 0
    ]
    return ", ".join(found) or "nothing"


# ------------------------------------------------------------------------------- report

HEADER = (
    f"| {'run':<40} | {'ok':>9} | {'chunks':>7} | {'wall s':>6} | {'CPU/chunk':>9} | "
    f"{'ratio':>5} | {'in flight':>9} | {'RSS MB':>6} | {'left behind':<11} |\n"
    f"|{'-' * 42}|{'-' * 11}|{'-' * 9}|{'-' * 8}|{'-' * 11}|{'-' * 7}|{'-' * 11}|{'-' * 8}|"
    f"{'-' * 13}|"
)


def row(label: str, measured: Measured, floor: Measured | None, leftovers: str) -> str:
    per_chunk = measured.cpu / measured.chunks * 1e6 if measured.chunks else float("nan")
    ratio = ""
    if floor is not None and floor.chunks and measured.chunks:
        ratio = f"{per_chunk / (floor.cpu / floor.chunks * 1e6):.2f}x"
    ok = f"{measured.ok}/{measured.streams}"
    return (
        f"| {label:<40} | {ok:>9} | {measured.chunks:>7} | {measured.wall:>6.2f} | "
        f"{per_chunk:>6.0f} µs | {ratio:>5} | {measured.peak:>9} | {peak_rss_mb():>6.0f} | "
        f"{leftovers:<11} |"
    )


def main() -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--deltas", type=int, default=20, help="reasoning and answer deltas")
    parser.add_argument("--delay", type=float, default=0.005, help="seconds before each piece")
    options = parser.parse_args()
    streams, deltas, delay = options.streams, options.deltas, options.delay
    python = f"{platform.python_implementation()} {platform.python_version()}"
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {python}")
    print(
        f"{streams} streams of {2 * deltas + 2} chunks each, {delay * 1000:g} ms before each "
        f"server piece; CPU is the client process's\n"
    )
    figures: dict[str, float] = {"rss_at_start_mb": peak_rss_mb()}
    print(f"peak RSS after imports, before any stream: {figures['rss_at_start_mb']:.0f} MB\n")
    print(HEADER)

    for label, backlog in (("burst, as shipped (backlog 5)", 0), ("burst, backlog 1024", 1024)):
        with loopback(streams, deltas, delay, backlog) as url:
            fds, threads = baseline()
            burst = anyio.run(partial(run_streams, url, 0, range(streams), deltas, paced=False))
            leftovers = left_behind(burst, fds, threads)
        print(row(label, burst, None, leftovers))
        if burst.errors:
            print(f"|   failures: {burst.errors}")
        figures[f"burst_ok_backlog_{backlog or 5}"] = burst.ok

    with loopback(streams, deltas, delay) as url:
        fds, threads = baseline()
        for s, stack in enumerate(STACKS):
            for backend in ("asyncio", "trio"):
                floor = anyio.run(run_singles, url, s, deltas, backend=backend)
                print(row(f"{stack.name}, 1 at a time, {backend}", floor, None, ""))
                many = anyio.run(
                    partial(run_streams, url, s, range(streams), deltas, paced=True),
                    backend=backend,
                )
                leftovers = left_behind(many, fds, threads)
                print(row(f"{stack.name}, {streams} at once, {backend}", many, floor, leftovers))
                ratio = (many.cpu / many.chunks) / (floor.cpu / floor.chunks)
                figures[f"{stack.name} {backend} ratio"] = ratio
                del floor, many
    figures["peak_rss_mb"] = peak_rss_mb()
    print(f"\npeak RSS of the client process: {figures['peak_rss_mb']:.0f} MB")
    return figures


if __name__ == "__main__":
    main()
