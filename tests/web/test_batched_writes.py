"""A response writes what the hub had waiting in one write, not one write per entry.

A reader that comes late (or falls behind) used to cost the server one write per entry of its
backlog; now entries the hub holds together go out together, each still whole (an entry's
events are never split across writes, which ``Last-Event-ID`` resumption counts on).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import anyio
import pytest

from reasoning_stream import ReasoningDelta, TextDelta
from reasoning_stream.hub import Hub
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.web import create_app

ENTRIES = 200


async def body_writes(app: Any, path: str) -> list[bytes]:
    """The bodies of the ASGI ``http.response.body`` messages of one GET."""
    path, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 80),
    }
    writes: list[bytes] = []

    async def receive() -> dict[str, Any]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            writes.append(message["body"])

    with anyio.fail_after(30):
        await app(scope, receive, send)
    return writes


@pytest.mark.parametrize("protocol", ["channel", "ag-ui", "vercel-ui"])
@pytest.mark.anyio
async def test_a_late_reader_gets_the_backlog_in_few_writes(hub: Hub, protocol: str) -> None:
    stream_id = f"late-{uuid.uuid4().hex}"
    script = [ReasoningDelta(f"r{n} ") for n in range(ENTRIES // 2)] + [
        TextDelta(f"t{n} ") for n in range(ENTRIES // 2)
    ]
    await hub.arun(stream_id, ScriptedPipe(script), "go")
    entries = hub.read(stream_id)
    writes = await body_writes(create_app(hub), f"/streams/{stream_id}?protocol={protocol}")
    assert len(writes) <= 5, len(writes)
    # Every entry is there once, whole, in order: the ids of the SSE events.
    body = b"".join(writes)
    ids = [m.decode() for m in re.findall(rb"(?m)^id: (\S+)", body)]
    assert ids, body[:300]
    # An entry's events share its id (AG-UI makes several of one): the ids, each run of
    # equal ones taken once, are entries of the stream in its order, ending with the last.
    distinct = [entry_id for n, entry_id in enumerate(ids) if n == 0 or ids[n - 1] != entry_id]
    order = [entry.id for entry in entries]
    positions = [order.index(entry_id) for entry_id in distinct]
    assert positions == sorted(set(positions)) and distinct[-1] == order[-1]
    for write in writes:  # each write ends on an event's end: no entry is split
        assert write.endswith(b"\n\n")
