"""History turns into Responses API input items, reasoning items replayed in place.

An assistant turn's reasoning states go back as ``reasoning`` input items (id, summary,
``encrypted_content``, raw ``content`` where a server returned it), before the items they
preceded; those follow with their own ids, because the API pairs a replayed reasoning item with
its following item.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..._events import ReasoningState
from ..._tools import Tool, is_strict_compatible
from ..._turns import HistoryTurn, PassbackProblem, PreflightTurn
from ...conversation._policy import profile_of
from ...conversation._preflight import problems_where, repair_where
from .._spec import PassbackRules
from .translate import ENCRYPTED_KIND, text_of

if TYPE_CHECKING:
    from .._pipe import ProviderPipe

__all__ = [
    "preflight",
    "reasoning_input_item",
    "repair",
    "responses_options",
    "responses_tool",
    "sdk_arguments",
]

_SDK_ONLY_PARAMETERS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})
"""Keyword arguments of the SDK's create() that are not JSON body fields."""


def responses_tool(tool: Tool) -> dict[str, Any]:
    """A tool as a Responses function tool: flat ``{"type": "function", "name",
    "description", "parameters", "strict"}``.

    The Responses API makes a function strict unless told otherwise, and a strict function's
    schema must require every property and close every object
    (platform.openai.com/docs/guides/function-calling#strict-mode). So ``strict`` is always
    sent: the tool's own setting, else ``true`` when the schema allows it and ``false`` when
    it does not (a parameter with a default is not required).
    """
    strict = tool.strict if tool.strict is not None else is_strict_compatible(tool.parameters)
    shaped: dict[str, Any] = {"type": "function", "name": tool.name}
    if tool.description:
        shaped["description"] = tool.description
    shaped["parameters"] = dict(tool.parameters)
    shaped["strict"] = strict
    return shaped


def responses_options(pipe: ProviderPipe) -> dict[str, Any]:
    """The pipe's tools, tool choice and sampling settings as Responses fields
    (``max_output_tokens``; the Responses API has no stop sequences)."""
    fields: dict[str, Any] = {}
    if pipe.tools:
        fields["tools"] = [responses_tool(tool) for tool in pipe.tools]
    choice = pipe.tool_choice
    if pipe.tools and choice is not None:
        named = choice not in ("auto", "required", "none")
        fields["tool_choice"] = {"type": "function", "name": choice} if named else choice
    fields.update(pipe.sampling_fields(max_tokens="max_output_tokens", stop=None))
    return fields


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    return ""


def input_content(content: Any) -> Any:
    """Chat-style content parts in the Responses input shape; strings pass unchanged."""
    if content is None:
        return ""
    if isinstance(content, str) or not isinstance(content, Sequence):
        return content
    parts: list[Any] = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part, Mapping):
            parts.append({"type": "input_text", "text": part.get("text", "")})
        elif kind == "image_url" and isinstance(part, Mapping):
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            converted: dict[str, Any] = {"type": "input_image", "image_url": url}
            detail = image.get("detail") if isinstance(image, Mapping) else None
            converted["detail"] = detail or "auto"
            parts.append(converted)
        else:
            parts.append(part)
    return parts


def arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return ""
    return json.dumps(arguments, ensure_ascii=False)


def reasoning_input_item(state: ReasoningState) -> dict[str, Any] | None:
    """The ``input`` item that replays one reasoning state, or ``None`` if it holds none.

    Sends the id, the summary, ``encrypted_content`` when present and raw reasoning
    ``content`` when the server returned some (gpt-oss servers rebuild the chain of thought
    from it); status and unknown fields stay behind.
    """
    payload = state.payload
    if isinstance(payload, bytes):
        payload = payload.decode("utf-8", "replace")
    try:
        data = json.loads(payload)
    except ValueError:
        data = None
    if not isinstance(data, Mapping):
        if state.kind != ENCRYPTED_KIND:
            return None
        # A bare encrypted blob, as a host might have stored it.
        data = {
            "id": state.block if isinstance(state.block, str) else None,
            "encrypted_content": payload,
        }
    item: dict[str, Any] = {"type": "reasoning"}
    item_id = text_of(data.get("id"))
    if item_id is not None:
        item["id"] = item_id
    item["summary"] = [
        {"type": "summary_text", "text": part["text"]}
        for part in data.get("summary") or ()
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
    ]
    content = [
        {"type": "reasoning_text", "text": part["text"]}
        for part in data.get("content") or ()
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
    ]
    if content:
        item["content"] = content
    encrypted = text_of(data.get("encrypted_content"))
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


@functools.cache
def _body_parameters(create: Callable[..., Any]) -> frozenset[str]:
    """The JSON fields the SDK's ``create()`` takes as keyword arguments."""
    try:
        parameters = inspect.signature(create).parameters
    except (TypeError, ValueError):
        return frozenset({"model", "input", "stream"})
    return frozenset(
        name
        for name, parameter in parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name not in _SDK_ONLY_PARAMETERS
    )


def sdk_arguments(create: Callable[..., Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """Split a request body into ``create()`` keyword arguments plus ``extra_body``."""
    known = _body_parameters(getattr(create, "__func__", create))
    arguments: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in body.items():
        (arguments if key in known else extra)[key] = value
    if extra:
        arguments["extra_body"] = extra
    return arguments


def tool_output(content: Any) -> Any:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return input_content(content)
    return json.dumps(content, ensure_ascii=False)


# ------------------------------------------------------------------------------ preflight


def _reasons(pipe: Any) -> bool:
    # Asked to reason, or a model whose profile says it reasons unasked.
    if getattr(pipe, "reasoning", None) not in (None, False):
        return True
    return profile_of(pipe).thinks_unasked


def _stateless_item(turn: HistoryTurn) -> bool:
    """Whether the turn carries a reasoning item a ``store=False`` request can send."""
    for state in turn.states:
        item = reasoning_input_item(state)
        if item is not None and "encrypted_content" in item:
            return True
    return False


def _itemless(checked: PreflightTurn) -> bool:
    return checked.in_tool_loop and checked.calls_tools and not _stateless_item(checked.turn)


def preflight(
    pipe: Any, turns: Sequence[PreflightTurn], policy: PassbackRules
) -> list[PassbackProblem]:
    """``store=False`` with a reasoning model: a tool-loop turn whose reasoning item is gone.

    Stateless requests cannot refer to stored items: a function call goes back with its
    reasoning item (``encrypted_content``), or the API refuses the call's item id and the
    model continues without its reasoning
    (https://platform.openai.com/docs/guides/reasoning#encrypted-reasoning-items).
    """
    if getattr(pipe, "store", None) is not False or not _reasons(pipe):
        return []
    return problems_where(
        turns,
        _itemless,
        "reasoning_item_missing",
        "under store=False this tool-call turn has no reasoning item with "
        "encrypted_content to send (edited, compacted, made by another model, or made "
        "without store=False). Keep the turn as a store=False run produced it, or "
        "repair (its items go without ids and without reasoning)",
    )


def repair(
    pipe: Any, turns: Sequence[PreflightTurn], policy: PassbackRules
) -> tuple[list[HistoryTurn], list[str]]:
    """Drop what cannot be sent statelessly: the turn's items go without ids."""
    note = (
        "Responses (store=False): messages {messages} go without their "
        "reasoning item and without item ids"
    )
    return repair_where(turns, _itemless, lambda turn: replace(turn, states=()), note)
