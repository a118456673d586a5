"""History turns into a Chat Completions request, with what each host needs back.

Readable reasoning goes back on an assistant message in the host's field
(``reasoning_content`` for DeepSeek and Kimi, ``reasoning`` for OpenRouter) when the host needs
it; ``reasoning_details`` items go back verbatim, as received, to the pipe that made them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..._conversation import PassbackPolicy
from ..._history import HistoryTurn
from ..._messages import strip_inert_keys

__all__ = ["message", "sdk_arguments"]


def message(turn: HistoryTurn, pipe: object, *, reasoning_field: str) -> dict[str, Any]:
    """One history turn as a Chat Completions message for ``pipe``.

    Whether an assistant turn carries readable reasoning (in ``reasoning_field``) is the
    pipe's passback policy, the one decision point: ``"always"``; ``"tool_loop"`` (the
    conversation hands reasoning over for the current tool loop only); ``"tool_calls"`` for
    turns that called tools. A tool-call turn the policy covers always carries the field,
    ``""`` when no reasoning of this model is known for it: DeepSeek and Kimi answer 400 to a
    tool-call turn without it, whoever wrote the turn. A value the caller wrote into the
    message is kept over ``""``. ``reasoning_details`` states go back to the pipe that made
    them.
    """
    plain = strip_inert_keys(turn.message)
    if plain.get("role") != "assistant":
        return plain
    policy = PassbackPolicy.for_pipe(pipe).reasoning
    calls = bool(plain.get("tool_calls"))
    if policy in ("always", "tool_loop") or (policy == "tool_calls" and calls):
        if turn.reasoning:
            plain[reasoning_field] = turn.reasoning
        elif calls and policy != "tool_loop" and reasoning_field not in plain:
            plain[reasoning_field] = ""
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


def _signed_call(call: Any, signed: Mapping[Any, str | bytes]) -> Any:
    if not isinstance(call, Mapping) or call.get("id") not in signed:
        return call
    signature = signed[call["id"]]
    if isinstance(signature, bytes):
        signature = signature.decode("ascii")
    extra = dict(call.get("extra_content") or {})
    extra["google"] = {**dict(extra.get("google") or {}), "thought_signature": signature}
    return {**call, "extra_content": extra}


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
