"""Reading server-sent events the way a browser does, for the tests (independent of the app)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx


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


def get(
    url: str, *, last_event_id: str | None = None, params: dict[str, str] | None = None
) -> httpx.Response:
    headers = {"accept": "text/event-stream"}
    if last_event_id is not None:
        headers["last-event-id"] = last_event_id
    return httpx.get(url, headers=headers, params=params, timeout=20)


def after_entry(events: list[Event], entry_id: str) -> list[Event]:
    """What the whole stream has after the last event of entry ``entry_id``."""
    last = max(i for i, event in enumerate(events) if event.id == entry_id)
    return events[last + 1 :]
