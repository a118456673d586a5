"""One reasoning knob for every provider: ``plan_reasoning`` maps it to native request fields.

Providers spell "think harder" in different ways: an effort level, a token budget, a switch in a
chat template, a level that only some models take, or nothing at all. ``plan_reasoning`` turns
one portable value into the fields that one provider's request takes for one model, and lists
in plain words everything it had to approximate:

- ``None``: leave the provider's default alone (no fields at all);
- ``False``: turn reasoning off where the provider has a switch (otherwise a warning);
- ``True``: turn it on at the provider's default effort (its native "on" where one exists,
  ``"medium"`` where a level or a budget must be named);
- ``"none"``, ``"minimal"``, ``"low"``, ``"medium"``, ``"high"``, ``"xhigh"``, ``"max"``: an
  effort level (a level the model's profile does not document becomes the nearest one it does);
- an ``int``: a thinking budget in tokens (mapped to the nearest level, with a warning, where
  the provider only has levels).

>>> plan = plan_reasoning("anthropic", "claude-sonnet-4-5", "low")
>>> plan.params
{'thinking': {'type': 'enabled', 'budget_tokens': 2048}, 'max_tokens': 6144}
>>> merge_params({"model": "m", "thinking": {"type": "disabled"}}, plan.params)["thinking"]
{'type': 'enabled', 'budget_tokens': 2048}

This module names no provider and no model: what a model can do is its profile
(:mod:`reasoning_stream.profiles`), and each provider package's ``effort.py`` holds the planner
that writes its wire fields (an :class:`EffortPlanner`, built from ``_effort_planner``), found
through the provider registry. :func:`effort_table` plans every profile row with its provider's
planner, so the documented table cannot drift from the code or the data. No network, no SDK
import (the profiles read their package data once). Its side effects are warnings
(``ReasoningWarning``): once per (provider, model) when reasoning is asked of a model that
cannot reason, once per setting when a level or display became the nearest documented one or
cannot be sent.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Mapping
from typing import Any

from ._effort_planner import (
    ALLOWED,
    DISPLAYS,
    REASONING_LEVELS,
    Ask,
    Draft,
    EffortPlanner,
    Nearest,
    Reasoning,
    ReasoningDisplay,
    ReasoningLevel,
    ReasoningPlan,
    ReasoningWarning,
    always_reasons,
    ask_for,
    cannot_reason,
    check_display,
    level_for,
    merge_params,
    model_tail,
    validate_reasoning,
)
from .profiles import ModelProfile, lookup

__all__ = [  # noqa: F822 (PROVIDERS comes from the registry, when asked for)
    "ALLOWED",
    "DISPLAYS",
    "PROVIDERS",
    "REASONING_LEVELS",
    "Ask",
    "Draft",
    "EffortPlanner",
    "Reasoning",
    "ReasoningDisplay",
    "ReasoningLevel",
    "ReasoningPlan",
    "ReasoningWarning",
    "always_reasons",
    "cannot_reason",
    "check_display",
    "check_reasoning",
    "effort_table",
    "level_for",
    "lower_plan",
    "merge_params",
    "model_tail",
    "plan_reasoning",
    "rooted_examples",
    "table_examples",
    "validate_reasoning",
]


def _planner(provider: str) -> EffortPlanner:
    # Asked at call time, like the registry imports a provider's package: importing
    # reasoning_stream loads neither.
    from .providers._spec import provider_ids, spec

    found = spec(provider)
    if found is None:
        raise ValueError(f"unknown provider {provider!r}; known: {', '.join(provider_ids())}")
    return found.effort


def __getattr__(name: str) -> Any:
    # PROVIDERS: every provider id plan_reasoning takes, in the registry's order.
    if name == "PROVIDERS":
        from .providers._spec import provider_ids

        return provider_ids()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_warned: set[tuple[str, ...]] = set()
_warned_lock = threading.Lock()


def _warn_once(key: tuple[str, ...], message: str) -> None:
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    # stacklevel 4: the caller of plan_reasoning (a pipe), not this module.
    warnings.warn(message, ReasoningWarning, stacklevel=4)


def plan_reasoning(
    provider: str,
    model: str,
    reasoning: Reasoning,
    *,
    max_tokens: int | None = None,
    base_url: str | None = None,
    display: ReasoningDisplay = None,
) -> ReasoningPlan:
    """The native request fields that express ``reasoning`` for ``provider`` and ``model``.

    The model's profile (``profiles.lookup(provider, model, base_url=base_url)``) says whether
    it thinks never, optionally, by default or always, which effort levels it documents and
    how its provider asks for them; the provider's planner writes the fields.

    Args:
        provider: a pipe's ``provider`` id (one of ``PROVIDERS``).
        model: the model id as the pipe sends it.
        reasoning: ``None``, ``False``, ``True``, a level (``"none"``, ``"minimal"``,
            ``"low"``, ``"medium"``, ``"high"``, ``"xhigh"``, ``"max"``), or a token budget
            (``int``). See :func:`effort_table` for what each becomes.
        max_tokens: the output limit the caller will send, if any; budget-based Claude
            thinking raises it above the budget (and says so).
        base_url: the API root the request goes to, for rows that differ by endpoint (Qwen on
            DashScope, xAI).
        display: ``reasoning_display`` (``"full"``, ``"summarized"``, ``"omitted"``; ``None``
            leaves the provider's default).

    Raises:
        ValueError: an unknown provider, a value that is not a reasoning setting (a float, an
            unknown level, a negative budget, 0 where it means nothing, a Claude budget below
            1024), a display that is none of the three, or a ``max_tokens`` that is not a
            positive int.

    A model that cannot reason gets no fields, ``supported=False``, and a ``ReasoningWarning``
    the first time per (provider, model); a level (or display) the model does not document
    becomes the nearest one it does, a tie going to the lower level, with a
    ``ReasoningWarning`` naming both (once per setting); a setting the model's profile says it
    cannot take (``False`` on a model that always thinks, a level on one that takes no effort
    field) sends nothing and warns once too. Every plan lists its notes in ``warnings``.

    >>> plan_reasoning("openai-chat", "o4-mini", 20000).params
    {'reasoning_effort': 'high'}
    >>> plan_reasoning("gemini", "gemini-2.5-flash", True).params
    {'generationConfig': {'thinkingConfig': {'thinkingBudget': -1, 'includeThoughts': True}}}
    """
    return _plan(
        provider,
        model,
        reasoning,
        max_tokens=max_tokens,
        warn=True,
        base_url=base_url,
        display=display,
    )


def _plan(
    provider: str,
    model: str,
    reasoning: Reasoning,
    *,
    max_tokens: int | None,
    warn: bool,
    base_url: str | None = None,
    display: ReasoningDisplay = None,
    profile: ModelProfile | None = None,
) -> ReasoningPlan:
    planner = _planner(provider)
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise ValueError(f"max_tokens must be a positive int or None, got {max_tokens!r}")
    check_display(display)
    ask = ask_for(reasoning, display)
    if profile is None:
        profile = lookup(provider, model, base_url=base_url)
    zero = ask is not None and ask.kind == "budget" and ask.budget == 0
    if zero and not planner.zero_means_off(profile):
        raise ValueError(
            f"reasoning=0 means nothing for {provider} model {model!r}: give a positive "
            f"token budget, or False to turn reasoning off; {ALLOWED}"
        )
    where = f"{provider} model {model!r}"
    if ask is None:
        # "Leave it alone" sends nothing; planning a plain "on" tells whether the model is
        # known to reason, which is all `supported` means here.
        known = planner.draft(profile, model, Ask("on", True), max_tokens, where).supported
        if display is None:
            return ReasoningPlan(provider, model, None, {}, (), known)
        ask = Ask("default", None, display=display)
        draft = planner.draft(profile, model, ask, max_tokens, where)
        draft.supported = known
    else:
        draft = planner.draft(profile, model, ask, max_tokens, where)
    notes = draft.warnings
    if draft.cannot_reason:
        message = (
            f"{where} is not a reasoning model: reasoning={ask.raw!r} is ignored and "
            "nothing is sent"
        )
        notes = [message, *notes]
        if warn:
            _warn_once((provider, model), message)
    elif warn:
        key = (provider, model, repr(ask.raw), repr(display))
        for note in notes:
            if isinstance(note, Nearest):
                _warn_once((*key, note), str(note))
        if not draft.supported and profile.known and ask.kind != "default" and notes:
            # The model's row says this cannot be asked (a model that always thinks, an
            # effort field it rejects): said once, and nothing that would fail is sent.
            _warn_once(key, str(notes[0]))
    return ReasoningPlan(
        provider,
        model,
        reasoning,
        draft.params,
        tuple(str(note) for note in notes),
        draft.supported,
        tuple(draft.drops),
        display,
    )


def check_reasoning(
    provider: str,
    model: str,
    reasoning: Reasoning,
    *,
    max_tokens: int | None = None,
    base_url: str | None = None,
    display: ReasoningDisplay = None,
) -> None:
    """Raise ``ValueError`` unless ``reasoning`` can be planned for ``provider`` and ``model``.

    What :func:`plan_reasoning` would refuse (``0`` where it means nothing, a Claude budget
    below 1024), said at a pipe's construction instead of at its first run; no warning.
    """
    _plan(
        provider,
        model,
        reasoning,
        max_tokens=max_tokens,
        warn=False,
        base_url=base_url,
        display=display,
    )


_LADDER: tuple[ReasoningLevel, ...] = REASONING_LEVELS[1:]
"""The levels an exhaustion retry steps through: ``"none"`` is off, not a lower effort."""


def _ladder(reasoning: Reasoning) -> list[Reasoning]:
    """The settings below ``reasoning``, nearest first (provider-free).

    Levels step down to ``"minimal"`` (a level the model lacks plans as the nearest it has, so
    the steps that change nothing are skipped); ``True`` and ``None`` (the provider's default
    effort, ``"medium"`` or less for the models with levels) go to ``"medium"`` then ``"low"``
    and to ``"low"`` alone; a budget halves while it stays a positive number of tokens.
    ``False`` and ``"none"`` have nothing below them: turning reasoning off is not a lower
    effort.
    """
    if reasoning is None:
        return ["low"]
    if isinstance(reasoning, bool):
        return ["medium", "low"] if reasoning else []
    if isinstance(reasoning, int):
        steps: list[Reasoning] = []
        budget = reasoning // 2
        while budget >= 1:
            steps.append(budget)
            budget //= 2
        return steps
    if reasoning in _LADDER:
        return list(_LADDER[: _LADDER.index(reasoning)][::-1])
    return []


def lower_plan(
    provider: str,
    model: str,
    reasoning: Reasoning,
    *,
    max_tokens: int | None = None,
    base_url: str | None = None,
    display: ReasoningDisplay = None,
) -> ReasoningPlan | None:
    """The plan of the nearest setting below ``reasoning`` that changes the request, or ``None``.

    Steps down the levels (a budget halves; ``True`` and ``None`` start below the provider's
    default) and skips every step whose native parameters are the ones ``reasoning`` already
    sends (Ollama's ``think`` is on for every level; a level the model lacks plans as one it
    has), so a retry with the plan really asks for less thinking. ``None`` when nothing lower
    exists: the least level, ``False``, a model without effort control, or a budget the
    provider refuses to lower (Claude's 1024-token minimum). The plan's ``reasoning`` is the
    setting to use.

    >>> lower_plan("openai-chat", "o4-mini", "high").params
    {'reasoning_effort': 'medium'}
    >>> lower_plan("anthropic", "claude-sonnet-4-5", 4000).params["thinking"]
    {'type': 'enabled', 'budget_tokens': 2000}
    >>> lower_plan("ollama", "qwen3", "high") is None
    True
    """

    def plan(setting: Reasoning) -> ReasoningPlan:
        return _plan(
            provider,
            model,
            setting,
            max_tokens=max_tokens,
            warn=False,
            base_url=base_url,
            display=display,
        )

    current = plan(reasoning)
    for candidate in _ladder(reasoning):
        try:
            lower = plan(candidate)
        except ValueError:
            return None  # below the provider's least budget: nothing lower exists
        if lower.supported and lower.params != current.params:
            return lower
    return None


# ------------------------------------------------------------------------------- the table

_TABLE_BUDGET = 10000
"""The token budget the table's last column is computed for."""

_HEADER = (
    "| provider | models (profile rows) | `False` | `True` | each documented level | "
    f"`{_TABLE_BUDGET}` (a token budget) |\n"
    "|---|---|---|---|---|---|"
)

_GENERAL_NOTES = (
    '`None` never adds a field. "(warning)" marks a plan whose `warnings` explain an '
    "approximation or a drop; `pipe.reasoning_plan().warnings` has the words.",
    "Levels are `none`, `minimal`, `low`, `medium`, `high`, `xhigh`, `max`. A level the model "
    "does not document is sent as the nearest one it does (a tie goes to the lower), with a "
    "`ReasoningWarning` naming both. A model without levels sends its on switch for any level.",
    'Nearest level for a budget N where only levels exist: N < 4096 is `"low"`, N < 12288 is '
    '`"medium"`, else `"high"`. A budget of 0 is only meaningful for Gemini budget models; '
    "elsewhere it raises `ValueError`.",
    "Each row is a row of the model profiles (`profiles.table()`), planned by its provider; "
    '"any other model" is the conservative profile an unknown model gets.',
)


def _example(provider: str, patterns: tuple[str, ...], roots: tuple[str, ...]) -> str:
    """A model id the row's patterns match and the profiles resolve to that row: a glob
    left out (or filled), a character class as its first member."""
    from .profiles import UnknownModelWarning

    tried: list[str] = []
    for pattern in patterns:
        bare = re.sub(r"\[(.)[^\]]*\]", r"\1", pattern).replace("?", "x")
        for fill in ("", "1", "x", "x-1"):
            tried.append(bare.replace("*", fill).strip("-"))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UnknownModelWarning)
                found = lookup(provider, tried[-1], base_url=roots[0] if roots else None)
            if found.pattern == pattern:
                return tried[-1]
    return tried[0]


def _rows() -> list[tuple[str, str, ModelProfile, str]]:
    """``(provider, models in words, profile, example id)`` for every table row, by provider."""
    from .profiles import table
    from .providers._spec import provider_ids

    rows: list[tuple[str, str, ModelProfile, str]] = []
    catalogue = table()
    for provider in provider_ids():
        for row in catalogue:
            if provider not in row.providers:
                continue
            models = ", ".join(f"`{pattern}`" for pattern in row.patterns)
            if row.api_roots:
                models += " on " + ", ".join(f"`{root}`" for root in row.api_roots)
            rows.append(
                (provider, models, row.profile, _example(provider, row.patterns, row.api_roots))
            )
        if not any(provider in row.providers and "*" in row.patterns for row in catalogue):
            rows.append((provider, "any other model", ModelProfile(), "an-unknown-model"))
    return rows


def table_examples() -> list[tuple[str, str]]:
    """``(provider, example model id)`` for every table row whose id needs no API root."""
    from .profiles import table

    rooted = {
        (provider, _example(provider, row.patterns, row.api_roots))
        for row in table()
        if row.api_roots
        for provider in row.providers
    }
    return [
        (provider, example)
        for provider, _models, _profile, example in _rows()
        if (provider, example) not in rooted and example != "an-unknown-model"
    ]


def rooted_examples() -> list[tuple[str, str, str]]:
    """``(provider, example model id, API root)`` for every table row limited to API roots."""
    from .profiles import table

    return [
        (provider, _example(provider, row.patterns, row.api_roots), row.api_roots[0])
        for row in table()
        if row.api_roots
        for provider in row.providers
    ]


def effort_table() -> str:
    """The provider-by-setting mapping as a Markdown table, computed from the model profiles.

    Each row is a row of ``profiles.table()`` planned by its provider for every setting, so
    the table is what the code does with what the profiles say (the documentation shows it;
    a test keeps it current).

    >>> effort_table().splitlines()[0].startswith("| provider | models")
    True
    """
    from .providers._spec import spec

    lines = [_HEADER]
    notes = list(_GENERAL_NOTES)
    seen: set[str] = set()
    for provider, models, profile, example in _rows():
        lines.append(_table_row(provider, models, profile, example))
        if provider not in seen:
            seen.add(provider)
            found = spec(provider)
            if found is not None:
                notes.extend(found.effort.notes)
    table_text = "\n".join(lines)
    bullets = "\n".join(f"- {note}" for note in notes)
    return f"{table_text}\n\nNotes:\n\n{bullets}\n"


def _table_row(provider: str, models: str, profile: ModelProfile, example: str) -> str:
    def plan(setting: Reasoning) -> ReasoningPlan:
        return _plan(provider, example, setting, max_tokens=None, warn=False, profile=profile)

    off = plan(False)
    if not off.supported and off.warnings and "is not a reasoning model" in off.warnings[0]:
        nothing = "not a reasoning model: nothing sent, one-time warning"
        return f"| {provider} | {models} | {nothing} | | | |"
    levels: tuple[str, ...] = profile.efforts or ("high",)
    rendered = [_cell(plan(level)) for level in levels]  # type: ignore[arg-type]
    templated = {
        text.replace(f'"{level}"', "level") for text, level in zip(rendered, levels, strict=True)
    }
    if len(set(rendered)) == 1:
        level_cell = rendered[0]
    elif len(templated) == 1:
        level_cell = templated.pop() + " (" + ", ".join(levels) + ")"
    else:
        level_cell = " / ".join(rendered)
    try:
        budget_cell = _cell(plan(_TABLE_BUDGET))
    except ValueError as error:  # pragma: no cover - every row takes 10000 today
        budget_cell = f"ValueError: {error}"
    cells = [_cell(off), _cell(plan(True)), level_cell, budget_cell]
    return f"| {provider} | {models} | " + " | ".join(cells) + " |"


def _cell(plan: ReasoningPlan) -> str:
    text = _render(plan.params) if plan.params else "nothing"
    if plan.drops:
        text += " minus " + ", ".join(f"`{'.'.join(path)}`" for path in plan.drops)
    if plan.warnings:
        text += " (warning)"
    return text


def _render(value: Any, top: bool = True) -> str:
    if isinstance(value, Mapping):
        inner = ", ".join(f"{key}: {_render(item, False)}" for key, item in value.items())
        return f"`{inner}`" if top else f"{{{inner}}}"
    import json  # the table is rendered rarely: importing the package stays quick

    return json.dumps(value)


__doc__ += "\nThe mapping is :func:`effort_table`; the documentation shows it.\n"
