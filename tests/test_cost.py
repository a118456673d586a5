"""Cost: ``PipeResult.cost`` equals the price worked out by hand from genai-prices' table.

Each case plays a real transcript through its provider's SDK (usage fields added where the
recording has none), reads the model's price straight from genai-prices' data, and computes
the price from the raw wire counts by that provider's rule: reasoning inside the output count
for OpenAI and Anthropic, Gemini's thoughts counted apart from its answer and added once.
The oracle never calls our code.
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("genai_prices")

from genai_prices import data as price_data

from reasoning_stream import Usage
from reasoning_stream._capture import PipeResult
from reasoning_stream.testing import Reply, WireServer
from tests.helpers import examples
from tests.telemetry.test_telemetry import _with_usage, wire  # noqa: F401

from .reliability import TARGETS, play, transcript

MILLION = Decimal(1_000_000)


def table_price(provider_id: str, model: str) -> Any:
    """The model's current ``ModelPrice`` as genai-prices' data lists it."""
    (provider,) = [p for p in price_data.providers if p.id == provider_id]
    found = [m for m in provider.models if m.id == model] or [
        m for m in provider.models if m.match.is_match(model)
    ]
    prices = found[0].prices
    if not isinstance(prices, list):
        return prices
    today = datetime.date.today()
    current = None
    for conditional in prices:  # later start dates supersede earlier ones
        start = getattr(conditional.constraint, "start_date", None)
        if start is None or start <= today:
            current = conditional.prices
    return current


def rate(value: Any) -> Decimal:
    return Decimal(value.base if hasattr(value, "base") else value or 0)


def last_usage(events: list[Any], key: str) -> dict[str, Any]:
    """The raw usage fields the wire sent, later reports overriding earlier ones."""
    found: dict[str, Any] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get(key), dict):
                found.update(value[key])
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(events)
    return found


def test_openai_reasoning_is_inside_the_output_count(wire: WireServer) -> None:  # noqa: F811
    extra = {"input_tokens_details": {"cached_tokens": 5}}
    reply = _with_usage(transcript("openai_responses_plain"), "usage", extra)
    result = play(wire, TARGETS["openai-responses"], "openai_responses_plain", Reply(reply), "sync")
    raw = last_usage(reply.events, "usage")
    price = table_price("openai", str(result.result.model))
    cached = raw["input_tokens_details"]["cached_tokens"]
    expected = (
        (raw["input_tokens"] - cached) * rate(price.input_mtok)
        + cached * rate(price.cache_read_mtok)
        + raw["output_tokens"] * rate(price.output_mtok)  # reasoning_tokens are inside it
    ) / MILLION
    assert raw["output_tokens_details"]["reasoning_tokens"] > 0
    assert result.result.cost == expected


def test_anthropic_thinking_is_inside_the_output_and_cache_is_apart(
    wire: WireServer,  # noqa: F811
) -> None:
    reply = _with_usage(
        transcript("anthropic_thinking"), "usage", {"cache_creation_input_tokens": 7}
    )
    result = play(wire, TARGETS["anthropic"], "anthropic_thinking", Reply(reply), "sync")
    raw = last_usage(reply.events, "usage")
    price = table_price("anthropic", str(result.result.model))
    expected = (
        raw["input_tokens"] * rate(price.input_mtok)  # Anthropic's input excludes the cache
        + raw["cache_read_input_tokens"] * rate(price.cache_read_mtok)
        + raw["cache_creation_input_tokens"] * rate(price.cache_write_mtok)
        + raw["output_tokens"] * rate(price.output_mtok)
    ) / MILLION
    assert result.result.cost == expected


def test_gemini_thoughts_are_counted_apart_and_once(wire: WireServer) -> None:  # noqa: F811
    reply = _with_usage(
        transcript("gemini_reasoning"), "usageMetadata", {"cachedContentTokenCount": 4}
    )
    result = play(wire, TARGETS["gemini"], "gemini_reasoning", Reply(reply), "sync")
    raw = last_usage(reply.events, "usageMetadata")
    price = table_price("google", str(result.result.model))
    cached = raw["cachedContentTokenCount"]
    expected = (
        (raw["promptTokenCount"] - cached) * rate(price.input_mtok)
        + cached * rate(price.cache_read_mtok)
        # Gemini bills thoughts as output, reported apart from the answer's tokens.
        + (raw["candidatesTokenCount"] + raw["thoughtsTokenCount"]) * rate(price.output_mtok)
    ) / MILLION
    assert raw["thoughtsTokenCount"] > 0
    assert result.result.cost == expected


def test_unknown_models_and_local_ones_have_no_price() -> None:
    usage = Usage(input_tokens=10, output_tokens=5)
    assert PipeResult(usage=usage, provider="openai-chat", model="no-such-model-x").cost is None
    assert PipeResult(usage=usage, provider="ollama", model="qwen3").cost is None
    assert PipeResult(provider="openai-chat", model="o3").cost is None  # no usage


def test_without_genai_prices_the_cost_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from reasoning_stream import _cost

    _cost._calculator.cache_clear()
    monkeypatch.setitem(sys.modules, "genai_prices", None)
    try:
        usage = Usage(input_tokens=10, output_tokens=5)
        assert PipeResult(usage=usage, provider="openai-chat", model="o3").cost is None
    finally:
        _cost._calculator.cache_clear()


def test_the_cli_summary_shows_the_cost_when_known() -> None:
    from reasoning_stream._cli import summary_line

    usage = Usage(input_tokens=1000, output_tokens=500, cache_read_tokens=100)
    known = PipeResult(usage=usage, provider="openai-responses", model="o3")
    assert known.cost is not None
    assert f"cost ${known.cost:.6f}" in summary_line(known, width=200)
    assert "cached 100" in summary_line(known, width=200)
    unknown = PipeResult(usage=usage, provider="ollama", model="qwen3")
    assert "cost" not in summary_line(unknown, width=200)


@settings(max_examples=examples(60), deadline=None)
@given(
    model=st.sampled_from(
        [
            ("openai-responses", "openai", "o3"),
            ("anthropic", "anthropic", "claude-sonnet-4-6"),
            ("gemini", "google", "gemini-2.5-flash"),
            ("gemini", "google", "gemini-2.5-pro"),  # tiered above 200k prompt tokens
        ]
    ),
    cached=st.integers(0, 300_000),
    written=st.integers(0, 300_000),
    fresh=st.integers(0, 300_000),
    output=st.integers(0, 100_000),
)
def test_the_price_is_genai_prices_own_for_any_counts(
    model: tuple[str, str, str], cached: int, written: int, fresh: int, output: int
) -> None:
    import genai_prices

    ours, theirs, name = model
    if ours != "anthropic":
        written = 0
    inputs = fresh + cached + written
    expected = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=inputs,
            output_tokens=output,
            **({"cache_read_tokens": cached} if cached else {}),
            **({"cache_write_tokens": written} if written else {}),
        ),
        name,
        provider_id=theirs,
    ).total_price
    usage = Usage(
        input_tokens=inputs,
        output_tokens=output,
        cache_read_tokens=cached,
        cache_write_tokens=written or None,
    )
    assert PipeResult(usage=usage, provider=ours, model=name).cost == expected


def test_cached_counts_survive_the_hub_entry_format() -> None:
    from reasoning_stream import UsageReport
    from reasoning_stream.hub._entry import event_from_dict, event_to_dict

    usage = Usage(
        input_tokens=40, output_tokens=9, reasoning_tokens=4, cache_read_tokens=30,
        cache_write_tokens=2,
    )  # fmt: skip
    decoded = event_from_dict(event_to_dict(UsageReport(usage)))
    assert isinstance(decoded, UsageReport)
    assert decoded.usage == usage
    plain = Usage(input_tokens=1, output_tokens=2)
    assert "cache_read_tokens" not in event_to_dict(UsageReport(plain))["usage"]
