"""History turns into a Chat Completions request, with what each host needs back.

Readable reasoning goes back on an assistant message in the host's field
(``reasoning_content`` for DeepSeek and Kimi, ``reasoning`` for OpenRouter) when the host needs
it; ``reasoning_details`` items go back verbatim, as received, to the pipe that made them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..._history import HistoryTurn
from ..._messages import strip_inert_keys
from ..._preflight import PassbackProblem, PreflightTurn

__all__ = [
    "message",
    "oneshot_body",
    "oneshot_sdk_arguments",
    "preflight",
    "repair",
    "sdk_arguments",
]


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
    if turn.reasoning is not None and send_reasoning:
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


def _needs_reasoning(pipe: Any, checked: PreflightTurn) -> bool:
    from ..._conversation import PassbackPolicy

    policy = PassbackPolicy.for_pipe(pipe)
    return (
        policy.reasoning in ("tool_calls", "always")
        and checked.calls_tools
        and checked.turn.reasoning is None
    )


def preflight(pipe: Any, turns: Sequence[PreflightTurn]) -> list[PassbackProblem]:
    """DeepSeek and Kimi: an assistant tool-call turn without its ``reasoning_content``.

    In thinking mode DeepSeek answers 400 when a turn that called tools comes back without
    its ``reasoning_content``, in every later request
    (https://api-docs.deepseek.com/guides/thinking_mode#tool-calls); Kimi's thinking models
    likewise.
    """
    return [
        PassbackProblem(
            checked.index,
            "reasoning_content_missing",
            f"this assistant turn called tools but has no reasoning_content to send, and "
            f"{pipe.model} rejects such a turn in thinking mode (the turn was edited, added "
            "by hand, or made by another model). Keep the turn as the run produced it "
            "(conversation.add(result) keeps its reasoning), or repair (an empty "
            "reasoning_content is sent)",
        )
        for checked in turns
        if _needs_reasoning(pipe, checked)
    ]


def repair(pipe: Any, turns: Sequence[PreflightTurn]) -> tuple[list[HistoryTurn], list[str]]:
    """Fill an empty ``reasoning_content`` on the tool-call turns that have none."""
    repaired: list[HistoryTurn] = []
    filled: list[str] = []
    for checked in turns:
        turn = checked.turn
        if _needs_reasoning(pipe, checked):
            turn = replace(turn, reasoning="")
            filled.append(str(checked.index))
        repaired.append(turn)
    notes = (
        [f"an empty reasoning_content is sent for messages {', '.join(filled)}"] if filled else []
    )
    return repaired, notes
