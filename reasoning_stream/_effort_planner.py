"""What a reasoning-effort plan is made of: the settings, the ask, a planner and its rows.

The mechanics every provider's ``effort.py`` builds its :class:`EffortPlanner` from, and the
types ``plan_reasoning`` returns. Pure data and small functions: no provider named, no registry
asked (``reasoning_stream._effort`` finds a provider's planner through the registry), no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ._exceptions import InvalidValueError
from .profiles import DISPLAYS as PROFILE_DISPLAYS
from .profiles import ModelProfile

__all__ = [
    "ALLOWED",
    "DISPLAYS",
    "REASONING_LEVELS",
    "Ask",
    "Draft",
    "EffortPlanner",
    "Nearest",
    "Planner",
    "Reasoning",
    "ReasoningDisplay",
    "ReasoningLevel",
    "ReasoningPlan",
    "ReasoningWarning",
    "always_reasons",
    "ask_for",
    "cannot_reason",
    "check_display",
    "displayless",
    "level_for",
    "merge_params",
    "model_tail",
    "nearest_display",
    "nearest_level",
    "validate_reasoning",
    "without",
]

ReasoningLevel: TypeAlias = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
Reasoning: TypeAlias = bool | ReasoningLevel | int | None
"""``None`` (provider default), ``False``, ``True``, an effort level, or a token budget."""
ReasoningDisplay: TypeAlias = Literal["full", "summarized", "omitted"] | None
"""How much of the reasoning the provider shows: ``None`` is the provider's default."""

REASONING_LEVELS: tuple[ReasoningLevel, ...] = (
    "none",
    "minimal",
    "low",
    "medium",
    "high",
    "xhigh",
    "max",
)
"""The seven effort levels, least first (the profiles' ``LEVELS``, typed)."""
DISPLAYS: tuple[str, ...] = PROFILE_DISPLAYS

_NEAREST_LOW_BELOW = 4096
_NEAREST_MEDIUM_BELOW = 12288

ALLOWED = (
    "allowed: None (the provider's default), True, False, 'none', 'minimal', 'low', "
    "'medium', 'high', 'xhigh', 'max', or a positive int token budget"
)


class ReasoningWarning(UserWarning):
    """Issued once per (provider, model) when reasoning is asked of a model that cannot reason,
    and once per (provider, model, setting) when a level or display the model does not document
    was replaced by the nearest one it does, or when its profile says the setting cannot be
    sent (nothing is)."""


@dataclass(frozen=True, slots=True)
class ReasoningPlan:
    """What one reasoning setting becomes for one provider and model.

    ``params`` are the native request fields to merge into the request body (or SDK keyword
    arguments) with :func:`merge_params`; nested mappings merge key by key. Treat them as
    read-only. ``drops`` are field paths the request must not carry (removed before the
    merge: Claude's ``output_config.effort`` once thinking is switched off). ``warnings`` say,
    in words, what was approximated or dropped. ``supported`` is ``False`` when nothing could
    express the request: the model cannot reason, has no control for that setting, or is
    unknown to this table (for ``None``: whether the model is known to reason). ``display``
    is the ``reasoning_display`` asked for; its fields are in ``params`` too.

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
    drops: tuple[tuple[str, ...], ...] = ()
    display: ReasoningDisplay = None

    def apply(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """``request`` without the plan's ``drops`` and with its ``params`` merged in."""
        return merge_params(without(request, self.drops), self.params)


def without(request: Mapping[str, Any], paths: tuple[tuple[str, ...], ...]) -> dict[str, Any]:
    """``request`` (copied where it changes) without the fields at ``paths``; a mapping left
    empty by a removal goes too.

    >>> without({"a": {"b": 1}, "c": 2}, (("a", "b"),))
    {'c': 2}
    """
    result = dict(request)
    for path in paths:
        _remove(result, path)
    return result


def _remove(node: dict[str, Any], path: tuple[str, ...]) -> None:
    head, rest = path[0], path[1:]
    if head not in node:
        return
    if not rest:
        del node[head]
        return
    child = node[head]
    if isinstance(child, Mapping):
        copied = dict(child)
        _remove(copied, rest)
        if copied:
            node[head] = copied
        else:
            del node[head]


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
    """A validated setting: what the user wants, before any provider is considered.

    ``level`` is the level asked for (for a budget, the nearest of low, medium and high; for
    "on", ``"medium"``); ``display`` the ``reasoning_display`` asked for.
    """

    kind: Literal["off", "on", "level", "budget", "default"]
    raw: bool | str | int | None
    level: ReasoningLevel = "medium"
    budget: int = 0
    display: ReasoningDisplay = None


def ask_for(reasoning: object, display: ReasoningDisplay = None) -> Ask | None:
    """The :class:`Ask` for a setting (``None`` for ``None``); for a bad one an
    ``InvalidValueError``, which is both a ``UsageError`` and a ``ValueError``."""
    if reasoning is None:
        return None
    # bool first: True and False are ints too.
    if isinstance(reasoning, bool):
        kind: Literal["on", "off"] = "on" if reasoning else "off"
        return Ask(kind, reasoning, display=display)
    if isinstance(reasoning, int):
        if reasoning < 0:
            raise InvalidValueError(
                f"reasoning={reasoning!r}: a token budget cannot be negative; {ALLOWED}"
            )
        return Ask(
            "budget", reasoning, level=_nearest_level(reasoning), budget=reasoning, display=display
        )
    if isinstance(reasoning, str) and reasoning in REASONING_LEVELS:
        return Ask("level", reasoning, level=reasoning, display=display)
    raise InvalidValueError(f"reasoning={reasoning!r} is not a reasoning setting; {ALLOWED}")


def validate_reasoning(reasoning: object) -> None:
    """Raise ``InvalidValueError`` (a ``UsageError`` and a ``ValueError``) unless ``reasoning``
    is a valid setting (checked at construction)."""
    ask_for(reasoning)


def check_display(display: object) -> None:
    """Raise ``InvalidValueError`` (a ``UsageError`` and a ``ValueError``) unless ``display`` is
    ``None`` or one of :data:`DISPLAYS`."""
    if display is not None and display not in DISPLAYS:
        raise InvalidValueError(
            f"reasoning_display={display!r} is not a display; allowed: None (the provider's "
            "default), 'full', 'summarized', 'omitted'"
        )


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
    drops: list[tuple[str, ...]] = field(default_factory=list)


def cannot_reason() -> Draft:
    """The draft for a model that cannot reason: nothing sent."""
    return Draft(supported=False, cannot_reason=True)


def always_reasons(ask: Ask, where: str) -> Draft:
    """The draft for a model that always reasons and takes no effort field."""
    if ask.kind == "on":
        return Draft()
    if ask.kind == "off":
        note = f"{where} always reasons and cannot turn it off; nothing sent"
    else:
        note = f"{where} always reasons and takes no effort setting; {ask.raw!r} sent nothing"
    return Draft(warnings=[note], supported=False)


def level_for(
    ask: Ask, profile: ModelProfile, where: str, efforts: tuple[str, ...] | None = None
) -> tuple[str, list[str]]:
    """The documented effort level for an "on", level or budget ask, where levels exist.

    ``efforts`` (default: the profile's) are the levels the model documents; a level it lacks
    becomes the nearest one (a tie goes to the lower), with a note naming both. "On" takes
    ``"medium"`` or the level nearest to it, quietly: the user named no level.
    """
    levels = profile.efforts if efforts is None else efforts
    notes: list[str] = []
    if ask.kind == "budget":
        notes.append(
            f"{where} takes effort levels, not token budgets: "
            f"a budget of {ask.budget} tokens was sent as {ask.level!r}"
        )
    level: str = ask.level
    if levels and level not in levels:
        nearest = nearest_level(levels, level)
        if ask.kind != "on":
            notes.append(
                Nearest(
                    f"{where} has no effort level {level!r} (it documents "
                    f"{', '.join(levels)}); sent {nearest!r}, the nearest"
                )
            )
        level = nearest
    return level, notes


def nearest_level(levels: tuple[str, ...], level: str) -> str:
    """The level of ``levels`` nearest to ``level`` on the seven-level scale; ties go lower."""
    found = ModelProfile(efforts=levels).nearest_effort(level)
    assert found is not None, "nearest_level needs at least one level"
    return found


class Nearest(str):
    """A plan note saying a level or display was replaced by the nearest documented one;
    ``plan_reasoning`` also issues it as a :class:`ReasoningWarning` (once per ask)."""

    __slots__ = ()


def nearest_display(profile: ModelProfile, display: str, where: str) -> tuple[str, list[str]]:
    """The display the model documents nearest to ``display``, with a note when it differs
    (a tie goes to the one that shows more). A model that documents none gets ``display``."""
    found = profile.nearest_display(display)
    if found is None or found == display:
        return display, []
    return found, [
        Nearest(
            f"{where} has no reasoning_display {display!r} (it documents "
            f"{', '.join(profile.displays)}); planned {found!r}, the nearest"
        )
    ]


def without_display(draft: Draft, ask: Ask, profile: ModelProfile, where: str, api: str) -> Draft:
    """``draft`` for an API with no display field: a display other than the model's own
    default gets a note saying it could not be asked for."""
    display = ask.display
    if display is not None and display != profile.display_default:
        shown = profile.display_default or "the provider's default"
        draft.warnings.append(
            f"{where}: {api} has no field for reasoning_display {display!r}; the model shows "
            f"{shown}"
        )
    return draft


def displayless(plan: Callable[[ModelProfile, Ask, str], Draft], api: str) -> Planner:
    """The :data:`Planner` of an API with no display field: ``plan(profile, ask, where)``, with
    :func:`without_display`'s note naming ``api``."""

    def planner(
        profile: ModelProfile, model: str, ask: Ask, max_tokens: int | None, where: str
    ) -> Draft:
        return without_display(plan(profile, ask, where), ask, profile, where, api)

    return planner


def model_tail(model: str) -> str:
    """The model's own name: lowercase, without an ``org/`` or ``models/`` prefix."""
    return model.lower().rsplit("/", 1)[-1]


# ------------------------------------------------------------------------------ planners

Planner: TypeAlias = Callable[[ModelProfile, str, Ask, int | None, str], Draft]
"""``(profile, model, ask, max_tokens, where) -> Draft``: one provider's mapping. ``ask``
has kind ``"default"`` when only a display was asked for; a profile that never thinks does not
reach it (:meth:`EffortPlanner.draft`)."""


@dataclass(frozen=True, slots=True)
class EffortPlanner:
    """A provider's effort plan: the mapping, and the notes its table rows share.

    ``zero_means_off`` says whether a budget of 0 turns reasoning off for a model's profile
    (Gemini's budget models); elsewhere ``reasoning=0`` is a ``ValueError``.
    """

    plan: Planner
    notes: tuple[str, ...] = ()
    zero_means_off: Callable[[ModelProfile], bool] = field(default=lambda profile: False)

    def draft(
        self, profile: ModelProfile, model: str, ask: Ask, max_tokens: int | None, where: str
    ) -> Draft:
        """The provider's mapping for ``ask``; a model whose profile says it never thinks gets
        :func:`cannot_reason`'s draft on every provider, before the mapping is asked."""
        if profile.thinking == "never":
            return cannot_reason()
        return self.plan(profile, model, ask, max_tokens, where)
