"""Packaging: every data file is declared, and the version has one source.

Nothing is built here (CI's wheel check builds, installs and runs the wheel); these catch, in the
quick suite, a new file under reasoning_stream/ that the wheel would leave out, and a second
version number.
"""

from __future__ import annotations

import glob
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import reasoning_stream

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGE_DIR = ROOT / "reasoning_stream"


def data_files() -> set[str]:
    """Every file under reasoning_stream/ that is not Python source, relative to the package."""
    return {
        path.relative_to(PACKAGE_DIR).as_posix()
        for path in PACKAGE_DIR.rglob("*")
        if path.is_file() and path.suffix not in {".py", ".pyc"} and "__pycache__" not in path.parts
    }


def declared_files() -> set[str]:
    """The files [tool.setuptools.package-data] selects, globbed as setuptools globs them."""
    declared: set[str] = set()
    for package, patterns in PYPROJECT["tool"]["setuptools"]["package-data"].items():
        # "*" means every package; any other key is one package, by its dotted name.
        roots = (
            [init.parent for init in PACKAGE_DIR.rglob("__init__.py")]
            if package == "*"
            else [ROOT.joinpath(*package.split("."))]
        )
        for root in roots:
            assert (root / "__init__.py").is_file(), f"package-data names {package!r}: no package"
            for pattern in patterns:
                for match in glob.glob(pattern, root_dir=root, recursive=True):
                    if (root / match).is_file():
                        declared.add((root / match).relative_to(PACKAGE_DIR).as_posix())
    return declared


def test_package_data_covers_every_non_python_file() -> None:
    undeclared = sorted(data_files() - declared_files())
    assert not undeclared, (
        f"these files under reasoning_stream/ would be left out of the wheel: {undeclared}; "
        "add a glob for them to [tool.setuptools.package-data] in pyproject.toml"
    )


def test_the_shipped_data_is_there() -> None:
    # The demo's transcripts and the page: a glob that matched nothing would pass the test above.
    files = data_files()
    assert "py.typed" in files
    assert "web/page.html" in files
    assert "profiles/catalogue.toml" in files
    assert any(name.startswith("transcripts/demo_") for name in files)
    for pattern in PYPROJECT["tool"]["setuptools"]["package-data"]["reasoning_stream"]:
        assert glob.glob(pattern, root_dir=PACKAGE_DIR), f"package-data glob {pattern!r} is dead"


def test_one_version_source() -> None:
    project = PYPROJECT["project"]
    assert "version" not in project, "pyproject.toml must not repeat the version"
    assert "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "reasoning_stream.__version__"
    }
    version = reasoning_stream.__version__
    assert isinstance(version, str)
    assert re.fullmatch(r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?", version), version


def test_cli_prints_the_package_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "reasoning_stream", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"reasoning-stream {reasoning_stream.__version__}"


def test_ci_runs_the_wheel_check() -> None:
    script = ROOT / ".ci" / "wheel-check"
    assert script.is_file() and script.stat().st_mode & 0o111, "the wheel check is executable"
    assert any(
        line.strip().startswith(".ci/wheel-check")
        for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    ), ".ci/run calls .ci/wheel-check"
