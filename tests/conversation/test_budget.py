"""``conversation.budget(...)``: the effort steps down near the cap, and nothing runs past it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import anyio
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import (
    Budget,
    BudgetExceededError,
    Conversation,
    PipeResult,
    Usage,
    UsageError,
    UsageReport,
)
from reasoning_stream.providers import OpenAIResponsesPipe
from reasoning_stream.testing import ScriptedPipe, WireServer
from tests.helpers import examples
from tests.providers.test_passback import KEY

pytest.importorskip("genai_prices")


@contextmanager
def o4_mini(server: WireServer) -> Iterator[OpenAIResponsesPipe]:
    with openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client:
        yield OpenAIResponsesPipe("o4-mini", client=client, store=False, reasoning="high")


def efforts(server: WireServer) -> list[Any]:
    return [request.json().get("reasoning", {}).get("effort") for request in server.requests]


def test_the_effort_steps_down_near_the_cap_and_no_request_goes_past_it() -> None:
    """The wire reports 64, then 16 and 16 reasoning tokens; the cap is 90.

    Run 1 at 0 % asks "high"; run 2 at 71 % (past half) one level less; run 3 at 89 % (past
    80 %) two levels less; at 107 % the next run is refused without a request.
    """
    replies = (
        "openai_responses_function_call",
        "openai_responses_followup",
        "openai_responses_followup",
    )
    with WireServer(*replies) as server, o4_mini(server) as pipe:
        conversation = Conversation().add_user("Weather in Paris?").budget(reasoning_tokens=90)
        first = conversation.run(pipe)
        for call in first.tool_calls:
            conversation.add_tool_result(call.id, "18 °C")
        conversation.run(pipe)
        conversation.add_user("And tomorrow?")
        assert not conversation.budget_exceeded()
        conversation.run(pipe)
        assert pipe.reasoning == "high"  # the pipe's own setting is back after each run
        assert conversation.budget_exceeded()
        with pytest.raises(BudgetExceededError, match="96 of 90 reasoning tokens") as raised:
            conversation.run(pipe)
    assert efforts(server) == ["high", "medium", "low"]
    assert isinstance(raised.value.budget, Budget)
    assert [entry.reasoning_tokens for entry in conversation.ledger()] == [64, 16, 16]


def test_a_dollar_cap_counts_the_price_of_each_run() -> None:
    # o4-mini, genai-prices: $1.10 input, $4.40 output per million; the followup's wire
    # reports 190 input and 40 output tokens: $0.000385 a run.
    replies = ("openai_responses_followup", "openai_responses_followup")
    with WireServer(*replies) as server, o4_mini(server) as pipe:
        conversation = Conversation().add_user("hi").budget(usd="0.0007")
        conversation.run(pipe)
        budget = conversation.current_budget
        assert budget is not None and budget.spent_usd == Decimal("0.000385")
        conversation.run(pipe)  # 55 % spent: one level less
        with pytest.raises(BudgetExceededError, match=r"\(\$0.00077 of \$0.0007\)"):
            conversation.run(pipe)
    assert efforts(server) == ["high", "medium"]


def test_the_budget_survives_dumps_and_loads_and_copies() -> None:
    usage = Usage(input_tokens=3, output_tokens=9, reasoning_tokens=7)
    conversation = Conversation().add_user("hi").budget(reasoning_tokens=10, usd=1)
    with pytest.warns(UserWarning, match="no price"):  # a scripted pipe has no price
        conversation.run(ScriptedPipe([UsageReport(usage), "ok"]))
    loaded = Conversation.loads(conversation.dumps())
    assert loaded.current_budget == conversation.current_budget == Budget(10, Decimal(1), 7)
    assert conversation.copy().current_budget == conversation.current_budget
    assert Conversation.loads(Conversation().dumps()).current_budget is None


def test_a_failed_run_is_charged_what_it_reported() -> None:
    usage = Usage(output_tokens=9, reasoning_tokens=8)
    pipe = ScriptedPipe([UsageReport(usage), "partial", RuntimeError("connection lost")])
    conversation = Conversation().add_user("hi").budget(reasoning_tokens=10)
    with pytest.raises(Exception, match="connection lost"):
        conversation.run(pipe)
    budget = conversation.current_budget
    assert budget is not None and budget.spent_reasoning_tokens == 8


@pytest.mark.anyio
async def test_async_runs_are_refused_past_the_cap_too() -> None:
    usage = Usage(output_tokens=20, reasoning_tokens=20)
    conversation = Conversation().add_user("hi").budget(reasoning_tokens=10)
    with anyio.fail_after(10):
        await conversation.arun(ScriptedPipe([UsageReport(usage), "ok"]))
        with pytest.raises(BudgetExceededError):
            await conversation.arun(ScriptedPipe(["never sent"]))
    assert len(conversation) == 2
    conversation.clear_budget()
    assert not conversation.budget_exceeded()


def test_an_unpriced_run_warns_that_the_dollar_cap_cannot_count_it() -> None:
    conversation = Conversation().add_user("hi").budget(usd=1)
    with pytest.warns(UserWarning, match="no price is known for 'scripted'"):
        conversation.add(PipeResult(text="ok", model="scripted", usage=Usage(output_tokens=1)))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "needs reasoning_tokens=, usd= or both"),
        ({"reasoning_tokens": 0}, "must be positive"),
        ({"reasoning_tokens": True}, "takes an int"),
        ({"reasoning_tokens": 2.5}, "takes an int"),
        ({"usd": -1}, "positive number of dollars"),
        ({"usd": float("nan")}, "positive number of dollars"),
        ({"usd": "ten"}, "number of US dollars"),
        ({"usd": [1]}, "number of US dollars"),
    ],
)
def test_bad_caps_are_refused_and_the_old_budget_kept(
    arguments: dict[str, Any], message: str
) -> None:
    conversation = Conversation().budget(reasoning_tokens=5)
    with pytest.raises(UsageError, match=message):
        conversation.budget(**arguments)
    assert conversation.current_budget == Budget(reasoning_tokens=5)


caps = st.one_of(st.none(), st.integers(1, 10**6))


@settings(max_examples=examples(200), deadline=None)
@given(
    tokens=caps,
    cents=caps,
    spent_tokens=st.integers(0, 2 * 10**6),
    spent_cents=st.integers(0, 2 * 10**6),
)
def test_steps_and_refusal_follow_the_largest_share_of_a_cap(
    tokens: int | None, cents: int | None, spent_tokens: int, spent_cents: int
) -> None:
    """Reference: integer cross-multiplication, one level from 1/2, two from 4/5, none at 1."""
    if tokens is None and cents is None:
        return
    budget = Budget(
        reasoning_tokens=tokens,
        usd=None if cents is None else Decimal(cents) / 100,
        spent_reasoning_tokens=spent_tokens,
        spent_usd=Decimal(spent_cents) / 100,
    )
    pairs = [(spent, cap) for spent, cap in ((spent_tokens, tokens), (spent_cents, cents)) if cap]
    steps = max((2 * s >= c) + (5 * s >= 4 * c) for s, c in pairs)
    assert budget.steps_down == steps
    assert budget.exceeded == any(s >= c for s, c in pairs)


def test_a_pipe_at_the_bottom_of_the_ladder_or_without_effort_runs_as_it_is() -> None:
    replies = ("openai_responses_followup", "openai_responses_followup")
    with WireServer(*replies) as server, o4_mini(server) as pipe:
        pipe.reasoning = "low"
        conversation = Conversation().add_user("hi").budget(reasoning_tokens=20)
        conversation.run(pipe)  # 16 of 20: 80 %, two levels less than "low" is still "low"
        conversation.add_user("more")
        conversation.run(pipe)
    assert efforts(server) == ["low", "low"]
    scripted = Conversation().add_user("hi").budget(reasoning_tokens=10)
    scripted.run(ScriptedPipe([UsageReport(Usage(reasoning_tokens=9)), "a"]))
    assert scripted.current_budget is not None and scripted.current_budget.steps_down == 2
    assert scripted.add_user("b").run(ScriptedPipe(["fine"])).text == "fine"
