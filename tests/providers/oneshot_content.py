"""One answer's content, written out as each provider's stream and as its one-shot body.

The one-shot tests build both wire forms from the same :class:`Answer`, so a stream and a
non-streaming response of the same answer can be compared through the real SDKs. The
builders follow each provider's documented wire shapes; they share nothing with the package.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from reasoning_stream.testing._wire import Transcript


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: dict[str, Any]

    @property
    def text(self) -> str:
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class Answer:
    """What a model said: reasoning parts (with their signatures), answer text, tool calls."""

    reasoning: tuple[str, ...] = ("The user wants the weather. ", "Paris is in <think> France.")
    signatures: tuple[str, ...] = ("sig-A1b2C3==", "sig-D4e5F6==")
    text: str = "Let me look that up: <think> is literal here."
    calls: tuple[Call, ...] = (Call("call_7Qx", "get_weather", {"city": "Paris"}),)
    input_tokens: int = 31
    output_tokens: int = 77
    reasoning_tokens: int = 48
    response_id: str = "resp-0001"
    redacted: str | None = None
    """Base64 of a redacted reasoning block (Anthropic, Bedrock), when there is one."""
    extra: dict[str, Any] = field(default_factory=dict)


def pieces(text: str, size: int = 7) -> list[str]:
    """``text`` cut into deltas of ``size`` characters (at least one, possibly empty)."""
    return [text[start : start + size] for start in range(0, len(text), size)] or [""]


def sse(path: str, events: list[dict[str, Any]], **extra: Any) -> Transcript:
    return Transcript(path=path, format="sse", events=events, **extra)


def body(path: str, value: Any, **extra: Any) -> Transcript:
    return Transcript(path=path, format="json", events=[value], **extra)


# ---------------------------------------------------------------------- chat completions


def chat_stream(answer: Answer, *, field_name: str = "reasoning_content") -> Transcript:
    """A Chat Completions stream: reasoning deltas, content deltas, tool-call fragments."""
    reasoning = "".join(answer.reasoning)
    chunks: list[dict[str, Any]] = []

    def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
        chunks.append(
            {
                "data": {
                    "id": answer.response_id,
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": "m",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
            }
        )

    chunk({"role": "assistant", "content": ""})
    for piece in pieces(reasoning) if reasoning else ():
        chunk({field_name: piece})
    for piece in pieces(answer.text) if answer.text else ():
        chunk({"content": piece})
    for position, call in enumerate(answer.calls):
        start = {"index": position, "id": call.id, "type": "function"}
        chunk({"tool_calls": [{**start, "function": {"name": call.name, "arguments": ""}}]})
        for piece in pieces(call.text, 5):
            chunk({"tool_calls": [{"index": position, "function": {"arguments": piece}}]})
    chunk({}, "tool_calls" if answer.calls else "stop")
    chunks.append(
        {
            "data": {
                "id": answer.response_id,
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [],
                "usage": _chat_usage(answer),
            }
        }
    )
    chunks.append({"data": "[DONE]"})
    return sse("/v1/chat/completions", chunks)


def chat_body(answer: Answer, *, field_name: str = "reasoning_content") -> Transcript:
    """The ``chat.completion`` object of the same answer."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    reasoning = "".join(answer.reasoning)
    if reasoning:
        message[field_name] = reasoning
    if answer.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.text}}
            for c in answer.calls
        ]
    return body(
        "/v1/chat/completions",
        {
            "id": answer.response_id,
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if answer.calls else "stop",
                }
            ],
            "usage": _chat_usage(answer),
        },
    )


def _chat_usage(answer: Answer) -> dict[str, Any]:
    return {
        "prompt_tokens": answer.input_tokens,
        "completion_tokens": answer.output_tokens,
        "total_tokens": answer.input_tokens + answer.output_tokens,
        "completion_tokens_details": {"reasoning_tokens": answer.reasoning_tokens},
    }


# ----------------------------------------------------------------------------- responses


def _responses_output(answer: Answer) -> list[dict[str, Any]]:
    output: list[dict[str, Any]] = [
        {
            "type": "reasoning",
            "id": "rs_0001",
            "summary": [{"type": "summary_text", "text": part} for part in answer.reasoning],
            "encrypted_content": "gAAAAB-encrypted-0001",
        }
    ]
    if answer.text:
        output.append(
            {
                "type": "message",
                "id": "msg_0001",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": answer.text, "annotations": []}],
            }
        )
    for position, call in enumerate(answer.calls):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_000{position}",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.text,
                "status": "completed",
            }
        )
    return output


def _response(answer: Answer, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    value: dict[str, Any] = {
        "id": answer.response_id,
        "object": "response",
        "created_at": 1,
        "status": status,
        "model": "o4-mini",
        "output": output,
    }
    if status == "completed":
        value["usage"] = {
            "input_tokens": answer.input_tokens,
            "output_tokens": answer.output_tokens,
            "total_tokens": answer.input_tokens + answer.output_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": answer.reasoning_tokens},
        }
    return value


def responses_stream(answer: Answer) -> Transcript:
    """A Responses stream: items added, summary and text deltas, items done, completed."""
    output = _responses_output(answer)
    events: list[dict[str, Any]] = []

    def event(kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": len(events), **fields}
        events.append({"event": kind, "data": data})

    event("response.created", response=_response(answer, "in_progress", []))
    for index, item in enumerate(output):
        kind = item["type"]
        if kind == "reasoning":
            event("response.output_item.added", output_index=index, item={**item, "summary": []})
            for part, text in enumerate(answer.reasoning):
                ids = {"item_id": item["id"], "output_index": index, "summary_index": part}
                event(
                    "response.reasoning_summary_part.added",
                    **ids,
                    part={"type": "summary_text", "text": ""},
                )
                for piece in pieces(text):
                    event("response.reasoning_summary_text.delta", **ids, delta=piece)
                event("response.reasoning_summary_text.done", **ids, text=text)
                event(
                    "response.reasoning_summary_part.done",
                    **ids,
                    part={"type": "summary_text", "text": text},
                )
        elif kind == "message":
            event(
                "response.output_item.added",
                output_index=index,
                item={**item, "content": [], "status": "in_progress"},
            )
            ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
            for piece in pieces(answer.text):
                event("response.output_text.delta", **ids, delta=piece)
        else:
            event(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            for piece in pieces(item["arguments"], 5):
                event(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=piece,
                )
            event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            )
        event("response.output_item.done", output_index=index, item=item)
    event("response.completed", response=_response(answer, "completed", output))
    return sse("/v1/responses", events)


def responses_body(answer: Answer) -> Transcript:
    """The ``response`` object of the same answer."""
    return body("/v1/responses", _response(answer, "completed", _responses_output(answer)))


# ----------------------------------------------------------------------------- anthropic


def _anthropic_content(answer: Answer) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": text, "signature": signature}
        for text, signature in zip(answer.reasoning, answer.signatures, strict=True)
    ]
    if answer.redacted is not None:
        content.append({"type": "redacted_thinking", "data": answer.redacted})
    if answer.text:
        content.append({"type": "text", "text": answer.text})
    content += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in answer.calls
    ]
    return content


def _anthropic_message(
    answer: Answer, content: list[dict[str, Any]], stop: str | None
) -> dict[str, Any]:
    return {
        "id": answer.response_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": answer.input_tokens,
            "output_tokens": answer.output_tokens if stop else 1,
            "output_tokens_details": {"thinking_tokens": answer.reasoning_tokens},
        },
    }


def anthropic_events(answer: Answer) -> list[dict[str, Any]]:
    """The raw Messages stream events of the answer (as data objects)."""
    stop = "tool_use" if answer.calls else "end_turn"
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": _anthropic_message(answer, [], None)}
    ]
    for index, block in enumerate(_anthropic_content(answer)):
        kind = block["type"]
        start: dict[str, Any]
        if kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
        elif kind == "redacted_thinking":
            start = dict(block)
        elif kind == "text":
            start = {"type": "text", "text": ""}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        events.append({"type": "content_block_start", "index": index, "content_block": start})

        def delta(value: dict[str, Any], at: int = index) -> None:
            events.append({"type": "content_block_delta", "index": at, "delta": value})

        if kind == "thinking":
            for piece in pieces(block["thinking"]):
                delta({"type": "thinking_delta", "thinking": piece})
            delta({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            for piece in pieces(block["text"]):
                delta({"type": "text_delta", "text": piece})
        elif kind == "tool_use":
            for piece in pieces(json.dumps(block["input"]), 5):
                delta({"type": "input_json_delta", "partial_json": piece})
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {
                "output_tokens": answer.output_tokens,
                "output_tokens_details": {"thinking_tokens": answer.reasoning_tokens},
            },
        }
    )
    events.append({"type": "message_stop"})
    return events


def anthropic_stream(answer: Answer) -> Transcript:
    return sse(
        "/v1/messages",
        [{"event": data["type"], "data": data} for data in anthropic_events(answer)],
    )


def anthropic_message(answer: Answer) -> dict[str, Any]:
    stop = "tool_use" if answer.calls else "end_turn"
    return _anthropic_message(answer, _anthropic_content(answer), stop)


def anthropic_body(answer: Answer) -> Transcript:
    return body("/v1/messages", anthropic_message(answer))


# -------------------------------------------------------------------------------- gemini


def _gemini_parts(answer: Answer) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": text, "thought": True} for text in answer.reasoning]
    if answer.text:
        parts.append({"text": answer.text})
    for position, call in enumerate(answer.calls):
        part: dict[str, Any] = {"functionCall": {"name": call.name, "args": call.arguments}}
        if position == 0:
            part["thoughtSignature"] = answer.signatures[0]
        parts.append(part)
    return parts


def _gemini_chunk(answer: Answer, parts: list[dict[str, Any]], last: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    value: dict[str, Any] = {"candidates": [candidate], "responseId": answer.response_id}
    if last:
        candidate["finishReason"] = "STOP"
        value["usageMetadata"] = {
            "promptTokenCount": answer.input_tokens,
            "candidatesTokenCount": answer.output_tokens - answer.reasoning_tokens,
            "thoughtsTokenCount": answer.reasoning_tokens,
            "totalTokenCount": answer.input_tokens + answer.output_tokens,
        }
    return value


def gemini_stream(answer: Answer, model: str) -> Transcript:
    """One part per chunk (the positions a stream gives signatures are those of the parts)."""
    parts = _gemini_parts(answer)
    events = [
        {"data": _gemini_chunk(answer, [part], position == len(parts) - 1)}
        for position, part in enumerate(parts)
    ] or [{"data": _gemini_chunk(answer, [], True)}]
    return sse(f"/v1beta/models/{model}:streamGenerateContent", events)


def gemini_body(answer: Answer, model: str) -> Transcript:
    return body(
        f"/v1beta/models/{model}:generateContent",
        _gemini_chunk(answer, _gemini_parts(answer), True),
    )


# -------------------------------------------------------------------------------- ollama


def ollama_stream(answer: Answer, *, content: str | None = None) -> Transcript:
    """NDJSON lines: thinking pieces, content pieces, tool calls, the final ``done`` line."""
    text = answer.text if content is None else content
    lines: list[dict[str, Any]] = []

    def line(message: dict[str, Any]) -> None:
        lines.append(
            {
                "model": "qwen3",
                "created_at": "2025-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": "", **message},
                "done": False,
            }
        )

    for piece in pieces("".join(answer.reasoning)) if answer.reasoning else ():
        line({"thinking": piece})
    for piece in pieces(text) if text else ():
        line({"content": piece})
    if answer.calls:
        line(
            {
                "tool_calls": [
                    {"function": {"name": c.name, "arguments": c.arguments}} for c in answer.calls
                ]
            }
        )
    lines.append(_ollama_final(answer, {"role": "assistant", "content": ""}))
    return Transcript(path="/api/chat", format="ndjson", events=lines)


def _ollama_final(answer: Answer, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "qwen3",
        "created_at": "2025-01-01T00:00:01Z",
        "message": message,
        "done": True,
        "done_reason": "stop",
        "total_duration": 2_000_000_000,
        "eval_duration": 1_000_000_000,
        "prompt_eval_count": answer.input_tokens,
        "eval_count": answer.output_tokens,
    }


def ollama_body(answer: Answer, *, content: str | None = None) -> Transcript:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": answer.text if content is None else content,
    }
    if answer.reasoning:
        message["thinking"] = "".join(answer.reasoning)
    if answer.calls:
        message["tool_calls"] = [
            {"function": {"name": c.name, "arguments": c.arguments}} for c in answer.calls
        ]
    return body("/api/chat", _ollama_final(answer, message))


# ------------------------------------------------------------------------------- bedrock


def _converse_content(answer: Answer) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [
        {"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}}
        for text, signature in zip(answer.reasoning, answer.signatures, strict=True)
    ]
    if answer.redacted is not None:
        content.append({"reasoningContent": {"redactedContent": answer.redacted}})
    if answer.text:
        content.append({"text": answer.text})
    content += [
        {"toolUse": {"toolUseId": c.id, "name": c.name, "input": c.arguments}} for c in answer.calls
    ]
    return content


def _converse_usage(answer: Answer) -> dict[str, Any]:
    return {
        "inputTokens": answer.input_tokens,
        "outputTokens": answer.output_tokens,
        "totalTokens": answer.input_tokens + answer.output_tokens,
    }


def converse_stream(answer: Answer) -> Transcript:
    """ConverseStream event-stream frames of the answer."""
    frames: list[dict[str, Any]] = [
        {"event_type": "messageStart", "payload": {"role": "assistant"}}
    ]

    def delta(index: int, value: dict[str, Any]) -> None:
        frames.append(
            {
                "event_type": "contentBlockDelta",
                "payload": {"contentBlockIndex": index, "delta": value},
            }
        )

    for index, block in enumerate(_converse_content(answer)):
        if "reasoningContent" in block:
            reasoning = block["reasoningContent"]
            if "reasoningText" in reasoning:
                for piece in pieces(reasoning["reasoningText"]["text"]):
                    delta(index, {"reasoningContent": {"text": piece}})
                delta(
                    index,
                    {"reasoningContent": {"signature": reasoning["reasoningText"]["signature"]}},
                )
            else:
                delta(
                    index, {"reasoningContent": {"redactedContent": reasoning["redactedContent"]}}
                )
        elif "text" in block:
            for piece in pieces(block["text"]):
                delta(index, {"text": piece})
        else:
            tool = block["toolUse"]
            start = {"toolUse": {"toolUseId": tool["toolUseId"], "name": tool["name"]}}
            frames.append(
                {
                    "event_type": "contentBlockStart",
                    "payload": {"contentBlockIndex": index, "start": start},
                }
            )
            for piece in pieces(json.dumps(tool["input"]), 5):
                delta(index, {"toolUse": {"input": piece}})
        frames.append({"event_type": "contentBlockStop", "payload": {"contentBlockIndex": index}})
    stop = "tool_use" if answer.calls else "end_turn"
    frames.append({"event_type": "messageStop", "payload": {"stopReason": stop}})
    frames.append(
        {
            "event_type": "metadata",
            "payload": {"usage": _converse_usage(answer), "metrics": {"latencyMs": 100}},
        }
    )
    return Transcript(
        path="/model/{modelId}/converse-stream",
        format="eventstream",
        events=frames,
        headers={"x-amzn-requestid": answer.response_id},
    )


def converse_body(answer: Answer) -> Transcript:
    return body(
        "/model/{modelId}/converse",
        {
            "output": {"message": {"role": "assistant", "content": _converse_content(answer)}},
            "stopReason": "tool_use" if answer.calls else "end_turn",
            "usage": _converse_usage(answer),
            "metrics": {"latencyMs": 100},
        },
        headers={"x-amzn-requestid": answer.response_id},
    )


def invoke_anthropic_stream(answer: Answer) -> Transcript:
    """InvokeModelWithResponseStream of a Claude answer: Messages events in chunk bytes."""
    events = anthropic_events(answer)
    metrics = {"inputTokenCount": answer.input_tokens, "outputTokenCount": answer.output_tokens}
    events[-1] = {
        **events[-1],
        "amazon-bedrock-invocationMetrics": {
            **metrics,
            "invocationLatency": 9,
            "firstByteLatency": 3,
        },
    }
    return Transcript(
        path="/model/{modelId}/invoke-with-response-stream",
        format="eventstream",
        events=[{"event_type": "chunk", "inner": data} for data in events],
        headers={"x-amzn-requestid": "req-" + answer.response_id},
    )


def invoke_body(value: dict[str, Any], answer: Answer) -> Transcript:
    """An InvokeModel reply: the model's JSON, the token counts in Bedrock's headers."""
    return body(
        "/model/{modelId}/invoke",
        value,
        headers={
            "x-amzn-requestid": "req-" + answer.response_id,
            "x-amzn-bedrock-input-token-count": str(answer.input_tokens),
            "x-amzn-bedrock-output-token-count": str(answer.output_tokens),
        },
    )


def invoke_text_stream(text: str, answer: Answer) -> Transcript:
    """A DeepSeek-style text stream (``choices[].text``) with the metrics on the last chunk."""
    parts = pieces(text)
    frames: list[dict[str, Any]] = []
    for position, piece in enumerate(parts):
        last = position == len(parts) - 1
        inner: dict[str, Any] = {
            "choices": [{"index": 0, "text": piece, "stop_reason": "stop" if last else None}]
        }
        if last:
            inner["amazon-bedrock-invocationMetrics"] = {
                "inputTokenCount": answer.input_tokens,
                "outputTokenCount": answer.output_tokens,
            }
        frames.append({"event_type": "chunk", "inner": inner})
    return Transcript(
        path="/model/{modelId}/invoke-with-response-stream",
        format="eventstream",
        events=frames,
        headers={"x-amzn-requestid": "req-" + answer.response_id},
    )


def redacted_blob() -> str:
    return base64.b64encode(b"\x00redacted\xffreasoning").decode("ascii")
