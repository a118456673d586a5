"""Hubs given seal keys: the final entry carries the run's record sealed, and no raw state.

Run in memory, on one redis-server and on a three-node cluster. What Redis holds is read raw
(every field of every key of the stream, and ``DUMP``) and searched for any readable copy of
the signature. The cross-process test runs the writer in another process that alone holds the
raw state; this process's hub has no keys, and its app serves the envelope all the same.
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from reasoning_stream import (
    OpaqueState,
    ReasoningDelta,
    ReasoningState,
    TextDelta,
    UsageError,
)
from reasoning_stream.conversation import Conversation, TurnRecord
from reasoning_stream.conversation._envelopes import SealKeys
from reasoning_stream.hub import Hub, MemoryHub, RedisHub
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.web import create_app
from tests.conversation.test_envelopes import assert_unreadable
from tests.web.conftest import serve
from tests.web.sse import get, parse

KEY = secrets.token_bytes(32)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["memory", "redis", "redis-cluster"])
def hub(request: pytest.FixtureRequest) -> Iterator[Hub]:
    if request.param == "memory":
        yield MemoryHub(seal_keys=[KEY])
        return
    cluster = request.param == "redis-cluster"
    url = request.getfixturevalue("redis_cluster_url" if cluster else "redis_url")
    redis_hub = RedisHub(url, cluster=cluster, seal_keys=[KEY])
    try:
        yield redis_hub
    finally:
        redis_hub.close()


def signed(signature: str, *tail: Any) -> list[Any]:
    state = ReasoningState("scripted", "scripted", "signature", signature, block=0)
    return [ReasoningDelta("visible"), OpaqueState(state), TextDelta("answer"), *tail]


def opened(envelope: str, text: str) -> TurnRecord:
    """The one record of a one-step run's envelope, opened for the turn that said ``text``."""
    (record,) = SealKeys([KEY]).open_for(envelope, [(text, [])])
    return record


def raw_redis(hub: RedisHub, stream_id: str) -> list[str]:
    """Everything Redis holds for the stream, read raw: fields, values and dumps."""
    from reasoning_stream._redis_client import connect
    from reasoning_stream.hub._redis_codec import stream_keys

    client = connect(hub.url, cluster=hub.cluster)
    found: list[str] = []
    try:
        log, claim, _lease = stream_keys(hub.prefix, stream_id)
        for _id, fields in client.xrange(log):
            found += [repr(fields)]
        found.append(repr(client.hgetall(claim)))
        found += [repr(client.dump(key)) for key in (log, claim)]
    finally:
        client.close()
    return found


def test_the_final_entry_carries_the_sealed_record_and_nothing_holds_raw_state(hub: Hub) -> None:
    signature = "sig-" + secrets.token_urlsafe(24)
    stream_id = uuid.uuid4().hex
    result = hub.run(stream_id, ScriptedPipe(signed(signature)), "go")
    entries = hub.read(stream_id)
    *body, final = entries
    assert final.final and final.envelope is not None
    assert all(entry.envelope is None for entry in body)
    assert opened(final.envelope, "answer") == TurnRecord.from_result(result)
    assert_unreadable(signature, repr(entries))
    if isinstance(hub, RedisHub):
        assert_unreadable(signature, *raw_redis(hub, stream_id))


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.anyio
async def test_an_async_run_and_a_stopped_one_are_sealed_too(anyio_backend: str) -> None:
    hub = MemoryHub(seal_keys=[KEY])
    result = await hub.arun("async", ScriptedPipe(signed("sig-a")), "go")
    final = hub.read("async")[-1]
    assert final.envelope and opened(final.envelope, "answer") == TurnRecord.from_result(result)

    pipe = ScriptedPipe(signed("sig-b", 30.0, TextDelta("never")))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(hub.arun, "stopped", pipe, "go")
            while not any(entry.chunk == "answer" for entry in hub.read("stopped")):
                await anyio.sleep(0.01)
            assert await hub.astop("stopped")
    final = hub.read("stopped")[-1]
    assert final.status == "cancelled_after_partial_answer" and final.envelope
    record = opened(final.envelope, "answer")
    assert [state.payload for state in record.states] == ["sig-b"]


def test_a_hub_without_keys_seals_nothing() -> None:
    hub = MemoryHub()
    hub.run("plain", ScriptedPipe(signed("sig-c")), "go")
    assert all(entry.envelope is None for entry in hub.read("plain"))


@pytest.mark.parametrize("keys", [[b"short"], "one key, not a list", [], [42]])
def test_bad_keys_fail_when_the_hub_is_made(keys: Any, redis_url: str) -> None:
    with pytest.raises(UsageError, match="seal_keys"):
        MemoryHub(seal_keys=keys)
    with pytest.raises(UsageError, match="seal_keys"):
        RedisHub(redis_url, seal_keys=keys)


def test_an_app_in_another_process_serves_envelopes_it_could_not_have_made(
    redis_url: str,
) -> None:
    """The writer process alone holds the raw signature; this one has no hub keys."""
    stream_id = f"sealed-{uuid.uuid4().hex}"
    text_key = base64.urlsafe_b64encode(KEY).decode()
    done = subprocess.run(
        [sys.executable, "-m", "tests.hub.sealed_writer", redis_url, stream_id, text_key],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    written = json.loads(done.stdout)
    assert written["status"] == "completed"
    with RedisHub(redis_url) as reader:
        assert reader.seal_keys is None
        assert_unreadable(written["signature"], *raw_redis(reader, stream_id))
        with serve(create_app(reader, timeout=5, seal_keys=[KEY])) as url:
            served = get(f"{url}/streams/{stream_id}?protocol=ag-ui").text
    assert_unreadable(written["signature"], served)
    events = [event.json() for event in parse(served)]
    sealed = [event for event in events if event["type"] == "REASONING_ENCRYPTED_VALUE"]
    assert len(sealed) == 1
    history = [
        {"id": "u", "role": "user", "content": "go"},
        {"id": sealed[0]["entityId"], "role": "assistant", "content": "42"},
    ]
    history[1]["encryptedValue"] = sealed[0]["encryptedValue"]
    conversation = Conversation.from_ag_ui(history, seal_keys=[secrets.token_bytes(32), KEY])
    record = conversation.record(1)
    assert record is not None and record.envelope_problem is None
    assert [state.payload for state in record.states] == [written["signature"]]


def test_a_pipeline_seals_the_record_of_its_last_pipe() -> None:
    """The answer a client keeps is the last pipe's: so is the turn the envelope holds."""
    hub = MemoryHub(seal_keys=[KEY])
    first = ScriptedPipe(signed("sig-first"), name="first")
    second = ScriptedPipe(lambda prompt: signed("sig-second"), name="second")
    result = hub.run("pipeline", first | second, "go")
    final = hub.read("pipeline")[-1]
    assert final.envelope is not None
    assert opened(final.envelope, "answeranswer") == TurnRecord.from_result(result.results[-1])
