"""How the lean transports take the body's bytes from httpx: raw, decompressed, or re-encoded.

An unencoded UTF-8 reply is read raw (``iter_raw``); a compressed one through httpx's
decompression (``iter_bytes``); one whose charset is not UTF-8 as httpx reads its text. Each
case is a real reply from the loopback ``WireServer`` (gzip-compressed bytes in odd-sized
pieces, a declared ``iso-8859-1`` charset) against an independent expectation: the same
transcript served plainly, or served as the UTF-8 text httpx makes of the latin-1 bytes.
"""

from __future__ import annotations

import gzip
from dataclasses import replace
from typing import Any

import pytest

from reasoning_stream.testing import Reply, Transcript, WireServer
from tests.providers.test_lean_transports import summary
from tests.reliability import (
    FLAVOURS,
    RESOURCE_CHECKS,
    TARGETS,
    collected_garbage,  # noqa: F401 - the fixture RESOURCE_CHECKS names
    frozen_survivors,  # noqa: F401 - the fixture collected_garbage needs
    play,
    raw_transcript,
    transcript,
)

pytestmark = RESOURCE_CHECKS

LEAN = {
    "openai-chat-httpx": "openai_chat_inline_think",
    "openrouter": "openrouter_reasoning",
    "anthropic-httpx": "anthropic_tool_answer",
    "openai-responses-httpx": "openai_responses_followup",
    "gemini": "gemini_tool_answer",
    "ollama-httpx": "ollama_chat_reasoning",
}
"""Every lean target, with a bundled transcript of its wire."""

_TEXT_KEYS = frozenset({"thinking", "content", "text", "delta", "reasoning", "reasoning_content"})


def accented(original: Transcript) -> Transcript:
    """The transcript with non-ASCII text after every non-empty text field."""

    def walk(value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, str) and value and key in _TEXT_KEYS:
            return value + " é 日本 🙂"
        return value

    return replace(original, events=[walk(event) for event in original.events])


def served(original: Transcript, body: bytes, size: int, **headers: str) -> Reply:
    """``body`` in ``size``-byte pieces on ``original``'s route, with extra headers."""
    raw = raw_transcript(original, [body[i : i + size] for i in range(0, len(body), size)])
    raw.headers.update(headers)
    return Reply(raw)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("target", sorted(LEAN))
def test_a_compressed_reply_reads_as_the_plain_one(
    wire: WireServer, target: str, flavour: str
) -> None:
    name = LEAN[target]
    original = accented(transcript(name))
    plain = summary(play(wire, TARGETS[target], name, Reply(original), flavour))  # type: ignore[arg-type]
    packed = served(original, gzip.compress(original.encode()), 7, **{"Content-Encoding": "gzip"})
    assert summary(play(wire, TARGETS[target], name, packed, flavour)) == plain  # type: ignore[arg-type]
    assert plain["error"] is None and "é 日本 🙂" in plain["channel"]


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("target", sorted(LEAN))
def test_a_latin1_reply_reads_as_httpx_reads_its_text(
    wire: WireServer, target: str, flavour: str
) -> None:
    name = LEAN[target]
    original = accented(transcript(name))
    body = original.encode()
    latin1 = served(
        original,
        body,
        5,
        **{"Content-Type": original.content_type.partition(";")[0] + "; charset=iso-8859-1"},
    )
    # What httpx's iter_text makes of the latin-1 reply, served as plain UTF-8.
    as_text = served(original, body.decode("latin-1").encode("utf-8"), 5)
    read = summary(play(wire, TARGETS[target], name, latin1, flavour))  # type: ignore[arg-type]
    assert read == summary(play(wire, TARGETS[target], name, as_text, flavour))  # type: ignore[arg-type]
    assert "Ã©" in read["channel"]  # the charset was honoured: UTF-8's é read as latin-1
