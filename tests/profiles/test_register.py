"""register, unregister, registered, and the warning for a model no row knows."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import UsageError, profiles
from tests.helpers import examples


def test_register_a_model_in_one_call() -> None:
    profile = profiles.register(
        "anthropic", "claude-next-*", base="claude-opus-5", efforts=("low", "high", "max")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = profiles.lookup("anthropic", "claude-next-1")
    assert found == profile.__class__(**{**_fields(profile), "pattern": "claude-next-*"})
    opus = profiles.lookup("anthropic", "claude-opus-5")
    assert found.efforts == ("low", "high", "max")
    assert (found.thinking, found.passback, found.sources) == (
        opus.thinking,
        opus.passback,
        opus.sources,
    )
    assert profiles.registered() == (("anthropic", "claude-next-*"),)


def _fields(profile: profiles.ModelProfile) -> dict[str, object]:
    return {name: getattr(profile, name) for name in profile.__dataclass_fields__}


def test_registering_again_replaces_and_unregister_removes() -> None:
    profiles.register("openai-chat", "my-model", thinking="never", efforts=())
    profiles.register("openai-chat", "my-model", thinking="always", efforts=("high",))
    assert profiles.registered() == (("openai-chat", "my-model"),)
    assert profiles.lookup("openai-chat", "my-model").thinking == "always"
    assert profiles.unregister("openai-chat", "my-model") is True
    assert profiles.unregister("openai-chat", "my-model") is False
    assert profiles.registered() == ()


def test_registered_lists_patterns_as_written_and_unregister_takes_either_form() -> None:
    profiles.register("OpenRouter", "acme/Model-2.5*", thinking="always")
    assert profiles.registered() == (("openrouter", "acme/Model-2.5*"),)
    assert profiles.lookup("openrouter", "acme/model-2-5-mini").thinking == "always"
    assert profiles.unregister("openrouter", "acme/model-2-5*") is True
    assert profiles.registered() == ()


def test_unregister_brings_the_catalogue_row_back() -> None:
    before = profiles.lookup("gemini", "gemini-2.5-flash")
    profiles.register("gemini", "gemini-2.5-flash", base="gemini-2.5-flash", thinking="never")
    assert profiles.lookup("gemini", "gemini-2.5-flash").thinking == "never"
    profiles.unregister("gemini", "gemini-2.5-flash")
    assert profiles.lookup("gemini", "gemini-2.5-flash") == before


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"thinking": "sometimes"}, "thinking='sometimes'"),
        ({"efforts": ("high", "low")}, "least first"),
        ({"efforts": ("huge",)}, "'huge'"),
        ({"efforts": "high"}, "list of strings"),
        ({"displays": ("full",), "display_default": "omitted"}, "display_default"),
        ({"passback": "sometimes"}, "passback"),
        ({"binding": ("planet",)}, "binding"),
        ({"colour": "red"}, "no profile field ['colour']"),
        ({"sources": [("https://example.invalid/docs", "yesterday")]}, "YYYY-MM-DD"),
        ({"inline": {"tags": ["think"], "opens": True}}, "opens_inside"),
        ({"inline": {"tags": ["thought"], "at_start": "yes"}}, "inline.at_start"),
    ],
)
def test_bad_fields_name_what_to_fix(fields: dict[str, object], named: str) -> None:
    with pytest.raises(UsageError, match=named.replace("[", r"\[").replace("]", r"\]")) as info:
        profiles.register("anthropic", "claude-bad-*", **fields)
    assert "profiles.register('anthropic', 'claude-bad-*')" in str(info.value)
    assert profiles.registered() == ()


def test_an_unknown_base_is_refused() -> None:
    with pytest.raises(UsageError, match="base='no-such-model'"):
        profiles.register("anthropic", "claude-x", base="no-such-model")


def test_unknown_models_get_the_conservative_profile_and_one_warning() -> None:
    model = "totally-unknown-model-for-the-warning-test"
    with pytest.warns(profiles.UnknownModelWarning) as caught:
        found = profiles.lookup("openai-chat", model)
    assert issubclass(profiles.UnknownModelWarning, UserWarning)
    assert len(caught) == 1
    assert "profiles.register" in str(caught[0].message)
    assert model in str(caught[0].message)
    assert (
        found.thinking,
        found.efforts,
        found.passback,
        found.reads_from,
        found.binding,
        found.known,
    ) == ("optional", ("low", "medium", "high"), "tool_loop", (), (), False)
    # Once per (provider, model) in a process: not again for the same pair...
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert profiles.lookup("openai-chat", model) == found
    # ...but again for the same model on another provider.
    with pytest.warns(profiles.UnknownModelWarning):
        profiles.lookup("openai-responses", model)


def test_lookup_never_raises() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for provider, model in [("", ""), ("bedrock", "arn:aws:bedrock:::"), ("x", "[")]:
            assert isinstance(profiles.lookup(provider, model), profiles.ModelProfile)
        assert isinstance(
            profiles.lookup("openai-chat", "qwen3", base_url="http://[::1"), profiles.ModelProfile
        )


LEVELS = ["none", "minimal", "low", "medium", "high", "xhigh", "max"]


@settings(max_examples=examples(200), deadline=None)
@given(
    documented=st.lists(st.sampled_from(LEVELS), unique=True).map(
        lambda found: tuple(sorted(found, key=LEVELS.index))
    ),
    asked=st.sampled_from(LEVELS),
)
def test_the_nearest_documented_level_and_the_lower_on_a_tie(
    documented: tuple[str, ...], asked: str
) -> None:
    profile = profiles.ModelProfile(efforts=documented)
    if not documented:
        assert profile.nearest_effort(asked) is None
        return
    # Reference: walk outwards from the asked level, the lower side first.
    here = LEVELS.index(asked)
    for distance in range(len(LEVELS)):
        below, above = here - distance, here + distance
        if below >= 0 and LEVELS[below] in documented:
            expected = LEVELS[below]
            break
        if above < len(LEVELS) and LEVELS[above] in documented:
            expected = LEVELS[above]
            break
    assert profile.nearest_effort(asked) == expected


def test_nearest_effort_refuses_a_level_that_does_not_exist() -> None:
    with pytest.raises(UsageError, match="'huge' is none of none, minimal"):
        profiles.lookup("anthropic", "claude-opus-5").nearest_effort("huge")
