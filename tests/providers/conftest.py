"""What the provider tests share: the loopback server, the ways a test drives a pipe, clients
aimed at the server, and what every test asserts of the channel.

Fixtures here are found by name; the helpers are imported (``from tests.providers.conftest
import serve``). A module whose tests run once per flavour (``run()``, then ``arun()`` on asyncio
and on trio) takes the ``flavour`` fixture and binds its event loop with
``from tests.providers.conftest import flavour_backend as anyio_backend``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import anyio
import boto3
import pytest
from botocore.config import Config

from reasoning_stream import PipeResult, ReasoningStream
from reasoning_stream.testing._wire import RecordedRequest, Reply, Transcript, WireServer

Mode = Literal["run", "arun"]


@pytest.fixture(params=["run", "arun"])
def mode(request: pytest.FixtureRequest) -> Mode:
    """``run()`` (the sync client, in a worker thread) or ``arun()`` (the async one)."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=["sync", "asyncio", "trio"])
def flavour(request: pytest.FixtureRequest) -> str:
    """``sync`` drives run() with the sync client; the others arun() on that event loop."""
    return str(request.param)


@pytest.fixture
def flavour_backend(flavour: str) -> str:
    """The event loop of a flavour: the sync one needs none, so it runs once, under asyncio."""
    return "trio" if flavour == "trio" else "asyncio"


@pytest.fixture(scope="module")
def wire() -> Iterator[WireServer]:
    """One loopback server for the module; each test gets its own path prefix on it."""
    with WireServer() as server:
        yield server


async def drive(pipe: Any, prompt: Any, mode: str) -> PipeResult:
    """Run ``pipe`` on ``prompt`` the way ``mode`` says: ``run()`` in a worker thread for
    ``"run"`` (and ``"sdk-run"``, ``"httpx-run"``), else ``arun()``."""
    if mode == "run" or mode.endswith("-run"):
        result: PipeResult = await anyio.to_thread.run_sync(pipe.run, prompt)
        return result
    return await pipe.arun(prompt)  # type: ignore[no-any-return]


_prefixes = itertools.count()


@dataclass(frozen=True)
class Served:
    """The replies of one test, under a path prefix of the shared server."""

    server: WireServer
    prefix: str

    @property
    def base_url(self) -> str:
        return f"{self.server.url}{self.prefix}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        return [r for r in self.server.requests if r.path.startswith(self.prefix + "/")]


def serve(server: WireServer, *replies: str | Transcript | Reply, **options: Any) -> Served:
    """Queue ``replies`` (transcript names, transcripts or replies) under a fresh prefix."""
    prefix = f"/case{next(_prefixes)}"
    for item in replies:
        reply = item if isinstance(item, Reply) else Reply(_transcript(item), **options)
        transcript = replace(reply.transcript, path=prefix + reply.transcript.path)
        server.add(replace(reply, transcript=transcript))
    return Served(server, prefix)


def _transcript(item: str | Transcript) -> Transcript:
    return Transcript.load(item) if isinstance(item, str) else item


def bedrock_client(server: WireServer | str, region: str = "us-east-1") -> Any:
    """A real boto3 client aimed at the WireServer (or its URL), with dummy keys and no
    retries."""
    return boto3.client(
        "bedrock-runtime",
        region_name=region,
        endpoint_url=server if isinstance(server, str) else server.url,
        aws_access_key_id="x",
        aws_secret_access_key="x",
        # total_max_attempts=1 is one try in all; botocore reads max_attempts as retries.
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )


def assert_channel_matches(chunks: Sequence[str], result: Any) -> None:
    """The channel, split at its markers, is the result's reasoning and answer, and whole."""
    split = ReasoningStream.split("".join(chunks), lossless=True)
    assert (split.reasoning, split.text) == (result.model_reasoning, result.text)
    assert not split.truncated
