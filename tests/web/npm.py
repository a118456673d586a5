"""The npm packages of tests/web/js, installed once for every pytest worker that needs them.

``npm ci`` deletes ``node_modules`` before it installs. Under pytest-xdist each worker process
asks for the packages on its own: two workers that each ran ``npm ci`` tore down each other's
install, and a worker that checked for one package's folder ran ``node`` on a half-unpacked tree
(the folder appears long before npm finishes). So the check and the install run under one lock
that every worker takes (``flock`` on the folder), and an install counts as done only when npm's
hidden lockfile, which npm writes last, lists every package of ``package-lock.json``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path


def installed(folder: Path) -> bool:
    """Whether ``folder/node_modules`` holds a finished install of ``folder/package-lock.json``."""
    hidden = folder / "node_modules" / ".package-lock.json"
    try:
        have = json.loads(hidden.read_text())["packages"]
    except (OSError, ValueError, KeyError):
        return False
    want = json.loads((folder / "package-lock.json").read_text())["packages"]
    return all(
        have.get(name, {}).get("version") == entry.get("version")
        for name, entry in want.items()
        if name
    )


@contextlib.contextmanager
def locked(folder: Path, timeout: float) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``folder`` (between processes), waiting ``timeout`` s."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another process held {folder} for {timeout} s") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def install(folder: Path, npm: str, *, timeout: float = 300) -> Path:
    """``npm ci`` in ``folder`` unless a finished install is there; returns ``folder``."""
    with locked(folder, timeout):
        if not installed(folder):
            subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"], cwd=folder, check=True, timeout=timeout
            )
    return folder
