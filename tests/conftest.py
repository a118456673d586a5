"""Shared fixtures and the hypothesis profiles.

Every async test runs on asyncio and on trio.

Two hypothesis profiles, chosen by the ``REASONING_STREAM_HYPOTHESIS`` environment variable:
``dev`` (the default) draws a fifth of the examples, so the suite stays quick enough to run
often; ``ci`` draws the full counts, and CI runs every property again under it. A test that asks
for its own count says so with ``@settings(max_examples=examples(N))`` (``tests.helpers``), which
scales with the profile the same way (tests/test_hypothesis_profiles.py checks that none forgets).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from tests.helpers import DEV_EXAMPLES, HYPOTHESIS_PROFILE, PROFILE_VARIABLE

# "ci" keeps hypothesis's own defaults (100 examples, a 200 ms deadline where a test sets none),
# as CI always ran. "dev" drops the deadline: on a busy laptop it measures the machine more than
# the code, and a hang fails through the suite's timeout anyway (pyproject.toml).
settings.register_profile("ci", max_examples=100, print_blob=True)
settings.register_profile("dev", max_examples=DEV_EXAMPLES, deadline=None)
if HYPOTHESIS_PROFILE not in ("ci", "dev"):
    raise pytest.UsageError(
        f"{PROFILE_VARIABLE}={os.environ[PROFILE_VARIABLE]!r}: use 'dev' (default) or 'ci'"
    )
settings.load_profile(HYPOTHESIS_PROFILE)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run each ``@pytest.mark.anyio`` test once per backend."""
    return str(request.param)


def pytest_report_header() -> str:
    return f"hypothesis profile: {HYPOTHESIS_PROFILE} (set {PROFILE_VARIABLE}=ci for CI's counts)"
