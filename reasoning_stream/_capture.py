"""What a run captured, independent of what reached the callbacks: ``PipeResult`` and its parts.

The capture records every reasoning and text delta, tool call, usage report and piece of opaque
state whatever the reasoning gate says, so that ``last_result`` is truthful on every exit path.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Literal, TypeAlias

from ._events import ReasoningState, ToolCall, Usage

__all__ = ["Capture", "PipeResult", "Status", "Timings", "merge_attempts", "status_for"]

Status: TypeAlias = Literal[
    "completed", "length", "cancelled_before_answer", "cancelled_after_partial_answer", "error"
]
"""How a run ended."""

_clock = time.perf_counter


@dataclass(frozen=True, slots=True)
class Timings:
    """Seconds from a monotonic clock, measured from when the request was sent.

    A provider pipe starts the clock when it sends its request, after importing its SDK and
    building its client (the first run's import is not the model's latency); a pipe that sends
    nothing (``ScriptedPipe``, a custom pipe) from the start of the run's attempt.
    """

    time_to_first_reasoning: float | None = None
    time_to_first_text: float | None = None
    reasoning_duration: float = 0.0
    """Each segment's first chunk to its close, summed."""
    total: float = 0.0


@dataclass(frozen=True, slots=True)
class PipeResult:
    """Everything one run captured, whatever the streaming flag and however the run ended."""

    text: str = ""
    model_reasoning: str = ""
    """The non-empty reasoning segments joined with ``"\\n"``, untrimmed."""
    reasoning_segments: tuple[str, ...] = ()
    reasoning_state: tuple[ReasoningState, ...] = ()
    """Opaque provider state (signatures, encrypted and redacted reasoning), in stream order."""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    timings: Timings = field(default_factory=Timings)
    status: Status = "completed"
    finish_reason: str | None = None
    source: str | None = None
    """The name of the pipe that produced it."""
    provider: str | None = None
    model: str | None = None
    endpoint: str | None = None
    response_id: str | None = None
    response_model: str | None = None
    """The model that answered, as the response names it (``o3`` answers as ``o3-2025-04-16``)."""
    service_tier: str | None = None
    """The service tier the response says it ran on (OpenAI), when it says one."""
    system_fingerprint: str | None = None
    """The backend configuration's fingerprint (OpenAI Chat Completions), when sent."""
    error: BaseException | None = field(default=None, repr=False, compare=False)

    @property
    def cost(self) -> Decimal | None:
        """What the run cost in US dollars, from the ``genai-prices`` table (extra ``prices``).

        Priced from ``usage``: input tokens (cached ones at the cache rates) and output tokens,
        reasoning counted once, inside the output (see ``Usage``). ``None`` when the price is
        unknown: ``genai-prices`` not installed, a model or provider it does not know (local
        models), or no usage reported. Never an error.
        """
        from ._cost import usd

        return usd(self.usage, self.provider, self.model, self.endpoint)

    @property
    def reasoning_exhausted(self) -> bool:
        """The model spent its whole output budget thinking: a length stop with no answer.

        ``True`` when ``status`` is ``"length"``, there is no answer (no text but whitespace,
        no tool call) and there was reasoning: reasoning text, opaque reasoning state, or
        reasoning tokens in ``usage`` (models whose reasoning is hidden). The reply a user sees
        is then empty; raise the output limit, lower the effort (``reasoning=``), or let the
        pipe retry with a lower effort (``set_exhaustion_retry``).
        """
        if self.status != "length" or self.text.strip() or self.tool_calls:
            return False
        return bool(
            self.model_reasoning or self.reasoning_state or (self.usage.reasoning_tokens or 0) > 0
        )

    @property
    def message(self) -> dict[str, Any]:
        """The assistant message for the next request's history.

        ``"thinking"`` is inert metadata: the provider pipes never send it back as content.
        """
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message() for call in self.tool_calls]
        if self.model_reasoning:
            message["thinking"] = self.model_reasoning
        return message


class Capture:
    """What one run has seen so far: deltas, segments, state, usage and the clock readings."""

    __slots__ = (
        "current",
        "details",
        "finish_reason",
        "first_reasoning",
        "first_text",
        "held",
        "held_reasoning",
        "reasoning_duration",
        "response_id",
        "segment_started",
        "segments",
        "started",
        "states",
        "text",
        "tool_calls",
        "usage",
    )

    def __init__(self) -> None:
        self.started = _clock()
        self.text: list[str] = []
        # A high surrogate that ended the last delta, held for the next one (see _unicode);
        # held_reasoning: whether it came in reasoning (else in text).
        self.held = ""
        self.held_reasoning = False
        self.segments: list[str] = []
        # The open segment's deltas; None while no segment is open.
        self.current: list[str] | None = None
        self.states: list[ReasoningState] = []
        self.tool_calls: list[ToolCall] = []
        self.usage = Usage()
        self.finish_reason: str | None = None
        self.response_id: str | None = None
        self.details: dict[str, str] = {}
        self.first_reasoning: float | None = None
        self.first_text: float | None = None
        self.segment_started = 0.0
        self.reasoning_duration = 0.0

    def restart_clock(self) -> None:
        """Measure from now: the request is being sent (only while nothing was captured)."""
        if self.first_reasoning is None and self.first_text is None and self.current is None:
            self.started = _clock()

    def open_segment(self) -> list[str]:
        """Start a reasoning segment (the caller checked that none is open); return its deltas."""
        now = _clock()
        current: list[str] = []
        self.current = current
        self.segment_started = now
        if self.first_reasoning is None:
            self.first_reasoning = now - self.started
        return current

    def close_segment(self) -> bool:
        """Close the open segment; ``False`` when there was none."""
        current = self.current
        if current is None:
            return False
        self.current = None
        self.reasoning_duration += _clock() - self.segment_started
        self.segments.append("".join(current))
        return True

    def add_text(self, delta: str) -> None:
        """Record answer text (the caller closed any open segment first)."""
        if self.first_text is None:
            self.first_text = _clock() - self.started
        self.text.append(delta)

    def result(
        self,
        status: Status,
        error: BaseException | None,
        *,
        source: str,
        provider: str | None,
        model: str | None,
        endpoint: str | None,
    ) -> PipeResult:
        """The frozen ``PipeResult`` of what was captured."""
        segments = tuple(self.segments)
        return PipeResult(
            text="".join(self.text),
            model_reasoning="\n".join(s for s in segments if s),
            reasoning_segments=segments,
            reasoning_state=tuple(self.states),
            tool_calls=tuple(self.tool_calls),
            usage=self.usage,
            timings=Timings(
                time_to_first_reasoning=self.first_reasoning,
                time_to_first_text=self.first_text,
                reasoning_duration=self.reasoning_duration,
                total=_clock() - self.started,
            ),
            status=status,
            finish_reason=self.finish_reason,
            source=source,
            provider=provider,
            model=model,
            endpoint=endpoint,
            response_id=self.response_id,
            response_model=self.details.get("response_model"),
            service_tier=self.details.get("service_tier"),
            system_fingerprint=self.details.get("system_fingerprint"),
            error=error,
        )


def merge_attempts(earlier: Sequence[PipeResult], final: PipeResult) -> PipeResult:
    """One result for a run that asked more than once after exhausted reasoning.

    Every attempt's reasoning reached the channel, so the result keeps every segment (the
    channel law: ``split`` of the channel gives ``model_reasoning`` and ``text``). The answer,
    opaque state, tool calls, status and response id are the final attempt's: earlier
    responses are discarded, and their state must not go back to the provider. Token counts
    add up over the attempts (each was billed); timings run from the first attempt's start.
    """
    if not earlier:
        return final
    segments = tuple(s for result in earlier for s in result.reasoning_segments)
    segments += final.reasoning_segments
    attempts = (*earlier, final)
    offset = sum(result.timings.total for result in earlier)
    first_reasoning: float | None = None
    before = 0.0
    for result in attempts:
        at = result.timings.time_to_first_reasoning
        if at is not None:
            first_reasoning = before + at
            break
        before += result.timings.total
    text_at = final.timings.time_to_first_text
    return replace(
        final,
        model_reasoning="\n".join(s for s in segments if s),
        reasoning_segments=segments,
        usage=_added([result.usage for result in attempts]),
        timings=Timings(
            time_to_first_reasoning=first_reasoning,
            time_to_first_text=None if text_at is None else offset + text_at,
            reasoning_duration=sum(r.timings.reasoning_duration for r in attempts),
            total=offset + final.timings.total,
        ),
    )


def _added(reports: Sequence[Usage]) -> Usage:
    def total(values: list[int | None]) -> int | None:
        known = [value for value in values if value is not None]
        return sum(known) if known else None

    return Usage(
        input_tokens=total([u.input_tokens for u in reports]),
        output_tokens=total([u.output_tokens for u in reports]),
        reasoning_tokens=total([u.reasoning_tokens for u in reports]),
        cache_read_tokens=total([u.cache_read_tokens for u in reports]),
        cache_write_tokens=total([u.cache_write_tokens for u in reports]),
    )


def status_for(error: BaseException | None, capture: Capture) -> Status:
    """The status of a run that ended with ``error`` (``None`` for a normal end)."""
    if error is None:
        return "length" if capture.finish_reason == "length" else "completed"
    if isinstance(error, Exception):
        return "error"
    # Cancellation (anyio's cancel exception, KeyboardInterrupt, SystemExit).
    return "cancelled_after_partial_answer" if capture.text else "cancelled_before_answer"
