"""Every store the tests open: SQLite in a temporary file, or a namespace of a real redis-server."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reasoning_stream.store import ConversationStore, RedisStore, SQLiteStore
from tests.redis_server import redis_cluster_url, redis_server, redis_url

__all__ = ["redis_cluster_url", "redis_server", "redis_url", "store_address"]


StoreFactory = Callable[[], ConversationStore]


@pytest.fixture(params=["sqlite", "redis", "redis-cluster"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[StoreFactory]:
    """Open stores on one backend: each call is another client of the same data."""
    opened: list[ConversationStore] = []
    namespace = f"test-{uuid.uuid4().hex}"

    def make() -> ConversationStore:
        store: ConversationStore
        if store_kind == "sqlite":
            store = SQLiteStore(tmp_path / "conversations.db")
        elif store_kind == "redis-cluster":
            url = request.getfixturevalue("redis_cluster_url")
            store = RedisStore(url, namespace=namespace, cluster=True)
        else:
            store = RedisStore(request.getfixturevalue("redis_url"), namespace=namespace)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> ConversationStore:
    """A fresh, empty store: SQLite in a temporary file, or a namespace of the Redis server."""
    return make_store()


def store_address(store: ConversationStore) -> tuple[str, str, str]:
    """What a worker process needs to open the same store: kind, path or URL, namespace."""
    if isinstance(store, SQLiteStore):
        return ("sqlite", store.path, "")
    assert isinstance(store, RedisStore)
    return ("redis-cluster" if store.cluster else "redis", store.url, store.namespace)
