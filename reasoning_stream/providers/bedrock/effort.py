"""The effort plan of Bedrock: Claude, Nova 2, gpt-oss and DeepSeek-R1 through Converse.

Which family a model is, and how it takes reasoning, is its profile's: an application
inference profile ARN resolves through the row registered for it
(``profiles.register("bedrock", arn, base="claude-opus-5")``), so Claude behind one gets
Claude's fields.
"""

from __future__ import annotations

from typing import Any

from ..._effort_planner import (
    Ask,
    Draft,
    EffortPlanner,
    always_reasons,
    level_for,
    without_display,
)
from ...profiles import ModelProfile
from ..anthropic.effort import claude_thinking
from ..openai_chat.effort import effort_draft

_CLAUDE_CONTROLS = frozenset({"budget_tokens", "adaptive", "adaptive_only"})
_FIELDS = "additionalModelRequestFields"


def _is_claude(profile: ModelProfile, model: str) -> bool:
    # A Claude id the profiles do not know yet still names its vendor (`anthropic.claude-`).
    return profile.control in _CLAUDE_CONTROLS or (
        profile.control is None and "anthropic.claude" in model.lower()
    )


def _plan_bedrock(
    profile: ModelProfile, model: str, ask: Ask, max_tokens: int | None, where: str
) -> Draft:
    if _is_claude(profile, model):
        thinking = claude_thinking(ask, profile, max_tokens, where)
        params: dict[str, Any] = {}
        if thinking.fields:
            params[_FIELDS] = thinking.fields
        if thinking.max_tokens is not None:
            params["inferenceConfig"] = {"maxTokens": thinking.max_tokens}
        drops = [(_FIELDS, *path) for path in thinking.drops]
        return Draft(params, thinking.notes, supported=thinking.supported, drops=drops)
    return without_display(_plan_other(profile, ask, where), ask, profile, where, "Converse")


def _plan_other(profile: ModelProfile, ask: Ask, where: str) -> Draft:
    if ask.kind == "default":
        return Draft()
    if profile.control == "reasoning_effort":
        return effort_draft(
            profile, ask, where, lambda value: {_FIELDS: {"reasoning_effort": value}}
        )
    if profile.control == "reasoning_config":
        return _nova(profile, ask, where)
    if profile.thinking == "always" and not profile.efforts:
        return always_reasons(ask, where)
    return Draft(
        warnings=[
            f"{where}: no known reasoning control for this model family; nothing sent "
            "(put the native field in additionalModelRequestFields yourself)"
        ],
        supported=False,
    )


def _nova(profile: ModelProfile, ask: Ask, where: str) -> Draft:
    """Nova 2's ``reasoningConfig`` (docs.aws.amazon.com nova2-userguide reasoning)."""
    if ask.kind == "off":
        config: dict[str, Any] = {"type": "disabled"}
        notes: list[str] = []
    else:
        level, notes = level_for(ask, profile, where)
        config = {"type": "enabled", "maxReasoningEffort": level}
        if level == "high":
            notes.append(
                f"{where} at maxReasoningEffort 'high' takes no temperature, topP or "
                "maxTokens: leave them unset"
            )
    return Draft({_FIELDS: {"reasoningConfig": config}}, notes)


PLANNER = EffortPlanner(
    _plan_bedrock,
    notes=(
        'Nova 2 at `"high"` takes no `temperature`, `topP` or `maxTokens`; the plan warns.',
        "An application inference profile ARN names no model: register it "
        '(`profiles.register("bedrock", arn, base="claude-opus-5")`) and it plans as that '
        "model.",
    ),
)
"""Bedrock's effort plan, in Converse's ``additionalModelRequestFields``."""
