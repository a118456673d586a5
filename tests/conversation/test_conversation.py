"""Conversation: what goes back to which provider, branches, compaction, persistence, recovery."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream._events import (
    OpaqueState,
    ReasoningDelta,
    ReasoningState,
    TextDelta,
    ToolCall,
)
from reasoning_stream._exceptions import ProviderError, UsageError
from reasoning_stream._messages import INERT_MESSAGE_KEYS, messages_from_prompt
from reasoning_stream._pipe import PipeResult
from reasoning_stream._turns import HistoryTurn
from reasoning_stream.conversation import (
    Conversation,
    GenerationRecord,
    PassbackPolicy,
    TurnRecord,
)
from reasoning_stream.testing import ScriptedPipe
from tests.helpers import examples

from .helpers import CLAUDE, FakePipe

ANTHROPIC_URL = "https://api.anthropic.com"


def anthropic(model: str = CLAUDE, endpoint: str | None = ANTHROPIC_URL) -> FakePipe:
    return FakePipe("anthropic", model, endpoint)


def state(
    kind: str,
    payload: str | bytes,
    *,
    provider: str = "anthropic",
    model: str = CLAUDE,
    endpoint: str | None = ANTHROPIC_URL,
    block: int | str | None = 0,
) -> ReasoningState:
    return ReasoningState(provider, model, kind, payload, block=block, endpoint=endpoint)


def result_from(
    pipe: FakePipe,
    *,
    text: str = "",
    reasoning: str = "",
    states: Sequence[ReasoningState] = (),
    calls: Sequence[ToolCall] = (),
    response_id: str | None = None,
) -> PipeResult:
    """A run's result as the pipe would report it."""
    return PipeResult(
        text=text,
        model_reasoning=reasoning,
        reasoning_segments=(reasoning,) if reasoning else (),
        reasoning_state=tuple(states),
        tool_calls=tuple(calls),
        provider=pipe.provider,
        model=pipe.model,
        endpoint=pipe.endpoint,
        response_id=response_id,
        finish_reason="tool_calls" if calls else "stop",
    )


def weather_call(call_id: str = "call_1") -> ToolCall:
    return ToolCall(call_id, "weather", '{"city": "Oslo"}')


def assistant_turns(turns: Sequence[HistoryTurn]) -> list[HistoryTurn]:
    return [turn for turn in turns if turn.message.get("role") == "assistant"]


SIGNED = state("signature", "sig-1", block=0)
REDACTED = state("redacted", "opaque-redacted==", block=1)


def anthropic_tool_loop() -> Conversation:
    """A user question, a signed + redacted thinking turn that called a tool, its result."""
    pipe = anthropic()
    return (
        Conversation(system="Be brief.")
        .add_user("Weather in Oslo?")
        .add(
            result_from(
                pipe,
                reasoning="need the weather",
                states=[SIGNED, REDACTED],
                calls=[weather_call()],
            )
        )
        .add_tool_result("call_1", "12 C, rain")
    )


# ------------------------------------------------------------------------------ defaults


def test_plain_multi_turn_sends_no_prior_reasoning_by_default() -> None:
    """A provider that takes nothing back gets the visible text only, turn after turn."""
    pipe = ScriptedPipe(
        [
            ReasoningDelta("let me think"),
            OpaqueState(ReasoningState("scripted", "scripted", "signature", "sig")),
            TextDelta("Hello!"),
        ]
    )
    conversation = Conversation().add_user("Hi")
    conversation.run(pipe)
    conversation.add_user("And again?")
    conversation.run(pipe)

    assert len(conversation) == 4
    assert conversation.messages[1] == {
        "role": "assistant",
        "content": "Hello!",
        "thinking": "let me think",
    }
    record = conversation.record(1)
    assert record is not None and record.provider == "scripted"
    assert [s.payload for s in record.states] == ["sig"]
    for turn in conversation.turns_for(pipe):
        assert turn.states == ()
        assert turn.reasoning is None
        assert "thinking" not in turn.message


def test_a_pipe_passback_attribute_wins_over_the_default() -> None:
    pipe = FakePipe("ollama", "qwen3", passback=PassbackPolicy("always", "always"))
    turn = result_from(
        pipe,
        text="hi",
        reasoning="r",
        states=[state("x", "p", provider="ollama", model="qwen3", endpoint=None)],
    )
    conversation = Conversation().add_user("q").add(turn).add_user("next")
    [assistant] = assistant_turns(conversation.turns_for(pipe))
    assert assistant.reasoning == "r"
    assert [s.payload for s in assistant.states] == ["p"]


# ---------------------------------------------------------------------- anthropic tool loop


def test_anthropic_tool_loop_keeps_signed_and_redacted_state_in_order() -> None:
    conversation = anthropic_tool_loop()
    turns = conversation.turns_for(anthropic())
    assert [turn.message["role"] for turn in turns] == ["system", "user", "assistant", "tool"]
    assistant = turns[2]
    assert assistant.states == (SIGNED, REDACTED)
    assert assistant.states[0] is SIGNED and assistant.states[1] is REDACTED
    assert assistant.reasoning is None
    assert assistant.message == {
        "role": "assistant",
        "content": "",
        "tool_calls": [weather_call().to_message()],
    }


def test_interleaved_tool_loop_keeps_every_turn_of_the_loop() -> None:
    pipe = anthropic()
    second = state("signature", "sig-2")
    conversation = anthropic_tool_loop().add(
        result_from(pipe, reasoning="and the wind", states=[second], calls=[weather_call("call_2")])
    )
    conversation.add_tool_result("call_2", "strong wind")
    states = [turn.states for turn in assistant_turns(conversation.turns_for(pipe))]
    assert states == [(SIGNED, REDACTED), (second,)]


def test_anthropic_state_is_dropped_after_the_next_user_turn() -> None:
    pipe = anthropic()
    final = state("signature", "sig-final")
    conversation = anthropic_tool_loop().add(
        result_from(pipe, text="Rainy, 12 C.", reasoning="answer", states=[final])
    )
    in_loop = assistant_turns(conversation.turns_for(pipe))
    assert [turn.states for turn in in_loop] == [(SIGNED, REDACTED), (final,)]

    conversation.add_user("Thanks! And tomorrow?")
    after = assistant_turns(conversation.turns_for(pipe))
    assert [turn.states for turn in after] == [(), ()]
    # Still stored: only this request leaves it out.
    record = conversation.record(2)
    assert record is not None and record.states == (SIGNED, REDACTED)


def test_a_framework_injected_user_turn_also_ends_the_tool_loop() -> None:
    conversation = anthropic_tool_loop().add_user("Go on.", provenance="continuation")
    [assistant] = assistant_turns(conversation.turns_for(anthropic()))
    assert assistant.states == ()


# ----------------------------------------------------------------------- foreign state


@pytest.mark.parametrize(
    "other",
    [
        FakePipe("openai-responses", CLAUDE, ANTHROPIC_URL, PassbackPolicy("always", "always")),
        FakePipe("bedrock", CLAUDE, ANTHROPIC_URL),
        anthropic(model="claude-opus-4-1"),
        anthropic(endpoint="https://proxy.example.com"),
        anthropic(endpoint=None),
        FakePipe("anthropic", "claude-haiku", ANTHROPIC_URL, PassbackPolicy("always", "always")),
    ],
    ids=["provider", "bedrock", "model", "endpoint", "no-endpoint", "model-always"],
)
def test_foreign_state_and_reasoning_are_never_replayed(other: FakePipe) -> None:
    conversation = anthropic_tool_loop()
    for turn in conversation.turns_for(other):
        assert turn.states == ()
        assert turn.reasoning is None
        assert "thinking" not in turn.message
    # The readable reasoning stays in the history as inert metadata.
    assert conversation.messages[2]["thinking"] == "need the weather"


def test_switching_provider_mid_conversation_sends_only_own_state() -> None:
    responses = FakePipe("openai-responses", "o4-mini", "https://api.openai.com/v1")
    item = state(
        "encrypted",
        '{"type":"reasoning"}',
        provider="openai-responses",
        model="o4-mini",
        endpoint="https://api.openai.com/v1",
        block="rs_1",
    )
    conversation = anthropic_tool_loop().add(
        result_from(responses, text="Rainy.", reasoning="summary", states=[item])
    )
    conversation.add_user("And tomorrow?")
    by_responses = assistant_turns(conversation.turns_for(responses))
    assert [turn.states for turn in by_responses] == [(), (item,)]
    by_claude = assistant_turns(conversation.turns_for(anthropic()))
    assert [turn.states for turn in by_claude] == [(), ()]


def test_a_trailing_slash_is_the_same_endpoint() -> None:
    conversation = anthropic_tool_loop()
    [assistant] = assistant_turns(conversation.turns_for(anthropic(endpoint=ANTHROPIC_URL + "/")))
    assert assistant.states == (SIGNED, REDACTED)


def test_a_state_labelled_for_another_model_is_dropped_even_in_scope() -> None:
    pipe = anthropic()
    stray = state("signature", "sig-other", model="claude-other")
    conversation = (
        Conversation()
        .add_user("q")
        .add(result_from(pipe, states=[SIGNED, stray], calls=[weather_call()]))
        .add_tool_result("call_1", "r")
    )
    [assistant] = assistant_turns(conversation.turns_for(pipe))
    assert assistant.states == (SIGNED,)


def test_history_given_as_plain_messages_carries_no_provider_state() -> None:
    conversation = Conversation(
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a", "thinking": "t", "tool_calls": []},
        ]
    )
    pipe = FakePipe("openai-chat", "deepseek-chat", passback=PassbackPolicy("always", "always"))
    for turn in conversation.turns_for(pipe):
        assert turn.states == () and turn.reasoning is None


# ------------------------------------------------------------------ other provider policies


def test_responses_state_goes_back_on_every_own_turn() -> None:
    pipe = FakePipe("openai-responses", "o4-mini", "https://api.openai.com/v1")
    first = state(
        "encrypted",
        "e1",
        provider=pipe.provider or "",
        model="o4-mini",
        endpoint=pipe.endpoint,
        block="rs_1",
    )
    second = state(
        "encrypted",
        "e2",
        provider=pipe.provider or "",
        model="o4-mini",
        endpoint=pipe.endpoint,
        block="rs_2",
    )
    conversation = (
        Conversation()
        .add_user("one")
        .add(result_from(pipe, text="a1", states=[first]))
        .add_user("two")
        .add(result_from(pipe, text="a2", states=[second]))
        .add_user("three")
    )
    assert [turn.states for turn in assistant_turns(conversation.turns_for(pipe))] == [
        (first,),
        (second,),
    ]


def test_deepseek_gets_reasoning_back_on_every_own_tool_call_turn() -> None:
    """Every assistant message of a tool-using turn, its final answer too (issue 23)."""
    pipe = FakePipe("openai-chat", "deepseek-chat", "https://api.deepseek.com/v1")
    conversation = (
        Conversation()
        .add_user("q1")
        .add(result_from(pipe, reasoning="plan 1", calls=[weather_call("c1")]))
        .add_tool_result("c1", "r1")
        .add(result_from(pipe, text="a1", reasoning="answer 1"))
        .add_user("q2")
        .add(result_from(pipe, reasoning="plan 2", calls=[weather_call("c2")]))
        .add_tool_result("c2", "r2")
    )
    turns = assistant_turns(conversation.turns_for(pipe))
    assert [turn.reasoning for turn in turns] == ["plan 1", "answer 1", "plan 2"]
    assert all("thinking" not in turn.message for turn in turns)
    # Another model or host, or a model that does not want it, gets none of it.
    other_model = FakePipe("openai-chat", "deepseek-reasoner", pipe.endpoint)
    assert all(t.reasoning is None for t in conversation.turns_for(other_model))
    moved = FakePipe("openai-chat", "deepseek-chat", "https://proxy.example.com/v1")
    assert all(t.reasoning is None for t in conversation.turns_for(moved))
    gpt = FakePipe("openai-chat", "gpt-4o", pipe.endpoint)
    assert all(t.reasoning is None for t in conversation.turns_for(gpt))


def test_openai_chat_takes_back_only_reasoning_details_state() -> None:
    pipe = FakePipe("openrouter", "anthropic/claude-sonnet-4", "https://openrouter.ai/api/v1")
    details = state(
        "reasoning_details",
        '{"type":"reasoning.text"}',
        provider="openrouter",
        model=pipe.model or "",
        endpoint=pipe.endpoint,
    )
    encrypted = state(
        "encrypted", "blob", provider="openrouter", model=pipe.model or "", endpoint=pipe.endpoint
    )
    conversation = (
        Conversation()
        .add_user("q")
        .add(result_from(pipe, states=[details, encrypted], calls=[weather_call()]))
        .add_tool_result("call_1", "r")
    )
    [assistant] = assistant_turns(conversation.turns_for(pipe))
    assert assistant.states == (details,)


# --------------------------------------------------------------------------- inert keys


def test_inert_keys_never_reach_a_history_turn() -> None:
    pipe = anthropic()
    conversation = (
        Conversation()
        .add_system("sys", timestamp="2024-01-01T00:00:00Z")
        .add_user("q", timestamp=1.5)
        .add(
            result_from(pipe, reasoning="r", states=[SIGNED], calls=[weather_call()]),
            provenance="proactive",
            timestamp=2.0,
        )
        .add_tool_result("call_1", "r", timestamp=3.0)
        .add_message(
            {"role": "assistant", "content": "x", "thinking": "t", "provenance": "final_answer"}
        )
    )
    for policy in (PassbackPolicy(), PassbackPolicy("always", "always")):
        pipe.passback = policy
        for turn in conversation.turns_for(pipe):
            assert not INERT_MESSAGE_KEYS & turn.message.keys()
    stored = conversation.messages
    assert stored[2]["provenance"] == "proactive" and stored[2]["thinking"] == "r"


def test_history_turns_are_copies() -> None:
    conversation = anthropic_tool_loop()
    turn = conversation.turns_for(anthropic())[2]
    turn.message["tool_calls"][0]["id"] = "changed"
    outside = conversation.messages
    outside[2]["content"] = "changed"
    assert conversation.messages[2]["tool_calls"][0]["id"] == "call_1"
    assert conversation.messages[2]["content"] == ""


# ------------------------------------------------------------------------------ branches


def test_editing_an_old_turn_invalidates_downstream_state() -> None:
    pipe = FakePipe("openai-responses", "o4-mini")
    first = state("encrypted", "e1", provider="openai-responses", model="o4-mini", endpoint=None)
    second = state("encrypted", "e2", provider="openai-responses", model="o4-mini", endpoint=None)
    original = (
        Conversation()
        .add_user("one")
        .add(result_from(pipe, text="a1", states=[first]))
        .add_user("two", timestamp=5)
        .add(result_from(pipe, text="a2", states=[second]))
    )
    saved = original.dumps()

    branch = original.edit(2, "two, reworded")
    assert branch.messages == [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "two, reworded"},
    ]
    assert [t.states for t in assistant_turns(branch.turns_for(pipe))] == [(first,)]
    assert original.dumps() == saved

    # Editing the answer itself drops its own state and tool calls as well.
    edited_answer = original.edit(-1, "a2, corrected")
    assert edited_answer.record(3) is None
    assert [t.states for t in assistant_turns(edited_answer.turns_for(pipe))] == [(first,), ()]

    whole = original.edit(0, {"role": "user", "content": "ONE"}, timestamp=9)
    assert whole.messages == [{"role": "user", "content": "ONE", "timestamp": 9}]
    with pytest.raises(IndexError):
        original.edit(4, "x")


def test_regenerate_drops_the_last_answer_and_its_state() -> None:
    pipe = anthropic()
    final = state("signature", "sig-final")
    original = anthropic_tool_loop().add(result_from(pipe, text="Rainy.", states=[final]))
    branch = original.regenerate()
    assert [m["role"] for m in branch.messages] == ["system", "user"]
    assert all(turn.states == () for turn in branch.turns_for(pipe))
    assert len(original) == 5 and original.record(4) is not None

    # The tool loop is part of the answer being regenerated.
    assert original.regenerate() == branch
    with pytest.raises(UsageError):
        Conversation(system="s").regenerate()


def test_a_branch_does_not_share_the_pending_generation() -> None:
    conversation = Conversation().add_user("q")
    conversation.begin_generation(anthropic())
    assert conversation.regenerate().pending_generation is None
    assert conversation.edit(0, "q2").pending_generation is None
    copy = conversation.copy()
    assert copy == conversation and copy.pending_generation is not conversation.pending_generation


# ------------------------------------------------------------------------------ compaction


def tool_heavy_conversation() -> Conversation:
    pipe = anthropic()
    calls = [weather_call("a"), weather_call("b")]
    return (
        Conversation(system="sys")
        .add_user("q1")
        .add(result_from(pipe, text="a1"))
        .add_user("q2")
        .add(result_from(pipe, reasoning="r", states=[SIGNED], calls=calls))
        .add_tool_result("a", "ra")
        .add_tool_result("b", "rb")
        .add(result_from(pipe, text="done"))
    )


def test_compact_keeps_a_tool_call_and_its_results_together() -> None:
    conversation = tool_heavy_conversation()
    roles = [m["role"] for m in conversation.compact(2).messages]
    assert roles == ["system", "assistant", "tool", "tool", "assistant"]
    compacted = conversation.compact(2)
    [tool_turn, _] = assistant_turns(compacted.turns_for(anthropic()))
    # No user message is left, so the whole remainder is the current tool loop.
    assert tool_turn.states == (SIGNED,)
    assert compacted.record(1) == conversation.record(4)

    assert [m["role"] for m in conversation.compact(1).messages] == ["system", "assistant"]
    assert [m["role"] for m in conversation.compact(0).messages] == ["system"]
    assert conversation.compact(99) == conversation
    with pytest.raises(UsageError):
        conversation.compact(-1)


# -------------------------------------------------------------------------- generations


def test_a_finished_turn_leaves_no_pending_generation() -> None:
    pipe = ScriptedPipe([ReasoningDelta("r"), TextDelta("answer")])
    conversation = Conversation().add_user("q")
    record = conversation.begin_generation(pipe)
    assert conversation.pending_generation is record and record.status == "in_progress"
    conversation.add(pipe.run(conversation))
    reloaded = Conversation.loads(conversation.dumps())
    assert reloaded.pending_generation is None
    last = reloaded.record(-1)
    assert last is not None and last.status == "completed"
    assert reloaded.messages[-1]["content"] == "answer"


@pytest.mark.anyio
async def test_a_turn_cancelled_during_reasoning_is_told_apart_after_reload() -> None:
    pipe = ScriptedPipe([ReasoningDelta("still thinking"), 5.0, TextDelta("never")])
    conversation = Conversation().add_user("q")
    with anyio.move_on_after(0.05):
        await conversation.arun(pipe)
    reloaded = Conversation.loads(conversation.dumps())
    pending = reloaded.pending_generation
    assert pending is not None
    assert pending.status == "cancelled_before_answer"
    assert not pending.finished
    assert pending.partial_reasoning == "still thinking"
    assert pending.partial_text == ""
    assert [m["role"] for m in reloaded.messages] == ["user"]
    assert reloaded == conversation


def test_a_turn_crashed_after_a_tool_call_is_told_apart_after_reload() -> None:
    pipe = ScriptedPipe(
        [ReasoningDelta("call it"), weather_call(), TextDelta("partial"), RuntimeError("boom")]
    )
    conversation = Conversation().add_user("q")
    record = conversation.begin_generation(pipe, request_id="req_1")
    with pytest.raises(ProviderError) as raised:
        pipe.run(conversation)
    record.update_from(raised.value.result)

    reloaded = Conversation.from_json(json.loads(json.dumps(conversation.to_json())))
    pending = reloaded.pending_generation
    assert pending is not None
    assert pending.status == "error"
    assert pending.request_id == "req_1"
    assert pending.tool_calls == [weather_call().to_message()]
    assert pending.partial_text == "partial"
    assert pending.error is not None and "boom" in pending.error
    assert reloaded.discard_generation() == pending
    assert reloaded.pending_generation is None


def test_a_process_that_died_mid_run_leaves_an_in_progress_record() -> None:
    conversation = Conversation().add_user("q")
    conversation.begin_generation(anthropic())
    saved = conversation.dumps()  # saved while the stream ran; then the process died
    pending = Conversation.loads(saved).pending_generation
    assert pending is not None and pending.status == "in_progress"
    assert (pending.provider, pending.model, pending.endpoint) == (
        "anthropic",
        CLAUDE,
        ANTHROPIC_URL,
    )


def test_run_keeps_the_capture_when_the_pipe_fails() -> None:
    pipe = ScriptedPipe([TextDelta("half"), ValueError("lost connection")])
    conversation = Conversation().add_user("q")
    with pytest.raises(ProviderError):
        conversation.run(pipe)
    pending = conversation.pending_generation
    assert pending is not None and pending.status == "error" and pending.partial_text == "half"
    assert len(conversation) == 1


def test_update_from_without_a_result_changes_nothing() -> None:
    record = GenerationRecord("p", "m")
    assert record.update_from(None) == GenerationRecord("p", "m", started_at=record.started_at)


def test_add_takes_a_pipe_result_only() -> None:
    with pytest.raises(UsageError):
        Conversation().add({"role": "assistant", "content": "x"})  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        Conversation().add_message("hello")  # type: ignore[arg-type]


def test_persistence_rejects_foreign_data() -> None:
    with pytest.raises(UsageError):
        Conversation.from_json({"format": "something-else"})
    with pytest.raises(UsageError):
        Conversation.from_json({"version": 99})
    with pytest.raises(UsageError):
        Conversation.from_json({"messages": [{"role": "user"}], "records": []})


# -------------------------------------------------------------------------- properties

JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)
PROVIDERS = st.sampled_from(["anthropic", "openai-responses", "gemini", "openai-chat", "bedrock"])
MODELS = st.sampled_from(["m1", "m2", "deepseek-chat"])
ENDPOINTS = st.none() | st.sampled_from(
    ["https://a.example/v1", "https://a.example/v1/", "us-east-1"]
)

states_strategy = st.builds(
    ReasoningState,
    provider=PROVIDERS,
    model=MODELS,
    kind=st.sampled_from(["signature", "redacted", "encrypted", "reasoning_details", "thought"]),
    payload=st.text(max_size=12) | st.binary(max_size=12),
    block=st.none() | st.integers(-3, 50) | st.text(max_size=5),
    endpoint=ENDPOINTS,
    extra=st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=2),
)
tool_calls_strategy = st.builds(
    ToolCall,
    id=st.text(min_size=1, max_size=6),
    name=st.text(max_size=6),
    arguments=st.text(max_size=10),
)
results_strategy = st.builds(
    PipeResult,
    text=st.text(max_size=10),
    model_reasoning=st.text(max_size=10),
    reasoning_state=st.lists(states_strategy, max_size=3).map(tuple),
    tool_calls=st.lists(tool_calls_strategy, max_size=2).map(tuple),
    status=st.sampled_from(
        [
            "completed",
            "length",
            "cancelled_before_answer",
            "cancelled_after_partial_answer",
            "error",
        ]
    ),
    finish_reason=st.none() | st.sampled_from(["stop", "tool_calls", "length"]),
    provider=st.none() | PROVIDERS,
    model=st.none() | MODELS,
    endpoint=ENDPOINTS,
    response_id=st.none() | st.text(max_size=6),
)
INERT = st.fixed_dictionaries(
    {},
    optional={
        "thinking": st.text(max_size=6),
        "provenance": st.sampled_from(["continuation", "final_answer", "proactive"]),
        "timestamp": st.text(max_size=6) | st.floats(allow_nan=False, allow_infinity=False),
    },
)

Step = Callable[[Conversation], object]


@st.composite
def steps(draw: st.DrawFn) -> Step:
    kind = draw(st.sampled_from(["user", "system", "tool", "result", "message"]))
    extra = draw(INERT)
    if kind == "user":
        content = draw(st.text(max_size=10) | st.lists(JSON_VALUES, max_size=2))
        return lambda c: c.add_user(content, **extra)
    if kind == "system":
        text = draw(st.text(max_size=10))
        return lambda c: c.add_system(text, **extra)
    if kind == "tool":
        call_id, content = draw(st.text(max_size=5)), draw(st.text(max_size=10))
        return lambda c: c.add_tool_result(call_id, content, **extra)
    if kind == "result":
        result = draw(results_strategy)
        return lambda c: c.add(result, **extra)
    message = draw(st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=4))
    return lambda c: c.add_message({**message, **extra})


@st.composite
def conversations(draw: st.DrawFn) -> Conversation:
    conversation = Conversation(system=draw(st.none() | st.text(max_size=5)))
    for step in draw(st.lists(steps(), max_size=8)):
        step(conversation)
    if draw(st.booleans()):
        pipe = FakePipe(draw(PROVIDERS), draw(MODELS), draw(ENDPOINTS))
        record = conversation.begin_generation(
            pipe, request_id=draw(st.none() | st.text(max_size=4))
        )
        if draw(st.booleans()):
            record.update_from(draw(results_strategy))
    return conversation


@settings(max_examples=examples(200), deadline=None)
@given(conversations())
def test_any_conversation_survives_json(conversation: Conversation) -> None:
    """to_json, json.dumps, json.loads, from_json: equal, states and scopes and bytes included."""
    text = json.dumps(conversation.to_json())
    reloaded = Conversation.from_json(json.loads(text))
    assert reloaded == conversation
    assert Conversation.loads(conversation.dumps()) == conversation
    for index in range(len(conversation)):
        before, after = conversation.record(index), reloaded.record(index)
        assert before == after
        if before is not None and after is not None:
            assert [type(s.payload) for s in before.states] == [
                type(s.payload) for s in after.states
            ]


@settings(max_examples=examples(100), deadline=None)
@given(
    conversations(),
    st.sampled_from(
        ["anthropic", "openai-responses", "gemini", "openai-chat", "bedrock", "ollama"]
    ),
    MODELS,
    ENDPOINTS,
)
def test_no_inert_key_or_foreign_state_ever_leaves(
    conversation: Conversation, provider: str, model: str, endpoint: str | None
) -> None:
    for policy in (None, PassbackPolicy("always", "always")):
        pipe = FakePipe(provider, model, endpoint, policy)
        turns = conversation.turns_for(pipe)
        assert len(turns) == len(conversation)
        for turn in turns:
            assert not INERT_MESSAGE_KEYS & turn.message.keys()
            for sent in turn.states:
                assert (sent.provider, sent.model) == (provider, model)
        for index, turn in enumerate(turns):
            if turn.states or turn.reasoning:
                record = conversation.record(index)
                assert isinstance(record, TurnRecord) and record.made_by(pipe)


def unit_owner(messages: Sequence[dict[str, Any]]) -> list[int]:
    """For each message, where its unit starts: tool results belong to the call before them."""
    owner: list[int] = []
    caller: int | None = None
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool" and caller is not None:
            owner.append(caller)
            continue
        owner.append(index)
        caller = index if role == "assistant" and message.get("tool_calls") else None
    return owner


@settings(max_examples=examples(100), deadline=None)
@given(conversations(), st.integers(0, 10))
def test_compaction_never_splits_a_tool_unit(conversation: Conversation, keep_last: int) -> None:
    compacted = conversation.compact(keep_last)
    original = conversation.messages
    kept = compacted.messages
    head = 0
    while head < len(original) and original[head].get("role") == "system":
        head += 1
    assert kept[:head] == original[:head]
    tail = kept[head:]
    assert tail == original[len(original) - len(tail) :]
    first = len(original) - len(tail)
    if tail:
        assert unit_owner(original)[first] == first
    for offset in range(len(tail)):
        assert compacted.record(head + offset) == conversation.record(first + offset)


def test_a_conversation_is_a_sequence_of_message_copies() -> None:
    """Pipes that know nothing of passback read it as plain messages, inert keys dropped."""
    conversation = anthropic_tool_loop()
    assert list(conversation) == conversation.messages
    assert conversation[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "12 C, rain"}
    assert conversation[1:2] == [{"role": "user", "content": "Weather in Oslo?"}]
    conversation[2]["content"] = "changed"
    assert conversation[2]["content"] == ""
    plain = messages_from_prompt(conversation)
    assert plain[2] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [weather_call().to_message()],
    }
