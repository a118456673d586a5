"""A conversation's spending cap: reasoning tokens, US dollars, or both.

``Conversation.budget(reasoning_tokens=N, usd=X)`` sets a :class:`Budget`; every run of the
conversation from then on (a plain run, each step of a tool loop) is charged to it, and it
decides two things before each run:

- **the effort steps down as spending nears the cap** (:func:`lowered_effort`): from half of a
  cap spent the run asks for one level less reasoning than the pipe is set to, from 80 % two
  levels less, each level the next rung of the exhaustion retry's ladder
  (``pipe.lower_reasoning_plan()``: ``"high"`` -> ``"medium"`` -> ``"low"``, a token budget
  halved). The pipe's own setting is restored after the run.
- **past the cap nothing more runs**: once a cap is reached (spent >= cap), ``Conversation.run``
  raises :class:`~reasoning_stream.BudgetExceededError` before any request, and a tool loop
  stops with status ``"budget"`` (``Conversation.budget_exceeded()``).

A run is charged what its result reports: ``usage.reasoning_tokens`` and ``result.cost``. A run
the price table cannot price (``cost is None``) counts nothing against a dollar cap, with a
warning saying so. The budget is part of a saved conversation (``dumps``/``loads``).

>>> budget = Budget(usd=Decimal("0.10"))
>>> budget.steps_down, budget.exceeded
(0, False)
>>> spent = replace(budget, spent_usd=Decimal("0.06"))
>>> spent.steps_down
1
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, Final, Self

from .._capture import PipeResult
from .._exceptions import BudgetExceededError, UsageError

__all__ = ["STEP_DOWN_AT", "Budget", "Budgeted", "lowered_effort"]

logger = logging.getLogger("reasoning_stream.conversation")

STEP_DOWN_AT: Final = (Fraction(1, 2), Fraction(4, 5))
"""Shares of a cap from which a run asks for one, then two, effort levels less."""


@dataclass(frozen=True, slots=True)
class Budget:
    """A conversation's caps and what was spent against them since they were set.

    ``reasoning_tokens`` and ``usd`` are the caps (``None``: no cap of that kind);
    ``spent_reasoning_tokens`` and ``spent_usd`` what the runs since used.
    """

    reasoning_tokens: int | None = None
    usd: Decimal | None = None
    spent_reasoning_tokens: int = 0
    spent_usd: Decimal = Decimal(0)

    @classmethod
    def checked(cls, reasoning_tokens: object, usd: object) -> Budget:
        """A fresh budget from what a caller passed, or ``UsageError`` naming what to fix."""
        if reasoning_tokens is None and usd is None:
            raise UsageError(
                "budget() needs reasoning_tokens=, usd= or both (a positive number); "
                "clear_budget() removes a budget"
            )
        tokens: int | None = None
        if reasoning_tokens is not None:
            if isinstance(reasoning_tokens, bool) or not isinstance(reasoning_tokens, int):
                raise UsageError(
                    f"budget(reasoning_tokens=) takes an int, got {reasoning_tokens!r}"
                )
            if reasoning_tokens <= 0:
                raise UsageError(
                    f"budget(reasoning_tokens=) must be positive, got {reasoning_tokens}"
                )
            tokens = reasoning_tokens
        dollars: Decimal | None = None
        if usd is not None:
            dollars = _dollars(usd)
        return cls(reasoning_tokens=tokens, usd=dollars)

    @property
    def used(self) -> float:
        """The largest share of a cap spent (``0.0`` to ``1.0`` and past it)."""
        return float(self._share())

    def _share(self) -> Fraction:
        # Exact: a share just under a threshold must not round up to it.
        shares = [Fraction(0)]
        if self.reasoning_tokens:
            shares.append(Fraction(self.spent_reasoning_tokens, self.reasoning_tokens))
        if self.usd:
            shares.append(Fraction(self.spent_usd) / Fraction(self.usd))
        return max(shares)

    @property
    def exceeded(self) -> bool:
        """Whether a cap is reached: no further run may start."""
        return self._share() >= 1

    @property
    def steps_down(self) -> int:
        """How many effort levels below the pipe's setting the next run asks for (0 to 2)."""
        share = self._share()
        return sum(1 for threshold in STEP_DOWN_AT if share >= threshold)

    def check(self) -> None:
        """Raise ``BudgetExceededError`` when a cap is reached (a run must not start)."""
        if self.exceeded:
            raise BudgetExceededError(
                f"the conversation's budget is spent ({self.describe()}): raise it with "
                "conversation.budget(...) or remove it with clear_budget()",
                budget=self,
            )

    def charged(self, result: PipeResult) -> Budget:
        """This budget with ``result``'s reasoning tokens and cost spent."""
        tokens = result.usage.reasoning_tokens or 0
        cost = result.cost
        if cost is None and self.usd is not None:
            warnings.warn(
                f"no price is known for {result.model!r} ({result.provider}): the run counts "
                "nothing against the conversation's usd budget (genai-prices has no row for "
                "it, or the 'prices' extra is not installed)",
                UserWarning,
                stacklevel=3,
            )
        return replace(
            self,
            spent_reasoning_tokens=self.spent_reasoning_tokens + tokens,
            spent_usd=self.spent_usd + (cost or Decimal(0)),
        )

    def describe(self) -> str:
        """What is spent against which cap, in words (for errors and logs)."""
        parts = []
        if self.reasoning_tokens is not None:
            parts.append(
                f"{self.spent_reasoning_tokens} of {self.reasoning_tokens} reasoning tokens"
            )
        if self.usd is not None:
            parts.append(f"${_plain(self.spent_usd)} of ${_plain(self.usd)}")
        return " and ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """JSON-safe data (dollars as decimal strings, exact)."""
        return {
            "reasoning_tokens": self.reasoning_tokens,
            "usd": None if self.usd is None else str(self.usd),
            "spent_reasoning_tokens": self.spent_reasoning_tokens,
            "spent_usd": str(self.spent_usd),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Budget:
        """Rebuild a budget written by :meth:`to_json`."""
        if not isinstance(data, Mapping):
            raise UsageError(f"a saved budget is a JSON object, got {data!r}")
        budget = cls.checked(data.get("reasoning_tokens"), data.get("usd"))
        spent_tokens = data.get("spent_reasoning_tokens", 0)
        if isinstance(spent_tokens, bool) or not isinstance(spent_tokens, int):
            raise UsageError(f"a saved budget's spent_reasoning_tokens is an int: {spent_tokens!r}")
        return replace(
            budget,
            spent_reasoning_tokens=spent_tokens,
            spent_usd=_dollars(data.get("spent_usd", "0"), allow_zero=True),
        )


def _plain(value: Decimal) -> str:
    """A decimal without trailing zeros or an exponent: ``0.00077``, ``100``."""
    return format(value.normalize(), "f")


def _dollars(value: object, *, allow_zero: bool = False) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise UsageError(f"budget(usd=) takes a number of US dollars, got {value!r}")
    try:
        # str() first: a float such as 0.1 means the decimal it prints as, not its binary value.
        dollars = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    except (InvalidOperation, ValueError) as error:
        raise UsageError(f"budget(usd=) takes a number of US dollars, got {value!r}") from error
    if not dollars.is_finite() or dollars < 0 or (dollars == 0 and not allow_zero):
        raise UsageError(f"budget(usd=) must be a positive number of dollars, got {value!r}")
    return dollars


class Budgeted:
    """The budget methods of ``Conversation``, and the slot they keep the budget in."""

    __slots__ = ("_budget",)
    _budget: Budget | None

    def budget(self, *, reasoning_tokens: int | None = None, usd: Any = None) -> Self:
        """Cap the reasoning tokens and/or the USD price of every run from now on.

        ``reasoning_tokens``: the reasoning tokens the runs report; ``usd``: their price in
        US dollars (``genai-prices``); give either or both. Every run from now on is charged,
        each step of a tool loop included, so a budget set before a tool loop caps the whole
        loop. From 50 % of a cap spent a run asks for one effort level less than its pipe is
        set to, from 80 % two (the exhaustion retry's ladder); once a cap is reached,
        ``run`` raises ``BudgetExceededError`` before any request and a tool loop stops with
        status ``"budget"``. Setting a budget again starts it afresh. Returns the
        conversation.

        >>> from reasoning_stream import Conversation
        >>> Conversation().budget(usd=0.25).current_budget.usd
        Decimal('0.25')
        """
        self._budget = Budget.checked(reasoning_tokens, usd)
        return self

    def clear_budget(self) -> Self:
        """Remove the budget: runs are no longer capped."""
        self._budget = None
        return self

    @property
    def current_budget(self) -> Budget | None:
        """The caps and what was spent since :meth:`budget` (``None``: no budget)."""
        return self._budget

    def budget_exceeded(self) -> bool:
        """Whether the budget is spent: a tool loop stops here with status ``"budget"``."""
        return self._budget is not None and self._budget.exceeded

    def _check_budget(self) -> Budget | None:
        if self._budget is not None:
            self._budget.check()
        return self._budget


@contextmanager
def lowered_effort(pipe: Any, budget: Budget | None) -> Iterator[None]:
    """``pipe`` asking for ``budget.steps_down`` effort levels less while the block runs.

    Each level is the pipe's next lower plan (``lower_reasoning_plan``, the exhaustion
    retry's ladder); a pipe without effort control, or already at the bottom, runs as it is.
    The pipe's ``reasoning`` is restored however the block ends.
    """
    steps = 0 if budget is None else budget.steps_down
    lower = getattr(pipe, "lower_reasoning_plan", None)
    if not steps or not callable(lower):
        yield
        return
    original = pipe.reasoning
    try:
        for _ in range(steps):
            plan = pipe.lower_reasoning_plan()
            if plan is None:
                break
            pipe.reasoning = plan.reasoning
        if pipe.reasoning != original:
            logger.info(
                "conversation budget %.0f%% spent (%s): this run asks for reasoning=%r "
                "instead of %r",
                100 * budget.used if budget else 0,
                budget.describe() if budget else "",
                pipe.reasoning,
                original,
            )
        yield
    finally:
        pipe.reasoning = original
