"""Chat Completions chunks into events: pure, no I/O, no SDK client.

``OpenAIChatTranslator`` turns one streamed chunk (the SDK's ``ChatCompletionChunk`` or the
same JSON as a dict) into events. Host quirks are its configuration: which delta fields carry
reasoning, whether content carries inline ``<think>`` tags, whether the model starts inside
reasoning.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..._events import (
    Event,
    Finish,
    OpaqueState,
    ReasoningDelta,
    ReasoningEnd,
    TextDelta,
    ToolCall,
    Usage,
    UsageReport,
)
from ..._exceptions import ProviderError
from ...profiles import Inline
from .._errors import build_error
from .._inline import TagReader, inline_rule, inline_scanner
from .._states import ResponseFacts, state_of

__all__ = [
    "REASONING_FIELDS",
    "InlineTags",
    "OpenAIChatTranslator",
    "field_of",
    "starts_in_reasoning",
]

InlineTags: TypeAlias = Literal["auto"] | bool
"""``"auto"``: scan content for ``<think>`` tags until native reasoning shows up; ``True``:
always scan; ``False``: never."""

REASONING_FIELDS: tuple[str, ...] = ("reasoning_content", "reasoning", "reasoning_details")
"""Delta fields that carry reasoning, in the order a delta's one source is chosen."""

_DETAIL_TEXT_FIELDS = {"reasoning.text": "text", "reasoning.summary": "summary"}
# Fields of a reasoning_details item that stream in fragments and so are joined on merge.
_DETAIL_FRAGMENT_FIELDS = frozenset({"text", "summary", "data"})
_FINISH_REASONS = {
    "stop": "stop",
    "eos": "stop",
    "eos_token": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "length": "length",
    "max_tokens": "length",
    "model_length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
}


def starts_in_reasoning(model: str, base_url: str | None = None) -> bool:
    """Whether ``model`` streams its reasoning as content that starts inside ``<think>``.

    Read from the model's profile (``inline.opens_inside``): DeepSeek-R1 distillations, Qwen3
    thinking builds and OLMo 3 Think use chat templates that write the open tag themselves,
    so the stream holds only the close tag. ``deepseek-reasoner`` (DeepSeek's API) streams
    ``reasoning_content`` instead and is not one of them.

    >>> starts_in_reasoning("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B")
    True
    >>> starts_in_reasoning("deepseek-reasoner")
    False
    """
    return inline_rule("openai-chat", model, base_url).opens_inside


def field_of(obj: Any, name: str) -> Any:
    """A field of a JSON dict or an SDK object; ``None`` when absent.

    Host extensions (``reasoning_content``, ``reasoning``, ``reasoning_details``, ``error``)
    are not declared on the SDK's models, which keep them in pydantic's ``model_extra``.
    """
    if type(obj) is dict:
        return obj.get(name)
    if obj is None:
        return None
    fields = getattr(obj, "__dict__", None)
    if fields is not None and hasattr(obj, "__pydantic_extra__"):
        # A pydantic model: declared fields live in __dict__, undeclared ones in the extra
        # dict. getattr() of an undeclared name takes pydantic's slow missing-attribute path
        # (microseconds per miss, several misses per chunk), so read both dicts directly.
        if name in fields:
            return fields[name]
        extra = obj.__pydantic_extra__
        return extra.get(name) if extra else None
    if isinstance(obj, Mapping):
        return obj.get(name)
    value = getattr(obj, name, None)
    if value is None:
        extra = getattr(obj, "model_extra", None)
        if extra:
            value = extra.get(name)
    return value


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(slots=True)
class _PartialCall:
    """A tool call whose fragments are still arriving."""

    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)
    signature: str | None = None
    """Gemini's ``extra_content.google.thought_signature`` for this call (OpenAI compat)."""


class OpenAIChatTranslator(ResponseFacts):
    """Turns streamed Chat Completions chunks into events. Pure: no I/O, no SDK client.

    ``feed(chunk)`` takes one chunk (an SDK ``ChatCompletionChunk`` or the decoded JSON dict)
    and returns its events; ``finish()`` ends the stream. Only choice 0 is read.

    * Reasoning comes from one source per delta: the first non-empty of ``reasoning_fields``
      (default ``reasoning_content``, ``reasoning``, ``reasoning_details``), because some
      servers repeat the same text in two fields.
    * ``reasoning_details`` items are also kept for passback, whichever field carried the
      text: items are merged per ``(index, type)`` across chunks (``text``, ``summary`` and
      ``data`` fragments joined, other fields taking the latest non-empty value) and, at
      ``finish()``, each becomes a ``ReasoningState(kind="reasoning_details")`` whose payload
      is the item's compact JSON. A ``reasoning.encrypted`` item additionally yields a
      ``kind="encrypted"`` state with its ``data``, so encrypted reasoning looks the same as on
      other providers; passback sends only the ``reasoning_details`` states, never both.
      A change of ``index`` between reasoning deltas closes the segment (a new block).
    * ``content`` is the answer, read through an inline-tag scanner while ``inline_tags``
      says so (``"auto"``: until native reasoning appears, flushing the scanner then).
      ``refusal`` is answer text too. JSON ``null`` never becomes text. ``content`` may
      also be a list of typed chunks (Mistral): ``thinking`` chunks are reasoning, ``text``
      chunks answer text.
    * Tool-call fragments are assembled per ``index`` and emitted when the finish reason
      arrives (or at ``finish()``); a usage report comes from any chunk carrying ``usage``.
    * A chunk with an ``error`` object raises ``ProviderError`` with its message.

    >>> t = OpenAIChatTranslator(provider="openai-chat", model="m")
    >>> chunk = {"id": "c1", "choices": [{"index": 0, "delta": {"reasoning_content": "hm"}}]}
    >>> t.feed(chunk) == [ReasoningDelta("hm")]
    True
    >>> last = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}
    >>> t.feed(last) == [TextDelta("hi"), Finish("stop")]
    True
    """

    __slots__ = (
        "_block",
        "_call_slots",
        "_calls",
        "_details",
        "_fields",
        "_scanned",
        "_scanner",
        "_scanning_is_auto",
    )

    def __init__(
        self,
        *,
        provider: str,
        model: str,
        endpoint: str | None = None,
        inline_tags: InlineTags = "auto",
        start_in_reasoning: bool | None = None,
        tags: Iterable[str] | None = None,
        reasoning_fields: Iterable[str] = REASONING_FIELDS,
        inline: Inline | None = None,
    ) -> None:
        # response_id: the stream's ``id`` (every chunk repeats it); details:
        # ``response_model``, ``system_fingerprint``, ``service_tier`` (from the first chunk).
        super().__init__(provider, model, endpoint)
        self._fields = tuple(reasoning_fields)
        if inline is None and inline_tags is not False:
            inline = inline_rule(provider, model, endpoint)
        self._scanner: TagReader | None = inline_scanner(
            inline_tags,
            start_in_reasoning=start_in_reasoning,
            inline=inline or Inline(),
            tags=tags,
        )
        self._scanning_is_auto = inline_tags == "auto"
        self._scanned = False
        self._block: Any = None
        self._calls: list[_PartialCall] = []
        self._call_slots: dict[int, int] = {}
        self._details: dict[tuple[Any, Any], dict[str, Any]] = {}

    # ----------------------------------------------------------------------------- feeding

    def _note_details(self, chunk: Any) -> None:
        for key, name in _DETAIL_KEYS:
            value = field_of(chunk, key)
            if isinstance(value, str) and value:
                self.details[name] = value

    def feed(self, chunk: Any) -> list[Event]:
        """The events of one chunk. Raises ``ProviderError`` for an in-stream error object."""
        events: list[Event] = []
        # A lean transport's chunk is JSON: its objects are dicts, read directly (a field
        # that is not a dict where one is expected still goes through field_of).
        plain = type(chunk) is dict
        if self.response_id is None:
            chunk_id = chunk.get("id") if plain else field_of(chunk, "id")
            if isinstance(chunk_id, str) and chunk_id:
                self.response_id = chunk_id
                self._note_details(chunk)
        error = chunk.get("error") if plain else field_of(chunk, "error")
        if error:
            raise self._stream_error(error)
        choices = chunk.get("choices") if plain else field_of(chunk, "choices")
        if choices and isinstance(choices, list):
            for choice in choices:
                if type(choice) is dict:
                    if choice.get("index") not in (0, None):
                        continue
                    delta = choice.get("delta")
                    if delta is not None:
                        self._feed_delta(delta, events)
                    reason = choice.get("finish_reason")
                else:
                    if field_of(choice, "index") not in (0, None):
                        continue
                    delta = field_of(choice, "delta")
                    if delta is not None:
                        self._feed_delta(delta, events)
                    reason = field_of(choice, "finish_reason")
                if reason:
                    self._finish_choice(str(reason), events)
        usage = chunk.get("usage") if plain else field_of(chunk, "usage")
        if usage:
            events.append(UsageReport(_usage(usage)))
        return events

    def read_response(self, response: Any) -> list[Event]:
        """The events of one non-streaming ``chat.completion`` (SDK object or JSON dict).

        Each choice's ``message`` is read as one delta carrying the whole message, then the
        stream's end: the same reading as a stream of that answer, so reasoning, inline
        tags, ``reasoning_details`` states, tool calls (a new id is a new call) and usage
        come out the same, one event per reasoning or text part.

        >>> t = OpenAIChatTranslator(provider="openai-chat", model="m")
        >>> t.read_response({"id": "c1", "choices": [{"index": 0, "finish_reason": "stop",
        ...     "message": {"role": "assistant", "reasoning_content": "hm", "content": "hi"}}]})
        [ReasoningDelta(text='hm'), TextDelta(text='hi'), Finish(reason='stop')]
        """
        chunk: dict[str, Any] = {
            "id": field_of(response, "id"),
            "error": field_of(response, "error"),
            "choices": [
                {
                    "index": field_of(choice, "index"),
                    "delta": field_of(choice, "message"),
                    "finish_reason": field_of(choice, "finish_reason"),
                }
                for choice in field_of(response, "choices") or ()
            ],
            "usage": field_of(response, "usage"),
        }
        return self.feed(chunk) + self.finish()

    def finish(self) -> list[Event]:
        """End of stream: release the scanner, emit pending tool calls and opaque state."""
        events: list[Event] = self.salvage()
        self._emit_calls(events)
        self._emit_details(events)
        return events

    def salvage(self) -> list[Event]:
        """What the scanner still holds, for a stream that ends in an error.

        Tool calls and opaque state of a broken stream are incomplete and are dropped.
        """
        if self._scanner is not None and self._scanned:
            self._scanned = False
            return list(self._scanner.flush())
        return []

    def _feed_delta(self, delta: Any, events: list[Event]) -> None:
        reasoning: str | None = None
        details: Any = None
        block: Any = None
        plain = type(delta) is dict
        for name in self._fields:
            value = delta.get(name) if plain else field_of(delta, name)
            if not value:
                continue
            if name == "reasoning_details":
                if isinstance(value, list):
                    details = value
                    if reasoning is None:
                        reasoning = _details_text(value) or None
            elif reasoning is None and isinstance(value, str):
                reasoning = value
        if details is not None:
            block = self._record_details(details)
        if (reasoning is not None or details is not None) and self._scanner is not None:
            self._native_reasoning_seen(events)
        if reasoning is not None:
            if details is not None and block is not None:
                if self._block is not None and block != self._block:
                    events.append(ReasoningEnd())
                self._block = block
            events.append(ReasoningDelta(reasoning))
        content = delta.get("content") if plain else field_of(delta, "content")
        if isinstance(content, str):
            if content:
                self._feed_content(content, events)
        elif isinstance(content, list):
            self._feed_parts(content, events)
        refusal = delta.get("refusal") if plain else field_of(delta, "refusal")
        if isinstance(refusal, str) and refusal:
            events.append(TextDelta(refusal))
        tool_calls = delta.get("tool_calls") if plain else field_of(delta, "tool_calls")
        if tool_calls and isinstance(tool_calls, list):
            for part in tool_calls:
                self._feed_tool_call(part)

    def _feed_content(self, content: str, events: list[Event]) -> None:
        scanner = self._scanner
        if scanner is None:
            events.append(TextDelta(content))
        else:
            self._scanned = True
            events.extend(scanner.feed(content))

    def _feed_parts(self, parts: list[Any], events: list[Event]) -> None:
        """Content as a list of typed chunks (Mistral): a ``thinking`` chunk holds a list of
        ``text`` chunks of reasoning, a ``text`` chunk is answer text. Other chunk types
        (references) carry no text of either kind."""
        for part in parts:
            kind = field_of(part, "type")
            if kind == "thinking":
                if self._scanner is not None:
                    self._native_reasoning_seen(events)
                inner = field_of(part, "thinking")
                pieces = [
                    text
                    for item in (inner if isinstance(inner, list) else ())
                    if field_of(item, "type") == "text"
                    and isinstance(text := field_of(item, "text"), str)
                ]
                reasoning = "".join(pieces)
                if reasoning:
                    events.append(ReasoningDelta(reasoning))
            elif kind == "text":
                text = field_of(part, "text")
                if isinstance(text, str) and text:
                    self._feed_content(text, events)

    def _native_reasoning_seen(self, events: list[Event]) -> None:
        # In auto mode the host has shown it separates reasoning itself: content is plain
        # answer from here on, and what the scanner held so far is released as it stood.
        if self._scanning_is_auto and self._scanner is not None:
            events.extend(self.salvage())
            self._scanner = None

    def _finish_choice(self, reason: str, events: list[Event]) -> None:
        if reason == "error":
            # OpenRouter's way to end a broken answer; the error object usually comes along
            # and was raised already, but the finish reason alone must not pass for success.
            raise build_error(
                self.provider, "the server ended the answer with finish_reason 'error'"
            )
        events.extend(self.salvage())
        self._emit_calls(events)
        events.append(Finish(_FINISH_REASONS.get(reason, reason)))

    # -------------------------------------------------------------------------- tool calls

    def _feed_tool_call(self, part: Any) -> None:
        index = _int_or_none(field_of(part, "index"))
        call_id = field_of(part, "id")
        function = field_of(part, "function")
        name = field_of(function, "name")
        arguments = field_of(function, "arguments")
        calls = self._calls
        position: int | None
        if index is not None:
            position = self._call_slots.get(index)
            if position is not None and _starts_new_call(calls[position], call_id):
                position = None
            if position is None:
                calls.append(_PartialCall())
                position = len(calls) - 1
                self._call_slots[index] = position
        else:
            # Some servers leave out the index: a new id starts a new call.
            if not calls or _starts_new_call(calls[-1], call_id):
                calls.append(_PartialCall())
            position = len(calls) - 1
        call = calls[position]
        if isinstance(call_id, str) and call_id and not call.id:
            call.id = call_id
        # The name arrives whole; servers that repeat it in every fragment must not double it.
        if isinstance(name, str) and name and not call.name:
            call.name = name
        if isinstance(arguments, str) and arguments:
            call.arguments.append(arguments)
        # Gemini's OpenAI-compatible endpoint signs a function call on the call itself.
        signature = field_of(
            field_of(field_of(part, "extra_content"), "google"), "thought_signature"
        )
        if isinstance(signature, str) and signature:
            call.signature = signature

    def _emit_calls(self, events: list[Event]) -> None:
        for position, call in enumerate(self._calls):
            call_id = call.id or f"call_{position}"
            events.append(
                ToolCall(id=call_id, name=call.name or "", arguments="".join(call.arguments))
            )
            if call.signature is not None:
                extra = {"call_id": call_id, "passback": "extra_content"}
                events.append(self._opaque("signature", call.signature, call_id, extra))
        self._calls = []
        self._call_slots = {}

    # ------------------------------------------------------------------- reasoning details

    def _record_details(self, items: list[Any]) -> Any:
        """Merge streamed items into the kept ones; return the block their reasoning is in."""
        block: Any = None
        for item in items:
            if not isinstance(item, Mapping):
                continue
            kind = _hashable(item.get("type"))
            index = _hashable(item.get("index"))
            key = (index, kind) if index is not None else (f"#{len(self._details)}", kind)
            kept = self._details.get(key)
            if kept is None:
                self._details[key] = dict(item)
            else:
                for name, value in item.items():
                    old = kept.get(name)
                    if name in _DETAIL_FRAGMENT_FIELDS and isinstance(value, str):
                        kept[name] = old + value if isinstance(old, str) else value
                    elif (value is not None and value != "") or name not in kept:
                        # Early fragments carry empty placeholders (a signature of "").
                        kept[name] = value
            if block is None and kind in _DETAIL_TEXT_FIELDS and index is not None:
                block = index
        return block

    def _emit_details(self, events: list[Event]) -> None:
        for position, ((index, kind), item) in enumerate(self._details.items()):
            block = index if isinstance(index, (int, str)) and index != "" else position
            if isinstance(block, str) and block.startswith("#"):
                block = position
            payload = json.dumps(item, separators=(",", ":"), ensure_ascii=False)
            extra = {"type": kind} if isinstance(kind, str) else {}
            events.append(self._opaque("reasoning_details", payload, block, extra))
            data = item.get("data")
            if kind == "reasoning.encrypted" and isinstance(data, str) and data:
                extra = {"passback": "reasoning_details"}
                events.append(self._opaque("encrypted", data, block, extra))
        self._details = {}

    def _opaque(self, kind: str, payload: str, block: Any, extra: dict[str, Any]) -> OpaqueState:
        """Opaque state this response made (its provider, model and endpoint on it)."""
        return OpaqueState(state_of(self, kind, payload, block, extra))

    # ------------------------------------------------------------------------------ errors

    def _stream_error(self, error: Any) -> ProviderError:
        message = error if isinstance(error, str) else field_of(error, "message")
        code = None if isinstance(error, str) else field_of(error, "code")
        status = _int_or_none(code)
        return build_error(
            self.provider,
            message or "the server reported an error",
            detail="stream error" + (f", code {code}" if code is not None else ""),
            status=status if status is not None and 100 <= status <= 599 else None,
            body=dict(error) if isinstance(error, Mapping) else error,
        )


def _starts_new_call(call: _PartialCall, call_id: Any) -> bool:
    return bool(isinstance(call_id, str) and call_id and call.id and call_id != call.id)


def _hashable(value: Any) -> Any:
    """A JSON value that can key a dict; an array or an object (malformed here) is ``None``."""
    return None if isinstance(value, list | dict) else value


_DETAIL_KEYS = (
    ("model", "response_model"),
    ("system_fingerprint", "system_fingerprint"),
    ("service_tier", "service_tier"),
)


def _details_text(items: list[Any]) -> str:
    parts: list[str] = []
    for item in items:
        if isinstance(item, Mapping):
            kind = item.get("type")
            name = _DETAIL_TEXT_FIELDS.get(kind) if isinstance(kind, str) else None
            text = item.get(name) if name else None
            if isinstance(text, str) and text:
                parts.append(text)
    return "".join(parts)


def _usage(usage: Any) -> Usage:
    details = field_of(usage, "completion_tokens_details")
    return Usage(
        input_tokens=_int_or_none(field_of(usage, "prompt_tokens")),
        output_tokens=_int_or_none(field_of(usage, "completion_tokens")),
        reasoning_tokens=_int_or_none(field_of(details, "reasoning_tokens")),
        cache_read_tokens=_int_or_none(
            field_of(field_of(usage, "prompt_tokens_details"), "cached_tokens")
        ),
    )
