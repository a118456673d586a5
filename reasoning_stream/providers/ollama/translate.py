"""Ollama's ``/api/chat`` and ``/api/generate`` NDJSON chunks into events: pure, no I/O.

Reasoning comes from the native ``thinking`` field, or from ``<think>`` tags in the answer
(read with the shared scanner until the native field shows up). The final line (``done:
true``) carries the stop reason, token counts and the server's timings in nanoseconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from ..._events import (
    Event,
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    TextDelta,
    ToolCall,
    Usage,
    UsageReport,
)
from ...profiles import Inline
from .._fields import field_of, text_of
from .._inline import TagReader, inline_rule, inline_scanner

__all__ = ["OllamaTranslator", "field_of", "text_of"]

_NANOSECONDS = 1_000_000_000
_DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")


def _count(value: Any) -> int | None:
    """A token count: an int (a JSON ``true`` is none)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _arguments_text(arguments: Any) -> str:
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        return arguments
    if isinstance(arguments, Mapping):
        arguments = dict(arguments)
    return json.dumps(arguments, ensure_ascii=False)


class OllamaTranslator:
    """Turns Ollama stream lines (SDK objects or dicts) into events. Pure: no I/O.

    ``api`` picks the field names (``"chat"``: ``message.thinking`` / ``message.content`` /
    ``message.tool_calls``; ``"generate"``: ``thinking`` / ``response``). ``inline_tags``
    decides whether answer text is scanned for ``<think>`` tags: ``"auto"`` scans until the
    native ``thinking`` field appears, ``True`` always, ``False`` never.

    >>> t = OllamaTranslator(model="qwen3")
    >>> t.feed({"message": {"role": "assistant", "thinking": "hm"}}) == [ReasoningDelta("hm")]
    True
    >>> answer = {"message": {"role": "assistant", "content": "hi"}}
    >>> t.feed(answer) == [ReasoningEnd(), TextDelta("hi")]
    True
    """

    def __init__(
        self,
        *,
        model: str,
        provider: str = "ollama",
        endpoint: str | None = None,
        api: Literal["chat", "generate"] = "chat",
        inline_tags: bool | Literal["auto"] = "auto",
        start_in_reasoning: bool | None = None,
        tags: Iterable[str] | None = None,
        inline: Inline | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.response_id: str | None = None
        """Ollama names no response: always ``None``."""
        self.endpoint = endpoint
        self.api = api
        self._always_scan = inline_tags is True
        if inline is None and inline_tags is not False:
            inline = inline_rule(provider, model, endpoint)
        self._scanner: TagReader | None = inline_scanner(
            inline_tags, start_in_reasoning=start_in_reasoning, inline=inline or Inline(), tags=tags
        )
        self._native_open = False
        self._calls = 0
        self.server_timings: dict[str, float] | None = None
        """The final line's durations, in seconds (Ollama reports nanoseconds)."""

    def feed(self, chunk: Any) -> list[Event]:
        """Translate one stream line."""
        events: list[Event] = []
        plain = type(chunk) is dict  # the lean transport's chunk: its fields read directly
        if self.api == "chat":
            message = chunk.get("message") if plain else field_of(chunk, "message")
            if type(message) is dict:
                thinking = message.get("thinking")
                content = message.get("content")
                tool_calls = message.get("tool_calls")
            else:
                thinking = field_of(message, "thinking")
                content = field_of(message, "content")
                tool_calls = field_of(message, "tool_calls")
            if not isinstance(tool_calls, list):
                tool_calls = ()  # none, or not a list of calls (malformed)
        elif plain:
            thinking = chunk.get("thinking")
            content = chunk.get("response")
            tool_calls = ()
        else:
            thinking = field_of(chunk, "thinking")
            content = field_of(chunk, "response")
            tool_calls = ()

        if thinking and isinstance(thinking, str):
            if self._scanner is not None and not self._always_scan:
                # The server separates reasoning itself: tags in the answer are now just text.
                events.extend(self._flush_scanner())
            self._native_open = True
            events.append(ReasoningDelta(thinking))
        if content and isinstance(content, str):
            if self._native_open:
                events.append(self._end_native())
            if self._scanner is not None:
                events.extend(self._scanner.feed(content))
            else:
                events.append(TextDelta(content))
        for call in tool_calls:
            events.extend(self._close_native())
            events.append(self._tool_call(call))

        if chunk.get("done") if plain else field_of(chunk, "done"):
            events.extend(self._flush_scanner())
            events.extend(self._close_native())
            events.extend(self._final(chunk))
        return events

    def read_response(self, response: Any) -> list[Event]:
        """The events of one non-streaming reply (``"stream": false``): the same object as a
        stream's final line, carrying the whole ``thinking``, answer and tool calls.

        >>> OllamaTranslator(model="qwen3").read_response({"message": {"role": "assistant",
        ...     "thinking": "hm", "content": "hi"}, "done": True, "done_reason": "stop"})
        [ReasoningDelta(text='hm'), ReasoningEnd(), TextDelta(text='hi'), Finish(reason='stop')]
        """
        return self.feed(response) + self.finish()

    def finish(self) -> list[Event]:
        """End of stream: release characters the tag scanner holds and close reasoning."""
        return [*self._flush_scanner(), *self._close_native()]

    def salvage(self) -> list[Event]:
        """A broken stream releases what the tag scanner held back, as a finished one does."""
        return self.finish()

    def _flush_scanner(self) -> list[Event]:
        scanner, self._scanner = self._scanner, None
        if scanner is None:
            return []
        return list(scanner.flush())

    def _close_native(self) -> list[Event]:
        return [self._end_native()] if self._native_open else []

    def _end_native(self) -> Event:
        self._native_open = False
        return ReasoningEnd()

    def _tool_call(self, call: Any) -> ToolCall:
        function = field_of(call, "function")
        # Ollama's wire format has no call id before 0.12 and the SDK model drops it after;
        # a per-stream counter gives each call a stable id the tool result can point at.
        call_id = field_of(call, "id")
        if not isinstance(call_id, str) or not call_id:
            call_id = f"call_{self._calls}"
        self._calls += 1
        return ToolCall(
            id=call_id,
            name=text_of(field_of(function, "name")),
            arguments=_arguments_text(field_of(function, "arguments")),
        )

    def _final(self, chunk: Any) -> list[Event]:
        timings = {
            name: value / _NANOSECONDS
            for name in _DURATIONS
            if isinstance(value := field_of(chunk, name), int | float)
        }
        self.server_timings = timings or None
        events: list[Event] = []
        prompt_tokens = _count(field_of(chunk, "prompt_eval_count"))
        output_tokens = _count(field_of(chunk, "eval_count"))
        if prompt_tokens is not None or output_tokens is not None:
            events.append(
                UsageReport(Usage(input_tokens=prompt_tokens, output_tokens=output_tokens))
            )
        reason = field_of(chunk, "done_reason")
        events.append(Finish(reason if isinstance(reason, str) and reason else "stop"))
        return events
