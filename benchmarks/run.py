"""Run every benchmark and print tables of ratios: ``python -m benchmarks.run``."""

from __future__ import annotations

import platform

from . import bench_json, bench_pipe, bench_providers, bench_scanner


def main() -> None:
    python = f"{platform.python_implementation()} {platform.python_version()}"
    print(f"machine: {platform.machine()}, {python}\n")
    bench_scanner.main()
    bench_json.main()
    bench_pipe.main()
    bench_providers.main()
    bench_providers.main_every()
    bench_providers.main_oneshot()


if __name__ == "__main__":
    main()
