"""A conversation's budget over a real tool loop: the OpenAI SDK against the loopback WireServer.

Every response of ``openai_responses_function_call`` (o4-mini, Responses) calls a tool and
reports 81 input, 92 output and 64 reasoning tokens; the server repeats it, so the loop only
ends when the budget stops it. From the request bodies the server received, the test asserts
the effort each step asked for (the exhaustion ladder as the spending nears the cap) and that
no request went out once the cap was reached; the ledger lists each step once.

Prices are hand-computed from OpenAI's o4-mini price ($1.10 per million input tokens, $4.40
per million output tokens, reasoning billed inside the output: https://openai.com/api/pricing/).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import anyio
import openai
import pytest

from reasoning_stream import Conversation, tool
from reasoning_stream.conversation import ToolLoopResult
from reasoning_stream.providers import OpenAIResponsesPipe
from reasoning_stream.testing._wire import WireServer

TRANSCRIPT = "openai_responses_function_call"
KEY = "sk-test-budget"
STEP_REASONING = 64
STEP_USD = Decimal(81) * Decimal("1.10") / 1_000_000 + Decimal(92) * Decimal("4.40") / 1_000_000
"""One step's price, by hand: 0.0004939 USD."""

LADDER = ["high", "high", "medium", "low"]
"""The effort of steps 1..4 under either cap below: spent 0 %, ~32 % (under half), ~64 %
(one level less), ~96 % (two less); after step 4 the cap is passed and nothing more is sent."""

CAPS: dict[str, dict[str, Any]] = {
    "reasoning_tokens": {"reasoning_tokens": 200},  # 64, 128, 192, then 256 >= 200
    "usd": {"usd": STEP_USD * 3 + Decimal("0.00001")},  # 3 steps just under, the 4th past
}


@tool
def get_weather(city: str, unit: str = "c") -> str:
    """Current weather for a city."""
    return f"18 {unit} in {city}"


def efforts(server: WireServer) -> list[str]:
    return [request.json()["reasoning"]["effort"] for request in server.requests]


def check(result: ToolLoopResult, conversation: Conversation, server: WireServer) -> None:
    assert result.status == "budget"
    assert efforts(server) == LADDER  # no fifth request: the cap stopped the loop before it
    assert len(result.steps) == len(LADDER)
    ledger = conversation.ledger()
    assert [(entry.turn, entry.step) for entry in ledger] == [(0, step) for step in range(4)]
    assert all(entry.reasoning_tokens == STEP_REASONING for entry in ledger)
    assert all(entry.cost == STEP_USD for entry in ledger)
    budget = conversation.current_budget
    assert budget is not None
    assert budget.spent_reasoning_tokens == STEP_REASONING * 4
    assert budget.spent_usd == STEP_USD * 4
    assert conversation.budget_exceeded()


def pipe_for(client: Any) -> OpenAIResponsesPipe:
    return OpenAIResponsesPipe(
        "o4-mini", client=client, store=False, tools=[get_weather], reasoning="high"
    )


@pytest.mark.parametrize("cap", sorted(CAPS))
def test_run_tools_steps_the_effort_down_and_stops_at_the_cap(cap: str) -> None:
    with WireServer(TRANSCRIPT) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
        with client:
            pipe = pipe_for(client)
            conversation = Conversation().add_user("Weather in Paris?").budget(**CAPS[cap])
            result = conversation.run_tools(pipe, max_steps=8)
    check(result, conversation, server)
    assert pipe.reasoning == "high"  # the pipe's own setting is back


@pytest.mark.anyio
@pytest.mark.parametrize("cap", sorted(CAPS))
async def test_arun_tools_steps_the_effort_down_and_stops_at_the_cap(cap: str) -> None:
    """The same under asyncio and trio, over ``AsyncOpenAI``."""
    async with WireServer(TRANSCRIPT) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
        async with client:
            conversation = Conversation().add_user("Weather in Paris?").budget(**CAPS[cap])
            with anyio.fail_after(20):
                result = await conversation.arun_tools(pipe_for(client), max_steps=8)
    check(result, conversation, server)


def test_a_second_loop_on_a_spent_budget_sends_nothing() -> None:
    with WireServer(TRANSCRIPT) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
        with client:
            conversation = Conversation().add_user("Weather?").budget(reasoning_tokens=100)
            conversation.run_tools(pipe_for(client))
            sent = len(server.requests)
            conversation.add_user("And tomorrow?")
            again = conversation.run_tools(pipe_for(client))
    assert sent == 2 and len(server.requests) == sent  # 64, then 128 >= 100: stop
    assert again.status == "budget" and again.steps == ()
    assert [(entry.turn, entry.step) for entry in conversation.ledger()] == [(0, 0), (0, 1)]
