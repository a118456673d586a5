"""Request preflight: settings a provider rejects while the model thinks, caught before sending.

What the docs say, written out here (not read from the package):

* Anthropic and Bedrock Claude: thinking is not compatible with ``temperature`` or ``top_k``
  changes nor with forced tool use (only ``tool_choice`` ``auto`` / ``none``); ``top_p`` only
  from 0.95 to 1; ``budget_tokens`` below ``max_tokens``
  (https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#feature-compatibility,
  https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html).
* OpenAI o-series (always reasoning): ``temperature`` and ``top_p`` are a 400
  ``unsupported_parameter`` (https://github.com/openai/openai-python/issues/2104).

A plain run raises ``UsageError`` before any request (the WireServer receives nothing);
``repair=True`` sends the documented fallback, asserted in the body the real SDK sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import Conversation, UsageError, tool
from reasoning_stream.providers import (
    AnthropicPipe,
    BedrockPipe,
    OpenAIChatPipe,
    OpenAIResponsesPipe,
)
from reasoning_stream.testing import WireServer
from tests.providers.conftest import bedrock_client

from ..helpers import examples

KEY = "test-key-not-a-secret"
THINKING = {"type": "enabled", "budget_tokens": 2048}
BEDROCK_CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


@tool
def get_time(zone: str) -> str:
    """Current time in a time zone."""
    return f"12:00 in {zone}"


class Wire:
    def __init__(self, server: WireServer, stack: ExitStack) -> None:
        self.server = server
        self.anthropic = stack.enter_context(
            anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)
        )
        self.openai = stack.enter_context(
            openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
        )
        self.bedrock = bedrock_client(server.url)
        stack.callback(self.bedrock.close)

    def claude(self, model: str = "claude-sonnet-4-5", **options: Any) -> AnthropicPipe:
        return AnthropicPipe(model, client=self.anthropic, **options)


@pytest.fixture(scope="module")
def wire() -> Iterator[Wire]:
    with ExitStack() as stack:
        server = stack.enter_context(
            WireServer(
                "anthropic_thinking",
                "bedrock_converse_reasoning",
                "openai_chat_no_reasoning",
                "openai_responses_plain",
            )
        )
        yield Wire(server, stack)


def asked() -> Conversation:
    conversation = Conversation()
    conversation.add_user("What time is it in Tokyo?")
    return conversation


def refused_unsent(wire: Wire, pipe: Any, code: str) -> None:
    """A plain run raises naming ``code``, and nothing reaches the server."""
    before = len(wire.server.requests)
    with pytest.raises(UsageError, match=code):
        pipe.run("What time is it in Tokyo?")
    with pytest.raises(UsageError, match=code):
        asked().run(pipe)
    assert len(wire.server.requests) == before


def repaired_body(wire: Wire, pipe: Any, says: str) -> dict[str, Any]:
    """Run with ``repair=True``: the warning says ``says``; the body the server received."""
    before = len(wire.server.requests)
    with pytest.warns(UserWarning, match=says):
        asked().run(pipe, repair=True)
    assert len(wire.server.requests) == before + 1
    body: dict[str, Any] = wire.server.requests[before].json()
    return body


def codes(pipe: Any) -> list[tuple[int, str]]:
    return [(problem.index, problem.code) for problem in asked().preflight(pipe)]


# ------------------------------------------------------------------------------ Anthropic


def test_forced_tool_choice_with_thinking_is_refused_then_repaired_to_auto(wire: Wire) -> None:
    for choice in ("required", "get_time"):
        pipe = wire.claude(thinking=THINKING, tools=[get_time], tool_choice=choice)
        assert codes(pipe) == [(-1, "forced_tool_choice_with_thinking")]
        problem = asked().preflight(pipe)[0]
        assert "extended-thinking#feature-compatibility" in problem.message
        assert str(problem).startswith("request: forced_tool_choice_with_thinking: ")
        refused_unsent(wire, pipe, "forced_tool_choice_with_thinking")
        body = repaired_body(wire, pipe, "tool_choice .* -> 'auto'")
        assert body["tool_choice"] == {"type": "auto"}
        assert body["thinking"] == THINKING
        assert pipe.tool_choice == choice  # the pipe itself is unchanged


def test_free_tool_choices_and_no_thinking_pass(wire: Wire) -> None:
    for choice in ("auto", "none", None):
        assert codes(wire.claude(thinking=THINKING, tools=[get_time], tool_choice=choice)) == []
    # Without thinking, forcing a tool and sampling are fine (Sonnet 4.5 thinks only if asked).
    plain = wire.claude(tools=[get_time], tool_choice="required", temperature=0.2, top_p=0.5)
    assert codes(plain) == []


def test_sampling_with_thinking_is_refused_then_left_out(wire: Wire) -> None:
    pipe = wire.claude(thinking=THINKING, temperature=0.5, top_p=0.9)
    assert codes(pipe) == [(-1, "sampling_with_thinking")]
    refused_unsent(wire, pipe, "sampling_with_thinking")
    body = repaired_body(wire, pipe, "left out temperature=0.5, top_p=0.9")
    assert "temperature" not in body and "top_p" not in body
    assert body["thinking"] == THINKING


def test_top_p_from_095_to_1_goes_with_thinking(wire: Wire) -> None:
    for top_p in (0.95, 0.97, 1.0):
        assert codes(wire.claude(thinking=THINKING, top_p=top_p)) == []
    assert codes(wire.claude(thinking=THINKING, top_p=0.94)) == [(-1, "sampling_with_thinking")]


def test_budget_at_or_above_max_tokens_is_refused_then_max_tokens_raised(wire: Wire) -> None:
    for max_tokens in (2048, 1500):
        pipe = wire.claude(thinking=THINKING, max_tokens=max_tokens)
        assert codes(pipe) == [(-1, "budget_exceeds_max_tokens")]
        refused_unsent(wire, pipe, "budget_exceeds_max_tokens")
        body = repaired_body(wire, pipe, f"max_tokens {max_tokens} -> 6144")
        assert body["max_tokens"] == 2048 + 4096
        assert body["thinking"] == THINKING
    assert codes(wire.claude(thinking=THINKING, max_tokens=2049)) == []


def test_every_conflict_is_named_at_once(wire: Wire) -> None:
    pipe = wire.claude(
        thinking=THINKING, tools=[get_time], tool_choice="required", temperature=0.0, max_tokens=9
    )
    assert codes(pipe) == [
        (-1, "forced_tool_choice_with_thinking"),
        (-1, "sampling_with_thinking"),
        (-1, "budget_exceeds_max_tokens"),
    ]
    body = repaired_body(wire, pipe, "repaired the request")
    assert body["tool_choice"] == {"type": "auto"} and "temperature" not in body
    assert body["max_tokens"] == 2048 + 4096


def test_a_model_that_thinks_by_default_is_checked_unless_switched_off(wire: Wire) -> None:
    """Opus 5 thinks unless ``thinking: {"type": "disabled"}`` (its profile says so)."""
    assert codes(wire.claude("claude-opus-5", temperature=0.3)) == [(-1, "sampling_with_thinking")]
    off = wire.claude("claude-opus-5", thinking={"type": "disabled"}, temperature=0.3)
    assert codes(off) == []


def test_request_problems_come_after_the_history_problems(wire: Wire) -> None:
    conversation = asked()
    call = {"id": "t1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
    conversation.add_message({"role": "assistant", "content": "", "tool_calls": [call]})
    conversation.add_tool_result("t1", "12:00")
    pipe = wire.claude(thinking=THINKING, temperature=0.5)
    found = [(problem.index, problem.code) for problem in conversation.preflight(pipe)]
    assert found == [(1, "thinking_missing"), (-1, "sampling_with_thinking")]


def test_async_runs_are_checked_too(wire: Wire) -> None:
    import anyio

    client = anthropic.AsyncAnthropic(base_url=wire.server.url, api_key=KEY, max_retries=0)
    pipe = AnthropicPipe("claude-sonnet-4-5", client=client, thinking=THINKING, top_p=0.5)
    before = len(wire.server.requests)

    async def main() -> None:
        with anyio.fail_after(30):
            with pytest.raises(UsageError, match="sampling_with_thinking"):
                await pipe.arun("hi")
            with pytest.warns(UserWarning, match="left out top_p=0.5"):
                await asked().arun(pipe, repair=True)
            await client.close()

    anyio.run(main)
    assert len(wire.server.requests) == before + 1
    assert "top_p" not in wire.server.requests[before].json()


# -------------------------------------------------------------------------------- Bedrock


def test_bedrock_claude_with_thinking_refuses_forcing_and_sampling(wire: Wire) -> None:
    pipe = BedrockPipe(
        BEDROCK_CLAUDE,
        client=wire.bedrock,
        additional_model_request_fields={"thinking": THINKING},
        tools=[get_time],
        tool_choice="required",
        temperature=0.5,
    )
    assert codes(pipe) == [
        (-1, "forced_tool_choice_with_thinking"),
        (-1, "sampling_with_thinking"),
    ]
    refused_unsent(wire, pipe, "forced_tool_choice_with_thinking")
    body = repaired_body(wire, pipe, "tool_choice 'required' -> 'auto'")
    assert body["toolConfig"]["toolChoice"] == {"auto": {}}
    assert "temperature" not in body.get("inferenceConfig", {})
    assert body["additionalModelRequestFields"]["thinking"] == THINKING


# --------------------------------------------------------------------------------- OpenAI


def test_openai_reasoning_models_refuse_temperature_and_top_p(wire: Wire) -> None:
    chat = OpenAIChatPipe("o3-mini", client=wire.openai, temperature=0.2, top_p=0.5)
    assert codes(chat) == [(-1, "sampling_with_thinking")]
    refused_unsent(wire, chat, "sampling_with_thinking")
    body = repaired_body(wire, chat, "left out temperature=0.2, top_p=0.5")
    assert "temperature" not in body and "top_p" not in body
    responses = OpenAIResponsesPipe("o4-mini", client=wire.openai, temperature=0.2)
    refused_unsent(wire, responses, "sampling_with_thinking")
    assert "temperature" not in repaired_body(wire, responses, "left out temperature=0.2")
    # A model that does not reason takes them.
    assert codes(OpenAIChatPipe("gpt-4.1", client=wire.openai, temperature=0.2)) == []


def test_providers_without_request_rules_are_not_checked() -> None:
    """OpenRouter registers no ``thinking_request``: its requests are not checked, even for a
    Claude row that lists what Anthropic rejects (the gateway normalizes parameters)."""
    from reasoning_stream.providers import OpenRouterPipe

    pipe = OpenRouterPipe(
        "anthropic/claude-opus-5-5", base_url="http://127.0.0.1:9/api/v1", api_key=KEY,
        temperature=0.5,
    )  # fmt: skip
    assert pipe.profile.thinking_rejects and codes(pipe) == []


# ---------------------------------------------------------------------------- the law


def oracle(
    choice: str | None, temperature: float | None, top_p: float | None, max_tokens: int | None
) -> list[str]:
    """The Anthropic rules as the docs state them, for a request with ``THINKING``."""
    found = []
    if choice not in (None, "auto", "none"):
        found.append("forced_tool_choice_with_thinking")
    if temperature is not None or (top_p is not None and not 0.95 <= top_p <= 1):
        found.append("sampling_with_thinking")
    if max_tokens is not None and max_tokens <= THINKING["budget_tokens"]:
        found.append("budget_exceeds_max_tokens")
    return found


@settings(max_examples=examples(60), deadline=None)
@given(
    choice=st.sampled_from([None, "auto", "none", "required", "get_time"]),
    temperature=st.none() | st.floats(0, 1),
    top_p=st.none() | st.floats(0, 1),
    max_tokens=st.none() | st.integers(1, 5000),
)
def test_preflight_names_exactly_what_the_docs_reject(
    choice: str | None, temperature: float | None, top_p: float | None, max_tokens: int | None
) -> None:
    pipe = AnthropicPipe(
        "claude-sonnet-4-5",
        api_key=KEY,
        thinking=THINKING,
        tools=[get_time],
        tool_choice=choice,  # type: ignore[arg-type]
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
    )
    found = asked().preflight(pipe)
    assert [problem.code for problem in found] == oracle(choice, temperature, top_p, max_tokens)
    assert all(problem.index == -1 for problem in found)


def test_a_store_run_refuses_then_repairs_the_request(wire: Wire, tmp_path: Any) -> None:
    from reasoning_stream.store import SQLiteStore

    pipe = wire.claude(thinking=THINKING, tools=[get_time], tool_choice="required")
    with SQLiteStore(tmp_path / "conversations.db") as store:
        store.save("c1", asked())
        before = len(wire.server.requests)
        with pytest.raises(UsageError, match="forced_tool_choice_with_thinking"):
            store.run("c1", pipe)
        assert len(wire.server.requests) == before
        with pytest.warns(UserWarning, match="-> 'auto'"):
            store.run("c1", pipe, repair=True)
        assert wire.server.requests[before].json()["tool_choice"] == {"type": "auto"}
        assert len(store.load("c1")[0]) == 2
