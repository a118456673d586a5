"""A run's result sealed for its final entry: one record per model step, each with its turn.

A hub given ``seal_keys`` seals, in the process that ran the pipe, what a client that keeps
the history needs back: each model step's :class:`TurnRecord` (a tool loop run as one stream
has several), bound to the answer text and tool call ids that step published, as the client
will send them back (see ``conversation._envelopes``).
"""

from __future__ import annotations

import logging

from .._pipe import PipeResult
from .._pipeline import PipelineResult
from ..conversation._envelopes import SealKeys, Turn
from ..conversation._records import TurnRecord
from ..conversation._tool_loop import ToolLoopResult

__all__ = ["seal_result"]

logger = logging.getLogger("reasoning_stream.hub")


def seal_result(keys: SealKeys, result: object) -> str | None:
    """``result`` (a pipe's, a pipeline's or a tool loop's) sealed, or ``None`` when it made
    no model step. Never raises: a run's end is written whatever happens here."""
    if isinstance(result, ToolLoopResult):
        steps = [step.result for step in result.steps]
    elif isinstance(result, PipeResult):
        steps = [result]
    elif isinstance(result, PipelineResult):
        steps = list(result.results[-1:])  # the answer a client keeps is the last pipe's
    else:
        return None
    turns: list[Turn] = [(step.text, [call.id for call in step.tool_calls]) for step in steps]
    if isinstance(result, PipelineResult):  # one turn for the client: every pipe's words
        results = result.results
        turns = [("".join(r.text for r in results), [c.id for r in results for c in r.tool_calls])]
    if not steps:
        return None
    try:
        return keys.seal([TurnRecord.from_result(step) for step in steps], turns)
    except Exception as error:
        logger.warning("could not seal the run's reasoning state: %s", type(error).__name__)
        return None
