"""``inline_tags=``, ``start_in_reasoning=`` and ``tags=`` on the pipes whose API separates
reasoning natively (Anthropic, Gemini, Responses), for compatible endpoints that leak
``<think>`` tags into the answer text instead (issue 23). Each transcript's text splits both
tags across deltas; the pipes run through the official SDKs (Gemini: httpx) over the
loopback WireServer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import anyio
import httpx
import openai
import pytest

from reasoning_stream import ReasoningStream, UsageError
from reasoning_stream._pipe import PipeResult
from reasoning_stream.providers import AnthropicPipe, GeminiPipe, OpenAIResponsesPipe
from reasoning_stream.testing._wire import WireServer
from tests.providers.conftest import flavour_backend

anyio_backend = flavour_backend

MODEL = "qwen3-32b"
OPEN, CLOSE = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG
RAW = "<think>The user wants 2+2.</think>\n\n2 + 2 = 4."


def anthropic_pipe(url: str, asynchronous: bool, **options: Any) -> AnthropicPipe:
    kind = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
    return AnthropicPipe(MODEL, client=kind(base_url=url, api_key="k", max_retries=0), **options)


def gemini_pipe(url: str, asynchronous: bool, **options: Any) -> GeminiPipe:
    client = httpx.AsyncClient() if asynchronous else httpx.Client()
    return GeminiPipe(MODEL, base_url=f"{url}/v1beta", api_key="k", client=client, **options)


def responses_pipe(url: str, asynchronous: bool, **options: Any) -> OpenAIResponsesPipe:
    kind = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    client = kind(base_url=f"{url}/v1", api_key="k", max_retries=0)
    return OpenAIResponsesPipe(MODEL, client=client, **options)


PIPES: dict[str, tuple[str, Callable[..., Any]]] = {
    "anthropic": ("anthropic_inline_think", anthropic_pipe),
    "gemini": ("gemini_inline_think", gemini_pipe),
    "responses": ("openai_responses_inline_think", responses_pipe),
}


async def run(flavour: str, name: str, **options: Any) -> tuple[PipeResult, str]:
    transcript, build = PIPES[name]
    with WireServer(transcript) as server:
        pipe = build(server.url, flavour != "sync", **options)
        chunks: list[str] = []
        pipe.set_streaming_callback(chunks.append)
        try:
            if flavour == "sync":
                result = await anyio.to_thread.run_sync(pipe.run, "2+2?")
            else:
                result = await pipe.arun("2+2?")
        finally:
            closed = pipe.client.close() if hasattr(pipe.client, "close") else None
            if hasattr(closed, "__await__"):
                await closed
            closed = pipe.client.aclose() if hasattr(pipe.client, "aclose") else None
            if hasattr(closed, "__await__"):
                await closed
    return result, "".join(chunks)


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(PIPES))
@pytest.mark.parametrize("inline_tags", ["auto", True])
async def test_tags_in_the_text_become_reasoning(
    flavour: str, name: str, inline_tags: bool | str
) -> None:
    result, channel = await run(flavour, name, inline_tags=inline_tags)
    assert result.model_reasoning == "The user wants 2+2."
    assert result.text == "\n\n2 + 2 = 4."
    assert channel == OPEN + "The user wants 2+2." + CLOSE + "\n\n2 + 2 = 4."


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(PIPES))
async def test_by_default_the_text_is_left_as_it_came(flavour: str, name: str) -> None:
    """The native APIs separate reasoning themselves: no tag is read unless asked."""
    result, _ = await run(flavour, name)
    assert result.model_reasoning == ""
    assert result.text == RAW


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(PIPES))
async def test_start_in_reasoning_and_tag_names_are_taken(flavour: str, name: str) -> None:
    # Only "reasoning" tags are read: <think> stays text (escaped on the channel).
    result, _ = await run(flavour, name, inline_tags=True, tags=("reasoning",))
    assert (result.model_reasoning, result.text) == ("", RAW)
    result, _ = await run(flavour, name, inline_tags=True, start_in_reasoning=True)
    assert result.reasoning_segments == ("The user wants 2+2.",)


@pytest.mark.parametrize("name", list(PIPES))
def test_bad_options_fail_at_construction(name: str) -> None:
    build = PIPES[name][1]
    with pytest.raises(UsageError, match="inline_tags"):
        build("http://127.0.0.1:9", False, inline_tags="yes")
    with pytest.raises(ValueError, match="tag name"):
        build("http://127.0.0.1:9", False, inline_tags=True, tags=("a b",))
