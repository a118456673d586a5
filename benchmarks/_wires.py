"""Long streams in every provider's wire format, grown from the bundled transcripts.

Each provider's stream is a bundled transcript whose reasoning and answer deltas are replaced by
``chunks`` deltas of 3-5 characters (half reasoning, half answer), every one a copy of the
transcript's own first delta of that kind, so the shapes are the recorded ones. SSE and NDJSON
streams are served as ready frames (a ``raw`` transcript: the server only writes them); Bedrock's
binary event stream is encoded by the server per request, in its own process.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reasoning_stream.testing._wire import Transcript

__all__ = ["WIRES", "Wire", "expected", "transcript_for"]

_WORDS = (
    "the", "light", "scatters", "off", "small", "molecules,", "so", "blue", "wins;", "shorter",
    "wavelengths", "bend", "more", "and", "the", "eye", "sees", "what", "the", "air", "sends",
    "back.", "check", "again:",
)  # fmt: skip

Kind = Callable[[Any], str | None]
"""``event -> "r" (a reasoning delta), "t" (an answer delta) or None``."""
Setter = Callable[[Any, str], None]


@dataclass(frozen=True)
class Wire:
    """One provider's stream: the transcript it grows from and how to find and fill deltas."""

    provider: str
    source: str
    kind: Kind
    set_reasoning: Setter
    set_text: Setter
    prefix: str
    """Where this provider's stream is served (its transcript's path goes below it)."""
    root: str = ""
    """The API root below the prefix that pipes and SDK clients are given."""

    @property
    def base(self) -> str:
        """The API root (append it to the server's URL)."""
        return self.prefix + self.root


def _anthropic_kind(event: Any) -> str | None:
    data = event.get("data", {})
    if data.get("type") != "content_block_delta":
        return None
    return {"thinking_delta": "r", "text_delta": "t"}.get(data["delta"]["type"])


def _responses_kind(event: Any) -> str | None:
    kind = event.get("data", {}).get("type")
    if kind == "response.reasoning_summary_text.delta":
        return "r"
    return "t" if kind == "response.output_text.delta" else None


def _chat_kind(field: str) -> Kind:
    def kind(event: Any) -> str | None:
        data = event.get("data")
        if not isinstance(data, dict) or not data.get("choices"):
            return None
        delta = data["choices"][0]["delta"]
        if delta.get(field):
            return "r"
        return "t" if delta.get("content") else None

    return kind


def _chat_set(field: str) -> Setter:
    def put(event: Any, piece: str) -> None:
        delta = event["data"]["choices"][0]["delta"]
        delta.pop("reasoning_details", None)
        delta[field] = piece

    return put


def _chat_set_text(event: Any, piece: str) -> None:
    event["data"]["choices"][0]["delta"]["content"] = piece


def _ollama_kind(event: Any) -> str | None:
    message = event.get("message", {})
    if message.get("thinking"):
        return "r"
    return "t" if message.get("content") and not event.get("done") else None


def _gemini_kind(event: Any) -> str | None:
    parts = event["data"]["candidates"][0]["content"]["parts"]
    if len(parts) != 1 or not parts[0].get("text"):
        return None
    return "r" if parts[0].get("thought") else "t"


def _gemini_set(event: Any, piece: str) -> None:
    part = event["data"]["candidates"][0]["content"]["parts"][0]
    part.pop("thoughtSignature", None)
    part["text"] = piece


def _bedrock_kind(event: Any) -> str | None:
    if event.get("event_type") != "contentBlockDelta":
        return None
    delta = event["payload"]["delta"]
    if "text" in delta.get("reasoningContent", {}):
        return "r"
    return "t" if "text" in delta else None


def _set_path(*path: str) -> Setter:
    def put(event: Any, piece: str) -> None:
        target = event
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = piece

    return put


WIRES: dict[str, Wire] = {
    wire.provider: wire
    for wire in (
        Wire(
            "Anthropic",
            "anthropic_thinking",
            _anthropic_kind,
            _set_path("data", "delta", "thinking"),
            _set_path("data", "delta", "text"),
            "/anthropic",
        ),
        Wire(
            "Responses",
            "openai_responses_summary",
            _responses_kind,
            _set_path("data", "delta"),
            _set_path("data", "delta"),
            "/responses",
            "/v1",
        ),
        Wire(
            "chat",
            "openai_chat_reasoning_content",
            _chat_kind("reasoning_content"),
            _chat_set("reasoning_content"),
            _chat_set_text,
            "/chat",
            "/v1",
        ),
        Wire(
            "Ollama",
            "ollama_chat_reasoning",
            _ollama_kind,
            _set_path("message", "thinking"),
            _set_path("message", "content"),
            "/ollama",
        ),
        Wire(
            "Gemini",
            "gemini_reasoning",
            _gemini_kind,
            _gemini_set,
            _gemini_set,
            "/gemini",
            "/v1beta",
        ),
        Wire(
            "OpenRouter",
            "openrouter_reasoning",
            _chat_kind("reasoning"),
            _chat_set("reasoning"),
            _chat_set_text,
            "/openrouter",
            "/api/v1",
        ),
        Wire(
            "Bedrock",
            "bedrock_converse_reasoning",
            _bedrock_kind,
            _set_path("payload", "delta", "reasoningContent", "text"),
            _set_path("payload", "delta", "text"),
            "/bedrock",
        ),
    )
}
"""Every provider's wire, in table order."""


def _prose(length: int, rng: random.Random) -> str:
    words: list[str] = []
    total = 0
    while total < length:
        word = rng.choice(_WORDS)
        words.append(word)
        total += len(word) + 1
    text = " ".join(words)[:length]
    return text[:-1] + "." if text.endswith(" ") else text


def _pieces(chunks: int, rng: random.Random) -> list[str]:
    sizes = [rng.randint(3, 5) for _ in range(chunks)]
    text = _prose(sum(sizes), rng)
    pieces, start = [], 0
    for size in sizes:
        pieces.append(text[start : start + size])
        start += size
    return pieces


def expected(chunks: int) -> tuple[str, str]:
    """The reasoning and the answer every long stream of ``chunks`` deltas carries."""
    rng = random.Random(11)
    return "".join(_pieces(chunks // 2, rng)), "".join(_pieces(chunks - chunks // 2, rng))


def transcript_for(wire: Wire, chunks: int) -> Transcript:
    """``wire``'s transcript grown to ``chunks`` deltas, served at ``wire.prefix`` + its path."""
    rng = random.Random(11)
    reasoning, answer = _pieces(chunks // 2, rng), _pieces(chunks - chunks // 2, rng)
    source = Transcript.load(wire.source)
    events: list[Any] = []
    placed = {"r": False, "t": False}
    for event in source.events:
        kind = wire.kind(event)
        if kind is None:
            events.append(event)
            continue
        if placed[kind]:
            continue
        placed[kind] = True
        put = wire.set_reasoning if kind == "r" else wire.set_text
        for piece in reasoning if kind == "r" else answer:
            grown = copy.deepcopy(event)
            put(grown, piece)
            events.append(grown)
    data = source.to_dict()
    data["name"] = f"bench-{wire.provider}-{chunks}"
    data["path"] = wire.prefix + source.path
    if source.format in ("sse", "ndjson"):
        # Ready frames: the server only writes them.
        grown_transcript = Transcript.from_dict({**data, "events": events})
        data["events"] = [piece.decode("utf-8") for piece in grown_transcript.chunks()]
        data["format"] = "raw"
        data["headers"] = {**source.headers, "Content-Type": source.content_type}
    else:
        data["events"] = events
    return Transcript.from_dict(data)


def dumps(value: Any) -> str:
    """Compact JSON, as the servers send it."""
    return json.dumps(value, separators=(",", ":"))
