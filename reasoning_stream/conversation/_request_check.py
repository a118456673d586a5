"""Request preflight: what a provider rejects in a request's own settings while the model thinks.

Passback preflight (:mod:`._preflight`) judges the history; this module judges the request the
pipe would send around it: its tool choice, sampling settings and output limit, against what
the model's profile says its provider rejects while the model thinks (``thinking_rejects``,
``thinking_top_p``, ``rejects_sources``: data, with the doc pages that say so). Whether a
request thinks, and with what budget, is the provider's business: its spec's
``thinking_request(pipe) -> (on, budget)`` (:func:`always_thinks` for an API whose only
thinking models are the ones that always think). A provider without one is not checked: a
gateway may drop the parameters a model does not take instead of failing.

A request problem is a :class:`PassbackProblem` whose ``index`` is :data:`REQUEST` (``-1``):
it belongs to no message. :func:`request_problems` names them (``conversation.preflight``
lists them after the history's); :func:`request_pipe` is what a provider driver calls before
sending: ``UsageError`` for a problem, or, on a conversation run with ``repair=True``, a copy
of the pipe with the documented fallback applied and a ``UserWarning`` saying what changed.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

from .._exceptions import UsageError
from .._turns import PassbackProblem

__all__ = [
    "ANSWER_ROOM",
    "BUDGET_EXCEEDS_MAX_TOKENS",
    "EFFORT_WITHOUT_THINKING",
    "FORCED_TOOL_CHOICE_WITH_THINKING",
    "REQUEST",
    "SAMPLING_WITH_THINKING",
    "always_thinks",
    "request_pipe",
    "request_problems",
]

REQUEST = -1
"""The ``index`` of a request problem: it is the request's settings, not a message."""

FORCED_TOOL_CHOICE_WITH_THINKING = "forced_tool_choice_with_thinking"
SAMPLING_WITH_THINKING = "sampling_with_thinking"
BUDGET_EXCEEDS_MAX_TOKENS = "budget_exceeds_max_tokens"
EFFORT_WITHOUT_THINKING = "effort_without_thinking"
"""Reserved: no provider documents an effort field without thinking as an error (Claude's
``output_config.effort`` applies with thinking off too), so no rule reports it yet."""

ANSWER_ROOM = 4096
"""Tokens a repair leaves for the answer above the thinking budget (the room a Claude pipe
leaves by default when it is given no ``max_tokens``)."""

_FREE_CHOICES = (None, "auto", "none")


def always_thinks(pipe: Any) -> tuple[bool, int | None]:
    """A provider's ``thinking_request`` where a request thinks exactly when the model's
    profile says it always does (no budget)."""
    return pipe.profile.thinking == "always", None


def _thinking(pipe: Any) -> tuple[bool, int | None]:
    """Whether ``pipe``'s request thinks, and its thinking budget (``None``: none set); a
    provider that registers no ``thinking_request`` is not checked."""
    from ..providers._spec import spec  # at call time: the registry imports providers

    found = spec(getattr(pipe, "provider", None))
    hook = getattr(found, "thinking_request", None)
    if hook is None:
        return False, None
    on, budget = hook(pipe)
    return bool(on), budget


def _cited(profile: Any) -> str:
    sources = profile.rejects_sources
    return f" ({', '.join(sources)})" if sources else ""


def _top_p_rejected(profile: Any, top_p: float | None) -> bool:
    if top_p is None or "top_p" not in profile.thinking_rejects:
        return False
    allowed = profile.thinking_top_p
    return allowed is None or not allowed[0] <= top_p <= allowed[1]


def _findings(pipe: Any) -> list[tuple[str, str, dict[str, Any], str]]:
    """Each conflict: ``(code, what is wrong, the settings that repair it, what repair did)``."""
    profile = getattr(pipe, "profile", None)
    if profile is None or not profile.thinking_rejects:
        return []
    on, budget = _thinking(pipe)
    if not on:
        return []
    rejects = profile.thinking_rejects
    cited = _cited(profile)
    model = getattr(pipe, "model", None)
    found: list[tuple[str, str, dict[str, Any], str]] = []
    choice = getattr(pipe, "tool_choice", None)
    if (
        "forced_tool_choice" in rejects
        and getattr(pipe, "tools", None)
        and (choice not in _FREE_CHOICES)
    ):
        found.append(
            (
                FORCED_TOOL_CHOICE_WITH_THINKING,
                f"tool_choice={choice!r} forces a tool call, and with thinking on {model} takes "
                f"only tool_choice 'auto' or 'none'{cited}. Use tool_choice='auto' (or turn "
                "thinking off), or repair (tool_choice 'auto')",
                {"tool_choice": "auto"},
                f"tool_choice {choice!r} -> 'auto'",
            )
        )
    temperature = getattr(pipe, "temperature", None)
    top_p = getattr(pipe, "top_p", None)
    sampling: dict[str, Any] = {}
    named: list[str] = []
    if "temperature" in rejects and temperature is not None:
        sampling["temperature"] = None
        named.append(f"temperature={temperature}")
    if _top_p_rejected(profile, top_p):
        sampling["top_p"] = None
        named.append(f"top_p={top_p}")
    if sampling:
        allowed = profile.thinking_top_p
        top_p_rule = (
            f"; top_p only from {allowed[0]} to {allowed[1]}"
            if allowed is not None and "top_p" in rejects
            else ""
        )
        found.append(
            (
                SAMPLING_WITH_THINKING,
                f"{' and '.join(named)} cannot go with thinking on {model}: its provider "
                f"rejects {', '.join(r for r in rejects if r in ('temperature', 'top_p'))} "
                f"changes while it thinks{top_p_rule}{cited}. Leave them unset (or turn "
                "thinking off), or repair (they are left out)",
                sampling,
                f"left out {', '.join(named)}",
            )
        )
    max_tokens = getattr(pipe, "max_tokens", None)
    if (
        "budget_at_max_tokens" in rejects
        and isinstance(budget, int)
        and isinstance(max_tokens, int)
        and max_tokens <= budget
    ):
        raised = budget + ANSWER_ROOM
        found.append(
            (
                BUDGET_EXCEEDS_MAX_TOKENS,
                f"the thinking budget ({budget} tokens) must be below max_tokens ({max_tokens}): "
                f"thinking counts toward max_tokens{cited}. Raise max_tokens or lower "
                f"budget_tokens, or repair (max_tokens becomes {raised})",
                {"max_tokens": raised},
                f"max_tokens {max_tokens} -> {raised} (the budget plus {ANSWER_ROOM} tokens "
                "for the answer)",
            )
        )
    return found


def request_problems(pipe: Any) -> list[PassbackProblem]:
    """What ``pipe``'s provider is documented to reject in the request's own settings while
    the model thinks: one :class:`PassbackProblem` per conflict, ``index`` :data:`REQUEST`.

    Codes: ``forced_tool_choice_with_thinking``, ``sampling_with_thinking``,
    ``budget_exceeds_max_tokens`` (``effort_without_thinking`` is reserved: no provider
    documents it as an error). Nothing is called.
    """
    return [PassbackProblem(REQUEST, code, what) for code, what, _, _ in _findings(pipe)]


def request_pipe(pipe: Any, *, repair: bool) -> Any:
    """The pipe whose settings the next request carries: ``pipe`` itself when nothing
    conflicts; otherwise ``UsageError`` naming the problems, or with ``repair``, a shallow
    copy with the documented fallback applied (a forced tool choice becomes ``"auto"``;
    rejected sampling settings are left out; ``max_tokens`` rises above the thinking budget)
    and a ``UserWarning`` saying so. ``pipe`` itself never changes.
    """
    found = _findings(pipe)
    if not found:
        return pipe
    if not repair:
        listed = "; ".join(str(PassbackProblem(REQUEST, code, what)) for code, what, _, _ in found)
        raise UsageError(
            f"the provider would reject this request: {listed}. Change the pipe's settings, "
            "or run it with conversation.run(pipe, repair=True) to apply the documented "
            "fallback"
        )
    repaired = copy.copy(pipe)
    for _, _, settings, _ in found:
        for name, value in settings.items():
            setattr(repaired, name, value)
    warnings.warn(
        "repaired the request for the provider: " + "; ".join(note for *_, note in found),
        UserWarning,
        stacklevel=4,
    )
    return repaired
