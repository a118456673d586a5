"""The one event vocabulary shared by the scanner, the pipes and the providers.

Every event is a frozen dataclass with a class-level ``kind`` literal, so a ``match`` statement
or a ``kind ==`` test can tell them apart, and a ``source`` naming the pipe that produced it.
``source`` is left out of ``==`` so events from different pipes compare by content alone.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, TypeAlias

from ._endpoints import endpoint_of, same_endpoint

__all__ = [
    "ACCOUNT_KEY",
    "PREFIX_KEY",
    "Event",
    "Finish",
    "OpaqueState",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningHidden",
    "ReasoningStart",
    "ReasoningState",
    "TextDelta",
    "ToolCall",
    "ToolResult",
    "Usage",
    "UsageReport",
]


def _event_repr(self: Any) -> str:
    """Fields in order; ``source`` only when set, so plain events read as they are written."""
    parts = []
    for item in fields(self):
        value = getattr(self, item.name)
        if item.name == "source" and value is None:
            continue
        parts.append(f"{item.name}={value!r}")
    return f"{type(self).__name__}({', '.join(parts)})"


@dataclass(frozen=True, slots=True)
class ReasoningStart:
    """A reasoning segment opens."""

    __repr__ = _event_repr

    source: str | None = field(default=None, compare=False)
    kind: ClassVar[Literal["reasoning_start"]] = "reasoning_start"


@dataclass(frozen=True, slots=True, init=False)
class ReasoningDelta:
    """A piece of the model's reasoning."""

    __repr__ = _event_repr

    text: str
    source: str | None = field(default=None, compare=False)
    kind: ClassVar[Literal["reasoning_delta"]] = "reasoning_delta"

    def __init__(self, text: str, source: str | None = None) -> None:
        _set_reasoning_text(self, text)
        _set_reasoning_source(self, source)


@dataclass(frozen=True, slots=True)
class ReasoningEnd:
    """The open reasoning segment closes."""

    __repr__ = _event_repr

    source: str | None = field(default=None, compare=False)
    kind: ClassVar[Literal["reasoning_end"]] = "reasoning_end"


@dataclass(frozen=True, slots=True, init=False)
class TextDelta:
    """A piece of the answer."""

    __repr__ = _event_repr

    text: str
    source: str | None = field(default=None, compare=False)
    kind: ClassVar[Literal["text_delta"]] = "text_delta"

    def __init__(self, text: str, source: str | None = None) -> None:
        _set_text_text(self, text)
        _set_text_source(self, source)


# Deltas are the hot path of every stream. A frozen dataclass's generated __init__ goes through
# object.__setattr__ for each field; writing the slots through their descriptors keeps the
# instances just as frozen at two thirds of the cost.
def _slot_setter(cls: type, name: str) -> Callable[[object, object], None]:
    setter: Callable[[object, object], None] = cls.__dict__[name].__set__
    return setter


_set_reasoning_text = _slot_setter(ReasoningDelta, "text")
_set_reasoning_source = _slot_setter(ReasoningDelta, "source")
_set_text_text = _slot_setter(TextDelta, "text")
_set_text_source = _slot_setter(TextDelta, "source")


@dataclass(frozen=True, slots=True)
class Finish:
    """The stream ended with a stop reason: ``"stop"``, ``"length"``, ``"tool_calls"``, ..."""

    __repr__ = _event_repr

    reason: str = "stop"
    source: str | None = field(default=None, compare=False)
    kind: ClassVar[Literal["finish"]] = "finish"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete tool call: ``arguments`` is the JSON text the model wrote."""

    __repr__ = _event_repr

    id: str
    name: str
    arguments: str = ""
    source: str | None = field(default=None, compare=False)
    kind: ClassVar[Literal["tool_call"]] = "tool_call"

    def to_message(self) -> dict[str, Any]:
        """The call in the OpenAI message shape, the lingua franca of chat histories."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


TOOL_ERROR_KEY = "is_error"
"""The inert key a failed tool call's ``tool`` message carries (``ToolResult.to_message``)."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool call's result: what the model reads back, and how the call went.

    ``id`` and ``name`` are the :class:`ToolCall`'s; ``content`` is the text sent back to the
    model (a tool's return value as text, or the reason it failed); ``is_error`` is ``True``
    when the tool raised, the name was unknown or the arguments did not fit the tool's schema;
    ``duration`` is seconds the tool ran.
    """

    __repr__ = _event_repr

    id: str
    name: str
    content: str
    is_error: bool = False
    duration: float = 0.0
    source: str | None = field(default=None, compare=False)
    kind: ClassVar[Literal["tool_result"]] = "tool_result"

    def to_message(self) -> dict[str, Any]:
        """The result in the OpenAI message shape: a ``tool`` message answering the call.

        A failed call's message carries the inert ``is_error: True``: pipes never send the
        key itself, but give it to the APIs that have an error form for a tool result
        (Anthropic ``is_error``, Bedrock Converse ``status``, Gemini's ``error`` key).
        """
        message: dict[str, Any] = {"role": "tool", "tool_call_id": self.id, "content": self.content}
        if self.is_error:
            message[TOOL_ERROR_KEY] = True
        return message


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts as the provider reported them; ``None`` where it did not.

    The counts mean the same for every provider (the translators add up what a provider
    reports apart):

    * ``input_tokens``: the whole prompt the model read, cached parts included.
    * ``output_tokens``: everything the model wrote, reasoning included (Gemini's
      ``thoughtsTokenCount`` is added to its answer tokens).
    * ``reasoning_tokens``: the part of ``output_tokens`` spent reasoning.
    * ``cache_read_tokens``: the part of ``input_tokens`` read from the provider's prompt
      cache (OpenAI ``cached_tokens``, Anthropic ``cache_read_input_tokens``, Gemini
      ``cachedContentTokenCount``, Bedrock ``cacheReadInputTokens``).
    * ``cache_write_tokens``: the part of ``input_tokens`` written to the cache (Anthropic
      ``cache_creation_input_tokens``, Bedrock ``cacheWriteInputTokens``).
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None

    def merged(self, other: Usage) -> Usage:
        """Later reports win field by field; a field the later report leaves out is kept."""
        return Usage(
            input_tokens=_prefer(other.input_tokens, self.input_tokens),
            output_tokens=_prefer(other.output_tokens, self.output_tokens),
            reasoning_tokens=_prefer(other.reasoning_tokens, self.reasoning_tokens),
            cache_read_tokens=_prefer(other.cache_read_tokens, self.cache_read_tokens),
            cache_write_tokens=_prefer(other.cache_write_tokens, self.cache_write_tokens),
        )


def _prefer(new: int | None, old: int | None) -> int | None:
    return old if new is None else new


@dataclass(frozen=True, slots=True)
class UsageReport:
    """The provider reported token usage (possibly partial; reports merge)."""

    __repr__ = _event_repr

    usage: Usage
    source: str | None = field(default=None, compare=False)
    kind: ClassVar[Literal["usage"]] = "usage"


ACCOUNT_KEY = "account"
"""``ReasoningState.extra`` key naming the account an account-bound state was made under (a
label or a key's fingerprint, never the key): such a state goes back only under that account."""
PREFIX_KEY = "prefix"
"""``ReasoningState.extra`` key holding the digest of the request prefix (system, tools and the
earlier messages) a prefix-bound state was made after: it is valid only while that holds."""


def _reads(pipe: object, model: str, provider: str) -> bool:
    """Whether ``pipe``'s model profile reads state ``model`` made (its ``reads_from``)."""
    reads = getattr(getattr(pipe, "profile", None), "reads", None)
    return bool(reads(model, provider)) if callable(reads) else False


@dataclass(frozen=True, slots=True)
class ReasoningState:
    """Opaque provider reasoning state: a signature, encrypted or redacted reasoning.

    It is kept byte for byte, never shown as text, and scoped to the provider, model and
    endpoint that produced it: only that provider and model may receive it back. ``block``
    names the reasoning block it belongs to (an index or an item id). ``repr()`` never shows
    the payload, so logs and tracebacks cannot leak it.
    """

    provider: str
    model: str
    kind: str
    payload: str | bytes
    block: int | str | None = None
    endpoint: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (
            f"ReasoningState(provider={self.provider!r}, model={self.model!r}, "
            f"kind={self.kind!r}, block={self.block!r}, payload=<{len(self.payload)} "
            f"{'bytes' if isinstance(self.payload, bytes) else 'chars'} hidden>)"
        )

    def may_go_to(self, pipe: object, *, check_endpoint: bool = True) -> bool:
        """Whether ``pipe`` may receive this state back: the one rule, used everywhere.

        Only the provider that made the state takes it back, and only its model or a model
        whose profile reads this one's state (``pipe.profile.reads(model)``, Fable 5.1 reading
        Opus 5 thinking), only at the endpoint that made it (compared canonically: case,
        default port and trailing slash aside; a pipe without one is at its provider's
        default, ``pipe.api_url()``) and, for a state bound to an account, only under that
        account (``pipe.account``). A state with no endpoint recorded is not held to one.
        ``pipe`` is anything with ``provider``, ``model`` and ``endpoint`` attributes. Request
        builders pass ``check_endpoint=False``: the history they are given was scoped to the
        endpoint already (a ``Conversation`` does it), and a caller who builds history turns
        by hand decides where they go.

        >>> state = ReasoningState("anthropic", "claude-x", "signature", "sig")
        >>> class Target:
        ...     provider, model, endpoint = "anthropic", "claude-x", None
        >>> state.may_go_to(Target())
        True
        """
        return self.refusal(pipe, check_endpoint=check_endpoint) is None

    def refusal(self, pipe: object, *, check_endpoint: bool = True) -> str | None:
        """Why ``pipe`` may not receive this state: ``"provider"``, ``"model"``,
        ``"endpoint"`` or ``"account"``; ``None`` when it may (see :meth:`may_go_to`).

        >>> ReasoningState("anthropic", "claude-x", "signature", "sig").refusal(object())
        'provider'
        """
        if self.provider != getattr(pipe, "provider", None):
            return "provider"
        if self.model != getattr(pipe, "model", None) and not _reads(
            pipe, self.model, self.provider
        ):
            return "model"
        if ACCOUNT_KEY in self.extra and self.extra[ACCOUNT_KEY] != getattr(pipe, "account", None):
            return "account"
        if self.endpoint is None or not check_endpoint:
            return None
        return None if same_endpoint(self.endpoint, endpoint_of(pipe)) else "endpoint"

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict; bytes payloads are base64 encoded."""
        is_bytes = isinstance(self.payload, bytes)
        payload = (
            base64.b64encode(self.payload).decode("ascii")
            if isinstance(self.payload, bytes)
            else self.payload
        )
        return {
            "provider": self.provider,
            "model": self.model,
            "kind": self.kind,
            "payload": payload,
            "payload_is_bytes": is_bytes,
            "block": self.block,
            "endpoint": self.endpoint,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReasoningState:
        """Rebuild a state written by :meth:`to_json`."""
        payload = data["payload"]
        if data.get("payload_is_bytes"):
            payload = base64.b64decode(payload)
        return cls(
            provider=data["provider"],
            model=data["model"],
            kind=data["kind"],
            payload=payload,
            block=data.get("block"),
            endpoint=data.get("endpoint"),
            extra=dict(data.get("extra") or {}),
        )


@dataclass(frozen=True, slots=True)
class OpaqueState:
    """The provider handed over opaque reasoning state; it lands on the result, not the channel."""

    __repr__ = _event_repr

    state: ReasoningState
    source: str | None = field(default=None, compare=False)
    kind: ClassVar[Literal["opaque_state"]] = "opaque_state"


@dataclass(frozen=True, slots=True)
class ReasoningHidden:
    """The model reasoned, but the provider kept the reasoning hidden (a signature or an
    encrypted payload only): no markers reach the channel, and callbacks get this instead, so
    a UI can say "thought for 4 s".

    ``duration`` is seconds from the hidden block's start to its stop; ``tokens`` is the
    reasoning token count when the provider reports one, else ``None``.
    """

    __repr__ = _event_repr

    duration: float
    tokens: int | None = None
    source: str | None = field(default=None, compare=False)
    kind: ClassVar[Literal["reasoning_hidden"]] = "reasoning_hidden"


Event: TypeAlias = (
    ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | TextDelta
    | Finish
    | ToolCall
    | ToolResult
    | UsageReport
    | OpaqueState
    | ReasoningHidden
)
