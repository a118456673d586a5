"""``ReasoningState.may_go_to`` on its own: the endpoint is part of a state's scope.

A conversation checks two scopes before it sends a state back: the turn record's (the
provider, model and endpoint of the run that made the turn) and each state's own
(``may_go_to``). These tests hold the second to the endpoint by itself, including where the
first would let the state through.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from reasoning_stream import ReasoningState
from reasoning_stream.conversation import Conversation, TurnRecord

MADE_AT = "https://api.anthropic.com"


@dataclass(frozen=True)
class Target:
    """Just the scope a pipe has: what ``may_go_to`` and a turn record read."""

    provider: str | None
    model: str | None
    endpoint: str | None = None


def signed(endpoint: str | None = MADE_AT) -> ReasoningState:
    return ReasoningState("anthropic", "claude-x", "signature", "sig", block=0, endpoint=endpoint)


@pytest.mark.parametrize(
    "asking",
    [
        "https://proxy.example.com",  # another host
        "https://api.anthropic.com/v2",  # the same host, another root
        "http://api.anthropic.com",  # another scheme
        None,  # a pipe that cannot say where it talks to
    ],
)
def test_a_state_is_refused_at_any_other_endpoint(asking: str | None) -> None:
    """Same provider, same model: only the endpoint differs, and that alone refuses it."""
    assert not signed().may_go_to(Target("anthropic", "claude-x", asking))


@pytest.mark.parametrize("asking", [MADE_AT, MADE_AT + "/"])
def test_a_state_goes_back_to_its_own_endpoint(asking: str) -> None:
    """The control: the same endpoint (a trailing slash aside) takes it back."""
    assert signed().may_go_to(Target("anthropic", "claude-x", asking))


def test_a_state_without_an_endpoint_is_not_held_to_one() -> None:
    assert signed(endpoint=None).may_go_to(Target("anthropic", "claude-x", "https://any.example"))


def test_builders_may_skip_the_endpoint_they_were_scoped_to() -> None:
    """``check_endpoint=False`` is the request builders' opt-out, and only theirs."""
    elsewhere = Target("anthropic", "claude-x", "https://proxy.example.com")
    assert signed().may_go_to(elsewhere, check_endpoint=False)
    assert not signed().may_go_to(elsewhere)


def test_the_endpoint_is_refused_even_where_the_turn_record_agrees() -> None:
    """A record scoped to the pipe's endpoint holds a state made at another one (copied in,
    or restored from elsewhere): the record lets the turn through, the state's own scope
    refuses it, and the conversation sends the turn without it."""
    pipe = Target("anthropic", "claude-x", "https://proxy.example.com")
    foreign = signed(endpoint=MADE_AT)
    own = signed(endpoint=pipe.endpoint)
    record = TurnRecord("anthropic", "claude-x", pipe.endpoint, states=(foreign, own))
    assert record.made_by(pipe)  # the record would agree ...
    assert not foreign.may_go_to(pipe)  # ... the state alone refuses

    data = Conversation().add_user("Hi").to_json()
    data["messages"].append({"role": "assistant", "content": "Hello"})
    data["records"].append(record.to_json())
    conversation = Conversation.from_json(data)
    assert conversation.record(1) == record
    assert [turn.states for turn in conversation.turns_for(pipe)] == [(), (own,)]
