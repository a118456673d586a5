"""Text entering the channel is valid Unicode, however a provider split its UTF-16 pairs.

A provider may send an emoji as two JSON escapes split across two deltas, or half a pair alone
(``json.loads`` accepts both). The law: over any split of any sequence of UTF-16 code units,
the channel, the result, the hubs and the stores all hold the reference decoding below, written
from the UTF-16 definition without calling the code under test.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning_stream import Conversation, ReasoningDelta, ReasoningStream, TextDelta, ToolCall
from reasoning_stream.hub import Hub, RedisHub
from reasoning_stream.store import ConversationStore, RedisStore, SQLiteStore
from reasoning_stream.testing import ScriptedPipe
from tests.helpers import examples
from tests.hub.conftest import hub
from tests.redis_server import redis_cluster_url, redis_url

__all__ = ["hub", "redis_cluster_url", "redis_url"]

LAW = settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def utf16_units(text: str) -> str:
    """``text`` as a str of UTF-16 code units: each astral character becomes its two halves."""
    units = []
    for character in text:
        point = ord(character)
        if point > 0xFFFF:
            point -= 0x10000
            units += [chr(0xD800 + (point >> 10)), chr(0xDC00 + (point & 0x3FF))]
        else:
            units.append(character)
    return "".join(units)


def reference(units: str) -> str:
    """The UTF-16 decoding of ``units``: pairs joined, every unpaired half U+FFFD."""
    out = []
    i = 0
    while i < len(units):
        unit = ord(units[i])
        following = ord(units[i + 1]) if i + 1 < len(units) else 0
        if 0xD800 <= unit <= 0xDBFF and 0xDC00 <= following <= 0xDFFF:
            out.append(chr(0x10000 + ((unit - 0xD800) << 10) + (following - 0xDC00)))
            i += 2
            continue
        out.append("\ufffd" if 0xD800 <= unit <= 0xDFFF else units[i])
        i += 1
    return "".join(out)


pieces = st.one_of(
    st.sampled_from(["a", "b c", "<", "é", "😀", "🧠", "\U0010fffd", "\ud83d", "\ude00", "\udbff"]),
    st.text(max_size=3),
)
"""Plain and astral characters, lone halves of pairs, and a little of everything else."""


@st.composite
def split_script(draw: st.DrawFn) -> list[tuple[bool, str]]:
    """Runs of reasoning or text, each a sequence of code units cut anywhere into deltas."""
    script: list[tuple[bool, str]] = []
    for _ in range(draw(st.integers(1, 4))):
        reasoning = draw(st.booleans())
        units = utf16_units("".join(draw(st.lists(pieces, min_size=1, max_size=8))))
        cuts = sorted(draw(st.sets(st.integers(1, max(1, len(units) - 1)), max_size=6)))
        bounds = [0, *(c for c in cuts if c < len(units)), len(units)]
        script += [(reasoning, units[a:b]) for a, b in itertools.pairwise(bounds)]
    return script


def expected(script: list[tuple[bool, str]]) -> tuple[list[str], str]:
    """Reasoning segments and text by the reference: consecutive deltas of a kind form a run."""
    runs: list[tuple[bool, str]] = []
    for reasoning, delta in script:
        if not delta:
            continue  # an empty delta does nothing (it closes no segment)
        if runs and runs[-1][0] == reasoning:
            runs[-1] = (reasoning, runs[-1][1] + delta)
        else:
            runs.append((reasoning, delta))
    segments = [reference(units) for reasoning, units in runs if reasoning]
    text = "".join(reference(units) for reasoning, units in runs if not reasoning)
    return [s for s in segments if s], text


def events(script: list[tuple[bool, str]]) -> list[Any]:
    return [ReasoningDelta(d) if reasoning else TextDelta(d) for reasoning, d in script]


def valid(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check(script: list[tuple[bool, str]], channel: str, result: Any) -> None:
    segments, text = expected(script)
    assert valid(channel)
    assert result.text == text
    assert [s for s in result.reasoning_segments if s] == segments
    assert result.model_reasoning == "\n".join(segments)
    split = ReasoningStream.split(channel, lossless=True)
    assert "".join(split.segments) == "".join(segments)
    assert split.text == text


@LAW
@given(split_script())
def test_any_split_of_any_utf16_reaches_channel_and_result_as_the_reference(
    script: list[tuple[bool, str]],
) -> None:
    chunks: list[str] = []
    pipe = ScriptedPipe(events(script)).set_streaming_callback(chunks.append)
    result = pipe.run("go")
    check(script, "".join(chunks), result)


@LAW
@given(split_script())
def test_the_same_law_holds_for_arun_on_asyncio_and_trio(script: list[tuple[bool, str]]) -> None:
    for backend in ("asyncio", "trio"):
        chunks: list[str] = []

        async def collect(chunk: str, chunks: list[str] = chunks) -> None:
            chunks.append(chunk)

        pipe = ScriptedPipe(events(script)).set_streaming_callback(collect)
        result = anyio.run(pipe.arun, "go", backend=backend)
        check(script, "".join(chunks), result)


@LAW
@given(split_script())
def test_hand_driven_hooks_and_event_callbacks_see_valid_text(
    script: list[tuple[bool, str]],
) -> None:
    """Driving the hooks by hand (no lane) and an event callback: the same text."""
    seen: list[Any] = []
    pipe = ScriptedPipe([]).set_event_callback(seen.append)
    for reasoning, delta in script:
        (pipe.emit_reasoning_chunk if reasoning else pipe.emit_text)(delta)
    pipe.emit_stream_end()
    segments, text = expected(script)
    assert "".join(e.text for e in seen if isinstance(e, TextDelta)) == text
    assert "".join(e.text for e in seen if isinstance(e, ReasoningDelta)) == "".join(segments)


@pytest.fixture(params=["sqlite", "redis", "redis-cluster"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ConversationStore]:
    opened: ConversationStore
    if request.param == "sqlite":
        opened = SQLiteStore(tmp_path / "conversations.db")
    else:
        cluster = request.param == "redis-cluster"
        url = request.getfixturevalue("redis_cluster_url" if cluster else "redis_url")
        opened = RedisStore(url, namespace=f"unicode-{uuid.uuid4().hex}", cluster=cluster)
    try:
        yield opened
    finally:
        opened.close()


@settings(LAW, max_examples=examples(25))
@given(split_script())
def test_hubs_publish_the_channel_the_callback_saw(
    hub: Hub, script: list[tuple[bool, str]]
) -> None:
    chunks: list[str] = []
    pipe = ScriptedPipe(events(script)).set_streaming_callback(chunks.append)
    stream_id = f"unicode-{uuid.uuid4().hex}"
    result = hub.run(stream_id, pipe, "go")
    entries = hub.read(stream_id)
    assert entries[-1].final and entries[-1].status == "completed"
    assert "".join(e.chunk for e in entries) == "".join(chunks)
    check(script, "".join(chunks), result)


@settings(LAW, max_examples=examples(25))
@given(split_script())
def test_stores_keep_the_answer_the_result_holds(
    store: ConversationStore, script: list[tuple[bool, str]]
) -> None:
    conversation_id = f"unicode-{uuid.uuid4().hex}"
    store.save(conversation_id, Conversation().add_user("go"))
    result = store.run(conversation_id, ScriptedPipe(events(script)))
    conversation, _ = store.load(conversation_id)
    segments, text = expected(script)
    assert result.text == text
    assert result.model_reasoning == "\n".join(segments)
    assert conversation[-1]["content"] == text
    assert conversation.pending_generation is None


# ------------------------------------------------------------------ the symptoms, one each

SPLIT_EMOJI = [
    ReasoningDelta("think \ud83e"),
    ReasoningDelta("\udde0 done"),
    TextDelta("a \ud83d"),
    TextDelta("\ude00 b \udc00"),
]
"""🧠 and 😀 each split across two deltas, and one lone low half: as a provider may send them."""


def test_redis_writer_thread_survives_split_pairs_and_later_runs_publish(redis_url: str) -> None:
    """Before: the writer thread died on the first lone surrogate; every later run of every
    stream then published nothing and raised ``PublishError`` after 10 s."""
    with RedisHub(redis_url) as hub:
        first = f"unicode-{uuid.uuid4().hex}"
        tool = ToolCall("call_1", "lookup", '{"q": "\ud83d"}')  # half a pair in a tool call
        result = hub.run(first, ScriptedPipe([*SPLIT_EMOJI, tool]), "go")
        assert result.text == "a 😀 b \ufffd"
        assert result.model_reasoning == "think 🧠 done"
        entries = hub.read(first)
        assert entries[-1].final and entries[-1].status == "completed"
        mended = ToolCall("call_1", "lookup", '{"q": "\ufffd"}')
        assert result.tool_calls == (mended,)
        assert [e.event for e in entries if isinstance(e.event, ToolCall)] == [mended]
        second = f"unicode-{uuid.uuid4().hex}"
        started = time.monotonic()
        assert hub.run(second, ScriptedPipe([TextDelta("next")]), "go").text == "next"
        assert time.monotonic() - started < 5
        assert hub.read(second)[-1].final


def test_web_sse_streams_and_resumes_a_run_with_split_pairs(redis_url: str) -> None:
    """Before: the SSE response aborted on the entry, and every ``Last-Event-ID`` reconnect
    failed on the same entry."""
    from reasoning_stream.web import create_app
    from tests.web.conftest import serve
    from tests.web.sse import get, parse

    with RedisHub(redis_url) as hub:
        stream_id = f"unicode-{uuid.uuid4().hex}"
        hub.run(stream_id, ScriptedPipe(SPLIT_EMOJI), "go")
        with serve(create_app(hub)) as base:
            events = parse(get(f"{base}/streams/{stream_id}").text)
            assert events[-1].event == "end"
            channel = "".join(e.json().get("chunk", "") for e in events)
            assert ReasoningStream.split(channel).text == "a 😀 b \ufffd"
            for index, event in enumerate(events[:-1]):
                rest = parse(get(f"{base}/streams/{stream_id}", last_event_id=event.id).text)
                assert rest[-1].event == "end"
                resumed = "".join(e.json().get("chunk", "") for e in [*events[: index + 1], *rest])
                assert resumed == channel


def test_store_run_stores_a_run_with_split_pairs(store: ConversationStore) -> None:
    """Before: ``store.run`` raised a bare ``UnicodeEncodeError`` after the model was paid for,
    leaving the ``in_progress`` record. A tool call's arguments are mended too."""
    store.save("chat", Conversation().add_user("go"))
    tool = ToolCall("call_\udc00", "look\ud83d", '{"q": "\ud83e\udde0 \ud83d"}')
    result = store.run("chat", ScriptedPipe([*SPLIT_EMOJI, tool]))
    assert result.tool_calls == (ToolCall("call_\ufffd", "look\ufffd", '{"q": "🧠 \ufffd"}'),)
    conversation, _ = store.load("chat")
    assert conversation[-1]["content"] == result.text == "a 😀 b \ufffd"
    assert conversation[-1]["thinking"] == "think 🧠 done"
    assert conversation.pending_generation is None
