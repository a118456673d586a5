"""The OpenAI Responses API (``POST /v1/responses``): reasoning models, Codex, gpt-oss servers.

The Responses API streams typed events. Reasoning arrives two ways: summary parts
(``response.reasoning_summary_text.delta``, OpenAI's o-series and GPT-5 models) and raw
reasoning text (``response.reasoning_text.delta``, as gpt-oss on vLLM emits it). Each summary
part or reasoning-text part becomes its own reasoning segment. The complete reasoning item (its
id, summary, and ``encrypted_content`` when the request asked for it) comes with
``response.output_item.done``; it is kept as opaque state on the result, and sent back in front
of the items it preceded when the turn is replayed in a later request.

:class:`OpenAIResponsesTranslator` turns one stream event (the SDK's parsed object or a plain
dict) into this library's events with no I/O; :class:`OpenAIResponsesPipe` opens the stream
with the official ``openai`` SDK and feeds it through.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from .._callbacks import CallbackErrorHandler
from .._effort import Reasoning
from .._events import (
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
from .._exceptions import ProviderError, UsageError
from .._pipe import Prompt
from ._base import HistoryTurn, ProviderPipe, close_sdk_stream, provider_error, require

__all__ = ["OpenAIResponsesPipe", "OpenAIResponsesTranslator"]

PROVIDER = "openai-responses"

REASONING_ITEM_KIND = "reasoning_item"
"""State kind of a reasoning item without encrypted content (the server stores it by id)."""
ENCRYPTED_KIND = "encrypted"
"""State kind of a reasoning item that carries ``encrypted_content`` (stateless replay)."""
_STATE_KINDS = frozenset({REASONING_ITEM_KIND, ENCRYPTED_KIND})

_ENCRYPTED_INCLUDE = "reasoning.encrypted_content"

# Keyword arguments of the SDK's create() that are not JSON body fields.
_SDK_ONLY_PARAMETERS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})

_INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}


def _field(obj: Any, name: str) -> Any:
    """``obj[name]`` for dicts, ``obj.name`` for SDK models; ``None`` when absent."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _text(value: Any) -> str | None:
    """A non-empty string, or ``None``: JSON ``null`` and non-strings never become text."""
    return value if isinstance(value, str) and value else None


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


class OpenAIResponsesTranslator:
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
        self, *, model: str, provider: str = PROVIDER, endpoint: str | None = None
    ) -> None:
        self.provider = provider
        self.model = model
        self.endpoint = endpoint
        self.response_id: str | None = None
        """The response's id, once ``response.created`` (or a later event) carried it."""
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
        kind = _field(chunk, "type")
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        return handler(chunk) if handler is not None else []

    def finish(self) -> list[Event]:
        """End of a stream that ended normally: held reasoning items, unfinished tool calls."""
        events = self._close_part()
        events += self._release_states()
        events += self._pending_calls()
        return events

    def abort(self) -> list[Event]:
        """End of a broken stream: the reasoning items already complete, nothing guessed."""
        return self._release_states()

    # ---------------------------------------------------------------------- reasoning

    def _part_events(self, chunk: Any, kind: str, index: Any) -> list[Event]:
        delta = _text(_field(chunk, "delta"))
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
        return self._part_events(chunk, "summary", _field(chunk, "summary_index"))

    def _on_reasoning_text_delta(self, chunk: Any) -> list[Event]:
        return self._part_events(chunk, "text", _field(chunk, "content_index"))

    def _on_summary_part_added(self, chunk: Any) -> list[Event]:
        part = (self._key(chunk), "summary", _field(chunk, "summary_index"))
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
        delta = _text(_field(chunk, "delta"))
        return [TextDelta(delta)] if delta is not None else []

    # ---------------------------------------------------------------------- tool calls

    def _on_arguments_delta(self, chunk: Any) -> list[Event]:
        delta = _text(_field(chunk, "delta"))
        if delta is not None:
            self._call(self._key(chunk)).parts.append(delta)
        return []

    def _on_arguments_done(self, chunk: Any) -> list[Event]:
        arguments = _field(chunk, "arguments")
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
        item = _field(chunk, "item")
        key = self._key(chunk, item)
        self._note_item(key, item)
        if _field(item, "type") == "function_call":
            self._absorb_call(key, item)
        return []

    def _on_item_done(self, chunk: Any) -> list[Event]:
        item = _field(chunk, "item")
        key = self._key(chunk, item)
        self._note_item(key, item)
        kind = _field(item, "type")
        if kind == "reasoning":
            events = self._close_part()
            if key not in self._reasoning_streamed:
                events += self._unstreamed_reasoning(item)
            # Only the done event carries the complete encrypted_content.
            self._reasoning_items[key] = _plain(item)
            return events
        if kind == "function_call":
            call = self._absorb_call(key, item)
            arguments = _field(item, "arguments")
            if isinstance(arguments, str) and arguments:
                call.arguments = arguments
            return self._tool_call(call)
        if kind == "message" and key not in self._text_streamed:
            return self._unstreamed_text(item)
        return []

    def _absorb_call(self, key: Any, item: Any) -> _Call:
        call = self._call(key)
        call.name = _text(_field(item, "name")) or call.name
        call.call_id = _text(_field(item, "call_id")) or call.call_id
        call.item_id = _text(_field(item, "id")) or call.item_id
        return call

    def _note_item(self, key: Any, item: Any) -> None:
        entry = self._outline.setdefault(key, {})
        for name in ("type", "id", "call_id", "phase"):
            value = _text(_field(item, name))
            if value is not None:
                entry[name] = value

    def _unstreamed_reasoning(self, item: Any) -> list[Event]:
        """Reasoning a server put only in the finished item (no deltas): one segment a part."""
        events: list[Event] = []
        for part in (*(_field(item, "summary") or ()), *(_field(item, "content") or ())):
            text = _text(_field(part, "text"))
            if text is not None:
                events += [ReasoningDelta(text), ReasoningEnd()]
        return events

    def _unstreamed_text(self, item: Any) -> list[Event]:
        events: list[Event] = []
        for part in _field(item, "content") or ():
            text = _text(_field(part, "text")) or _text(_field(part, "refusal"))
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
        encrypted = _text(item.get("encrypted_content"))
        block = _text(item.get("id"))
        return ReasoningState(
            provider=self.provider,
            model=self.model,
            kind=ENCRYPTED_KIND if encrypted is not None else REASONING_ITEM_KIND,
            payload=json.dumps(item, ensure_ascii=False, separators=(",", ":")),
            block=block if block is not None else key,
            endpoint=self.endpoint,
            extra={"followed_by": followers},
        )

    # ------------------------------------------------------------------ response level

    def _on_response(self, chunk: Any) -> list[Event]:
        self._note_response(_field(chunk, "response"))
        return []

    def _note_response(self, response: Any) -> None:
        response_id = _text(_field(response, "id"))
        if response_id is not None:
            self.response_id = response_id

    def _ending(self, chunk: Any, reason: str) -> list[Event]:
        response = _field(chunk, "response")
        self._note_response(response)
        self.finished = True
        events = self._close_part()
        events += self._release_states()
        events += self._pending_calls()
        events += self._usage(response)
        events.append(Finish(reason))
        return events

    def _on_completed(self, chunk: Any) -> list[Event]:
        made_calls = any(call.name is not None for call in self._calls.values())
        return self._ending(chunk, "tool_calls" if made_calls else "stop")

    def _on_incomplete(self, chunk: Any) -> list[Event]:
        details = _field(_field(chunk, "response"), "incomplete_details")
        reason = _text(_field(details, "reason"))
        mapped = _INCOMPLETE_REASONS.get(reason or "", reason or "incomplete")
        return self._ending(chunk, mapped)

    def _usage(self, response: Any) -> list[Event]:
        usage = _field(response, "usage")
        if usage is None:
            return []
        return [
            UsageReport(
                Usage(
                    input_tokens=_count(_field(usage, "input_tokens")),
                    output_tokens=_count(_field(usage, "output_tokens")),
                    reasoning_tokens=_count(
                        _field(_field(usage, "output_tokens_details"), "reasoning_tokens")
                    ),
                )
            )
        ]

    def _on_failed(self, chunk: Any) -> list[Event]:
        response = _field(chunk, "response")
        self._note_response(response)
        error = _field(response, "error")
        raise self._error("the response failed", error)

    def _on_error(self, chunk: Any) -> list[Event]:
        # The documented shape puts code and message at the top level; some servers nest them
        # in an "error" object as in HTTP error bodies.
        nested = _field(chunk, "error")
        raise self._error("the stream reported an error", nested if nested is not None else chunk)

    def _error(self, what: str, error: Any) -> ProviderError:
        code = _text(_field(error, "code"))
        message = _text(_field(error, "message"))
        detail = ": ".join(part for part in (code, message) if part) or "no details given"
        body = _plain(error) if error is not None else None
        if body is not None:
            body.pop("sequence_number", None)
        return ProviderError(
            f"{self.provider}: {what}: {detail}", provider=self.provider, body=body
        )

    # -------------------------------------------------------------------------- helpers

    @staticmethod
    def _key(chunk: Any, item: Any = None) -> Any:
        """Which output item an event belongs to: its output index, else the item id."""
        index = _field(chunk, "output_index")
        if isinstance(index, int):
            return index
        return _field(chunk, "item_id") or _field(item, "id")


def _order(key: Any) -> tuple[int, int]:
    # Output indexes sort numerically; items known only by id follow in arrival order (the
    # sort is stable and the outline dict keeps insertion order).
    return (0, key) if isinstance(key, int) else (1, 0)


# ----------------------------------------------------------------------------- requests


def _content_text(content: Any) -> str:
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


def _input_content(content: Any) -> Any:
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


def _arguments_text(arguments: Any) -> str:
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
    item_id = _text(data.get("id"))
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
    encrypted = _text(data.get("encrypted_content"))
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


def _is_async_client(client: Any) -> bool:
    create = _field(_field(client, "responses"), "create")
    return inspect.iscoroutinefunction(create)


# ---------------------------------------------------------------------------------- pipe


class OpenAIResponsesPipe(ProviderPipe):
    """Streams a turn from the OpenAI Responses API (reasoning models, Codex, gpt-oss servers).

    Reasoning summaries and raw reasoning text reach the channel as reasoning segments, one
    per summary part; the answer as text; function calls land on ``result.tool_calls``.
    Each reasoning item is kept on ``result.reasoning_state`` (kind ``"reasoning_item"``, or
    ``"encrypted"`` when it carries ``encrypted_content``; the payload is the item's JSON)
    and is sent back before the items it preceded when a conversation replays the turn.

    Args:
        model: the model id (``"o4-mini"``, ``"gpt-5-codex"``, ``"openai/gpt-oss-20b"``).
        client: an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` client.
        base_url: the ``/v1`` API root, to build clients when none is given.
        api_key: the key for built clients (default: the SDK reads ``OPENAI_API_KEY``).
        store: the request's ``store``; ``False`` (stateless, Zero Data Retention) also asks
            for ``include=["reasoning.encrypted_content"]`` so reasoning can be replayed.
        reasoning_summary: ``reasoning.summary`` (``"auto"``, ``"concise"``, ``"detailed"``);
            ``None`` leaves it out (servers without summaries).
        instructions: the request's ``instructions`` (a system message, server side).
        extra_body: more JSON fields; dict values merge into the pipe's own
            (``{"reasoning": {"effort": "high"}}`` keeps the summary setting).
        max_retries: SDK retries for clients the pipe builds (default 0: a retry would
            replay the stream into the channel).

    >>> pipe = OpenAIResponsesPipe("o4-mini", base_url="http://localhost:8000/v1", api_key="k")
    >>> pipe.build_request("Hi")["reasoning"]
    {'summary': 'auto'}
    """

    provider = PROVIDER
    secret_env = ("OPENAI_API_KEY",)
    extra = "openai"

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        store: bool | None = None,
        reasoning_summary: str | None = "auto",
        instructions: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
        max_retries: int = 0,
        timeout: float | None = None,
        name: str | None = None,
        escape_markers: bool = True,
        on_callback_error: CallbackErrorHandler | None = None,
        stream_model_reasoning: bool = True,
        reasoning: Reasoning = None,
    ) -> None:
        super().__init__(
            model,
            client=client,
            base_url=base_url,
            api_key=api_key,
            extra_body=extra_body,
            timeout=timeout,
            name=name,
            escape_markers=escape_markers,
            on_callback_error=on_callback_error,
            stream_model_reasoning=stream_model_reasoning,
            reasoning=reasoning,
        )
        self.store = store
        self.reasoning_summary = reasoning_summary
        self.instructions = instructions
        self.max_retries = max_retries
        self._sync_client: Any = None
        self._async_client: Any = None
        if client is not None:
            if _is_async_client(client):
                self._async_client = client
            else:
                self._sync_client = client
            if self.endpoint is None:
                client_url = _field(client, "base_url")
                self.endpoint = str(client_url).rstrip("/") if client_url is not None else None

    # ------------------------------------------------------------------------ requests

    def reasoning_options(self) -> dict[str, Any]:
        """The request's ``reasoning`` object; the one place its keys are decided."""
        options: dict[str, Any] = {}
        if self.reasoning_summary is not None:
            options["summary"] = self.reasoning_summary
        return options

    def build_request(self, prompt: Prompt | Any) -> dict[str, Any]:
        """The JSON body of the streaming ``POST /v1/responses`` request for ``prompt``."""
        body: dict[str, Any] = {
            "model": self.model,
            "input": self.input_items(prompt),
            "stream": True,
        }
        if self.instructions is not None:
            body["instructions"] = self.instructions
        reasoning = self.reasoning_options()
        if reasoning:
            body["reasoning"] = reasoning
        if self.store is not None:
            body["store"] = self.store
        if self.store is False:
            body["include"] = [_ENCRYPTED_INCLUDE]
        body = self.with_reasoning(body)
        for key, value in self.extra_body.items():
            current = body.get(key)
            if isinstance(current, dict) and isinstance(value, Mapping):
                body[key] = {**current, **value}
            elif key == "include" and isinstance(current, list) and isinstance(value, list):
                body[key] = [*current, *(entry for entry in value if entry not in current)]
            else:
                body[key] = value
        return body

    def input_items(self, prompt: Prompt | Any) -> list[dict[str, Any]]:
        """The request's ``input``: every history turn as Responses input items."""
        items: list[dict[str, Any]] = []
        for turn in self.turns(prompt):
            items += self.turn_items(turn)
        return items

    def turn_items(self, turn: HistoryTurn) -> list[dict[str, Any]]:
        """One history turn as input items; an assistant turn replays its reasoning first."""
        message = turn.message
        role = message.get("role")
        if role is None and "type" in message:
            # Already a Responses input item (a reasoning item, an item_reference, ...).
            return [dict(message)]
        if role == "assistant":
            return self._assistant_items(turn)
        if role == "tool":
            return [
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id"),
                    "output": _tool_output(message.get("content")),
                }
            ]
        return [{"role": role, "content": _input_content(message.get("content"))}]

    def _assistant_items(self, turn: HistoryTurn) -> list[dict[str, Any]]:
        message = turn.message
        items: list[dict[str, Any]] = []
        message_ids: list[dict[str, Any]] = []
        call_ids: dict[str, str] = {}
        for state in turn.states:
            # Only the provider and model that made a state may receive it back.
            if (state.provider, state.model) != (self.provider, self.model):
                continue
            if state.kind not in _STATE_KINDS:
                continue
            item = reasoning_input_item(state)
            if item is None:
                continue
            if self.store is False and "encrypted_content" not in item:
                # A stored-by-id item cannot be resolved by a stateless request.
                continue
            items.append(item)
            # Items that followed a replayed reasoning item go back with their ids: the API
            # rejects a reasoning item sent without its following item.
            for follower in state.extra.get("followed_by", ()):
                if not isinstance(follower, Mapping) or not follower.get("id"):
                    continue
                if follower.get("type") == "message":
                    message_ids.append(dict(follower))
                elif follower.get("type") == "function_call" and follower.get("call_id"):
                    call_ids[str(follower["call_id"])] = str(follower["id"])
        text = _content_text(message.get("content"))
        if text:
            if message_ids:
                output: dict[str, Any] = {
                    "type": "message",
                    "id": message_ids[0]["id"],
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
                if message_ids[0].get("phase"):
                    output["phase"] = message_ids[0]["phase"]
                items.append(output)
            else:
                items.append({"role": "assistant", "content": text})
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            call_id = call.get("id")
            item = {
                "type": "function_call",
                "call_id": call_id,
                "name": function.get("name"),
                "arguments": _arguments_text(function.get("arguments")),
            }
            if isinstance(call_id, str) and call_id in call_ids:
                item["id"] = call_ids[call_id]
            items.append(item)
        return items

    # ------------------------------------------------------------------------- clients

    def _client_options(self) -> dict[str, Any]:
        return {**super()._client_options(), "max_retries": self.max_retries}

    def _build_client(self, class_name: str) -> Any:
        openai = require("openai", self.extra)
        try:
            return getattr(openai, class_name)(**self._client_options())
        except openai.OpenAIError as error:
            raise UsageError(
                f"{self.name}: could not build an openai.{class_name}: {error} "
                "(pass api_key=, for local servers any non-empty string, or client=)"
            ) from error

    def sync_client(self) -> Any:
        """The sync client for run(), built on first use when none was given."""
        if self._sync_client is None:
            if self.client is not None:
                raise UsageError(
                    f"{self.name} was given an async client: pass a sync openai.OpenAI client "
                    "to use run(), or call `await pipe.arun(...)`"
                )
            self._sync_client = self._build_client("OpenAI")
        return self._sync_client

    def async_client(self) -> Any:
        """The async client for arun(); ``None`` when only a sync client was given.

        A client the pipe builds itself serves one ``arun()`` and is closed at its end: the
        SDK's async client binds its connections to the running event loop, and one left for
        the garbage collector is closed on whatever asyncio loop runs then (a trio run's
        sockets included), which fails.
        """
        if self._async_client is not None:
            return self._async_client
        if self.client is None:
            return self._build_client("AsyncOpenAI")
        return None

    def translator(self) -> OpenAIResponsesTranslator:
        """A fresh translator for one response."""
        return OpenAIResponsesTranslator(
            model=self.model or "", provider=self.provider or PROVIDER, endpoint=self.endpoint
        )

    # -------------------------------------------------------------------------- events

    def iter_events(self, prompt: Prompt) -> Iterator[Event]:
        """Stream one response with the sync client, yielding its events."""
        client = self.sync_client()
        body = self.build_request(prompt)
        translator = self.translator()
        stream: Any = None
        try:
            stream = client.responses.create(**sdk_arguments(client.responses.create, body))
            for chunk in stream:
                events = translator.feed(chunk)
                self.set_response_id(translator.response_id)
                yield from events
        except Exception:
            self.set_response_id(translator.response_id)
            # Reasoning items that completed before the failure still belong on the result.
            yield from translator.abort()
            raise
        else:
            yield from translator.finish()
        finally:
            if stream is not None:
                stream.close()

    async def aiter_events(self, prompt: Prompt) -> AsyncIterator[Event]:
        """Stream one response with the async client (or a sync one in a worker thread)."""
        client = self.async_client()
        owned = client is not None and client is not self._async_client
        if client is None:
            inner = super().aiter_events(prompt)
            try:
                async for event in inner:
                    yield event
            finally:
                with anyio.CancelScope(shield=True):
                    await getattr(inner, "aclose")()  # noqa: B009 - AsyncIterator lacks aclose
            return
        body = self.build_request(prompt)
        translator = self.translator()
        stream: Any = None
        iterator: Any = None
        try:
            stream = await client.responses.create(**sdk_arguments(client.responses.create, body))
            iterator = aiter(stream)
            async for chunk in iterator:
                events = translator.feed(chunk)
                self.set_response_id(translator.response_id)
                for event in events:
                    yield event
        except Exception:
            self.set_response_id(translator.response_id)
            for event in translator.abort():
                yield event
            raise
        else:
            for event in translator.finish():
                yield event
        finally:
            with anyio.CancelScope(shield=True):
                if stream is not None:
                    await close_sdk_stream(stream, iterator)
                if owned:
                    await client.close()

    def wrap_error(self, error: BaseException) -> ProviderError:
        """Map an SDK or transport exception to ``ProviderError`` with status and retry hint."""
        body = getattr(error, "body", None)
        message = _field(body, "message") if isinstance(body, Mapping) else None
        return provider_error(self.provider or self.name, error, what=_text(message))


def _tool_output(content: Any) -> Any:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return _input_content(content)
    return json.dumps(content, ensure_ascii=False)
