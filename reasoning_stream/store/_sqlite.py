"""``SQLiteStore``: one file, WAL mode, safe for many threads and processes on one machine.

Each write is one ``BEGIN IMMEDIATE`` transaction: it takes SQLite's write lock first, then
checks the version and writes, so a check and its write can never be split by another writer
(in this process or another). Readers run in WAL snapshots and never wait for writers.
Connections come from a small pool: each is used by one thread at a time, and a pool
inherited through ``fork`` is left alone (SQLite forbids using a connection across a fork).
"""

from __future__ import annotations

import builtins
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from .._exceptions import CorruptConversationError, StoreError
from ._base import ConversationStore, StoredConversation, conflict, not_found

__all__ = ["SQLiteStore"]

_T = TypeVar("_T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reasoning_stream_meta (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT OR IGNORE INTO reasoning_stream_meta (key, value) VALUES ('schema', 1), ('version', 0);
CREATE TABLE IF NOT EXISTS reasoning_stream_conversations (
    id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    length INTEGER NOT NULL,
    pending TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS reasoning_stream_turns (
    conversation_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    turn TEXT NOT NULL,
    PRIMARY KEY (conversation_id, position)
) WITHOUT ROWID;
"""

_SCHEMA_VERSION = 1


class SQLiteStore(ConversationStore):
    """Conversations in one SQLite file: the embedded default, no server needed.

    Args:
        path: the database file; created if missing. It may hold other tables: this store's
            are named ``reasoning_stream_*``.
        timeout: seconds a write waits for another writer's lock before failing.

    WAL mode with ``synchronous=NORMAL``: a committed write survives the process crashing
    at any point; a power loss may lose the last commits but never corrupts the file.

    >>> import tempfile, os
    >>> from reasoning_stream import Conversation
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     with SQLiteStore(os.path.join(folder, "chats.db")) as store:
    ...         version = store.save("chat-1", Conversation().add_user("Hi"))
    ...         conversation, latest = store.load("chat-1")
    >>> conversation[0]["content"], latest == version
    ('Hi', True)
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = os.fspath(path)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._every: list[sqlite3.Connection] = []
        self._inherited: list[sqlite3.Connection] = []
        self._pid = os.getpid()
        self._closed = False
        # Open one connection now, so a path that is not a SQLite database fails here with
        # a clear error, and the schema exists before any thread asks for it.
        connection = self._open()
        try:
            self._transaction(connection, self._create_schema)
        except BaseException:
            connection.close()
            raise
        self._idle.append(connection)
        self._every.append(connection)

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    # ----------------------------------------------------------------- connections

    def _open(self) -> sqlite3.Connection:
        try:
            connection = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise StoreError(f"cannot open SQLite database {self.path!r}: {error}") from error
        try:
            # journal_mode reads the header first, so a file that is not a database is
            # refused before anything is written to it.
            mode = connection.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            connection.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as error:
            connection.close()
            raise StoreError(
                f"{self.path!r} is not a usable SQLite database ({error}); "
                "point SQLiteStore at a new file or an existing SQLite database"
            ) from error
        if str(mode).lower() != "wal":
            connection.close()
            raise StoreError(
                f"SQLite database {self.path!r} cannot use WAL mode (got {mode!r}); "
                "use a file on a local disk"
            )
        return connection

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise StoreError(f"{self!r} is closed")
            if os.getpid() != self._pid:
                # A forked child must not touch (or even close) its parent's connections.
                self._inherited.extend(self._every)
                self._idle, self._every, self._pid = [], [], os.getpid()
            connection = self._idle.pop() if self._idle else None
        if connection is None:
            connection = self._open()
            with self._lock:
                self._every.append(connection)
        try:
            yield connection
        finally:
            with self._lock:
                if self._closed or connection.in_transaction:
                    self._discard(connection)
                else:
                    self._idle.append(connection)

    def _discard(self, connection: sqlite3.Connection) -> None:
        if connection in self._every:
            self._every.remove(connection)
        connection.close()

    def close(self) -> None:
        """Close every connection of this process."""
        with self._lock:
            self._closed = True
            if os.getpid() == self._pid:
                for connection in self._every:
                    connection.close()
            self._idle, self._every = [], []

    # ---------------------------------------------------------------- transactions

    def _transaction(
        self,
        connection: sqlite3.Connection,
        body: Callable[[sqlite3.Connection], _T],
        *,
        write: bool = True,
        conversation_id: str | None = None,
    ) -> _T:
        try:
            connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                value = body(connection)
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
            return value
        except sqlite3.Error as error:
            subject = "" if conversation_id is None else f" for conversation {conversation_id!r}"
            raise StoreError(
                f"SQLite database {self.path!r} failed{subject}: {error}",
                conversation_id=conversation_id,
            ) from error

    def _write(self, conversation_id: str, body: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._connection() as connection:
            return self._transaction(connection, body, conversation_id=conversation_id)

    @staticmethod
    def _create_schema(connection: sqlite3.Connection) -> None:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                connection.execute(statement)
        row = connection.execute(
            "SELECT value FROM reasoning_stream_meta WHERE key = 'schema'"
        ).fetchone()
        if row[0] != _SCHEMA_VERSION:
            raise sqlite3.DatabaseError(
                f"its conversation tables have schema {row[0]}; this library reads "
                f"{_SCHEMA_VERSION}"
            )

    @staticmethod
    def _next_version(connection: sqlite3.Connection) -> int:
        row = connection.execute(
            "UPDATE reasoning_stream_meta SET value = value + 1 WHERE key = 'version' "
            "RETURNING value"
        ).fetchone()
        return int(row[0])

    @staticmethod
    def _head(connection: sqlite3.Connection, conversation_id: str) -> tuple[object, object] | None:
        row = connection.execute(
            "SELECT version, length FROM reasoning_stream_conversations WHERE id = ?",
            (conversation_id,),
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def _checked_head(
        self, connection: sqlite3.Connection, conversation_id: str, expected: int | None
    ) -> int:
        """The stored length after checking existence and the expected version."""
        head = self._head(connection, conversation_id)
        if head is None:
            raise not_found(conversation_id)
        version, length = head
        if expected is not None and version != expected:
            raise conflict(conversation_id, expected, _as_int(version))
        if not isinstance(length, int):
            raise _corrupt_head(conversation_id)
        return length

    # ------------------------------------------------------------------ primitives

    def _save(
        self,
        conversation_id: str,
        turns: builtins.list[str],
        pending: str | None,
        expected: int | None,
    ) -> int:
        def body(connection: sqlite3.Connection) -> int:
            head = self._head(connection, conversation_id)
            actual = None if head is None else _as_int(head[0])
            if (expected is None and head is not None) or (
                expected is not None and (head is None or head[0] != expected)
            ):
                raise conflict(conversation_id, expected, actual)
            version = self._next_version(connection)
            connection.execute(
                "DELETE FROM reasoning_stream_turns WHERE conversation_id = ?", (conversation_id,)
            )
            connection.executemany(
                "INSERT INTO reasoning_stream_turns (conversation_id, position, turn) "
                "VALUES (?, ?, ?)",
                ((conversation_id, position, turn) for position, turn in enumerate(turns)),
            )
            connection.execute(
                "INSERT OR REPLACE INTO reasoning_stream_conversations "
                "(id, version, length, pending) VALUES (?, ?, ?, ?)",
                (conversation_id, version, len(turns), pending),
            )
            return version

        return self._write(conversation_id, body)

    def _append(
        self, conversation_id: str, turn: str, clears_pending: bool, expected: int | None
    ) -> int:
        def body(connection: sqlite3.Connection) -> int:
            length = self._checked_head(connection, conversation_id, expected)
            version = self._next_version(connection)
            connection.execute(
                "INSERT INTO reasoning_stream_turns (conversation_id, position, turn) "
                "VALUES (?, ?, ?)",
                (conversation_id, length, turn),
            )
            connection.execute(
                "UPDATE reasoning_stream_conversations SET version = ?, length = ?"
                + (", pending = NULL" if clears_pending else "")
                + " WHERE id = ?",
                (version, length + 1, conversation_id),
            )
            return version

        return self._write(conversation_id, body)

    def _set_pending(self, conversation_id: str, pending: str | None, expected: int | None) -> int:
        def body(connection: sqlite3.Connection) -> int:
            self._checked_head(connection, conversation_id, expected)
            version = self._next_version(connection)
            connection.execute(
                "UPDATE reasoning_stream_conversations SET version = ?, pending = ? WHERE id = ?",
                (version, pending, conversation_id),
            )
            return version

        return self._write(conversation_id, body)

    def _delete(self, conversation_id: str, expected: int | None) -> None:
        def body(connection: sqlite3.Connection) -> None:
            head = self._head(connection, conversation_id)
            if head is None:
                raise not_found(conversation_id)
            if expected is not None and head[0] != expected:
                raise conflict(conversation_id, expected, _as_int(head[0]))
            self._next_version(connection)
            connection.execute(
                "DELETE FROM reasoning_stream_turns WHERE conversation_id = ?", (conversation_id,)
            )
            connection.execute(
                "DELETE FROM reasoning_stream_conversations WHERE id = ?", (conversation_id,)
            )

        self._write(conversation_id, body)

    def _load(self, conversation_id: str) -> StoredConversation:
        def body(connection: sqlite3.Connection) -> StoredConversation:
            row = connection.execute(
                "SELECT version, length, pending FROM reasoning_stream_conversations WHERE id = ?",
                (conversation_id,),
            ).fetchone()
            if row is None:
                raise not_found(conversation_id)
            version, length, pending = row
            rows = connection.execute(
                "SELECT position, turn FROM reasoning_stream_turns WHERE conversation_id = ? "
                "ORDER BY position",
                (conversation_id,),
            ).fetchall()
            if (
                not isinstance(version, int)
                or not isinstance(length, int)
                or not (pending is None or isinstance(pending, str))
                or len(rows) != length
                or any(position != index for index, (position, _) in enumerate(rows))
                or not all(isinstance(turn, str) for _, turn in rows)
            ):
                raise _corrupt_head(conversation_id)
            return StoredConversation([turn for _, turn in rows], pending, version)

        with self._connection() as connection:
            return self._transaction(connection, body, write=False, conversation_id=conversation_id)

    def _list(self, prefix: str) -> builtins.list[str]:
        def body(connection: sqlite3.Connection) -> builtins.list[str]:
            # Ids compare as UTF-8 bytes, which is code point order: every id that starts
            # with the prefix sorts at or after it, in one run, so the scan stops at the
            # first id that does not match. (LIKE and GLOB would add case folding and
            # wildcards; the prefix is literal.)
            found: builtins.list[str] = []
            for (conversation_id,) in connection.execute(
                "SELECT id FROM reasoning_stream_conversations WHERE id >= ? ORDER BY id",
                (prefix,),
            ):
                if not conversation_id.startswith(prefix):
                    break
                found.append(conversation_id)
            return found

        with self._connection() as connection:
            return self._transaction(connection, body, write=False)


def _as_int(value: object) -> int | None:
    return value if isinstance(value, int) else None


def _corrupt_head(conversation_id: str) -> StoreError:
    return CorruptConversationError(
        f"stored conversation {conversation_id!r} is corrupt and cannot be loaded: its rows "
        "are inconsistent (version, length or turn rows)",
        conversation_id=conversation_id,
    )
