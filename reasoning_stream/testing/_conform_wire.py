"""What the conformance probe's upstream says, read from the bundled transcripts by hand.

For each wire shape: the whole response a streamed transcript adds up to (a one-shot reply
for a gateway that asks without streaming), and the pieces a rule compares against (blocks,
signatures, items, parts). Nothing here calls a pipe: these readings are the reference the
gateway's traffic is checked against, so they must not share code with what they check.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from reasoning_stream.testing._transcript import Transcript

__all__ = [
    "anthropic_blocks",
    "anthropic_omitted",
    "chat_message",
    "fingerprint",
    "gemini_parts",
    "ollama_message",
    "oneshot",
    "responses_output",
    "sse_data",
]


def sse_data(transcript: Transcript) -> Iterator[Any]:
    """The JSON ``data`` of each SSE event (``[DONE]`` and comments left out)."""
    for event in transcript.events:
        data = event.get("data") if isinstance(event, Mapping) else None
        if isinstance(data, Mapping):
            yield data


def fingerprint(value: object) -> str:
    """A short stable name for an opaque payload, so a report never prints the payload."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return f"sha256:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:10]} ({len(text)} chars)"


# ------------------------------------------------------------------------------ anthropic


def anthropic_blocks(transcript: Transcript) -> list[dict[str, Any]]:
    """The content blocks an Anthropic Messages stream adds up to, in index order."""
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for data in sse_data(transcript):
        kind, index = data.get("type"), data.get("index")
        if kind == "content_block_start":
            blocks[index] = dict(data["content_block"])
        elif kind == "content_block_delta":
            block, delta = blocks[index], data["delta"]
            if delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = block.get("signature", "") + delta["signature"]
            elif delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                partial[index] = partial.get(index, "") + delta["partial_json"]
    for index, text in partial.items():
        blocks[index]["input"] = json.loads(text) if text.strip() else {}
    return [blocks[index] for index in sorted(blocks)]


def anthropic_omitted(transcript: Transcript) -> Transcript:
    """The same stream as a model with thinking display ``omitted`` sends it: every thinking
    block keeps its signature and loses its text (signature-only blocks)."""
    events = [
        event
        for event in transcript.events
        if not (
            isinstance(event, Mapping)
            and isinstance(event.get("data"), Mapping)
            and event["data"].get("type") == "content_block_delta"
            and event["data"]["delta"].get("type") == "thinking_delta"
        )
    ]
    return replace(transcript, name=f"{transcript.name}_omitted", events=events)


def _anthropic_message(transcript: Transcript) -> dict[str, Any]:
    message: dict[str, Any] = {}
    for data in sse_data(transcript):
        if data.get("type") == "message_start":
            message = dict(data["message"])
        elif data.get("type") == "message_delta":
            message.update(data.get("delta", {}))
            message["usage"] = {**message.get("usage", {}), **data.get("usage", {})}
    message["content"] = anthropic_blocks(transcript)
    return message


# ------------------------------------------------------------------------------ responses


def responses_output(transcript: Transcript) -> list[dict[str, Any]]:
    """The output items of a Responses stream, as each ``output_item.done`` gave it."""
    return [
        dict(data["item"])
        for data in sse_data(transcript)
        if data.get("type") == "response.output_item.done"
    ]


def _responses_body(transcript: Transcript) -> dict[str, Any]:
    for data in sse_data(transcript):
        if data.get("type") in ("response.completed", "response.incomplete"):
            body = dict(data["response"])
            body["output"] = responses_output(transcript)
            return body
    raise ValueError(f"transcript {transcript.name!r} never completes its response")


# ------------------------------------------------------------------------- chat completions


def chat_message(transcript: Transcript) -> dict[str, Any]:
    """The assistant message a Chat Completions stream adds up to (reasoning fields, tool
    calls and OpenRouter's ``reasoning_details`` included)."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    calls: dict[int, dict[str, Any]] = {}
    details: list[Any] = []
    for data in sse_data(transcript):
        for choice in data.get("choices") or ():
            delta = choice.get("delta") or {}
            for field in ("content", "reasoning_content", "reasoning"):
                if isinstance(delta.get(field), str):
                    message[field] = (message.get(field) or "") + delta[field]
            details.extend(delta.get("reasoning_details") or ())
            for call in delta.get("tool_calls") or ():
                held = calls.setdefault(
                    call["index"], {"type": "function", "function": {"arguments": ""}}
                )
                if call.get("id"):
                    held["id"] = call["id"]
                function = call.get("function") or {}
                if function.get("name"):
                    held["function"]["name"] = function["name"]
                held["function"]["arguments"] += function.get("arguments") or ""
    if details:
        message["reasoning_details"] = details
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    return message


def _chat_body(transcript: Transcript) -> dict[str, Any]:
    first: Mapping[str, Any] = {}
    finish: str | None = None
    usage: Any = None
    for data in sse_data(transcript):
        first = first or data
        for choice in data.get("choices") or ():
            finish = choice.get("finish_reason") or finish
        usage = data.get("usage") or usage
    body: dict[str, Any] = {
        "id": first.get("id", "chatcmpl-conform"),
        "object": "chat.completion",
        "created": first.get("created", 0),
        "model": first.get("model", ""),
        "choices": [{"index": 0, "message": chat_message(transcript), "finish_reason": finish}],
    }
    if usage:
        body["usage"] = usage
    return body


# --------------------------------------------------------------------------------- gemini


def gemini_parts(transcript: Transcript) -> list[dict[str, Any]]:
    """Every part of a Gemini stream, in order, as it was sent (signatures where they were)."""
    return [
        dict(part)
        for data in sse_data(transcript)
        for candidate in data.get("candidates") or ()
        for part in (candidate.get("content") or {}).get("parts") or ()
    ]


def _gemini_body(transcript: Transcript) -> dict[str, Any]:
    body: dict[str, Any] = {}
    finish: str | None = None
    for data in sse_data(transcript):
        body.update({key: value for key, value in data.items() if key != "candidates"})
        for each in data.get("candidates") or ():
            finish = each.get("finishReason") or finish
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": gemini_parts(transcript)},
        "index": 0,
    }
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], **body}


# --------------------------------------------------------------------------------- ollama


def ollama_message(transcript: Transcript) -> dict[str, Any]:
    """The assistant message an Ollama ``/api/chat`` NDJSON stream adds up to."""
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    for line in transcript.events:
        part = line.get("message") if isinstance(line, Mapping) else None
        if not isinstance(part, Mapping):
            continue
        for field in ("content", "thinking"):
            if isinstance(part.get(field), str):
                message[field] = message.get(field, "") + part[field]
        if part.get("tool_calls"):
            message["tool_calls"] = [*message.get("tool_calls", ()), *part["tool_calls"]]
    return message


def _ollama_body(transcript: Transcript) -> dict[str, Any]:
    last = next(
        (dict(line) for line in reversed(transcript.events) if isinstance(line, Mapping)), {}
    )
    return {**last, "message": ollama_message(transcript), "done": True}


# ------------------------------------------------------------------------------- one-shot


def oneshot(transcript: Transcript, shape: str, path: str | None = None) -> Transcript:
    """The one-shot (non-streaming) reply a streamed transcript of ``shape`` adds up to.

    ``shape`` is ``"anthropic"``, ``"responses"``, ``"chat"``, ``"gemini"`` or ``"ollama"``;
    ``path``
    replaces the route (Gemini answers one-shot requests at ``:generateContent``).
    """
    builders = {
        "anthropic": _anthropic_message,
        "responses": _responses_body,
        "chat": _chat_body,
        "gemini": _gemini_body,
        "ollama": _ollama_body,
    }
    return Transcript(
        name=f"{transcript.name}_oneshot",
        path=path or transcript.path,
        format="json",
        events=[builders[shape](transcript)],
    )
