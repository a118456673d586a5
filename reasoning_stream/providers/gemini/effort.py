"""The effort plan of Gemini: thinking budgets (2.5) and thinking levels (3 and later).

The profile says which (``control``: ``thinking_budget`` or ``thinking_level``), the budget
range, the levels and whether thinking can be turned off (ai.google.dev/gemini-api/docs/
thinking); ``reasoning_display`` is ``includeThoughts`` (thought summaries).
"""

from __future__ import annotations

from typing import Any

from ..._effort_planner import (
    Ask,
    Draft,
    EffortPlanner,
    always_reasons,
    level_for,
    nearest_display,
    nearest_level,
)
from ...profiles import ModelProfile

_GEMINI_BUDGETS: dict[str, int] = {"low": 1024, "medium": 4096, "high": 16384}


def _plan_gemini(
    profile: ModelProfile, model: str, ask: Ask, max_tokens: int | None, where: str
) -> Draft:
    if ask.kind == "default":
        draft = Draft()
    elif profile.control == "thinking_level":
        draft = _levels(profile, ask, where)
    elif profile.thinking == "always" and not profile.efforts:
        return always_reasons(ask, where)
    else:
        draft = _budgets(profile, ask, where)
    if ask.display is not None:
        chosen, notes = nearest_display(profile, ask.display, where)
        draft.warnings.extend(notes)
        config = draft.params.setdefault("generationConfig", {}).setdefault("thinkingConfig", {})
        config["includeThoughts"] = chosen != "omitted"
    return draft


def _config(config: dict[str, Any], notes: list[str]) -> Draft:
    return Draft({"generationConfig": {"thinkingConfig": config}}, notes)


def _levels(profile: ModelProfile, ask: Ask, where: str) -> Draft:
    if ask.kind == "off":
        # Gemini 3 and later cannot turn thinking off: their least documented level (Gemini
        # 4 documents no "minimal", so none is sent there).
        least = profile.efforts[0] if profile.efforts else "low"
        return _config(
            {"thinkingLevel": least},
            [f"{where} cannot turn thinking fully off; sent thinkingLevel {least!r}, its least"],
        )
    if ask.kind == "on":
        return _config({"includeThoughts": True}, [])
    level, notes = level_for(ask, profile, where)
    return _config({"thinkingLevel": level, "includeThoughts": True}, notes)


def _budgets(profile: ModelProfile, ask: Ask, where: str) -> Draft:
    least, most = profile.budget_range or (1, None)
    off = ask.kind == "off" or (ask.kind == "budget" and ask.budget == 0)
    notes: list[str] = []
    config: dict[str, Any]
    if off:
        if profile.thinking != "always":
            config = {"thinkingBudget": 0}
        else:
            config = {"thinkingBudget": least}
            notes.append(f"{where} cannot turn thinking off; sent its least budget, {least} tokens")
    elif ask.kind == "on":
        config = {"thinkingBudget": -1, "includeThoughts": True}
    elif ask.kind == "level":
        level, notes = level_for(ask, profile, where)
        budget = _GEMINI_BUDGETS[nearest_level(tuple(_GEMINI_BUDGETS), level)]
        config = {"thinkingBudget": budget, "includeThoughts": True}
    else:
        budget = max(ask.budget, least)
        if most is not None:
            budget = min(budget, most)
        if budget != ask.budget:
            notes.append(
                f"{where} takes thinking budgets from {least} to {most} tokens; "
                f"{ask.budget} was sent as {budget}"
            )
        config = {"thinkingBudget": budget, "includeThoughts": True}
    return _config(config, notes)


def _zero_means_off(profile: ModelProfile) -> bool:
    return (
        profile.thinking != "never"
        and profile.control != "thinking_level"
        and bool(profile.efforts)
    )


PLANNER = EffortPlanner(
    _plan_gemini,
    notes=(
        "Gemini budgets are clamped to the model's range (with a warning); `0` means `False` "
        "on the models that can turn thinking off.",
    ),
    zero_means_off=_zero_means_off,
)
"""Gemini's effort plan, under ``generationConfig.thinkingConfig``."""
