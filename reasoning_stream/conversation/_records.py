"""What a conversation keeps beside its messages: a record per turn, and the run under way.

A :class:`TurnRecord` holds what a provider handed over beside an assistant turn's visible text
(opaque states, the response id, how it finished, its token usage and price), scoped to the
provider, model and endpoint that made it; :func:`ledger_entries` reads the usage back as one
:class:`LedgerEntry` per model call. A :class:`GenerationRecord` is the run being generated,
persisted so a crash or a cancellation leaves a trace. Both round-trip through JSON, bytes
payloads included.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Literal, Self, TypeAlias, get_args

from .._capture import PipeResult, Status
from .._events import ReasoningState, Usage
from .._exceptions import UsageError
from ._scope import record_refusal

__all__ = [
    "GenerationRecord",
    "GenerationStatus",
    "LedgerEntry",
    "TurnRecord",
    "ledger_entries",
    "plain_copy",
    "saved_turns",
]

GenerationStatus: TypeAlias = Literal[
    "in_progress",
    "completed",
    "length",
    "cancelled_before_answer",
    "cancelled_after_partial_answer",
    "error",
]
"""A run's status as persisted: a result's status, or ``"in_progress"`` while it runs."""


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """Provider execution metadata for one assistant turn, kept beside its message.

    ``provider``, ``model`` and ``endpoint`` are the scope: the turn's ``states`` and its
    readable reasoning go back only to a pipe with the same three values (or a model that
    reads this one's state). A state bound to an account or to the request prefix carries
    that binding in its ``extra`` (``"account"``, ``"prefix"``), so records saved before
    bindings existed load as they were. ``reasoned`` says
    whether the run produced readable reasoning (``None``: not known, a record written before
    the field existed), so a tool-call turn that truly reasoned nothing can be told from one
    whose reasoning was edited away. ``envelope_problem`` is set on a turn rebuilt from a
    client's history whose sealed envelope did not open (tampered, foreign key, missing): why,
    in words; preflight reports it as ``envelope_invalid`` and the turn goes back as plain text.
    whose reasoning was edited away. ``usage`` and ``cost`` are what the run reported and what
    it cost in USD when it was added (``None``: a record written before they were kept, or
    a price ``genai-prices`` does not know); ``Conversation.ledger()`` reads them.
    """

    provider: str | None
    model: str | None
    endpoint: str | None = None
    states: tuple[ReasoningState, ...] = ()
    response_id: str | None = None
    status: Status = "completed"
    finish_reason: str | None = None
    reasoned: bool | None = None
    envelope_problem: str | None = None
    usage: Usage | None = None
    cost: Decimal | None = None

    @classmethod
    def from_result(cls, result: PipeResult) -> TurnRecord:
        """The record of the run that produced ``result``."""
        return cls(
            provider=result.provider,
            model=result.model,
            endpoint=result.endpoint,
            states=_persistable(result.reasoning_state),
            response_id=result.response_id,
            status=result.status,
            finish_reason=result.finish_reason,
            reasoned=bool(result.model_reasoning),
            usage=result.usage,
            # Priced now: a later change of the price table does not rewrite what was spent.
            cost=result.cost,
        )

    def made_by(self, pipe: object) -> bool:
        """Whether ``pipe`` speaks to the provider and endpoint that made this turn, with its
        model or one whose profile reads it (``reads_from``). Endpoints compare canonically
        (case, default port and trailing slash aside); one not recorded is the provider's
        default."""
        return record_refusal(self, pipe) is None

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (bytes payloads base64 encoded)."""
        data = {
            "provider": self.provider,
            "model": self.model,
            "endpoint": self.endpoint,
            "states": [_state_to_json(state) for state in self.states],
            "response_id": self.response_id,
            "status": self.status,
            "finish_reason": self.finish_reason,
            "reasoned": self.reasoned,
            "usage": None if self.usage is None else _usage_to_json(self.usage),
            # A string keeps the Decimal exact through JSON.
            "cost": None if self.cost is None else str(self.cost),
        }
        if self.envelope_problem is not None:
            data["envelope_problem"] = self.envelope_problem
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TurnRecord:
        """Rebuild a record written by :meth:`to_json`."""
        return cls(
            provider=data.get("provider"),
            model=data.get("model"),
            endpoint=data.get("endpoint"),
            states=tuple(_state_from_json(state) for state in data.get("states", ())),
            response_id=data.get("response_id"),
            status=data.get("status", "completed"),
            finish_reason=data.get("finish_reason"),
            reasoned=data.get("reasoned"),
            envelope_problem=data.get("envelope_problem"),
            usage=_usage_from_json(data.get("usage")),
            cost=_decimal_from_json(data.get("cost"), "cost"),
        )


_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)


def _usage_to_json(usage: Usage) -> dict[str, int]:
    return {name: value for name in _USAGE_FIELDS if (value := getattr(usage, name)) is not None}


def _usage_from_json(data: Any) -> Usage | None:
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise UsageError(f"a saved turn's usage is a JSON object of token counts, got {data!r}")
    counts: dict[str, int | None] = {}
    for name in _USAGE_FIELDS:
        value = data.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise UsageError(f"a saved turn's usage {name} is a token count, got {value!r}")
        counts[name] = value
    return Usage(**counts)


def _decimal_from_json(value: Any, what: str) -> Decimal | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"a saved {what} is a decimal string such as '0.0012', got {value!r}")
    try:
        return Decimal(value)
    except ArithmeticError as error:
        raise UsageError(f"a saved {what} is not a decimal number: {value!r}") from error


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """What one model call of a conversation used and cost (``Conversation.ledger()``).

    ``turn`` counts the user messages answered, from 0 (the runs answering one user message
    are one turn); ``step`` is the model call's place in that turn's tool loop, 0 for a plain
    answer. Token counts are the provider's as :class:`~reasoning_stream.Usage` means them:
    ``output_tokens`` includes ``reasoning_tokens`` (thoughts reported apart are added in), and
    ``cached_tokens`` is the part of ``input_tokens`` read from the prompt cache. ``None``:
    not reported. ``cost`` is in USD from ``genai-prices``, ``None`` when unknown.
    """

    turn: int
    step: int
    model: str | None
    input_tokens: int | None
    cached_tokens: int | None
    output_tokens: int | None
    reasoning_tokens: int | None
    cost: Decimal | None


def ledger_entries(
    messages: Sequence[Mapping[str, Any]], records: Sequence[TurnRecord | None]
) -> list[LedgerEntry]:
    """One :class:`LedgerEntry` per assistant turn whose record kept its usage, in order."""
    entries: list[LedgerEntry] = []
    users = 0
    step = 0
    for message, record in zip(messages, records, strict=True):
        role = message.get("role")
        if role == "user":
            users += 1
            step = 0
            continue
        if role != "assistant":
            continue
        if record is not None and record.usage is not None:
            usage = record.usage
            entries.append(
                LedgerEntry(
                    turn=max(users - 1, 0),
                    step=step,
                    model=record.model,
                    input_tokens=usage.input_tokens,
                    cached_tokens=usage.cache_read_tokens,
                    output_tokens=usage.output_tokens,
                    reasoning_tokens=usage.reasoning_tokens,
                    cost=record.cost,
                )
            )
        step += 1
    return entries


def saved_turns(
    data: Mapping[str, Any], format: str, version: int
) -> list[tuple[Mapping[str, Any], TurnRecord | None]]:
    """The messages and records of a saved conversation, checked: ``UsageError`` names what
    is wrong (another format, another version, a record count that is not the message count)."""
    if data.get("format", format) != format:
        raise UsageError(f"not a saved conversation (format {data.get('format')!r})")
    found = data.get("version", version)
    if found != version:
        raise UsageError(f"saved conversation has version {found}; this library reads {version}")
    messages: Sequence[Mapping[str, Any]] = data.get("messages", ())
    records: Sequence[Mapping[str, Any] | None] | None = data.get("records")
    if records is None:
        records = [None] * len(messages)
    if len(records) != len(messages):
        raise UsageError(
            f"saved conversation is inconsistent: {len(messages)} messages but "
            f"{len(records)} records"
        )
    return [
        (message, None if record is None else TurnRecord.from_json(record))
        for message, record in zip(messages, records, strict=True)
    ]


def _persistable(states: Iterable[ReasoningState]) -> tuple[ReasoningState, ...]:
    """The states as they will read back from JSON.

    A state whose ``extra`` holds tuples or other mappings would reload as lists and dicts and
    no longer compare equal; such a state is replaced by its plain twin up front, so a saved
    conversation equals the live one. Provider states are plain already and kept as they are.
    """
    kept: list[ReasoningState] = []
    for state in states:
        plain = plain_copy(state.extra)
        if type(state.extra) is not dict or plain != state.extra:
            state = replace(state, extra=plain)
        kept.append(state)
    return tuple(kept)


_BYTES_KEY = "__base64__"


def _state_to_json(state: ReasoningState) -> dict[str, Any]:
    """``state.to_json()`` with bytes anywhere in ``extra`` as ``{"__base64__": "..."}``."""
    data = state.to_json()
    data["extra"] = _bytes_out(data["extra"])
    return data


def _state_from_json(data: Mapping[str, Any]) -> ReasoningState:
    """The inverse of :func:`_state_to_json`: the bytes in ``extra`` come back as bytes."""
    return ReasoningState.from_json({**data, "extra": _bytes_in(data.get("extra") or {})})


def _bytes_out(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {_BYTES_KEY: base64.b64encode(value).decode("ascii")}
    if isinstance(value, Mapping):
        return {key: _bytes_out(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_bytes_out(item) for item in value]
    return value


def _bytes_in(value: Any) -> Any:
    if isinstance(value, Mapping):
        if len(value) == 1 and isinstance(value.get(_BYTES_KEY), str):
            return base64.b64decode(value[_BYTES_KEY])
        return {key: _bytes_in(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_bytes_in(item) for item in value]
    return value


@dataclass(slots=True)
class GenerationRecord:
    """A turn being generated, persisted with the conversation so a crash leaves a trace.

    ``Conversation.begin_generation(pipe)`` creates it as ``"in_progress"``;
    ``Conversation.add(result)`` finishes it. When a run fails or is cancelled, call
    :meth:`update_from` with ``error.result`` or ``pipe.last_result``: after reloading, the
    status tells a finished turn from a cancelled one (``"cancelled_*"``), a failed one
    (``"error"``) or one whose process died mid-run (still ``"in_progress"``), and the partial
    text, reasoning and tool calls done are there to resume from.
    """

    provider: str | None
    model: str | None
    endpoint: str | None = None
    started_at: float = field(default_factory=time.time)
    """Wall-clock seconds since the epoch: it must mean the same after a restart."""
    status: GenerationStatus = "in_progress"
    request_id: str | None = None
    response_id: str | None = None
    partial_text: str = ""
    partial_reasoning: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """Tool calls the model completed before the run ended, as chat-completions messages."""
    reasoning_state: tuple[ReasoningState, ...] = ()
    finish_reason: str | None = None
    error: str | None = None
    updated_at: float | None = None

    @classmethod
    def for_pipe(cls, pipe: object, *, request_id: str | None = None) -> GenerationRecord:
        """A fresh ``"in_progress"`` record for a run of ``pipe``."""
        return cls(
            provider=getattr(pipe, "provider", None),
            model=getattr(pipe, "model", None),
            endpoint=getattr(pipe, "endpoint", None),
            request_id=request_id,
        )

    @property
    def finished(self) -> bool:
        """Whether the run ended normally (``"completed"`` or a ``"length"`` stop)."""
        return self.status in ("completed", "length")

    def update_from(self, result: PipeResult | None) -> Self:
        """Copy what ``result`` captured (a finished, failed or cancelled run) into the record."""
        if result is None:
            return self
        self.status = result.status
        if result.provider is not None:
            self.provider = result.provider
        if result.model is not None:
            self.model = result.model
        if result.endpoint is not None:
            self.endpoint = result.endpoint
        self.response_id = result.response_id or self.response_id
        self.partial_text = result.text
        self.partial_reasoning = result.model_reasoning
        self.tool_calls = [call.to_message() for call in result.tool_calls]
        self.reasoning_state = _persistable(result.reasoning_state)
        self.finish_reason = result.finish_reason
        self.error = _describe(result.error)
        self.updated_at = time.time()
        return self

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (bytes payloads base64 encoded)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "endpoint": self.endpoint,
            "started_at": self.started_at,
            "status": self.status,
            "request_id": self.request_id,
            "response_id": self.response_id,
            "partial_text": self.partial_text,
            "partial_reasoning": self.partial_reasoning,
            "tool_calls": plain_copy(self.tool_calls),
            "reasoning_state": [_state_to_json(state) for state in self.reasoning_state],
            "finish_reason": self.finish_reason,
            "error": self.error,
            "updated_at": self.updated_at,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GenerationRecord:
        """Rebuild a record written by :meth:`to_json`."""
        status = data.get("status", "in_progress")
        if status not in get_args(GenerationStatus):
            raise UsageError(f"unknown generation status {status!r} in saved conversation")
        return cls(
            provider=data.get("provider"),
            model=data.get("model"),
            endpoint=data.get("endpoint"),
            started_at=data["started_at"],
            status=status,
            request_id=data.get("request_id"),
            response_id=data.get("response_id"),
            partial_text=data.get("partial_text", ""),
            partial_reasoning=data.get("partial_reasoning", ""),
            tool_calls=plain_copy(list(data.get("tool_calls", ()))),
            reasoning_state=tuple(
                _state_from_json(state) for state in data.get("reasoning_state", ())
            ),
            finish_reason=data.get("finish_reason"),
            error=data.get("error"),
            updated_at=data.get("updated_at"),
        )


def _describe(error: BaseException | None) -> str | None:
    if error is None:
        return None
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def plain_copy(value: Any) -> Any:
    """A private copy of JSON-like data: mappings become dicts, tuples and lists lists.

    Copying on the way in and out keeps callers from mutating the history behind our back,
    and normalising tuples makes a saved and reloaded history compare equal to the original.
    """
    if isinstance(value, Mapping):
        return {key: plain_copy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain_copy(item) for item in value]
    return value
