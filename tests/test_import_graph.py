"""The package's import graph points one way: no circle, and no layer imports one above it.

Read from the source with :mod:`ast` (every ``import``, including those under
``TYPE_CHECKING`` and inside functions), so a lazy import cannot hide an arrow that runs back up.
The layers are STYLE's: events and tags at the bottom; then the registry and the passback policy;
then the channel, the pipe and the pipeline; then conversations, providers and tools; then the
hub, the web app, the stores, telemetry, the testing kit and the CLI.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "reasoning_stream"
ROOT = "reasoning_stream"

# Layers from the bottom up; a module imports only from its own layer or those below it.
# A name here is a module or a package (with everything inside it), relative to the package.
LAYERS: tuple[tuple[str, ...], ...] = (
    # 0: the vocabulary, the tag grammar, errors: pure, import nothing of ours above them
    (
        "_events",
        "_tags",
        "_stream",
        "_json",
        "_messages",
        "_exceptions",
        "_arguments",
        "_capture",
        "_unicode",
        "_redact",
        "_cost",
        "_endpoints",
        "_tools",
        "_schema",
        "_schema_check",
    ),
    # 1: model knowledge and what core asks of a provider, below both core and the providers
    ("profiles", "providers._spec", "conversation._policy", "_turns", "_effort_planner"),
    # 2: the channel, the pipe and the pipeline, with what they run on
    (
        "_channel",
        "_delivery",
        "_sources",
        "_callbacks",
        "_observers",
        "_retry",
        "_loops",
        "_pipe",
        "_pipeline",
        "_effort",
        "_render",
    ),
    # 3: conversations, provider packages, tools, prompting
    (
        "conversation",
        "conversation._tool_loop",
        "conversation._tool_runnable",
        "providers",
        "tools",
        "prompting",
        "strategies",
    ),
    # 4: beyond one process, and the front doors
    ("hub", "web", "store", "telemetry", "testing", "_cli", "__main__", "_demo", ""),
)


def module_name(path: Path) -> str:
    """The dotted name of a source file under the package."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def resolve(current: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ``from ... import`` statement names."""
    if node.level == 0:
        return node.module or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package modules ``name`` imports, anywhere in its source."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            target = resolve(name, is_package, node)
            if not target.startswith(ROOT):
                continue
            # ``from . import x`` names a submodule when one exists; else a name in the module.
            submodules = {f"{target}.{alias.name}" for alias in node.names} & known
            found.update(submodules)
            if len(submodules) < len(node.names) and target in known:
                found.add(target)
    found.discard(name)
    return found


def graph() -> dict[str, set[str]]:
    """The whole package's import graph."""
    known = modules()
    names = set(known)
    return {name: imports_of(name, path, names) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def layer(name: str) -> int:
    """The layer of a dotted module: the most specific entry of :data:`LAYERS` that holds it."""
    relative = name[len(ROOT) + 1 :] if name != ROOT else ""
    best, best_length = len(LAYERS) - 1, -1
    for number, entries in enumerate(LAYERS):
        for entry in entries:
            inside = relative == entry or (entry != "" and relative.startswith(entry + "."))
            if inside and len(entry) > best_length:
                best, best_length = number, len(entry)
    return best


def test_no_circle() -> None:
    """No module reaches itself through the imports of others."""
    assert cycles(graph()) == []


def test_cycle_finder_sees_a_circle() -> None:
    """The oracle itself: a planted circle is found, a chain is not."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_layers_point_down() -> None:
    """No module imports from a layer above its own."""
    edges = graph()
    upward = sorted(
        f"{source} (layer {layer(source)}) -> {target} (layer {layer(target)})"
        for source, targets in edges.items()
        for target in targets
        if layer(target) > layer(source)
    )
    assert upward == []


def test_layer_rule_sees_an_upward_arrow() -> None:
    """The oracle itself: the layer of a few known names."""
    assert layer("reasoning_stream._events") == 0
    assert layer("reasoning_stream.providers._spec") == 1
    assert layer("reasoning_stream.providers.anthropic") == 3
    assert layer("reasoning_stream.hub._memory") == 4
    assert layer("reasoning_stream") == 4
