"""Former home of the preflight types; ``_turns`` holds them now (``conversation._preflight``
runs the rules).

Kept so imports written against the old path keep working.
"""

from ._turns import PassbackProblem, PreflightTurn

__all__ = ["PassbackProblem", "PreflightTurn"]
