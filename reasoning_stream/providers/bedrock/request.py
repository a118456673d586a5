"""History turns into Converse messages or a model's native Invoke body.

An assistant turn's states go back at the head of its content, verbatim and in order; states
made through the other API (``extra["api"]``) are left out, since their payload forms differ.
Invoke requests for Claude reuse the Anthropic package's message conversion.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..._events import ReasoningState
from ..._exceptions import UsageError
from ..._messages import TOOL_ERROR
from ..._tools import Tool
from ..._turns import HistoryTurn, PassbackProblem, PreflightTurn
from ...conversation._history import in_received_order
from ...conversation._policy import profile_of
from .._spec import PassbackRules
from ..anthropic.request import (
    budget_of,
    convert_turns,
    repair_tool_loop,
    thinking_enabled,
    thinking_on,
    tool_loop_problems,
    turn_thinking_off,
)
from .translate import _INVOKE_MARKS, PROVIDER, Api

if TYPE_CHECKING:
    from .._pipe import ProviderPipe

__all__ = [
    "anthropic_messages",
    "converse_inference",
    "converse_messages",
    "converse_tool",
    "converse_tool_config",
    "deepseek_prompt",
    "preflight",
    "repair",
    "takes_tool_status",
    "thinking_request",
]


def converse_tool(tool: Tool) -> dict[str, Any]:
    """A tool as a Converse ``toolSpec``: ``{"name", "description", "inputSchema": {"json"}}``
    (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolSpecification.html)."""
    spec: dict[str, Any] = {"name": tool.name}
    if tool.description:
        spec["description"] = tool.description
    spec["inputSchema"] = {"json": dict(tool.parameters)}
    if tool.strict is not None:
        spec["strict"] = tool.strict
    return {"toolSpec": spec}


def converse_tool_config(
    pipe: ProviderPipe, messages: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The Converse ``toolConfig`` for the pipe's tools and choice, or ``None``.

    ``toolChoice`` is ``auto``, ``any`` (``"required"``) or ``tool`` with a name
    (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolChoice.html). Converse
    has no ``none``: ``tool_choice="none"`` leaves the tools out, so the model cannot call
    them, which Bedrock refuses once the history holds tool calls (it requires ``toolConfig``
    then): that is a ``UsageError`` here, before anything is sent.
    """
    if not pipe.tools:
        return None
    choice = pipe.tool_choice
    if choice == "none":
        if any(_has_tool_blocks(message) for message in messages):
            raise UsageError(
                "Bedrock Converse has no tool_choice 'none', and with tool calls in the "
                "history it requires the tools in the request; use tool_choice='auto' (or "
                "None) for this conversation"
            )
        return None
    config: dict[str, Any] = {"tools": [converse_tool(tool) for tool in pipe.tools]}
    if choice in ("auto", "required"):
        config["toolChoice"] = {"auto": {}} if choice == "auto" else {"any": {}}
    elif choice is not None:
        config["toolChoice"] = {"tool": {"name": choice}}
    return config


def _has_tool_blocks(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(block, Mapping) and ("toolUse" in block or "toolResult" in block)
        for block in content
    )


def converse_inference(pipe: ProviderPipe, given: Mapping[str, Any]) -> dict[str, Any]:
    """``inferenceConfig``: the pipe's ``inference_config`` with its ``max_tokens``,
    ``temperature``, ``top_p`` and ``stop`` on top (``maxTokens``, ``temperature``, ``topP``,
    ``stopSequences``)."""
    return {
        **given,
        **pipe.sampling_fields(top_p="topP", max_tokens="maxTokens", stop="stopSequences"),
    }


# DeepSeek's chat template; its special tokens use full-width bars and U+2581, not ASCII.
_DS_BEGIN = "<\uff5cbegin\u2581of\u2581sentence\uff5c>"
_DS_END = "<\uff5cend\u2581of\u2581sentence\uff5c>"
_DS_USER = "<\uff5cUser\uff5c>"
_DS_ASSISTANT = "<\uff5cAssistant\uff5c>"


def _content_text(content: Any) -> str:
    """A message's content as plain text: strings as they are, OpenAI text parts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    return str(content)


def _arguments(raw: Any) -> Any:
    """A tool call's arguments as Converse's ``toolUse.input``.

    Lenient, unlike ``tool_call_arguments`` (which Invoke uses through the Anthropic
    conversion): text that is not JSON is kept as ``{"arguments": text}``.
    """
    if isinstance(raw, Mapping):
        return dict(raw)
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        # Not JSON: keep what the model wrote rather than dropping it.
        return {"arguments": raw}


def _usable_states(turn: HistoryTurn, api: Api) -> list[ReasoningState]:
    return [s for s in turn.states if s.extra.get("api", api) == api]


def _redacted_bytes(payload: str | bytes) -> bytes:
    # A str payload is a blob written out as base64 (ReasoningState.to_json's convention).
    return payload if isinstance(payload, bytes) else base64.b64decode(payload)


def _merge_roles(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Join consecutive messages of one role: Bedrock and Anthropic want roles to alternate."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        if not message["content"]:
            continue
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1]["content"].extend(message["content"])
        else:
            merged.append(message)
    return merged


TOOL_STATUS_MODELS = ("anthropic.claude", "amazon.nova")
"""Model ids (without a geographic prefix) whose Converse ``toolResult`` takes ``status``:
botocore's service model documents the field as "only supported by Amazon Nova and Anthropic
Claude 3 and 4 models" (``ToolResultBlock.status``, ``success`` | ``error``)."""


def takes_tool_status(model_id: str) -> bool:
    """Whether a Converse ``toolResult`` for ``model_id`` may carry ``status``.

    >>> takes_tool_status("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    True
    >>> takes_tool_status("meta.llama3-70b-instruct-v1:0")
    False
    """
    lowered = model_id.lower()
    return any(family in lowered for family in TOOL_STATUS_MODELS)


def converse_messages(
    turns: Sequence[HistoryTurn], *, error_status: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Canonical turns as Converse ``(messages, system)``.

    Tool calls become ``toolUse`` blocks with ``input`` as an object; tool results become
    ``toolResult`` blocks in a user message (a failed call's with ``status: "error"`` when
    ``error_status``: the model takes it); an assistant turn's states go back first.
    """
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    for turn in turns:
        message = turn.message
        role = message.get("role")
        text = _content_text(message.get("content"))
        if role in ("system", "developer"):
            if text:
                system.append({"text": text})
            continue
        if role == "tool":
            result = {
                "toolUseId": message.get("tool_call_id") or "",
                "content": [{"text": text}],
            }
            if error_status and turn.extra.get(TOOL_ERROR):
                result["status"] = "error"
            messages.append({"role": "user", "content": [{"toolResult": result}]})
            continue
        content: list[dict[str, Any]] = []
        if role == "assistant":
            content = _assistant_content(turn, text)
        elif text:
            content.append({"text": text})
        messages.append(
            {"role": "assistant" if role == "assistant" else "user", "content": content}
        )
    return _merge_roles(messages), system


def _reasoning_block(state: ReasoningState) -> dict[str, Any] | None:
    if state.kind == "signature":
        block: dict[str, Any] = {
            "text": str(state.extra.get("text", "")),
            "signature": state.payload,
        }
        return {"reasoningContent": {"reasoningText": block}}
    if state.kind == "redacted":
        return {"reasoningContent": {"redactedContent": _redacted_bytes(state.payload)}}
    return None


def _tool_use(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {
        "toolUse": {
            "toolUseId": call.get("id") or "",
            "name": function.get("name") or "",
            "input": _arguments(function.get("arguments")),
        }
    }


def _assistant_content(turn: HistoryTurn, text: str) -> list[dict[str, Any]]:
    """An assistant turn's blocks: reasoning, text and tool use in the order received.

    Bedrock checks the reasoning blocks of a continued tool-use turn like Anthropic does:
    unchanged and where they were. Turns recorded without positions put reasoning first.
    """
    calls = list(turn.message.get("tool_calls") or ())
    placed = [
        (state, block)
        for state, block in (
            (state, _reasoning_block(state)) for state in _usable_states(turn, "converse")
        )
        if block is not None
    ]
    ordered = in_received_order(text, calls, placed, lambda part: {"text": part}, _tool_use)
    if ordered is not None and placed:
        return ordered
    content = [block for _, block in placed]
    if text:
        content.append({"text": text})
    content.extend(_tool_use(call) for call in calls)
    return content


def anthropic_messages(turns: Sequence[HistoryTurn]) -> tuple[list[dict[str, Any]], str]:
    """Canonical turns as Anthropic Messages ``(messages, system)`` for an Invoke body.

    The Anthropic pipe's own conversion, with this API's states going back (made by
    ``bedrock`` and marked ``api="invoke"``); content is always a block list and turns of one
    role are joined, since Bedrock wants roles to alternate.
    """
    system, messages = convert_turns(turns, provider=PROVIDER, state_extra=_INVOKE_MARKS)
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            message["content"] = [{"type": "text", "text": content}] if content else []
    return _merge_roles(messages), "\n\n".join(text for text in system if text)


def deepseek_prompt(turns: Sequence[HistoryTurn], *, prefill_think: bool) -> str:
    """Canonical turns in DeepSeek's chat template, as the Bedrock DeepSeek examples build it.

    Earlier answers go in without their reasoning, as DeepSeek recommends; with
    ``prefill_think`` the prompt ends with the assistant token and ``<think>\\n``, so R1
    reasons first.
    """
    system: list[str] = []
    body: list[str] = []
    for turn in turns:
        message = turn.message
        role = message.get("role")
        text = _content_text(message.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        elif role == "assistant":
            body.append(f"{_DS_ASSISTANT}{text}{_DS_END}")
        else:
            body.append(f"{_DS_USER}{text}")
    tail = f"{_DS_ASSISTANT}<think>\n" if prefill_think else _DS_ASSISTANT
    return _DS_BEGIN + "\n\n".join(system) + "".join(body) + tail


# ------------------------------------------------------------------------------ preflight

_THINKING_FIELDS = ("thinking", "reasoning_config")
"""Where Claude's thinking config goes in ``additionalModelRequestFields`` (and Invoke)."""


def model_fields(pipe: Any) -> dict[str, Any]:
    """The model-specific fields the request would carry (Converse's
    ``additionalModelRequestFields``, Invoke's top-level body fields)."""
    fields = dict(getattr(pipe, "additional_model_request_fields", None) or {})
    planned = pipe.with_reasoning({}).get("additionalModelRequestFields")
    if isinstance(planned, Mapping):
        fields.update(planned)
    extra = pipe.extra_body.get("additionalModelRequestFields")
    if isinstance(extra, Mapping):
        fields.update(extra)
    return fields


def drop_thinking(fields: dict[str, Any], how: bool | str = True) -> None:
    """Turn Claude's thinking off in model fields the way a repair asked (see
    ``anthropic.request.turn_thinking_off``): no thinking config, or the off switch."""
    for name in _THINKING_FIELDS:
        fields.pop(name, None)
    turn_thinking_off(fields, how)


def preflight(
    pipe: Any, turns: Sequence[PreflightTurn], policy: PassbackRules
) -> list[PassbackProblem]:
    """Claude on Bedrock: a tool loop without its signed reasoning while thinking is on (by
    the model fields, or by the model's profile for Claude that thinks by default)."""
    fields = model_fields(pipe)
    profile = profile_of(pipe)
    explicit = any(thinking_enabled(fields.get(name)) for name in _THINKING_FIELDS)
    if not explicit and not thinking_on(profile, fields.get("thinking")):
        return []
    return tool_loop_problems(pipe, turns, label="Bedrock (Claude)")


def thinking_request(pipe: Any) -> tuple[bool, int | None]:
    """Whether the pipe's request thinks (Claude's thinking config in the model fields, or the
    model's profile), and its ``budget_tokens`` (request preflight reads it)."""
    fields = model_fields(pipe)
    explicit = any(thinking_enabled(fields.get(name)) for name in _THINKING_FIELDS)
    on = explicit or thinking_on(profile_of(pipe), fields.get("thinking"))
    return on, budget_of(fields.get("thinking"))


def repair(
    pipe: Any, turns: Sequence[PreflightTurn], policy: PassbackRules
) -> tuple[list[HistoryTurn], list[str]]:
    """Thinking off for this request (see ``anthropic.request.repair_tool_loop``)."""
    return repair_tool_loop(pipe, turns, label="Bedrock (Claude)")
