"""Bedrock's ConverseStream and InvokeModelWithResponseStream events into events: pure.

* :class:`ConverseStreamTranslator` reads ``ConverseStream`` events (``contentBlockDelta`` with
  ``reasoningContent`` text, signature or redacted bytes; ``toolUse`` fragments; ``messageStop``;
  ``metadata``). Reasoning blocks have no ``contentBlockStart``: the first reasoning delta of a
  block opens it and its ``contentBlockStop`` closes it.
* :class:`InvokeStreamTranslator` reads ``InvokeModelWithResponseStream`` events, whose
  ``chunk.bytes`` carry the model's own stream JSON: Anthropic Messages events for Claude (read
  by the Anthropic package's translator, configured for Bedrock), text completion chunks for
  DeepSeek-R1 (whose template pre-fills ``<think>``, so the text starts inside reasoning and
  only ``</think>`` closes it) and a few other text shapes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

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
from ..._json import loads
from ..._tags import Scanner
from .._errors import build_error
from .._hidden import HiddenBlocks
from .._inline import inline_rule
from .._states import state_of
from ..anthropic.translate import AnthropicTranslator

__all__ = [
    "PROVIDER",
    "Api",
    "ConverseStreamTranslator",
    "InvokeStreamTranslator",
    "TextInvokeTranslator",
    "starts_in_reasoning",
]

Api = Literal["converse", "invoke"]

PROVIDER = "bedrock"

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


# What every state made through Invoke carries in ``extra``, and what a state sent back
# through Invoke may not contradict.
_INVOKE_MARKS: dict[str, Any] = {"api": "invoke"}


def normalise_stop_reason(reason: str) -> str:
    """Bedrock's and the models' stop reasons in the library's vocabulary."""
    return _STOP_REASONS.get(reason, reason)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _converse_usage(usage: Mapping[str, Any]) -> Usage:
    """Usage from a Converse ``metadata.usage``.

    ``input_tokens`` is the whole prompt: Bedrock reports cache reads and writes
    (``cacheReadInputTokens``, ``cacheWriteInputTokens``) apart from ``inputTokens``, and the
    three add up to what the model read.
    """
    inputs = _int_or_none(usage.get("inputTokens"))
    read = _int_or_none(usage.get("cacheReadInputTokens"))
    written = _int_or_none(usage.get("cacheWriteInputTokens"))
    return Usage(
        input_tokens=None if inputs is None else inputs + (read or 0) + (written or 0),
        output_tokens=_int_or_none(usage.get("outputTokens")),
        # Not in the service model today; read it if a model adds it.
        reasoning_tokens=_int_or_none(usage.get("reasoningTokens")),
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


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
    position: dict[str, int] = field(default_factory=dict)
    """Where a reasoning block sat among the answer: text and tool calls before it."""


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
        return OpaqueState(state_of(self, kind, payload, block, {**(extra or {}), "api": self.api}))


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
        self.response_id: str | None = None
        """Converse streams carry no message id (the AWS request id stands for it)."""
        self.provider = provider
        self._states = _StateMaker(provider, model, endpoint, "converse")
        self._blocks: dict[int, _Block] = {}
        self.stopped = False
        """Whether ``messageStop`` arrived."""
        # Answer text and tool calls so far: each reasoning state records them, so a
        # follow-up request echoes the blocks in the order received.
        self._text_length = 0
        self._calls = 0
        self._hidden = HiddenBlocks()

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
                self._calls += 1
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
            tokens = None
            if isinstance(usage, Mapping):
                report = _converse_usage(usage)
                tokens = report.reasoning_tokens
                events.append(UsageReport(report))
            events += self._hidden.release(tokens)
        return events

    def _delta(self, body: Mapping[str, Any], events: list[Event]) -> None:
        delta = body.get("delta") or {}
        index = body.get("contentBlockIndex")
        reasoning = delta.get("reasoningContent")
        # `is not None` first: most deltas carry one field, and an ABC check on None is slow.
        if reasoning is not None and isinstance(reasoning, Mapping):
            block = self._block(index)
            if not block.is_reasoning:
                block.position = {"text_offset": self._text_length, "call_index": self._calls}
                self._hidden.start(block.index)
            block.is_reasoning = True
            text = reasoning.get("text")
            if isinstance(text, str) and text:
                block.reasoning.append(text)
                events.append(ReasoningDelta(text))
            signature = reasoning.get("signature")
            if signature is not None and isinstance(signature, str):
                block.signature = (block.signature or "") + signature
            redacted = reasoning.get("redactedContent")
            if redacted is not None and isinstance(redacted, bytes | bytearray):
                block.redacted.append(bytes(redacted))
            return
        text = delta.get("text")
        if isinstance(text, str):
            if text:
                self._text_length += len(text)
                events.append(TextDelta(text))
            return
        tool = delta.get("toolUse")
        if isinstance(tool, Mapping):
            fragment = tool.get("input")
            if isinstance(fragment, str):
                self._block(index).tool_input.append(fragment)

    def _close(self, block: _Block, events: list[Event]) -> None:
        if block.is_reasoning:
            # Redacted (or signature-only) reasoning shows nothing: ReasoningHidden instead.
            self._hidden.stop(block.index, hidden=not block.reasoning)
            if block.reasoning:
                events.append(ReasoningEnd())
            if block.signature is not None:
                events.append(
                    self._states.make(
                        "signature",
                        block.signature,
                        block.index,
                        {"text": "".join(block.reasoning), **block.position},
                    )
                )
            if block.redacted:
                events.append(
                    self._states.make(
                        "redacted", b"".join(block.redacted), block.index, block.position
                    )
                )
        elif block.tool_id is not None or block.tool_input:
            events.append(_tool_call(block))

    def read_response(self, response: Mapping[str, Any]) -> list[Event]:
        """The events of one ``converse`` response (boto3's dict), read as its stream.

        Each content block of ``output.message`` becomes the deltas a stream of it sends
        (reasoning text, then its signature or redacted bytes; text; a tool use with its
        input as JSON text) and its stop; then ``stopReason`` and ``usage``. The AWS request
        id stands for the response id, as it does for a stream.
        """
        metadata = response.get("ResponseMetadata") or {}
        request_id = metadata.get("RequestId")
        if isinstance(request_id, str) and request_id:
            self.response_id = request_id
        message = (response.get("output") or {}).get("message") or {}
        events: list[Event] = []
        for index, block in enumerate(message.get("content") or ()):
            for chunk in _converse_block_events(index, block):
                events += self.feed(chunk)
        events += self.feed({"messageStop": {"stopReason": response.get("stopReason")}})
        events += self.feed({"metadata": {"usage": response.get("usage")}})
        return events + self.finish()

    def finish(self) -> list[Event]:
        """End of stream: close blocks left open; a stream without ``messageStop`` is cut."""
        events: list[Event] = []
        for index in sorted(self._blocks):
            self._close(self._blocks[index], events)
        self._blocks.clear()
        events += self._hidden.release()
        if not self.stopped:
            raise build_error(
                self.provider,
                "the ConverseStream ended before messageStop; the answer is incomplete",
                malformed=True,
            )
        return events

    def salvage(self) -> list[Event]:
        """After a broken stream: nothing is held back here (Converse text is never scanned)."""
        return []


def _converse_block_events(index: int, block: Any) -> list[dict[str, Any]]:
    """The stream events that carry one ``converse`` content block (its start, deltas, stop)."""
    if not isinstance(block, Mapping):
        return []
    chunks: list[dict[str, Any]] = []

    def delta(body: dict[str, Any]) -> None:
        chunks.append({"contentBlockDelta": {"contentBlockIndex": index, "delta": body}})

    reasoning = block.get("reasoningContent")
    tool = block.get("toolUse")
    if isinstance(reasoning, Mapping):
        text_part = reasoning.get("reasoningText")
        if isinstance(text_part, Mapping):
            delta({"reasoningContent": {"text": text_part.get("text") or ""}})
            if isinstance(text_part.get("signature"), str):
                delta({"reasoningContent": {"signature": text_part["signature"]}})
        if isinstance(reasoning.get("redactedContent"), bytes | bytearray):
            delta({"reasoningContent": {"redactedContent": reasoning["redactedContent"]}})
    elif isinstance(block.get("text"), str):
        delta({"text": block["text"]})
    elif isinstance(tool, Mapping):
        start = {"toolUse": {"toolUseId": tool.get("toolUseId"), "name": tool.get("name")}}
        chunks.append({"contentBlockStart": {"contentBlockIndex": index, "start": start}})
        arguments = tool.get("input")
        delta({"toolUse": {"input": json.dumps(arguments if arguments is not None else {})}})
    chunks.append({"contentBlockStop": {"contentBlockIndex": index}})
    return chunks


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
        self._request_id: str | None = None
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
        own = self._anthropic.response_id if self._anthropic is not None else None
        return own or self._request_id

    def read_response(self, response: Mapping[str, Any]) -> list[Event]:
        """The events of one ``invoke_model`` response: boto3's dict with ``body`` read to
        bytes. The body is the model's own non-streaming JSON (an Anthropic ``Message`` for
        Claude, ``choices[].text`` for DeepSeek and other text models); the invocation
        metrics a stream puts in its last chunk come from the ``X-Amzn-Bedrock-*-Token-Count``
        response headers.
        """
        metadata = response.get("ResponseMetadata") or {}
        request_id = metadata.get("RequestId")
        self._request_id = request_id if isinstance(request_id, str) and request_id else None
        raw = response.get("body")
        try:
            data = json.loads(raw) if isinstance(raw, bytes | bytearray | str) else raw
        except ValueError as error:
            raise build_error(
                self.provider, f"the response body is not JSON ({error})", malformed=True
            ) from error
        if not isinstance(data, Mapping):
            raise build_error(
                self.provider, "the response body is not a JSON object", malformed=True
            )
        if self._anthropic is not None:
            events = self._anthropic.read_response(data)
        else:
            assert self._text is not None
            events = self._text.feed(data) + self._text.finish()
        headers = metadata.get("HTTPHeaders") or {}
        report = _invocation_usage(
            {
                "inputTokenCount": _header_count(headers, "x-amzn-bedrock-input-token-count"),
                "outputTokenCount": _header_count(headers, "x-amzn-bedrock-output-token-count"),
            }
        )
        if report is not None:
            events.append(report)
        return events

    def feed(self, chunk: Mapping[str, Any]) -> list[Event]:
        """Translate one event dict; events other than ``chunk`` give no events."""
        part = chunk.get("chunk")
        if not isinstance(part, Mapping):
            return []
        raw = part.get("bytes")
        if not isinstance(raw, bytes | bytearray | str) or not raw:
            return []
        try:
            data = loads(bytes(raw) if isinstance(raw, bytearray) else raw)
        except ValueError as error:
            raise build_error(
                self.provider, f"a stream chunk is not JSON ({error})", malformed=True
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
                raise build_error(
                    self.provider,
                    "the model stream ended before message_stop; the answer is incomplete",
                    malformed=True,
                )
            return events
        assert self._text is not None
        return self._text.finish()

    def salvage(self) -> list[Event]:
        """After a broken stream: what the tag scanner held back, without judging the end."""
        if self._anthropic is not None:
            return self._anthropic.finish()
        return self._text.finish() if self._text is not None else []


def _header_count(headers: Mapping[str, Any], name: str) -> int | None:
    value = headers.get(name)
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def starts_in_reasoning(model: str) -> bool:
    """Whether the model's template pre-fills ``<think>``: its profile's ``inline.opens_inside``
    (DeepSeek-R1 on InvokeModel).

    >>> starts_in_reasoning("us.deepseek.r1-v1:0")
    True
    """
    return inline_rule("bedrock", model).opens_inside
