"""The incremental scanner and the escaper: laws over arbitrary text and every chunking."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from itertools import product
from unittest.mock import patch

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from reasoning_stream import (
    DEFAULT_TAGS,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ReasoningStream,
    TextDelta,
    UsageError,
    _tags,
)
from reasoning_stream._tags import MAX_SPACES, Escaper, ScanEvent, Scanner, grammar_for
from reasoning_stream.testing.hypothesis_strategies import chunkings, tag_text, text_and_chunks
from tests.helpers import coalesce, reference_split, segments_and_text
from tests.reference import reference_split_auto

LONGEST_TAG = len("</reasoning    >")

thresholds = st.sampled_from([10**9, 0, 8])
"""Values of LONG_INPUT: every input read with str.find, every one with regular expressions, or
chunks of either kind within one stream."""


@contextmanager
def long_input(threshold: int) -> Iterator[None]:
    """Inputs longer than ``threshold`` take the regular-expression path while this lasts."""
    with patch.object(_tags, "LONG_INPUT", threshold):
        yield


def scan(chunks: list[str], *, start_in_reasoning: bool = False) -> list[ScanEvent]:
    scanner = ReasoningStream.scanner(start_in_reasoning=start_in_reasoning)
    events: list[ScanEvent] = []
    for chunk in chunks:
        events += scanner.feed(chunk)
    return events + scanner.flush()


def test_scanner_events() -> None:
    scanner = Scanner()
    events = scanner.feed("a<thi") + scanner.feed("nk>b</think") + scanner.feed(">c")
    assert events + scanner.flush() == [
        TextDelta("a"),
        ReasoningStart(),
        ReasoningDelta("b"),
        ReasoningEnd(),
        TextDelta("c"),
    ]


def test_empty_segment_is_a_start_and_an_end() -> None:
    assert scan(["<think></think>"]) == [ReasoningStart(), ReasoningEnd()]


def test_flush_closes_an_open_segment_and_releases_held_text() -> None:
    assert coalesce(scan(["<think>x</thi"])) == [
        ReasoningStart(),
        ReasoningDelta("x</thi"),
        ReasoningEnd(),
    ]


def test_start_in_reasoning_opens_before_the_first_byte() -> None:
    assert scan(["r</think>t"], start_in_reasoning=True) == [
        ReasoningStart(),
        ReasoningDelta("r"),
        ReasoningEnd(),
        TextDelta("t"),
    ]


def test_plain_chunks_go_out_at_once() -> None:
    scanner = Scanner()
    assert scanner.feed("hello") == [TextDelta("hello")]
    assert scanner.feed("a <b") == [TextDelta("a <b")]


def test_many_backslashes_never_grow_the_hold_back() -> None:
    scanner = Scanner()
    out: list[ScanEvent] = scanner.feed("<")
    for _ in range(100):
        out += scanner.feed("\\")
        assert len(scanner.held) <= 1
    out += scanner.feed("think>") + scanner.flush()
    assert coalesce(out) == [TextDelta("<" + "\\" * 99 + "think>")]


def test_custom_tags_that_share_prefixes() -> None:
    scanner = Scanner(tags=["ab", "abab", "aba"])
    events = scanner.feed("<ab") + scanner.feed("a") + scanner.feed("b>x</ab>y") + scanner.flush()
    expected = [ReasoningStart(), ReasoningDelta("x"), ReasoningEnd(), TextDelta("y")]
    assert coalesce(events) == expected


@pytest.mark.parametrize(
    "text",
    [
        "a < b<think>r</think>x <",
        "x <<think>r< /think></think> <\\think> <",
        "if a <\tb and c < d: <THINKING >r< </thinking>",
        "< <t<th<thi</think><think>",
    ],
)
def test_every_cut_in_two_or_three_agrees_with_the_whole_input(text: str) -> None:
    """A "<" that ends a chunk is decided by the next one, whatever it begins or holds."""
    whole = coalesce(scan([text]))
    cuts = range(1, len(text))
    for i in cuts:
        assert coalesce(scan([text[:i], text[i:]])) == whole, i
        for j in range(i + 1, len(text)):
            assert coalesce(scan([text[:i], text[i:j], text[j:]])) == whole, (i, j)


@given(text_and_chunks(), st.booleans(), thresholds)
def test_chunking_never_changes_the_events(
    case: tuple[str, list[str]], start: bool, threshold: int
) -> None:
    text, chunks = case
    with long_input(threshold):
        assert coalesce(scan(chunks, start_in_reasoning=start)) == coalesce(
            scan([text], start_in_reasoning=start)
        )


@given(text_and_chunks(), st.booleans(), thresholds)
@example(
    ("a<THINK>b</Think\t>c<\\ThInKiNg>", ["a<TH", "INK>b</Th", "ink\t>c<\\", "ThInKiNg>"]),
    False,
    10**9,
)
@example(("x</REASONING  >y<Reasoning>z", ["x</REA", "SONING  >y<R", "easoning>z"]), True, 0)
def test_scanner_agrees_with_lossless_split(
    case: tuple[str, list[str]], start: bool, threshold: int
) -> None:
    text, chunks = case
    with long_input(threshold):
        segments, answer = segments_and_text(scan(chunks, start_in_reasoning=start))
        result = ReasoningStream.split(text, lossless=True, assume_open=start)
    assert (segments, answer) == (list(result.segments), result.text)
    assert (segments, answer) == reference_split(text, start_in_reasoning=start)[:2]


@given(tag_text(), thresholds)
def test_one_character_chunks_agree_with_whole_input(text: str, threshold: int) -> None:
    with long_input(threshold):
        assert coalesce(scan(list(text))) == coalesce(scan([text]))


@given(text_and_chunks(), thresholds)
def test_hold_back_is_bounded_and_only_an_unfinished_tag(
    case: tuple[str, list[str]], threshold: int
) -> None:
    _, chunks = case
    scanner = Scanner()
    fed = ""
    with long_input(threshold):
        for chunk in chunks:
            scanner.feed(chunk)
            fed += chunk
            held = scanner.held
            assert len(held) <= LONGEST_TAG - 1 == scanner.max_holdback
            assert fed.endswith(held)
            if held:
                # An unfinished tag: its "<", or the one backslash still deciding an escape.
                assert held[0] in "<\\"


def widest_tags(names: tuple[str, ...] = DEFAULT_TAGS) -> Iterator[str]:
    """Every open and close tag of ``names`` at the most padding the grammar allows, both cases."""
    for name in names:
        for spelling in (name, name.upper()):
            for slash in ("", "/"):
                for padding in product(" \t", repeat=MAX_SPACES):
                    yield "<" + slash + spelling + "".join(padding) + ">"


@pytest.mark.parametrize("threshold", [10**9, 0])
def test_the_widest_tags_are_held_whole_at_every_cut(threshold: int) -> None:
    """The hold-back is exactly what the longest tag needs, no less.

    Every default tag, open and close, in both cases and at the most padding the grammar allows
    (``</reasoning`` and four spaces or tabs), is cut at every point, just before its ``>``
    included: until the cut is decided all of the tag so far is held, never written out.
    """
    deepest = 0
    with long_input(threshold):
        for tag in widest_tags():
            text = "a" + tag + "b"
            for start in (False, True):
                segments, answer, _ = reference_split(text, start_in_reasoning=start)
                assert "<" not in answer + "".join(segments), tag
                before: list[ScanEvent] = (
                    [ReasoningStart(), ReasoningDelta("a")] if start else [TextDelta("a")]
                )
                for cut in range(1, len(text)):
                    scanner = Scanner(start_in_reasoning=start)
                    first = scanner.feed(text[:cut])
                    if cut <= len(tag):
                        assert (coalesce(first), scanner.held) == (before, text[1:cut]), (tag, cut)
                        deepest = max(deepest, len(scanner.held))
                    events = first + scanner.feed(text[cut:]) + scanner.flush()
                    assert segments_and_text(events) == (segments, answer), (tag, start, cut)
            for cut in range(len(text) + 1):
                escaper = Escaper()
                escaped = escaper.feed(text[:cut]) + escaper.feed(text[cut:]) + escaper.flush()
                assert escaped == "a<\\" + tag[1:] + "b", (tag, cut)
    assert deepest == Scanner().max_holdback == LONGEST_TAG - 1


@given(tag_text(), st.data(), thresholds)
def test_escape_then_split_gives_back_the_payload(
    payload: str, data: st.DataObject, threshold: int
) -> None:
    escaper = Escaper()
    with long_input(threshold):
        escaped = "".join(escaper.feed(chunk) for chunk in data.draw(chunkings(payload)))
        escaped += escaper.flush()
        result = ReasoningStream.split(escaped, lossless=True)
        rescanned = coalesce(scan([escaped]))
    assert escaped == grammar_for().escape(payload)
    assert (result.text, result.segments, result.truncated) == (payload, (), False)
    # Nothing in escaped text can act as a marker.
    assert rescanned == ([TextDelta(payload)] if payload else [])


@given(tag_text(), st.data(), thresholds)
def test_escaped_payload_inside_markers_round_trips(
    payload: str, data: st.DataObject, threshold: int
) -> None:
    escaper = Escaper()
    with long_input(threshold):
        body = "".join(escaper.feed(chunk) for chunk in data.draw(chunkings(payload)))
        body += escaper.flush()
        collected = ReasoningStream.OPEN_TAG + body + ReasoningStream.CLOSE_TAG
        result = ReasoningStream.split(collected, lossless=True)
    assert result.segments == (payload,)
    assert result.text == ""


@given(text_and_chunks(), thresholds)
def test_escaper_hold_back_is_bounded(case: tuple[str, list[str]], threshold: int) -> None:
    _, chunks = case
    escaper = Escaper()
    with long_input(threshold):
        for chunk in chunks:
            escaper.feed(chunk)
            assert len(escaper.held) <= LONGEST_TAG - 2


def test_escaper_splits_partial_tags_across_deltas() -> None:
    escaper = Escaper()
    assert escaper.feed("x<thi") == "x<"
    assert escaper.feed("nk>") == "\\think>"
    assert escaper.feed("</") == "<"
    assert escaper.feed("b>") == "/b>"
    assert escaper.flush() == ""


# ------------------------------------------------------------- assume_open=None (rule 4 live)


def scan_auto(chunks: list[str]) -> list[ScanEvent]:
    scanner = ReasoningStream.scanner(assume_open=None)
    events: list[ScanEvent] = []
    for chunk in chunks:
        events += scanner.feed(chunk)
    return events + scanner.flush()


def test_a_leading_close_tag_ends_a_segment_the_template_opened() -> None:
    """API section 2: ``assume_open=None`` is split's rule 4, live: the text before a first
    close tag was reasoning; the close tag never reaches the answer."""
    events = scan_auto(["plan", " more</th", "ink>answer"])
    assert coalesce(events) == [
        ReasoningStart(),
        ReasoningDelta("plan more"),
        ReasoningEnd(),
        TextDelta("answer"),
    ]


def test_the_leading_text_waits_for_the_first_tag_and_goes_out_once_it_decides() -> None:
    scanner = ReasoningStream.scanner(assume_open=None)
    assert scanner.feed("Hello") == []
    assert scanner.held == "Hello"
    assert coalesce(scanner.feed(" <think>r")) == [
        TextDelta("Hello "),
        ReasoningStart(),
        ReasoningDelta("r"),
    ]
    # Decided: later stray close tags are dropped, as split() drops them.
    assert coalesce(scanner.feed("</think>a</think>b") + scanner.flush()) == [
        ReasoningEnd(),
        TextDelta("ab"),
    ]


def test_text_without_markers_goes_out_at_the_end_as_text() -> None:
    scanner = ReasoningStream.scanner(assume_open=None)
    assert scanner.feed("no <\\think> markers") == []
    assert scanner.flush() == [TextDelta("no <think> markers")]


def test_start_in_reasoning_and_assume_open_must_agree() -> None:
    assert coalesce(scan([])) == []
    with pytest.raises(UsageError, match="assume_open"):
        ReasoningStream.scanner(start_in_reasoning=True, assume_open=None)
    scanner = ReasoningStream.scanner(assume_open=True)
    assert scanner.feed("r") == [ReasoningStart(), ReasoningDelta("r")]


@given(text_and_chunks(), thresholds)
@example(("R</think>T<think>S", ["R</th", "ink>T<think>S"]), 10**9)
@example(("a<\\think>b</thinking >c", ["a<\\", "think>b</", "thinking >c"]), 0)
def test_auto_scanner_agrees_with_auto_split_and_the_reference(
    case: tuple[str, list[str]], threshold: int
) -> None:
    """Any chunking: the scanner with ``assume_open=None``, ``split(assume_open=None)`` and an
    independent reading of rule 4 give the same segments and text."""
    text, chunks = case
    with long_input(threshold):
        events = scan_auto(chunks)
        whole = scan_auto([text])
        result = ReasoningStream.split(text, lossless=True)
    assert coalesce(events) == coalesce(whole)
    assert segments_and_text(events) == (list(result.segments), result.text)
    assert segments_and_text(events) == reference_split_auto(text)[:2]
