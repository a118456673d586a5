"""The public surface: names users import stay put."""

from __future__ import annotations

import importlib

import reasoning_stream
import reasoning_stream.testing


def test_top_level_all_is_sorted_and_importable() -> None:
    names = reasoning_stream.__all__

    def isort_style(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert list(names) == sorted(names, key=isort_style)
    for name in names:
        assert getattr(reasoning_stream, name) is not None


def test_contract_names_are_exported() -> None:
    for name in (
        "ReasoningStream",
        "Split",
        "ReasoningStart",
        "ReasoningDelta",
        "ReasoningEnd",
        "TextDelta",
        "Finish",
        "Pipe",
        "PipeResult",
        "Pipeline",
        "ReasoningState",
        "ReasoningStreamError",
        "ProviderError",
        "UsageError",
        "MalformedStreamError",
        "PassbackProblem",
    ):
        assert name in reasoning_stream.__all__
    assert {"ScriptedPipe", "WireServer"} <= set(reasoning_stream.testing.__all__)


def test_provider_pipes_are_exported_lazily() -> None:
    providers = importlib.import_module("reasoning_stream.providers")
    assert sorted(providers.__all__) == [
        "AnthropicPipe",
        "BedrockPipe",
        "GeminiPipe",
        "OllamaPipe",
        "OpenAIChatPipe",
        "OpenAIResponsesPipe",
        "OpenRouterPipe",
    ]


def test_events_compare_without_source_and_are_frozen() -> None:
    from dataclasses import FrozenInstanceError

    import pytest

    delta = reasoning_stream.TextDelta("x", source="a")
    assert delta == reasoning_stream.TextDelta("x", source="b")
    assert delta.kind == "text_delta"
    with pytest.raises(FrozenInstanceError):
        delta.text = "y"  # type: ignore[misc]
    assert reasoning_stream.Finish("length").reason == "length"


def test_reasoning_state_repr_hides_the_payload() -> None:
    state = reasoning_stream.ReasoningState("anthropic", "m", "signature", "SECRET-SIG")
    assert "SECRET-SIG" not in repr(state)
    assert reasoning_stream.ReasoningState.from_json(state.to_json()) == state
    raw = reasoning_stream.ReasoningState("bedrock", "m", "redacted", b"\x00\xffbytes")
    assert reasoning_stream.ReasoningState.from_json(raw.to_json()) == raw


def test_store_names_are_exported() -> None:
    store = importlib.import_module("reasoning_stream.store")
    assert sorted(store.__all__) == [
        "ConflictError",
        "ConversationNotFoundError",
        "ConversationStore",
        "CorruptConversationError",
        "RedisStore",
        "SQLiteStore",
        "StoreError",
        "arun_stored",
        "run_stored",
    ]
    for name in ("ConflictError", "StoreError", "CorruptConversationError"):
        assert name in reasoning_stream.__all__
        assert getattr(store, name) is getattr(reasoning_stream, name)
    assert issubclass(reasoning_stream.ConflictError, reasoning_stream.ReasoningStreamError)


def test_strategy_names_are_exported() -> None:
    strategies = importlib.import_module("reasoning_stream.strategies")
    assert sorted(strategies.__all__) == [
        "ChainOfDraft",
        "ChainOfThought",
        "PromptStrategy",
        "StrategyPipe",
        "StrategyResult",
        "draft_steps",
        "native_thinking",
    ]
    assert issubclass(strategies.StrategyResult, reasoning_stream.PipeResult)


def test_hub_and_web_contract_names_are_exported() -> None:
    hub = importlib.import_module("reasoning_stream.hub")
    web = importlib.import_module("reasoning_stream.web")
    assert {"MemoryHub", "RedisHub", "Entry"} <= set(hub.__all__)
    assert "create_app" in web.__all__
    for module in (hub, web):
        assert list(module.__all__) == sorted(module.__all__, key=lambda n: (not n.isupper(), n))
        for name in module.__all__:
            assert getattr(module, name) is not None
    fields = {f for f in hub.Entry.__dataclass_fields__}
    assert {"id", "chunk", "event", "final", "status"} <= fields


def test_the_strategies_module_is_public() -> None:
    import reasoning_stream.testing.strategies as strategies

    assert {
        "TAG_FRAGMENTS",
        "SampleChannel",
        "channels",
        "chunkings",
        "event_scripts",
        "expected_from_script",
        "scripts",
        "tag_text",
        "text_and_chunks",
    } == set(strategies.__all__)
    for name in strategies.__all__:
        assert getattr(strategies, name) is not None


def test_reasoning_stream_tools() -> None:
    """The channel's reading tools, including the display helper ``unescape``."""
    stream = reasoning_stream.ReasoningStream
    for name in ("OPEN_TAG", "CLOSE_TAG", "split", "scanner", "escaper", "unescape"):
        assert getattr(stream, name) is not None, name
    assert stream.unescape("<\\think>") == "<think>"


def test_telemetry_surface() -> None:
    telemetry = importlib.import_module("reasoning_stream.telemetry")
    assert telemetry.__all__ == [
        "SEMCONV_VERSION",
        "ContentCapture",
        "instrument",
        "is_instrumented",
        "uninstrument",
    ]
