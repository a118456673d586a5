"""A hub-run ``ToolLoop``: its conversation's ledger lists each step once, its budget holds.

The hub publishes the loop but the steps are the conversation's own runs, so each model call
is charged once (to the ledger and to the budget) whether the loop runs directly or through
``hub.run``/``hub.arun``. The scripted model reports its usage with each response.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from reasoning_stream import Conversation, TextDelta, ToolCall, Usage, UsageReport, tool
from reasoning_stream.conversation import ToolLoop
from reasoning_stream.hub import MemoryHub
from reasoning_stream.testing import ScriptedPipe


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text


def script(prompt: Any) -> list[Any]:
    """Two rounds of one call (15 reasoning tokens each), then an answer (3)."""
    done = sum(1 for m in prompt if m["role"] == "assistant" and m.get("tool_calls"))
    if done < 2:
        usage = Usage(input_tokens=10, output_tokens=20, reasoning_tokens=15)
        return [UsageReport(usage), ToolCall(f"call_{done}", "echo", '{"text": "hi"}')]
    return [
        UsageReport(Usage(input_tokens=30, output_tokens=5, reasoning_tokens=3)),
        TextDelta("ok"),
    ]


def final_status(hub: MemoryHub, stream_id: str) -> str | None:
    return hub.read(stream_id)[-1].status


def test_a_hub_run_tool_loop_charges_each_step_once() -> None:
    hub = MemoryHub()
    conversation = Conversation().add_user("Go.").budget(reasoning_tokens=1000)
    result = hub.run("loop", ToolLoop(ScriptedPipe(script), tools=[echo]), conversation)
    assert result.status == "completed" and len(result.steps) == 3
    ledger = conversation.ledger()
    assert [(e.turn, e.step, e.reasoning_tokens) for e in ledger] == [
        (0, 0, 15),
        (0, 1, 15),
        (0, 2, 3),
    ]
    assert conversation.current_budget is not None
    assert conversation.current_budget.spent_reasoning_tokens == 33  # not 66: no double charge


@pytest.mark.anyio
async def test_a_hub_run_tool_loop_stops_at_the_budget_with_that_final_status() -> None:
    hub = MemoryHub()
    conversation = Conversation().add_user("Go.").budget(reasoning_tokens=20)
    with anyio.fail_after(10):
        result = await hub.arun("loop", ToolLoop(ScriptedPipe(script), tools=[echo]), conversation)
    assert result.status == "budget" and len(result.steps) == 2  # 15, then 30 >= 20
    assert final_status(hub, "loop") == "budget"
    assert [(e.turn, e.step) for e in conversation.ledger()] == [(0, 0), (0, 1)]
    assert conversation.current_budget is not None
    assert conversation.current_budget.spent_reasoning_tokens == 30
