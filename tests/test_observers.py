"""The run-observer seam: every run of a pipe or pipeline is announced once and concluded once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from reasoning_stream import Pipeline, ProviderError, ReasoningDelta, TextDelta, UsageError
from reasoning_stream._observers import add_run_observer, remove_run_observer
from reasoning_stream.testing import ScriptedPipe


class Recorder:
    def __init__(self) -> None:
        self.log: list[tuple[str, Any, Any]] = []

    def run_started(self, runner: Any, prompt: Any) -> Any:
        self.log.append(("start", getattr(runner, "name", "pipeline"), prompt))
        recorder = self

        class Scope:
            def run_finished(self, result: Any, error: BaseException | None) -> None:
                recorder.log.append(
                    ("end", getattr(runner, "name", "pipeline"), (result, type(error).__name__))
                )

        return Scope()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    observer = Recorder()
    add_run_observer(observer)
    add_run_observer(observer)  # idempotent
    try:
        yield observer
    finally:
        remove_run_observer(observer)


def test_pipeline_runs_nest_their_pipes(recorder: Recorder) -> None:
    pipeline = Pipeline(
        ScriptedPipe([ReasoningDelta("r"), TextDelta("a")], name="one"),
        ScriptedPipe([TextDelta("b")], name="two"),
    )
    result = pipeline.run("go")
    assert [(kind, who) for kind, who, _ in recorder.log] == [
        ("start", "pipeline"),
        ("start", "one"),
        ("end", "one"),
        ("start", "two"),
        ("end", "two"),
        ("end", "pipeline"),
    ]
    assert recorder.log[-1][2] == (result, "NoneType")
    assert recorder.log[2][2][0] is result.results[0]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_failed_async_run_is_concluded_with_its_result(recorder: Recorder, backend: str) -> None:
    pipe = ScriptedPipe([TextDelta("partial"), RuntimeError("boom")], name="p")

    async def main() -> None:
        with pytest.raises(ProviderError):
            await pipe.arun("x")

    anyio.run(main, backend=backend)
    kind, who, (result, error) = recorder.log[-1]
    assert (kind, who, error) == ("end", "p", "ProviderError")
    assert result is pipe.last_result and result.text == "partial"


def test_misuse_before_the_run_reports_no_stale_result(recorder: Recorder) -> None:
    pipe = ScriptedPipe([TextDelta("a")], name="p")
    pipe.run("first")

    async def cb(chunk: str) -> None:
        pass

    pipe.set_streaming_callback(cb)
    with pytest.raises(UsageError):
        pipe.run("second")
    result, error = recorder.log[-1][2]
    # This run's own result (status "error", API section 4), never the first run's.
    assert error == "UsageError"
    assert result is pipe.last_result and result.status == "error" and result.text == ""


def test_a_raising_observer_never_breaks_the_run() -> None:
    class Broken:
        def run_started(self, runner: Any, prompt: Any) -> Any:
            raise RuntimeError("observer bug")

    broken = Broken()
    add_run_observer(broken)
    try:
        assert ScriptedPipe([TextDelta("ok")]).run("x").text == "ok"
    finally:
        remove_run_observer(broken)
