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

import openai
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


def test_medium_3_5_replays_its_thinking_chunks_in_the_next_request(wire: WireServer) -> None:
    """Mistral Medium 3.5: every assistant turn goes back with its thinking chunk intact, in
    the content, never as a ``reasoning_content`` field (docs.mistral.ai/capabilities/reasoning/;
    mistralai/client-python examples/mistral/chat/reasoning_multi_turn.py). The follow-up goes
    through the openai SDK; the row is registered for the loopback root the test talks to."""
    from reasoning_stream import Conversation

    site = serve(wire, "mistral_chat_reasoning", "mistral_chat_oneshot")
    model = "mistral-medium-3-5"
    mistral = profiles.lookup("openai-chat", model, "https://api.mistral.ai/v1")
    assert mistral.passback == "always" and "content_chunks" in mistral.passback_details
    profiles.register("openai-chat", model, base=mistral, api_roots=[site.base_url])
    client = openai.OpenAI(base_url=site.base_url, api_key="k", max_retries=0)
    try:
        pipe = OpenAIChatPipe(model, client=client)
        conversation = Conversation().add_user("What is 17 * 23?")
        conversation.run(pipe)
        conversation.add_user("Now multiply that by 3.")
        conversation.run(pipe)
    finally:
        client.close()
        profiles.unregister("openai-chat", model)
    follow_up = site.requests[1].json()
    assistant = follow_up["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == [
        {"type": "thinking", "thinking": [{"type": "text", "text": REASONING}]},
        {"type": "text", "text": ANSWER},
    ]
    assert "reasoning_content" not in assistant
