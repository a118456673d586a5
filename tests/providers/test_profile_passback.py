"""Passback, preflight and scope read the model's profile: the rows of issue 23.

Every test runs real turns through the provider's SDK (or httpx) against the loopback
WireServer and asserts the follow-up request body the server received; expected bodies are
rebuilt from the bundled transcripts, not by the pipes. Each docstring cites the page that
states the rule (or issue 23, which checked the providers' docs on 2026-12-01).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import httpx
import openai
import pytest

from reasoning_stream._exceptions import UsageError
from reasoning_stream.conversation import Conversation
from reasoning_stream.providers import (
    AnthropicPipe,
    BedrockPipe,
    GeminiPipe,
    OpenAIChatPipe,
    OpenRouterPipe,
)
from reasoning_stream.store import SQLiteStore
from reasoning_stream.testing._wire import WireServer
from tests.providers.conftest import bedrock_client
from tests.providers.test_passback_rules import (
    anthropic_content,
    chat_reasoning,
    gemini_served,
    sse_events,
    tool_loop,
)

KEY = "test-key-not-a-secret"
OTHER_KEY = "another-key-not-a-secret"
FABLE = "claude-fable-5-1"
WRITTEN_CALL = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
    ],
}

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def written_loop() -> Conversation:
    """A tool loop whose tool-use turn the application wrote: it has no signed thinking."""
    conversation = Conversation().add_user("Weather in Paris?").add_message(WRITTEN_CALL)
    return conversation.add_tool_result("call_1", "18 °C")


@contextmanager
def claude(server: WireServer, model: str, **options: Any) -> Iterator[AnthropicPipe]:
    key = options.pop("api_key", KEY)
    with anthropic.Anthropic(base_url=server.url, api_key=key, max_retries=0) as client:
        yield AnthropicPipe(model, client=client, **options)


@contextmanager
def bedrock(server: WireServer, model: str, **options: Any) -> Iterator[BedrockPipe]:
    client = bedrock_client(server.url)
    try:
        yield BedrockPipe(model, client=client, **options)
    finally:
        client.close()


def codes(conversation: Conversation, pipe: Any) -> list[tuple[int, str]]:
    return [(problem.index, problem.code) for problem in conversation.preflight(pipe)]


# --------------------------------------------- Claude 5.x: the profile's thinking mode


@pytest.mark.parametrize("model", ["claude-opus-5", "claude-sonnet-5", "claude-sonnet-5-5"])
@pytest.mark.parametrize("reasoning", [None, "high"])
def test_claude_thinking_by_default_repairs_with_the_documented_off_switch(
    model: str, reasoning: Any
) -> None:
    """A model that thinks by default thinks without a ``thinking`` field: a tool-use turn
    without its thinking is a problem even then; ``repair=True`` sends the documented off
    switch ``{"type": "disabled"}`` and no ``output_config.effort`` (an effort keeps it
    thinking).

    Docs: https://platform.claude.com/docs/en/models/opus-5/migration-guide ("thinking is on
    by default, and thinking can be disabled only at effort high or below") and
    https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#preserving-thinking-blocks;
    Sonnet 5 and 5.5 think by default too (issue 23).
    """
    conversation = written_loop()
    with (
        WireServer("anthropic_tool_answer") as server,
        claude(server, model, reasoning=reasoning) as pipe,
    ):
        assert codes(conversation, pipe) == [(1, "thinking_missing")]
        with pytest.raises(UsageError, match="thinking_missing"):
            conversation.run(pipe)
        assert not server.requests
        with pytest.warns(UserWarning, match="disabled"):
            conversation.run(pipe, repair=True)
    body = server.requests[0].json()
    assert body["thinking"] == {"type": "disabled"}
    assert "effort" not in body.get("output_config", {})
    assert body["messages"][1]["content"][-1]["type"] == "tool_use"


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-mythos-1", FABLE])
def test_claude_that_always_thinks_cannot_be_repaired(model: str) -> None:
    """A model that always thinks rejects ``disabled`` and has no other off switch: the tool
    loop without its thinking is named, and ``repair=True`` raises instead of sending.

    Docs: https://platform.claude.com/docs/en/models/opus-5-5/whats-new-opus-5-5 ("Thinking
    can't be disabled"); Fable and Mythos likewise (issue 23).
    """
    conversation = written_loop()
    with WireServer("anthropic_tool_answer") as server, claude(server, model) as pipe:
        assert codes(conversation, pipe) == [(1, "thinking_missing")]
        with pytest.raises(UsageError, match=r"repair=True cannot fix.*thinking_missing"):
            conversation.run(pipe, repair=True)
    assert not server.requests


@pytest.mark.parametrize("api", ["converse", "invoke"])
@pytest.mark.parametrize("reasoning", [None, "high"])
def test_bedrock_claude_thinking_by_default_repairs_with_the_off_switch(
    reasoning: Any, api: str
) -> None:
    """Claude on Bedrock follows the same rules: the off switch goes in Converse's
    ``additionalModelRequestFields`` (or at the top of the Invoke body), without an effort.

    Docs: https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html
    and the Anthropic pages above.
    """
    conversation = written_loop()
    model = "us.anthropic.claude-opus-5-v1:0"
    reply = "bedrock_converse_plain" if api == "converse" else "bedrock_invoke_anthropic_thinking"
    with WireServer(reply) as server, bedrock(server, model, reasoning=reasoning, api=api) as pipe:
        assert codes(conversation, pipe) == [(1, "thinking_missing")]
        with pytest.warns(UserWarning, match="disabled"):
            conversation.run(pipe, repair=True)
    body = server.requests[0].json()
    fields = body["additionalModelRequestFields"] if api == "converse" else body
    assert fields["thinking"] == {"type": "disabled"}
    assert "effort" not in fields.get("output_config", {})


def test_bedrock_claude_that_always_thinks_cannot_be_repaired() -> None:
    conversation = written_loop()
    with (
        WireServer("bedrock_converse_plain") as server,
        bedrock(server, "global.anthropic.claude-opus-5-5-v1:0") as pipe,
    ):
        assert codes(conversation, pipe) == [(1, "thinking_missing")]
        with pytest.raises(UsageError, match="repair=True cannot fix"):
            conversation.run(pipe, repair=True)
    assert not server.requests


# ------------------------------------------------------------ cross-model reading


def test_fable_reads_opus_5_thinking_blocks() -> None:
    """Fable 5.1 reads Opus 5 (and 5.5) thinking: a tool loop Opus 5 began goes on with
    Fable, its blocks sent back as received; no ``thinking_other_model``, and ``repair=True``
    keeps them. A model that reads no one else's (Sonnet 5) is still refused.

    Docs: issue 23 (Fable 5.1 reads Opus 5 and Opus 5.5 thinking blocks; the API drops what
    a model cannot read) and
    https://platform.claude.com/docs/en/build-with-claude/preserved-thinking ("thinking blocks
    are tied to the model that produced them").
    """
    replies = ("anthropic_interleaved_tool", "anthropic_tool_answer", "anthropic_tool_answer")
    with WireServer(*replies) as server, claude(server, "claude-opus-5") as opus:
        conversation = tool_loop(opus)
        with claude(server, FABLE) as fable, claude(server, "claude-sonnet-5") as sonnet:
            assert codes(conversation, fable) == []
            assert codes(conversation, sonnet) == [(1, "thinking_other_model")]
            conversation.copy().run(fable)
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # nothing to repair: no warning
                conversation.run(fable, repair=True)
    expected = {"role": "assistant", "content": anthropic_content(sse_events(replies[0]))}
    for request in server.requests[1:]:
        assert request.json()["messages"][1] == expected


# ------------------------------------------------------------------ prefix binding


def fable_history(server: WireServer, **options: Any) -> Conversation:
    """Two Fable answers (each with a signed thinking block) and a third question."""
    with claude(server, FABLE, **options) as fable:
        conversation = Conversation(system="Be brief.").add_user("Capital of France?")
        conversation.run(fable)
        conversation.add_user("And of Italy?")
        conversation.run(fable)
    return conversation.add_user("And of Spain?")


def signed_blocks(body: dict[str, Any]) -> list[int]:
    """The indexes of the assistant messages that carry thinking blocks."""
    return [
        index
        for index, message in enumerate(body["messages"])
        if message["role"] == "assistant"
        and isinstance(message["content"], list)
        and any(block["type"] == "thinking" for block in message["content"])
    ]


def test_prefix_bound_blocks_go_back_while_the_prefix_is_unchanged() -> None:
    """Fable's blocks are valid while system, tools and every earlier message are as they
    were: an unchanged history sends them all, after a save and a reload too (issue 23)."""
    replies = ("anthropic_thinking",) * 2 + ("anthropic_no_thinking",)
    with WireServer(*replies) as server:
        conversation = fable_history(server)
        restored = Conversation.loads(conversation.dumps())
        with claude(server, FABLE) as fable:
            assert codes(restored, fable) == []
            restored.run(fable)
    assert signed_blocks(server.requests[2].json()) == [1, 3]


def test_a_compaction_invalidates_prefix_bound_blocks() -> None:
    """After ``compact()`` the kept answer's prefix changed: preflight names it
    (``thinking_prefix_changed``, the first message whose block is invalid), a plain run
    raises, and ``repair=True`` drops it with a warning.

    Docs: issue 23 (Fable 5.1: "a block is valid only while system, tools and every earlier
    message are unchanged").
    """
    replies = ("anthropic_thinking",) * 2 + ("anthropic_no_thinking",)
    with WireServer(*replies) as server:
        compacted = fable_history(server).compact(keep_last=3)
        with claude(server, FABLE) as fable:
            assert codes(compacted, fable) == [(2, "thinking_prefix_changed")]
            with pytest.raises(UsageError, match="thinking_prefix_changed"):
                compacted.run(fable)
            assert len(server.requests) == 2
            with pytest.warns(UserWarning, match="prefix changed before message 2"):
                compacted.run(fable, repair=True)
    body = server.requests[2].json()
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert signed_blocks(body) == []


def test_changed_system_or_tools_invalidate_every_later_block() -> None:
    """A changed system prompt (here through a saved copy) or changed tools invalidate the
    first block and every later one: the problem names the first, repair drops them all."""
    replies = ("anthropic_thinking",) * 2 + ("anthropic_no_thinking",) * 2
    with WireServer(*replies) as server:
        conversation = fable_history(server)
        data = conversation.to_json()
        data["messages"][0]["content"] = "Be very brief."
        edited = Conversation.from_json(data)
        tools = {"tools": [{"name": "get_weather", "input_schema": {"type": "object"}}]}
        with claude(server, FABLE) as fable, claude(server, FABLE, extra_body=tools) as tooled:
            assert codes(edited, fable) == [(2, "thinking_prefix_changed")]
            assert codes(conversation, tooled) == [(2, "thinking_prefix_changed")]
            assert codes(conversation, fable) == []
            with pytest.warns(UserWarning, match="messages 2, 4 is dropped"):
                edited.run(fable, repair=True)
            with pytest.warns(UserWarning, match="messages 2, 4 is dropped"):
                conversation.run(tooled, repair=True)
    for request in server.requests[2:]:
        assert signed_blocks(request.json()) == []


def test_prefix_bound_state_survives_a_store(tmp_path: Any) -> None:
    """The digest rides with the state through a store, and old records (states without
    one) load and are not held to a prefix."""
    replies = ("anthropic_thinking",) * 2
    with WireServer(*replies) as server:
        conversation = fable_history(server)
        url = server.url
    store = SQLiteStore(tmp_path / "c.db")
    try:
        store.save("c", conversation)
        loaded, _ = store.load("c")
    finally:
        store.close()
    assert loaded == conversation
    data = conversation.compact(keep_last=3).to_json()
    for record in data["records"]:
        for state in (record or {}).get("states", ()):
            state["extra"].pop("prefix")
    old = Conversation.from_json(data)
    fable = AnthropicPipe(FABLE, base_url=url, api_key=KEY)
    assert codes(old, fable) == []


# ------------------------------------------------------------------ account binding


def test_account_bound_state_stays_with_its_account() -> None:
    """Sonnet 5.5's state goes back under the account that made it only: the same key (or
    the same ``account=`` label) gets it, another key gets it named by preflight
    (``state_other_account``) and left out under ``repair=True``. No key is stored.

    Docs: issue 23 (Sonnet 5.5 and Haiku 5.5: "state made under one account must not go to
    another") and https://platform.claude.com/docs/en/build-with-claude/preserved-thinking.
    """
    model = "claude-sonnet-5-5"
    replies = ("anthropic_thinking",) + ("anthropic_no_thinking",) * 3
    with WireServer(*replies) as server:
        with claude(server, model) as first:
            conversation = Conversation().add_user("Capital of France?")
            conversation.run(first)
        conversation.add_user("And of Italy?")
        assert KEY not in conversation.dumps()
        with claude(server, model) as same, claude(server, model, api_key=OTHER_KEY) as other:
            assert codes(conversation, same) == []
            assert codes(conversation, other) == [(1, "state_other_account")]
            with pytest.raises(UsageError, match="state_other_account"):
                conversation.run(other)
            conversation.copy().run(same)
            with pytest.warns(UserWarning, match="another account is left out of messages 1"):
                conversation.copy().run(other, repair=True)
        with claude(server, model, api_key=OTHER_KEY, account="team-a") as labelled:
            labelled_conversation = Conversation().add_user("Hi")
            labelled_conversation.add(first.last_result).add_user("Again")
            assert codes(labelled_conversation, labelled) == [(1, "state_other_account")]
    same_body, other_body = (request.json() for request in server.requests[1:3])
    assert signed_blocks(same_body) == [1]
    assert signed_blocks(other_body) == []


def test_an_account_label_names_the_account_whatever_the_key() -> None:
    model = "claude-haiku-5-5"
    with WireServer("anthropic_thinking", "anthropic_no_thinking") as server:
        with claude(server, model, account="team-a") as first:
            conversation = Conversation().add_user("Capital of France?")
            conversation.run(first)
        conversation.add_user("And of Italy?")
        with claude(server, model, api_key=OTHER_KEY, account="team-a") as again:
            assert codes(conversation, again) == []
            conversation.run(again)
    assert signed_blocks(server.requests[1].json()) == [1]
    with pytest.raises(UsageError, match="account= takes a label"):
        AnthropicPipe(model, api_key=KEY, account="")


# ----------------------------------------------------------------------- DeepSeek


def test_deepseek_final_answer_of_a_tool_turn_keeps_its_reasoning_content() -> None:
    """Every assistant message of a tool-using turn takes its ``reasoning_content`` back in
    later requests, the turn's final answer too, not only the messages with ``tool_calls``.

    Docs: https://api-docs.deepseek.com/guides/thinking_mode#tool-calls (the reasoning of a
    turn that performed tool calls is passed back in all subsequent requests) and issue 23.
    """
    replies = (
        "openai_chat_tool_call",
        "openai_chat_reasoning_content",
        "openai_chat_no_reasoning",
    )
    with (
        WireServer(*replies) as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client,
    ):
        pipe = OpenAIChatPipe("deepseek-chat", client=client)
        conversation = tool_loop(pipe)
        conversation.run(pipe)
        conversation.add_user("And tomorrow?")
        conversation.run(pipe)
    sent = server.requests[2].json()["messages"]
    assistants = [message for message in sent if message["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in assistants] == [
        chat_reasoning("openai_chat_tool_call"),
        chat_reasoning("openai_chat_reasoning_content"),
    ]


# ---------------------------------------------------------------------- OpenRouter


def openrouter_details(name: str) -> list[Any]:
    return [
        item
        for event in sse_events(name)
        if isinstance(event, dict)
        for choice in event.get("choices", ())
        for item in choice["delta"].get("reasoning_details", ())
    ]


@pytest.mark.parametrize(
    ("model", "kept"),
    [
        ("anthropic/claude-opus-4.5", True),
        ("anthropic/claude-sonnet-4.6", True),
        ("anthropic/claude-opus-5", True),
        ("anthropic/claude-sonnet-4.5", False),
    ],
)
def test_openrouter_claude_keeps_earlier_turns_thinking(model: str, kept: bool) -> None:
    """Through OpenRouter too, Claude Opus 4.5+, Sonnet 4.6+ and 5.x keep earlier turns'
    thinking: after a new user message the tool turn's ``reasoning_details`` still go back;
    older Claude gets them within the tool loop only.

    Docs: https://openrouter.ai/docs/use-cases/reasoning-tokens#preserving-reasoning-blocks
    and https://platform.claude.com/docs/en/build-with-claude/preserved-thinking (issue 23).
    """
    replies = ("openrouter_tool_call", "openrouter_no_reasoning", "openrouter_no_reasoning")
    with WireServer(*replies) as server, httpx.Client() as client:
        pipe = OpenRouterPipe(model, client=client, base_url=server.url + "/api/v1", api_key=KEY)
        conversation = tool_loop(pipe)
        conversation.run(pipe)
        conversation.add_user("Thanks! And tomorrow?")
        conversation.run(pipe)
    details = openrouter_details("openrouter_tool_call")
    assert details
    in_loop = server.requests[1].json()["messages"][1]
    later = server.requests[2].json()["messages"][1]
    assert in_loop["reasoning_details"] == details
    assert later.get("reasoning_details") == (details if kept else None)


# ---------------------------------------------------------------------------- Gemini


def test_gemini_4_has_gemini_3s_signature_rule() -> None:
    """A function call of the current turn without its thought signature is named for
    Gemini 4 as for Gemini 3, and ``repair=True`` sends the documented stand-in.

    Docs: https://ai.google.dev/gemini-api/docs/thought-signatures#faqs (the dummy signature
    ``skip_thought_signature_validator``) and issue 23 (Gemini 4 has Gemini 3's rule).
    """
    model = "gemini-4-pro"
    conversation = written_loop()
    with (
        WireServer(gemini_served("gemini_tool_answer", model)) as server,
        httpx.Client() as client,
    ):
        pipe = GeminiPipe(model, client=client, base_url=server.url + "/v1beta", api_key=KEY)
        assert codes(conversation, pipe) == [(1, "signature_missing")]
        with pytest.raises(UsageError, match="signature_missing"):
            conversation.run(pipe)
        with pytest.warns(UserWarning, match="placeholder thought signature"):
            conversation.run(pipe, repair=True)
    call = server.requests[0].json()["contents"][1]["parts"][0]
    assert call["thoughtSignature"] == "skip_thought_signature_validator"


# ------------------------------------------------------------------------- endpoints


def test_a_state_goes_back_to_its_endpoint_however_it_is_written() -> None:
    """The same root written with an upper-case scheme and a trailing slash is the same
    endpoint: the tool loop's signed thinking goes back and preflight finds nothing (issue
    23: endpoints are compared in one canonical form)."""
    with WireServer("anthropic_interleaved_tool", "anthropic_tool_answer") as server:
        with claude(server, "claude-opus-4-5") as made:
            conversation = tool_loop(made)
        written = "HTTP://" + server.url.split("://", 1)[1].rstrip("/") + "/"
        again = AnthropicPipe("claude-opus-4-5", base_url=written, api_key=KEY)
        assert codes(conversation, again) == []
        conversation.run(again)
    expected = anthropic_content(sse_events("anthropic_interleaved_tool"))
    assert server.requests[1].json()["messages"][1]["content"] == expected


def test_a_state_left_out_for_another_endpoint_is_named() -> None:
    """State that cannot go to this pipe's endpoint is named (``state_other_endpoint``), not
    dropped silently: a plain run raises, ``repair=True`` leaves it out with a warning."""
    with WireServer("anthropic_thinking") as first, claude(first, "claude-opus-4-5") as made:
        conversation = Conversation().add_user("Capital of France?")
        conversation.run(made)
        made_at = first.url.rstrip("/")
    conversation.add_user("And of Italy?")
    with WireServer("anthropic_no_thinking") as other, claude(other, "claude-opus-4-5") as pipe:
        [problem] = conversation.preflight(pipe)
        assert (problem.index, problem.code) == (1, "state_other_endpoint")
        assert made_at in problem.message
        with pytest.raises(UsageError, match="state_other_endpoint"):
            conversation.run(pipe)
        with pytest.warns(UserWarning, match="another endpoint is left out of messages 1"):
            conversation.run(pipe, repair=True)
    assert json.dumps(other.requests[0].json()).count('"thinking"') == 0
