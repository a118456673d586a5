"""The effort plan of Gemini: thinking budgets (2.5) and thinking levels (3 and later)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from ..._effort_planner import (
    Ask,
    Draft,
    EffortPlanner,
    EffortRow,
    ReasoningLevel,
    level_for,
    model_tail,
    settled,
)

_GEMINI_BUDGETS: dict[ReasoningLevel, int] = {"low": 1024, "medium": 4096, "high": 16384}


@dataclass(frozen=True, slots=True)
class GeminiFamily:
    style: Literal["none", "fixed", "budget", "level"]
    minimum: int = 1
    maximum: int | None = None
    can_turn_off: bool = True
    levels: tuple[str, ...] = ()


_GEMINI_VERSION = re.compile(r"gemini-(\d+)(?:\.(\d+))?")


def gemini_version(model: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a Gemini model id; ``None`` for aliases without one.

    >>> gemini_version("models/gemini-3-pro-preview"), gemini_version("gemini-flash-latest")
    ((3, 0), None)
    """
    match = _GEMINI_VERSION.search(model_tail(model))
    return None if match is None else (int(match[1]), int(match[2] or 0))


def gemini_family(model: str) -> GeminiFamily:
    name = model_tail(model)
    if name.startswith("gemma"):
        return GeminiFamily("none")
    match = _GEMINI_VERSION.search(name)
    if match is None:
        # Aliases such as gemini-flash-latest move between generations; Gemini 3 still
        # accepts thinkingBudget for compatibility, so the budget form is the safe one.
        return GeminiFamily("budget")
    version = (int(match[1]), int(match[2] or 0))
    if version < (2, 5):
        return GeminiFamily("fixed" if "thinking" in name else "none")
    if version >= (3, 0):
        levels: tuple[str, ...]
        if "-pro" in name:
            levels = ("low", "high") if version == (3, 0) else ("low", "medium", "high")
        else:
            levels = ("minimal", "low", "medium", "high")
        return GeminiFamily("level", levels=levels)
    if version == (2, 5):
        if "-pro" in name:
            return GeminiFamily("budget", minimum=128, maximum=32768, can_turn_off=False)
        if "flash-lite" in name:
            return GeminiFamily("budget", minimum=512, maximum=24576)
        if "flash" in name:
            return GeminiFamily("budget", minimum=1, maximum=24576)
    return GeminiFamily("budget")


def _plan_gemini(model: str, ask: Ask, max_tokens: int | None, where: str) -> Draft:
    family = gemini_family(model)
    fixed = settled(family.style, ask, where)
    if fixed is not None:
        return fixed
    config: dict[str, Any]
    notes: list[str] = []
    if family.style == "level":
        if ask.kind == "off":
            least = family.levels[0]
            config = {"thinkingLevel": least}
            notes.append(
                f"{where} cannot turn thinking fully off; sent thinkingLevel {least!r}, its least"
            )
        elif ask.kind == "on":
            config = {"includeThoughts": True}
        else:
            level, notes = level_for(ask, where)
            sent: str = level
            if level not in family.levels:
                # Only Gemini 3 Pro lacks "medium"; its own default is "high".
                sent = "high"
                notes.append(f"{where} has no {level!r} thinking level; sent {sent!r}")
            config = {"thinkingLevel": sent, "includeThoughts": True}
    else:
        off = ask.kind == "off" or (ask.kind == "budget" and ask.budget == 0)
        if off:
            if family.can_turn_off:
                config = {"thinkingBudget": 0}
            else:
                config = {"thinkingBudget": family.minimum}
                notes.append(
                    f"{where} cannot turn thinking off; sent its least budget, "
                    f"{family.minimum} tokens"
                )
        elif ask.kind == "on":
            config = {"thinkingBudget": -1, "includeThoughts": True}
        elif ask.kind == "level":
            config = {"thinkingBudget": _GEMINI_BUDGETS[ask.level], "includeThoughts": True}
        else:
            budget = max(ask.budget, family.minimum)
            if family.maximum is not None:
                budget = min(budget, family.maximum)
            if budget != ask.budget:
                notes.append(
                    f"{where} takes thinking budgets from {family.minimum} to "
                    f"{family.maximum} tokens; {ask.budget} was sent as {budget}"
                )
            config = {"thinkingBudget": budget, "includeThoughts": True}
    return Draft({"generationConfig": {"thinkingConfig": config}}, notes)


def _zero_means_off(model: str) -> bool:
    return gemini_family(model).style == "budget"


PLANNER = EffortPlanner(
    _plan_gemini,
    rows=(
        EffortRow("gemini-2.5-pro", "gemini-2.5-pro"),
        EffortRow("gemini-2.5-flash", "gemini-2.5-flash"),
        EffortRow("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
        EffortRow("gemini-3-pro", "gemini-3-pro-preview"),
        EffortRow("gemini-3.1-pro and later pro", "gemini-3.1-pro-preview"),
        EffortRow("gemini-3 flash, flash-lite and later", "gemini-3-flash-preview"),
        EffortRow("other gemini ids (aliases such as gemini-flash-latest)", "gemini-flash-latest"),
        EffortRow("gemini-1.x, gemini-2.0 (not thinking-exp), gemma", "gemini-2.0-flash"),
    ),
    notes=(
        "Gemini budgets are clamped to the model's range (with a warning); `0` means `False` "
        "on the models that can turn thinking off.",
    ),
    zero_means_off=_zero_means_off,
)
"""Gemini's effort plan, under ``generationConfig.thinkingConfig``."""
