"""The effort plan of Claude: budgets, adaptive thinking and effort levels, by model version."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from ..._effort_planner import (
    ALLOWED,
    Ask,
    Draft,
    EffortPlanner,
    EffortRow,
    ReasoningLevel,
    cannot_reason,
)

_ANTHROPIC_BUDGETS: dict[ReasoningLevel, int] = {"low": 2048, "medium": 8000, "high": 16000}
_ANTHROPIC_MIN_BUDGET = 1024
_ANSWER_ROOM = 4096
"""Tokens left for the answer above a thinking budget when ``max_tokens`` must be raised."""


ClaudeStyle: TypeAlias = Literal[
    "none", "budget", "adaptive", "adaptive-only", "default-on", "always-on"
]
"""How a Claude model takes thinking: none; a budget (3.7 to 4.5); adaptive or a budget (4.6);
adaptive only, off unless asked (4.7, 4.8); adaptive only and on by default, ``disabled``
accepted at effort high or below (Opus 5, Sonnet 5, Haiku 5.x); always on (Opus 5.5 and
later, Sonnet 5.5 and later, Mythos, Fable)."""

_ADAPTIVE_STYLES = frozenset({"adaptive-only", "default-on", "always-on"})

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


def claude_style(model: str) -> ClaudeStyle:
    """Which thinking API a Claude model id takes, from the version in its name.

    Before 3.7 there is no extended thinking; 3.7 to 4.5 take a token budget; 4.6 adds adaptive
    thinking with an effort level (budgets deprecated); 4.7 and later, Mythos and Fable take
    adaptive thinking only. A date suffix is not a minor version (``claude-sonnet-4-20250514``
    is 4.0). Ids without a version get the budget API, the one most models accept.
    """
    name = model.lower()
    match = _CLAUDE_VERSION.search(name)
    if match is None:
        return "always-on" if any(n in name for n in _ADAPTIVE_ONLY_NAMES) else "budget"
    family = {match["name"], match["after"]}
    if family & _ADAPTIVE_ONLY_NAMES:
        return "always-on"
    version = (int(match["major"]), int(match["minor"] or 0))
    if version < (3, 7):
        return "none"
    if version < (4, 6):
        return "budget"
    if version == (4, 6):
        return "adaptive"
    if version < (5, 0):
        return "adaptive-only"
    if family & {"opus", "sonnet"} and version >= (5, 5):
        return "always-on"
    return "default-on"


@dataclass(slots=True)
class ClaudeThinking:
    fields: dict[str, Any]
    max_tokens: int | None
    notes: list[str]
    supported: bool = True


def claude_thinking(
    ask: Ask, style: ClaudeStyle, max_tokens: int | None, where: str
) -> ClaudeThinking:
    if ask.kind == "off":
        if style == "always-on":
            return ClaudeThinking(
                {},
                None,
                [
                    f"{where} always thinks and rejects thinking type 'disabled'; nothing was "
                    "sent (a lower output_config.effort thinks less)"
                ],
                supported=False,
            )
        if style == "default-on":
            return ClaudeThinking(
                {"thinking": {"type": "disabled"}},
                None,
                [
                    f"{where} thinks by default and accepts thinking type 'disabled' only at "
                    "effort high or below: leave output_config.effort unset or at most 'high'"
                ],
            )
        if style == "adaptive-only":
            return ClaudeThinking(
                {},
                None,
                [
                    f"{where} has no 'disabled' thinking type; no thinking field was sent, "
                    "which leaves extended thinking off"
                ],
            )
        return ClaudeThinking({"thinking": {"type": "disabled"}}, None, [])
    notes: list[str] = []
    fields: dict[str, Any] = {}
    budget: int | None = None
    if ask.kind == "budget":
        if ask.budget < _ANTHROPIC_MIN_BUDGET:
            raise ValueError(
                f"reasoning={ask.budget}: Claude thinking budgets start at "
                f"{_ANTHROPIC_MIN_BUDGET} tokens for {where}; {ALLOWED}"
            )
        if style in _ADAPTIVE_STYLES:
            fields = {"thinking": {"type": "adaptive"}, "output_config": {"effort": ask.level}}
            notes.append(
                f"{where} takes effort levels, not token budgets: a budget of {ask.budget} "
                f"tokens was sent as effort {ask.level!r}"
            )
        else:
            budget = ask.budget
            if style == "adaptive":
                notes.append(
                    f"{where} deprecates budget_tokens; a level ('low', 'medium', 'high') "
                    "uses adaptive thinking instead"
                )
    elif style == "adaptive" or style in _ADAPTIVE_STYLES:
        fields = {"thinking": {"type": "adaptive"}}
        if ask.kind == "level":
            fields["output_config"] = {"effort": ask.level}
    else:
        budget = _ANTHROPIC_BUDGETS[ask.level]
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


def _plan_anthropic(model: str, ask: Ask, max_tokens: int | None, where: str) -> Draft:
    style = claude_style(model)
    if style == "none":
        return cannot_reason()
    thinking = claude_thinking(ask, style, max_tokens, where)
    params = dict(thinking.fields)
    if thinking.max_tokens is not None:
        params["max_tokens"] = thinking.max_tokens
    return Draft(params, thinking.notes, supported=thinking.supported)


PLANNER = EffortPlanner(
    _plan_anthropic,
    rows=(
        EffortRow(
            "claude-3-7 to 4.5 (sonnet-4, opus-4, opus-4-1, sonnet-4-5, haiku-4-5, opus-4-5), "
            "unknown ids",
            "claude-sonnet-4-5",
        ),
        EffortRow("4.6 (opus-4-6, sonnet-4-6)", "claude-sonnet-4-6"),
        EffortRow("opus-4-7, opus-4-8 (off unless asked)", "claude-opus-4-7"),
        EffortRow("opus-5, sonnet-5, haiku-5.x (on by default)", "claude-opus-5"),
        EffortRow("opus-5-5, sonnet-5-5 and later, mythos, fable (always on)", "claude-opus-5-5"),
        EffortRow(
            "claude-3-5, claude-3 opus/sonnet/haiku, claude-2, claude-instant",
            "claude-3-5-sonnet-20241022",
        ),
    ),
    notes=(
        "Anthropic budgets (and Claude on Bedrock): `max_tokens` must exceed the budget, "
        "because thinking counts toward it. The plan sends the given `max_tokens` when it is "
        "above the budget, otherwise budget + 4096 (with a warning when a given value was too "
        "small). With thinking on, Anthropic rejects a changed `temperature` or `top_k`; every "
        "such plan says so in its warnings.",
    ),
)
"""Claude's effort plan on the Messages API."""
