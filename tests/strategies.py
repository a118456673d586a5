"""Hypothesis strategies: text full of tag fragments, and every way to chunk it."""

from __future__ import annotations

from hypothesis import strategies as st

from reasoning_stream import ReasoningDelta, ReasoningEnd, ReasoningStart, TextDelta

TAG_FRAGMENTS = [
    "<",
    ">",
    "/",
    "\\",
    "\\\\",
    " ",
    "\t",
    "    ",
    "     ",
    "\n",
    "think",
    "thinking",
    "reasoning",
    "Think",
    "THINK",
    "ThInKiNg",
    "REASONING",
    "thin",
    "reason",
    "k",
    "ing",
    "<think>",
    "</think>",
    "<thinking>",
    "</thinking>",
    "<reasoning>",
    "</reasoning>",
    "<think >",
    "</think\t>",
    "<think    >",
    "<think     >",
    "</ReaSoning  >",
    "<\\think>",
    "<\\/think>",
    "<\\\\think>",
    "</\\think>",
    "<<think>",
    "<</think>",
    "<thinkk>",
    "< think>",
    "<thin",
    "</thi",
    "<\\thi",
    "a",
    "b",
    "é",
    "日本",
    "🙂",
    "\U0001d11e",
    "İ",
    "\u212a",
]

tag_text = st.lists(
    st.one_of(st.sampled_from(TAG_FRAGMENTS), st.text(max_size=3)), max_size=30
).map("".join)
"""Arbitrary text, dense in whole and partial tags, escapes, case variants and wide characters."""


@st.composite
def chunkings(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at arbitrary offsets (empty chunks included)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=12)))
    pieces: list[str] = []
    start = 0
    for cut in cuts:
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


@st.composite
def text_and_chunks(draw: st.DrawFn) -> tuple[str, list[str]]:
    """Tag-dense text and one chunking of it."""
    text = draw(tag_text)
    return text, draw(chunkings(text))


script_events = st.lists(
    st.one_of(
        st.just(ReasoningStart()),
        st.just(ReasoningEnd()),
        tag_text.map(ReasoningDelta),
        tag_text.map(TextDelta),
    ),
    max_size=25,
)
"""A provider's event sequence with arbitrary payloads (empty ones included)."""
