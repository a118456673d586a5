"""Redis keys: no two stream ids, parts or conversations meet; each id's keys share one slot.

Before, ``RedisHub`` and ``RedisStore`` shared one key space and the hub's claim deleted
``<prefix><stream_id>`` first: running ``conversation:<id>``, ``index`` or ``version`` destroyed
stored conversations, and ``victim:run`` wrecked the running stream ``victim``.
"""

from __future__ import annotations

import threading
import uuid

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.crc import key_slot

from reasoning_stream import Conversation, ReasoningDelta, TextDelta, UsageError
from reasoning_stream.hub import RedisHub, StreamExistsError
from reasoning_stream.hub._redis_codec import stream_keys
from reasoning_stream.store import RedisStore
from reasoning_stream.testing import ScriptedPipe
from tests.helpers import examples
from tests.redis_server import RedisServer, redis_cluster_url

__all__ = ["redis_cluster_url"]

ids = st.text(st.sampled_from("ab:{}%7B5D-_ é"), min_size=1, max_size=8)
"""Ids built from what could confuse a key layout: colons, braces, percent signs."""

HUB_PARTS = ("", ":run", ":lease")


def hub_keys(prefix: str, stream_id: str) -> dict[str, str]:
    return dict(zip(HUB_PARTS, stream_keys(prefix, stream_id), strict=True))


def store_keys(store: RedisStore, conversation_id: str) -> list[str]:
    return [key.decode() for key in store._keys(conversation_id)]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(ids, min_size=2, max_size=6, unique=True))
def test_no_two_ids_or_parts_share_a_key_and_one_id_shares_one_slot(names: list[str]) -> None:
    """Any ids, hub and store under the same prefix: every key is distinct; the keys of one id
    hash to one Redis Cluster slot (so one script may touch them all)."""
    store = RedisStore("redis://127.0.0.1:1/0", namespace="rs", timeout=0.1)
    seen: dict[str, tuple[str, str, str]] = {}
    for name in names:
        owned = [("hub", part, key) for part, key in hub_keys("rs:", name).items()]
        owned += [("store", "", key) for key in store_keys(store, name)]
        assert len({key_slot(key.encode()) for _, _, key in owned}) == 1
        for side, part, key in owned:
            assert key not in seen, f"{(side, name, part)} and {seen[key]} share {key!r}"
            seen[key] = (side, name, part)
    store.close()


def test_a_prefix_with_braces_is_refused() -> None:
    with pytest.raises(UsageError, match="prefix"):
        RedisHub("redis://127.0.0.1:1/0", prefix="app{1}:")
    with pytest.raises(UsageError, match="namespace"):
        RedisStore("redis://127.0.0.1:1/0", namespace="app{1}")


def test_streams_named_like_store_keys_leave_conversations_alone(
    redis_server: RedisServer,
) -> None:
    """The default prefix and namespace, one server: streams named after the store's keys."""
    with RedisStore(redis_server.url) as store, RedisHub(redis_server.url) as hub:
        kept = Conversation().add_user("keep me")
        version = store.save("c1", kept)
        for stream_id in (
            "conversation:c1",
            "turns:c1",
            "index",
            "version",
            "{c1}:conversation",
            "{c1}:turns",
            "{c1}:version",
        ):
            hub.run(stream_id, ScriptedPipe([TextDelta("x")]), "go")
        assert store.load("c1") == (kept, version)
        assert store.list() == ["c1"]
        assert store.append("c1", {"role": "user", "content": "more"}) > version


def test_a_stream_named_after_another_streams_claim_does_not_wreck_it(redis_url: str) -> None:
    """``victim:run`` (and ``victim:lease``) run while ``victim`` runs: all three complete."""
    victim = f"victim-{uuid.uuid4().hex}"
    with RedisHub(redis_url) as hub:
        outcome: dict[str, object] = {}

        def slow() -> None:
            script = [ReasoningDelta("a"), 0.3, ReasoningDelta("b"), 0.3, TextDelta("done")]
            outcome["result"] = hub.run(victim, ScriptedPipe(script), "go")

        thread = threading.Thread(target=slow)
        thread.start()
        for suffix in (":run", ":lease"):
            hub.run(victim + suffix, ScriptedPipe([TextDelta("other")]), "go")
        thread.join(20)
        assert not thread.is_alive()
        result = outcome["result"]
        assert result.text == "done"  # type: ignore[attr-defined]
        entries = hub.read(victim)
        assert entries[-1].final and entries[-1].status == "completed"
        assert "".join(e.chunk for e in entries) == "<think>ab</think>done"


@pytest.mark.anyio
async def test_of_two_runs_claiming_one_id_at_once_exactly_one_runs(redis_url: str) -> None:
    """Two hubs (as two processes would), one id, started together: one runs, one is refused
    before its pipe is called."""
    stream_id = f"claim-{uuid.uuid4().hex}"
    hubs = [RedisHub(redis_url), RedisHub(redis_url)]
    pipes = [ScriptedPipe([0.2, TextDelta(f"run {n}")]) for n in range(2)]
    outcomes: list[object] = [None, None]

    async def run(n: int) -> None:
        try:
            outcomes[n] = (await hubs[n].arun(stream_id, pipes[n], "go")).text
        except StreamExistsError as error:
            outcomes[n] = error

    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                for n in range(2):
                    group.start_soon(run, n)
    finally:
        for hub in hubs:
            hub.close()
    refused = [o for o in outcomes if isinstance(o, StreamExistsError)]
    assert len(refused) == 1 and isinstance(refused[0], UsageError)
    winner = next(o for o in outcomes if isinstance(o, str))
    assert sum(len(p.prompts) for p in pipes) == 1
    assert "".join(e.chunk for e in hubs[0].read(stream_id)) == winner


@pytest.mark.anyio
async def test_task_group_start_returns_once_the_id_is_claimed(redis_url: str) -> None:
    """``await group.start(hub.arun, ...)``: after it returns, the id is taken everywhere."""
    stream_id = f"start-{uuid.uuid4().hex}"
    with RedisHub(redis_url) as hub, RedisHub(redis_url) as other:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                await group.start(hub.arun, stream_id, ScriptedPipe([0.5, TextDelta("a")]), "go")
                assert not hub.read(stream_id)  # nothing published yet...
                with pytest.raises(StreamExistsError):  # ...but the id is taken
                    await other.arun(stream_id, ScriptedPipe([TextDelta("b")]), "go")
        assert "".join(e.chunk for e in other.read(stream_id)) == "a"


@pytest.mark.anyio
async def test_one_reader_hub_follows_streams_on_every_node_of_a_cluster(
    redis_cluster_url: str,
) -> None:
    """Twelve streams, spread over the three masters by their hash tags, run at once; one hub
    follows them all (its reader thread reads every node) and gets every channel whole."""
    from reasoning_stream.hub import Entry

    with (
        RedisHub(redis_cluster_url, cluster=True) as writer,
        RedisHub(redis_cluster_url, cluster=True) as reader,
    ):
        # Four ids per master, picked by where their hash tag lands (twelve random ids all
        # miss one of three masters about one run in forty).
        per_node: dict[str, list[str]] = {}
        while len(per_node) < 3 or any(len(chosen) < 4 for chosen in per_node.values()):
            candidate = f"spread-{uuid.uuid4().hex}"
            key = stream_keys("reasoning-stream:", candidate)[0]
            chosen = per_node.setdefault(reader._client.get_node_from_key(key).name, [])
            if len(chosen) < 4:
                chosen.append(candidate)
        ids = [stream_id for chosen in per_node.values() for stream_id in chosen]
        assert len(per_node) == 3 and len(ids) == 12
        got: dict[str, list[Entry]] = {i: [] for i in ids}

        async def follow(stream_id: str) -> None:
            async for entry in reader.subscribe(stream_id, timeout=10):
                got[stream_id].append(entry)

        async def run(n: int, stream_id: str) -> None:
            script = [item for k in range(5) for item in (TextDelta(f"{n}.{k} "), 0.01)]
            await writer.arun(stream_id, ScriptedPipe(script), "go")

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for stream_id in ids:
                    group.start_soon(follow, stream_id)
                for n, stream_id in enumerate(ids):
                    group.start_soon(run, n, stream_id)
        for n, stream_id in enumerate(ids):
            assert "".join(e.chunk for e in got[stream_id]) == "".join(
                f"{n}.{k} " for k in range(5)
            )
            assert got[stream_id][-1].final
