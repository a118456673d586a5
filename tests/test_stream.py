"""split(): the cases TPipe pinned, the ones it got wrong, and its laws."""

from __future__ import annotations

import pytest
from hypothesis import given

from reasoning_stream import ReasoningStream, Split
from reasoning_stream.testing.strategies import tag_text
from tests.helpers import reference_split

split = ReasoningStream.split


def test_markers_are_the_think_tags() -> None:
    assert ReasoningStream.OPEN_TAG == "<think>"
    assert ReasoningStream.CLOSE_TAG == "</think>"


# --- TPipe's pinned cases ---------------------------------------------------------------


def test_no_markers_is_all_text() -> None:
    assert split("just an answer") == Split("", "just an answer", (), False)


def test_one_segment() -> None:
    assert split("<think>plan</think>answer") == Split("plan", "answer", ("plan",), False)


def test_two_segments_around_text() -> None:
    result = split("<think>A</think> mid <think>B</think> end")
    assert (result.reasoning, result.text) == ("A\nB", "mid  end")
    assert result.segments == ("A", "B")


def test_unclosed_open_tag_makes_the_tail_reasoning() -> None:
    result = split("<think>still thinking")
    assert (result.reasoning, result.text, result.truncated) == ("still thinking", "", True)


def test_text_before_an_unclosed_segment_is_text() -> None:
    result = split("intro text<think> tail")
    assert (result.text, result.reasoning, result.truncated) == ("intro text", "tail", True)


def test_mixed_case_tags() -> None:
    assert split("<Think>x</THINK>y") == Split("x", "y", ("x",), False)


def test_empty_segment_leaves_no_blank_line() -> None:
    result = split("<think></think><think> real</think>")
    assert result.reasoning == "real"
    assert result.segments == ("real",)


# --- TPipe's failures, fixed ---------------------------------------------------------------


def test_reasoning_resumes_after_text_and_an_unclosed_tail_is_reasoning() -> None:
    result = split("<think>A</think>text<think>B")
    assert result == Split("A\nB", "text", ("A", "B"), True)


def test_leading_close_means_the_template_opened_the_segment() -> None:
    assert split("R</think>T") == Split("R", "T", ("R",), False)


def test_assume_open_false_drops_a_leading_close() -> None:
    assert split("R</think>T", assume_open=False) == Split("", "RT", (), False)


def test_assume_open_true_starts_inside_reasoning() -> None:
    assert split("R</think>T<think>S</think>", assume_open=True).segments == ("R", "S")
    assert split("no close", assume_open=True) == Split("no close", "", ("no close",), True)


def test_stray_close_after_a_segment_is_dropped() -> None:
    assert split("<think>a</think>b</think>c") == Split("a", "bc", ("a",), False)


def test_close_after_text_is_not_a_prefilled_open_when_a_marker_came_first() -> None:
    assert split("<think>a</think>x</think>y").text == "xy"


def test_nested_open_is_a_no_op() -> None:
    assert split("<think>a<think>b</think>c") == Split("ab", "c", ("ab",), False)


@pytest.mark.parametrize(
    "collected",
    [
        "<thinking>r</thinking>t",
        "<reasoning>r</reasoning>t",
        "<think >r</think\t>t",
        "<THINKING    >r</Reasoning>t",
    ],
)
def test_all_tag_names_and_spacing(collected: str) -> None:
    assert split(collected) == Split("r", "t", ("r",), False)


def test_five_spaces_is_not_a_tag() -> None:
    assert split("<think     >x").text == "<think     >x"


def test_any_close_ends_any_open() -> None:
    assert split("<reasoning>r</think>t") == Split("r", "t", ("r",), False)


def test_escaped_tag_in_prose_is_text_with_one_backslash_removed() -> None:
    collected = "Use <\\think> to open and <\\\\think> is literal"
    assert split(collected).text == "Use <think> to open and <\\think> is literal"
    assert split(collected).segments == ()


def test_literal_tag_survives_through_escaping() -> None:
    prose = "write </think> or <think> in HTML-like prose"
    escaped = ReasoningStream.escaper().feed(prose)
    assert split(escaped, lossless=True).text == prose


def test_default_mode_trims_and_lossless_keeps_bytes() -> None:
    collected = "  <think> a </think>  b \n<think> </think>"
    assert split(collected) == Split("a", "b", ("a",), False)
    assert split(collected, lossless=True) == Split(" a \n ", "    b \n", (" a ", " "), False)


def test_lossless_keeps_empty_segments() -> None:
    assert split("<think></think>x", lossless=True).segments == ("",)


def test_custom_tag_names() -> None:
    result = split("<plan>p</plan><think>t</think>", tags=["plan"])
    assert (result.reasoning, result.text) == ("p", "<think>t</think>")


def test_bad_tag_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="tag name"):
        ReasoningStream.scanner(tags=["a b"])
    with pytest.raises(ValueError):
        ReasoningStream.scanner(tags=[])


def test_non_ascii_case_folding_does_not_make_a_tag() -> None:
    # The Kelvin sign folds to "k" under Unicode rules; tags are ASCII-only.
    assert split("<thin\u212a>x").text == "<thin\u212a>x"


# --- laws ----------------------------------------------------------------------------------


@given(tag_text())
def test_lossless_split_agrees_with_an_independent_reading(text: str) -> None:
    segments, answer, truncated = reference_split(text)
    result = split(text, lossless=True, assume_open=False)
    assert (list(result.segments), result.text, result.truncated) == (segments, answer, truncated)


@given(tag_text())
def test_assume_open_true_agrees_with_the_reference(text: str) -> None:
    segments, answer, truncated = reference_split(text, start_in_reasoning=True)
    result = split(text, lossless=True, assume_open=True)
    assert (list(result.segments), result.text, result.truncated) == (segments, answer, truncated)


@given(tag_text())
def test_default_mode_is_lossless_mode_normalised(text: str) -> None:
    lossless = split(text, lossless=True)
    default = split(text)
    assert default.segments == tuple(s.strip() for s in lossless.segments if s.strip())
    assert default.text == lossless.text.strip()
    assert default.reasoning == "\n".join(default.segments)
    assert default.truncated == lossless.truncated
