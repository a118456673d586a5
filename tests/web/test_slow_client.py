"""A client that stops reading an SSE response from a RedisHub app costs bounded memory.

Real uvicorn, real Redis, and a raw socket with a small receive window that reads nothing
while a long run publishes: the reader thread must not pile the whole stream up for it. When
the client reads again it gets every entry exactly once (resuming with ``Last-Event-ID`` if
the response ended early).
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from typing import Any

from reasoning_stream import ReasoningDelta
from reasoning_stream.hub import RedisHub
from reasoning_stream.hub._follow import SUBSCRIBER_BUFFER, Follower
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.web import create_app
from tests.web.conftest import serve
from tests.web.sse import WAIT, get, parse

ENTRIES = 20_000
TEXT = "x" * 500  # 20,000 entries of 500 characters: 10 MB, far beyond the socket buffers


def buffered(follower: Follower | None) -> int:
    """Entries the reader thread holds for its subscribers now (taken under its lock)."""
    if follower is None:
        return 0
    with follower._lock:
        subscriptions = [s for _, subs in follower._follows.values() for s in subs]
    return sum(sum(len(batch) for _, batch in list(s.buffer)) for s in subscriptions)


def stalled_get(base: str, path: str) -> socket.socket:
    """A GET whose client reads nothing: a 4 KiB receive window, nothing taken from it."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(WAIT)
    sock.connect((host, int(port)))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    return sock


def read_all(sock: socket.socket) -> bytes:
    """The rest of a chunked SSE response, up to its end (or the server closing)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)  # reading again, fast
    data = bytearray()
    deadline = time.monotonic() + WAIT
    while not data.endswith(b"0\r\n\r\n"):
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        data += chunk
        if time.monotonic() > deadline:
            raise TimeoutError("the response did not end")
    return bytes(data)


def unchunk(raw: bytes) -> str:
    """The body of a chunked HTTP/1.1 response."""
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:100]
    out = bytearray()
    at = 0
    while at < len(body):
        end = body.find(b"\r\n", at)
        if end == -1:  # cut inside a chunk's size line
            break
        size = int(body[at:end], 16)
        if size == 0:
            break
        out += body[end + 2 : end + 2 + size]
        at = end + 2 + size + 2
    return out.decode()


def test_a_stalled_sse_client_costs_bounded_memory_and_loses_nothing(redis_url: str) -> None:
    hub = RedisHub(redis_url)
    stream_id = f"slow-{uuid.uuid4().hex}"
    pipe = ScriptedPipe([ReasoningDelta(TEXT) for _ in range(ENTRIES)])
    seen: list[str] = []
    pipe.set_streaming_callback(seen.append)
    peak = 0
    try:
        with serve(create_app(hub, timeout=5)) as base:
            sock = stalled_get(base, f"/streams/{stream_id}")
            time.sleep(0.3)  # the app subscribes and waits for the stream
            runner = threading.Thread(target=hub.run, args=(stream_id, pipe, "go"))
            runner.start()
            while runner.is_alive():
                peak = max(peak, buffered(hub._reader_thread))
                time.sleep(0.005)
            runner.join(WAIT)
            # The run is over and Redis has it all; the client still has read nothing.
            for _ in range(40):
                peak = max(peak, buffered(hub._reader_thread))
                time.sleep(0.005)
            events: list[Any] = parse(unchunk(read_all(sock)))
            sock.close()
            if events[-1].event != "end":  # ended early: resume as an EventSource would
                rest = get(f"{base}/streams/{stream_id}", last_event_id=events[-1].id)
                events += parse(rest.text)
    finally:
        hub.close()
    assert peak <= SUBSCRIBER_BUFFER, f"the reader thread held {peak} entries for one client"
    ids = [event.id for event in events]
    assert len(ids) == len(set(ids)), "an entry was sent twice"
    assert "".join(event.json()["chunk"] for event in events) == "".join(seen)
    assert events[-1].event == "end"


def subscriptions(follower: Follower | None) -> int:
    """Subscriptions the reader thread serves now."""
    if follower is None:
        return 0
    with follower._lock:
        return sum(len(subs) for _, subs in follower._follows.values())


def test_a_client_that_stops_reading_is_cut_off_and_resumes_losing_nothing(redis_url: str) -> None:
    hub = RedisHub(redis_url)
    stream_id = f"cut-{uuid.uuid4().hex}"
    pipe = ScriptedPipe([ReasoningDelta(TEXT) for _ in range(ENTRIES)])
    seen: list[str] = []
    pipe.set_streaming_callback(seen.append)
    try:
        with serve(create_app(hub, timeout=5, write_timeout=0.5)) as base:
            sock = stalled_get(base, f"/streams/{stream_id}")
            time.sleep(0.3)
            hub.run(stream_id, pipe, "go")
            # The app may still be sending what the run published: give its blocked write time
            # to pass the 0.5 s timeout (the stream is 22 MB, far beyond the socket buffers).
            time.sleep(2.0)
            # The client still reads nothing; within the write timeout the app lets it go,
            # and with it the subscription the reader thread served for it.
            deadline = time.monotonic() + WAIT
            while subscriptions(hub._reader_thread) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert subscriptions(hub._reader_thread) == 0, "the stalled client is still served"
            raw = read_all(sock)
            sock.close()
            assert not raw.endswith(b"0\r\n\r\n"), "the response was not cut"
            events: list[Any] = parse(unchunk(raw).rpartition("\n\n")[0] + "\n\n")
            rest = get(f"{base}/streams/{stream_id}", last_event_id=events[-1].id)
            events += parse(rest.text)
    finally:
        hub.close()
    ids = [event.id for event in events]
    assert len(ids) == len(set(ids)), "an entry was sent twice"
    assert "".join(event.json()["chunk"] for event in events) == "".join(seen)
    assert events[-1].event == "end"
