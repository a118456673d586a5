"""History turns into an Anthropic Messages request, thinking blocks included.

A turn's reasoning states go back as ``{"type": "thinking", "thinking": ..., "signature": ...}``
and ``{"type": "redacted_thinking", "data": ...}`` blocks at the head of the assistant turn they
belong to, which is what the API requires when a tool-use turn is continued with thinking on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..._events import ReasoningState
from ..._exceptions import UsageError
from ..._messages import TOOL_ERROR
from ..._tools import Tool
from ..._turns import HistoryTurn, PassbackProblem, PreflightTurn
from ...conversation._history import in_received_order, tool_call_arguments
from ...conversation._policy import profile_of
from ...profiles import ModelProfile
from .._spec import PassbackRules
from .effort import claude_version
from .translate import PROVIDER, field_of, text_of

if TYPE_CHECKING:
    from .._pipe import ProviderPipe

__all__ = [
    "INTERLEAVED_BETA",
    "THINKING_OFF",
    "anthropic_options",
    "anthropic_tool",
    "anthropic_tool_choice",
    "budget_of",
    "convert_turns",
    "needs_interleaved_beta",
    "preflight",
    "repair",
    "thinking_on",
    "thinking_request",
    "thinking_turned_off",
    "turn_thinking_off",
]

INTERLEAVED_BETA = "interleaved-thinking-2025-05-14"
"""The beta that lets manual extended thinking think between tool calls (Claude 4 models)."""


def anthropic_tool(tool: Tool) -> dict[str, Any]:
    """A tool in the Messages API shape: ``{"name", "description", "input_schema"}``, plus
    ``strict`` when the tool sets it (docs.anthropic.com/en/api/messages#body-tools)."""
    shaped: dict[str, Any] = {"name": tool.name}
    if tool.description:
        shaped["description"] = tool.description
    shaped["input_schema"] = dict(tool.parameters)
    if tool.strict is not None:
        shaped["strict"] = tool.strict
    return shaped


def anthropic_tool_choice(choice: str) -> dict[str, Any]:
    """``"auto"``, ``"required"`` (Anthropic's ``any``), ``"none"`` or a tool's name as the
    ``tool_choice`` object (docs.anthropic.com/en/api/messages#body-tool-choice)."""
    if choice == "required":
        return {"type": "any"}
    if choice in ("auto", "none"):
        return {"type": choice}
    return {"type": "tool", "name": choice}


def anthropic_options(pipe: ProviderPipe) -> dict[str, Any]:
    """The pipe's tools, tool choice and sampling settings as Messages API fields
    (``stop_sequences``; the output limit is the pipe's own ``max_tokens`` field)."""
    fields: dict[str, Any] = {}
    if pipe.tools:
        fields["tools"] = [anthropic_tool(tool) for tool in pipe.tools]
    if pipe.tools and pipe.tool_choice is not None:
        fields["tool_choice"] = anthropic_tool_choice(pipe.tool_choice)
    fields.update(pipe.sampling_fields(max_tokens=None, stop="stop_sequences"))
    return fields


def _image_block(url: str) -> dict[str, Any]:
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[len("data:") :].split(";base64,", 1)
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    return {"type": "image", "source": {"type": "url", "url": url}}


def _content_blocks(content: Any) -> list[Any]:
    """OpenAI-style content as Anthropic content blocks; native blocks pass through."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[Any] = []
    for part in content:
        part_type = field_of(part, "type")
        if isinstance(part, str):
            blocks.append({"type": "text", "text": part})
        elif part_type == "text":
            blocks.append({"type": "text", "text": text_of(field_of(part, "text"))})
        elif part_type == "image_url":
            image = field_of(part, "image_url")
            url = image if isinstance(image, str) else text_of(field_of(image, "url"))
            blocks.append(_image_block(url))
        else:
            blocks.append(part)
    return blocks


def _native_content(content: Any) -> Any:
    """A message's content for Anthropic: a string stays a string, parts become blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return _content_blocks(content)


def _tool_use_block(call: Mapping[str, Any]) -> dict[str, Any]:
    function = field_of(call, "function") or {}
    name = text_of(field_of(function, "name"))
    tool_input = tool_call_arguments(
        field_of(function, "arguments"), name, provider_label="Anthropic"
    )
    return {
        "type": "tool_use",
        "id": text_of(field_of(call, "id")),
        "name": name,
        "input": tool_input,
    }


def _state_block(
    state: ReasoningState, provider: str, marks: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The content block a state stands for, as it came from the API; ``None`` if foreign."""
    if state.provider != provider:
        return None
    # A state without a mark is kept: only one marked for another API is foreign.
    if any(state.extra.get(key, value) != value for key, value in marks.items()):
        return None
    payload = state.payload.decode("utf-8") if isinstance(state.payload, bytes) else state.payload
    if state.kind == "signature":
        thinking = state.extra.get("thinking", "")
        return {"type": "thinking", "thinking": thinking, "signature": payload}
    if state.kind == "redacted":
        return {"type": "redacted_thinking", "data": payload}
    return None


def _assistant_message(
    turn: HistoryTurn, provider: str, marks: Mapping[str, Any]
) -> dict[str, Any]:
    message = turn.message
    placed = [
        (state, block)
        for state, block in ((state, _state_block(state, provider, marks)) for state in turn.states)
        if block is not None
    ]
    calls = field_of(message, "tool_calls") or []
    content = field_of(message, "content")
    if not placed and not calls:
        return {"role": "assistant", "content": _native_content(content)}
    # The API checks that a continued tool-use turn carries the thinking blocks it signed,
    # unchanged and where they were: the blocks go back in the order the response had them
    # (interleaved thinking puts thinking between text and tool_use blocks).
    if isinstance(content, str) and placed:
        ordered = in_received_order(
            content,
            calls,
            [(state, block) for state, block in placed],
            lambda text: {"type": "text", "text": text},
            _tool_use_block,
        )
        if ordered is not None:
            return {"role": "assistant", "content": ordered}
    # Turns recorded without positions: the thinking goes first, as the API requires of
    # a turn that starts with thinking.
    blocks: list[Any] = [block for _, block in placed]
    blocks += _content_blocks(content)
    blocks.extend(_tool_use_block(call) for call in calls)
    return {"role": "assistant", "content": blocks}


def _tool_result_block(turn: HistoryTurn) -> dict[str, Any]:
    """A tool message as a ``tool_result`` block; a failed call's with ``is_error: true``
    (docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#handling-tool-use-and-tool-result-content-blocks;
    the SDK's ``ToolResultBlockParam.is_error``)."""
    message = turn.message
    content = field_of(message, "content")
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": text_of(field_of(message, "tool_call_id")),
        "content": content if isinstance(content, str) else _content_blocks(content),
    }
    if turn.extra.get(TOOL_ERROR):
        block["is_error"] = True
    return block


def convert_turns(
    turns: Sequence[HistoryTurn],
    *,
    provider: str = PROVIDER,
    state_extra: Mapping[str, Any] | None = None,
) -> tuple[list[str], list[dict[str, Any]]]:
    """``(system texts, messages)`` in Anthropic's shape from canonical history turns.

    An assistant turn's states go back when ``provider`` made them and their ``extra`` does
    not contradict ``state_extra`` (the marks an ``AnthropicTranslator`` configured alike puts
    on the states it makes), so Bedrock's Invoke states never reach another API.
    """
    marks = state_extra or {}
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    # The content list of the user message collecting tool results, while tool messages follow
    # each other: Anthropic wants all results of one tool-use turn in a single user message.
    results: list[Any] | None = None
    for turn in turns:
        message = turn.message
        role = field_of(message, "role")
        if role == "tool":
            if results is None:
                results = []
                messages.append({"role": "user", "content": results})
            results.append(_tool_result_block(turn))
            continue
        results = None
        if role in ("system", "developer"):
            content = field_of(message, "content")
            text = (
                content
                if isinstance(content, str)
                else "".join(text_of(field_of(block, "text")) for block in _content_blocks(content))
            )
            system.append(text)
        elif role == "assistant":
            messages.append(_assistant_message(turn, provider, marks))
        else:
            messages.append(
                {"role": "user", "content": _native_content(field_of(message, "content"))}
            )
    return system, messages


def needs_interleaved_beta(model: str, body: Mapping[str, Any]) -> bool:
    """Whether a request needs the interleaved-thinking beta to think between tool calls.

    Only manual extended thinking (``{"type": "enabled", "budget_tokens": N}``) with tools,
    on Claude 4 models that take it (4.0 to 4.6); adaptive thinking interleaves without a
    header, Claude 3.7 cannot interleave, and 4.7 and later reject manual thinking anyway.

    >>> body = {"thinking": {"type": "enabled", "budget_tokens": 2048}, "tools": [{"name": "t"}]}
    >>> needs_interleaved_beta("claude-sonnet-4-5", body)
    True
    >>> needs_interleaved_beta("claude-3-7-sonnet", body)
    False
    """
    thinking = body.get("thinking")
    if not body.get("tools") or not isinstance(thinking, Mapping):
        return False
    if thinking.get("type") != "enabled":
        return False
    version = claude_version(model)
    return version is not None and (4, 0) <= version <= (4, 6)


# ------------------------------------------------------------------------------ preflight

THINKING_OFF = "thinking_off"
"""``HistoryTurn.extra`` key a repair sets: send this request with thinking off (``True``: no
``thinking`` field; ``"disabled"``: the documented off switch ``{"type": "disabled"}``)."""

_THINKING_KINDS = frozenset({"signature", "redacted"})


def thinking_enabled(config: Any) -> bool:
    """Whether a ``thinking`` request field turns thinking on (``enabled`` or ``adaptive``)."""
    return isinstance(config, Mapping) and config.get("type") in ("enabled", "adaptive")


def thinking_on(profile: ModelProfile, config: Any) -> bool:
    """Whether a request with ``thinking`` field ``config`` runs with thinking on.

    The field turns it on, and for a model that signs its thinking the profile says the
    rest: one that thinks by default (Opus 5, Sonnet 5, Sonnet 5.5) thinks unless the field
    says ``disabled``; one that always thinks (Opus 5.5, Mythos, Fable) always does.
    """
    if thinking_enabled(config):
        return True
    if "signatures" not in profile.passback_details:
        return False
    if profile.thinking == "always":
        return True
    disabled = isinstance(config, Mapping) and config.get("type") == "disabled"
    return profile.thinking == "default_on" and not disabled


def thinking_turned_off(turns: Sequence[HistoryTurn]) -> bool | str:
    """How a repair asked for this request to go without thinking: ``False`` (it did not),
    ``True`` (leave ``thinking`` out) or ``"disabled"`` (send the off switch)."""
    for turn in turns:
        how = turn.extra.get(THINKING_OFF)
        if how:
            return "disabled" if how == "disabled" else True
    return False


def turn_thinking_off(fields: dict[str, Any], how: bool | str) -> None:
    """Turn thinking off in a request's fields (the body, or Bedrock's model fields) the way
    a repair asked: without the ``thinking`` field, or, for a model that thinks by default,
    with the documented ``{"type": "disabled"}`` and no ``output_config.effort`` (an effort
    keeps such a model thinking)
    (https://platform.claude.com/docs/en/models/opus-5/migration-guide)."""
    if not how:
        return
    fields.pop("thinking", None)
    if how != "disabled":
        return
    fields["thinking"] = {"type": "disabled"}
    output = fields.get("output_config")
    if isinstance(output, Mapping):
        rest = {key: value for key, value in output.items() if key != "effort"}
        if rest:
            fields["output_config"] = rest
        else:
            fields.pop("output_config", None)


def tool_loop_problems(
    pipe: Any, turns: Sequence[PreflightTurn], *, label: str
) -> list[PassbackProblem]:
    """Tool-use turns of the current loop that lack their signed thinking (thinking on).

    Anthropic: with thinking on, each assistant turn of an unfinished tool loop must start
    with the thinking blocks the API signed for it, unchanged
    (https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#preserving-thinking-blocks).
    """
    always = profile_of(pipe).thinking == "always"
    fix = (
        f"repair cannot help: {pipe.model} always thinks, and the docs offer no way to send "
        "the loop without its thinking; start a new turn (a user message) instead"
        if always
        else "or repair (this request goes with thinking off)"
    )
    problems: list[PassbackProblem] = []
    for checked in turns:
        if not (checked.in_tool_loop and checked.calls_tools):
            continue
        if any(state.kind in _THINKING_KINDS for state in checked.turn.states):
            continue
        record = checked.record
        other = (
            record is not None
            and record.provider == getattr(pipe, "provider", None)
            and record.model != getattr(pipe, "model", None)
            and any(state.kind in _THINKING_KINDS for state in record.states)
        )
        if other:
            problems.append(
                PassbackProblem(
                    checked.index,
                    "thinking_other_model",
                    f"this tool-use turn's thinking was made by {record.model}, and {label} "
                    f"binds thinking to the model that made it; {pipe.model} with thinking on "
                    "needs the turn to start with its own signed thinking. Finish the tool loop "
                    f"with {record.model}, {fix}",
                )
            )
        else:
            problems.append(
                PassbackProblem(
                    checked.index,
                    "thinking_missing",
                    f"a tool-use turn of the current tool loop has no signed thinking (edited, "
                    f"compacted or added by hand), and with thinking on {label} requires it to "
                    "start with its thinking blocks unchanged. Keep the turn as the run produced "
                    f"it (conversation.add(result)), {fix}",
                )
            )
    return problems


def repair_tool_loop(
    pipe: Any, turns: Sequence[PreflightTurn], *, label: str
) -> tuple[list[HistoryTurn], list[str]]:
    """Thinking off for this request, and no thinking blocks left in the current loop.

    The docs' rule for a turn that cannot start with thinking: the whole assistant turn
    (the tool loop) runs in one thinking mode, here without thinking: the ``thinking`` field
    left out, or, for a model that thinks by default, its documented off switch. A model
    that always thinks has none: ``UsageError`` names the problems.
    """
    profile = profile_of(pipe)
    if profile.thinking == "always" and "signatures" in profile.passback_details:
        listed = "; ".join(str(problem) for problem in tool_loop_problems(pipe, turns, label=label))
        raise UsageError(
            f"repair=True cannot fix this conversation: {listed}. {label} documents no way to "
            f"run {pipe.model} without thinking, nor to send a tool loop without its thinking"
        )
    how: bool | str = "disabled" if profile.thinking == "default_on" else True
    repaired = [
        replace(checked.turn, states=()) if checked.in_tool_loop else checked.turn
        for checked in turns
    ]
    if repaired:
        repaired[0] = replace(repaired[0], extra={**repaired[0].extra, THINKING_OFF: how})
    indexes = [str(c.index) for c in turns if c.in_tool_loop and c.calls_tools]
    switch = ' (thinking {"type": "disabled"}, no effort)' if how == "disabled" else ""
    return repaired, [
        f"{label}: the tool loop (messages {', '.join(indexes)}) lacks signed thinking, so "
        f"this request goes with thinking off{switch} and without the loop's thinking blocks"
    ]


def request_thinking(pipe: Any) -> Any:
    """The ``thinking`` field the pipe's request would carry."""
    body: dict[str, Any] = {}
    if getattr(pipe, "thinking", None) is not None:
        body["thinking"] = pipe.thinking
    body = pipe.with_reasoning(body)
    body.update(pipe.extra_body)
    return body.get("thinking")


def budget_of(config: Any) -> int | None:
    """The ``budget_tokens`` of a manual ``thinking`` config (``None`` for any other)."""
    if not isinstance(config, Mapping) or config.get("type") != "enabled":
        return None
    budget = config.get("budget_tokens")
    return budget if isinstance(budget, int) and not isinstance(budget, bool) else None


def thinking_request(pipe: Any) -> tuple[bool, int | None]:
    """Whether the pipe's request thinks (by its ``thinking`` field or the model's profile),
    and its ``budget_tokens`` (request preflight reads it)."""
    config = request_thinking(pipe)
    return thinking_on(profile_of(pipe), config), budget_of(config)


def preflight(
    pipe: Any, turns: Sequence[PreflightTurn], policy: PassbackRules
) -> list[PassbackProblem]:
    """What the Messages API would reject: a tool loop without its thinking (thinking on,
    by the request or by the model's profile)."""
    if not thinking_on(profile_of(pipe), request_thinking(pipe)):
        return []
    return tool_loop_problems(pipe, turns, label="Anthropic")


def repair(
    pipe: Any, turns: Sequence[PreflightTurn], policy: PassbackRules
) -> tuple[list[HistoryTurn], list[str]]:
    """See :func:`repair_tool_loop`."""
    return repair_tool_loop(pipe, turns, label="Anthropic")
