"""The suite's hypothesis profiles: every example count scales with the one chosen."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import settings

from tests import helpers
from tests.helpers import HYPOTHESIS_PROFILE, examples

TESTS = Path(__file__).parent


def test_the_profile_named_by_the_environment_is_loaded() -> None:
    assert settings.get_current_profile_name() == HYPOTHESIS_PROFILE
    expected = 100 if HYPOTHESIS_PROFILE == "ci" else helpers.DEV_EXAMPLES
    assert settings.default.max_examples == expected


@pytest.mark.parametrize("count", [1, 8, 12, 15, 40, 60, 100, 150, 400])
def test_examples_is_the_full_count_under_ci_and_a_fifth_under_dev(
    count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(helpers, "HYPOTHESIS_PROFILE", "ci")
    assert examples(count) == count
    monkeypatch.setattr(helpers, "HYPOTHESIS_PROFILE", "dev")
    assert examples(count) == min(count, max(10, count // 5))


def test_no_test_sets_a_count_that_ignores_the_profile() -> None:
    """A literal ``max_examples=300`` would run 300 examples under ``dev`` too."""
    literal = re.compile(r"max_examples\s*=(?!.*\bexamples\()")
    offenders = [
        f"{path.relative_to(TESTS)}:{number}"
        for path in sorted(TESTS.rglob("*.py"))
        if path.name not in ("conftest.py", "helpers.py", Path(__file__).name)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if literal.search(line)
    ]
    assert not offenders, f"use max_examples=examples(N) from tests.helpers: {offenders}"
