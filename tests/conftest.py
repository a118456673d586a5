"""Shared fixtures and the hypothesis profiles.

Every async test runs on asyncio and on trio.

Two hypothesis profiles, chosen by the ``REASONING_STREAM_HYPOTHESIS`` environment variable:
``dev`` (the default) draws a fifth of the examples, so the suite stays quick enough to run
often; ``ci`` draws the full counts, and CI runs every property again under it. A test that asks
for its own count says so with ``@settings(max_examples=examples(N))`` (``tests.helpers``), which
scales with the profile the same way (tests/test_hypothesis_profiles.py checks that none forgets).

Tests that mostly wait on other processes (the CLI under a terminal, uvicorn workers, Redis
leases, many-process stores) or sweep exhaustively are marked ``slow`` here, in one list: the
README's test command leaves them out (``-m "not slow"`` in pyproject.toml) and CI runs them in a
second pass (``pytest -m "slow or hypothesis"`` under the ``ci`` profile), so no law leaves CI.
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


# Whole files that spend their time starting processes, servers or terminals, and single tests
# that take seconds each on a 2-core machine (measured with --durations; see the README).
SLOW_FILES = frozenset(
    {
        "tests/test_cli.py",
        "tests/test_cli_terminal.py",
        "tests/test_cli_ux.py",
        "tests/hub/test_lease.py",
        "tests/hub/test_lost_keys.py",
        "tests/hub/test_stop_processes.py",
        "tests/test_request_timings.py",
        "tests/web/test_claim.py",
        "tests/web/test_stop.py",
        "tests/reliability/test_load.py",
        "tests/store/test_concurrency.py",
        "tests/web/test_app.py",
        "tests/web/test_lease.py",
        "tests/web/test_multiprocess.py",
        "tests/web/test_page.py",
        "tests/web/test_serve_command.py",
        "tests/web/test_slow_client.py",
        "tests/web/test_sealed.py",
        "tests/web/test_openai_endpoint.py",
        "tests/providers/test_llama_server.py",
        "tests/web/test_use_chat.py",
    }
)
SLOW_TESTS = frozenset(
    {
        "test_every_field_of_every_kind_of_chunk_with_every_kind_of_value",
        "test_the_demo_picture_is_recorded_by_its_script",
        "test_a_reader_that_stops_taking_costs_bounded_memory_and_loses_nothing",
        "test_an_app_in_another_process_serves_envelopes_it_could_not_have_made",
        "test_vercel_ui_tool_outputs_are_read_by_the_ai_sdk",
        "test_the_app_runs_a_tool_loop_posted_by_a_browser",
        "test_stop_while_the_model_is_silent_runs_none_of_the_calls_it_then_makes",
        # 2-3 s each on a slow day: the quick suite keeps its margin under 3 minutes.
        "test_a_sync_run_stopped_while_silent_ends_cancelled_and_balanced",
        "test_the_sse_transport_reads_any_body_as_httpx_sse",
        "test_the_whole_marker_recipe_holds_for_a_callbacks_chunks",
        "test_one_reader_hub_follows_streams_on_every_node_of_a_cluster",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of :data:`SLOW_FILES` and :data:`SLOW_TESTS` as ``slow``."""
    root = config.rootpath
    for item in items:
        path = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        name = getattr(item, "originalname", item.name)
        if path in SLOW_FILES or name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run each ``@pytest.mark.anyio`` test once per backend."""
    return str(request.param)


def pytest_report_header() -> str:
    return f"hypothesis profile: {HYPOTHESIS_PROFILE} (set {PROFILE_VARIABLE}=ci for CI's counts)"
