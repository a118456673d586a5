"""Conversations that outlive the process: SQLite on one machine, Redis across many.

Both stores have the same API (:class:`ConversationStore`)::

    from reasoning_stream.store import SQLiteStore, RedisStore
    store = SQLiteStore("conversations.db")        # one file, WAL, many threads/processes
    store = RedisStore("redis://127.0.0.1:6379/0")  # many machines (extra ``redis``)
    version = store.save(conversation_id, conversation, expected_version=None)  # None: new
    conversation, version = store.load(conversation_id)
    version = store.append(conversation_id, result_or_message, expected_version=version)
    version = store.set_pending(conversation_id, record, expected_version=version)
    store.delete(conversation_id); store.list(prefix="")
    result = store.run(conversation_id, pipe)       # pending record, run, append (see run_stored)

A write whose ``expected_version`` is stale raises :class:`ConflictError` and changes nothing;
versions only grow. A conversation comes back ``==`` to what was saved: opaque state (bytes
included) and the pending generation record too.
"""

from .._exceptions import (
    ConflictError,
    ConversationNotFoundError,
    CorruptConversationError,
    StoreError,
)
from ._base import ConversationStore
from ._redis import RedisStore
from ._run import arun_stored, run_stored
from ._sqlite import SQLiteStore

__all__ = [
    "ConflictError",
    "ConversationNotFoundError",
    "ConversationStore",
    "CorruptConversationError",
    "RedisStore",
    "SQLiteStore",
    "StoreError",
    "arun_stored",
    "run_stored",
]
