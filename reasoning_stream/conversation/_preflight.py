"""Preflight: what a provider is documented to reject in the request a pipe would build.

A provider package that knows passback rules registers two functions on its ``ProviderSpec``:
``preflight(pipe, turns, policy) -> list[PassbackProblem]`` and
``repair(pipe, turns, policy) -> (turns, notes)``. Both read :class:`PreflightTurn` s (each
history turn as the pipe would send it, with the record of the run that made it and whether it
is part of the current tool loop) and the pipe's passback policy, resolved once for the
request. This module runs them for a conversation; nothing here calls a provider.

Each provider's problem codes (``signature_missing``, ``thinking_missing``, ...) come
with its rules, in its package's ``request.preflight``; the README section "One-shot calls and
preflight" lists them all.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .._exceptions import UsageError
from .._turns import HistoryTurn, PassbackProblem, PreflightTurn
from ._policy import PassbackPolicy

if TYPE_CHECKING:
    from ..providers._spec import ProviderSpec

__all__ = [
    "ENVELOPE_INVALID",
    "PassbackProblem",
    "PreflightTurn",
    "envelope_problems",
    "find_problems",
    "note_envelopes",
    "problems_where",
    "raise_problems",
    "repair_where",
    "repaired",
    "rules_for",
    "with_envelopes",
]


def rules_for(pipe: object) -> ProviderSpec | None:
    """The spec of ``pipe``'s provider when it has preflight rules, else ``None``."""
    from ..providers._spec import spec  # at call time, as in _policy

    found = spec(getattr(pipe, "provider", None))
    return found if found is not None and found.preflight is not None else None


def find_problems(
    found: ProviderSpec, pipe: object, checked: Sequence[PreflightTurn], policy: PassbackPolicy
) -> list[PassbackProblem]:
    """What ``found``'s rules say the provider would reject in ``checked``."""
    assert found.preflight is not None  # rules_for() chose it for having one
    return found.preflight(pipe, checked, policy)


def raise_problems(problems: Sequence[PassbackProblem]) -> None:
    """Raise ``UsageError`` naming ``problems``, if there are any."""
    if problems:
        listed = "; ".join(str(problem) for problem in problems)
        raise UsageError(
            f"the provider would reject this conversation: {listed}. Fix the history, or "
            "run it with conversation.run(pipe, repair=True) (or pipe.run("
            "conversation.with_repair())) to drop or fill what the provider's docs allow"
        )


def repaired(
    pipe: object,
    turns: list[HistoryTurn],
    checked: Sequence[PreflightTurn],
    policy: PassbackPolicy,
    notes: Sequence[str] = (),
) -> list[HistoryTurn]:
    """``turns`` with what the provider's docs say to drop or fill dropped or filled.

    A ``UserWarning`` says what changed (``notes`` first: what was repaired before, such as
    state that cannot go to this pipe); with nothing to repair, ``turns`` come back as they
    are. A provider's repair raises ``UsageError`` where its docs offer no drop or fill.
    """
    found = rules_for(pipe)
    fixed = turns
    said = list(notes)
    if (
        found is not None
        and found.repair is not None
        and find_problems(found, pipe, checked, policy)
    ):
        fixed, more = found.repair(pipe, checked, policy)
        said += more
    if said:
        warnings.warn(
            "repaired the conversation for the provider: " + "; ".join(said),
            UserWarning,
            # The pipe's call for its turns, past this module, the conversation and history.
            stacklevel=5,
        )
    return fixed


ENVELOPE_INVALID = "envelope_invalid"
"""The problem code of an assistant turn whose sealed envelope did not open (any provider)."""


def envelope_problems(records: Sequence[object]) -> list[PassbackProblem]:
    """One ``envelope_invalid`` problem per turn rebuilt from a client's history whose sealed
    envelope did not open (tampered, sealed with a foreign key, or missing)."""
    return [
        PassbackProblem(
            index,
            ENVELOPE_INVALID,
            f"{problem}. Send the turn back as the stream gave it (its envelope unchanged, "
            "sealed with one of the seal_keys), or repair (the turn goes as plain text, "
            "without its reasoning state)",
        )
        for index, record in enumerate(records)
        if (problem := getattr(record, "envelope_problem", None))
    ]


def note_envelopes(problems: Sequence[PassbackProblem]) -> None:
    """The repair of ``envelope_invalid`` turns (they go as plain text), said in a warning."""
    if problems:
        warnings.warn(
            "repaired the conversation: messages "
            + ", ".join(str(problem.index) for problem in problems)
            + " came back without a valid sealed envelope, so they go as plain text, without "
            "reasoning state",
            UserWarning,
            stacklevel=4,
        )


def with_envelopes(
    problems: list[PassbackProblem], records: Sequence[object]
) -> list[PassbackProblem]:
    """``problems`` and the ``envelope_invalid`` ones of ``records``, in message order."""
    return sorted(envelope_problems(records) + problems, key=lambda problem: problem.index)


# ------------------------------------------------------------- helpers for a provider's rules


def problems_where(
    turns: Sequence[PreflightTurn], rejected: Callable[[PreflightTurn], bool], code: str, what: str
) -> list[PassbackProblem]:
    """A provider's ``preflight``: one problem (``code``, ``what`` to do) per turn ``rejected``
    picks, in order."""
    return [PassbackProblem(checked.index, code, what) for checked in turns if rejected(checked)]


def repair_where(
    turns: Sequence[PreflightTurn],
    rejected: Callable[[PreflightTurn], bool],
    fix: Callable[[HistoryTurn], HistoryTurn],
    note: str,
) -> tuple[list[HistoryTurn], list[str]]:
    """A provider's ``repair``: each turn ``rejected`` picks ``fix`` ed, the others as they are.

    The note says which messages changed (``note`` with ``{messages}`` filled in); with none
    changed there is no note.
    """
    repaired_turns: list[HistoryTurn] = []
    fixed: list[str] = []
    for checked in turns:
        turn = checked.turn
        if rejected(checked):
            turn = fix(turn)
            fixed.append(str(checked.index))
        repaired_turns.append(turn)
    return repaired_turns, [note.format(messages=", ".join(fixed))] if fixed else []
