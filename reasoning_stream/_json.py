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
"""

from __future__ import annotations

import json
from typing import Any, Literal

__all__ = ["BACKEND", "loads"]

BACKEND: Literal["msgspec", "json"]
"""The decoder :func:`loads` tries first: ``"msgspec"`` when it is installed, else ``"json"``."""

try:
    from msgspec import DecodeError as _DecodeError
    from msgspec.json import Decoder as _Decoder
except ImportError:  # the stdlib alone
    BACKEND = "json"

    def loads(data: str | bytes) -> Any:
        """Decode one JSON document, as ``json.loads`` does."""
        return json.loads(data)

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
