"""Errors from Python name the URL a request went to and what to fix.

A wrong base URL (a missing ``/v1``), a closed port, a host that does not resolve (a name under
``.invalid``, which never resolves, so no network is touched), a URL without ``http://``, and a
server that dies mid-stream each read differently, through the official SDK and the httpx
transport against a loopback ``WireServer``; a password in the URL never reaches a message.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import anyio
import pytest

from reasoning_stream import MalformedStreamError, ProviderError
from reasoning_stream.providers import (
    AnthropicPipe,
    OllamaPipe,
    OpenAIChatPipe,
    OpenAIResponsesPipe,
)
from reasoning_stream.providers._pipe import ProviderPipe
from reasoning_stream.testing._wire import WireServer

KEY = "sk-test-key-0123456789"
TRANSPORTS = ["sdk", "httpx"]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _failure(pipe: ProviderPipe) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        pipe.run("hi")
    return caught.value


def _chat(base_url: str, transport: str) -> OpenAIChatPipe:
    return OpenAIChatPipe("o4-mini", base_url=base_url, api_key=KEY, transport=transport)


@pytest.fixture(scope="module")
def server() -> Iterator[WireServer]:
    with WireServer("openai_chat_reasoning_content") as wire:
        yield wire


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_missing_v1_names_the_url_and_the_shape(server: WireServer, transport: str) -> None:
    error = _failure(_chat(server.url, transport))
    message = str(error)
    assert error.status_code == 404
    assert f"{server.url} is not the API root" in message
    assert "ending in /v1" in message and "https://api.openai.com/v1" in message
    assert error.hint is not None and error.hint in message


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_closed_port_says_nothing_answered_there(transport: str) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    message = str(_failure(_chat(url, transport)))
    assert f"cannot connect to {url}" in message
    assert "is the server running" in message
    assert "Connection error." not in message


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_host_that_does_not_resolve_is_named(transport: str) -> None:
    message = str(_failure(_chat("http://no-such-host.invalid/v1", transport)))
    assert "cannot resolve the host 'no-such-host.invalid'" in message
    assert "http://no-such-host.invalid/v1" in message


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_url_without_a_scheme_says_so(server: WireServer, transport: str) -> None:
    url = f"127.0.0.1:{server.port}/v1"
    message = str(_failure(_chat(url, transport)))
    assert f"the base URL {url} does not start with http:// or https://" in message


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_password_in_the_url_is_never_shown(transport: str) -> None:
    error = _failure(_chat("http://alice:hunter2-secret@no-such-host.invalid/v1", transport))
    shown = [str(error)] + [str(link) for link in (error.__cause__, error.__context__) if link]
    assert all("hunter2-secret" not in text and "alice" not in text for text in shown)
    assert "http://***@no-such-host.invalid/v1" in str(error)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_server_dying_mid_stream_says_what_was_captured(transport: str) -> None:
    with WireServer() as wire:
        wire.add("openai_chat_reasoning_content", disconnect_after=3)
        pipe = _chat(wire.url + "/v1", transport)
        error = _failure(pipe)
    assert error.result is not None
    reasoning = len(error.result.model_reasoning)
    assert reasoning > 0
    message = str(error)
    assert "broke mid-stream" in message
    assert f"captured {reasoning} characters of reasoning and 0 of text" in message
    assert "cannot connect" not in message


def test_a_server_closing_before_any_answer_reads_differently_from_one_never_reached() -> None:
    with WireServer() as wire:
        wire.add("openai_chat_reasoning_content", disconnect_after=0)
        message = str(_failure(_chat(wire.url + "/v1", "httpx")))
    assert "closed the connection before any reasoning or text arrived" in message
    assert "cannot connect" not in message


@pytest.mark.parametrize(
    ("make", "shape"),
    [
        (lambda url: AnthropicPipe("claude-sonnet-4-5", base_url=url, api_key=KEY), "server root"),
        (lambda url: OllamaPipe("qwen3", base_url=url), "server root"),
    ],
    ids=["anthropic", "ollama"],
)
def test_other_providers_name_the_url_they_could_not_reach(make, shape) -> None:  # type: ignore[no-untyped-def]
    url = f"http://127.0.0.1:{_closed_port()}"
    message = str(_failure(make(url)))
    assert f"cannot connect to {url}" in message
    assert shape in message


# ---------------------------------------------------- stream=False answered with a stream

ONE_SHOT_ANSWERED_WITH_A_STREAM = {
    "openai-chat": (
        "openai_chat_reasoning_content",
        lambda url, transport: OpenAIChatPipe(
            "o4-mini", base_url=url + "/v1", api_key=KEY, stream=False, transport=transport
        ),
    ),
    "openai-responses": (
        "openai_responses_summary",
        lambda url, transport: OpenAIResponsesPipe(
            "o4-mini", base_url=url + "/v1", api_key=KEY, stream=False, transport=transport
        ),
    ),
    "anthropic": (
        "anthropic_thinking",
        lambda url, transport: AnthropicPipe(
            "claude-sonnet-4-5", base_url=url, api_key=KEY, stream=False, transport=transport
        ),
    ),
}


@pytest.mark.anyio
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("provider", sorted(ONE_SHOT_ANSWERED_WITH_A_STREAM))
async def test_a_stream_answering_a_one_shot_request_is_a_malformed_stream_error(
    provider: str, transport: str
) -> None:
    """Not a silent empty ``completed`` result: the SDKs hand back the body as text."""
    transcript, make = ONE_SHOT_ANSWERED_WITH_A_STREAM[provider]
    with WireServer(transcript) as wire:
        for run in ("run", "arun"):
            pipe = make(wire.url, transport)
            with pytest.raises(MalformedStreamError) as caught:
                if run == "run":
                    await anyio.to_thread.run_sync(pipe.run, "hi")
                else:
                    await pipe.arun("hi")
            assert "answered with an event stream although stream=False" in str(caught.value)
            assert caught.value.result is not None and caught.value.result.status == "error"
