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
from itertools import product
from types import EllipsisType

from ._events import (
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    _set_reasoning_source,
    _set_reasoning_text,
    _set_text_source,
    _set_text_text,
)
from ._exceptions import UsageError

__all__ = [
    "DEFAULT_TAGS",
    "LONG_INPUT",
    "MAX_SPACES",
    "NO_TAG",
    "UNFINISHED",
    "Escaper",
    "Scanner",
    "TagGrammar",
    "grammar_for",
]

DEFAULT_TAGS: tuple[str, ...] = ("think", "thinking", "reasoning")
"""Tag names recognised unless a caller configures its own set."""

MAX_SPACES = 4
"""How many spaces or tabs may stand before a tag's ``>``."""

_FORBIDDEN = frozenset("<>/\\")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

ScanEvent = ReasoningStart | ReasoningDelta | ReasoningEnd | TextDelta

_new = object.__new__

# Markers carry nothing but a source the pipe sets on a copy, so one frozen instance of each
# serves every scanner.
_START = ReasoningStart()
_END = ReasoningEnd()


LONG_INPUT = 256
"""Inputs longer than this are searched with regular expressions; shorter ones with ``str.find``.

Per call, ``str.find`` and a set lookup per ``<`` beat the regular expressions' setup on the
short chunks that streams are made of; on long inputs dense in ``<`` (code, HTML) the regular
expressions skip the text between tags at C speed.
"""

NO_TAG = -1
""":meth:`TagGrammar.tag_end`: the ``<`` does not begin a tag."""

UNFINISHED = -2
""":meth:`TagGrammar.tag_end`: the data ends inside something that could still become a tag."""


class TagGrammar:
    """The compiled grammar of one set of tag names.

    Build it through :func:`grammar_for`, which caches one grammar per name set.
    """

    __slots__ = (
        "_bodies",
        "_escaped",
        "_longest_body",
        "_lookahead",
        "_unfinished",
        "max_tag_length",
        "names",
        "starters",
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
        # A tag is "<", any backslashes (an escaped tag), then a *body* and ">". Bodies are few
        # (two per name and run of spaces and tabs), so a set lookup reads a tag, and another
        # set, of every body's prefixes, tells a tag that the data cut short.
        spacings = ["".join(p) for n in range(MAX_SPACES + 1) for p in product(" \t", repeat=n)]
        bodies = {slash + n + s for n in self.names for s in spacings for slash in ("", "/")}
        self._bodies = frozenset(bodies)
        self._unfinished = frozenset(b[:i] for b in bodies for i in range(len(b) + 1))
        self._longest_body = max(map(len, bodies))
        self.max_tag_length = 1 + 1 + max(map(len, self.names)) + MAX_SPACES + 1
        # The characters that may follow "<" in a tag; any other "<" is plain text.
        self.starters = frozenset(
            "/\\" + "".join(n[0] for n in self.names) + "".join(n[0].upper() for n in self.names)
        )
        # Long inputs are searched with regular expressions, which skip text at C speed.
        alternatives = "|".join(re.escape(n) for n in sorted(self.names, key=len, reverse=True))
        body = rf"\\*/?(?:{alternatives})[ \t]{{0,{MAX_SPACES}}}>"
        self.tag = re.compile(f"<{body}", re.ASCII | re.IGNORECASE)
        self._lookahead = re.compile(f"<(?={body})", re.ASCII | re.IGNORECASE)
        # Unescaping removes one backslash right after the "<" of an escaped tag.
        self._escaped = re.compile(f"<\\\\(?={body})", re.ASCII | re.IGNORECASE)

    def tag_end(self, data: str, k: int) -> int:
        """Read the tag whose ``<`` is ``data[k]``: the index after its ``>``, or a sentinel.

        :data:`NO_TAG` when this ``<`` is plain text; :data:`UNFINISHED` when ``data`` ends
        before it is decided (it could still become a tag with more input).
        """
        size = len(data)
        start = k + 1
        while start < size and data[start] == "\\":
            start += 1
        stop = data.find(">", start, start + self._longest_body + 1)
        # Tags come in lower case far more often than not: look that up before folding the case.
        if stop < 0:
            if size - start > self._longest_body:
                return NO_TAG
            rest = data[start:]
            if rest in self._unfinished or _fold(rest) in self._unfinished:
                return UNFINISHED
            return NO_TAG
        body = data[start:stop]
        return stop + 1 if body in self._bodies or _fold(body) in self._bodies else NO_TAG

    def escape(self, text: str) -> str:
        """Add one backslash after the ``<`` of everything in ``text`` that parses as a tag."""
        return self._lookahead.sub("<\\\\", text)

    def unescape(self, text: str) -> str:
        """Remove one backslash after the ``<`` of every escaped tag in ``text``."""
        if "<" not in text:
            return text
        return self._escaped.sub("<", text)


def _fold(text: str) -> str:
    """ASCII letters to lower case, nothing else (tags match case-insensitively in ASCII only)."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


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


class Scanner:
    """Turns a stream of text with inline tags into reasoning and text events.

    ``feed()`` takes chunks of any size and returns the events they complete; ``flush()`` ends
    the stream, releasing held characters and closing an open segment. The scanner holds back an
    unfinished tag, at most ``max_tag_length - 1`` characters (exactly that many for a longest
    tag cut before its ``>``), and emits the rest at once.

    >>> s = Scanner()
    >>> s.feed("<thi") + s.feed("nk>hm</think>ok") + s.flush()
    [ReasoningStart(), ReasoningDelta(text='hm'), ReasoningEnd(), TextDelta(text='ok')]
    """

    __slots__ = (
        "_grammar",
        "_head",
        "_held",
        "_in_reasoning",
        "_pending",
        "_seen_marker",
        "_skip",
        "_start_in_reasoning",
        "_starters",
        "_stray_at",
        "_undecided",
        "assume_open",
    )

    def __init__(
        self,
        *,
        start_in_reasoning: bool = False,
        assume_open: bool | EllipsisType | None = ...,
        tags: Iterable[str] | None = None,
    ) -> None:
        if assume_open is ...:
            assume_open = start_in_reasoning
        elif start_in_reasoning and assume_open is not True:
            raise UsageError(
                f"start_in_reasoning=True and assume_open={assume_open!r} disagree: "
                "start_in_reasoning=True is assume_open=True; pass one of them"
            )
        self._grammar = grammar_for(tags)
        self._starters = self._grammar.starters
        self.assume_open: bool | None = assume_open
        """``True``: the input starts inside reasoning; ``False``: outside; ``None``: a close
        tag as the first marker means the template opened reasoning (held until decided)."""
        self._start_in_reasoning = assume_open is True
        self._reset()

    def _reset(self) -> None:
        self._in_reasoning = self._start_in_reasoning
        # Events owed before the next output: the opening of a pre-filled segment. While the
        # start is undecided (assume_open=None) it holds that opening too, which keeps every
        # chunk on the scanning path until the first marker decides.
        self._head: list[ScanEvent] = (
            [_START] if self._start_in_reasoning or self.assume_open is None else []
        )
        self._undecided = self.assume_open is None
        # The leading text held while undecided, already unescaped.
        self._held: list[str] = []
        # An unfinished tag. When _skip is 1 its leading "<" already went out.
        self._pending = ""
        self._skip = 0
        self._seen_marker = False
        # Where, in one scan's events, a close tag that was the first marker stood.
        self._stray_at: int | None = None

    @property
    def in_reasoning(self) -> bool:
        """Whether the stream is inside a reasoning segment right now."""
        return self._in_reasoning

    @property
    def held(self) -> str:
        """The characters held back: an unfinished tag, and while ``assume_open=None`` has
        not been decided, the leading text (unescaped) before it."""
        if self._undecided:
            return "".join(self._held) + self._pending[self._skip :]
        return self._pending[self._skip :]

    @property
    def max_holdback(self) -> int:
        """The most characters this scanner ever holds back."""
        return self._grammar.max_tag_length - 1

    def feed(self, chunk: str) -> list[ScanEvent]:
        """Scan one chunk; return the events it completes."""
        pending = self._pending
        if pending:
            if pending != "<" or self._skip:
                self._pending = ""
                return self._scan(pending + chunk, self._skip)
            # A lone "<" ended the last chunk (code and prose: "a <" then " b"). When this chunk
            # cannot continue a tag and holds no "<" of its own, the "<" is text: it goes out
            # with the chunk, on the common path below.
            if not chunk:
                return []
            if chunk[0] in self._starters or "<" in chunk or self._undecided:
                self._pending = ""
                return self._scan(pending + chunk, 0)
            self._pending = ""
            chunk = pending + chunk
        elif self._head:
            return self._scan(chunk, 0)
        elif "<" in chunk:
            last = len(chunk) - 1
            if last >= LONG_INPUT:
                return self._scan(chunk, 0)
            # Only a "<" before a tag's first character (or at the very end) can begin a tag.
            starters = self._starters
            k = chunk.find("<")
            while k >= 0:
                if k == last:
                    # Only the chunk's last character may begin a tag: it waits for the next
                    # chunk, the rest goes out now.
                    self._pending = "<"
                    if not last:
                        return []
                    chunk = chunk[:last]
                    break
                if chunk[k + 1] in starters:
                    return self._scan(chunk, 0)
                k = chunk.find("<", k + 1)
        elif not chunk:
            return []
        # The common chunk: no tag starts, ends or waits in it, so it goes out whole. Its event
        # is built slot by slot, as the classes' own __init__ does, without the class call
        # around it: a fifth of this path's cost.
        if self._in_reasoning:
            delta: ScanEvent = _new(ReasoningDelta)
            _set_reasoning_text(delta, chunk)
            _set_reasoning_source(delta, None)
        else:
            delta = _new(TextDelta)
            _set_text_text(delta, chunk)
            _set_text_source(delta, None)
        return [delta]

    def _scan(self, data: str, begin: int) -> list[ScanEvent]:
        """Scan ``data`` for tags; text goes out from ``data[begin]`` on (a held "<" went out)."""
        if self._undecided:
            return self._decide(data, begin)
        self._skip = 0
        events: list[ScanEvent] = self._head
        if events:
            self._head = []
        else:
            events = []
        grammar = self._grammar
        starters = grammar.starters
        in_reasoning = self._in_reasoning
        size = end = len(data)
        # Where a tag is dropped (escaped, stray, or an open inside a segment), the text on both
        # sides of it joins up; the list exists only then.
        pieces: list[str] | None = None
        # The next tag spans data[k:tag_end]; an unfinished one at the end starts at ``held``.
        search = grammar.tag.search if size > LONG_INPUT else None
        held = -1
        pos = 0
        while True:
            if search is not None:
                match = search(data, pos)
                if match is None:
                    k = data.rfind("<", pos)
                    if k >= 0 and grammar.tag_end(data, k) == UNFINISHED:
                        held = k
                    break
                k, tag_end = match.span()
            else:
                k = data.find("<", pos)
                while k >= 0 and k + 1 < size and data[k + 1] not in starters:
                    k = data.find("<", k + 1)
                if k < 0:
                    break
                tag_end = grammar.tag_end(data, k)
                if tag_end < 0:
                    if tag_end == UNFINISHED:
                        held = k
                        break
                    pos = k + 1
                    continue
            after = k + 1
            marker = data[after]
            if marker == "\\":
                # An escaped tag is text with one backslash fewer: the one right after "<".
                if pieces is None:
                    pieces = [data[begin:after]]
                else:
                    pieces.append(data[begin:after])
                begin = after + 1
            else:
                first_marker = not self._seen_marker
                self._seen_marker = True
                if marker == "/":
                    acts = in_reasoning or (first_marker and self.assume_open is None)
                else:
                    acts = not in_reasoning
                if acts:
                    text = data[begin:k]
                    if pieces is not None:
                        pieces.append(text)
                        text = "".join(pieces)
                        pieces = None
                    if text:
                        events.append(ReasoningDelta(text) if in_reasoning else TextDelta(text))
                    if marker != "/":
                        events.append(_START)
                        in_reasoning = True
                    elif in_reasoning:
                        events.append(_END)
                        in_reasoning = False
                    else:
                        self._stray_at = len(events)
                elif pieces is None:
                    pieces = [data[begin:k]]
                else:
                    pieces.append(data[begin:k])
                begin = tag_end
            pos = tag_end
        if held >= 0:
            # Hold the unfinished tag back for the next chunk. Of an escape's run of backslashes,
            # "<" and all but one go out now: the output starts with them whether or not the
            # rest becomes an escaped tag, so the hold-back stays short.
            after = held + 1
            end = after
            while end < size and data[end] == "\\":
                end += 1
            if end > after:
                end -= 1
                self._pending = "<" + data[end:]
                self._skip = 1
            else:
                end = held
                self._pending = data[held:]
        text = data[begin:end]
        if pieces is not None:
            pieces.append(text)
            text = "".join(pieces)
        if text:
            if in_reasoning:
                event: ScanEvent = _new(ReasoningDelta)
                _set_reasoning_text(event, text)
                _set_reasoning_source(event, None)
            else:
                event = _new(TextDelta)
                _set_text_text(event, text)
                _set_text_source(event, None)
            events.append(event)
        self._in_reasoning = in_reasoning
        return events

    def _decide(self, data: str, begin: int) -> list[ScanEvent]:
        """``assume_open=None``: scan as outside reasoning, holding the text until the first
        marker decides what it was (split's rule 4)."""
        self._undecided = False
        self._head = []
        events = self._scan(data, begin)
        if not self._seen_marker:
            # Still undecided: everything so far is text (no marker yet), held.
            self._held.extend(e.text for e in events)  # type: ignore[union-attr]
            self._undecided = True
            self._head = [_START]
            return []
        return self._release(events)

    def _release(self, events: list[ScanEvent]) -> list[ScanEvent]:
        held = "".join(self._held)
        self._held = []
        stray = self._stray_at
        self._stray_at = None
        if stray is None:
            # The first marker opened a segment: the held text was answer text.
            return [TextDelta(held), *events] if held else events
        # A close tag was the first marker: everything before it was reasoning.
        before = held + "".join(e.text for e in events[:stray])  # type: ignore[union-attr]
        head: list[ScanEvent] = [_START, ReasoningDelta(before), _END] if before else [_START, _END]
        return head + events[stray:]

    def flush(self) -> list[ScanEvent]:
        """End the stream: release held characters and close an open segment."""
        rest = self._pending[self._skip :]
        if self._undecided:
            # No marker at all: the held start was plain text.
            text = "".join(self._held) + rest
            events: list[ScanEvent] = [TextDelta(text)] if text else []
        else:
            events = self._head
            self._head = []
            if rest:
                events.append(ReasoningDelta(rest) if self._in_reasoning else TextDelta(rest))
            if self._in_reasoning:
                events.append(_END)
        self._reset()
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

    @property
    def settled(self) -> bool:
        """Whether no tag is unfinished: text without ``<`` would then go out unchanged.

        Not the same as nothing ``held``: after a delta ending in ``<`` nothing is held, yet
        what follows may finish the tag that ``<`` began.
        """
        return self._pending is None

    def feed(self, text: str) -> str:
        """Escape one delta; return what can go out now."""
        pending = self._pending
        if pending is None:
            if "<" not in text:
                return text
            data = text
        else:
            # The held body's "<" and backslashes went out already; a "<" stands in for them
            # (escaping adds one backslash whatever their number) and is cut off below.
            data = "<" + pending + text
            self._pending = None
        grammar = self._grammar
        size = end = len(data)
        if size > LONG_INPUT:
            # Only the last "<" can begin an unfinished tag; a regular expression escapes the rest.
            k = data.rfind("<")
            if k >= 0 and grammar.tag_end(data, k) == UNFINISHED:
                end = k + 1
                while end < size and data[end] == "\\":
                    end += 1
                self._pending = data[end:]
                out = grammar.escape(data[:k]) + data[k:end]
            else:
                out = grammar.escape(data)
            return out if pending is None else out[1:]
        starters = grammar.starters
        pieces: list[str] = []
        begin = 0
        k = data.find("<")
        while k >= 0:
            after = k + 1
            if after < size and data[after] not in starters:
                k = data.find("<", after)
                continue
            tag_end = grammar.tag_end(data, k)
            if tag_end == NO_TAG:
                k = data.find("<", after)
                continue
            if tag_end == UNFINISHED:
                # Whether or not the tail becomes a tag, "<" and its backslashes go out
                # unchanged (the backslash escaping adds may stand anywhere in that run).
                end = after
                while end < size and data[end] == "\\":
                    end += 1
                self._pending = data[end:]
                break
            pieces.append(data[begin:after])
            pieces.append("\\")
            begin = after
            k = data.find("<", tag_end)
        if pieces:
            pieces.append(data[begin:end])
            out = "".join(pieces)
        else:
            out = data[begin:end]
        return out if pending is None else out[1:]

    def flush(self) -> str:
        """Release what is held: the stream ended, or a marker follows."""
        pending = self._pending
        self._pending = None
        return pending or ""
