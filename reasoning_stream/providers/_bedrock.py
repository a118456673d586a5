"""Amazon Bedrock through boto3's ``bedrock-runtime`` client: ConverseStream and InvokeModel.

Two pure translators turn the dicts boto3 yields into events:

* :class:`ConverseStreamTranslator` reads ``ConverseStream`` events (``contentBlockDelta`` with
  ``reasoningContent`` text, signature or redacted bytes; ``toolUse`` fragments; ``messageStop``;
  ``metadata``). Reasoning blocks have no ``contentBlockStart``: the first reasoning delta of a
  block opens it and its ``contentBlockStop`` closes it.
* :class:`InvokeStreamTranslator` reads ``InvokeModelWithResponseStream`` events, whose
  ``chunk.bytes`` carry the model's own stream JSON: Anthropic Messages events for Claude (read
  by the Anthropic module's translator, configured for Bedrock), text completion chunks for
  DeepSeek-R1 (whose template pre-fills ``<think>``, so the text starts inside reasoning and
  only ``</think>`` closes it) and a few other text shapes.

:class:`BedrockPipe` opens the stream with the sync client. boto3 has no async client, so
``arun()`` reads the same stream in worker threads; cancellation shuts the socket's read side
down so a blocked read returns at once and the connection is released.

Opaque state. A signed reasoning block becomes ``ReasoningState(kind="signature",
payload=signature, block=contentBlockIndex, extra={...})``: Bedrock wants the text and its
signature back together, so ``extra`` carries the block's reasoning text under the API's own
field name (``"text"`` for Converse's ``reasoningText``, ``"thinking"`` for Anthropic blocks on
Invoke) and ``"api"``.
Redacted reasoning becomes ``ReasoningState(kind="redacted", payload=...)``: the raw ``bytes``
boto3 decoded from ``redactedContent`` (Converse), or the Anthropic ``data`` string (Invoke).
States keep stream order: Converse emits them when their block stops, Anthropic's translator
when its redacted block starts or its signed block stops. A follow-up request puts an assistant
turn's states back at the head of its content, verbatim and in order; states made through the
other API (``extra["api"]``) are left out, since their payload forms differ. Invoke requests
reuse the Anthropic pipe's message conversion, so only states of provider ``bedrock`` go back.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from .._callbacks import CallbackErrorHandler
from .._effort import Reasoning, merge_params
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
from .._exceptions import MalformedStreamError, ProviderError, UsageError
from .._pipe import Prompt
from .._tags import Scanner
from ._anthropic import AnthropicTranslator, convert_turns
from ._base import HistoryTurn, ProviderPipe, provider_error, require, retry_after_seconds

__all__ = [
    "BedrockPipe",
    "ConverseStreamTranslator",
    "InvokeStreamTranslator",
    "TextInvokeTranslator",
]

Api = Literal["converse", "invoke"]

PROVIDER = "bedrock"
ANTHROPIC_VERSION = "bedrock-2023-05-31"
"""The ``anthropic_version`` Bedrock requires in Anthropic request bodies."""
DEFAULT_MAX_TOKENS = 4096
"""Output limit for request bodies that must name one (Anthropic, DeepSeek) when none is set."""

# DeepSeek's chat template; its special tokens use full-width bars and U+2581, not ASCII.
_DS_BEGIN = "<\uff5cbegin\u2581of\u2581sentence\uff5c>"
_DS_END = "<\uff5cend\u2581of\u2581sentence\uff5c>"
_DS_USER = "<\uff5cUser\uff5c>"
_DS_ASSISTANT = "<\uff5cAssistant\uff5c>"

_STOP_REASONS: dict[str, str] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "stop": "stop",
    "finish": "stop",
    "max_tokens": "length",
    "length": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "tool_calls": "tool_calls",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
    "content_filter": "content_filter",
    "refusal": "content_filter",
}

# In-stream exceptions arrive without an HTTP status; these are the ones the service model
# gives them, so callers can tell a throttle (retry later) from a bad request.
_STREAM_ERROR_STATUS: dict[str, int] = {
    "validationexception": 400,
    "modeltimeoutexception": 408,
    "modelstreamerrorexception": 424,
    "throttlingexception": 429,
    "internalserverexception": 500,
    "serviceunavailableexception": 503,
}

# What every state made through Invoke carries in ``extra``, and what a state sent back
# through Invoke may not contradict.
_INVOKE_MARKS: dict[str, Any] = {"api": "invoke"}

# How long closing waits for a read in flight after the socket was shut down.
_CLOSE_WAIT_SECONDS = 5.0


def normalise_stop_reason(reason: str) -> str:
    """Bedrock's and the models' stop reasons in the library's vocabulary."""
    return _STOP_REASONS.get(reason, reason)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _invocation_usage(metrics: Any) -> UsageReport | None:
    """Usage from the ``amazon-bedrock-invocationMetrics`` Bedrock adds to the last chunk."""
    if not isinstance(metrics, Mapping):
        return None
    usage = Usage(
        input_tokens=_int_or_none(metrics.get("inputTokenCount")),
        output_tokens=_int_or_none(metrics.get("outputTokenCount")),
    )
    if usage == Usage():
        return None
    return UsageReport(usage)


@dataclass
class _Block:
    """One content block being assembled."""

    index: int
    reasoning: list[str] = field(default_factory=list)
    signature: str | None = None
    redacted: list[bytes] = field(default_factory=list)
    is_reasoning: bool = False
    tool_id: str | None = None
    tool_name: str | None = None
    tool_input: list[str] = field(default_factory=list)


class _StateMaker:
    """Builds the opaque states of one stream, scoped to its provider, model and endpoint."""

    def __init__(self, provider: str, model: str, endpoint: str | None, api: Api) -> None:
        self.provider = provider
        self.model = model
        self.endpoint = endpoint
        self.api: Api = api

    def make(
        self,
        kind: str,
        payload: str | bytes,
        block: int,
        extra: Mapping[str, Any] | None = None,
    ) -> OpaqueState:
        return OpaqueState(
            ReasoningState(
                provider=self.provider,
                model=self.model,
                kind=kind,
                payload=payload,
                block=block,
                endpoint=self.endpoint,
                extra={**(extra or {}), "api": self.api},
            )
        )


def _pop_block(blocks: dict[int, _Block], index: Any) -> _Block | None:
    key = index if isinstance(index, int) else -1
    return blocks.pop(key) if key in blocks else None


def _tool_call(block: _Block) -> ToolCall:
    # A tool without parameters streams no fragment; its arguments are still an object.
    arguments = "".join(block.tool_input) or "{}"
    return ToolCall(block.tool_id or "", block.tool_name or "", arguments)


# --------------------------------------------------------------------------- Converse


class ConverseStreamTranslator:
    """Turns boto3 ``converse_stream`` events (plain dicts) into events. Pure: no I/O.

    >>> t = ConverseStreamTranslator(model="m")
    >>> t.feed({"contentBlockDelta": {"contentBlockIndex": 0,
    ...         "delta": {"reasoningContent": {"text": "hm"}}}})
    [ReasoningDelta(text='hm')]
    >>> t.feed({"contentBlockStop": {"contentBlockIndex": 0}})
    [ReasoningEnd()]
    """

    def __init__(
        self, *, provider: str = PROVIDER, model: str, endpoint: str | None = None
    ) -> None:
        self.provider = provider
        self._states = _StateMaker(provider, model, endpoint, "converse")
        self._blocks: dict[int, _Block] = {}
        self.stopped = False
        """Whether ``messageStop`` arrived."""

    def _block(self, index: Any) -> _Block:
        key = index if isinstance(index, int) else -1
        block = self._blocks.get(key)
        if block is None:
            block = self._blocks[key] = _Block(key)
        return block

    def feed(self, chunk: Mapping[str, Any]) -> list[Event]:
        """Translate one event dict; unknown event types give no events."""
        events: list[Event] = []
        if "contentBlockDelta" in chunk:
            self._delta(chunk["contentBlockDelta"] or {}, events)
        elif "contentBlockStart" in chunk:
            body = chunk["contentBlockStart"] or {}
            tool = (body.get("start") or {}).get("toolUse")
            if isinstance(tool, Mapping):
                started = self._block(body.get("contentBlockIndex"))
                started.tool_id = tool.get("toolUseId")
                started.tool_name = tool.get("name")
        elif "contentBlockStop" in chunk:
            index = (chunk["contentBlockStop"] or {}).get("contentBlockIndex")
            block = _pop_block(self._blocks, index)
            if block is not None:
                self._close(block, events)
        elif "messageStop" in chunk:
            self.stopped = True
            reason = (chunk["messageStop"] or {}).get("stopReason")
            if isinstance(reason, str):
                events.append(Finish(normalise_stop_reason(reason)))
        elif "metadata" in chunk:
            # The metadata's ``trace`` (guardrail assessments, prompt routing) describes the
            # request's handling; it is never the model's reasoning.
            usage = (chunk["metadata"] or {}).get("usage")
            if isinstance(usage, Mapping):
                events.append(
                    UsageReport(
                        Usage(
                            input_tokens=_int_or_none(usage.get("inputTokens")),
                            output_tokens=_int_or_none(usage.get("outputTokens")),
                            # Not in the service model today; read it if a model adds it.
                            reasoning_tokens=_int_or_none(usage.get("reasoningTokens")),
                        )
                    )
                )
        return events

    def _delta(self, body: Mapping[str, Any], events: list[Event]) -> None:
        delta = body.get("delta") or {}
        index = body.get("contentBlockIndex")
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, Mapping):
            block = self._block(index)
            block.is_reasoning = True
            text = reasoning.get("text")
            if isinstance(text, str) and text:
                block.reasoning.append(text)
                events.append(ReasoningDelta(text))
            signature = reasoning.get("signature")
            if isinstance(signature, str):
                block.signature = (block.signature or "") + signature
            redacted = reasoning.get("redactedContent")
            if isinstance(redacted, bytes | bytearray):
                block.redacted.append(bytes(redacted))
            return
        text = delta.get("text")
        if isinstance(text, str):
            if text:
                events.append(TextDelta(text))
            return
        tool = delta.get("toolUse")
        if isinstance(tool, Mapping):
            fragment = tool.get("input")
            if isinstance(fragment, str):
                self._block(index).tool_input.append(fragment)

    def _close(self, block: _Block, events: list[Event]) -> None:
        if block.is_reasoning:
            if block.reasoning:
                events.append(ReasoningEnd())
            if block.signature is not None:
                events.append(
                    self._states.make(
                        "signature",
                        block.signature,
                        block.index,
                        {"text": "".join(block.reasoning)},
                    )
                )
            if block.redacted:
                events.append(self._states.make("redacted", b"".join(block.redacted), block.index))
        elif block.tool_id is not None or block.tool_input:
            events.append(_tool_call(block))

    def finish(self) -> list[Event]:
        """End of stream: close blocks left open; a stream without ``messageStop`` is cut."""
        events: list[Event] = []
        for index in sorted(self._blocks):
            self._close(self._blocks[index], events)
        self._blocks.clear()
        if not self.stopped:
            raise MalformedStreamError(
                "bedrock: the ConverseStream ended before messageStop; the answer is incomplete",
                provider=self.provider,
            )
        return events

    def salvage(self) -> list[Event]:
        """After a broken stream: nothing is held back here (Converse text is never scanned)."""
        return []


# ----------------------------------------------------------------------------- Invoke


class TextInvokeTranslator:
    """Turns text-completion chunks (DeepSeek and other text models) into events. Pure.

    Reads ``choices[].text`` (DeepSeek on Bedrock), ``choices[].delta.content`` and
    ``.reasoning_content`` (OpenAI-style models), ``generation`` (Llama), ``outputText``
    (Titan) and ``completion``. Inline tags go through the scanner; with
    ``start_in_reasoning=True`` (DeepSeek-R1, whose template pre-fills ``<think>``) the text
    is reasoning until ``</think>``.
    """

    def __init__(
        self,
        *,
        provider: str = PROVIDER,
        start_in_reasoning: bool = False,
        tags: Iterable[str] | None = None,
    ) -> None:
        self.provider = provider
        self._scanner = Scanner(start_in_reasoning=start_in_reasoning, tags=tags)
        self._finished = False

    def feed(self, data: Mapping[str, Any]) -> list[Event]:
        """Translate one decoded chunk; fields it does not know give no events."""
        events: list[Event] = []
        reason: Any = None
        choices = data.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                    continue
                delta = choice.get("delta")
                if isinstance(delta, Mapping):
                    # Hosts that separate reasoning themselves; the Pipe closes the segment
                    # when the answer starts.
                    thought = delta.get("reasoning_content") or delta.get("reasoning")
                    if isinstance(thought, str) and thought:
                        events.append(ReasoningDelta(thought))
                    self._text(delta.get("content"), events)
                else:
                    self._text(choice.get("text"), events)
                reason = choice.get("stop_reason") or choice.get("finish_reason") or reason
        else:
            for key in ("generation", "outputText", "completion"):
                self._text(data.get(key), events)
            reason = data.get("stop_reason") or data.get("completionReason")
        if isinstance(reason, str) and not self._finished:
            self._finished = True
            events.extend(self._scanner.flush())
            events.append(Finish(normalise_stop_reason(reason.lower())))
        return events

    def _text(self, text: Any, events: list[Event]) -> None:
        if isinstance(text, str) and text:
            events.extend(self._scanner.feed(text))

    def finish(self) -> list[Event]:
        """End of stream: release characters the scanner holds and close its segment."""
        if self._finished:
            return []
        self._finished = True
        return list(self._scanner.flush())


class InvokeStreamTranslator:
    """Turns boto3 ``invoke_model_with_response_stream`` events into events. Pure: no I/O.

    Each event is ``{"chunk": {"bytes": b"..."}}``; the bytes are the model's own stream JSON,
    read by an :class:`AnthropicTranslator` configured for Bedrock (its states scoped to
    ``provider`` and marked ``api="invoke"``, Bedrock's stop reasons) for Claude models and by
    :class:`TextInvokeTranslator` for the rest. The invocation metrics Bedrock adds to the last
    chunk become a usage report; a Claude stream that ends before its stop is cut short.
    """

    def __init__(
        self,
        *,
        provider: str = PROVIDER,
        model: str,
        endpoint: str | None = None,
        family: Literal["anthropic", "text"] | None = None,
        start_in_reasoning: bool | None = None,
        tags: Iterable[str] | None = None,
    ) -> None:
        self.provider = provider
        family = family or ("anthropic" if "anthropic" in model.lower() else "text")
        if start_in_reasoning is None:
            start_in_reasoning = starts_in_reasoning(model)
        self._anthropic: AnthropicTranslator | None = None
        self._text: TextInvokeTranslator | None = None
        if family == "anthropic":
            self._anthropic = AnthropicTranslator(
                provider=provider,
                model=model,
                endpoint=endpoint,
                state_extra=_INVOKE_MARKS,
                stop_reasons=_STOP_REASONS,
            )
        else:
            self._text = TextInvokeTranslator(
                provider=provider, start_in_reasoning=start_in_reasoning, tags=tags
            )

    @property
    def response_id(self) -> str | None:
        """The model's own message id, where its stream carries one."""
        return self._anthropic.response_id if self._anthropic is not None else None

    def feed(self, chunk: Mapping[str, Any]) -> list[Event]:
        """Translate one event dict; events other than ``chunk`` give no events."""
        part = chunk.get("chunk")
        if not isinstance(part, Mapping):
            return []
        raw = part.get("bytes")
        if not isinstance(raw, bytes | bytearray | str) or not raw:
            return []
        try:
            data = json.loads(raw)
        except ValueError as error:
            raise MalformedStreamError(
                f"bedrock: a stream chunk is not JSON ({error})", provider=self.provider
            ) from error
        if not isinstance(data, Mapping):
            return []
        if self._anthropic is not None:
            events = self._anthropic.feed(data)
        else:
            assert self._text is not None
            events = self._text.feed(data)
        report = _invocation_usage(data.get("amazon-bedrock-invocationMetrics"))
        if report is not None:
            events.append(report)
        return events

    def finish(self) -> list[Event]:
        """End of stream, passed on to the model family's translator."""
        if self._anthropic is not None:
            events = self._anthropic.finish()
            if not self._anthropic.stopped:
                raise MalformedStreamError(
                    "bedrock: the model stream ended before message_stop; the answer is incomplete",
                    provider=self.provider,
                )
            return events
        assert self._text is not None
        return self._text.finish()

    def salvage(self) -> list[Event]:
        """After a broken stream: what the tag scanner held back, without judging the end."""
        if self._anthropic is not None:
            return self._anthropic.finish()
        return self._text.finish() if self._text is not None else []


def starts_in_reasoning(model: str) -> bool:
    """Whether the model's template pre-fills ``<think>`` (DeepSeek-R1 and its distillations)."""
    lowered = model.lower()
    return "deepseek" in lowered and "r1" in lowered


# ------------------------------------------------------------------------- requests


def _content_text(content: Any) -> str:
    """A message's content as plain text: strings as they are, OpenAI text parts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    return str(content)


def _arguments(raw: Any) -> Any:
    """A tool call's arguments as Converse's ``toolUse.input``.

    Lenient, unlike ``tool_call_arguments`` (which Invoke uses through the Anthropic
    conversion): text that is not JSON is kept as ``{"arguments": text}``.
    """
    if isinstance(raw, Mapping):
        return dict(raw)
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        # Not JSON: keep what the model wrote rather than dropping it.
        return {"arguments": raw}


def _usable_states(turn: HistoryTurn, api: Api) -> list[ReasoningState]:
    return [s for s in turn.states if s.extra.get("api", api) == api]


def _redacted_bytes(payload: str | bytes) -> bytes:
    # A str payload is a blob written out as base64 (ReasoningState.to_json's convention).
    return payload if isinstance(payload, bytes) else base64.b64decode(payload)


def _merge_roles(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Join consecutive messages of one role: Bedrock and Anthropic want roles to alternate."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        if not message["content"]:
            continue
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1]["content"].extend(message["content"])
        else:
            merged.append(message)
    return merged


def converse_messages(
    turns: Sequence[HistoryTurn],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Canonical turns as Converse ``(messages, system)``.

    Tool calls become ``toolUse`` blocks with ``input`` as an object; tool results become
    ``toolResult`` blocks in a user message; an assistant turn's states go back first.
    """
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    for turn in turns:
        message = turn.message
        role = message.get("role")
        text = _content_text(message.get("content"))
        if role in ("system", "developer"):
            if text:
                system.append({"text": text})
            continue
        if role == "tool":
            result = {
                "toolUseId": message.get("tool_call_id") or "",
                "content": [{"text": text}],
            }
            messages.append({"role": "user", "content": [{"toolResult": result}]})
            continue
        content: list[dict[str, Any]] = []
        if role == "assistant":
            for state in _usable_states(turn, "converse"):
                if state.kind == "signature":
                    block: dict[str, Any] = {
                        "text": str(state.extra.get("text", "")),
                        "signature": state.payload,
                    }
                    content.append({"reasoningContent": {"reasoningText": block}})
                elif state.kind == "redacted":
                    content.append(
                        {"reasoningContent": {"redactedContent": _redacted_bytes(state.payload)}}
                    )
        if text:
            content.append({"text": text})
        if role == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                content.append(
                    {
                        "toolUse": {
                            "toolUseId": call.get("id") or "",
                            "name": function.get("name") or "",
                            "input": _arguments(function.get("arguments")),
                        }
                    }
                )
        messages.append(
            {"role": "assistant" if role == "assistant" else "user", "content": content}
        )
    return _merge_roles(messages), system


def anthropic_messages(turns: Sequence[HistoryTurn]) -> tuple[list[dict[str, Any]], str]:
    """Canonical turns as Anthropic Messages ``(messages, system)`` for an Invoke body.

    The Anthropic pipe's own conversion, with this API's states going back (made by
    ``bedrock`` and marked ``api="invoke"``); content is always a block list and turns of one
    role are joined, since Bedrock wants roles to alternate.
    """
    system, messages = convert_turns(turns, provider=PROVIDER, state_extra=_INVOKE_MARKS)
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            message["content"] = [{"type": "text", "text": content}] if content else []
    return _merge_roles(messages), "\n\n".join(text for text in system if text)


def deepseek_prompt(turns: Sequence[HistoryTurn], *, prefill_think: bool) -> str:
    """Canonical turns in DeepSeek's chat template, as the Bedrock DeepSeek examples build it.

    Earlier answers go in without their reasoning, as DeepSeek recommends; with
    ``prefill_think`` the prompt ends with the assistant token and ``<think>\\n``, so R1
    reasons first.
    """
    system: list[str] = []
    body: list[str] = []
    for turn in turns:
        message = turn.message
        role = message.get("role")
        text = _content_text(message.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        elif role == "assistant":
            body.append(f"{_DS_ASSISTANT}{text}{_DS_END}")
        else:
            body.append(f"{_DS_USER}{text}")
    tail = f"{_DS_ASSISTANT}<think>\n" if prefill_think else _DS_ASSISTANT
    return _DS_BEGIN + "\n\n".join(system) + "".join(body) + tail


# ----------------------------------------------------------------------------- errors


def bedrock_error(error: BaseException, provider: str = PROVIDER) -> ProviderError:
    """A ``ProviderError`` for a botocore or transport exception.

    botocore's ``ClientError`` (HTTP errors) and ``EventStreamError`` (in-stream exceptions)
    keep the service's code and message in ``error.response``; the status is the HTTP one, or
    for in-stream exceptions the one the service model assigns (429 for a throttle).
    """
    if isinstance(error, ProviderError):
        return error
    response = getattr(error, "response", None)
    if isinstance(response, Mapping) and isinstance(response.get("Error"), Mapping):
        details = response["Error"]
        code = str(details.get("Code") or type(error).__name__)
        text = str(details.get("Message") or "the request failed")
        metadata = response.get("ResponseMetadata") or {}
        status = _int_or_none(metadata.get("HTTPStatusCode"))
        if status is None:
            status = _STREAM_ERROR_STATUS.get(code.lower())
        headers = metadata.get("HTTPHeaders") or {}
        retry_after = retry_after_seconds(headers)
        message = f"{provider}: {text} ({code}"
        if status is not None:
            message += f", HTTP {status}"
        message += ")"
        return ProviderError(
            message,
            provider=provider,
            status_code=status,
            retry_after=retry_after,
            body={"Code": code, "Message": text},
        )
    name = type(error).__name__
    if name in ("ProtocolError", "ResponseStreamingError", "IncompleteReadError"):
        return provider_error(
            provider, error, what=f"the connection broke mid-stream: {error or name}"
        )
    return provider_error(provider, error)


# ------------------------------------------------------------------------------ pipe


class _Reader:
    """Reads a boto3 EventStream one event at a time from worker threads, closable from any.

    ``interrupt()`` shuts the socket's read side down so a read blocked in another thread
    returns at once; ``close()`` waits for that read to finish before closing the stream, so
    the generator is never closed while it runs.
    """

    _END = object()

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._iterator: Iterator[Any] = iter(stream)
        self._lock = threading.Lock()
        self.reading = False

    def next(self) -> Any:
        with self._lock:
            self.reading = True
            try:
                return next(self._iterator, self._END)
            except BaseException as error:  # handed to the event loop, never lost in a thread
                return _Failure(error)
            finally:
                self.reading = False

    def interrupt(self) -> None:
        if self.reading:
            _shutdown_read(self._stream)

    def close(self) -> None:
        acquired = self._lock.acquire(timeout=_CLOSE_WAIT_SECONDS)
        try:
            _close_stream(self._stream)
        finally:
            if acquired:
                self._lock.release()


@dataclass(frozen=True, slots=True)
class _Failure:
    error: BaseException


def _shutdown_read(stream: Any) -> None:
    """Wake a read blocked on the stream's socket (urllib3's ``HTTPResponse.shutdown``)."""
    # botocore's EventStream keeps the urllib3 response privately; reach it defensively.
    raw = getattr(stream, "_raw_stream", None)
    shutdown = getattr(raw, "shutdown", None)
    if callable(shutdown):
        with contextlib.suppress(Exception):
            shutdown()


def _close_stream(stream: Any) -> None:
    close = getattr(stream, "close", None)
    if callable(close):
        with contextlib.suppress(Exception):
            close()


@dataclass
class _Opened:
    stream: Any
    translator: ConverseStreamTranslator | InvokeStreamTranslator
    request_id: str | None
    model_id_noted: bool = False


class BedrockPipe(ProviderPipe):
    """A model on Amazon Bedrock, streamed through boto3's ``bedrock-runtime`` client.

    ``api="converse"`` (default) uses ``ConverseStream``, where Bedrock itself separates
    reasoning (``reasoningContent``) from the answer; ``api="invoke"`` uses
    ``InvokeModelWithResponseStream`` with the model's native body (Anthropic Messages for
    Claude, DeepSeek's template for DeepSeek, OpenAI-style ``messages`` for the rest).
    Claude's extended thinking is switched on through ``additional_model_request_fields``.

    >>> import boto3  # doctest: +SKIP
    >>> pipe = BedrockPipe(  # doctest: +SKIP
    ...     "us.anthropic.claude-sonnet-4-20250514-v1:0",
    ...     client=boto3.client("bedrock-runtime", region_name="us-west-2"),
    ...     additional_model_request_fields={
    ...         "thinking": {"type": "enabled", "budget_tokens": 2048}
    ...     },
    ... )
    >>> pipe.set_streaming_callback(print).run("Why is the sky blue?")  # doctest: +SKIP

    Args:
        model: the model or inference profile id (``us.deepseek.r1-v1:0``, an ARN, ...).
        client: a boto3 ``bedrock-runtime`` client; without one the pipe builds it from
            ``region_name`` (default: ``AWS_REGION``, ``AWS_DEFAULT_REGION``, else
            ``us-east-1``) and ``endpoint_url`` / ``base_url``.
        api: ``"converse"`` or ``"invoke"``.
        additional_model_request_fields: model-specific fields (Converse
            ``additionalModelRequestFields``; merged into the Invoke body).
        inference_config: Converse ``inferenceConfig`` (``maxTokens``, ``temperature``, ...).
        max_tokens, temperature, top_p: shorthands for the common inference settings.
        start_in_reasoning, tags: for Invoke text models with inline tags; by default
            DeepSeek-R1 model ids start inside reasoning.
        extra_body: merged into the ``converse_stream`` keyword arguments (``toolConfig``,
            ``guardrailConfig``, ...) or into the Invoke JSON body.
        timeout: connect and read timeout in seconds for a client the pipe builds.
    """

    provider = PROVIDER
    secret_env = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK")
    extra = "bedrock"

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        region_name: str | None = None,
        endpoint_url: str | None = None,
        base_url: str | None = None,
        api: Api = "converse",
        additional_model_request_fields: Mapping[str, Any] | None = None,
        inference_config: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        start_in_reasoning: bool | None = None,
        tags: Iterable[str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        name: str | None = None,
        escape_markers: bool = True,
        on_callback_error: CallbackErrorHandler | None = None,
        stream_model_reasoning: bool = True,
        reasoning: Reasoning = None,
    ) -> None:
        if api not in ("converse", "invoke"):
            raise UsageError(f"BedrockPipe api must be 'converse' or 'invoke', not {api!r}")
        if endpoint_url and base_url and endpoint_url.rstrip("/") != base_url.rstrip("/"):
            raise UsageError("give endpoint_url or base_url, not two different URLs")
        super().__init__(
            model,
            client=client,
            base_url=endpoint_url or base_url,
            extra_body=extra_body,
            timeout=timeout,
            name=name,
            escape_markers=escape_markers,
            on_callback_error=on_callback_error,
            stream_model_reasoning=stream_model_reasoning,
            reasoning=reasoning,
        )
        self.model_id: str = model
        """The model or inference profile id (``model`` as a plain ``str``)."""
        self.api: Api = api
        if client is not None:
            meta = getattr(client, "meta", None)
            region_name = region_name or getattr(meta, "region_name", None)
        self.region_name: str = (
            region_name
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION")
            or "us-east-1"
        )
        self.endpoint = self.base_url or self.region_name
        self.additional_model_request_fields: dict[str, Any] = dict(
            additional_model_request_fields or {}
        )
        self.inference_config: dict[str, Any] = dict(inference_config or {})
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.start_in_reasoning = (
            starts_in_reasoning(model) if start_in_reasoning is None else start_in_reasoning
        )
        self.tags: tuple[str, ...] | None = tuple(tags) if tags is not None else None

    # ------------------------------------------------------------------------- client

    def _client(self) -> Any:
        if self.client is None:
            boto3 = require("boto3", self.extra)
            config = require("botocore.config", self.extra)
            options: dict[str, Any] = {"region_name": self.region_name}
            if self.base_url:
                options["endpoint_url"] = self.base_url
            timeouts: dict[str, Any] = {}
            if self.timeout is not None:
                timeouts = {"connect_timeout": self.timeout, "read_timeout": self.timeout}
            # One attempt: botocore's retries would repeat a throttled call behind the
            # caller's back; the pipe's own set_retries() is the one retry policy.
            options["config"] = config.Config(retries={"total_max_attempts": 1}, **timeouts)
            self.client = boto3.client("bedrock-runtime", **options)
        return self.client

    # ------------------------------------------------------------------------ request

    def _family(self) -> Literal["anthropic", "deepseek", "messages"]:
        lowered = self.model_id.lower()
        if "anthropic" in lowered:
            return "anthropic"
        if "deepseek" in lowered:
            return "deepseek"
        return "messages"

    def build_request(self, prompt: Prompt | Any) -> dict[str, Any]:
        """The keyword arguments of ``converse_stream`` or ``invoke_model_with_response_stream``.

        For Invoke, ``body`` is the JSON text of the model's native request.
        """
        turns = self.turns(prompt)
        if self.api == "converse":
            messages, system = converse_messages(turns)
            request: dict[str, Any] = {"modelId": self.model_id, "messages": messages}
            if system:
                request["system"] = system
            inference = dict(self.inference_config)
            for key, value in (
                ("maxTokens", self.max_tokens),
                ("temperature", self.temperature),
                ("topP", self.top_p),
            ):
                if value is not None:
                    inference[key] = value
            if inference:
                request["inferenceConfig"] = inference
            if self.additional_model_request_fields:
                request["additionalModelRequestFields"] = dict(self.additional_model_request_fields)
            request = self.with_reasoning(request)
            request.update(self.extra_body)
            return request
        return {"modelId": self.model_id, "body": json.dumps(self.invoke_body(turns))}

    def invoke_body(self, turns: Sequence[HistoryTurn]) -> dict[str, Any]:
        """The model's native request body for ``api="invoke"``."""
        family = self._family()
        body: dict[str, Any]
        if family == "anthropic":
            messages, system = anthropic_messages(turns)
            thinking = self.additional_model_request_fields.get("thinking")
            budget = thinking.get("budget_tokens") if isinstance(thinking, Mapping) else None
            max_tokens = self.max_tokens
            if max_tokens is None:
                # The output limit must leave room for the answer after the thinking budget.
                max_tokens = DEFAULT_MAX_TOKENS + (budget if isinstance(budget, int) else 0)
            body = {
                "anthropic_version": ANTHROPIC_VERSION,
                "max_tokens": max_tokens,
                "messages": messages,
            }
            if system:
                body["system"] = system
        elif family == "deepseek":
            body = {
                "prompt": deepseek_prompt(turns, prefill_think=self.start_in_reasoning),
                "max_tokens": self.max_tokens or DEFAULT_MAX_TOKENS,
            }
        else:
            body = {"messages": [dict(turn.message) for turn in turns]}
            if self.max_tokens is not None:
                body["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.top_p is not None:
            body["top_p"] = self.top_p
        body.update(self.additional_model_request_fields)
        if self.reasoning is not None:
            # Invoke bodies are the model's native request: the Converse-shaped plan's model
            # fields go in at the top level, and its token limit becomes ``max_tokens``.
            params = self.reasoning_plan().params
            body = merge_params(body, params.get("additionalModelRequestFields", {}))
            limit = params.get("inferenceConfig", {}).get("maxTokens")
            if limit is not None:
                body["max_tokens"] = limit
        body.update(self.extra_body)
        return body

    # ------------------------------------------------------------------------- stream

    def _translator(self) -> ConverseStreamTranslator | InvokeStreamTranslator:
        if self.api == "converse":
            return ConverseStreamTranslator(
                provider=PROVIDER, model=self.model_id, endpoint=self.endpoint
            )
        return InvokeStreamTranslator(
            provider=PROVIDER,
            model=self.model_id,
            endpoint=self.endpoint,
            family="anthropic" if self._family() == "anthropic" else "text",
            start_in_reasoning=self.start_in_reasoning,
            tags=self.tags,
        )

    def _open(self, prompt: Prompt | Any) -> _Opened:
        """Send the request and return the open event stream (blocks until the headers)."""
        request = self.build_request(prompt)
        client = self._client()
        if self.api == "converse":
            response = client.converse_stream(**request)
            stream = response["stream"]
        else:
            response = client.invoke_model_with_response_stream(**request)
            stream = response["body"]
        metadata = response.get("ResponseMetadata") or {}
        request_id = metadata.get("RequestId")
        return _Opened(stream, self._translator(), request_id if request_id else None)

    def _note_response_id(self, opened: _Opened) -> None:
        # The model's own message id (Anthropic on Invoke) beats the AWS request id.
        if not opened.model_id_noted:
            response_id = getattr(opened.translator, "response_id", None)
            if response_id:
                opened.model_id_noted = True
                self.set_response_id(response_id)

    def iter_events(self, prompt: Prompt) -> Iterator[Event]:
        """Stream one turn with the sync client; the EventStream is closed on every exit."""
        opened = self._open(prompt)
        self.set_response_id(opened.request_id)
        translator = opened.translator
        try:
            for chunk in opened.stream:
                yield from translator.feed(chunk)
                self._note_response_id(opened)
            yield from translator.finish()
        except Exception:
            # A broken stream still releases what the tag scanner held back.
            yield from translator.salvage()
            raise
        finally:
            _close_stream(opened.stream)

    async def aiter_events(self, prompt: Prompt) -> AsyncIterator[Event]:
        """Stream one turn by reading the sync client in worker threads (boto3 is sync only).

        Translation runs on the event loop; only the blocking reads go to threads. When the
        run is cancelled mid-read, the socket's read side is shut down so the thread returns
        at once, then the stream is closed.
        """
        # A cancelled wait for the headers still lets the thread finish opening; keep what it
        # opened so the stream is closed instead of leaking its connection.
        holder: list[_Opened] = []

        def open_stream() -> _Opened:
            holder.append(self._open(prompt))
            return holder[0]

        try:
            opened = await anyio.to_thread.run_sync(open_stream)
        except BaseException:
            if holder:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(_close_stream, holder[0].stream)
            raise
        self.set_response_id(opened.request_id)
        translator = opened.translator
        reader = _Reader(opened.stream)
        try:
            while True:
                item = await anyio.to_thread.run_sync(reader.next, abandon_on_cancel=True)
                if item is _Reader._END:
                    break
                if isinstance(item, _Failure):
                    raise item.error
                for event in translator.feed(item):
                    yield event
                self._note_response_id(opened)
            for event in translator.finish():
                yield event
        except Exception:
            # A broken stream still releases what the tag scanner held back.
            for event in translator.salvage():
                yield event
            raise
        finally:
            reader.interrupt()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(reader.close)

    def wrap_error(self, error: BaseException) -> ProviderError:
        """Map botocore and transport exceptions to ``ProviderError`` (code, message, status)."""
        return bedrock_error(error, self.provider or PROVIDER)
