"""The prompt and the answer as GenAI message JSON (``gen_ai.input/output.messages``).

Messages are rebuilt from a whitelist of readable fields: opaque provider state (signatures,
encrypted and redacted reasoning) is never looked at, so it can never be exported.

>>> content_attributes("Hi", None, "full")
{'gen_ai.input.messages': '[{"role":"user","parts":[{"type":"text","content":"Hi"}]}]'}
>>> content_attributes("Hi", None, "lengths")
{'reasoning_stream.content.input.length': 2}
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias

from .._pipe import PipeResult, Prompt
from ._semconv import (
    FINISH_REASON_VALUES,
    INPUT_LENGTH,
    INPUT_MESSAGES,
    OUTPUT_MESSAGES,
    REASONING_LENGTH,
    SYSTEM_INSTRUCTIONS,
    TEXT_LENGTH,
)

__all__ = ["CAPTURE_LEVELS", "ContentCapture", "content_attributes"]

ContentCapture: TypeAlias = Literal["none", "lengths", "full"]
"""How much of the prompt, reasoning and answer text a span carries."""

CAPTURE_LEVELS: Final = ("none", "lengths", "full")

_SYSTEM_ROLES: Final = ("system", "developer")


def content_attributes(
    prompt: Prompt,
    result: PipeResult | None,
    capture: ContentCapture,
    *,
    separate_system: bool = False,
    instructions: str | None = None,
) -> dict[str, Any]:
    """The content attributes ``capture`` asks for.

    ``separate_system``: the provider sends system messages apart from the chat history
    (Anthropic's ``system``, Gemini's ``systemInstruction``, Bedrock's ``system``), so they go
    to ``gen_ai.system_instructions`` instead of the input messages; ``instructions`` is a
    system prompt the pipe sends on its own (the Responses API's ``instructions``).
    """
    inputs = _input_messages(prompt)
    if capture == "lengths":
        lengths: dict[str, Any] = {INPUT_LENGTH: sum(_part_length(m) for m in inputs)}
        if result is not None:
            lengths[REASONING_LENGTH] = len(result.model_reasoning)
            lengths[TEXT_LENGTH] = len(result.text)
        return lengths
    system: list[dict[str, Any]] = []
    if instructions:
        system.append({"type": "text", "content": instructions})
    if separate_system:
        system.extend(
            part for message in inputs if message["role"] in _SYSTEM_ROLES
            for part in message["parts"]
        )  # fmt: skip
        inputs = [message for message in inputs if message["role"] not in _SYSTEM_ROLES]
    attributes: dict[str, Any] = {INPUT_MESSAGES: _json(inputs)}
    if system:
        attributes[SYSTEM_INSTRUCTIONS] = _json(system)
    if result is not None:
        attributes[OUTPUT_MESSAGES] = _json([_output_message(result)])
    return attributes


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _part_length(message: Mapping[str, Any]) -> int:
    return sum(len(part.get("content", "")) for part in message["parts"])


def _output_message(result: PipeResult) -> dict[str, Any]:
    """The answer as a GenAI output message: reasoning parts, the text, tool calls.

    Built from readable fields only; ``reasoning_state`` is never looked at.
    """
    parts: list[dict[str, Any]] = [
        {"type": "reasoning", "content": segment}
        for segment in result.reasoning_segments
        if segment
    ]
    if result.text:
        parts.append({"type": "text", "content": result.text})
    for call in result.tool_calls:
        parts.append(
            {
                "type": "tool_call",
                "id": call.id,
                "name": call.name,
                "arguments": _arguments(call.arguments),
            }
        )
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    reason = result.finish_reason or ("error" if result.status == "error" else None)
    if reason:
        message["finish_reason"] = FINISH_REASON_VALUES.get(reason, reason)
    return message


def _arguments(text: str) -> object:
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return text


def _input_messages(prompt: Prompt) -> list[dict[str, Any]]:
    """The prompt as GenAI input messages, from readable fields only.

    Taken: ``role``; ``content`` as a string or as text and thinking blocks (their text only);
    ``thinking`` and ``reasoning_content`` strings; tool calls (id, name, arguments); a tool
    result's ``tool_call_id`` and content. Everything else a message may carry (signatures,
    encrypted or redacted reasoning, provider records) is left out.
    """
    if isinstance(prompt, str):
        return [{"role": "user", "parts": [{"type": "text", "content": prompt}]}]
    messages: list[dict[str, Any]] = []
    for message in prompt:
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        role = role if isinstance(role, str) else "user"
        parts: list[dict[str, Any]] = []
        for key in ("thinking", "reasoning_content"):
            value = message.get(key)
            if isinstance(value, str) and value:
                parts.append({"type": "reasoning", "content": value})
        content = message.get("content")
        if role == "tool":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": str(message.get("tool_call_id", "")),
                    "response": _text_of(content),
                }
            )
        else:
            parts.extend(_content_parts(content))
        for call in message.get("tool_calls") or ():
            part = _tool_call_part(call)
            if part is not None:
                parts.append(part)
        messages.append({"role": role, "parts": parts})
    return messages


def _content_parts(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}] if content else []
    parts: list[dict[str, Any]] = []
    if isinstance(content, Sequence):
        for block in content:
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind in ("text", "input_text", "output_text") and isinstance(block.get("text"), str):
                parts.append({"type": "text", "content": block["text"]})
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                parts.append({"type": "reasoning", "content": block["thinking"]})
    return parts


def _text_of(content: object) -> str:
    return "".join(part["content"] for part in _content_parts(content))


def _tool_call_part(call: object) -> dict[str, Any] | None:
    if not isinstance(call, Mapping):
        return None
    function = call.get("function")
    if isinstance(function, Mapping):
        name, arguments = function.get("name"), function.get("arguments")
    else:
        name, arguments = call.get("name"), call.get("arguments")
    if not isinstance(name, str):
        return None
    return {
        "type": "tool_call",
        "id": str(call.get("id", "")),
        "name": name,
        "arguments": _arguments(arguments) if isinstance(arguments, str) else arguments,
    }
