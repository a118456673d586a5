"""``ReasoningStream.unescape``: the display helper undoes exactly the channel's escapes.

The oracle is a character-by-character reading of the tag grammar written here from the
contract (API.md sections 1 and 3), sharing no code with ``reasoning_stream._tags``.
Hypothesis budget: 300 examples per law (about a second each).
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reasoning_stream import ReasoningStream
from reasoning_stream._tags import Escaper
from reasoning_stream.testing.strategies import chunkings, tag_text
from tests.helpers import examples

NAMES = ("think", "thinking", "reasoning")
MAX_SPACES = 4
EXAMPLES = settings(max_examples=examples(300), deadline=None)


def _ascii_lower(c: str) -> str:
    return chr(ord(c) + 32) if "A" <= c <= "Z" else c


def _tag_end(text: str, i: int, names: Sequence[str]) -> tuple[int, int] | None:
    """If a tag (escaped or not) starts at ``text[i] == "<"``: (backslashes, end index)."""
    j = i + 1
    while j < len(text) and text[j] == "\\":
        j += 1
    backslashes = j - i - 1
    if j < len(text) and text[j] == "/":
        j += 1
    for name in names:
        candidate = text[j : j + len(name)]
        if len(candidate) != len(name):
            continue
        if "".join(_ascii_lower(c) for c in candidate) != name:
            continue
        k = j + len(name)
        spaces = 0
        while k < len(text) and text[k] in " \t" and spaces < MAX_SPACES:
            k += 1
            spaces += 1
        if k < len(text) and text[k] == ">":
            return backslashes, k + 1
    return None


def reference_unescape(text: str, names: Sequence[str] = NAMES) -> str:
    """Drop one backslash after the ``<`` of every escaped tag, reading left to right."""
    out: list[str] = []
    i = 0
    while i < len(text):
        found = _tag_end(text, i, names) if text[i] == "<" else None
        if found is None:
            out.append(text[i])
            i += 1
            continue
        backslashes, end = found
        tag = text[i:end]
        out.append("<" + tag[2:] if backslashes else tag)
        i = end
    return "".join(out)


def has_marker(text: str, names: Sequence[str] = NAMES) -> bool:
    """Whether ``text`` holds a real (unescaped) open or close tag."""
    for i, c in enumerate(text):
        if c == "<":
            found = _tag_end(text, i, names)
            if found is not None and found[0] == 0:
                return True
    return False


def test_examples() -> None:
    unescape = ReasoningStream.unescape
    assert unescape("a <\\think> b") == "a <think> b"
    assert unescape("<\\\\/ThInK\t>") == "<\\/ThInK\t>"  # exactly one backslash goes
    assert unescape("<think>x</think>") == "<think>x</think>"  # markers stay
    assert unescape("<\\thinkk> <\\ think> \\<think>") == "<\\thinkk> <\\ think> \\<think>"
    assert unescape("<\\think     >") == "<\\think     >"  # five spaces: not a tag
    assert unescape("<\\answer>", tags=["answer"]) == "<answer>"
    assert unescape("<\\think>", tags=["answer"]) == "<\\think>"


def test_the_reference_is_not_trivial() -> None:
    """The oracle itself: it changes escaped tags and nothing else."""
    assert reference_unescape("x<\\\\Reasoning  >y") == "x<\\Reasoning  >y"
    assert reference_unescape("<\\thin") == "<\\thin"
    assert has_marker("a</think >") and not has_marker("a<\\/think>")


@EXAMPLES
@given(tag_text())
def test_unescape_agrees_with_the_reference(text: str) -> None:
    assert ReasoningStream.unescape(text) == reference_unescape(text)


@EXAMPLES
@given(tag_text(), st.sampled_from([("answer",), ("think", "th"), ("reasoning", "REASON")]))
def test_unescape_with_custom_tags_agrees_with_the_reference(
    text: str, tags: tuple[str, ...]
) -> None:
    names = tuple(name.lower() for name in tags)
    assert ReasoningStream.unescape(text, tags=tags) == reference_unescape(text, names)


@EXAMPLES
@given(tag_text())
def test_lossless_split_removes_what_the_reference_removes(text: str) -> None:
    """Text without real markers: ``split(lossless=True)`` and ``unescape`` both equal the
    reference, so the display helper removes exactly what ``split`` removes."""
    assume(not has_marker(text))
    split = ReasoningStream.split(text, lossless=True, assume_open=False)
    assert split.segments == ()
    assert split.text == reference_unescape(text) == ReasoningStream.unescape(text)


@EXAMPLES
@given(tag_text(), st.data())
def test_unescape_undoes_the_channel_escaper_at_every_chunking(
    payload: str, data: st.DataObject
) -> None:
    """What a payload became on the channel, accumulated and unescaped, is the payload."""
    escaper = Escaper()
    channel = "".join(escaper.feed(delta) for delta in data.draw(chunkings(payload)))
    channel += escaper.flush()
    assert not has_marker(channel)
    assert ReasoningStream.unescape(channel) == payload
