"""The probe's tool loop: our pipe for a shape, pointed at the gateway, driven step by step.

Offline and live runs share it: each step runs the conversation through the pipe, records
what the client saw (reasoning deltas, text deltas, the result) and answers every tool call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reasoning_stream import (
    Conversation,
    Event,
    PassbackPolicy,
    PipeResult,
    ReasoningDelta,
    ReasoningStreamError,
    TextDelta,
)
from reasoning_stream.testing._conform_rules import LoopRun, StepRun
from reasoning_stream.testing._conform_shapes import Shape

if TYPE_CHECKING:
    from reasoning_stream.providers._spec import ProviderSpec

__all__ = ["TOOL_RESULT", "build_pipe", "drive_loop"]

TOOL_RESULT = "18 °C, sunny"
"""What the probe's weather tool answers, at every step."""
_PROMPT = "What is the weather in Paris? Use the get_weather tool."
_TIMEOUT = 60.0


def build_pipe(
    shape: Shape, spec: ProviderSpec, base_url: str, model: str, key: str, *, stream: bool
) -> Any:
    """Our pipe for ``shape``, pointed at the gateway, with the tool declared and the passback
    policy the registry gives the transcripts' model."""
    options: dict[str, Any] = {
        "base_url": base_url,
        "api_key": key,
        "stream": stream,
        "timeout": _TIMEOUT,
        "extra_body": dict(shape.tool),
    }
    if shape.wire == "anthropic":
        options["thinking"] = {"type": "enabled", "budget_tokens": 2048}
    elif shape.wire == "responses":
        options["store"] = False
    elif shape.wire in ("chat", "ollama"):
        options["inline_tags"] = False  # reasoning turned into <think> text must count as text
    if shape.wire == "ollama":
        options["think"] = True
    pipe = spec.pipe_class()(model, **options)
    pipe.passback = PassbackPolicy.for_provider(spec.id, shape.model)
    return pipe


def drive_loop(pipe: Any, run: LoopRun, *, steps: int, prompt: str = _PROMPT) -> None:
    """Run a tool loop of at most ``steps`` steps, recording each step into ``run``."""
    conversation = Conversation(system="You are terse.").add_user(prompt)
    seen = StepRun()
    pipe.set_event_callback(_collector(lambda: seen))
    try:
        for _ in range(steps):
            seen = StepRun()
            run.steps.append(seen)
            result: PipeResult = conversation.run(pipe)
            seen.result = result
            if not result.tool_calls:
                break
            for call in result.tool_calls:
                conversation.add_tool_result(call.id, TOOL_RESULT)
    except ReasoningStreamError as error:
        run.error = _one_line(error)
        if run.steps and run.steps[-1].result is None:
            run.steps.pop()
    finally:
        close = getattr(pipe, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()


def _collector(current: Callable[[], StepRun]) -> Callable[[Event], None]:
    def collect(event: Event) -> None:
        if isinstance(event, ReasoningDelta):
            current().reasoning += event.text
        elif isinstance(event, TextDelta):
            current().text += event.text

    return collect


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:300]}"
