"""The retry hook of the run-observer seam, its span events, and the per-module loggers."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from reasoning_stream import Pipeline, ProviderError, ReasoningDelta, TextDelta
from reasoning_stream._observers import add_run_observer, remove_run_observer
from reasoning_stream.providers._spec import logger_for
from reasoning_stream.testing import Reply, ScriptedPipe, WireServer
from tests.telemetry.test_telemetry import Otel
from tests.telemetry.test_telemetry import otel as otel

from .reliability import API_KEY, TARGETS, opaque_payloads, play, transcript
from .test_exhaustion import STACKS, Mode, drive
from .test_exhaustion import mode as mode

ERROR = "error.type"
PROMPT = "PROMPT-TEXT-NEVER-LOGGED"
BODY = "BODY-TEXT-NEVER-LOGGED"


def flaky(failures: int, then: list[Any], *, name: str = "flaky") -> ScriptedPipe:
    """A pipe whose first ``failures`` requests get a 429 (with a body), then ``then``."""
    remaining = [failures]

    def script(prompt: object) -> list[Any]:
        if remaining[0]:
            remaining[0] -= 1
            error = ProviderError(BODY, provider="p", status_code=429, retry_after=0.0, body=BODY)
            return [error]
        return then

    return ScriptedPipe(script, name=name)


class Heard:
    """An observer whose scopes hear retries, and one (``plain``) whose scopes cannot."""

    def __init__(self, *, with_hook: bool) -> None:
        self.with_hook = with_hook
        self.log: list[tuple[Any, ...]] = []

    def run_started(self, runner: Any, prompt: Any) -> Any:
        heard = self

        class Plain:
            def run_finished(self, result: Any, error: BaseException | None) -> None:
                heard.log.append(("end", getattr(result, "status", None)))

        class Hearing(Plain):
            def retrying(self, attempt: int, delay: float, error: BaseException | None) -> None:
                heard.log.append(("retry", attempt, delay, type(error).__name__))

        return Hearing() if self.with_hook else Plain()


@pytest.fixture
def observers() -> Iterator[tuple[Heard, Heard]]:
    hearing, plain = Heard(with_hook=True), Heard(with_hook=False)
    add_run_observer(hearing)
    add_run_observer(plain)
    try:
        yield hearing, plain
    finally:
        remove_run_observer(hearing)
        remove_run_observer(plain)


# ---------------------------------------------------------------------- the retry hook


def test_a_scope_hears_each_retry_and_one_without_the_hook_keeps_working(
    observers: tuple[Heard, Heard],
) -> None:
    hearing, plain = observers
    result = flaky(2, [TextDelta("ok")]).set_retries(3).run(PROMPT)
    assert result.text == "ok"
    assert hearing.log == [
        ("retry", 1, 0.0, "ProviderError"),
        ("retry", 2, 0.0, "ProviderError"),
        ("end", "completed"),
    ]
    assert plain.log == [("end", "completed")]


@pytest.mark.anyio
async def test_async_runs_tell_the_hook_too(observers: tuple[Heard, Heard]) -> None:
    hearing, _ = observers
    result = await flaky(1, [TextDelta("ok")]).set_retries(1).arun(PROMPT)
    assert result.text == "ok"
    assert hearing.log == [("retry", 1, 0.0, "ProviderError"), ("end", "completed")]


def test_a_raising_retry_hook_never_breaks_the_run(caplog: pytest.LogCaptureFixture) -> None:
    class Raising:
        def run_started(self, runner: Any, prompt: Any) -> Any:
            class Scope:
                def run_finished(self, result: Any, error: BaseException | None) -> None:
                    pass

                def retrying(self, attempt: int, delay: float, error: object) -> None:
                    raise RuntimeError("hook broke")

            return Scope()

    observer = Raising()
    add_run_observer(observer)
    try:
        assert flaky(1, [TextDelta("ok")]).set_retries(1).run(PROMPT).text == "ok"
    finally:
        remove_run_observer(observer)
    assert any("raised in retrying" in record.getMessage() for record in caplog.records)


def test_retry_span_events(otel: Otel) -> None:
    flaky(2, [ReasoningDelta("r"), TextDelta("ok")]).set_retries(2).run(PROMPT)
    [span] = otel.finished()
    events = [(event.name, dict(event.attributes or {})) for event in span.events]
    retries = [attributes for name, attributes in events if name == "reasoning_stream.retry"]
    assert retries == [
        {
            "reasoning_stream.retry.attempt": n,
            "reasoning_stream.retry.delay": 0.0,
            "error.type": "429",
        }
        for n in (1, 2)
    ]
    assert BODY not in otel.everything()


def test_no_retry_no_event(otel: Otel) -> None:
    flaky(0, [TextDelta("ok")]).set_retries(2).run(PROMPT)
    [span] = otel.finished()
    assert not [event for event in span.events if event.name == "reasoning_stream.retry"]


@pytest.mark.anyio
async def test_an_exhaustion_retry_is_a_span_event(otel: Otel, mode: Mode) -> None:
    stack = STACKS["openai-chat"]
    run = await drive(stack, mode, stack.exhausted(), stack.answers, retries=1)
    assert run.result.text  # the second attempt answered
    [span] = otel.finished()
    retries = [dict(e.attributes or {}) for e in span.events if e.name == "reasoning_stream.retry"]
    assert retries == [
        {
            "reasoning_stream.retry.attempt": 1,
            "reasoning_stream.retry.delay": 0.0,
            "error.type": "reasoning_exhausted",
        }
    ]


# ---------------------------------------------------------------------------- logging


def _lines(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == name]


def test_the_pipe_logger_tells_start_retries_and_end_never_the_prompt_or_body(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="reasoning_stream")
    flaky(1, [TextDelta("ok")], name="drafter").set_retries(1).run(PROMPT)
    lines = _lines(caplog, "reasoning_stream.pipe")
    assert len(lines) == 3, lines
    start, retry, end = lines
    assert "pipe=drafter" in start and "provider=" in start and "model=" in start
    assert retry == "drafter: retry 1 in 0.000 s after ProviderError (status 429)"
    assert "status=completed" in end and "usage=" in end
    everything = "\n".join(caplog.handler.format(record) for record in caplog.records)
    assert PROMPT not in everything and BODY not in everything


def test_the_pipeline_logger_tells_its_runs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="reasoning_stream")
    first = ScriptedPipe([TextDelta("a")], name="one")
    second = ScriptedPipe(lambda p: [TextDelta("b")], name="two")
    Pipeline(first, second).run(PROMPT)
    start, end = _lines(caplog, "reasoning_stream.pipeline")
    assert "['one', 'two']" in start and "status=completed" in end
    assert len(_lines(caplog, "reasoning_stream.pipe")) == 4  # each pipe's start and end
    assert PROMPT not in "\n".join(record.getMessage() for record in caplog.records)


def test_no_debug_lines_unless_enabled(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="reasoning_stream")
    flaky(1, [TextDelta("ok")]).set_retries(1).run(PROMPT)
    assert not [r for r in caplog.records if r.name.startswith("reasoning_stream")]


def test_a_callback_error_is_logged_under_reasoning_stream_callbacks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(chunk: str) -> None:
        raise RuntimeError("callback broke")

    ScriptedPipe([TextDelta("ok")]).set_streaming_callback(broken).run(PROMPT)
    assert _lines(caplog, "reasoning_stream.callbacks") == [
        "streaming callback raised; the stream goes on"
    ]
    assert not _lines(caplog, "reasoning_stream")


# ----------------------------------------------------------------- provider loggers


@pytest.fixture(scope="module")
def wire() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


@pytest.mark.parametrize("target_name", sorted(TARGETS))
def test_each_provider_logs_its_requests_and_retry_after_without_secrets(
    wire: WireServer, target_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Through the real SDK (or httpx) at DEBUG: one line per request on the provider's own
    logger (method, path, model, body keys) and the Retry-After it read; no key, no opaque
    payload, no message text anywhere in what our loggers wrote (botocore's own DEBUG lines
    print event-stream frames: see test_secrets)."""
    caplog.set_level(logging.DEBUG)
    target = TARGETS[target_name]
    showcase = transcript(target.showcase)
    play(wire, target, target.showcase, Reply(showcase), "sync")
    error_name = target.error_transcripts[0]
    limited = replace(transcript(error_name), status=429, headers={"retry-after": "7"})
    play(wire, target, error_name, Reply(limited), "sync")
    name = logger_for(target.provider).name
    assert name.startswith("reasoning_stream.providers.") and name.count(".") == 2
    lines = _lines(caplog, name)
    requests = [line for line in lines if line.startswith("POST /")]
    assert len(requests) >= 2, lines  # the showcase and the 429 (an SDK may retry it)
    assert all("model=" in line and "body keys=[" in line for line in requests), requests
    assert "?" not in " ".join(requests)  # never a query
    assert "Retry-After: 7.000 s" in lines, lines
    ours = [r for r in caplog.records if r.name.startswith("reasoning_stream")]
    logged = "\n".join(caplog.handler.format(record) for record in ours)
    assert API_KEY not in logged and "Say" not in logged
    for secret in opaque_payloads(showcase):
        assert secret not in logged
