"""Gemini ``GenerateContentResponse`` chunks into events: pure, no I/O.

A part with ``"thought": true`` is reasoning (a thought summary), other ``text`` parts are the
answer, ``functionCall`` parts are tool calls. Any part may carry a ``thoughtSignature``:
opaque, base64, and required back on the same part in later requests. See the package docs for
the signature mapping.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

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
from .._errors import build_error
from .._states import ResponseFacts, state_of

__all__ = ["GeminiTranslator", "error_object", "gemini_error", "int_of", "str_of"]

_FINISH_REASONS = {"STOP": "stop", "MAX_TOKENS": "length"}


def int_of(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def str_of(value: Any) -> str:
    # JSON null (or anything else that is not a string) never becomes text.
    return value if isinstance(value, str) else ""


def error_object(body: Any) -> Mapping[str, Any] | None:
    """The ``error`` object of a Google API error body (an object, or a list of them)."""
    if isinstance(body, list) and body:
        body = body[0]
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        error: Mapping[str, Any] = body["error"]
        return error
    return None


def gemini_error(
    provider: str,
    error: Mapping[str, Any],
    *,
    http_status: int | None = None,
    retry_after: float | None = None,
    body: Any = None,
) -> ProviderError:
    """The ``ProviderError`` for a Google API ``error`` object (HTTP reply or in-stream)."""
    message = str_of(error.get("message")) or "the request failed"
    status = str_of(error.get("status"))
    details = [status] if status else []
    code = http_status if http_status is not None else int_of(error.get("code"))
    if code is not None:
        details.append(f"HTTP {code}")
    return build_error(
        provider,
        message,
        detail=", ".join(details) or None,
        status=http_status if http_status is not None else int_of(error.get("code")),
        retry_after=retry_after,
        body=body,
    )


class GeminiTranslator(ResponseFacts):
    """Turns ``GenerateContentResponse`` dicts into events. Pure: no I/O.

    A consecutive run of thought parts is one reasoning segment; the first non-thought part
    closes it. Signatures become ``OpaqueState`` (see the module docstring for the mapping).
    An ``error`` object in the stream raises ``ProviderError``.

    >>> t = GeminiTranslator(model="gemini-2.5-flash")
    >>> thought = {"candidates": [{"content": {"parts": [{"text": "hm", "thought": True}]}}]}
    >>> t.feed(thought) == [ReasoningDelta("hm")]
    True
    >>> answer = {"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}
    >>> t.feed(answer) == [ReasoningEnd(), TextDelta("Hi")]
    True
    """

    def __init__(
        self, *, model: str, provider: str = "gemini", endpoint: str | None = None
    ) -> None:
        # details: ``response_model`` (``modelVersion``).
        super().__init__(provider, model, endpoint)
        self._in_thought = False
        self._parts = 0
        self._text_length = 0
        self._calls = 0
        self._last_usage: tuple[int | None, ...] | None = None

    def feed(self, chunk: Any) -> list[Event]:
        """Translate one streamed response object."""
        if type(chunk) is not dict:
            if isinstance(chunk, list):
                return [event for item in chunk for event in self.feed(item)]
            if not isinstance(chunk, Mapping):
                return []
        if "error" in chunk:
            error = error_object(chunk)
            if error is not None:
                raise gemini_error(self.provider, error, body=dict(chunk))
        response_id = chunk.get("responseId")
        if response_id and isinstance(response_id, str) and response_id != self.response_id:
            self.response_id = response_id
            version = chunk.get("modelVersion")
            if isinstance(version, str) and version:
                self.details["response_model"] = version

        events: list[Event] = []
        candidates = chunk.get("candidates")
        candidate: Any = candidates[0] if isinstance(candidates, list) and candidates else None
        is_candidate = type(candidate) is dict or isinstance(candidate, Mapping)
        if is_candidate:
            index = candidate.get("index")
            if type(index) is not int:
                index = int_of(index)
            content = candidate.get("content")
            parts = (
                content.get("parts")
                if type(content) is dict or isinstance(content, Mapping)
                else None
            )
            for part in parts if isinstance(parts, list) else ():
                if type(part) is dict or isinstance(part, Mapping):
                    self._part(index or 0, part, events)
        usage = chunk.get("usageMetadata")
        if type(usage) is dict or isinstance(usage, Mapping):
            self._usage(usage, events)
        if is_candidate:
            reason = candidate.get("finishReason")
            if isinstance(reason, str) and reason:
                events.extend(self._close_thought())
                events.append(Finish(_FINISH_REASONS.get(reason, reason.lower())))
        return events

    def read_response(self, response: Any) -> list[Event]:
        """The events of one ``generateContent`` response: the same object a stream sends
        in pieces, read whole, then the stream's end (parts keep their order and states
        their signatures and positions).

        >>> GeminiTranslator(model="m").read_response({"candidates": [{"content": {"parts": [
        ...     {"text": "hm", "thought": True}, {"text": "Hi"}]}, "finishReason": "STOP"}]})
        [ReasoningDelta(text='hm'), ReasoningEnd(), TextDelta(text='Hi'), Finish(reason='stop')]
        """
        return self.feed(response) + self.finish()

    def finish(self) -> list[Event]:
        """End of stream: close a reasoning segment still open."""
        return self._close_thought()

    def salvage(self) -> list[Event]:
        """Nothing is held back: a broken stream leaves what was already emitted."""
        return []

    def _close_thought(self) -> list[Event]:
        if not self._in_thought:
            return []
        self._in_thought = False
        return [ReasoningEnd()]

    def _part(self, candidate: int, part: Mapping[str, Any], events: list[Event]) -> None:
        """Append the events of one part to ``events``."""
        position = self._parts
        self._parts += 1
        text_offset, call_index = self._text_length, self._calls
        extra: dict[str, Any] | None = None  # what a signature's state says of its part
        text = part.get("text")
        if type(text) is not str:
            text = str_of(text)
        if part.get("thought"):
            kind = "thought"
            self._in_thought = True
            if text:
                events.append(ReasoningDelta(text))
        else:
            if self._in_thought:
                self._in_thought = False
                events.append(ReasoningEnd())
            call = part.get("functionCall")
            if isinstance(call, Mapping):
                tool_call = self._tool_call(call)
                kind = "function_call"
                extra = {"part": kind, "name": tool_call.name, "call_id": tool_call.id}
                if isinstance(call.get("id"), str) and call["id"]:
                    extra["id"] = call["id"]
                events.append(tool_call)
            elif "text" in part:
                kind = "text" if text else "empty"
                if text:
                    self._text_length += len(text)
                    events.append(TextDelta(text))
            else:
                kind = "other"
        signature = part.get("thoughtSignature")
        if isinstance(signature, str) and signature:
            if extra is None:
                extra = {"part": kind}
                if kind == "other":
                    extra["raw"] = {k: v for k, v in part.items() if k != "thoughtSignature"}
            extra["text_offset"] = text_offset
            extra["call_index"] = call_index
            block = f"{candidate}:{position}"
            events.append(OpaqueState(state_of(self, "signature", signature, block, extra)))

    def _tool_call(self, call: Mapping[str, Any]) -> ToolCall:
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            # Gemini usually names no id; a per-turn counter gives a stable one.
            call_id = f"call_{self._calls}"
        self._calls += 1
        args = call.get("args")
        return ToolCall(
            id=call_id,
            name=str_of(call.get("name")),
            arguments=json.dumps(args if args is not None else {}, ensure_ascii=False),
        )

    def _usage(self, usage: Mapping[str, Any], events: list[Event]) -> None:
        """Append the usage report ``usage`` makes, if it says something new."""
        prompt = usage.get("promptTokenCount")
        if type(prompt) is not int:
            prompt = int_of(prompt)
        answer = usage.get("candidatesTokenCount")
        if type(answer) is not int:
            answer = int_of(answer)
        thoughts = usage.get("thoughtsTokenCount")
        if type(thoughts) is not int:
            thoughts = int_of(thoughts)
        cached = int_of(usage.get("cachedContentTokenCount"))
        # Gemini counts thinking apart from the answer; output_tokens counts both, as the
        # other providers' output counts do (and as Gemini bills them).
        output = None if answer is None and thoughts is None else (answer or 0) + (thoughts or 0)
        if prompt is None and output is None:
            return
        counts = (prompt, output, thoughts, cached)
        if counts == self._last_usage:
            # Gemini repeats the running counts on every chunk: an unchanged report adds
            # nothing to what the last one said.
            return
        self._last_usage = counts
        usage_report = Usage(
            input_tokens=prompt,
            output_tokens=output,
            reasoning_tokens=thoughts,
            cache_read_tokens=cached,
        )
        events.append(UsageReport(usage_report))
