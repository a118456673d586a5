"""What the conformance probe reports: one :class:`ConformRow` per rule, in a
:class:`ConformReport`, and the rows as text for the command line."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from reasoning_stream.testing._wire import RecordedRequest

__all__ = ["ConformReport", "ConformRow", "render_report"]

_WIDTH = 80


@dataclass(frozen=True, slots=True)
class ConformRow:
    """One rule's verdict: its name, whether it held, what was sent and what came back, and
    the documentation that states the rule."""

    name: str
    passed: bool
    detail: str
    doc: str


@dataclass(frozen=True, slots=True)
class ConformReport:
    """What :func:`conform` found: one :class:`ConformRow` per rule.

    ``passed`` is true only when there is at least one row and every row passed;
    :meth:`to_json` is what ``reasoning-stream conform --json FILE`` writes.
    """

    provider: str
    base_url: str
    rows: tuple[ConformRow, ...]
    upstream_url: str | None = None
    live: bool = False
    requests: tuple[RecordedRequest, ...] = field(default=(), repr=False)
    """Every request the upstream received (offline), in order."""

    @property
    def passed(self) -> bool:
        """Whether every rule held."""
        return bool(self.rows) and all(row.passed for row in self.rows)

    def to_json(self) -> dict[str, Any]:
        """``{"passed": bool, "rows": [{"name", "passed", "detail", "doc"}, ...]}``."""
        return {"passed": self.passed, "rows": [asdict(row) for row in self.rows]}


def render_report(rows: Iterable[ConformRow]) -> str:
    """The rows as text: a verdict and name per rule, the detail and doc wrapped beneath."""
    rows = list(rows)
    lines: list[str] = []
    for row in rows:
        lines.append(f"{'PASS' if row.passed else 'FAIL'}  {row.name}")
        for part in row.detail.split(" | "):
            lines.extend(
                textwrap.wrap(part, _WIDTH, initial_indent="      ", subsequent_indent="        ")
            )
        lines.append(f"      doc: {row.doc}")
    held = sum(1 for row in rows if row.passed)
    lines.append(f"{held} of {len(rows)} rules held")
    return "\n".join(lines) + "\n"
