"""A tool loop on a stored conversation: every step saved as it completes (SQLite and Redis)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from reasoning_stream import Conversation, ReasoningDelta, TextDelta, ToolCall, tool
from reasoning_stream.conversation._tool_loop import CANCELLED
from reasoning_stream.store import ConversationStore
from reasoning_stream.testing import ScriptedPipe

WAIT = 5.0


def roles(conversation: Conversation) -> list[str]:
    return [message["role"] for message in conversation]


def two_step_model(prompt: Any) -> list[Any]:
    """Calls ``check`` twice, one step each, then answers."""
    done = sum(1 for m in prompt if m["role"] == "tool")
    if done < 2:
        return [ReasoningDelta(f"step {done}"), ToolCall(f"call_{done}", "check", "{}")]
    return [ReasoningDelta("done"), TextDelta("All stored.")]


def test_store_run_tools_saves_each_step_as_it_completes(store: ConversationStore) -> None:
    store.save("chat", Conversation().add_user("Go"))
    stored_while_running: list[list[str]] = []

    @tool
    def check() -> str:
        """Look at what the store holds now."""
        conversation, _ = store.load("chat")
        stored_while_running.append(roles(conversation))
        return "checked"

    result = store.run_tools("chat", ScriptedPipe(two_step_model), tools=[check])
    assert result.status == "completed" and result.text == "All stored."
    # While each step's tool ran, that step's assistant turn was stored already, and every
    # earlier step's results too.
    assert stored_while_running == [
        ["user", "assistant"],
        ["user", "assistant", "tool", "assistant"],
    ]
    final, _ = store.load("chat")
    assert roles(final) == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert [m.get("tool_call_id") for m in final if m["role"] == "tool"] == ["call_0", "call_1"]
    assert final.pending_generation is None
    # Each assistant turn kept its record (opaque state and scope survive the store).
    assert all(final.record(i) is not None for i, m in enumerate(final) if m["role"] == "assistant")


@pytest.mark.anyio
async def test_store_arun_tools_cancelled_mid_loop_keeps_every_completed_step(
    store: ConversationStore,
) -> None:
    store.save("chat", Conversation().add_user("Go"))
    blocked = anyio.Event()

    @tool
    async def check() -> str:
        """The first call returns; the second hangs until cancelled."""
        conversation, _ = await anyio.to_thread.run_sync(store.load, "chat")
        if roles(conversation).count("tool") == 1:
            blocked.set()
            await anyio.sleep_forever()
        return "checked"

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:

            async def loop() -> None:
                await store.arun_tools("chat", ScriptedPipe(two_step_model), tools=[check])

            group.start_soon(loop)
            await blocked.wait()
            group.cancel_scope.cancel()
    final, _ = store.load("chat")
    assert roles(final) == ["user", "assistant", "tool", "assistant", "tool"]
    assert [m["content"] for m in final if m["role"] == "tool"] == ["checked", CANCELLED]
    assert final.pending_generation is None


@pytest.mark.anyio
async def test_store_arun_tools_runs_the_whole_loop(store: ConversationStore) -> None:
    store.save("chat", Conversation().add_user("Go"))

    @tool
    async def check() -> str:
        """Async."""
        return "ok"

    with anyio.fail_after(WAIT):
        result = await store.arun_tools("chat", ScriptedPipe(two_step_model), tools=[check])
    assert len(result.steps) == 3 and result.status == "completed"
    final, _ = store.load("chat")
    assert roles(final) == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
