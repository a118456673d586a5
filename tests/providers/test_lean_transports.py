"""The lean httpx transports give what the SDK transports give, on every recorded transcript.

Each pair below is one provider pipe with ``transport="sdk"`` (its official SDK) and with
``transport="httpx"`` (httpx + httpx-sse, or NDJSON for Ollama). Every bundled transcript of
the provider (streams, HTTP errors, errors mid-stream) and cuts of the streams at several
points are served by the same loopback ``WireServer`` to both, on ``run()`` and on ``arun()``
(asyncio and trio). Both must put the same body on the wire and end the same way: the same
``PipeResult`` (text, reasoning and its segments, opaque states, tool calls, usage, status,
finish reason, response id), the same channel, and either no error or the same error (class,
provider, status, ``retry_after``, body, and the provider's words before the parenthesised
detail, which names the SDK's exception class on one side).

Two differences are by design and normalised here: a state's ``endpoint`` carries each run's
own path prefix, and a JSON payload keeps the wire's key order on the lean side where the SDK
re-serialises its model (``{"id", "summary", "type"}`` against ``{"id", "type", "summary"}``),
so JSON payloads are compared as JSON.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest

from reasoning_stream._events import ReasoningState
from reasoning_stream.testing import Reply, WireServer
from tests.reliability import (
    FLAVOURS,
    RESOURCE_CHECKS,
    TARGETS,
    Flavour,
    Outcome,
    collected_garbage,  # noqa: F401 - the fixture RESOURCE_CHECKS names
    frozen_survivors,  # noqa: F401 - the fixture collected_garbage needs
    play,
    transcript,
)

pytestmark = RESOURCE_CHECKS

PAIRS = {
    "anthropic": ("anthropic", "anthropic-httpx"),
    "openai-responses": ("openai-responses", "openai-responses-httpx"),
    "openai-chat": ("openai-chat-sdk", "openai-chat-httpx"),
    "ollama": ("ollama", "ollama-httpx"),
}
"""provider -> (SDK target, lean target) in the reliability kit's ``TARGETS``."""


def _cases() -> list[tuple[str, str]]:
    cases = []
    for provider, (sdk, _) in PAIRS.items():
        target = TARGETS[sdk]
        cases += [(provider, name) for name in (*target.transcripts, *target.error_transcripts)]
    return cases


CASES = _cases()


def _payload(payload: Any) -> Any:
    if isinstance(payload, str):
        try:
            return json.loads(payload)
        except ValueError:
            return payload
    return payload


def _state(state: ReasoningState) -> tuple[Any, ...]:
    plain = replace(state, endpoint=None)
    return (plain.provider, plain.model, plain.kind, _payload(plain.payload), plain.block,
            plain.extra)  # fmt: skip


def _unprefixed(text: str) -> str:
    # Each run is served under its own path prefix; a 404 names it.
    return re.sub(r"/case\d+/", "/case/", text)


def summary(outcome: Outcome) -> dict[str, Any]:
    """What must match between the transports: the result, the channel, the error."""
    result = outcome.result
    error = outcome.error
    return {
        "text": result.text,
        "reasoning": result.model_reasoning,
        "segments": result.reasoning_segments,
        "states": [_state(state) for state in result.reasoning_state],
        "tool_calls": result.tool_calls,
        "usage": result.usage,
        "status": result.status,
        "finish_reason": result.finish_reason,
        "response_id": result.response_id,
        "provider": result.provider,
        "channel": "".join(outcome.chunks),
        "error": None
        if error is None
        else (
            type(error).__name__,
            error.provider,
            error.status_code,
            error.retry_after,
            _unprefixed(json.dumps(error.body, sort_keys=True, default=str)),
            _unprefixed(str(error).rsplit(" (", 1)[0]),
        ),
    }


def both(
    wire: WireServer, provider: str, name: str, reply: Reply, flavour: Flavour
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Play ``reply`` through the SDK and the lean target: their summaries and wire bodies."""
    played = []
    for target_name in PAIRS[provider]:
        outcome = play(wire, TARGETS[target_name], name, reply, flavour)
        sent = wire.requests[-1].json()
        played.append((summary(outcome), sent))
    (sdk, sdk_body), (lean, lean_body) = played
    assert lean_body == sdk_body, "the lean transport must send the SDK's body"
    return sdk, lean


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(("provider", "name"), CASES)
def test_same_outcome_on_every_transcript(
    wire: WireServer, provider: str, name: str, flavour: Flavour
) -> None:
    sdk, lean = both(wire, provider, name, Reply(transcript(name)), flavour)
    assert lean == sdk


STREAMS = [(provider, name) for provider, name in CASES if transcript(name).status == 200]


@pytest.mark.parametrize("flavour", ["sync", "asyncio"])
@pytest.mark.parametrize(("provider", "name"), STREAMS)
def test_same_outcome_when_the_stream_is_cut(
    wire: WireServer, provider: str, name: str, flavour: Flavour
) -> None:
    """Cut after the first event, in the middle, and one event before the end: the same
    result and channel, and the same kind of error (its message aside)."""
    events = len(transcript(name).events)
    for after in sorted({1, events // 2, max(events - 1, 1)}):
        reply = Reply(transcript(name), disconnect_after=after)
        sdk, lean = both(wire, provider, name, reply, flavour)
        # Both fail; the words differ: the SDKs say "Connection error." for some cuts, where
        # the lean transport passes on httpx's "peer closed connection ...".
        assert sdk["error"] is not None and lean["error"] is not None
        sdk["error"], lean["error"] = sdk["error"][:5], lean["error"][:5]
        assert lean == sdk, f"cut after {after} of {events} events"


ONESHOTS = {
    "anthropic": "anthropic_oneshot",
    "openai-responses": "openai_responses_oneshot",
    "openai-chat": "openai_chat_oneshot",
    "ollama": "ollama_chat_oneshot",
}


def _one_shot(pipe: Any) -> None:
    pipe.stream = False


@pytest.mark.parametrize("flavour", ["sync", "asyncio"])
@pytest.mark.parametrize("provider", sorted(ONESHOTS))
def test_same_outcome_for_one_shot_requests(
    wire: WireServer, provider: str, flavour: Flavour
) -> None:
    """``stream=False``: the lean transport POSTs the SDK's body and reads the same reply."""
    name = ONESHOTS[provider]
    played = []
    for target_name in PAIRS[provider]:
        outcome = play(
            wire, TARGETS[target_name], name, Reply(transcript(name)), flavour, prepare=_one_shot
        )
        played.append((summary(outcome), wire.requests[-1].json()))
    (sdk, sdk_body), (lean, lean_body) = played
    assert sdk["error"] is None, sdk["error"]
    assert lean_body == sdk_body
    assert lean == sdk
