"""Anthropic's raw message-stream events into events: pure, no I/O, no SDK client.

Anthropic streams a message as numbered content blocks (``thinking``, ``redacted_thinking``,
``text``, ``tool_use``, ...), each opened by ``content_block_start``, grown by
``content_block_delta`` events and closed by ``content_block_stop``. A signed thinking block
becomes ``ReasoningState(kind="signature", payload=<signature>, block=<index>,
extra={"thinking": <the block's full thinking text>})``; a ``redacted_thinking`` block becomes
``ReasoningState(kind="redacted", payload=<data>, block=<index>)``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..._events import (
    Event,
    Finish,
    OpaqueState,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ReasoningState,
    TextDelta,
    ToolCall,
    Usage,
    UsageReport,
)
from ..._exceptions import ProviderError
from .._errors import build_error
from .._fields import field_of, text_of
from .._hidden import HiddenBlocks
from .._states import state_of

__all__ = ["AnthropicTranslator", "error_details", "field_of", "stream_error", "text_of"]

PROVIDER = "anthropic"

_STOP_REASONS: dict[str, str] = {
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}

# Anthropic documents one HTTP status per error type. An `event: error` arrives on a stream
# whose HTTP status was already 200, so the documented status is the useful one to report
# (a retry policy keyed on 429/529 then treats both paths alike).
ERROR_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


@dataclass(slots=True)
class _Block:
    """One content block being streamed."""

    type: str
    parts: list[str] = field(default_factory=list)
    signature: str = ""
    call_id: str = ""
    name: str = ""
    initial_input: Any = None
    position: dict[str, int] = field(default_factory=dict)
    """Where a thinking block sat among the answer: text before it, tool calls before it."""


class AnthropicTranslator:
    """Turns Anthropic's raw message-stream events into reasoning-stream events.

    Pure: no I/O and no SDK client. ``feed()`` takes one event, either the SDK's parsed
    object (``RawMessageStreamEvent``) or the same event as a plain dict (an httpx transport,
    Bedrock's InvokeModel stream), and returns the events it means. Blocks are tracked by
    their ``index``, so several thinking blocks in one message (interleaved thinking around
    tool use) each become their own reasoning segment and their own state.

    Hosts that serve the Messages stream themselves configure it rather than copy it:
    ``provider``, ``model`` and ``endpoint`` scope the states it makes, ``state_extra`` is
    added to every state's ``extra`` (Bedrock marks its Invoke states ``{"api": "invoke"}``),
    and ``stop_reasons`` replaces the table that maps stop reasons to finish reasons
    (reasons it does not name pass through unchanged).

    A thinking block without text (``display: "omitted"``: a signature only) and a
    ``redacted_thinking`` block are hidden reasoning: no text, and a ``ReasoningHidden``
    (the block's duration by ``clock``, the message's thinking tokens when reported) once
    the message's closing usage arrives.

    >>> translator = AnthropicTranslator(model="claude-sonnet-4-6")
    >>> translator.feed({"type": "content_block_start", "index": 0,
    ...                  "content_block": {"type": "text", "text": ""}})
    []
    >>> translator.feed({"type": "content_block_delta", "index": 0,
    ...                  "delta": {"type": "text_delta", "text": "Hi"}})
    [TextDelta(text='Hi')]
    """

    def __init__(
        self,
        *,
        provider: str = PROVIDER,
        model: str,
        endpoint: str | None = None,
        state_extra: Mapping[str, Any] | None = None,
        stop_reasons: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.provider = provider
        self.model = model
        self.endpoint = endpoint
        self.state_extra: dict[str, Any] = dict(state_extra or {})
        self.stop_reasons: Mapping[str, str] = (
            _STOP_REASONS if stop_reasons is None else stop_reasons
        )
        self.response_id: str | None = None
        self.details: dict[str, str] = {}
        """What the response says of itself: ``response_model``."""
        """The message id from ``message_start``, once seen."""
        self.stopped = False
        """Whether the message ended (a stop reason or ``message_stop``): without it, a
        stream that ends was cut short."""
        self._blocks: dict[int, _Block] = {}
        # How much answer text and how many tool calls came before the current block: each
        # state records them, so a follow-up request echoes the blocks in the order received.
        self._text_length = 0
        self._calls = 0
        self._hidden = HiddenBlocks(clock)
        self._reasoning_tokens: int | None = None

    def feed(self, event: Any) -> list[Event]:
        """The events for one raw stream event; unknown event types give none.

        Raises ``ProviderError`` for an ``error`` event (the SDK raises its own exception
        before handing one over; plain-dict transports reach this).
        """
        if type(event) is dict:  # a lean transport's event: the delta's fields read directly
            kind = event.get("type")
            if kind == "content_block_delta":
                return self._on_delta(event.get("index"), event.get("delta"))
        else:
            kind = field_of(event, "type")
            if kind == "content_block_delta":
                return self._on_delta(field_of(event, "index"), field_of(event, "delta"))
        if kind == "content_block_start":
            return self._on_start(field_of(event, "index"), field_of(event, "content_block"))
        if kind == "content_block_stop":
            index = field_of(event, "index")
            # Blocks are kept by their int index; any other index (an object too) closes none.
            block = self._blocks.pop(index, None) if isinstance(index, int) else None
            return self._close(index, block) if block else []
        if kind == "message_start":
            return self._on_message_start(field_of(event, "message"))
        if kind == "message_delta":
            return self._on_message_delta(event)
        if kind == "message_stop":
            self.stopped = True
            return []
        if kind == "error":
            raise stream_error(event, provider=self.provider)
        return []

    def read_response(self, message: Any) -> list[Event]:
        """The events of one non-streaming ``message`` (the SDK's ``Message`` or its JSON).

        Read as the stream of that message: its start (id, usage), each content block
        opened whole and closed, then its stop reason. Thinking text, signatures, redacted
        data and tool inputs come out as a stream of the same message gives them, one
        reasoning or text delta per block.

        >>> AnthropicTranslator(model="m").read_response({"id": "msg_1", "type": "message",
        ...     "content": [{"type": "text", "text": "Hi"}], "stop_reason": "end_turn"})
        [TextDelta(text='Hi'), Finish(reason='stop')]
        """
        if field_of(message, "type") == "error":
            raise stream_error(message, provider=self.provider)
        events = self.feed({"type": "message_start", "message": message})
        for index, block in enumerate(field_of(message, "content") or ()):
            events += self.feed(
                {"type": "content_block_start", "index": index, "content_block": block}
            )
            events += self.feed({"type": "content_block_stop", "index": index})
        events += self.feed(
            {"type": "message_delta", "delta": {"stop_reason": field_of(message, "stop_reason")}}
        )
        events += self.feed({"type": "message_stop"})
        return events + self.finish()

    def finish(self) -> list[Event]:
        """End of stream: close blocks that never saw their ``content_block_stop``."""
        events: list[Event] = []
        for index in sorted(self._blocks):
            events.extend(self._close(index, self._blocks[index]))
        self._blocks.clear()
        events.extend(self._hidden.release(self._reasoning_tokens))
        return events

    def salvage(self) -> list[Event]:
        """Nothing is held back: a broken stream leaves what was already emitted."""
        return []

    # -------------------------------------------------------------------------- messages

    def _on_message_start(self, message: Any) -> list[Event]:
        if message is None:
            return []
        message_id = field_of(message, "id")
        if isinstance(message_id, str) and message_id:
            self.response_id = message_id
        model = field_of(message, "model")
        if isinstance(model, str) and model:
            self.details["response_model"] = model
        usage = _usage(field_of(message, "usage"))
        if usage is None:
            return []
        self._reasoning_tokens = usage.reasoning_tokens or self._reasoning_tokens
        return [UsageReport(usage)]

    def _on_message_delta(self, event: Any) -> list[Event]:
        events: list[Event] = []
        usage = _usage(field_of(event, "usage"))
        if usage is not None:
            self._reasoning_tokens = usage.reasoning_tokens or self._reasoning_tokens
            events.append(UsageReport(usage))
        # The message's counts are in: the hidden blocks go out with them.
        events.extend(self._hidden.release(self._reasoning_tokens))
        reason = field_of(field_of(event, "delta"), "stop_reason")
        if isinstance(reason, str) and reason:
            self.stopped = True
            events.append(Finish(self.stop_reasons.get(reason, reason)))
        return events

    # ---------------------------------------------------------------------------- blocks

    def _on_start(self, index: Any, content: Any) -> list[Event]:
        if not isinstance(index, int) or content is None:
            return []
        block_type = field_of(content, "type")
        if block_type == "thinking":
            block = _Block(
                "thinking",
                signature=text_of(field_of(content, "signature")),
                position=self._position(),
            )
            self._blocks[index] = block
            self._hidden.start(index)
            events: list[Event] = [ReasoningStart()]
            # The API starts thinking blocks empty, but a proxy may send one whole.
            initial = text_of(field_of(content, "thinking"))
            if initial:
                block.parts.append(initial)
                events.append(ReasoningDelta(initial))
            return events
        if block_type == "redacted_thinking":
            # The data is complete in the start event; keep it now so a stream cut before
            # the block's stop still leaves it on the result.
            data = text_of(field_of(content, "data"))
            self._blocks[index] = _Block("redacted")
            self._hidden.start(index)
            if not data:
                return []
            return [OpaqueState(self._state("redacted", data, index, self._position()))]
        if block_type == "text":
            self._blocks[index] = _Block("text")
            initial = text_of(field_of(content, "text"))
            self._text_length += len(initial)
            return [TextDelta(initial)] if initial else []
        if block_type == "tool_use":
            self._calls += 1
            self._blocks[index] = _Block(
                "tool_use",
                call_id=text_of(field_of(content, "id")),
                name=text_of(field_of(content, "name")),
                initial_input=field_of(content, "input"),
            )
            return []
        # Server tool blocks and block types added later carry nothing this library shows.
        return []

    def _on_delta(self, index: Any, delta: Any) -> list[Event]:
        if not isinstance(index, int) or delta is None:
            return []
        plain = type(delta) is dict
        delta_type = delta.get("type") if plain else field_of(delta, "type")
        block = self._blocks.get(index)
        if delta_type == "thinking_delta":
            if block is None:
                block = self._blocks[index] = _Block("thinking", position=self._position())
                self._hidden.start(index)
            piece = delta.get("thinking") if plain else field_of(delta, "thinking")
            if not piece or not isinstance(piece, str):
                return []
            block.parts.append(piece)
            return [ReasoningDelta(piece)]
        if delta_type == "signature_delta":
            if block is None:
                block = self._blocks[index] = _Block("thinking", position=self._position())
                self._hidden.start(index)
            # The API sends the whole signature in one delta; a later one replaces it.
            block.signature = text_of(field_of(delta, "signature"))
            return []
        if delta_type == "text_delta":
            piece = delta.get("text") if plain else field_of(delta, "text")
            if not piece or not isinstance(piece, str):
                return []
            self._text_length += len(piece)
            return [TextDelta(piece)]
        if delta_type == "input_json_delta" and block is not None:
            block.parts.append(text_of(field_of(delta, "partial_json")))
            return []
        return []

    def _close(self, index: Any, block: _Block) -> list[Event]:
        if block.type == "redacted":
            self._hidden.stop(index, hidden=True)
            return []
        if block.type == "thinking":
            # No text (display "omitted": a signature only): hidden, no markers reach the
            # channel (an empty segment writes none) and ReasoningHidden follows.
            self._hidden.stop(index, hidden=not any(block.parts))
            events: list[Event] = [ReasoningEnd()]
            # An unsigned block cannot be sent back, so it leaves no state.
            if block.signature:
                state = self._state(
                    "signature",
                    block.signature,
                    index,
                    {"thinking": "".join(block.parts), **block.position},
                )
                events.append(OpaqueState(state))
            return events
        if block.type == "tool_use":
            arguments = "".join(block.parts)
            if not arguments.strip():
                initial = block.initial_input
                arguments = json.dumps(initial) if initial else "{}"
            return [ToolCall(block.call_id, block.name, arguments)]
        return []

    def _position(self) -> dict[str, int]:
        return {"text_offset": self._text_length, "call_index": self._calls}

    def _state(
        self, kind: str, payload: str, index: Any, extra: Mapping[str, Any] | None = None
    ) -> ReasoningState:
        block = index if isinstance(index, int) else None
        return state_of(self, kind, payload, block, {**(extra or {}), **self.state_extra})


def _is_count(value: Any) -> bool:
    """A token count is an int (a JSON ``true`` is none)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _usage(usage: Any) -> Usage | None:
    """Usage from a ``message_start`` or ``message_delta`` usage object.

    ``input_tokens`` is the whole prompt: Anthropic reports cache reads and cache writes
    apart from ``input_tokens``, and the three add up to what the model read.
    ``reasoning_tokens`` comes from ``output_tokens_details.thinking_tokens`` when reported.
    """
    if usage is None:
        return None
    inputs = [
        field_of(usage, name)
        for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    counted = [value for value in inputs if _is_count(value)]
    output = field_of(usage, "output_tokens")
    thinking = field_of(field_of(usage, "output_tokens_details"), "thinking_tokens")
    result = Usage(
        input_tokens=sum(counted) if _is_count(inputs[0]) else None,
        output_tokens=output if _is_count(output) else None,
        reasoning_tokens=thinking if _is_count(thinking) else None,
        cache_write_tokens=inputs[1] if _is_count(inputs[1]) else None,
        cache_read_tokens=inputs[2] if _is_count(inputs[2]) else None,
    )
    return None if result == Usage() else result


def error_details(body: Any) -> tuple[str | None, str | None]:
    """``(error.type, error.message)`` from Anthropic's error body, where present."""
    error = field_of(body, "error") if body is not None else None
    if error is None:
        return None, None
    error_type, message = field_of(error, "type"), field_of(error, "message")
    return (
        error_type if isinstance(error_type, str) else None,
        message if isinstance(message, str) else None,
    )


def stream_error(body: Any, *, provider: str = PROVIDER) -> ProviderError:
    """The ``ProviderError`` for an ``event: error`` body that arrived mid-stream."""
    error_type, message = error_details(body)
    plain = body if isinstance(body, Mapping) else None
    return build_error(
        provider,
        f"the stream reported {error_type or 'an error'}: {message or 'no message'}",
        detail="error event mid-stream",
        status=ERROR_STATUS.get(error_type or ""),
        body=dict(plain) if plain is not None else body,
    )
