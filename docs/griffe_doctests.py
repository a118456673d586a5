"""Griffe extension for the API reference: show docstrings' doctest examples as code.

A docstring's ``>>>`` lines are plain text to Markdown, so ``conversation[0]["content"]`` would
read as a link. Each run of doctest lines (up to a blank line) is fenced as ``pycon`` instead.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    """``text`` with every block of doctest lines wrapped in a ``pycon`` code fence."""
    out: list[str] = []
    block_indent: str | None = None
    for line in text.splitlines():
        stripped = line.lstrip()
        if block_indent is None and stripped.startswith(">>>"):
            block_indent = line[: len(line) - len(stripped)]
            if out and out[-1].strip():
                out.append("")
            out.append(f"{block_indent}```pycon")
        elif block_indent is not None and not stripped:
            out.append(f"{block_indent}```")
            block_indent = None
        out.append(line)
    if block_indent is not None:
        out.append(f"{block_indent}```")
    return "\n".join(out)


class FenceDoctests(griffe.Extension):
    """Fence the doctest blocks of every docstring griffe loads."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
