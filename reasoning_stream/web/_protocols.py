"""Entries into server-sent events, one translator per protocol: pure, no I/O, no framework.

A translator is fed a stream's entries in order, from its first, and returns the SSE events
each entry gives; every event carries the id of the entry it came from. Part and message ids
are derived from entry ids (never from a counter), so replaying the same entries always gives
the same events: a resumed response is the tail of the whole one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias

from .._events import (
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    UsageReport,
)
from ..conversation._client_history import METADATA_KEY
from ..conversation._envelopes import ENVELOPE_KEY
from ..hub import Entry, event_to_dict

__all__ = [
    "PROTOCOLS",
    "AGUITranslator",
    "ChannelTranslator",
    "ProtocolName",
    "SSEEvent",
    "Translator",
    "VercelUITranslator",
    "translator_for",
]

ProtocolName: TypeAlias = Literal["channel", "ag-ui", "vercel-ui"]
PROTOCOLS: tuple[ProtocolName, ...] = ("channel", "ag-ui", "vercel-ui")


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One server-sent event: ``id`` is the entry it came from; ``event`` its SSE type."""

    id: str
    data: str
    event: str | None = None

    def encode(self) -> bytes:
        """The event on the wire (``data`` never holds a line break: it is one JSON value)."""
        head = f"id: {self.id}\n"
        if self.event is not None:
            head += f"event: {self.event}\n"
        return f"{head}data: {self.data}\n\n".encode()


class Translator(Protocol):
    """Turns a stream's entries, fed in order from the first, into SSE events."""

    replays: bool
    """Whether the translator needs the stream from its first entry (it keeps state)."""

    def feed(self, entry: Entry) -> list[SSEEvent]: ...


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


class ChannelTranslator:
    """``protocol=channel``: one event per entry, the entry as JSON; the final one is ``end``.

    ``end`` carries ``status``, and ``error`` (why) when a run failed or its writer was lost,
    and ``envelope``, the run's sealed reasoning state, when the app serves envelopes.
    """

    replays = False

    def __init__(self, envelopes: bool = False) -> None:
        self._envelopes = envelopes

    def feed(self, entry: Entry) -> list[SSEEvent]:
        if entry.final:
            end: dict[str, Any] = {"chunk": entry.chunk, "status": entry.status}
            if entry.error is not None:  # the run failed, or its writer was lost
                end["error"] = entry.error
            if self._envelopes and entry.envelope is not None:
                end["envelope"] = entry.envelope
            return [SSEEvent(entry.id, _json(end), "end")]
        data: dict[str, Any] = {"chunk": entry.chunk}
        if entry.event is not None:
            data.update(event_to_dict(entry.event))
        return [SSEEvent(entry.id, _json(data))]


class _PartsTranslator:
    """The part bookkeeping the AG-UI and AI SDK UI streams share; subclasses spell the wire.

    ``ReasoningHidden`` has no event in either protocol (they stream reasoning text, and a
    hidden segment has none), so it is left out; the ``channel`` protocol carries it as JSON.

    A reasoning segment opens at ``ReasoningStart`` (or a ``ReasoningDelta`` outside one) and
    closes at ``ReasoningEnd``, at answer text, or at the end; answer text is one part until
    reasoning resumes or another pipe of a pipeline speaks. Part ids are ``reasoning-<entry
    id>`` and ``text-<entry id>``: the entry that opened them. With ``envelopes``, a final
    entry's sealed envelope goes out before the ending, in each protocol's way.
    """

    replays = True

    def __init__(self, stream_id: str, envelopes: bool = False) -> None:
        self._stream_id = stream_id
        self._envelopes = envelopes
        self._last_message: str | None = None
        """The id of the message a client made last for this run (AG-UI's entity)."""
        self._started = False
        self._reasoning: str | None = None
        self._text: str | None = None
        self._text_source: str | None = None
        self._usage: Usage | None = None
        self._finish_reason: str | None = None
        self._answered = False
        """A tool result came: the model's next words are the next step's."""

    def feed(self, entry: Entry) -> list[SSEEvent]:
        out: list[dict[str, Any]] = []
        if not self._started:
            self._started = True
            out += self._start()
        event = entry.event
        if self._answered and isinstance(
            event, ReasoningStart | ReasoningDelta | TextDelta | ToolCall
        ):
            self._answered = False
            out += self._next_step()
        if isinstance(event, ReasoningStart):
            self._close_text(out)
            self._open_reasoning(out, entry.id)
        elif isinstance(event, ReasoningDelta):
            part = self._reasoning
            if part is None:
                self._close_text(out)
                part = self._open_reasoning(out, entry.id)
            if event.text:
                out.append(self._reasoning_delta(part, event.text))
        elif isinstance(event, ReasoningEnd):
            self._close_reasoning(out)
        elif isinstance(event, TextDelta):
            self._close_reasoning(out)
            if self._text is not None and event.source != self._text_source:
                self._close_text(out)
            if self._text is None:
                self._text = self._last_message = self._part_id("text", entry.id)
                self._text_source = event.source
                out.append(self._text_start(self._text))
            if event.text:
                out.append(self._text_delta(self._text, event.text))
        elif isinstance(event, ToolCall):
            out += self._tool_call(event)
        elif isinstance(event, ToolResult):
            # A tool's result is a message of its own: the model's next words start new parts.
            self._close_reasoning(out)
            self._close_text(out)
            out.append(self._tool_result(event, entry.id))
            self._answered = True
        elif isinstance(event, UsageReport):
            self._usage = event.usage if self._usage is None else self._usage.merged(event.usage)
        elif isinstance(event, Finish):
            self._finish_reason = event.reason
        if entry.final:
            self._close_reasoning(out)
            self._close_text(out)
            if self._envelopes and entry.envelope is not None:
                out += self._sealed(f"reasoning-{entry.id}", entry.envelope)
            out += self._ending(entry.status or "completed", entry.error)
        events = [SSEEvent(entry.id, _json(item)) for item in out]
        if entry.final:
            events += [SSEEvent(entry.id, data) for data in self._after_end]
        return events

    def _open_reasoning(self, out: list[dict[str, Any]], entry_id: str) -> str:
        self._reasoning = self._last_message = part = self._part_id("reasoning", entry_id)
        out += self._reasoning_start(part)
        return part

    def _close_reasoning(self, out: list[dict[str, Any]]) -> None:
        if self._reasoning is not None:
            out += self._reasoning_end(self._reasoning)
            self._reasoning = None

    def _close_text(self, out: list[dict[str, Any]]) -> None:
        if self._text is not None:
            out.append(self._text_end(self._text))
            self._text = None

    # The wire, per protocol.

    def _part_id(self, kind: str, entry_id: str) -> str:
        """The id of a part opened by entry ``entry_id``: ``<kind>-<entry id>``."""
        return f"{kind}-{entry_id}"

    _after_end: tuple[str, ...] = ()
    """Raw ``data`` of the events after the ending one (``[DONE]``)."""

    def _start(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _next_step(self) -> list[dict[str, Any]]:
        """What separates a tool loop's model steps (after the tool results)."""
        return []

    def _reasoning_start(self, part: str) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _reasoning_delta(self, part: str, text: str) -> dict[str, Any]:
        raise NotImplementedError

    def _reasoning_end(self, part: str) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _text_start(self, part: str) -> dict[str, Any]:
        raise NotImplementedError

    def _text_delta(self, part: str, text: str) -> dict[str, Any]:
        raise NotImplementedError

    def _text_end(self, part: str) -> dict[str, Any]:
        raise NotImplementedError

    def _tool_call(self, call: ToolCall) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _tool_result(self, result: ToolResult, entry_id: str) -> dict[str, Any]:
        raise NotImplementedError

    def _ending(self, status: str, error: str | None) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _sealed(self, part: str, envelope: str) -> list[dict[str, Any]]:
        """The events that hand the run's envelope to the client (``part``: a free part id)."""
        raise NotImplementedError


class AGUITranslator(_PartsTranslator):
    """``protocol=ag-ui``: AG-UI events (wire names, camelCase fields) from the typed events.

    ``RUN_STARTED`` comes with the first entry; each reasoning segment is ``REASONING_START``,
    ``REASONING_MESSAGE_START``, ``REASONING_MESSAGE_CONTENT``..., ``REASONING_MESSAGE_END``,
    ``REASONING_END``; answer text is a ``TEXT_MESSAGE_START`` / ``CONTENT`` / ``END`` message
    (a new message after reasoning resumes or another pipe of a pipeline speaks); a tool call
    is ``TOOL_CALL_START`` / ``ARGS`` / ``END``, and a tool loop's result of it
    ``TOOL_CALL_RESULT`` (``messageId`` ``tool-<entry id>``, ``content`` the text the model
    read, an error result's reason included). The final entry closes what is open, then:

    - ``completed`` and ``length``: ``RUN_FINISHED`` with ``outcome: {"type": "success"}``
      (a length stop is a finished run whose answer was cut: ``result.status`` says
      ``"length"``);
    - ``cancelled_before_answer`` and ``cancelled_after_partial_answer``: ``RUN_FINISHED`` with
      ``outcome: {"type": "cancelled"}`` and the status in ``result.status``;
    - ``error``: ``RUN_ERROR`` with ``code: "error"`` and why as ``message``: the run's error
      (its type and message, ``Entry.error``), or, for a run whose writer was lost, the
      hub's sentence saying so.

    ``result`` also holds ``finishReason`` when the provider gave one; token usage, when
    reported, is in ``usage``. No content event ever has an empty ``delta``. Message ids are
    ``<stream id>/reasoning-<entry id>`` and ``<stream id>/text-<entry id>``: a client keeps
    the messages of all its runs in one list, so they must not repeat from run to run.

    With envelopes (``create_app(seal_keys=...)``), the ending is preceded by
    ``REASONING_ENCRYPTED_VALUE`` (``subtype: "message"``) whose ``entityId`` is the last
    message the client made for the run (a reasoning or text message, or the assistant
    message ``@ag-ui/client`` makes for a tool call outside text), so the client stores the
    run's sealed envelope as that message's ``encryptedValue`` and sends it back.
    """

    def _part_id(self, kind: str, entry_id: str) -> str:
        # A client keeps every run's messages in one list, found by id: ids unique to the
        # stream keep a second run's messages from landing in the first's.
        return f"{self._stream_id}/{kind}-{entry_id}"

    def _sealed(self, part: str, envelope: str) -> list[dict[str, Any]]:
        if self._last_message is None:  # the run made no message to keep it on
            return []
        return [
            {
                "type": "REASONING_ENCRYPTED_VALUE",
                "subtype": "message",
                "entityId": self._last_message,
                "encryptedValue": envelope,
            }
        ]

    def _start(self) -> list[dict[str, Any]]:
        return [{"type": "RUN_STARTED", "threadId": self._stream_id, "runId": self._stream_id}]

    def _reasoning_start(self, part: str) -> list[dict[str, Any]]:
        return [
            {"type": "REASONING_START", "messageId": part},
            {"type": "REASONING_MESSAGE_START", "messageId": part, "role": "reasoning"},
        ]

    def _reasoning_delta(self, part: str, text: str) -> dict[str, Any]:
        return {"type": "REASONING_MESSAGE_CONTENT", "messageId": part, "delta": text}

    def _reasoning_end(self, part: str) -> list[dict[str, Any]]:
        return [
            {"type": "REASONING_MESSAGE_END", "messageId": part},
            {"type": "REASONING_END", "messageId": part},
        ]

    def _text_start(self, part: str) -> dict[str, Any]:
        return {"type": "TEXT_MESSAGE_START", "messageId": part, "role": "assistant"}

    def _text_delta(self, part: str, text: str) -> dict[str, Any]:
        return {"type": "TEXT_MESSAGE_CONTENT", "messageId": part, "delta": text}

    def _text_end(self, part: str) -> dict[str, Any]:
        return {"type": "TEXT_MESSAGE_END", "messageId": part}

    def _tool_call(self, call: ToolCall) -> list[dict[str, Any]]:
        start: dict[str, Any] = {
            "type": "TOOL_CALL_START",
            "toolCallId": call.id,
            "toolCallName": call.name,
        }
        if self._text is not None:
            start["parentMessageId"] = self._text
        else:  # @ag-ui/client makes an assistant message with the call's id for it
            self._last_message = call.id
        events = [start]
        if call.arguments:
            events.append(
                {"type": "TOOL_CALL_ARGS", "toolCallId": call.id, "delta": call.arguments}
            )
        events.append({"type": "TOOL_CALL_END", "toolCallId": call.id})
        return events

    def _tool_result(self, result: ToolResult, entry_id: str) -> dict[str, Any]:
        # The tool message this result mints is named after its entry, as parts are.
        return {
            "type": "TOOL_CALL_RESULT",
            "messageId": f"tool-{entry_id}",
            "toolCallId": result.id,
            "content": result.content,
            "role": "tool",
        }

    def _ending(self, status: str, error: str | None) -> list[dict[str, Any]]:
        usage: list[dict[str, int]] = []
        if self._usage is not None:
            counts = {
                "inputTokens": self._usage.input_tokens,
                "outputTokens": self._usage.output_tokens,
                "reasoningTokens": self._usage.reasoning_tokens,
            }
            usage.append({name: value for name, value in counts.items() if value is not None})
        if status == "error":
            ending: dict[str, Any] = {
                "type": "RUN_ERROR",
                "message": error or f"run {self._stream_id!r} ended with an error",
                "code": "error",
            }
        else:
            result: dict[str, Any] = {"status": status}
            if self._finish_reason is not None:
                result["finishReason"] = self._finish_reason
            cancelled = status.startswith("cancelled")
            ending = {
                "type": "RUN_FINISHED",
                "threadId": self._stream_id,
                "runId": self._stream_id,
                "outcome": {"type": "cancelled" if cancelled else "success"},
                "result": result,
            }
        if usage:
            ending["usage"] = usage
        return [ending]


_FINISH_REASONS = {"stop": "stop", "length": "length", "tool_calls": "tool-calls"}


class VercelUITranslator(_PartsTranslator):
    """``protocol=vercel-ui``: the AI SDK UI message stream, version 1.

    ``start`` and ``start-step``; per reasoning segment ``reasoning-start`` / ``-delta`` /
    ``-end``; answer text as ``text-start`` / ``-delta`` / ``-end``; ``tool-input-available``
    per tool call, and ``tool-output-available`` (``output``: the text the model read) or
    ``tool-output-error`` (``errorText``: the reason) per tool loop result, and
    ``finish-step`` / ``start-step`` before the model's next step (so ``useChat`` keeps a
    ``step-start`` part per model step); then ``finish-step`` and ``finish`` (``finishReason``
    ``stop``, ``length``, ``tool-calls`` or ``other`` for a cancelled run, the status in
    ``messageMetadata``) or ``error`` (``errorText`` is why: ``Entry.error``, the run's error
    or the hub's word on a lost writer), and ``data: [DONE]``.
    Part ids are ``reasoning-<entry id>`` and ``text-<entry id>``.

    With envelopes (``create_app(seal_keys=...)``), the ending is preceded by one more
    reasoning part, without text, whose ``providerMetadata`` is ``{"reasoningStream":
    {"envelope": ...}}``: the run's sealed envelope, kept by ``useChat`` on the message and
    sent back with it (the AI SDK hands redacted reasoning over the same way).
    """

    _after_end = ("[DONE]",)

    def _sealed(self, part: str, envelope: str) -> list[dict[str, Any]]:
        metadata = {METADATA_KEY: {ENVELOPE_KEY: envelope}}
        return [
            {"type": "reasoning-start", "id": part, "providerMetadata": metadata},
            {"type": "reasoning-end", "id": part},
        ]

    def __init__(self, stream_id: str, envelopes: bool = False) -> None:
        super().__init__(stream_id, envelopes)
        self._tool_calls = False

    def _start(self) -> list[dict[str, Any]]:
        return [{"type": "start", "messageId": self._stream_id}, {"type": "start-step"}]

    def _next_step(self) -> list[dict[str, Any]]:
        return [{"type": "finish-step"}, {"type": "start-step"}]

    def _reasoning_start(self, part: str) -> list[dict[str, Any]]:
        return [{"type": "reasoning-start", "id": part}]

    def _reasoning_delta(self, part: str, text: str) -> dict[str, Any]:
        return {"type": "reasoning-delta", "id": part, "delta": text}

    def _reasoning_end(self, part: str) -> list[dict[str, Any]]:
        return [{"type": "reasoning-end", "id": part}]

    def _text_start(self, part: str) -> dict[str, Any]:
        return {"type": "text-start", "id": part}

    def _text_delta(self, part: str, text: str) -> dict[str, Any]:
        return {"type": "text-delta", "id": part, "delta": text}

    def _text_end(self, part: str) -> dict[str, Any]:
        return {"type": "text-end", "id": part}

    def _tool_call(self, call: ToolCall) -> list[dict[str, Any]]:
        self._tool_calls = True
        return [
            {
                "type": "tool-input-available",
                "toolCallId": call.id,
                "toolName": call.name,
                "input": _arguments(call.arguments),
            }
        ]

    def _tool_result(self, result: ToolResult, entry_id: str) -> dict[str, Any]:
        self._tool_calls = False  # answered: the run goes on to the model's next response
        if result.is_error:
            return {
                "type": "tool-output-error",
                "toolCallId": result.id,
                "errorText": result.content,
            }
        return {"type": "tool-output-available", "toolCallId": result.id, "output": result.content}

    def _ending(self, status: str, error: str | None) -> list[dict[str, Any]]:
        if status == "error":
            return [
                {
                    "type": "error",
                    "errorText": error or f"run {self._stream_id!r} ended with an error",
                }
            ]
        if status.startswith("cancelled"):
            reason = "other"
        elif status == "length":
            reason = "length"
        elif self._tool_calls:
            reason = "tool-calls"
        else:
            reason = _FINISH_REASONS.get(self._finish_reason or "stop", "other")
        return [
            {"type": "finish-step"},
            {"type": "finish", "finishReason": reason, "messageMetadata": {"status": status}},
        ]


def _arguments(arguments: str) -> Any:
    try:
        return json.loads(arguments) if arguments else {}
    except ValueError:
        return arguments


def translator_for(
    protocol: ProtocolName, stream_id: str, *, envelopes: bool = False
) -> Translator:
    """A fresh translator for ``protocol``; ``envelopes``: serve the final entry's sealed
    envelope (the app was given ``seal_keys``)."""
    if protocol == "channel":
        return ChannelTranslator(envelopes)
    if protocol == "ag-ui":
        return AGUITranslator(stream_id, envelopes)
    return VercelUITranslator(stream_id, envelopes)
