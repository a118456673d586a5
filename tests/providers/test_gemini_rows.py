"""Gemini's rows per provider: how thinking comes back is profile data, not a model-id check.

The native API returns thought summaries as parts marked ``"thought": true``
(https://ai.google.dev/gemini-api/docs/thinking#summaries); the OpenAI-compatible endpoint
(``/v1beta/openai``, https://ai.google.dev/gemini-api/docs/openai#thinking) returns them inside
``<thought>...</thought>`` in ``content`` when ``extra_body.google.thinking_config.
include_thoughts`` asks for them; OpenRouter moves them into ``reasoning``
(https://openrouter.ai/docs/use-cases/reasoning-tokens). One model, three rows: only the
compatible endpoint's row names the ``thought`` tag (``inline.tags``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import openai
import pytest

from reasoning_stream import profiles
from reasoning_stream.profiles import Inline
from reasoning_stream.providers import GeminiPipe, OpenAIChatPipe, OpenRouterPipe
from reasoning_stream.testing import Transcript, WireServer

KEY = "test-key"
COMPAT_DOC = "https://ai.google.dev/gemini-api/docs/openai#thinking"

THINKING_MODELS = [
    "gemini-2.0-flash-thinking-exp",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
    "gemini-2.5-flash-lite",
    "gemini-3-pro-preview",
    "gemini-3.1-pro-preview",
    "gemini-3-flash-preview",
    "gemini-4-pro",
    "gemini-flash-latest",
]


@pytest.fixture(autouse=True)
def no_user_rows() -> Iterator[None]:
    yield
    for provider, pattern in profiles.registered():
        profiles.unregister(provider, pattern)


def _same_but_inline(one: profiles.ModelProfile, other: profiles.ModelProfile) -> bool:
    def core(p: profiles.ModelProfile) -> profiles.ModelProfile:
        return replace(p, inline=Inline(), display_control=None, sources=(), note="", pattern=None)

    return core(one) == core(other)


@pytest.mark.parametrize("model", THINKING_MODELS)
def test_only_the_compatible_endpoints_row_names_the_thought_tag(model: str) -> None:
    compatible = profiles.lookup("openai-chat", model)
    native = profiles.lookup("gemini", model)
    gateway = profiles.lookup("openrouter", f"google/{model}")
    assert compatible.inline == Inline(("thought",), opens_inside=False, at_start=True)
    assert native.inline == Inline() and gateway.inline == Inline()
    # The rows differ in how thinking comes back (and how a display is asked for: see
    # test_gemini_compat_display.py), and in nothing else.
    assert _same_but_inline(compatible, native) and _same_but_inline(native, gateway)
    assert COMPAT_DOC in [url for url, _ in compatible.sources]
    assert COMPAT_DOC not in [url for url, _ in native.sources]


def test_models_that_cannot_think_write_no_thought_tag() -> None:
    for model in ("gemini-2.0-flash", "gemini-1.5-pro", "gemma-3-27b-it"):
        assert profiles.lookup("openai-chat", model).inline == Inline()


def _answer(contents: list[str]) -> Transcript:
    """A compatible-endpoint stream whose content deltas are ``contents``."""
    events: list[dict[str, object]] = [
        {
            "data": {
                "id": "gemini-compat",
                "object": "chat.completion.chunk",
                "created": 1764590000,
                "model": "gemini-2.5-flash",
                "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
            }
        }
        for text in contents
    ]
    events.append({"data": "[DONE]"})
    return Transcript.from_dict(
        {"path": "/v1beta/openai/chat/completions", "format": "sse", "events": events}
    )


def _compatible_run(
    model: str, transcript: str | Transcript = "openai_chat_gemini_thought_answer"
) -> tuple[str, str]:
    with (
        WireServer(transcript) as server,
        openai.OpenAI(base_url=server.url + "/v1beta/openai", api_key=KEY, max_retries=0) as client,
    ):
        result = OpenAIChatPipe(model, client=client).run("Weather in Paris?")
    return result.model_reasoning, result.text


def test_the_catalogue_row_reads_thought_tags_through_the_sdk() -> None:
    assert _compatible_run("gemini-2.5-flash") == (
        "**Answering**\nThe tool said 18 °C.",
        "It is 18 °C in Paris.",
    )


def test_a_thought_tag_later_in_the_answer_is_answer() -> None:
    """The thought summary comes only at the start of ``content`` (``inline.at_start``): tags
    are read in an answer that opens with one, and an answer that opens with text and quotes
    ``<thought>`` later keeps every byte."""
    quoted = ["Gemini marks summaries with <thou", "ght>...</thought> tags", " in content."]
    assert _compatible_run("gemini-2.5-flash", _answer(quoted)) == ("", "".join(quoted))
    tagged = ["  <thought>plan", "</thought>Done."]
    assert _compatible_run("gemini-2.5-flash", _answer(tagged)) == ("plan", "  Done.")


def test_a_registered_model_that_writes_thought_tags_is_obeyed() -> None:
    """A model id with no ``gemini-`` in it (a deployment alias, a proxy's name) whose row
    names the ``thought`` tag streams the tagged text as reasoning."""
    profiles.register("openai-chat", "house-flash", base="gpt-4o", inline={"tags": ["thought"]})
    assert _compatible_run("house-flash") == (
        "**Answering**\nThe tool said 18 °C.",
        "It is 18 °C in Paris.",
    )
    # Without at_start, a tag anywhere is read; with it, only an answer that opens with one.
    quoted = _answer(["See <thought>", "x</thought> here."])
    assert _compatible_run("house-flash", quoted) == ("x", "See  here.")
    profiles.register(
        "openai-chat", "house-flash", base="gpt-4o", inline={"tags": ["thought"], "at_start": True}
    )
    assert _compatible_run("house-flash", quoted) == ("", "See <thought>x</thought> here.")


def test_a_registered_gemini_id_without_the_tag_is_obeyed() -> None:
    """A user row that names no tag for a ``gemini-`` id wins over the catalogue: the text
    stays the answer, byte for byte."""
    profiles.register("openai-chat", "gemini-house-proxy", base="gemini-2.5-flash", inline={})
    reasoning, text = _compatible_run("gemini-house-proxy")
    assert (reasoning, text) == (
        "",
        "<thought>**Answering**\nThe tool said 18 °C.</thought>It is 18 °C in Paris.",
    )


def test_the_native_and_gateway_pipes_read_no_thought_tag() -> None:
    """GeminiPipe reads thought parts and OpenRouterPipe the ``reasoning`` field: neither
    scans text for ``<thought>``, as their rows say."""
    native = GeminiPipe("gemini-2.5-flash", api_key=KEY)
    gateway = OpenRouterPipe("google/gemini-2.5-flash", api_key=KEY)
    assert native.profile.inline == Inline() and gateway.profile.inline == Inline()
    assert "thought" not in (gateway.tags or ())
