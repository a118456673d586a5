"""How long ``import reasoning_stream`` takes in a fresh process.

Each sample starts a new interpreter; the figure is the median of 20. Two measures, each with
the bare interpreter's own start-up taken off the same way:

* wall clock: ``python -c "import reasoning_stream"`` timed from outside, minus ``python -c
  "pass"`` timed the same way (interleaved, so load on the machine hits both alike);
* CPU time: the same two processes' user + system seconds, which a busy machine disturbs far
  less than the wall clock;
* ``-X importtime``: the cumulative microseconds Python itself reports for the
  ``reasoning_stream`` package (start-up is not in it).

Compiled bytecode is written to a private cache directory first (one warm-up run), so the
figures are those of an installed package, not of compiling the sources. ``--top N`` lists the
N slowest modules (self time, median over the samples).

    python -m benchmarks.import_time
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

SAMPLES = 20
IMPORT = "import reasoning_stream"
BARE = "pass"


def _environment(cache: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the cache must be written in the warm-up
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run(code: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one fresh interpreter running ``code``."""
    cpu = _cpu()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - started, _cpu() - cpu


def _importtime(env: dict[str, str]) -> tuple[int, dict[str, int]]:
    """The package's cumulative microseconds, and every module's self microseconds."""
    report = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", IMPORT],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stderr
    total = 0
    selves: dict[str, int] = {}
    for line in report.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if len(fields) != 3 or not fields[0].strip().isdigit():
            continue  # the header line
        name = fields[2].strip()
        selves[name] = int(fields[0])
        if name == "reasoning_stream":
            total = int(fields[1])
    return total, selves


def measure(samples: int = SAMPLES) -> dict[str, object]:
    """The medians, in milliseconds, and the slowest modules by median self time."""
    with tempfile.TemporaryDirectory(prefix="import-time-") as cache:
        env = _environment(cache)
        _run(IMPORT, env)  # warm-up: compiles and caches the bytecode
        _run(BARE, env)
        walls: list[float] = []
        bares: list[float] = []
        cpus: list[float] = []
        bare_cpus: list[float] = []
        reported: list[int] = []
        selves: defaultdict[str, list[int]] = defaultdict(list)
        for _ in range(samples):
            wall, cpu = _run(BARE, env)
            bares.append(wall)
            bare_cpus.append(cpu)
            wall, cpu = _run(IMPORT, env)
            walls.append(wall)
            cpus.append(cpu)
            total, modules = _importtime(env)
            reported.append(total)
            for name, micros in modules.items():
                selves[name].append(micros)
    return {
        "wall_ms": statistics.median(walls) * 1000,
        "bare_ms": statistics.median(bares) * 1000,
        "import_ms": (statistics.median(walls) - statistics.median(bares)) * 1000,
        "cpu_ms": (statistics.median(cpus) - statistics.median(bare_cpus)) * 1000,
        "bare_cpu_ms": statistics.median(bare_cpus) * 1000,
        "importtime_ms": statistics.median(reported) / 1000,
        "modules": sorted(
            ((statistics.median(values) / 1000, name) for name, values in selves.items()),
            reverse=True,
        ),
    }


def main(argv: list[str] | None = None) -> int:
    """Print the figures (and, with ``--top``, the slowest modules)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=SAMPLES, help="fresh processes")
    parser.add_argument("--top", type=int, default=0, help="list the N slowest modules")
    args = parser.parse_args(argv)
    figures = measure(args.samples)
    print(f"import reasoning_stream, median of {args.samples} fresh processes:")
    print(
        f"  wall clock minus bare start-up: {figures['import_ms']:6.1f} ms"
        f"  ({figures['wall_ms']:.1f} ms - {figures['bare_ms']:.1f} ms)"
    )
    print(
        f"  CPU time minus bare start-up:   {figures['cpu_ms']:6.1f} ms"
        f"  (bare start-up {figures['bare_cpu_ms']:.1f} ms)"
    )
    print(f"  -X importtime, the package:     {figures['importtime_ms']:6.1f} ms")
    modules = figures["modules"]
    assert isinstance(modules, list)
    if args.top:
        print("slowest modules (self time, median):")
        for milliseconds, name in modules[: args.top]:
            print(f"  {milliseconds:6.2f} ms  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
