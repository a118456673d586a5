"""The Anthropic Messages API: extended thinking, signatures and redacted thinking.

Anthropic streams a message as numbered content blocks (``thinking``, ``redacted_thinking``,
``text``, ``tool_use``, ...), each opened by ``content_block_start``, grown by
``content_block_delta`` events and closed by ``content_block_stop``. :class:`AnthropicTranslator`
turns those raw events into this library's events; :class:`AnthropicPipe` opens the stream with
the official ``anthropic`` SDK and feeds the translator.

Opaque state, and how it goes back
----------------------------------
A thinking block ends with a ``signature``. Each signed thinking block becomes one
``ReasoningState(kind="signature", payload=<signature>, block=<index>,
extra={"thinking": <the block's full thinking text>})``: the signature is the payload, and the
exact text it signs rides along in ``extra`` so the block can be rebuilt byte for byte. A
``redacted_thinking`` block becomes ``ReasoningState(kind="redacted", payload=<data>,
block=<index>)``. :meth:`AnthropicPipe.build_request` turns them back into
``{"type": "thinking", "thinking": ..., "signature": ...}`` and
``{"type": "redacted_thinking", "data": ...}`` blocks, in their original order, at the head of
the assistant turn they belong to, which is what the API requires when a tool-use turn is
continued with thinking enabled.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
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
    ReasoningStart,
    ReasoningState,
    TextDelta,
    ToolCall,
    Usage,
    UsageReport,
)
from .._exceptions import ProviderError, UsageError
from .._pipe import Pipe, Prompt
from ._base import (
    HistoryTurn,
    ProviderPipe,
    close_sdk_stream,
    provider_error,
    require,
    tool_call_arguments,
)

__all__ = ["AnthropicPipe", "AnthropicTranslator"]

_PROVIDER = "anthropic"

_STOP_REASONS: dict[str, str] = {
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}

# Anthropic documents one HTTP status per error type. An `event: error` arrives on a stream
# whose HTTP status was already 200, so the documented status is the useful one to report
# (a retry policy keyed on 429/529 then treats both paths alike).
_ERROR_STATUS: dict[str, int] = {
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

DEFAULT_MAX_TOKENS = 4096
"""Room for the answer when the pipe is not given ``max_tokens`` (a thinking budget is added)."""

# SDK keyword arguments that name no body field, and therefore cannot go in `extra_body`.
_NAMED_ARGUMENTS = ("model", "max_tokens", "messages")


def _field(item: Any, name: str) -> Any:
    """``item.name`` for SDK objects, ``item[name]`` for plain dicts; ``None`` when absent."""
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def _text(value: Any) -> str:
    """A string field's value; JSON ``null`` (or anything not a string) is no text at all."""
    return value if isinstance(value, str) else ""


@dataclass(slots=True)
class _Block:
    """One content block being streamed."""

    type: str
    parts: list[str] = field(default_factory=list)
    signature: str = ""
    call_id: str = ""
    name: str = ""
    initial_input: Any = None


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
        provider: str = _PROVIDER,
        model: str,
        endpoint: str | None = None,
        state_extra: Mapping[str, Any] | None = None,
        stop_reasons: Mapping[str, str] | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.endpoint = endpoint
        self.state_extra: dict[str, Any] = dict(state_extra or {})
        self.stop_reasons: Mapping[str, str] = (
            _STOP_REASONS if stop_reasons is None else stop_reasons
        )
        self.response_id: str | None = None
        """The message id from ``message_start``, once seen."""
        self.stopped = False
        """Whether the message ended (a stop reason or ``message_stop``): without it, a
        stream that ends was cut short."""
        self._blocks: dict[int, _Block] = {}

    def feed(self, event: Any) -> list[Event]:
        """The events for one raw stream event; unknown event types give none.

        Raises ``ProviderError`` for an ``error`` event (the SDK raises its own exception
        before handing one over; plain-dict transports reach this).
        """
        kind = _field(event, "type")
        if kind == "content_block_delta":
            return self._on_delta(_field(event, "index"), _field(event, "delta"))
        if kind == "content_block_start":
            return self._on_start(_field(event, "index"), _field(event, "content_block"))
        if kind == "content_block_stop":
            block = self._blocks.pop(_field(event, "index"), None)
            return self._close(_field(event, "index"), block) if block else []
        if kind == "message_start":
            return self._on_message_start(_field(event, "message"))
        if kind == "message_delta":
            return self._on_message_delta(event)
        if kind == "message_stop":
            self.stopped = True
            return []
        if kind == "error":
            raise stream_error(event, provider=self.provider)
        return []

    def finish(self) -> list[Event]:
        """End of stream: close blocks that never saw their ``content_block_stop``."""
        events: list[Event] = []
        for index in sorted(self._blocks):
            events.extend(self._close(index, self._blocks[index]))
        self._blocks.clear()
        return events

    # -------------------------------------------------------------------------- messages

    def _on_message_start(self, message: Any) -> list[Event]:
        if message is None:
            return []
        message_id = _field(message, "id")
        if isinstance(message_id, str) and message_id:
            self.response_id = message_id
        usage = _usage(_field(message, "usage"))
        return [UsageReport(usage)] if usage is not None else []

    def _on_message_delta(self, event: Any) -> list[Event]:
        events: list[Event] = []
        usage = _usage(_field(event, "usage"))
        if usage is not None:
            events.append(UsageReport(usage))
        reason = _field(_field(event, "delta"), "stop_reason")
        if isinstance(reason, str) and reason:
            self.stopped = True
            events.append(Finish(self.stop_reasons.get(reason, reason)))
        return events

    # ---------------------------------------------------------------------------- blocks

    def _on_start(self, index: Any, content: Any) -> list[Event]:
        if not isinstance(index, int) or content is None:
            return []
        block_type = _field(content, "type")
        if block_type == "thinking":
            block = _Block("thinking", signature=_text(_field(content, "signature")))
            self._blocks[index] = block
            events: list[Event] = [ReasoningStart()]
            # The API starts thinking blocks empty, but a proxy may send one whole.
            initial = _text(_field(content, "thinking"))
            if initial:
                block.parts.append(initial)
                events.append(ReasoningDelta(initial))
            return events
        if block_type == "redacted_thinking":
            # The data is complete in the start event; keep it now so a stream cut before
            # the block's stop still leaves it on the result.
            data = _text(_field(content, "data"))
            return [OpaqueState(self._state("redacted", data, index))] if data else []
        if block_type == "text":
            self._blocks[index] = _Block("text")
            initial = _text(_field(content, "text"))
            return [TextDelta(initial)] if initial else []
        if block_type == "tool_use":
            self._blocks[index] = _Block(
                "tool_use",
                call_id=_text(_field(content, "id")),
                name=_text(_field(content, "name")),
                initial_input=_field(content, "input"),
            )
            return []
        # Server tool blocks and block types added later carry nothing this library shows.
        return []

    def _on_delta(self, index: Any, delta: Any) -> list[Event]:
        if not isinstance(index, int) or delta is None:
            return []
        delta_type = _field(delta, "type")
        block = self._blocks.get(index)
        if delta_type == "thinking_delta":
            if block is None:
                block = self._blocks[index] = _Block("thinking")
            piece = _text(_field(delta, "thinking"))
            if not piece:
                return []
            block.parts.append(piece)
            return [ReasoningDelta(piece)]
        if delta_type == "signature_delta":
            if block is None:
                block = self._blocks[index] = _Block("thinking")
            # The API sends the whole signature in one delta; a later one replaces it.
            block.signature = _text(_field(delta, "signature"))
            return []
        if delta_type == "text_delta":
            piece = _text(_field(delta, "text"))
            return [TextDelta(piece)] if piece else []
        if delta_type == "input_json_delta" and block is not None:
            block.parts.append(_text(_field(delta, "partial_json")))
            return []
        return []

    def _close(self, index: Any, block: _Block) -> list[Event]:
        if block.type == "thinking":
            events: list[Event] = [ReasoningEnd()]
            # An unsigned block cannot be sent back, so it leaves no state.
            if block.signature:
                state = self._state(
                    "signature", block.signature, index, {"thinking": "".join(block.parts)}
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

    def _state(
        self, kind: str, payload: str, index: Any, extra: Mapping[str, Any] | None = None
    ) -> ReasoningState:
        return ReasoningState(
            provider=self.provider,
            model=self.model,
            kind=kind,
            payload=payload,
            block=index if isinstance(index, int) else None,
            endpoint=self.endpoint,
            extra={**(extra or {}), **self.state_extra},
        )


def _usage(usage: Any) -> Usage | None:
    """Usage from a ``message_start`` or ``message_delta`` usage object.

    ``input_tokens`` is the whole prompt: Anthropic reports cache reads and cache writes
    apart from ``input_tokens``, and the three add up to what the model read.
    ``reasoning_tokens`` comes from ``output_tokens_details.thinking_tokens`` when reported.
    """
    if usage is None:
        return None
    inputs = [
        _field(usage, name)
        for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    counted = [value for value in inputs if isinstance(value, int)]
    output = _field(usage, "output_tokens")
    thinking = _field(_field(usage, "output_tokens_details"), "thinking_tokens")
    result = Usage(
        input_tokens=sum(counted) if isinstance(inputs[0], int) else None,
        output_tokens=output if isinstance(output, int) else None,
        reasoning_tokens=thinking if isinstance(thinking, int) else None,
    )
    return None if result == Usage() else result


def _error_details(body: Any) -> tuple[str | None, str | None]:
    """``(error.type, error.message)`` from Anthropic's error body, where present."""
    error = _field(body, "error") if body is not None else None
    if error is None:
        return None, None
    error_type, message = _field(error, "type"), _field(error, "message")
    return (
        error_type if isinstance(error_type, str) else None,
        message if isinstance(message, str) else None,
    )


def stream_error(body: Any, *, provider: str = _PROVIDER) -> ProviderError:
    """The ``ProviderError`` for an ``event: error`` body that arrived mid-stream."""
    error_type, message = _error_details(body)
    plain = body if isinstance(body, Mapping) else None
    return ProviderError(
        f"{provider}: the stream reported {error_type or 'an error'}: "
        f"{message or 'no message'} (error event mid-stream)",
        provider=provider,
        status_code=_ERROR_STATUS.get(error_type or ""),
        body=dict(plain) if plain is not None else body,
    )


# ------------------------------------------------------------------------------ requests


def _image_block(url: str) -> dict[str, Any]:
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[len("data:") :].split(";base64,", 1)
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    return {"type": "image", "source": {"type": "url", "url": url}}


def _content_blocks(content: Any) -> list[Any]:
    """OpenAI-style content as Anthropic content blocks; native blocks pass through."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[Any] = []
    for part in content:
        part_type = _field(part, "type")
        if isinstance(part, str):
            blocks.append({"type": "text", "text": part})
        elif part_type == "text":
            blocks.append({"type": "text", "text": _text(_field(part, "text"))})
        elif part_type == "image_url":
            image = _field(part, "image_url")
            url = image if isinstance(image, str) else _text(_field(image, "url"))
            blocks.append(_image_block(url))
        else:
            blocks.append(part)
    return blocks


def _native_content(content: Any) -> Any:
    """A message's content for Anthropic: a string stays a string, parts become blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return _content_blocks(content)


def _tool_use_block(call: Mapping[str, Any]) -> dict[str, Any]:
    function = _field(call, "function") or {}
    name = _text(_field(function, "name"))
    tool_input = tool_call_arguments(
        _field(function, "arguments"), name, provider_label="Anthropic"
    )
    return {"type": "tool_use", "id": _text(_field(call, "id")), "name": name, "input": tool_input}


def _state_block(
    state: ReasoningState, provider: str, marks: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The content block a state stands for, as it came from the API; ``None`` if foreign."""
    if state.provider != provider:
        return None
    # A state without a mark is kept: only one marked for another API is foreign.
    if any(state.extra.get(key, value) != value for key, value in marks.items()):
        return None
    payload = state.payload.decode("utf-8") if isinstance(state.payload, bytes) else state.payload
    if state.kind == "signature":
        thinking = state.extra.get("thinking", "")
        return {"type": "thinking", "thinking": thinking, "signature": payload}
    if state.kind == "redacted":
        return {"type": "redacted_thinking", "data": payload}
    return None


def _assistant_message(
    turn: HistoryTurn, provider: str, marks: Mapping[str, Any]
) -> dict[str, Any]:
    message = turn.message
    state_blocks = [
        block
        for block in (_state_block(state, provider, marks) for state in turn.states)
        if block is not None
    ]
    calls = _field(message, "tool_calls") or []
    content = _field(message, "content")
    if not state_blocks and not calls:
        return {"role": "assistant", "content": _native_content(content)}
    # Thinking goes first: the API checks that a continued tool-use turn starts with the
    # thinking blocks it signed, unchanged and in their order.
    blocks: list[Any] = [*state_blocks, *_content_blocks(content)]
    blocks.extend(_tool_use_block(call) for call in calls)
    return {"role": "assistant", "content": blocks}


def _tool_result_block(message: Mapping[str, Any]) -> dict[str, Any]:
    content = _field(message, "content")
    return {
        "type": "tool_result",
        "tool_use_id": _text(_field(message, "tool_call_id")),
        "content": content if isinstance(content, str) else _content_blocks(content),
    }


def convert_turns(
    turns: Sequence[HistoryTurn],
    *,
    provider: str = _PROVIDER,
    state_extra: Mapping[str, Any] | None = None,
) -> tuple[list[str], list[dict[str, Any]]]:
    """``(system texts, messages)`` in Anthropic's shape from canonical history turns.

    An assistant turn's states go back when ``provider`` made them and their ``extra`` does
    not contradict ``state_extra`` (the marks an ``AnthropicTranslator`` configured alike puts
    on the states it makes), so Bedrock's Invoke states never reach another API.
    """
    marks = state_extra or {}
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    # The content list of the user message collecting tool results, while tool messages follow
    # each other: Anthropic wants all results of one tool-use turn in a single user message.
    results: list[Any] | None = None
    for turn in turns:
        message = turn.message
        role = _field(message, "role")
        if role == "tool":
            if results is None:
                results = []
                messages.append({"role": "user", "content": results})
            results.append(_tool_result_block(message))
            continue
        results = None
        if role in ("system", "developer"):
            content = _field(message, "content")
            text = (
                content
                if isinstance(content, str)
                else "".join(_text(_field(block, "text")) for block in _content_blocks(content))
            )
            system.append(text)
        elif role == "assistant":
            messages.append(_assistant_message(turn, provider, marks))
        else:
            messages.append(
                {"role": "user", "content": _native_content(_field(message, "content"))}
            )
    return system, messages


# --------------------------------------------------------------------------------- pipe


def _is_async_client(client: Any) -> bool:
    # The SDK's async clients (AsyncAnthropic, AsyncAnthropicBedrock, ...) share no public
    # base class, but every one of them has a coroutine close().
    return inspect.iscoroutinefunction(getattr(client, "close", None))


class AnthropicPipe(ProviderPipe):
    """Streams the Anthropic Messages API, extended thinking included, into the channel.

    Thinking deltas become reasoning (each thinking block its own segment), text deltas
    become the answer, ``tool_use`` blocks become tool calls. Signatures and redacted
    thinking never reach the channel: they land on ``result.reasoning_state`` and are sent
    back, unchanged and in order, at the head of the assistant turn they came with when a
    conversation continues through this pipe.

    Args:
        model: the model id (``"claude-sonnet-4-6"``).
        client: an ``anthropic.Anthropic`` (for ``run()``) or ``anthropic.AsyncAnthropic``
            (for ``arun()``); without one the pipe builds them from ``base_url``/``api_key``.
        base_url: the API root, ``https://api.anthropic.com`` (the SDK adds ``/v1/messages``).
        max_tokens: the output limit, thinking included; default 4096, plus the thinking
            budget when there is one, so the answer keeps 4096 tokens of room. A value at or
            below the budget raises ``UsageError``.
        thinking: the ``thinking`` request field, e.g. ``{"type": "enabled",
            "budget_tokens": 2048}`` or ``{"type": "adaptive"}``; omitted when ``None``.

    Example::

        pipe = AnthropicPipe("claude-sonnet-4-6", api_key="...",
                             thinking={"type": "enabled", "budget_tokens": 2048})
        pipe.set_streaming_callback(print)
        result = pipe.run("Why is the sky blue?")
        result.model_reasoning, result.text, result.reasoning_state
    """

    provider = _PROVIDER
    secret_env = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
    extra = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int | None = None,
        thinking: Mapping[str, Any] | None = None,
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
        if max_tokens is not None and max_tokens < 1:
            raise UsageError(f"max_tokens must be a positive number of tokens, got {max_tokens}")
        self.max_tokens = max_tokens
        if thinking is not None and reasoning is not None:
            raise UsageError("give either thinking= (the raw config) or reasoning=, not both")
        self.thinking: dict[str, Any] | None = dict(thinking) if thinking is not None else None
        self._sync_client: Any = None
        self._async_client: Any = None
        if client is not None:
            if _is_async_client(client):
                self._async_client = client
            else:
                self._sync_client = client
            if self.endpoint is None:
                root = getattr(client, "base_url", None)
                self.endpoint = str(root).rstrip("/") if root is not None else None

    # ------------------------------------------------------------------------- requests

    def build_request(self, prompt: Prompt | Any) -> dict[str, Any]:
        """The JSON body of the ``POST /v1/messages`` call, without ``stream``.

        System messages become the top-level ``system``; assistant ``tool_calls`` become
        ``tool_use`` blocks; tool messages become ``tool_result`` blocks in one user turn;
        a turn's reasoning states go back as its leading thinking and redacted blocks.
        ``extra_body`` is merged in last, so it can override anything.

        >>> AnthropicPipe("claude-x").build_request("hi")
        {'model': 'claude-x', 'max_tokens': 4096, 'messages': [{'role': 'user', 'content': 'hi'}]}
        """
        system, messages = convert_turns(self.turns(prompt))
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self._resolved_max_tokens(),
            "messages": messages,
        }
        if system:
            body["system"] = (
                system[0] if len(system) == 1 else [{"type": "text", "text": s} for s in system]
            )
        if self.thinking is not None:
            body["thinking"] = dict(self.thinking)
        body = self.with_reasoning(body)
        body.update(self.extra_body)
        return body

    def _resolved_max_tokens(self) -> int:
        budget = (self.thinking or {}).get("budget_tokens")
        if not isinstance(budget, int):
            return self.max_tokens or DEFAULT_MAX_TOKENS
        if self.max_tokens is None:
            return budget + DEFAULT_MAX_TOKENS
        if self.max_tokens <= budget:
            raise UsageError(
                f"max_tokens ({self.max_tokens}) must be above the thinking budget "
                f"({budget}): thinking counts toward max_tokens; raise max_tokens or lower "
                "budget_tokens"
            )
        return self.max_tokens

    def _create_arguments(self, prompt: Prompt | Any) -> dict[str, Any]:
        body = self.build_request(prompt)
        arguments: dict[str, Any] = {name: body.pop(name) for name in _NAMED_ARGUMENTS}
        arguments["stream"] = True
        # Every other field rides in extra_body, so fields this SDK version does not name
        # (or names differently) still reach the server exactly as built.
        if body:
            arguments["extra_body"] = body
        if self.timeout is not None:
            arguments["timeout"] = self.timeout
        return arguments

    # -------------------------------------------------------------------------- clients

    def _sync(self) -> Any:
        if self._sync_client is None:
            if self.client is not None:
                raise UsageError(
                    f"{self.name}: run() needs a sync client, but an async one was given; "
                    "pass anthropic.Anthropic(...) as client=, or use `await pipe.arun(...)`"
                )
            anthropic = require("anthropic", self.extra)
            self._sync_client = anthropic.Anthropic(**self._client_options())
        return self._sync_client

    def _new_async_client(self) -> Any:
        anthropic = require("anthropic", self.extra)
        return anthropic.AsyncAnthropic(**self._client_options())

    def _translator(self) -> AnthropicTranslator:
        return AnthropicTranslator(
            provider=self.provider or _PROVIDER, model=self.model or "", endpoint=self.endpoint
        )

    # --------------------------------------------------------------------------- events

    def iter_events(self, prompt: Prompt | Any) -> Iterator[Event]:
        """Open the stream with the sync client and yield its events."""
        client = self._sync()
        translator = self._translator()
        stream = client.messages.create(**self._create_arguments(prompt))
        try:
            for raw in stream:
                events = translator.feed(raw)
                self.set_response_id(translator.response_id)
                yield from events
            yield from translator.finish()
        finally:
            stream.close()

    async def aiter_events(self, prompt: Prompt | Any) -> AsyncIterator[Event]:
        """Open the stream with the async client and yield its events.

        With only a sync client, iterates :meth:`iter_events` in a worker thread.
        """
        if self._async_client is None and self.client is not None:
            async for event in Pipe.aiter_events(self, prompt):
                yield event
            return
        # A client the pipe builds lives for one run only: its connections belong to the
        # event loop (asyncio or trio) that opened them, and the next arun() may be on
        # another one.
        owned = self._async_client is None
        client = self._new_async_client() if owned else self._async_client
        try:
            translator = self._translator()
            stream = await client.messages.create(**self._create_arguments(prompt))
            iterator = aiter(stream)
            try:
                async for raw in iterator:
                    events = translator.feed(raw)
                    self.set_response_id(translator.response_id)
                    for event in events:
                        yield event
                for event in translator.finish():
                    yield event
            finally:
                with anyio.CancelScope(shield=True):
                    await close_sdk_stream(stream, iterator)
        finally:
            if owned:
                with anyio.CancelScope(shield=True):
                    await client.close()

    # --------------------------------------------------------------------------- errors

    def wrap_error(self, error: BaseException) -> ProviderError:
        """Map the SDK's exceptions to ``ProviderError``.

        An ``event: error`` mid-stream reaches us as the SDK's ``APIStatusError`` on a
        response whose status was 200; it is reported with the status Anthropic documents
        for its error type (``overloaded_error`` is 529). HTTP errors keep their status,
        ``retry-after`` and body; transport failures (a cut stream) keep their type.
        """
        if isinstance(error, ProviderError):
            return error
        status = getattr(error, "status_code", None)
        body = getattr(error, "body", None)
        error_type, message = _error_details(body)
        if isinstance(status, int) and status < 400 and error_type is not None:
            return stream_error(body, provider=self.provider or _PROVIDER)
        what = f"{error_type}: {message}" if error_type and message else None
        return provider_error(self.provider or self.name, error, what=what)
