"""Moved: the strategies are public now, in ``reasoning_stream.testing.hypothesis_strategies``.

Kept so that a test still importing from here keeps working; import from the public module.
"""

from __future__ import annotations

from reasoning_stream.testing.hypothesis_strategies import (
    TAG_FRAGMENTS,
    chunkings,
    event_scripts,
    tag_text,
    text_and_chunks,
)

__all__ = ["TAG_FRAGMENTS", "chunkings", "event_scripts", "tag_text", "text_and_chunks"]
