"""The hub tests run against both hubs: MemoryHub, and RedisHub on a real redis-server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reasoning_stream.hub import Hub, MemoryHub, RedisHub
from tests.redis_server import redis_cluster_url, redis_server, redis_url

__all__ = ["redis_cluster_url", "redis_server", "redis_url"]


@pytest.fixture(params=["memory", "redis", "redis-cluster"])
def hub(request: pytest.FixtureRequest) -> Iterator[Hub]:
    """Each test runs once per hub: in memory, on one redis-server, on a three-node cluster."""
    if request.param == "memory":
        yield MemoryHub()
        return
    cluster = request.param == "redis-cluster"
    url = request.getfixturevalue("redis_cluster_url" if cluster else "redis_url")
    redis_hub = RedisHub(url, cluster=cluster)
    try:
        yield redis_hub
    finally:
        redis_hub.close()
