"""Bedrock and gateway ids resolve to the underlying model's profile (API.md section 12)."""

from __future__ import annotations

import warnings

import pytest

from reasoning_stream import profiles

OPUS_5 = profiles.lookup("anthropic", "claude-opus-5")
OPUS_5_5 = profiles.lookup("anthropic", "claude-opus-5-5")
SONNET_4_5 = profiles.lookup("anthropic", "claude-sonnet-4-5-20250929")


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("anthropic.claude-opus-5", OPUS_5),
        ("anthropic.claude-opus-5-v1:0", OPUS_5),
        ("anthropic.claude-opus-5-v1", OPUS_5),
        ("us.anthropic.claude-opus-5-v1:0", OPUS_5),
        ("eu.anthropic.claude-opus-5-v1:0", OPUS_5),
        ("apac.anthropic.claude-opus-5-v1:0", OPUS_5),
        ("us-gov.anthropic.claude-opus-5-v1:0", OPUS_5),
        ("global.anthropic.claude-opus-5-v1:0", OPUS_5),
        ("arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-opus-5-v1:0", OPUS_5),
        (
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/"
            "global.anthropic.claude-opus-5-v1:0",
            OPUS_5,
        ),
        ("us.anthropic.claude-opus-5-5-v1:0", OPUS_5_5),
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", SONNET_4_5),
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", SONNET_4_5),
    ],
)
def test_bedrock_ids_resolve_to_the_claude_profile(
    model: str, expected: profiles.ModelProfile
) -> None:
    assert profiles.lookup("bedrock", model) == expected


@pytest.mark.parametrize(
    ("model", "thinking", "efforts"),
    [
        ("amazon.nova-2-lite-v1:0", "optional", ("low", "medium", "high")),
        ("us.amazon.nova-2-lite-v1:0:256k", "optional", ("low", "medium", "high")),
        ("amazon.nova-pro-v1:0", "never", ()),
        ("openai.gpt-oss-120b-1:0", "always", ("low", "medium", "high")),
        ("us.deepseek.r1-v1:0", "always", ()),
        ("meta.llama3-70b-instruct-v1:0", "never", ()),
        ("mistral.magistral-small-2509", "always", ()),
    ],
)
def test_bedrock_families(model: str, thinking: str, efforts: tuple[str, ...]) -> None:
    found = profiles.lookup("bedrock", model)
    assert (found.thinking, found.efforts) == (thinking, efforts)


APP_PROFILE = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5"


def test_an_application_inference_profile_arn_resolves_once_registered() -> None:
    # The ARN names no model (issue 23: Claude behind one got no policy): lookup cannot know
    # it, says so once, and one register call with the model it routes to fixes that.
    with pytest.warns(profiles.UnknownModelWarning, match="application inference profile"):
        first = profiles.lookup("bedrock", APP_PROFILE)
    assert not first.known
    profiles.register("bedrock", APP_PROFILE, base="us.anthropic.claude-opus-5-v1:0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = profiles.lookup("bedrock", APP_PROFILE)
    assert found.known
    assert (found.thinking, found.passback, found.efforts) == (
        OPUS_5.thinking,
        OPUS_5.passback,
        OPUS_5.efforts,
    )


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("anthropic/claude-opus-5.5", OPUS_5_5),
        ("anthropic/claude-opus-5-5", OPUS_5_5),
        ("Anthropic/Claude-Opus-5.5", OPUS_5_5),
        ("anthropic/claude-opus-5.5:thinking", OPUS_5_5),
        ("anthropic/claude-opus-5", OPUS_5),
        ("anthropic/claude-sonnet-4.5", SONNET_4_5),
    ],
)
def test_openrouter_ids_resolve_with_dots_or_hyphens(
    model: str, expected: profiles.ModelProfile
) -> None:
    assert profiles.lookup("openrouter", model) == expected


def test_openrouter_resolves_other_vendors_to_their_models() -> None:
    assert profiles.lookup("openrouter", "google/gemini-2.5-pro") == profiles.lookup(
        "gemini", "gemini-2.5-pro"
    )
    assert profiles.lookup("openrouter", "deepseek/deepseek-r1").thinking == "always"
    # Claude Opus 4.5+, Sonnet 4.6+ and 5.x keep earlier turns' thinking there too (issue 23).
    for model in (
        "anthropic/claude-opus-4.5",
        "anthropic/claude-sonnet-4.6",
        "anthropic/claude-sonnet-5",
    ):
        assert profiles.lookup("openrouter", model).passback == "always", model
    assert profiles.lookup("openrouter", "anthropic/claude-sonnet-4.5").passback == "tool_loop"


def test_vendor_prefixed_open_weights_resolve_to_their_model() -> None:
    distill = profiles.lookup("openai-chat", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B")
    assert distill.inline == profiles.Inline(("think",), opens_inside=True)
    assert profiles.lookup("gemini", "models/gemini-3-pro-preview").efforts == ("low", "high")
    assert profiles.lookup("ollama", "gpt-oss:20b").efforts == ("low", "medium", "high")
