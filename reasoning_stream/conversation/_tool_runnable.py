"""``ToolLoop``: a pipe's tool loop as one run, for what runs pipes (a hub, the web app).

A hub publishes a run through the callbacks it sets on what it runs; a ``ToolLoop`` sets them
on its pipe, so the hub's stream holds every step's channel, each ``ToolCall`` and
``ToolResult``, and one final entry with the loop's status. Stopping the stream stops the loop
(a cancelled step, or the tools under way) and keeps every completed step.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Self

from .._callbacks import EventCallback, StreamingCallback
from .._events import ToolResult
from .._exceptions import UsageError
from .._pipe import Pipe, PipeResult
from .._tools import ToolLike
from ._conversation import Conversation
from ._tool_loop import (
    CANCELLED,
    DEFAULT_MAX_STEPS,
    ConversationSteps,
    ToolLoopResult,
    ToolLoopStatus,
    ToolStep,
    adrive,
    drive,
)

__all__ = ["LoopStopped", "ToolLoop"]


class LoopStopped(BaseException):
    """Raised in a stopped :class:`ToolLoop` where its next model step would begin.

    A cancellation, not an error (so ``except Exception`` does not swallow it): the loop was
    stopped while it could not be interrupted (its tools running in a thread the hub left
    behind), and must make no further request.
    """


class _StoppableSteps(ConversationSteps):
    """A conversation's steps that refuse to begin once the loop was stopped."""

    def __init__(self, conversation: Conversation, stopped: threading.Event, repair: bool) -> None:
        super().__init__(conversation, repair=repair)
        self.stopped = stopped

    def run_step(self, pipe: Any) -> PipeResult:
        self._refuse()
        return self._after(super().run_step(pipe))

    async def arun_step(self, pipe: Any) -> PipeResult:
        self._refuse()
        return self._after(await super().arun_step(pipe))

    def _refuse(self) -> None:
        if self.stopped.is_set():
            raise LoopStopped("the tool loop was stopped before its next step")

    def _after(self, result: PipeResult) -> PipeResult:
        # Stopped while the model spoke: its calls are not run, each is answered as
        # cancelled (the conversation stays valid to send), and the loop ends.
        if self.stopped.is_set():
            self.add_results(
                [ToolResult(c.id, c.name, CANCELLED, is_error=True) for c in result.tool_calls]
            )
            self._refuse()
        return result


class ToolLoop:
    """Run ``conversation.run_tools(pipe)`` wherever a pipe runs: ``hub.run``, ``create_app``.

    ``hub.run(stream_id, ToolLoop(pipe), conversation)`` publishes the whole loop as one
    stream. The prompt is a ``Conversation`` (extended in place, as ``run_tools`` does) or a
    prompt string or message list (a new conversation, kept as :attr:`conversation`).
    Callbacks set here are the pipe's. ``last_result`` is the :class:`ToolLoopResult` of the
    latest run, also when it raised (its steps so far, with the failed or cancelled status).

    >>> from reasoning_stream.testing import ScriptedPipe
    >>> loop = ToolLoop(ScriptedPipe(["Hello."]))
    >>> loop.run("Hi").text
    'Hello.'
    """

    def __init__(
        self,
        pipe: Pipe,
        *,
        max_steps: int = DEFAULT_MAX_STEPS,
        tools: Iterable[ToolLike] | None = None,
        repair: bool = False,
    ) -> None:
        if not isinstance(pipe, Pipe):
            raise UsageError(f"ToolLoop runs a Pipe, got {type(pipe).__name__}")
        self.pipe = pipe
        self.max_steps = max_steps
        self.tools = None if tools is None else tuple(tools)
        self.repair = repair
        self.last_result: ToolLoopResult | None = None
        self.conversation: Conversation | None = None
        """The conversation of the latest run."""
        self.steps: list[ToolStep] = []
        """The steps of the latest run so far (a stopped run's result is built from them)."""
        self._stopped = threading.Event()

    @property
    def name(self) -> str:
        """The pipe's name."""
        return self.pipe.name

    @property
    def pipes(self) -> tuple[Pipe]:
        """The one pipe this loop runs."""
        return (self.pipe,)

    def stop(self) -> None:
        """Make no further model request in the run under way (from any thread).

        The loop raises :class:`LoopStopped` where its next step would begin; a step or tools
        under way finish first. A hub calls this when it ends the stream of a stopped sync run
        that it cannot interrupt (tools still running in their threads), so the loop left
        behind never calls the model again. The next run starts afresh.
        """
        self._stopped.set()

    def set_streaming_callback(self, callback: StreamingCallback) -> Self:
        """The pipe's :meth:`~reasoning_stream.Pipe.set_streaming_callback`."""
        self.pipe.set_streaming_callback(callback)
        return self

    def remove_streaming_callback(self, callback: StreamingCallback) -> Self:
        """The pipe's :meth:`~reasoning_stream.Pipe.remove_streaming_callback`."""
        self.pipe.remove_streaming_callback(callback)
        return self

    def set_event_callback(self, callback: EventCallback) -> Self:
        """The pipe's :meth:`~reasoning_stream.Pipe.set_event_callback`."""
        self.pipe.set_event_callback(callback)
        return self

    def remove_event_callback(self, callback: EventCallback) -> Self:
        """The pipe's :meth:`~reasoning_stream.Pipe.remove_event_callback`."""
        self.pipe.remove_event_callback(callback)
        return self

    def run(self, prompt: Any) -> ToolLoopResult:
        """The tool loop on ``prompt``, synchronously (``Conversation.run_tools``)."""
        steps = self._start(prompt)
        try:
            result = drive(
                _StoppableSteps(self._conversation(), self._stopped, self.repair),
                self.pipe,
                max_steps=self.max_steps,
                tools=self.tools,
                steps=steps,
            )
        except BaseException as error:
            self.last_result = ToolLoopResult(tuple(steps), _status_of(error, steps, self.pipe))
            raise
        self.last_result = result
        return result

    async def arun(self, prompt: Any) -> ToolLoopResult:
        """:meth:`run` on the event loop (``Conversation.arun_tools``; asyncio or trio)."""
        steps = self._start(prompt)
        try:
            result = await adrive(
                _StoppableSteps(self._conversation(), self._stopped, self.repair),
                self.pipe,
                max_steps=self.max_steps,
                tools=self.tools,
                steps=steps,
            )
        except BaseException as error:
            self.last_result = ToolLoopResult(tuple(steps), _status_of(error, steps, self.pipe))
            raise
        self.last_result = result
        return result

    def _start(self, prompt: Any) -> list[ToolStep]:
        if isinstance(prompt, Conversation):
            self.conversation = prompt
        elif isinstance(prompt, str):
            self.conversation = Conversation().add_user(prompt)
        elif isinstance(prompt, Sequence) and all(isinstance(m, Mapping) for m in prompt):
            self.conversation = Conversation(prompt)
        else:
            raise UsageError(
                "a tool loop's prompt is a Conversation, a string or a list of message dicts, "
                f"got {type(prompt).__name__}"
            )
        self.last_result = None
        self.steps = []
        self._stopped = threading.Event()
        return self.steps

    def _conversation(self) -> Conversation:
        assert self.conversation is not None
        return self.conversation


def _status_of(error: BaseException, steps: Sequence[ToolStep], pipe: Pipe) -> ToolLoopStatus:
    """How a loop that raised ended: its failed or cancelled step's status, else from the
    error (cancelled while tools ran: before or after answer text, as a run's status is)."""
    captured = getattr(error, "result", None)
    if isinstance(captured, PipeResult):
        return captured.status
    if isinstance(error, Exception):
        return "error"
    last = pipe.last_result
    if last is not None and last.status.startswith("cancelled"):
        return last.status
    texts = [step.result.text for step in steps] + [last.text if last is not None else ""]
    return "cancelled_after_partial_answer" if any(texts) else "cancelled_before_answer"
