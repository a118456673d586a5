"""What several conversation tests share: a stand-in pipe and the values they name."""

from __future__ import annotations

from dataclasses import dataclass

from reasoning_stream.conversation import PassbackPolicy

__all__ = ["CLAUDE", "DETAILS", "FakePipe"]

CLAUDE = "claude-sonnet-4-5"
"""A model without preserved thinking (older blocks go back only in the tool loop)."""

DETAILS = frozenset({"reasoning_details"})


@dataclass
class FakePipe:
    """All ``turns_for`` reads of a pipe: its scope, and optionally a policy."""

    provider: str | None
    model: str | None
    endpoint: str | None = None
    passback: PassbackPolicy | None = None
