"""The web tests' own harness under parallel pytest-xdist workers.

The npm install, shared by workers that need it at the same moment: ``npm ci`` deletes
``node_modules`` before it installs, so two workers that each install tear down each other's
packages (and a worker that runs ``node`` meanwhile finds none); the install runs once, under a
lock every worker takes, and counts as done only when npm finished. A stand-in ``npm`` (the steps
``npm ci`` takes, slowed down) keeps this offline and fast. The app server's port, held from the
moment it is chosen.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import tests.web.conftest
from tests.web.conftest import serve
from tests.web.npm import install
from tests.web.sse import get

LOCK = {"lockfileVersion": 3, "packages": {"": {}, "node_modules/ai": {"version": "5.0.1"}}}

# What `npm ci` does, in its order: remove node_modules, unpack each package, and write the
# hidden lockfile (node_modules/.package-lock.json) last. Each run appends a line to runs.log.
FAKE_NPM = """\
import json, shutil, sys, time
from pathlib import Path
assert sys.argv[1] == "ci", sys.argv
here = Path.cwd()
with open(here / "runs.log", "a") as log:
    log.write("ci\\n")
shutil.rmtree(here / "node_modules", ignore_errors=True)
time.sleep(0.2)
lock = json.loads((here / "package-lock.json").read_text())
for name in lock["packages"]:
    if name:
        (here / name).mkdir(parents=True)
        time.sleep(0.1)
(here / "node_modules" / ".package-lock.json").write_text(json.dumps(lock))
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "package-lock.json").write_text(json.dumps(LOCK))
    return tmp_path


@pytest.fixture
def npm(tmp_path: Path) -> str:
    script = tmp_path / "npm"
    script.write_text(f"#!{sys.executable}\n{FAKE_NPM}")
    script.chmod(0o755)
    return str(script)


def runs(folder: Path) -> int:
    log = folder / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def complete(folder: Path) -> bool:
    hidden = folder / "node_modules" / ".package-lock.json"
    return hidden.exists() and json.loads(hidden.read_text()) == LOCK


def test_workers_that_need_the_packages_at_once_install_them_once(folder: Path, npm: str) -> None:
    start = threading.Barrier(3)

    def worker() -> bool:
        start.wait(timeout=10)
        install(folder, npm, timeout=30)
        return complete(folder)  # what the worker's node would find, right after

    with ThreadPoolExecutor(3) as pool:
        seen = list(pool.map(lambda _: worker(), range(3)))
    assert seen == [True, True, True]
    assert runs(folder) == 1


def test_a_finished_install_is_kept(folder: Path, npm: str) -> None:
    install(folder, npm, timeout=30)
    install(folder, npm, timeout=30)
    assert runs(folder) == 1 and complete(folder)


def test_an_install_cut_short_is_done_again(folder: Path, npm: str) -> None:
    (folder / "node_modules" / "ai").mkdir(parents=True)  # unpacked, the lockfile never written
    install(folder, npm, timeout=30)
    assert runs(folder) == 1 and complete(folder)


def test_packages_older_than_the_lockfile_are_installed_again(folder: Path, npm: str) -> None:
    install(folder, npm, timeout=30)
    newer = {**LOCK, "packages": {**LOCK["packages"], "node_modules/ai": {"version": "5.0.2"}}}
    (folder / "package-lock.json").write_text(json.dumps(newer))
    install(folder, npm, timeout=30)
    assert runs(folder) == 2


def test_serve_keeps_its_port_from_the_moment_it_is_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    """A port probed free and let go can be taken by another worker (or process) before the
    server binds it; here it is, at once: serve still serves, on a port it holds."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        # Were serve to probe a port and let it go, this is the port it would find taken.
        monkeypatch.setattr(
            tests.web.conftest, "free_port", lambda: taken.getsockname()[1], raising=False
        )
        app = Starlette(routes=[Route("/", lambda _request: PlainTextResponse("served"))])
        with serve(app) as url:
            assert get(url).text == "served"
