"""JSON decoding for the streaming hot path: msgspec when installed, the stdlib otherwise.

Every provider chunk is a small JSON document, and decoding it is most of a lean transport's
cost. msgspec decodes the recorded chunks about four times faster than ``json.loads``
(``python -m benchmarks.bench_json``); ``pip install 'reasoning-stream[fast]'`` installs it.

:func:`loads` returns exactly what ``json.loads`` returns, or raises what it raises, for every
``str`` and ``bytes`` input. msgspec refuses some documents the stdlib reads (``NaN`` and
``Infinity``, numbers beyond a double's range that the stdlib reads as infinities, escaped lone
surrogates, a UTF-8 byte order mark in bytes, UTF-16 and UTF-32 bytes), and those go to
``json.loads``, which also has the last word on every malformed document. One difference is
left, at the edge of the interpreter's recursion limit: a document nested within three levels of
the depth at which ``json.loads`` raises ``RecursionError`` (about 990 levels by default) still
decodes. orjson was measured too and is slower on these chunks; it also reads integers beyond
64 bits as floats without an error, which no fallback could notice.

:func:`loads_utf8` is the lean transports' entry: a ``data:`` payload or an NDJSON line as the
bytes that came off the wire, decoded as ``json.loads`` decodes the text an httpx ``iter_text``
reader would have made of them (UTF-8, a malformed sequence read as U+FFFD). msgspec reads
such bytes without a ``str`` in between; what it refuses (malformed UTF-8 among it) goes the
stdlib's way, which decodes the text first.
"""

from __future__ import annotations

import json
from typing import Any, Literal

__all__ = ["BACKEND", "loads", "loads_utf8", "stdlib_loads_utf8"]

BACKEND: Literal["msgspec", "json"]
"""The decoder :func:`loads` tries first: ``"msgspec"`` when it is installed, else ``"json"``."""


def stdlib_loads_utf8(data: bytes) -> Any:
    """:func:`loads_utf8` with the stdlib alone: the UTF-8 text of ``data``, then ``json.loads``."""
    return json.loads(data.decode("utf-8", "replace"))


try:
    from msgspec import DecodeError as _DecodeError
    from msgspec.json import Decoder as _Decoder
except ImportError:  # the stdlib alone
    BACKEND = "json"

    def loads(data: str | bytes) -> Any:
        """Decode one JSON document, as ``json.loads`` does."""
        return json.loads(data)

    def loads_utf8(data: bytes) -> Any:
        """Decode the UTF-8 bytes of one JSON document, as ``json.loads`` decodes their text
        (``data.decode("utf-8", "replace")``)."""
        return json.loads(data.decode("utf-8", "replace"))

else:
    BACKEND = "msgspec"
    _decode = _Decoder().decode
    # DecodeError covers malformed and out-of-range documents, UnicodeEncodeError a str that
    # holds lone surrogates, RecursionError deep nesting: json.loads decides them all.
    _REFUSED = (_DecodeError, UnicodeEncodeError, RecursionError)

    def loads(data: str | bytes) -> Any:
        """Decode one JSON document, as ``json.loads`` does."""
        try:
            return _decode(data)
        except _REFUSED:
            return json.loads(data)

    def loads_utf8(data: bytes) -> Any:
        """Decode the UTF-8 bytes of one JSON document, as ``json.loads`` decodes their text
        (``data.decode("utf-8", "replace")``)."""
        try:
            return _decode(data)
        except _REFUSED:
            return json.loads(data.decode("utf-8", "replace"))
