"""``ReasoningState.may_go_to`` on its own: the endpoint is part of a state's scope.

A conversation checks two scopes before it sends a state back: the turn record's (the
provider, model and endpoint of the run that made the turn) and each state's own
(``may_go_to``). These tests hold the second to the endpoint by itself, including where the
first would let the state through.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import ReasoningState
from reasoning_stream._endpoints import canonical_endpoint, same_endpoint
from reasoning_stream.conversation import Conversation, TurnRecord
from tests.helpers import examples

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


# ------------------------------------------------ one canonical form, bindings (issue 23)


@pytest.mark.parametrize(
    "asking",
    [
        "https://api.anthropic.com:443",  # the default port written out
        "HTTPS://API.Anthropic.COM",  # scheme and host case
        "https://api.anthropic.com/",  # a trailing slash
    ],
)
def test_an_endpoint_written_differently_is_the_same_endpoint(asking: str) -> None:
    pipe = Target("anthropic", "claude-x", asking)
    assert signed().may_go_to(pipe)
    assert TurnRecord("anthropic", "claude-x", MADE_AT, states=(signed(),)).made_by(pipe)


def test_a_turn_recorded_without_an_endpoint_is_at_the_providers_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A record from a pipe that named no endpoint, and a pipe that names the default
    written out (or none, its ``api_url()`` being the default): one endpoint."""
    from reasoning_stream.providers import AnthropicPipe

    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    unnamed = TurnRecord("anthropic", "claude-x", None, states=(signed(endpoint=None),))
    assert unnamed.made_by(Target("anthropic", "claude-x", "https://api.anthropic.com:443/"))
    pipe = AnthropicPipe("claude-x", api_key="k")
    assert pipe.endpoint is None
    assert signed().may_go_to(pipe)
    assert TurnRecord("anthropic", "claude-x", MADE_AT, states=(signed(),)).made_by(pipe)
    assert not unnamed.made_by(Target("anthropic", "claude-x", "https://proxy.example.com"))


def test_an_account_bound_state_goes_back_under_its_account_only() -> None:
    bound = ReasoningState(
        "anthropic", "claude-x", "signature", "sig", endpoint=MADE_AT, extra={"account": "a"}
    )

    @dataclass(frozen=True)
    class Under(Target):
        account: str | None = None

    assert bound.may_go_to(Under("anthropic", "claude-x", MADE_AT, "a"))
    assert bound.refusal(Under("anthropic", "claude-x", MADE_AT, "b")) == "account"
    assert bound.refusal(Under("anthropic", "claude-x", MADE_AT)) == "account"


def test_a_model_reads_the_state_its_profile_names() -> None:
    """Fable 5.1's profile reads Opus 5 and 5.5 state; Sonnet 5's reads only its own."""
    from reasoning_stream import profiles

    @dataclass(frozen=True)
    class Reading(Target):
        profile: profiles.ModelProfile | None = None

    opus = ReasoningState("anthropic", "claude-opus-5-5", "signature", "sig")
    fable = Reading(
        "anthropic", "claude-fable-5-1", None, profiles.lookup("anthropic", "claude-fable-5-1")
    )
    sonnet = Reading(
        "anthropic", "claude-sonnet-5", None, profiles.lookup("anthropic", "claude-sonnet-5")
    )
    assert opus.may_go_to(fable)
    assert opus.refusal(sonnet) == "model"


@given(
    host=st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z]{2,5}){1,2}", fullmatch=True),
    path=st.from_regex(r"(/[a-z0-9]{1,6}){0,3}", fullmatch=True),
    scheme=st.sampled_from(["http", "https"]),
    flips=st.lists(st.booleans(), min_size=40, max_size=40),
    port=st.booleans(),
    slash=st.booleans(),
)
@settings(max_examples=examples(200))
def test_law_endpoints_compare_without_case_default_port_or_trailing_slash(
    host: str, path: str, scheme: str, flips: list[bool], port: bool, slash: bool
) -> None:
    """Reference: the canonical form built by hand (lower-case scheme and host, the path as
    written); any spelling of it (case, the default port, a trailing slash) compares equal,
    and another path does not."""
    base = f"{scheme}://{host}{path}"
    shouted = "".join(
        c.upper() if flip else c for c, flip in zip(f"{scheme}://{host}", flips, strict=False)
    )
    written = shouted + (":443" if scheme == "https" else ":80") * port + path + "/" * slash
    assert same_endpoint(base, written)
    assert canonical_endpoint(written) == base
    assert not same_endpoint(base, f"{scheme}://{host}{path}/elsewhere")
    state = ReasoningState("p", "m", "signature", "s", endpoint=written)
    assert state.may_go_to(Target("p", "m", base))


def test_the_endpoint_problem_names_no_credentials() -> None:
    """A state left out for another endpoint is named with both endpoints, without the user
    info (a password in a proxy URL) or query either may hold."""
    from reasoning_stream.conversation import PassbackPolicy

    made_at = "https://user:hunter22@proxy-a.example.com/v1?key=sekrit"
    state = ReasoningState("acme", "m", "signature", "sig", endpoint=made_at)
    record = TurnRecord("acme", "m", made_at, states=(state,))
    data = Conversation().add_user("Hi").to_json()
    data["messages"].append({"role": "assistant", "content": "Hello"})
    data["records"].append(record.to_json())
    conversation = Conversation.from_json(data).add_user("Again")

    @dataclass(frozen=True)
    class Keeping(Target):
        passback: PassbackPolicy | None = None

    elsewhere = "https://admin:pw-9999@proxy-b.example.com"
    pipe = Keeping("acme", "m", elsewhere, PassbackPolicy(states="always"))
    [problem] = conversation.preflight(pipe)
    assert (problem.index, problem.code) == (1, "state_other_endpoint")
    assert "proxy-a.example.com/v1" in problem.message
    assert "proxy-b.example.com" in problem.message
    for secret in ("hunter22", "sekrit", "pw-9999", "user:", "admin"):
        assert secret not in problem.message
