"""Checks for the keywords pipes take: a bad value is refused where it is given, by name.

Every pipe's constructor checks its keywords here, once, before anything is built or sent:
the message names the keyword, what it takes, and what it got. A value of the wrong kind is a
:class:`~reasoning_stream.UsageError` (a ``TypeError`` too); a value of the right kind out of
range is an :class:`~reasoning_stream._exceptions.InvalidValueError` (a ``UsageError`` and a
``ValueError``).

>>> seconds("timeout", 30)
30
>>> seconds("timeout", 0)
Traceback (most recent call last):
    ...
reasoning_stream._exceptions.InvalidValueError: timeout must be more than 0 seconds, got 0
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ._exceptions import InvalidValueError, UsageError

__all__ = ["flag", "json_object", "name", "number", "optional_flag", "seconds"]


def flag(keyword: str, value: object) -> bool:
    """``value`` if it is ``True`` or ``False``.

    ``1`` and ``"yes"`` are refused: a flag set by a typo or a wrong variable would otherwise
    pass silently as truthy.
    """
    if isinstance(value, bool):
        return value
    raise UsageError(f"{keyword} must be True or False, got {value!r}")


def optional_flag(keyword: str, value: object, *, none: str) -> bool | None:
    """``value`` if it is ``True``, ``False`` or ``None`` (which means what ``none`` says)."""
    if value is None or isinstance(value, bool):
        return value
    raise UsageError(f"{keyword} must be True, False or None ({none}), got {value!r}")


def name(value: object) -> str | None:
    """A pipe's ``name=``: a ``str``, or ``None`` for the class name."""
    if value is None or isinstance(value, str):
        return value
    raise UsageError(
        f"name must be a str (the pipe's name, carried by its events as source) or None for "
        f"the class name, got {type(value).__name__} {value!r}"
    )


def number(keyword: str, value: object, low: float, high: float | None) -> float | None:
    """``value`` if it is ``None`` or a number from ``low`` to ``high`` (``None``: no top)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{keyword} must be a number, got {value!r}")
    if not low <= value <= (math.inf if high is None else high):
        span = f"from {low:g} to {high:g}" if high is not None else f"{low:g} or more"
        raise InvalidValueError(f"{keyword} must be {span}, got {value!r}")
    return value


def seconds(keyword: str, value: object) -> float | None:
    """``value`` if it is ``None`` or a number of seconds above 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{keyword} must be a number of seconds or None, got {value!r}")
    if not value > 0:  # NaN too
        raise InvalidValueError(f"{keyword} must be more than 0 seconds, got {value!r}")
    return value


def json_object(keyword: str, value: object) -> Mapping[str, Any] | None:
    """``value`` if it is ``None`` or a mapping (a JSON object's fields)."""
    if value is None or isinstance(value, Mapping):
        return value
    raise UsageError(
        f"{keyword} must be a dict of JSON fields (such as {{'chat_template_kwargs': {{...}}}}) "
        f"or None, got {type(value).__name__} {value!r}"
    )
