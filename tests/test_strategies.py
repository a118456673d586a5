"""Prompt strategies through the real SDKs against the WireServer: drafts become reasoning live."""

from __future__ import annotations

import copy
import json
import warnings
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import (
    Conversation,
    ProviderError,
    ReasoningStream,
    ReasoningWarning,
    TextDelta,
    UsageError,
    profiles,
)
from reasoning_stream.prompting import (
    ChainOfDraft,
    ChainOfThought,
    StrategyPipe,
    StrategyResult,
    draft_steps,
    native_thinking,
)
from reasoning_stream.providers import (
    AnthropicPipe,
    GeminiPipe,
    OllamaPipe,
    OpenAIChatPipe,
    OpenRouterPipe,
)
from reasoning_stream.testing import ScriptedPipe, Transcript, WireServer
from reasoning_stream.testing.hypothesis_strategies import chunkings, tag_text
from tests.helpers import examples

OPEN, CLOSE = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG

DRAFTS = [
    "<th",
    "ink>17 - 5 = 12\n12 ",
    "* 3 = 36, and that is the total we",
    " want\n</thi",
    "nk>36",
]
"""Content deltas of a drafted answer, tags cut mid-way; the second step is over five words."""


def openai_transcript(contents: list[str], model: str = "gemma-3-270m-it") -> Transcript:
    """A Chat Completions stream whose content deltas are ``contents``."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "data": {
                "id": "chatcmpl-cod",
                "object": "chat.completion.chunk",
                "created": 1735689600,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        }

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": text}) for text in contents]
    events.append(chunk({}, "stop"))
    usage = {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}
    events.append({"data": {**chunk({})["data"], "choices": [], "usage": usage}})
    events.append({"data": "[DONE]"})
    return Transcript.from_dict({"path": "/v1/chat/completions", "format": "sse", "events": events})


def anthropic_transcript(texts: list[str]) -> Transcript:
    """A Messages stream with one text block made of ``texts`` (no native thinking)."""

    def event(name: str, **data: Any) -> dict[str, Any]:
        return {"event": name, "data": {"type": name, **data}}

    message = {
        "id": "msg_cod",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 30, "output_tokens": 1},
    }
    events = [
        event("message_start", message=message),
        event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
    ]
    events += [
        event("content_block_delta", index=0, delta={"type": "text_delta", "text": text})
        for text in texts
    ]
    events += [
        event("content_block_stop", index=0),
        event(
            "message_delta",
            delta={"stop_reason": "end_turn", "stop_sequence": None},
            usage={"output_tokens": 20},
        ),
        event("message_stop"),
    ]
    return Transcript.from_dict({"path": "/v1/messages", "format": "sse", "events": events})


@pytest.fixture
def openai_server() -> Iterator[WireServer]:
    with WireServer(openai_transcript(DRAFTS)) as server:
        yield server


def openai_pipe(
    server: WireServer, model: str = "gemma-3-270m-it", **options: Any
) -> OpenAIChatPipe:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test-key", max_retries=0)
    return OpenAIChatPipe(model, client=client, **options)


def sent_messages(server: WireServer) -> list[dict[str, Any]]:
    body = server.requests[-1].json()
    messages: list[dict[str, Any]] = body["messages"]
    return messages


# ----------------------------------------------------------------------------- through SDKs


@pytest.mark.parametrize("transport", ["sdk", "httpx"])
def test_chain_of_draft_turns_drafts_into_live_reasoning(
    openai_server: WireServer, transport: str
) -> None:
    if transport == "sdk":
        inner = openai_pipe(openai_server)
    else:
        inner = OpenAIChatPipe(
            "gemma-3-270m-it", base_url=f"{openai_server.url}/v1", api_key="k", transport="httpx"
        )
    chunks: list[str] = []
    pipe = ChainOfDraft(max_words=5).apply(inner).set_streaming_callback(chunks.append)
    result = pipe.run("Tom had 17 apples and gave 5 away. He triples the rest. How many?")

    assert isinstance(result, StrategyResult)
    assert result.text == "36"
    assert result.model_reasoning == "17 - 5 = 12\n12 * 3 = 36, and that is the total we want\n"
    assert result.steps == ("17 - 5 = 12", "12 * 3 = 36, and that is the total we want")
    assert result.steps_over_limit == ("12 * 3 = 36, and that is the total we want",)
    assert (result.strategy, result.max_words) == ("chain-of-draft", 5)
    assert chunks[0] == OPEN and CLOSE in chunks and chunks[-1] == "36"
    assert "".join(chunks) == OPEN + result.model_reasoning + CLOSE + "36"
    assert (
        chunks.index(CLOSE) < len(chunks) - 1
    )  # the drafts reached the callback before the answer
    messages = sent_messages(openai_server)
    assert messages[0]["role"] == "system"
    assert "5 words at most per step" in messages[0]["content"]
    assert OPEN in messages[0]["content"] and CLOSE in messages[0]["content"]
    assert messages[1] == {
        "role": "user",
        "content": "Tom had 17 apples and gave 5 away. He triples the rest. How many?",
    }
    assert pipe.last_result is result
    assert result.usage.output_tokens == 20


def test_a_pipe_that_does_not_read_inline_tags_gets_them_read_by_the_strategy() -> None:
    texts = ["<thi", "nk>", "3 + 4 = 7\n", "7 * 2 = 14", "</th", "ink>", "The answer is 14."]
    with WireServer(anthropic_transcript(texts)) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test-key", max_retries=0)
        plain = AnthropicPipe("claude-sonnet-4-6", client=client)
        assert plain.run("x").text.startswith("<think>")  # alone, the tags stay in the text

        events: list[Any] = []
        pipe = ChainOfDraft().apply(plain).set_event_callback(events.append)
        result = pipe.run(
            [{"role": "system", "content": "Be exact."}, {"role": "user", "content": "?"}]
        )
        body = server.requests[-1].json()
    assert result.model_reasoning == "3 + 4 = 7\n7 * 2 = 14"
    assert result.text == "The answer is 14."
    assert result.steps_over_limit == ()
    assert result.response_id == "msg_cod"  # what the wrapped pipe learned is on the result
    assert result.provider == "anthropic"
    system = body["system"] if isinstance(body["system"], str) else body["system"][0]["text"]
    assert system.startswith("Be exact.\n\n") and "5 words at most" in system
    kinds = [event.kind for event in events]
    assert kinds.index("reasoning_start") < kinds.index("reasoning_end") < kinds.index("text_delta")


@pytest.mark.anyio
async def test_arun_through_the_async_sdk(openai_server: WireServer) -> None:
    client = openai.AsyncOpenAI(base_url=f"{openai_server.url}/v1", api_key="k", max_retries=0)
    pipe = ChainOfDraft(max_words=12).apply(OpenAIChatPipe("gemma-3-270m-it", client=client))
    result = await pipe.arun("?")
    assert result.text == "36"
    assert result.steps_over_limit == ()
    await client.close()


def test_chain_of_thought_asks_for_explained_steps_without_a_limit(
    openai_server: WireServer,
) -> None:
    result = ChainOfThought().apply(openai_pipe(openai_server)).run("?")
    assert (result.strategy, result.max_words, result.steps_over_limit) == (
        "chain-of-thought",
        None,
        (),
    )
    assert len(result.steps) == 2
    system = sent_messages(openai_server)[0]["content"]
    assert "explain" in system and "words at most" not in system


def test_a_natively_thinking_model_gets_a_warning_and_nothing_changes(
    openai_server: WireServer,
) -> None:
    for inner in (
        openai_pipe(openai_server, "deepseek-reasoner"),
        openai_pipe(openai_server, reasoning="low"),
    ):
        pipe = ChainOfDraft().apply(inner)
        with pytest.warns(ReasoningWarning, match="not applied"):
            result = pipe.run("plain question")
        assert sent_messages(openai_server) == [{"role": "user", "content": "plain question"}]
        assert (result.strategy, result.steps, result.steps_over_limit) == (None, (), ())
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            pipe.run("again")  # warned once per strategy pipe


def test_force_applies_the_strategy_to_a_thinking_model(openai_server: WireServer) -> None:
    pipe = ChainOfDraft(force=True).apply(openai_pipe(openai_server, "deepseek-reasoner"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = pipe.run("?")
    assert result.strategy == "chain-of-draft"
    assert sent_messages(openai_server)[0]["role"] == "system"


def test_a_conversation_keeps_its_provider_state_under_a_strategy() -> None:
    with WireServer("anthropic_thinking", anthropic_transcript(["<think>a</think>b"])) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test-key", max_retries=0)
        claude = AnthropicPipe("claude-sonnet-4-6", client=client)
        conversation = Conversation(system="Be brief.").add_user("first")
        conversation.run(claude)
        signed = conversation.record(2)
        assert signed is not None and signed.states
        shaped = ChainOfDraft().apply(claude).prompt_for(conversation.add_user("second"))
        assert isinstance(shaped, Conversation)
        assert shaped.record(2) == signed
        assert shaped[0]["content"].startswith("Be brief.\n\n")
        assert len(shaped) == len(conversation)
        result = conversation.run(ChainOfDraft().apply(claude))
    assert (result.model_reasoning, result.text) == ("a", "b")
    assert conversation[-1]["thinking"] == "a"
    record = conversation.record(len(conversation) - 1)
    assert record is not None and record.provider == "anthropic"


def test_prompt_shapes() -> None:
    pipe = ChainOfDraft(max_words=3).apply(ScriptedPipe([]))
    instruction = ChainOfDraft(max_words=3).instruction()
    assert pipe.prompt_for("hi") == [
        {"role": "system", "content": instruction},
        {"role": "user", "content": "hi"},
    ]
    history = [{"role": "system", "content": [{"type": "text", "text": "x"}]}]
    shaped = pipe.prompt_for(history)
    assert shaped == [{"role": "system", "content": instruction}, *history]
    original = [{"role": "system", "content": "S"}, {"role": "user", "content": "q"}]
    kept = copy.deepcopy(original)
    assert pipe.prompt_for(original)[0] == {"role": "system", "content": f"S\n\n{instruction}"}
    assert original == kept  # the caller's messages are not changed
    with pytest.raises(UsageError):
        pipe.prompt_for(["not a message"])  # type: ignore[list-item]


# -------------------------------------------------------------------------- laws and edges


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_any_tagged_text_in_any_chunking_splits_as_split_does(data: st.DataObject) -> None:
    """Through the strategy pipe, text deltas split exactly as ``split(lossless=True)``."""
    text = data.draw(tag_text())
    pieces = data.draw(chunkings(text))
    channel: list[str] = []
    pipe = ChainOfDraft().apply(ScriptedPipe([TextDelta(p) for p in pieces]))
    result = pipe.set_streaming_callback(channel.append).run("go")
    expected = ReasoningStream.split(text, lossless=True, assume_open=False)
    assert result.text == expected.text
    assert result.model_reasoning == "\n".join(s for s in expected.segments if s)
    back = ReasoningStream.split("".join(channel), lossless=True)
    assert (back.text, "\n".join(s for s in back.segments if s)) == (
        result.text,
        result.model_reasoning,
    )


def test_a_provider_failure_keeps_the_held_characters_and_the_steps() -> None:
    pipe = ChainOfDraft(max_words=2).apply(
        ScriptedPipe([TextDelta("<think>one two three\nfour</thi"), ProviderError("gone")])
    )
    with pytest.raises(ProviderError) as caught:
        pipe.run("?")
    result = caught.value.result
    assert isinstance(result, StrategyResult)
    assert result.status == "error"
    assert result.model_reasoning == "one two three\nfour</thi"
    assert result.steps_over_limit == ("one two three",)
    assert pipe.last_result is result


def test_a_strategy_pipe_runs_in_a_pipeline() -> None:
    first = ChainOfDraft().apply(ScriptedPipe([TextDelta("<think>x</think>draft answer")]))
    second = ScriptedPipe(lambda prompt: [TextDelta(f"polished: {prompt}")])
    result = (first | second).run("go")
    assert result.text == "polished: draft answer"
    assert isinstance(result.results[0], StrategyResult)


def test_draft_steps_and_word_counts() -> None:
    assert draft_steps("") == ()
    assert draft_steps("  \n1) a b\nStep 2: c d e\n* f\n") == ("a b", "c d e", "f")
    assert draft_steps("- 3 - 1 = 2") == ("3 - 1 = 2",)


def provider_pipe(provider: str, model: str, base_url: str | None = None) -> Any:
    """A provider pipe that is never run: what native_thinking reads is its profile."""
    classes: dict[str, Any] = {
        "anthropic": AnthropicPipe,
        "gemini": GeminiPipe,
        "ollama": OllamaPipe,
        "openai-chat": OpenAIChatPipe,
        "openrouter": OpenRouterPipe,
    }
    options: dict[str, Any] = {"base_url": base_url} if base_url else {}
    return classes[provider](model, api_key="test-key", **options)


@pytest.mark.parametrize(
    ("provider", "model", "base_url", "native"),
    [
        ("openai-chat", "gemma-3-270m-it", None, False),
        ("openai-chat", "llama-3.1-8b-instruct", None, False),  # no row: nothing says so
        ("openai-chat", "gpt-4o-mini", None, False),
        ("anthropic", "claude-sonnet-4-6", None, False),  # optional: off unless asked
        ("openai-chat", "Qwen/Qwen3-8B", None, True),
        ("openai-chat", "qwen3-30b-a3b-instruct-2507", None, False),
        ("ollama", "deepseek-r1:7b", None, True),
        ("openai-chat", "o3-mini", None, True),
        ("openai-chat", "gpt-5-mini", None, True),
        ("openrouter", "openai/gpt-oss-20b", None, True),
        ("gemini", "gemini-2.5-flash", None, True),  # thinks by default (thinking-mode doc)
        ("gemini", "gemini-2.0-flash", None, False),
        ("openai-chat", "QwQ-32B", None, True),
        ("openai-chat", "kimi-k2-thinking", None, True),
        # Where the profile and the old id heuristics disagree, the profile decides.
        ("anthropic", "claude-opus-5", None, True),  # thinks by default
        ("openai-chat", "deepseek-chat", None, True),  # thinks by default
        ("openai-chat", "kimi-k2.5", None, True),
        ("openai-chat", "grok-4", "https://api.x.ai/v1", True),
        ("openai-chat", "gpt-5.1", None, False),  # none is its default effort
        ("gemini", "gemini-2.5-flash-lite", None, False),  # does not think unless asked
    ],
)
def test_native_thinking_reads_the_models_profile(
    provider: str, model: str, base_url: str | None, native: bool
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", profiles.UnknownModelWarning)
        pipe = provider_pipe(provider, model, base_url)
    assert (native_thinking(pipe) is not None) is native
    assert ChainOfDraft().apply(pipe).applied is not native


def test_a_pipe_without_a_provider_profile_is_not_guessed_from_its_id() -> None:
    for model in ("deepseek-r1", "o3", "my-thinking-model"):
        assert native_thinking(ScriptedPipe([], model=model)) is None


def test_a_registered_profile_decides_native_thinking(openai_server: WireServer) -> None:
    """``profiles.register`` is obeyed both ways: a ``*-reasoner`` id registered as never
    thinking gets the strategy; a plain id registered as always thinking does not."""
    profiles.register("openai-chat", "house-reasoner-*", base="gpt-4o")
    profiles.register("openai-chat", "house-chat-*", base="gpt-4o", thinking="always")
    try:
        plain = openai_pipe(openai_server, "house-reasoner-1")
        assert native_thinking(plain) is None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            result = ChainOfDraft().apply(plain).run("?")
        assert result.strategy == "chain-of-draft"
        assert sent_messages(openai_server)[0]["role"] == "system"

        thinker = openai_pipe(openai_server, "house-chat-1")
        assert "thinking='always'" in (native_thinking(thinker) or "")
        with pytest.warns(ReasoningWarning, match="not applied"):
            result = ChainOfDraft().apply(thinker).run("plain question")
        assert result.strategy is None
        assert sent_messages(openai_server) == [{"role": "user", "content": "plain question"}]
    finally:
        profiles.unregister("openai-chat", "house-reasoner-*")
        profiles.unregister("openai-chat", "house-chat-*")


def test_misuse_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        ChainOfDraft(max_words=0)
    with pytest.raises(UsageError):
        ChainOfDraft(max_words="5")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        ChainOfDraft().apply("not a pipe")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        StrategyPipe(ScriptedPipe([]), "cod")  # type: ignore[arg-type]


def test_the_wrapped_pipes_attributes_show_through() -> None:
    inner = ScriptedPipe([], model="m", name="drafter")
    pipe = ChainOfDraft().apply(inner)
    assert (pipe.name, pipe.model, pipe.provider) == ("drafter", "m", "scripted")
    assert pipe.prompts is inner.prompts  # ScriptedPipe's own attribute, through the wrapper
    assert json.loads(json.dumps(ChainOfDraft().instruction()))


def test_a_strategy_pipe_takes_the_keywords_every_pipe_takes() -> None:
    """API section 4: every pipe takes ``name=``, ``escape_markers=`` and
    ``on_callback_error=``; unset, a strategy pipe keeps the wrapped pipe's settings."""

    def handler(error: Exception, chunk: object) -> None:
        pass

    inner = ScriptedPipe([TextDelta("<think>a <\\think> c</think>b")], name="inner")
    kept = StrategyPipe(inner, ChainOfDraft())
    assert (kept.name, kept.escape_markers, kept.on_callback_error) == ("inner", True, None)
    pipe = StrategyPipe(
        inner, ChainOfDraft(), name="outer", escape_markers=False, on_callback_error=handler
    )
    assert (pipe.name, pipe.escape_markers, pipe.on_callback_error) == ("outer", False, handler)
    chunks: list[str] = []
    result = pipe.set_streaming_callback(chunks.append).run("?")
    assert result.model_reasoning == "a <think> c"
    assert "".join(chunks) == "<think>a <think> c</think>b"  # escape_markers=False


def test_the_chain_of_draft_benchmark_runs_against_an_openai_style_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import chain_of_draft

    with WireServer(openai_transcript(["<think>24 - 18 = 6</think>", "6"])) as server:
        tallies = chain_of_draft.main(
            ["--base-url", f"{server.url}/v1", "--model", "gemma-3-270m-it", "--limit", "2"]
        )
        bodies = [request.json() for request in server.requests]
    assert [tally.correct for tally in tallies.values()] == [1, 1, 1]  # 6 is right once of two
    assert all(tally.asked == 2 for tally in tallies.values())
    cod = tallies["cod"]
    assert cod.estimated and cod.reasoning_tokens[0] == pytest.approx(20 * 11 / 12)
    assert (cod.steps, cod.steps_over) == (2, 0)
    assert bodies[0]["messages"][0]["content"] == chain_of_draft.DIRECT
    assert "5 words at most" in bodies[-1]["messages"][0]["content"]
    assert bodies[-1]["temperature"] == 0
    out = capsys.readouterr().out
    assert "| Chain-of-Draft (5 words) | 1/2 (50%) | ~18 | 70 |" in out
