"""Responses API stream events into events: pure, no I/O, no SDK client.

Reasoning arrives two ways: summary parts (``response.reasoning_summary_text.delta``, OpenAI's
o-series and GPT-5 models) and raw reasoning text (``response.reasoning_text.delta``, as gpt-oss
on vLLM emits it). Each summary part or reasoning-text part becomes its own reasoning segment.
The complete reasoning item (its id, summary, and ``encrypted_content`` when the request asked
for it) comes with ``response.output_item.done``; it is kept as opaque state.
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
    ReasoningState,
    TextDelta,
    ToolCall,
    Usage,
    UsageReport,
)
from ..._exceptions import ProviderError
from .._errors import build_error
from .._fields import field_of
from .._hidden import HiddenBlocks
from .._states import ResponseFacts, state_of

__all__ = [
    "ENCRYPTED_KIND",
    "PROVIDER",
    "REASONING_ITEM_KIND",
    "OpenAIResponsesTranslator",
    "field_of",
    "text_of",
]

PROVIDER = "openai-responses"

REASONING_ITEM_KIND = "reasoning_item"
"""State kind of a reasoning item without encrypted content (the server stores it by id)."""
ENCRYPTED_KIND = "encrypted"
"""State kind of a reasoning item that carries ``encrypted_content`` (stateless replay)."""

_INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}


def text_of(value: Any) -> str | None:
    """A non-empty string, or ``None``: JSON ``null`` and non-strings never become text."""
    return value if isinstance(value, str) and value else None


def _list(value: Any) -> list[Any]:
    """An array field's items; a missing or malformed one (not an array) has none."""
    return value if isinstance(value, list) else []


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _plain(obj: Any) -> dict[str, Any]:
    """A JSON-safe dict of an SDK model or mapping, keeping exactly the fields the API sent."""
    if isinstance(obj, Mapping):
        return dict(obj)
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        # exclude_unset (the SDK's default) leaves out fields the server did not send, so the
        # item goes back the way it came.
        # warnings=False: a malformed item must not turn into pydantic serialiser warnings.
        data = to_dict(mode="json", warnings=False)
        return dict(data) if isinstance(data, Mapping) else {}
    model_dump = getattr(obj, "model_dump", None)
    if callable(model_dump):
        data = model_dump(mode="json", exclude_unset=True, by_alias=True)
        return dict(data) if isinstance(data, Mapping) else {}
    return {}


@dataclass(slots=True)
class _Call:
    """A function call being assembled from its output item and argument deltas."""

    name: str | None = None
    call_id: str | None = None
    item_id: str | None = None
    parts: list[str] = field(default_factory=list)
    arguments: str | None = None
    emitted: bool = False


class OpenAIResponsesTranslator(ResponseFacts):
    """Turns Responses API stream events into reasoning-stream events. Pure: no I/O.

    Feed it every event of one response, in order, as the SDK's parsed objects or as the
    plain dicts of the SSE ``data`` lines; call :meth:`finish` when the stream ended normally
    or :meth:`abort` when it broke, to collect what is still held. ``response.failed`` and
    ``error`` events raise :class:`ProviderError`.

    Reasoning items are released as :class:`OpaqueState` once the response ends (on
    ``response.completed``/``incomplete``, :meth:`finish` or :meth:`abort`), because each
    state records the ids of the output items that followed its reasoning item: the API pairs
    a replayed reasoning item with its following item by id.

    >>> translator = OpenAIResponsesTranslator(model="o4-mini")
    >>> translator.feed({"type": "response.output_text.delta", "delta": "Hi", "output_index": 0})
    [TextDelta(text='Hi')]
    """

    def __init__(
        self,
        *,
        model: str,
        provider: str = PROVIDER,
        endpoint: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # response_id: once ``response.created`` (or a later event) carried it; details:
        # ``response_model``, ``service_tier``.
        super().__init__(provider, model, endpoint)
        self.finished = False
        """Whether a terminal event (``response.completed`` or ``incomplete``) arrived."""
        self._open_part: tuple[Any, str, Any] | None = None
        self._reasoning_streamed: set[Any] = set()
        self._text_streamed: set[Any] = set()
        # output_index -> item type and the ids needed to pair it with reasoning on replay.
        self._outline: dict[Any, dict[str, Any]] = {}
        self._reasoning_items: dict[Any, dict[str, Any]] = {}
        self._states_released = False
        self._calls: dict[Any, _Call] = {}
        self._hidden = HiddenBlocks(clock)
        self._handlers: dict[str, Callable[[Any], list[Event]]] = {
            "response.created": self._on_response,
            "response.in_progress": self._on_response,
            "response.queued": self._on_response,
            "response.output_item.added": self._on_item_added,
            "response.output_item.done": self._on_item_done,
            "response.reasoning_summary_part.added": self._on_summary_part_added,
            "response.reasoning_summary_part.done": self._on_part_done,
            "response.reasoning_summary_text.delta": self._on_summary_delta,
            "response.reasoning_text.delta": self._on_reasoning_text_delta,
            "response.reasoning_text.done": self._on_part_done,
            "response.output_text.delta": self._on_text_delta,
            "response.refusal.delta": self._on_text_delta,
            "response.function_call_arguments.delta": self._on_arguments_delta,
            "response.function_call_arguments.done": self._on_arguments_done,
            "response.completed": self._on_completed,
            "response.incomplete": self._on_incomplete,
            "response.failed": self._on_failed,
            "error": self._on_error,
        }

    # ------------------------------------------------------------------------- public

    def feed(self, chunk: Any) -> list[Event]:
        """The events for one stream event; unknown event types give none."""
        kind = chunk.get("type") if type(chunk) is dict else field_of(chunk, "type")
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        return handler(chunk) if handler is not None else []

    def finish(self) -> list[Event]:
        """End of a stream that ended normally: held reasoning items, unfinished tool calls."""
        events = self._close_part()
        events += self._release_states()
        events += self._pending_calls()
        events += self._hidden.release()
        return events

    def read_response(self, response: Any) -> list[Event]:
        """The events of one non-streaming ``Response`` (the SDK's object or its JSON).

        Read as the stream of that response: each output item as its
        ``response.output_item.done`` (reasoning parts one segment each, message text, function
        calls), then the response's ending (``completed``, ``incomplete`` or ``failed``, which
        raises). Reasoning items become the same states, followers included.

        >>> t = OpenAIResponsesTranslator(model="m")
        >>> t.read_response({"id": "resp_1", "status": "completed", "output": [
        ...     {"type": "message", "id": "msg_1", "content": [{"type": "output_text",
        ...      "text": "Hi"}]}]})
        [TextDelta(text='Hi'), Finish(reason='stop')]
        """
        status = field_of(response, "status")
        if status == "failed":
            return self.feed({"type": "response.failed", "response": response})
        events = self._on_response({"response": response})
        for index, item in enumerate(field_of(response, "output") or ()):
            events += self.feed(
                {"type": "response.output_item.done", "output_index": index, "item": item}
            )
        ending = "response.incomplete" if status == "incomplete" else "response.completed"
        events += self.feed({"type": ending, "response": response})
        return events + self.finish()

    def abort(self) -> list[Event]:
        """End of a broken stream: the reasoning items already complete, nothing guessed."""
        return self._release_states()

    salvage = abort

    # ---------------------------------------------------------------------- reasoning

    def _part_events(self, chunk: Any, kind: str, index: Any) -> list[Event]:
        delta = text_of(chunk.get("delta") if type(chunk) is dict else field_of(chunk, "delta"))
        key = self._key(chunk)
        part = (key, kind, index)
        events: list[Event] = []
        if self._open_part is not None and self._open_part != part:
            # A new summary part (or content part) is a new segment, even when the server
            # skipped the previous part's done event.
            events.append(ReasoningEnd())
        self._open_part = part
        self._reasoning_streamed.add(key)
        if delta is not None:
            events.append(ReasoningDelta(delta))
        return events

    def _on_summary_delta(self, chunk: Any) -> list[Event]:
        index = (
            chunk.get("summary_index") if type(chunk) is dict else field_of(chunk, "summary_index")
        )
        return self._part_events(chunk, "summary", index)

    def _on_reasoning_text_delta(self, chunk: Any) -> list[Event]:
        return self._part_events(chunk, "text", field_of(chunk, "content_index"))

    def _on_summary_part_added(self, chunk: Any) -> list[Event]:
        part = (self._key(chunk), "summary", field_of(chunk, "summary_index"))
        if self._open_part is not None and self._open_part != part:
            self._open_part = None
            return [ReasoningEnd()]
        return []

    def _on_part_done(self, chunk: Any) -> list[Event]:
        return self._close_part()

    def _close_part(self) -> list[Event]:
        if self._open_part is None:
            return []
        self._open_part = None
        return [ReasoningEnd()]

    # --------------------------------------------------------------------------- text

    def _on_text_delta(self, chunk: Any) -> list[Event]:
        # Answer text closes a reasoning segment in the Pipe itself; forget the open part so
        # reasoning that resumes later starts a new one.
        self._open_part = None
        self._text_streamed.add(self._key(chunk))
        delta = chunk.get("delta") if type(chunk) is dict else field_of(chunk, "delta")
        return [TextDelta(delta)] if delta and isinstance(delta, str) else []

    # ---------------------------------------------------------------------- tool calls

    def _on_arguments_delta(self, chunk: Any) -> list[Event]:
        delta = text_of(field_of(chunk, "delta"))
        if delta is not None:
            self._call(self._key(chunk)).parts.append(delta)
        return []

    def _on_arguments_done(self, chunk: Any) -> list[Event]:
        arguments = field_of(chunk, "arguments")
        if isinstance(arguments, str):
            self._call(self._key(chunk)).arguments = arguments
        return []

    def _call(self, key: Any) -> _Call:
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = _Call()
        return call

    def _tool_call(self, call: _Call) -> list[Event]:
        if call.emitted or call.name is None:
            return []
        call.emitted = True
        arguments = call.arguments if call.arguments else "".join(call.parts)
        return [
            ToolCall(id=call.call_id or call.item_id or "", name=call.name, arguments=arguments)
        ]

    def _pending_calls(self) -> list[Event]:
        events: list[Event] = []
        for call in self._calls.values():
            events += self._tool_call(call)
        return events

    # -------------------------------------------------------------------- output items

    def _on_item_added(self, chunk: Any) -> list[Event]:
        item = field_of(chunk, "item")
        key = self._key(chunk, item)
        self._note_item(key, item)
        kind = field_of(item, "type")
        if kind == "function_call":
            self._absorb_call(key, item)
        elif kind == "reasoning":
            self._hidden.start(key)
        return []

    def _on_item_done(self, chunk: Any) -> list[Event]:
        item = field_of(chunk, "item")
        key = self._key(chunk, item)
        self._note_item(key, item)
        kind = field_of(item, "type")
        if kind == "reasoning":
            events = self._close_part()
            if key not in self._reasoning_streamed:
                events += self._unstreamed_reasoning(item)
            # No text streamed or in the item (encrypted_content only, or kept by the server):
            # hidden reasoning, reported once the response's usage is in.
            shown = key in self._reasoning_streamed or any(
                isinstance(event, ReasoningDelta) for event in events
            )
            self._hidden.stop(key, hidden=not shown)
            # Only the done event carries the complete encrypted_content.
            self._reasoning_items[key] = _plain(item)
            return events
        if kind == "function_call":
            call = self._absorb_call(key, item)
            arguments = field_of(item, "arguments")
            if isinstance(arguments, str) and arguments:
                call.arguments = arguments
            return self._tool_call(call)
        if kind == "message" and key not in self._text_streamed:
            return self._unstreamed_text(item)
        return []

    def _absorb_call(self, key: Any, item: Any) -> _Call:
        call = self._call(key)
        call.name = text_of(field_of(item, "name")) or call.name
        call.call_id = text_of(field_of(item, "call_id")) or call.call_id
        call.item_id = text_of(field_of(item, "id")) or call.item_id
        return call

    def _note_item(self, key: Any, item: Any) -> None:
        entry = self._outline.setdefault(key, {})
        for name in ("type", "id", "call_id", "phase"):
            value = text_of(field_of(item, name))
            if value is not None:
                entry[name] = value

    def _unstreamed_reasoning(self, item: Any) -> list[Event]:
        """Reasoning a server put only in the finished item (no deltas): one segment a part."""
        events: list[Event] = []
        for part in (*_list(field_of(item, "summary")), *_list(field_of(item, "content"))):
            text = text_of(field_of(part, "text"))
            if text is not None:
                events += [ReasoningDelta(text), ReasoningEnd()]
        return events

    def _unstreamed_text(self, item: Any) -> list[Event]:
        events: list[Event] = []
        for part in _list(field_of(item, "content")):
            text = text_of(field_of(part, "text")) or text_of(field_of(part, "refusal"))
            if text is not None:
                events.append(TextDelta(text))
        return events

    def _release_states(self) -> list[Event]:
        if self._states_released:
            return []
        self._states_released = True
        events: list[Event] = []
        order = sorted(self._outline, key=_order)
        for position, key in enumerate(order):
            item = self._reasoning_items.get(key)
            if item is None:
                continue
            followers: list[dict[str, Any]] = []
            for later in order[position + 1 :]:
                entry = self._outline[later]
                if entry.get("type") == "reasoning":
                    break
                followers.append(dict(entry))
            events.append(OpaqueState(self._state(key, item, followers)))
        return events

    def _state(
        self, key: Any, item: dict[str, Any], followers: list[dict[str, Any]]
    ) -> ReasoningState:
        encrypted = text_of(item.get("encrypted_content"))
        block = text_of(item.get("id"))
        return state_of(
            self,
            ENCRYPTED_KIND if encrypted is not None else REASONING_ITEM_KIND,
            json.dumps(item, ensure_ascii=False, separators=(",", ":")),
            block if block is not None else key,
            {"followed_by": followers},
        )

    # ------------------------------------------------------------------ response level

    def _on_response(self, chunk: Any) -> list[Event]:
        self._note_response(field_of(chunk, "response"))
        return []

    def _note_response(self, response: Any) -> None:
        response_id = text_of(field_of(response, "id"))
        if response_id is not None:
            self.response_id = response_id
        for key, name in (("model", "response_model"), ("service_tier", "service_tier")):
            value = text_of(field_of(response, key))
            if value:
                self.details[name] = value

    def _ending(self, chunk: Any, reason: str) -> list[Event]:
        response = field_of(chunk, "response")
        self._note_response(response)
        self.finished = True
        events = self._close_part()
        events += self._release_states()
        events += self._pending_calls()
        usage = self._usage(response)
        events += usage
        tokens = next((e.usage.reasoning_tokens for e in usage if isinstance(e, UsageReport)), None)
        events += self._hidden.release(tokens)
        events.append(Finish(reason))
        return events

    def _on_completed(self, chunk: Any) -> list[Event]:
        made_calls = any(call.name is not None for call in self._calls.values())
        return self._ending(chunk, "tool_calls" if made_calls else "stop")

    def _on_incomplete(self, chunk: Any) -> list[Event]:
        details = field_of(field_of(chunk, "response"), "incomplete_details")
        reason = text_of(field_of(details, "reason"))
        mapped = _INCOMPLETE_REASONS.get(reason or "", reason or "incomplete")
        return self._ending(chunk, mapped)

    def _usage(self, response: Any) -> list[Event]:
        usage = field_of(response, "usage")
        if usage is None:
            return []
        return [
            UsageReport(
                Usage(
                    input_tokens=_count(field_of(usage, "input_tokens")),
                    output_tokens=_count(field_of(usage, "output_tokens")),
                    reasoning_tokens=_count(
                        field_of(field_of(usage, "output_tokens_details"), "reasoning_tokens")
                    ),
                    cache_read_tokens=_count(
                        field_of(field_of(usage, "input_tokens_details"), "cached_tokens")
                    ),
                )
            )
        ]

    def _on_failed(self, chunk: Any) -> list[Event]:
        response = field_of(chunk, "response")
        self._note_response(response)
        error = field_of(response, "error")
        raise self._error("the response failed", error)

    def _on_error(self, chunk: Any) -> list[Event]:
        # The documented shape puts code and message at the top level; some servers nest them
        # in an "error" object as in HTTP error bodies.
        nested = field_of(chunk, "error")
        raise self._error("the stream reported an error", nested if nested is not None else chunk)

    def _error(self, what: str, error: Any) -> ProviderError:
        code = text_of(field_of(error, "code"))
        message = text_of(field_of(error, "message"))
        detail = ": ".join(part for part in (code, message) if part) or "no details given"
        body = _plain(error) if error is not None else None
        if body is not None:
            body.pop("sequence_number", None)
        return build_error(self.provider, f"{what}: {detail}", body=body)

    # -------------------------------------------------------------------------- helpers

    @staticmethod
    def _key(chunk: Any, item: Any = None) -> Any:
        """Which output item an event belongs to: its output index, else the item id."""
        index = (
            chunk.get("output_index") if type(chunk) is dict else field_of(chunk, "output_index")
        )
        if isinstance(index, int):
            return index
        key = field_of(chunk, "item_id") or field_of(item, "id")
        # An id that is an array or an object (malformed) names no item.
        return None if isinstance(key, list | dict) else key


def _order(key: Any) -> tuple[int, int]:
    # Output indexes sort numerically; items known only by id follow in arrival order (the
    # sort is stable and the outline dict keeps insertion order).
    return (0, key) if isinstance(key, int) else (1, 0)
