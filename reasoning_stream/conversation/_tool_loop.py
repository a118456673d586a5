"""The tool loop: run the pipe, run the tools it called, send the results back, until it answers.

The loop is described once (:func:`_loop`, a generator that says what to do next) and driven
twice: :func:`drive` without an event loop, :func:`adrive` under anyio (asyncio or trio). Where
the steps are recorded is a :class:`StepTarget`: the conversation itself
(``Conversation.run_tools``) or a conversation store (``store.run_tools``), so a store saves
each step as it completes.

Each step is one ``conversation.run(pipe)``: the normal path, so every request passes reasoning
back exactly as the pipe's passback policy says, and a failed or cancelled run keeps its
pending generation record as it always does. The calls of one response run concurrently; their
results are added in call order, and each :class:`~reasoning_stream.ToolResult` reaches the
pipe's event callbacks as soon as it and every call before it are done. A tool that raises, an
unknown tool name, or arguments that do not fit the tool's schema become an error result
(``is_error=True``, the reason in ``content``) that the model reads on the next step.
"""

from __future__ import annotations

import contextvars
import dataclasses
import inspect
import json
import time
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, Protocol, TypeAlias

import anyio
import anyio.to_thread

from .._capture import PipeResult, Status
from .._delivery import adeliver
from .._events import ToolCall, ToolResult
from .._exceptions import UsageError
from .._pipe import Pipe
from .._redact import redact_url_credentials
from .._tools import ArgumentsError, Tool, ToolLike, to_tools

__all__ = [
    "DEFAULT_MAX_STEPS",
    "ConversationSteps",
    "StepTarget",
    "ToolLoopResult",
    "ToolLoopStatus",
    "ToolStep",
    "adrive",
    "drive",
    "over_budget",
    "tools_of",
]

DEFAULT_MAX_STEPS = 8
"""Responses a tool loop asks for at most, unless told otherwise."""

ToolLoopStatus: TypeAlias = Status | Literal["max_steps", "budget"]
"""How a tool loop ended: its last run's status, ``"max_steps"`` when the last response still
called tools, or ``"budget"`` when the conversation's budget stopped it."""

CANCELLED = "Error: the tool call was cancelled before it finished."
"""The content of a call's result when the loop was cancelled while it ran."""

_clock = time.perf_counter


@dataclass(frozen=True, slots=True)
class ToolStep:
    """One step of a tool loop: the model's response and the results of the calls it made."""

    result: PipeResult
    tool_results: tuple[ToolResult, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolLoopResult:
    """What a tool loop did: every step, in order, and how it ended.

    ``status`` is the last response's status (``"completed"``, ``"length"``, ...), or
    ``"max_steps"`` when the last response allowed still called tools (their results are in
    the conversation: run the loop again to go on), or ``"budget"`` when the conversation's
    budget stopped the loop before its next request.
    """

    steps: tuple[ToolStep, ...]
    status: ToolLoopStatus

    @property
    def result(self) -> PipeResult | None:
        """The last response's ``PipeResult`` (``None`` when no request was made)."""
        return self.steps[-1].result if self.steps else None

    @property
    def text(self) -> str:
        """The last response's answer text."""
        return self.steps[-1].result.text if self.steps else ""

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        """Every tool result of the loop, in the order they were sent."""
        return tuple(result for step in self.steps for result in step.tool_results)


class StepTarget(Protocol):
    """Where a tool loop records its steps: a conversation, or a conversation in a store."""

    def run_step(self, pipe: Any) -> PipeResult:
        """Run ``pipe`` on the history and add its answer (``Conversation.run``)."""
        ...

    async def arun_step(self, pipe: Any) -> PipeResult:
        """:meth:`run_step` through ``pipe.arun``."""
        ...

    def add_results(self, results: Sequence[ToolResult]) -> None:
        """Add the results of one response's calls, in call order."""
        ...

    async def aadd_results(self, results: Sequence[ToolResult]) -> None:
        """:meth:`add_results` for the async driver."""
        ...

    def over_budget(self) -> bool:
        """Whether the conversation's budget forbids another request (status ``"budget"``)."""
        ...


class _History(Protocol):
    """What :class:`ConversationSteps` uses of a ``Conversation`` (which imports this module)."""

    def run(
        self, pipe: Any, *, repair: bool = False, store: Any = None, conversation_id: Any = None
    ) -> PipeResult: ...

    async def arun(
        self, pipe: Any, *, repair: bool = False, store: Any = None, conversation_id: Any = None
    ) -> PipeResult: ...

    def add_message(self, message: Mapping[str, Any]) -> Any: ...


def over_budget(conversation: object) -> bool:
    """The budget hook: whether ``conversation``'s budget forbids the loop's next request.

    ``conversation.budget(...)`` (API section 16) plugs in here by giving the conversation a
    ``budget_exceeded()`` method; a loop it stops ends with status ``"budget"``.
    """
    check = getattr(conversation, "budget_exceeded", None)
    return bool(check()) if callable(check) else False


class ConversationSteps:
    """A tool loop recorded in a conversation: ``Conversation.run`` per step, results added.

    With a ``store`` (and ``conversation_id``) each step is ``Conversation.run(store=...)``
    and each tool result is appended to the store too: the loop is saved step by step, and
    the conversation's own budget caps it (a store keeps no budget).
    """

    def __init__(
        self,
        conversation: _History,
        *,
        repair: bool = False,
        store: Any = None,
        conversation_id: Any = None,
    ) -> None:
        if (store is None) != (conversation_id is None):
            raise UsageError(
                "a tool loop recorded in a store takes both store= (a conversation store) and "
                f"conversation_id= (its id); got store={type(store).__name__}, "
                f"conversation_id={conversation_id!r}"
            )
        self.conversation = conversation
        self.repair = repair
        self.store = store
        self.conversation_id = conversation_id

    def run_step(self, pipe: Any) -> PipeResult:
        return self.conversation.run(
            pipe, repair=self.repair, store=self.store, conversation_id=self.conversation_id
        )

    async def arun_step(self, pipe: Any) -> PipeResult:
        return await self.conversation.arun(
            pipe, repair=self.repair, store=self.store, conversation_id=self.conversation_id
        )

    def add_results(self, results: Sequence[ToolResult]) -> None:
        for result in results:
            message = result.to_message()
            if self.store is not None:
                # Atomic, after whatever is stored: another writer's turn is never lost.
                self.store.append(self.conversation_id, message)
            self.conversation.add_message(message)

    async def aadd_results(self, results: Sequence[ToolResult]) -> None:
        if self.store is None:
            self.add_results(results)
        else:
            await anyio.to_thread.run_sync(self.add_results, results)

    def over_budget(self) -> bool:
        return over_budget(self.conversation)


# ------------------------------------------------------------------------- the tools


def tools_of(pipe: Any, tools: Iterable[ToolLike] | None) -> dict[str, Tool]:
    """The tools a loop may run, by name: ``tools``, else the pipe's own ``tools``.

    Each needs a function: a tool without one cannot run in a loop, and ``UsageError`` says
    so before any request is made.
    """
    chosen = to_tools(getattr(pipe, "tools", None) if tools is None else tools)
    for item in chosen:
        if item.function is None:
            raise UsageError(
                f"tool {item.name!r} has no function, so run_tools() cannot run it: give it one "
                "(Tool(..., function=f) or @tool), or run the calls yourself with pipe.run()"
            )
    return {item.name: item for item in chosen}


@dataclass(frozen=True, slots=True)
class _Call:
    """One call, ready to run: the function and its arguments, or the error result it gets."""

    call: ToolCall
    function: Callable[..., Any] | None = None
    arguments: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    error: str | None = None


def _prepare(call: ToolCall, tools: Mapping[str, Tool]) -> _Call:
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(repr(name) for name in tools) or "none"
        return _Call(
            call, error=f"Error: there is no tool named {call.name!r}; the tools are: {known}."
        )
    try:
        arguments = tool.parse_arguments(call.arguments)
    except ArgumentsError as error:
        return _Call(call, error=f"Error: invalid arguments for tool {call.name!r}: {error}")
    return _Call(call, tool.function, arguments)


def _content(value: Any) -> str:
    """What the model reads of a tool's return value: text as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    elif callable(getattr(value, "model_dump", None)):  # a pydantic model
        value = value.model_dump(mode="json")
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _failed(call: ToolCall, error: BaseException) -> str:
    # The reason goes to the model, and through hubs to browsers: a URL's password never does.
    return redact_url_credentials(
        f"Error: tool {call.name!r} raised {type(error).__name__}: {error}"
    )


def _result(
    call: ToolCall, content: str, is_error: bool, started: float, source: Any
) -> ToolResult:
    return ToolResult(
        call.id,
        call.name,
        content,
        is_error=is_error,
        duration=max(0.0, _clock() - started),
        source=source,
    )


def _run_sync(prepared: _Call, source: str | None) -> ToolResult:
    """One call in this (worker) thread; an async tool gets a fresh event loop here."""
    started = _clock()
    if prepared.error is not None:
        return _result(prepared.call, prepared.error, True, started, source)
    assert prepared.function is not None
    try:
        value = prepared.function(**prepared.arguments)
        if inspect.isawaitable(value):
            value = anyio.run(_await, value)
    except Exception as error:
        return _result(prepared.call, _failed(prepared.call, error), True, started, source)
    return _result(prepared.call, _content(value), False, started, source)


async def _await(awaitable: Any) -> Any:
    return await awaitable


async def _run_async(prepared: _Call, source: str | None) -> ToolResult:
    """One call on the running event loop; a sync tool runs in a worker thread."""
    started = _clock()
    if prepared.error is not None:
        return _result(prepared.call, prepared.error, True, started, source)
    function = prepared.function
    assert function is not None
    try:
        if inspect.iscoroutinefunction(function):
            value = await function(**prepared.arguments)
        else:
            # Abandoned on cancellation: a sync tool cannot be interrupted, and the loop's
            # cancellation must not wait for it.
            value = await anyio.to_thread.run_sync(
                partial(contextvars.copy_context().run, partial(function, **prepared.arguments)),
                abandon_on_cancel=True,
            )
            if inspect.isawaitable(value):
                value = await value
    except Exception as error:
        return _result(prepared.call, _failed(prepared.call, error), True, started, source)
    return _result(prepared.call, _content(value), False, started, source)


def _cancelled(
    calls: Sequence[_Call], done: Sequence[ToolResult | None], source: Any
) -> list[ToolResult]:
    """Every call's result after a cancellation: the finished ones, and an error for the rest.

    The conversation then answers every call it holds, so the next request is valid.
    """
    now = _clock()
    return [
        result if result is not None else _result(item.call, CANCELLED, True, now, source)
        for item, result in zip(calls, done, strict=True)
    ]


# ------------------------------------------------------------------------- the loop


@dataclass(frozen=True, slots=True)
class _Run:
    """Run the next step."""


@dataclass(frozen=True, slots=True)
class _Execute:
    """Run these calls, emit and add their results; reply with the results."""

    calls: tuple[_Call, ...]


_Command: TypeAlias = _Run | _Execute


def _loop(
    target: StepTarget, tools: Mapping[str, Tool], max_steps: int, steps: list[ToolStep]
) -> Generator[_Command, Any, ToolLoopResult]:
    for _ in range(max_steps):
        if target.over_budget():
            return ToolLoopResult(tuple(steps), "budget")
        result: PipeResult = yield _Run()
        if result.status != "completed" or not result.tool_calls:
            # An answer, or a cut one (a length stop's calls may be cut too: none runs).
            steps.append(ToolStep(result))
            return ToolLoopResult(tuple(steps), result.status)
        calls = tuple(_prepare(call, tools) for call in result.tool_calls)
        results: list[ToolResult] = yield _Execute(calls)
        steps.append(ToolStep(result, tuple(results)))
    return ToolLoopResult(tuple(steps), "max_steps")


def _checked_steps(max_steps: object) -> int:
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise UsageError(
            f"max_steps is the most responses to ask for, 1 or more; got {max_steps!r}"
        )
    return max_steps


def _list(steps: list[ToolStep] | None) -> list[ToolStep]:
    return [] if steps is None else steps


class _ForcedChoice:
    """A forced ``tool_choice`` (``"required"`` or a tool's name) holds for the first request.

    Once the model called tools, later steps ask with ``"auto"``: forced on every step, the
    model could never answer and the loop would always end at ``max_steps`` (the OpenAI
    Agents SDK's ``reset_tool_choice`` does the same, for the same reason). The pipe's own
    setting is back when the loop ends, however it ends.
    """

    def __init__(self, pipe: Any) -> None:
        self.pipe = pipe
        self.original = getattr(pipe, "tool_choice", None)

    def relax(self) -> None:
        if self.original not in (None, "auto", "none"):
            self.pipe.tool_choice = "auto"

    def __enter__(self) -> _ForcedChoice:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if getattr(self.pipe, "tool_choice", None) != self.original:
            self.pipe.tool_choice = self.original


def drive(
    target: StepTarget,
    pipe: Any,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    tools: Iterable[ToolLike] | None = None,
    steps: list[ToolStep] | None = None,
) -> ToolLoopResult:
    """Run the tool loop without an event loop: tools run in worker threads, concurrently.

    An async tool runs on a fresh event loop in its worker thread (as ``asyncio.run`` would
    run it), so it must not use objects bound to another event loop.
    """
    loop = _loop(target, tools_of(pipe, tools), _checked_steps(max_steps), _list(steps))
    reply: Any = None
    with _ForcedChoice(pipe) as choice:
        while True:
            try:
                command = loop.send(reply)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            if isinstance(command, _Run):
                reply = target.run_step(pipe)
            else:
                reply = _execute(target, pipe, command.calls)
                choice.relax()


def _execute(target: StepTarget, pipe: Any, calls: Sequence[_Call]) -> list[ToolResult]:
    source = getattr(pipe, "name", None)
    done: list[ToolResult | None] = [None] * len(calls)
    executor = ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="reasoning-tool")
    try:
        futures: list[Future[ToolResult]] = [
            executor.submit(contextvars.copy_context().run, _run_sync, item, source)
            for item in calls
        ]
        for index, future in enumerate(futures):
            done[index] = result = future.result()
            _emit(pipe, result)
    except BaseException:
        # Interrupted: answer every call so the conversation stays valid, then go on raising.
        results = _cancelled(calls, done, source)
        target.add_results(results)
        for result, before in zip(results, done, strict=True):
            if before is None:
                _emit(pipe, result)
        raise
    finally:
        executor.shutdown(wait=False, cancel_futures=True)
    finished = [result for result in done if result is not None]
    target.add_results(finished)
    return finished


async def adrive(
    target: StepTarget,
    pipe: Any,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    tools: Iterable[ToolLike] | None = None,
    steps: list[ToolStep] | None = None,
) -> ToolLoopResult:
    """Run the tool loop on the running event loop (asyncio or trio).

    ``steps``, when given, receives each completed step as it completes (what a loop that
    raises had done).
    """
    loop = _loop(target, tools_of(pipe, tools), _checked_steps(max_steps), _list(steps))
    reply: Any = None
    with _ForcedChoice(pipe) as choice:
        while True:
            try:
                command = loop.send(reply)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            if isinstance(command, _Run):
                reply = await target.arun_step(pipe)
            else:
                reply = await _aexecute(target, pipe, command.calls)
                choice.relax()


async def _aexecute(target: StepTarget, pipe: Any, calls: Sequence[_Call]) -> list[ToolResult]:
    source = getattr(pipe, "name", None)
    done: list[ToolResult | None] = [None] * len(calls)
    finished = [anyio.Event() for _ in calls]

    async def run(index: int) -> None:
        done[index] = await _run_async(calls[index], source)
        finished[index].set()

    try:
        async with anyio.create_task_group() as group:
            for index in range(len(calls)):
                group.start_soon(run, index)
            for index, event in enumerate(finished):
                await event.wait()
                result = done[index]
                assert result is not None
                await _aemit(pipe, result)
    except BaseException:
        results = _cancelled(calls, done, source)
        with anyio.CancelScope(shield=True):
            await target.aadd_results(results)
            with anyio.move_on_after(getattr(pipe, "closing_timeout", 0.2) * len(calls)):
                for result, before in zip(results, done, strict=True):
                    if before is None:
                        await _aemit(pipe, result)
        raise
    results = [result for result in done if result is not None]
    await target.aadd_results(results)
    return results


def _emit(pipe: Any, result: ToolResult) -> None:
    """Hand ``result`` to the pipe's event callbacks, as its hooks hand a ``ToolCall``.

    Outside a run the pipe's hooks deliver to sync callbacks at once (an async one is skipped
    with a warning: ``arun_tools`` is the way to reach it).
    """
    handle = getattr(pipe, "handle_event", None)
    if handle is not None:
        handle(result)


async def _aemit(pipe: Any, result: ToolResult) -> None:
    """:func:`_emit` on the event loop: async event callbacks are awaited, in order."""
    if not isinstance(pipe, Pipe):
        _emit(pipe, result)
        return
    callbacks = pipe._event_callbacks
    if callbacks:
        # The pipe's idle channel (no run holds it between steps): queue, then deliver here,
        # awaiting what must be awaited, exactly as a run's closing delivery does.
        channel = pipe._channel
        channel.event(dataclasses.replace(result, source=pipe.name), callbacks)
        await adeliver(channel, pipe.on_callback_error)
