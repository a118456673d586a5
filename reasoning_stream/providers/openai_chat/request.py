"""History turns into a Chat Completions request, with what each host needs back.

Readable reasoning goes back on an assistant message in the host's field
(``reasoning_content`` for DeepSeek and Kimi, ``reasoning`` for OpenRouter) when the host needs
it; ``reasoning_details`` items go back verbatim, as received, to the pipe that made them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..._history import HistoryTurn
from ..._messages import strip_inert_keys

__all__ = ["message", "sdk_arguments"]


def message(
    turn: HistoryTurn, pipe: object, *, send_reasoning: bool, reasoning_field: str
) -> dict[str, Any]:
    """One history turn as a Chat Completions message for ``pipe``.

    An assistant turn carries its readable reasoning in ``reasoning_field`` when
    ``send_reasoning`` says so, and the ``reasoning_details`` states ``pipe`` may receive.
    """
    plain = strip_inert_keys(turn.message)
    if plain.get("role") != "assistant":
        return plain
    if turn.reasoning and send_reasoning:
        plain[reasoning_field] = turn.reasoning
    details = [
        json.loads(state.payload)
        for state in turn.states
        if state.kind == "reasoning_details" and state.may_go_to(pipe, check_endpoint=False)
    ]
    if details:
        plain["reasoning_details"] = details
    return plain


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
