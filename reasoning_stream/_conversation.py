"""``Conversation``: the history the application owns, and what each provider may get back.

The history is a list of plain OpenAI-style message dicts: the same shape whichever provider
answered, easy to show, store and edit. What a provider handed over beside the visible text
(signatures, encrypted and redacted reasoning, the response id) is kept next to each assistant
turn as a :class:`TurnRecord`, scoped to the provider, model and endpoint that made it, and
never inside a message.

``turns_for(pipe)`` decides, per request, what goes back: a :class:`PassbackPolicy` says which
turns carry their opaque state and their readable reasoning, and state made by any other
provider, model or endpoint is never replayed. Provider pipes call it through
``history_turns()``, so ``pipe.run(conversation)`` is all a caller writes.

>>> conversation = Conversation(system="Be brief.").add_user("Hi")
>>> [turn.message["role"] for turn in conversation.turns_for(object())]
['system', 'user']
"""

from __future__ import annotations

import base64
import json
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Self, TypeAlias, get_args, overload

from ._events import ReasoningState
from ._exceptions import UsageError
from ._history import HistoryTurn
from ._messages import INERT_MESSAGE_KEYS, strip_inert_keys
from ._pipe import PipeResult, Status
from ._preflight import PassbackProblem, PreflightTurn

__all__ = [
    "Conversation",
    "GenerationRecord",
    "GenerationStatus",
    "PassbackPolicy",
    "PassbackProblem",
    "ReasoningPassback",
    "StatePassback",
    "TurnRecord",
]

StatePassback: TypeAlias = Literal["never", "tool_loop", "always"]
"""Which assistant turns get their opaque state back: none, the current tool loop, all."""

ReasoningPassback: TypeAlias = Literal["never", "tool_calls", "tool_loop", "always"]
"""Which assistant turns get their readable reasoning back: none, tool-call turns, the turns
of the current tool loop (after the last user message), all."""

GenerationStatus: TypeAlias = Literal[
    "in_progress",
    "completed",
    "length",
    "cancelled_before_answer",
    "cancelled_after_partial_answer",
    "error",
]
"""A run's status as persisted: a result's status, or ``"in_progress"`` while it runs."""

_FORMAT = "reasoning-stream.conversation"
_VERSION = 1


# ------------------------------------------------------------------------------ policy


@dataclass(frozen=True, slots=True)
class PassbackPolicy:
    """What a provider needs back from earlier assistant turns on the next request.

    Args:
        states: ``"never"``; ``"tool_loop"``: the assistant turns after the last user message
            (Anthropic's signed thinking during tool use); ``"always"``: every assistant turn
            (Responses reasoning items, Gemini thought signatures).
        reasoning: the readable reasoning (the message's ``"thinking"``) as
            ``HistoryTurn.reasoning``: ``"never"``; ``"tool_calls"``: on assistant turns
            that called tools (DeepSeek's ``reasoning_content``); ``"tool_loop"``: on the
            assistant turns of the current tool loop (Ollama's ``thinking``); ``"always"``.
        kinds: the ``ReasoningState.kind`` values the provider takes back; ``None`` for all.

    Either way only state and reasoning that the same provider, model and endpoint made are
    given back. A pipe picks its policy by carrying a ``passback`` attribute; without one,
    :meth:`for_pipe` derives it from the pipe's provider id.

    >>> PassbackPolicy.for_provider("anthropic")
    PassbackPolicy(states='tool_loop', reasoning='never', kinds=None)
    """

    states: StatePassback = "never"
    reasoning: ReasoningPassback = "never"
    kinds: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.states not in get_args(StatePassback):
            raise UsageError(
                f"PassbackPolicy.states must be one of {get_args(StatePassback)}, "
                f"got {self.states!r}"
            )
        if self.reasoning not in get_args(ReasoningPassback):
            raise UsageError(
                f"PassbackPolicy.reasoning must be one of {get_args(ReasoningPassback)}, "
                f"got {self.reasoning!r}"
            )
        if self.kinds is not None and not isinstance(self.kinds, frozenset):
            kinds: Iterable[str] = self.kinds
            if isinstance(kinds, str):
                kinds = (kinds,)
            object.__setattr__(self, "kinds", frozenset(kinds))

    @classmethod
    def for_provider(cls, provider: str | None, model: str | None = None) -> PassbackPolicy:
        """The documented needs of a provider API, by the pipe's ``provider`` id.

        The provider's spec says (each provider package defines its policy); an unknown
        provider gets nothing back.

        >>> PassbackPolicy.for_provider("openai-chat", "deepseek-chat").reasoning
        'tool_calls'
        >>> PassbackPolicy.for_provider("ollama")
        PassbackPolicy(states='never', reasoning='tool_loop', kinds=None)
        """
        # The registry is asked at call time: core imports no provider package up front.
        from .providers._spec import spec

        found = spec(provider)
        return cls() if found is None else found.passback(model)

    @classmethod
    def for_pipe(cls, pipe: object) -> PassbackPolicy:
        """``pipe.passback`` when it has one, else the default for its provider and model.

        A pipe's explicit ``send_reasoning_back=True`` or ``False`` (the OpenAI-compatible
        pipes) overrides the default for readable reasoning.
        """
        chosen = getattr(pipe, "passback", None)
        if isinstance(chosen, PassbackPolicy):
            return chosen
        if chosen is not None:
            raise UsageError(
                f"{type(pipe).__name__}.passback must be a PassbackPolicy, "
                f"got {type(chosen).__name__}"
            )
        policy = cls.for_provider(getattr(pipe, "provider", None), getattr(pipe, "model", None))
        send = getattr(pipe, "send_reasoning_back", None)
        if isinstance(send, bool):
            policy = cls(policy.states, "always" if send else "never", policy.kinds)
        return policy


# ------------------------------------------------------------------------ turn records


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """Provider execution metadata for one assistant turn, kept beside its message.

    ``provider``, ``model`` and ``endpoint`` are the scope: the turn's ``states`` and its
    readable reasoning go back only to a pipe with the same three values. ``reasoned`` says
    whether the run produced readable reasoning (``None``: not known, a record written before
    the field existed), so a tool-call turn that truly reasoned nothing can be told from one
    whose reasoning was edited away.
    """

    provider: str | None
    model: str | None
    endpoint: str | None = None
    states: tuple[ReasoningState, ...] = ()
    response_id: str | None = None
    status: Status = "completed"
    finish_reason: str | None = None
    reasoned: bool | None = None

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
        )

    def made_by(self, pipe: object) -> bool:
        """Whether ``pipe`` speaks to the provider, model and endpoint that made this turn."""
        provider = getattr(pipe, "provider", None)
        return (
            provider is not None
            and self.provider == provider
            and self.model == getattr(pipe, "model", None)
            and _same_endpoint(self.endpoint, getattr(pipe, "endpoint", None))
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (bytes payloads base64 encoded)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "endpoint": self.endpoint,
            "states": [_state_to_json(state) for state in self.states],
            "response_id": self.response_id,
            "status": self.status,
            "finish_reason": self.finish_reason,
            "reasoned": self.reasoned,
        }

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
        )


def _persistable(states: Iterable[ReasoningState]) -> tuple[ReasoningState, ...]:
    """The states as they will read back from JSON.

    A state whose ``extra`` holds tuples or other mappings would reload as lists and dicts and
    no longer compare equal; such a state is replaced by its plain twin up front, so a saved
    conversation equals the live one. Provider states are plain already and kept as they are.
    """
    kept: list[ReasoningState] = []
    for state in states:
        plain = _plain(state.extra)
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


def _same_endpoint(made: str | None, asking: str | None) -> bool:
    # A trailing slash is the only spelling difference two clients of one root commonly have.
    if made is None or asking is None:
        return made is asking
    return made.rstrip("/") == asking.rstrip("/")


# ------------------------------------------------------------------- generation record


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
    """Tool calls the model completed before the run ended, in the OpenAI message shape."""
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
            "tool_calls": _plain(self.tool_calls),
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
            tool_calls=_plain(list(data.get("tool_calls", ()))),
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


# ------------------------------------------------------------------------ conversation


def _plain(value: Any) -> Any:
    """A private copy of JSON-like data: mappings become dicts, tuples and lists lists.

    Copying on the way in and out keeps callers from mutating the history behind our back,
    and normalising tuples makes a saved and reloaded history compare equal to the original.
    """
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _spec_of(pipe: object) -> Any:
    # The registry is asked at call time: core imports no provider package up front.
    from .providers._spec import spec

    return spec(getattr(pipe, "provider", None))


def _role(message: Mapping[str, Any]) -> Any:
    return message.get("role")


class Conversation(Sequence[dict[str, Any]]):
    """The canonical chat history, plus each assistant turn's provider state beside it.

    Messages are plain dicts in the OpenAI shape: ``role`` (``system``, ``user``,
    ``assistant``, ``tool``), ``content``, an assistant's ``tool_calls``, a tool result's
    ``tool_call_id``. Inert keys ride along for the application (``thinking`` on assistant
    turns that reasoned, ``provenance`` on framework-injected turns, ``timestamp``) and never
    reach a provider. The ``add_*`` methods append and return the conversation, so they chain;
    :meth:`edit`, :meth:`regenerate` and :meth:`compact` return a new branch and leave this one
    untouched.

    Pass it wherever a pipe takes a prompt: a provider pipe asks :meth:`turns_for` what to
    send; any other pipe reads it as the sequence of messages it is (indexing and iterating
    give copies).

    Args:
        messages: an existing history (plain dicts; copied). Its assistant turns have no
            provider record, so nothing but their visible text is ever sent back.
        system: a system prompt to put first.

    Example::

        conversation = Conversation(system="You are terse.").add_user("Weather in Oslo?")
        result = pipe.run(conversation)
        conversation.add(result)
        for call in result.tool_calls:
            conversation.add_tool_result(call.id, lookup(call))
        conversation.add(pipe.run(conversation))   # signed thinking goes back as required

    ``conversation.run(pipe)`` does the run and the ``add`` in one step, and keeps a
    :class:`GenerationRecord` of a run that fails or is cancelled.
    """

    __slots__ = ("_messages", "_pending", "_records", "_repair")

    def __init__(
        self, messages: Iterable[Mapping[str, Any]] = (), *, system: str | None = None
    ) -> None:
        self._messages: list[dict[str, Any]] = []
        self._records: list[TurnRecord | None] = []
        self._pending: GenerationRecord | None = None
        self._repair = False
        if system is not None:
            self.add_system(system)
        for message in messages:
            self.add_message(message)

    # ------------------------------------------------------------------------- reading

    @property
    def messages(self) -> list[dict[str, Any]]:
        """A copy of the history as plain dicts, inert keys included."""
        return [_plain(message) for message in self._messages]

    def record(self, index: int) -> TurnRecord | None:
        """The provider record of message ``index`` (``None`` unless a run produced it)."""
        return self._records[index]

    @property
    def pending_generation(self) -> GenerationRecord | None:
        """The run begun with :meth:`begin_generation` and not yet added, if any."""
        return self._pending

    def __len__(self) -> int:
        return len(self._messages)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [_plain(message) for message in self._messages[index]]
        plain: dict[str, Any] = _plain(self._messages[index])
        return plain

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Conversation):
            return NotImplemented
        return (
            self._messages == other._messages
            and self._records == other._records
            and self._pending == other._pending
        )

    __hash__ = None  # type: ignore[assignment]  # mutable: equal now, maybe not later

    def __repr__(self) -> str:
        pending = f", pending={self._pending.status!r}" if self._pending else ""
        return f"Conversation({len(self._messages)} messages{pending})"

    # ------------------------------------------------------------------------- writing

    def add_message(self, message: Mapping[str, Any]) -> Self:
        """Append any message dict as it is (copied); it carries no provider record."""
        if not isinstance(message, Mapping):
            raise UsageError(
                f"a message is a dict such as {{'role': 'user', 'content': 'hi'}}, "
                f"got {type(message).__name__}"
            )
        self._append(_plain(message), None)
        return self

    def add_system(self, content: Any, **extra: Any) -> Self:
        """Append a system message; ``extra`` keys (``timestamp``, ...) go on the message."""
        return self.add_message({"role": "system", "content": content, **extra})

    def add_user(self, content: Any, **extra: Any) -> Self:
        """Append a user message; ``extra`` keys (``provenance``, ``timestamp``, ...) too."""
        return self.add_message({"role": "user", "content": content, **extra})

    def add_tool_result(self, tool_call_id: str, content: Any, **extra: Any) -> Self:
        """Append the result of the tool call ``tool_call_id``."""
        return self.add_message(
            {"role": "tool", "tool_call_id": tool_call_id, "content": content, **extra}
        )

    def add(self, result: PipeResult, **extra: Any) -> Self:
        """Append the assistant turn a run produced, and keep its provider state beside it.

        The message is ``result.message`` (``tool_calls`` and the inert ``thinking``
        included) plus ``extra``; the record keeps ``result.reasoning_state`` scoped to the
        result's provider, model and endpoint. A generation begun with
        :meth:`begin_generation` is finished.
        """
        if not isinstance(result, PipeResult):
            raise UsageError(
                f"add() takes a PipeResult, got {type(result).__name__}; "
                "use add_message() for a plain message"
            )
        self._append(_plain({**result.message, **extra}), TurnRecord.from_result(result))
        self._pending = None
        return self

    def _append(self, message: dict[str, Any], record: TurnRecord | None) -> None:
        self._messages.append(message)
        self._records.append(record)

    # ---------------------------------------------------------------------- generations

    def begin_generation(self, pipe: object, *, request_id: str | None = None) -> GenerationRecord:
        """Mark a turn of ``pipe`` in progress; it is saved with the conversation.

        :meth:`add` finishes it. On failure or cancellation, ``record.update_from(...)``
        keeps what the run captured; :meth:`discard_generation` forgets it.
        """
        self._pending = GenerationRecord.for_pipe(pipe, request_id=request_id)
        return self._pending

    def discard_generation(self) -> GenerationRecord | None:
        """Forget the pending generation (after recovering from it); returns it."""
        pending, self._pending = self._pending, None
        return pending

    def run(
        self,
        pipe: Any,
        *,
        repair: bool = False,
        store: Any = None,
        conversation_id: str | None = None,
    ) -> PipeResult:
        """Run ``pipe`` on this history and add its answer, tracking the generation.

        If the run fails or is cancelled the answer is not added: the pending generation
        keeps what it captured, and the error propagates. A history the provider would
        reject (:meth:`preflight`) raises ``UsageError`` before any request, unless
        ``repair=True``: then what the provider's docs say to drop or fill is dropped or
        filled for this request, with a warning saying what.

        With ``store=`` (a ``reasoning_stream.store`` store) and ``conversation_id=`` the
        run is recorded there too: this conversation is saved when it is new or extends the
        stored one (``ConflictError`` when the stored one has turns it lacks), the pending
        generation is stored before the call and the answer appended after it, retried on
        a conflict; afterwards this conversation equals the stored one.
        See ``reasoning_stream.store.run_stored``.
        """
        if store is not None or conversation_id is not None:
            from .store._run import run_with_store

            answer, latest = run_with_store(store, conversation_id, pipe, self, repair=repair)
            self._adopt(latest)
            return answer
        record = self.begin_generation(pipe)
        try:
            result: PipeResult = pipe.run(self.with_repair() if repair else self)
        except BaseException:
            record.update_from(getattr(pipe, "last_result", None))
            raise
        self.add(result)
        return result

    async def arun(
        self,
        pipe: Any,
        *,
        repair: bool = False,
        store: Any = None,
        conversation_id: str | None = None,
    ) -> PipeResult:
        """:meth:`run` on the running event loop, through ``pipe.arun``."""
        if store is not None or conversation_id is not None:
            from .store._run import arun_with_store

            answer, latest = await arun_with_store(
                store, conversation_id, pipe, self, repair=repair
            )
            self._adopt(latest)
            return answer
        record = self.begin_generation(pipe)
        try:
            result: PipeResult = await pipe.arun(self.with_repair() if repair else self)
        except BaseException:
            record.update_from(getattr(pipe, "last_result", None))
            raise
        self.add(result)
        return result

    def _adopt(self, other: Conversation) -> None:
        # After a stored run, become what the store holds (other writers' turns included).
        if other is not self:
            self._messages, self._records = other._messages, other._records
            self._pending = other._pending

    # ----------------------------------------------------------------------- passback

    def turns_for(self, pipe: object) -> list[HistoryTurn]:
        """The history for ``pipe``'s next request, under its :class:`PassbackPolicy`.

        Every message goes without its inert keys. An assistant turn carries its opaque
        states and readable reasoning only when the policy asks for them and the turn was
        made by the pipe's own provider, model and endpoint; anything else stays here.
        A conversation from :meth:`with_repair` gives the repaired turns.
        """
        turns = self._turns_for(pipe)
        return self._repaired(pipe, turns) if self._repair else turns

    def _turns_for(self, pipe: object) -> list[HistoryTurn]:
        policy = PassbackPolicy.for_pipe(pipe)
        loop_start = self._tool_loop_start()
        turns: list[HistoryTurn] = []
        for index, (message, record) in enumerate(zip(self._messages, self._records, strict=True)):
            visible = _plain(strip_inert_keys(message))
            if _role(message) != "assistant" or record is None or not record.made_by(pipe):
                turns.append(HistoryTurn(visible))
                continue
            states: tuple[ReasoningState, ...] = ()
            if policy.states == "always" or (policy.states == "tool_loop" and index >= loop_start):
                states = tuple(
                    state
                    for state in record.states
                    # The record's scope matched; the state's own labels must not
                    # contradict it (a state copied in, or made for another provider).
                    if state.may_go_to(pipe)
                    and (policy.kinds is None or state.kind in policy.kinds)
                )
            reasoning: str | None = None
            thinking = message.get("thinking")
            if (
                policy.reasoning == "always"
                or (policy.reasoning == "tool_calls" and message.get("tool_calls"))
                or (policy.reasoning == "tool_loop" and index >= loop_start)
            ):
                if isinstance(thinking, str) and thinking:
                    reasoning = thinking
                elif thinking is None and record.reasoned is False and message.get("tool_calls"):
                    # The run reasoned nothing: a tool-call turn's reasoning is the empty text
                    # (what DeepSeek and Kimi need back on it), not missing.
                    reasoning = ""
            turns.append(HistoryTurn(visible, states=states, reasoning=reasoning))
        return turns

    # ----------------------------------------------------------------------- preflight

    def preflight(self, pipe: object) -> list[PassbackProblem]:
        """What ``pipe``'s provider is documented to reject in the request it would build.

        Nothing is called. Each :class:`PassbackProblem` names the message index, a code and
        what to do; an empty list means nothing known to be rejected. The provider's spec
        holds the rules (its ``preflight``); a pipe of an unknown provider gets ``[]``.
        """
        found = _spec_of(pipe)
        if found is None or found.preflight is None:
            return []
        problems: list[PassbackProblem] = found.preflight(
            pipe, self._preflight_turns(pipe, self._turns_for(pipe))
        )
        return problems

    def check_passback(self, pipe: object) -> None:
        """Raise ``UsageError`` naming the :meth:`preflight` problems, if there are any.

        Provider pipes call it before sending a request. A conversation from
        :meth:`with_repair` repairs instead of raising.
        """
        if self._repair:
            return
        problems = self.preflight(pipe)
        if problems:
            listed = "; ".join(str(problem) for problem in problems)
            raise UsageError(
                f"the provider would reject this conversation: {listed}. Fix the history, or "
                "run it with conversation.run(pipe, repair=True) (or pipe.run("
                "conversation.with_repair())) to drop or fill what the provider's docs allow"
            )

    def with_repair(self) -> Conversation:
        """A copy whose runs repair what :meth:`preflight` finds instead of raising.

        Pass it wherever a pipe takes a conversation (``pipe.run``, a hub, a pipeline);
        each request then carries the repaired turns and a ``UserWarning`` says what was
        dropped or filled.
        """
        copied = self.copy()
        copied._repair = True
        return copied

    def _preflight_turns(self, pipe: object, turns: Sequence[HistoryTurn]) -> list[PreflightTurn]:
        loop_start = self._tool_loop_start()
        return [
            PreflightTurn(index, turn, self._records[index], index >= loop_start)
            for index, turn in enumerate(turns)
        ]

    def _repaired(self, pipe: object, turns: list[HistoryTurn]) -> list[HistoryTurn]:
        found = _spec_of(pipe)
        if found is None or found.preflight is None or found.repair is None:
            return turns
        checked = self._preflight_turns(pipe, turns)
        if not found.preflight(pipe, checked):
            return turns
        repaired, notes = found.repair(pipe, checked)
        if notes:
            warnings.warn(
                "repaired the conversation for the provider: " + "; ".join(notes),
                UserWarning,
                stacklevel=4,
            )
        fixed: list[HistoryTurn] = repaired
        return fixed

    def _last_user_index(self) -> int:
        for index in range(len(self._messages) - 1, -1, -1):
            if _role(self._messages[index]) == "user":
                return index
        return -1

    def _tool_loop_start(self) -> int:
        # The current tool loop is what the model did since the last user turn; a user turn
        # the framework injected (provenance) is still a user turn to the provider.
        return self._last_user_index() + 1

    # ------------------------------------------------------------------------ branches

    def copy(self) -> Conversation:
        """An independent copy: messages, records and the pending generation."""
        return self._branch(len(self._messages), keep_pending=True)

    def _branch(self, end: int, *, keep_pending: bool = False) -> Conversation:
        branch = Conversation()
        branch._messages = [_plain(message) for message in self._messages[:end]]
        branch._records = list(self._records[:end])
        if keep_pending and self._pending is not None:
            branch._pending = GenerationRecord.from_json(self._pending.to_json())
        return branch

    def edit(self, index: int, content: Any, **extra: Any) -> Conversation:
        """A new branch where message ``index`` is replaced and everything after it is gone.

        ``content`` is the new content (the role and keys such as ``tool_call_id`` are kept;
        inert keys, ``tool_calls`` and the old provider record are not), or a whole message
        dict. Provider state of the replaced turn and of every later turn is left behind;
        this conversation is unchanged.
        """
        position = self._position(index)
        old = self._messages[position]
        if isinstance(content, Mapping):
            replacement = _plain({**content, **extra})
        else:
            replacement = {
                key: _plain(value)
                for key, value in old.items()
                if key not in INERT_MESSAGE_KEYS and key not in ("content", "tool_calls")
            }
            replacement["content"] = _plain(content)
            replacement.update(_plain(extra))
        branch = self._branch(position)
        branch._append(replacement, None)
        return branch

    def regenerate(self) -> Conversation:
        """A new branch ending at the last user message, to ask for that answer again.

        The last answer, its tool calls and results, and their provider state are gone from
        the branch; this conversation is unchanged.
        """
        last_user = self._last_user_index()
        if last_user < 0:
            raise UsageError("regenerate() needs a user message to answer again; there is none")
        return self._branch(last_user + 1)

    def compact(self, keep_last: int) -> Conversation:
        """A new branch with the leading system messages and the last ``keep_last`` units.

        A unit is one message, except that an assistant turn with ``tool_calls`` and the
        tool results after it form one unit with their provider state: the cut never
        separates a tool call from its result. The pending generation is kept, since the
        end of the history is.
        """
        if keep_last < 0:
            raise UsageError(f"keep_last must be 0 or more, got {keep_last}")
        head = 0
        while head < len(self._messages) and _role(self._messages[head]) == "system":
            head += 1
        starts = self._unit_starts(head)
        if keep_last == 0:
            cut = len(self._messages)
        elif keep_last < len(starts):
            cut = starts[-keep_last]
        else:
            cut = head
        branch = self._branch(head, keep_pending=True)
        for position in range(cut, len(self._messages)):
            branch._append(_plain(self._messages[position]), self._records[position])
        return branch

    def _unit_starts(self, head: int) -> list[int]:
        starts: list[int] = []
        in_tool_unit = False
        for position in range(head, len(self._messages)):
            role = _role(self._messages[position])
            if role == "tool" and in_tool_unit:
                continue
            starts.append(position)
            in_tool_unit = role == "assistant" and bool(self._messages[position].get("tool_calls"))
        return starts

    def _position(self, index: int) -> int:
        size = len(self._messages)
        position = index + size if index < 0 else index
        if not 0 <= position < size:
            raise IndexError(f"message index {index} out of range for {size} messages")
        return position

    # --------------------------------------------------------------------- persistence

    def to_json(self) -> dict[str, Any]:
        """The whole conversation as JSON-safe data: messages, records, pending generation.

        ``json.dumps`` of it works as long as the message contents are JSON themselves;
        opaque bytes payloads are base64 encoded and every state keeps its scope.
        """
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "messages": self.messages,
            "records": [None if record is None else record.to_json() for record in self._records],
            "pending_generation": None if self._pending is None else self._pending.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Conversation:
        """Rebuild a conversation written by :meth:`to_json`."""
        if data.get("format", _FORMAT) != _FORMAT:
            raise UsageError(f"not a saved conversation (format {data.get('format')!r})")
        version = data.get("version", _VERSION)
        if version != _VERSION:
            raise UsageError(
                f"saved conversation has version {version}; this library reads {_VERSION}"
            )
        messages: Sequence[Mapping[str, Any]] = data.get("messages", ())
        records: Sequence[Mapping[str, Any] | None] | None = data.get("records")
        if records is None:
            records = [None] * len(messages)
        if len(records) != len(messages):
            raise UsageError(
                f"saved conversation is inconsistent: {len(messages)} messages but "
                f"{len(records)} records"
            )
        conversation = cls()
        for message, record in zip(messages, records, strict=True):
            conversation._append(
                _plain(message), None if record is None else TurnRecord.from_json(record)
            )
        pending = data.get("pending_generation")
        if pending is not None:
            conversation._pending = GenerationRecord.from_json(pending)
        return conversation

    def dumps(self, **options: Any) -> str:
        """:meth:`to_json` as a JSON string; ``options`` go to ``json.dumps``."""
        return json.dumps(self.to_json(), **options)

    @classmethod
    def loads(cls, text: str | bytes) -> Conversation:
        """Rebuild a conversation from :meth:`dumps` output."""
        return cls.from_json(json.loads(text))
