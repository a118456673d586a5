"""Reading a wire chunk's fields whether it arrived as a plain dict or as an SDK model.

Translators are pure functions of one chunk; the lean transports hand them plain dicts and the
SDK transports hand them the SDK's model objects. These readers serve both alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["field_of", "text_of"]

_MISSING: Any = object()


def field_of(obj: Any, name: str) -> Any:
    """``obj[name]`` for dicts, ``obj.name`` for SDK models; ``None`` when absent."""
    if type(obj) is dict:  # the lean transport's chunks
        return obj.get(name)
    # SDK models first: isinstance(model, Mapping) costs about 1 us on a pydantic model (the
    # ABC check finds no cache), more than the rest of a chunk's translation.
    value = getattr(obj, name, _MISSING)
    if value is not _MISSING:
        return value
    if isinstance(obj, Mapping):
        return obj.get(name)
    return None


def text_of(value: Any) -> str:
    """A string field's value; JSON ``null`` (or anything not a string) is no text at all."""
    return value if isinstance(value, str) else ""
