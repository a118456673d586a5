"""What a run cost in US dollars, priced by the ``genai-prices`` package (extra ``prices``).

The price table is ``genai-prices``' (a maintained one, never ours); this module only says how
our :class:`~reasoning_stream.Usage` maps onto it. Reasoning tokens are counted once: every
translator reports ``output_tokens`` with the reasoning inside (OpenAI and Anthropic count it
so; Gemini's separate ``thoughtsTokenCount`` is added to its answer tokens when read), so the
price is the output count at the output rate, and ``reasoning_tokens`` is never added again.
Cached input is a part of ``input_tokens`` priced at the cache rates.

Anything that cannot be priced gives ``None``, never an error: the package missing, a model or
provider it does not know, a run with no usage.

>>> from reasoning_stream import Usage
>>> usd(Usage(), "openai-chat", "o4-mini", None) is None
True
"""

from __future__ import annotations

import functools
import logging
import warnings
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, Final

from ._events import Usage

__all__ = ["PRICE_PROVIDERS", "usd"]

logger = logging.getLogger("reasoning_stream.cost")

PRICE_PROVIDERS: Final = {
    "openai-chat": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "google",
    "bedrock": "aws",
    "openrouter": "openrouter",
}
"""Our provider ids to ``genai-prices`` provider ids (Ollama runs locally: not priced)."""

_DEFAULT_HOSTS: Final = ("api.openai.com", "openrouter.ai")

_unknown: set[tuple[str, ...]] = set()
"""Model and place pairs the table does not know (unbounded growth is capped)."""


def usd(
    usage: Usage, provider: str | None, model: str | None, endpoint: str | None
) -> Decimal | None:
    """The price of ``usage`` on ``model`` in USD, or ``None`` when it cannot be known.

    An OpenAI-compatible endpoint elsewhere than OpenAI (DeepSeek, Groq, ...) is priced as the
    provider at that address, as ``genai-prices`` matches it by URL.
    """
    if not model or (usage.input_tokens is None and usage.output_tokens is None):
        return None
    provider_id = PRICE_PROVIDERS.get(provider or "")
    if provider_id is None:
        return None
    calc = _calculator()
    if calc is None:
        return None
    counts: dict[str, int] = {
        "input_tokens": usage.input_tokens or 0,
        "output_tokens": usage.output_tokens or 0,
    }
    if usage.cache_read_tokens:
        counts["cache_read_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        counts["cache_write_tokens"] = usage.cache_write_tokens
    places: list[dict[str, str]] = [{"provider_id": provider_id}]
    if provider_id == "openai" and endpoint and not any(h in endpoint for h in _DEFAULT_HOSTS):
        # Another host speaking OpenAI's API: its own prices where the table knows the URL.
        places.insert(0, {"provider_api_url": endpoint})
    price: Decimal | None = None
    for where in places:
        key = (model, *where.values())
        if key in _unknown:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                price = calc(counts, model, where)
            break
        except LookupError as error:  # a model or provider the table does not know
            logger.debug("no price for %s at %s: %s", model, where, error)
            if len(_unknown) > 1024:
                _unknown.clear()
            _unknown.add(key)  # looking it up again costs a scan of the whole table
        except Exception as error:  # inconsistent counts: no price for this run only
            logger.debug("no price for %s at %s: %s", model, where, error)
    return price


@functools.cache
def _calculator() -> Any:
    """``genai-prices``' price function, or ``None`` when the package is not installed."""
    try:
        import genai_prices
        from genai_prices import data_snapshot
        from genai_prices.types import TieredPrices
    except ImportError:
        logger.debug("no prices: pip install 'reasoning-stream[prices]'")
        return None

    def full(counts: dict[str, int], model: str, where: dict[str, str]) -> Decimal:
        usage = genai_prices.Usage(**counts)
        if "provider_api_url" in where:
            result = genai_prices.calc_price(
                usage, model, provider_api_url=where["provider_api_url"]
            )
        else:
            result = genai_prices.calc_price(usage, model, provider_id=where["provider_id"])
        return Decimal(result.total_price)

    @functools.lru_cache(maxsize=256)
    def rates(model: str, url: str | None, provider_id: str | None, day: date) -> Any:
        """Per-token rates of a flat-priced model for ``day`` (``None`` when it is tiered).

        ``genai-prices`` prices usage linearly unless a price is tiered, so four of its own
        calculations give the rate of each count once; a run is then four multiplications
        instead of a walk through its unit registry (about 0.35 ms a price).
        """
        snapshot = data_snapshot.get_snapshot()
        _, info = snapshot.find_provider_model(model, None, provider_id, url)
        prices = info.get_prices(datetime.combine(day, datetime.min.time(), tzinfo=UTC))
        if any(isinstance(value, TieredPrices) for value in vars(prices).values()):
            return None
        where = {"provider_api_url": url} if url else {"provider_id": str(provider_id)}
        base = full({"input_tokens": 1}, model, where)
        read = full({"input_tokens": 1, "cache_read_tokens": 1}, model, where) - base
        written = full({"input_tokens": 1, "cache_write_tokens": 1}, model, where) - base
        output = full({"output_tokens": 1}, model, where)
        return base, read, written, output

    def calc(counts: dict[str, int], model: str, where: dict[str, str]) -> Decimal:
        flat = rates(
            model, where.get("provider_api_url"), where.get("provider_id"), datetime.now(UTC).date()
        )
        if flat is None:
            return full(counts, model, where)
        base, read, written, output = flat
        total: Decimal = (
            counts["input_tokens"] * base
            + counts.get("cache_read_tokens", 0) * read
            + counts.get("cache_write_tokens", 0) * written
            + counts["output_tokens"] * output
        )
        return total

    return calc
