"""Text entering the channel: a ``str`` (:func:`checked_delta`), and valid Unicode (the one
rule for UTF-16 surrogates in deltas, :func:`mend`).

A provider that sends an emoji as two JSON escapes (``"\\ud83d"`` then ``"\\ude00"``, which
``json.loads`` accepts) may split the pair across two deltas, and a broken one may send half a
pair alone. Python keeps such halves as lone surrogates, which no UTF-8 encoder accepts: Redis,
SSE and every store would fail on them. The hooks mend every delta here, once: a high surrogate
at a delta's end is held for the next delta of the same kind and joined with it when that one
starts with the low half; a surrogate with no partner becomes U+FFFD (the replacement character).

>>> mend("", "a\\ud83d")
('a', '\\ud83d')
>>> mend("\\ud83d", "\\ude00b")
('😀b', '')
>>> mend("", "\\ude00")
('\\ufffd', '')
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

from ._exceptions import UsageError

__all__ = ["REPLACEMENT", "Holder", "checked_delta", "is_clean", "mend", "mend_delta", "whole"]

REPLACEMENT = "\ufffd"
"""What a lone surrogate becomes."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def is_clean(delta: str) -> bool:
    """Whether ``delta`` holds no surrogate at all (cheap: ASCII text is never scanned)."""
    return delta.isascii() or _SURROGATE.search(delta) is None


def mend(held: str, delta: str) -> tuple[str, str]:
    """``held + delta`` as valid Unicode, and the high surrogate to hold for the next delta.

    ``held`` is what the previous call returned to hold (``""`` or one high surrogate).
    """
    text = held + delta
    tail = ""
    if text and "\ud800" <= text[-1] <= "\udbff":
        text, tail = text[:-1], text[-1]
    return whole(text), tail


def whole(text: str) -> str:
    """A complete string (a tool call's arguments, say) as valid Unicode: pairs joined, every
    surrogate without a partner U+FFFD.

    >>> whole("\\ud83d\\ude00 \\ud83d")
    '😀 \\ufffd'
    """
    if is_clean(text):
        return text
    # UTF-16 pairs every high surrogate directly followed by a low one into its code point;
    # "replace" turns each surrogate left without a partner into U+FFFD.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def checked_delta(delta: object, what: str) -> str:
    """``None`` means nothing; a ``str`` subclass is text; anything else is refused."""
    if delta is None:
        return ""
    if isinstance(delta, str):
        return delta
    raise UsageError(
        f"{what} deltas must be str, got {type(delta).__name__}: {delta!r}; "
        "convert the provider's payload to text before emitting it"
    )


class Holder(Protocol):
    """Where a run keeps a high surrogate that waits for its low half (the capture)."""

    held: str
    held_reasoning: bool


def mend_delta(
    holder: Holder,
    delta: str,
    reasoning: bool,
    release: Callable[[], None],
    hold: Callable[[], None],
) -> str:
    """``delta`` as valid Unicode, a trailing high surrogate left waiting on ``holder``.

    One that waited in vain with the other kind of delta (``reasoning`` says which this is)
    goes out first, through ``release``, as U+FFFD; ``hold`` is called when one is left
    waiting (the channel then closes its lanes: the next delta must come through the hooks).
    """
    if holder.held and holder.held_reasoning is not reasoning:
        release()
    mended, holder.held = mend(holder.held, delta)
    holder.held_reasoning = reasoning
    if holder.held:
        hold()
    return mended
