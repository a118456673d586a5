"""The channel: the one place that decides markers, escaping and the reasoning gate. Pure, no I/O.

A ``Channel`` turns hook calls into an *outbox*: a queue of ``(payload, targets)`` entries, where
a payload is a ``str`` chunk for streaming callbacks or an event for event callbacks, and
``targets`` are the callbacks that must receive it, in order. Nothing here calls a callback;
:mod:`._delivery` empties the outbox.

Escaping is kept per subscriber. A subscriber's stream is the concatenation of the chunks it
received, so characters that could still become a tag are held *for the subscribers that saw
their beginning*, until more text addressed to those subscribers decides them, a marker follows,
or the channel ends. Subscribers with the same history share one escaper, so the usual case (one
audience for the whole run) costs one escaper. A Pipeline whose pipes have different callbacks
therefore never shows anyone a forged tag, whoever sees which part.

>>> from reasoning_stream._delivery import deliver
>>> chunks = []
>>> channel, audience = Channel(), (chunks.append,)
>>> channel.text("x<thi", audience, (), True, "a")
>>> channel.text("nk>", audience, (), True, "a")
>>> channel.end()
>>> deliver(channel, None)
>>> chunks
['x<', '\\\\think>']
"""

from __future__ import annotations

import copy
import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from types import BuiltinMethodType, MethodType
from typing import Any, Protocol, TypeAlias

from ._events import Event, ReasoningDelta, ReasoningEnd, ReasoningStart, TextDelta
from ._exceptions import UsageError
from ._stream import ReasoningStream
from ._tags import Escaper

__all__ = ["Channel", "Entry", "Holder", "Targets", "claim", "release"]

Targets: TypeAlias = tuple[Callable[[Any], Any], ...]
"""The callbacks an outbox entry goes to, in delivery order."""
Entry: TypeAlias = "str | tuple[str | Event, Targets]"
"""One outbox entry: a chunk or an event, and who gets it. A bare ``str`` is a chunk for
:attr:`Channel.solo_targets` (the usual case, without building a pair per chunk)."""

_OPEN = ReasoningStream.OPEN_TAG
_CLOSE = ReasoningStream.CLOSE_TAG


class _View:
    """Subscribers that have seen the same stream so far, and the escaper of that stream.

    Subscribers are told apart by :func:`_subscriber`, so the same bound method registered on
    two pipes is one subscriber with one stream.
    """

    __slots__ = ("escaper", "members")

    def __init__(self, escaper: Escaper, members: dict[Hashable, Callable[[Any], Any]]) -> None:
        self.escaper = escaper
        self.members = members


def _subscriber(callback: Callable[[Any], Any]) -> Hashable:
    """Who receives through ``callback``: bound methods of one object and function are one."""
    owner = getattr(callback, "__self__", None)
    if owner is not None and isinstance(callback, MethodType | BuiltinMethodType):
        function = getattr(callback, "__func__", None)
        return (id(owner), id(function) if function is not None else callback.__name__)
    return id(callback)


class Channel:
    """Marker state, per-subscriber escapers and the outbox of one run.

    A run owns its channel for its lifetime; a Pipeline's pipes share the Pipeline run's channel,
    which is what makes markers and escaping span pipe boundaries. Hooks called outside any run
    write to the pipe's own idle channel.
    """

    __slots__ = (
        "_last_audience",
        "_last_views",
        "_solo_audience",
        "_solo_escaper",
        "_views",
        "awaiting",
        "deferred",
        "delivering",
        "handed",
        "open",
        "outbox",
        "reasoning_events_open",
        "reasoning_lane",
        "solo_targets",
        "text_lane",
    )

    def __init__(self, *, deferred: bool = False) -> None:
        self.outbox: deque[Entry] = deque()
        """Entries not yet handed to all their targets, oldest first."""
        self.deferred = deferred
        """Hooks only queue; the driver delivers (async runs)."""
        self.delivering = False
        """A sync delivery is under way: a re-entrant hook only queues, so order stays one order.

        (An async run's hooks only queue anyway: its driver is the one that delivers.)"""
        self.handed = False
        """Entries were handed out since a turn last cleared it (a retry must not repeat them)."""
        self.awaiting: str | Event | None = None
        """The payload whose async callback the driver is awaiting (for error reports)."""
        self.open = False
        """A reasoning marker is open in the channel."""
        self.reasoning_events_open = False
        """A ``ReasoningStart`` went to the event callbacks without its ``ReasoningEnd`` yet."""
        self._views: list[_View] = []
        self._last_audience: Targets | None = None
        self._last_views: list[tuple[Escaper, Targets]] = []
        # When the last audience has a single view: its escaper (its targets: solo_targets).
        self._solo_audience: Targets | None = None
        self._solo_escaper = Escaper()
        self.solo_targets: Targets = ()
        """Who gets a bare ``str`` entry: the one view of the last audience written to."""
        self.text_lane: Targets | None = None
        """The audience whose next answer delta may skip the channel (see :meth:`lane`)."""
        self.reasoning_lane: Targets | None = None
        """The audience whose next reasoning delta, inside the open segment, may skip it."""

    # ------------------------------------------------------------------------- the decisions

    def reasoning(
        self,
        delta: str,
        audience: Targets,
        events: Targets,
        gate: bool,
        escape: bool,
        source: str,
    ) -> None:
        """A reasoning delta. Behind the gate, nothing goes out.

        The first delta through the gate opens the marker and the event sequence alike, also
        inside a segment whose start was gated (the gate turned on mid-segment), so event
        callbacks are framed exactly as the channel is.
        """
        self.text_lane = None
        if not gate:
            self.reasoning_lane = None
            return
        if not self.reasoning_events_open:
            self.reasoning_events_open = True
            if events:
                self.outbox.append((ReasoningStart(source=source), events))
        if not self.open:
            self.open = True
            self.marker(_OPEN, audience)
        if audience is self._solo_audience and escape:
            out = self._solo_escaper.feed(delta)
            if out:
                self.outbox.append(out)
        elif audience:
            self.write(delta, audience, escape)
        if events:
            self.outbox.append((ReasoningDelta(delta, source=source), events))
        self.reasoning_lane = self.lane(audience, events)

    def close_segment(self, audience: Targets, events: Targets, source: str) -> None:
        """A reasoning segment ended: close the marker and the event sequence if they are open."""
        self.text_lane = self.reasoning_lane = None
        if self.open:
            self.open = False
            self.marker(_CLOSE, audience)
        if self.reasoning_events_open:
            self.reasoning_events_open = False
            if events:
                self.outbox.append((ReasoningEnd(source=source), events))

    def text(
        self, delta: str, audience: Targets, events: Targets, escape: bool, source: str
    ) -> None:
        """Answer text (the caller closed any open segment first)."""
        # The usual case, one view for this audience, without the general loop.
        if audience is self._solo_audience and escape:
            out = self._solo_escaper.feed(delta)
            if out:
                self.outbox.append(out)
        elif audience:
            self.write(delta, audience, escape)
        if events:
            self.outbox.append((TextDelta(delta, source=source), events))
        self.text_lane = self.lane(audience, events)
        self.reasoning_lane = None

    def event(self, event: Event, events: Targets) -> None:
        """A typed event that is not channel text (tool call, usage, finish)."""
        if events:
            self.outbox.append((event, events))

    def end(self) -> None:
        """The channel ends: every subscriber gets the characters still held for it."""
        self.text_lane = self.reasoning_lane = None
        for view in self._views:
            held = view.escaper.flush()
            if held:
                self.outbox.append((held, tuple(view.members.values())))

    # ---------------------------------------------------------------------------- the lanes

    def lane(self, audience: Targets, events: Targets) -> Targets | None:
        """``audience``, when its next delta of the same kind may skip the channel; else ``None``.

        That is when the audience is one callback that is the whole of its view, at most one
        event callback listens and its escaper is settled (no tag left unfinished): then a delta
        without ``<`` would come out of :meth:`text` (or :meth:`reasoning`, inside the open
        segment, the gate still open) unchanged, for that callback alone, followed by its typed
        delta for the event callback. A driver may then hand such a delta to ``audience[0]``
        (and ``TextDelta``/``ReasoningDelta(delta, source=...)`` to ``events[0]``) itself, with
        the channel's state unchanged, while the lane stays open: every write of the channel
        re-decides both lanes, and a pipe closes them (:meth:`close_lanes`) when its callbacks
        change.
        """
        if (
            len(events) > 1
            or len(audience) != 1
            or audience is not self._solo_audience
            or not self._solo_escaper.settled
        ):
            return None
        return audience

    def close_lanes(self) -> None:
        """Every delta goes through the channel until a write re-decides the lanes."""
        self.text_lane = self.reasoning_lane = None

    # -------------------------------------------------------------------------- the writing

    def write(self, payload: str, audience: Targets, escape: bool) -> None:
        """Queue payload text for a non-empty ``audience``, escaped for each one's own stream."""
        views = self._last_views if audience is self._last_audience else self._views_for(audience)
        outbox = self.outbox
        if escape:
            for escaper, targets in views:
                out = escaper.feed(payload)
                if out:
                    outbox.append((out, targets))
            return
        # Unescaped text decides nothing; what was held goes out first, as it was.
        for escaper, targets in views:
            held = escaper.flush()
            if held:
                outbox.append((held, targets))
        outbox.append((payload, audience))

    def marker(self, marker: str, audience: Targets) -> None:
        """Queue a marker; it starts with ``<``, ending any unfinished tag: held text goes first."""
        if not audience:
            return
        views = self._last_views if audience is self._last_audience else self._views_for(audience)
        for escaper, targets in views:
            held = escaper.flush()
            if held:
                self.outbox.append((held, targets))
        self.outbox.append((marker, audience))

    def _views_for(self, audience: Targets) -> list[tuple[Escaper, Targets]]:
        """Each view's escaper and its callbacks in ``audience``, splitting views as needed."""
        keyed = [(_subscriber(callback), callback) for callback in audience]
        wanted = {key for key, _ in keyed}
        chosen: list[tuple[Escaper, Targets]] = []
        views: list[_View] = []
        for view in self._views:
            members = view.members
            inside = {key for key in members if key in wanted}
            views.append(view)
            if not inside:
                continue
            wanted -= inside
            if len(inside) < len(members):
                # Part of this view listens now: from here on their streams differ.
                split = _View(copy.copy(view.escaper), {})
                for key in inside:
                    split.members[key] = members.pop(key)
                views.append(split)
                view = split
            view.members.update((key, callback) for key, callback in keyed if key in inside)
            targets = tuple(callback for key, callback in keyed if key in inside)
            chosen.append((view.escaper, targets))
        if wanted:
            fresh = _View(Escaper(), {key: callback for key, callback in keyed if key in wanted})
            views.append(fresh)
            chosen.append((fresh.escaper, tuple(c for k, c in keyed if k in wanted)))
        self._views = views
        self._last_audience = audience
        self._last_views = chosen
        self._pin_bare_entries()
        if len(chosen) == 1:
            self._solo_audience = audience
            self._solo_escaper, self.solo_targets = chosen[0]
        else:
            self._solo_audience = None
        return chosen

    def _pin_bare_entries(self) -> None:
        """Bare chunks still queued keep the targets they were written for."""
        outbox = self.outbox
        if any(type(entry) is str for entry in outbox):
            targets = self.solo_targets
            pinned = [(entry, targets) if type(entry) is str else entry for entry in outbox]
            outbox.clear()
            outbox.extend(pinned)


# ------------------------------------------------------------------------------- ownership


class Holder(Protocol):
    """A pipe, as a run's claim on it sees it: its hooks write to ``_channel``."""

    name: str
    _run: Channel | None
    """The channel of the run holding the pipe, if one does."""
    _channel: Channel
    _idle: Channel
    """Where hooks called outside any run write."""


_CLAIMS = threading.Lock()


def claim(pipes: Iterable[Holder], channel: Channel, *, what: str) -> None:
    """Give ``channel`` to every pipe for one run, or refuse before touching any of them."""
    pipes = tuple(pipes)
    with _CLAIMS:
        for pipe in pipes:
            if pipe._run is not None:
                raise UsageError(
                    f"pipe {pipe.name!r} is already running, alone or in a Pipeline, so {what} "
                    "cannot start; use one pipe instance per concurrent stream"
                )
        for pipe in pipes:
            pipe._run = channel
            pipe._channel = channel


def release(pipes: Iterable[Holder], channel: Channel) -> None:
    """End a run's hold on its pipes; hooks called afterwards go to each pipe's idle channel."""
    with _CLAIMS:
        for pipe in pipes:
            if pipe._run is channel:
                pipe._run = None
                pipe._channel = pipe._idle
