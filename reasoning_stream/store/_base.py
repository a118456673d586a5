"""What every conversation store does, written once; a backend supplies six atomic primitives.

A stored conversation is a head (its version, its length and its pending generation) and one
JSON document per turn (the message and its provider record). Appending a turn writes one
document, so an append costs the same on a long conversation as on a short one; ``save``
rewrites them all. Every write checks the version it expects and takes a new one from a
counter shared by the whole store, so versions only grow, even across a delete and a new
conversation under the same id, and a writer holding an old version can never land a write.
"""

from __future__ import annotations

import builtins
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from .._capture import PipeResult
from .._exceptions import (
    ConflictError,
    ConversationNotFoundError,
    CorruptConversationError,
    UsageError,
)
from ..conversation import Conversation, GenerationRecord
from ..conversation._tool_loop import DEFAULT_MAX_STEPS, ToolLoopResult, adrive, drive
from ._run import arun_with_store, run_with_store
from ._run_tools import StoredSteps

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["ConversationStore", "StoredConversation"]

_FORMAT = "reasoning-stream.conversation"
_FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class StoredConversation:
    """A conversation as a backend holds it: JSON documents and a version."""

    turns: list[str]
    """One JSON document per message: ``{"message": ..., "record": ...}``."""
    pending: str | None
    """The pending generation record as JSON, or ``None``."""
    version: int


def check_id(conversation_id: object) -> str:
    """``conversation_id`` when it is a non-empty string that UTF-8 can carry."""
    if not isinstance(conversation_id, str) or not conversation_id:
        raise UsageError(
            f"a conversation id is a non-empty str, got {conversation_id!r} "
            f"({type(conversation_id).__name__})"
        )
    try:
        conversation_id.encode("utf-8")
    except UnicodeEncodeError as error:
        raise UsageError(
            f"conversation id {conversation_id!r} is not valid Unicode (lone surrogate); "
            "ids are stored as UTF-8"
        ) from error
    return conversation_id


def check_version(expected_version: object) -> int | None:
    """``expected_version`` when it is ``None`` or an int a store handed out."""
    if expected_version is None:
        return None
    if isinstance(expected_version, bool) or not isinstance(expected_version, int):
        raise UsageError(
            "expected_version is None or the int version a store returned, "
            f"got {expected_version!r}"
        )
    return expected_version


def _dump(conversation_id: str, value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise UsageError(
            f"conversation {conversation_id!r} holds a value JSON cannot store ({error}); "
            "message contents must be JSON data (str, numbers, lists, dicts)"
        ) from error


def encode_conversation(conversation_id: str, conversation: Conversation) -> StoredConversation:
    """The documents ``save`` writes (version ``0`` is a placeholder)."""
    if not isinstance(conversation, Conversation):
        raise UsageError(f"save() takes a Conversation, got {type(conversation).__name__}")
    data = conversation.to_json()
    turns = [
        _dump(conversation_id, {"message": message, "record": record})
        for message, record in zip(data["messages"], data["records"], strict=True)
    ]
    pending = data["pending_generation"]
    return StoredConversation(
        turns, None if pending is None else _dump(conversation_id, pending), 0
    )


def encode_item(conversation_id: str, item: PipeResult | Mapping[str, Any]) -> tuple[str, bool]:
    """The document ``append`` writes, and whether it clears the pending generation.

    The turn is built by ``Conversation.add`` or ``add_message`` themselves, so a stored
    append cannot drift from an in-memory one.
    """
    scratch = Conversation()
    if isinstance(item, PipeResult):
        scratch.add(item)
    elif isinstance(item, Mapping):
        scratch.add_message(item)
    else:
        raise UsageError(
            f"append() takes a PipeResult or a message dict, got {type(item).__name__}"
        )
    data = scratch.to_json()
    turn = {"message": data["messages"][0], "record": data["records"][0]}
    return _dump(conversation_id, turn), isinstance(item, PipeResult)


def encode_pending(conversation_id: str, record: GenerationRecord | None) -> str | None:
    """The pending generation as JSON."""
    if record is None:
        return None
    if not isinstance(record, GenerationRecord):
        raise UsageError(
            f"set_pending() takes a GenerationRecord or None, got {type(record).__name__}"
        )
    return _dump(conversation_id, record.to_json())


def _parse_turns(texts: list[str]) -> list[Any]:
    """Every turn document parsed: one ``json.loads`` for all, or one each to find a bad one."""
    try:
        turns = json.loads("[" + ",".join(texts) + "]")
        # A damaged document could still join into valid JSON ("1],[2"): count them.
        if isinstance(turns, list) and len(turns) == len(texts):
            return turns
    except ValueError:
        pass
    parsed = []
    for position, text in enumerate(texts):
        try:
            parsed.append(json.loads(text))
        except ValueError as error:
            raise ValueError(f"turn {position} is not JSON ({error})") from error
    return parsed


def decode_conversation(conversation_id: str, stored: StoredConversation) -> Conversation:
    """Rebuild a conversation, or raise ``CorruptConversationError`` naming it."""
    try:
        messages: list[Any] = []
        records: list[Any] = []
        for position, turn in enumerate(_parse_turns(stored.turns)):
            if not isinstance(turn, dict) or "message" not in turn:
                raise ValueError(f"turn {position} is not a stored turn")
            messages.append(turn["message"])
            records.append(turn.get("record"))
        pending = None if stored.pending is None else json.loads(stored.pending)
        return Conversation.from_json(
            {
                "format": _FORMAT,
                "version": _FORMAT_VERSION,
                "messages": messages,
                "records": records,
                "pending_generation": pending,
            }
        )
    except (ValueError, TypeError, KeyError, AttributeError, UsageError) as error:
        raise CorruptConversationError(
            f"stored conversation {conversation_id!r} is corrupt and cannot be loaded: {error}",
            conversation_id=conversation_id,
        ) from error


def conflict(conversation_id: str, expected: int | None, actual: int | None) -> ConflictError:
    """The error for a stale ``expected_version``."""
    if expected is None:
        detail = f"it already exists (version {actual}); load it and pass expected_version"
    elif actual is None:
        detail = f"it was expected at version {expected} but no longer exists"
    else:
        detail = f"it is at version {actual}, not {expected}: load it again and redo the change"
    return ConflictError(
        f"conversation {conversation_id!r} was changed by another writer: {detail}",
        conversation_id=conversation_id,
        expected_version=expected,
        actual_version=actual,
    )


def not_found(conversation_id: str) -> ConversationNotFoundError:
    """The error for an id the store does not hold."""
    return ConversationNotFoundError(
        f"no conversation {conversation_id!r} in the store", conversation_id=conversation_id
    )


class ConversationStore(ABC):
    """Conversations that outlive the process, with optimistic concurrency on a version.

    Every write returns the conversation's new version, greater than any version the store
    handed out before. A write that names an ``expected_version`` other than the stored one
    raises :class:`~reasoning_stream.ConflictError` and changes nothing, so two writers can
    never lose each other's turns. One store object may be shared by threads; use it as a
    context manager, or call :meth:`close`, to release its connections.
    """

    # ------------------------------------------------------------------- public API

    def save(
        self,
        conversation_id: str,
        conversation: Conversation,
        expected_version: int | None = None,
    ) -> int:
        """Store the whole conversation (pending generation included); return its version.

        ``expected_version=None`` creates it: it must not exist yet. Otherwise the stored
        version must be ``expected_version``. Edits and branches (``edit``, ``regenerate``,
        ``compact``) are saved this way.
        """
        conversation_id = check_id(conversation_id)
        expected = check_version(expected_version)
        document = encode_conversation(conversation_id, conversation)
        return self._save(conversation_id, document.turns, document.pending, expected)

    def load(self, conversation_id: str) -> tuple[Conversation, int]:
        """The latest stored conversation and its version.

        Raises ``KeyError`` (:class:`~reasoning_stream.ConversationNotFoundError`) when there
        is none, and :class:`~reasoning_stream.CorruptConversationError` when its stored data
        cannot be read back.
        """
        conversation_id = check_id(conversation_id)
        stored = self._load(conversation_id)
        return decode_conversation(conversation_id, stored), stored.version

    def append(
        self,
        conversation_id: str,
        result_or_message: PipeResult | Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> int:
        """Add one turn; return the new version.

        A ``PipeResult`` is added as ``Conversation.add`` does (its provider state kept beside
        it, the pending generation cleared); a message dict as ``add_message`` does. With
        ``expected_version=None`` the turn goes after whatever is stored (the append itself is
        atomic); pass the version you read when the turn depends on what came before.
        """
        conversation_id = check_id(conversation_id)
        expected = check_version(expected_version)
        turn, clears_pending = encode_item(conversation_id, result_or_message)
        return self._append(conversation_id, turn, clears_pending, expected)

    def set_pending(
        self,
        conversation_id: str,
        record: GenerationRecord | None,
        *,
        expected_version: int | None = None,
    ) -> int:
        """Store ``record`` as the conversation's pending generation (``None`` clears it)."""
        conversation_id = check_id(conversation_id)
        expected = check_version(expected_version)
        return self._set_pending(conversation_id, encode_pending(conversation_id, record), expected)

    def delete(self, conversation_id: str, *, expected_version: int | None = None) -> None:
        """Remove the conversation; ``KeyError`` when there is none."""
        conversation_id = check_id(conversation_id)
        self._delete(conversation_id, check_version(expected_version))

    def list(self, prefix: str = "") -> builtins.list[str]:
        """The stored ids that start with ``prefix`` (literal, case-sensitive), sorted."""
        if not isinstance(prefix, str):
            raise UsageError(f"prefix is a str, got {type(prefix).__name__}")
        if prefix:
            check_id(prefix)
        return self._list(prefix)

    def __contains__(self, conversation_id: object) -> bool:
        try:
            self._load(check_id(conversation_id))
        except ConversationNotFoundError:
            return False
        return True

    def run(self, conversation_id: str, pipe: Any, *, repair: bool = False) -> PipeResult:
        """Run ``pipe`` on the stored conversation and store its answer.

        The pending generation is stored before the call, so a crash mid-run leaves a
        record that any process sees; the answer is appended after it, reloading and
        retrying when another writer got there first. See :func:`run_stored`.
        """
        return self._run_with(conversation_id, pipe, None, repair=repair)[0]

    async def arun(self, conversation_id: str, pipe: Any, *, repair: bool = False) -> PipeResult:
        """:meth:`run` through ``pipe.arun``; store calls run in a worker thread."""
        answer, _ = await self._arun_with(conversation_id, pipe, None, repair=repair)
        return answer

    def run_tools(
        self,
        conversation_id: str,
        pipe: Any,
        *,
        max_steps: int = DEFAULT_MAX_STEPS,
        tools: Any = None,
        repair: bool = False,
    ) -> ToolLoopResult:
        """``Conversation.run_tools`` on the stored conversation, each step saved as it completes.

        Every step is a :meth:`run` (pending record first, answer appended after it); the
        results of its tool calls are appended in call order once they are all in. A crash or
        a cancellation mid-loop leaves every completed step stored.
        """
        steps = StoredSteps(self, self, check_id(conversation_id), repair=repair)
        return drive(steps, pipe, max_steps=max_steps, tools=tools)

    async def arun_tools(
        self,
        conversation_id: str,
        pipe: Any,
        *,
        max_steps: int = DEFAULT_MAX_STEPS,
        tools: Any = None,
        repair: bool = False,
    ) -> ToolLoopResult:
        """:meth:`run_tools` on the event loop (asyncio or trio); store calls in a thread."""
        steps = StoredSteps(self, self, check_id(conversation_id), repair=repair)
        return await adrive(steps, pipe, max_steps=max_steps, tools=tools)

    def _run_with(
        self, conversation_id: object, pipe: Any, local: Conversation | None, *, repair: bool
    ) -> tuple[PipeResult, Conversation]:
        # The run behind run(), run_stored() and Conversation.run(store=...): the answer and
        # the conversation as stored after it (``local`` is saved first when it extends it).
        return run_with_store(self, check_id(conversation_id), pipe, local, repair=repair)

    async def _arun_with(
        self, conversation_id: object, pipe: Any, local: Conversation | None, *, repair: bool
    ) -> tuple[PipeResult, Conversation]:
        return await arun_with_store(self, check_id(conversation_id), pipe, local, repair=repair)

    @abstractmethod
    def close(self) -> None:
        """Release the store's connections; the store cannot be used afterwards."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------- backend primitives
    # Each is one atomic operation: it checks, then writes everything or nothing.

    @abstractmethod
    def _save(
        self,
        conversation_id: str,
        turns: builtins.list[str],
        pending: str | None,
        expected: int | None,
    ) -> int: ...

    @abstractmethod
    def _append(
        self, conversation_id: str, turn: str, clears_pending: bool, expected: int | None
    ) -> int: ...

    @abstractmethod
    def _set_pending(
        self, conversation_id: str, pending: str | None, expected: int | None
    ) -> int: ...

    @abstractmethod
    def _load(self, conversation_id: str) -> StoredConversation: ...

    @abstractmethod
    def _delete(self, conversation_id: str, expected: int | None) -> None: ...

    @abstractmethod
    def _list(self, prefix: str) -> builtins.list[str]: ...
