"""Bedrock and gateway ids resolve to the underlying model's profile (API.md section 12)."""

from __future__ import annotations

import re
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import profiles
from tests.helpers import examples

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


CLAUDE_IDS = [
    "claude-opus-5",
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
    "claude-fable-5-1",
    "claude-sonnet-4-5-20250929",
    "claude-opus-4-1-20250805",
    "claude-3-7-sonnet-20250219",
    "claude-3-5-haiku-20241022",
]


@settings(max_examples=examples(200), deadline=None)
@given(
    model=st.sampled_from(CLAUDE_IDS),
    geo=st.sampled_from(["", "us.", "eu.", "apac.", "jp.", "au.", "us-gov.", "global."]),
    version=st.sampled_from(["", "-v1:0", "-v2:0", "-v1", ":0"]),
    arn=st.sampled_from(["", "foundation-model", "inference-profile"]),
    region=st.sampled_from(["us-east-1", "eu-central-1", "ap-northeast-1"]),
)
def test_any_bedrock_wrapping_of_a_claude_id_is_that_claude(
    model: str, geo: str, version: str, arn: str, region: str
) -> None:
    wire = f"{geo}anthropic.{model}{version}"
    if arn == "foundation-model":
        wire = f"arn:aws:bedrock:{region}::foundation-model/anthropic.{model}{version}"
    elif arn:
        wire = f"arn:aws:bedrock:{region}:123456789012:inference-profile/{wire}"
    assert profiles.lookup("bedrock", wire) == profiles.lookup("anthropic", model)


@settings(max_examples=examples(200), deadline=None)
@given(model=st.sampled_from(CLAUDE_IDS), dots=st.lists(st.booleans(), min_size=4, max_size=4))
def test_gateway_ids_take_dots_or_hyphens_in_versions(model: str, dots: list[bool]) -> None:
    # Write each digit-hyphen-digit joint as a dot or a hyphen, independently.
    parts = re.split(r"(?<=\d)-(?=\d)", model)
    written = parts[0]
    for index, part in enumerate(parts[1:]):
        written += ("." if dots[index % len(dots)] else "-") + part
    expected = profiles.lookup("anthropic", model)
    assert profiles.lookup("openrouter", f"anthropic/{written}") == expected
    assert profiles.lookup("anthropic", written) == expected
