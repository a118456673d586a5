"""A password in a Redis URL, one with ``@`` inside it, never appears in an error, in the
error's ``__cause__``/``__context__`` chain (or its notes), or in a log line."""

from __future__ import annotations

import logging
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from reasoning_stream import Conversation, TextDelta
from reasoning_stream.hub import HubError, PublishError, RedisHub
from reasoning_stream.store import RedisStore, StoreError
from reasoning_stream.testing import ScriptedPipe
from tests.redis_server import free_port, running_redis

PASSWORD = "s3cr@t:pa55@w0rdX9"
SECRETS = ("s3cr", "pa55", "w0rdX9", "s3cr%40t")
"""Pieces of the password, raw and percent-encoded: none of them may show anywhere."""


def chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and every exception behind it (cause, context), each once."""
    seen: set[int] = set()
    todo = [error]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [e for e in (current.__cause__, current.__context__) if e is not None]


def assert_no_secret(error: BaseException, caplog: pytest.LogCaptureFixture) -> None:
    for link in chain(error):
        shown = " ".join(
            [str(link), repr(link), *map(str, link.args), *getattr(link, "__notes__", [])]
        )
        for secret in SECRETS:
            assert secret not in shown, f"{type(link).__name__} shows the password: {shown}"
    for record in caplog.records:
        line = logging.Formatter("%(message)s %(exc_info)s").format(record)
        for secret in SECRETS:
            assert secret not in line, f"a log line shows the password: {line}"


def url(port: int, password: str = PASSWORD) -> str:
    from urllib.parse import quote

    # Percent-encoded the way a careful user writes it, and also raw (redis-py takes both).
    return f"redis://app:{quote(password, safe='')}@127.0.0.1:{port}/0"


def raw_url(port: int) -> str:
    return f"redis://app:{PASSWORD}@127.0.0.1:{port}/0"


@pytest.fixture(params=["encoded", "raw"])
def down(request: pytest.FixtureRequest) -> str:
    """A URL with the password, to a port where nothing listens."""
    port = free_port()
    return url(port) if request.param == "encoded" else raw_url(port)


@pytest.fixture(scope="module")
def guarded() -> Iterator[int]:
    """A redis-server that wants a password other than ours."""
    import redis

    with (
        tempfile.TemporaryDirectory(prefix="redis-auth-") as folder,
        running_redis(Path(folder)) as server,
    ):
        client = redis.Redis(port=server.port)
        client.config_set("requirepass", "another-one")
        client.close()
        yield server.port


def test_hub_run_on_a_redis_that_is_down(down: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with RedisHub(down, connect_timeout=0.5) as hub:
        with pytest.raises(PublishError) as caught:
            hub.run(f"s-{uuid.uuid4().hex}", ScriptedPipe([TextDelta("hi")]), "go")
        assert "***" in str(caught.value)
        assert_no_secret(caught.value, caplog)


@pytest.mark.anyio
async def test_hub_subscribe_on_a_redis_that_is_down(
    down: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with RedisHub(down, connect_timeout=0.5) as hub:
        with pytest.raises(HubError) as caught:
            with anyio.fail_after(20):
                async for _ in hub.subscribe(f"s-{uuid.uuid4().hex}", timeout=5):
                    pass
        assert_no_secret(caught.value, caplog)


def test_hub_with_a_wrong_password(guarded: int, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with RedisHub(raw_url(guarded)) as hub:
        with pytest.raises(PublishError) as caught:
            hub.run(f"s-{uuid.uuid4().hex}", ScriptedPipe([TextDelta("hi")]), "go")
        assert_no_secret(caught.value, caplog)
        with pytest.raises(Exception) as read_error:
            hub.read("anything")
        assert_no_secret(read_error.value, caplog)


@pytest.mark.parametrize("which", ["down", "wrong password"])
def test_store_errors(
    which: str, down: str, guarded: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    address = down if which == "down" else raw_url(guarded)
    with RedisStore(address, timeout=0.5) as store:
        assert "***" in repr(store) and all(s not in repr(store) for s in SECRETS)
        for attempt in (lambda: store.load("c"), lambda: store.list()):
            with pytest.raises(StoreError) as caught:
                attempt()
            assert_no_secret(caught.value, caplog)


def test_the_right_password_with_at_signs_works() -> None:
    import redis

    with (
        tempfile.TemporaryDirectory(prefix="redis-auth-") as folder,
        running_redis(Path(folder)) as server,
    ):
        client = redis.Redis(port=server.port)
        client.acl_setuser(
            "app", enabled=True, passwords=[f"+{PASSWORD}"], keys="*", commands=["+@all"]
        )
        client.close()
        for address in (url(server.port), raw_url(server.port)):
            with RedisHub(address) as hub, RedisStore(address) as store:
                stream_id = f"s-{uuid.uuid4().hex}"
                assert hub.run(stream_id, ScriptedPipe([TextDelta("hi")]), "go").text == "hi"
                assert hub.read(stream_id)[-1].final
                store.save(stream_id, Conversation())
                assert stream_id in store.list()
                assert all(s not in hub.url_for_messages for s in SECRETS)
