"""The OpenAI chat completions wire, both ways: pure, no I/O, no framework.

In: a ``POST /v1/chat/completions`` body checked and its messages turned into our chat
messages (:func:`read_request`). Out: a hub stream's entries as ``chat.completion.chunk``
objects (:class:`ChunkTranslator`), a finished run as one ``chat.completion``
(:func:`completion`), and errors in OpenAI's shape (:func:`error_body`).

The shapes follow the API reference (https://platform.openai.com/docs/api-reference/chat)
and the ``openai`` SDK's types (``ChatCompletionChunk``, ``ChatCompletion``,
``CompletionUsage``). Reasoning goes out as ``reasoning_content``, the field DeepSeek
introduced (https://api-docs.deepseek.com/guides/reasoning_model) and vLLM, SGLang and
LiteLLM send: the SDK keeps it as an extra field (``delta.model_extra``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._capture import PipeResult
from .._events import (
    Finish,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    Usage,
    UsageReport,
)
from ..hub import Entry

__all__ = [
    "ChatRequest",
    "ChunkTranslator",
    "RequestError",
    "completion",
    "error_body",
    "read_request",
    "usage_body",
]

_OPENAI_FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter"})


class RequestError(Exception):
    """A request the endpoint refuses: HTTP ``status`` and OpenAI's error fields."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        param: str | None = None,
        code: str | None = None,
        type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.param = param
        self.code = code
        self.type = type

    def body(self) -> dict[str, Any]:
        """The JSON body: ``{"error": {"message", "type", "param", "code"}}``."""
        return error_body(str(self), type=self.type, param=self.param, code=self.code)


def error_body(
    message: str,
    *,
    type: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """An error in OpenAI's shape, which the ``openai`` SDK turns into its ``APIError`` s."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """What the endpoint reads of a request body."""

    model: str
    messages: list[dict[str, Any]]
    """Our chat messages, one per request message, in order (``developer`` is ``system``;
    an assistant message's ``reasoning_content`` is its inert ``thinking``)."""
    stream: bool
    include_usage: bool


def read_request(body: object) -> ChatRequest:
    """The request in ``body``, or :class:`RequestError` naming the field to fix."""
    if not isinstance(body, Mapping):
        raise RequestError('send a JSON object: {"model": "...", "messages": [...]}')
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise RequestError("model is a required string: the name of a served model", param="model")
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise RequestError(f"stream is true or false, got {stream!r:.40}", param="stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, Mapping):
        raise RequestError("stream_options is an object", param="stream_options")
    n = body.get("n", 1)
    if n not in (1, None):
        raise RequestError("this server makes one choice per request: send n=1", param="n")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise RequestError("messages is a non-empty array of message objects", param="messages")
    messages = [_message(index, message) for index, message in enumerate(raw)]
    return ChatRequest(model, messages, stream, bool(options.get("include_usage")))


def _message(index: int, message: object) -> dict[str, Any]:
    where = f"messages[{index}]"
    if not isinstance(message, Mapping):
        raise RequestError(f"{where} is not a message object", param=where)
    role = message.get("role")
    if role in ("system", "developer"):
        return {"role": "system", "content": _text(where, message.get("content"))}
    if role == "user":
        content = message.get("content")
        if isinstance(content, list) and all(_is_text_part(part) for part in content):
            content = _text(where, content)
        elif not isinstance(content, str | list):
            raise RequestError(f"{where}.content is a string or an array of parts", param=where)
        return {"role": "user", "content": content}
    if role == "assistant":
        turn: dict[str, Any] = {
            "role": "assistant",
            "content": _text(where, message.get("content")),
        }
        calls = message.get("tool_calls")
        if calls:
            turn["tool_calls"] = _tool_calls(where, calls)
        echoed = message.get("reasoning_content")
        if isinstance(echoed, str) and echoed:
            # Readable reasoning a DeepSeek-aware client sends back: kept as the inert
            # ``thinking`` key (never sent as content); the passback decides its use.
            turn["thinking"] = echoed
        return turn
    if role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise RequestError(
                f"{where} is a tool result: give it the tool_call_id it answers", param=where
            )
        return {
            "role": "tool",
            "tool_call_id": call_id,
            "content": _text(where, message.get("content")),
        }
    raise RequestError(
        f"{where} has role {role!r:.40}; use system, developer, user, assistant or tool",
        param=where,
    )


def _is_text_part(part: object) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "text"


def _text(where: str, content: object) -> str:
    """A message's content as text: a string, ``null``, or an array of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(_is_text_part(part) for part in content):
        texts = [part.get("text") for part in content]
        if all(isinstance(text, str) for text in texts):
            return "".join(str(text) for text in texts)
    raise RequestError(
        f"{where}.content is a string or an array of text parts here", param=f"{where}.content"
    )


def _tool_calls(where: str, calls: object) -> list[dict[str, Any]]:
    if not isinstance(calls, list):
        raise RequestError(f"{where}.tool_calls is an array", param=f"{where}.tool_calls")
    checked = []
    for position, call in enumerate(calls):
        at = f"{where}.tool_calls[{position}]"
        function = call.get("function") if isinstance(call, Mapping) else None
        if (
            not isinstance(call, Mapping)
            or not isinstance(call.get("id"), str)
            or not isinstance(function, Mapping)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments", ""), str)
        ):
            raise RequestError(
                f'{at} is {{"id": "...", "type": "function", "function": {{"name": "...", '
                '"arguments": "..."}}',
                param=at,
            )
        checked.append(
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": function["name"], "arguments": function.get("arguments", "")},
            }
        )
    return checked


# ------------------------------------------------------------------------------- the way out


def usage_body(usage: Usage) -> dict[str, Any]:
    """``CompletionUsage``: counts the provider did not report are 0 (the fields are ints).

    Our ``output_tokens`` include reasoning, as OpenAI's ``completion_tokens`` do.
    """
    prompt = usage.input_tokens or 0
    completion_tokens = usage.output_tokens or 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens or 0},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0},
    }


def finish_reason(status: str | None, reason: str | None, called_tools: bool) -> str:
    """OpenAI's ``finish_reason`` for a run that ended with ``status``.

    ``length`` for a length stop, ``tool_calls`` when the answer called tools, the provider's
    reason when it is one of OpenAI's, else ``stop`` (a run stopped by
    ``DELETE /streams/{id}`` ends with ``stop`` too: the answer is what was said until then).
    """
    if status == "length" or reason == "length":
        return "length"
    if called_tools:
        return "tool_calls"
    if reason in _OPENAI_FINISH_REASONS and reason != "tool_calls":
        return reason
    return "stop"  # "tool_calls" without a call would send a client looking for one


class ChunkTranslator:
    """A stream's entries, fed in order from the first, as ``chat.completion.chunk`` dicts.

    The first chunk carries ``role``; reasoning deltas go out as ``reasoning_content``, answer
    text as ``content``, each complete tool call as one ``tool_calls`` delta (``index``, ``id``,
    ``type``, ``function.name`` and ``function.arguments``). The final entry gives the chunk
    with ``finish_reason``, then, with ``include_usage``, the usage chunk (``choices: []``);
    a failed run gives ``{"error": {...}}`` instead, which the SDK raises as ``APIError``.
    """

    def __init__(self, completion_id: str, model: str, created: int, include_usage: bool) -> None:
        self._head = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": None,
        }
        self._include_usage = include_usage
        self._role_sent = False
        self._tool_calls = 0
        self._usage = Usage()
        self._reason: str | None = None

    def feed(self, entry: Entry) -> list[dict[str, Any]]:
        """The chunks ``entry`` gives (none for markers and most bookkeeping)."""
        out: list[dict[str, Any]] = []
        event = entry.event
        if isinstance(event, ReasoningDelta) and event.text:
            out.append(self._delta({"reasoning_content": event.text}))
        elif isinstance(event, TextDelta) and event.text:
            out.append(self._delta({"content": event.text}))
        elif isinstance(event, ToolCall):
            call = {"index": self._tool_calls, **event.to_message()}
            self._tool_calls += 1
            out.append(self._delta({"tool_calls": [call]}))
        elif isinstance(event, UsageReport):
            self._usage = self._usage.merged(event.usage)
        elif isinstance(event, Finish):
            self._reason = event.reason
        if entry.final:
            out += self._ending(entry.status, entry.error)
        return out

    def _delta(self, delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        if not self._role_sent:
            self._role_sent = True
            delta = {"role": "assistant", **delta}
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
        return {**self._head, "choices": [choice], "usage": None}

    def _ending(self, status: str | None, error: str | None) -> list[dict[str, Any]]:
        if status == "error":
            reason = error or "the run ended with an error"
            return [error_body(reason, type="server_error", code="upstream_error")]
        reason = finish_reason(status, self._reason, self._tool_calls > 0)
        chunks = [self._delta({}, reason)]
        if self._include_usage:
            chunks.append({**self._head, "choices": [], "usage": usage_body(self._usage)})
        return chunks


def completion(
    result: PipeResult, *, completion_id: str, model: str, created: int
) -> dict[str, Any]:
    """A finished run as one ``chat.completion`` object.

    ``message.content`` is the answer (``null`` when the turn only called tools),
    ``message.reasoning_content`` the reasoning, when there was any.
    """
    message: dict[str, Any] = {
        "role": "assistant",
        "content": result.text if result.text or not result.tool_calls else None,
        "refusal": None,
    }
    if result.model_reasoning:
        message["reasoning_content"] = result.model_reasoning
    if result.tool_calls:
        message["tool_calls"] = [call.to_message() for call in result.tool_calls]
    reason = finish_reason(result.status, result.finish_reason, bool(result.tool_calls))
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "system_fingerprint": None,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reason}],
        "usage": usage_body(result.usage),
    }


def sse(data: Mapping[str, Any] | str, entry_id: str | None = None) -> bytes:
    """One server-sent event: ``id:`` (the hub entry it came from), then ``data:``."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = "" if entry_id is None else f"id: {entry_id}\n"
    return f"{head}data: {text}\n\n".encode()
