"""Terminal rendering of a live channel: reasoning dimmed under a header, the answer plain.

The renderer is itself a channel consumer: it reads the marker-wrapped chunks with the
incremental scanner, exactly as any user of the library would, so what it shows is what
``ReasoningStream.split()`` would recover.
"""

from __future__ import annotations

import time
from typing import IO, Any

from ._events import ReasoningDelta, ReasoningEnd, ReasoningStart, TextDelta
from ._stream import ReasoningStream

__all__ = ["ChannelRenderer"]


class ChannelRenderer:
    """A streaming callback that draws the channel for a person.

    With ``rich`` installed and a terminal on ``stream``, reasoning is dimmed under a
    "Thinking" header and closed with the seconds it took; otherwise the same layout is written
    as plain text. ``raw=True`` writes the channel bytes untouched (markers included), for
    piping into ``reasoning-stream split``.
    """

    def __init__(self, stream: IO[str], *, raw: bool = False, color: bool | None = None) -> None:
        self._stream = stream
        self._raw = raw
        self._scanner = ReasoningStream.scanner()
        self._console: Any = None
        use_color = stream.isatty() if color is None else color
        if use_color and not raw:
            try:
                from rich.console import Console
            except ImportError:  # rich is an extra; plain text is a fine fallback
                pass
            else:
                self._console = Console(
                    file=stream, highlight=False, soft_wrap=True, force_terminal=True
                )
        self._segment_started = 0.0
        self._at_line_start = True
        self._wrote_any = False
        self._reader_gone = False
        self._after_thought = False

    def __call__(self, chunk: str) -> None:
        if self._raw:
            self._write(chunk)
            return
        for event in self._scanner.feed(chunk):
            self._show(event)

    def close(self) -> None:
        """End of the channel: release what the scanner holds and close an open segment."""
        if not self._raw:
            for event in self._scanner.flush():
                self._show(event)

    def _write(self, text: str, style: str | None = None) -> None:
        if not text or self._reader_gone:
            return
        try:
            if self._console is not None:
                self._console.print(text, style=style, end="", markup=False)
            else:
                self._stream.write(text)
            self._stream.flush()
        except BrokenPipeError:
            # The reader left (`| head`); the run goes on and its result is still captured.
            self._reader_gone = True
            return
        self._at_line_start = text.endswith("\n")
        self._wrote_any = True

    def _newline(self) -> None:
        if not self._at_line_start:
            self._write("\n")

    def _show(self, event: object) -> None:
        if isinstance(event, ReasoningStart):
            self._segment_started = time.perf_counter()
            if self._wrote_any:
                self._newline()
                self._write("\n")
            self._write("Thinking\n", "bold dim")
        elif isinstance(event, ReasoningDelta):
            self._write(event.text, "dim italic")
        elif isinstance(event, ReasoningEnd):
            elapsed = time.perf_counter() - self._segment_started
            self._newline()
            self._write(f"(thought for {elapsed:.1f} s)\n\n", "dim")
            self._after_thought = True
        elif isinstance(event, TextDelta):
            text = event.text
            if self._after_thought:
                # The layout already separates the answer from the thought above it.
                text = text.lstrip("\n")
                self._after_thought = not text
            self._write(text)
