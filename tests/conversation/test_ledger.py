"""``conversation.ledger()``: one entry per turn and tool-loop step, priced by hand.

Each case plays a real tool loop (and a second user turn) through the provider's client over a
loopback WireServer; the usage in the entries comes from the wire. The expected prices are
worked out here from the counts each transcript sends and the per-million-token rates that
genai-prices publishes for the model, written out as numbers (the oracle never calls our code
or genai-prices):

- OpenAI ``o4-mini`` (genai-prices 0.2.3, ``prices/providers/openai.yml``): input $1.10, cached
  input $0.275, output $4.40. Reasoning tokens are part of ``output_tokens``.
- Anthropic ``claude-sonnet-4-5`` (``prices/providers/anthropic.yml``): input $3, cache read
  $0.30, cache write $3.75, output $15. ``input_tokens`` on the wire excludes both cache
  counts; thinking is part of ``output_tokens``.
- Google ``gemini-3-pro-preview`` (``prices/providers/google.yml``, prompts up to 200k tokens):
  input $2, cache read $0.20, output $12. ``thoughtsTokenCount`` is reported apart from
  ``candidatesTokenCount`` and billed as output: output = candidates + thoughts, once.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import Conversation, LedgerEntry, PipeResult, Usage
from reasoning_stream.testing import Reply, WireServer
from reasoning_stream.testing._wire import Transcript
from tests.helpers import examples
from tests.providers.test_passback import anthropic_pipe, gemini_pipe, responses_pipe, weather_loop
from tests.telemetry.test_telemetry import _with_usage

pytest.importorskip("genai_prices")

MILLION = Decimal(1_000_000)


def usd(*terms: tuple[int, str]) -> Decimal:
    """Sum of count x rate (USD per million tokens)."""
    return sum((count * Decimal(rate) for count, rate in terms), Decimal(0)) / MILLION


def two_turns(pipe: object) -> Conversation:
    """A tool loop of two steps answering one user message, then a second user message."""
    conversation = weather_loop(pipe)  # type: ignore[arg-type]
    conversation.run(pipe)
    conversation.add_user("And tomorrow?")
    conversation.run(pipe)
    return conversation


def test_openai_reasoning_is_inside_the_output_tokens() -> None:
    first = _with_usage(
        Transcript.load("openai_responses_function_call"),
        "usage",
        {"input_tokens_details": {"cached_tokens": 32}},
    )
    replies = (Reply(first), "openai_responses_followup", "openai_responses_followup")
    with WireServer(*replies) as server, responses_pipe(server) as pipe:
        conversation = two_turns(pipe)
    # The wire: input 81 (32 cached), output 92 (64 reasoning); input 190, output 40 (16).
    step0 = usd((81 - 32, "1.10"), (32, "0.275"), (92, "4.40"))
    step1 = usd((190, "1.10"), (40, "4.40"))
    assert step0 == Decimal("0.0004675")
    assert conversation.ledger() == [
        LedgerEntry(0, 0, "o4-mini", 81, 32, 92, 64, step0),
        LedgerEntry(0, 1, "o4-mini", 190, 0, 40, 16, step1),
        LedgerEntry(1, 0, "o4-mini", 190, 0, 40, 16, step1),
    ]


def test_anthropic_cache_reads_and_writes_are_priced_apart() -> None:
    first = _with_usage(
        Transcript.load("anthropic_interleaved_tool"),
        "usage",
        {"cache_read_input_tokens": 100, "cache_creation_input_tokens": 20},
    )
    replies = (Reply(first), "anthropic_tool_answer", "anthropic_no_thinking")
    with WireServer(*replies) as server, anthropic_pipe(server) as pipe:
        conversation = two_turns(pipe)
    entries = conversation.ledger()
    # The wire: 310 fresh input + 100 read + 20 written, output 141 with the thinking in it.
    step0 = usd((310, "3"), (100, "0.30"), (20, "3.75"), (141, "15"))
    assert step0 == Decimal("0.00315")
    assert entries[0] == LedgerEntry(0, 0, "claude-sonnet-4-5", 430, 100, 141, 58, step0)
    assert entries[1] == LedgerEntry(
        0, 1, "claude-sonnet-4-5", 402, 0, 14, None, usd((402, "3"), (14, "15"))
    )
    # The second turn's wire: 9 fresh input + 2048 read + 100 written, output 12.
    step0_turn1 = usd((9, "3"), (2048, "0.30"), (100, "3.75"), (12, "15"))
    assert step0_turn1 == Decimal("0.0011964")
    assert entries[2] == LedgerEntry(1, 0, "claude-sonnet-4-5", 2157, 2048, 12, None, step0_turn1)


def test_gemini_thoughts_are_added_to_the_candidates_once() -> None:
    first = _with_usage(
        Transcript.load("gemini_tool_call"), "usageMetadata", {"cachedContentTokenCount": 10}
    )
    replies = (Reply(first), "gemini_tool_answer", "gemini_tool_answer")
    with WireServer(*replies) as server, gemini_pipe(server) as pipe:
        conversation = two_turns(pipe)
    # The wire: prompt 50 (10 cached), candidates 20 + thoughts 64; prompt 120, 12 + 18.
    step0 = usd((50 - 10, "2"), (10, "0.20"), (20 + 64, "12"))
    step1 = usd((120, "2"), (12 + 18, "12"))
    assert step0 == Decimal("0.00109")
    model = "gemini-3-pro-preview"
    assert conversation.ledger() == [
        LedgerEntry(0, 0, model, 50, 10, 84, 64, step0),
        LedgerEntry(0, 1, model, 120, None, 30, 18, step1),
        LedgerEntry(1, 0, model, 120, None, 30, 18, step1),
    ]


def test_the_ledger_survives_dumps_and_loads_and_old_dumps_have_none() -> None:
    replies = ("anthropic_interleaved_tool", "anthropic_tool_answer")
    with WireServer(*replies) as server, anthropic_pipe(server) as pipe:
        conversation = weather_loop(pipe)
        conversation.run(pipe)
    loaded = Conversation.loads(conversation.dumps())
    assert loaded == conversation
    assert loaded.ledger() == conversation.ledger()
    assert len(loaded.ledger()) == 2
    old = json.loads(conversation.dumps())
    for record in old["records"]:
        if record is not None:
            del record["usage"], record["cost"]
    assert Conversation.from_json(old).ledger() == []


def test_a_turn_added_by_hand_or_without_usage_counts_steps_but_has_no_entry() -> None:
    conversation = Conversation().add_user("hi")
    conversation.add_message({"role": "assistant", "content": "typed by hand"})
    conversation.add(PipeResult(text="ok", model="m", usage=Usage(input_tokens=3)))
    assert conversation.ledger() == [LedgerEntry(0, 1, "m", 3, None, None, None, None)]


ROLES = st.lists(st.sampled_from(["system", "user", "assistant", "tool"]), max_size=30)


@settings(max_examples=examples(100), deadline=None)
@given(roles=ROLES, recorded=st.lists(st.booleans(), min_size=30, max_size=30))
def test_turn_and_step_number_the_user_message_and_the_call_within_its_loop(
    roles: list[str], recorded: list[bool]
) -> None:
    """Reference: walk the roles, a user message starts a turn, each assistant message a step."""
    conversation = Conversation()
    expected: list[tuple[int, int, int]] = []
    turn, step = -1, 0
    for index, role in enumerate(roles):
        if role == "user":
            turn, step = turn + 1, 0
        if role == "assistant" and recorded[index]:
            conversation.add(PipeResult(text="a", usage=Usage(output_tokens=index)))
            expected.append((max(turn, 0), step, index))
        else:
            conversation.add_message({"role": role, "content": "x"})
        if role == "assistant":
            step += 1
    got = [(entry.turn, entry.step, entry.output_tokens) for entry in conversation.ledger()]
    assert got == expected
