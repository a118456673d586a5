"""One reasoning knob for every provider: ``plan_reasoning`` maps it to native request fields.

Providers spell "think harder" in different ways: an effort level, a token budget, a switch in a
chat template, a level that only some models take, or nothing at all. ``plan_reasoning`` turns
one portable value into the fields that one provider's request takes for one model, and lists
in plain words everything it had to approximate:

- ``None``: leave the provider's default alone (no fields at all);
- ``False``: turn reasoning off where the provider has a switch (otherwise a warning);
- ``True``: turn it on at the provider's default effort (its native "on" where one exists,
  ``"medium"`` where a level or a budget must be named);
- ``"low"``, ``"medium"``, ``"high"``: an effort level;
- an ``int``: a thinking budget in tokens (mapped to the nearest level, with a warning, where
  the provider only has levels).

>>> plan = plan_reasoning("anthropic", "claude-sonnet-4-5", "low")
>>> plan.params
{'thinking': {'type': 'enabled', 'budget_tokens': 2048}, 'max_tokens': 6144}
>>> merge_params({"model": "m", "thinking": {"type": "disabled"}}, plan.params)["thinking"]
{'type': 'enabled', 'budget_tokens': 2048}

This module names no provider: each provider package's ``effort.py`` holds its planner (an
:class:`EffortPlanner`, built from ``_effort_planner``), found through the provider registry.
:func:`effort_table` renders every planner's rows by running it on an example model of each
family, so the README table cannot drift from the code. The module is pure: no I/O, no SDK
import. Its one side effect is a ``ReasoningWarning`` issued once per (provider, model) when
reasoning is asked of a model that cannot reason.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping
from typing import Any

from ._effort_planner import (
    ALLOWED,
    REASONING_LEVELS,
    Ask,
    Draft,
    EffortPlanner,
    EffortRow,
    Reasoning,
    ReasoningLevel,
    ReasoningPlan,
    ReasoningWarning,
    always_reasons,
    ask_for,
    cannot_reason,
    level_for,
    merge_params,
    model_tail,
    validate_reasoning,
)

__all__ = [  # noqa: F822 (PROVIDERS comes from the registry, when asked for)
    "ALLOWED",
    "PROVIDERS",
    "REASONING_LEVELS",
    "Ask",
    "Draft",
    "EffortPlanner",
    "EffortRow",
    "Reasoning",
    "ReasoningLevel",
    "ReasoningPlan",
    "ReasoningWarning",
    "always_reasons",
    "cannot_reason",
    "check_reasoning",
    "effort_table",
    "level_for",
    "lower_plan",
    "merge_params",
    "model_tail",
    "plan_reasoning",
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


_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def _warn_once(provider: str, model: str, message: str) -> None:
    with _warned_lock:
        if (provider, model) in _warned:
            return
        _warned.add((provider, model))
    # stacklevel 4: the caller of plan_reasoning (a pipe), not this module.
    warnings.warn(message, ReasoningWarning, stacklevel=4)


def plan_reasoning(
    provider: str, model: str, reasoning: Reasoning, *, max_tokens: int | None = None
) -> ReasoningPlan:
    """The native request fields that express ``reasoning`` for ``provider`` and ``model``.

    Args:
        provider: a pipe's ``provider`` id (one of ``PROVIDERS``).
        model: the model id as the pipe sends it.
        reasoning: ``None``, ``False``, ``True``, ``"low"``, ``"medium"``, ``"high"``, or a
            token budget (``int``). See :func:`effort_table` for what each becomes.
        max_tokens: the output limit the caller will send, if any; budget-based Claude
            thinking raises it above the budget (and says so).

    Raises:
        ValueError: an unknown provider, a value that is not a reasoning setting (a float, an
            unknown level, a negative budget, 0 where it means nothing, a Claude budget below
            1024), or a ``max_tokens`` that is not a positive int.

    A model that cannot reason gets no fields, ``supported=False``, and a ``ReasoningWarning``
    the first time per (provider, model); every plan lists its notes in ``warnings``.

    >>> plan_reasoning("openai-chat", "o4-mini", 20000).params
    {'reasoning_effort': 'high'}
    >>> plan_reasoning("gemini", "gemini-2.5-flash", True).params
    {'generationConfig': {'thinkingConfig': {'thinkingBudget': -1, 'includeThoughts': True}}}
    """
    return _plan(provider, model, reasoning, max_tokens=max_tokens, warn=True)


def _plan(
    provider: str,
    model: str,
    reasoning: Reasoning,
    *,
    max_tokens: int | None,
    warn: bool,
) -> ReasoningPlan:
    planner = _planner(provider)
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise ValueError(f"max_tokens must be a positive int or None, got {max_tokens!r}")
    ask = ask_for(reasoning)
    zero = ask is not None and ask.kind == "budget" and ask.budget == 0
    if zero and not planner.zero_means_off(model):
        raise ValueError(
            f"reasoning=0 means nothing for {provider} model {model!r}: give a positive "
            f"token budget, or False to turn reasoning off; {ALLOWED}"
        )
    where = f"{provider} model {model!r}"
    if ask is None:
        # "Leave it alone" sends nothing; planning a plain "on" tells whether the model is
        # known to reason, which is all `supported` means here.
        known = planner.plan(model, Ask("on", True), max_tokens, where).supported
        return ReasoningPlan(provider, model, None, {}, (), known)
    draft = planner.plan(model, ask, max_tokens, where)
    notes = draft.warnings
    if draft.cannot_reason:
        message = (
            f"{where} is not a reasoning model: reasoning={ask.raw!r} is ignored and "
            "nothing is sent"
        )
        notes = [message, *notes]
        if warn:
            _warn_once(provider, model, message)
    return ReasoningPlan(provider, model, reasoning, draft.params, tuple(notes), draft.supported)


def check_reasoning(
    provider: str, model: str, reasoning: Reasoning, *, max_tokens: int | None = None
) -> None:
    """Raise ``ValueError`` unless ``reasoning`` can be planned for ``provider`` and ``model``.

    What :func:`plan_reasoning` would refuse (``0`` where it means nothing, a Claude budget
    below 1024), said at a pipe's construction instead of at its first run; no warning.
    """
    _plan(provider, model, reasoning, max_tokens=max_tokens, warn=False)


def _ladder(reasoning: Reasoning) -> list[Reasoning]:
    """The settings below ``reasoning``, nearest first (provider-free).

    Levels step down to ``"low"``; ``True`` and ``None`` (the provider's default effort,
    ``"medium"`` or less for the models with levels) go to ``"medium"`` then ``"low"`` and to
    ``"low"`` alone; a budget halves while it stays a positive number of tokens. ``False`` and
    ``"low"`` have nothing below them: turning reasoning off is not a lower effort.
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
    if reasoning in REASONING_LEVELS:
        return list(REASONING_LEVELS[: REASONING_LEVELS.index(reasoning)][::-1])
    return []


def lower_plan(
    provider: str, model: str, reasoning: Reasoning, *, max_tokens: int | None = None
) -> ReasoningPlan | None:
    """The plan of the nearest setting below ``reasoning`` that changes the request, or ``None``.

    Steps down ``"high"``, ``"medium"``, ``"low"`` (a budget halves; ``True`` and ``None`` start
    below the provider's default) and skips every step whose native parameters are the ones
    ``reasoning`` already sends (Ollama's ``think`` is on for every level), so a retry with
    the plan really asks for less thinking. ``None`` when nothing lower exists: ``"low"``,
    ``False``, a model without effort control, or a budget the provider refuses to lower
    (Claude's 1024-token minimum). The plan's ``reasoning`` is the setting to use.

    >>> lower_plan("openai-chat", "o4-mini", "high").params
    {'reasoning_effort': 'medium'}
    >>> lower_plan("anthropic", "claude-sonnet-4-5", 4000).params["thinking"]
    {'type': 'enabled', 'budget_tokens': 2000}
    >>> lower_plan("ollama", "qwen3", "high") is None
    True
    """
    current = _plan(provider, model, reasoning, max_tokens=max_tokens, warn=False)
    for candidate in _ladder(reasoning):
        try:
            plan = _plan(provider, model, candidate, max_tokens=max_tokens, warn=False)
        except ValueError:
            return None  # below the provider's least budget: nothing lower exists
        if plan.supported and plan.params != current.params:
            return plan
    return None


# ------------------------------------------------------------------------------- the table

_TABLE_BUDGET = 10000
"""The token budget the table's last column is computed for."""

_HEADER = (
    "| provider | models (the example computed) | `False` | `True` | "
    f'`"low"` / `"medium"` / `"high"` | `{_TABLE_BUDGET}` (a token budget) |\n'
    "|---|---|---|---|---|---|"
)

_GENERAL_NOTES = (
    '`None` never adds a field. "(warning)" marks a plan whose `warnings` explain an '
    "approximation or a drop; `pipe.reasoning_plan().warnings` has the words.",
    'Nearest level for a budget N: N < 4096 is `"low"`, N < 12288 is `"medium"`, else '
    '`"high"`. A budget of 0 is only meaningful for Gemini budget models; elsewhere it '
    "raises `ValueError`.",
)


def effort_table() -> str:
    """The provider-by-setting mapping as a Markdown table, computed from the planners.

    Each row runs its provider's planner on an example model of the family for every
    setting, so the table is what the code does (the README shows it; a test keeps the
    README current).

    >>> effort_table().splitlines()[0].startswith("| provider | models")
    True
    """
    from .providers._spec import specs

    rows = [_HEADER]
    notes = list(_GENERAL_NOTES)
    for provider in specs():
        for row in provider.effort.rows:
            rows.append(_table_row(provider.id, row))
        notes.extend(provider.effort.notes)
    lines = "\n".join(rows)
    bullets = "\n".join(f"- {note}" for note in notes)
    return f"{lines}\n\nNotes:\n\n{bullets}\n"


def _table_row(provider: str, row: EffortRow) -> str:
    def plan(setting: Reasoning) -> ReasoningPlan:
        return _plan(provider, row.example, setting, max_tokens=None, warn=False)

    models = f"{row.models} (`{row.example}`)"
    off = plan(False)
    if not off.supported and off.warnings and "is not a reasoning model" in off.warnings[0]:
        nothing = "not a reasoning model: nothing sent, one-time warning"
        return f"| {provider} | {models} | {nothing} | | | |"
    levels = [plan(level) for level in REASONING_LEVELS]
    rendered = [_cell(level) for level in levels]
    templated = {
        text.replace(f'"{level}"', "level")
        for text, level in zip(rendered, REASONING_LEVELS, strict=True)
    }
    if len(set(rendered)) == 1:
        level_cell = rendered[0]
    elif len(templated) == 1:
        level_cell = templated.pop()
    else:
        level_cell = " / ".join(rendered)
    cells = [_cell(off), _cell(plan(True)), level_cell, _cell(plan(_TABLE_BUDGET))]
    return f"| {provider} | {models} | " + " | ".join(cells) + " |"


def _cell(plan: ReasoningPlan) -> str:
    text = _render(plan.params) if plan.params else "nothing"
    if plan.warnings:
        text += " (warning)"
    return text


def _render(value: Any, top: bool = True) -> str:
    if isinstance(value, Mapping):
        inner = ", ".join(f"{key}: {_render(item, False)}" for key, item in value.items())
        return f"`{inner}`" if top else f"{{{inner}}}"
    import json  # the table is rendered rarely: importing the package stays quick

    return json.dumps(value)


__doc__ += "\nThe mapping is :func:`effort_table`; the README shows it.\n"
