"""arun()'s boto3 reader: a thread reads the body, the event loop frames and decodes it.

The law: whatever the body's chunking and wherever the connection breaks, the events (and
the error) that ``aevent_stream_source`` hands the event loop are exactly those of iterating
boto3's own ``EventStream`` (the oracle: boto3 itself, on the same reply), on asyncio and trio,
through the split reading and through the whole-stream fallback. Then the reader's own
guarantees, each on its own: a bounded buffer (a consumer slower than the reader holds the
reader back), order with the end or the error last, a cancellation delivered once a batch
even when chunks are always waiting, and the fallback taken for streams it cannot split.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import anyio
import pytest
from botocore.eventstream import EventStream
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reasoning_stream.providers._transports import eventstream as transports
from reasoning_stream.providers._transports.eventstream import (
    _BATCH_LIMIT,
    _Failure,
    _Reader,
    _split_reading,
    _take,
    aevent_stream_source,
)
from reasoning_stream.testing._wire import Transcript, WireServer
from tests.helpers import examples
from tests.providers.conftest import bedrock_client

from .test_bedrock import CLAUDE, _long_text_stream

STREAMS = [
    "bedrock_converse_guardrail",
    "bedrock_converse_max_tokens",
    "bedrock_converse_plain",
    "bedrock_converse_reasoning",
    "bedrock_converse_redacted",
    "bedrock_converse_stream_error",
    "bedrock_converse_tool_use",
    "bedrock_invoke_anthropic_interleaved",
    "bedrock_invoke_anthropic_thinking",
    "bedrock_invoke_deepseek_r1",
]
"""Every bundled Bedrock transcript that is an event stream (the others are JSON replies)."""
READER = "reasoning-stream boto3 reader"


def _with_unknown_events(name: str) -> Transcript:
    """A transcript with event types this botocore's model does not know (a newer service):
    boto3 decodes them to an empty dict and does not yield them."""
    transcript = Transcript.load(name)
    unknown = {"event_type": "futureEvent", "payload": {"contentBlockIndex": 0}}
    events = list(transcript.events)
    events[1:1] = [unknown, dict(unknown)]
    return replace(transcript, events=events)


def test_the_list_holds_every_streamed_transcript() -> None:
    from importlib.resources import files

    names = sorted(
        path.name.removesuffix(".json")
        for path in files("reasoning_stream.transcripts").iterdir()
        if path.name.startswith("bedrock_") and path.name.endswith(".json")
    )
    streamed = [name for name in names if Transcript.load(name).format == "eventstream"]
    assert streamed == STREAMS


class _Subclassed(EventStream):  # type: ignore[misc]
    """botocore's stream under another class: the reader must not split what it cannot vouch
    for, and reads it whole in its thread."""


def _opener(client: Any, transcript: Transcript, *, whole: bool = False) -> Callable[[], Any]:
    def open_stream() -> tuple[Any, str | None]:
        if "converse" in transcript.path:
            reply = client.converse_stream(
                modelId=CLAUDE, messages=[{"role": "user", "content": [{"text": "hi"}]}]
            )
            stream = reply["stream"]
        else:
            reply = client.invoke_model_with_response_stream(modelId=CLAUDE, body=b"{}")
            stream = reply["body"]
        if whole:
            stream.__class__ = _Subclassed
        return stream, reply["ResponseMetadata"].get("RequestId")

    return open_stream


def _outcome(error: BaseException | None) -> Any:
    if error is None:
        return None
    return (type(error), str(error), getattr(error, "response", None))


def _boto3_reads(open_stream: Callable[[], Any]) -> tuple[list[Any], Any]:
    """The oracle: boto3 iterating its own stream in this thread."""
    stream, _ = open_stream()
    events: list[Any] = []
    error: BaseException | None = None
    try:
        for event in stream:
            events.append(event)
    except Exception as caught:
        error = caught
    finally:
        stream.close()
    return events, _outcome(error)


def _loop_reads(open_stream: Callable[[], Any], backend: str) -> tuple[list[Any], Any]:
    async def main() -> tuple[list[Any], Any]:
        source = await aevent_stream_source(open_stream)
        events: list[Any] = []
        error: BaseException | None = None
        try:
            async for event in source.chunks:
                events.append(event)
        except Exception as caught:
            error = caught
        finally:
            await source.aclose()
        return events, _outcome(error)

    return anyio.run(main, backend=backend)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from([*STREAMS, "unknown events"]),
    chunk_size=st.one_of(st.none(), st.integers(1, 64)),
    cut=st.one_of(st.none(), st.floats(0.0, 1.0)),
    backend=st.sampled_from(["asyncio", "trio"]),
    whole=st.booleans(),
)
@example(name="unknown events", chunk_size=None, cut=None, backend="asyncio", whole=False)
@example(name="bedrock_converse_tool_use", chunk_size=1, cut=0.7, backend="trio", whole=False)
def test_the_event_loop_gets_what_boto3_iteration_gets(
    name: str, chunk_size: int | None, cut: float | None, backend: str, whole: bool
) -> None:
    """Any chunking (one frame a chunk, or 1 to 64 bytes), any break in the body."""
    if name == "unknown events":
        transcript = _with_unknown_events("bedrock_converse_reasoning")
    else:
        transcript = Transcript.load(name)
    options: dict[str, Any] = {"chunk_size": chunk_size}
    if cut is not None:
        options["disconnect_at_byte"] = int(cut * len(transcript.encode()))
    with WireServer() as server:
        server.add(transcript, **options)
        server.add(transcript, **options)
        client = bedrock_client(server)
        try:
            expected = _boto3_reads(_opener(client, transcript))
            got = _loop_reads(_opener(client, transcript, whole=whole), backend)
        finally:
            client.close()
    assert got == expected
    if cut is None and name != "bedrock_converse_stream_error":
        assert expected[1] is None and expected[0]  # the oracle read the whole stream


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_body_read_ahead_in_one_piece_decodes_like_boto3(backend: str) -> None:
    """The event loop looks late: the whole body waits as one bytearray (far more than one
    piece for the EventStreamBuffer), and still gives boto3's events."""
    transcript = _long_text_stream(2000)
    assert len(transcript.encode()) > 20 * transports._FEED_BYTES

    def late(open_stream: Callable[[], Any]) -> tuple[list[Any], Any]:
        async def main() -> tuple[list[Any], Any]:
            source = await aevent_stream_source(open_stream)
            try:
                await anyio.sleep(0.5)  # the reading thread reads the whole body meanwhile
                return [event async for event in source.chunks], None
            finally:
                await source.aclose()

        return anyio.run(main, backend=backend)

    with WireServer() as server:
        server.add(transcript)
        server.add(transcript)
        client = bedrock_client(server)
        try:
            expected = _boto3_reads(_opener(client, transcript))
            got = late(_opener(client, transcript))
        finally:
            client.close()
    assert len(expected[0]) == 2003 and expected[1] is None
    assert got == expected


def test_botocore_streams_are_split_and_others_read_whole() -> None:
    transcript = Transcript.load("bedrock_converse_reasoning")
    with WireServer() as server:
        for _ in range(3):
            server.add(transcript)
        client = bedrock_client(server)
        fresh, _ = _opener(client, transcript)()
        started, _ = _opener(client, transcript)()
        subclassed, _ = _opener(client, transcript, whole=True)()
        try:
            assert _split_reading(fresh) is not None
            next(iter(started))  # something read already: its buffer may hold bytes
            assert _split_reading(started) is None
            assert _split_reading(subclassed) is None
            assert _split_reading(object()) is None
        finally:
            for stream in (fresh, started, subclassed):
                stream.close()
            client.close()


# ------------------------------------------------------------------ the reader on its own


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "the reading thread never got there"
        time.sleep(0.005)


def _full(reader: _Reader) -> bool:
    return len(reader._buffer) >= _BATCH_LIMIT


def _drain(reader: _Reader) -> list[Any]:
    """Everything up to the end or the error; a reader that stops handing over fails, not hangs."""
    items: list[Any] = []
    deadline = time.monotonic() + 10
    while not items or (items[-1] is not _Reader.END and not isinstance(items[-1], _Failure)):
        batch = reader.take_ready()
        if not batch:
            assert time.monotonic() < deadline, "the reading thread stopped handing over"
            time.sleep(0.002)
        items += batch
    return items


def test_a_slow_consumer_holds_the_body_reader_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """The split reading on a real boto3 stream, one frame a chunk: while the consumer takes
    nothing, what was read waits as one bytearray of _BATCH_BYTES and at most one chunk more;
    then the rest comes, in order, the whole body once."""
    monkeypatch.setattr(transports, "_BATCH_BYTES", 2048)
    transcript = _long_text_stream(3 * _BATCH_LIMIT)
    largest = max(len(frame) for frame in transcript.chunks())
    with WireServer(transcript) as server:
        client = bedrock_client(server)
        stream, _ = _opener(client, transcript)()
        split = _split_reading(stream)
        assert split is not None
        reader = _Reader(stream, split[0], joins=True)
        try:
            _wait_for(lambda: reader._bytes >= 2048)
            time.sleep(0.2)  # the thread has more to read, and must be waiting
            first = reader.take_ready()
            assert [type(body) for body in first] == [bytearray]
            assert 2048 <= len(first[0]) < 2048 + largest
            items = first + _drain(reader)
        finally:
            reader.interrupt()
            reader.close()
            client.close()
    assert items[-1] is _Reader.END and items.count(_Reader.END) == 1
    assert b"".join(items[:-1]) == transcript.encode()


def test_big_body_chunks_wait_only_up_to_the_byte_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Big chunks: the chunk that crosses the byte bound is the last to wait, for the look
    without a hop and for the waiting take alike, and nothing is lost."""
    monkeypatch.setattr(transports, "_BATCH_BYTES", 4096)
    transcript = _long_text_stream(400)
    with WireServer() as server:
        server.add(transcript, chunk_size=1000)
        client = bedrock_client(server)
        stream, _ = _opener(client, transcript)()
        split = _split_reading(stream)
        assert split is not None
        reader = _Reader(stream, split[0], joins=True)
        try:
            _wait_for(lambda: reader._bytes >= 4096)
            time.sleep(0.2)  # the thread has more to read, and must be waiting
            first = reader.take_ready()
            assert [len(body) for body in first] == [5000]
            _wait_for(lambda: reader._bytes >= 4096)
            time.sleep(0.2)
            second = _bounded(reader.take)  # the waiting take, as the event loop's hop calls it
            assert [len(body) for body in second] == [5000]
            items = first + second + _drain(reader)
        finally:
            reader.interrupt()
            reader.close()
            client.close()
    assert items[-1] is _Reader.END
    assert b"".join(items[:-1]) == transcript.encode()


def _bounded(call: Callable[[], list[Any]]) -> list[Any]:
    """``call()`` in a thread, failing the test if it has not returned within 10 s."""
    result: list[list[Any]] = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    thread.join(10)
    assert result, "the call never returned"
    return result[0]


def _counting(count: int, error: BaseException | None = None) -> Iterator[int]:
    yield from range(count)
    if error is not None:
        raise error


def test_items_come_in_order_then_the_error_never_lost() -> None:
    failure = OSError("the socket broke")
    reader = _Reader(None, _counting(2 * _BATCH_LIMIT + 3, failure))
    try:
        items = _drain(reader)
    finally:
        reader.interrupt()
        reader.close()
    assert items[:-1] == list(range(2 * _BATCH_LIMIT + 3))
    assert isinstance(items[-1], _Failure) and items[-1].error is failure


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_take_splits_the_end_or_the_error_off_the_batch(backend: str) -> None:
    async def main(reader: _Reader) -> list[tuple[list[Any], Any]]:
        batches = [await _take(reader)]
        while batches[-1][1] is None:
            batches.append(await _take(reader))
        return batches

    clean = _Reader(None, _counting(5))
    failure = ValueError("bad frame")
    broken = _Reader(None, _counting(5, failure))
    try:
        for reader, end in ((clean, _Reader.END), (broken, _Failure(failure))):
            batches = anyio.run(main, reader, backend=backend)
            assert [item for batch, _ in batches for item in batch] == list(range(5))
            assert [last for _, last in batches] == [None] * (len(batches) - 1) + [end]
    finally:
        for reader in (clean, broken):
            reader.interrupt()
            reader.close()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_cancelled_take_returns_even_with_items_waiting_and_loses_none(backend: str) -> None:
    """The event loop takes waiting items without a thread hop; a cancellation still lands
    once a batch (a checkpoint first), before anything is taken."""
    reader = _Reader(None, _counting(3 * _BATCH_LIMIT))
    try:
        _wait_for(lambda: _full(reader))

        async def main() -> bool:
            with anyio.CancelScope() as scope:
                scope.cancel()
                await _take(reader)
            return scope.cancelled_caught

        assert anyio.run(main, backend=backend)
        assert reader.take_ready() == list(range(_BATCH_LIMIT))
    finally:
        reader.interrupt()
        reader.close()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_cancelled_wait_for_the_next_chunk_ends_the_reading_thread(backend: str) -> None:
    """A stream that stalls mid-body: the event loop waits in a worker thread; cancelling
    returns at once, and closing the source wakes and ends the reading thread."""
    with WireServer() as server:
        server.add("bedrock_converse_reasoning", hang_after=3)
        client = bedrock_client(server)
        transcript = Transcript.load("bedrock_converse_reasoning")
        seen: list[Any] = []

        async def main() -> None:
            source = await aevent_stream_source(_opener(client, transcript))
            try:
                with anyio.move_on_after(0.5):
                    async for event in source.chunks:
                        seen.append(event)
            finally:
                with anyio.CancelScope(shield=True):
                    await source.aclose()

        started = time.monotonic()
        anyio.run(main, backend=backend)
        assert time.monotonic() - started < 3
        client.close()
    assert len(seen) >= 1
    assert not any(t.name == READER and t.is_alive() for t in threading.enumerate())
