"""MkDocs hook: fill the generated tables in when the site builds, so no page can drift.

A page writes ``<!-- effort-table -->`` for the whole reasoning-effort table (with its notes), or
``<!-- effort-table: PROVIDER -->`` for that provider's rows alone; the hook replaces the marker
with what ``reasoning_stream.effort_table()`` computes from the providers' planners right now;
``<!-- passback-table -->`` becomes ``reasoning_stream.profiles.passback_table()``.
The tests call ``render`` on every page, so a marker naming no provider rows fails there too.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

# The package of this checkout, as mkdocstrings reads it (its `paths`), even when another copy
# is installed.
ROOT = str(Path(__file__).resolve().parents[1])
MARKER = re.compile(r"<!-- effort-table(?::\s*(?P<provider>[\w-]+))? -->")
PASSBACK_MARKER = "<!-- passback-table -->"


def effort_rows(provider: str | None = None) -> str:
    """The effort table (all of it, or the header and one provider's rows), as Markdown."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from reasoning_stream import effort_table

    table = effort_table()
    if provider is None:
        return table
    lines = [line for line in table.splitlines() if line.startswith("|")]
    rows = [line for line in lines[2:] if line.startswith(f"| {provider} |")]
    if not rows:
        raise ValueError(f"effort_table() has no rows for provider {provider!r}")
    return "\n".join([*lines[:2], *rows]) + "\n"


def render(markdown: str) -> str:
    """``markdown`` with every effort-table marker replaced by the table it names, and the
    passback-table marker by ``profiles.passback_table()``."""
    if PASSBACK_MARKER in markdown:
        if ROOT not in sys.path:
            sys.path.insert(0, ROOT)
        from reasoning_stream.profiles import passback_table

        markdown = markdown.replace(PASSBACK_MARKER, passback_table())
    return MARKER.sub(lambda match: effort_rows(match.group("provider")), markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs event: runs on each page's Markdown before it is converted."""
    return render(markdown)
