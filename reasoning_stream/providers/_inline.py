"""Inline reasoning tags in answer text, read only where a model is known to write them.

``inline_tags="auto"`` must not turn a plain model's answer into reasoning because it quotes
``<think>``: :func:`inline_scanner` scans every chunk only when the model starts inside
reasoning (a template that pre-fills the open tag) or the caller asked for it
(``inline_tags=True``); otherwise a :class:`LeadingTagScanner` scans only a stream that
*starts* with an open tag (leading whitespace aside) and passes any other stream through as
plain text, byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, Protocol

from .._events import Event, ReasoningDelta, ReasoningStart, TextDelta
from .._tags import Scanner

__all__ = ["LeadingTagScanner", "TagReader", "inline_scanner"]


class TagReader(Protocol):
    """What a translator needs of a tag scanner."""

    def feed(self, text: str) -> Sequence[Event]:
        """The events of one piece of text."""

    def flush(self) -> Sequence[Event]:
        """What is still held at the end."""


def inline_scanner(
    inline_tags: bool | Literal["auto"],
    *,
    start_in_reasoning: bool = False,
    known_inline: bool = False,
    tags: Iterable[str] | None = None,
) -> TagReader | None:
    """The tag reader for ``inline_tags``: ``None`` when tags are never read.

    ``known_inline``: the model is known to write reasoning tags (DeepSeek-R1 and its
    distillations), so ``"auto"`` reads them everywhere, as ``True`` does.
    """
    if inline_tags is False:
        return None
    if inline_tags is True or start_in_reasoning or known_inline:
        return Scanner(start_in_reasoning=start_in_reasoning, tags=tags)
    return LeadingTagScanner(tags=tags)


class LeadingTagScanner:
    """A :class:`~reasoning_stream._tags.Scanner` that reads tags only if the text opens with one.

    Until the first non-blank character decides, the scanner's events are held: an open tag
    there switches tag reading on for the rest of the stream (the held events are released);
    anything else makes the whole stream plain text, released exactly as received.

    >>> reader = LeadingTagScanner()
    >>> reader.feed("Use <think> to") + reader.feed(" mark thoughts.") + reader.flush()
    [TextDelta(text='Use <think> to'), TextDelta(text=' mark thoughts.')]
    >>> reader = LeadingTagScanner()
    >>> reader.feed("<thi") + reader.feed("nk>hm</think>ok") + reader.flush()
    [ReasoningStart(), ReasoningDelta(text='hm'), ReasoningEnd(), TextDelta(text='ok')]
    """

    __slots__ = ("_held", "_mode", "_raw", "_scanner")

    def __init__(self, *, tags: Iterable[str] | None = None) -> None:
        self._scanner = Scanner(tags=tags)
        self._mode: Literal["undecided", "tags", "plain"] = "undecided"
        self._raw: list[str] = []
        self._held: list[Event] = []

    def feed(self, text: str) -> Sequence[Event]:
        """The events of ``text`` (held while the start is undecided)."""
        if self._mode == "plain":
            return [TextDelta(text)] if text else []
        if self._mode == "tags":
            return self._scanner.feed(text)
        self._raw.append(text)
        self._held.extend(self._scanner.feed(text))
        return self._decide(final=False)

    def flush(self) -> Sequence[Event]:
        """The end of the text: what the scanner or the undecided start still holds."""
        if self._mode == "tags":
            return self._scanner.flush()
        if self._mode == "plain":
            return []
        self._held.extend(self._scanner.flush())
        return self._decide(final=True)

    def _decide(self, *, final: bool) -> Sequence[Event]:
        for event in self._held:
            if isinstance(event, ReasoningStart | ReasoningDelta):
                self._mode = "tags"
                held, self._held, self._raw = self._held, [], []
                return held
            if isinstance(event, TextDelta) and event.text.strip():
                break
        else:
            if not final:
                return []
        self._mode = "plain"
        raw = "".join(self._raw)
        self._held, self._raw = [], []
        return [TextDelta(raw)] if raw else []
