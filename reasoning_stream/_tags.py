"""Tag grammar, the incremental scanner and the channel escaper: pure state machines, no I/O.

A *marker* is ``<name>`` or ``</name>`` where ``name`` is one of the configured tag names in any
ASCII letter case, with up to four spaces or tabs before the ``>``. The same text with one or more
backslashes after the ``<`` (``<\\think>``) is an *escaped* tag: plain text that a channel wrote so
a payload could never be mistaken for a marker. The scanner removes exactly one of those
backslashes; the escaper adds exactly one.

Both machines hold back only a suffix that could still become a tag, and emit everything else at
once, so their cost is linear in the stream and their memory is bounded by the longest tag.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ._events import ReasoningDelta, ReasoningEnd, ReasoningStart, TextDelta

__all__ = ["DEFAULT_TAGS", "MAX_SPACES", "Escaper", "Scanner", "TagGrammar", "grammar_for"]

DEFAULT_TAGS: tuple[str, ...] = ("think", "thinking", "reasoning")
"""Tag names recognised unless a caller configures its own set."""

MAX_SPACES = 4
"""How many spaces or tabs may stand before a tag's ``>``."""

_FLAGS = re.ASCII | re.IGNORECASE
_FORBIDDEN = frozenset("<>/\\")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

ScanEvent = ReasoningStart | ReasoningDelta | ReasoningEnd | TextDelta


class TagGrammar:
    """The compiled grammar of one set of tag names.

    Build it through :func:`grammar_for`, which caches one grammar per name set.
    """

    __slots__ = (
        "_escaped",
        "_lookahead",
        "_starters",
        "max_tag_length",
        "names",
        "partial",
        "tag",
    )

    def __init__(self, names: Iterable[str]) -> None:
        cleaned: list[str] = []
        for name in names:
            if not isinstance(name, str) or not name:
                raise ValueError(f"tag names must be non-empty strings, got {name!r}")
            if any(c in _FORBIDDEN or c.isspace() for c in name):
                raise ValueError(
                    f"tag name {name!r} may not contain whitespace or any of '<', '>', '/', '\\'"
                )
            cleaned.append(name.translate(_ASCII_LOWER))
        if not cleaned:
            raise ValueError("at least one tag name is needed")
        self.names: tuple[str, ...] = tuple(dict.fromkeys(cleaned))
        by_length = sorted(self.names, key=len, reverse=True)
        alternatives = "|".join(re.escape(n) for n in by_length)
        body = rf"(?:{alternatives})[ \t]{{0,{MAX_SPACES}}}>"
        # group 1: the backslashes of an escaped tag; group 2: "/" for a close tag.
        self.tag = re.compile(rf"<(\\*)(/?){body}", _FLAGS)
        # The escaper only needs to know where to add a backslash: right after such a "<".
        self._lookahead = re.compile(rf"<(?=\\*/?{body})", _FLAGS)
        # Unescaping removes one backslash right after the "<" of an escaped tag.
        self._escaped = re.compile(rf"<\\(?=\\*/?{body})", _FLAGS)
        prefixes = sorted(
            {n[:i] for n in self.names for i in range(1, len(n) + 1)}, key=len, reverse=True
        )
        prefix_alternatives = "|".join(re.escape(p) for p in prefixes)
        # Everything that is not yet a tag but could still become one with more input.
        self.partial = re.compile(
            rf"<\\*(?:/?(?:(?:{alternatives})[ \t]{{0,{MAX_SPACES}}}|{prefix_alternatives})?)",
            _FLAGS,
        )
        self.max_tag_length = 1 + 1 + len(by_length[0]) + MAX_SPACES + 1
        # The characters that may follow "<" in a tag; any other "<" is plain text.
        self._starters = frozenset(
            "/\\" + "".join(n[0] for n in self.names) + "".join(n[0].upper() for n in self.names)
        )

    def may_hold_tag(self, data: str) -> bool:
        """Whether any ``<`` in ``data`` could begin a tag (a cheap test before the regexes)."""
        starters = self._starters
        end = len(data) - 1
        i = data.find("<")
        while i >= 0:
            if i == end or data[i + 1] in starters:
                return True
            i = data.find("<", i + 1)
        return False

    def partial_start(self, data: str, start: int) -> int:
        """Where an unfinished tag begins at the end of ``data[start:]``, or -1.

        A tag holds exactly one ``<``, at its start, so only the last ``<`` can begin one.
        """
        k = data.rfind("<", start)
        if k >= 0 and self.partial.fullmatch(data, k):
            return k
        return -1

    def escape(self, text: str) -> str:
        """Add one backslash after the ``<`` of everything in ``text`` that parses as a tag."""
        return self._lookahead.sub("<\\\\", text)

    def unescape(self, text: str) -> str:
        """Remove one backslash after the ``<`` of every escaped tag in ``text``."""
        if "<" not in text:
            return text
        return self._escaped.sub("<", text)


@lru_cache(maxsize=64)
def _grammar(names: tuple[str, ...]) -> TagGrammar:
    return TagGrammar(names)


def grammar_for(tags: Iterable[str] | None = None) -> TagGrammar:
    """The grammar for ``tags`` (default: ``think``, ``thinking``, ``reasoning``), cached."""
    if tags is None:
        return _grammar(DEFAULT_TAGS)
    if isinstance(tags, str):
        tags = (tags,)
    return _grammar(tuple(tags))


def _backslashes_after_open(data: str, k: int) -> int:
    """How many backslashes follow the ``<`` at ``data[k]``."""
    end = k + 1
    n = len(data)
    while end < n and data[end] == "\\":
        end += 1
    return end - k - 1


class Scanner:
    """Turns a stream of text with inline tags into reasoning and text events.

    ``feed()`` takes chunks of any size and returns the events they complete; ``flush()`` ends
    the stream, releasing held characters and closing an open segment. The scanner holds back at
    most ``max_tag_length - 1`` characters (an unfinished tag) and emits the rest at once.

    >>> s = Scanner()
    >>> s.feed("<thi") + s.feed("nk>hm</think>ok") + s.flush()
    [ReasoningStart(), ReasoningDelta(text='hm'), ReasoningEnd(), TextDelta(text='ok')]
    """

    __slots__ = (
        "_grammar",
        "_head",
        "_in_reasoning",
        "_pending",
        "_seen_marker",
        "_skip",
        "_start_in_reasoning",
        "_track_stray",
        "stray_close_at",
    )

    def __init__(
        self,
        *,
        start_in_reasoning: bool = False,
        tags: Iterable[str] | None = None,
        _track_stray_close: bool = False,
    ) -> None:
        self._grammar = grammar_for(tags)
        self._start_in_reasoning = start_in_reasoning
        self._track_stray = _track_stray_close
        self._reset()

    def _reset(self) -> None:
        self._in_reasoning = self._start_in_reasoning
        # Events owed before the next output: the opening of a pre-filled segment.
        self._head: list[ScanEvent] = [ReasoningStart()] if self._start_in_reasoning else []
        # An unfinished tag. When _skip is 1 its leading "<" already went out.
        self._pending = ""
        self._skip = 0
        self._seen_marker = False
        self.stray_close_at: int | None = None

    @property
    def in_reasoning(self) -> bool:
        """Whether the stream is inside a reasoning segment right now."""
        return self._in_reasoning

    @property
    def held(self) -> str:
        """The characters held back because they could still become a tag."""
        return self._pending[self._skip :]

    @property
    def max_holdback(self) -> int:
        """The most characters this scanner ever holds back."""
        return self._grammar.max_tag_length - 1

    def feed(self, chunk: str) -> list[ScanEvent]:
        """Scan one chunk; return the events it completes."""
        if (
            not self._pending
            and not self._head
            and ("<" not in chunk or not self._grammar.may_hold_tag(chunk))
        ):
            if not chunk:
                return []
            return [ReasoningDelta(chunk) if self._in_reasoning else TextDelta(chunk)]
        data = self._pending + chunk
        skip = self._skip
        self._pending = ""
        self._skip = 0
        return self._scan(data, skip)

    def flush(self) -> list[ScanEvent]:
        """End the stream: release held characters and close an open segment."""
        events: list[ScanEvent] = self._head
        self._head = []
        rest = self._pending[self._skip :]
        if rest:
            events.append(ReasoningDelta(rest) if self._in_reasoning else TextDelta(rest))
        if self._in_reasoning:
            events.append(ReasoningEnd())
        stray = self.stray_close_at
        self._reset()
        self.stray_close_at = stray
        return events

    def _scan(self, data: str, skip: int) -> list[ScanEvent]:
        events: list[ScanEvent] = self._head
        self._head = []
        pieces: list[str] = []
        in_reasoning = self._in_reasoning

        def release() -> None:
            nonlocal skip
            text = "".join(pieces)
            pieces.clear()
            if skip:
                # The leading "<" of a held tag went out with an earlier chunk.
                text = text[skip:]
                skip = 0
            if text:
                events.append(ReasoningDelta(text) if in_reasoning else TextDelta(text))

        pos = 0
        for match in self._grammar.tag.finditer(data):
            start = match.start()
            if start > pos:
                pieces.append(data[pos:start])
            pos = match.end()
            if match.group(1):
                # Escaped tag: text with one backslash fewer.
                pieces.append("<" + data[start + 2 : pos])
                continue
            first_marker = not self._seen_marker
            self._seen_marker = True
            if match.group(2):
                if in_reasoning:
                    release()
                    events.append(ReasoningEnd())
                    in_reasoning = False
                elif first_marker and self._track_stray:
                    release()
                    self.stray_close_at = len(events)
            elif not in_reasoning:
                release()
                events.append(ReasoningStart())
                in_reasoning = True
        k = self._grammar.partial_start(data, pos)
        if k < 0:
            pieces.append(data[pos:])
        else:
            backslashes = _backslashes_after_open(data, k)
            if backslashes:
                # Emit "<" and all but one backslash now: the result starts with them whether
                # or not the rest becomes an escaped tag, so only one backslash waits.
                pieces.append(data[pos:k] + "<" + "\\" * (backslashes - 1))
                self._pending = "<" + data[k + backslashes :]
                self._skip = 1
            else:
                pieces.append(data[pos:k])
                self._pending = data[k:]
        release()
        self._in_reasoning = in_reasoning
        return events


class Escaper:
    """Makes payload text safe for the channel: nothing in it can parse as a marker.

    Anything that would parse as a tag, escaped or not, gets one more backslash after its ``<``.
    A possible tag split across deltas is held until the next delta decides it; ``flush()``
    releases it at the end of the stream or before a marker (a marker starts with ``<``, which
    can never continue an unfinished tag).

    >>> e = Escaper()
    >>> e.feed("a <thi") + e.feed("nk> b") + e.flush()
    'a <\\\\think> b'
    """

    __slots__ = ("_grammar", "_pending")

    def __init__(self, tags: Iterable[str] | None = None) -> None:
        self._grammar = grammar_for(tags)
        # The body of an unfinished tag; its "<" and backslashes already went out.
        self._pending: str | None = None

    @property
    def held(self) -> str:
        """The characters held back because they could still become a tag."""
        return self._pending or ""

    def feed(self, text: str) -> str:
        """Escape one delta; return what can go out now."""
        pending = self._pending
        if pending is None:
            if "<" not in text or not self._grammar.may_hold_tag(text):
                return text
            data = text
        else:
            data = "<" + pending + text
            self._pending = None
        grammar = self._grammar
        k = grammar.partial_start(data, 0)
        if k < 0:
            out = grammar.escape(data)
        else:
            backslashes = _backslashes_after_open(data, k)
            # Whether or not the tail becomes a tag, "<" and its backslashes go out unchanged;
            # the one backslash escaping adds may stand anywhere in that run.
            out = grammar.escape(data[:k]) + data[k : k + 1 + backslashes]
            self._pending = data[k + 1 + backslashes :]
        return out if pending is None else out[1:]

    def flush(self) -> str:
        """Release what is held: the stream ended, or a marker follows."""
        pending = self._pending
        self._pending = None
        return pending or ""
