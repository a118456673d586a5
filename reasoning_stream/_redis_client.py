"""Clients for ``RedisHub`` and ``RedisStore``: one Redis server, or a Redis Cluster.

A cluster routes each command by the hash slot of its keys; every script of the hub and the
store touches the keys of one id only, which share a slot (their hash tag, see
``_redis_keys``). redis-py refuses scripts in a cluster pipeline, so :func:`run_scripts` makes
one ordinary pipeline per node instead: a batch costs one round trip per node it touches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["cluster_hint", "connect", "is_cluster", "run_scripts"]


def connect(url: str, *, cluster: bool, **options: Any) -> Any:
    """A redis-py client for ``url``: ``RedisCluster`` when ``cluster``, else ``Redis``.

    ``url`` names any one node of a cluster; the client learns the others from it.
    """
    import redis

    if not cluster:
        return redis.Redis.from_url(url, **options)
    from redis.cluster import RedisCluster

    options.pop("single_connection_client", None)
    return RedisCluster.from_url(url, **options)


def cluster_hint(error: BaseException) -> str:
    """What to add to the message of ``error`` when it says Redis is a cluster node."""
    from redis.exceptions import AskError

    if isinstance(error, AskError):
        return " (the server is a node of a Redis Cluster: pass cluster=True)"
    return ""


def is_cluster(client: Any) -> bool:
    """Whether ``client`` is a ``RedisCluster``."""
    from redis.cluster import RedisCluster

    return isinstance(client, RedisCluster)


def run_scripts(
    client: Any, script: Any, calls: Sequence[tuple[Sequence[str], Sequence[str]]]
) -> list[Any]:
    """Run ``script`` (a registered redis-py ``Script``) once per ``(keys, args)``, pipelined.

    Returns one reply per call, in order, an exception standing for a call that failed (also
    when its whole round trip failed): the caller decides per call.
    """
    import redis

    if not is_cluster(client):
        if len(calls) == 1:
            # One call needs no pipeline (whose execute first asks SCRIPT EXISTS: a round
            # trip more); the script loads itself when Redis does not know it.
            keys, args = calls[0]
            try:
                return [script(keys=list(keys), args=list(args), client=client)]
            except (redis.RedisError, ValueError) as error:  # ValueError: see _pipelined
                return [error]
        return _pipelined(client, script, calls, range(len(calls)))
    per_node: dict[str, tuple[Any, list[int]]] = {}
    for index, (keys, _) in enumerate(calls):
        node = client.get_node_from_key(keys[0])
        per_node.setdefault(node.name, (node, []))[1].append(index)
    replies: list[Any] = [None] * len(calls)
    for node, indexes in per_node.values():
        for index, reply in zip(
            indexes,
            _pipelined(client.get_redis_connection(node), script, calls, indexes),
            strict=True,
        ):
            if isinstance(reply, redis.ResponseError) and str(reply).startswith(("MOVED", "ASK")):
                # The slot moved (resharding, failover): once more through the cluster client,
                # which follows the redirect and refreshes its map of the slots.
                try:
                    keys, args = calls[index]
                    reply = script(keys=list(keys), args=list(args), client=client)
                except redis.RedisError as error:
                    reply = error
            replies[index] = reply
    return replies


def _pipelined(
    client: Any,
    script: Any,
    calls: Sequence[tuple[Sequence[str], Sequence[str]]],
    indexes: Sequence[int],
) -> list[Any]:
    import redis

    pipeline = client.pipeline(transaction=False)
    for index in indexes:
        keys, args = calls[index]
        script(keys=list(keys), args=list(args), client=pipeline)
    try:
        replies: list[Any] = pipeline.execute(raise_on_error=False)
    except (redis.RedisError, ValueError) as error:  # ValueError: text Redis cannot take
        return [error] * len(indexes)
    return replies
