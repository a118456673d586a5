"""The passback policy: resolved once per request, and that one object used throughout."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from reasoning_stream import Conversation, PassbackPolicy, PipeResult, ToolCall, UsageError
from reasoning_stream._turns import HistoryTurn, PreflightTurn
from reasoning_stream.conversation._history import (
    check_passback,
    history_turns,
    request_turns,
)
from reasoning_stream.providers import AnthropicPipe, OpenAIChatPipe
from reasoning_stream.providers import openai_chat as openai_chat_package
from reasoning_stream.providers.openai_chat import request as chat_request

from .helpers import CLAUDE, DETAILS, FakePipe


@pytest.fixture
def resolutions(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """How often a pipe's policy is resolved, and how often the registry is asked for one."""
    counted: Counter[str] = Counter()
    for_pipe = PassbackPolicy.for_pipe.__func__  # type: ignore[attr-defined]
    for_provider = PassbackPolicy.for_provider.__func__  # type: ignore[attr-defined]

    def counting_for_pipe(cls: type[PassbackPolicy], pipe: object) -> PassbackPolicy:
        counted["for_pipe"] += 1
        resolved: PassbackPolicy = for_pipe(cls, pipe)
        return resolved

    def counting_for_provider(cls: type[PassbackPolicy], *args: Any) -> PassbackPolicy:
        counted["for_provider"] += 1
        resolved: PassbackPolicy = for_provider(cls, *args)
        return resolved

    monkeypatch.setattr(PassbackPolicy, "for_pipe", classmethod(counting_for_pipe))
    monkeypatch.setattr(PassbackPolicy, "for_provider", classmethod(counting_for_provider))
    yield counted


def deepseek() -> OpenAIChatPipe:
    return OpenAIChatPipe("deepseek-chat", base_url="http://127.0.0.1:9/v1", api_key="k")


def claude() -> AnthropicPipe:
    return AnthropicPipe("claude-sonnet-4-5", api_key="k")


def tool_loop(pipe: Any, steps: int) -> Conversation:
    """A question and ``steps`` tool calls of ``pipe``'s, each with its result."""
    conversation = Conversation(system="Be brief.").add_user("Weather?")
    for step in range(steps):
        conversation.add(
            PipeResult(
                text="",
                model_reasoning=f"step {step}",
                reasoning_segments=(f"step {step}",),
                tool_calls=(ToolCall(f"call_{step}", "weather", "{}"),),
                provider=pipe.provider,
                model=pipe.model,
                endpoint=pipe.endpoint,
                finish_reason="tool_calls",
            )
        )
        conversation.add_tool_result(f"call_{step}", "rain")
    return conversation


@pytest.mark.parametrize("steps", [1, 5])
@pytest.mark.parametrize("make", [deepseek, claude])
def test_a_request_resolves_the_policy_once_per_step_whatever_the_history(
    resolutions: Counter[str], make: Any, steps: int
) -> None:
    """The check before sending resolves it once, building the request once more (the
    builder reads the scoped turns); never once per message, as it used to."""
    pipe = make()
    conversation = tool_loop(pipe, steps)
    check_passback(conversation, pipe)
    assert resolutions == {"for_pipe": 1, "for_provider": 1}
    pipe.build_request(conversation)
    assert resolutions == {"for_pipe": 2, "for_provider": 2}


def test_request_turns_checks_and_scopes_under_one_resolution(
    resolutions: Counter[str],
) -> None:
    pipe = deepseek()
    conversation = tool_loop(pipe, 3)
    turns = request_turns(conversation, pipe)
    assert resolutions == {"for_pipe": 1, "for_provider": 1}
    assert turns == history_turns(conversation, pipe)


def test_request_turns_raises_what_check_passback_raises() -> None:
    pipe = deepseek()
    data = tool_loop(pipe, 1).to_json()
    del data["messages"][2]["thinking"]  # the turn's reasoning edited away
    data["records"][2]["reasoned"] = None
    edited = Conversation.from_json(data)
    with pytest.raises(UsageError, match="reasoning_content_missing") as separate:
        check_passback(edited, pipe)
    with pytest.raises(UsageError, match="reasoning_content_missing") as together:
        request_turns(edited, pipe)
    assert str(together.value) == str(separate.value)
    with pytest.warns(UserWarning, match="empty reasoning_content"):
        repaired = request_turns(edited.with_repair(), pipe)
    assert repaired[2].reasoning == ""


def test_preflight_and_repair_get_the_policy_the_turns_were_scoped_under(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pipe = deepseek()
    seen: list[object] = []
    chosen = PassbackPolicy(states="tool_loop", reasoning="tool_calls")
    monkeypatch.setattr(PassbackPolicy, "for_pipe", classmethod(lambda cls, pipe: chosen))
    spec = openai_chat_package.SPEC

    def preflight(pipe: Any, turns: Sequence[PreflightTurn], policy: Any) -> Any:
        seen.append(policy)
        return chat_request.preflight(pipe, turns, policy)

    def repair(pipe: Any, turns: Sequence[PreflightTurn], policy: Any) -> Any:
        seen.append(policy)
        return chat_request.repair(pipe, turns, policy)

    monkeypatch.setattr(
        openai_chat_package, "SPEC", dataclasses.replace(spec, preflight=preflight, repair=repair)
    )
    data = tool_loop(pipe, 1).to_json()
    del data["messages"][2]["thinking"]
    data["records"][2]["reasoned"] = None
    edited = Conversation.from_json(data).with_repair()
    with pytest.warns(UserWarning):
        request_turns(edited, pipe)
    assert seen and all(policy is chosen for policy in seen)


def test_prepared_turns_keep_only_the_reasoning_the_policy_gives_back() -> None:
    """A prompt with its own ``turns_for`` is scoped under the policy as well: DeepSeek takes
    reasoning back on tool-call turns only."""
    with_tools = HistoryTurn(
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]}, reasoning="plan"
    )
    without_tools = HistoryTurn({"role": "assistant", "content": "a"}, reasoning="plan")

    class Prepared:
        def turns_for(self, pipe: object) -> list[HistoryTurn]:
            return [with_tools, without_tools]

    turns = history_turns(Prepared(), deepseek())
    assert [turn.reasoning for turn in turns] == ["plan", None]


def test_a_policy_is_made_of_any_rules_with_the_three_values() -> None:
    @dataclasses.dataclass
    class Rules:
        states: str = "always"
        reasoning: str = "tool_loop"
        kinds: frozenset[str] | None = None

    assert PassbackPolicy.of(Rules()) == PassbackPolicy("always", "tool_loop")
    policy = PassbackPolicy("tool_loop")
    assert PassbackPolicy.of(policy) is policy
    with pytest.raises(UsageError, match="states"):
        PassbackPolicy.of(Rules(states="sometimes"))


# ----------------------------------------------------------------- the documented defaults


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        ("anthropic", CLAUDE, PassbackPolicy("tool_loop", "never")),
        # Preserved thinking: every earlier turn's blocks go back (rule 2 of issue #11).
        ("anthropic", "claude-opus-4-5", PassbackPolicy("always", "never")),
        ("anthropic", "claude-sonnet-4-6", PassbackPolicy("always", "never")),
        ("anthropic", "claude-opus-5", PassbackPolicy("always", "never")),
        ("bedrock", "us.anthropic.claude-opus-4-5-v1:0", PassbackPolicy("always", "never")),
        ("bedrock", "anthropic.claude", PassbackPolicy("tool_loop", "never")),
        ("openai-responses", "o4-mini", PassbackPolicy("always", "never")),
        ("gemini", "gemini-2.5-pro", PassbackPolicy("always", "never")),
        ("openrouter", "x/y", PassbackPolicy("tool_loop", "never", DETAILS)),
        ("openai-chat", "gpt-4o", PassbackPolicy("tool_loop", "never", DETAILS)),
        (
            "openai-chat",
            "DeepSeek-V3.2",
            # Every message of a tool-using turn, its final answer too (issue 23).
            PassbackPolicy("tool_loop", "tool_turns", DETAILS),
        ),
        (
            "openai-chat",
            "moonshotai/kimi-k2-thinking",
            # Kimi keeps its reasoning in context on every turn (the pipe's former rule).
            PassbackPolicy("tool_loop", "always", DETAILS),
        ),
        # The chat API takes thinking back in the current tool loop (rule 8 of issue #11).
        ("ollama", "qwen3", PassbackPolicy("never", "tool_loop")),
        ("scripted", "scripted", PassbackPolicy()),
        (None, None, PassbackPolicy()),
    ],
)
def test_default_policy_by_provider(
    provider: str | None, model: str | None, expected: PassbackPolicy
) -> None:
    assert PassbackPolicy.for_pipe(FakePipe(provider, model)) == expected


def test_policy_validation() -> None:
    with pytest.raises(UsageError):
        PassbackPolicy("sometimes")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        PassbackPolicy("never", "maybe")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        Conversation().turns_for(FakePipe("anthropic", CLAUDE, passback="always"))  # type: ignore[arg-type]
    assert PassbackPolicy(kinds={"a", "b"}).kinds == frozenset({"a", "b"})  # type: ignore[arg-type]


def test_explicit_send_reasoning_back_overrides_the_default() -> None:
    @dataclasses.dataclass
    class ChatPipe:
        provider: str
        model: str
        endpoint: str | None = None
        send_reasoning_back: bool | None = None

    assert PassbackPolicy.for_pipe(ChatPipe("openrouter", "m", None, True)).reasoning == "always"
    assert PassbackPolicy.for_pipe(
        ChatPipe("openai-chat", "deepseek-chat", None, False)
    ).reasoning == ("never")
    assert PassbackPolicy.for_pipe(ChatPipe("openai-chat", "deepseek-chat")).reasoning == (
        "tool_turns"
    )
