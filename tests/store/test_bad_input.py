"""Bad input: corrupt rows and values, a file that is not SQLite, a Redis that is down."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from reasoning_stream import (
    Conversation,
    CorruptConversationError,
    ReasoningStreamError,
    StoreError,
    TextDelta,
)
from reasoning_stream.store import ConversationStore, RedisStore, SQLiteStore
from reasoning_stream.testing import ScriptedPipe
from tests.redis_server import RedisServer, free_port, running_redis

# ----------------------------------------------------------------------------- corrupt data


def sqlite_damage(path: str, statement: str, *parameters: object) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute(statement, parameters)


SQLITE_DAMAGE: dict[str, Callable[[str], None]] = {
    "turn is not JSON": lambda path: sqlite_damage(
        path,
        "UPDATE reasoning_stream_turns SET turn = '{\"message\": ' "
        "WHERE conversation_id = 'bad' AND position = 1",
    ),
    "turn is JSON of the wrong shape": lambda path: sqlite_damage(
        path, "UPDATE reasoning_stream_turns SET turn = '[1, 2]' WHERE conversation_id = 'bad'"
    ),
    "record is garbage": lambda path: sqlite_damage(
        path,
        'UPDATE reasoning_stream_turns SET turn = \'{"message": {}, "record": 5}\' '
        "WHERE conversation_id = 'bad'",
    ),
    "turn row missing": lambda path: sqlite_damage(
        path, "DELETE FROM reasoning_stream_turns WHERE conversation_id = 'bad' AND position = 0"
    ),
    "version is text": lambda path: sqlite_damage(
        path, "UPDATE reasoning_stream_conversations SET version = 'seven' WHERE id = 'bad'"
    ),
    "pending is not JSON": lambda path: sqlite_damage(
        path, "UPDATE reasoning_stream_conversations SET pending = 'oops' WHERE id = 'bad'"
    ),
    "pending has an unknown status": lambda path: sqlite_damage(
        path,
        "UPDATE reasoning_stream_conversations SET pending = "
        '\'{"started_at": 1.0, "status": "exploded"}\' WHERE id = \'bad\'',
    ),
    "turn is a blob": lambda path: sqlite_damage(
        path, "UPDATE reasoning_stream_turns SET turn = x'00ff' WHERE conversation_id = 'bad'"
    ),
}


def redis_damage(store: RedisStore, *command: object) -> None:
    client = redis.Redis.from_url(_url(store))
    try:
        client.execute_command(*command)
    finally:
        client.close()


def _url(store: RedisStore) -> str:
    return store.url


def redis_replace(store: RedisStore, key: str) -> None:
    """Put a plain string where the store keeps a hash or a list."""
    redis_damage(store, "DEL", key)
    redis_damage(store, "SET", key, "surprise")


def ns(store: RedisStore, kind: str) -> str:
    """The key of part ``kind`` of conversation ``bad`` (the layout in ``store/_redis.py``)."""
    return f"{store.namespace}:{{bad}}:{kind}"


REDIS_DAMAGE: dict[str, Callable[[RedisStore], None]] = {
    "turn is not JSON": lambda s: redis_damage(s, "LSET", ns(s, "turns"), 1, "{nope"),
    "turn is not UTF-8": lambda s: redis_damage(s, "LSET", ns(s, "turns"), 0, b"\xff\xfe"),
    "turn missing": lambda s: redis_damage(s, "RPOP", ns(s, "turns")),
    "version is text": lambda s: redis_damage(s, "HSET", ns(s, "conversation"), "version", "x"),
    "head lost its version": lambda s: redis_damage(s, "HDEL", ns(s, "conversation"), "version"),
    "pending is not JSON": lambda s: redis_damage(s, "HSET", ns(s, "conversation"), "pending", "?"),
    "head is a string": lambda s: redis_replace(s, ns(s, "conversation")),
    "turns are a string": lambda s: redis_replace(s, ns(s, "turns")),
}


def seed(store: ConversationStore) -> Conversation:
    good = Conversation().add_user("fine").add_user("still fine")
    store.save("good", good)
    store.save("bad", Conversation().add_user("one").add_user("two"))
    return good


def check_damage(store: ConversationStore, good: Conversation) -> None:
    with pytest.raises(CorruptConversationError, match="'bad'") as caught:
        store.load("bad")
    assert caught.value.conversation_id == "bad"
    assert isinstance(caught.value, StoreError)
    assert store.load("good")[0] == good  # the others are unaffected
    assert store.list() == ["bad", "good"]
    store.append("good", {"role": "user", "content": "and more"})
    assert store.load("good")[0][-1]["content"] == "and more"


@pytest.mark.parametrize("damage", list(SQLITE_DAMAGE), ids=list(SQLITE_DAMAGE))
def test_a_corrupt_sqlite_row_names_its_conversation(tmp_path: Path, damage: str) -> None:
    path = str(tmp_path / "c.db")
    with SQLiteStore(path) as store:
        good = seed(store)
        SQLITE_DAMAGE[damage](path)
        check_damage(store, good)


@pytest.mark.parametrize("damage", list(REDIS_DAMAGE), ids=list(REDIS_DAMAGE))
def test_a_corrupt_redis_value_names_its_conversation(
    redis_server: RedisServer, damage: str
) -> None:
    with RedisStore(redis_server.url, namespace=f"corrupt-{abs(hash(damage))}") as store:
        good = seed(store)
        REDIS_DAMAGE[damage](store)
        check_damage(store, good)


def test_a_write_to_a_redis_key_of_the_wrong_type_names_the_conversation(
    redis_server: RedisServer,
) -> None:
    with RedisStore(redis_server.url, namespace="wrongtype") as store:
        store.save("bad", Conversation())
        REDIS_DAMAGE["head is a string"](store)
        with pytest.raises(CorruptConversationError, match="'bad'"):
            store.append("bad", {"role": "user", "content": "x"})


# --------------------------------------------------------------------------- not SQLite


@pytest.mark.parametrize(
    "content",
    [b"this is a text file, not a database\n" * 100, b"\x00" * 4096, b"SQLite format 3\x00junk"],
    ids=["text", "zeros", "bad-header"],
)
def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(StoreError, match=r"notes\.txt") as caught:
        SQLiteStore(path)
    assert isinstance(caught.value, ReasoningStreamError)
    assert "SQLite" in str(caught.value)
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_directory_or_an_unreachable_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"cannot open|not a usable"):
        SQLiteStore(tmp_path)
    with pytest.raises(StoreError):
        SQLiteStore(tmp_path / "missing-folder" / "c.db")


def test_an_existing_database_with_other_tables_is_shared(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE users (name TEXT)")
        connection.execute("INSERT INTO users VALUES ('ada')")
    connection.close()
    with SQLiteStore(path) as store:
        store.save("chat", Conversation().add_user("hi"))
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT name FROM users").fetchall() == [("ada",)]
    connection.close()


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "c.db")
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.list()


# ------------------------------------------------------------------------------ Redis down


def test_a_redis_that_is_not_there_is_a_clear_error_and_nothing_runs() -> None:
    port = free_port()  # nothing listens here
    store = RedisStore(f"redis://:s3cret-pass@127.0.0.1:{port}/0", timeout=2)
    conversation = Conversation().add_user("hi")
    before = conversation.dumps()
    for action in (
        lambda: store.save("chat", conversation),
        lambda: store.load("chat"),
        lambda: store.append("chat", {"role": "user", "content": "x"}),
        lambda: store.list(),
        lambda: store.delete("chat"),
    ):
        with pytest.raises(StoreError, match=f"127.0.0.1:{port}") as caught:
            action()
        assert "s3cret-pass" not in str(caught.value)
        assert not isinstance(caught.value, KeyError)
    pipe = ScriptedPipe([TextDelta("never")])
    with pytest.raises(StoreError):
        conversation.run(pipe, store=store, conversation_id="chat")
    assert pipe.prompts == []  # the model is not called when the pending record cannot be stored
    assert conversation.dumps() == before
    store.close()


def test_a_redis_that_dies_mid_use_leaves_what_was_written(tmp_path: Path) -> None:
    kept = Conversation().add_user("kept")
    with running_redis(tmp_path, durable=True) as server:
        store = RedisStore(server.url, timeout=2)
        version = store.save("chat", kept)
        server.stop()
        with pytest.raises(StoreError, match="nothing was written"):
            store.append("chat", {"role": "user", "content": "lost"}, expected_version=version)
        with pytest.raises(StoreError):
            store.load("chat")
        store.close()
        port = server.port
    with (
        running_redis(tmp_path, durable=True, port=port) as restarted,
        RedisStore(restarted.url) as store,
    ):
        assert store.load("chat") == (kept, version)
        assert store.append("chat", {"role": "user", "content": "again"}) > version
