"""The registry is the one provider list: every other list of providers is read from it."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys

import reasoning_stream.providers as providers
from reasoning_stream._cli import PROVIDERS as CLI_PROVIDERS
from reasoning_stream._effort import PROVIDERS as EFFORT_PROVIDERS
from reasoning_stream.providers._spec import (
    pipe_class,
    pipe_names,
    provider_ids,
    spec,
    specs,
)
from tests.reliability import TARGETS


def test_each_registry_line_names_the_spec_its_package_defines() -> None:
    for provider_id, pipe in zip(provider_ids(), pipe_names(), strict=True):
        found = spec(provider_id)
        assert found is not None
        assert (found.id, found.pipe) == (provider_id, pipe)
        assert pipe_class(pipe).provider == provider_id
        assert found.semconv_name


def test_the_package_exports_the_registry_pipes() -> None:
    assert providers.__all__ == sorted(pipe_names())
    assert all(getattr(providers, name) is pipe_class(name) for name in pipe_names())


def test_the_type_checkers_imports_name_the_same_pipes() -> None:
    """``reasoning_stream.providers`` imports each pipe for type checkers only; those
    imports must list what the registry lists."""
    tree = ast.parse(inspect.getsource(providers))
    checked = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for statement in node.body
        if isinstance(statement, ast.ImportFrom)
        for alias in statement.names
    }
    assert checked == set(pipe_names())


def test_the_cli_effort_knob_and_reliability_targets_read_the_registry() -> None:
    assert set(CLI_PROVIDERS) == {found.name for found in specs()}
    assert provider_ids() == EFFORT_PROVIDERS
    assert {target.provider for target in TARGETS.values()} == set(provider_ids())


def test_importing_the_package_imports_no_provider_part_and_no_json() -> None:
    """The registry and provider packages load when a pipe, a plan or a policy is asked for;
    JSON when JSON is read."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, reasoning_stream; print(*sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    assert not [name for name in loaded if name.startswith("reasoning_stream.providers")]
    assert not [name for name in loaded if name.split(".")[0] == "json"]


def test_importing_the_package_leaves_the_slow_parts_for_first_use() -> None:
    """asyncio, the effort knob and the conversation container load when first used, so a
    streaming pipe's import stays small (benchmarks/import_time.py measures it)."""
    code = "import sys, reasoning_stream; print(*sorted(sys.modules))"
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        ).stdout.split()
    )
    assert not loaded & {"asyncio", "reasoning_stream._effort", "reasoning_stream.conversation"}
    used = subprocess.run(
        [sys.executable, "-c", "from reasoning_stream import Conversation, Reasoning; print('ok')"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert used.stdout.strip() == "ok"
