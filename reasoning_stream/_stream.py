"""``ReasoningStream``: the markers, ``split()`` and the incremental scanner."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import EllipsisType
from typing import ClassVar

from ._events import ReasoningDelta, ReasoningStart, TextDelta
from ._tags import Escaper, ScanEvent, Scanner, grammar_for

__all__ = ["ReasoningStream", "Split"]


@dataclass(frozen=True, slots=True)
class Split:
    """What :meth:`ReasoningStream.split` recovered from collected channel text."""

    reasoning: str
    """The segments joined with ``"\\n"``."""
    text: str
    """Everything outside the segments, markers removed."""
    segments: tuple[str, ...]
    """Each reasoning segment in order."""
    truncated: bool
    """The input ended inside reasoning: the stream was cut before the segment closed."""


class ReasoningStream:
    """The channel's markers and the tools that read a channel back.

    >>> ReasoningStream.split("<think>plan</think>answer")
    Split(reasoning='plan', text='answer', segments=('plan',), truncated=False)
    """

    OPEN_TAG: ClassVar[str] = "<think>"
    """Written to the channel before the first chunk of a reasoning segment."""
    CLOSE_TAG: ClassVar[str] = "</think>"
    """Written to the channel when a reasoning segment ends, before text resumes."""

    @staticmethod
    def scanner(
        *,
        start_in_reasoning: bool = False,
        assume_open: bool | EllipsisType | None = ...,
        tags: Iterable[str] | None = None,
    ) -> Scanner:
        """A new incremental scanner: ``feed(chunk)`` then ``flush()``, returning events.

        ``start_in_reasoning`` is for streams whose template already wrote the open tag (it
        is ``assume_open=True``). ``assume_open`` takes :meth:`split`'s setting: ``True``
        starts inside reasoning, ``False`` outside, ``None`` applies split's rule 4 (a close
        tag as the first marker means the template opened reasoning): the leading text is
        held until the first tag or the end decides it, which is the cost of asking for it.
        ``tags`` replaces the recognised names (default ``think``, ``thinking``, ``reasoning``).

        >>> s = ReasoningStream.scanner(assume_open=None)
        >>> s.feed("plan") + s.feed("</think>answer") + s.flush()
        [ReasoningStart(), ReasoningDelta(text='plan'), ReasoningEnd(), TextDelta(text='answer')]
        """
        return Scanner(start_in_reasoning=start_in_reasoning, assume_open=assume_open, tags=tags)

    @staticmethod
    def escaper(tags: Iterable[str] | None = None) -> Escaper:
        """A new escaper, the one the channel uses to keep payloads from forming markers."""
        return Escaper(tags)

    @staticmethod
    def unescape(text: str, *, tags: Iterable[str] | None = None) -> str:
        """Channel text as a person should read it: the channel's marker escapes undone.

        A payload that contained something tag-like (``<think>``) reaches the channel as
        ``<\\think>``; this removes exactly the one backslash the channel added, as
        ``split(..., lossless=True)`` does, and leaves everything else (markers included) as it
        is. Apply it to the whole text you show, accumulated chunk after chunk: an escape may
        straddle two chunks (``"<"`` then ``"\\think>"``). For chunk-by-chunk display use
        :meth:`scanner`, whose events carry text already unescaped.

        >>> ReasoningStream.unescape("use a <\\\\think> tag")
        'use a <think> tag'
        """
        return grammar_for(tags).unescape(text)

    @staticmethod
    def split(
        collected: str,
        *,
        lossless: bool = False,
        assume_open: bool | None = None,
        tags: Iterable[str] | None = None,
    ) -> Split:
        """Recover the reasoning and the answer from collected channel text.

        The default mode trims each segment, drops empty ones and trims the text at both ends;
        ``lossless=True`` keeps every segment and the text byte for byte. ``assume_open=None``
        treats a leading close tag as the end of a pre-filled segment; ``True`` starts inside
        reasoning, ``False`` drops a leading close tag. Escaped tags come back as text.
        """
        # One implementation: split is the scanner run once over the whole text.
        scanner = Scanner(assume_open=assume_open, tags=tags)
        events = scanner.feed(collected)
        truncated = scanner.in_reasoning
        events += scanner.flush()
        return _collect(events, truncated=truncated, lossless=lossless)


def _collect(events: list[ScanEvent], *, truncated: bool, lossless: bool) -> Split:
    segments: list[str] = []
    text: list[str] = []
    current: list[str] | None = None
    for event in events:
        if isinstance(event, TextDelta):
            text.append(event.text)
        elif isinstance(event, ReasoningDelta):
            if current is not None:
                current.append(event.text)
        elif isinstance(event, ReasoningStart):
            current = []
        else:
            if current is not None:
                segments.append("".join(current))
            current = None
    answer = "".join(text)
    if not lossless:
        segments = [s for s in (segment.strip() for segment in segments) if s]
        answer = answer.strip()
    return Split(
        reasoning="\n".join(segments),
        text=answer,
        segments=tuple(segments),
        truncated=truncated,
    )
