"""Provider stacks side by side over one loopback Chat Completions stream.

A WireServer replays a 20,000-chunk OpenAI-compatible SSE stream at ``POST
/v1/chat/completions``. It runs in a child process, so ``time.process_time`` here counts the
client's CPU only. The stream comes in two shapes:

* case A: ``reasoning_content`` deltas, then ``content`` deltas (DeepSeek's API, vLLM);
* case B: ``<think>`` tags inline in ``content``, 3-5 characters a chunk, so the tags straddle
  chunks (llama.cpp, R1 distillations behind an OpenAI-compatible server).

Every row reads the same bytes with a sync loop and collects reasoning and answer (the async
pipe is an extra row). The table gives CPU and wall time per chunk; how far the resident set's
peak rose during one read (Linux's ``VmHWM``, reset through ``/proc/self/clear_refs``, so the
read runs at full speed; ``--heap`` measures tracemalloc's Python-heap peak instead, in an extra
read about 5x slower); the CPU ratios to the floor (httpx + httpx-sse + ``json.loads``) and to
the bare openai SDK loop; what a 20x longer stream costs (linear is 20x, per-request overhead
makes it less); and whether the tool leaked tags into the answer or did not hand the reasoning
over apart from it.

LiteLLM and pydantic-ai rows need ``pip install litellm pydantic-ai-slim[openai]``; without them
the rows say "not installed".

Run alone: ``python -m benchmarks.bench_providers`` (``--chunks N`` for another length,
``--profile`` to see where the pipes spend their own time, ``--heap``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import ctypes
import gc
import io
import json
import os
import pstats
import random
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx_sse
import openai

from reasoning_stream import ReasoningStream
from reasoning_stream.providers import OpenAIChatPipe
from reasoning_stream.testing._wire import Transcript, WireServer

from ._timing import Timing, child_server, measure

CHUNKS = 20_000
GROWTH = 20
"""The short stream is ``CHUNKS // GROWTH`` chunks; the long one costs about GROWTH times more."""
REPEAT = 3
FAST_SECONDS = 1.0
SLOW_SECONDS = 5.0
SHORT_REPEAT = 5
MODEL = "m"
PROMPT = "Why is the sky blue?"
MESSAGES = [{"role": "user", "content": PROMPT}]
REQUEST = {
    "model": MODEL,
    "messages": MESSAGES,
    "stream": True,
    "stream_options": {"include_usage": True},
}
CASES = {"A": "reasoning_content deltas, then content", "B": "inline <think> tags in content"}
_ROOT = Path(__file__).resolve().parent.parent
_WORDS = (
    "the", "light", "scatters", "off", "small", "molecules,", "so", "blue", "wins;", "shorter",
    "wavelengths", "bend", "more", "and", "the", "eye", "sees", "what", "the", "air", "sends",
    "back.", "check", "the", "numbers", "again:",
)  # fmt: skip


# ------------------------------------------------------------------------------ the stream


@dataclass(frozen=True)
class Stream:
    """What the server sends: the delta texts in order, and what they should add up to."""

    case: str
    reasoning: str
    answer: str
    reasoning_deltas: list[str]
    content_deltas: list[str]


def prose(length: int, rng: random.Random) -> str:
    """Words up to exactly ``length`` characters, starting and ending with a non-space."""
    words: list[str] = []
    total = 0
    while total < length:
        word = rng.choice(_WORDS)
        words.append(word)
        total += len(word) + 1
    text = " ".join(words)[:length]
    return text[:-1] + "." if text.endswith(" ") else text


def split_sizes(text: str, sizes: list[int]) -> list[str]:
    pieces: list[str] = []
    start = 0
    for size in sizes:
        pieces.append(text[start : start + size])
        start += size
    return pieces


def make_stream(case: str, chunks: int, seed: int = 7) -> Stream:
    """``chunks`` deltas of 3-5 characters each; half reasoning, half answer."""
    rng = random.Random(seed)
    sizes = [rng.randint(3, 5) for _ in range(chunks)]
    half = chunks // 2
    if case == "A":
        reasoning = prose(sum(sizes[:half]), rng)
        answer = prose(sum(sizes[half:]), rng)
        return Stream(
            case,
            reasoning,
            answer,
            split_sizes(reasoning, sizes[:half]),
            split_sizes(answer, sizes[half:]),
        )
    open_tag, close_tag = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG
    reasoning = prose(sum(sizes[:half]) - len(open_tag), rng)
    answer = prose(sum(sizes[half:]) - len(close_tag), rng)
    content = open_tag + reasoning + close_tag + answer
    return Stream(case, reasoning, answer, [], split_sizes(content, sizes))


def _chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
    choices = (
        []
        if delta is None
        else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    )
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1735689600,
        "model": MODEL,
        "choices": choices,
    }


def sse_events(stream: Stream) -> list[dict[str, Any]]:
    """The chunks as JSON: deltas, a finish chunk, a usage chunk."""
    deltas: list[dict[str, Any]] = []
    if stream.case == "A":
        deltas += [{"content": None, "reasoning_content": r} for r in stream.reasoning_deltas]
        deltas += [{"content": c, "reasoning_content": None} for c in stream.content_deltas]
    else:
        deltas += [{"content": c} for c in stream.content_deltas]
    deltas[0] = {"role": "assistant", **deltas[0]}
    events = [_chunk(delta) for delta in deltas]
    events.append(_chunk({}, "stop"))
    usage = {
        "prompt_tokens": 12,
        "completion_tokens": len(deltas),
        "total_tokens": len(deltas) + 12,
    }
    events.append({**_chunk(None), "usage": usage})
    return events


def route(case: str, chunks: int) -> str:
    """The base URL path (the ``/v1`` root) serving one case and length."""
    return f"/{case.lower()}{chunks}/v1"


def transcript_dict(case: str, chunks: int) -> dict[str, Any]:
    """The reply as a transcript, its SSE frames already encoded.

    A ``raw`` transcript of ready frames keeps the server's per-request work to writing them:
    an ``sse`` transcript would re-encode 20,000 JSON objects before the first byte.
    """
    frames = [
        "data: " + json.dumps(event, separators=(",", ":")) + "\n\n"
        for event in sse_events(make_stream(case, chunks))
    ]
    frames.append("data: [DONE]\n\n")
    return {
        "name": f"bench-{case}-{chunks}",
        "path": route(case, chunks) + "/chat/completions",
        "format": "raw",
        "headers": {"Content-Type": "text/event-stream; charset=utf-8"},
        "events": frames,
    }


def serve_until_stdin_closes(lengths: list[int]) -> None:
    """The child process: serve every case and length, print the URL, stop at end of stdin."""
    server = WireServer()
    for case in CASES:
        for chunks in lengths:
            server.add(Transcript.from_dict(transcript_dict(case, chunks)))
    with server:
        print(server.url, flush=True)
        sys.stdin.read()


_SERVER_SCRIPT = (
    "import sys\n"
    "from benchmarks.bench_providers import serve_until_stdin_closes\n"
    "serve_until_stdin_closes([int(arg) for arg in sys.argv[1:]])\n"
)


@contextlib.contextmanager
def loopback(lengths: list[int]) -> Iterator[str]:
    """A WireServer in a child process; yields its ``http://127.0.0.1:PORT``."""
    with child_server(_SERVER_SCRIPT, *lengths) as url:
        yield url


# ------------------------------------------------------------------------------- contenders


@dataclass(frozen=True)
class Collected:
    """What a tool handed over: the reasoning it kept apart, and the answer."""

    reasoning: str
    answer: str
    channel: str | None = None
    """The pipe's one callback channel, markers included (pipe rows only)."""


class Contender:
    """One way to read the stream. ``read(base_url)`` does one request, start to end."""

    key = ""
    label = ""

    def read(self, base_url: str) -> Collected:
        raise NotImplementedError

    def close(self) -> None:
        """Release clients."""


def _sdk_client(base_url: str) -> openai.OpenAI:
    # Plain HTTP on loopback: skipping TLS context setup keeps client building out of the way.
    http = openai.DefaultHttpxClient(verify=False)
    return openai.OpenAI(base_url=base_url, api_key="k", max_retries=0, http_client=http)


class RawDrain(Contender):
    """Reference: the bytes through httpx with no SSE or JSON work at all."""

    key = "drain"
    label = "httpx iter_raw, bytes only (reference)"

    def __init__(self) -> None:
        self.http = httpx.Client(verify=False)

    def read(self, base_url: str) -> Collected:
        with self.http.stream("POST", f"{base_url}/chat/completions", json=REQUEST) as response:
            for _ in response.iter_raw():
                pass
        return Collected("", "")

    def close(self) -> None:
        self.http.close()


class Floor(Contender):
    """The least a Python client can do: httpx-sse events, ``json.loads``, two lists."""

    key = "floor"
    label = "floor: httpx + httpx-sse + json.loads"

    def __init__(self) -> None:
        self.http = httpx.Client(verify=False)

    def read(self, base_url: str) -> Collected:
        reasoning: list[str] = []
        answer: list[str] = []
        url = f"{base_url}/chat/completions"
        headers = {"Authorization": "Bearer k"}
        with httpx_sse.connect_sse(self.http, "POST", url, json=REQUEST, headers=headers) as source:
            for event in source.iter_sse():
                data = event.data
                if data == "[DONE]":
                    break
                choices = json.loads(data)["choices"]
                if not choices:
                    continue
                delta = choices[0]["delta"]
                thought = delta.get("reasoning_content")
                if thought:
                    reasoning.append(thought)
                text = delta.get("content")
                if text:
                    answer.append(text)
        return Collected("".join(reasoning), "".join(answer))

    def close(self) -> None:
        self.http.close()


class SdkLoop(Contender):
    """What a user writes with the openai SDK alone."""

    key = "sdk"
    label = "openai SDK loop (create(stream=True))"

    def __init__(self) -> None:
        self.clients: dict[str, openai.OpenAI] = {}

    def read(self, base_url: str) -> Collected:
        client = self.clients.get(base_url) or self.clients.setdefault(
            base_url, _sdk_client(base_url)
        )
        reasoning: list[str] = []
        answer: list[str] = []
        stream = client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
            stream_options={"include_usage": True},
        )
        with stream:
            for chunk in stream:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                if delta.content:
                    answer.append(delta.content)
                extra = delta.model_extra
                thought = extra.get("reasoning_content") if extra else None
                if thought:
                    reasoning.append(thought)
        return Collected("".join(reasoning), "".join(answer))

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


class PipeRun(Contender):
    """``OpenAIChatPipe.run`` with one streaming callback appending to a list."""

    def __init__(self, transport: str) -> None:
        self.transport = transport
        self.key = f"pipe_{transport}"
        self.label = f'OpenAIChatPipe(transport="{transport}").run'
        self.http = httpx.Client(verify=False) if transport == "httpx" else None
        self.pipes: dict[str, tuple[OpenAIChatPipe, list[str]]] = {}
        self.sdk_clients: list[openai.OpenAI] = []

    def _pipe(self, base_url: str) -> tuple[OpenAIChatPipe, list[str]]:
        if base_url not in self.pipes:
            if self.http is not None:
                pipe = OpenAIChatPipe(
                    MODEL, transport="httpx", base_url=base_url, api_key="k", http_client=self.http
                )
            else:
                client = _sdk_client(base_url)
                self.sdk_clients.append(client)
                pipe = OpenAIChatPipe(MODEL, client=client)
            sink: list[str] = []
            pipe.set_streaming_callback(sink.append)
            self.pipes[base_url] = (pipe, sink)
        return self.pipes[base_url]

    def read(self, base_url: str) -> Collected:
        pipe, sink = self._pipe(base_url)
        sink.clear()
        result = pipe.run(PROMPT)
        return Collected(result.model_reasoning, result.text, "".join(sink))

    def close(self) -> None:
        if self.http is not None:
            self.http.close()
        for client in self.sdk_clients:
            client.close()


class PipeArun(Contender):
    """``OpenAIChatPipe.arun`` on asyncio with the lean transport: one event loop per read."""

    key = "pipe_httpx_arun"
    label = 'OpenAIChatPipe(transport="httpx").arun'

    def read(self, base_url: str) -> Collected:
        sink: list[str] = []

        async def go() -> Collected:
            async with httpx.AsyncClient(verify=False) as http:
                pipe = OpenAIChatPipe(
                    MODEL, transport="httpx", base_url=base_url, api_key="k", http_client=http
                )
                pipe.set_streaming_callback(sink.append)
                result = await pipe.arun(PROMPT)
            return Collected(result.model_reasoning, result.text, "".join(sink))

        return anyio.run(go)


class LiteLLM(Contender):
    """``litellm.completion(model="openai/m", api_base=..., stream=True)``."""

    key = "litellm"
    label = "LiteLLM completion(stream=True)"

    def __init__(self) -> None:
        # Without this LiteLLM fetches its model price list from the network on import.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.telemetry = False
        self.litellm = litellm

    def read(self, base_url: str) -> Collected:
        reasoning: list[str] = []
        answer: list[str] = []
        stream = self.litellm.completion(
            model=f"openai/{MODEL}",
            api_base=base_url,
            api_key="k",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
            max_retries=0,
        )
        for chunk in stream:
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            if delta.content:
                answer.append(delta.content)
            thought = getattr(delta, "reasoning_content", None)
            if thought:
                reasoning.append(thought)
        return Collected("".join(reasoning), "".join(answer))


class PydanticAI(Contender):
    """pydantic-ai's ``OpenAIChatModel`` through ``model_request_stream_sync``.

    pydantic-ai is async inside: the sync call drives ``AsyncOpenAI`` on the thread's current
    event loop. Its cached HTTP client keeps connections bound to the loop that opened them,
    so every read runs on this row's own loop (the async pipe row's ``anyio.run`` in between
    would otherwise leave a fresh loop for each read, and a pooled connection on a dead one).
    """

    key = "pydantic_ai"
    label = "pydantic-ai model_request_stream_sync"

    def __init__(self) -> None:
        from pydantic_ai import ModelRequest
        from pydantic_ai.direct import model_request_stream_sync
        from pydantic_ai.messages import (
            PartDeltaEvent,
            PartStartEvent,
            TextPart,
            TextPartDelta,
            ThinkingPart,
            ThinkingPartDelta,
        )
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        self.request = ModelRequest.user_text_prompt(PROMPT)
        self.stream_sync = model_request_stream_sync
        self.model_class, self.provider_class = OpenAIChatModel, OpenAIProvider
        self.start_event, self.delta_event = PartStartEvent, PartDeltaEvent
        self.text_part, self.thinking_part = TextPart, ThinkingPart
        self.text_delta, self.thinking_delta = TextPartDelta, ThinkingPartDelta
        self.models: dict[str, Any] = {}
        self.loop = asyncio.new_event_loop()

    def read(self, base_url: str) -> Collected:
        model = self.models.get(base_url)
        if model is None:
            provider = self.provider_class(base_url=base_url, api_key="k")
            model = self.models[base_url] = self.model_class(MODEL, provider=provider)
        asyncio.set_event_loop(self.loop)
        try:
            return self._read(model)
        finally:
            asyncio.set_event_loop(None)

    def _read(self, model: Any) -> Collected:
        reasoning: list[str] = []
        answer: list[str] = []
        with self.stream_sync(model, [self.request]) as stream:
            for event in stream:
                if isinstance(event, self.delta_event):
                    delta = event.delta
                    if isinstance(delta, self.text_delta):
                        answer.append(delta.content_delta)
                    elif isinstance(delta, self.thinking_delta) and delta.content_delta:
                        reasoning.append(delta.content_delta)
                elif isinstance(event, self.start_event):
                    part = event.part
                    if isinstance(part, self.text_part):
                        answer.append(part.content)
                    elif isinstance(part, self.thinking_part):
                        reasoning.append(part.content)
        return Collected("".join(reasoning), "".join(answer))

    def close(self) -> None:
        self.loop.close()


def contenders() -> list[Contender | str]:
    """Every row in order; a tool that is not installed is its label, as a string."""
    rows: list[Contender | str] = [
        RawDrain(),
        Floor(),
        SdkLoop(),
        PipeRun("sdk"),
        PipeRun("httpx"),
        PipeArun(),
    ]
    for factory, label in ((LiteLLM, LiteLLM.label), (PydanticAI, PydanticAI.label)):
        try:
            rows.append(factory())
        except ImportError:
            rows.append(label)
    return rows


# -------------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class Result:
    key: str
    label: str
    long: Timing
    short: Timing
    peak_bytes: int
    tags_leaked: str
    reasoning_lost: str


def verdicts(collected: Collected, stream: Stream) -> tuple[str, str]:
    """("tags leaked?", "reasoning lost?") for what a tool handed over."""
    open_tag, close_tag = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG
    leaked = open_tag in collected.answer or close_tag in collected.answer
    tags = "yes" if leaked else "no"
    if collected.reasoning == stream.reasoning:
        lost = "no"
    elif not collected.reasoning:
        lost = "yes (in the answer)" if stream.reasoning in collected.answer else "yes"
    else:
        lost = "altered"
    if not leaked and collected.answer != stream.answer:
        tags = "no, answer altered"
    if collected.channel is not None:
        split = ReasoningStream.split(collected.channel, lossless=True)
        if (split.reasoning, split.text) != (stream.reasoning, stream.answer):
            lost += ", channel differs"
    return tags, lost


def timed(work: Callable[[], Collected]) -> tuple[Timing, Collected]:
    cpu, wall = time.process_time(), time.perf_counter()
    collected = work()
    return Timing(time.process_time() - cpu, time.perf_counter() - wall), collected


def best(timings: list[Timing]) -> Timing:
    return Timing(min(t.cpu for t in timings), min(t.wall for t in timings))


def repeats(first_cpu: float) -> int:
    """Reads of the long stream for a row whose first read took ``first_cpu`` seconds.

    Fast rows get more reads (their ratios are the close ones); a row slower than
    ``SLOW_SECONDS`` (a third-party stack at many times the SDK loop) is read once, so the
    whole run stays within a few minutes.
    """
    if first_cpu < FAST_SECONDS:
        return REPEAT + 2
    return REPEAT if first_cpu < SLOW_SECONDS else 1


_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_bytes(field: str) -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise LookupError(field)


def _release_free_memory() -> None:
    gc.collect()
    # Hand freed heap back to the OS so the next read's growth starts from a tight baseline;
    # without glibc the baseline is just looser.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def peak_rss_supported() -> bool:
    try:
        _CLEAR_REFS.write_text("5")
        _status_bytes("VmHWM")
    except (OSError, LookupError):
        return False
    return True


def rss_peak_read(work: Callable[[], Collected]) -> tuple[Timing, Collected, int]:
    """One timed read and how far the resident set's peak rose above where it started.

    Writing 5 to ``/proc/self/clear_refs`` resets Linux's high-water mark (``VmHWM``) to the
    current size, so this costs the read nothing, unlike tracemalloc.
    """
    _release_free_memory()
    _CLEAR_REFS.write_text("5")
    before = _status_bytes("VmRSS")
    timing, collected = timed(work)
    return timing, collected, max(_status_bytes("VmHWM") - before, 0)


def traced_peak(work: Callable[[], object]) -> int:
    """Peak bytes the Python heap grew by during ``work`` (tracemalloc; about 5x slower)."""
    gc.collect()
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@dataclass
class _Row:
    """A row being measured: its first read's findings and its long-stream samples so far."""

    contender: Contender
    short: Timing
    peak: int
    tags: str
    lost: str
    samples: list[Timing]
    wanted: int


def measure_case(
    case: str, rows: list[Contender | str], url: str, chunks: int, *, heap: bool
) -> list[Result | str]:
    stream = make_stream(case, chunks)
    short_chunks = chunks // GROWTH
    long_url, short_url = url + route(case, chunks), url + route(case, short_chunks)
    measuring: list[_Row | str] = []
    for contender in rows:
        if isinstance(contender, str):
            measuring.append(contender)
            continue

        def read_long(contender: Contender = contender) -> Collected:
            return contender.read(long_url)

        def read_short(contender: Contender = contender) -> Collected:
            return contender.read(short_url)

        # The short stream first: it also opens a connection and warms the client up.
        short = measure(read_short, repeat=SHORT_REPEAT)
        # The first long read is timed too and shows what the tool hands over.
        if heap:
            first, collected = timed(read_long)
            peak = traced_peak(read_long)
        else:
            first, collected, peak = rss_peak_read(read_long)
        drain = contender.key == "drain"
        tags, lost = ("-", "-") if drain else verdicts(collected, stream)
        row = _Row(contender, short, peak, tags, lost, [first], repeats(first.cpu))
        measuring.append(row)
    # The other long reads go round-robin, so a slow drift of the machine (the server's
    # process, the other core, frequency) hits every row alike instead of a block of them.
    pending = [row for row in measuring if isinstance(row, _Row)]
    for _ in range(max(row.wanted for row in pending) - 1):
        for row in pending:
            if len(row.samples) < row.wanted:
                row.samples.append(timed(partial(row.contender.read, long_url))[0])
    return [
        row
        if isinstance(row, str)
        else Result(
            row.contender.key,
            row.contender.label,
            best(row.samples),
            row.short,
            row.peak,
            row.tags,
            row.lost,
        )
        for row in measuring
    ]


# -------------------------------------------------------------------------------- reporting

HEADER = (
    f"| {'what':<42} | {'CPU/chunk':>10} | {'wall/chunk':>10} | {'mem peak':>10} | "
    f"{'vs floor':>8} | {'vs SDK':>7} | {'20x cost':>8} | {'tags leaked?':<18} | "
    f"{'reasoning lost?':<24} |\n"
    f"|{'-' * 44}|{'-' * 12}|{'-' * 12}|{'-' * 12}|{'-' * 10}|{'-' * 9}|{'-' * 10}|"
    f"{'-' * 20}|{'-' * 26}|"
)


def table_row(result: Result | str, floor: Timing, sdk: Timing, chunks: int) -> str:
    if isinstance(result, str):
        dash = "-"
        return (
            f"| {result:<42} | {'not installed':>10} | {dash:>10} | {dash:>10} | {dash:>8} | "
            f"{dash:>7} | {dash:>8} | {dash:<18} | {dash:<24} |"
        )
    long = result.long
    return (
        f"| {result.label:<42} | {long.cpu / chunks * 1e6:>7.1f} us | "
        f"{long.wall / chunks * 1e6:>7.1f} us | {result.peak_bytes / 2**20:>6.2f} MiB | "
        f"{long.cpu / floor.cpu:>7.2f}x | {long.cpu / sdk.cpu:>6.2f}x | "
        f"{long.cpu / result.short.cpu:>7.1f}x | {result.tags_leaked:<18} | "
        f"{result.reasoning_lost:<24} |"
    )


def report(case: str, results: list[Result | str], chunks: int) -> dict[str, float]:
    measured = {r.key: r for r in results if isinstance(r, Result)}
    floor, sdk = measured["floor"].long, measured["sdk"].long
    print(f"Providers, case {case} ({CASES[case]}): {chunks:,} chunks over loopback SSE")
    print(HEADER)
    for result in results:
        print(table_row(result, floor, sdk, chunks))
    figures: dict[str, float] = {}
    for key, result in measured.items():
        prefix = f"providers_{case}_{key}"
        figures[f"{prefix}_cpu_us"] = result.long.cpu / chunks * 1e6
        figures[f"{prefix}_vs_floor"] = result.long.cpu / floor.cpu
        figures[f"{prefix}_vs_sdk"] = result.long.cpu / sdk.cpu
        figures[f"{prefix}_20x_cost"] = result.long.cpu / result.short.cpu
        figures[f"{prefix}_mem_peak_mib"] = result.peak_bytes / 2**20
    sdk_pipe = figures[f"providers_{case}_pipe_sdk_vs_sdk"]
    lean_pipe = figures[f"providers_{case}_pipe_httpx_vs_floor"]
    print(
        f"targets: SDK-backed pipe {sdk_pipe:.3f}x the SDK loop (target <= 1.2x, "
        f"{'met' if sdk_pipe <= 1.2 else 'missed'}); lean transport {lean_pipe:.3f}x the floor "
        f"(target <= 1.3x, {'met' if lean_pipe <= 1.3 else 'missed'})\n"
    )
    return figures


def profile_pipes(url: str, chunks: int, top: int = 12) -> None:
    """cProfile both pipes over both cases; print our package's costliest functions.

    cProfile inflates small Python calls, so read the shares, not the absolute times.
    """
    package = f"{os.sep}reasoning_stream{os.sep}"
    for case in CASES:
        for transport in ("sdk", "httpx"):
            row = PipeRun(transport)
            base = url + route(case, chunks)
            row.read(base)
            profiler = cProfile.Profile()
            profiler.runcall(row.read, base)
            row.close()
            stats = pstats.Stats(profiler, stream=io.StringIO())
            table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
            ours = [(where, numbers) for where, numbers in table.items() if package in where[0]]
            own = sum(numbers[2] for _, numbers in ours)
            total = stats.total_tt  # type: ignore[attr-defined]
            print(
                f"cProfile, case {case}, {row.label}: {total:.2f} s in all, "
                f"{own:.2f} s ({own / total:.0%}) in reasoning_stream's own code"
            )
            ours.sort(key=lambda item: -item[1][2])
            for (filename, line, function), numbers in ours[:top]:
                _, calls, own_time, cumulative, _ = numbers
                where = filename.split(package, 1)[1]
                print(
                    f"  {own_time:6.3f} s own {cumulative:6.3f} s cum {calls:>7} calls  "
                    f"{where}:{line}({function})"
                )
            print()


def main(chunks: int = CHUNKS, *, profile: bool = False, heap: bool = False) -> dict[str, float]:
    """Print one table per case; return the figures for the README.

    ``heap=True`` measures tracemalloc's Python-heap peak instead of the resident set's
    (an extra, much slower read per row).
    """
    if chunks % GROWTH or chunks < 2 * GROWTH:
        raise ValueError(f"chunks must be a multiple of {GROWTH}, at least {2 * GROWTH}")
    heap = heap or not peak_rss_supported()
    rows = contenders()
    figures: dict[str, float] = {}
    try:
        with loopback([chunks, chunks // GROWTH]) as url:
            for case in CASES:
                results = measure_case(case, rows, url, chunks, heap=heap)
                figures.update(report(case, results, chunks))
            if profile:
                profile_pipes(url, chunks)
    finally:
        for row in rows:
            if isinstance(row, Contender):
                row.close()
    memory = (
        "tracemalloc's Python-heap peak during one read"
        if heap
        else "how far the resident set's peak rose during one read"
    )
    print(
        f"CPU is this process only (the server runs in a child process); mem peak is {memory}; "
        f"20x cost is the long stream's CPU over a {chunks // GROWTH:,}-chunk one's.\n"
    )
    return figures


# ====================================================================== every provider
#
# One table for every provider: each wire's floor (httpx + its framing + the stdlib's
# json.loads), the bare SDK loop, the pipe on the SDK and the lean pipe (stdlib JSON, and
# _json.loads_utf8 with the `fast` extra), sync and async, timed in interleaved rounds; ratios are
# taken within a round and reported as medians with their spread.

EVERY_CHUNKS = 4_000
EVERY_ROUNDS = 7
EVERY_MODELS = {
    "Anthropic": "claude-sonnet-4-6",
    "Responses": "o4-mini",
    "chat": "deepseek-reasoner",
    "Ollama": "qwen3",
    "Gemini": "gemini-2.5-flash",
    "OpenRouter": "deepseek/deepseek-r1",
    "Bedrock": "us.anthropic.claude-sonnet-4-20250514-v1:0",
}
KEY = "k-bench"


def serve_every_until_stdin_closes(chunks: int) -> None:
    """The child process for the every-provider table: one grown stream per provider."""
    from ._wires import WIRES, transcript_for

    server = WireServer()
    for wire in WIRES.values():
        server.add(transcript_for(wire, chunks))
    with server:
        print(server.url, flush=True)
        sys.stdin.read()


_EVERY_SCRIPT = (
    "import sys\n"
    "from benchmarks.bench_providers import serve_every_until_stdin_closes\n"
    "serve_every_until_stdin_closes(int(sys.argv[1]))\n"
)


@contextlib.contextmanager
def every_loopback(chunks: int) -> Iterator[str]:
    """The every-provider WireServer in a child process; yields its URL."""
    with child_server(_EVERY_SCRIPT, chunks) as url:
        yield url


# What the floors pull out of one decoded chunk: (reasoning piece, answer piece).


def _pick_anthropic(data: Any) -> tuple[str | None, str | None]:
    if data.get("type") != "content_block_delta":
        return None, None
    delta = data["delta"]
    kind = delta.get("type")
    if kind == "thinking_delta":
        return delta["thinking"], None
    return (None, delta["text"]) if kind == "text_delta" else (None, None)


def _pick_responses(data: Any) -> tuple[str | None, str | None]:
    kind = data.get("type")
    if kind == "response.reasoning_summary_text.delta":
        return data["delta"], None
    return (None, data["delta"]) if kind == "response.output_text.delta" else (None, None)


def _pick_chat(field: str) -> Callable[[Any], tuple[str | None, str | None]]:
    def pick(data: Any) -> tuple[str | None, str | None]:
        choices = data.get("choices")
        if not choices:
            return None, None
        delta = choices[0]["delta"]
        return delta.get(field), delta.get("content")

    return pick


def _pick_ollama(data: Any) -> tuple[str | None, str | None]:
    message = data.get("message") or {}
    return message.get("thinking"), message.get("content")


def _pick_gemini(data: Any) -> tuple[str | None, str | None]:
    reasoning: list[str] = []
    answer: list[str] = []
    for part in data["candidates"][0]["content"].get("parts", ()):
        text = part.get("text")
        if text:
            (reasoning if part.get("thought") else answer).append(text)
    return "".join(reasoning), "".join(answer)


def _pick_bedrock(data: Any) -> tuple[str | None, str | None]:
    delta = data.get("delta")
    if delta is None:
        return None, None
    thought = delta.get("reasoningContent")
    return (thought.get("text") if thought else None), delta.get("text")


PICKS: dict[str, Callable[[Any], tuple[str | None, str | None]]] = {
    "Anthropic": _pick_anthropic,
    "Responses": _pick_responses,
    "chat": _pick_chat("reasoning_content"),
    "Ollama": _pick_ollama,
    "Gemini": _pick_gemini,
    "OpenRouter": _pick_chat("reasoning"),
    "Bedrock": _pick_bedrock,
}


def _request(provider: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    """``(path below the API root, body, headers)`` of the floor's request."""
    model = EVERY_MODELS[provider]
    messages = [{"role": "user", "content": PROMPT}]
    if provider == "Anthropic":
        body = {"model": model, "max_tokens": 4096, "messages": messages, "stream": True}
        return "/v1/messages", body, {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    if provider == "Responses":
        body = {"model": model, "input": messages, "stream": True}
        return "/responses", body, {"Authorization": f"Bearer {KEY}"}
    if provider in ("chat", "OpenRouter"):
        body = {"model": model, "messages": messages, "stream": True}
        return "/chat/completions", body, {"Authorization": f"Bearer {KEY}"}
    if provider == "Ollama":
        return "/api/chat", {"model": model, "messages": messages, "stream": True}, {}
    if provider == "Gemini":
        body = {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}
        return f"/models/{model}:streamGenerateContent?alt=sse", body, {"x-goog-api-key": KEY}
    body = {"messages": [{"role": "user", "content": [{"text": PROMPT}]}]}
    return f"/model/{model}/converse-stream", body, {}


def _collect(pick: Callable[[Any], tuple[str | None, str | None]], chunks: Any) -> Collected:
    reasoning: list[str] = []
    answer: list[str] = []
    for data in chunks:
        thought, text = pick(data)
        if thought:
            reasoning.append(thought)
        if text:
            answer.append(text)
    return Collected("".join(reasoning), "".join(answer))


def _sse_datas(events: Any) -> Iterator[Any]:
    for event in events:
        data = event.data
        if not data:
            continue
        if data == "[DONE]":
            return
        yield json.loads(data)


def floor_read(provider: str, http: httpx.Client, base: str) -> Collected:
    """httpx + the wire's framing + ``json.loads``, the fields read straight off the dicts."""
    path, body, headers = _request(provider)
    pick = PICKS[provider]
    url = base + path
    if provider == "Ollama":
        with http.stream("POST", url, json=body) as response:
            return _collect(pick, (json.loads(line) for line in response.iter_lines() if line))
    if provider == "Bedrock":
        from botocore.eventstream import EventStreamBuffer

        def payloads(response: httpx.Response) -> Iterator[Any]:
            buffer = EventStreamBuffer()
            for raw in response.iter_raw():
                buffer.add_data(raw)
                for message in buffer:
                    yield json.loads(message.payload)

        with http.stream("POST", url, json=body) as response:
            return _collect(pick, payloads(response))
    with httpx_sse.connect_sse(http, "POST", url, json=body, headers=headers) as source:
        return _collect(pick, _sse_datas(source.iter_sse()))


async def afloor_read(provider: str, http: httpx.AsyncClient, base: str) -> Collected:
    """Async twin of :func:`floor_read` (not Bedrock: boto3 has no async client)."""
    path, body, headers = _request(provider)
    pick = PICKS[provider]
    reasoning: list[str] = []
    answer: list[str] = []

    def take(data: Any) -> None:
        thought, text = pick(data)
        if thought:
            reasoning.append(thought)
        if text:
            answer.append(text)

    if provider == "Ollama":
        async with http.stream("POST", base + path, json=body) as response:
            async for line in response.aiter_lines():
                if line:
                    take(json.loads(line))
        return Collected("".join(reasoning), "".join(answer))
    async with httpx_sse.aconnect_sse(
        http, "POST", base + path, json=body, headers=headers
    ) as source:
        async for event in source.aiter_sse():
            data = event.data
            if not data:
                continue
            if data == "[DONE]":
                break
            take(json.loads(data))
    return Collected("".join(reasoning), "".join(answer))


def _every_sdk_client(provider: str, base: str, *, asynchronous: bool = False) -> Any:
    """The official SDK's client for ``provider`` aimed at ``base``; ``None`` if it has none."""
    import anthropic
    import ollama

    if provider == "Anthropic":
        if asynchronous:
            http = anthropic.DefaultAsyncHttpxClient(verify=False)
            return anthropic.AsyncAnthropic(
                base_url=base, api_key=KEY, max_retries=0, http_client=http
            )
        http = anthropic.DefaultHttpxClient(verify=False)
        return anthropic.Anthropic(base_url=base, api_key=KEY, max_retries=0, http_client=http)
    if provider in ("Responses", "chat", "OpenRouter"):
        if asynchronous:
            http = openai.DefaultAsyncHttpxClient(verify=False)
            return openai.AsyncOpenAI(base_url=base, api_key=KEY, max_retries=0, http_client=http)
        return _every_openai_client(base)
    if provider == "Ollama":
        return (ollama.AsyncClient if asynchronous else ollama.Client)(host=base, verify=False)
    if provider == "Bedrock" and not asynchronous:
        import boto3
        from botocore.config import Config

        return boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=base,
            aws_access_key_id="AKIDEXAMPLE",
            aws_secret_access_key="bench-secret-key",
            config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
        )
    return None


def _every_openai_client(base: str) -> openai.OpenAI:
    http = openai.DefaultHttpxClient(verify=False)
    return openai.OpenAI(base_url=base, api_key=KEY, max_retries=0, http_client=http)


def sdk_loop(provider: str, client: Any) -> Collected:
    """What a user writes with the provider's SDK alone, sync."""
    model = EVERY_MODELS[provider]
    messages = [{"role": "user", "content": PROMPT}]
    reasoning: list[str] = []
    answer: list[str] = []
    if provider == "Anthropic":
        stream = client.messages.create(
            model=model, max_tokens=4096, messages=messages, stream=True
        )
        with stream:
            for event in stream:
                if event.type == "content_block_delta":
                    delta = event.delta
                    if delta.type == "thinking_delta":
                        reasoning.append(delta.thinking)
                    elif delta.type == "text_delta":
                        answer.append(delta.text)
    elif provider == "Responses":
        with client.responses.create(model=model, input=messages, stream=True) as stream:
            for event in stream:
                if event.type == "response.reasoning_summary_text.delta":
                    reasoning.append(event.delta)
                elif event.type == "response.output_text.delta":
                    answer.append(event.delta)
    elif provider in ("chat", "OpenRouter"):
        field = "reasoning_content" if provider == "chat" else "reasoning"
        with client.chat.completions.create(model=model, messages=messages, stream=True) as stream:
            for chunk in stream:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                if delta.content:
                    answer.append(delta.content)
                extra = delta.model_extra
                thought = extra.get(field) if extra else None
                if thought:
                    reasoning.append(thought)
    elif provider == "Ollama":
        for part in client.chat(model=model, messages=messages, stream=True):
            if part.message.thinking:
                reasoning.append(part.message.thinking)
            if part.message.content:
                answer.append(part.message.content)
    elif provider == "Bedrock":
        reply = client.converse_stream(
            modelId=model, messages=[{"role": "user", "content": [{"text": PROMPT}]}]
        )
        for event in reply["stream"]:
            block = event.get("contentBlockDelta")
            if block is None:
                continue
            delta = block["delta"]
            thought = delta.get("reasoningContent")
            if thought and thought.get("text"):
                reasoning.append(thought["text"])
            if delta.get("text"):
                answer.append(delta["text"])
    return Collected("".join(reasoning), "".join(answer))


async def asdk_loop(provider: str, client: Any) -> Collected:
    """Async twin of :func:`sdk_loop` (not Bedrock)."""
    model = EVERY_MODELS[provider]
    messages = [{"role": "user", "content": PROMPT}]
    reasoning: list[str] = []
    answer: list[str] = []
    if provider == "Anthropic":
        stream = await client.messages.create(
            model=model, max_tokens=4096, messages=messages, stream=True
        )
        async with stream:
            async for event in stream:
                if event.type == "content_block_delta":
                    delta = event.delta
                    if delta.type == "thinking_delta":
                        reasoning.append(delta.thinking)
                    elif delta.type == "text_delta":
                        answer.append(delta.text)
    elif provider == "Responses":
        stream = await client.responses.create(model=model, input=messages, stream=True)
        async with stream:
            async for event in stream:
                if event.type == "response.reasoning_summary_text.delta":
                    reasoning.append(event.delta)
                elif event.type == "response.output_text.delta":
                    answer.append(event.delta)
    elif provider in ("chat", "OpenRouter"):
        field = "reasoning_content" if provider == "chat" else "reasoning"
        stream = await client.chat.completions.create(model=model, messages=messages, stream=True)
        async with stream:
            async for chunk in stream:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                if delta.content:
                    answer.append(delta.content)
                extra = delta.model_extra
                thought = extra.get(field) if extra else None
                if thought:
                    reasoning.append(thought)
    elif provider == "Ollama":
        async for part in await client.chat(model=model, messages=messages, stream=True):
            if part.message.thinking:
                reasoning.append(part.message.thinking)
            if part.message.content:
                answer.append(part.message.content)
    return Collected("".join(reasoning), "".join(answer))


def every_pipe(provider: str, base: str, client: Any, *, lean: bool) -> Any:
    """The provider's pipe on ``client`` (an SDK client, or httpx for ``lean``)."""
    from reasoning_stream.providers import (
        AnthropicPipe,
        BedrockPipe,
        GeminiPipe,
        OllamaPipe,
        OpenAIResponsesPipe,
        OpenRouterPipe,
    )

    model = EVERY_MODELS[provider]
    if provider == "Anthropic":
        if lean:
            return AnthropicPipe(
                model, transport="httpx", http_client=client, base_url=base, api_key=KEY
            )
        return AnthropicPipe(model, client=client)
    if provider == "Responses":
        if lean:
            return OpenAIResponsesPipe(
                model, transport="httpx", http_client=client, base_url=base, api_key=KEY
            )
        return OpenAIResponsesPipe(model, client=client)
    if provider == "chat":
        if lean:
            return OpenAIChatPipe(
                model, transport="httpx", http_client=client, base_url=base, api_key=KEY
            )
        return OpenAIChatPipe(model, client=client)
    if provider == "Ollama":
        if lean:
            return OllamaPipe(model, transport="httpx", http_client=client, base_url=base)
        return OllamaPipe(model, client=client)
    if provider == "Gemini":
        return GeminiPipe(model, client=client, base_url=base, api_key=KEY)
    if provider == "OpenRouter":
        if lean:
            return OpenRouterPipe(model, http_client=client, base_url=base, api_key=KEY)
        # OpenRouter through the openai SDK: the chat pipe reads `delta.reasoning` too.
        return OpenAIChatPipe(model, client=client)
    return BedrockPipe(model, client=client)


HAS_SDK = {"Anthropic", "Responses", "chat", "Ollama", "OpenRouter", "Bedrock"}
"""Providers with an SDK loop (Gemini has no SDK here; OpenRouter's is the openai SDK)."""
HAS_LEAN = {"Anthropic", "Responses", "chat", "Ollama", "Gemini", "OpenRouter"}
"""Providers with an httpx pipe (Bedrock stays on boto3)."""


@contextlib.contextmanager
def stdlib_json() -> Iterator[None]:
    """Make every stream path decode with the stdlib's ``json.loads`` for a while (what
    ``reasoning_stream._json`` does without msgspec)."""
    import importlib

    from reasoning_stream._json import stdlib_loads_utf8
    from reasoning_stream.providers._transports import base as _transports
    from reasoning_stream.providers._transports import lean as _oneshot
    from reasoning_stream.providers.bedrock import translate as bedrock_translate

    gemini: Any = importlib.import_module("reasoning_stream.providers.gemini")
    saved = (_transports.loads_utf8, gemini.loads_utf8, bedrock_translate.loads, _oneshot.loads)
    _transports.loads_utf8 = gemini.loads_utf8 = stdlib_loads_utf8
    bedrock_translate.loads = _oneshot.loads = json.loads
    try:
        yield
    finally:
        (_transports.loads_utf8, gemini.loads_utf8, bedrock_translate.loads, _oneshot.loads) = saved


@dataclass
class EveryRow:
    """One contender of the every-provider table: ``read()`` streams once, start to end."""

    provider: str
    loop: str
    """``"sync"`` or ``"async"``."""
    role: str
    """``floor``, ``sdk``, ``sdk_pipe``, ``lean_json`` or ``lean_fast``."""
    read: Callable[[], Collected]


def _pipe_read(pipe: Any) -> Callable[[], Collected]:
    sink: list[str] = []
    pipe.set_streaming_callback(sink.append)

    def read() -> Collected:
        sink.clear()
        result = pipe.run(PROMPT)
        return Collected(result.model_reasoning, result.text, "".join(sink))

    return read


def _apipe_read(provider: str, base: str, *, lean: bool) -> Callable[[], Collected]:
    def read() -> Collected:
        async def go() -> Collected:
            sink: list[str] = []
            client: Any
            if lean:
                client = httpx.AsyncClient(verify=False, timeout=60)
            else:
                client = _every_sdk_client(provider, base, asynchronous=True)
            try:
                pipe = every_pipe(provider, base, client, lean=lean)
                pipe.set_streaming_callback(sink.append)
                result = await pipe.arun(PROMPT)
            finally:
                close = getattr(client, "aclose", None) or client.close
                closed = close()
                if closed is not None:
                    await closed
            return Collected(result.model_reasoning, result.text, "".join(sink))

        return anyio.run(go)

    return read


def _bedrock_apipe_read(pipe: Any) -> Callable[[], Collected]:
    """Bedrock's ``arun()`` on the sync rows' boto3 client, one event loop per read.

    boto3 has no async client: its client is sync and bound to no event loop, and the bare
    loop this row is compared with (the sync one) reuses it. So the pipe does too; building a
    boto3 client (about 2 ms, 0.03x of this stream) is no part of reading a stream.
    """
    sink: list[str] = []
    pipe.set_streaming_callback(sink.append)

    def read() -> Collected:
        sink.clear()
        result = anyio.run(pipe.arun, PROMPT)
        return Collected(result.model_reasoning, result.text, "".join(sink))

    return read


def _with_stdlib_json(read: Callable[[], Collected]) -> Callable[[], Collected]:
    def wrapped() -> Collected:
        with stdlib_json():
            return read()

    return wrapped


def every_rows(url: str) -> tuple[list[EveryRow], list[Callable[[], None]]]:
    """Every contender of every provider, and how to release their clients."""
    from reasoning_stream._json import BACKEND

    from ._wires import WIRES

    rows: list[EveryRow] = []
    closers: list[Callable[[], None]] = []
    for provider, wire in WIRES.items():
        base = url + wire.base
        http = httpx.Client(verify=False, timeout=60)
        closers.append(http.close)
        rows.append(EveryRow(provider, "sync", "floor", partial(floor_read, provider, http, base)))
        if provider in HAS_SDK:
            client = _every_sdk_client(provider, base)
            closers.append(client.close)
            rows.append(EveryRow(provider, "sync", "sdk", partial(sdk_loop, provider, client)))
            pipe = every_pipe(provider, base, client, lean=False)
            rows.append(EveryRow(provider, "sync", "sdk_pipe", _pipe_read(pipe)))
        if provider in HAS_LEAN:
            lean_http = httpx.Client(verify=False, timeout=60)
            closers.append(lean_http.close)
            read = _pipe_read(every_pipe(provider, base, lean_http, lean=True))
            rows.append(EveryRow(provider, "sync", "lean_json", _with_stdlib_json(read)))
            if BACKEND != "json":
                rows.append(EveryRow(provider, "sync", "lean_fast", read))
        # async: every read builds its client on its own event loop, and closes it
        if provider != "Bedrock":

            def afloor(provider: str = provider, base: str = base) -> Collected:
                async def go() -> Collected:
                    async with httpx.AsyncClient(verify=False, timeout=60) as client:
                        return await afloor_read(provider, client, base)

                return anyio.run(go)

            rows.append(EveryRow(provider, "async", "floor", afloor))
        if provider in HAS_SDK and provider != "Bedrock":

            def asdk(provider: str = provider, base: str = base) -> Collected:
                async def go() -> Collected:
                    client = _every_sdk_client(provider, base, asynchronous=True)
                    try:
                        return await asdk_loop(provider, client)
                    finally:
                        closed = client.close()
                        if closed is not None:
                            await closed

                return anyio.run(go)

            rows.append(EveryRow(provider, "async", "sdk", asdk))
        if provider == "Bedrock":
            apipe = _bedrock_apipe_read(every_pipe(provider, base, client, lean=False))
            rows.append(EveryRow(provider, "async", "sdk_pipe", apipe))
        elif provider in HAS_SDK:
            rows.append(
                EveryRow(provider, "async", "sdk_pipe", _apipe_read(provider, base, lean=False))
            )
        if provider in HAS_LEAN:
            aread = _apipe_read(provider, base, lean=True)
            rows.append(EveryRow(provider, "async", "lean_json", _with_stdlib_json(aread)))
            if BACKEND != "json":
                rows.append(EveryRow(provider, "async", "lean_fast", aread))
    return rows, closers


def _verdict(collected: Collected, reasoning: str, answer: str) -> str:
    if (collected.reasoning, collected.answer) != (reasoning, answer):
        return "output differs"
    if collected.channel is not None:
        split = ReasoningStream.split(collected.channel, lossless=True)
        if (split.reasoning, split.text) != (reasoning, answer):
            return "channel differs"
    return "ok"


RATIOS = {
    "sdk_pipe": ("sdk", "SDK pipe / SDK loop"),
    "lean_json": ("floor", "lean pipe / floor"),
    "lean_fast": ("floor", "lean pipe, fast / floor"),
}


def every_provider(
    chunks: int = EVERY_CHUNKS, rounds: int = EVERY_ROUNDS
) -> tuple[str, dict[str, float]]:
    """Measure every provider's rows in interleaved rounds; the Markdown table and figures."""
    from ._rounds import cpu_seconds, median, spread
    from ._wires import expected

    reasoning, answer = expected(chunks)
    cpu: dict[tuple[str, str, str], list[float]] = {}
    verdicts: dict[tuple[str, str], str] = {}
    with every_loopback(chunks) as url:
        rows, closers = every_rows(url)
        try:
            for row in rows:  # warm up (connections, imports) and check what each hands over
                verdict = _verdict(row.read(), reasoning, answer)
                if verdict != "ok":
                    verdicts[(row.provider, row.loop)] = f"{row.role}: {verdict}"
            for _ in range(rounds):
                for row in rows:
                    seconds = cpu_seconds(row.read)
                    cpu.setdefault((row.provider, row.loop, row.role), []).append(seconds)
        finally:
            for close in closers:
                close()
    figures: dict[str, float] = {}
    lines = [
        "| provider | loop | floor CPU/chunk | SDK loop CPU/chunk | SDK pipe / SDK loop "
        "| lean pipe / floor | lean pipe with `fast` / floor | output |",
        "|---|---|---|---|---|---|---|---|",
    ]
    from ._wires import WIRES

    for provider in WIRES:
        for loop in ("sync", "async"):
            samples = {
                role: cpu[(provider, loop, role)]
                for role in ("floor", "sdk", "sdk_pipe", "lean_json", "lean_fast")
                if (provider, loop, role) in cpu
            }
            if not samples:
                continue
            if provider == "Bedrock" and loop == "async":
                # boto3 has no async client: arun reads the sync one in worker threads.
                samples["sdk"] = cpu[(provider, "sync", "sdk")]
            cells = []
            for role in ("floor", "sdk"):
                values = samples.get(role)
                cells.append(
                    spread([v / chunks * 1e6 for v in values], "{:.1f}") + " us" if values else "-"
                )
            for role, (base_role, _) in RATIOS.items():
                if role not in samples or base_role not in samples:
                    cells.append("-")
                    continue
                ratios = [a / b for a, b in zip(samples[role], samples[base_role], strict=True)]
                cells.append(spread(ratios) + "x")
                figures[f"every_{provider}_{loop}_{role}"] = median(ratios)
            verdict = verdicts.get((provider, loop), "ok")
            lines.append(f"| {provider} | {loop} | " + " | ".join(cells) + f" | {verdict} |")
    table = "\n".join(lines)
    return table, figures


def every_goals(figures: dict[str, float]) -> str:
    """Which goals the medians meet."""
    checks = [
        ("SDK pipes within 1.2x of the SDK loop", "sdk_pipe", 1.2),
        ("lean pipes within 1.3x of the floor", "lean_json", 1.3),
        ("lean pipes with `fast` at or under 1.0x the stdlib floor", "lean_fast", 1.0),
    ]
    out = []
    for label, role, limit in checks:
        values = {k: v for k, v in figures.items() if k.endswith("_" + role)}
        if not values:
            continue
        missed = sorted(k.removeprefix("every_").removesuffix("_" + role)
                        for k, v in values.items() if v > limit)  # fmt: skip
        out.append(
            f"{label}: {len(values) - len(missed)} of {len(values)} met"
            + (f" (missed: {', '.join(missed)})" if missed else "")
        )
    return "\n".join(out)


def main_every(chunks: int = EVERY_CHUNKS, rounds: int = EVERY_ROUNDS) -> dict[str, float]:
    """Print the every-provider table (medians of interleaved rounds, spreads in brackets)."""
    from reasoning_stream._json import BACKEND

    table, figures = every_provider(chunks, rounds)
    print(
        f"Every provider: {chunks:,} deltas over loopback (half reasoning, half answer), "
        f"{rounds} interleaved rounds, median [low-high] of per-round ratios; "
        f"fast JSON backend: {BACKEND}"
    )
    print(table)
    print(every_goals(figures) + "\n")
    return figures


# ------------------------------------------------------------------------ one-shot calls
# stream=False: one non-streaming request, the whole answer in one JSON body. Per provider, the
# pipe with its SDK client against the bare SDK call, and the lean pipe against httpx +
# json.loads; sync and async (an async sample runs its calls on one event loop and one client).
# A sample is ONESHOT_CALLS calls: per-request overhead (headers, client plumbing, one
# translation) dominates.

ONESHOT_PROVIDERS = ("Anthropic", "chat", "Ollama")
ONESHOT_CHUNKS = 2_000
"""The body carries the text of a stream of this many deltas (about 4 KB reasoning, 4 KB answer)."""
ONESHOT_CALLS = 20
ONESHOT_ROUNDS = 7


def oneshot_body(provider: str, reasoning: str, answer: str) -> tuple[str, dict[str, Any]]:
    """``(path below the wire's prefix, body)``: the provider's documented non-streaming reply."""
    model = EVERY_MODELS[provider]
    if provider == "Anthropic":
        return "/v1/messages", {
            "id": "msg_bench", "type": "message", "role": "assistant", "model": model,
            "content": [
                {"type": "thinking", "thinking": reasoning, "signature": "c2lnLWJlbmNo"},
                {"type": "text", "text": answer},
            ],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 2048},
        }  # fmt: skip
    if provider == "chat":
        message = {"role": "assistant", "content": answer, "reasoning_content": reasoning}
        return "/v1/chat/completions", {
            "id": "chatcmpl-bench", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 2048, "total_tokens": 2060},
        }  # fmt: skip
    return "/api/chat", {
        "model": model, "created_at": "2025-06-01T00:00:00Z",
        "message": {"role": "assistant", "content": answer, "thinking": reasoning},
        "done": True, "done_reason": "stop", "total_duration": 1000, "load_duration": 10,
        "prompt_eval_count": 12, "prompt_eval_duration": 100, "eval_count": 2048,
        "eval_duration": 800,
    }  # fmt: skip


def serve_oneshot_until_stdin_closes(chunks: int) -> None:
    """The child process for the one-shot table: one JSON body per provider."""
    from ._wires import WIRES, expected

    reasoning, answer = expected(chunks)
    server = WireServer()
    for provider in ONESHOT_PROVIDERS:
        path, body = oneshot_body(provider, reasoning, answer)
        server.add(
            Transcript.from_dict(
                {"name": f"oneshot-{provider}", "path": WIRES[provider].prefix + path,
                 "format": "json", "events": [body]}
            )
        )  # fmt: skip
    with server:
        print(server.url, flush=True)
        sys.stdin.read()


_ONESHOT_SCRIPT = (
    "import sys\n"
    "from benchmarks.bench_providers import serve_oneshot_until_stdin_closes\n"
    "serve_oneshot_until_stdin_closes(int(sys.argv[1]))\n"
)


def oneshot_floor(provider: str, http: httpx.Client, base: str) -> Collected:
    """httpx + ``json.loads`` of the one body, the two fields read straight off the dict."""
    path, body, headers = _request(provider)
    body = {**body, "stream": False}
    return oneshot_collect(
        provider, json.loads(http.post(base + path, json=body, headers=headers).content)
    )


def oneshot_collect(provider: str, data: Any) -> Collected:
    """The reasoning and the answer read straight off a decoded one-shot body."""
    if provider == "Anthropic":
        blocks = data["content"]
        return Collected(
            "".join(b["thinking"] for b in blocks if b["type"] == "thinking"),
            "".join(b["text"] for b in blocks if b["type"] == "text"),
        )
    message = data["choices"][0]["message"] if provider == "chat" else data["message"]
    thought = message.get("reasoning_content" if provider == "chat" else "thinking")
    return Collected(thought or "", message.get("content") or "")


def _oneshot_sdk_reply(provider: str, reply: Any) -> Collected:
    if provider == "Anthropic":
        return Collected(
            "".join(b.thinking for b in reply.content if b.type == "thinking"),
            "".join(b.text for b in reply.content if b.type == "text"),
        )
    if provider == "chat":
        message = reply.choices[0].message
        extra = message.model_extra or {}
        return Collected(extra.get("reasoning_content") or "", message.content or "")
    return Collected(reply.message.thinking or "", reply.message.content or "")


def _oneshot_sdk_call(provider: str, client: Any) -> Any:
    model = EVERY_MODELS[provider]
    if provider == "Anthropic":
        return client.messages.create(model=model, max_tokens=4096, messages=MESSAGES)
    if provider == "chat":
        return client.chat.completions.create(model=model, messages=MESSAGES)
    return client.chat(model=model, messages=MESSAGES, stream=False)


def oneshot_sdk(provider: str, client: Any) -> Collected:
    """What a user writes with the SDK alone: one non-streaming call, two fields read."""
    return _oneshot_sdk_reply(provider, _oneshot_sdk_call(provider, client))


def _oneshot_pipe(provider: str, base: str, client: Any, *, lean: bool) -> Any:
    pipe = every_pipe(provider, base, client, lean=lean)
    pipe.stream = False
    return pipe


async def _oneshot_acall(provider: str, base: str, role: str, client: Any) -> Collected:
    if role == "floor":
        path, body, headers = _request(provider)
        response = await client.post(base + path, json={**body, "stream": False}, headers=headers)
        return oneshot_collect(provider, json.loads(response.content))
    if role == "sdk":
        return _oneshot_sdk_reply(provider, await _oneshot_sdk_call(provider, client))
    pipe = _oneshot_pipe(provider, base, client, lean=role in ("lean_json", "lean_fast"))
    result = await pipe.arun(PROMPT)
    return Collected(result.model_reasoning, result.text)


def _oneshot_async(provider: str, base: str, role: str) -> Collected:
    """ONESHOT_CALLS async calls on one event loop and one client (built and closed once)."""

    async def go() -> Collected:
        client: Any
        if role in ("floor", "lean_json", "lean_fast"):
            client = httpx.AsyncClient(verify=False, timeout=60)
        else:
            client = _every_sdk_client(provider, base, asynchronous=True)
        try:
            for _ in range(ONESHOT_CALLS):
                collected = await _oneshot_acall(provider, base, role, client)
        finally:
            closing = getattr(client, "aclose", None) or client.close
            closed = closing()
            if closed is not None:
                await closed
        return collected

    return anyio.run(go)


def oneshot_rows(url: str) -> tuple[list[EveryRow], list[Callable[[], None]]]:
    """The one-shot contenders of every provider of :data:`ONESHOT_PROVIDERS`."""
    from reasoning_stream._json import BACKEND

    from ._wires import WIRES

    rows: list[EveryRow] = []
    closers: list[Callable[[], None]] = []
    for provider in ONESHOT_PROVIDERS:
        base = url + WIRES[provider].base
        http = httpx.Client(verify=False, timeout=60)
        sdk = _every_sdk_client(provider, base)
        lean_http = httpx.Client(verify=False, timeout=60)
        closers += [http.close, sdk.close, lean_http.close]
        pipe = _oneshot_pipe(provider, base, sdk, lean=False)
        lean = _oneshot_pipe(provider, base, lean_http, lean=True)
        rows += [
            EveryRow(provider, "sync", "floor", partial(oneshot_floor, provider, http, base)),
            EveryRow(provider, "sync", "sdk", partial(oneshot_sdk, provider, sdk)),
            EveryRow(provider, "sync", "sdk_pipe", _pipe_read(pipe)),
            EveryRow(provider, "sync", "lean_json", _with_stdlib_json(_pipe_read(lean))),
        ]
        if BACKEND != "json":
            fast = _oneshot_pipe(provider, base, lean_http, lean=True)
            rows.append(EveryRow(provider, "sync", "lean_fast", _pipe_read(fast)))
        for role in ("floor", "sdk", "sdk_pipe", "lean_json", "lean_fast"):
            if role == "lean_fast" and BACKEND == "json":
                continue
            read = partial(_oneshot_async, provider, base, role)
            rows.append(
                EveryRow(
                    provider,
                    "async",
                    role,
                    _with_stdlib_json(read) if role == "lean_json" else read,
                )
            )
    return rows, closers


def oneshot_table(
    chunks: int = ONESHOT_CHUNKS, rounds: int = ONESHOT_ROUNDS
) -> tuple[str, dict[str, float]]:
    """One-shot calls in interleaved rounds; the Markdown table and the median ratios."""
    from ._rounds import cpu_seconds, median, spread
    from ._wires import expected

    calls = ONESHOT_CALLS
    reasoning, answer = expected(chunks)
    cpu: dict[tuple[str, str, str], list[float]] = {}
    bad: dict[tuple[str, str], str] = {}
    with child_server(_ONESHOT_SCRIPT, chunks) as url:
        rows, closers = oneshot_rows(url)
        try:
            for row in rows:
                verdict = _verdict(row.read(), reasoning, answer)
                if verdict != "ok":
                    bad[(row.provider, row.loop)] = f"{row.role}: {verdict}"

            for _ in range(rounds):
                for row in rows:
                    # An async row makes its ONESHOT_CALLS calls on one event loop itself.
                    times = 1 if row.loop == "async" else calls

                    def many(read: Callable[[], Collected] = row.read, times: int = times) -> None:
                        for _ in range(times):
                            read()

                    seconds = cpu_seconds(many)
                    cpu.setdefault((row.provider, row.loop, row.role), []).append(seconds)
        finally:
            for close in closers:
                close()
    figures: dict[str, float] = {}
    lines = [
        "| provider | loop | floor CPU/call | SDK call CPU/call | one-shot SDK pipe / SDK call "
        "| one-shot lean pipe / floor | one-shot lean pipe with `fast` / floor | output |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for provider in ONESHOT_PROVIDERS:
        for loop in ("sync", "async"):
            samples = {r: v for (p, lp, r), v in cpu.items() if (p, lp) == (provider, loop)}
            cells = []
            for role in ("floor", "sdk"):
                values = samples.get(role)
                cells.append(
                    spread([v / calls * 1e3 for v in values], "{:.2f}") + " ms" if values else "-"
                )
            for role, base_role in (
                ("sdk_pipe", "sdk"),
                ("lean_json", "floor"),
                ("lean_fast", "floor"),
            ):
                if role not in samples or base_role not in samples:
                    cells.append("-")
                    continue
                ratios = [a / b for a, b in zip(samples[role], samples[base_role], strict=True)]
                cells.append(spread(ratios) + "x")
                figures[f"oneshot_{provider}_{loop}_{role}"] = median(ratios)
            verdict = bad.get((provider, loop), "ok")
            lines.append(f"| {provider} | {loop} | " + " | ".join(cells) + f" | {verdict} |")
    return "\n".join(lines), figures


def main_oneshot(rounds: int = ONESHOT_ROUNDS) -> dict[str, float]:
    """Print the one-shot table (medians of interleaved rounds, spreads in brackets)."""
    table, figures = oneshot_table(rounds=rounds)
    print(
        f"One-shot calls (stream=False): one JSON body of {ONESHOT_CHUNKS:,} deltas' text, "
        f"{ONESHOT_CALLS} calls a sample, {rounds} interleaved rounds, median [low-high]"
    )
    print(table + "\n")
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=CHUNKS)
    parser.add_argument("--profile", action="store_true", help="cProfile the two pipes")
    parser.add_argument("--heap", action="store_true", help="tracemalloc peaks (slow)")
    parser.add_argument(
        "--every", action="store_true", help="only the every-provider table (--chunks, --rounds)"
    )
    parser.add_argument(
        "--oneshot", action="store_true", help="only the one-shot table (stream=False; --rounds)"
    )
    parser.add_argument("--rounds", type=int, default=EVERY_ROUNDS)
    arguments = parser.parse_args()
    if arguments.oneshot:
        main_oneshot(arguments.rounds)
    elif arguments.every:
        main_every(
            EVERY_CHUNKS if arguments.chunks == CHUNKS else arguments.chunks, arguments.rounds
        )
    else:
        main(arguments.chunks, profile=arguments.profile, heap=arguments.heap)
        main_every(rounds=arguments.rounds)
        main_oneshot(arguments.rounds)
