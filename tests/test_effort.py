"""plan_reasoning: the whole provider-by-setting table, validation, warnings, merge_params."""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import _effort, profiles
from reasoning_stream._effort import (
    PROVIDERS,
    REASONING_LEVELS,
    Reasoning,
    ReasoningPlan,
    ReasoningWarning,
    effort_table,
    merge_params,
    plan_reasoning,
)
from reasoning_stream.profiles import ModelProfile, register, unregister
from tests.helpers import examples

# Every test starts with no (provider, model) warned yet; the table tests do not need to hear
# the one-time warnings, which test_*_warns_once checks on its own.
pytestmark = [
    pytest.mark.filterwarnings("ignore::reasoning_stream._effort.ReasoningWarning"),
    pytest.mark.filterwarnings("ignore::reasoning_stream.profiles.UnknownModelWarning"),
]


@pytest.fixture(autouse=True)
def _fresh_warning_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_effort, "_warned", set())


# --- the table ------------------------------------------------------------------------------


class _Nothing:
    """Expected: no fields and ``supported=False``."""

    def __repr__(self) -> str:
        return "NOTHING"


NOTHING = _Nothing()
Expected = Mapping[str, Any] | _Nothing

# The settings every row pins, in this order. The budgets fall on the three nearest levels.
SETTINGS: tuple[Reasoning, ...] = (False, True, "low", "medium", "high", 2000, 6000, 20000)


def effort(value: str) -> dict[str, Any]:
    return {"reasoning_effort": value}


def responses(value: str) -> dict[str, Any]:
    return {"reasoning": {"effort": value}}


def qwen(on: bool) -> dict[str, Any]:
    return {"chat_template_kwargs": {"enable_thinking": on}}


def budget(tokens: int, max_tokens: int | None = None) -> dict[str, Any]:
    return {
        "thinking": {"type": "enabled", "budget_tokens": tokens},
        "max_tokens": max_tokens if max_tokens is not None else tokens + 4096,
    }


def adaptive(level: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"thinking": {"type": "adaptive"}}
    if level is not None:
        params["output_config"] = {"effort": level}
    return params


DISABLED = {"thinking": {"type": "disabled"}}


def on_bedrock(params: Mapping[str, Any]) -> dict[str, Any]:
    fields = {key: value for key, value in params.items() if key != "max_tokens"}
    nested: dict[str, Any] = {"additionalModelRequestFields": fields} if fields else {}
    if "max_tokens" in params:
        nested["inferenceConfig"] = {"maxTokens": params["max_tokens"]}
    return nested


def nova(level: str | None) -> dict[str, Any]:
    config = (
        {"type": "disabled"} if level is None else {"type": "enabled", "maxReasoningEffort": level}
    )
    return {"additionalModelRequestFields": {"reasoningConfig": config}}


def thinking_config(**config: Any) -> dict[str, Any]:
    return {"generationConfig": {"thinkingConfig": config}}


def gemini_budget(tokens: int) -> dict[str, Any]:
    if tokens == 0:
        return thinking_config(thinkingBudget=0)
    return thinking_config(thinkingBudget=tokens, includeThoughts=True)


def gemini_level(level: str) -> dict[str, Any]:
    return thinking_config(thinkingLevel=level, includeThoughts=True)


def row(*expected: Expected) -> tuple[Expected, ...]:
    assert len(expected) == len(SETTINGS)
    return expected


def effort_row(off: Expected, put: Any = effort) -> tuple[Expected, ...]:
    return row(
        off,
        put("medium"),
        put("low"),
        put("medium"),
        put("high"),
        put("low"),
        put("medium"),
        put("high"),
    )


ALWAYS_REASONS = row(NOTHING, {}, NOTHING, NOTHING, NOTHING, NOTHING, NOTHING, NOTHING)
CANNOT_REASON = row(*[NOTHING] * len(SETTINGS))

BUDGET_CLAUDE = row(
    DISABLED,
    budget(8000),
    budget(2048),
    budget(8000),
    budget(16000),
    budget(2000),
    budget(6000),
    budget(20000),
)
ADAPTIVE_CLAUDE = row(
    DISABLED,
    adaptive(),
    adaptive("low"),
    adaptive("medium"),
    adaptive("high"),
    budget(2000),
    budget(6000),
    budget(20000),
)
ADAPTIVE_ONLY_CLAUDE = row(
    {},
    adaptive(),
    adaptive("low"),
    adaptive("medium"),
    adaptive("high"),
    adaptive("low"),
    adaptive("medium"),
    adaptive("high"),
)

GEMINI_BUDGETS = (
    gemini_budget(-1),
    gemini_budget(1024),
    gemini_budget(4096),
    gemini_budget(16384),
    gemini_budget(2000),
    gemini_budget(6000),
    gemini_budget(20000),
)

TABLE: dict[tuple[str, str], tuple[Expected, ...]] = {
    # openai-chat
    ("openai-chat", "o3"): effort_row(NOTHING),
    ("openai-chat", "o4-mini-2025-04-16"): effort_row(NOTHING),
    ("openai-chat", "gpt-5"): effort_row(effort("minimal")),
    ("openai-chat", "gpt-5-mini"): effort_row(effort("minimal")),
    ("openai-chat", "gpt-5.1"): effort_row(effort("none")),
    ("openai-chat", "gpt-5.2-2025-12-11"): effort_row(effort("none")),
    ("openai-chat", "gpt-5-codex"): effort_row(NOTHING),
    ("openai-chat", "openai/gpt-oss-120b"): effort_row(NOTHING),
    ("openai-chat", "meta-llama/Llama-3.3-70B-Instruct"): effort_row(NOTHING),
    ("openai-chat", "Qwen/Qwen3-32B"): row(qwen(False), *[qwen(True)] * 7),
    ("openai-chat", "qwen3.5-plus"): row(qwen(False), *[qwen(True)] * 7),
    ("openai-chat", "deepseek-reasoner"): ALWAYS_REASONS,
    # DeepSeek's API: a thinking switch and reasoning_effort (rule 9 of issue #11).
    ("openai-chat", "deepseek-chat"): row(
        {"thinking": {"type": "disabled"}},
        {"thinking": {"type": "enabled"}},
        *(
            {"thinking": {"type": "enabled"}, "reasoning_effort": level}
            for level in ("low", "medium", "high", "low", "medium", "high")
        ),
    ),
    ("openai-chat", "kimi-k2.5"): row(
        {"thinking": {"type": "disabled"}}, *[{"thinking": {"type": "enabled"}}] * 7
    ),
    ("openai-chat", "moonshotai/Kimi-K2-Thinking"): ALWAYS_REASONS,
    ("openai-chat", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"): ALWAYS_REASONS,
    ("openai-chat", "Qwen/QwQ-32B"): ALWAYS_REASONS,
    ("openai-chat", "Qwen/Qwen3-235B-A22B-Thinking-2507"): ALWAYS_REASONS,
    ("openai-chat", "o1-mini"): ALWAYS_REASONS,
    # gpt-5 pro documents one effort, high (its profile row, platform.openai.com/docs/guides/
    # reasoning): every level is sent as high, which the model takes (it used to send nothing).
    ("openai-chat", "gpt-5-pro"): row(NOTHING, *[effort("high")] * 7),
    ("openai-chat", "gpt-4o"): CANNOT_REASON,
    ("openai-chat", "gpt-4.1-mini"): CANNOT_REASON,
    ("openai-chat", "gpt-3.5-turbo"): CANNOT_REASON,
    ("openai-chat", "gpt-5-chat-latest"): CANNOT_REASON,
    ("openai-chat", "Qwen/Qwen2.5-72B-Instruct"): CANNOT_REASON,
    ("openai-chat", "Qwen/Qwen3-235B-A22B-Instruct-2507"): CANNOT_REASON,
    # openai-responses
    ("openai-responses", "o3-pro"): effort_row(NOTHING, responses),
    ("openai-responses", "gpt-5-nano"): effort_row(responses("minimal"), responses),
    ("openai-responses", "gpt-5.1"): effort_row(responses("none"), responses),
    ("openai-responses", "gpt-5.1-codex-max"): effort_row(NOTHING, responses),
    ("openai-responses", "gpt-oss-20b"): effort_row(NOTHING, responses),
    ("openai-responses", "Qwen/Qwen3-8B"): effort_row(NOTHING, responses),
    ("openai-responses", "gpt-5-pro"): row(NOTHING, *[responses("high")] * 7),
    ("openai-responses", "gpt-4.1"): CANNOT_REASON,
    # openrouter
    # DeepSeek-R1 always reasons (api-docs.deepseek.com/guides/reasoning_model, its profile
    # row): False is refused with a warning instead of sending enabled: false.
    ("openrouter", "deepseek/deepseek-r1"): row(
        NOTHING,
        {"reasoning": {"enabled": True}},
        {"reasoning": {"effort": "low"}},
        {"reasoning": {"effort": "medium"}},
        {"reasoning": {"effort": "high"}},
        {"reasoning": {"max_tokens": 2000}},
        {"reasoning": {"max_tokens": 6000}},
        {"reasoning": {"max_tokens": 20000}},
    ),
    ("openrouter", "openai/gpt-4o-mini"): CANNOT_REASON,
    ("openrouter", "anthropic/claude-3.5-sonnet"): CANNOT_REASON,
    ("openrouter", "google/gemini-2.0-flash-001"): CANNOT_REASON,
    # anthropic
    ("anthropic", "claude-3-7-sonnet-20250219"): BUDGET_CLAUDE,
    ("anthropic", "claude-sonnet-4-20250514"): BUDGET_CLAUDE,
    ("anthropic", "claude-opus-4-1"): BUDGET_CLAUDE,
    ("anthropic", "claude-haiku-4-5"): BUDGET_CLAUDE,
    ("anthropic", "claude-opus-4-5-20251101"): BUDGET_CLAUDE,
    ("anthropic", "claude-x"): BUDGET_CLAUDE,
    ("anthropic", "claude-sonnet-4-6"): ADAPTIVE_CLAUDE,
    ("anthropic", "claude-opus-4-6"): ADAPTIVE_CLAUDE,
    ("anthropic", "claude-opus-4-7"): ADAPTIVE_ONLY_CLAUDE,
    # Rule 9 of issue #11: 5.x thinks by default; Opus 5 and Sonnet 5 accept "disabled"
    # (at effort high or below), Opus 5.5, Mythos and Fable cannot turn thinking off.
    ("anthropic", "claude-sonnet-5"): row(
        {"thinking": {"type": "disabled"}}, *ADAPTIVE_ONLY_CLAUDE[1:]
    ),
    ("anthropic", "claude-opus-5"): row(
        {"thinking": {"type": "disabled"}}, *ADAPTIVE_ONLY_CLAUDE[1:]
    ),
    ("anthropic", "claude-opus-5-5"): row(NOTHING, *ADAPTIVE_ONLY_CLAUDE[1:]),
    ("anthropic", "claude-mythos-preview"): row(NOTHING, *ADAPTIVE_ONLY_CLAUDE[1:]),
    ("anthropic", "claude-3-5-sonnet-latest"): CANNOT_REASON,
    ("anthropic", "claude-3-5-haiku-20241022"): CANNOT_REASON,
    ("anthropic", "claude-3-opus-20240229"): CANNOT_REASON,
    ("anthropic", "claude-3-haiku-20240307"): CANNOT_REASON,
    ("anthropic", "claude-2.1"): CANNOT_REASON,
    # bedrock
    ("bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0"): row(
        *[e if isinstance(e, _Nothing) else on_bedrock(e) for e in BUDGET_CLAUDE]
    ),
    ("bedrock", "anthropic.claude-opus-4-6-v1"): row(
        *[e if isinstance(e, _Nothing) else on_bedrock(e) for e in ADAPTIVE_CLAUDE]
    ),
    ("bedrock", "global.anthropic.claude-opus-4-7"): row(
        *[e if isinstance(e, _Nothing) else on_bedrock(e) for e in ADAPTIVE_ONLY_CLAUDE]
    ),
    ("bedrock", "anthropic.claude-3-5-sonnet-20240620-v1:0"): CANNOT_REASON,
    ("bedrock", "anthropic.claude-v2:1"): CANNOT_REASON,
    ("bedrock", "us.amazon.nova-2-lite-v1:0"): row(
        nova(None),
        nova("medium"),
        nova("low"),
        nova("medium"),
        nova("high"),
        nova("low"),
        nova("medium"),
        nova("high"),
    ),
    ("bedrock", "openai.gpt-oss-120b-1:0"): effort_row(
        NOTHING, lambda v: {"additionalModelRequestFields": {"reasoning_effort": v}}
    ),
    ("bedrock", "us.deepseek.r1-v1:0"): ALWAYS_REASONS,
    ("bedrock", "amazon.nova-pro-v1:0"): CANNOT_REASON,
    ("bedrock", "amazon.titan-text-express-v1"): CANNOT_REASON,
    ("bedrock", "meta.llama3-1-70b-instruct-v1:0"): CANNOT_REASON,
    ("bedrock", "mistral.mistral-large-2407-v1:0"): CANNOT_REASON,
    ("bedrock", "cohere.command-r-plus-v1:0"): CANNOT_REASON,
    # An unknown family: nothing sent and supported=False, but no "cannot reason" warning.
    ("bedrock", "qwen.qwen3-32b-v1:0"): CANNOT_REASON,
    # gemini
    ("gemini", "gemini-2.5-pro"): row(thinking_config(thinkingBudget=128), *GEMINI_BUDGETS),
    ("gemini", "models/gemini-2.5-flash"): row(gemini_budget(0), *GEMINI_BUDGETS),
    ("gemini", "gemini-2.5-flash-lite"): row(gemini_budget(0), *GEMINI_BUDGETS),
    ("gemini", "gemini-flash-latest"): row(gemini_budget(0), *GEMINI_BUDGETS),
    # Gemini 3 Pro documents low and high (ai.google.dev/gemini-api/docs/thinking): medium is
    # as near to either, and API.md section 12 settles a tie on the lower level.
    ("gemini", "gemini-3-pro-preview"): row(
        thinking_config(thinkingLevel="low"),
        thinking_config(includeThoughts=True),
        gemini_level("low"),
        gemini_level("low"),
        gemini_level("high"),
        gemini_level("low"),
        gemini_level("low"),
        gemini_level("high"),
    ),
    ("gemini", "gemini-3.1-pro-preview"): row(
        thinking_config(thinkingLevel="low"),
        thinking_config(includeThoughts=True),
        gemini_level("low"),
        gemini_level("medium"),
        gemini_level("high"),
        gemini_level("low"),
        gemini_level("medium"),
        gemini_level("high"),
    ),
    ("gemini", "gemini-3-flash-preview"): row(
        thinking_config(thinkingLevel="minimal"),
        thinking_config(includeThoughts=True),
        gemini_level("low"),
        gemini_level("medium"),
        gemini_level("high"),
        gemini_level("low"),
        gemini_level("medium"),
        gemini_level("high"),
    ),
    ("gemini", "gemini-2.0-flash-thinking-exp"): ALWAYS_REASONS,
    ("gemini", "gemini-2.0-flash"): CANNOT_REASON,
    ("gemini", "gemini-1.5-pro"): CANNOT_REASON,
    ("gemini", "gemma-3-27b-it"): CANNOT_REASON,
    # ollama
    ("ollama", "gpt-oss:20b"): effort_row(NOTHING, lambda v: {"think": v}),
    ("ollama", "qwen3:8b"): row({"think": False}, *[{"think": True}] * 7),
    # DeepSeek-R1 always reasons (its profile row, ollama.com/blog/thinking): False warns and
    # sends nothing; on, think=True still separates the thinking.
    ("ollama", "deepseek-r1"): row(NOTHING, *[{"think": True}] * 7),
}

# Written out, not read from the module: the providers and the Gemini models that take budgets.
PROVIDER_IDS = (
    "openai-chat",
    "openai-responses",
    "openrouter",
    "anthropic",
    "bedrock",
    "gemini",
    "ollama",
)
GEMINI_BUDGET_MODELS = frozenset(
    {"gemini-2.5-pro", "models/gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-flash-latest"}
)

CASES = [
    pytest.param(provider, model, setting, expected, id=f"{provider}-{model}-{setting!r}")
    for (provider, model), expectations in TABLE.items()
    for setting, expected in zip(SETTINGS, expectations, strict=True)
]


@pytest.mark.parametrize(("provider", "model", "setting", "expected"), CASES)
def test_table(provider: str, model: str, setting: Reasoning, expected: Expected) -> None:
    plan = plan_reasoning(provider, model, setting)
    assert (plan.provider, plan.model, plan.reasoning) == (provider, model, setting)
    if isinstance(expected, _Nothing):
        assert plan.params == {}
        assert not plan.supported
        assert plan.warnings, "a setting that sends nothing must say why"
    else:
        assert plan.params == expected
        assert plan.supported


def test_table_covers_every_provider() -> None:
    assert PROVIDERS == PROVIDER_IDS
    assert {provider for provider, _ in TABLE} == set(PROVIDER_IDS)


@pytest.mark.parametrize(("provider", "model"), list(TABLE))
def test_none_sends_nothing_and_says_whether_the_model_reasons(provider: str, model: str) -> None:
    plan = plan_reasoning(provider, model, None)
    known_to_reason = not isinstance(TABLE[provider, model][SETTINGS.index(True)], _Nothing)
    assert plan == ReasoningPlan(provider, model, None, {}, (), known_to_reason)


@pytest.mark.parametrize(("provider", "model"), list(TABLE))
def test_zero_is_off_for_gemini_budgets_and_an_error_elsewhere(provider: str, model: str) -> None:
    if provider == "gemini" and model in GEMINI_BUDGET_MODELS:
        zero, off = plan_reasoning(provider, model, 0), plan_reasoning(provider, model, False)
        assert (zero.params, zero.warnings) == (off.params, off.warnings)
    else:
        with pytest.raises(ValueError, match="False to turn reasoning off"):
            plan_reasoning(provider, model, 0)


def test_effort_table_is_computed_from_every_planner() -> None:
    """Each row is the planner's own answer for its example model; every provider has rows."""
    table = effort_table()
    assert table.startswith("| provider | models")
    for provider in PROVIDER_IDS:
        assert f"| {provider} |" in table
    assert '`reasoning_effort: "minimal"`' in table  # gpt-5's False, as planned
    assert "`think: false`" in table  # Ollama's False, as planned


def test_effort_table_has_one_row_per_profile_row_and_provider() -> None:
    """The table is profiles.table(): each catalogue row once per provider it names, in
    catalogue order, then the conservative profile where no row matches every model."""
    lines = [line for line in effort_table().splitlines()[2:] if line.startswith("| ")]
    for provider in PROVIDER_IDS:
        mine = [line for line in lines if line.startswith(f"| {provider} |")]
        rows = [row for row in profiles.table() if provider in row.providers]
        catch_all = any("*" in row.patterns for row in rows)
        assert len(mine) == len(rows) + (0 if catch_all else 1), provider
        for line, row in zip(mine, rows, strict=False):
            assert f"`{row.patterns[0]}`" in line.split(" | ")[1], (provider, row.patterns)
        if not catch_all:
            assert "any other model" in mine[-1]


# --- validation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "setting", ["extreme", "HIGH", "None", "ultra", "", -1, -4096, 1.5, 2048.0, [], {}, b"low"]
)
def test_invalid_settings_raise_and_name_the_allowed_values(setting: Any) -> None:
    with pytest.raises(ValueError) as raised:
        plan_reasoning("openai-chat", "o3", setting)
    message = str(raised.value)
    assert repr(setting) in message
    allowed_values = ("None", "True", "False", "'none'", "'minimal'", "'low'", "'medium'")
    for allowed in (*allowed_values, "'high'", "'xhigh'", "'max'", "int"):
        assert allowed in message


def test_unknown_provider_raises_and_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown provider 'azure'") as raised:
        plan_reasoning("azure", "o3", "high")
    for provider in PROVIDER_IDS:
        assert provider in str(raised.value)


@pytest.mark.parametrize("max_tokens", [0, -1, 1.5, True, "4096"])
def test_max_tokens_must_be_a_positive_int(max_tokens: Any) -> None:
    with pytest.raises(ValueError, match="max_tokens must be a positive int"):
        plan_reasoning("anthropic", "claude-sonnet-4-5", "high", max_tokens=max_tokens)


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "claude-opus-4-6", "claude-opus-4-7"])
def test_claude_budgets_below_1024_raise(provider: str, model: str) -> None:
    model = f"anthropic.{model}" if provider == "bedrock" else model
    with pytest.raises(ValueError, match=r"start at 1024 tokens.*allowed:"):
        plan_reasoning(provider, model, 1023)
    assert plan_reasoning(provider, model, 1024).supported


# --- the one-time warning -------------------------------------------------------------------


def test_a_model_that_cannot_reason_warns_once() -> None:
    with pytest.warns(ReasoningWarning, match="'gpt-4o' is not a reasoning model") as first:
        plan = plan_reasoning("openai-chat", "gpt-4o", "high")
    assert len(first) == 1
    assert plan.warnings == (str(first[0].message),)
    assert (plan.params, plan.supported) == ({}, False)

    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        second = plan_reasoning("openai-chat", "gpt-4o", True)
    assert not [w for w in again if issubclass(w.category, ReasoningWarning)]
    # The plan still says so: only the warnings.warn call is once.
    assert second.warnings and "not a reasoning model" in second.warnings[0]


def test_the_warning_is_per_provider_and_model() -> None:
    with pytest.warns(ReasoningWarning):
        plan_reasoning("openai-chat", "gpt-4o", "high")
    with pytest.warns(ReasoningWarning):
        plan_reasoning("openai-chat", "gpt-4o-mini", "high")
    with pytest.warns(ReasoningWarning):
        plan_reasoning("openrouter", "openai/gpt-4o", "high")


def test_the_warning_points_at_the_caller() -> None:
    with pytest.warns(ReasoningWarning) as caught:
        plan_reasoning("anthropic", "claude-3-haiku-20240307", "low")
    assert caught[0].filename == __file__


def test_none_never_warns() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = plan_reasoning("gemini", "gemini-2.0-flash", None)
    assert caught == []
    assert plan.warnings == ()


def test_families_without_a_known_control_say_so_without_the_one_time_warning() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = plan_reasoning("bedrock", "qwen.qwen3-32b-v1:0", "high")
    # No ReasoningWarning: the plan says it. (No catalogue row knows this model, so the first
    # lookup in a process may also give the documented UnknownModelWarning, once.)
    assert [w for w in caught if not issubclass(w.category, profiles.UnknownModelWarning)] == []
    assert plan.warnings and "no known reasoning control" in plan.warnings[0]


# --- what each approximation says -----------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("openai-chat", "o3"),
        ("openai-responses", "gpt-5"),
        ("bedrock", "us.amazon.nova-2-lite-v1:0"),
        ("bedrock", "openai.gpt-oss-20b-1:0"),
        ("gemini", "gemini-3-flash-preview"),
        ("ollama", "gpt-oss:120b"),
        ("anthropic", "claude-opus-4-7"),
    ],
)
def test_a_budget_where_only_levels_exist_says_which_level(provider: str, model: str) -> None:
    plan = plan_reasoning(provider, model, 9000)
    assert any(
        "a budget of 9000 tokens was sent as" in note and "'medium'" in note
        for note in plan.warnings
    )


@pytest.mark.parametrize(
    ("budget", "level"),
    [
        (1, "low"),
        (4095, "low"),
        (4096, "medium"),
        (12287, "medium"),
        (12288, "high"),
        (10**9, "high"),
    ],
)
def test_nearest_level_boundaries(budget: int, level: str) -> None:
    assert plan_reasoning("openai-chat", "o3", budget).params == {"reasoning_effort": level}


@pytest.mark.parametrize("setting", ["low", "medium", "high", 5000])
def test_switch_only_models_say_the_level_became_on(setting: Reasoning) -> None:
    for provider, model, field in [
        ("openai-chat", "Qwen/Qwen3-8B", "enable_thinking=True"),
        ("ollama", "qwen3", "think=True"),
    ]:
        plan = plan_reasoning(provider, model, setting)
        assert len(plan.warnings) == 1
        assert field in plan.warnings[0] and repr(setting) in plan.warnings[0]


@pytest.mark.parametrize(
    ("model", "asked", "sent", "allowed"),
    [
        ("gemini-2.5-flash-lite", 100, 512, "512 to 24576"),
        ("gemini-2.5-flash-lite", 30000, 24576, "512 to 24576"),
        ("gemini-2.5-flash", 25000, 24576, "1 to 24576"),
        ("gemini-2.5-pro", 64, 128, "128 to 32768"),
        ("gemini-2.5-pro", 40000, 32768, "128 to 32768"),
    ],
)
def test_gemini_2_5_budgets_are_clamped_with_a_warning(
    model: str, asked: int, sent: int, allowed: str
) -> None:
    plan = plan_reasoning("gemini", model, asked)
    assert plan.params == gemini_budget(sent)
    assert plan.warnings == (
        f"gemini model {model!r} takes thinking budgets from {allowed} "
        f"tokens; {asked} was sent as {sent}",
    )


@pytest.mark.parametrize(
    ("model", "setting"),
    [
        ("gemini-2.5-pro", False),
        ("gemini-3-pro-preview", False),
        ("gemini-3-flash-preview", False),
        ("gemini-3-pro-preview", "medium"),
    ],
)
def test_gemini_approximations_warn(model: str, setting: Reasoning) -> None:
    assert plan_reasoning("gemini", model, setting).warnings


@pytest.mark.parametrize(
    ("provider", "model", "setting"),
    [
        ("openai-chat", "o3", False),
        ("openai-chat", "deepseek-reasoner", "high"),
        ("openai-chat", "deepseek-reasoner", False),
        ("bedrock", "openai.gpt-oss-20b-1:0", False),
        ("ollama", "gpt-oss:20b", False),
        ("anthropic", "claude-opus-4-7", False),
        ("anthropic", "claude-sonnet-4-6", 3000),
        ("bedrock", "us.amazon.nova-2-lite-v1:0", "high"),
        # GPT-5 always reasons (platform.openai.com/docs/guides/reasoning): minimal is its
        # least effort, not off, and the plan says so.
        ("openai-chat", "gpt-5", False),
    ],
)
def test_every_approximation_or_drop_is_explained(
    provider: str, model: str, setting: Reasoning
) -> None:
    assert plan_reasoning(provider, model, setting).warnings


@pytest.mark.parametrize(
    ("provider", "model", "setting"),
    [
        ("openai-chat", "gpt-5.1", False),
        ("openai-chat", "o3", "high"),
        ("openai-responses", "gpt-5.1", False),
        ("openrouter", "anthropic/claude-sonnet-4.5", 3000),
        ("gemini", "gemini-2.5-flash", False),
        ("gemini", "gemini-3-flash-preview", "medium"),
        ("ollama", "qwen3", False),
        ("anthropic", "claude-sonnet-4-5", False),
        ("bedrock", "us.amazon.nova-2-lite-v1:0", "medium"),
    ],
)
def test_exact_mappings_are_quiet(provider: str, model: str, setting: Reasoning) -> None:
    assert plan_reasoning(provider, model, setting).warnings == ()


@pytest.mark.parametrize("setting", [True, "low", "high", 5000])
@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "claude-sonnet-4-6", "claude-opus-4-7"])
def test_claude_thinking_warns_about_temperature(model: str, setting: Reasoning) -> None:
    assert any(
        "temperature" in note for note in plan_reasoning("anthropic", model, setting).warnings
    )


# --- Claude's max_tokens --------------------------------------------------------------------


def _claude_budget_and_limit(plan: ReasoningPlan) -> tuple[int, int]:
    if plan.provider == "bedrock":
        fields = plan.params["additionalModelRequestFields"]
        return fields["thinking"]["budget_tokens"], plan.params["inferenceConfig"]["maxTokens"]
    return plan.params["thinking"]["budget_tokens"], plan.params["max_tokens"]


@given(
    provider_model=st.sampled_from(
        [
            ("anthropic", "claude-sonnet-4-5"),
            ("anthropic", "claude-sonnet-4-6"),
            ("bedrock", "us.anthropic.claude-sonnet-4-20250514-v1:0"),
        ]
    ),
    setting=st.one_of(st.sampled_from([True, "low", "medium", "high"]), st.integers(1024, 10**6)),
    max_tokens=st.none() | st.integers(1, 10**6),
)
def test_claude_max_tokens_is_always_above_the_budget(
    provider_model: tuple[str, str], setting: Reasoning, max_tokens: int | None
) -> None:
    provider, model = provider_model
    plan = plan_reasoning(provider, model, setting, max_tokens=max_tokens)
    if plan.params.get("thinking", {}).get("type") == "adaptive":
        return  # adaptive thinking has no budget to fit
    spent, limit = _claude_budget_and_limit(plan)
    assert limit > spent
    raised = any("raised to" in note for note in plan.warnings)
    if max_tokens is not None and max_tokens > spent:
        assert (limit, raised) == (max_tokens, False)
    else:
        assert limit == spent + 4096
        assert raised == (max_tokens is not None)


def test_claude_max_tokens_rule_examples() -> None:
    assert plan_reasoning("anthropic", "claude-sonnet-4-5", "high").params["max_tokens"] == 20096
    roomy = plan_reasoning("anthropic", "claude-sonnet-4-5", "high", max_tokens=32000)
    assert roomy.params["max_tokens"] == 32000
    tight = plan_reasoning("anthropic", "claude-sonnet-4-5", "high", max_tokens=16000)
    assert tight.params["max_tokens"] == 20096
    assert tight.warnings[0] == (
        "max_tokens=16000 leaves no room above the thinking budget of 16000 tokens; raised to 20096"
    )


def test_adaptive_claude_leaves_max_tokens_alone() -> None:
    plan = plan_reasoning("anthropic", "claude-opus-4-6", "high", max_tokens=1000)
    assert "max_tokens" not in plan.params


# --- the plan object ------------------------------------------------------------------------


def test_plan_is_frozen() -> None:
    plan = plan_reasoning("ollama", "qwen3", True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.params = {}  # type: ignore[misc]


def test_plans_do_not_share_params() -> None:
    first = plan_reasoning("gemini", "gemini-2.5-flash", "high")
    first.params["generationConfig"]["thinkingConfig"]["thinkingBudget"] = 1
    assert plan_reasoning("gemini", "gemini-2.5-flash", "high").params == gemini_budget(16384)


def test_levels_constant() -> None:
    assert REASONING_LEVELS == ("none", "minimal", "low", "medium", "high", "xhigh", "max")
    assert REASONING_LEVELS == profiles.LEVELS


# --- merge_params ---------------------------------------------------------------------------


def test_merge_params_into_real_requests() -> None:
    body = {"model": "o3", "reasoning": {"summary": "auto"}, "input": [{"role": "user"}]}
    merged = merge_params(body, plan_reasoning("openai-responses", "o3", "high").params)
    assert merged["reasoning"] == {"summary": "auto", "effort": "high"}
    assert merged["input"] is body["input"]

    request = {"modelId": "m", "inferenceConfig": {"temperature": 1.0, "maxTokens": 100}}
    plan = plan_reasoning("bedrock", "anthropic.claude-sonnet-4-5", "low", max_tokens=100)
    assert merge_params(request, plan.params) == {
        "modelId": "m",
        "inferenceConfig": {"temperature": 1.0, "maxTokens": 6144},
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 2048}},
    }


KEYS = st.sampled_from(["a", "b", "c", "d"])
LEAVES = st.integers(-3, 3) | st.text(max_size=2) | st.none() | st.lists(st.integers(), max_size=2)
NESTED = st.dictionaries(
    KEYS,
    st.recursive(LEAVES, lambda inner: st.dictionaries(KEYS, inner, max_size=3), max_leaves=8),
    max_size=4,
)


def _leaves(tree: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[Any, ...]]:
    for key, value in tree.items():
        if isinstance(value, Mapping):
            yield from _leaves(value, (*path, key))
        else:
            yield (*path, key), value


def _overridden(path: tuple[str, ...], params: Mapping[str, Any]) -> bool:
    """Whether ``params`` replaces the request's leaf at ``path`` (or a mapping above it)."""
    node: Any = params
    for depth, key in enumerate(path, start=1):
        if key not in node:
            return False
        node = node[key]
        if not isinstance(node, Mapping) or depth == len(path):
            return True
    return False


def _frozen(leaves: Iterator[tuple[Any, ...]]) -> list[str]:
    return sorted(repr(leaf) for leaf in leaves)


@given(request=NESTED, params=NESTED)
def test_merge_params_law(request: dict[str, Any], params: dict[str, Any]) -> None:
    """The result holds every params leaf and every request leaf params does not replace."""
    request_before, params_before = copy.deepcopy(request), copy.deepcopy(params)
    merged = merge_params(request, params)
    assert (request, params) == (request_before, params_before)

    expected = list(_leaves(params)) + [
        (path, value) for path, value in _leaves(request) if not _overridden(path, params)
    ]
    assert _frozen(_leaves(merged)) == _frozen(iter(expected))

    # Mappings in the result are new: changing them changes neither input.
    for value in merged.values():
        if isinstance(value, dict):
            value["new-key"] = 1
    assert (request, params) == (request_before, params_before)


@given(request=NESTED)
def test_merge_params_identities(request: dict[str, Any]) -> None:
    assert merge_params(request, {}) == request
    assert merge_params({}, request) == request
    assert merge_params(request, request) == request


def test_merge_params_replaces_a_leaf_with_a_mapping_and_back() -> None:
    assert merge_params({"think": True}, {"think": {"level": "low"}}) == {"think": {"level": "low"}}
    assert merge_params({"think": {"level": "low"}}, {"think": False}) == {"think": False}


# --- the nearest documented level -------------------------------------------------------

# Written out here, not read from the package: the oracle must not share its scale.
SCALE = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
DOCUMENTED = st.lists(st.sampled_from(SCALE), min_size=1, unique=True).map(
    lambda levels: tuple(sorted(levels, key=SCALE.index))
)


def nearest_oracle(documented: tuple[str, ...], level: str) -> str:
    """Walk outward from the asked level, one step at a time, the lower side first."""
    at = SCALE.index(level)
    for distance in range(len(SCALE)):
        for index in (at - distance, at + distance):
            if 0 <= index < len(SCALE) and SCALE[index] in documented:
                return SCALE[index]
    raise AssertionError("no documented level")


@given(documented=DOCUMENTED, level=st.sampled_from(SCALE))
@settings(max_examples=examples(300))
def test_the_chosen_level_is_documented_and_none_is_strictly_nearer(
    documented: tuple[str, ...], level: str
) -> None:
    chosen = ModelProfile(efforts=documented).nearest_effort(level)
    assert chosen in documented

    def distance(other: str) -> int:
        return abs(SCALE.index(other) - SCALE.index(level))

    assert chosen is not None and all(distance(other) >= distance(chosen) for other in documented)
    assert chosen == nearest_oracle(documented, level)  # a tie goes to the lower level


@given(documented=DOCUMENTED, level=st.sampled_from(SCALE))
@settings(max_examples=examples(100))
def test_a_level_the_row_lacks_is_sent_as_the_nearest_with_a_warning_naming_both(
    documented: tuple[str, ...], level: str
) -> None:
    """Through a registered row and the real planner: the wire value is the oracle's, and a
    warning names both levels exactly when the asked one is not documented."""
    register("openai-chat", "nearest-law-model", efforts=documented, thinking="optional")
    try:
        plan = plan_reasoning("openai-chat", "nearest-law-model", level)
    finally:
        unregister("openai-chat", "nearest-law-model")
    expected = nearest_oracle(documented, level)
    assert plan.params == {"reasoning_effort": expected}
    named = [note for note in plan.warnings if f"{level!r}" in note and f"{expected!r}" in note]
    assert bool(named) == (level != expected)
