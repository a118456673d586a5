"""The tool loop over a scripted model: steps, results, errors, concurrency, limits, cancellation.

``ScriptedPipe`` plays the model: its script reads the conversation it is given and calls tools
until a tool result is the last message. Each behaviour runs sync and under anyio (asyncio and
trio). The provider pipes' requests are checked in ``tests/providers/test_tool_loop_wire.py``.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Literal

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import (
    Conversation,
    Event,
    ReasoningDelta,
    ReasoningStream,
    TextDelta,
    Tool,
    ToolCall,
    ToolResult,
    UsageError,
    tool,
)
from reasoning_stream.conversation import ToolLoopResult
from reasoning_stream.conversation._tool_loop import CANCELLED
from reasoning_stream.testing import ScriptedPipe
from tests.helpers import examples

WAIT = 5.0
"""Seconds any test waits for something that should happen at once."""


@tool
def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
    """Current weather for a city."""
    return f"18 {unit} in {city}"


@tool
def get_time(city: str) -> dict[str, str]:
    """Local time in a city."""
    return {"city": city, "time": "09:00"}


def call(number: int, name: str, arguments: str) -> ToolCall:
    return ToolCall(f"call_{number}", name, arguments)


SEEN: dict[int, list[list[dict[str, Any]]]] = {}


def seen(pipe: ScriptedPipe) -> list[list[dict[str, Any]]]:
    """The messages of each request the scripted model got, as they were then."""
    return SEEN[id(pipe._script)]


def model(*rounds: Sequence[Any], answer: str = "Done.") -> Callable[[Any], list[Any]]:
    """A scripted model: round ``n`` of tool calls after ``n`` tool-result turns, then an answer."""
    requests: list[list[dict[str, Any]]] = []

    def script(prompt: Any) -> list[Any]:
        messages = list(prompt)
        requests.append(messages)
        done = sum(1 for m in messages if m["role"] == "assistant" and m.get("tool_calls"))
        if done < len(rounds):
            return [ReasoningDelta(f"step {done}: I need tools"), *rounds[done]]
        return [ReasoningDelta("I have what I need"), TextDelta(answer)]

    SEEN[id(script)] = requests
    return script


def recorder(pipe: ScriptedPipe) -> tuple[list[str], list[Event]]:
    chunks: list[str] = []
    events: list[Event] = []
    pipe.set_streaming_callback(chunks.append)
    pipe.set_event_callback(events.append)
    return chunks, events


def run_loop(mode: str, conversation: Conversation, pipe: Any, **options: Any) -> ToolLoopResult:
    """``run_tools`` in ``mode``: ``sync``, or ``asyncio``/``trio`` through ``arun_tools``."""
    if mode == "sync":
        return conversation.run_tools(pipe, **options)

    async def main() -> ToolLoopResult:
        with anyio.fail_after(WAIT * 2):
            return await conversation.arun_tools(pipe, **options)

    return anyio.run(main, backend=mode)


MODES = ["sync", "asyncio", "trio"]


@pytest.mark.parametrize("mode", MODES)
def test_the_loop_runs_the_tools_and_sends_the_results_until_the_answer(mode: str) -> None:
    pipe = ScriptedPipe(
        model(
            [call(1, "get_weather", '{"city": "Paris"}'), call(2, "get_time", '{"city": "Paris"}')],
            [call(3, "get_weather", '{"city": "Oslo", "unit": "f"}')],
            answer="Paris 18 c at 09:00, Oslo 18 f.",
        )
    )
    chunks, events = recorder(pipe)
    conversation = Conversation().add_user("Weather and time?")
    result = run_loop(mode, conversation, pipe, tools=[get_weather, get_time])

    assert result.status == "completed"
    assert result.text == "Paris 18 c at 09:00, Oslo 18 f."
    assert [len(step.tool_results) for step in result.steps] == [2, 1, 0]
    first = result.steps[0].tool_results
    assert [(r.id, r.content, r.is_error) for r in first] == [
        ("call_1", "18 c in Paris", False),
        ("call_2", '{"city": "Paris", "time": "09:00"}', False),
    ]
    assert all(r.duration >= 0 and r.source == pipe.name for r in result.tool_results)
    # The conversation holds every step: the calls, the results in call order, the answer.
    roles = [(m["role"], m.get("tool_call_id")) for m in conversation]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("tool", "call_1"),
        ("tool", "call_2"),
        ("assistant", None),
        ("tool", "call_3"),
        ("assistant", None),
    ]
    # The model read each result: the second request carries the first step's results.
    second_prompt = seen(pipe)[1]
    assert second_prompt[-2:] == [r.to_message() for r in first]
    # One channel: every step's reasoning balanced, the answer last.
    collected = "".join(chunks)
    assert collected.count(ReasoningStream.OPEN_TAG) == collected.count(ReasoningStream.CLOSE_TAG)
    split = ReasoningStream.split(collected, lossless=True)
    assert split.text == result.text
    assert split.segments == (
        "step 0: I need tools",
        "step 1: I need tools",
        "I have what I need",
    )
    # Typed events: each ToolCall before its ToolResult, results in call order, per step.
    tools_seen = [(type(e).__name__, e.id) for e in events if isinstance(e, ToolCall | ToolResult)]
    assert tools_seen == [
        ("ToolCall", "call_1"),
        ("ToolCall", "call_2"),
        ("ToolResult", "call_1"),
        ("ToolResult", "call_2"),
        ("ToolCall", "call_3"),
        ("ToolResult", "call_3"),
    ]


def test_markers_are_balanced_at_the_end_of_every_step() -> None:
    """A step that ends inside reasoning (the calls come after it) still closes its marker
    before the tools run: a reader of the channel sees no open segment while tools work."""
    seen_at_tool_time: list[str] = []
    chunks: list[str] = []

    @tool
    def snapshot() -> str:
        """Record the channel so far."""
        seen_at_tool_time.append("".join(chunks))
        return "ok"

    pipe = ScriptedPipe(model([call(1, "snapshot", "{}")], [call(2, "snapshot", "")]))
    pipe.set_streaming_callback(chunks.append)
    Conversation().add_user("go").run_tools(pipe, tools=[snapshot])
    assert len(seen_at_tool_time) == 2
    for channel in seen_at_tool_time:
        assert channel.endswith(ReasoningStream.CLOSE_TAG)
        assert channel.count(ReasoningStream.OPEN_TAG) == channel.count(ReasoningStream.CLOSE_TAG)


@pytest.mark.parametrize("mode", MODES)
def test_errors_become_results_the_model_reads_and_the_loop_goes_on(mode: str) -> None:
    @tool
    def broken(city: str) -> str:
        """Always fails."""
        raise RuntimeError(f"no data for {city}")

    pipe = ScriptedPipe(
        model(
            [
                call(1, "broken", '{"city": "Paris"}'),
                call(2, "teleport", '{"to": "Mars"}'),
                call(3, "get_weather", '{"town": "Paris"}'),
                call(4, "get_weather", '{"city": "Paris", "unit": "kelvin"}'),
                call(5, "get_weather", "{not json"),
                call(6, "get_weather", '{"city": "Paris"}'),
            ]
        )
    )
    conversation = Conversation().add_user("Weather?")
    result = run_loop(mode, conversation, pipe, tools=[broken, get_weather])
    assert result.status == "completed" and result.text == "Done."
    results = result.steps[0].tool_results
    assert [r.is_error for r in results] == [True, True, True, True, True, False]
    assert "RuntimeError" in results[0].content and "no data for Paris" in results[0].content
    assert "teleport" in results[1].content and "get_weather" in results[1].content
    assert "city" in results[2].content  # the missing property is named
    assert "kelvin" in results[3].content or "unit" in results[3].content
    assert "JSON" in results[4].content
    assert results[5].content == "18 c in Paris"
    # Every error went to the model, in call order.
    sent = [m for m in seen(pipe)[1] if m["role"] == "tool"]
    assert [m["content"] for m in sent] == [r.content for r in results]


def test_parallel_sync_calls_run_at_once_under_run_tools() -> None:
    """Two calls of one response run concurrently: each waits for the other at a barrier,
    which only opens when both are running (a sequential loop would time out)."""
    barrier = threading.Barrier(2, timeout=WAIT)

    @tool
    def meet(who: str) -> str:
        """Wait for the other call."""
        barrier.wait()
        return f"met {who}"

    pipe = ScriptedPipe(model([call(1, "meet", '{"who": "a"}'), call(2, "meet", '{"who": "b"}')]))
    result = Conversation().add_user("go").run_tools(pipe, tools=[meet])
    assert [r.content for r in result.tool_results] == ["met a", "met b"]
    assert not any(r.is_error for r in result.tool_results)


@pytest.mark.anyio
async def test_parallel_async_and_sync_calls_run_at_once_under_arun_tools() -> None:
    """Under ``arun_tools`` async tools run as tasks and sync ones in worker threads, all at
    once: two async calls meet at an event pair, two sync calls at a thread barrier."""
    arrived = 0
    both = anyio.Event()
    barrier = threading.Barrier(2, timeout=WAIT)

    @tool
    async def meet_async(who: str) -> str:
        """Wait for the other async call."""
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            both.set()
        await both.wait()
        return f"met {who}"

    @tool
    def meet_sync(who: str) -> str:
        """Wait for the other sync call."""
        barrier.wait()
        return f"met {who}"

    pipe = ScriptedPipe(
        model(
            [
                call(1, "meet_async", '{"who": "a"}'),
                call(2, "meet_sync", '{"who": "b"}'),
                call(3, "meet_async", '{"who": "c"}'),
                call(4, "meet_sync", '{"who": "d"}'),
            ]
        )
    )
    with anyio.fail_after(WAIT * 2):
        result = await Conversation().add_user("go").arun_tools(pipe, tools=[meet_async, meet_sync])
    assert [r.content for r in result.tool_results] == ["met a", "met b", "met c", "met d"]


@pytest.mark.anyio
async def test_results_reach_async_callbacks_in_call_order_when_the_last_call_ends_first() -> None:
    slow_started = anyio.Event()

    @tool
    async def slow() -> str:
        """Finishes last."""
        slow_started.set()
        await anyio.sleep(0.05)
        return "slow"

    @tool
    async def fast() -> str:
        """Finishes first."""
        await slow_started.wait()
        return "fast"

    seen: list[Any] = []

    async def on_event(event: Event) -> None:
        await anyio.sleep(0)
        if isinstance(event, ToolResult):
            seen.append(event.content)

    pipe = ScriptedPipe(model([call(1, "slow", ""), call(2, "fast", "")]))
    pipe.set_event_callback(on_event)
    with anyio.fail_after(WAIT):
        await Conversation().add_user("go").arun_tools(pipe, tools=[slow, fast])
    assert seen == ["slow", "fast"]


@pytest.mark.parametrize("mode", MODES)
def test_max_steps_stops_a_model_that_keeps_calling(mode: str) -> None:
    def always(prompt: Any) -> list[Any]:
        n = len(list(prompt))
        return [ReasoningDelta("again"), call(n, "get_weather", '{"city": "Paris"}')]

    pipe = ScriptedPipe(always)
    conversation = Conversation().add_user("Weather?")
    result = run_loop(mode, conversation, pipe, tools=[get_weather], max_steps=3)
    assert result.status == "max_steps"
    assert len(result.steps) == 3 and len(pipe.prompts) == 3
    # The last calls have their results, so the conversation can go on with another loop.
    assert conversation[-1]["role"] == "tool"
    assert all(len(step.tool_results) == 1 for step in result.steps)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_max_steps_must_be_a_positive_int(bad: Any) -> None:
    pipe = ScriptedPipe(["never"])
    with pytest.raises(UsageError, match="max_steps"):
        Conversation().add_user("hi").run_tools(pipe, tools=[get_weather], max_steps=bad)
    assert pipe.prompts == []


def test_a_tool_without_a_function_is_refused_before_any_request() -> None:
    remote = Tool("remote", "Runs elsewhere.", {"type": "object", "properties": {}})
    pipe = ScriptedPipe(["never"])
    with pytest.raises(UsageError, match=r"remote.*no function"):
        Conversation().add_user("hi").run_tools(pipe, tools=[remote])
    assert pipe.prompts == []


def test_the_loop_takes_the_pipes_own_tools() -> None:
    pipe = ScriptedPipe(model([call(1, "get_weather", '{"city": "Rome"}')]))
    pipe.tools = (get_weather,)  # type: ignore[attr-defined]  # a provider pipe's tools=
    result = Conversation().add_user("Weather?").run_tools(pipe)
    assert result.tool_results[0].content == "18 c in Rome"


def test_a_length_stop_ends_the_loop_without_running_its_calls() -> None:
    from reasoning_stream import Finish

    ran: list[str] = []

    @tool
    def record() -> str:
        """Must not run."""
        ran.append("ran")
        return ""

    pipe = ScriptedPipe([ReasoningDelta("r"), call(1, "record", "{"), Finish("length")])
    result = Conversation().add_user("go").run_tools(pipe, tools=[record])
    assert result.status == "length" and ran == [] and len(result.steps) == 1


def test_sync_run_tools_runs_an_async_tool_on_a_fresh_event_loop() -> None:
    @tool
    async def lookup(city: str) -> str:
        """An async tool."""
        await anyio.sleep(0)
        return f"async {city}"

    pipe = ScriptedPipe(model([call(1, "lookup", '{"city": "Oslo"}')]))
    result = Conversation().add_user("go").run_tools(pipe, tools=[lookup])
    assert result.tool_results[0].content == "async Oslo"
    assert not result.tool_results[0].is_error


def test_an_async_event_callback_is_refused_by_run_tools() -> None:
    """``run_tools`` has no event loop: an async callback is misuse, as for ``pipe.run``."""

    async def on_event(event: Event) -> None:
        pass

    pipe = ScriptedPipe(model([call(1, "get_weather", '{"city": "Oslo"}')]))
    pipe.set_event_callback(on_event)
    with pytest.raises(UsageError, match="async"):
        Conversation().add_user("go").run_tools(pipe, tools=[get_weather])


@pytest.mark.anyio
async def test_cancelling_during_the_tools_keeps_every_completed_step() -> None:
    """Cancelled while step 2's tool runs: step 1 and its results stay, step 2's answer stays,
    and each of its calls is answered (finished ones with their result, the rest with a
    cancelled error) so the conversation can be sent again."""
    blocked = anyio.Event()

    @tool
    async def hang() -> str:
        """Never returns."""
        blocked.set()
        await anyio.sleep_forever()
        return ""

    pipe = ScriptedPipe(
        model(
            [call(1, "get_weather", '{"city": "Paris"}')],
            [call(2, "get_weather", '{"city": "Oslo"}'), call(3, "hang", "")],
        )
    )
    _, events = recorder(pipe)
    conversation = Conversation().add_user("Weather?")
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            loop = partial(conversation.arun_tools, pipe, tools=[get_weather, hang])
            group.start_soon(loop)
            await blocked.wait()
            while not any(isinstance(e, ToolResult) and e.id == "call_2" for e in events):
                await anyio.sleep(0.01)  # the sync tool's thread finishes call_2
            group.cancel_scope.cancel()
    tool_messages = [(m["tool_call_id"], m["content"]) for m in conversation if m["role"] == "tool"]
    assert tool_messages == [
        ("call_1", "18 c in Paris"),
        ("call_2", "18 c in Oslo"),
        ("call_3", CANCELLED),
    ]
    assert conversation.pending_generation is None
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [(r.id, r.is_error) for r in results] == [
        ("call_1", False),
        ("call_2", False),
        ("call_3", True),
    ]


@pytest.mark.anyio
async def test_cancelling_during_a_model_step_keeps_the_completed_steps_and_the_pending_one() -> (
    None
):
    """Cancelled while the model streams step 2: step 1 stays whole; step 2 is the pending
    generation, as ``Conversation.arun`` keeps a cancelled run."""

    def script(prompt: Any) -> list[Any]:
        if list(prompt)[-1]["role"] == "tool":
            return [ReasoningDelta("thinking hard"), 30.0, TextDelta("never")]
        return [ReasoningDelta("call"), call(1, "get_weather", '{"city": "Rome"}')]

    pipe = ScriptedPipe(script)
    chunks, _ = recorder(pipe)
    conversation = Conversation().add_user("Weather?")
    with anyio.move_on_after(0.5):
        await conversation.arun_tools(pipe, tools=[get_weather])
    assert [m["role"] for m in conversation] == ["user", "assistant", "tool"]
    pending = conversation.pending_generation
    assert pending is not None and pending.status == "cancelled_before_answer"
    assert pending.partial_reasoning == "thinking hard"
    collected = "".join(chunks)
    assert collected.count(ReasoningStream.OPEN_TAG) == collected.count(ReasoningStream.CLOSE_TAG)


def test_a_failing_step_raises_and_keeps_the_steps_before_it() -> None:
    from reasoning_stream import ProviderError

    def script(prompt: Any) -> list[Any]:
        if list(prompt)[-1]["role"] == "tool":
            return [TextDelta("partial"), ConnectionError("dropped")]
        return [call(1, "get_weather", '{"city": "Rome"}')]

    pipe = ScriptedPipe(script)
    conversation = Conversation().add_user("Weather?")
    with pytest.raises(ProviderError):
        conversation.run_tools(pipe, tools=[get_weather])
    assert [m["role"] for m in conversation] == ["user", "assistant", "tool"]
    pending = conversation.pending_generation
    assert pending is not None and pending.status == "error" and pending.partial_text == "partial"


def test_the_loop_returns_in_good_time_with_many_calls() -> None:
    """Twenty calls of a tool that sleeps 0.2 s finish together, not one after another."""

    @tool
    def nap(n: int) -> int:
        """Sleep a little."""
        time.sleep(0.2)
        return n

    calls = [call(n, "nap", f'{{"n": {n}}}') for n in range(20)]
    pipe = ScriptedPipe(model(calls))
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = Conversation().add_user("go").run_tools(pipe, tools=[nap])
    assert time.perf_counter() - started < 2.0
    assert [r.content for r in result.tool_results] == [str(n) for n in range(20)]


@pytest.mark.parametrize("mode", MODES)
def test_a_forced_tool_choice_holds_for_the_first_request_only(mode: str) -> None:
    """Forced on every step the model could never answer: later steps ask with ``"auto"``,
    and the pipe's own setting is back after the loop."""
    choices: list[Any] = []
    script = model([call(1, "get_weather", '{"city": "Rome"}')], [call(2, "get_time", "{}")])

    def recording(prompt: Any) -> list[Any]:
        choices.append(pipe.tool_choice)  # type: ignore[attr-defined]
        return script(prompt)

    pipe = ScriptedPipe(recording)
    pipe.tool_choice = "get_weather"  # type: ignore[attr-defined]
    result = run_loop(mode, Conversation().add_user("Weather?"), pipe, tools=[get_weather])
    assert choices == ["get_weather", "auto", "auto"]
    assert pipe.tool_choice == "get_weather"  # type: ignore[attr-defined]
    assert result.status == "completed"


# ------------------------------------------------------------------- the law, any script

OUTCOMES = ("ok", "raises", "unknown", "bad_json", "bad_schema")


@tool
def echo(n: int) -> str:
    """Answers with its number, or raises for a negative one."""
    if n < 0:
        raise ValueError(f"negative {n}")
    return f"ok {n}"


def arguments_for(outcome: str, n: int) -> tuple[str, str]:
    """The call a scripted model makes to get ``outcome`` from ``echo``."""
    return {
        "ok": ("echo", f'{{"n": {n}}}'),
        "raises": ("echo", f'{{"n": {-n - 1}}}'),
        "unknown": ("missing_tool", "{}"),
        "bad_json": ("echo", '{"n": '),
        "bad_schema": ("echo", '{"n": "seven"}'),
    }[outcome]


def expected_content(outcome: str, n: int) -> Callable[[str], bool]:
    """An oracle for what the model reads back, written from the contract alone."""
    return {
        "ok": lambda text: text == f"ok {n}",
        "raises": lambda text: text.startswith("Error") and f"negative {-n - 1}" in text,
        "unknown": lambda text: text.startswith("Error") and "missing_tool" in text,
        "bad_json": lambda text: text.startswith("Error") and "JSON" in text,
        "bad_schema": lambda text: text.startswith("Error") and "n" in text,
    }[outcome]


@settings(max_examples=examples(40), deadline=None)
@given(
    rounds=st.lists(st.lists(st.sampled_from(OUTCOMES), min_size=1, max_size=4), max_size=4),
    max_steps=st.integers(1, 4),
)
def test_any_script_gives_one_result_per_call_in_order_and_the_right_status(
    rounds: list[list[str]], max_steps: int
) -> None:
    scripted = [
        [ToolCall(f"c{s}_{n}", *arguments_for(outcome, n)) for n, outcome in enumerate(round_)]
        for s, round_ in enumerate(rounds)
    ]
    pipe = ScriptedPipe(model(*scripted))
    chunks, events = recorder(pipe)
    conversation = Conversation().add_user("go")
    result = conversation.run_tools(pipe, tools=[echo], max_steps=max_steps)

    ran = rounds[:max_steps]
    assert result.status == ("max_steps" if len(rounds) >= max_steps else "completed")
    assert len(result.steps) == min(len(rounds) + 1, max_steps)
    sent = [m for m in conversation if m["role"] == "tool"]
    expected = [(s, n, outcome) for s, round_ in enumerate(ran) for n, outcome in enumerate(round_)]
    assert [m["tool_call_id"] for m in sent] == [f"c{s}_{n}" for s, n, _ in expected]
    for message, (_, n, outcome) in zip(sent, expected, strict=True):
        assert expected_content(outcome, n)(message["content"]), (outcome, message["content"])
    flags = [r.is_error for r in result.tool_results]
    assert flags == [outcome != "ok" for _, _, outcome in expected]
    collected = "".join(chunks)
    assert collected.count(ReasoningStream.OPEN_TAG) == collected.count(ReasoningStream.CLOSE_TAG)
    # Per step: every ToolCall, then every ToolResult, in call order.
    order = [(type(e).__name__, e.id) for e in events if isinstance(e, ToolCall | ToolResult)]
    want = []
    for s, round_ in enumerate(ran):
        want += [("ToolCall", f"c{s}_{n}") for n in range(len(round_))]
        want += [("ToolResult", f"c{s}_{n}") for n in range(len(round_))]
    assert order == want


def test_the_budget_hook_stops_the_loop_before_its_next_request() -> None:
    """``conversation.budget_exceeded()`` (the conversation budget's hook) is asked before
    every step; once it says so, the loop ends with status ``"budget"``, no request sent."""

    class Capped(Conversation):
        __slots__ = ()

        def budget_exceeded(self) -> bool:
            return sum(1 for m in self if m["role"] == "assistant") >= 2

    def always(prompt: Any) -> list[Any]:
        return [call(len(list(prompt)), "get_weather", '{"city": "Paris"}')]

    pipe = ScriptedPipe(always)
    conversation = Capped().add_user("Weather?")
    result = conversation.run_tools(pipe, tools=[get_weather])
    assert result.status == "budget"
    assert len(result.steps) == 2 and len(pipe.prompts) == 2


def test_a_failing_tools_reason_never_carries_a_url_password() -> None:
    """The reason reaches the model, hub entries and browsers: credentials are blanked."""

    @tool
    def query(sql: str) -> str:
        """Query the database."""
        raise ConnectionError("cannot reach postgresql://app:s3cret-pw@db.internal:5432/prod")

    pipe = ScriptedPipe(model([call(1, "query", '{"sql": "select 1"}')]))
    result = Conversation().add_user("go").run_tools(pipe, tools=[query])
    (failed,) = result.tool_results
    assert failed.is_error and "s3cret-pw" not in failed.content
    assert "ConnectionError" in failed.content and "db.internal" in failed.content
