"""Small pure helpers the tests share: an independent model of the contract to check against."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from reasoning_stream import Event, ReasoningDelta, ReasoningEnd, ReasoningStart, TextDelta

PROFILE_VARIABLE = "REASONING_STREAM_HYPOTHESIS"
HYPOTHESIS_PROFILE = os.environ.get(PROFILE_VARIABLE, "dev")
"""The hypothesis profile this run uses (tests/conftest.py registers and loads it)."""

DEV_EXAMPLES = 20
"""Examples per property under the ``dev`` profile: a fifth of the ``ci`` profile's 100."""


def examples(count: int) -> int:
    """A test's own example count, scaled to the profile: ``count`` under ``ci``, a fifth
    (at least 10, at most ``count``) under ``dev``, as the profiles scale the default count."""
    return count if HYPOTHESIS_PROFILE == "ci" else min(count, max(10, count // 5))


# Written independently of the package's grammar, on purpose.
REFERENCE_TAG = re.compile(
    r"<(\\*)(/?)(think|thinking|reasoning)[ \t]{0,4}>", re.ASCII | re.IGNORECASE
)


def coalesce(events: Iterable[Event]) -> list[Event]:
    """Merge adjacent deltas of the same kind, dropping empty ones."""
    merged: list[Event] = []
    for event in events:
        if isinstance(event, ReasoningDelta | TextDelta):
            if not event.text:
                continue
            last = merged[-1] if merged else None
            if type(last) is type(event):
                assert isinstance(last, ReasoningDelta | TextDelta)
                merged[-1] = type(event)(last.text + event.text)
                continue
        merged.append(event)
    return merged


def reference_split(text: str, *, start_in_reasoning: bool = False) -> tuple[list[str], str, bool]:
    """Lossless split by a second, non-incremental reading of the rules.

    Returns (segments, text, truncated) without the auto rule 4.
    """
    segments: list[str] = []
    answer: list[str] = []
    current: list[str] | None = [] if start_in_reasoning else None
    pos = 0
    for match in REFERENCE_TAG.finditer(text):
        outside = text[pos : match.start()]
        (answer if current is None else current).append(outside)
        pos = match.end()
        backslashes, slash = match.group(1), match.group(2)
        if backslashes:
            literal = "<" + backslashes[1:] + match.group(0)[1 + len(backslashes) :]
            (answer if current is None else current).append(literal)
        elif slash:
            if current is not None:
                segments.append("".join(current))
                current = None
        elif current is None:
            current = []
    (answer if current is None else current).append(text[pos:])
    truncated = current is not None
    if current is not None:
        segments.append("".join(current))
    return segments, "".join(answer), truncated


def said(err: str) -> list[str]:
    """The messages in ``err``, each unwrapped (a continuation line starts with two spaces),
    after checking that every line fits 80 columns unless it is one unbreakable word."""
    for line in err.splitlines():
        assert len(line) <= 80 or " " not in line.strip(), line
    messages: list[str] = []
    for line in err.splitlines():
        if line.startswith("  ") and messages:
            messages[-1] += " " + line.strip()
        elif line:
            messages.append(line)
    return messages


def segments_and_text(events: Iterable[Event]) -> tuple[list[str], str]:
    """The segments and the answer text of a scan's events, checking they nest."""
    segments: list[str] = []
    text: list[str] = []
    current: list[str] | None = None
    for event in events:
        if isinstance(event, ReasoningStart):
            assert current is None, "a segment opened twice"
            current = []
        elif isinstance(event, ReasoningEnd):
            assert current is not None, "a segment closed that was not open"
            segments.append("".join(current))
            current = None
        elif isinstance(event, ReasoningDelta):
            assert current is not None, "reasoning outside a segment"
            current.append(event.text)
        else:
            assert current is None, "text inside a segment"
            text.append(event.text)
    assert current is None, "flush left a segment open"
    return segments, "".join(text)
