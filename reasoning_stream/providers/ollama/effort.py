"""The effort plan of Ollama: ``think`` on or off, or a level for gpt-oss."""

from __future__ import annotations

from ..._effort_planner import (
    Ask,
    Draft,
    EffortPlanner,
    EffortRow,
    level_for,
)


def _plan_ollama(model: str, ask: Ask, max_tokens: int | None, where: str) -> Draft:
    if "gpt-oss" in model.lower():
        # gpt-oss on Ollama takes a level and ignores true/false.
        if ask.kind == "off":
            return Draft(
                warnings=[f"{where} cannot turn reasoning off ('low' is its least); nothing sent"],
                supported=False,
            )
        level, notes = level_for(ask, where)
        return Draft({"think": level}, notes)
    if ask.kind in ("level", "budget"):
        return Draft(
            {"think": True},
            [f"{where} only switches thinking on or off: {ask.raw!r} was sent as think=True"],
        )
    return Draft({"think": ask.kind == "on"})


PLANNER = EffortPlanner(
    _plan_ollama,
    rows=(
        EffortRow("gpt-oss", "gpt-oss:20b"),
        EffortRow("any other model", "qwen3"),
    ),
)
"""Ollama's effort plan: its ``think`` field."""
