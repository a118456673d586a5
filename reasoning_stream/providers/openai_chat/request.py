"""History turns into a Chat Completions request, with what each host needs back.

Readable reasoning goes back on an assistant message in the host's field
(``reasoning_content`` for DeepSeek and Kimi, ``reasoning`` for OpenRouter) when the host needs
it; ``reasoning_details`` items go back verbatim, as received, to the pipe that made them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..._messages import strip_inert_keys
from ..._tools import Tool
from ..._turns import HistoryTurn, PassbackProblem, PreflightTurn
from ...conversation._preflight import problems_where, repair_where
from .._spec import PassbackRules

if TYPE_CHECKING:
    from .._pipe import ProviderPipe

__all__ = [
    "chat_options",
    "chat_tool",
    "chat_tool_choice",
    "max_tokens_field",
    "message",
    "oneshot_body",
    "oneshot_sdk_arguments",
    "preflight",
    "repair",
    "sdk_arguments",
]


def message(turn: HistoryTurn, pipe: object, *, reasoning_field: str) -> dict[str, Any]:
    """One history turn as a Chat Completions message for ``pipe``.

    An assistant turn carries its readable reasoning (in ``reasoning_field``) when the turn
    has one: the history was scoped under the pipe's passback policy, resolved once for the
    request (``conversation.history_turns``), so ``turn.reasoning`` is set only where the
    policy gives it back (``"always"``; ``"tool_loop"``: the current tool loop;
    ``"tool_calls"``: turns that called tools). ``""`` goes back too: a turn of this model
    that reasoned nothing, or a tool-call turn another model wrote once ``repair=True``
    filled it (DeepSeek and Kimi answer 400 to a tool-call turn without the field; preflight
    names such a turn). A value the caller wrote into the message is kept over ``""``.
    ``reasoning_details`` states go back to the pipe that made them.
    """
    plain = strip_inert_keys(turn.message)
    if plain.get("role") != "assistant":
        return plain
    profile = getattr(pipe, "profile", None)
    if profile is not None and "content_chunks" in profile.passback_details:
        # Mistral: the reasoning goes back as a thinking chunk ahead of the answer's text
        # chunk, the shape the reply came in (docs.mistral.ai/capabilities/reasoning/).
        if turn.reasoning:
            plain["content"] = content_chunks(turn.reasoning, plain.get("content"))
    elif turn.reasoning is not None and (turn.reasoning or reasoning_field not in plain):
        plain[reasoning_field] = turn.reasoning
    states = [state for state in turn.states if state.may_go_to(pipe, check_endpoint=False)]
    details = [json.loads(state.payload) for state in states if state.kind == "reasoning_details"]
    if details:
        plain["reasoning_details"] = details
    signed = {
        state.extra.get("call_id"): state.payload
        for state in states
        if state.kind == "signature" and state.extra.get("passback") == "extra_content"
    }
    if signed and isinstance(plain.get("tool_calls"), list):
        # Gemini's OpenAI-compatible endpoint wants each signature back on its own call.
        plain["tool_calls"] = [_signed_call(call, signed) for call in plain["tool_calls"]]
    return plain


def content_chunks(reasoning: str, content: Any) -> list[dict[str, Any]]:
    """Mistral's chunk content: a thinking chunk holding ``reasoning``, then the answer.

    >>> content_chunks("hm", "hi")[0]
    {'type': 'thinking', 'thinking': [{'type': 'text', 'text': 'hm'}]}
    """
    chunks: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": [{"type": "text", "text": reasoning}]}
    ]
    if isinstance(content, str):
        if content:
            chunks.append({"type": "text", "text": content})
    elif isinstance(content, list):
        chunks += [part for part in content if not _is_thinking(part)]
    return chunks


def _is_thinking(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "thinking"


def _signed_call(call: Any, signed: Mapping[Any, str | bytes]) -> Any:
    if not isinstance(call, Mapping) or call.get("id") not in signed:
        return call
    signature = signed[call["id"]]
    if isinstance(signature, bytes):
        signature = signature.decode("ascii")
    extra = dict(call.get("extra_content") or {})
    extra["google"] = {**dict(extra.get("google") or {}), "thought_signature": signature}
    return {**call, "extra_content": extra}


def chat_tool(tool: Tool) -> dict[str, Any]:
    """A tool as a Chat Completions function tool: ``{"type": "function", "function":
    {"name", "description", "parameters", "strict"}}`` (``strict`` only when the tool sets it;
    the API's default is off). platform.openai.com/docs/api-reference/chat/create#chat-create-tools
    """
    shaped = tool.to_openai()
    if tool.strict is not None:
        shaped["function"]["strict"] = tool.strict
    return shaped


def chat_tool_choice(choice: str) -> str | dict[str, Any]:
    """``"auto"``, ``"required"`` and ``"none"`` as they are; a tool's name as the named
    choice ``{"type": "function", "function": {"name": ...}}``."""
    if choice in ("auto", "required", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def max_tokens_field(api_url: str | None) -> str:
    """OpenAI's own API wants ``max_completion_tokens`` (its reasoning models reject
    ``max_tokens``); compatible servers (DeepSeek, vLLM, llama.cpp, SGLang, OpenRouter)
    document ``max_tokens``."""
    own = api_url is None or urlsplit(api_url).hostname == "api.openai.com"
    return "max_completion_tokens" if own else "max_tokens"


def chat_options(pipe: ProviderPipe, max_tokens_key: str = "max_tokens") -> dict[str, Any]:
    """The pipe's tools, tool choice and sampling settings as Chat Completions fields (the
    shape Ollama's ``tools`` and OpenRouter take too)."""
    fields: dict[str, Any] = {}
    if pipe.tools:
        fields["tools"] = [chat_tool(tool) for tool in pipe.tools]
    if pipe.tools and pipe.tool_choice is not None:  # a choice without tools is a 400
        fields["tool_choice"] = chat_tool_choice(pipe.tool_choice)
    fields.update(pipe.sampling_fields(max_tokens=max_tokens_key))
    return fields


def sdk_arguments(body: Mapping[str, Any], timeout: float | None) -> dict[str, Any]:
    """The SDK's ``create()`` arguments for ``body``: the rest rides in ``extra_body``.

    ``model`` and ``messages`` become the call's arguments and everything else goes through
    the SDK's ``extra_body``, so the wire body is the one built.
    """
    rest = dict(body)
    arguments: dict[str, Any] = {
        "model": rest.pop("model"),
        "messages": rest.pop("messages"),
        "stream": True,
    }
    rest.pop("stream", None)
    if rest:
        arguments["extra_body"] = rest
    if timeout is not None:
        arguments["timeout"] = timeout
    return arguments


def oneshot_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """A streaming request body made non-streaming: no ``stream``, no ``stream_options``.

    OpenAI documents ``stream_options`` as valid only with ``stream: true``; without both
    the server answers with one ``chat.completion`` object.
    """
    rest = dict(body)
    rest.pop("stream", None)
    rest.pop("stream_options", None)
    return rest


def oneshot_sdk_arguments(body: Mapping[str, Any], timeout: float | None) -> dict[str, Any]:
    """The SDK's non-streaming ``create()`` arguments for a body from :func:`oneshot_body`."""
    arguments = sdk_arguments(body, timeout)
    del arguments["stream"]
    return arguments


# ------------------------------------------------------------------------------ preflight


def _needs_reasoning(policy: PassbackRules, checked: PreflightTurn) -> bool:
    if checked.turn.reasoning is not None or checked.role != "assistant":
        return False
    if policy.reasoning == "tool_turns":
        # Every assistant message of a tool-using turn, its final answer too (DeepSeek).
        return checked.calls_tools or checked.in_tool_turn
    return policy.reasoning in ("tool_calls", "always") and checked.calls_tools


def preflight(
    pipe: Any, turns: Sequence[PreflightTurn], policy: PassbackRules
) -> list[PassbackProblem]:
    """DeepSeek and Kimi: an assistant tool-call turn without its ``reasoning_content``.

    In thinking mode DeepSeek answers 400 when a message of a turn that called tools (its
    final answer included) comes back without its ``reasoning_content``, in every later
    request (https://api-docs.deepseek.com/guides/thinking_mode#tool-calls); Kimi's thinking
    models likewise for the tool-call turns. Which messages is the policy's (from the
    model's profile).
    """
    return problems_where(
        turns,
        lambda checked: _needs_reasoning(policy, checked),
        "reasoning_content_missing",
        f"this assistant turn called tools (or answered a turn that did) but has no "
        f"reasoning_content to send, and {pipe.model} rejects such a turn in thinking mode "
        "(the turn was edited, added by hand, or made by another model). Keep the turn as "
        "the run produced it (conversation.add(result) keeps its reasoning), or repair (an empty "
        "reasoning_content is sent)",
    )


def repair(
    pipe: Any, turns: Sequence[PreflightTurn], policy: PassbackRules
) -> tuple[list[HistoryTurn], list[str]]:
    """Fill an empty ``reasoning_content`` on the tool turns that have none."""
    return repair_where(
        turns,
        lambda checked: _needs_reasoning(policy, checked),
        lambda turn: replace(turn, reasoning=""),
        "an empty reasoning_content is sent for messages {messages}",
    )
