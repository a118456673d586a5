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

The module is pure: no I/O, no SDK import. Its one side effect is a ``ReasoningWarning`` issued
once per (provider, model) when reasoning is asked of a model that cannot reason.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = [
    "PROVIDERS",
    "REASONING_LEVELS",
    "Reasoning",
    "ReasoningLevel",
    "ReasoningPlan",
    "ReasoningWarning",
    "effort_table",
    "merge_params",
    "plan_reasoning",
]

ReasoningLevel: TypeAlias = Literal["low", "medium", "high"]
Reasoning: TypeAlias = bool | ReasoningLevel | int | None
"""``None`` (provider default), ``False``, ``True``, an effort level, or a token budget."""

REASONING_LEVELS: tuple[ReasoningLevel, ...] = ("low", "medium", "high")

PROVIDERS: tuple[str, ...] = (
    "openai-chat",
    "openai-responses",
    "openrouter",
    "anthropic",
    "bedrock",
    "gemini",
    "ollama",
)
"""The provider ids ``plan_reasoning`` knows: the ``provider`` attribute of each pipe."""

_EFFORT_TABLE = """\
| provider | models | `False` | `True` | `"low"` / `"medium"` / `"high"` | `int` N (token budget) |
|---|---|---|---|---|---|
| openai-chat | o1, o3, o4, gpt-5 codex, gpt-oss, any other id | nothing (warning) | `reasoning_effort: "medium"` | `reasoning_effort: level` | `reasoning_effort:` nearest level (warning) |
| openai-chat | gpt-5, gpt-5-mini, gpt-5-nano | `reasoning_effort: "minimal"` | as above | as above | as above |
| openai-chat | gpt-5.1 and later gpt-5.x | `reasoning_effort: "none"` | as above | as above | as above |
| openai-chat | qwen (Qwen3 and later) | `chat_template_kwargs: {enable_thinking: false}` | `chat_template_kwargs: {enable_thinking: true}` | `enable_thinking: true` (warning) | `enable_thinking: true` (warning) |
| openai-chat | deepseek-reasoner, DeepSeek-R1, QwQ, Qwen *-thinking, o1-mini, o1-preview, gpt-5 pro | nothing (warning: always reasons) | nothing | nothing (warning) | nothing (warning) |
| openai-chat | gpt-3.5, gpt-4*, chatgpt-*, gpt-5 chat, qwen2*, Qwen *-instruct-2507 | not a reasoning model: nothing, one-time warning | | | |
| openai-responses | the openai-chat families above, except the qwen switch | `reasoning: {effort: "minimal"/"none"}` as for openai-chat, else nothing (warning) | `reasoning: {effort: "medium"}` | `reasoning: {effort: level}` | `reasoning: {effort:` nearest level`}` (warning) |
| openrouter | any | `reasoning: {enabled: false}` | `reasoning: {enabled: true}` | `reasoning: {effort: level}` | `reasoning: {max_tokens: N}` |
| anthropic | claude-3-7 to 4.5 (sonnet-4, opus-4, opus-4-1, sonnet-4-5, haiku-4-5, opus-4-5), unknown ids | `thinking: {type: disabled}` | as `"medium"` | `thinking: {type: enabled, budget_tokens: 2048 / 8000 / 16000}` + `max_tokens` | `thinking: {type: enabled, budget_tokens: N}` (N >= 1024) + `max_tokens` |
| anthropic | 4.6 (opus-4-6, sonnet-4-6) | `thinking: {type: disabled}` | `thinking: {type: adaptive}` | `thinking: {type: adaptive}`, `output_config: {effort: level}` | budget as above (warning: deprecated here) |
| anthropic | opus-4-7 and later, mythos, fable | nothing (warning: off unless asked) | `thinking: {type: adaptive}` | adaptive + `output_config: {effort: level}` | adaptive + nearest level (warning) |
| anthropic | claude-3-5, claude-3 opus/sonnet/haiku, claude-2, claude-instant | not a reasoning model: nothing, one-time warning | | | |
| bedrock | `anthropic.claude-*` | as anthropic, in `additionalModelRequestFields` | | | max tokens go to `inferenceConfig.maxTokens` |
| bedrock | Nova 2 (`nova-2`) | `additionalModelRequestFields.reasoningConfig: {type: disabled}` | `reasoningConfig: {type: enabled, maxReasoningEffort: "medium"}` | `maxReasoningEffort: level` | nearest level (warning) |
| bedrock | gpt-oss | nothing (warning) | `additionalModelRequestFields.reasoning_effort: "medium"` | `reasoning_effort: level` | nearest level (warning) |
| bedrock | DeepSeek-R1 | nothing (warning: always reasons) | nothing | nothing (warning) | nothing (warning) |
| bedrock | Nova 1, Titan, Llama, Cohere, AI21, Mistral | not a reasoning model: nothing, one-time warning | | | |
| bedrock | any other family | nothing, warning (no known control; `supported=False`) | | | |
| gemini | gemini-2.5-pro | `thinkingBudget: 128` (warning: cannot turn off) | `thinkingBudget: -1` (dynamic) | `thinkingBudget: 1024 / 4096 / 16384` | `thinkingBudget: N`, clamped to 128..32768 (warning) |
| gemini | gemini-2.5-flash, gemini-2.5-flash-lite | `thinkingBudget: 0` | `thinkingBudget: -1` | as above | N clamped to 1..24576 (flash), 512..24576 (lite); 0 means `False` |
| gemini | gemini-3-pro | `thinkingLevel: "low"` (warning) | no level (the model's default) | `thinkingLevel: "low"` / `"high"` (`"medium"` sent as `"high"`, warning) | nearest level (warning) |
| gemini | gemini-3.1-pro and later pro | `thinkingLevel: "low"` (warning) | no level | `thinkingLevel: level` | nearest level (warning) |
| gemini | gemini-3 flash, flash-lite and later | `thinkingLevel: "minimal"` (warning) | no level | `thinkingLevel: level` | nearest level (warning) |
| gemini | other gemini ids (aliases such as gemini-flash-latest) | `thinkingBudget: 0` | `thinkingBudget: -1` | `thinkingBudget: 1024 / 4096 / 16384` | `thinkingBudget: N`; 0 means `False` |
| gemini | gemini-1.x, gemini-2.0 (not thinking-exp), gemma | not a reasoning model: nothing, one-time warning | | | |
| ollama | gpt-oss | nothing (warning: takes levels only) | `think: "medium"` | `think: level` | `think:` nearest level (warning) |
| ollama | any other model | `think: false` | `think: true` | `think: true` (warning) | `think: true` (warning) |

Notes:

- `None` never adds a field. Gemini fields live under `generationConfig.thinkingConfig`, with
  `includeThoughts: true` whenever the plan turns thinking on.
- Nearest level for a budget N: N < 4096 is `"low"`, N < 12288 is `"medium"`, else `"high"`.
  A budget of 0 is only meaningful for Gemini budget models; elsewhere it raises `ValueError`.
- Anthropic budgets (and Claude on Bedrock): `max_tokens` must exceed the budget, because
  thinking counts toward it. The plan sends the given `max_tokens` when it is above the budget,
  otherwise budget + 4096 (with a warning when a given value was too small). With thinking on,
  Anthropic rejects a changed `temperature` or `top_k`; every such plan says so in its warnings.
- Nova 2 at `"high"` takes no `temperature`, `topP` or `maxTokens`; the plan warns.
"""  # noqa: E501 (Markdown table rows cannot wrap)

_NEAREST_LOW_BELOW = 4096
_NEAREST_MEDIUM_BELOW = 12288

_ANTHROPIC_BUDGETS: dict[ReasoningLevel, int] = {"low": 2048, "medium": 8000, "high": 16000}
_ANTHROPIC_MIN_BUDGET = 1024
_ANSWER_ROOM = 4096
"""Tokens left for the answer above a thinking budget when ``max_tokens`` must be raised."""

_GEMINI_BUDGETS: dict[ReasoningLevel, int] = {"low": 1024, "medium": 4096, "high": 16384}

_ALLOWED = (
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


def effort_table() -> str:
    """The provider-by-setting mapping as a Markdown table (the README shows it).

    >>> effort_table().splitlines()[0].startswith("| provider | models |")
    True
    """
    return _EFFORT_TABLE


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
class _Ask:
    """A validated setting: what the user wants, before any provider is considered."""

    kind: Literal["off", "on", "level", "budget"]
    raw: bool | str | int
    level: ReasoningLevel = "medium"
    budget: int = 0


def _ask_for(reasoning: object) -> _Ask | None:
    if reasoning is None:
        return None
    # bool first: True and False are ints too.
    if isinstance(reasoning, bool):
        return _Ask("on", reasoning) if reasoning else _Ask("off", reasoning)
    if isinstance(reasoning, int):
        if reasoning < 0:
            raise ValueError(
                f"reasoning={reasoning!r}: a token budget cannot be negative; {_ALLOWED}"
            )
        return _Ask("budget", reasoning, level=_nearest_level(reasoning), budget=reasoning)
    if isinstance(reasoning, str) and reasoning in REASONING_LEVELS:
        return _Ask("level", reasoning, level=reasoning)
    raise ValueError(f"reasoning={reasoning!r} is not a reasoning setting; {_ALLOWED}")


def validate_reasoning(reasoning: object) -> None:
    """Raise ``ValueError`` unless ``reasoning`` is a valid setting (checked at construction)."""
    _ask_for(reasoning)


def _nearest_level(budget: int) -> ReasoningLevel:
    if budget < _NEAREST_LOW_BELOW:
        return "low"
    if budget < _NEAREST_MEDIUM_BELOW:
        return "medium"
    return "high"


@dataclass(slots=True)
class _Draft:
    """A planner's answer, before ``plan_reasoning`` freezes it into a ``ReasoningPlan``."""

    params: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    supported: bool = True
    cannot_reason: bool = False


def _cannot_reason() -> _Draft:
    return _Draft(supported=False, cannot_reason=True)


def _always_reasons(ask: _Ask, where: str) -> _Draft:
    if ask.kind == "on":
        return _Draft()
    if ask.kind == "off":
        note = f"{where} always reasons and cannot turn it off; nothing sent"
    else:
        note = f"{where} always reasons and takes no effort setting; {ask.raw!r} sent nothing"
    return _Draft(warnings=[note], supported=False)


def _level_for(ask: _Ask, where: str) -> tuple[ReasoningLevel, list[str]]:
    """The effort level for an "on", level or budget ask, where only levels exist."""
    if ask.kind == "budget":
        return ask.level, [
            f"{where} takes effort levels, not token budgets: "
            f"a budget of {ask.budget} tokens was sent as {ask.level!r}"
        ]
    return ask.level, []


def _tail(model: str) -> str:
    """The model's own name: lowercase, without an ``org/`` or ``models/`` prefix."""
    return model.lower().rsplit("/", 1)[-1]


# --------------------------------------------------------------------------------- OpenAI


@dataclass(frozen=True, slots=True)
class _OpenAIFamily:
    kind: Literal["none", "fixed", "effort", "qwen"]
    off: str | None = None
    """The effort value that turns reasoning off, for the models that have one."""


_GPT5 = re.compile(r"gpt-5(?:\.(\d+))?")


def _openai_family(model: str) -> _OpenAIFamily:
    name = _tail(model)
    if name.startswith(("gpt-3.5", "gpt-4", "chatgpt-")) or re.match(r"gpt-5[.\d]*-chat", name):
        return _OpenAIFamily("none")
    if "gpt-oss" in name:
        return _OpenAIFamily("effort")
    gpt5 = _GPT5.match(name)
    if gpt5 is not None:
        if "-pro" in name:
            # GPT-5 pro runs at one fixed, high effort.
            return _OpenAIFamily("fixed")
        if "codex" in name:
            return _OpenAIFamily("effort")
        # GPT-5 itself has "minimal"; from 5.1 on, "none" replaced it.
        return _OpenAIFamily("effort", off="none" if gpt5.group(1) else "minimal")
    if re.match(r"o\d", name):
        if name.startswith(("o1-mini", "o1-preview")):
            return _OpenAIFamily("fixed")
        return _OpenAIFamily("effort")
    # Before the Qwen checks: R1 distillations carry the base model's name (R1-Distill-Qwen).
    if "deepseek" in name and ("reasoner" in name or "r1" in name):
        return _OpenAIFamily("fixed")
    if "qwq" in name or ("qwen" in name and "thinking" in name):
        return _OpenAIFamily("fixed")
    if "qwen" in name:
        if name.startswith("qwen2") or "instruct-2507" in name:
            return _OpenAIFamily("none")
        return _OpenAIFamily("qwen")
    # Unknown ids on OpenAI-compatible servers: reasoning_effort is the common field, and
    # servers that do not know it ignore it.
    return _OpenAIFamily("effort")


def _effort_draft(
    family: _OpenAIFamily, ask: _Ask, where: str, put: Callable[[str], dict[str, Any]]
) -> _Draft:
    if ask.kind == "off":
        if family.off is None:
            return _Draft(
                warnings=[f"{where} has no effort value that turns reasoning off; nothing sent"],
                supported=False,
            )
        return _Draft(put(family.off))
    level, notes = _level_for(ask, where)
    return _Draft(put(level), notes)


def _plan_openai_chat(model: str, ask: _Ask, max_tokens: int | None, where: str) -> _Draft:
    family = _openai_family(model)
    if family.kind == "none":
        return _cannot_reason()
    if family.kind == "fixed":
        return _always_reasons(ask, where)
    if family.kind == "qwen":
        # Qwen's chat template has a thinking switch and nothing finer.
        on = ask.kind != "off"
        notes: list[str] = []
        if ask.kind in ("level", "budget"):
            notes.append(
                f"{where} only switches thinking on or off: {ask.raw!r} was sent as "
                "enable_thinking=True"
            )
        return _Draft({"chat_template_kwargs": {"enable_thinking": on}}, notes)
    return _effort_draft(family, ask, where, lambda value: {"reasoning_effort": value})


def _plan_openai_responses(model: str, ask: _Ask, max_tokens: int | None, where: str) -> _Draft:
    family = _openai_family(model)
    if family.kind == "none":
        return _cannot_reason()
    if family.kind == "fixed":
        return _always_reasons(ask, where)
    # The Responses API has no chat-template switch; Qwen servers take the effort field there.
    return _effort_draft(family, ask, where, lambda value: {"reasoning": {"effort": value}})


# --------------------------------------------------------------------------------- OpenRouter


def _plan_openrouter(model: str, ask: _Ask, max_tokens: int | None, where: str) -> _Draft:
    vendor, _, name = model.lower().partition("/")
    if (
        (vendor == "openai" and _openai_family(name).kind == "none")
        or (vendor == "anthropic" and _claude_style(name) == "none")
        or (vendor == "google" and _gemini_family(name).style == "none")
    ):
        return _cannot_reason()
    # OpenRouter normalises one `reasoning` object across its upstream providers.
    reasoning: dict[str, Any]
    if ask.kind == "off":
        reasoning = {"enabled": False}
    elif ask.kind == "on":
        reasoning = {"enabled": True}
    elif ask.kind == "level":
        reasoning = {"effort": ask.level}
    else:
        reasoning = {"max_tokens": ask.budget}
    return _Draft({"reasoning": reasoning})


# --------------------------------------------------------------------------------- Claude

_ClaudeStyle: TypeAlias = Literal["none", "budget", "adaptive", "adaptive-only"]

_CLAUDE_VERSION = re.compile(
    r"claude-(?:(?P<name>[a-z]+)-)?v?(?P<major>\d+)(?:[.-](?P<minor>\d)(?!\d))?"
    r"(?:-(?P<after>[a-z]+))?"
)
_ADAPTIVE_ONLY_NAMES = frozenset({"mythos", "fable"})


def _claude_style(model: str) -> _ClaudeStyle:
    """Which thinking API a Claude model id takes, from the version in its name.

    Before 3.7 there is no extended thinking; 3.7 to 4.5 take a token budget; 4.6 adds adaptive
    thinking with an effort level (budgets deprecated); 4.7 and later, Mythos and Fable take
    adaptive thinking only. A date suffix is not a minor version (``claude-sonnet-4-20250514``
    is 4.0). Ids without a version get the budget API, the one most models accept.
    """
    name = model.lower()
    match = _CLAUDE_VERSION.search(name)
    if match is None:
        return "adaptive-only" if any(n in name for n in _ADAPTIVE_ONLY_NAMES) else "budget"
    if {match["name"], match["after"]} & _ADAPTIVE_ONLY_NAMES:
        return "adaptive-only"
    version = (int(match["major"]), int(match["minor"] or 0))
    if version < (3, 7):
        return "none"
    if version < (4, 6):
        return "budget"
    if version == (4, 6):
        return "adaptive"
    return "adaptive-only"


@dataclass(slots=True)
class _ClaudeThinking:
    fields: dict[str, Any]
    max_tokens: int | None
    notes: list[str]


def _claude_thinking(
    ask: _Ask, style: _ClaudeStyle, max_tokens: int | None, where: str
) -> _ClaudeThinking:
    if ask.kind == "off":
        if style == "adaptive-only":
            return _ClaudeThinking(
                {},
                None,
                [
                    f"{where} has no 'disabled' thinking type; no thinking field was sent, "
                    "which leaves extended thinking off"
                ],
            )
        return _ClaudeThinking({"thinking": {"type": "disabled"}}, None, [])
    notes: list[str] = []
    fields: dict[str, Any] = {}
    budget: int | None = None
    if ask.kind == "budget":
        if ask.budget < _ANTHROPIC_MIN_BUDGET:
            raise ValueError(
                f"reasoning={ask.budget}: Claude thinking budgets start at "
                f"{_ANTHROPIC_MIN_BUDGET} tokens for {where}; {_ALLOWED}"
            )
        if style == "adaptive-only":
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
    elif style in ("adaptive", "adaptive-only"):
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
    return _ClaudeThinking(fields, limit, notes)


def _plan_anthropic(model: str, ask: _Ask, max_tokens: int | None, where: str) -> _Draft:
    style = _claude_style(model)
    if style == "none":
        return _cannot_reason()
    thinking = _claude_thinking(ask, style, max_tokens, where)
    params = dict(thinking.fields)
    if thinking.max_tokens is not None:
        params["max_tokens"] = thinking.max_tokens
    return _Draft(params, thinking.notes)


# --------------------------------------------------------------------------------- Bedrock

_BEDROCK_NON_REASONING = re.compile(
    r"amazon\.(?:nova-(?:micro|lite|pro|premier)|titan)|meta\.llama|cohere\.|ai21\."
    r"|mistral\.(?!magistral)"
)


def _plan_bedrock(model: str, ask: _Ask, max_tokens: int | None, where: str) -> _Draft:
    name = model.lower()
    if "anthropic.claude" in name:
        style = _claude_style(name)
        if style == "none":
            return _cannot_reason()
        thinking = _claude_thinking(ask, style, max_tokens, where)
        params: dict[str, Any] = {}
        if thinking.fields:
            params["additionalModelRequestFields"] = thinking.fields
        if thinking.max_tokens is not None:
            params["inferenceConfig"] = {"maxTokens": thinking.max_tokens}
        return _Draft(params, thinking.notes)
    if "deepseek" in name and "r1" in name:
        return _always_reasons(ask, where)
    if "gpt-oss" in name:
        return _effort_draft(
            _OpenAIFamily("effort"),
            ask,
            where,
            lambda value: {"additionalModelRequestFields": {"reasoning_effort": value}},
        )
    if "nova-2" in name:
        if ask.kind == "off":
            config: dict[str, Any] = {"type": "disabled"}
            notes: list[str] = []
        else:
            level, notes = _level_for(ask, where)
            config = {"type": "enabled", "maxReasoningEffort": level}
            if level == "high":
                notes.append(
                    f"{where} at maxReasoningEffort 'high' takes no temperature, topP or "
                    "maxTokens: leave them unset"
                )
        return _Draft({"additionalModelRequestFields": {"reasoningConfig": config}}, notes)
    if _BEDROCK_NON_REASONING.search(name):
        return _cannot_reason()
    return _Draft(
        warnings=[
            f"{where}: no known reasoning control for this model family; nothing sent "
            "(put the native field in additionalModelRequestFields yourself)"
        ],
        supported=False,
    )


# --------------------------------------------------------------------------------- Gemini


@dataclass(frozen=True, slots=True)
class _GeminiFamily:
    style: Literal["none", "fixed", "budget", "level"]
    minimum: int = 1
    maximum: int | None = None
    can_turn_off: bool = True
    levels: tuple[str, ...] = ()


_GEMINI_VERSION = re.compile(r"gemini-(\d+)(?:\.(\d+))?")


def _gemini_family(model: str) -> _GeminiFamily:
    name = _tail(model)
    if name.startswith("gemma"):
        return _GeminiFamily("none")
    match = _GEMINI_VERSION.search(name)
    if match is None:
        # Aliases such as gemini-flash-latest move between generations; Gemini 3 still
        # accepts thinkingBudget for compatibility, so the budget form is the safe one.
        return _GeminiFamily("budget")
    version = (int(match[1]), int(match[2] or 0))
    if version < (2, 5):
        return _GeminiFamily("fixed" if "thinking" in name else "none")
    if version >= (3, 0):
        levels: tuple[str, ...]
        if "-pro" in name:
            levels = ("low", "high") if version == (3, 0) else ("low", "medium", "high")
        else:
            levels = ("minimal", "low", "medium", "high")
        return _GeminiFamily("level", levels=levels)
    if version == (2, 5):
        if "-pro" in name:
            return _GeminiFamily("budget", minimum=128, maximum=32768, can_turn_off=False)
        if "flash-lite" in name:
            return _GeminiFamily("budget", minimum=512, maximum=24576)
        if "flash" in name:
            return _GeminiFamily("budget", minimum=1, maximum=24576)
    return _GeminiFamily("budget")


def _plan_gemini(model: str, ask: _Ask, max_tokens: int | None, where: str) -> _Draft:
    family = _gemini_family(model)
    if family.style == "none":
        return _cannot_reason()
    if family.style == "fixed":
        return _always_reasons(ask, where)
    config: dict[str, Any]
    notes: list[str] = []
    if family.style == "level":
        if ask.kind == "off":
            least = family.levels[0]
            config = {"thinkingLevel": least}
            notes.append(
                f"{where} cannot turn thinking fully off; sent thinkingLevel {least!r}, its least"
            )
        elif ask.kind == "on":
            config = {"includeThoughts": True}
        else:
            level, notes = _level_for(ask, where)
            sent: str = level
            if level not in family.levels:
                # Only Gemini 3 Pro lacks "medium"; its own default is "high".
                sent = "high"
                notes.append(f"{where} has no {level!r} thinking level; sent {sent!r}")
            config = {"thinkingLevel": sent, "includeThoughts": True}
    else:
        off = ask.kind == "off" or (ask.kind == "budget" and ask.budget == 0)
        if off:
            if family.can_turn_off:
                config = {"thinkingBudget": 0}
            else:
                config = {"thinkingBudget": family.minimum}
                notes.append(
                    f"{where} cannot turn thinking off; sent its least budget, "
                    f"{family.minimum} tokens"
                )
        elif ask.kind == "on":
            config = {"thinkingBudget": -1, "includeThoughts": True}
        elif ask.kind == "level":
            config = {"thinkingBudget": _GEMINI_BUDGETS[ask.level], "includeThoughts": True}
        else:
            budget = max(ask.budget, family.minimum)
            if family.maximum is not None:
                budget = min(budget, family.maximum)
            if budget != ask.budget:
                notes.append(
                    f"{where} takes thinking budgets from {family.minimum} to "
                    f"{family.maximum} tokens; {ask.budget} was sent as {budget}"
                )
            config = {"thinkingBudget": budget, "includeThoughts": True}
    return _Draft({"generationConfig": {"thinkingConfig": config}}, notes)


# --------------------------------------------------------------------------------- Ollama


def _plan_ollama(model: str, ask: _Ask, max_tokens: int | None, where: str) -> _Draft:
    if "gpt-oss" in model.lower():
        # gpt-oss on Ollama takes a level and ignores true/false.
        if ask.kind == "off":
            return _Draft(
                warnings=[f"{where} cannot turn reasoning off ('low' is its least); nothing sent"],
                supported=False,
            )
        level, notes = _level_for(ask, where)
        return _Draft({"think": level}, notes)
    if ask.kind in ("level", "budget"):
        return _Draft(
            {"think": True},
            [f"{where} only switches thinking on or off: {ask.raw!r} was sent as think=True"],
        )
    return _Draft({"think": ask.kind == "on"})


# --------------------------------------------------------------------------------- dispatch

_Planner: TypeAlias = Callable[[str, _Ask, int | None, str], _Draft]

_PLANNERS: dict[str, _Planner] = {
    "openai-chat": _plan_openai_chat,
    "openai-responses": _plan_openai_responses,
    "openrouter": _plan_openrouter,
    "anthropic": _plan_anthropic,
    "bedrock": _plan_bedrock,
    "gemini": _plan_gemini,
    "ollama": _plan_ollama,
}

_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def _warn_once(provider: str, model: str, message: str) -> None:
    with _warned_lock:
        if (provider, model) in _warned:
            return
        _warned.add((provider, model))
    # stacklevel 3: the caller of plan_reasoning (a pipe), not this module.
    warnings.warn(message, ReasoningWarning, stacklevel=3)


def _zero_means_off(provider: str, model: str) -> bool:
    return provider == "gemini" and _gemini_family(model).style == "budget"


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
    planner = _PLANNERS.get(provider)
    if planner is None:
        raise ValueError(f"unknown provider {provider!r}; known: {', '.join(PROVIDERS)}")
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise ValueError(f"max_tokens must be a positive int or None, got {max_tokens!r}")
    ask = _ask_for(reasoning)
    zero = ask is not None and ask.kind == "budget" and ask.budget == 0
    if zero and not _zero_means_off(provider, model):
        raise ValueError(
            f"reasoning=0 means nothing for {provider} model {model!r}: give a positive "
            f"token budget, or False to turn reasoning off; {_ALLOWED}"
        )
    where = f"{provider} model {model!r}"
    if ask is None:
        # "Leave it alone" sends nothing; planning a plain "on" tells whether the model is
        # known to reason, which is all `supported` means here.
        known = planner(model, _Ask("on", True), max_tokens, where).supported
        return ReasoningPlan(provider, model, None, {}, (), known)
    draft = planner(model, ask, max_tokens, where)
    notes = draft.warnings
    if draft.cannot_reason:
        message = (
            f"{where} is not a reasoning model: reasoning={ask.raw!r} is ignored and "
            "nothing is sent"
        )
        notes = [message, *notes]
        _warn_once(provider, model, message)
    return ReasoningPlan(provider, model, reasoning, draft.params, tuple(notes), draft.supported)


__doc__ = (__doc__ or "") + "\nThe mapping, as :func:`effort_table` returns it:\n\n" + _EFFORT_TABLE
