"""What of a conversation goes to a pipe, and what its provider would reject.

:class:`PassbackHistory` is the part of :class:`~._conversation.Conversation` that turns the
messages and their records into one request's history under the pipe's
:class:`~._policy.PassbackPolicy` (scoped by provider, model, endpoint and binding), names
the documented problems before any request (preflight), and repairs them on a conversation
made with ``with_repair()``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._events import ReasoningState
from .._messages import strip_inert_keys, tool_error_extra
from .._turns import HistoryTurn, PassbackProblem, PreflightTurn
from ._policy import PassbackPolicy
from ._preflight import (
    envelope_problems,
    find_problems,
    note_envelopes,
    raise_problems,
    repaired,
    rules_for,
    with_envelopes,
)
from ._records import TurnRecord, plain_copy
from ._request_check import request_problems
from ._scope import (
    ScopeTarget,
    drop_prefix_bound,
    merged_problems,
    scope_problems,
    scope_target,
    tool_turn_flags,
    turn_reasoning,
)

__all__ = ["PassbackHistory", "role_of"]


def role_of(message: Mapping[str, Any]) -> Any:
    """A message's ``role`` (``None`` when it has none)."""
    return message.get("role")


class PassbackHistory:
    """The passback and preflight half of a conversation: its messages, one record (or
    ``None``) per message, and whether its runs repair instead of raising."""

    _messages: list[dict[str, Any]]
    _records: list[TurnRecord | None]
    _repair: bool

    @property
    def repairs(self) -> bool:
        """Whether runs of this conversation repair what preflight finds instead of raising
        (a conversation from :meth:`with_repair`)."""
        return self._repair

    def turns_for(self, pipe: object) -> list[HistoryTurn]:
        """The history for ``pipe``'s next request, under its :class:`PassbackPolicy`.

        Every message goes without its inert keys. An assistant turn carries its opaque
        states and readable reasoning only when the policy asks for them and the turn was
        made by the pipe's own provider, model and endpoint; anything else stays here.
        A conversation from :meth:`with_repair` gives the repaired turns.
        """
        return self.scoped_turns(pipe, PassbackPolicy.for_pipe(pipe))

    def scoped_turns(self, pipe: object, policy: PassbackPolicy) -> list[HistoryTurn]:
        """:meth:`turns_for` under ``policy``, the pipe's policy already resolved for the
        request (``PassbackPolicy.for_pipe(pipe)``)."""
        turns, scope = self._request(pipe, policy)
        if not self._repair:
            return turns
        note_envelopes(envelope_problems(self._records))
        return self._repaired(pipe, turns, scope, policy)

    def checked_turns(self, pipe: object, policy: PassbackPolicy) -> list[HistoryTurn]:
        """:meth:`check_passback` and :meth:`scoped_turns` in one: the turns ``pipe``'s request
        sends under ``policy``, or ``UsageError`` naming what its provider would reject (a
        conversation from :meth:`with_repair` repairs instead)."""
        turns, scope = self._request(pipe, policy)
        if self._repair:
            note_envelopes(envelope_problems(self._records))
            return self._repaired(pipe, turns, scope, policy)
        raise_problems(with_envelopes(self._problems(pipe, turns, scope, policy), self._records))
        return turns

    def _request(
        self, pipe: object, policy: PassbackPolicy
    ) -> tuple[list[HistoryTurn], list[PassbackProblem]]:
        # The turns under the policy, and what of the state the policy would send cannot go
        # to this pipe (another endpoint or account; a prefix-bound block whose prefix changed).
        target = scope_target(pipe)
        turns = self._turns_under(target, policy)
        history = (self._messages, self._records, turns, self._tool_loop_start())
        return turns, scope_problems(pipe, target, policy, *history)

    def _problems(
        self,
        pipe: object,
        turns: list[HistoryTurn],
        scope: list[PassbackProblem],
        policy: PassbackPolicy,
    ) -> list[PassbackProblem]:
        found = rules_for(pipe)
        if found is None:
            return scope
        rules = find_problems(found, pipe, self._preflight_turns(turns), policy)
        return merged_problems(scope, rules)

    def _repaired(
        self,
        pipe: object,
        turns: list[HistoryTurn],
        scope: list[PassbackProblem],
        policy: PassbackPolicy,
    ) -> list[HistoryTurn]:
        kept, notes = drop_prefix_bound(turns, scope)
        return repaired(pipe, kept, self._preflight_turns(kept), policy, notes)

    def _turns_under(self, pipe: object, policy: PassbackPolicy) -> list[HistoryTurn]:
        target = pipe if isinstance(pipe, ScopeTarget) else scope_target(pipe)
        loop_start = self._tool_loop_start()
        tool_turns = tool_turn_flags(self._messages)
        turns: list[HistoryTurn] = []
        for index, (message, record) in enumerate(zip(self._messages, self._records, strict=True)):
            visible = plain_copy(strip_inert_keys(message))
            if role_of(message) != "assistant" or record is None or not record.made_by(target):
                turns.append(HistoryTurn(visible, extra=tool_error_extra(message)))
                continue
            in_loop = index >= loop_start
            states: tuple[ReasoningState, ...] = ()
            if policy.gives_states(in_loop):
                states = tuple(
                    state
                    for state in record.states
                    # The record's scope matched; the state's own labels must not
                    # contradict it (a state copied in, or made for another provider).
                    if state.may_go_to(target)
                    and (policy.kinds is None or state.kind in policy.kinds)
                )
            reasoning = turn_reasoning(message, record, policy, in_loop, tool_turns[index])
            turns.append(HistoryTurn(visible, states=states, reasoning=reasoning))
        return turns

    # ----------------------------------------------------------------------- preflight

    def preflight(self, pipe: object) -> list[PassbackProblem]:
        """What ``pipe``'s provider is documented to reject in the request it would build.

        Nothing is called. Each :class:`PassbackProblem` names the message index, a code and
        what to do; an empty list means nothing known to be rejected. The provider's spec
        holds the rules (its ``preflight``); a pipe of an unknown provider gets ``[]``.
        Whatever the provider, state the policy would send that cannot go to this pipe is
        named too: ``state_other_endpoint`` (made at another endpoint), ``state_other_account``
        (bound to another account), ``thinking_prefix_changed`` (bound to a request prefix
        that changed since; the index is the first such message). A turn rebuilt from a
        client's history whose sealed envelope did not open is ``envelope_invalid`` for every
        pipe. Problems of the request's own settings come last, with index ``-1``
        (``forced_tool_choice_with_thinking``, ``sampling_with_thinking``,
        ``budget_exceeds_max_tokens``: see ``_request_check``).
        """
        policy = PassbackPolicy.for_pipe(pipe)
        turns, scope = self._request(pipe, policy)
        found = with_envelopes(self._problems(pipe, turns, scope, policy), self._records)
        return found + request_problems(pipe)

    def check_passback(self, pipe: object) -> None:
        """Raise ``UsageError`` naming the :meth:`preflight` problems, if there are any.

        Provider pipes call it before sending a request. A conversation from
        :meth:`with_repair` repairs instead of raising.
        """
        if not self._repair:
            raise_problems(self.preflight(pipe))

    def _preflight_turns(self, turns: Sequence[HistoryTurn]) -> list[PreflightTurn]:
        loop_start = self._tool_loop_start()
        tool_turns = tool_turn_flags(self._messages)
        return [
            PreflightTurn(index, turn, self._records[index], index >= loop_start, tool_turns[index])
            for index, turn in enumerate(turns)
        ]

    def _last_user_index(self) -> int:
        for index in range(len(self._messages) - 1, -1, -1):
            if role_of(self._messages[index]) == "user":
                return index
        return -1

    def _tool_loop_start(self) -> int:
        # The current tool loop is what the model did since the last user turn; a user turn
        # the framework injected (provenance) is still a user turn to the provider.
        return self._last_user_index() + 1
