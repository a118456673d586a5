"""The history a request carries: what a provider pipe sends for each message of a prompt.

A prompt is a string, a list of message dicts, or a conversation (anything with
``turns_for(pipe)``). :func:`history_turns` turns it into the :class:`HistoryTurn` s a provider's
request builder reads, under the pipe's passback policy resolved once for the request;
:func:`check_passback` asks a conversation, before anything is sent, whether the provider
would reject it; :func:`resolve_request` does both under one resolution and hands back a
:class:`RequestTurns` the driver passes on as the request's prompt. The rest are helpers the
builders share.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from .._events import ReasoningState
from .._exceptions import UsageError
from .._messages import messages_from_prompt, tool_error_extra
from .._turns import HistoryTurn
from ._policy import PassbackPolicy

__all__ = [
    "HistoryTurn",
    "RequestTurns",
    "check_passback",
    "check_prompt",
    "history_turns",
    "in_received_order",
    "request_turns",
    "resolve_request",
    "tool_call_arguments",
]

T = TypeVar("T")
B = TypeVar("B")


@dataclass(frozen=True, slots=True)
class RequestTurns:
    """A prompt resolved for one request: the turns it sends, checked, and the policy used.

    The driver makes one with :func:`resolve_request` before anything is sent and passes it
    where the prompt went; :func:`history_turns` (what a request builder reads) hands its
    turns back as they are, so the policy is never resolved again for that request.
    ``policy`` is ``None`` when the prompt held no history a policy decides on (a string,
    a list of messages). ``repair`` is set for a conversation run with ``repair=True``: the
    request's own settings are repaired too (``_request_check``).
    """

    turns: tuple[HistoryTurn, ...]
    policy: PassbackPolicy | None = None
    repair: bool = False


def check_prompt(prompt: object) -> None:
    """Raise ``UsageError`` unless ``prompt`` is a string, a list of messages or a conversation.

    A run checks its prompt before it builds a client or sends anything.
    """
    if isinstance(prompt, str | RequestTurns) or callable(getattr(prompt, "turns_for", None)):
        return
    if isinstance(prompt, Sequence) and not isinstance(prompt, bytes | bytearray):
        for index, message in enumerate(prompt):
            if not isinstance(message, Mapping):
                raise UsageError(
                    f"prompt message {index} must be a dict such as {{'role': 'user', "
                    f"'content': ...}}, got {type(message).__name__}: {message!r:.80}"
                )
            role = message.get("role")
            if not isinstance(role, str) or not role:
                got = "has no 'role'" if role is None else f"has role {role!r:.40}"
                raise UsageError(
                    f"prompt message {index} {got}: give it 'role' ('user', 'assistant', "
                    f"'system' or 'tool'), e.g. {{'role': 'user', 'content': ...}}"
                )
        return
    raise UsageError(
        "the prompt must be a str, a list of message dicts or a Conversation, got "
        f"{type(prompt).__name__}: {prompt!r:.80}"
    )


def history_turns(prompt: Any, pipe: object) -> list[HistoryTurn]:
    """The turns to send for ``prompt``: a string, a list of messages, or a conversation.

    A ``Conversation`` scopes its turns under the pipe's policy, resolved here once for the
    request. Turns from any other ``turns_for`` keep their readable reasoning only where that
    policy gives it back, so a request builder never consults the policy itself. A
    :class:`RequestTurns` gives its turns as they are.
    """
    return list(_scoped(prompt, pipe).turns)


def _conversation_turns(prompt: Any, pipe: object, method: str) -> RequestTurns | None:
    """``prompt.<method>(pipe, policy)`` (a conversation's) under the pipe's policy, resolved
    here; ``None`` when ``prompt`` has no such method."""
    turns = getattr(prompt, method, None)
    if not callable(turns):
        return None
    policy = PassbackPolicy.for_pipe(pipe)
    return RequestTurns(tuple(turns(pipe, policy)), policy, bool(getattr(prompt, "repairs", False)))


def _scoped(prompt: Any, pipe: object) -> RequestTurns:
    if isinstance(prompt, RequestTurns):
        return prompt
    scoped = _conversation_turns(prompt, pipe, "scoped_turns")
    if scoped is not None:
        return scoped
    turns_for = getattr(prompt, "turns_for", None)
    if callable(turns_for):
        given: list[HistoryTurn] = turns_for(pipe)
        if not any(turn.reasoning is not None for turn in given):
            return RequestTurns(tuple(given))
        policy = PassbackPolicy.for_pipe(pipe)
        return RequestTurns(tuple(_with_policy(turn, policy) for turn in given), policy)
    check_prompt(prompt)
    messages = messages_from_prompt(prompt)
    # A list's tool messages keep their inert is_error as the turn's extra (one per message).
    originals: list[Mapping[str, Any]] = (
        [{}] * len(messages) if isinstance(prompt, str) else list(prompt)
    )
    return RequestTurns(
        tuple(
            HistoryTurn(message, extra=tool_error_extra(original))
            for message, original in zip(messages, originals, strict=True)
        )
    )


def _with_policy(turn: HistoryTurn, policy: PassbackPolicy) -> HistoryTurn:
    # Prepared turns come with their tool loop already chosen: "tool_loop" keeps what it got.
    if turn.reasoning is None or turn.message.get("role") != "assistant":
        return turn
    calls = bool(turn.message.get("tool_calls"))
    if policy.reasoning == "tool_loop" or policy.gives_reasoning(calls, in_tool_loop=False):
        return turn
    return replace(turn, reasoning=None)


def check_passback(prompt: Any, pipe: object) -> None:
    """Raise ``UsageError`` before any request when ``prompt`` (a conversation) holds turns the
    provider is documented to reject; prompts that are not conversations pass."""
    check = getattr(prompt, "check_passback", None)
    if callable(check):
        check(pipe)


def request_turns(prompt: Any, pipe: object) -> list[HistoryTurn]:
    """:func:`check_passback` then :func:`history_turns`, under one resolved policy.

    What a request needs of its prompt in one call, made before anything is sent: the turns
    to send, or the ``UsageError`` naming what the provider would reject (a conversation
    from ``with_repair()`` repairs instead). A conversation resolves the pipe's passback
    policy once for both; the two separate calls resolve it once each.
    """
    return list(resolve_request(prompt, pipe).turns)


def resolve_request(prompt: Any, pipe: object) -> RequestTurns:
    """:func:`request_turns` with the policy it resolved: what one request sends.

    A provider driver calls it once per request and hands the result to the request
    builder in place of the prompt; a :class:`RequestTurns` comes back as it is.
    """
    checked = _conversation_turns(prompt, pipe, "checked_turns")
    if checked is not None:
        return checked
    check_passback(prompt, pipe)  # a RequestTurns has nothing to check: it comes back as it is
    return _scoped(prompt, pipe)


def tool_call_arguments(arguments: Any, name: str, *, provider_label: str) -> dict[str, Any]:
    """A history tool call's ``arguments`` as the JSON object a provider wants back.

    Chat-completions history keeps arguments as JSON text; several provider APIs take an
    object. A mapping is copied; missing or blank text is ``{}``. Anything else that is not
    JSON text for an object raises ``UsageError`` naming the tool and ``provider_label``:
    the history is wrong, and the provider would refuse it.

    >>> tool_call_arguments('{"city": "Paris"}', "weather", provider_label="Example API")
    {'city': 'Paris'}
    >>> tool_call_arguments(" ", "now", provider_label="Example API")
    {}
    """
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    # Decoded arguments that are not a mapping (a list, a number) fail like their JSON would.
    import json  # only histories written as JSON text get here: importing stays quick

    parsed = arguments
    try:
        if isinstance(arguments, str | bytes | bytearray):
            parsed = json.loads(arguments)
    except ValueError as error:
        raise UsageError(
            f"tool call {name!r} in the history: its arguments are not valid JSON, and "
            f"{provider_label} needs them as a JSON object; fix the tool_calls arguments"
        ) from error
    if not isinstance(parsed, dict):
        kind = _JSON_KINDS.get(type(parsed), f"of type {type(parsed).__name__}")
        raise UsageError(
            f"tool call {name!r} in the history: its arguments are {kind}, and "
            f"{provider_label} needs a JSON object; fix the tool_calls arguments"
        )
    return parsed


# What json.loads returns, named as JSON names it (for error messages).
_JSON_KINDS: dict[type, str] = {
    list: "a JSON array",
    str: "a JSON string",
    int: "a JSON number",
    float: "a JSON number",
    bool: "a JSON boolean",
    type(None): "JSON null",
}


def in_received_order(
    text: str,
    calls: Sequence[T],
    placed: Sequence[tuple[ReasoningState, B]],
    text_block: Callable[[str], B],
    call_block: Callable[[T], B],
) -> list[B] | None:
    """An assistant turn's blocks in the order the response produced them, or ``None``.

    ``placed`` pairs each opaque state with the block it stands for, in stream order; each
    state's ``extra`` records where it sat: ``text_offset`` (answer characters before it)
    and ``call_index`` (tool calls before it). The answer ``text`` is cut at those offsets
    and the ``calls`` placed between, so a response ``thinking, text, thinking, tool_use``
    goes back as exactly that. Between two states, text comes before tool calls (the order
    models write them in). ``None`` when a state records no position (a turn stored before
    positions were kept): the caller keeps its former order.

    >>> state = ReasoningState("p", "m", "signature", "s", extra={"text_offset": 2})
    >>> in_received_order("Hi!", ["call"], [(state, "T")], str, str.upper)
    ['Hi', 'T', '!', 'CALL']
    """
    if any(not isinstance(state.extra.get("text_offset"), int) for state, _ in placed):
        return None
    blocks: list[B] = []
    placed_text = 0
    next_call = 0
    for state, block in placed:
        offset = min(max(int(state.extra["text_offset"]), placed_text), len(text))
        if offset > placed_text:
            blocks.append(text_block(text[placed_text:offset]))
            placed_text = offset
        call_index = state.extra.get("call_index")
        upto = min(call_index if isinstance(call_index, int) else next_call, len(calls))
        while next_call < upto:
            blocks.append(call_block(calls[next_call]))
            next_call += 1
        blocks.append(block)
    if placed_text < len(text):
        blocks.append(text_block(text[placed_text:]))
    blocks.extend(call_block(call) for call in calls[next_call:])
    return blocks
