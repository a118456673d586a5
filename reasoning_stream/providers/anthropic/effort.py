"""The effort plan of Claude: budgets, adaptive thinking and effort levels, by its profile."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..._effort_planner import (
    ALLOWED,
    Ask,
    Draft,
    EffortPlanner,
    level_for,
    nearest_display,
    nearest_level,
)
from ...profiles import ModelProfile

_ANTHROPIC_BUDGETS: dict[str, int] = {"low": 2048, "medium": 8000, "high": 16000}
_ANTHROPIC_MIN_BUDGET = 1024
_ANSWER_ROOM = 4096
"""Tokens left for the answer above a thinking budget when ``max_tokens`` must be raised."""


_CLAUDE_VERSION = re.compile(
    r"claude-(?:(?P<name>[a-z]+)-)?v?(?P<major>\d+)(?:[.-](?P<minor>\d)(?!\d))?"
    r"(?:-(?P<after>[a-z]+))?"
)
_ADAPTIVE_ONLY_NAMES = frozenset({"mythos", "fable"})


def claude_version(model: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a Claude model id; ``None`` when it names no version.

    >>> claude_version("claude-sonnet-4-5-20250929"), claude_version("claude-3-7-sonnet")
    ((4, 5), (3, 7))
    """
    match = _CLAUDE_VERSION.search(model.lower())
    if match is None:
        return None
    return int(match["major"]), int(match["minor"] or 0)


def keeps_earlier_thinking(model: str) -> bool:
    """Whether a Claude model keeps thinking blocks of earlier turns in its context.

    Opus 4.5 and later, Sonnet 4.6 and later, every 5.x model, Mythos and Fable use the
    thinking blocks sent back from earlier turns (preserved thinking); older models drop
    them once a user turn follows, so only the current tool loop needs them.

    >>> keeps_earlier_thinking("claude-opus-4-5"), keeps_earlier_thinking("claude-sonnet-4-5")
    (True, False)
    """
    name = model.lower()
    match = _CLAUDE_VERSION.search(name)
    if match is None:
        return any(known in name for known in _ADAPTIVE_ONLY_NAMES)
    family = {match["name"], match["after"]}
    if family & _ADAPTIVE_ONLY_NAMES:
        return True
    version = (int(match["major"]), int(match["minor"] or 0))
    if version >= (5, 0):
        return True
    if "opus" in family:
        return version >= (4, 5)
    if "sonnet" in family:
        return version >= (4, 6)
    return False


ClaudeStyle: TypeAlias = Literal["budget_tokens", "adaptive", "adaptive_only"]
"""How a Claude model takes thinking (its profile's ``control``): a token budget (3.7 to 4.5);
adaptive thinking with an effort level, budgets deprecated (4.6); adaptive thinking only (4.7
and later). Whether it thinks by default or always is the profile's ``thinking``."""

_STYLES: tuple[ClaudeStyle, ...] = ("budget_tokens", "adaptive", "adaptive_only")
_BUDGET_LEVELS = ("low", "medium", "high")
_DISPLAY_FIELD = ("summarized", "omitted")
"""The values of ``thinking.display`` (anthropic SDK ``ThinkingConfigAdaptiveParam``): full
thinking text is what ``summarized`` returns on the models that show it whole."""


def claude_style(profile: ModelProfile) -> ClaudeStyle:
    """The profile's thinking control; a profile without one (an unknown id) gets token
    budgets, the form most models accept."""
    control = profile.control
    for style in _STYLES:
        if control == style:
            return style
    return "budget_tokens"


@dataclass(slots=True)
class ClaudeThinking:
    fields: dict[str, Any]
    max_tokens: int | None
    notes: list[str]
    supported: bool = True
    drops: list[tuple[str, ...]] = field(default_factory=list)


def claude_thinking(
    ask: Ask, profile: ModelProfile, max_tokens: int | None, where: str
) -> ClaudeThinking:
    """Claude's thinking fields (``thinking``, ``output_config``) for ``ask``, by the profile:
    shared by the Messages API and Bedrock, which carries them in its model fields."""
    style = claude_style(profile)
    if ask.kind == "off":
        return _claude_off(profile, style, where)
    if ask.kind == "default":
        thinking = _claude_default(profile, where)
    else:
        thinking = _claude_on(ask, profile, style, max_tokens, where)
    if ask.display is not None:
        _claude_display(thinking, ask.display, profile, where)
    if ask.kind == "default" and thinking.fields.get("thinking") == {"type": "adaptive"}:
        thinking.fields = {}  # the model's default, as it would run unasked
    return thinking


def _claude_off(profile: ModelProfile, style: ClaudeStyle, where: str) -> ClaudeThinking:
    if profile.thinking == "always":
        return ClaudeThinking(
            {},
            None,
            [
                f"{where} always thinks and rejects thinking type 'disabled'; nothing was "
                "sent (a lower effort thinks less)"
            ],
            supported=False,
        )
    if profile.thinking == "default_on":
        # The documented off switch; the API takes it only at effort high or below, so an
        # effort already in the request goes (platform.claude.com whats-new-opus-5).
        return ClaudeThinking(
            {"thinking": {"type": "disabled"}}, None, [], drops=[("output_config", "effort")]
        )
    if style == "adaptive_only":
        return ClaudeThinking(
            {},
            None,
            [
                f"{where} has no 'disabled' thinking type; no thinking field was sent, "
                "which leaves extended thinking off"
            ],
        )
    return ClaudeThinking({"thinking": {"type": "disabled"}}, None, [])


def _claude_default(profile: ModelProfile, where: str) -> ClaudeThinking:
    """``reasoning=None`` with a display: the model's own default thinking, shown as asked."""
    if profile.thinking in ("default_on", "always"):
        return ClaudeThinking({"thinking": {"type": "adaptive"}}, None, [])
    return ClaudeThinking(
        {},
        None,
        [f"{where} thinks only when asked (reasoning=...); reasoning_display has nothing to show"],
    )


def _claude_display(
    thinking: ClaudeThinking, display: str, profile: ModelProfile, where: str
) -> None:
    config = thinking.fields.get("thinking")
    if not isinstance(config, dict) or config.get("type") not in ("enabled", "adaptive"):
        if thinking.fields or display != profile.display_default:
            thinking.notes.append(f"{where}: thinking is off, so reasoning_display has no effect")
        return
    chosen, notes = nearest_display(profile, display, where)
    thinking.notes.extend(notes)
    # The model's default needs no field (older models may not know it); another display
    # is asked for by name.
    if chosen != profile.display_default:
        config["display"] = "omitted" if chosen == "omitted" else _DISPLAY_FIELD[0]


def _claude_on(
    ask: Ask, profile: ModelProfile, style: ClaudeStyle, max_tokens: int | None, where: str
) -> ClaudeThinking:
    notes: list[str] = []
    fields: dict[str, Any] = {}
    budget: int | None = None
    if ask.kind == "budget":
        if ask.budget < _ANTHROPIC_MIN_BUDGET:
            raise ValueError(
                f"reasoning={ask.budget}: Claude thinking budgets start at "
                f"{_ANTHROPIC_MIN_BUDGET} tokens for {where}; {ALLOWED}"
            )
        if style == "adaptive_only":
            level, notes = level_for(ask, profile, where)
            fields = {"thinking": {"type": "adaptive"}, "output_config": {"effort": level}}
        else:
            budget = ask.budget
            if style == "adaptive":
                notes.append(
                    f"{where} deprecates budget_tokens; a level ('low', 'medium', 'high') "
                    "uses adaptive thinking instead"
                )
    elif style in ("adaptive", "adaptive_only"):
        fields = {"thinking": {"type": "adaptive"}}
        if ask.kind == "level":
            level, notes = level_for(ask, profile, where)
            fields["output_config"] = {"effort": level}
    else:
        level, notes = level_for(ask, profile, where)
        budget = _ANTHROPIC_BUDGETS[nearest_level(_BUDGET_LEVELS, level)]
    limit: int | None = None
    if budget is not None:
        fields = {"thinking": {"type": "enabled", "budget_tokens": budget}}
        # Thinking counts toward max_tokens, so the limit must leave room for the answer.
        if max_tokens is not None and max_tokens > budget:
            limit = max_tokens
        else:
            limit = budget + _ANSWER_ROOM
            if max_tokens is not None:
                notes.append(
                    f"max_tokens={max_tokens} leaves no room above the thinking budget of "
                    f"{budget} tokens; raised to {limit}"
                )
    notes.append(
        "thinking is on: Claude rejects a changed temperature or top_k with it (top_p only "
        "from 0.95 to 1), so leave them unset"
    )
    return ClaudeThinking(fields, limit, notes)


def _plan_anthropic(
    profile: ModelProfile, model: str, ask: Ask, max_tokens: int | None, where: str
) -> Draft:
    thinking = claude_thinking(ask, profile, max_tokens, where)
    params = dict(thinking.fields)
    if thinking.max_tokens is not None:
        params["max_tokens"] = thinking.max_tokens
    return Draft(params, thinking.notes, supported=thinking.supported, drops=thinking.drops)


PLANNER = EffortPlanner(
    _plan_anthropic,
    notes=(
        "Anthropic budgets (and Claude on Bedrock): `max_tokens` must exceed the budget, "
        "because thinking counts toward it. The plan sends the given `max_tokens` when it is "
        "above the budget, otherwise budget + 4096 (with a warning when a given value was too "
        "small). With thinking on, Anthropic rejects a changed `temperature` or `top_k`; every "
        "such plan says so in its warnings.",
        "Claude that thinks by default (Opus 5, Sonnet 5, Sonnet 5.5, Haiku 5): `False` sends "
        "the documented off switch and drops `output_config.effort` (the switch is accepted "
        "only at effort high or below); Claude that always thinks (Opus 5.5, Mythos, Fable) "
        "cannot be switched off: a warning, nothing sent.",
    ),
)
"""Claude's effort plan on the Messages API."""
