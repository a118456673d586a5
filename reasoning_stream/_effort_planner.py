"""What a reasoning-effort plan is made of: the settings, the ask, a planner and its rows.

The mechanics every provider's ``effort.py`` builds its :class:`EffortPlanner` from, and the
types ``plan_reasoning`` returns. Pure data and small functions: no provider named, no registry
asked (``reasoning_stream._effort`` finds a provider's planner through the registry), no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = [
    "ALLOWED",
    "REASONING_LEVELS",
    "Ask",
    "Draft",
    "EffortPlanner",
    "EffortRow",
    "Planner",
    "Reasoning",
    "ReasoningLevel",
    "ReasoningPlan",
    "ReasoningWarning",
    "always_reasons",
    "ask_for",
    "cannot_reason",
    "level_for",
    "merge_params",
    "model_tail",
    "settled",
    "validate_reasoning",
]

ReasoningLevel: TypeAlias = Literal["low", "medium", "high"]
Reasoning: TypeAlias = bool | ReasoningLevel | int | None
"""``None`` (provider default), ``False``, ``True``, an effort level, or a token budget."""

REASONING_LEVELS: tuple[ReasoningLevel, ...] = ("low", "medium", "high")

_NEAREST_LOW_BELOW = 4096
_NEAREST_MEDIUM_BELOW = 12288

ALLOWED = (
    "allowed: None (the provider's default), True, False, 'low', 'medium', 'high', "
    "or a positive int token budget"
)


class ReasoningWarning(UserWarning):
    """Issued once per (provider, model) when reasoning is asked of a model that cannot reason."""


@dataclass(frozen=True, slots=True)
class ReasoningPlan:
    """What one reasoning setting becomes for one provider and model.

    ``params`` are the native request fields to merge into the request body (or SDK keyword
    arguments) with :func:`merge_params`; nested mappings merge key by key. Treat them as
    read-only. ``warnings`` say, in words, what was approximated or dropped. ``supported`` is
    ``False`` when nothing could express the request: the model cannot reason, has no control
    for that setting, or is unknown to this table (for ``None``: whether the model is known to
    reason).

    >>> from reasoning_stream import plan_reasoning
    >>> plan = plan_reasoning("ollama", "qwen3", False)
    >>> plan.params, plan.warnings, plan.supported
    ({'think': False}, (), True)
    """

    provider: str
    model: str
    reasoning: Reasoning
    params: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    supported: bool = True


def merge_params(request: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """``request`` with ``params`` merged in: nested mappings merge key by key, ``params`` win.

    Neither input is changed. Every mapping in the result is a new ``dict``; other values
    (lists of messages, strings) are shared, not copied.

    >>> merge_params({"reasoning": {"summary": "auto"}}, {"reasoning": {"effort": "high"}})
    {'reasoning': {'summary': 'auto', 'effort': 'high'}}
    """
    merged = {key: _copied(value) for key, value in request.items()}
    for key, value in params.items():
        current = merged.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            merged[key] = merge_params(current, value)
        else:
            merged[key] = _copied(value)
    return merged


def _copied(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _copied(item) for key, item in value.items()}
    return value


# --------------------------------------------------------------------------------- the ask


@dataclass(frozen=True, slots=True)
class Ask:
    """A validated setting: what the user wants, before any provider is considered."""

    kind: Literal["off", "on", "level", "budget"]
    raw: bool | str | int
    level: ReasoningLevel = "medium"
    budget: int = 0


def ask_for(reasoning: object) -> Ask | None:
    if reasoning is None:
        return None
    # bool first: True and False are ints too.
    if isinstance(reasoning, bool):
        return Ask("on", reasoning) if reasoning else Ask("off", reasoning)
    if isinstance(reasoning, int):
        if reasoning < 0:
            raise ValueError(
                f"reasoning={reasoning!r}: a token budget cannot be negative; {ALLOWED}"
            )
        return Ask("budget", reasoning, level=_nearest_level(reasoning), budget=reasoning)
    if isinstance(reasoning, str) and reasoning in REASONING_LEVELS:
        return Ask("level", reasoning, level=reasoning)
    raise ValueError(f"reasoning={reasoning!r} is not a reasoning setting; {ALLOWED}")


def validate_reasoning(reasoning: object) -> None:
    """Raise ``ValueError`` unless ``reasoning`` is a valid setting (checked at construction)."""
    ask_for(reasoning)


def _nearest_level(budget: int) -> ReasoningLevel:
    if budget < _NEAREST_LOW_BELOW:
        return "low"
    if budget < _NEAREST_MEDIUM_BELOW:
        return "medium"
    return "high"


@dataclass(slots=True)
class Draft:
    """A planner's answer, before ``plan_reasoning`` freezes it into a ``ReasoningPlan``."""

    params: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    supported: bool = True
    cannot_reason: bool = False


def cannot_reason() -> Draft:
    return Draft(supported=False, cannot_reason=True)


def always_reasons(ask: Ask, where: str) -> Draft:
    if ask.kind == "on":
        return Draft()
    if ask.kind == "off":
        note = f"{where} always reasons and cannot turn it off; nothing sent"
    else:
        note = f"{where} always reasons and takes no effort setting; {ask.raw!r} sent nothing"
    return Draft(warnings=[note], supported=False)


def settled(style: str, ask: Ask, where: str) -> Draft | None:
    """The draft for a family whose reasoning no ask changes: ``"none"`` (cannot reason) or
    ``"fixed"`` (always reasons); ``None`` for any other style, which the planner decides."""
    if style == "none":
        return cannot_reason()
    if style == "fixed":
        return always_reasons(ask, where)
    return None


def level_for(ask: Ask, where: str) -> tuple[ReasoningLevel, list[str]]:
    """The effort level for an "on", level or budget ask, where only levels exist."""
    if ask.kind == "budget":
        return ask.level, [
            f"{where} takes effort levels, not token budgets: "
            f"a budget of {ask.budget} tokens was sent as {ask.level!r}"
        ]
    return ask.level, []


def model_tail(model: str) -> str:
    """The model's own name: lowercase, without an ``org/`` or ``models/`` prefix."""
    return model.lower().rsplit("/", 1)[-1]


# ------------------------------------------------------------------------------ planners

Planner: TypeAlias = Callable[[str, Ask, int | None, str], Draft]
"""``(model, ask, max_tokens, where) -> Draft``: one provider's mapping."""


@dataclass(frozen=True, slots=True)
class EffortRow:
    """One row of the effort table: a model family, in words, and a model id of it."""

    models: str
    example: str


@dataclass(frozen=True, slots=True)
class EffortPlanner:
    """A provider's effort plan: the mapping, the table rows it documents, its notes.

    ``zero_means_off`` says whether a budget of 0 turns reasoning off for a model (Gemini's
    budget models); elsewhere ``reasoning=0`` is a ``ValueError``.
    """

    plan: Planner
    rows: tuple[EffortRow, ...] = ()
    notes: tuple[str, ...] = ()
    zero_means_off: Callable[[str], bool] = field(default=lambda model: False)
