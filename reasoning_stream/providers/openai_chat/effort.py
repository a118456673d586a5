"""The effort plan of OpenAI-style Chat Completions: ``reasoning_effort`` or a Qwen switch."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..._effort_planner import (
    Ask,
    Draft,
    EffortPlanner,
    EffortRow,
    level_for,
    model_tail,
    settled,
)

# --------------------------------------------------------------------------------- OpenAI


@dataclass(frozen=True, slots=True)
class OpenAIFamily:
    kind: Literal["none", "fixed", "effort", "qwen", "deepseek", "kimi"]
    off: str | None = None
    """The effort value that turns reasoning off, for the models that have one."""


_GPT5 = re.compile(r"gpt-5(?:\.(\d+))?")


_KIMI_SWITCH = re.compile(r"kimi-k(?:2\.[5-9]|[3-9])")


def openai_family(model: str) -> OpenAIFamily:
    name = model_tail(model)
    bare = model.lower()
    # DeepSeek's own API (bare ids, no org prefix): a thinking switch plus reasoning_effort.
    # deepseek-reasoner is the thinking alias; R1 weights elsewhere always reason.
    if bare.startswith("deepseek-") and "r1" not in bare and "reasoner" not in bare:
        return OpenAIFamily("deepseek", off="none")
    if "kimi" in name:
        if "thinking" in name:
            return OpenAIFamily("fixed")
        # Kimi K2.5 and later think by default and take thinking: {type: disabled}.
        return OpenAIFamily("kimi") if _KIMI_SWITCH.search(name) else OpenAIFamily("none")
    if name.startswith(("gpt-3.5", "gpt-4", "chatgpt-")) or re.match(r"gpt-5[.\d]*-chat", name):
        return OpenAIFamily("none")
    if "gpt-oss" in name:
        return OpenAIFamily("effort")
    gpt5 = _GPT5.match(name)
    if gpt5 is not None:
        if "-pro" in name:
            # GPT-5 pro runs at one fixed, high effort.
            return OpenAIFamily("fixed")
        if "codex" in name:
            return OpenAIFamily("effort")
        # GPT-5 itself has "minimal"; from 5.1 on, "none" replaced it.
        return OpenAIFamily("effort", off="none" if gpt5.group(1) else "minimal")
    if re.match(r"o\d", name):
        if name.startswith(("o1-mini", "o1-preview")):
            return OpenAIFamily("fixed")
        return OpenAIFamily("effort")
    # Before the Qwen checks: R1 distillations carry the base model's name (R1-Distill-Qwen).
    if "deepseek" in name and ("reasoner" in name or "r1" in name):
        return OpenAIFamily("fixed")
    if "qwq" in name or ("qwen" in name and "thinking" in name):
        return OpenAIFamily("fixed")
    if "qwen" in name:
        if name.startswith("qwen2") or "instruct-2507" in name:
            return OpenAIFamily("none")
        return OpenAIFamily("qwen")
    # Unknown ids on OpenAI-compatible servers: reasoning_effort is the common field, and
    # servers that do not know it ignore it.
    return OpenAIFamily("effort")


def effort_draft(
    family: OpenAIFamily, ask: Ask, where: str, put: Callable[[str], dict[str, Any]]
) -> Draft:
    if ask.kind == "off":
        if family.off is None:
            return Draft(
                warnings=[f"{where} has no effort value that turns reasoning off; nothing sent"],
                supported=False,
            )
        return Draft(put(family.off))
    level, notes = level_for(ask, where)
    return Draft(put(level), notes)


def _plan_openai_chat(model: str, ask: Ask, max_tokens: int | None, where: str) -> Draft:
    family = openai_family(model)
    fixed = settled(family.kind, ask, where)
    if fixed is not None:
        return fixed
    if family.kind == "deepseek":
        return _plan_deepseek(ask, where)
    on = ask.kind != "off"
    if family.kind == "kimi":
        thinking = {"type": "enabled" if on else "disabled"}
        return _switch_only(ask, where, {"thinking": thinking}, "thinking enabled")
    if family.kind == "qwen":
        # Qwen's chat template has a thinking switch and nothing finer.
        template = {"enable_thinking": on}
        return _switch_only(ask, where, {"chat_template_kwargs": template}, "enable_thinking=True")
    return effort_draft(family, ask, where, lambda value: {"reasoning_effort": value})


def _plan_deepseek(ask: Ask, where: str) -> Draft:
    """DeepSeek's API: ``thinking: {type: enabled|disabled}`` and ``reasoning_effort``.

    Thinking is on by default at effort "high"; DeepSeek runs "medium" as "high"
    (api-docs.deepseek.com/guides/thinking_mode).
    """
    if ask.kind == "off":
        return Draft({"thinking": {"type": "disabled"}})
    if ask.kind == "on":
        return Draft({"thinking": {"type": "enabled"}})
    level, notes = level_for(ask, where)
    if level == "medium":
        notes.append(f"{where} runs reasoning_effort 'medium' as 'high'")
    return Draft({"thinking": {"type": "enabled"}, "reasoning_effort": level}, notes)


PLANNER = EffortPlanner(
    _plan_openai_chat,
    rows=(
        EffortRow("o1, o3, o4, gpt-5 codex, gpt-oss, any other id", "o4-mini"),
        EffortRow("gpt-5, gpt-5-mini, gpt-5-nano", "gpt-5-mini"),
        EffortRow("gpt-5.1 and later gpt-5.x", "gpt-5.1"),
        EffortRow("qwen (Qwen3 and later)", "qwen3-32b"),
        EffortRow("DeepSeek's API (deepseek-chat, deepseek-v4-*)", "deepseek-chat"),
        EffortRow("Kimi K2.5 and later", "kimi-k2.5"),
        EffortRow(
            "deepseek-reasoner, DeepSeek-R1, QwQ, Qwen *-thinking, Kimi *-thinking, o1-mini, "
            "o1-preview, gpt-5 pro",
            "deepseek-reasoner",
        ),
        EffortRow("gpt-3.5, gpt-4*, chatgpt-*, gpt-5 chat, qwen2*, Qwen *-instruct-2507", "gpt-4o"),
    ),
)
"""Chat Completions' effort plan (OpenAI, DeepSeek, vLLM, SGLang, llama.cpp, ...)."""


def _switch_only(ask: Ask, where: str, body: dict[str, Any], sent_as: str) -> Draft:
    """``body`` for a model that only switches thinking on or off: a level or a budget asked
    for is sent as on (``sent_as``), and a note says so."""
    notes: list[str] = []
    if ask.kind in ("level", "budget"):
        notes.append(f"{where} only switches thinking on or off: {ask.raw!r} was sent as {sent_as}")
    return Draft(body, notes)
