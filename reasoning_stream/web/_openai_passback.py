"""Exact passback for clients that send back only role and content.

An OpenAI chat client keeps the history itself and sends each assistant message back as
``role``, ``content`` and ``tool_calls``: every signature, encrypted item and
``reasoning_content`` the provider handed over is gone. So the server keeps them: after each
run it stores the assistant turn (its message, the inert ``thinking`` and its
:class:`~reasoning_stream.conversation.TurnRecord` with the opaque states) in a
``ConversationStore``, under a key that is a digest of the turn's visible fields and of every
message before it. On the next request the same digest, computed from what the client sent,
finds the turn again and the stored state goes back on it; a turn that was edited, reordered
or never made here has no stored twin, and preflight says whether its provider needs one.

The digest chain: ``d[-1] = ""`` and ``d[i] = sha256(d[i-1] + "\\n" + visible(m[i]))``, where
``visible`` is the canonical JSON of the role, the content (``null`` is ``""``), the tool
calls' ids, names and arguments, and a tool result's call id. Inert keys and any
``reasoning_content`` a client echoes are not part of it. The stored id is
``openai-passback:<hex digest>``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._capture import PipeResult
from .._exceptions import ConflictError, ConversationNotFoundError, CorruptConversationError
from ..conversation import Conversation, TurnRecord

if TYPE_CHECKING:
    from ..store import ConversationStore

__all__ = ["KEY_PREFIX", "attach", "digests", "remember"]

KEY_PREFIX = "openai-passback:"
"""Ids of the stored turns start with this (``store.list(KEY_PREFIX)`` lists them)."""

logger = logging.getLogger("reasoning_stream.web")


def _visible(message: Mapping[str, Any]) -> str:
    calls = [
        [call["id"], call["function"]["name"], call["function"].get("arguments", "")]
        for call in message.get("tool_calls") or ()
    ]
    content = message.get("content")
    shown = [message.get("role"), "" if content is None else content, calls]
    if message.get("role") == "tool":
        shown.append(message.get("tool_call_id"))
    return json.dumps(shown, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def digests(messages: Sequence[Mapping[str, Any]], start: str = "") -> list[str]:
    """The digest of each message together with every message before it (hex)."""
    found = []
    digest = start
    for message in messages:
        digest = hashlib.sha256(f"{digest}\n{_visible(message)}".encode()).hexdigest()
        found.append(digest)
    return found


def attach(
    store: ConversationStore | None, messages: Sequence[Mapping[str, Any]], pipe: object
) -> Conversation:
    """The request's messages as a conversation, each recognised assistant turn with the
    message (``thinking`` included) and record the store kept for it.

    Blocking (store reads): run it in a worker thread. A turn the store does not hold, or
    holds corrupt, goes as the client sent it, without opaque state: with the readable
    reasoning the client sent back with it (``reasoning_content``, read as ``thinking``)
    scoped to ``pipe``, as a DeepSeek-aware client means it, else without a record.
    """
    plain = [dict(message) for message in messages]
    records: list[Any] = [
        _echoed(pipe) if message.get("role") == "assistant" and message.get("thinking") else None
        for message in plain
    ]
    if store is not None:
        for index, (message, digest) in enumerate(zip(plain, digests(plain), strict=True)):
            if message.get("role") != "assistant":
                continue
            try:
                stored, _ = store.load(KEY_PREFIX + digest)
            except ConversationNotFoundError:
                continue
            except CorruptConversationError as error:
                logger.warning("stored turn for message %d is unreadable: %s", index, error)
                continue
            data = stored.to_json()
            if len(data["messages"]) != 1 or _visible(data["messages"][0]) != _visible(message):
                continue  # not a turn this module wrote
            plain[index] = data["messages"][0]
            records[index] = data["records"][0]
    return Conversation.from_json({"messages": plain, "records": records})


def _echoed(pipe: object) -> dict[str, Any]:
    """The record of a turn whose only state is the readable reasoning its client kept."""
    scope = TurnRecord(
        getattr(pipe, "provider", None),
        getattr(pipe, "model", None),
        getattr(pipe, "endpoint", None),
        reasoned=True,
    )
    return scope.to_json()


def remember(
    store: ConversationStore, messages: Sequence[Mapping[str, Any]], result: PipeResult
) -> str:
    """Store the turn ``result`` made after ``messages``; return its stored id.

    Blocking: run it in a worker thread. A turn already stored under the same digest (the
    same answer to the same history) is replaced by this one.
    """
    previous = digests(messages)[-1] if messages else ""
    key = KEY_PREFIX + digests([result.message], previous)[0]
    turn = Conversation().add(result)
    try:
        store.save(key, turn)
    except ConflictError:
        _, version = store.load(key)
        store.save(key, turn, expected_version=version)
    return key
