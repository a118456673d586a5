"""The effort plan of Bedrock: Claude, Nova 2, gpt-oss and DeepSeek-R1 through Converse."""

from __future__ import annotations

import re
from typing import Any

from ..._effort_planner import (
    Ask,
    Draft,
    EffortPlanner,
    EffortRow,
    always_reasons,
    cannot_reason,
    level_for,
)
from ..anthropic.effort import claude_style, claude_thinking
from ..openai_chat.effort import OpenAIFamily, effort_draft

# --------------------------------------------------------------------------------- Bedrock

_BEDROCK_NON_REASONING = re.compile(
    r"amazon\.(?:nova-(?:micro|lite|pro|premier)|titan)|meta\.llama|cohere\.|ai21\."
    r"|mistral\.(?!magistral)"
)


def _plan_bedrock(model: str, ask: Ask, max_tokens: int | None, where: str) -> Draft:
    name = model.lower()
    if "anthropic.claude" in name:
        style = claude_style(name)
        if style == "none":
            return cannot_reason()
        thinking = claude_thinking(ask, style, max_tokens, where)
        params: dict[str, Any] = {}
        if thinking.fields:
            params["additionalModelRequestFields"] = thinking.fields
        if thinking.max_tokens is not None:
            params["inferenceConfig"] = {"maxTokens": thinking.max_tokens}
        return Draft(params, thinking.notes, supported=thinking.supported)
    if "deepseek" in name and "r1" in name:
        return always_reasons(ask, where)
    if "gpt-oss" in name:
        return effort_draft(
            OpenAIFamily("effort"),
            ask,
            where,
            lambda value: {"additionalModelRequestFields": {"reasoning_effort": value}},
        )
    if "nova-2" in name:
        if ask.kind == "off":
            config: dict[str, Any] = {"type": "disabled"}
            notes: list[str] = []
        else:
            level, notes = level_for(ask, where)
            config = {"type": "enabled", "maxReasoningEffort": level}
            if level == "high":
                notes.append(
                    f"{where} at maxReasoningEffort 'high' takes no temperature, topP or "
                    "maxTokens: leave them unset"
                )
        return Draft({"additionalModelRequestFields": {"reasoningConfig": config}}, notes)
    if _BEDROCK_NON_REASONING.search(name):
        return cannot_reason()
    return Draft(
        warnings=[
            f"{where}: no known reasoning control for this model family; nothing sent "
            "(put the native field in additionalModelRequestFields yourself)"
        ],
        supported=False,
    )


PLANNER = EffortPlanner(
    _plan_bedrock,
    rows=(
        EffortRow("`anthropic.claude-*`, as anthropic", "anthropic.claude-sonnet-4-5-v1:0"),
        EffortRow("Nova 2 (`nova-2`)", "amazon.nova-2-lite-v1:0"),
        EffortRow("gpt-oss", "openai.gpt-oss-120b-1:0"),
        EffortRow("DeepSeek-R1", "us.deepseek.r1-v1:0"),
        EffortRow("Nova 1, Titan, Llama, Cohere, AI21, Mistral", "amazon.nova-pro-v1:0"),
        EffortRow("any other family (no known control)", "qwen.qwen3-32b-v1:0"),
    ),
    notes=('Nova 2 at `"high"` takes no `temperature`, `topP` or `maxTokens`; the plan warns.',),
)
"""Bedrock's effort plan, in Converse's ``additionalModelRequestFields``."""
