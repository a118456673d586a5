"""A recorded provider response (:class:`Transcript`): its JSON form, and its bytes per wire format.

A transcript names the route it answers (method, path) and the response it replays (status,
headers, events). Its ``events`` become body bytes according to its ``format``: SSE events,
NDJSON lines, AWS event-stream frames, one JSON document, or raw text. ``WireServer``
(``_wire``) serves them; this module does no I/O beyond reading transcript files.
"""

from __future__ import annotations

import base64
import importlib.resources
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast, get_args

from reasoning_stream.testing._eventstream import (
    chunk_payload,
    error_frame,
    event_frame,
    exception_frame,
)

__all__ = ["Transcript", "TranscriptFormat", "compact_json"]

TranscriptFormat = Literal["sse", "ndjson", "eventstream", "json", "raw"]
"""How a transcript's ``events`` become response bytes."""

_FORMATS: tuple[str, ...] = get_args(TranscriptFormat)

_DEFAULT_CONTENT_TYPES: dict[str, str] = {
    # The charset parameter matches what OpenAI and Anthropic actually send, so
    # clients that compare the header loosely and strictly both see real values.
    "sse": "text/event-stream; charset=utf-8",
    "ndjson": "application/x-ndjson",
    "eventstream": "application/vnd.amazon.eventstream",
    "json": "application/json",
    "raw": "application/octet-stream",
}

_NEWLINES = ("\n", "\r\n", "\r")
_SSE_KEYS = frozenset({"event", "data", "id", "retry", "comment", "raw"})
_EVENTSTREAM_KEYS = frozenset(
    {
        "event_type",
        "exception_type",
        "error_code",
        "error_message",
        "payload",
        "payload_bytes_b64",
        "inner",
    }
)
_TRANSCRIPT_KEYS = frozenset(
    {
        "name",
        "method",
        "path",
        "status",
        "format",
        "headers",
        "events",
        "body",
        "newline",
        "description",
        "notes",
    }
)
# The server owns body framing; a transcript header repeating these would corrupt it.
_FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding"})
_BUNDLED_PACKAGE = "reasoning_stream"
_BUNDLED_FOLDER = "transcripts"


def compact_json(value: Any) -> str:
    """JSON as providers send it: no spaces, non-ASCII text as raw UTF-8."""
    # ensure_ascii=False keeps non-ASCII text as raw UTF-8, as providers send it,
    # so byte-level re-chunking can split a multi-byte character between reads.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _split_lines(text: str) -> list[str]:
    # SSE treats CR, LF and CRLF alike as line ends; a trailing one still means
    # one more (empty) data line, which str.splitlines would drop.
    return re.split(r"\r\n|\r|\n", text)


def _sse_piece(event: Any, newline: str) -> bytes:
    if not isinstance(event, Mapping):
        raise ValueError(f"an sse event must be an object, got {event!r}")
    unknown = set(event) - _SSE_KEYS
    if unknown:
        raise ValueError(f"unknown sse event keys {sorted(unknown)}; allowed: {sorted(_SSE_KEYS)}")
    if "raw" in event:
        if len(event) != 1 or not isinstance(event["raw"], str):
            raise ValueError('an sse "raw" event must be {"raw": "<verbatim text>"} alone')
        return str(event["raw"]).encode("utf-8")
    lines: list[str] = []
    if "comment" in event:
        lines.extend(f": {line}" for line in _split_lines(str(event["comment"])))
    if "event" in event:
        lines.append(f"event: {event['event']}")
    if "id" in event:
        lines.append(f"id: {event['id']}")
    if "retry" in event:
        lines.append(f"retry: {int(event['retry'])}")
    if "data" in event:
        data = event["data"]
        text = data if isinstance(data, str) else compact_json(data)
        lines.extend(f"data: {line}" for line in _split_lines(text))
    if not lines:
        raise ValueError("an sse event needs at least one of event, data, id, retry, comment")
    return (newline.join(lines) + newline + newline).encode("utf-8")


def _eventstream_piece(event: Any) -> bytes:
    if not isinstance(event, Mapping):
        raise ValueError(f"an eventstream event must be an object, got {event!r}")
    unknown = set(event) - _EVENTSTREAM_KEYS
    if unknown:
        raise ValueError(
            f"unknown eventstream event keys {sorted(unknown)}; "
            f"allowed: {sorted(_EVENTSTREAM_KEYS)}"
        )
    kinds = [key for key in ("event_type", "exception_type", "error_code") if key in event]
    if len(kinds) != 1:
        raise ValueError(
            "an eventstream event needs exactly one of event_type, exception_type, error_code"
        )
    if kinds[0] == "error_code":
        return error_frame(str(event["error_code"]), str(event.get("error_message", "")))
    sources = [key for key in ("payload", "payload_bytes_b64", "inner") if key in event]
    if len(sources) > 1:
        raise ValueError("give at most one of payload, payload_bytes_b64, inner")
    if "payload_bytes_b64" in event:
        payload = base64.b64decode(event["payload_bytes_b64"], validate=True)
    elif "inner" in event:
        payload = chunk_payload(event["inner"])
    else:
        payload = compact_json(event.get("payload", {})).encode("utf-8")
    if kinds[0] == "event_type":
        return event_frame(str(event["event_type"]), payload)
    return exception_frame(str(event["exception_type"]), payload)


@dataclass(kw_only=True)
class Transcript:
    """One recorded HTTP exchange: the route it answers and the response it replays.

    ``events`` are interpreted according to ``format``:

    * ``"sse"``: objects with optional ``event``, ``data`` (a string is sent
      verbatim, any other JSON value compactly encoded), ``id``, ``retry`` and
      ``comment``; or ``{"raw": "..."}`` for verbatim bytes.
    * ``"ndjson"``: JSON values, one compact line each.
    * ``"eventstream"``: AWS event-stream frames, each
      ``{"event_type": ..., "payload": {...}}``,
      ``{"exception_type": ..., "payload": {...}}`` or
      ``{"error_code": ..., "error_message": ...}``; ``payload_bytes_b64`` gives a
      raw payload and ``inner`` wraps a JSON value the way
      ``InvokeModelWithResponseStream`` ``chunk`` events do.
    * ``"json"``: exactly one JSON value, the whole body (unless ``body`` is set).
    * ``"raw"``: ``body`` sent verbatim, or string events sent as separate pieces.
    """

    name: str = ""
    method: str = "POST"
    path: str
    status: int = 200
    format: TranscriptFormat = "sse"
    headers: dict[str, str] = field(default_factory=dict)
    events: list[Any] = field(default_factory=list)
    body: str | None = None
    newline: str = "\n"
    description: str = ""

    def __post_init__(self) -> None:
        self.method = self.method.upper()
        if self.format not in _FORMATS:
            raise ValueError(
                f"unknown transcript format {self.format!r}; expected one of {_FORMATS}"
            )
        if not self.path.startswith("/"):
            raise ValueError(f"transcript path must start with '/': {self.path!r}")
        if not 100 <= self.status <= 599:
            raise ValueError(f"bad HTTP status {self.status}")
        if self.newline not in _NEWLINES:
            raise ValueError(f"newline must be one of {_NEWLINES!r}")
        if self.body is not None and self.format not in ("json", "raw"):
            raise ValueError('"body" is only meaningful for the "json" and "raw" formats')
        # Encoding once here turns a malformed transcript into an error at load
        # time instead of a confusing failure inside a server thread.
        self.chunks()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Transcript:
        """Build a transcript from its JSON object form.

        Keys starting with ``_`` are ignored, so data files can carry annotations.
        """
        keys = {key for key in data if not key.startswith("_")}
        unknown = keys - _TRANSCRIPT_KEYS
        if unknown:
            raise ValueError(
                f"unknown transcript keys {sorted(unknown)}; allowed: {sorted(_TRANSCRIPT_KEYS)}"
            )
        if "path" not in data:
            raise ValueError('a transcript needs a "path"')
        fields: dict[str, Any] = {key: data[key] for key in keys if key != "notes"}
        if "notes" in keys and "description" not in keys:
            fields["description"] = str(data["notes"])
        fields["headers"] = {str(k): str(v) for k, v in dict(data.get("headers", {})).items()}
        fields["events"] = list(data.get("events", []))
        return cls(**fields)

    @classmethod
    def load(cls, source: str | os.PathLike[str]) -> Transcript:
        """Read a transcript from a JSON file, or a bundled one by bare name.

        A bare name such as ``"openai_chat_reasoning"`` (no ``.json`` suffix and no
        path separator) is looked up in the package's ``transcripts`` folder; the
        file stem becomes the transcript's name when the file gives none.
        """
        text = str(source)
        is_path = (
            isinstance(source, os.PathLike)
            or text.endswith(".json")
            or "/" in text
            or os.sep in text
        )
        if is_path:
            path = Path(source)
            raw = path.read_text(encoding="utf-8")
            stem = path.stem
        else:
            resource = (
                importlib.resources.files(_BUNDLED_PACKAGE) / _BUNDLED_FOLDER / f"{text}.json"
            )
            if not resource.is_file():
                known = ", ".join(cls.bundled()) or "none"
                raise FileNotFoundError(f"no bundled transcript named {text!r} (bundled: {known})")
            raw = resource.read_text(encoding="utf-8")
            stem = text
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError(f"transcript {text!r} is not a JSON object")
        data.setdefault("name", stem)
        return cls.from_dict(data)

    @staticmethod
    def bundled() -> list[str]:
        """Names of the transcripts shipped in the package's ``transcripts`` folder."""
        folder = importlib.resources.files(_BUNDLED_PACKAGE) / _BUNDLED_FOLDER
        if not folder.is_dir():
            return []
        return sorted(
            item.name.removesuffix(".json")
            for item in folder.iterdir()
            if item.name.endswith(".json") and item.is_file()
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object form; ``Transcript.from_dict(t.to_dict()) == t``."""
        data: dict[str, Any] = {
            "name": self.name,
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "format": self.format,
            "headers": dict(self.headers),
            "events": list(self.events),
        }
        if self.body is not None:
            data["body"] = self.body
        if self.newline != "\n":
            data["newline"] = self.newline
        if self.description:
            data["description"] = self.description
        return data

    @property
    def content_type(self) -> str:
        """The Content-Type sent: the transcript's own header, else the format's default."""
        for key, value in self.headers.items():
            if key.lower() == "content-type":
                return value
        return _DEFAULT_CONTENT_TYPES[self.format]

    def response_headers(self) -> dict[str, str]:
        """Headers sent with the reply, minus body framing, which the server decides."""
        headers = {"Content-Type": self.content_type}
        for key, value in self.headers.items():
            if key.lower() not in _FRAMING_HEADERS and key.lower() != "content-type":
                headers[key] = value
        return headers

    def chunks(self) -> list[bytes]:
        """The body as one natural piece per event (a line, an SSE event, a frame)."""
        if self.format == "sse":
            return [_sse_piece(event, self.newline) for event in self.events]
        if self.format == "ndjson":
            return [(compact_json(event) + self.newline).encode("utf-8") for event in self.events]
        if self.format == "eventstream":
            return [_eventstream_piece(event) for event in self.events]
        if self.format == "json":
            if self.body is not None:
                if self.events:
                    raise ValueError('a "json" transcript takes "body" or one event, not both')
                return [self.body.encode("utf-8")]
            if len(self.events) != 1:
                raise ValueError(
                    f'a "json" transcript needs exactly one event, got {len(self.events)}'
                )
            return [compact_json(self.events[0]).encode("utf-8")]
        if self.body is not None:
            if self.events:
                raise ValueError('a "raw" transcript takes "body" or string events, not both')
            return [self.body.encode("utf-8")]
        if not all(isinstance(event, str) for event in self.events):
            raise ValueError('"raw" transcript events must all be strings')
        return [cast(str, event).encode("utf-8") for event in self.events]

    def encode(self) -> bytes:
        """The whole response body."""
        return b"".join(self.chunks())
