"""Mistral reasoning through the OpenAI-compatible pipe: content as a list of typed chunks.

Mistral's chat completions carry reasoning in ``content`` itself: a list holding a ``thinking``
chunk (whose ``thinking`` is a list of ``text`` chunks) and ``text`` chunks, in streamed deltas
(plain strings once thinking ends) and in one-shot messages alike
(https://docs.mistral.ai/capabilities/reasoning; the shapes as mistralai/client-python's
examples/mistral/chat/reasoning_with_streaming.py reads them). Replayed through the openai SDK
and the lean httpx transport against the loopback WireServer.
"""

from __future__ import annotations

from typing import Any

import pytest

from reasoning_stream import ReasoningStream, profiles
from reasoning_stream.providers import OpenAIChatPipe
from reasoning_stream.testing._wire import WireServer
from tests.providers.conftest import drive, serve
from tests.providers.test_openai_chat import MODES, Mode, clients

MODEL = "magistral-medium-2509"
REASONING = "The user asks for 17 * 23. 17 * 20 = 340, 17 * 3 = 51, so 391."
ANSWER = "17 * 23 = 391."


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> Mode:
    return request.param  # type: ignore[no-any-return]


async def run(wire: WireServer, mode: Mode, transcript: str, **options: Any) -> tuple[Any, str]:
    site = serve(wire, transcript)
    chunks: list[str] = []
    async with clients(mode, site.base_url) as keywords:
        pipe = OpenAIChatPipe(MODEL, **keywords, **options).set_streaming_callback(chunks.append)
        result = await drive(pipe, "What is 17 * 23?", mode.split("-")[1])
    return result, "".join(chunks)


@pytest.mark.anyio
async def test_streamed_thinking_chunks_are_reasoning_and_text_chunks_the_answer(
    wire: WireServer, mode: Mode
) -> None:
    result, channel = await run(wire, mode, "mistral_chat_reasoning")
    assert result.model_reasoning == REASONING
    assert result.text == ANSWER
    assert channel == ReasoningStream.OPEN_TAG + REASONING + ReasoningStream.CLOSE_TAG + ANSWER
    assert result.usage.output_tokens == 41


@pytest.mark.anyio
async def test_a_one_shot_message_with_chunk_content_reads_the_same(
    wire: WireServer, mode: Mode
) -> None:
    result, channel = await run(wire, mode, "mistral_chat_oneshot", stream=False)
    assert (result.model_reasoning, result.text) == (REASONING, ANSWER)
    assert channel == ReasoningStream.OPEN_TAG + REASONING + ReasoningStream.CLOSE_TAG + ANSWER


def test_magistral_has_a_profile_row_citing_mistral_docs() -> None:
    profile = profiles.lookup("openai-chat", MODEL, "https://api.mistral.ai/v1")
    assert profile.known and profile.thinking == "always"
    assert any(url.startswith("https://docs.mistral.ai/") for url, _ in profile.sources)
