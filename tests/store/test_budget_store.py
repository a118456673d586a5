"""A budget over a tool loop recorded in a store (``Conversation.run_tools(store=...)``).

A store keeps the turns, so the ledger, but not the budget (a setting of the conversation
object you run, as ``docs/conversations.md`` says): the conversation that holds the budget
runs the loop, each step saved as it completes. Same wire as ``tests/providers/
test_budget_wire.py``: every response calls a tool and reports 64 reasoning tokens.
"""

from __future__ import annotations

import anyio
import openai
import pytest

from reasoning_stream import Conversation, UsageError
from reasoning_stream.store import ConversationStore
from reasoning_stream.testing._wire import WireServer
from tests.providers.test_budget_wire import KEY, LADDER, TRANSCRIPT, efforts, pipe_for


def check_stored(store: ConversationStore, conversation: Conversation) -> None:
    stored, _ = store.load("loop")
    assert stored == conversation  # every step and tool result saved, nothing twice
    assert [(e.turn, e.step) for e in stored.ledger()] == [(0, step) for step in range(4)]
    assert stored.ledger() == conversation.ledger()
    assert stored.current_budget is None  # the store keeps the turns, not the budget


def test_run_tools_with_a_store_is_capped_by_the_conversations_budget(
    store: ConversationStore,
) -> None:
    with WireServer(TRANSCRIPT) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
        with client:
            conversation = Conversation().add_user("Weather?").budget(reasoning_tokens=200)
            result = conversation.run_tools(pipe_for(client), store=store, conversation_id="loop")
    assert result.status == "budget"
    assert efforts(server) == LADDER
    check_stored(store, conversation)


@pytest.mark.anyio
async def test_arun_tools_with_a_store_is_capped_too(store: ConversationStore) -> None:
    async with WireServer(TRANSCRIPT) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
        async with client:
            conversation = Conversation().add_user("Weather?").budget(reasoning_tokens=200)
            with anyio.fail_after(20):
                result = await conversation.arun_tools(
                    pipe_for(client), store=store, conversation_id="loop"
                )
    assert result.status == "budget"
    assert efforts(server) == LADDER
    check_stored(store, conversation)


@pytest.mark.parametrize("half", ["store", "conversation_id"])
def test_a_stored_loop_needs_both_the_store_and_the_id(store: ConversationStore, half: str) -> None:
    with WireServer(TRANSCRIPT) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
        with client:
            conversation = Conversation().add_user("Weather?")
            given = {"store": store} if half == "store" else {"conversation_id": "loop"}
            with pytest.raises(UsageError, match=r"both store= .* and conversation_id="):
                conversation.run_tools(pipe_for(client), **given)
    assert server.requests == [] and len(conversation) == 1  # nothing sent, nothing lost
