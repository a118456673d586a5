"""The passback table: what of each model's reasoning goes back, as Markdown, from the rows.

The documentation shows it (a hook fills ``<!-- passback-table -->`` in when the site builds)
and a test keeps the page equal to it, so the page says what the catalogue says today.
"""

from __future__ import annotations

from collections.abc import Iterable

from ._registry import ProfileRow, table

__all__ = ["passback_table"]

_HEADER = (
    "| providers | models | thinking | passback | details | reads from | binding | checked |\n"
    "|---|---|---|---|---|---|---|---|"
)


def passback_table(rows: Iterable[ProfileRow] | None = None) -> str:
    """One Markdown line per profile row (default: ``table()``, the catalogue in file order):
    its providers and model patterns, when it thinks, which earlier turns' reasoning must go
    back and the documented details, whose state it reads, its binding, and the date its
    sources were checked (the latest; an API-root row names its roots).

    >>> passback_table().splitlines()[0].startswith("| providers | models | thinking")
    True
    """
    lines = [_HEADER]
    for row in table() if rows is None else rows:
        profile = row.profile
        models = ", ".join(f"`{pattern}`" for pattern in row.patterns)
        if row.api_roots:
            models += " at " + ", ".join(row.api_roots)
        checked = max((date for _, date in profile.sources), default="")
        cells = (
            ", ".join(row.providers),
            models,
            profile.thinking,
            profile.passback,
            ", ".join(profile.passback_details),
            ", ".join(f"`{pattern}`" for pattern in profile.reads_from),
            ", ".join(profile.binding),
            checked,
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
