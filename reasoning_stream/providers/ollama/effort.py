"""The effort plan of Ollama: ``think`` on or off, or a level where the model documents levels.

Ollama's ``think`` takes a bool or one of the levels a model lists (``/api/show``'s
``thinking.values``: gpt-oss takes low, medium, high); the profile says which.
"""

from __future__ import annotations

from ..._effort_planner import (
    Ask,
    Draft,
    EffortPlanner,
    displayless,
    level_for,
)
from ...profiles import ModelProfile


def _plan(profile: ModelProfile, ask: Ask, where: str) -> Draft:
    if ask.kind == "default":
        return Draft()
    off = ask.kind == "off" or (ask.kind == "level" and ask.raw == "none" and not profile.efforts)
    if off and profile.thinking == "always":
        least = f" ({profile.efforts[0]!r} is its least)" if profile.efforts else ""
        return Draft(
            warnings=[f"{where} cannot turn reasoning off{least}; nothing sent"],
            supported=False,
        )
    if profile.efforts:
        # Levels: the model takes a level and ignores true/false.
        level, notes = level_for(ask, profile, where)
        return Draft({"think": level}, notes)
    if ask.kind in ("level", "budget"):
        sent = "think=False" if off else "think=True"
        return Draft(
            {"think": not off},
            [f"{where} only switches thinking on or off: {ask.raw!r} was sent as {sent}"],
        )
    return Draft({"think": ask.kind == "on"})


PLANNER = EffortPlanner(displayless(_plan, "Ollama"))
"""Ollama's effort plan: its ``think`` field."""
