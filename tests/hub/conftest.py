"""The hub tests run against both hubs: MemoryHub, and RedisHub on a real redis-server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reasoning_stream.hub import Hub, MemoryHub, RedisHub
from tests.redis_server import redis_server, redis_url

__all__ = ["redis_server", "redis_url"]


@pytest.fixture(params=["memory", "redis"])
def hub(request: pytest.FixtureRequest) -> Iterator[Hub]:
    """Each test runs once per hub."""
    if request.param == "memory":
        yield MemoryHub()
        return
    url = request.getfixturevalue("redis_url")
    redis_hub = RedisHub(url)
    try:
        yield redis_hub
    finally:
        redis_hub.close()
