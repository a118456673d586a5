"""Opt-in retries: only before the first byte reached any callback."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning_stream import ProviderError, ReasoningDelta, ReasoningStream, TextDelta
from reasoning_stream.testing import ScriptedPipe


def flaky(*failures: BaseException, then: list[Any]) -> ScriptedPipe:
    """A pipe whose first len(failures) runs fail with those errors, then replays ``then``."""
    remaining = list(failures)

    def script(prompt: object) -> list[Any]:
        return [remaining.pop(0)] if remaining else then

    return ScriptedPipe(script)


def rate_limited(retry_after: float | None = 0.0) -> ProviderError:
    return ProviderError("slow down", provider="p", status_code=429, retry_after=retry_after)


def test_retries_are_off_by_default() -> None:
    pipe = flaky(rate_limited(), then=[TextDelta("ok")])
    with pytest.raises(ProviderError):
        pipe.run("p")


def test_a_rate_limit_before_the_first_byte_is_retried() -> None:
    chunks: list[str] = []
    pipe = flaky(rate_limited(), rate_limited(), then=[ReasoningDelta("r"), TextDelta("ok")])
    result = pipe.set_retries(2).set_streaming_callback(chunks.append).run("p")
    assert result.text == "ok"
    assert chunks == [ReasoningStream.OPEN_TAG, "r", ReasoningStream.CLOSE_TAG, "ok"]
    assert len(pipe.prompts) == 3


def test_retries_stop_after_the_configured_attempts() -> None:
    pipe = flaky(rate_limited(), rate_limited(), then=[TextDelta("ok")])
    with pytest.raises(ProviderError):
        pipe.set_retries(1).run("p")
    assert len(pipe.prompts) == 2


def test_no_retry_once_a_callback_saw_a_byte() -> None:
    chunks: list[str] = []
    first_time = [True]

    def script(prompt: object) -> list[Any]:
        if first_time.pop() if first_time else False:
            return [TextDelta("partial"), rate_limited()]
        return [TextDelta("again")]

    pipe = ScriptedPipe(script).set_retries(3).set_streaming_callback(chunks.append)
    with pytest.raises(ProviderError):
        pipe.run("p")
    assert chunks == ["partial"]
    assert len(pipe.prompts) == 1


def test_client_errors_are_not_retried() -> None:
    error = ProviderError("bad request", provider="p", status_code=400)
    pipe = flaky(error, then=[TextDelta("ok")]).set_retries(3)
    with pytest.raises(ProviderError):
        pipe.run("p")
    assert len(pipe.prompts) == 1


def test_the_wait_follows_retry_after_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr("reasoning_stream._retry.time.sleep", waits.append)
    pipe = flaky(rate_limited(30.0), rate_limited(None), then=[TextDelta("ok")])
    pipe.set_retries(2, backoff=0.25, max_delay=5.0).run("p")
    assert waits == [5.0, 0.5]


@pytest.mark.anyio
async def test_async_retry() -> None:
    pipe = flaky(ConnectionRefusedError("down"), then=[TextDelta("ok")])
    pipe.set_retries(1, backoff=0.0)
    assert (await pipe.arun("p")).text == "ok"
