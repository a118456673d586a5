"""The effort plan of OpenAI-style Chat Completions: ``reasoning_effort``, or a thinking switch.

What a model can do is its profile's (``thinking``, ``efforts``, ``control``); this module
only writes the fields: ``reasoning_effort``; ``thinking: {type}`` (DeepSeek, Kimi), with
``reasoning_effort`` where levels are documented; ``chat_template_kwargs.enable_thinking``
(vLLM, SGLang); a top-level ``enable_thinking`` (DashScope). ``reasoning_display`` has no
Chat Completions field; a row whose ``display_control`` is ``google_thinking_config`` (Gemini's
OpenAI-compatible endpoint) gets Gemini's own, ``extra_body.google.thinking_config.
include_thoughts`` in the body (https://ai.google.dev/gemini-api/docs/openai#thinking).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._effort_planner import (
    Ask,
    Draft,
    EffortPlanner,
    always_reasons,
    level_for,
    merge_params,
    nearest_display,
    without_display,
)
from ...profiles import ModelProfile

_OFF_LEVELS = ("none",)
"""The effort value that turns reasoning off, where a model documents it."""


def effort_draft(
    profile: ModelProfile, ask: Ask, where: str, put: Callable[[str], dict[str, Any]]
) -> Draft:
    """An effort-field plan: ``put(level)`` for a documented level of the profile."""
    if profile.thinking == "always" and not profile.efforts:
        return always_reasons(ask, where)
    if not profile.efforts:
        if ask.kind == "on" and profile.thinking == "default_on":
            return Draft()
        return Draft(
            warnings=[f"{where} documents no effort field; {ask.raw!r} sent nothing"],
            supported=False,
        )
    if ask.kind == "off":
        if "none" in profile.efforts:
            return Draft(put("none"))
        if profile.thinking == "always" and profile.efforts[0] == "minimal":
            return Draft(
                put("minimal"),
                [f"{where} cannot turn reasoning off; sent 'minimal', its least effort"],
            )
        return Draft(
            warnings=[f"{where} has no effort value that turns reasoning off; nothing sent"],
            supported=False,
        )
    level, notes = level_for(ask, profile, where)
    return Draft(put(level), notes)


def _plan(profile: ModelProfile, ask: Ask, where: str) -> Draft:
    if ask.kind == "default":
        return Draft()
    control = profile.control
    if profile.thinking == "always" and not profile.efforts:
        return always_reasons(ask, where)
    if control == "thinking_type":
        return _thinking_type(profile, ask, where)
    if control == "chat_template_kwargs":
        return _switch(
            profile, ask, where, lambda on: {"chat_template_kwargs": {"enable_thinking": on}}
        )
    if control == "enable_thinking":
        return _switch(profile, ask, where, lambda on: {"enable_thinking": on})
    return effort_draft(profile, ask, where, lambda value: {"reasoning_effort": value})


def _thinking_type(profile: ModelProfile, ask: Ask, where: str) -> Draft:
    """``thinking: {type: enabled|disabled}`` plus ``reasoning_effort`` where levels are
    documented (DeepSeek: api-docs.deepseek.com/guides/thinking_mode; Kimi K2.5 and later)."""
    if not profile.efforts or ask.kind in ("off", "on"):
        return _switch(
            profile, ask, where, lambda on: {"thinking": {"type": "enabled" if on else "disabled"}}
        )
    level, notes = level_for(ask, profile, where)
    return Draft({"thinking": {"type": "enabled"}, "reasoning_effort": level}, notes)


def _switch(
    profile: ModelProfile, ask: Ask, where: str, put: Callable[[bool], dict[str, Any]]
) -> Draft:
    """A model that only switches thinking on or off: a level or a budget is sent as on
    (level ``"none"`` as off), and a note says so."""
    if ask.kind == "off" and profile.thinking == "always":
        return always_reasons(ask, where)
    on = ask.kind != "off" and ask.raw != "none"
    notes: list[str] = []
    if ask.kind in ("level", "budget"):
        notes.append(
            f"{where} only switches thinking on or off: {ask.raw!r} was sent as "
            f"{'on' if on else 'off'} ({next(iter(_describe(put(on))))})"
        )
    return Draft(put(on), notes)


def _describe(fields: dict[str, Any]) -> list[str]:
    """``{"a": {"b": True}}`` as ``["a.b=True"]``, for the notes."""
    found: list[str] = []
    for key, value in fields.items():
        if isinstance(value, dict):
            found += [f"{key}.{inner}" for inner in _describe(value)]
        else:
            found.append(f"{key}={value}")
    return found


def _plan_chat(
    profile: ModelProfile, model: str, ask: Ask, max_tokens: int | None, where: str
) -> Draft:
    draft = _plan(profile, ask, where)
    if ask.display is None or profile.display_control != "google_thinking_config":
        return without_display(draft, ask, profile, where, "Chat Completions")
    # Gemini's OpenAI-compatible endpoint: its own thinking_config, inside the body's
    # extra_body (ai.google.dev/gemini-api/docs/openai#thinking, the REST example's body).
    chosen, notes = nearest_display(profile, ask.display, where)
    draft.warnings.extend(notes)
    google = {"google": {"thinking_config": {"include_thoughts": chosen != "omitted"}}}
    draft.params = merge_params(draft.params, {"extra_body": google})
    return draft


PLANNER = EffortPlanner(_plan_chat)
"""Chat Completions' effort plan (OpenAI, DeepSeek, Kimi, xAI, Mistral, DashScope, vLLM, ...)."""
