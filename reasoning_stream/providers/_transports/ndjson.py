"""Newline-delimited JSON (Ollama's ``/api/chat`` and ``/api/generate``), decoded purely.

:class:`NDJSONDecoder` cuts lines from the body's bytes and decodes each; :mod:`.wire`'s one
loop pair feeds it for a :class:`~.lean.HttpCall` (Ollama's lean transport). The ``ollama``
SDK's own generator is read through :mod:`.sdk`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .base import Decode, PayloadDecoder, decode_json

__all__ = ["NDJSONDecoder", "ndjson_lines"]

_LF = ord("\n")
_JSON_SPACE = b" \t\r\n"


class NDJSONDecoder(PayloadDecoder):
    """The lines of an NDJSON body, decoded: the wire's bytes in, chunks out. Pure.

    Lines end at ``\\n`` alone (a ``\\r`` before it is whitespace to JSON), so a U+2028 inside
    a string, which ``str.splitlines`` would cut at, stays in its line; ``\\n`` is ASCII, never
    part of a multi-byte UTF-8 sequence, so the bytes are cut where the text is. Blank lines
    (JSON whitespace only) are skipped. A line that fails to decode ends the stream; the
    chunks of the same piece before it still come out, and :meth:`check` raises after them.

    >>> decoder = NDJSONDecoder("x")
    >>> decoder.feed(b'{"a": 1}\\n\\n[2]'), decoder.finish()
    ([{'a': 1}], [[2]])
    """

    __slots__ = ("_decode", "_pending", "_provider")

    def __init__(self, provider: str, decode: Decode = decode_json) -> None:
        super().__init__()
        self._provider = provider
        self._decode = decode
        self._pending: list[bytes] = []

    def feed(self, piece: bytes) -> list[Any]:
        """The chunks of the lines ``piece`` completes, in order."""
        if not self._pending and piece[-1:] == b"\n" and _LF not in (line := piece[:-1]):
            # The common piece: one whole line (servers flush per line), most often an object,
            # which is no blank line (a byte compared costs less than a strip).
            if line[:1] == b"{" or line.strip(_JSON_SPACE):
                return [self._decode(self._provider, line)]
            return []
        return self._decoded(self._lines(piece))

    def finish(self) -> list[Any]:
        """The chunk of the unterminated last line, unless it is blank."""
        rest = b"".join(self._pending)
        self._pending.clear()
        return self._decoded([rest]) if rest.strip(_JSON_SPACE) else []

    def _lines(self, piece: bytes) -> list[bytes]:
        """The non-blank lines ``piece`` completes; the unfinished rest stays pending."""
        pending = self._pending
        if b"\n" not in piece:
            pending.append(piece)
            return []
        if pending:
            pending.append(piece)
            piece = b"".join(pending)
            pending.clear()
        lines = piece.split(b"\n")
        rest = lines.pop()
        if rest:
            pending.append(rest)
        return [line for line in lines if line.strip(_JSON_SPACE)]

    def _decoded(self, lines: list[bytes]) -> list[Any]:
        chunks: list[Any] = []
        try:
            for line in lines:
                chunks.append(self._decode(self._provider, line))
        except Exception as error:
            # The chunks decoded before it are still the stream's: the error waits for them.
            self._hold(error, chunks)
        return chunks


def ndjson_lines(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """The lines :class:`NDJSONDecoder` cuts from ``pieces``, undecoded (for laws and tests)."""
    decoder = NDJSONDecoder("lines", _undecoded)
    for piece in pieces:
        yield from decoder.feed(piece)
    yield from decoder.finish()


def _undecoded(provider: str, line: bytes) -> bytes:
    return line
