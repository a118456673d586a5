"""Faults: resets, HTTP errors, slow and failing callbacks, cancellation at every await point.

Every run here ends badly or is pushed hard, and every one must still end the way the contract
says: a ``ProviderError`` (or a cancelled status), the segment closed in every channel, what was
read kept on the result, the HTTP response closed, and no unclosed-resource warning.
"""

from __future__ import annotations

import copy
import gc
import logging
import socket
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import anyio
import pytest

from reasoning_stream import (
    Event,
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ReasoningStream,
    TextDelta,
)
from reasoning_stream._exceptions import CallbackError, ProviderError
from reasoning_stream._pipe import Pipe
from reasoning_stream.testing import Reply, ScriptedPipe, Transcript, WireServer

from . import (
    CLOSE,
    FLAVOURS,
    OPEN,
    RESOURCE_CHECKS,
    TARGETS,
    Flavour,
    Outcome,
    Target,
    assert_balanced,
    check_outcome,
    collected_garbage,  # noqa: F401 - the fixture RESOURCE_CHECKS names
    fresh_prefix,
    frozen_survivors,  # noqa: F401 - the fixture collected_garbage needs
    opaque_payloads,
    open_connections,
    play,
    release,
    transcript,
    under,
    with_events,
)

pytestmark = RESOURCE_CHECKS

TARGET_NAMES = sorted(TARGETS)
CANCELLED = ("cancelled_before_answer", "cancelled_after_partial_answer")


@pytest.fixture(scope="module")
def wire() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


def assert_channel_is_capture(chunks: list[str], outcome_result: Any) -> None:
    """Markers balanced, and the channel splits back into exactly what the result holds."""
    channel = "".join(chunks)
    assert_balanced(channel)
    split = ReasoningStream.split(channel, lossless=True)
    assert (split.reasoning, split.text) == (outcome_result.model_reasoning, outcome_result.text)


@pytest.fixture
def no_resource_warnings() -> Iterator[None]:
    """Fail the test if any unclosed socket, response, client or async generator is collected
    during it: stricter than RESOURCE_CHECKS, which lets trio's async-generator notes pass."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield
        gc.collect()
    leaks = [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaks, [str(w.message) for w in leaks]


# ------------------------------------------------------------------- connection resets


_cut_points: dict[str, dict[str, int]] = {}


def cut_points(wire: WireServer, target: Target) -> dict[str, int]:
    """Events to send before the reset: none, a few into the reasoning, a few into the answer.

    Found by playing clean prefixes of the showcase transcript, so no provider's event
    layout is hard-coded here.
    """
    if target.name not in _cut_points:
        original = transcript(target.showcase)
        points = {"before the first byte": 0}
        for n in range(1, len(original.events)):
            clean = play(
                wire,
                target,
                original.name,
                Reply(with_events(original, original.events[:n])),
                "sync",
            )
            if clean.result.model_reasoning and not clean.result.text:
                points.setdefault("mid-reasoning", n)
            if clean.result.text:
                points.setdefault("mid-answer", n)
        assert set(points) == {"before the first byte", "mid-reasoning", "mid-answer"}, points
        _cut_points[target.name] = points
    return _cut_points[target.name]


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_connection_reset(
    wire: WireServer, target_name: str, flavour: Flavour, no_resource_warnings: None
) -> None:
    """Reset before the first byte, mid-reasoning and mid-answer: a ProviderError, nothing lost."""
    target = TARGETS[target_name]
    original = transcript(target.showcase)
    for where, n in cut_points(wire, target).items():
        outcome = play(wire, target, original.name, Reply(original, disconnect_after=n), flavour)
        check_outcome(outcome, provider=target.provider, secrets=opaque_payloads(original))
        assert isinstance(outcome.error, ProviderError), where
        assert outcome.result.status == "error"
        clean = play(
            wire, target, original.name, Reply(with_events(original, original.events[:n])), "sync"
        )
        assert outcome.result.text == clean.result.text, where
        assert outcome.result.model_reasoning == clean.result.model_reasoning, where
        channel = "".join(outcome.chunks)
        if where == "before the first byte":
            assert channel == ""
        if where == "mid-reasoning":
            # The open segment was closed for the callbacks before the error surfaced.
            assert channel.startswith(OPEN) and channel.endswith(CLOSE), channel


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_connection_refused(target_name: str, flavour: Flavour, no_resource_warnings: None) -> None:
    target = TARGETS[target_name]
    url = f"http://127.0.0.1:{closed_port()}"

    async def attempt() -> Pipe:
        built = target.build(url, flavour, 2.0, target.showcase)
        try:
            if flavour == "sync":
                await anyio.to_thread.run_sync(built.pipe.run, "hi")
            else:
                await built.pipe.arun("hi")
        finally:
            closed = built.close()
            if closed is not None:
                await closed
        return built.pipe

    with pytest.raises(ProviderError) as caught:
        anyio.run(attempt, backend="trio" if flavour == "trio" else "asyncio")
    error = caught.value
    assert error.provider == target.provider
    assert target.provider in str(error)
    assert error.result is not None and error.result.status == "error"
    assert (error.result.text, error.result.model_reasoning) == ("", "")


# ---------------------------------------------------------------------------- HTTP errors


def error_reply(target: Target, status: int, retry_after: str | None) -> tuple[str, Transcript]:
    """The target's recorded error body, served with ``status`` and maybe ``Retry-After``."""
    name = target.error_transcripts[0]
    original = transcript(name)
    events = copy.deepcopy(original.events)
    body = events[0]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        # Gemini's RetryInfo detail is a retry hint of its own; this case is about the header.
        body["error"].pop("details", None)
    headers = {k: v for k, v in original.headers.items() if k.lower() != "retry-after"}
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    return name, replace(original, status=status, headers=headers, events=events)


@pytest.mark.parametrize("retry_after", [None, "7"])
@pytest.mark.parametrize("status", [429, 500, 503])
@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_http_error_status_and_retry_after(
    wire: WireServer,
    target_name: str,
    flavour: Flavour,
    status: int,
    retry_after: str | None,
) -> None:
    """429 and 5xx surface as ProviderError with the status and the Retry-After seconds."""
    target = TARGETS[target_name]
    name, reply = error_reply(target, status, retry_after)
    outcome = play(wire, target, name, Reply(reply), flavour)
    check_outcome(outcome, provider=target.provider)
    assert isinstance(outcome.error, ProviderError)
    assert outcome.error.status_code == status
    assert outcome.error.retry_after == (None if retry_after is None else 7.0)
    assert outcome.chunks == []


@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_retry_after_as_an_http_date(wire: WireServer, target_name: str) -> None:
    """Retry-After may be a date (RFC 9110, section 10.2.3): it becomes seconds from now."""
    target = TARGETS[target_name]
    when = time.time() + 120
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(when))
    name, reply = error_reply(target, 503, date)
    outcome = play(wire, target, name, Reply(reply), "sync")
    assert isinstance(outcome.error, ProviderError)
    assert outcome.error.retry_after is not None
    assert 100 <= outcome.error.retry_after <= 121


@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_a_pipe_built_client_makes_one_request_per_run(
    wire: WireServer, target_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 503 reaches the caller as one ProviderError after one request: retrying is theirs.

    A client the pipe builds must not retry behind the caller's back (the SDKs' defaults
    would, sleeping Retry-After first); the caller's own policy (``set_retries``) decides.
    """
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
    target = TARGETS[target_name]
    name, reply = error_reply(target, 503, "0.01")
    prefix = fresh_prefix()
    wire.add(under(prefix, Reply(reply)))
    pipe = target.own(wire.url + prefix, 5.0, name)
    try:
        with pytest.raises(ProviderError) as caught:
            pipe.run("hi")
    finally:
        anyio.run(release, pipe)
    assert caught.value.status_code == 503
    sent = [r for r in wire.requests if r.path.startswith(prefix + "/")]
    assert len(sent) == 1, f"{len(sent)} requests for one run"


@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_a_pipe_that_built_its_client_can_release_it(
    wire: WireServer, target_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a run, close() and dropping the pipe leave no socket for the collector."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
    target = TARGETS[target_name]
    original = transcript(target.showcase)
    prefix = fresh_prefix()
    wire.add(under(prefix, Reply(original)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        pipe = target.own(wire.url + prefix, 5.0, original.name)
        assert pipe.run("hi").status == "completed"
        pipe.close()
        del pipe
        gc.collect()
    unclosed = [str(w.message) for w in caught if "unclosed" in str(w.message)]
    assert not unclosed, unclosed


# ------------------------------------------------------------------------------ callbacks


@pytest.mark.parametrize("flavour", ["asyncio", "trio"])
@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_slow_async_reader_gets_everything_in_order(
    wire: WireServer, target_name: str, flavour: Flavour
) -> None:
    """An async callback that sleeps on every chunk slows the stream; it loses nothing."""
    target = TARGETS[target_name]
    original = transcript(target.showcase)
    slow: list[str] = []

    async def sleepy(chunk: str) -> None:
        await anyio.sleep(0.002)
        slow.append(chunk)

    outcome = play(
        wire,
        target,
        original.name,
        Reply(original),
        flavour,
        prepare=lambda pipe: pipe.set_streaming_callback(sleepy),
    )
    check_outcome(outcome, provider=target.provider, secrets=opaque_payloads(original))
    assert outcome.error is None
    assert slow == outcome.chunks
    reference = play(wire, target, original.name, Reply(original), "sync")
    assert "".join(slow) == "".join(reference.chunks)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_blocking_sync_callback_slows_but_completes(
    wire: WireServer, target_name: str, flavour: Flavour
) -> None:
    target = TARGETS[target_name]
    original = transcript(target.showcase)
    blocked: list[str] = []

    def blocking(chunk: str) -> None:
        time.sleep(0.001)
        blocked.append(chunk)

    outcome = play(
        wire,
        target,
        original.name,
        Reply(original),
        flavour,
        prepare=lambda pipe: pipe.set_streaming_callback(blocking),
    )
    assert outcome.error is None
    assert blocked == outcome.chunks
    assert_channel_is_capture(blocked, outcome.result)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_raising_callbacks_leave_the_others_untouched(
    wire: WireServer, target_name: str, flavour: Flavour, caplog: pytest.LogCaptureFixture
) -> None:
    """Callbacks that raise on every chunk are logged; the others get the whole stream."""
    target = TARGETS[target_name]
    original = transcript(target.showcase)

    def prepare(pipe: Pipe) -> None:
        def bad_chunk(chunk: str) -> None:
            raise RuntimeError("streaming callback failed")

        def bad_event(event: Event) -> None:
            raise KeyError("event callback failed")

        pipe.set_streaming_callback(bad_chunk)
        pipe.set_event_callback(bad_event)
        if flavour != "sync":

            async def bad_async(chunk: str) -> None:
                await anyio.sleep(0)
                raise ValueError("async streaming callback failed")

            pipe.set_streaming_callback(bad_async)

    with caplog.at_level(logging.WARNING, logger="reasoning_stream"):
        outcome = play(wire, target, original.name, Reply(original), flavour, prepare=prepare)
    reference = play(wire, target, original.name, Reply(original), "sync")
    assert outcome.error is None
    assert outcome.result.status == "completed"
    assert "".join(outcome.chunks) == "".join(reference.chunks)
    assert [type(e) for e in outcome.events] == [type(e) for e in reference.events]
    assert any("callback raised" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_raising_error_handler_aborts_with_balanced_channels(
    wire: WireServer, flavour: Flavour
) -> None:
    """An on_callback_error that raises aborts the run; every channel still closes its segment."""
    target = TARGETS["anthropic"]
    original = transcript(target.showcase)
    seen: list[tuple[str, object]] = []

    def handler(error: Exception, chunk: object) -> None:
        seen.append((type(error).__name__, chunk))
        raise RuntimeError("stop the run")

    def prepare(pipe: Pipe) -> None:
        pipe.on_callback_error = handler
        state = {"calls": 0}

        def fails_on_third(chunk: str) -> None:
            state["calls"] += 1
            if state["calls"] == 3:
                raise OSError("disk full")

        pipe.set_streaming_callback(fails_on_third)

    outcome = play(wire, target, original.name, Reply(original), flavour, prepare=prepare)
    assert isinstance(outcome.error, CallbackError)
    assert outcome.error.result is outcome.result
    assert outcome.result.status == "error"
    assert seen and seen[0][0] == "OSError"
    assert_balanced("".join(outcome.chunks))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_abort_by_error_handler_keeps_the_others_channel_whole(
    wire: WireServer, flavour: Flavour
) -> None:
    """Aborted by the error handler at the third chunk, the other callback still got it."""
    target = TARGETS["anthropic"]
    original = transcript(target.showcase)

    def handler(error: Exception, chunk: object) -> None:
        raise RuntimeError("stop the run")

    def prepare(pipe: Pipe) -> None:
        pipe.on_callback_error = handler
        calls = []

        def fails_on_third(chunk: str) -> None:
            calls.append(chunk)
            if len(calls) == 3:
                raise OSError("disk full")

        pipe.set_streaming_callback(fails_on_third)

    outcome = play(wire, target, original.name, Reply(original), flavour, prepare=prepare)
    assert isinstance(outcome.error, CallbackError)
    assert_channel_is_capture(outcome.chunks, outcome.result)


SDK_PIPES = ("anthropic", "openai-responses", "openai-chat-sdk")


@pytest.mark.parametrize("target_name", SDK_PIPES)
def test_early_exit_closes_the_sdk_iterators(wire: WireServer, target_name: str) -> None:
    """On trio, a run aborted by a callback leaves its SDK iterators closed, not collected.

    The pipe reaches two generators: the iterator its ``async for`` made over the SDK's
    ``AsyncStream`` and the stream's own ``__stream__``. Those behind them (``_iter_events``,
    ``aiter_bytes``, ...) are upstream's and are not looked at here.
    """
    target = TARGETS[target_name]
    original = transcript(target.showcase)

    def prepare(pipe: Pipe) -> None:
        def handler(error: Exception, chunk: object) -> None:
            raise RuntimeError("abort")

        seen: list[str] = []

        def fails_on_second(chunk: str) -> None:
            seen.append(chunk)
            if len(seen) == 2:
                raise OSError("disk full")

        pipe.on_callback_error = handler
        pipe.set_streaming_callback(fails_on_second)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        outcome = play(wire, target, original.name, Reply(original), "trio", prepare=prepare)
        gc.collect()
    assert isinstance(outcome.error, CallbackError)
    reachable = ("AsyncStream.__aiter__", "AsyncStream.__stream__")
    ours = [str(w.message) for w in caught if any(name in str(w.message) for name in reachable)]
    assert not ours, ours


# --------------------------------------------------------------------------- cancellation

SCRIPT: list[Any] = [
    ReasoningStart(),
    ReasoningDelta("weigh "),
    0.0,
    ReasoningDelta("the <thi"),
    0.0,
    ReasoningDelta("nk> options"),
    ReasoningEnd(),
    0.0,
    TextDelta("First "),
    0.0,
    ReasoningDelta("again"),
    0.0,
    TextDelta("answer <"),
    0.0,
    TextDelta("/think> done."),
    Finish("stop"),
]


def full_channel(script: list[Any]) -> list[str]:
    chunks: list[str] = []
    ScriptedPipe(script).set_streaming_callback(chunks.append).run("p")
    return chunks


def cancel_after(k: int, scope_holder: list[anyio.CancelScope]) -> Callable[[str], None]:
    """A streaming callback that cancels the surrounding scope once it has seen ``k`` chunks."""
    count = 0

    def counter(chunk: str) -> None:
        nonlocal count
        count += 1
        if count == k:
            scope_holder[0].cancel()

    return counter


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_cancel_after_every_chunk_of_a_scripted_stream(backend: str) -> None:
    """Cancelled from outside after k chunks, for every k: status, markers and capture agree."""
    total = len(full_channel(SCRIPT))

    async def once(k: int) -> tuple[list[str], Any]:
        chunks: list[str] = []
        holder: list[anyio.CancelScope] = []
        pipe = ScriptedPipe(SCRIPT)
        pipe.set_streaming_callback(cancel_after(k, holder)).set_streaming_callback(chunks.append)
        with anyio.CancelScope() as scope:
            holder.append(scope)
            await pipe.arun("p")
        return chunks, pipe.last_result

    for k in range(total + 1):
        chunks, result = anyio.run(once, k, backend=backend)
        assert result is not None
        if k in range(1, total):
            assert result.status in CANCELLED, (k, result.status)
        assert result.status != "error"
        assert_channel_is_capture(chunks, result)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_cancel_while_an_async_callback_awaits_keeps_other_channels_balanced(backend: str) -> None:
    """Cancelled at every await point, inside callbacks too: every other channel balances."""
    total = len(full_channel(SCRIPT))

    async def once(k: int) -> tuple[list[str], Any]:
        chunks: list[str] = []
        holder: list[anyio.CancelScope] = []

        async def checkpointing(chunk: str) -> None:
            await anyio.sleep(0)

        pipe = ScriptedPipe(SCRIPT)
        pipe.set_streaming_callback(cancel_after(k, holder))
        pipe.set_streaming_callback(checkpointing).set_streaming_callback(chunks.append)
        with anyio.CancelScope() as scope:
            holder.append(scope)
            await pipe.arun("p")
        return chunks, pipe.last_result

    for k in range(1, total):
        chunks, result = anyio.run(once, k, backend=backend)
        assert result is not None and result.status in CANCELLED
        assert_channel_is_capture(chunks, result)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_cancel_while_an_async_callback_sleeps_is_prompt(backend: str) -> None:
    """A deadline around arun() holds even when a callback would sleep for seconds."""

    async def main() -> tuple[float, list[str], Any]:
        chunks: list[str] = []

        async def stuck(chunk: str) -> None:
            await anyio.sleep(1.0)

        pipe = ScriptedPipe([ReasoningDelta("a"), ReasoningDelta("b"), TextDelta("t")])
        pipe.set_streaming_callback(stuck).set_streaming_callback(chunks.append)
        started = time.perf_counter()
        with anyio.move_on_after(0.05):
            await pipe.arun("p")
        return time.perf_counter() - started, chunks, pipe.last_result

    seconds, chunks, result = anyio.run(main, backend=backend)
    assert result is not None and result.status in CANCELLED
    assert seconds < 0.5, f"cancellation waited {seconds:.1f}s for a callback"
    assert_channel_is_capture(chunks, result)


def held_open(target: Target) -> tuple[Transcript, int]:
    """The showcase sent whole, then the connection held open and silent.

    A cancelled stream can then only release the connection by closing it, which the server
    sees; a finished body could legitimately go back to the client's pool.
    """
    original = transcript(target.showcase)
    return original, len(original.events)


@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_cancel_after_every_chunk_of_a_provider_stream(
    target_name: str, no_resource_warnings: None
) -> None:
    """A real pipe over the wire, cancelled after k chunks for every k (asyncio and trio in
    turn): cancelled status, balanced channel, result kept, the connection closed by the pipe."""
    target = TARGETS[target_name]
    original, count = held_open(target)
    total = len(play_reference(target, original))

    async def once(server: WireServer, k: int, backend: str) -> tuple[list[str], Any, int]:
        prefix = fresh_prefix()
        server.add(under(prefix, Reply(original, delay=0.002, hang_after=count)))
        built = target.build(server.url + prefix, backend, 5.0, original.name)  # type: ignore[arg-type]
        chunks: list[str] = []
        holder: list[anyio.CancelScope] = []
        built.pipe.set_streaming_callback(cancel_after(k, holder))
        built.pipe.set_streaming_callback(chunks.append)
        try:
            with anyio.CancelScope() as scope:
                holder.append(scope)
                await built.pipe.arun("hi")
            # Look before closing the client: the pipe itself must have closed the response.
            with anyio.move_on_after(2.0):
                while open_connections(server):
                    await anyio.sleep(0.005)
            left_open = open_connections(server)
        finally:
            closed = built.close()
            if closed is not None:
                await closed
        return chunks, built.pipe.last_result, left_open

    with WireServer() as server:
        for k in range(1, total + 1):
            backend = ("asyncio", "trio")[k % 2]
            chunks, result, left_open = anyio.run(once, server, k, backend, backend=backend)
            assert result is not None
            assert result.status in CANCELLED, (k, result.status)
            assert_channel_is_capture(chunks, result)
            assert left_open == 0, f"k={k}: the cancelled response was not closed"


def play_reference(target: Target, original: Transcript) -> list[str]:
    with WireServer() as server:
        outcome = play(server, target, original.name, Reply(original), "sync")
    assert outcome.error is None
    return outcome.chunks


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_cancel_while_waiting_for_the_first_byte(target_name: str, backend: str) -> None:
    """Cancelled while the server has sent nothing: prompt, empty, cancelled_before_answer."""
    target = TARGETS[target_name]
    original = transcript(target.showcase)

    async def main(server: WireServer) -> tuple[float, Outcome | None, int]:
        prefix = fresh_prefix()
        server.add(under(prefix, Reply(original, hang_after=0)))
        built = target.build(server.url + prefix, backend, 5.0, original.name)  # type: ignore[arg-type]
        chunks: list[str] = []
        built.pipe.set_streaming_callback(chunks.append)
        started = time.perf_counter()
        try:
            with anyio.move_on_after(0.1):
                await built.pipe.arun("hi")
            seconds = time.perf_counter() - started
            with anyio.move_on_after(2.0):
                while open_connections(server):
                    await anyio.sleep(0.005)
            left_open = open_connections(server)
        finally:
            closed = built.close()
            if closed is not None:
                await closed
        result = built.pipe.last_result
        assert result is not None
        return seconds, Outcome(result, None, chunks, [], seconds, built.pipe), left_open

    with WireServer() as server:
        seconds, outcome, left_open = anyio.run(main, server, backend=backend)
    assert outcome is not None
    assert seconds < 1.0
    assert outcome.result.status == "cancelled_before_answer"
    assert outcome.chunks == []
    assert left_open == 0
