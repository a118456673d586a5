"""Tests for WireServer: encoders, routing, delivery options, and the real SDKs on top."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import boto3
import botocore.config
import botocore.exceptions
import httpx
import httpx_sse
import ollama
import openai
import pytest
import urllib3
from botocore.eventstream import EventStreamBuffer
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream.testing._eventstream import encode_frame, event_frame
from reasoning_stream.testing._wire import (
    RecordedRequest,
    Reply,
    Transcript,
    WireServer,
    _compile_route,
)
from tests.helpers import examples

MESSAGES: list[Any] = [{"role": "user", "content": "why?"}]


# ---------------------------------------------------------------------------
# Transcripts used across tests


def _openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "data": {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    }


def openai_chat() -> Transcript:
    return Transcript(
        name="openai_chat_reasoning",
        path="/v1/chat/completions",
        headers={"x-request-id": "req_1"},
        events=[
            _openai_chunk({"role": "assistant", "content": "", "reasoning_content": "Let me "}),
            _openai_chunk({"reasoning_content": "think… ünïcode"}),
            {"comment": "keep-alive"},
            _openai_chunk({"content": "The answer"}),
            _openai_chunk({"content": " is 42."}),
            _openai_chunk({}, "stop"),
            {"data": "[DONE]"},
        ],
    )


def openai_rate_limited() -> Transcript:
    return Transcript(
        path="/v1/chat/completions",
        status=429,
        format="json",
        headers={"retry-after": "1", "x-request-id": "req_429"},
        events=[
            {
                "error": {
                    "message": "Rate limit reached",
                    "type": "rate_limit_error",
                    "code": "rate_limit_exceeded",
                }
            }
        ],
    )


def anthropic_thinking() -> Transcript:
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": message}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Hmm, let me see."},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "c2lnbmF0dXJl"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 9},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return Transcript(
        path="/v1/messages",
        events=[{"event": name, "data": data} for name, data in events],
    )


def ollama_chat() -> Transcript:
    def line(message: dict[str, Any], done: bool, **extra: Any) -> dict[str, Any]:
        return {
            "model": "m",
            "created_at": "2025-01-01T00:00:00.000000Z",
            "message": {"role": "assistant", **message},
            "done": done,
            **extra,
        }

    return Transcript(
        path="/api/chat",
        format="ndjson",
        events=[
            line({"content": "", "thinking": "Pondering"}, False),
            line({"content": "", "thinking": " deeply."}, False),
            line({"content": "Done."}, False),
            line(
                {"content": ""},
                True,
                done_reason="stop",
                total_duration=10,
                eval_count=3,
            ),
        ],
    )


BEDROCK_MODEL = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"


def bedrock_converse() -> Transcript:
    return Transcript(
        path="/model/{modelId}/converse-stream",
        format="eventstream",
        headers={"x-amzn-requestid": "rid-1"},
        events=[
            {"event_type": "messageStart", "payload": {"role": "assistant"}},
            {
                "event_type": "contentBlockDelta",
                "payload": {"delta": {"reasoningContent": {"text": "hi"}}, "contentBlockIndex": 0},
            },
            {
                "event_type": "contentBlockDelta",
                "payload": {
                    "delta": {"reasoningContent": {"signature": "sig"}},
                    "contentBlockIndex": 0,
                },
            },
            {"event_type": "contentBlockStop", "payload": {"contentBlockIndex": 0}},
            {
                "event_type": "contentBlockDelta",
                "payload": {"delta": {"text": "Answer"}, "contentBlockIndex": 1},
            },
            {"event_type": "contentBlockStop", "payload": {"contentBlockIndex": 1}},
            {"event_type": "messageStop", "payload": {"stopReason": "end_turn"}},
            {
                "event_type": "metadata",
                "payload": {
                    "usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7},
                    "metrics": {"latencyMs": 12},
                },
            },
        ],
    )


def bedrock_invoke() -> Transcript:
    return Transcript(
        path="/model/{modelId}/invoke-with-response-stream",
        format="eventstream",
        events=[
            {"event_type": "chunk", "inner": {"type": "message_start", "n": 1}},
            {"event_type": "chunk", "inner": {"type": "content_block_delta", "text": "ü"}},
        ],
    )


# ---------------------------------------------------------------------------
# Helpers


CLIENT_TIMEOUT = 10.0
"""The SDK clients' timeout here (theirs is ten minutes): a stalled reply fails the test."""


def _openai_client(server: WireServer, **kwargs: Any) -> openai.OpenAI:
    kwargs.setdefault("timeout", CLIENT_TIMEOUT)
    return openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0, **kwargs)


def _reasoning(delta: Any) -> Any:
    value = getattr(delta, "reasoning_content", None)
    if value is None:
        value = (delta.model_extra or {}).get("reasoning_content")
    return value


def _openai_summary(chunks: Any) -> list[tuple[Any, Any, Any]]:
    return [
        (_reasoning(c.choices[0].delta), c.choices[0].delta.content, c.choices[0].finish_reason)
        for c in chunks
    ]


EXPECTED_OPENAI = [
    ("Let me ", "", None),
    ("think… ünïcode", None, None),
    (None, "The answer", None),
    (None, " is 42.", None),
    (None, None, "stop"),
]


_BEDROCK_CONFIG = botocore.config.Config(
    retries={"max_attempts": 1, "mode": "standard"},
    connect_timeout=5,
    read_timeout=5,
)


@pytest.fixture
def bedrock() -> Iterator[Callable[[WireServer], Any]]:
    """Make bedrock-runtime clients aimed at a server; closed after the test."""
    clients: list[Any] = []

    def make(server: WireServer) -> Any:
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
            endpoint_url=server.url,
            config=_BEDROCK_CONFIG,
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def _decode_frames(data: bytes) -> list[Any]:
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return list(buffer)


# ---------------------------------------------------------------------------
# Encoders


def test_sse_encoding_is_exact() -> None:
    transcript = Transcript(
        path="/x",
        events=[
            {"event": "delta", "data": {"a": [1, "é"]}, "id": "7"},
            {"data": "[DONE]"},
            {"data": "line one\nline two\n"},
            {"comment": "keep-alive"},
            {"comment": "note", "event": "ping", "retry": 1500, "data": None},
            {"raw": "data: verbatim\r\n\r\n"},
        ],
    )
    assert transcript.chunks() == [
        'event: delta\nid: 7\ndata: {"a":[1,"é"]}\n\n'.encode(),
        b"data: [DONE]\n\n",
        b"data: line one\ndata: line two\ndata: \n\n",
        b": keep-alive\n\n",
        b": note\nevent: ping\nretry: 1500\ndata: null\n\n",
        b"data: verbatim\r\n\r\n",
    ]
    assert transcript.encode() == b"".join(transcript.chunks())
    assert transcript.content_type.startswith("text/event-stream")


def test_sse_crlf_newline() -> None:
    transcript = Transcript(path="/x", newline="\r\n", events=[{"event": "e", "data": "x"}])
    assert transcript.encode() == b"event: e\r\ndata: x\r\n\r\n"


def test_ndjson_json_and_raw_encoding() -> None:
    ndjson = Transcript(path="/x", format="ndjson", events=[{"a": 1}, "s", [True, None]])
    assert ndjson.chunks() == [b'{"a":1}\n', b'"s"\n', b"[true,null]\n"]
    assert ndjson.content_type == "application/x-ndjson"
    body = Transcript(path="/x", format="json", events=[{"error": {"message": "m"}}])
    assert body.chunks() == [b'{"error":{"message":"m"}}']
    raw = Transcript(path="/x", format="raw", body="not json {")
    assert raw.encode() == b"not json {"
    pieces = Transcript(path="/x", format="raw", events=["da", "ta: 1\n\n"])
    assert pieces.chunks() == [b"da", b"ta: 1\n\n"]
    overridden = Transcript(path="/x", format="raw", body="", headers={"content-type": "text/x"})
    assert overridden.content_type == "text/x"


@pytest.mark.parametrize(
    "bad",
    [
        {"path": "/x", "format": "xml"},
        {"path": "x"},
        {"path": "/x", "events": [{"dat": "typo"}]},
        {"path": "/x", "events": [{}]},
        {"path": "/x", "format": "json", "events": []},
        {"path": "/x", "format": "json", "events": [1, 2]},
        {"path": "/x", "format": "raw", "events": [{"a": 1}]},
        {"path": "/x", "format": "eventstream", "events": [{"payload": {}}]},
        {"path": "/x", "format": "eventstream", "events": [{"event_type": "a", "bogus": 1}]},
        {"path": "/x", "body": "only for json/raw"},
        {"path": "/x", "surprise": True},
        {"events": []},
    ],
)
def test_malformed_transcripts_fail_at_load(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Transcript.from_dict(bad)


def test_eventstream_frames_decode_with_botocore() -> None:
    transcript = Transcript(
        path="/x",
        format="eventstream",
        events=[
            {"event_type": "contentBlockDelta", "payload": {"delta": {"text": "é"}}},
            {"exception_type": "modelStreamErrorException", "payload": {"message": "boom"}},
            {"event_type": "chunk", "inner": {"type": "x", "text": "hi"}},
            {"event_type": "raw", "payload_bytes_b64": base64.b64encode(b"\x00\xff").decode()},
            {"error_code": "InternalFailure", "error_message": "bad"},
        ],
    )
    assert transcript.content_type == "application/vnd.amazon.eventstream"
    chunks = transcript.chunks()
    messages = _decode_frames(transcript.encode())
    assert len(messages) == len(chunks) == 5

    delta, exception, chunk, raw, error = messages
    assert delta.headers == {
        ":event-type": "contentBlockDelta",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert json.loads(delta.payload) == {"delta": {"text": "é"}}
    assert exception.headers[":message-type"] == "exception"
    assert exception.headers[":exception-type"] == "modelStreamErrorException"
    assert json.loads(exception.payload) == {"message": "boom"}
    outer = json.loads(chunk.payload)
    assert json.loads(base64.b64decode(outer["bytes"])) == {"type": "x", "text": "hi"}
    assert raw.payload == b"\x00\xff"
    assert error.headers == {
        ":error-code": "InternalFailure",
        ":error-message": "bad",
        ":message-type": "error",
    }
    # Lengths in the prelude describe each frame exactly.
    for piece in chunks:
        assert int.from_bytes(piece[:4], "big") == len(piece)


def test_eventstream_header_types_decode_with_botocore() -> None:
    frame = encode_frame(
        {"s": "text", "b": b"\x01\x02", "t": True, "f": False, "i": -5, "l": 2**40},
        b"payload",
    )
    (message,) = _decode_frames(frame)
    assert message.headers == {
        "s": "text",
        "b": b"\x01\x02",
        "t": True,
        "f": False,
        "i": -5,
        "l": 2**40,
    }
    assert message.payload == b"payload"


def test_eventstream_corruption_is_detected_by_botocore() -> None:
    frame = bytearray(event_frame("x", b"{}"))
    frame[-6] ^= 0xFF
    with pytest.raises(botocore.eventstream.ChecksumMismatch):
        _decode_frames(bytes(frame))


@settings(max_examples=examples(60), deadline=None)
@given(
    frames=st.lists(
        st.tuples(
            st.dictionaries(
                st.text(min_size=1, max_size=20).filter(lambda s: len(s.encode()) <= 255),
                st.text(max_size=40),
                max_size=4,
            ),
            st.binary(max_size=300),
        ),
        min_size=1,
        max_size=5,
    ),
    split=st.integers(min_value=1, max_value=64),
)
def test_eventstream_round_trips_through_botocore_in_any_split(
    frames: list[tuple[dict[str, str], bytes]], split: int
) -> None:
    data = b"".join(encode_frame(headers, payload) for headers, payload in frames)
    buffer = EventStreamBuffer()
    decoded: list[Any] = []
    for start in range(0, len(data), split):
        buffer.add_data(data[start : start + split])
        decoded.extend(buffer)
    assert [(m.headers, m.payload) for m in decoded] == frames


# ---------------------------------------------------------------------------
# Transcript model


def test_transcript_dict_round_trip_and_file_load(tmp_path: Path) -> None:
    original = openai_chat()
    assert Transcript.from_dict(original.to_dict()) == original

    data = original.to_dict()
    del data["name"]
    data["_comment"] = "ignored annotation"
    path = tmp_path / "recorded_turn.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    loaded = Transcript.load(path)
    assert loaded.name == "recorded_turn"
    assert loaded.encode() == original.encode()
    assert Transcript.load(str(path)).events == original.events
    with WireServer(path) as server, httpx.Client(base_url=server.url) as client:
        assert client.post("/v1/chat/completions").content == original.encode()


def test_unknown_bundled_name_is_a_clear_error() -> None:
    with pytest.raises(FileNotFoundError, match="no_such_transcript_xyz"):
        Transcript.load("no_such_transcript_xyz")


def test_every_bundled_transcript_loads_and_encodes() -> None:
    for name in Transcript.bundled():
        transcript = Transcript.load(name)
        assert transcript.name
        assert isinstance(transcript.encode(), bytes)


# ---------------------------------------------------------------------------
# Reply pieces


def test_reply_pieces_rechunk_cut_and_truncate() -> None:
    transcript = Transcript(path="/x", format="ndjson", events=[{"a": 1}, {"b": 2}])
    body = transcript.encode()
    assert Reply(transcript).pieces() == transcript.chunks()
    single = Reply(transcript, chunk_size=1).pieces()
    assert len(single) == len(body) and b"".join(single) == body
    assert Reply(transcript, chunk_size=5).pieces()[0] == body[:5]
    assert Reply(transcript, cut_points=[3, 10]).pieces() == [body[:3], body[3:10], body[10:]]
    truncated = Reply(transcript, disconnect_at_byte=9).pieces()
    assert b"".join(truncated) == body[:9]
    assert truncated == [body[:8], body[8:9]]
    assert Reply(transcript, disconnect_at_byte=0).pieces() == []


@pytest.mark.parametrize(
    "options",
    [
        {"chunk_size": 0},
        {"chunk_size": 2, "cut_points": [1]},
        {"cut_points": [3, 3]},
        {"cut_points": [0]},
        {"disconnect_after": 1, "hang_after": 1},
        {"disconnect_after": 1, "disconnect_at_byte": 4},
        {"hang_after": -1},
        {"delay": -0.1},
    ],
)
def test_reply_rejects_contradictory_options(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Reply(Transcript(path="/x", events=[{"data": "x"}]), **options)


def test_cut_point_past_the_body_is_rejected() -> None:
    reply = Reply(Transcript(path="/x", events=[{"data": "x"}]), cut_points=[100])
    with pytest.raises(ValueError, match="not inside"):
        reply.pieces()


# ---------------------------------------------------------------------------
# Routing


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("/v1/chat/completions", "/v1/chat/completions", True),
        ("/v1/chat/completions", "/v1/chat/completions/", False),
        ("/model/{modelId}/converse-stream", "/model/a.b-c%3A0/converse-stream", True),
        ("/model/{modelId}/converse-stream", "/model/a/b/converse-stream", False),
        ("/model/{modelId}/converse-stream", "/model//converse-stream", False),
        (
            "/v1beta/models/{model}:streamGenerateContent?alt=sse",
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            True,
        ),
        (
            "/v1beta/models/{model}:streamGenerateContent",
            "/v1beta/models/gemini-2.5-flash:generateContent",
            False,
        ),
        ("/a/{x}/{y}", "/a/1/2", True),
    ],
)
def test_route_patterns(pattern: str, path: str, matches: bool) -> None:
    assert bool(_compile_route(pattern).fullmatch(path)) is matches


def test_replies_on_one_route_are_served_in_order_then_repeat() -> None:
    def turn(text: str) -> Transcript:
        return Transcript(path="/turn", method="get", format="json", events=[{"turn": text}])

    with WireServer(turn("one"), turn("two")) as server:
        server.add(turn("three"))
        with httpx.Client(base_url=server.url) as client:
            bodies = [client.get("/turn").json()["turn"] for _ in range(5)]
    assert bodies == ["one", "two", "three", "three", "three"]


def test_query_string_is_ignored_and_percent_encoding_tolerated() -> None:
    gemini = Transcript(
        path="/v1beta/models/{model}:streamGenerateContent?alt=sse",
        events=[{"data": {"candidates": []}}],
    )
    literal = Transcript(path="/model/m:0/invoke", format="json", events=[{"ok": True}])
    with WireServer(gemini, literal) as server, httpx.Client(base_url=server.url) as client:
        response = client.post("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
        assert response.status_code == 200
        assert response.text == 'data: {"candidates":[]}\n\n'
        assert client.post("/model/m%3A0/invoke").json() == {"ok": True}
        assert server.requests[0].path.endswith("?alt=sse")


def test_unmatched_request_gets_404_and_is_recorded() -> None:
    with WireServer(openai_chat()) as server, httpx.Client(base_url=server.url) as client:
        response = client.get("/nowhere?q=1", headers={"X-Probe": "yes"})
        assert response.status_code == 404
        assert "/nowhere?q=1" in response.json()["error"]["message"]
        # Same path, wrong method: also unmatched.
        assert client.get("/v1/chat/completions").status_code == 404
    assert [(r.method, r.path) for r in server.requests] == [
        ("GET", "/nowhere?q=1"),
        ("GET", "/v1/chat/completions"),
    ]
    assert server.requests[0].headers["x-probe"] == "yes"


# ---------------------------------------------------------------------------
# Server behaviour through plain httpx


def test_headers_status_and_framing() -> None:
    with WireServer(openai_chat(), openai_rate_limited()) as server:
        with httpx.Client(base_url=server.url) as client:
            streamed = client.post("/v1/chat/completions", json={})
            limited = client.post("/v1/chat/completions", json={})
        assert streamed.headers["transfer-encoding"] == "chunked"
        assert streamed.headers["content-type"] == "text/event-stream; charset=utf-8"
        assert streamed.headers["x-request-id"] == "req_1"
        assert streamed.content == openai_chat().encode()
        assert limited.status_code == 429
        assert limited.headers["retry-after"] == "1"
        assert limited.headers["content-length"] == str(len(limited.content))
        assert server.url.startswith("http://127.0.0.1:") and not server.url.endswith("/")


def test_pieces_arrive_separately() -> None:
    transcript = Transcript(path="/s", events=[{"data": str(n)} for n in range(3)])
    with WireServer() as server:
        server.add(transcript, delay=0.05)
        with (
            httpx.Client(base_url=server.url) as client,
            client.stream("POST", "/s") as response,
        ):
            reads = list(response.iter_raw())
    # Pieces are 50 ms apart, so the first read can only hold the first piece.
    assert reads[0] == transcript.chunks()[0]
    assert len(reads) >= 2 and b"".join(reads) == transcript.encode()


def test_request_bodies_are_read_fully_including_chunked_uploads() -> None:
    def upload() -> Iterator[bytes]:
        yield b'{"part":'
        yield b' "two"}'

    echo = Transcript(path="/up", format="json", events=[{}])
    with WireServer(echo) as server, httpx.Client(base_url=server.url) as client:
        client.post("/up", content=b"x" * 100_000)
        client.post("/up", content=upload())
    sized, chunked = server.requests
    assert sized.body == b"x" * 100_000
    assert chunked.headers["transfer-encoding"] == "chunked"
    assert chunked.json() == {"part": "two"}
    assert isinstance(chunked, RecordedRequest)


def test_httpx_sse_parses_byte_at_a_time() -> None:
    with WireServer() as server:
        server.add(anthropic_thinking(), chunk_size=1)
        with (
            httpx.Client(base_url=server.url) as client,
            httpx_sse.connect_sse(client, "POST", "/v1/messages") as source,
        ):
            events = [(sse.event, sse.json()["type"]) for sse in source.iter_sse()]
    assert [name for name, _ in events] == [e["event"] for e in anthropic_thinking().events]
    assert all(name == kind for name, kind in events)


def test_client_leaving_early_prints_no_traceback(capfd: pytest.CaptureFixture[str]) -> None:
    transcript = Transcript(path="/s", events=[{"data": "x" * 1000} for _ in range(50)])
    with WireServer() as server:
        server.add(transcript, delay=0.002)
        with httpx.Client(base_url=server.url) as client:
            with client.stream("POST", "/s") as response:
                next(response.iter_raw())
            time.sleep(0.1)
            # The server still answers on a fresh connection afterwards.
            assert client.post("/s").status_code == 200
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err


@pytest.mark.anyio
async def test_async_context_manager_with_httpx(anyio_backend: str) -> None:
    async with WireServer(ollama_chat()) as server, httpx.AsyncClient(base_url=server.url) as c:
        response = await c.post("/api/chat", json={"model": "m"})
    assert [json.loads(line)["done"] for line in response.text.splitlines()] == [
        False,
        False,
        False,
        True,
    ]


# ---------------------------------------------------------------------------
# The real SDKs


def test_openai_sync_stream_and_request_log() -> None:
    with WireServer(openai_chat()) as server, _openai_client(server) as client:
        stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        assert _openai_summary(stream) == EXPECTED_OPENAI
    (request,) = server.requests
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer k"
    assert request.json() == {"model": "m", "messages": MESSAGES, "stream": True}


@pytest.mark.parametrize(
    "options",
    [{"chunk_size": 1}, {"chunk_size": 7}, {"cut_points": [1, 2, 50, 51, 300]}],
)
def test_openai_parses_rechunked_bodies_identically(options: dict[str, Any]) -> None:
    with WireServer() as server:
        server.add(openai_chat(), **options)
        with _openai_client(server) as client:
            stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            assert _openai_summary(stream) == EXPECTED_OPENAI


@pytest.mark.parametrize("options", [{"disconnect_after": 2}, {"disconnect_at_byte": 250}])
def test_openai_disconnect_mid_stream_raises(options: dict[str, Any]) -> None:
    with WireServer() as server:
        server.add(openai_chat(), **options)
        received = []
        with _openai_client(server) as client, pytest.raises(openai.APIConnectionError):
            stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            for chunk in stream:
                received.append(chunk)
        assert len(received) < len(EXPECTED_OPENAI)


def test_openai_rate_limit_error() -> None:
    with (
        WireServer(openai_rate_limited()) as server,
        _openai_client(server) as client,
        pytest.raises(openai.RateLimitError) as caught,
    ):
        client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert caught.value.status_code == 429
    assert caught.value.code == "rate_limit_exceeded"
    assert caught.value.response.headers["retry-after"] == "1"
    assert "Rate limit reached" in str(caught.value)


def test_openai_conversation_turns_then_error() -> None:
    with (
        WireServer(openai_chat(), openai_rate_limited()) as server,
        _openai_client(server) as client,
    ):
        first = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        assert _openai_summary(first) == EXPECTED_OPENAI
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert len(server.requests) == 2


@pytest.mark.anyio
async def test_openai_async_stream(anyio_backend: str) -> None:
    async with WireServer() as server:
        server.add(openai_chat(), chunk_size=3)
        async with openai.AsyncOpenAI(
            base_url=server.url + "/v1", api_key="k", max_retries=0, timeout=CLIENT_TIMEOUT
        ) as client:
            stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            async with stream:
                chunks = [chunk async for chunk in stream]
    assert _openai_summary(chunks) == EXPECTED_OPENAI


@pytest.mark.anyio
async def test_openai_async_disconnect_raises(anyio_backend: str) -> None:
    async with WireServer() as server:
        server.add(openai_chat(), disconnect_at_byte=300)
        async with openai.AsyncOpenAI(
            base_url=server.url + "/v1", api_key="k", max_retries=0, timeout=CLIENT_TIMEOUT
        ) as client:
            stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            with pytest.raises(openai.APIConnectionError):
                async for _ in stream:
                    pass


def test_ollama_ndjson_stream() -> None:
    with WireServer() as server:
        server.add(ollama_chat(), chunk_size=5)
        with ollama.Client(host=server.url, timeout=CLIENT_TIMEOUT) as client:
            parts = list(client.chat(model="m", messages=MESSAGES, stream=True))
    assert [(p.message.thinking, p.message.content, p.done) for p in parts] == [
        ("Pondering", "", False),
        (" deeply.", "", False),
        (None, "Done.", False),
        (None, "", True),
    ]
    assert server.requests[0].path == "/api/chat"
    assert server.requests[0].json()["stream"] is True


def test_anthropic_thinking_stream() -> None:
    with WireServer() as server:
        server.add(anthropic_thinking(), chunk_size=2)
        with anthropic.Anthropic(
            base_url=server.url, api_key="k", max_retries=0, timeout=CLIENT_TIMEOUT
        ) as client:
            stream = client.messages.create(
                model="claude-test",
                max_tokens=1024,
                messages=MESSAGES,
                thinking={"type": "enabled", "budget_tokens": 1024},
                stream=True,
            )
            events = list(stream)
    assert [e.type for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    thinking, signature = events[2], events[3]
    assert thinking.type == "content_block_delta" and signature.type == "content_block_delta"
    assert thinking.delta.type == "thinking_delta"
    assert thinking.delta.thinking == "Hmm, let me see."
    assert signature.delta.type == "signature_delta"
    assert signature.delta.signature == "c2lnbmF0dXJl"
    headers = server.requests[0].headers
    # Older SDKs send x-api-key; the installed one sends a bearer token instead.
    assert headers.get("x-api-key") == "k" or headers.get("authorization") == "Bearer k"
    assert "anthropic-version" in headers


def test_bedrock_converse_stream(bedrock: Callable[[WireServer], Any]) -> None:
    with WireServer() as server:
        server.add(bedrock_converse(), chunk_size=1)
        client = bedrock(server)
        response = client.converse_stream(
            modelId=BEDROCK_MODEL,
            messages=[{"role": "user", "content": [{"text": "why?"}]}],
        )
        events = list(response["stream"])
    assert response["ResponseMetadata"]["RequestId"] == "rid-1"
    assert [next(iter(e)) for e in events] == [
        "messageStart",
        "contentBlockDelta",
        "contentBlockDelta",
        "contentBlockStop",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    ]
    assert events[1]["contentBlockDelta"] == {
        "delta": {"reasoningContent": {"text": "hi"}},
        "contentBlockIndex": 0,
    }
    assert events[7]["metadata"]["usage"]["totalTokens"] == 7
    (request,) = server.requests
    # boto3 percent-encodes the ':' of the model id; the {modelId} route still matched.
    assert request.path == "/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse-stream"
    assert request.json()["messages"][0]["content"] == [{"text": "why?"}]


def test_bedrock_invoke_model_with_response_stream(
    bedrock: Callable[[WireServer], Any],
) -> None:
    with WireServer(bedrock_invoke()) as server:
        client = bedrock(server)
        response = client.invoke_model_with_response_stream(
            modelId="anthropic.claude-3-7-sonnet", body=b"{}"
        )
        inner = [json.loads(e["chunk"]["bytes"]) for e in response["body"]]
    assert inner == [
        {"type": "message_start", "n": 1},
        {"type": "content_block_delta", "text": "ü"},
    ]
    (request,) = server.requests
    assert request.path == "/model/anthropic.claude-3-7-sonnet/invoke-with-response-stream"


def test_bedrock_in_stream_exception(bedrock: Callable[[WireServer], Any]) -> None:
    transcript = bedrock_converse()
    transcript.events[2:] = [
        {"exception_type": "modelStreamErrorException", "payload": {"message": "model broke"}}
    ]
    with WireServer(transcript) as server:
        client = bedrock(server)
        stream = client.converse_stream(modelId=BEDROCK_MODEL, messages=[])["stream"]
        received = []
        with pytest.raises(botocore.exceptions.EventStreamError) as caught:
            for event in stream:
                received.append(event)
    assert len(received) == 2
    assert caught.value.response["Error"] == {
        "Code": "modelStreamErrorException",
        "Message": "model broke",
    }


def test_bedrock_disconnect_mid_frame_raises(bedrock: Callable[[WireServer], Any]) -> None:
    transcript = bedrock_converse()
    first, second = transcript.chunks()[:2]
    cut = len(first) + len(second) // 2
    with WireServer() as server:
        server.add(transcript, disconnect_at_byte=cut)
        client = bedrock(server)
        stream = client.converse_stream(modelId=BEDROCK_MODEL, messages=[])["stream"]
        received = []
        # botocore iterates the urllib3 response directly for event streams, so
        # the raw urllib3 error escapes rather than a botocore wrapper.
        with pytest.raises(urllib3.exceptions.ProtocolError):
            for event in stream:
                received.append(event)
    assert received == [{"messageStart": {"role": "assistant"}}]


# ---------------------------------------------------------------------------
# Stalls and shutdown


def test_hang_gives_client_read_timeout_and_stop_is_prompt() -> None:
    with WireServer() as server, _openai_client(server, timeout=0.3) as client:
        server.add(openai_chat(), hang_after=1)
        stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            list(stream)
        assert time.monotonic() - started < 2
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 1


def test_stop_returns_promptly_while_a_client_waits_on_a_stalled_reply() -> None:
    server = WireServer().start()
    server.add(openai_chat(), hang_after=0)
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.settimeout(5)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, "the server closed the connection before its headers"
        head += chunk
    assert head.startswith(b"HTTP/1.1 200")

    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 1
    # The stalled reply ends without the terminating chunk: the client just sees EOF.
    rest = head.split(b"\r\n\r\n", 1)[1]
    while chunk := sock.recv(4096):
        rest += chunk
    assert b"0\r\n\r\n" not in rest
    sock.close()
    server.stop()  # idempotent


def test_stop_closes_idle_keep_alive_connections() -> None:
    with WireServer(openai_chat()) as server:
        client = httpx.Client(base_url=server.url)
        client.post("/v1/chat/completions")
        before = threading.active_count()
    # The handler thread parked on the pooled connection has been woken and ended.
    assert threading.active_count() < before
    client.close()


def test_url_requires_a_running_server() -> None:
    server = WireServer(openai_chat())
    with pytest.raises(RuntimeError):
        _ = server.url
    with server:
        assert server.routes() == [("POST", "/v1/chat/completions", 1)]
        with pytest.raises(RuntimeError):
            server.start()


# --------------------------------------------------------------------------- port, responder


def test_a_fixed_port_is_the_port_it_listens_on() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    with WireServer("openai_chat_oneshot", port=port) as server:
        assert server.port == port and server.url == f"http://127.0.0.1:{port}"
        assert httpx.post(server.url + "/v1/chat/completions", json={}, timeout=5).status_code
    with pytest.raises(ValueError, match="port"):
        WireServer(port=70000)


def test_a_busy_port_names_itself() -> None:
    with WireServer() as taken, pytest.raises(OSError, match=str(taken.port)):
        WireServer(port=taken.port).start()


def test_the_responder_chooses_from_the_body_and_none_falls_back_to_the_routes() -> None:
    plain = Transcript(path="/any", format="json", events=[{"answer": "from the responder"}])

    def choose(request: RecordedRequest) -> Transcript | None:
        return plain if request.body and request.json().get("pick") else None

    with WireServer(Transcript(path="/any", format="json", events=[{"answer": "route"}]),
                    responder=choose) as server:  # fmt: skip
        picked = httpx.post(server.url + "/whatever", json={"pick": True}, timeout=5)
        routed = httpx.post(server.url + "/any", json={"pick": False}, timeout=5)
    assert picked.json() == {"answer": "from the responder"}
    assert routed.json() == {"answer": "route"}
    assert [request.path for request in server.requests] == ["/whatever", "/any"]
