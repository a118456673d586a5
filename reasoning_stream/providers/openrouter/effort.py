"""The effort plan of OpenRouter: one normalised ``reasoning`` object."""

from __future__ import annotations

from typing import Any

from ..._effort_planner import (
    Ask,
    Draft,
    EffortPlanner,
    EffortRow,
    cannot_reason,
)
from ..anthropic.effort import claude_style
from ..gemini.effort import gemini_family
from ..openai_chat.effort import openai_family


def _plan_openrouter(model: str, ask: Ask, max_tokens: int | None, where: str) -> Draft:
    vendor, _, name = model.lower().partition("/")
    if (
        (vendor == "openai" and openai_family(name).kind == "none")
        or (vendor == "anthropic" and claude_style(name) == "none")
        or (vendor == "google" and gemini_family(name).style == "none")
    ):
        return cannot_reason()
    # OpenRouter normalises one `reasoning` object across its upstream providers.
    reasoning: dict[str, Any]
    if ask.kind == "off":
        reasoning = {"enabled": False}
    elif ask.kind == "on":
        reasoning = {"enabled": True}
    elif ask.kind == "level":
        reasoning = {"effort": ask.level}
    else:
        reasoning = {"max_tokens": ask.budget}
    return Draft({"reasoning": reasoning})


PLANNER = EffortPlanner(
    _plan_openrouter,
    rows=(
        EffortRow("any model that reasons", "deepseek/deepseek-r1"),
        EffortRow("openai/, anthropic/, google/ models that cannot reason", "openai/gpt-4o"),
    ),
)
"""OpenRouter's effort plan: its one normalised ``reasoning`` object."""
