"""Terminal rendering of a live channel: reasoning dimmed under a header, the answer plain.

The renderer is itself a channel consumer: it reads the marker-wrapped chunks with the
incremental scanner, exactly as any user of the library would, so what it shows is what
``ReasoningStream.split()`` would recover.

On a terminal it also keeps a live line ("Thinking… 3.2 s") while the model has shown nothing
yet, or has finished a thought and not started its answer; the line is erased the moment
reasoning or answer text flows. It is drawn only when the output stream is a terminal, never
into a pipe or a file.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from typing import IO

from ._events import ReasoningDelta, ReasoningEnd, ReasoningStart, TextDelta
from ._stream import ReasoningStream

__all__ = ["ChannelRenderer", "color_wanted", "is_terminal"]

_RESET = "\x1b[0m"
_STYLES = {
    "bold": "\x1b[1m",
    "dim": "\x1b[2m",
    "header": "\x1b[1;2m",
    "reasoning": "\x1b[2;3m",
}
_ERASE_LINE = "\r\x1b[K"


def is_terminal(stream: object) -> bool:
    """Whether ``stream`` is an open terminal (a closed or odd stream counts as not one)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):
        return False


def color_wanted(stream: object, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to colour output written to ``stream``.

    ``NO_COLOR`` (any non-empty value) turns colour off, ``FORCE_COLOR`` (any non-empty value)
    turns it on even into a pipe, ``TERM=dumb`` turns it off; otherwise colour goes to terminals
    only. ``NO_COLOR`` wins over ``FORCE_COLOR`` (the order CPython's own colouring uses).
    """
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    if env.get("TERM") == "dumb":
        return False
    return is_terminal(stream)


def paint(text: str, style: str | None, on: bool) -> str:
    """``text`` in one of the renderer's styles (``bold``, ``dim``, ...) when ``on``."""
    if not on or not style or not text:
        return text
    return f"{_STYLES[style]}{text}{_RESET}"


class ChannelRenderer:
    """A streaming callback that draws the channel for a person.

    Reasoning is shown dimmed under a "Thinking" header and closed with the seconds it took;
    without colour (``NO_COLOR``, a pipe, a file) the same layout is written as plain text.
    ``raw=True`` writes the channel bytes untouched (markers included), for piping into
    ``reasoning-stream split``.

    ``live`` draws the elapsed-time line while nothing is flowing (default: when ``stream`` is a
    terminal); ``color`` defaults to :func:`color_wanted`. A reader that goes away (``| head``)
    raises ``BrokenPipeError`` once from the call that met it; later calls write nothing.
    Call :meth:`close` at the end of the channel (or use the renderer as a context manager):
    it releases what the scanner holds and erases the live line.
    """

    def __init__(
        self,
        stream: IO[str],
        *,
        raw: bool = False,
        color: bool | None = None,
        live: bool | None = None,
        label: str = "Thinking…",
        interval: float = 0.1,
    ) -> None:
        self._stream = stream
        self._raw = raw
        self._scanner = ReasoningStream.scanner()
        self._color = (color_wanted(stream) if color is None else color) and not raw
        if live is None:
            live = is_terminal(stream) and os.environ.get("TERM") != "dumb"
        self._live = live and not raw
        self._label = label
        self._interval = interval
        # Every write, from the caller's thread or the live line's, holds this lock.
        self._lock = threading.Lock()
        self._segment_started = 0.0
        self._at_line_start = True
        self._wrote_any = False
        self._reader_gone = False
        self._broken_pipe: BrokenPipeError | None = None
        self._after_thought = False
        self._closed = False
        # While set, nothing is flowing: the live line shows the seconds since then.
        self._waiting_since: float | None = time.perf_counter()
        self._line_shown = False
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if self._live:
            self._ticker = threading.Thread(
                target=self._tick, name="reasoning-stream live line", daemon=True
            )
            self._ticker.start()

    @property
    def raw(self) -> bool:
        """Whether the channel bytes are written untouched."""
        return self._raw

    @property
    def at_line_start(self) -> bool:
        """Whether the last thing written ended a line (or nothing was written)."""
        return self._at_line_start

    @property
    def reader_gone(self) -> bool:
        """Whether the reader of ``stream`` went away (a broken pipe)."""
        return self._reader_gone

    def __enter__(self) -> ChannelRenderer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __call__(self, chunk: str) -> None:
        if self._raw:
            self._write(chunk)
            return
        for event in self._scanner.feed(chunk):
            self._show(event)

    def close(self) -> None:
        """End of the channel: release what the scanner holds, close an open segment, and
        erase the live line. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        self._stop_ticker()
        if not self._raw:
            try:
                for event in self._scanner.flush():
                    self._show(event)
            except BrokenPipeError:
                pass  # the reader is gone; nothing more to show
        with self._lock:
            self._waiting_since = None
            self._erase_line()

    # ----------------------------------------------------------------------------- drawing

    def _stop_ticker(self) -> None:
        self._stop.set()
        ticker = self._ticker
        if ticker is not None and ticker is not threading.current_thread():
            ticker.join()
        self._ticker = None

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            with self._lock:
                self._draw_line()
            if self._reader_gone:
                return

    def _draw_line(self) -> None:
        since = self._waiting_since
        if since is None or self._reader_gone or not self._at_line_start:
            return
        elapsed = time.perf_counter() - since
        line = paint(f"{self._label} {elapsed:.1f} s", "dim", self._color)
        if self._put("\r" + line + "\x1b[K"):
            self._line_shown = True

    def _erase_line(self) -> None:
        if self._line_shown:
            self._line_shown = False
            self._put(_ERASE_LINE)

    def _put(self, data: str) -> bool:
        """Write and flush ``data``; ``False`` once the reader is gone."""
        if self._reader_gone:
            return False
        try:
            self._stream.write(data)
            self._stream.flush()
        except BrokenPipeError as error:
            self._reader_gone = True
            self._broken_pipe = error
            return False
        except (OSError, ValueError):
            # A closed or failing stream: stop drawing rather than fail the run.
            self._reader_gone = True
            return False
        return True

    def _write(self, text: str, style: str | None = None) -> None:
        if text and not self._reader_gone:
            with self._lock:
                self._erase_line()
                if self._put(paint(text, style, self._color)):
                    self._at_line_start = text.endswith("\n")
                    self._wrote_any = True
        error = self._broken_pipe
        if error is not None and not self._closed:
            # Tell the caller once (from its own thread), then write nothing more.
            self._broken_pipe = None
            raise error

    def _newline(self) -> None:
        if not self._at_line_start:
            self._write("\n")

    def _show(self, event: object) -> None:
        if isinstance(event, ReasoningStart):
            self._waiting_since = None
            self._segment_started = time.perf_counter()
            if self._wrote_any:
                self._newline()
                self._write("\n")
            self._write("Thinking\n", "header")
        elif isinstance(event, ReasoningDelta):
            self._write(event.text, "reasoning")
        elif isinstance(event, ReasoningEnd):
            elapsed = time.perf_counter() - self._segment_started
            self._newline()
            self._write(f"(thought for {elapsed:.1f} s)\n\n", "dim")
            self._after_thought = True
            self._waiting_since = time.perf_counter()
        elif isinstance(event, TextDelta):
            text = event.text
            if self._after_thought:
                # The layout already separates the answer from the thought above it.
                text = text.lstrip("\n")
                self._after_thought = not text
            if text:
                self._waiting_since = None
            self._write(text)
