"""A history a client kept, back into chat messages and turn records.

Front ends that keep the history themselves send it back in their own shape: AG-UI messages
(``@ag-ui/client``'s ``agent.messages``: reasoning, assistant, tool, user, system messages,
camelCase on the wire) or the AI SDK's UI messages (``useChat``'s ``messages``: a role and
``parts``). The web app's ``ag-ui`` and ``vercel-ui`` streams put each run's sealed envelope
on the last message the run made (``encryptedValue``, from ``REASONING_ENCRYPTED_VALUE``) or on
a reasoning part of its own (``providerMetadata.reasoningStream.envelope``); this module reads
those shapes into plain chat-completions messages, each assistant turn with the
:class:`TurnRecord` its envelope held (a tool loop's envelope holds one per model step, matched
to the run's turns by their tool calls and checked against each turn's text and calls, so an
envelope moved onto another turn does not open). An envelope that does not open, or a turn
without one when keys are given, gives a record with ``envelope_problem`` set (preflight's
``envelope_invalid``), never an exception: the rest of the history still loads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import UsageError
from ._envelopes import (
    ENVELOPE_KEY,
    MOVED,
    EnvelopeInvalid,
    SealedStep,
    seal_keys_or_none,
    turn_binding,
)
from ._records import TurnRecord

__all__ = ["METADATA_KEY", "Rebuilt", "from_ag_ui_messages", "from_ui_messages"]

METADATA_KEY = "reasoningStream"
"""The ``providerMetadata`` namespace of the AI SDK stream's sealed reasoning part."""

Rebuilt = list[tuple[dict[str, Any], TurnRecord | None]]
"""Messages in order, each with its record (assistant turns only; ``None`` elsewhere)."""

_MISSING = (
    "the assistant turn came back without its sealed envelope (dropped by the client, or "
    "made elsewhere), so its reasoning state cannot be restored"
)
_NO_KEYS = "the turn carries a sealed envelope, but no seal_keys were given to open it"
_NOT_IN_RUN = (
    "the assistant turn has no record in its run's sealed envelope (a step the run did not "
    "finish, or a turn made elsewhere)"
)


@dataclass
class _Turn:
    """One assistant turn being gathered from a client's messages."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    envelopes: list[Any] = field(default_factory=list)
    seen: bool = False

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text)}
        if self.calls:
            message["tool_calls"] = self.calls
        thinking = "\n".join(text for text in self.reasoning if text)
        if thinking:
            message["thinking"] = thinking
        return message

    def binding(self) -> bytes:
        """What this turn's envelope was bound to: its text and tool call ids, as sent back."""
        return turn_binding("".join(self.text), [call.get("id") for call in self.calls])


def _problem(reason: str) -> TurnRecord:
    return TurnRecord(None, None, envelope_problem=reason)


class _Builder:
    """Gathers messages and turns in order; a turn is flushed at the next non-assistant one.

    The assistant turns since the last user or system message, or since the last sealed turn,
    are one run's: its envelope (on the run's last turn) holds a record per model step, bound
    to the text and tool calls of each, and is matched to consecutive turns of the run (the
    first ones, unless a turn from elsewhere precedes them; a step the run did not finish,
    after them, has no record).
    """

    def __init__(self, keys: Any) -> None:
        self.keys = seal_keys_or_none(keys)
        self.out: Rebuilt = []
        self.turn = _Turn()
        self.run: list[tuple[int, _Turn]] = []

    def flush(self) -> None:
        turn, self.turn = self.turn, _Turn()
        if not turn.seen:
            return
        self.run.append((len(self.out), turn))
        self.out.append((turn.message(), None))
        self.out += [(result, None) for result in turn.results]
        if turn.envelopes:
            self.seal_run()

    def add(self, message: dict[str, Any]) -> None:
        self.flush()
        if message.get("role") != "tool":
            self.end_run()
        self.out.append((message, None))

    def end_run(self) -> None:
        """Turns left without an envelope: missing, when keys are given."""
        for index, _turn in self.run:
            if self.keys is not None:
                self.out[index] = (self.out[index][0], _problem(_MISSING))
        self.run = []

    def seal_run(self) -> None:
        run, self.run = self.run, []
        sealed = run[-1][1]
        envelopes = list(dict.fromkeys(str(item) for item in sealed.envelopes))
        if self.keys is None:
            self.out[run[-1][0]] = (self.out[run[-1][0]][0], _problem(_NO_KEYS))
            return
        if len(envelopes) > 1:
            reason = "the assistant turn carries several different envelopes"
        else:
            try:
                steps = self.keys.open(sealed.envelopes[0])
            except EnvelopeInvalid as problem:
                reason = problem.reason
            else:
                units = _align([turn for _index, turn in run], steps)
                if units is not None:
                    self._regroup(run[0][0], units)
                    return
                reason = MOVED
        for index, _turn in run:
            self.out[index] = (self.out[index][0], _problem(reason))

    def _regroup(self, start: int, units: list[tuple[_Turn, TurnRecord]]) -> None:
        """Replace the run's messages (from ``start``) by its turns, each followed by the
        tool messages that answer its calls."""
        tools = [message for message, _record in self.out[start:] if message["role"] == "tool"]
        del self.out[start:]
        for turn, record in units:
            ids = {call.get("id") for call in turn.calls}
            self.out.append((turn.message(), record))
            answers = [tool for tool in tools if tool.get("tool_call_id") in ids]
            tools = [tool for tool in tools if tool.get("tool_call_id") not in ids]
            self.out += [(tool, None) for tool in answers]
        self.out += [(tool, None) for tool in tools]

    def finish(self) -> Rebuilt:
        self.flush()
        self.end_run()
        return self.out


def _merged(pieces: list[_Turn]) -> _Turn:
    turn = _Turn(seen=True)
    for piece in pieces:
        turn.text += piece.text
        turn.reasoning += piece.reasoning
        turn.calls += piece.calls
    return turn


def _align(
    pieces: list[_Turn], steps: tuple[SealedStep, ...]
) -> list[tuple[_Turn, TurnRecord]] | None:
    """The run's pieces grouped into its model steps, each with its record, or ``None``.

    A client may split one step's messages (``@ag-ui/client`` puts each tool result right
    after the message holding its call, so interleaved thinking between two calls lands
    after a tool message): consecutive pieces are joined while their calls are part of the
    step's. The pieces matched must be the turns the envelope was sealed for (text and
    calls, :func:`turn_binding`); pieces outside them (a step the run did not finish, a
    turn made elsewhere) get a record that says so.
    """
    for offset in range(len(pieces)):
        units: list[tuple[_Turn, TurnRecord]] = [
            (piece, _problem(_NOT_IN_RUN)) for piece in pieces[:offset]
        ]
        position = offset
        for step in steps:
            if position >= len(pieces):
                break
            wanted = set(step.calls)
            group = [pieces[position]]
            position += 1
            while (
                position < len(pieces)
                and {c.get("id") for t in group for c in t.calls} < wanted
                and {c.get("id") for c in pieces[position].calls} <= wanted
            ):
                group.append(pieces[position])
                position += 1
            turn = _merged(group)
            if turn.binding() != step.turn:
                break
            units.append((turn, step.record))
        else:
            units += [(piece, _problem(_NOT_IN_RUN)) for piece in pieces[position:]]
            return units
    return None


def _plain(message: Any, where: str) -> dict[str, Any]:
    """A message as a dict: pydantic models (``ag_ui.core``) are dumped with their aliases."""
    dump = getattr(message, "model_dump", None)
    if callable(dump):
        message = dump(by_alias=True, exclude_none=True)
    if not isinstance(message, Mapping):
        raise UsageError(f"{where} is a {type(message).__name__}, not a message object")
    return dict(message)


def _get(message: Mapping[str, Any], camel: str, snake: str) -> Any:
    return message.get(camel, message.get(snake))


def _text_content(content: Any, where: str) -> Any:
    """User or system content: a str, or text parts (kept as chat-completions parts)."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        parts: list[dict[str, Any]] = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                parts.append({"type": "text", "text": str(part.get("text", ""))})
            else:
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise UsageError(
                    f"{where} has a content part of type {kind!r}; only text parts are "
                    "rebuilt into a conversation: add other content with add_message()"
                )
        return parts
    raise UsageError(f"{where} has content of type {type(content).__name__}")


def from_ag_ui_messages(messages: Iterable[Any], keys: Any) -> Rebuilt:
    """AG-UI messages (dicts in the wire's camelCase, or ``ag_ui.core`` models) rebuilt.

    Consecutive ``reasoning`` and ``assistant`` messages make one assistant turn (its text
    the assistant contents, its ``thinking`` the reasoning contents, its tool calls in
    order); a message whose ``encryptedValue`` (or a tool call's) is set ends the turn it
    belongs to. ``developer`` messages become ``system`` ones; ``activity`` messages are
    skipped.
    """
    builder = _Builder(keys)
    for index, raw in enumerate(messages):
        where = f"message {index}"
        message = _plain(raw, where)
        role = message.get("role")
        if role in ("assistant", "reasoning"):
            turn = builder.turn
            turn.seen = True
            content = message.get("content")
            if role == "reasoning":
                turn.reasoning.append(str(content or ""))
            elif isinstance(content, str):
                turn.text.append(content)
            ended = False
            for call in _get(message, "toolCalls", "tool_calls") or ():
                call = _plain(call, f"{where}'s tool call")
                function = call.get("function") or {}
                turn.calls.append(
                    {
                        "id": call.get("id"),
                        "type": "function",
                        "function": {
                            "name": function.get("name"),
                            "arguments": function.get("arguments", ""),
                        },
                    }
                )
                sealed = _get(call, "encryptedValue", "encrypted_value")
                if sealed is not None:
                    turn.envelopes.append(sealed)
                    ended = True
            sealed = _get(message, "encryptedValue", "encrypted_value")
            if sealed is not None:
                turn.envelopes.append(sealed)
                ended = True
            if ended:
                builder.flush()
        elif role in ("system", "developer", "user"):
            builder.add(
                {
                    "role": "system" if role == "developer" else role,
                    "content": _text_content(message.get("content"), where),
                }
            )
        elif role == "tool":
            builder.add(
                {
                    "role": "tool",
                    "tool_call_id": _get(message, "toolCallId", "tool_call_id"),
                    "content": _text_content(message.get("content"), where),
                }
            )
        elif role != "activity":
            raise UsageError(f"{where} has role {role!r}, which AG-UI does not define")
    return builder.finish()


def _envelope_of(part: Mapping[str, Any]) -> Any:
    metadata = part.get("providerMetadata")
    if isinstance(metadata, Mapping):
        ours = metadata.get(METADATA_KEY)
        if isinstance(ours, Mapping):
            return ours.get(ENVELOPE_KEY)
    return None


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _tool_part(turn: _Turn, part: Mapping[str, Any], kind: str) -> None:
    name = part.get("toolName") if kind == "dynamic-tool" else kind.removeprefix("tool-")
    call_id = part.get("toolCallId")
    turn.calls.append(
        {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": _arguments(part.get("input", {}))},
        }
    )
    state = part.get("state")
    if state == "output-available":
        output = part.get("output")
        content = output if isinstance(output, str) else _arguments(output)
    elif state == "output-error":
        content = str(part.get("errorText", ""))
    else:
        return
    turn.results.append({"role": "tool", "tool_call_id": call_id, "content": content})


def from_ui_messages(messages: Iterable[Any], keys: Any) -> Rebuilt:
    """The AI SDK's UI messages (``useChat``'s ``messages``, as JSON) rebuilt.

    An assistant message may hold several runs (``useChat`` continues the last assistant
    message after a tool result): a reasoning part carrying an envelope, or a
    ``step-start`` part, ends a turn. Tool parts become the turn's tool calls, and their
    outputs (``output-available``, ``output-error``) tool messages after it.
    """
    builder = _Builder(keys)
    for index, raw in enumerate(messages):
        where = f"message {index}"
        message = _plain(raw, where)
        role = message.get("role")
        parts = message.get("parts")
        if not isinstance(parts, list):
            raise UsageError(f"{where} has no list of parts; send useChat's UI messages")
        if role in ("system", "user"):
            texts: list[str] = []
            for part in parts:
                kind = part.get("type") if isinstance(part, Mapping) else None
                if kind == "text":
                    texts.append(str(part.get("text", "")))
                elif kind != "step-start":
                    raise UsageError(
                        f"{where} has a part of type {kind!r}; only text parts of "
                        f"{role} messages are rebuilt: add others with add_message()"
                    )
            builder.add({"role": role, "content": "".join(texts)})
            continue
        if role != "assistant":
            raise UsageError(f"{where} has role {role!r}; UI messages are system, user, assistant")
        builder.flush()
        for part in parts:
            if not isinstance(part, Mapping):
                raise UsageError(f"{where} has a part that is not an object")
            kind = str(part.get("type"))
            turn = builder.turn
            if kind == "step-start":
                builder.flush()
            elif kind == "text":
                turn.seen = True
                turn.text.append(str(part.get("text", "")))
            elif kind == "reasoning":
                turn.seen = True
                turn.reasoning.append(str(part.get("text", "")))
                sealed = _envelope_of(part)
                if sealed is not None:
                    turn.envelopes.append(sealed)
                    builder.flush()
            elif kind.startswith("tool-") or kind == "dynamic-tool":
                turn.seen = True
                _tool_part(turn, part, kind)
            # Sources, files and data parts are the application's: no provider needs them.
        builder.flush()
    return builder.finish()
