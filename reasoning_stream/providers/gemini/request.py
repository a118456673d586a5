"""History turns into a Gemini ``generateContent`` request, signatures back on their parts.

An assistant turn becomes a ``"model"`` content whose parts are rebuilt from the recorded
signature states: the answer text is cut at the recorded offsets so a signed text part starts
where it did, each signed call gets its signature back on its own ``functionCall`` part, a
signed thought or empty part comes back as an empty part carrying its signature, all in the
recorded order. Reasoning text itself is never sent back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeGuard

from ..._events import ReasoningState
from ..._messages import TOOL_ERROR
from ..._tools import Tool
from ..._turns import HistoryTurn, PassbackProblem, PreflightTurn
from ...conversation._history import tool_call_arguments
from ...conversation._policy import profile_of
from ...conversation._preflight import problems_where, repair_where
from .._spec import PassbackRules
from .translate import int_of, str_of

if TYPE_CHECKING:
    from .._pipe import ProviderPipe

__all__ = ["PLACEHOLDER_SIGNATURE", "contents", "preflight", "repair", "tool_declarations"]

_DATA_URL = re.compile(r"^data:(?P<mime>[^;,]+);base64,(?P<data>.*)$", re.DOTALL)


def _user_parts(content: Any) -> list[dict[str, Any]]:
    """OpenAI-style content (a string or a part list) as Gemini parts."""
    if isinstance(content, str):
        return [{"text": content}]
    parts: list[dict[str, Any]] = []
    for item in content if isinstance(content, Sequence) else ():
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "text":
            parts.append({"text": str_of(item.get("text"))})
        elif item.get("type") == "image_url":
            image = item.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            match = _DATA_URL.match(url) if isinstance(url, str) else None
            if match:
                parts.append({"inlineData": {"mimeType": match["mime"], "data": match["data"]}})
    return parts


def _content_text(content: Any) -> str:
    return "".join(str_of(part.get("text")) for part in _user_parts(content))


def _function_response(content: Any, *, error: bool = False) -> dict[str, Any]:
    """A tool result as the object ``functionResponse.response`` must be; a failed call's
    reason under the documented ``error`` key ("Use "output" key to specify function output
    and "error" key to specify error details",
    https://googleapis.github.io/js-genai/classes/types.FunctionResponse.html)."""
    text = content if isinstance(content, str) else _content_text(content)
    if error:
        return {"error": text}
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    return value if isinstance(value, dict) else {"result": value}


def _position(state: ReasoningState) -> tuple[int, int]:
    block = str(state.block or "")
    candidate, _, part = block.partition(":")
    try:
        return int(candidate), int(part)
    except ValueError:
        return 0, 0


class _Call:
    """One tool call of a history message, ready to become a ``functionCall`` part."""

    __slots__ = ("args", "id", "name", "server_id")

    def __init__(self, call: Mapping[str, Any]) -> None:
        function = call.get("function") or {}
        self.id = str(call.get("id") or "")
        self.name = str_of(function.get("name"))
        self.args = tool_call_arguments(
            function.get("arguments"), self.name, provider_label="Gemini"
        )
        self.server_id: str | None = None

    def part(self) -> dict[str, Any]:
        call: dict[str, Any] = {"name": self.name, "args": self.args}
        if self.server_id:
            call["id"] = self.server_id
        return {"functionCall": call}


def _model_parts(
    message: Mapping[str, Any], states: Sequence[ReasoningState], calls: Sequence[_Call]
) -> list[dict[str, Any]]:
    """A model turn's parts, each stored signature back on the part it came with.

    Sets ``server_id`` on the calls whose signature state recorded Gemini's own call id.
    """
    text = _content_text(message.get("content"))
    signed = sorted((s for s in states if s.kind == "signature"), key=_position)
    parts: list[dict[str, Any]] = []
    placed_text = 0
    next_call = 0
    used: set[int] = set()

    def place_text(upto: int) -> None:
        nonlocal placed_text
        if upto > placed_text:
            parts.append({"text": text[placed_text:upto]})
            placed_text = upto

    def place_calls(upto: int) -> None:
        nonlocal next_call
        while next_call < min(upto, len(calls)):
            if next_call not in used:
                parts.append(calls[next_call].part())
            next_call += 1

    for number, state in enumerate(signed):
        extra = state.extra
        kind = extra.get("part")
        offset = int_of(extra.get("text_offset"))
        offset = min(max(placed_text if offset is None else offset, placed_text), len(text))
        call_index = int_of(extra.get("call_index"))
        place_text(offset)
        place_calls(next_call if call_index is None else call_index)
        signature = {"thoughtSignature": state.payload}
        if kind == "text":
            later = [int_of(s.extra.get("text_offset")) for s in signed[number + 1 :]]
            end = next((o for o in later if o is not None and o > offset), len(text))
            end = min(end, len(text))
            parts.append({"text": text[offset:end], **signature})
            placed_text = max(placed_text, end)
        elif kind == "function_call":
            index = _match_call(calls, used, extra, call_index)
            if index is None:
                continue  # the call was edited out of the history: nothing to sign
            used.add(index)
            calls[index].server_id = str_of(extra.get("id")) or None
            parts.append({**calls[index].part(), **signature})
        elif kind == "thought":
            parts.append({"text": "", "thought": True, **signature})
        elif kind == "other" and isinstance(extra.get("raw"), Mapping):
            parts.append({**extra["raw"], **signature})
        else:
            parts.append({"text": "", **signature})
    place_text(len(text))
    place_calls(len(calls))
    return parts or [{"text": ""}]


def _match_call(
    calls: Sequence[_Call], used: set[int], extra: Mapping[str, Any], call_index: int | None
) -> int | None:
    call_id = extra.get("call_id")
    for index, call in enumerate(calls):
        if index not in used and call_id and call.id == call_id:
            return index
    name = extra.get("name")
    if (
        call_index is not None
        and call_index < len(calls)
        and call_index not in used
        and calls[call_index].name == name
    ):
        return call_index
    for index, call in enumerate(calls):
        if index not in used and call.name == name:
            return index
    return None


def contents(
    turns: Sequence[HistoryTurn], pipe: object
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(systemInstruction parts, contents)`` for the history, as ``pipe`` may send it.

    System messages become instruction parts; user turns ``"user"`` contents; assistant
    turns ``"model"`` contents with ``functionCall`` parts and the signatures ``pipe`` may
    receive; tool results ``functionResponse`` parts in a user turn.
    """
    system: list[dict[str, Any]] = []
    result: list[dict[str, Any]] = []
    calls_by_id: dict[str, tuple[str, str | None]] = {}
    for turn in turns:
        message = turn.message
        role = message.get("role")
        if role in ("system", "developer"):
            system.extend(_user_parts(message.get("content")))
        elif role == "assistant":
            calls = [_Call(call) for call in message.get("tool_calls") or ()]
            # Only signatures this provider and model made go back; reasoning text never does.
            states = [state for state in turn.states if state.may_go_to(pipe, check_endpoint=False)]
            _append(result, "model", _model_parts(message, states, calls))
            for call in calls:
                calls_by_id[call.id] = (call.name, call.server_id)
        elif role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            name, server_id = calls_by_id.get(call_id, ("", None))
            response: dict[str, Any] = {
                "name": str_of(message.get("name")) or name,
                "response": _function_response(
                    message.get("content"), error=bool(turn.extra.get(TOOL_ERROR))
                ),
            }
            if server_id:
                response["id"] = server_id
            _append(result, "user", [{"functionResponse": response}])
        else:
            _append(result, "user", _user_parts(message.get("content")))
    return system, result


def is_native_tool(item: object) -> TypeGuard[Mapping[str, Any]]:
    """A native Gemini tool object (``{"googleSearch": {}}``): a dict naming no function."""
    return isinstance(item, Mapping) and "function" not in item and "name" not in item


def tool_declarations(
    tools: Sequence[Tool], native: Sequence[Mapping[str, Any]] = ()
) -> list[dict[str, Any]]:
    """Function tools as one ``functionDeclarations`` entry; native tools pass through.

    Each schema goes as ``parametersJsonSchema``, which takes JSON Schema as written
    (``anyOf``, type lists, ``additionalProperties``), where ``parameters`` takes only an
    OpenAPI subset (ai.google.dev/api/caching#FunctionDeclaration).
    """
    entries: list[dict[str, Any]] = [dict(item) for item in native]
    if tools:
        entries.insert(0, {"functionDeclarations": [_declaration(item) for item in tools]})
    return entries


def _declaration(tool: Tool) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": tool.name}
    if tool.description:
        declaration["description"] = tool.description
    declaration["parametersJsonSchema"] = dict(tool.parameters)
    return declaration


def tool_config(choice: str | None) -> dict[str, Any] | None:
    """``toolConfig.functionCallingConfig`` for a tool choice: ``AUTO``, ``ANY``
    (``"required"``), ``NONE``, or ``ANY`` limited to one name through
    ``allowedFunctionNames``
    (ai.google.dev/gemini-api/docs/function-calling#function_calling_modes)."""
    if choice is None:
        return None
    modes = {"auto": "AUTO", "required": "ANY", "none": "NONE"}
    if choice in modes:
        return {"functionCallingConfig": {"mode": modes[choice]}}
    return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [choice]}}


def generation_settings(pipe: ProviderPipe) -> dict[str, Any]:
    """The sampling settings as ``generationConfig`` fields: ``temperature``, ``topP``,
    ``maxOutputTokens``, ``stopSequences``."""
    return pipe.sampling_fields(top_p="topP", max_tokens="maxOutputTokens", stop="stopSequences")


def _append(contents: list[dict[str, Any]], role: str, parts: list[dict[str, Any]]) -> None:
    """Add parts under ``role``, joining a turn of the same role (parallel tool results)."""
    if not parts:
        return
    if contents and contents[-1]["role"] == role:
        contents[-1]["parts"].extend(parts)
    else:
        contents.append({"role": role, "parts": list(parts)})


# ------------------------------------------------------------------------------ preflight

PLACEHOLDER_SIGNATURE = "skip_thought_signature_validator"
"""Google's documented stand-in for a function call's thought signature that was lost
(https://ai.google.dev/gemini-api/docs/thought-signatures)."""


def _needs_signatures(pipe: Any) -> bool:
    # Gemini 3 and later (the profile's ``signed_calls``): a function call of the current
    # turn without its signature answers 400.
    return "signed_calls" in profile_of(pipe).passback_details


def _signed_call(turn: HistoryTurn) -> bool:
    return any(
        state.kind == "signature" and state.extra.get("part") == "function_call"
        for state in turn.states
    )


def _unsigned(checked: PreflightTurn) -> bool:
    return checked.in_tool_loop and checked.calls_tools and not _signed_call(checked.turn)


def preflight(
    pipe: Any, turns: Sequence[PreflightTurn], policy: PassbackRules
) -> list[PassbackProblem]:
    """Gemini 3 and later (profile ``signed_calls``): a function call of the current turn
    without its thought signature (400)."""
    if not _needs_signatures(pipe):
        return []
    return problems_where(
        turns,
        _unsigned,
        "signature_missing",
        "a function call of the current turn has no thought signature (edited, compacted, "
        f"added by hand or made by another model), and {pipe.model} rejects it. Keep the turn "
        "as the run produced it (conversation.add(result)), or repair (Google's "
        "placeholder signature is sent)",
    )


def repair(
    pipe: Any, turns: Sequence[PreflightTurn], policy: PassbackRules
) -> tuple[list[HistoryTurn], list[str]]:
    """The placeholder signature on the first call of each unsigned turn."""

    def signed(turn: HistoryTurn) -> HistoryTurn:
        call = (turn.message.get("tool_calls") or [{}])[0]
        name = str((call.get("function") or {}).get("name") or "")
        state = ReasoningState(
            provider=getattr(pipe, "provider", None) or "gemini",
            model=pipe.model,
            kind="signature",
            payload=PLACEHOLDER_SIGNATURE,
            endpoint=getattr(pipe, "endpoint", None),
            extra={
                "part": "function_call",
                "call_index": 0,
                "name": name,
                "text_offset": len(_content_text(turn.message.get("content"))),
            },
        )
        return replace(turn, states=(*turn.states, state))

    note = "Gemini: placeholder thought signature sent for messages {messages}"
    return repair_where(turns, _unsigned, signed, note)
