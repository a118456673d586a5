"""The most specific pattern wins: an exact id over a glob, a longer literal prefix over a
shorter one; user rows win over the catalogue (API.md section 12)."""

from __future__ import annotations

import re
import warnings

from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import profiles
from tests.helpers import examples
from tests.profiles.conftest import _clear

# A provider id no catalogue row names: only the rows a test registers can answer for it.
LAW = "law-provider"

_ids = st.text(alphabet="ab-", min_size=1, max_size=6)
_patterns = st.one_of(
    _ids,  # an exact id
    st.builds(
        lambda head, tail: head + "*" + tail, st.text("ab-", max_size=4), st.text("ab", max_size=2)
    ),
    st.builds(
        lambda head, tail: head + "?" + tail, st.text("ab-", max_size=4), st.text("ab-", max_size=2)
    ),
)


def _reference_matches(pattern: str, model: str) -> bool:
    """Glob matching written out: ``*`` any run, ``?`` one character, the rest literal."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, model, flags=re.DOTALL) is not None


def _reference_rank(pattern: str) -> tuple[bool, int, int]:
    first = min((pattern.index(c) for c in "*?" if c in pattern), default=None)
    literal = len(pattern.replace("*", "").replace("?", ""))
    if first is None:
        return (True, len(pattern), literal)
    return (False, first, literal)


def _reference_winner(patterns: list[str], model: str) -> str | None:
    """The most specific matching pattern; on a full tie, the one registered last."""
    best: tuple[tuple[bool, int, int], int, str] | None = None
    for order, pattern in enumerate(patterns):
        if _reference_matches(pattern, model):
            key = (_reference_rank(pattern), order, pattern)
            if best is None or key[:2] > best[:2]:
                best = key
    return None if best is None else best[2]


@st.composite
def _cases(draw: st.DrawFn) -> tuple[list[str], str]:
    """A model id and patterns, many of them cut from the id so that several match."""
    model = draw(_ids)
    near = st.builds(
        lambda cut, glob, tail: model[:cut] + glob + tail,
        st.integers(1, len(model)),
        st.sampled_from(["", "*", "?"]),
        st.sampled_from(["", "*", "a", "-"]),
    )
    patterns = draw(st.lists(st.one_of(near, _patterns), min_size=1, max_size=8, unique=True))
    return patterns, model


@settings(max_examples=examples(400), deadline=None)
@given(case=_cases())
def test_the_most_specific_registered_pattern_wins(case: tuple[list[str], str]) -> None:
    patterns, model = case
    _clear()
    try:
        for pattern in patterns:
            profiles.register(LAW, pattern, note=pattern)
        expected = _reference_winner(patterns, model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", profiles.UnknownModelWarning)
            found = profiles.lookup(LAW, model)
        if expected is None:
            assert not found.known
            assert (found.thinking, found.passback, found.pattern) == (
                "optional",
                "tool_loop",
                None,
            )
        else:
            assert found.known
            assert (found.pattern, found.note) == (expected, expected)
    finally:
        _clear()


def test_exact_beats_glob_and_longer_prefix_beats_shorter() -> None:
    profiles.register(LAW, "m-1-x", note="exact")
    profiles.register(LAW, "m-1-x*", note="glob")
    profiles.register(LAW, "m-*", note="short")
    profiles.register(LAW, "m-1*", note="long")
    assert profiles.lookup(LAW, "m-1-x").note == "exact"
    assert profiles.lookup(LAW, "m-1-y").note == "long"
    assert profiles.lookup(LAW, "m-2").note == "short"


def test_catalogue_rows_follow_the_same_rule() -> None:
    assert profiles.lookup("anthropic", "claude-opus-5").pattern == "claude-opus-5*"
    assert profiles.lookup("anthropic", "claude-opus-5-5").pattern == "claude-opus-5-5*"
    assert profiles.lookup("anthropic", "claude-opus-5-5-20270101").thinking == "always"
    assert profiles.lookup("openai-chat", "gpt-5").pattern == "gpt-5"
    assert profiles.lookup("openai-chat", "gpt-5.1").efforts[0] == "none"
    assert profiles.lookup("openai-chat", "gpt-5-2025-08-07").efforts[0] == "minimal"


def test_user_rows_win_over_the_catalogue_even_when_less_specific() -> None:
    before = profiles.lookup("anthropic", "claude-opus-5")
    profiles.register("anthropic", "claude-*", base="claude-opus-5", thinking="never", efforts=())
    after = profiles.lookup("anthropic", "claude-opus-5")
    assert (after.thinking, after.efforts, after.pattern) == ("never", (), "claude-*")
    profiles.unregister("anthropic", "claude-*")
    assert profiles.lookup("anthropic", "claude-opus-5") == before


def test_a_row_for_the_api_root_wins_there_and_only_there() -> None:
    # Qwen on DashScope takes a top-level switch; on vLLM the chat template's (issue 23).
    dashscope = "https://dashscope.aliyuncs.com/compatible-mode/v1"
    on_dashscope = profiles.lookup("openai-chat", "qwen3-32b", base_url=dashscope)
    on_vllm = profiles.lookup("openai-chat", "qwen3-32b", base_url="http://localhost:8000/v1")
    assert on_dashscope != on_vllm
    assert "DashScope" in on_dashscope.note
    assert on_vllm == profiles.lookup("openai-chat", "qwen3-32b")
    # One canonical form: case, the default port and a trailing slash do not matter.
    for written in (
        "HTTPS://DashScope.AliyunCS.com/compatible-mode/v1/",
        "https://dashscope.aliyuncs.com:443/compatible-mode/v1",
    ):
        assert profiles.lookup("openai-chat", "qwen3-32b", base_url=written) == on_dashscope
