"""``Conversation``: the history the application owns, and what each provider may get back.

The history is a list of plain chat-completions message dicts: the same shape whichever provider
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

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, Self, cast, overload

from .._capture import PipeResult
from .._exceptions import UsageError
from .._messages import INERT_MESSAGE_KEYS
from ._budget import Budget, Budgeted, lowered_effort
from ._passback import PassbackHistory, role_of
from ._records import (
    GenerationRecord,
    LedgerEntry,
    TurnRecord,
    ledger_entries,
    plain_copy,
    saved_turns,
)
from ._tool_loop import DEFAULT_MAX_STEPS, ConversationSteps, ToolLoopResult, adrive, drive

__all__ = ["Conversation", "RecordingStore", "recording_store"]

_FORMAT = "reasoning-stream.conversation"
_VERSION = 1


class RecordingStore(Protocol):
    """What ``Conversation.run(store=...)`` needs of a store: a run recorded in it.

    ``reasoning_stream.store``'s stores are the implementations; the conversation names
    them by this, since the stores sit above it.
    """

    def _run_with(
        self, conversation_id: Any, pipe: Any, local: Conversation | None, *, repair: bool
    ) -> tuple[PipeResult, Conversation]: ...

    async def _arun_with(
        self, conversation_id: Any, pipe: Any, local: Conversation | None, *, repair: bool
    ) -> tuple[PipeResult, Conversation]: ...


def recording_store(store: object) -> RecordingStore:
    """``store`` when it is a conversation store, else ``UsageError`` saying what it got."""
    if not callable(getattr(store, "_run_with", None)):
        raise UsageError(
            f"store= takes a conversation store (SQLiteStore, RedisStore), "
            f"got {type(store).__name__}"
        )
    return cast(RecordingStore, store)


class Conversation(PassbackHistory, Budgeted, Sequence[dict[str, Any]]):
    """The canonical chat history, plus each assistant turn's provider state beside it.

    Messages are plain dicts in the chat-completions shape: ``role`` (``system``, ``user``,
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
    :class:`GenerationRecord` of a run that fails or is cancelled. :meth:`ledger` lists what
    each model call used and cost; :meth:`budget` caps what the runs may spend.
    """

    __slots__ = ("_messages", "_pending", "_records", "_repair")

    def __init__(
        self, messages: Iterable[Mapping[str, Any]] = (), *, system: str | None = None
    ) -> None:
        self._messages: list[dict[str, Any]] = []
        self._records: list[TurnRecord | None] = []
        self._pending: GenerationRecord | None = None
        self._repair = False
        self._budget: Budget | None = None
        if system is not None:
            self.add_system(system)
        for message in messages:
            self.add_message(message)

    # ------------------------------------------------------------------------- reading

    @property
    def messages(self) -> list[dict[str, Any]]:
        """A copy of the history as plain dicts, inert keys included."""
        return [plain_copy(message) for message in self._messages]

    def record(self, index: int) -> TurnRecord | None:
        """The provider record of message ``index`` (``None`` unless a run produced it)."""
        return self._records[index]

    @property
    def pending_generation(self) -> GenerationRecord | None:
        """The run begun with :meth:`begin_generation` and not yet added, if any."""
        return self._pending

    def ledger(self) -> list[LedgerEntry]:
        """One :class:`LedgerEntry` per model call whose answer this conversation holds.

        In order: ``turn`` numbers the user message answered (from 0), ``step`` the call in
        that turn's tool loop (0 for a plain answer); tokens and the USD cost are those the
        run reported when it was added. Turns added by hand, or saved before the ledger
        existed, have no entry.
        """
        return ledger_entries(self._messages, self._records)

    def __len__(self) -> int:
        return len(self._messages)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [plain_copy(message) for message in self._messages[index]]
        plain: dict[str, Any] = plain_copy(self._messages[index])
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
        self._append(plain_copy(message), None)
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
        self._append(plain_copy({**result.message, **extra}), TurnRecord.from_result(result))
        self._pending = None
        if self._budget is not None:
            self._budget = self._budget.charged(result)
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
        See ``reasoning_stream.store.run_stored``. A :meth:`budget` near its cap lowers the
        effort of the run; a spent one raises ``BudgetExceededError`` before any request.
        """
        budget = self._check_budget()
        with lowered_effort(pipe, budget):
            if store is not None or conversation_id is not None:
                answer, latest = recording_store(store)._run_with(
                    conversation_id, pipe, self, repair=repair
                )
                return self._adopt(latest, budget, answer)
            record = self.begin_generation(pipe)
            try:
                result: PipeResult = pipe.run(self.with_repair() if repair else self)
            except BaseException:
                self._failed(record, pipe)
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
        budget = self._check_budget()
        with lowered_effort(pipe, budget):
            if store is not None or conversation_id is not None:
                answer, latest = await recording_store(store)._arun_with(
                    conversation_id, pipe, self, repair=repair
                )
                return self._adopt(latest, budget, answer)
            record = self.begin_generation(pipe)
            try:
                result: PipeResult = await pipe.arun(self.with_repair() if repair else self)
            except BaseException:
                self._failed(record, pipe)
                raise
        self.add(result)
        return result

    def run_tools(
        self, pipe: Any, *, max_steps: int = DEFAULT_MAX_STEPS, tools: Any = None,
        repair: bool = False, store: Any = None, conversation_id: str | None = None,
    ) -> ToolLoopResult:  # fmt: skip
        """Run ``pipe``, run the tools it calls, add the results, and repeat until it answers.

        Each step is :meth:`run` (passback as the pipe's policy says; a failed or cancelled
        step keeps its pending generation and raises). The calls of one response run
        concurrently in worker threads (an async tool on a fresh event loop there); their
        results are added in call order. A tool that raises, an unknown name or arguments that
        do not fit the schema give an error result the model reads. The loop stops at an
        answer without calls or after ``max_steps`` responses (``status == "max_steps"``).
        ``tools`` defaults to ``pipe.tools``. A :meth:`budget` caps the whole loop: the effort
        steps down near it, and past it the loop stops with status ``"budget"``. With
        ``store=`` and ``conversation_id=`` each step is recorded there as :meth:`run` records
        one and each tool result appended; this conversation's budget caps that loop too.
        See ``reasoning_stream.conversation._tool_loop``.
        """
        steps = ConversationSteps(self, repair=repair, store=store, conversation_id=conversation_id)
        return drive(steps, pipe, max_steps=max_steps, tools=tools)

    async def arun_tools(
        self, pipe: Any, *, max_steps: int = DEFAULT_MAX_STEPS, tools: Any = None,
        repair: bool = False, store: Any = None, conversation_id: str | None = None,
    ) -> ToolLoopResult:  # fmt: skip
        """:meth:`run_tools` on the event loop (asyncio or trio): async tools are awaited, sync
        tools run in worker threads; cancellation keeps every completed step."""
        steps = ConversationSteps(self, repair=repair, store=store, conversation_id=conversation_id)
        return await adrive(steps, pipe, max_steps=max_steps, tools=tools)

    def _adopt(self, other: Conversation, budget: Budget | None, answer: PipeResult) -> PipeResult:
        # Become what the store holds (other writers' turns too); charge the answer once.
        if other is not self:
            self._messages, self._records = other._messages, other._records
            self._pending = other._pending
        self._budget = None if budget is None else budget.charged(answer)
        return answer

    def _failed(self, record: GenerationRecord, pipe: Any) -> None:
        # A failed or cancelled run keeps what it captured, and what it spent is spent.
        partial: PipeResult | None = getattr(pipe, "last_result", None)
        record.update_from(partial)
        if self._budget is not None and partial is not None:
            self._budget = self._budget.charged(partial)

    def with_repair(self) -> Conversation:
        """A copy whose runs repair what :meth:`preflight` finds instead of raising.

        Pass it wherever a pipe takes a conversation (``pipe.run``, a hub, a pipeline);
        each request then carries the repaired turns and a ``UserWarning`` says what was
        dropped or filled.
        """
        copied = self.copy()
        copied._repair = True
        return copied

    # ------------------------------------------------------------------------ branches

    def copy(self) -> Conversation:
        """An independent copy: messages, records and the pending generation."""
        return self._branch(len(self._messages), keep_pending=True)

    def _branch(self, end: int, *, keep_pending: bool = False) -> Conversation:
        branch = Conversation()
        branch._messages = [plain_copy(message) for message in self._messages[:end]]
        branch._records = list(self._records[:end])
        branch._budget = self._budget
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
            replacement = plain_copy({**content, **extra})
        else:
            replacement = {
                key: plain_copy(value)
                for key, value in old.items()
                if key not in INERT_MESSAGE_KEYS and key not in ("content", "tool_calls")
            }
            replacement["content"] = plain_copy(content)
            replacement.update(plain_copy(extra))
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
        while head < len(self._messages) and role_of(self._messages[head]) == "system":
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
            branch._append(plain_copy(self._messages[position]), self._records[position])
        return branch

    def _unit_starts(self, head: int) -> list[int]:
        starts: list[int] = []
        in_tool_unit = False
        for position in range(head, len(self._messages)):
            role = role_of(self._messages[position])
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

    # --------------------------------------------------------------- client-held history

    @classmethod
    def from_ag_ui(cls, messages: Iterable[Any], *, seal_keys: Any = None) -> Conversation:
        """Rebuild the history an AG-UI client sent back (dicts in camelCase or ``ag_ui.core``
        models): each assistant turn gets the record its sealed envelope holds, so its opaque
        state goes back byte for byte. A turn whose envelope was altered, sealed with a key
        not in ``seal_keys`` (``[key, *older]``) or is missing stays plain text, and
        :meth:`preflight` names it ``envelope_invalid``."""
        from ._client_history import from_ag_ui_messages

        return cls._rebuilt(from_ag_ui_messages(messages, seal_keys))

    @classmethod
    def from_ui_messages(cls, messages: Iterable[Any], *, seal_keys: Any = None) -> Conversation:
        """:meth:`from_ag_ui` for the AI SDK's UI messages (``useChat``'s ``messages``)."""
        from ._client_history import from_ui_messages

        return cls._rebuilt(from_ui_messages(messages, seal_keys))

    @classmethod
    def _rebuilt(cls, pairs: Iterable[tuple[dict[str, Any], TurnRecord | None]]) -> Conversation:
        conversation = cls()
        for message, record in pairs:
            conversation._append(plain_copy(message), record)
        return conversation

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
            "budget": None if self._budget is None else self._budget.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Conversation:
        """Rebuild a conversation written by :meth:`to_json` (an older one too)."""
        conversation = cls()
        for message, record in saved_turns(data, _FORMAT, _VERSION):
            conversation._append(plain_copy(message), record)
        pending = data.get("pending_generation")
        if pending is not None:
            conversation._pending = GenerationRecord.from_json(pending)
        budget = data.get("budget")
        if budget is not None:
            conversation._budget = Budget.from_json(budget)
        return conversation

    def dumps(self, **options: Any) -> str:
        """:meth:`to_json` as a JSON string; ``options`` go to ``json.dumps``."""
        import json  # only here and in loads(): importing the package stays quick

        return json.dumps(self.to_json(), **options)

    @classmethod
    def loads(cls, text: str | bytes) -> Conversation:
        """Rebuild a conversation from :meth:`dumps` output."""
        import json

        return cls.from_json(json.loads(text))
