"""Reliability suite: hostile wire input, faults, secrets and load, for every provider pipe.

The four test modules share the kit below, kept in the package itself so that each module can
stay a list of laws:

* ``TARGETS``: every provider pipe (and transport) with the bundled transcripts it streams,
  and how to point it at a :class:`WireServer`, sync or async, with a read timeout.
* ``play()``: serve one reply under a fresh path prefix of a shared server, run the pipe
  (``run()``, or ``arun()`` on asyncio or trio) and collect the outcome.
* ``check_outcome()``: the promises every outcome keeps, however hostile the bytes were.
* Transcript surgery: mutate the JSON of one event, reorder events, splice raw bytes.
* ``RESOURCE_CHECKS``: every module's ``pytestmark``, so an unclosed socket fails its test.

``RELIABILITY_TALLY=<file>`` logs every case ``play()`` runs, one JSON line each, for the
README's table of cases tried and faults survived.
"""

from __future__ import annotations

import base64
import functools
import gc
import itertools
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

import anthropic
import anyio
import boto3
import httpx
import ollama
import openai
import pytest
from botocore.config import Config

from reasoning_stream import Event, ReasoningStream
from reasoning_stream._exceptions import ProviderError, ReasoningStreamError
from reasoning_stream._pipe import Pipe, PipeResult
from reasoning_stream.providers import (
    AnthropicPipe,
    BedrockPipe,
    GeminiPipe,
    OllamaPipe,
    OpenAIChatPipe,
    OpenAIResponsesPipe,
    OpenRouterPipe,
)
from reasoning_stream.providers._pipe import ProviderPipe
from reasoning_stream.providers._spec import provider_ids
from reasoning_stream.testing import Reply, Transcript, WireServer

__all__ = [
    "API_KEY",
    "CLOSE",
    "FLAVOURS",
    "OPEN",
    "RESOURCE_CHECKS",
    "TAG_SLACK",
    "TARGETS",
    "TIMEOUT",
    "Flavour",
    "Outcome",
    "Target",
    "assert_balanced",
    "body_of",
    "check_outcome",
    "collected_garbage",
    "fresh_prefix",
    "frozen_survivors",
    "has_body",
    "opaque_payloads",
    "open_connections",
    "paths",
    "play",
    "raw_transcript",
    "release",
    "replaced",
    "transcript",
    "under",
    "with_body",
    "with_events",
]

Flavour: TypeAlias = Literal["sync", "asyncio", "trio"]
FLAVOURS: tuple[Flavour, ...] = ("sync", "asyncio", "trio")

API_KEY = "sk-test-SECRET-123"
"""A key distinctive enough that finding it anywhere in an error or a repr is a leak."""

TIMEOUT = 5.0
"""Read timeout given to every client: a stream that stalls fails the run, never the suite."""

OPEN = ReasoningStream.OPEN_TAG
CLOSE = ReasoningStream.CLOSE_TAG

# Every client below skips TLS setup (the server is plain HTTP on loopback): building an SSL
# context costs ~20 ms, which hundreds of generated cases cannot afford.


@dataclass
class Built:
    """A pipe aimed at a server, and how to release the client it was given."""

    pipe: Pipe
    close: Callable[[], Any]


@dataclass(frozen=True)
class Target:
    """One provider pipe (and transport) and the bundled transcripts it streams."""

    name: str
    transcripts: tuple[str, ...]
    """Streaming transcripts (HTTP 200) this pipe reads."""
    build: Callable[[str, Flavour, float, str], Built]
    """``build(server_url_with_prefix, flavour, timeout, transcript_name)``."""
    provider: str
    showcase: str
    """A transcript with reasoning, then an answer."""
    own: Callable[[str, float, str], ProviderPipe]
    """``own(server_url_with_prefix, timeout, transcript_name)``: a pipe given only
    ``base_url`` and ``api_key``, which builds its SDK client itself."""
    error_transcripts: tuple[str, ...] = ()
    """Transcripts whose reply is an HTTP error (429, 5xx, ...)."""


def _anthropic(url: str, flavour: Flavour, timeout: float, name: str) -> Built:
    client: Any
    if flavour == "sync":
        client = anthropic.Anthropic(
            base_url=url,
            api_key=API_KEY,
            max_retries=0,
            timeout=timeout,
            http_client=anthropic.DefaultHttpxClient(verify=False),
        )
    else:
        client = anthropic.AsyncAnthropic(
            base_url=url,
            api_key=API_KEY,
            max_retries=0,
            timeout=timeout,
            http_client=anthropic.DefaultAsyncHttpxClient(verify=False),
        )
    pipe = AnthropicPipe(
        "claude-sonnet-4-6",
        client=client,
        thinking={"type": "enabled", "budget_tokens": 2048},
        timeout=timeout,
    )
    return Built(pipe, client.close)


def _openai_client(url: str, flavour: Flavour, timeout: float) -> Any:
    if flavour == "sync":
        return openai.OpenAI(
            base_url=url,
            api_key=API_KEY,
            max_retries=0,
            timeout=timeout,
            http_client=openai.DefaultHttpxClient(verify=False),
        )
    return openai.AsyncOpenAI(
        base_url=url,
        api_key=API_KEY,
        max_retries=0,
        timeout=timeout,
        http_client=openai.DefaultAsyncHttpxClient(verify=False),
    )


def _responses(url: str, flavour: Flavour, timeout: float, name: str) -> Built:
    client = _openai_client(url + "/v1", flavour, timeout)
    pipe = OpenAIResponsesPipe("o4-mini", client=client, timeout=timeout)
    return Built(pipe, client.close)


def _anthropic_httpx(url: str, flavour: Flavour, timeout: float, name: str) -> Built:
    client = _httpx_client(flavour, timeout)
    pipe = AnthropicPipe(
        "claude-sonnet-4-6",
        transport="httpx",
        http_client=client,
        base_url=url,
        api_key=API_KEY,
        thinking={"type": "enabled", "budget_tokens": 2048},
        timeout=timeout,
    )
    return Built(pipe, _closer(client))


def _responses_httpx(url: str, flavour: Flavour, timeout: float, name: str) -> Built:
    client = _httpx_client(flavour, timeout)
    pipe = OpenAIResponsesPipe(
        "o4-mini",
        transport="httpx",
        http_client=client,
        base_url=url + "/v1",
        api_key=API_KEY,
        timeout=timeout,
    )
    return Built(pipe, _closer(client))


def _ollama_httpx(url: str, flavour: Flavour, timeout: float, name: str) -> Built:
    client = _httpx_client(flavour, timeout)
    api: Literal["chat", "generate"] = "generate" if "generate" in name else "chat"
    pipe = OllamaPipe(
        "qwen3",
        transport="httpx",
        http_client=client,
        base_url=url,
        api=api,
        think=True,
        timeout=timeout,
    )
    return Built(pipe, _closer(client))


def _chat_model(name: str) -> str:
    # The R1 transcript relies on the model id: its template pre-fills the open tag.
    return "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B" if "r1" in name else "Qwen/Qwen3-8B"


def _chat_sdk(url: str, flavour: Flavour, timeout: float, name: str) -> Built:
    client = _openai_client(url + "/v1", flavour, timeout)
    pipe = OpenAIChatPipe(_chat_model(name), client=client, timeout=timeout)
    return Built(pipe, client.close)


def _httpx_client(flavour: Flavour, timeout: float) -> httpx.Client | httpx.AsyncClient:
    if flavour == "sync":
        return httpx.Client(verify=False, timeout=timeout)
    return httpx.AsyncClient(verify=False, timeout=timeout)


def _closer(client: httpx.Client | httpx.AsyncClient) -> Callable[[], Any]:
    return client.close if isinstance(client, httpx.Client) else client.aclose


def _chat_httpx(url: str, flavour: Flavour, timeout: float, name: str) -> Built:
    client = _httpx_client(flavour, timeout)
    pipe = OpenAIChatPipe(
        _chat_model(name),
        transport="httpx",
        http_client=client,
        base_url=url + "/v1",
        api_key=API_KEY,
        timeout=timeout,
    )
    return Built(pipe, _closer(client))


def _openrouter(url: str, flavour: Flavour, timeout: float, name: str) -> Built:
    client = _httpx_client(flavour, timeout)
    pipe = OpenRouterPipe(
        "deepseek/deepseek-r1",
        http_client=client,
        base_url=url + "/api/v1",
        api_key=API_KEY,
        timeout=timeout,
    )
    return Built(pipe, _closer(client))


CLAUDE_ON_BEDROCK = "us.anthropic.claude-sonnet-4-20250514-v1:0"
DEEPSEEK_ON_BEDROCK = "us.deepseek.r1-v1:0"


def _bedrock(url: str, flavour: Flavour, timeout: float, name: str) -> Built:
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key=API_KEY,
        config=Config(
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=timeout,
            read_timeout=timeout,
        ),
    )
    model = DEEPSEEK_ON_BEDROCK if "deepseek" in name else CLAUDE_ON_BEDROCK
    api: Literal["converse", "invoke"] = "invoke" if "invoke" in name else "converse"
    pipe = BedrockPipe(model, client=client, api=api, timeout=timeout)
    return Built(pipe, client.close)


def _ollama(url: str, flavour: Flavour, timeout: float, name: str) -> Built:
    client: Any = (ollama.Client if flavour == "sync" else ollama.AsyncClient)(
        host=url, timeout=timeout, verify=False
    )
    api: Literal["chat", "generate"] = "generate" if "generate" in name else "chat"
    pipe = OllamaPipe("qwen3", client=client, api=api, think=True, timeout=timeout)
    return Built(pipe, client.close)


GEMINI_PATH = re.compile(r"/v1beta/models/(?P<model>[^/:]+):streamGenerateContent")


def _gemini(url: str, flavour: Flavour, timeout: float, name: str) -> Built:
    client = _httpx_client(flavour, timeout)
    match = GEMINI_PATH.fullmatch(transcript(name).path)
    model = match["model"] if match else "gemini-2.5-flash"
    pipe = GeminiPipe(
        model, client=client, base_url=url + "/v1beta", api_key=API_KEY, timeout=timeout
    )
    return Built(pipe, _closer(client))


# Pipes that build their own clients from base_url and api_key, as most users will write them.
# Bedrock takes no key: boto3 reads AWS_SECRET_ACCESS_KEY, which tests set to API_KEY.


def _own_anthropic(url: str, timeout: float, name: str) -> ProviderPipe:
    return AnthropicPipe("claude-sonnet-4-6", base_url=url, api_key=API_KEY, timeout=timeout)


def _own_anthropic_httpx(url: str, timeout: float, name: str) -> ProviderPipe:
    return AnthropicPipe(
        "claude-sonnet-4-6", transport="httpx", base_url=url, api_key=API_KEY, timeout=timeout
    )


def _own_responses_httpx(url: str, timeout: float, name: str) -> ProviderPipe:
    return OpenAIResponsesPipe(
        "o4-mini", transport="httpx", base_url=url + "/v1", api_key=API_KEY, timeout=timeout
    )


def _own_ollama_httpx(url: str, timeout: float, name: str) -> ProviderPipe:
    api: Literal["chat", "generate"] = "generate" if "generate" in name else "chat"
    return OllamaPipe(
        "qwen3", transport="httpx", base_url=url, api_key=API_KEY, api=api, timeout=timeout
    )


def _own_responses(url: str, timeout: float, name: str) -> ProviderPipe:
    return OpenAIResponsesPipe("o4-mini", base_url=url + "/v1", api_key=API_KEY, timeout=timeout)


def _own_chat_sdk(url: str, timeout: float, name: str) -> ProviderPipe:
    return OpenAIChatPipe(_chat_model(name), base_url=url + "/v1", api_key=API_KEY, timeout=timeout)


def _own_chat_httpx(url: str, timeout: float, name: str) -> ProviderPipe:
    return OpenAIChatPipe(
        _chat_model(name),
        transport="httpx",
        base_url=url + "/v1",
        api_key=API_KEY,
        timeout=timeout,
    )


def _own_openrouter(url: str, timeout: float, name: str) -> ProviderPipe:
    return OpenRouterPipe(
        "deepseek/deepseek-r1", base_url=url + "/api/v1", api_key=API_KEY, timeout=timeout
    )


def _own_bedrock(url: str, timeout: float, name: str) -> ProviderPipe:
    model = DEEPSEEK_ON_BEDROCK if "deepseek" in name else CLAUDE_ON_BEDROCK
    api: Literal["converse", "invoke"] = "invoke" if "invoke" in name else "converse"
    return BedrockPipe(model, base_url=url, region_name="us-east-1", api=api, timeout=timeout)


def _own_ollama(url: str, timeout: float, name: str) -> ProviderPipe:
    api: Literal["chat", "generate"] = "generate" if "generate" in name else "chat"
    return OllamaPipe("qwen3", base_url=url, api_key=API_KEY, api=api, timeout=timeout)


def _own_gemini(url: str, timeout: float, name: str) -> ProviderPipe:
    match = GEMINI_PATH.fullmatch(transcript(name).path)
    model = match["model"] if match else "gemini-2.5-flash"
    return GeminiPipe(model, base_url=url + "/v1beta", api_key=API_KEY, timeout=timeout)


def _bundled(prefix: str, *, streaming: bool) -> tuple[str, ...]:
    names = []
    for name in Transcript.bundled():
        if not name.startswith(prefix):
            continue
        loaded = Transcript.load(name)
        if loaded.status == 200 and loaded.format == "json":
            continue  # a one-shot body (stream=False): neither a stream nor an error reply
        if (loaded.status == 200) == streaming:
            names.append(name)
    return tuple(names)


@dataclass(frozen=True)
class _Variant:
    """One way to drive a provider's pipe: its SDK client, or a lean transport."""

    name: str
    prefix: str
    """The bundled transcripts' name prefix."""
    build: Callable[[str, Flavour, float, str], Built]
    own: Callable[[str, float, str], ProviderPipe]
    showcase: str


# Per provider id: the pipe's clients and transports under test. The provider list itself is
# the registry's (provider_ids()): a provider added there without a line here fails below.
_VARIANTS: dict[str, tuple[_Variant, ...]] = {
    "openai-chat": (
        _Variant(
            "openai-chat-sdk", "openai_chat_", _chat_sdk, _own_chat_sdk,
            "openai_chat_reasoning_content",
        ),
        _Variant(
            "openai-chat-httpx", "openai_chat_", _chat_httpx, _own_chat_httpx,
            "openai_chat_reasoning_content",
        ),
    ),
    "openai-responses": (
        _Variant(
            "openai-responses", "openai_responses_", _responses, _own_responses,
            "openai_responses_summary",
        ),
        _Variant(
            "openai-responses-httpx", "openai_responses_", _responses_httpx,
            _own_responses_httpx, "openai_responses_summary",
        ),
    ),
    "openrouter": (
        _Variant("openrouter", "openrouter_", _openrouter, _own_openrouter, "openrouter_reasoning"),
    ),
    "anthropic": (
        _Variant("anthropic", "anthropic_", _anthropic, _own_anthropic, "anthropic_thinking"),
        _Variant(
            "anthropic-httpx", "anthropic_", _anthropic_httpx, _own_anthropic_httpx,
            "anthropic_thinking",
        ),
    ),
    "bedrock": (
        _Variant("bedrock", "bedrock_", _bedrock, _own_bedrock, "bedrock_converse_reasoning"),
    ),
    "gemini": (_Variant("gemini", "gemini_", _gemini, _own_gemini, "gemini_reasoning"),),
    "ollama": (
        _Variant("ollama", "ollama_", _ollama, _own_ollama, "ollama_chat_reasoning"),
        _Variant(
            "ollama-httpx", "ollama_", _ollama_httpx, _own_ollama_httpx, "ollama_chat_reasoning"
        ),
    ),
}  # fmt: skip

_UNTESTED = set(provider_ids()) - set(_VARIANTS)
assert not _UNTESTED, f"registry providers without reliability targets: {sorted(_UNTESTED)}"


def _target(provider: str, variant: _Variant) -> Target:
    return Target(
        name=variant.name,
        transcripts=_bundled(variant.prefix, streaming=True),
        build=variant.build,
        provider=provider,
        showcase=variant.showcase,
        own=variant.own,
        error_transcripts=_bundled(variant.prefix, streaming=False),
    )


TARGETS: dict[str, Target] = {
    target.name: target
    for provider in provider_ids()
    for target in (_target(provider, variant) for variant in _VARIANTS[provider])
    if target.transcripts
}
"""Every provider pipe and transport, for every provider in the registry, whose transcripts
exist."""


@functools.cache
def transcript(name: str) -> Transcript:
    """A bundled transcript, loaded once (cases derive new ones; none is changed in place)."""
    return Transcript.load(name)


TAG_SLACK = 16
"""More than the longest tag a scanner may hold back (``</reasoning    >`` is 16 characters)."""


# ----------------------------------------------------------------------- resource hygiene


@pytest.fixture(scope="module")
def frozen_survivors() -> Iterator[None]:
    """Give the collector back every object frozen during the module (see below)."""
    yield
    gc.unfreeze()


@pytest.fixture
def collected_garbage(frozen_survivors: None) -> Iterator[None]:
    """Collect garbage at the end of each test, so what it leaked is reported against it.

    A socket or stream left unclosed warns when it is collected; collected here, the warning
    meets the test's own filters (``RESOURCE_CHECKS``) instead of some later test's.
    """
    yield
    gc.collect()
    # What survived (SDK type modules, module fixtures, caches) is moved out of the
    # collector's sight, so each test's collection scans only what that test made: a full
    # collection over everything the SDKs import costs ~0.2 s. Reference counting still frees
    # frozen objects, so a socket released later still warns.
    gc.freeze()


RESOURCE_CHECKS = [
    pytest.mark.usefixtures("collected_garbage"),
    pytest.mark.filterwarnings("error::ResourceWarning"),
    # A warning raised while an object is finalized cannot propagate: Python hands it to the
    # unraisable hook, which pytest reports as this warning. Collected at each test's end
    # (collected_garbage), it belongs to that test.
    pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning"),
    # Under trio, async generators that the SDKs and httpx leave suspended on an early exit
    # warn when collected; the response itself is closed. test_faults pins the part that is
    # this library's (test_early_exit_closes_the_sdk_iterators); the rest is upstream.
    pytest.mark.filterwarnings("ignore:Async generator:ResourceWarning"),
]
"""``pytestmark`` of every reliability module: an unclosed socket or stream fails the test."""


async def release(pipe: Pipe) -> None:
    """Close the clients a pipe built for itself: ``aclose()`` where it has one, and ``close()``."""
    aclose = getattr(pipe, "aclose", None)
    if callable(aclose):
        await aclose()
    close = getattr(pipe, "close", None)
    if callable(close):
        close()


# ---------------------------------------------------------------------------- playing


_prefixes = itertools.count()


def fresh_prefix() -> str:
    """A path prefix no other case uses, so a shared server routes each reply exactly."""
    return f"/case{next(_prefixes)}"


def under(prefix: str, reply: Reply) -> Reply:
    """``reply`` served below ``prefix`` (the client's base URL carries the same prefix)."""
    return replace(reply, transcript=replace(reply.transcript, path=prefix + reply.transcript.path))


@dataclass
class Outcome:
    """How one run ended: its result, the error it raised, and what the callbacks saw."""

    result: PipeResult
    error: ReasoningStreamError | None
    chunks: list[str]
    events: list[Event]
    seconds: float
    pipe: Pipe


def play(
    wire: WireServer,
    target: Target,
    name: str,
    reply: Reply,
    flavour: Flavour,
    *,
    timeout: float = TIMEOUT,
    prepare: Callable[[Pipe], object] | None = None,
) -> Outcome:
    """Serve ``reply`` under a fresh prefix, run the target's pipe on it and collect the outcome.

    ``name`` names the bundled transcript the reply derives from (it picks the model).
    ``prepare(pipe)`` runs before the collecting callbacks are added, so callbacks it adds
    come first in delivery order.
    Anything the run raises other than a ``ReasoningStreamError`` propagates and fails the
    test: that is the point.
    """
    prefix = fresh_prefix()
    wire.add(under(prefix, reply))
    url = wire.url + prefix
    if flavour == "sync":
        outcome = _play_sync(target, name, url, timeout, prepare)
    else:
        outcome = anyio.run(
            _play_async, target, name, url, flavour, timeout, prepare, backend=flavour
        )
    _tally(target, flavour, outcome)
    return outcome


def _tally(target: Target, flavour: Flavour, outcome: Outcome) -> None:
    """With ``RELIABILITY_TALLY=<file>``, log each case (a line of JSON) for the README table."""
    path = os.environ.get("RELIABILITY_TALLY")
    if not path:
        return
    record = {
        "test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0],
        "target": target.name,
        "flavour": flavour,
        "status": outcome.result.status,
        "error": type(outcome.error).__name__ if outcome.error else None,
        "captured": len(outcome.result.text) + len(outcome.result.model_reasoning),
    }
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")


def _collect(pipe: Pipe) -> tuple[list[str], list[Event]]:
    chunks: list[str] = []
    events: list[Event] = []
    pipe.set_streaming_callback(chunks.append)
    pipe.set_event_callback(events.append)
    return chunks, events


def _play_sync(
    target: Target,
    name: str,
    url: str,
    timeout: float,
    prepare: Callable[[Pipe], object] | None,
) -> Outcome:
    built = target.build(url, "sync", timeout, name)
    if prepare is not None:
        prepare(built.pipe)
    chunks, events = _collect(built.pipe)
    error: ReasoningStreamError | None = None
    started = time.perf_counter()
    try:
        built.pipe.run("Say something.")
    except ReasoningStreamError as raised:
        error = raised
    finally:
        built.close()
    seconds = time.perf_counter() - started
    result = built.pipe.last_result
    assert result is not None, "a run must always leave last_result"
    return Outcome(result, error, chunks, events, seconds, built.pipe)


async def _play_async(
    target: Target,
    name: str,
    url: str,
    flavour: Flavour,
    timeout: float,
    prepare: Callable[[Pipe], object] | None,
) -> Outcome:
    built = target.build(url, flavour, timeout, name)
    if prepare is not None:
        prepare(built.pipe)
    chunks, events = _collect(built.pipe)
    error: ReasoningStreamError | None = None
    started = time.perf_counter()
    try:
        # A generous outer bound: the client's read timeout must fire long before it.
        with anyio.fail_after(timeout * 4):
            await built.pipe.arun("Say something.")
    except ReasoningStreamError as raised:
        error = raised
    finally:
        closed = built.close()
        if closed is not None:
            await closed
    seconds = time.perf_counter() - started
    result = built.pipe.last_result
    assert result is not None, "a run must always leave last_result"
    return Outcome(result, error, chunks, events, seconds, built.pipe)


def open_connections(wire: WireServer) -> int:
    """Connections the server still holds open (its registry is the only view of that)."""
    with wire._lock:
        return len(wire._connections)


# ----------------------------------------------------------------------------- checks


MARKER = re.compile(re.escape(OPEN) + "|" + re.escape(CLOSE))


def assert_balanced(channel: str) -> None:
    """Markers alternate open, close, ... and the channel ends outside reasoning."""
    expected = OPEN
    for match in MARKER.finditer(channel):
        assert match.group() == expected, f"unbalanced marker {match.group()!r} at {match.start()}"
        expected = CLOSE if expected == OPEN else OPEN
    assert expected == OPEN, "the channel ends inside a reasoning segment"


def check_outcome(outcome: Outcome, *, provider: str, secrets: Sequence[str] = ()) -> None:
    """The promises every run keeps, whatever the wire did.

    Either a result or a ``ProviderError`` naming the provider; markers balanced; the channel
    splits back into exactly what the result captured (its text alone when the pipe does not
    stream reasoning); the error carries that same result; no opaque payload in the channel
    text or the error message.
    """
    result, error = outcome.result, outcome.error
    channel = "".join(outcome.chunks)
    if error is not None:
        assert isinstance(error, ProviderError), f"{type(error).__name__}: {error}"
        assert error.result is result, "the error must carry the run's result"
        assert error.provider == provider, (error.provider, str(error))
        assert provider in str(error), f"the message must name the provider: {error}"
        assert result.status == "error"
    else:
        assert result.status in ("completed", "length"), result.status
    assert_balanced(channel)
    split = ReasoningStream.split(channel, lossless=True)
    assert not split.truncated
    if outcome.pipe.stream_model_reasoning:
        assert (split.reasoning, split.text) == (result.model_reasoning, result.text)
    else:
        # Reasoning is captured but gated: not a byte of it, and no marker, in the channel.
        assert OPEN not in channel and CLOSE not in channel
        assert (split.reasoning, split.text) == ("", result.text)
    for secret in secrets:
        assert secret not in channel, "an opaque payload reached the channel"
        if error is not None:
            assert secret not in str(error), "an opaque payload reached an error message"


# ------------------------------------------------------------------- transcript surgery


_OPAQUE_KEYS = frozenset(
    {"signature", "encrypted_content", "redactedContent", "thoughtSignature", "data"}
)
# "data" is opaque only inside redacted or encrypted reasoning blocks.
_OPAQUE_DATA_TYPES = frozenset({"redacted_thinking", "reasoning.encrypted"})


def opaque_payloads(original: Transcript) -> list[str]:
    """Signatures, encrypted and redacted reasoning the transcript carries, as strings.

    A redacted payload Bedrock sends as base64 is listed both encoded and, where it decodes
    to text, decoded: neither form may ever reach the channel.
    """
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                if key in _OPAQUE_KEYS and isinstance(item, str) and len(item) >= 8:
                    if key != "data" or value.get("type") in _OPAQUE_DATA_TYPES:
                        found.append(item)
                    if key == "redactedContent":
                        decoded = base64.b64decode(item).decode("utf-8", "ignore")
                        if len(decoded) >= 8:
                            found.append(decoded)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk([body_of(event, original.format) for event in original.events])
    return sorted(set(found))


def body_of(event: Any, format: str) -> Any:
    """The JSON value an event carries (SSE ``data``, an NDJSON line, a frame's payload)."""
    if format == "sse":
        data = event.get("data") if isinstance(event, Mapping) else None
        if isinstance(data, str):
            try:
                return json.loads(data)
            except ValueError:
                return None
        return data
    if format == "eventstream":
        if "inner" in event:
            return event["inner"]
        return event.get("payload")
    return event


def with_body(event: Any, format: str, body: Any) -> Any:
    """``event`` carrying ``body`` instead of its JSON value."""
    if format == "sse":
        return {**event, "data": body if not isinstance(body, str) else json.dumps(body)}
    if format == "eventstream":
        key = "inner" if "inner" in event else "payload"
        return {**event, key: body}
    return body


def has_body(event: Any, format: str) -> bool:
    """Whether the event carries a JSON value (not ``[DONE]``, a comment or raw text)."""
    if format == "sse":
        data = event.get("data") if isinstance(event, Mapping) else None
        return isinstance(data, Mapping | list)
    if format == "eventstream":
        return "inner" in event or "payload" in event
    return True


def with_events(original: Transcript, events: Sequence[Any]) -> Transcript:
    """The transcript with another list of events."""
    return replace(original, events=list(events))


@dataclass(kw_only=True)
class RawTranscript(Transcript):
    """A transcript whose body pieces are given as bytes: for garbage no format can encode."""

    pieces: list[bytes] = field(default_factory=list)

    def chunks(self) -> list[bytes]:
        return list(self.pieces)


def raw_transcript(original: Transcript, pieces: Sequence[bytes]) -> RawTranscript:
    """``original``'s route, status and headers, with ``pieces`` as its body."""
    return RawTranscript(
        name=original.name,
        method=original.method,
        path=original.path,
        status=original.status,
        format=original.format,
        headers=dict(original.headers),
        events=list(original.events),
        newline=original.newline,
        pieces=list(pieces),
    )


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into a JSON value (the root included), depth first."""
    yield prefix
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


def replaced(value: Any, path: Sequence[Any], new: Any, *, delete: bool = False) -> Any:
    """A copy of ``value`` with the item at ``path`` replaced by ``new`` (or deleted)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, Mapping):
        copy = dict(value)
        if delete and not rest:
            copy.pop(head, None)
        else:
            copy[head] = replaced(value[head], rest, new, delete=delete)
        return copy
    assert isinstance(value, list)
    items = list(value)
    if delete and not rest:
        del items[head]
    else:
        items[head] = replaced(value[head], rest, new, delete=delete)
    return items
