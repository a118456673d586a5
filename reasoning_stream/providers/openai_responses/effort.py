"""The effort plan of the Responses API: ``reasoning.effort`` and ``reasoning.summary``."""

from __future__ import annotations

from ..._effort_planner import Ask, Draft, EffortPlanner, nearest_display
from ...profiles import ModelProfile
from ..openai_chat.effort import effort_draft

_SUMMARY = ("reasoning", "summary")


def _plan_openai_responses(
    profile: ModelProfile, model: str, ask: Ask, max_tokens: int | None, where: str
) -> Draft:
    if ask.kind == "default":
        draft = Draft()
    else:
        # The Responses API has no chat-template switch; servers take the effort field there.
        draft = effort_draft(profile, ask, where, lambda value: {"reasoning": {"effort": value}})
    if ask.display is not None:
        _summary(draft, ask.display, profile, where)
    return draft


def _summary(draft: Draft, display: str, profile: ModelProfile, where: str) -> None:
    """``reasoning.summary`` for a display (platform.openai.com/docs/guides/reasoning, reasoning
    summaries): ``auto`` for summarized; OpenAI shows no raw reasoning, so full is the most detailed
    summary; omitted sends no summary (and removes the pipe's own ``reasoning_summary``)."""
    chosen, notes = nearest_display(profile, display, where)
    draft.warnings.extend(notes)
    if chosen == "omitted":
        draft.drops.append(_SUMMARY)
        return
    summary = "detailed" if display == "full" else "auto"
    reasoning = draft.params.setdefault("reasoning", {})
    reasoning["summary"] = summary


PLANNER = EffortPlanner(
    _plan_openai_responses,
    notes=(
        '`reasoning_display` on the Responses API: `"summarized"` is `reasoning.summary: '
        'auto`, `"full"` its nearest, the `detailed` summary (OpenAI shows no raw reasoning), '
        '`"omitted"` sends no summary.',
    ),
)
"""The Responses API's effort plan: the OpenAI families, in ``reasoning.effort``."""
