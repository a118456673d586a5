"""ReasoningHidden: the event for reasoning the provider keeps hidden (API.md section 12)."""

from __future__ import annotations

import dataclasses

import pytest

import reasoning_stream
from reasoning_stream import ReasoningHidden


def test_it_is_a_frozen_event_exported_at_the_top_level() -> None:
    assert "ReasoningHidden" in reasoning_stream.__all__
    event = ReasoningHidden(duration=4.2, tokens=812)
    assert (event.duration, event.tokens, event.kind) == (4.2, 812, "reasoning_hidden")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.duration = 1.0  # type: ignore[misc]
    assert [f.name for f in dataclasses.fields(ReasoningHidden)][:2] == ["duration", "tokens"]


def test_tokens_are_none_when_not_reported_and_source_is_left_out_of_equality() -> None:
    assert ReasoningHidden(1.5).tokens is None
    assert ReasoningHidden(1.5, None, source="a") == ReasoningHidden(1.5, None, source="b")
    assert "duration=1.5" in repr(ReasoningHidden(1.5))
