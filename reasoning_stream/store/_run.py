"""A run recorded in a store: pending generation first, the answer after, retried on conflict.

The order is what makes a crash visible: the pending :class:`GenerationRecord` is stored
before the pipe is called, so a worker that dies mid-run leaves an ``"in_progress"`` record
that any other process sees on ``load``. The answer is then appended on the version the
pending write returned; when another writer got there first (a user message, another run)
the conversation is reloaded and the answer appended to the latest version, so no turn is
lost and none is written twice. A run that fails or is cancelled stores what it captured in
its pending record, as long as that record is still this run's.

The store calls are blocking; the async driver runs them in a worker thread and only the
pipe on the event loop.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import anyio

from .._capture import PipeResult
from .._exceptions import (
    ConflictError,
    ConversationNotFoundError,
    ReasoningStreamError,
    StoreError,
)
from ..conversation import Conversation, GenerationRecord
from ..conversation._conversation import RecordingStore, recording_store

__all__ = ["Store", "arun_stored", "arun_with_store", "run_stored", "run_with_store"]

MAX_ATTEMPTS = 50
"""Conflicting writes a run rides out before it gives up with ``ConflictError``."""


class Store(Protocol):
    """The store calls a recorded run makes (``ConversationStore`` has them all).

    ``ConversationStore`` calls into this module, so this module names it by what it uses.
    """

    def load(self, conversation_id: str) -> tuple[Conversation, int]: ...

    def save(
        self, conversation_id: str, conversation: Conversation, expected_version: int | None = None
    ) -> int: ...

    def append(
        self,
        conversation_id: str,
        result_or_message: PipeResult | Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> int: ...

    def set_pending(
        self,
        conversation_id: str,
        record: GenerationRecord | None,
        *,
        expected_version: int | None = None,
    ) -> int: ...


@dataclass(slots=True)
class _Started:
    conversation: Conversation
    """What the pipe runs on: the stored history, its pending record set."""
    record: GenerationRecord
    version: int


def _same_turns(stored: Conversation, local: Conversation) -> bool:
    """Whether ``local`` starts with every turn of ``stored`` (records included)."""
    count = len(stored)
    return (
        len(local) >= count
        and stored.messages == local.messages[:count]
        and all(stored.record(index) == local.record(index) for index in range(count))
    )


def _begin(
    store: Store,
    conversation_id: str,
    pipe: Any,
    local: Conversation | None,
) -> _Started:
    request_id = uuid.uuid4().hex
    for _ in range(MAX_ATTEMPTS):
        try:
            stored, version = store.load(conversation_id)
        except ConversationNotFoundError:
            if local is None:
                raise
            record = local.begin_generation(pipe, request_id=request_id)
            try:
                version = store.save(conversation_id, local)
            except ConflictError:
                continue  # created by another writer meanwhile: look again
            return _Started(local, record, version)
        if local is not None and not _same_turns(stored, local):
            raise ConflictError(
                f"stored conversation {conversation_id!r} has turns this conversation "
                "lacks (another writer added or changed them): load it again and add "
                "your message to that",
                conversation_id=conversation_id,
                actual_version=version,
            )
        working = stored if local is None else local
        record = working.begin_generation(pipe, request_id=request_id)
        try:
            if len(working) == len(stored):
                version = store.set_pending(conversation_id, record, expected_version=version)
            else:
                version = store.save(conversation_id, working, expected_version=version)
        except ConflictError:
            continue  # another writer moved it on: look again
        return _Started(working, record, version)
    raise _gave_up(conversation_id)


def _finish(
    store: Store, conversation_id: str, started: _Started, result: PipeResult
) -> Conversation:
    try:
        store.append(conversation_id, result, expected_version=started.version)
    except ConflictError:
        pass
    else:
        return started.conversation.add(result)
    for _ in range(MAX_ATTEMPTS):
        latest, version = store.load(conversation_id)
        pending = latest.pending_generation
        try:
            if pending is None or pending.request_id == started.record.request_id:
                store.append(conversation_id, result, expected_version=version)
                return latest.add(result)
            # Another run has begun since: add the answer and keep its pending record.
            data = latest.add(result).to_json()
            data["pending_generation"] = pending.to_json()
            latest = Conversation.from_json(data)
            store.save(conversation_id, latest, expected_version=version)
            return latest
        except ConflictError:
            continue
    raise _gave_up(conversation_id)


def _fail(
    store: Store,
    conversation_id: str,
    started: _Started,
    result: PipeResult | None,
    error: BaseException,
) -> None:
    """Store what a failed or cancelled run captured, if its pending record is still its own."""
    started.record.update_from(result)
    try:
        for _ in range(MAX_ATTEMPTS):
            latest, version = store.load(conversation_id)
            pending = latest.pending_generation
            if pending is None or pending.request_id != started.record.request_id:
                return
            try:
                store.set_pending(conversation_id, started.record, expected_version=version)
                return
            except ConflictError:
                continue
    except (StoreError, ConversationNotFoundError) as store_error:
        # The run's own error is what the caller must see; the store's goes in a note.
        error.add_note(f"the failed run's record could not be stored in {store!r}: {store_error}")


def _gave_up(conversation_id: str) -> ConflictError:
    return ConflictError(
        f"conversation {conversation_id!r} kept changing under this run: "
        f"{MAX_ATTEMPTS} conflicting writes in a row",
        conversation_id=conversation_id,
    )


def run_with_store(
    store: Store,
    conversation_id: str,
    pipe: Any,
    local: Conversation | None = None,
    *,
    repair: bool = False,
) -> tuple[PipeResult, Conversation]:
    """:func:`run_stored`, also returning the conversation as stored after the run.

    ``conversation_id`` is checked already (``ConversationStore`` calls this).
    """
    started = _begin(store, conversation_id, pipe, local)
    try:
        result: PipeResult = pipe.run(_prompt(started, repair))
    except BaseException as error:
        _fail(store, conversation_id, started, getattr(pipe, "last_result", None), error)
        raise
    return result, _store_answer(store, conversation_id, started, result)


async def arun_with_store(
    store: Store,
    conversation_id: str,
    pipe: Any,
    local: Conversation | None = None,
    *,
    repair: bool = False,
) -> tuple[PipeResult, Conversation]:
    """:func:`arun_stored`, also returning the conversation as stored after the run."""
    started = await anyio.to_thread.run_sync(_begin, store, conversation_id, pipe, local)
    try:
        result: PipeResult = await pipe.arun(_prompt(started, repair))
    except BaseException as error:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(
                _fail, store, conversation_id, started, getattr(pipe, "last_result", None), error
            )
        raise
    with anyio.CancelScope(shield=True):
        # The answer exists: storing it is not abandoned half-way by a cancellation.
        final = await anyio.to_thread.run_sync(
            partial(_store_answer, store, conversation_id, started, result)
        )
    return result, final


def _prompt(started: _Started, repair: bool) -> Conversation:
    # A repaired copy fixes this request only; what is stored stays as it was written.
    return started.conversation.with_repair() if repair else started.conversation


def _store_answer(
    store: Store, conversation_id: str, started: _Started, result: PipeResult
) -> Conversation:
    try:
        return _finish(store, conversation_id, started, result)
    except ReasoningStreamError as error:
        error.result = result  # the answer is not lost with the write
        raise


def run_stored(
    store: RecordingStore, conversation_id: str, pipe: Any, *, repair: bool = False
) -> PipeResult:
    """Run ``pipe`` on the stored conversation ``conversation_id`` and store its answer.

    1. load the latest version and store a pending :class:`GenerationRecord` on it;
    2. run the pipe on that history;
    3. append the answer on the version step 1 returned; on ``ConflictError`` reload and
       append to the latest (keeping another run's pending record if one began meanwhile).

    A crash between 1 and 3 leaves the ``"in_progress"`` record in the store for any process
    to see. When the pipe fails or is cancelled, the record is updated with what it captured
    (status, partial text and reasoning, tool calls) and the error propagates. An error
    raised while storing the answer carries it as ``.result``. ``repair=True`` is
    ``Conversation.run``'s: the request drops or fills what the provider would reject.
    """
    return recording_store(store)._run_with(conversation_id, pipe, None, repair=repair)[0]


async def arun_stored(
    store: RecordingStore, conversation_id: str, pipe: Any, *, repair: bool = False
) -> PipeResult:
    """:func:`run_stored` through ``pipe.arun`` (asyncio or trio)."""
    answer, _ = await recording_store(store)._arun_with(conversation_id, pipe, None, repair=repair)
    return answer
