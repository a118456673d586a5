"""Every Python block of the documentation site runs, as the README's do (same fixtures); the
generated tables the pages ask for exist, for every provider."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import warnings
from pathlib import Path
from types import ModuleType

import pytest

from reasoning_stream import effort_table
from tests.test_readme import provider_environment, server

__all__ = ["provider_environment", "server"]  # the README's fixtures, used here by name

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SNIPPETS = [
    (f"{page.relative_to(ROOT).as_posix()}:{index}", code)
    for page in PAGES
    for index, code in enumerate(BLOCK.findall(page.read_text(encoding="utf-8")))
]
LOCAL_SERVER = "# Needs llama-server"
"""A block starting with this comment needs a local model; the opt-in test
tests/providers/test_llama_server.py runs it against one (``REASONING_STREAM_LLAMA=1``)."""
ROWS = [line for line in effort_table().splitlines()[2:] if line.startswith("| ")]
PROVIDERS = sorted({row.split("|")[1].strip() for row in ROWS})


def _hooks() -> ModuleType:
    """The site's build hook, loaded from its file as MkDocs loads it."""
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pages_have_snippets() -> None:
    assert len(SNIPPETS) >= 25
    assert {name.split(":")[0] for name, _ in SNIPPETS} >= {"docs/index.md", "docs/concepts.md"}


@pytest.mark.parametrize(("name", "code"), SNIPPETS, ids=[name for name, _ in SNIPPETS])
def test_snippet_runs(name: str, code: str, provider_environment: None) -> None:
    if code.startswith(LOCAL_SERVER):
        pytest.skip("needs a local llama-server: tests/providers/test_llama_server.py runs it")
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        exec(compile(code, f"{name} snippet", "exec"), {"__name__": "docs"})


def test_every_page_is_in_the_site_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in PAGES:
        assert page.relative_to(DOCS).as_posix() in nav, page


def test_the_providers_page_shows_the_whole_effort_table() -> None:
    page = (DOCS / "providers" / "index.md").read_text(encoding="utf-8")
    assert effort_table().strip() in _hooks().render(page)


def test_the_profiles_page_shows_every_rows_passback() -> None:
    """Each catalogue row has its own line in the rendered passback table, naming all its
    patterns, its thinking mode, its passback, its details and its binding."""
    from reasoning_stream import profiles

    page = (DOCS / "profiles.md").read_text(encoding="utf-8")
    assert "<!-- passback-table -->" in page
    rendered = _hooks().render(page)
    assert "<!-- passback-table -->" not in rendered
    lines = [line for line in rendered.splitlines() if line.startswith("| ")]
    for row in profiles.table():
        wanted = [
            *(f"`{pattern}`" for pattern in row.patterns),
            f"| {row.profile.thinking} | {row.profile.passback} |",
            *row.profile.passback_details,
            *row.profile.binding,
        ]
        assert any(all(part in line for part in wanted) for line in lines), row.patterns


@pytest.mark.parametrize("provider", PROVIDERS)
def test_each_provider_page_shows_its_effort_rows(provider: str) -> None:
    page = (DOCS / "providers" / f"{provider}.md").read_text(encoding="utf-8")
    assert f"<!-- effort-table: {provider} -->" in page
    rendered = _hooks().render(page)
    rows = [line for line in effort_table().splitlines() if line.startswith(f"| {provider} |")]
    assert rows and all(row in rendered for row in rows)
    assert "<!-- effort-table" not in rendered


def test_every_effort_marker_of_the_site_renders() -> None:
    for page in PAGES:
        _hooks().render(page.read_text(encoding="utf-8"))  # a marker naming no rows raises


def test_the_front_pages_share_the_quick_start() -> None:
    def quick_start(path: Path) -> str:
        text = path.read_text(encoding="utf-8")
        return text.split("## Quick start", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]

    assert quick_start(DOCS / "index.md") == quick_start(ROOT / "README.md")


def test_every_code_block_is_python_or_marked_as_not_code() -> None:
    """A block is run (``python``) or says what else it is: shell commands, output, a layout,
    a browser component (``tsx``, whose core runs under node in tests/web/test_use_chat.py)."""
    for page in [ROOT / "README.md", *PAGES]:
        fences = re.findall(r"^```([^\n]*)\n.*?^```", page.read_text(encoding="utf-8"), re.S | re.M)
        assert set(fences) <= {"python", "bash", "console", "text", "tsx"}, (page, fences)


def test_the_demo_picture_is_recorded_by_its_script(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("record_demo", DOCS / "record_demo.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    output = script.record(tmp_path / "demo.svg")
    assert "What each pipe captured" in output and "lossless=True) equals" in output
    assert "<svg" in (tmp_path / "demo.svg").read_text(encoding="utf-8")
    assert (DOCS / "demo.svg").is_file()


def test_on_callback_error_is_documented_as_the_constructor_keyword_it_is() -> None:
    """Not as a method (``pipe.on_callback_error(handler)`` does not exist): the keyword."""
    import inspect

    from reasoning_stream import Pipe

    assert "on_callback_error" in inspect.signature(Pipe.__init__).parameters
    pages = sorted((Path(__file__).resolve().parents[1] / "docs").rglob("*.md"))
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"`on_callback_error\(", text), page.name
