"""Reading server-sent events the way a browser does, for the tests (independent of the app)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

_T = TypeVar("_T")


@dataclass(frozen=True)
class Event:
    id: str | None
    event: str
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


def parse(body: str) -> list[Event]:
    """Parse an SSE body by the WHATWG rules we rely on (id, event, data; comments skipped)."""
    events: list[Event] = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, list[str]] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields.setdefault(name, []).append(value[1:] if value.startswith(" ") else value)
        if "data" in fields:
            events.append(
                Event(
                    fields.get("id", [None])[-1],
                    fields.get("event", ["message"])[-1],
                    "\n".join(fields["data"]),
                )
            )
    return events


WAIT = 30.0
"""Longest a test reads one response. A read timeout alone never fires on a stream that sends
keep-alive comments, so a run that hangs would hold its readers forever: this fails them."""


def within(pieces: Iterable[_T], seconds: float = WAIT) -> Iterator[_T]:
    """``pieces`` (a response's bytes or lines), raising ``TimeoutError`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    for piece in pieces:
        yield piece
        if time.monotonic() > deadline:
            raise TimeoutError(f"the response was still streaming after {seconds} s")


def get(
    url: str,
    *,
    last_event_id: str | None = None,
    params: dict[str, str] | None = None,
    client: httpx.Client | None = None,
) -> httpx.Response:
    """A GET read to its end, in at most ``WAIT`` seconds (keep-alive comments included)."""
    headers = {"accept": "text/event-stream"}
    if last_event_id is not None:
        headers["last-event-id"] = last_event_id
    with contextlib.ExitStack() as stack:
        if client is None:
            client = stack.enter_context(httpx.Client(timeout=20))
        response = stack.enter_context(client.stream("GET", url, headers=headers, params=params))
        body = b"".join(within(response.iter_bytes()))
    # The body is decoded already: the copy must not claim an encoding or a framing.
    kept = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(
        response.status_code, headers=kept, content=body, request=response.request
    )


def after_entry(events: list[Event], entry_id: str) -> list[Event]:
    """What the whole stream has after the last event of entry ``entry_id``."""
    last = max(i for i, event in enumerate(events) if event.id == entry_id)
    return events[last + 1 :]
