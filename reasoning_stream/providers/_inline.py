"""Inline reasoning tags in answer text: the decision, read from the model's profile.

A model's profile (:attr:`~reasoning_stream.profiles.ModelProfile.inline`) says whether it
writes reasoning inline and in which tags, and whether its chat template opens the first tag
itself (Qwen3 thinking builds, DeepSeek-R1 distillations, OLMo 3 Think): such a stream holds
only the close tag, and is reasoning from its first byte up to it.

:func:`inline_scanner` turns ``inline_tags`` (``"auto"``, ``True``, ``False``), the caller's
``start_in_reasoning`` (``None``: from the profile) and the profile into a tag reader:

* the template opens inside reasoning: a scanner that starts there (``assume_open=True``);
* the model writes tags but opens them itself: a scanner from outside (``assume_open=False``);
  one whose tagged reasoning comes only at the start (``inline.at_start``): the
  :class:`LeadingTagScanner` below, with its tag names;
* ``inline_tags=True`` for a model no profile knows: ``assume_open=None``, split's rule 4 (a
  close tag as the first marker means the template opened reasoning); the leading text waits
  for the first tag, the documented cost of asking for tags without saying where they start;
* ``"auto"`` for a model no profile knows never holds an answer back to guess: a
  :class:`LeadingTagScanner` reads tags only in a stream that *opens* with one (leading
  whitespace aside) and passes any other stream through as plain text, byte for byte, so a
  plain model quoting ``<think>`` keeps its answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, Protocol

from .._events import Event, Finish, ReasoningDelta, ReasoningStart, TextDelta
from .._exceptions import UsageError
from .._tags import DEFAULT_TAGS, UNFINISHED, Scanner, grammar_for
from ..profiles import Inline, lookup

__all__ = [
    "NO_RULE",
    "InlineTags",
    "InlineText",
    "LeadingTagScanner",
    "TagReader",
    "check_inline_options",
    "inline_rule",
    "inline_scanner",
    "inline_translator",
    "start_setting",
]


NO_RULE = Inline()
"""The rule of a model no profile describes as writing inline tags."""


class TagReader(Protocol):
    """What a translator needs of a tag scanner."""

    def feed(self, text: str) -> Sequence[Event]:
        """The events of one piece of text."""

    def flush(self) -> Sequence[Event]:
        """What is still held at the end."""


def inline_rule(provider: str | None, model: str | None, base_url: str | None = None) -> Inline:
    """The profile's inline rule for ``model`` on ``provider`` (none for an unknown one).

    >>> inline_rule("openai-chat", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B").opens_inside
    True
    """
    if not provider or not model:
        return Inline()
    return lookup(provider, model, base_url, warn=False).inline


def start_setting(start_in_reasoning: bool | None, inline: Inline) -> bool | None:
    """Where the stream starts: the caller's choice, else the profile's; ``None`` when
    neither knows (the model is not known to write tags at all).

    >>> start_setting(None, Inline(("think",), opens_inside=True))
    True
    """
    if start_in_reasoning is not None:
        return start_in_reasoning
    if inline.opens_inside:
        return True
    return False if inline.tags else None


def inline_scanner(
    inline_tags: bool | Literal["auto"],
    *,
    start_in_reasoning: bool | None = None,
    inline: Inline = NO_RULE,
    tags: Iterable[str] | None = None,
) -> TagReader | None:
    """The tag reader for ``inline_tags``: ``None`` when tags are never read.

    ``start_in_reasoning`` is the caller's (``None``: the profile decides); ``inline`` is
    the model's profile rule; ``tags`` the names to read (``None``: the default set, with
    any name the profile adds to it).
    """
    if inline_tags is False:
        return None
    names = tags
    if names is None and not set(inline.tags) <= set(DEFAULT_TAGS):
        names = tuple(dict.fromkeys((*DEFAULT_TAGS, *inline.tags)))
    start = start_setting(start_in_reasoning, inline)
    if start is True:
        return Scanner(start_in_reasoning=True, tags=names)
    if inline_tags is True or (start is False and inline.tags and not inline.at_start):
        return Scanner(assume_open=start, tags=names)
    return LeadingTagScanner(tags=names)


class LeadingTagScanner:
    """Reads tags only if the text opens with one (leading whitespace aside).

    Until the first non-blank character decides, the text is held: a tag there (an open tag,
    or a close tag that ends a segment the template opened) switches tag reading on for the
    rest of the stream, as ``split(assume_open=None)`` reads it; anything else makes the
    whole stream plain text, released exactly as received.

    >>> reader = LeadingTagScanner()
    >>> reader.feed("Use <think> to") + reader.feed(" mark thoughts.") + reader.flush()
    [TextDelta(text='Use <think> to'), TextDelta(text=' mark thoughts.')]
    >>> reader = LeadingTagScanner()
    >>> reader.feed("<thi") + reader.feed("nk>hm</think>ok") + reader.flush()
    [ReasoningStart(), ReasoningDelta(text='hm'), ReasoningEnd(), TextDelta(text='ok')]
    """

    __slots__ = ("_plain", "_raw", "_scanner", "_tags")

    def __init__(self, *, tags: Iterable[str] | None = None) -> None:
        self._tags = tags
        self._scanner: Scanner | None = None
        self._plain = False
        self._raw = ""

    @property
    def plain(self) -> bool:
        """Whether the start decided the stream is plain text (nothing more is scanned)."""
        return self._plain

    def feed(self, text: str) -> Sequence[Event]:
        """The events of ``text`` (held while the start is undecided)."""
        if self._plain:
            return [TextDelta(text)] if text else []
        if self._scanner is not None:
            return self._scanner.feed(text)
        self._raw += text
        return self._decide(final=False)

    def flush(self) -> Sequence[Event]:
        """The end of the text: what the scanner or the undecided start still holds."""
        if self._scanner is not None:
            return self._scanner.flush()
        if self._plain:
            return []
        return self._decide(final=True)

    def _decide(self, *, final: bool) -> Sequence[Event]:
        raw = self._raw
        start = len(raw) - len(raw.lstrip())
        if start == len(raw) and not final:
            return []
        if start < len(raw) and raw[start] == "<":
            grammar = grammar_for(self._tags)
            end = grammar.tag_end(raw, start)
            if end == UNFINISHED and not final:
                return []
            if end > 0 and raw[start + 1] != "\\":
                # An unescaped tag opens the text: read tags from here on.
                scanner = self._scanner = Scanner(assume_open=None, tags=self._tags)
                self._raw = ""
                events = scanner.feed(raw)
                return [*events, *scanner.flush()] if final else events
        self._plain = True
        self._raw = ""
        return [TextDelta(raw)] if raw else []


InlineTags = Literal["auto"] | bool
"""``"auto"``, ``True`` or ``False``: when answer text is read for inline tags."""


def check_inline_options(
    inline_tags: object, tags: Iterable[str] | str | None
) -> tuple[str, ...] | None:
    """Fail early on a bad ``inline_tags`` or tag name; the tag names as a tuple."""
    if inline_tags not in ("auto", True, False):
        raise UsageError(f"inline_tags must be 'auto', True or False, not {inline_tags!r}")
    if tags is None:
        return None
    names = (tags,) if isinstance(tags, str) else tuple(tags)
    grammar_for(names)  # a bad tag name fails here, not in the middle of a stream
    return names


class InlineText:
    """A provider translator whose answer text goes through a tag reader.

    Text deltas are read for tags; everything else passes in order. In ``"auto"`` mode native
    reasoning (a reasoning event of the translator's own) ends tag reading: what the reader
    holds is released as it stood, and text passes untouched from then on, as it does once a
    :class:`LeadingTagScanner` has found the text plain. A finish reason releases what the
    reader holds first, so no text lands after it. Other attributes are the translator's.
    """

    __slots__ = ("_auto", "_inner", "_reader")

    def __init__(self, inner: Any, reader: TagReader, *, auto: bool) -> None:
        self._inner = inner
        self._reader: TagReader | None = reader
        self._auto = auto

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def response_id(self) -> str | None:
        """The wrapped translator's response id."""
        return self._inner.response_id  # type: ignore[no-any-return]

    def feed(self, chunk: Any) -> list[Event]:
        """The translator's events for ``chunk``, its text read for tags."""
        return self._read(self._inner.feed(chunk))

    def finish(self) -> list[Event]:
        """The end of a complete stream: the translator's last events, then what is held."""
        return self._read(self._inner.finish()) + self._release()

    def salvage(self) -> list[Event]:
        """A broken stream: what the translator and the reader still hold."""
        return self._read(self._inner.salvage()) + self._release()

    def read_response(self, response: Any) -> list[Event]:
        """A one-shot response, read as its stream."""
        return self._read(self._inner.read_response(response)) + self._release()

    def _release(self) -> list[Event]:
        reader, self._reader = self._reader, None
        return list(reader.flush()) if reader is not None else []

    def _read(self, events: list[Event]) -> list[Event]:
        reader = self._reader
        if reader is None:
            return events
        out: list[Event] = []
        for event in events:
            if reader is None:
                out.append(event)
            elif type(event) is TextDelta:
                out.extend(reader.feed(event.text))
                if isinstance(reader, LeadingTagScanner) and reader.plain:
                    self._reader = reader = None  # plain text: nothing more to read
            elif isinstance(event, Finish) or (
                self._auto and isinstance(event, ReasoningStart | ReasoningDelta)
            ):
                out.extend(reader.flush())
                if self._auto and not isinstance(event, Finish):
                    self._reader = reader = None
                out.append(event)
            else:
                out.append(event)
        return out


def inline_translator(pipe: Any, translator: Any) -> Any:
    """``translator`` with its text read for tags as ``pipe``'s ``inline_tags``,
    ``start_in_reasoning`` and ``tags`` ask (itself when ``inline_tags`` is ``False``)."""
    inline_tags: InlineTags = getattr(pipe, "inline_tags", False)
    if inline_tags is False:
        return translator
    reader = inline_scanner(
        inline_tags,
        start_in_reasoning=getattr(pipe, "start_in_reasoning", None),
        inline=pipe.profile.inline,
        tags=getattr(pipe, "tags", None),
    )
    if reader is None:
        return translator
    return InlineText(translator, reader, auto=inline_tags == "auto")
