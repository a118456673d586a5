"""Second readings of the channel rules, written apart from the package, to check it against.

Nothing here imports the code under test: the tag pattern, the escaper, what an escaper may hold
back, and split's auto rule 4 are re-derived from the contract's words.
"""

from __future__ import annotations

from tests.helpers import REFERENCE_TAG, reference_split

NAMES = ("think", "thinking", "reasoning")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def reference_escape(text: str) -> str:
    """One more backslash right after the ``<`` of anything that reads as a tag, escaped or not."""
    return REFERENCE_TAG.sub(lambda match: "<\\" + match.group(0)[1:], text)


def could_become_tag(body: str) -> bool:
    """Whether ``<``, backslashes and ``body`` (no ``<`` in it) are a tag still missing its end."""
    lowered = body.translate(_ASCII_LOWER)
    if lowered.startswith("/"):
        lowered = lowered[1:]
    for name in NAMES:
        if name.startswith(lowered):
            return True
        if lowered.startswith(name):
            spaces = lowered[len(name) :]
            if len(spaces) <= 4 and all(c in " \t" for c in spaces):
                return True
    return False


def held_back(prefix: str) -> str:
    """What an escaper may hold after ``prefix``: the body of an unfinished tag, nothing more.

    The ``<`` and the backslashes after it are never held: whatever follows, they go out as they
    are (the one backslash escaping adds may stand anywhere in that run).
    """
    start = prefix.rfind("<")
    if start < 0:
        return ""
    body = prefix[start + 1 :].lstrip("\\")
    return body if could_become_tag(body) else ""


def emitted_after(prefix: str) -> str:
    """Exactly what a channel must have written once ``prefix`` was fed: nothing more held back."""
    escaped = reference_escape(prefix)
    held = held_back(prefix)
    return escaped[: len(escaped) - len(held)]


def reference_split_auto(text: str) -> tuple[list[str], str, bool]:
    """``split(text, lossless=True)`` with ``assume_open=None``: rule 4 decides the start.

    When the first marker (an unescaped tag) is a close tag, the input started inside reasoning.
    """
    for match in REFERENCE_TAG.finditer(text):
        if match.group(1):
            continue  # escaped: text, not a marker
        return reference_split(text, start_in_reasoning=bool(match.group(2)))
    return reference_split(text)


def normalised(segments: list[str], text: str) -> tuple[list[str], str]:
    """The default (not lossless) mode: segments trimmed, empty ones dropped, text trimmed."""
    return [s.strip() for s in segments if s.strip()], text.strip()
