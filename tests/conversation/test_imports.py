"""Which way the imports go around the conversation package and the provider registry.

Every import counts, those for type checkers and those inside functions included: the
registry and the passback policy sit below core and the provider packages, and a provider
package reaches the conversation through its small modules, never the container.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import reasoning_stream

PACKAGE = Path(reasoning_stream.__file__).parent


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(module: str) -> Iterator[str]:
    """Every ``reasoning_stream`` module that ``module``'s source imports, anywhere in it."""
    path = PACKAGE.parent.joinpath(*module.split("."))
    source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    package = module if path.is_dir() else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                yield ".".join([*base, node.module] if node.module else base)
            elif node.module:
                yield node.module


def _internal(module: str) -> set[str]:
    return {name for name in _imports(module) if name.startswith("reasoning_stream")}


# What each low module may import from the package: nothing above its own layer.
BELOW_CORE = {
    "reasoning_stream._turns": {"reasoning_stream._events"},
    # The planners read the model profiles, which sit in the same layer (model knowledge).
    "reasoning_stream._effort_planner": {
        "reasoning_stream._exceptions",
        "reasoning_stream.profiles",
    },
    "reasoning_stream.providers._spec": {
        "reasoning_stream._effort_planner",
        "reasoning_stream._turns",
        "reasoning_stream.profiles",
    },
    "reasoning_stream.conversation._policy": {
        "reasoning_stream._endpoints",
        "reasoning_stream._exceptions",
        "reasoning_stream.profiles",
        "reasoning_stream.providers._spec",
    },
}


@pytest.mark.parametrize("module", sorted(BELOW_CORE))
def test_the_registry_and_the_policy_import_nothing_above_them(module: str) -> None:
    assert _internal(module) <= BELOW_CORE[module]


def test_no_provider_module_imports_the_conversation_container() -> None:
    container = {"reasoning_stream.conversation", "reasoning_stream.conversation._conversation"}
    for path in (PACKAGE / "providers").rglob("*.py"):
        assert not _internal(_module_of(path)) & container, path


def test_the_conversation_package_names_no_provider() -> None:
    """It asks the registry; it imports no provider package and spells no provider id."""
    from reasoning_stream.providers._spec import pipe_names, provider_ids

    for path in (PACKAGE / "conversation").glob("*.py"):
        imported = _internal(_module_of(path))
        assert imported & {"reasoning_stream.providers"} == set(), path
        assert all(
            not name.startswith("reasoning_stream.providers.") or name.endswith("._spec")
            for name in imported
        ), path
        text = path.read_text().lower()
        named = [name for name in (*provider_ids(), *pipe_names()) if name.lower() in text]
        assert not named, path


def test_the_stores_run_module_does_not_import_the_store_base() -> None:
    assert "reasoning_stream.store._base" not in _internal("reasoning_stream.store._run")
