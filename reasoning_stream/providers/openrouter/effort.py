"""The effort plan of OpenRouter: one normalised ``reasoning`` object.

OpenRouter takes ``reasoning: {effort | max_tokens | enabled, exclude}`` for every upstream
model and maps it (openrouter.ai/docs/use-cases/reasoning-tokens); the model's profile says
whether it reasons at all, can be switched off, and which levels it documents.
"""

from __future__ import annotations

from typing import Any

from ..._effort_planner import (
    Ask,
    Draft,
    EffortPlanner,
    level_for,
    nearest_display,
)
from ...profiles import ModelProfile

_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
"""The ``reasoning.effort`` values OpenRouter documents (OpenAI-style)."""


def _plan_openrouter(
    profile: ModelProfile, model: str, ask: Ask, max_tokens: int | None, where: str
) -> Draft:
    reasoning: dict[str, Any] = {}
    notes: list[str] = []
    supported = True
    if ask.kind == "off":
        if profile.thinking == "always":
            notes.append(f"{where} always reasons and cannot turn it off; nothing sent")
            supported = False
        else:
            reasoning = {"enabled": False}
    elif ask.kind == "on":
        reasoning = {"enabled": True}
    elif ask.kind == "level":
        # A model's own documented levels where its profile lists them, else OpenRouter's.
        levels = tuple(e for e in profile.efforts if e in _EFFORTS) or _EFFORTS
        level, notes = level_for(ask, profile, where, levels)
        reasoning = {"effort": level}
    elif ask.kind == "budget":
        reasoning = {"max_tokens": ask.budget}
    if ask.display is not None:
        chosen, shown = nearest_display(profile, ask.display, where)
        notes += shown
        reasoning["exclude"] = chosen == "omitted"
    return Draft({"reasoning": reasoning} if reasoning else {}, notes, supported=supported)


PLANNER = EffortPlanner(
    _plan_openrouter,
    notes=(
        "OpenRouter: levels are OpenRouter's `none` to `xhigh` (narrowed to the model's own "
        'where its profile lists them); `reasoning_display="omitted"` is `reasoning.exclude`.',
    ),
)
"""OpenRouter's effort plan: its one normalised ``reasoning`` object."""
