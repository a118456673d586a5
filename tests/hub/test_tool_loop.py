"""A whole tool loop as one hub stream (``ToolLoop``): every step's channel, each ``ToolCall``
and ``ToolResult``, one final entry; stopped mid-loop, every completed step stays. In memory
and on a real redis-server, sync and async (asyncio and trio)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from reasoning_stream import (
    Conversation,
    ReasoningDelta,
    ReasoningStream,
    TextDelta,
    ToolCall,
    ToolResult,
    UsageError,
    tool,
)
from reasoning_stream.conversation import ToolLoop
from reasoning_stream.hub import Hub, MemoryHub, RedisHub
from reasoning_stream.testing import ScriptedPipe

WAIT = 5.0


@pytest.fixture(params=["memory", "redis"])
def hub(request: pytest.FixtureRequest) -> Iterator[Hub]:
    """In memory and on one redis-server: the loop is the same on every hub (a cluster
    changes where entries live, not what a tool loop publishes)."""
    if request.param == "memory":
        yield MemoryHub()
        return
    redis_hub = RedisHub(request.getfixturevalue("redis_url"))
    try:
        yield redis_hub
    finally:
        redis_hub.close()


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"18 C in {city}"


def model(prompt: Any) -> list[Any]:
    """Calls the weather tool once, then answers."""
    if list(prompt)[-1]["role"] == "tool":
        return [ReasoningDelta("Now I know."), TextDelta("It is 18 C in Paris.")]
    return [
        ReasoningDelta("I need the weather."),
        ToolCall("call_1", "get_weather", '{"city": "Paris"}'),
    ]


def stream_id() -> str:
    return f"loop-{uuid.uuid4().hex}"


def start_in_thread(
    hub: Hub, pipe: ScriptedPipe, tools: list[Any]
) -> tuple[str, Conversation, list[Any], threading.Thread]:
    """``hub.run`` of a ``ToolLoop`` on a new conversation, in a thread of its own."""
    conversation = Conversation().add_user("go")
    name = stream_id()
    outcome: list[Any] = []
    loop = ToolLoop(pipe, tools=tools)
    runner = threading.Thread(target=lambda: outcome.append(hub.run(name, loop, conversation)))
    runner.start()
    return name, conversation, outcome, runner


def wait_for_a_tool_message(conversation: Conversation) -> None:
    """Until the loop left behind adds its last result (then a moment for any next step)."""
    deadline = time.monotonic() + WAIT
    while conversation[-1]["role"] != "tool":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.3)  # time enough for a next step, were one to begin


def check_published(hub: Hub, name: str, chunks: list[str], status: str) -> None:
    entries = hub.read(name)
    assert [e.final for e in entries].count(True) == 1 and entries[-1].final
    assert entries[-1].status == status
    channel = "".join(e.chunk for e in entries)
    assert channel == "".join(chunks)
    assert channel.count(ReasoningStream.OPEN_TAG) == channel.count(ReasoningStream.CLOSE_TAG)
    kinds = [type(e.event).__name__ for e in entries if isinstance(e.event, ToolCall | ToolResult)]
    assert kinds == ["ToolCall", "ToolResult"]


def test_hub_run_publishes_the_whole_loop_as_one_stream(hub: Hub) -> None:
    pipe = ScriptedPipe(model)
    chunks: list[str] = []
    pipe.set_streaming_callback(chunks.append)
    conversation = Conversation().add_user("Weather in Paris?")
    name = stream_id()
    result = hub.run(name, ToolLoop(pipe, tools=[get_weather]), conversation)
    assert result.status == "completed" and result.text == "It is 18 C in Paris."
    assert [m["role"] for m in conversation] == ["user", "assistant", "tool", "assistant"]
    check_published(hub, name, chunks, "completed")
    split = ReasoningStream.split("".join(chunks), lossless=True)
    assert split.segments == ("I need the weather.", "Now I know.")
    assert pipe._callbacks == (chunks.append,)  # the hub's callbacks are gone again


@pytest.mark.anyio
async def test_hub_arun_publishes_the_whole_loop_as_one_stream(hub: Hub) -> None:
    pipe = ScriptedPipe(model)
    chunks: list[str] = []
    pipe.set_streaming_callback(chunks.append)
    loop = ToolLoop(pipe, tools=[get_weather])
    name = stream_id()
    with anyio.fail_after(WAIT):
        result = await hub.arun(name, loop, "Weather in Paris?")  # a new conversation
    assert result.text == "It is 18 C in Paris."
    assert loop.conversation is not None and len(loop.conversation) == 4
    check_published(hub, name, chunks, "completed")


def test_max_steps_is_the_final_entrys_status(hub: Hub) -> None:
    pipe = ScriptedPipe(
        lambda prompt: [ToolCall(f"c{len(list(prompt))}", "get_weather", '{"city": "X"}')]
    )
    name = stream_id()
    result = hub.run(name, ToolLoop(pipe, tools=[get_weather], max_steps=2), "go")
    assert result.status == "max_steps" and len(result.steps) == 2
    assert hub.read(name)[-1].status == "max_steps"


@pytest.mark.anyio
async def test_astop_while_a_tool_runs_keeps_every_completed_step(hub: Hub) -> None:
    started = anyio.Event()

    @tool
    async def slow_lookup(city: str) -> str:
        """Takes forever."""
        started.set()
        await anyio.sleep_forever()
        return ""

    def calls_slow(prompt: Any) -> list[Any]:
        return [
            ReasoningDelta("Look it up."),
            ToolCall("call_1", "slow_lookup", '{"city": "Oslo"}'),
        ]

    pipe = ScriptedPipe(calls_slow)
    conversation = Conversation().add_user("Weather in Oslo?")
    name = stream_id()
    outcome: list[Any] = []

    async def run() -> None:
        outcome.append(await hub.arun(name, ToolLoop(pipe, tools=[slow_lookup]), conversation))

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await started.wait()
            begun = time.monotonic()
            assert await hub.astop(name)
    assert time.monotonic() - begun < 1.0
    (result,) = outcome
    assert result.status == "cancelled_before_answer"
    assert [m["role"] for m in conversation] == ["user", "assistant", "tool"]
    assert (
        conversation[-1]["tool_call_id"] == "call_1" and "cancelled" in conversation[-1]["content"]
    )
    entries = hub.read(name)
    assert entries[-1].final and entries[-1].status == "cancelled_before_answer"


def test_stop_while_a_sync_tool_runs_ends_the_stream_and_the_loop_calls_the_model_no_more(
    hub: Hub,
) -> None:
    """The tool cannot be interrupted: the stream ends within a second anyway, and when the
    tool returns later the loop left behind adds its result and makes no further request."""
    release = threading.Event()
    started = threading.Event()

    @tool
    def blocking() -> str:
        """Blocks until released."""
        started.set()
        release.wait(WAIT)
        return "late"

    pipe = ScriptedPipe(lambda prompt: [ToolCall("call_1", "blocking", "{}")])
    name, conversation, outcome, runner = start_in_thread(hub, pipe, [blocking])
    try:
        assert started.wait(WAIT)
        begun = time.monotonic()
        assert hub.stop(name)
        runner.join(WAIT)
        assert not runner.is_alive()
        assert time.monotonic() - begun < 1.5
    finally:
        release.set()
    (result,) = outcome
    assert result.status.startswith("cancelled")
    assert hub.read(name)[-1].final
    wait_for_a_tool_message(conversation)  # the abandoned loop adds the late result
    assert len(pipe.prompts) == 1
    assert conversation[-1]["content"] == "late"


def test_a_tool_loop_takes_a_pipe_and_a_prompt_it_can_read() -> None:
    with pytest.raises(UsageError, match="Pipe"):
        ToolLoop(object())  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="prompt"):
        ToolLoop(ScriptedPipe(["x"])).run(42)


def test_stop_while_the_model_is_silent_runs_none_of_the_calls_it_then_makes(hub: Hub) -> None:
    """Stopped while the model is silent: the stream ends at once; when the model's calls
    come later, none runs, each is answered as cancelled, and no further request is made."""
    ran: list[str] = []

    @tool
    def record() -> str:
        """Must not run after the stop."""
        ran.append("ran")
        return "ran"

    pipe = ScriptedPipe([ReasoningDelta("thinking"), 1.5, ToolCall("call_1", "record", "{}")])
    name, conversation, outcome, runner = start_in_thread(hub, pipe, [record])
    time.sleep(0.2)
    assert hub.stop(name)
    runner.join(WAIT)
    assert not runner.is_alive() and outcome[0].status == "cancelled_before_answer"
    wait_for_a_tool_message(conversation)  # the silent step ends after 1.5 s
    assert ran == [] and len(pipe.prompts) == 1
    assert "cancelled" in conversation[-1]["content"]
