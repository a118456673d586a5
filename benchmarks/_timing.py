"""Timing helpers: best-of-N CPU and wall seconds, printed as ratios."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Timing:
    """Best CPU and wall seconds over the repeats."""

    cpu: float
    wall: float


def measure(work: Callable[[], object], *, repeat: int = 3) -> Timing:
    """Run ``work`` ``repeat`` times and keep the best CPU and wall time."""
    best_cpu = best_wall = float("inf")
    for _ in range(repeat):
        cpu, wall = time.process_time(), time.perf_counter()
        work()
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return Timing(best_cpu, best_wall)


def row(label: str, timing: Timing, floor: Timing, units: int) -> str:
    """One table row: per-unit cost and the ratio to the floor."""
    return (
        f"| {label:<44} | {timing.cpu / units * 1e9:>9.0f} ns | "
        f"{timing.wall / units * 1e9:>9.0f} ns | {timing.cpu / floor.cpu:>6.2f}x |"
    )


HEADER = (
    f"| {'what':<44} | {'CPU/unit':>12} | {'wall/unit':>12} | {'ratio':>7} |\n"
    f"|{'-' * 46}|{'-' * 14}|{'-' * 14}|{'-' * 9}|"
)


_ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def child_server(script: str, *arguments: object) -> Iterator[str]:
    """Run ``script`` (which prints its URL, then serves until stdin closes) in a child process.

    The server's CPU is then never the benchmark's; yields ``http://127.0.0.1:PORT``.
    """
    child = subprocess.Popen(
        [sys.executable, "-c", script, *map(str, arguments)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=_ROOT,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        url = child.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError("the loopback server did not start; see its error above")
        yield url
    finally:
        child.stdin.close()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
