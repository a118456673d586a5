"""The shipped catalogue: every row cites a doc source and the date it was checked, and every
model family the code knows by an id substring today has its row."""

from __future__ import annotations

import re
import tomllib
import warnings
from datetime import date
from pathlib import Path

import pytest

from reasoning_stream import profiles

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "reasoning_stream" / "profiles" / "catalogue.toml"


def test_every_row_cites_its_sources_with_a_date() -> None:
    rows = profiles.table()
    assert rows
    for row in rows:
        label = f"{row.providers} {row.patterns}"
        assert row.profile.sources, label
        for url, checked in row.profile.sources:
            assert date(2026, 12, 1) <= date.fromisoformat(checked) <= date.today(), label
            if url.startswith("issue "):
                # A fact from the issue text, not a doc page: the row says so.
                assert url in row.profile.note, label
            else:
                assert re.fullmatch(r"https://[a-z0-9.-]+\.[a-z]+/\S*", url), (label, url)


def test_rows_are_well_formed() -> None:
    for row in profiles.table():
        label = f"{row.providers} {row.patterns}"
        p = row.profile
        assert p.known and p.pattern is None, label
        assert list(p.efforts) == sorted(p.efforts, key=profiles.LEVELS.index), label
        if p.thinking == "never":
            assert (p.efforts, p.passback) == ((), "never"), label
        if p.display_default is not None:
            assert p.display_default in p.displays, label
        assert p.note, label


def test_table_is_the_file_in_order_and_shipped_as_package_data() -> None:
    raw = tomllib.loads(CATALOGUE.read_text(encoding="utf-8"))["row"]
    rows = profiles.table()
    assert len(rows) == len(raw)
    for row, entry in zip(rows, raw, strict=True):
        assert row.providers == tuple(entry["providers"])
        assert row.profile.thinking == entry["thinking"]
        assert row.user is False
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "profiles/*.toml" in pyproject["tool"]["setuptools"]["package-data"]["reasoning_stream"]


def test_table_can_include_the_registered_rows() -> None:
    profiles.register("ollama", "my-local-model", thinking="never", efforts=())
    rows = profiles.table(include_registered=True)
    assert rows[-1].user and rows[-1].patterns == ("my-local-model",)
    assert len(profiles.table()) == len(rows) - 1


# One id per model-id substring the provider packages test today (effort plans, passback
# policies, starts_in_reasoning), with what the code does with it.
KNOWN = [
    # anthropic effort styles and passback
    ("anthropic", "claude-3-5-sonnet-20241022", "never"),
    ("anthropic", "claude-3-7-sonnet-20250219", "optional"),
    ("anthropic", "claude-sonnet-4-20250514", "optional"),
    ("anthropic", "claude-opus-4-1", "optional"),
    ("anthropic", "claude-haiku-4-5", "optional"),
    ("anthropic", "claude-opus-4-5", "optional"),
    ("anthropic", "claude-sonnet-4-6", "optional"),
    ("anthropic", "claude-opus-4-7", "optional"),
    ("anthropic", "claude-opus-4-8", "optional"),
    ("anthropic", "claude-opus-5", "default_on"),
    ("anthropic", "claude-sonnet-5", "default_on"),
    ("anthropic", "claude-haiku-5", "default_on"),
    ("anthropic", "claude-haiku-5-5", "default_on"),
    ("anthropic", "claude-opus-5-5", "always"),
    ("anthropic", "claude-sonnet-5-5", "default_on"),  # issue 23: thinks by default
    ("anthropic", "claude-mythos-1", "always"),
    ("anthropic", "claude-fable-5-1", "always"),
    ("anthropic", "claude-2.1", "never"),
    ("anthropic", "claude-instant-1.2", "never"),
    # bedrock
    ("bedrock", "anthropic.claude-sonnet-4-5-v1:0", "optional"),
    ("bedrock", "amazon.nova-2-lite-v1:0", "optional"),
    ("bedrock", "openai.gpt-oss-120b-1:0", "always"),
    ("bedrock", "us.deepseek.r1-v1:0", "always"),
    ("bedrock", "amazon.nova-micro-v1:0", "never"),
    ("bedrock", "amazon.nova-premier-v1:0", "never"),
    ("bedrock", "amazon.titan-text-express-v1", "never"),
    ("bedrock", "cohere.command-r-v1:0", "never"),
    ("bedrock", "ai21.jamba-1-5-large-v1:0", "never"),
    ("bedrock", "mistral.mistral-large-2402-v1:0", "never"),
    ("bedrock", "mistral.magistral-small-2509", "always"),
    # gemini
    ("gemini", "gemma-3-27b-it", "never"),
    ("gemini", "gemini-2.0-flash", "never"),
    ("gemini", "gemini-2.0-flash-thinking-exp", "always"),
    ("gemini", "gemini-2.5-pro", "always"),
    # Thinks by default (https://ai.google.dev/gemini-api/docs/thinking-mode, checked
    # 2026-12-02: "Thinking is on by default"; a budget of 0 turns it off).
    ("gemini", "gemini-2.5-flash", "default_on"),
    ("gemini", "gemini-2.5-flash-lite", "optional"),
    ("gemini", "gemini-3-pro-preview", "always"),
    ("gemini", "gemini-3.1-pro-preview", "always"),
    ("gemini", "gemini-3-flash-preview", "always"),
    ("gemini", "gemini-4-pro", "always"),
    ("gemini", "gemini-flash-latest", "optional"),
    ("openai-chat", "gemini-2.5-flash", "default_on"),
    # ollama
    ("ollama", "gpt-oss:20b", "always"),
    ("ollama", "qwen3", "default_on"),
    ("ollama", "llama3.2", "optional"),
    # openai chat / responses
    ("openai-chat", "deepseek-chat", "default_on"),
    ("openai-chat", "deepseek-v4-flash", "default_on"),
    ("openai-chat", "deepseek-reasoner", "always"),
    ("openai-chat", "deepseek-ai/DeepSeek-R1", "always"),
    ("openai-chat", "deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "always"),
    ("openai-chat", "kimi-k2-0905-preview", "never"),
    ("openai-chat", "kimi-k2-thinking", "always"),
    ("openai-chat", "kimi-k2.5", "default_on"),
    ("openai-chat", "kimi-k3", "always"),
    ("openai-chat", "gpt-3.5-turbo", "never"),
    ("openai-chat", "gpt-4o", "never"),
    ("openai-chat", "chatgpt-4o-latest", "never"),
    ("openai-chat", "gpt-5-chat-latest", "never"),
    ("openai-chat", "gpt-5.1-chat-latest", "never"),
    ("openai-chat", "gpt-oss-120b", "always"),
    ("openai-chat", "gpt-5", "always"),
    ("openai-chat", "gpt-5-mini", "always"),
    ("openai-chat", "gpt-5.1", "optional"),
    ("openai-chat", "gpt-5-pro", "always"),
    ("openai-chat", "gpt-5-codex", "always"),
    ("openai-chat", "o1-mini", "always"),
    ("openai-chat", "o1-preview", "always"),
    ("openai-chat", "o3", "always"),
    ("openai-chat", "o4-mini", "always"),
    ("openai-chat", "qwq-32b", "always"),
    ("openai-chat", "Qwen/Qwen3-235B-A22B-Thinking-2507", "always"),
    ("openai-chat", "Qwen/Qwen3-235B-A22B-Instruct-2507", "never"),
    ("openai-chat", "qwen2.5-72b-instruct", "never"),
    ("openai-chat", "qwen3-32b", "default_on"),
    ("openai-chat", "allenai/OLMo-3-7B-Think", "always"),
    ("openai-responses", "o4-mini", "always"),
    ("openai-responses", "gpt-5", "always"),
    ("openai-responses", "gpt-5.1", "optional"),
    ("openai-responses", "gpt-4.1", "never"),
    ("openai-responses", "gpt-5-pro", "always"),
    # openrouter
    ("openrouter", "openai/gpt-4o", "never"),
    ("openrouter", "anthropic/claude-3.5-sonnet", "never"),
    ("openrouter", "google/gemini-2.0-flash-001", "never"),
    ("openrouter", "deepseek/deepseek-r1", "always"),
]


@pytest.mark.parametrize(("provider", "model", "thinking"), KNOWN)
def test_every_family_the_code_knows_has_a_row(provider: str, model: str, thinking: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = profiles.lookup(provider, model)
    assert found.known and found.thinking == thinking


@pytest.mark.parametrize(
    ("provider", "model", "base_url", "thinking", "efforts"),
    [
        # xAI (issue 23): these reject reasoning_effort; grok-3-mini takes low/high only;
        # grok-4.3 turns off with none.
        ("openai-chat", "grok-4", "https://api.x.ai/v1", "always", ()),
        ("openai-chat", "grok-4-fast-reasoning", "https://api.x.ai/v1", "always", ()),
        ("openai-chat", "grok-3", "https://api.x.ai/v1", "never", ()),
        ("openai-chat", "grok-3-mini", "https://api.x.ai/v1", "always", ("low", "high")),
        (
            "openai-chat",
            "grok-4.3",
            "https://api.x.ai/v1",
            "default_on",
            ("none", "low", "medium", "high"),
        ),
        # Groq serves Qwen3 with its reasoning_format switch
        ("openai-chat", "qwen/qwen3-32b", "https://api.groq.com/openai/v1", "default_on", ()),
        # Mistral
        ("openai-chat", "magistral-medium-latest", "https://api.mistral.ai/v1", "always", ()),
        (
            "openai-chat",
            "mistral-medium-3.5",
            "https://api.mistral.ai/v1",
            "optional",
            ("low", "medium", "high"),
        ),
    ],
)
def test_endpoint_rows(
    provider: str, model: str, base_url: str, thinking: str, efforts: tuple[str, ...]
) -> None:
    found = profiles.lookup(provider, model, base_url=base_url)
    assert (found.thinking, found.efforts) == (thinking, efforts)
    assert found.pattern is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", profiles.UnknownModelWarning)
        elsewhere = profiles.lookup(provider, model, base_url="http://localhost:8000/v1")
    assert found != elsewhere


def test_the_facts_issue_23_names() -> None:
    fable = profiles.lookup("anthropic", "claude-fable-5-1")
    assert fable.binding == ("prefix",)
    assert fable.reads_from and all(
        any(re.fullmatch(p.replace("*", ".*"), m) for p in fable.reads_from)
        for m in ("claude-opus-5", "claude-opus-5-5")
    )
    assert profiles.lookup("anthropic", "claude-sonnet-5-5").binding == ("account",)
    assert profiles.lookup("anthropic", "claude-haiku-5-5").binding == ("account",)
    assert profiles.lookup("anthropic", "claude-opus-5").binding == ()
    deepseek = profiles.lookup("openai-chat", "deepseek-chat")
    assert "final_answer" in deepseek.passback_details
    assert "max" in deepseek.efforts
    assert profiles.lookup("anthropic", "claude-opus-4-7").display_default == "omitted"
    assert "xhigh" in profiles.lookup("openai-responses", "gpt-5.2").efforts
    assert "minimal" not in profiles.lookup("gemini", "gemini-4-pro").efforts
    for model in (
        "Qwen/Qwen3-235B-A22B-Thinking-2507",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
        "allenai/OLMo-3-7B-Think",
    ):
        assert profiles.lookup("openai-chat", model).inline.opens_inside, model
