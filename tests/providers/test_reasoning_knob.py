"""``reasoning=``: one knob on every pipe, mapped into each provider's native request."""

from __future__ import annotations

import json
import warnings
from typing import Any

import openai
import pytest

from reasoning_stream.providers import (
    AnthropicPipe,
    BedrockPipe,
    GeminiPipe,
    OllamaPipe,
    OpenAIChatPipe,
    OpenAIResponsesPipe,
    OpenRouterPipe,
)
from reasoning_stream.providers._pipe import ProviderPipe
from reasoning_stream.testing import Transcript, WireServer


def make(cls: type[ProviderPipe], model: str, **options: Any) -> ProviderPipe:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(model, **options)


@pytest.mark.parametrize(
    ("cls", "model", "options", "expected"),
    [
        (OpenAIChatPipe, "o4-mini", {}, {"reasoning_effort": "high"}),
        (OpenAIChatPipe, "qwen3-32b", {}, {"chat_template_kwargs": {"enable_thinking": True}}),
        (OpenAIResponsesPipe, "o4-mini", {}, {"reasoning": {"summary": "auto", "effort": "high"}}),
        (OpenRouterPipe, "anthropic/claude-sonnet-4", {}, {"reasoning": {"effort": "high"}}),
        (
            AnthropicPipe,
            "claude-sonnet-4-5",
            {},
            {"thinking": {"type": "enabled", "budget_tokens": 16000}, "max_tokens": 20096},
        ),
        (
            GeminiPipe,
            "gemini-2.5-flash",
            {},
            {
                "generationConfig": {
                    "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 16384}
                }
            },
        ),
        (OllamaPipe, "gpt-oss:20b", {}, {"think": "high"}),
        (
            BedrockPipe,
            "anthropic.claude-sonnet-4-5",
            {"region_name": "us-east-1"},
            {
                "additionalModelRequestFields": {
                    "thinking": {"type": "enabled", "budget_tokens": 16000}
                },
                "inferenceConfig": {"maxTokens": 20096},
            },
        ),
    ],
)
def test_high_effort_becomes_the_native_parameter(
    cls: type[ProviderPipe], model: str, options: dict[str, Any], expected: dict[str, Any]
) -> None:
    pipe = make(cls, model, reasoning="high", **options)
    request = pipe.build_request("hi")
    for key, value in expected.items():
        assert request[key] == value, key
    assert (
        pipe.reasoning_plan().params.items() <= {**request}.items() or pipe.reasoning_plan().params
    )


def test_none_leaves_the_request_alone() -> None:
    assert OpenAIChatPipe("o4-mini").build_request("hi") == OpenAIChatPipe(
        "o4-mini", reasoning=None
    ).build_request("hi")
    assert "reasoning_effort" not in OpenAIChatPipe("o4-mini").build_request("hi")


@pytest.mark.parametrize("bad", ["extreme", -5, 1.5, "HIGH"])
def test_invalid_values_raise_at_construction(bad: Any) -> None:
    with pytest.raises(ValueError, match="reasoning"):
        OpenAIChatPipe("o4-mini", reasoning=bad)


def test_extra_body_still_wins() -> None:
    pipe = OpenAIChatPipe("o4-mini", reasoning="low", extra_body={"reasoning_effort": "medium"})
    assert pipe.build_request("hi")["reasoning_effort"] == "medium"


def test_plan_shows_native_parameters_and_warnings_without_calling_anything() -> None:
    plan = make(AnthropicPipe, "claude-sonnet-4-5", reasoning=4000).reasoning_plan()
    assert plan.params["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert any("temperature" in warning for warning in plan.warnings)


def test_a_model_that_cannot_reason_warns_once_and_sends_nothing() -> None:
    with pytest.warns(UserWarning, match="gpt-4o-knob-test"):
        pipe = OpenAIChatPipe("gpt-4o-knob-test", reasoning="high")
        request = pipe.build_request("hi")
    assert "reasoning_effort" not in request
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OpenAIChatPipe("gpt-4o-knob-test", reasoning="high").build_request("hi")


def test_raw_and_knob_settings_conflict() -> None:
    from reasoning_stream import UsageError

    with pytest.raises(UsageError):
        AnthropicPipe("claude-sonnet-4-5", thinking={"type": "enabled"}, reasoning="high")
    with pytest.raises(UsageError):
        OllamaPipe("qwen3", think=True, reasoning="high")


def test_the_knob_reaches_the_wire() -> None:
    with WireServer(Transcript.load("openai_chat_reasoning_content")) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        pipe = OpenAIChatPipe("o3", client=client, reasoning="low")
        pipe.run("hi")
        sent = json.loads(server.requests[-1].body)
    assert sent["reasoning_effort"] == "low"
    assert sent["model"] == "o3"
