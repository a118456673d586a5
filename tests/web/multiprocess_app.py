"""The app the multi-process test runs in three uvicorn processes sharing one Redis."""

from __future__ import annotations

import os
from typing import Any

from reasoning_stream import ReasoningDelta, TextDelta
from reasoning_stream.hub import RedisHub
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.web import create_app

STEPS = 40


def script(prompt: object) -> list[Any]:
    if prompt == "silent":  # reasons, then stays silent (the stop test stops it)
        return [ReasoningDelta("thinking "), ReasoningDelta("hard"), 60.0, TextDelta("never")]
    items: list[Any] = [item for n in range(STEPS) for item in (0.02, ReasoningDelta(f"r{n} "))]
    items += [item for n in range(10) for item in (0.01, TextDelta(f"t{n} "))]
    return items


def expected_channel() -> str:
    reasoning = "".join(f"r{n} " for n in range(STEPS))
    return f"<think>{reasoning}</think>" + "".join(f"t{n} " for n in range(10))


def app() -> Any:
    hub = RedisHub(os.environ["REASONING_STREAM_TEST_REDIS"])
    return create_app(hub, timeout=5, start=lambda prompt: ScriptedPipe(script))
