"""The effort plan of the Responses API: ``reasoning.effort``, by the OpenAI model families."""

from __future__ import annotations

from ..._effort_planner import Ask, Draft, EffortPlanner, EffortRow, settled
from ..openai_chat.effort import effort_draft, openai_family


def _plan_openai_responses(model: str, ask: Ask, max_tokens: int | None, where: str) -> Draft:
    family = openai_family(model)
    fixed = settled(family.kind, ask, where)
    if fixed is not None:
        return fixed
    # The Responses API has no chat-template switch; Qwen servers take the effort field there.
    return effort_draft(family, ask, where, lambda value: {"reasoning": {"effort": value}})


PLANNER = EffortPlanner(
    _plan_openai_responses,
    rows=(
        EffortRow("o-series, gpt-5 codex, gpt-oss, any other id", "o4-mini"),
        EffortRow("gpt-5, gpt-5-mini, gpt-5-nano", "gpt-5"),
        EffortRow("gpt-5.1 and later gpt-5.x", "gpt-5.1"),
        EffortRow("models that always reason (as for openai-chat)", "gpt-5-pro"),
        EffortRow("models that cannot reason (as for openai-chat)", "gpt-4.1"),
    ),
)
"""The Responses API's effort plan: the OpenAI families, in ``reasoning.effort``."""
