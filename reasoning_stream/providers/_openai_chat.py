"""OpenAI Chat Completions and every server that speaks it: DeepSeek, vLLM, SGLang, llama.cpp,
LM Studio, Groq, OpenRouter.

``OpenAIChatTranslator`` turns one streamed chunk (the SDK's ``ChatCompletionChunk`` or the
same JSON as a dict) into events; it is pure and knows nothing of I/O. ``OpenAIChatPipe``
builds the request, opens the stream with the ``openai`` SDK or the lean httpx transport, and
feeds the chunks through a translator. Host quirks are configuration of this one adapter:
which delta fields carry reasoning, whether content carries inline ``<think>`` tags, whether the
model starts inside reasoning, and what goes back to the host in later turns.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

import anyio
import httpx

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
from .._messages import strip_inert_keys
from .._pipe import Prompt
from .._tags import Scanner, grammar_for
from ._base import (
    HistoryTurn,
    ProviderPipe,
    close_sdk_stream,
    provider_error,
    require,
    retry_after_seconds,
)
from ._sse import aiter_sse_json, iter_sse_json

__all__ = [
    "REASONING_FIELDS",
    "InlineTags",
    "OpenAIChatPipe",
    "OpenAIChatTranslator",
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


def starts_in_reasoning(model: str) -> bool:
    """Whether ``model`` streams its reasoning as content that starts inside ``<think>``.

    DeepSeek-R1 and its distillations use a chat template that writes the open tag
    itself, so the stream holds only the close tag. ``deepseek-reasoner`` (DeepSeek's API)
    streams ``reasoning_content`` instead and is not one of them.

    >>> starts_in_reasoning("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B")
    True
    >>> starts_in_reasoning("deepseek-reasoner")
    False
    """
    lowered = model.lower().replace("_", "-")
    if "deepseek-reasoner" in lowered:
        return False
    return "deepseek-r1" in lowered or "r1-distill" in lowered


def _get(obj: Any, name: str) -> Any:
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


class OpenAIChatTranslator:
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
      ``refusal`` is answer text too. JSON ``null`` never becomes text.
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
        "endpoint",
        "model",
        "provider",
        "response_id",
    )

    def __init__(
        self,
        *,
        provider: str,
        model: str,
        endpoint: str | None = None,
        inline_tags: InlineTags = "auto",
        start_in_reasoning: bool = False,
        tags: Iterable[str] | None = None,
        reasoning_fields: Iterable[str] = REASONING_FIELDS,
    ) -> None:
        self.provider = provider
        self.model = model
        self.endpoint = endpoint
        self.response_id: str | None = None
        """The stream's ``id`` (every chunk repeats it), once seen."""
        self._fields = tuple(reasoning_fields)
        self._scanner: Scanner | None = (
            None
            if inline_tags is False
            else Scanner(start_in_reasoning=start_in_reasoning, tags=tags)
        )
        self._scanning_is_auto = inline_tags == "auto"
        self._scanned = False
        self._block: Any = None
        self._calls: list[_PartialCall] = []
        self._call_slots: dict[int, int] = {}
        self._details: dict[tuple[Any, Any], dict[str, Any]] = {}

    # ----------------------------------------------------------------------------- feeding

    def feed(self, chunk: Any) -> list[Event]:
        """The events of one chunk. Raises ``ProviderError`` for an in-stream error object."""
        events: list[Event] = []
        if self.response_id is None:
            chunk_id = _get(chunk, "id")
            if isinstance(chunk_id, str) and chunk_id:
                self.response_id = chunk_id
        error = _get(chunk, "error")
        if error:
            raise self._stream_error(error)
        choices = _get(chunk, "choices")
        if choices:
            for choice in choices:
                if _get(choice, "index") not in (0, None):
                    continue
                delta = _get(choice, "delta")
                if delta is not None:
                    self._feed_delta(delta, events)
                reason = _get(choice, "finish_reason")
                if reason:
                    self._finish_choice(str(reason), events)
        usage = _get(chunk, "usage")
        if usage:
            events.append(UsageReport(_usage(usage)))
        return events

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
        for name in self._fields:
            value = _get(delta, name)
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
        if reasoning is not None or details is not None:
            self._native_reasoning_seen(events)
        if reasoning is not None:
            if details is not None and block is not None:
                if self._block is not None and block != self._block:
                    events.append(ReasoningEnd())
                self._block = block
            events.append(ReasoningDelta(reasoning))
        content = _get(delta, "content")
        if isinstance(content, str) and content:
            scanner = self._scanner
            if scanner is None:
                events.append(TextDelta(content))
            else:
                self._scanned = True
                events.extend(scanner.feed(content))
        refusal = _get(delta, "refusal")
        if isinstance(refusal, str) and refusal:
            events.append(TextDelta(refusal))
        tool_calls = _get(delta, "tool_calls")
        if tool_calls:
            for part in tool_calls:
                self._feed_tool_call(part)

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
            raise ProviderError(
                f"{self.provider}: the server ended the answer with finish_reason 'error'",
                provider=self.provider,
            )
        events.extend(self.salvage())
        self._emit_calls(events)
        events.append(Finish(_FINISH_REASONS.get(reason, reason)))

    # -------------------------------------------------------------------------- tool calls

    def _feed_tool_call(self, part: Any) -> None:
        index = _int_or_none(_get(part, "index"))
        call_id = _get(part, "id")
        function = _get(part, "function")
        name = _get(function, "name")
        arguments = _get(function, "arguments")
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

    def _emit_calls(self, events: list[Event]) -> None:
        for position, call in enumerate(self._calls):
            events.append(
                ToolCall(
                    id=call.id or f"call_{position}",
                    name=call.name or "",
                    arguments="".join(call.arguments),
                )
            )
        self._calls = []
        self._call_slots = {}

    # ------------------------------------------------------------------- reasoning details

    def _record_details(self, items: list[Any]) -> Any:
        """Merge streamed items into the kept ones; return the block their reasoning is in."""
        block: Any = None
        for item in items:
            if not isinstance(item, Mapping):
                continue
            kind = item.get("type")
            index = item.get("index")
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
            events.append(
                OpaqueState(
                    ReasoningState(
                        provider=self.provider,
                        model=self.model,
                        kind="reasoning_details",
                        payload=payload,
                        block=block,
                        endpoint=self.endpoint,
                        extra={"type": kind} if isinstance(kind, str) else {},
                    )
                )
            )
            data = item.get("data")
            if kind == "reasoning.encrypted" and isinstance(data, str) and data:
                events.append(
                    OpaqueState(
                        ReasoningState(
                            provider=self.provider,
                            model=self.model,
                            kind="encrypted",
                            payload=data,
                            block=block,
                            endpoint=self.endpoint,
                            extra={"passback": "reasoning_details"},
                        )
                    )
                )
        self._details = {}

    # ------------------------------------------------------------------------------ errors

    def _stream_error(self, error: Any) -> ProviderError:
        message = error if isinstance(error, str) else _get(error, "message")
        code = None if isinstance(error, str) else _get(error, "code")
        status = _int_or_none(code)
        detail = f"{self.provider}: {message or 'the server reported an error'} (stream error"
        if code is not None:
            detail += f", code {code}"
        body = dict(error) if isinstance(error, Mapping) else error
        return ProviderError(
            detail + ")",
            provider=self.provider,
            status_code=status if status is not None and 100 <= status <= 599 else None,
            body=body,
        )


def _starts_new_call(call: _PartialCall, call_id: Any) -> bool:
    return bool(isinstance(call_id, str) and call_id and call.id and call_id != call.id)


def _details_text(items: list[Any]) -> str:
    parts: list[str] = []
    for item in items:
        if isinstance(item, Mapping):
            name = _DETAIL_TEXT_FIELDS.get(item.get("type"))  # type: ignore[arg-type]
            text = item.get(name) if name else None
            if isinstance(text, str) and text:
                parts.append(text)
    return "".join(parts)


def _usage(usage: Any) -> Usage:
    details = _get(usage, "completion_tokens_details")
    return Usage(
        input_tokens=_int_or_none(_get(usage, "prompt_tokens")),
        output_tokens=_int_or_none(_get(usage, "completion_tokens")),
        reasoning_tokens=_int_or_none(_get(details, "reasoning_tokens")),
    )


def _is_async_client(client: Any) -> bool:
    if isinstance(client, httpx.AsyncClient):
        return True
    if isinstance(client, httpx.Client):
        return False
    # openai.AsyncOpenAI and its subclasses (AsyncAzureOpenAI, ...); the SDK's decorators hide
    # that ``create`` is a coroutine function, so unwrap it for duck-typed clients.
    if any(cls.__name__.startswith("Async") for cls in type(client).__mro__):
        return True
    create = getattr(getattr(getattr(client, "chat", None), "completions", None), "create", None)
    return create is not None and inspect.iscoroutinefunction(inspect.unwrap(create))


class OpenAIChatPipe(ProviderPipe):
    """A Chat Completions stream (OpenAI or any compatible server) into one channel.

    Reasoning is read from the delta's ``reasoning_content``, ``reasoning`` or
    ``reasoning_details`` (one source per delta), or from ``<think>`` tags inside ``content``.

    Args:
        model: the model id.
        client: an ``openai.OpenAI`` (for ``run()``) or ``openai.AsyncOpenAI`` (for
            ``arun()``); with ``transport="httpx"`` an ``httpx.Client``/``AsyncClient``.
            Without one the pipe builds its own from ``base_url`` and ``api_key``.
        base_url: the ``/v1`` root, e.g. ``"http://localhost:8000/v1"`` for vLLM.
        transport: ``"sdk"`` (the openai SDK) or ``"httpx"`` (the lean transport: httpx and
            httpx-sse, ``json.loads``, no SDK model objects).
        http_client: the ``httpx.Client``/``AsyncClient`` for ``transport="httpx"``.
        inline_tags: ``"auto"`` scans ``content`` for ``<think>`` tags until native reasoning
            appears; ``True`` always scans; ``False`` never does.
        start_in_reasoning: the content starts inside reasoning (templates that pre-fill the
            open tag). ``None``: recognised from the model id (DeepSeek-R1 and its
            distillations, not ``deepseek-reasoner``). Needs inline tags on.
        tags: tag names for the scanner (default ``think``, ``thinking``, ``reasoning``).
        include_usage: request ``stream_options.include_usage`` (default on).
        send_reasoning_back: put a turn's readable reasoning back on earlier assistant
            messages as ``reasoning_content``. ``None``: only where the host needs it (a
            ``deepseek`` model's tool-call turns, any ``kimi`` model's turns).
        extra_body: fields merged into the request body (``chat_template_kwargs``,
            ``grammar``, ...).
        timeout: seconds, for clients the pipe builds and for each request.

    >>> pipe = OpenAIChatPipe("deepseek-reasoner", base_url="https://api.deepseek.com/v1")
    >>> pipe.set_streaming_callback(print).run("Why is the sky blue?")  # doctest: +SKIP
    """

    provider: str | None = "openai-chat"
    secret_env = ("OPENAI_API_KEY",)
    extra: str = "openai"
    reasoning_fields: ClassVar[tuple[str, ...]] = REASONING_FIELDS
    """Delta fields carrying reasoning, in priority order."""
    reasoning_passback_field: ClassVar[str] = "reasoning_content"
    """The assistant-message field readable reasoning goes back in."""
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    """Used by the httpx transport when neither ``base_url`` nor the client names a root."""
    api_key_env: ClassVar[str] = "OPENAI_API_KEY"
    """Where the httpx transport finds a key when none is given."""

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        transport: Literal["sdk", "httpx"] = "sdk",
        http_client: httpx.Client | httpx.AsyncClient | None = None,
        inline_tags: InlineTags = "auto",
        start_in_reasoning: bool | None = None,
        tags: Iterable[str] | None = None,
        include_usage: bool = True,
        send_reasoning_back: bool | None = None,
        extra_body: Mapping[str, Any] | None = None,
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
        if transport not in ("sdk", "httpx"):
            raise UsageError(f"transport must be 'sdk' or 'httpx', got {transport!r}")
        if inline_tags not in ("auto", True, False):
            raise UsageError(f"inline_tags must be 'auto', True or False, got {inline_tags!r}")
        self.transport = transport
        self.inline_tags: InlineTags = inline_tags
        self.tags: tuple[str, ...] | None = (
            None if tags is None else tuple((tags,) if isinstance(tags, str) else tags)
        )
        grammar_for(self.tags)  # a bad tag name fails here, not in the middle of a stream
        self.start_in_reasoning = (
            self._detect_start_in_reasoning(model)
            if start_in_reasoning is None
            else start_in_reasoning
        )
        self.include_usage = include_usage
        self.send_reasoning_back = send_reasoning_back
        self._sync_client: Any = None
        self._async_client: Any = None
        given = [c for c in (client, http_client) if c is not None]
        if len(given) > 1:
            raise UsageError("give client= or http_client=, not both")
        if transport == "sdk" and http_client is not None:
            raise UsageError(
                "http_client= is for transport='httpx'; with the SDK pass "
                "client=openai.OpenAI(http_client=...) instead"
            )
        for given_client in given:
            if transport == "httpx" and not isinstance(
                given_client, (httpx.Client, httpx.AsyncClient)
            ):
                raise UsageError(
                    "transport='httpx' needs an httpx.Client or httpx.AsyncClient, got "
                    f"{type(given_client).__name__}; pass it as http_client=, or use "
                    "transport='sdk' with an openai client"
                )
            if _is_async_client(given_client):
                self._async_client = given_client
            else:
                self._sync_client = given_client
            if self.endpoint is None:
                root = str(getattr(given_client, "base_url", "") or "").rstrip("/")
                self.endpoint = root or None
        self._client_given = bool(given)
        if http_client is not None:
            self.client = http_client

    # ------------------------------------------------------------------------ configuration

    def _detect_start_in_reasoning(self, model: str) -> bool:
        return starts_in_reasoning(model)

    def _auto_send_reasoning(self, message: Mapping[str, Any]) -> bool:
        model = (self.model or "").lower()
        if "kimi" in model:
            return True
        return "deepseek" in model and bool(message.get("tool_calls"))

    def translator(self) -> OpenAIChatTranslator:
        """A fresh translator configured for this pipe (one per stream)."""
        return OpenAIChatTranslator(
            provider=self.provider or self.name,
            model=self.model or "",
            endpoint=self.endpoint,
            inline_tags=self.inline_tags,
            start_in_reasoning=self.start_in_reasoning,
            tags=self.tags,
            reasoning_fields=self.reasoning_fields,
        )

    # ----------------------------------------------------------------------------- request

    def build_request(self, prompt: Prompt | Any) -> dict[str, Any]:
        """The JSON body of the request for ``prompt`` (``extra_body`` merged last).

        With the SDK transport, ``model`` and ``messages`` become the call's arguments and
        everything else goes through the SDK's ``extra_body``, so the wire body is the same.
        """
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [self._message(turn) for turn in self.turns(prompt)],
            "stream": True,
        }
        if self.include_usage:
            body["stream_options"] = {"include_usage": True}
        body.update(self.request_options())
        body = self.with_reasoning(body)
        body.update(self.extra_body)
        return body

    def request_options(self) -> dict[str, Any]:
        """Body fields a host-specific pipe adds (merged before ``extra_body``)."""
        return {}

    def _message(self, turn: HistoryTurn) -> dict[str, Any]:
        message = strip_inert_keys(turn.message)
        if message.get("role") != "assistant":
            return message
        if turn.reasoning:
            send = self.send_reasoning_back
            if send is None:
                send = self._auto_send_reasoning(message)
            if send:
                message[self.reasoning_passback_field] = turn.reasoning
        details = [
            json.loads(state.payload)
            for state in turn.states
            if state.kind == "reasoning_details" and self._owns(state)
        ]
        if details:
            message["reasoning_details"] = details
        return message

    def _owns(self, state: ReasoningState) -> bool:
        if state.provider != self.provider or state.model != self.model:
            return False
        return not (state.endpoint and self.endpoint and state.endpoint != self.endpoint)

    def _sdk_arguments(self, body: Mapping[str, Any]) -> dict[str, Any]:
        rest = dict(body)
        arguments: dict[str, Any] = {
            "model": rest.pop("model"),
            "messages": rest.pop("messages"),
            "stream": True,
        }
        rest.pop("stream", None)
        if rest:
            arguments["extra_body"] = rest
        if self.timeout is not None:
            arguments["timeout"] = self.timeout
        return arguments

    # ------------------------------------------------------------------------------ clients

    def _client_for_run(self) -> Any:
        if self._sync_client is not None:
            return self._sync_client
        if self._async_client is not None:
            raise UsageError(
                f"{self.name} was given an async client: pass a sync one "
                "(openai.OpenAI / httpx.Client) to use run(), or use `await pipe.arun(...)`"
            )
        if self.transport == "httpx":
            self._sync_client = httpx.Client(timeout=self._http_timeout())
        else:
            openai = require("openai", self.extra)
            self._sync_client = openai.OpenAI(**self._client_options())
        return self._sync_client

    def _client_for_arun(self) -> Any:
        """The async client, or ``None`` to iterate the sync one in a worker thread.

        A client the pipe builds itself serves one ``arun()`` and is closed at its end
        (``aiter_events`` does it): its connections belong to the running event loop, and the
        SDK's async client, left to the garbage collector, closes itself on whatever asyncio
        loop runs then, which fails for a trio run's sockets. Pass ``client=`` to keep
        connections across runs.
        """
        if self._async_client is not None:
            return self._async_client
        if self._client_given:
            return None
        if self.transport == "httpx":
            return httpx.AsyncClient(timeout=self._http_timeout())
        openai = require("openai", self.extra)
        return openai.AsyncOpenAI(**self._client_options())

    def _http_timeout(self) -> httpx.Timeout:
        if self.timeout is not None:
            return httpx.Timeout(self.timeout)
        # Reasoning models may think a long while before the first byte: the SDK's defaults.
        return httpx.Timeout(600.0, connect=5.0)

    def _url(self, client: httpx.Client | httpx.AsyncClient) -> str:
        if self.base_url is not None:
            return f"{self.base_url}/chat/completions"
        if self._client_given and str(client.base_url):
            return "chat/completions"
        return f"{self.default_base_url}/chat/completions"

    def _headers(self) -> dict[str, str]:
        key = self._api_key
        if key is None and not self._client_given:
            key = os.environ.get(self.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def close(self) -> None:
        """Close the sync client this pipe built itself; clients passed in stay the caller's."""
        client, self._sync_client = self._sync_client, None
        if client is not None and not self._client_given:
            client.close()
        elif self._client_given:
            self._sync_client = client

    async def aclose(self) -> None:
        """Nothing to close: an async client the pipe builds lives for one ``arun()`` only."""

    # ------------------------------------------------------------------------------ streams

    def iter_events(self, prompt: Prompt) -> Iterator[Event]:
        """Stream one turn with the sync client, yielding events."""
        client = self._client_for_run()
        body = self.build_request(prompt)
        translator = self.translator()
        source: Iterator[Any]
        if self.transport == "httpx":
            source = iter_sse_json(
                client,
                self._url(client),
                body=body,
                headers=self._headers(),
                provider=self.provider or self.name,
            )
            close = source.close  # type: ignore[attr-defined]
        else:
            stream = client.chat.completions.create(**self._sdk_arguments(body))
            source, close = stream, stream.close
        recorded_id = False
        try:
            for chunk in source:
                events = translator.feed(chunk)
                if not recorded_id and translator.response_id is not None:
                    self.set_response_id(translator.response_id)
                    recorded_id = True
                yield from events
            yield from translator.finish()
        except Exception:
            # Whatever the scanner still held is part of what was captured before the failure.
            yield from translator.salvage()
            raise
        finally:
            close()

    async def aiter_events(self, prompt: Prompt) -> AsyncIterator[Event]:
        """Stream one turn with the async client (a given sync client runs in a thread)."""
        client = self._client_for_arun()
        if client is None:
            threaded = super().aiter_events(prompt)
            try:
                async for event in threaded:
                    yield event
            finally:
                with anyio.CancelScope(shield=True):
                    await threaded.aclose()  # type: ignore[attr-defined]
            return
        owned = client is not self._async_client
        inner = self._astream(client, prompt)
        try:
            async for event in inner:
                yield event
        finally:
            with anyio.CancelScope(shield=True):
                await inner.aclose()  # type: ignore[attr-defined]
                if owned:
                    await (client.aclose() if self.transport == "httpx" else client.close())

    async def _astream(self, client: Any, prompt: Prompt) -> AsyncIterator[Event]:
        body = self.build_request(prompt)
        translator = self.translator()
        source: AsyncIterator[Any]
        if self.transport == "httpx":
            source = aiter_sse_json(
                client,
                self._url(client),
                body=body,
                headers=self._headers(),
                provider=self.provider or self.name,
            )
            aclose = source.aclose  # type: ignore[attr-defined]
        else:
            stream = await client.chat.completions.create(**self._sdk_arguments(body))
            source = aiter(stream)

            async def aclose() -> None:
                await close_sdk_stream(stream, source)

        recorded_id = False
        try:
            async for chunk in source:
                events = translator.feed(chunk)
                if not recorded_id and translator.response_id is not None:
                    self.set_response_id(translator.response_id)
                    recorded_id = True
                for event in events:
                    yield event
            for event in translator.finish():
                yield event
        except Exception:
            for event in translator.salvage():
                yield event
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await aclose()

    # ------------------------------------------------------------------------------- errors

    def wrap_error(self, error: BaseException) -> ProviderError:
        """Map an SDK or transport exception to ``ProviderError``.

        The provider's own error message replaces the SDK's summary of the whole body;
        ``retry-after-ms`` and HTTP-date ``Retry-After`` values are understood; an in-stream
        error object's numeric ``code`` (OpenRouter) becomes ``status_code``.
        """
        if isinstance(error, ProviderError):
            return error
        body = getattr(error, "body", None)
        what = None
        if isinstance(body, Mapping):
            message = body.get("message")
            if isinstance(message, str) and message:
                what = message
        wrapped = provider_error(self.provider or self.name, error, what=what)
        response = getattr(error, "response", None)
        if response is not None:
            retry_after = retry_after_seconds(getattr(response, "headers", None))
            if retry_after is not None:
                wrapped.retry_after = retry_after
        if wrapped.status_code is None and isinstance(body, Mapping):
            code = _int_or_none(body.get("code"))
            if code is not None and 100 <= code <= 599:
                wrapped.status_code = code
        return wrapped
