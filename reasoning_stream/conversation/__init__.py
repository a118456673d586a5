"""Conversations: the history the application owns, and what each provider may get back.

One module per job:

- ``_policy``: :class:`PassbackPolicy`, what a provider needs back from earlier turns, resolved
  once per request (provider packages import this small module, never the container);
- ``_records``: :class:`TurnRecord` beside each assistant turn (its usage and cost included, read
  back as :class:`LedgerEntry` s), :class:`GenerationRecord` for the run under way;
- ``_budget``: :class:`Budget`, the spending cap of ``Conversation.budget``;
- ``_history``: the :class:`HistoryTurn` s a request carries for a prompt;
- ``_preflight``: what a provider is documented to reject, and its repair;
- ``_tool_loop``: ``run_tools``: run the pipe, run the tools it calls, send the results back;
- ``_tool_runnable``: :class:`ToolLoop`, that loop as one run for a hub or the web app;
- ``_conversation``: the container, :class:`Conversation`.

Nothing here names a provider: each provider's rules come from its ``ProviderSpec``.
"""

from .._turns import HistoryTurn, PassbackProblem, PreflightTurn
from ._budget import Budget
from ._conversation import Conversation
from ._policy import PassbackPolicy, ReasoningPassback, StatePassback
from ._records import GenerationRecord, GenerationStatus, LedgerEntry, TurnRecord
from ._tool_loop import ToolLoopResult, ToolLoopStatus, ToolStep
from ._tool_runnable import ToolLoop

__all__ = [
    "Budget",
    "Conversation",
    "GenerationRecord",
    "GenerationStatus",
    "HistoryTurn",
    "LedgerEntry",
    "PassbackPolicy",
    "PassbackProblem",
    "PreflightTurn",
    "ReasoningPassback",
    "StatePassback",
    "ToolLoop",
    "ToolLoopResult",
    "ToolLoopStatus",
    "ToolStep",
    "TurnRecord",
]
