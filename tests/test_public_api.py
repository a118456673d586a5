"""The public surface: names users import stay put."""

from __future__ import annotations

import importlib

import pytest

import reasoning_stream
import reasoning_stream.testing

TOP_LEVEL = [
    "DEFAULT_TAGS",
    "INERT_MESSAGE_KEYS",
    "PROVENANCE_KEY",
    "PROVENANCE_VALUES",
    "Budget",
    "BudgetExceededError",
    "CallbackError",
    "ConflictError",
    "Conversation",
    "ConversationNotFoundError",
    "CorruptConversationError",
    "Event",
    "Finish",
    "GenerationRecord",
    "LedgerEntry",
    "MalformedStreamError",
    "OpaqueState",
    "PassbackPolicy",
    "PassbackProblem",
    "Pipe",
    "PipeResult",
    "Pipeline",
    "PipelineResult",
    "Prompt",
    "ProviderError",
    "Reasoning",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningHidden",
    "ReasoningLevel",
    "ReasoningPlan",
    "ReasoningStart",
    "ReasoningState",
    "ReasoningStream",
    "ReasoningStreamError",
    "ReasoningWarning",
    "Split",
    "Status",
    "StoreError",
    "TextDelta",
    "Timings",
    "Tool",
    "ToolCall",
    "ToolResult",
    "TurnRecord",
    "Usage",
    "UsageError",
    "UsageReport",
    "effort_table",
    "plan_reasoning",
    "profiles",
    "strip_inert_keys",
    "tool",
]
"""``reasoning_stream.__all__``, pinned: a name joins or leaves it on purpose."""


def test_top_level_all_is_sorted_and_importable() -> None:
    names = reasoning_stream.__all__

    def isort_style(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert list(names) == sorted(names, key=isort_style)
    assert list(names) == TOP_LEVEL
    for name in names:
        assert getattr(reasoning_stream, name) is not None


def test_internals_left_all_but_still_import_from_the_package() -> None:
    """Code that imported them from the package keeps working; they belong to their modules."""
    from reasoning_stream import Escaper, Scanner, merge_params
    from reasoning_stream._effort import merge_params as merge_params_home
    from reasoning_stream._tags import Escaper as EscaperHome
    from reasoning_stream._tags import Scanner as ScannerHome

    assert (Escaper, Scanner, merge_params) == (EscaperHome, ScannerHome, merge_params_home)
    assert not {"Escaper", "Scanner", "merge_params"} & set(reasoning_stream.__all__)
    assert type(reasoning_stream.ReasoningStream.scanner()) is Scanner
    assert type(reasoning_stream.ReasoningStream.escaper()) is Escaper


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


PROMPTING = [
    "ChainOfDraft",
    "ChainOfThought",
    "PromptStrategy",
    "StrategyPipe",
    "StrategyResult",
    "draft_steps",
    "native_thinking",
]


@pytest.mark.parametrize("path", ["reasoning_stream.prompting", "reasoning_stream.strategies"])
def test_prompt_strategy_names_are_exported(path: str) -> None:
    """``reasoning_stream.prompting``; the old ``reasoning_stream.strategies`` re-exports it."""
    module = importlib.import_module(path)
    prompting = importlib.import_module("reasoning_stream.prompting")
    assert sorted(module.__all__) == PROMPTING
    for name in PROMPTING:
        assert getattr(module, name) is getattr(prompting, name)
    assert issubclass(module.StrategyResult, reasoning_stream.PipeResult)


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


HYPOTHESIS_STRATEGIES = {
    "TAG_FRAGMENTS",
    "SampleChannel",
    "channels",
    "chunkings",
    "event_scripts",
    "expected_from_script",
    "scripts",
    "tag_text",
    "text_and_chunks",
}


@pytest.mark.parametrize(
    "path",
    ["reasoning_stream.testing.hypothesis_strategies", "reasoning_stream.testing.strategies"],
)
def test_the_hypothesis_strategies_module_is_public(path: str) -> None:
    """``reasoning_stream.testing.hypothesis_strategies``; the old ``testing.strategies``
    re-exports it."""
    module = importlib.import_module(path)
    home = importlib.import_module("reasoning_stream.testing.hypothesis_strategies")
    assert set(module.__all__) == HYPOTHESIS_STRATEGIES
    for name in module.__all__:
        assert getattr(module, name) is getattr(home, name) is not None


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


def test_provider_pipes_show_their_constructors_signature() -> None:
    """``inspect.signature`` of a pipe class is its ``__init__``'s (not the validating
    metaclass's ``(*args, **kwargs)``), so IDEs and introspecting frameworks see the keywords."""
    import inspect

    from reasoning_stream import providers

    for name in ("AnthropicPipe", "BedrockPipe", "GeminiPipe", "OllamaPipe", "OpenAIChatPipe",
                 "OpenAIResponsesPipe", "OpenRouterPipe"):  # fmt: skip
        parameters = inspect.signature(getattr(providers, name)).parameters
        assert next(iter(parameters)) == "model", name
        assert "args" not in parameters, name


def test_provider_pipe_signatures_show_every_documented_keyword_and_default() -> None:
    """API 6, 10, 12, 13: every provider pipe takes ``client``, ``base_url``, ``api_key``,
    ``stream=True``, ``reasoning_display=None``, ``tools``, ``tool_choice``, ``name``,
    ``escape_markers=True`` and ``on_callback_error``: ``inspect.signature`` shows them with
    their defaults, not a bare ``**options``."""
    import inspect

    from reasoning_stream import providers

    expected = {
        "client": None,
        "base_url": None,
        "api_key": None,
        "stream": True,
        "reasoning_display": None,
        "tools": None,
        "tool_choice": None,
        "name": None,
        "escape_markers": True,
        "on_callback_error": None,
        "extra_body": None,
    }
    for name in providers.__all__:
        parameters = inspect.signature(getattr(providers, name)).parameters
        assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()), name
        for keyword, default in expected.items():
            assert keyword in parameters, (name, keyword)
            assert parameters[keyword].default == default, (name, keyword)
            assert parameters[keyword].kind is inspect.Parameter.KEYWORD_ONLY, (name, keyword)
