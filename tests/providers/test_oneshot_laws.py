"""The one-shot law over arbitrary answers: for every answer (reasoning parts and answer text
full of tag fragments, any number of tool calls), each provider's translator reading the whole
response gives the same result and the same channel as reading the stream of that answer.

Pure: the translators' events are replayed through ``ScriptedPipe``, so no server is needed;
the SDK round trips are in ``test_oneshot``. Budget: 40 examples per provider (about a second
each on this machine).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning_stream import Event, PipeResult
from reasoning_stream.providers.anthropic.translate import AnthropicTranslator
from reasoning_stream.providers.bedrock.translate import ConverseStreamTranslator
from reasoning_stream.providers.gemini.translate import GeminiTranslator
from reasoning_stream.providers.ollama.translate import OllamaTranslator
from reasoning_stream.providers.openai_chat.translate import OpenAIChatTranslator
from reasoning_stream.providers.openai_responses.translate import OpenAIResponsesTranslator
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.testing._wire import Transcript
from reasoning_stream.testing.strategies import tag_text
from tests.helpers import examples
from tests.providers import oneshot_content as content
from tests.providers.oneshot_content import Answer, Call

LAW = settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def answers(draw: st.DrawFn) -> Answer:
    parts = draw(st.lists(tag_text(max_fragments=8).filter(bool), min_size=0, max_size=3))
    calls = draw(st.integers(min_value=0, max_value=2))
    return Answer(
        reasoning=tuple(parts),
        signatures=tuple(f"sig-{position}" for position in range(len(parts))),
        text=draw(tag_text(max_fragments=8)),
        calls=tuple(
            Call(f"call_{position}", f"tool_{position}", {"n": position, "s": "x y"})
            for position in range(calls)
        ),
    )


def data(transcript: Transcript) -> list[Any]:
    """The decoded chunks a client hands the translator, from a transcript's events."""
    if transcript.format == "sse":
        return [e["data"] for e in transcript.events if isinstance(e.get("data"), dict)]
    if transcript.format == "eventstream":
        return [{e["event_type"]: e["payload"]} for e in transcript.events]
    return list(transcript.events)


def replay(events: list[Event]) -> tuple[PipeResult, str]:
    chunks: list[str] = []
    pipe = ScriptedPipe(events).set_streaming_callback(chunks.append)
    return pipe.run("x"), "".join(chunks)


def same(make: Callable[[], Any], stream: Transcript, body: Transcript) -> None:
    streamed_translator = make()
    streamed_events: list[Event] = []
    for chunk in data(stream):
        streamed_events += streamed_translator.feed(chunk)
    streamed_events += streamed_translator.finish()
    one_shot_events = make().read_response(body.events[0])
    streamed, streamed_channel = replay(streamed_events)
    one_shot, one_shot_channel = replay(one_shot_events)
    assert one_shot_channel == streamed_channel
    for name in (
        "text",
        "reasoning_segments",
        "reasoning_state",
        "tool_calls",
        "usage",
        "status",
        "finish_reason",
    ):
        assert getattr(one_shot, name) == getattr(streamed, name), name


@LAW
@given(answers(), st.sampled_from(["reasoning_content", "reasoning"]))
def test_chat_completions(answer: Answer, field_name: str) -> None:
    same(
        lambda: OpenAIChatTranslator(provider="openai-chat", model="m"),
        content.chat_stream(answer, field_name=field_name),
        content.chat_body(answer, field_name=field_name),
    )


@LAW
@given(answers(), st.booleans())
def test_chat_completions_inline_tags(answer: Answer, start_inside: bool) -> None:
    """No native reasoning: the content's tags are split, whole or in pieces alike."""
    plain = Answer(reasoning=(), signatures=(), text=answer.text, calls=answer.calls)
    same(
        lambda: OpenAIChatTranslator(
            provider="openai-chat", model="m", start_in_reasoning=start_inside
        ),
        content.chat_stream(plain),
        content.chat_body(plain),
    )


@LAW
@given(answers())
def test_responses(answer: Answer) -> None:
    same(
        lambda: OpenAIResponsesTranslator(model="m"),
        content.responses_stream(answer),
        content.responses_body(answer),
    )


@LAW
@given(answers())
def test_anthropic(answer: Answer) -> None:
    same(
        lambda: AnthropicTranslator(model="m"),
        content.anthropic_stream(answer),
        content.anthropic_body(answer),
    )


@LAW
@given(answers())
def test_gemini(answer: Answer) -> None:
    signed = (
        answer
        if answer.signatures
        else Answer(
            reasoning=answer.reasoning, signatures=("s",), text=answer.text, calls=answer.calls
        )
    )
    same(
        lambda: GeminiTranslator(model="m"),
        content.gemini_stream(signed, "m"),
        content.gemini_body(signed, "m"),
    )


@LAW
@given(answers(), st.booleans())
def test_ollama(answer: Answer, start_inside: bool) -> None:
    same(
        lambda: OllamaTranslator(model="m", start_in_reasoning=start_inside),
        content.ollama_stream(answer),
        content.ollama_body(answer),
    )


@LAW
@given(answers())
def test_bedrock_converse(answer: Answer) -> None:
    same(
        lambda: ConverseStreamTranslator(model="m"),
        content.converse_stream(answer),
        content.converse_body(answer),
    )
